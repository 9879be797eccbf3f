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

import tempfile
from math import gcd
from pathlib import Path

from rpcprof.analyze.folded_blocks import Irregular, folded_rows
from rpcprof.analyze.rules import Rules, remember
from rpcprof.analyze.stack_walk import _Tally
from rpcprof.forked import Forked
from rpcprof.pprof_in import is_pprof
from rpcprof.report.flamegraph import displayable_stack, draw_diff, inferno_tool, run_tool


def scan(path: Path) -> tuple[int, int, int] | None:
    """(total weight, gcd of the weights, stacks) of a folded file the block reader takes whole, with some
    weight; None otherwise (a pprof profile, an irregular line, an unreadable file, no weight)."""
    if is_pprof(path) or not path.is_file():
        return None
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


PARTS = 16               # a side's distinct frames are written to this many scratch files, by their hash


class SidesRead:
    """One pass over each of two bare folded files, A in a forked child (forked.py) while B is read here: each
    side's Breakdown under its rules (the walk of stack_walk.categorize_file), its stacks written as inferno
    draws them into a scratch folder (a.folded, b.folded), and its distinct frames, each block's written to one
    of PARTS files by their hash; the frames on one side only are then the set differences of the two sides'
    files, a pair at a time (no side's frames are held whole). cleanup() removes the folder."""

    def __init__(self, a: Path, b: Path, rules_a: Rules, rules_b: Rules) -> None:
        self.paths = a, b
        self._scratch = tempfile.TemporaryDirectory(prefix="rpcprof-diff-")
        self.scratch = Path(self._scratch.name)
        side_a = Forked(self._read, a, rules_a, "a")      # A on the other CPU while B is read here
        try:
            read_b = self._read(b, rules_b, "b")
            self.breakdowns = side_a.result(), read_b
        finally:
            side_a.stop()
        self.only_a, self.only_b = set(), set()
        for p in range(PARTS):
            in_a, in_b = self._part("a", p), self._part("b", p)
            self.only_a |= in_a - in_b
            self.only_b |= in_b - in_a

    def _read(self, path: Path, rules: Rules, side: str) -> object:
        tally, seen, split = _Tally(rules, False), {}, _Callers()
        parts = [open(self.scratch / f"{side}{p}.frames", "w", encoding="utf-8", newline="\n") for p in range(PARTS)]
        try:
            with open(self.scratch / ("a.folded" if side == "a" else "b.folded"), "w", encoding="utf-8") as out:
                for text, rows in folded_rows(path):
                    tally.add_rows(rows)
                    out.write(_drawn_block(text, rows))
                    new = {c for c, _, _ in rows if c not in seen}
                    for c in new:
                        remember(seen, c, None)
                    by_part = [[] for _ in range(PARTS)]
                    for f in {leaf for _, leaf, _ in rows}.union(*[split(c) for c in new]):
                        by_part[hash(f) & (PARTS - 1)].append(f)
                    for f, frames in zip(parts, by_part):
                        if frames:
                            f.write("\n".join(frames) + "\n")
        finally:
            for f in parts:
                f.close()
        return tally.breakdown(path)

    def _part(self, side: str, p: int) -> set[str]:
        with open(self.scratch / f"{side}{p}.frames", encoding="utf-8", newline="\n") as f:
            return set(f.read().split("\n")[:-1])

    def cleanup(self) -> None:
        self._scratch.cleanup()


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
    """report/one_side.one_side's answer for two bare folded files."""
    def only(shares: dict[str, float]) -> list[dict]:
        found = sorted(shares.items(), key=lambda fs: (-fs[1], fs[0]))
        return [{"frame": f, "share": 100 * s} for f, s in found]

    a, b = read.paths
    return {"frames_only_in_a": only(shares_of(a, read.only_a, totals[0] or 1)),
            "frames_only_in_b": only(shares_of(b, read.only_b, totals[1] or 1)),
            "categories_only_in_a": [r["category"] for r in rows if r["a"] > 0 and not r["b"]],
            "categories_only_in_b": [r["category"] for r in rows if r["b"] > 0 and not r["a"]]}


def _drawn_block(text: str, rows, scale=None) -> str:
    """A block's lines as write_folded writes displayable stacks (weights scaled and rounded by scale)."""
    # as written, unless displayable_stack would change a line: a character it replaces, a line starting with a
    # space (an empty stack too) or '#', a stack ending in a space or in ` 123` / ` 1.5` (a leaf with a space)
    plain = (text.isascii() and text.replace("\n", " ").isprintable() and text[:1] not in " #"
             and "\n " not in text and "\n#" not in text and " " not in "".join([leaf for _, leaf, _ in rows]))
    if scale is None and plain and " 0" not in text:
        return text + "\n"
    weights = [int(w) for _, _, w in rows] if scale is None else [round(int(w) * scale) for _, _, w in rows]
    if plain:
        return "".join([f"{c}{leaf} {w}\n" for (c, leaf, _), w in zip(rows, weights)])
    return "".join([f"{displayable_stack((c + leaf).split(';'))} {w}\n" for (c, leaf, _), w in zip(rows, weights)])


def write_drawn(path: Path, out, scale=None) -> None:
    """The file's stacks as inferno must read them (displayable_stack), a block at a time, to out (text)."""
    for text, rows in folded_rows(path):
        out.write(_drawn_block(text, rows, scale))


def write_vanished(path: Path, out, vanished: set[str], scale) -> None:
    """The file's stacks that hold a vanished frame, weights scaled (those rounded to 0 left out), to out."""
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
                         rows: list[dict], recolour, vanished: set[str], scans: tuple) -> None:
    """flamegraph.render_diff_flamegraph of two bare folded files (also_in_b: vanished_stacks of vanished), from
    the stacks read wrote; scans: each file's scan(). Removes read's scratch folder."""
    a, b = read.paths
    scratch = read.scratch
    try:
        if vanished:    # A scaled to B's own total here, as --normalize would, before B grows by A's stacks
            scale = scans[1][0] / scans[0][0] if normalize else 1
            with open(scratch / "a.folded", "w", encoding="utf-8") as f:
                write_drawn(a, f, scale)
            with open(scratch / "b.folded", "a", encoding="utf-8") as f:
                write_vanished(a, f, vanished, scale)
        with open(scratch / "diff.folded", "wb") as f:
            run_tool([inferno_tool("inferno-diff-folded"), *(["--normalize"] if normalize and not vanished else []),
                      "a.folded", "b.folded"], scratch, stdout=f)
        draw_diff(scratch, "diff.folded", out_svg, title, subtitle, scans[1][1] or 1, rows, "samples", recolour)
    finally:
        read.cleanup()
