"""report.py diff of two bare folded files (one round each), made as the files are read: the same tables, lists
and graph as report/sigdiff.py makes from the stacks held whole, without holding them.

Each side is read in blocks (analyze/folded_blocks.py): once to check it and sum its weights (scan), once for
its categories (the walk of stack_walk.categorize_file), its stacks written as inferno draws them and its
distinct frames written to scratch files by hash (SidesRead: the frames on one side only are the set differences
of the two sides' files, a pair at a time), and once more for the shares of the frames on one side only when
there are any (and, when A has some, to draw A scaled and its stacks that hold them in B). A file the block
reader does not take (a blank line, a damaged count, a CR) is read whole as before, so its errors and
its lines are the ones they were.
"""
from __future__ import annotations

import re
import tempfile
from math import gcd
from pathlib import Path

from rpcprof.analyze.encoded_rows import read_into
from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.rules import Rules, remember
from rpcprof.analyze.stack_walk import _Tally
from rpcprof.forked import Forked
from rpcprof.pprof_in import is_pprof
from rpcprof.report.flamegraph import displayable_stack, draw_diff, inferno_tool, run_tool


def scan(path: Path) -> tuple[int, int, int] | None:
    """(total weight, gcd of the weights, stacks) of a folded file the block reader takes whole, with some
    weight; None otherwise (a pprof profile, an irregular line, an unreadable file, no weight). The encoder
    counts them when it takes the file (report/encoder.py's scan: it refuses the lines folded_rows does not
    take); when it refuses, the file is read here."""
    from rpcprof.report import encoder
    if is_pprof(path) or not path.is_file():
        return None
    counted = encoder.scan(path) if encoder.takes(path) else None
    if counted is not None:
        return counted if counted[0] else None
    total = unit = stacks = 0
    try:
        for _, rows in folded_rows(path):
            weights = [int(w) for _, _, w in rows]
            total += sum(weights)
            unit = gcd(unit, *set(weights))
            stacks += len(rows)
    except (Irregular, OSError, EOFError):
        return None
    return (total, unit, stacks) if total else None


def start_sides(a: Path, b: Path, normalize: bool) -> SidesRead | None:
    """SidesRead of two files that may be bare folded files the encoder takes, its encoder started now (report.py
    diff calls it before it reads the rules, so the encoder's pass runs meanwhile); None for any other pair. The
    caller stops it (cleanup()), used or not."""
    from rpcprof.report import encoder
    if not encoder.takes(a, b) or is_pprof(a) or is_pprof(b):
        return None
    return SidesRead(a, b, normalize)


def _rows(path: Path):
    for _, rows in folded_rows(path):
        yield from rows


class _Callers:
    """The frames of each distinct callers text `a;b;`, split once (bounded by CACHE_LIMIT)."""

    def __init__(self) -> None:
        self.known: dict[str, list[str]] = {}

    def __call__(self, callers: str) -> list[str]:
        frames = self.known.get(callers)
        if frames is None:
            frames = remember(self.known, callers, callers[:-1].split(";") if callers else [])
        return frames


_SPACE_AT_END = re.compile(r" [0-9.]*$", re.M)     # a leaf displayable_stack trims or whose end it rewrites
PARTS = 16               # a side's distinct frames are written to this many scratch files, by their hash


