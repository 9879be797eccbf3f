"""A folded file read in blocks by Python, for diff's drawn lines and the collapsed export of a fleet's merge
(the categorisation reads the compiled core's rows, analyze/encoded_rows.py): each block of lines parsed by one
regex call into (callers, leaf, count) rows, with no Python work per line but a tuple.

Only well-formed files take this path: a block holding any line that parse_folded would skip or reject (an
empty or blank line, a count that is not 1-15 ASCII digits, a CR before the newline) raises Irregular, and
the caller reads the file line by line, so an error names the same line in the same words. The rows are the stacks parse_folded gives, in the same order, decoded the same way (UTF-8, bytes that
are not UTF-8 read as U+FFFD: a block ends at a newline, so no character is cut in two).

LeafFilter says at once, of many leaf frames, that no rule of any question matches any of them: one RE2 Set
(analyze/patterns.py's rewriting, each pattern in multi-line mode) over the leaves joined by newlines. A
rule's match on a leaf alone is a match on that leaf's line, so a Set that names no rule proves every leaf
answers no question; when it names one, the caller asks each leaf as before.
"""
from __future__ import annotations

import functools
import gzip
import re
from pathlib import Path
from typing import Iterator

from rpcprof.analyze.patterns import compile_set, re2_superset

BLOCK = 1 << 21          # bytes read at a time
# (callers with their last ';', or '' for a stack of one frame; leaf; count), one per well-formed line
_ROW = re.compile(r"^(.*;)?([^;\n]*) ([0-9]{1,15})$", re.M)


class Irregular(Exception):
    """A line the block reader does not take: read the file line by line instead."""


def folded_rows(path: Path) -> Iterator[tuple[str, list[tuple[str, str, str]]]]:
    """(the block's text, its rows) of a folded file (.gz too), a block's worth of lines at a time, the text
    without its last newline; Irregular at the first block holding a line that is not `STACK COUNT`, or where
    the file cannot be read."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            rest = b""
            while data := f.read(BLOCK):
                data = rest + data
                cut = data.rfind(b"\n") + 1
                rest = data[cut:]
                if cut:
                    yield _rows(data[:cut - 1].decode("utf-8", "replace"))
            if rest:
                yield _rows(rest.decode("utf-8", "replace"))
    except (OSError, EOFError):
        raise Irregular from None


def _rows(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    rows = _ROW.findall(text)
    if len(rows) != text.count("\n") + 1:
        raise Irregular
    return text, rows


def write_collapsed(path: Path, out) -> tuple[int, int]:
    """The stacks of a folded file written to out (a binary file) as `frame;frame;... weight` lines, as
    report/export.write_collapsed writes them (a count with leading zeros written as its number), a block at a
    time; (stacks, total weight). Irregular when folded_rows raises it; out's own OSError as it comes."""
    stacks = total = 0
    for text, rows in folded_rows(path):
        if " 0" in text:
            text = "\n".join([f"{callers}{leaf} {int(w)}" for callers, leaf, w in rows])
        out.write(text.encode("utf-8") + b"\n")
        stacks += len(rows)
        total += sum(map(int, [w for _, _, w in rows]))
    return stacks, total


class LeafFilter:
    """Whether no rule of any question matches any of many leaf frames, in one RE2 call."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        # each pattern in multi-line mode; a rule RE2 cannot stand in for leaves no filter: every leaf is asked
        rewritten = [re2_superset(p) for p in patterns]
        match, _, outside, self._sentinel = compile_set([None if p is None else "(?m)" + p for p in rewritten])
        self._match = None if outside else match

    def none_match(self, leaves: str) -> bool:
        """True when no rule matches any of the leaves (joined by newlines) as categorize.yaml reads them;
        False when one may, or the leaves hold what the filter cannot judge."""
        # printable ASCII (where RE2 and Python read patterns alike), and nothing normalize_frame changes
        # (generic arguments, a `_[k]` or `_[j]` suffix)
        if (self._match is None or not leaves.isascii() or "<" in leaves or "_[" in leaves
                or not leaves.replace("\n", " ").isprintable()):
            return False
        return self._match(leaves.encode()) == [self._sentinel]


# the LeafFilter of these patterns (the rules' sources), made once per process for the same patterns (its RE2 set costs
# a parse of every pattern)
leaf_filter = functools.cache(LeafFilter)
