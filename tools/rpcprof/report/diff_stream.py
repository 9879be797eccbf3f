"""report.py diff of two bare folded files (one round each), made as the files are read: the same tables, lists
and graph as report/sigdiff.py makes from the stacks held whole, without holding them.

The compiled core (rpcprof_core) reads each side: once to check it and sum its weights (scan), once for its
rows, which are categorised here (the walk of stack_walk.categorize_file), and once, both sides together on a
thread of its own, for the frames on one side only and the lines the graph is drawn from (SidesRead). A file the
core does not take as it is (a blank line, a damaged count, a CR) is read whole, so its errors and its lines are
the ones report.py gives any such file.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import rpcprof_core

from rpcprof.analyze.encoded_rows import read_into
from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.rules import Rules, remember
from rpcprof.analyze.stack_walk import Tally
from rpcprof.pprof_in import is_pprof
from rpcprof.report.flame_rows import drawn_block
from rpcprof.report.flamegraph import draw_diff


def scan(path: Path) -> tuple[int, int, int] | None:
    """(total weight, gcd of the weights, stacks) of a folded file the core takes as it is (rpcprof_core.scan: the
    lines folded_rows takes), with some weight; None otherwise (a pprof profile, an irregular line, an
    unreadable file, no weight): such a file is read whole."""
    if is_pprof(path) or not path.is_file():
        return None
    try:
        counted = rpcprof_core.scan(str(path))
    except (rpcprof_core.Refused, OSError):
        return None
    return counted if counted[0] else None


def start_sides(a: Path, b: Path, normalize: bool) -> SidesRead | None:
    """SidesRead of two files that may be bare folded files, the core's pass over both started now (report.py diff
    calls it before it reads the rules, so that pass runs meanwhile); None for any other pair. The caller stops it
    (cleanup()), used or not."""
    if not (a.is_file() and b.is_file()) or is_pprof(a) or is_pprof(b):
        return None
    return SidesRead(a, b, normalize)


class _Callers:
    """The frames of each distinct callers text `a;b;`, split once (bounded by CACHE_LIMIT)."""

    def __init__(self) -> None:
        self.known: dict[str, list[str]] = {}

    def __call__(self, callers: str) -> list[str]:
        frames = self.known.get(callers)
        if frames is None:
            frames = remember(self.known, callers, callers[:-1].split(";") if callers else [])
        return frames


NAMES, VANISHED, MERGED = "one_side.names", "vanished.folded", "diff.folded"   # the core's files in scratch


class SidesRead:
    """One pass over each of two bare folded files: each side's Breakdown under its rules (the walk of
    stack_walk.categorize_file, from the core's rows), A then B. The frames on one side only, and the lines the
    diff is drawn from, come from the core's pass over both (rpcprof_core.one_side, on a thread of its own),
    started with the object (report.py diff starts it before it reads the rules): it writes into a scratch
    folder NAMES, every frame on one side only (`a\\tNAME` or `b\\tNAME` a line), VANISHED, A's lines that hold
    one of A's, and MERGED, the lines the diff is drawn from, when both files' lines are drawn as written
    (printable ASCII: its result's "merged"). Once it ends, draw(scratch, found) (given to categorize(), and
    called between the chunks read here) starts the drawing (flamegraph.Drawing) while the sides are still read.
    Else each side's stacks are written here as inferno draws them (a.folded, b.folded). cleanup() stops the
    drawing and removes the folder."""

    def __init__(self, a: Path, b: Path, normalize: bool = True) -> None:
        from rpcprof.report.one_side import LISTED
        self.paths = a, b
        self._scratch = tempfile.TemporaryDirectory(prefix="rpcprof-diff-")
        self.scratch = Path(self._scratch.name)
        self.drawing = self._draw = None
        self.found: dict | None = None
        self.task = rpcprof_core.one_side(str(a), str(b), LISTED, *(str(self.scratch / n) for n in (NAMES, VANISHED, MERGED)),
                                          normalize)

    def categorize(self, rules_a: Rules, rules_b: Rules, draw=None) -> None:
        """Each side's Breakdown (breakdowns), and the frames on one side only; Irregular when a file no longer
        reads as it did."""
        a, b = self.paths
        self._draw = draw
        try:
            self.breakdowns = self._read(a, rules_a), self._read(b, rules_b)
            self.found = self._result()
            self._poll()
        except BaseException:
            self.cleanup()
            raise
        self.merged = self.found["merged"]
        if not self.merged:            # lines inferno reads otherwise: drawn here
            for path, side in zip(self.paths, "ab"):
                with open(self.scratch / (side + ".folded"), "w", encoding="utf-8") as out:
                    write_drawn(path, out)

    def _result(self) -> dict:
        """{"a", "b": {"count": frames on that side only, "frames": [[name, share (0-1)]] the largest},
        "merged": whether MERGED was written}."""
        try:
            return json.loads(self.task.result())
        except rpcprof_core.Refused:
            raise Irregular from None

    def _poll(self, at_once: bool = True) -> None:
        """Start the drawing once the core's pass has ended, when it merged the lines."""
        if self.drawing is None and self._draw and self.task.done():
            found = self._result()
            if found["merged"]:
                self.drawing = self._draw(self.scratch, found)

    def _read(self, path: Path, rules: Rules) -> object:
        """The side's Breakdown, from the core's rows."""
        tally = Tally(rules, False)
        if not read_into(tally, path, self._poll):
            raise Irregular
        return tally.breakdown(path)

    def names(self) -> dict:
        """{"a", "b": the frames on that side only}, each read from NAMES a line at a time."""
        def side(tag: str):
            with open(self.scratch / NAMES, encoding="utf-8", newline="\n") as f:
                for line in f:
                    if line[0] == tag:
                        yield line[2:-1]
        return {"a": side("a"), "b": side("b")}

    def cleanup(self) -> None:
        if self.drawing:
            self.drawing.stop()
        self._scratch.cleanup()