class SidesRead:
    """One pass over each of two bare folded files: each side's Breakdown under its rules (the walk of
    stack_walk.categorize_file), A then B here from the encoder's rows (_one_then_other), else A in a forked child
    (forked.py) while B is read here. The frames on one side only, and the lines the diff is drawn from, come from
    the compiled encoder (report/encoder.py's OneSide), started with the object (report.py diff starts it before
    it reads the rules) and run beside the reading, when it takes the files: once it ends, draw(scratch, found)
    (given to categorize(), and called between the chunks read here) starts the
    drawing (flamegraph.Drawing) while the sides are still read, when it merged them (printable ASCII). Else each
    side's stacks are written as inferno draws them into a scratch folder (a.folded, b.folded), and its distinct
    frames too, each block's to one of PARTS files by their hash; the frames on one side only are the set
    differences of the two sides' files, a pair at a time. cleanup() stops the encoder and the drawing and removes
    the folder."""

    def __init__(self, a: Path, b: Path, normalize: bool = True) -> None:
        from rpcprof.report import encoder
        from rpcprof.report.one_side import LISTED
        self.paths = a, b
        self._scratch = tempfile.TemporaryDirectory(prefix="rpcprof-diff-")
        self.scratch = Path(self._scratch.name)
        self.drawing = self._draw = None
        self.encoded = encoder.OneSide(a, b, self.scratch, LISTED, normalize) if encoder.takes(a, b) else None

    def categorize(self, rules_a: Rules, rules_b: Rules, draw=None) -> None:
        """Each side's Breakdown (breakdowns), and the frames on one side only."""
        a, b = self.paths
        self._draw = draw
        for rules in (rules_a, rules_b):      # made once, here, for both sides: the child inherits it
            _Tally(rules, False).leaf_filter()
        try:
            if self.encoded is None:
                side_a = Forked(self._read, a, rules_a, "a", True)    # A on the other CPU while B is read here
                try:
                    read_b = self._read(b, rules_b, "b", True, self._poll)
                    self.breakdowns = side_a.result(), read_b
                finally:
                    side_a.stop()
            else:
                self.breakdowns = self._one_then_other(rules_a, rules_b)
            self.found = self.encoded.result() if self.encoded else None
            self._poll()
        except BaseException:
            self.cleanup()
            raise
        finally:
            if self.encoded:
                self.encoded.stop()
        self.merged = bool(self.found and self.found["merged"])
        if self.encoded and not self.merged:   # refused, or lines inferno reads otherwise: drawn here after all
            drawn_a = Forked(self._drawn, a, "a", self.found is None)      # A's on the other CPU
            try:
                self._drawn(b, "b", self.found is None)
                drawn_a.result()
            finally:
                drawn_a.stop()
            if self.found is None:
                self.encoded = None
        if self.found is None:
            self._only()

    def _one_then_other(self, rules_a: Rules, rules_b: Rules) -> tuple:
        """Both sides' Breakdowns from the encoder's rows: A here, then B, while the encoder merges them and the
        graph is drawn on the other CPU, which the graph waits for; but B in a forked child at once when a
        chunk of A's is counted row by row, which makes the categorisation the longer of the two."""
        a, b = self.paths
        side_b = None

        def between(at_once: bool) -> None:
            nonlocal side_b
            self._poll()
            if not at_once and side_b is None:
                side_b = Forked(self._read, b, rules_b, "b", False)
        try:
            read_a = self._read(a, rules_a, "a", False, between)
            return read_a, side_b.result() if side_b else self._read(b, rules_b, "b", False, self._poll)
        finally:
            if side_b:
                side_b.stop()

    def _poll(self, at_once: bool = True) -> None:
        """Start the drawing once the encoder has ended, when it merged the lines."""
        if self.drawing is None and self._draw and self.encoded and self.encoded.done():
            found = self.encoded.result()
            if found and found["merged"]:
                self.drawing = self._draw(self.scratch, found)

    def _only(self) -> None:
        self.only_a, self.only_b = set(), set()
        for p in range(PARTS):
            in_a, in_b = self._part("a", p), self._part("b", p)
            self.only_a |= in_a - in_b
            self.only_b |= in_b - in_a

    def _read(self, path: Path, rules: Rules, side: str, own: bool, poll=None) -> object:
        """The side's Breakdown (from the encoder's rows, when it is there); own: its drawn stacks and its frames
        written here (no encoder)."""
        tally = _Tally(rules, False)
        if not own and read_into(tally, path, poll):
            return tally.breakdown(path)
        tally = _Tally(rules, False)
        if own:
            self._drawn(path, side, True, tally)
        else:
            for _, rows in folded_rows(path):
                tally.add_rows(rows)
                if poll:
                    poll()
        return tally.breakdown(path)

    def _drawn(self, path: Path, side: str, frames: bool, tally: _Tally | None = None) -> None:
        """The side's stacks as inferno draws them written to the scratch folder (and its frames, when frames),
        counted into tally as they are read, when given."""
        with open(self.scratch / (side + ".folded"), "w", encoding="utf-8") as out:
            parts = _FrameParts(self.scratch, side) if frames else None
            try:
                for text, rows in folded_rows(path):
                    if tally:
                        tally.add_rows(rows)
                    out.write(_drawn_block(text, rows))
                    if parts:
                        parts.add(rows)
            finally:
                if parts:
                    parts.close()

    def _part(self, side: str, p: int) -> set[str]:
        with open(self.scratch / f"{side}{p}.frames", encoding="utf-8", newline="\n") as f:
            return set(f.read().split("\n")[:-1])

    def names(self) -> dict:
        """{"a", "b": the frames on that side only}, each an iterable read once (the encoder's file, a line at a
        time, or the sets found here)."""
        if self.found is None:
            return {"a": self.only_a, "b": self.only_b}
        return {"a": self.encoded.names("a"), "b": self.encoded.names("b")}

    def cleanup(self) -> None:
        if self.encoded:
            self.encoded.stop()
        if self.drawing:
            self.drawing.stop()
        self._scratch.cleanup()


