"""A profile's rows as inferno-flamegraph draws them, and the categories beneath each box it draws.

The compiled core reads the rows (analyze/encoded_rows.py), a chunk at a time; each chunk is categorised
(stack_walk.Tally: a chunk whose leaves no rule may match takes its callers' answers, asked once per distinct
callers) and written to a file as inferno must read it (`drawn_block`). inferno sorts the lines it draws as byte
strings and each box spans a run of adjacent lines, so the box at fg:x, fg:w holds the lines whose weights,
summed in that order, run from x to x + w: the core sorts the file's lines as inferno does
(rpcprof_core.sorted_lines), and running sums per category give each box its weights (`box_weights`).

Frame names are made safe before inferno sees them (report/text.py's xml_chars with lines=True: control characters
and what XML 1.0 forbids become U+FFFD, as non-UTF-8 bytes already are, open_folded decoding with errors='replace'):
inferno escapes XML itself but rejects non-UTF-8 input and passes control characters through.
"""
from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from itertools import accumulate, compress
from pathlib import Path
from typing import Iterator

import rpcprof_core

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.encoded_rows import core_rows
from rpcprof.analyze.stack_walk import Tally
from rpcprof.folded import refusal
from rpcprof.pprof_in import is_pprof, read_pprof
from rpcprof.report.text import xml_chars

_TRAILING_COUNT = re.compile(r" ([0-9]*(\.[0-9]*)?)$")
SPACE_AT_END = re.compile(r" [0-9.]*$", re.M)     # a leaf displayable_stack trims or whose end it rewrites


def deannotated(name: str) -> str:
    """The name inferno gives a frame's box: without a `_[k]`, `_[w]`, `_[i]` or `_[j]` annotation."""
    return name[:-4] if name.endswith(("_[k]", "_[w]", "_[i]", "_[j]")) else name


def displayable_stack(frames: list[str]) -> str:
    """One folded stack as inferno must read it back frame for frame: inferno trims each line, drops
    lines starting with '# ' and reads a last frame ending in ' 123' as a second (differential) count."""
    stack = ";".join(xml_chars(f, lines=True) for f in frames).strip()
    if stack.startswith("# "):
        stack = "#\u00a0" + stack[2:]
    m = _TRAILING_COUNT.search(stack)
    if m:
        stack = stack[:m.start()] + "\u00a0" + m.group(1)
    return stack or "[empty stack]"


def _odd_leaves(leaves: str) -> set[str]:
    """The leaves (joined by newlines) that displayable_stack trims or whose end it rewrites."""
    return {leaves[leaves.rfind("\n", 0, m.start()) + 1:m.end()] for m in SPACE_AT_END.finditer(leaves)}


def drawn_block(text: str, rows) -> str:
    """A block's lines (text: `CALLERS;LEAF COUNT` lines; rows: their (callers, leaf, count)) as displayable stacks."""
    # as written, unless displayable_stack would change a line: a character it replaces, a line starting with a
    # space (an empty stack too) or '#', a stack ending in a space or in ` 123` / ` 1.5` (a leaf with a space:
    # only such lines are rewritten when the block is otherwise printable ASCII), or a count with a leading zero
    printable = (text.isascii() and text.replace("\n", " ").isprintable() and text[:1] not in " #"
                 and "\n " not in text and "\n#" not in text)
    odd = _odd_leaves("\n".join([leaf for _, leaf, _ in rows])) if printable and text.count(" ") != len(rows) else set()
    if printable and not odd and " 0" not in text:
        return text + "\n"
    return "".join([f"{c + leaf if printable and leaf not in odd else displayable_stack((c + leaf).split(';'))} "
                    f"{int(w)}\n" for c, leaf, w in rows])


def _rows(folded: Path) -> Iterator[tuple[list[str], list[str], list[int], object, list[str] | None]]:
    """encoded_rows.core_rows of a folded file, or a pprof profile's stacks as one chunk (the callers' numbers and
    texts None); UserError naming the file when it is missing or damaged."""
    if is_pprof(folded):
        stacks = read_pprof(folded)
        yield ([";".join(f[:-1]) + ";" if len(f) > 1 else "" for f, _ in stacks], [f[-1] for f, _ in stacks],
               [w for _, w in stacks], None, None)
        return
    try:
        yield from core_rows(folded)
    except (rpcprof_core.Refused, EOFError):
        raise refusal(folded) from None


AT_ONCE_FROM = 4096     # rows of a chunk worth asking the LeafFilter (made once per process: a parse of every rule)


def write_drawn_rows(folded: Path, rules: Rules, write, classify=None) -> tuple[list, list]:
    """(weights, groups) of a folded file's rows, in order (arrays), each group a number (its place in
    rules.all_categories), by the leaf-first rule (stack_walk.Tally) or classify(frames); the rows given to write
    (a function of text) as inferno must read them (drawn_block)."""
    tally = Tally(rules, keep_frames=False)
    answer, callers_answer = tally.answer, tally.callers_answer
    number = {c: i for i, c in enumerate(rules.all_categories)}.__getitem__
    weights, groups = array("Q"), array("B")
    by_callers: list[int] = []     # the group of a stack under each callers number whose leaf no rule answers
    for callers, leaves, counts, ids, known in _rows(folded):
        rows = list(zip(callers, leaves, counts))
        write(drawn_block("\n".join([f"{c}{leaf} {w}" for c, leaf, w in rows]), rows))
        if classify:
            found = [number(classify((c + leaf).split(";"))) for c, leaf, _ in rows]
        elif known is not None and len(rows) >= AT_ONCE_FROM and tally.leaf_filter().none_match("\n".join(leaves)):
            by_callers += [number(callers_answer(c)[0]) if c else -1 for c in known[len(by_callers):]]   # -1: one frame
            found = list(map(by_callers.__getitem__, ids))
            if -1 in found:
                found = [g if g >= 0 else number(answer(leaf)[0]) for g, leaf in zip(found, leaves)]
        else:
            found = [number(answer(c + leaf)[0]) for c, leaf, _ in rows]
        weights.extend(counts)
        groups.extend(found)
    return weights, groups


def box_weights(boxes: set[tuple[int, int]], ranked, weights, groups, order: list[str]) -> dict:
    """(fg:x, fg:w) -> {group: weight} of each box: the lines whose weights, summed in inferno's order (ranked: the
    lines' numbers in that order, rpcprof_core.sorted_lines), run from x to x + w."""
    weights, groups = list(map(weights.__getitem__, ranked)), bytes(map(groups.__getitem__, ranked))
    ends = list(accumulate(weights, initial=0))
    cuts = sorted({bisect_left(ends, at) for x, w in boxes for at in (x, x + w)})
    # each group's weight from the first line up to each cut, summed from cut to cut
    running = dict.fromkeys(set(groups), 0)
    upto = {cuts[0]: dict(running)} if cuts else {}
    for start, end in zip(cuts, cuts[1:]):
        these, ws = groups[start:end], weights[start:end]
        for g in running:
            n = these.count(g)
            if n:
                running[g] += sum(ws) if n == len(these) else sum(compress(ws, map(g.__eq__, these)))
        upto[end] = dict(running)
    found: dict[tuple[int, int], dict[str, int]] = {}
    for x, w in boxes:
        first, last = upto[bisect_left(ends, x)], upto[bisect_left(ends, x + w)]
        found[x, w] = {order[g]: last[g] - first[g] for g in sorted(running) if last[g] > first[g]}
    return found