def one_side_streamed(read: SidesRead, rows: list[dict]) -> dict:
    """report/one_side.one_side's found for two bare folded files."""
    from rpcprof.report.one_side import one_side_found
    a, b = read.found["a"], read.found["b"]
    return one_side_found((dict(a["frames"]), a["count"]), (dict(b["frames"]), b["count"]), rows)


def write_drawn(path: Path, out, scale=None) -> None:
    """The file's stacks as inferno must read them (displayable_stack), a block at a time, to out (text)."""
    for text, rows in folded_rows(path):
        out.write(drawn_block(text, rows, scale))


def write_vanished(path: Path, out, scale) -> None:
    """The stacks of path (the core's VANISHED lines: A's that hold a vanished frame), weights scaled (those
    rounded to 0 left out), to out."""
    for text, rows in folded_rows(path):
        out.write(drawn_block(text, rows, scale, weighed=True))


def render_diff_streamed(read: SidesRead, out_svg: Path, title: str, subtitle: str, normalize: bool,
                         rows: list[dict], recolour, vanished: bool, scans: tuple) -> None:
    """flamegraph.render_diff_flamegraph of two bare folded files (also_in_b: the stacks of A that hold a frame
    of A's alone, when vanished), from the lines the core merged (read.merged: drawn already, or drawn now) or
    the stacks read wrote; scans: each file's scan(). Removes read's scratch folder."""
    a, b = read.paths
    scratch = read.scratch
    try:
        if not read.merged:
            merge_drawn(read, normalize, vanished, scans)
        draw_diff(scratch, "diff.folded", out_svg, title, subtitle, scans[1][1] or 1, rows, "samples", recolour,
                  drawing=read.drawing)
    finally:
        read.cleanup()


def merge_drawn(read: SidesRead, normalize: bool, vanished: bool, scans: tuple) -> None:
    """inferno-diff-folded's lines of the stacks read wrote, into its scratch folder's diff.folded (A scaled and
    its stacks that hold a vanished frame added to B's, when vanished), by the core (rpcprof_core.diff_folded)."""
    a, scratch = read.paths[0], read.scratch
    if vanished:    # A scaled to B's own total here, as --normalize would, before B grows by A's stacks
        scale = scans[1][0] / scans[0][0] if normalize else 1
        with open(scratch / "a.folded", "w", encoding="utf-8") as f:
            write_drawn(a, f, scale)
        with open(scratch / "b.folded", "a", encoding="utf-8") as f:
            write_vanished(scratch / VANISHED, f, scale)
    rpcprof_core.diff_folded(str(scratch / "a.folded"), str(scratch / "b.folded"), normalize and not vanished,
                             str(scratch / MERGED))