class _FrameParts:
    """A side's distinct frames, each block's written to one of PARTS scratch files by their hash."""

    def __init__(self, scratch: Path, side: str) -> None:
        self.files = [open(scratch / f"{side}{p}.frames", "w", encoding="utf-8", newline="\n") for p in range(PARTS)]
        self.seen: dict[str, None] = {}
        self.split = _Callers()

    def add(self, rows) -> None:
        seen, split = self.seen, self.split
        new = {c for c, _, _ in rows if c not in seen}
        for c in new:
            remember(seen, c, None)
        by_part = [[] for _ in range(PARTS)]
        for f in {leaf for _, leaf, _ in rows}.union(*[split(c) for c in new]):
            by_part[hash(f) & (PARTS - 1)].append(f)
        for f, frames in zip(self.files, by_part):
            if frames:
                f.write("\n".join(frames) + "\n")

    def close(self) -> None:
        for f in self.files:
            f.close()


def shares_of(path: Path, frames: set[str], total: int) -> dict[str, float]:
    """{frame of frames: share of the file's weight whose stacks hold it}, summed stack by stack as
    report/one_side.inclusive_shares sums them (one round: the same floats)."""
    shares: dict[str, float] = {}
    if not frames:
        return shares
    split, hits = _Callers(), {}
    for callers, leaf, w in _rows(path):
        held = hits.get(callers)
        if held is None:
            held = remember(hits, callers, list({f: None for f in split(callers) if f in frames}))
        w = int(w)
        for f in held:
            shares[f] = shares.get(f, 0.0) + w / total / 1
        if leaf in frames and leaf not in held:
            shares[leaf] = shares.get(leaf, 0.0) + w / total / 1
    return shares


def one_side_streamed(read: SidesRead, totals: tuple[int, int], rows: list[dict]) -> dict:
    """report/one_side.one_side's found for two bare folded files."""
    from rpcprof.report.one_side import one_side_found
    if read.found is not None:
        a, b = read.found["a"], read.found["b"]
        return one_side_found((dict(a["frames"]), a["count"]), (dict(b["frames"]), b["count"]), rows)
    pa, pb = read.paths
    return one_side_found((shares_of(pa, read.only_a, totals[0] or 1), len(read.only_a)),
                          (shares_of(pb, read.only_b, totals[1] or 1), len(read.only_b)), rows)


def _odd_leaves(leaves: str) -> set[str]:
    """The leaves (joined by newlines) that displayable_stack trims or whose end it rewrites."""
    return {leaves[leaves.rfind("\n", 0, m.start()) + 1:m.end()] for m in _SPACE_AT_END.finditer(leaves)}


