"""report.py diff's reading of its two sides, every round's folded file read by the compiled core (rpcprof_core):
each round categorised from the core's rows (the walk of stack_walk.categorize_file), and, on a thread of the
core's own (rpcprof_core.one_side), both sides' files read together for the frames on one side only and, for a
graph of one round a side, the lines inferno-flamegraph draws it from. A file the core does not take as it is (a
pprof profile, blank lines, CR line ends) is read as its collapsed stacks, written to the scratch folder as
report.py export writes them.
"""
from __future__ import annotations

import json
from pathlib import Path

import rpcprof_core

from rpcprof.analyze.encoded_rows import read_into
from rpcprof.analyze.folded_blocks import Irregular
from rpcprof.analyze.rules import Rules
from rpcprof.analyze.stack_walk import Tally
from rpcprof.pprof_in import is_pprof
from rpcprof.report.export import write_collapsed

NAMES, MERGED = "one_side.names", "diff.folded"   # the core's files in the scratch folder


def write_for_core(path: Path, scratch: Path) -> tuple[Path, int, int]:
    """(the file the core reads for path, its total weight, the gcd of its weights): path itself, or its stacks
    as collapsed lines in scratch; UserError naming path when it is missing, damaged or weighs nothing."""
    if path.is_file() and not is_pprof(path):
        try:
            total, unit, _ = rpcprof_core.scan(str(path))
            if total:
                return path, total, unit
        except (rpcprof_core.Refused, OSError):
            pass
    copy = scratch / f"{len(list(scratch.glob('*.collapsed')))}.collapsed"
    with open(copy, "wb") as f:
        write_collapsed(path, f)
    total, unit, _ = rpcprof_core.scan(str(copy))
    return copy, total, unit


class SidesRead:
    """The core's pass over both sides' files (rpcprof_core.one_side), started with the object, and each round's
    Breakdown (categorize). It writes into scratch NAMES, every frame on one side only (`a\\tNAME` or `b\\tNAME` a
    line), and, when merged, MERGED, the lines the graph of one round a side is drawn from (A normalised to B's
    total when normalize); once it ends, draw(found) (given to categorize(), and called between the chunks read
    there) may start the drawing (flamegraph.Drawing) while the sides are still read."""

    def __init__(self, a: list[Path], b: list[Path], scratch: Path, merged: bool, normalize: bool) -> None:
        from rpcprof.report.one_side import LISTED
        self.scratch = scratch
        self.drawing = self._draw = None
        self.task = rpcprof_core.one_side([str(p) for p in a], [str(p) for p in b], LISTED, str(scratch / NAMES),
                                          str(scratch / MERGED) if merged else None, normalize)

    def categorize(self, path: Path, rules: Rules, draw=None) -> object:
        """The Breakdown of path (a file the core takes) under rules; Irregular when it no longer reads as it did."""
        self._draw = draw
        tally = Tally(rules, False)
        if not read_into(tally, path, self._poll):
            raise Irregular
        return tally.breakdown(path)

    def found(self) -> dict:
        """{"a", "b": {"count": frames on that side only, "frames": [[name, share (0-1)]] the largest}}."""
        try:
            return json.loads(self.task.result())
        except rpcprof_core.Refused:
            raise Irregular from None

    def _poll(self, at_once: bool = True) -> None:
        if self.drawing is None and self._draw and self.task.done():
            self.drawing = self._draw(self.found())

    def names(self) -> dict:
        """{"a", "b": the frames on that side only}, each read from NAMES a line at a time."""
        def side(tag: str):
            with open(self.scratch / NAMES, encoding="utf-8", newline="\n") as f:
                for line in f:
                    if line[0] == tag:
                        yield line[2:-1]
        return {"a": side("a"), "b": side("b")}

    def cleanup(self) -> None:
        """Stop the drawing, and wait for the core's pass to end (its files are in scratch)."""
        if self.drawing:
            self.drawing.stop()
        try:
            self.task.result()
        except Exception:       # said by found(), when it is asked
            pass
