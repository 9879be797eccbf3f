"""export --format speedscope of a folded file, written as it is read (analyze/folded_blocks.py): the same bytes
as report/export.to_speedscope gives of the whole file, without holding its stacks.

The document's parts are written as the stacks are read into scratch files (the shared frames, numbered in the
order to_speedscope numbers them, root first; the samples; the weights) and put together, in json.dumps's
order and spelling, once the file ends. A leaf seen once in the whole file (analyze/once_leaves.py)
is numbered without being kept by name.
"""
from __future__ import annotations

import json
import tempfile
from json.encoder import encode_basestring_ascii
from pathlib import Path

from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.once_leaves import ONCE_BITS, leaf_counts
from rpcprof.analyze.rules import remember

_MARK = "\x00"       # a list's place in the skeleton json.dumps writes (no file name holds a NUL)


class _Frames:
    """The shared frames, numbered as to_speedscope numbers them; their JSON written to a scratch file."""

    def __init__(self, counts: bytearray) -> None:
        self.counts, self.mask = counts, (1 << ONCE_BITS) - 1
        self.index: dict[str, int] = {}
        self.n = 0
        self.out = tempfile.TemporaryFile("w+", encoding="ascii")
        self.callers: dict[str, str] = {}         # callers `a;b;` -> their indices, `i,j,`

    def _new(self, frame: str) -> int:
        i = self.n
        self.out.write(("," if i else "") + '{"name":' + encode_basestring_ascii(frame) + "}")
        self.n += 1
        return i

    def of(self, frame: str) -> int:
        i = self.index.get(frame)
        if i is None:
            i = self.index[frame] = self._new(frame)
        return i

    def leaf(self, frame: str) -> int:
        if self.counts[hash(frame) & self.mask] == 1:
            return self._new(frame)
        return self.of(frame)

    def of_callers(self, callers: str) -> str:
        known = self.callers.get(callers)
        if known is None:
            known = "".join([f"{self.of(f)}," for f in callers[:-1].split(";")]) if callers else ""
            remember(self.callers, callers, known)
        return known


def write_speedscope(folded: Path, name: str, sample_type: tuple[str, str], out) -> int | None:
    """to_speedscope's document of a folded file written to out (a binary file), read a block at a time: the
    number of stacks; None, having written nothing, when it must be read whole (as pprof_stream's)."""
    try:
        frames = _Frames(leaf_counts(folded, []))
        samples, weights = (tempfile.TemporaryFile("w+", encoding="ascii") for _ in range(2))
        total = stacks = 0
        for _, rows in folded_rows(folded):
            of_callers, leaf = frames.of_callers, frames.leaf
            part = [f"[{of_callers(c)}{leaf(f)}]" for c, f, _ in rows]
            ws = [int(w) for _, _, w in rows]
            samples.write(("," if stacks else "") + ",".join(part))
            weights.write(("," if stacks else "") + ",".join(map(str, ws)))
            total += sum(ws)
            stacks += len(rows)
    except (Irregular, OSError, EOFError):
        return None
    if not total:
        return None
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json", "exporter": "rpcprof", "name": name,
           "activeProfileIndex": 0, "shared": {"frames": [_MARK + "f"]},
           "profiles": [{"type": "sampled", "name": name, "unit": "nanoseconds" if sample_type[1] == "nanoseconds"
                         else "none", "startValue": 0, "endValue": total, "samples": [_MARK + "s"],
                         "weights": [_MARK + "w"]}]}
    skeleton = json.dumps(doc, separators=(",", ":")) + "\n"
    for part, f in (("f", frames.out), ("s", samples), ("w", weights)):
        head, skeleton = skeleton.split(json.dumps(_MARK + part), 1)
        out.write(head.encode("ascii"))
        f.seek(0)
        while chunk := f.read(1 << 20):
            out.write(chunk.encode("ascii"))
        f.close()
    out.write(skeleton.encode("ascii"))
    return stacks