def _drawn_block(text: str, rows, scale=None, weighed=False) -> str:
    """A block's lines as write_folded writes displayable stacks (weights scaled and rounded by scale; weighed:
    the lines whose weight is then 0 left out)."""
    # as written, unless displayable_stack would change a line: a character it replaces, a line starting with a
    # space (an empty stack too) or '#', a stack ending in a space or in ` 123` / ` 1.5` (a leaf with a space:
    # only such lines are rewritten when the block is otherwise printable ASCII)
    printable = (text.isascii() and text.replace("\n", " ").isprintable() and text[:1] not in " #"
                 and "\n " not in text and "\n#" not in text)
    odd = _odd_leaves("\n".join([leaf for _, leaf, _ in rows])) if printable and text.count(" ") != len(rows) else set()
    if scale is None and printable and not odd and " 0" not in text:
        return text + "\n"
    weights = [int(w) for _, _, w in rows] if scale is None else [round(int(w) * scale) for _, _, w in rows]
    kept = [(row, w) for row, w in zip(rows, weights) if w > 0] if weighed else zip(rows, weights)
    if printable:
        return "".join([f"{displayable_stack((c + leaf).split(';')) if leaf in odd else c + leaf} {w}\n"
                        for (c, leaf, _), w in kept])
    return "".join([f"{displayable_stack((c + leaf).split(';'))} {w}\n" for (c, leaf, _), w in kept])


def write_drawn(path: Path, out, scale=None) -> None:
    """The file's stacks as inferno must read them (displayable_stack), a block at a time, to out (text)."""
    for text, rows in folded_rows(path):
        out.write(_drawn_block(text, rows, scale))


def write_vanished(path: Path, out, vanished: set[str] | None, scale) -> None:
    """The file's stacks that hold a vanished frame, weights scaled (those rounded to 0 left out), to out;
    vanished None: every stack of the file (the encoder's VANISHED file holds those stacks alone)."""
    if vanished is None:
        for text, rows in folded_rows(path):
            out.write(_drawn_block(text, rows, scale, weighed=True))
        return
    split, hits = _Callers(), {}
    for callers, leaf, w in _rows(path):
        held = hits.get(callers)
        if held is None:
            held = remember(hits, callers, not vanished.isdisjoint(split(callers)))
        if held or leaf in vanished:
            w = round(int(w) * scale)
            if w > 0:
                out.write(f"{displayable_stack((callers + leaf).split(';'))} {w}\n")



def render_diff_streamed(read: SidesRead, out_svg: Path, title: str, subtitle: str, normalize: bool,
                         rows: list[dict], recolour, vanished: bool, scans: tuple) -> None:
    """flamegraph.render_diff_flamegraph of two bare folded files (also_in_b: the stacks of A that hold a frame
    of A's alone, when vanished), from the lines the encoder merged (read.merged: drawn already, or drawn now) or
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
    its stacks that hold a vanished frame added to B's, when vanished)."""
    from rpcprof.report import encoder
    a, scratch = read.paths[0], read.scratch
    if vanished:    # A scaled to B's own total here, as --normalize would, before B grows by A's stacks
        scale = scans[1][0] / scans[0][0] if normalize else 1
        with open(scratch / "a.folded", "w", encoding="utf-8") as f:
            write_drawn(a, f, scale)
        with open(scratch / "b.folded", "a", encoding="utf-8") as f:
            if read.found is not None:
                write_vanished(scratch / encoder.OneSide.VANISHED, f, None, scale)
            else:
                write_vanished(a, f, read.only_a, scale)
    norm = ["--normalize"] if normalize and not vanished else []
    with open(scratch / "diff.folded", "wb") as f:      # inferno-diff-folded's lines, from the encoder when there
        run_tool([str(encoder.ENCODER), "diff-folded", "a.folded", "b.folded", *norm] if encoder.available()
                 else [inferno_tool("inferno-diff-folded"), *norm, "a.folded", "b.folded"], scratch, stdout=f)
