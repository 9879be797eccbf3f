"""Folded stacks (`frame;frame;... COUNT` lines), as inferno and py-spy write them, read for every layer that
needs them (folding checks a py-spy file, the analysis categorises them) by the compiled core, the one reader of
folded text (chunks; open_folded holds a file's stacks in memory), with the one wording of what it refuses
(refusal). A pprof profile is read by rpcprof.pprof_in into the same stacks. What a file's weights are
(weight_unit) its header says for pprof, the profile record beside it in a run folder (rpcprof.rundir) for perf's.
"""
from __future__ import annotations

import gzip
import math
import struct
import sys
from array import array
from pathlib import Path
from typing import NamedTuple

import rpcprof_core

from rpcprof.errors import UserError
from rpcprof.pprof_in import collapsed_file, is_pprof, sample_type_of
from rpcprof.rundir import read_profile

WAKE_SEPARATOR = "--"     # between the waker's stack and the sleeper's in a wake-up stack (as bcc's offwaketime)
_HEAD = struct.Struct("<6I")


class Chunk(NamedTuple):
    """A chunk of a folded file's rows, as the compiled core reads them (rpcprof_core.rows, tools/core/src/grouped.rs,
    on a thread of its own): it numbers each distinct callers text (`a;b;`) of the file and each distinct leaf of a
    chunk, and sends the callers texts new in it, its leaves, and each row's callers number, leaf number and count."""
    callers: list[str]        # every callers text so far, by number (`a;b;`, "" for a stack of one frame)
    leaves: list[str]         # the chunk's distinct leaves, by number
    callers_ids: array        # each row's callers number (u32)
    leaf_ids: array           # each row's leaf number (u32)
    counts: array             # each row's count (u64)
    drawn: bytes              # with drawn, the rows' lines as inferno-flamegraph must read them


def chunks(path: Path | str, drawn: bool = False):
    """Each Chunk of a folded file (.gz too), read by the core: a blank line skipped, the CRs at a line's end dropped,
    bytes that are not UTF-8 read as U+FFFD, lines ending at LF only (as inferno reads them: a CR inside a frame
    stays in its name); rpcprof_core.Refused, or EOFError when the core's stream stops short (refusal words them)."""
    blocks, data, at = iter(rpcprof_core.rows(str(path), drawn)), b"", 0

    def exactly(n: int) -> bytes:
        nonlocal data, at
        while len(data) - at < n:
            block = next(blocks, None)
            if block is None:
                raise EOFError
            data, at = data[at:] + block, 0
        at += n
        return data[at - n:at]

    def texts(count: int, length: int) -> list[str]:
        return exactly(length).decode("utf-8").split("\n") if count else []

    def numbers(kind: str, size: int) -> array:
        a = array(kind, exactly(size))
        if sys.byteorder == "big":
            a.byteswap()
        return a
    callers: list[str] = []
    while True:
        if exactly(1) == b"E":
            return
        rows, new_callers, callers_len, leaves, leaves_len, drawn_len = _HEAD.unpack(exactly(_HEAD.size))
        callers += texts(new_callers, callers_len)
        yield Chunk(callers, texts(leaves, leaves_len), numbers("I", 4 * rows), numbers("I", 4 * rows),
                    numbers("Q", 8 * rows), exactly(drawn_len))


def in_memory(stacks: list[tuple[list[str], int]]) -> Chunk:
    """Stacks held in memory ((frames root first, weight)) as one Chunk of rows."""
    callers: dict[str, int] = {}
    leaves: dict[str, int] = {}
    callers_ids = array("I", [callers.setdefault(";".join(frames[:-1]) + ";" if len(frames) > 1 else "", len(callers))
                              for frames, _ in stacks])
    leaf_ids = array("I", [leaves.setdefault(frames[-1], len(leaves)) for frames, _ in stacks])
    return Chunk(list(callers), list(leaves), callers_ids, leaf_ids, array("Q", [w for _, w in stacks]), b"")


def drawn_stacks(path: Path | str) -> list[tuple[list[str], int]]:
    """The stacks of a folded file as inferno-flamegraph draws them, (frames, weight) in the file's order."""
    return [(stack.split(";"), int(w)) for chunk in chunks(path, drawn=True)
            for stack, _, w in (line.rpartition(" ") for line in chunk.drawn.decode("utf-8").split("\n")[:-1])]


def refusal(path: Path | str, refused: Exception | None = None) -> UserError:
    """The error for a folded file the compiled core refused (refused: its rpcprof_core.Refused): the line it names,
    quoted; else the file missing, a directory, or what Python's gzip says of a damaged stream."""
    path = Path(path)
    if refused is not None and len(refused.args) == 2:
        line, text = refused.args
        count = text.rpartition(" ")[2]
        if " " in text and count.isascii() and count.isdigit():
            # 10^15 ns is 11 days of CPU on one stack: beyond that, not a weight perf or py-spy writes, and
            # inferno's 64-bit sums would overflow
            return UserError(f"{path}: line {line}: count {count[:20]}{'...' if len(count) > 20 else ''} is 10^15 or "
                             "more, more than any profile's weight: a damaged line")
        # ASCII digits only: int() also takes '١٢' (Arabic-Indic) and isdigit() '²', which perf and inferno never
        # write: such a count is a damaged line, not a weight
        return UserError(f"{path}: line {line} is not a folded stack ('frame;frame;... COUNT' with COUNT in "
                         f"0-9): {text[:80]!r}")
    if path.is_dir():
        return UserError(f"{path}: is a directory; give a folded file (e.g. RUN/SERVER/perf.folded)")
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except FileNotFoundError:
        return UserError(f"{path}: no such folded file")
    except (OSError, EOFError) as e:
        return UserError(f"{path}: unreadable: {e}")
    return UserError(f"{path}: not a folded file ('frame;frame;... COUNT' lines)")


def no_samples(path: Path | str) -> UserError:
    """The error for a file whose stacks weigh nothing."""
    return UserError(f"{path}: no samples (the file is empty or every count is 0): profile again, or "
                     "give another folded file")


def open_folded(path: Path | str) -> list[tuple[list[str], int]]:
    """The stacks of a folded file (chunks), or of a pprof profile (rpcprof.pprof_in says which files are); UserError
    naming the file when it is missing, damaged, or holds no samples."""
    source = collapsed_file(path)[0] if is_pprof(path) else path
    try:
        stacks = [((chunk.callers[c] + leaf).split(";"), w) for chunk in chunks(source)
                  for c, leaf, w in zip(chunk.callers_ids, map(chunk.leaves.__getitem__, chunk.leaf_ids), chunk.counts)]
    except (rpcprof_core.Refused, EOFError) as e:
        raise refusal(path, e) from None
    if not any(w for _, w in stacks):
        raise no_samples(path)
    return stacks


def sample_weight(stacks: list[tuple[list[str], int]]) -> int:
    """The weight of one sample: the gcd of the weights (perf's period, as inferno-collapse-perf weighted
    the stacks; 1 for counts)."""
    return math.gcd(*(w for _, w in stacks)) or 1


def weight_unit(folded: Path | str) -> tuple[str, str]:
    """(sample type, unit) of a folded file's weights: ("cpu", "nanoseconds") for perf, else ("samples", "count");
    for a pprof profile, the sample type its weights were read as."""
    if is_pprof(folded):
        return sample_type_of(folded)
    try:
        prof = read_profile(Path(folded).parent)
    except UserError:
        prof = {}
    if prof.get("profiler") == "perf" or "period in ns" in str(prof.get("weight", "")):
        return "cpu", "nanoseconds"
    return "samples", "count"
