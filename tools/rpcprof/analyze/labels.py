"""Each stack's labels in an export (its category, its sub-category where its category has them, its tax
group), as the core's writers (rpcprof_core.labelled) read them: a block of records per chunk of the core's rows,
integers little-endian u32 (tools/core/src/labels.rs):

  b'L' ID N (KEY_LEN KEY VALUE_LEN VALUE)*N   label set ID is these N (key, value) pairs
  b'R' N ID*N                                 the label sets of the next N stacks, in order

The answers are the walk's that report.py table makes (analyze/stack_walk.py), one per question: a run of
leaves that no rule matches takes its callers' labels (CallersGroups), asked once per distinct callers; a leaf
that decides every question alone gives its stacks its own set; any other stack is walked.

CallersGroups: a stack's callers `a;b;c;` cost the look-up of their last frame. Each walk goes from the leaf up
and stops at the first frame that answers, so the answer for `a;b;c;` is c's own when c answers, and that of
`a;b;` otherwise: kept by the callers' prefixes (bounded by rules.CACHE_LIMIT), a fleet's callers that share
their upper frames are walked once. The level-2 sub-category is the first frame's from the leaf with a rule of
the stack's category, kept by prefix per category; the tax group is the first frame's tax group up to the
frame that decides the category (included), else the rules' tax rest (tests/unit/test_callers_groups.py
compares them with the walks on the captures).
"""
from __future__ import annotations

import struct
import sys
from array import array
from pathlib import Path

from rpcprof.analyze.encoded_rows import grown, numbered_chunks
from rpcprof.analyze.rules import OTHER, Rules, remember
from rpcprof.analyze.stack_walk import NEUTRAL, FrameAnswers, Tally, cached, walk_callers


class CallersGroups:
    """groups(callers): the (level 1, level 2[, tax]) groups of a stack under callers `a;b;` whose leaf answers no
    question, as stack_walk.Tally.callers_answer's walks give them, from the tallies' answers (level 1, level 2,
    and tax when there are tax groups)."""

    def __init__(self, tallies: list) -> None:
        self.level1 = tallies[0]
        self.level2: FrameAnswers = tallies[1].answers
        self.tax: FrameAnswers | None = tallies[2].answers if len(tallies) > 2 else None
        self.subs: dict[str, dict[str, object]] = {}      # category -> callers prefix -> its answer
        self.taxes: dict[str, object] = {}

    def groups(self, callers: str) -> tuple:
        category = self.level1.callers_answer(callers)[0]
        level2 = category
        if category != OTHER and category in self.level2.subs:
            known, ask = self.level2.subs[category], self.level2.sub_of
            level2 = walk_callers(callers, self.subs.setdefault(category, {}),
                                  lambda frame, _cut: cached(known, ask, frame, category)) or f"{category}/{OTHER}"
        if self.tax is None:
            return category, level2
        known, ask = self.tax.tax_stop, self.tax.tax_stop_of
        tax = walk_callers(callers, self.taxes, lambda frame, _cut: cached(known, ask, frame))
        return category, level2, tax or self.tax.rules.tax.rest


class LabelSets:
    """Each stack's labels as the number of their set, each new set's record kept in `new`."""

    def __init__(self, rules: Rules) -> None:
        self.tallies = [Tally(rules, False), Tally(rules.using(level=2), False)]
        if rules.tax.groups:
            self.tallies.append(Tally(rules.using(view="tax"), False))
        self.callers_groups = CallersGroups(self.tallies)
        self.numbers: dict[tuple, int] = {}
        self.by_callers: dict[str, int] = {}
        self.by_leaf: dict[str, int] = {}         # a leaf that decides every question alone -> its stacks' set
        self.neutral: dict[str, None] = {}        # a leaf that answers no question: its stacks take their callers'
        self.new: list[bytes] = []

    def of_stack(self, stack: str) -> int:
        n = self.encode(tuple(t.answer(stack)[0] for t in self.tallies))
        leaf = stack[stack.rfind(";") + 1:]
        answers = [t.answers.by_leaf.get(leaf) for t in self.tallies]
        if all(a is NEUTRAL for a in answers):
            remember(self.neutral, leaf, None)
        elif all(isinstance(a, tuple) and a is not NEUTRAL for a in answers):
            remember(self.by_leaf, leaf, n)
        return n

    def of_callers(self, callers: str) -> int:
        """The set of a stack under callers `a;b;` whose leaf answers no question (a number is never falsy)."""
        return self.by_callers.get(callers) or remember(self.by_callers, callers,
                                                        self.encode(self.callers_groups.groups(callers)))

    def encode(self, groups: tuple) -> int:
        n = self.numbers.get(groups)
        if n is None:
            n = self.numbers[groups] = len(self.numbers) + 1       # from 1: a number is never falsy
            # a stack's (category, sub-category[, tax group]) as its labels: the sub-category only where it is one
            labels = [(k, g) for k, g in zip(("category", "subcategory", "tax"), groups)
                      if k != "subcategory" or "/" in g]
            texts = [text.encode("utf-8") for pair in labels for text in pair]
            self.new.append(b"L" + struct.pack("<II", n, len(labels))
                            + b"".join(struct.pack("<I", len(data)) + data for data in texts))
        return n


def label_blocks(folded: Path, rules: Rules):
    """Every stack's label set, a block of records per chunk of the core's rows (encoded_rows.numbered_chunks;
    EOFError or rpcprof_core.Refused as they raise them)."""
    import numpy as np
    sets = LabelSets(rules)
    of_stack, of_callers, known, decided, neutral = sets.of_stack, sets.of_callers, sets.by_callers.get, sets.by_leaf.get, sets.neutral
    by_number = np.zeros(0, np.uint32)      # per callers number: the set of its stacks whose leaf no rule matches
    for callers, leaves, numbers, _, _, at_once in numbered_chunks(folded, sets.tallies[0].leaf_filter().none_match):
        by_number = grown(by_number, len(callers))
        if at_once:
            # every stack takes its callers' set, asked once per callers text, in the order first met
            seen, first = np.unique(numbers, return_index=True)
            for i in seen[np.argsort(first)].tolist():
                by_number[i] = by_number[i] or of_callers(callers[i])
            ids = array("I", by_number[numbers].tobytes())
        else:
            rows = zip(map(callers.__getitem__, numbers.tolist()), leaves.split("\n"))
            ids = array("I", [decided(leaf) or (known(c) or of_callers(c) if c and leaf in neutral else of_stack(c + leaf))
                              for c, leaf in rows])
        if sys.byteorder == "big":
            ids.byteswap()
        yield b"".join(sets.new) + b"R" + struct.pack("<I", len(ids)) + ids.tobytes()
        sets.new.clear()
