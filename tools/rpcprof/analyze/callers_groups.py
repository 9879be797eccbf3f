"""The groups an export labels a stack with (its level-1 category, its level-2 group and, when the rules have
tax groups, its tax group), for a stack whose leaf answers no question: its callers' groups, as the walks of
stack_walk.Tally.callers_answer give them, each new callers text `a;b;c;` costing the look-up of its last frame.

Each walk goes from the leaf up and stops at the first frame that answers, so the answer for `a;b;c;` is c's own
when c answers, and that of `a;b;` otherwise: kept by the callers' prefixes (bounded by rules.CACHE_LIMIT), a
fleet's callers that share their upper frames are walked once. The level-2 sub-category is the first frame's
from the leaf with a rule of the stack's category, kept by prefix per category; the tax group is the first
frame's tax group up to the frame that decides the category (included), else the rules' tax rest.
tests/unit/test_callers_groups.py compares them with the walks on the captures.
"""
from __future__ import annotations

from rpcprof.analyze.rules import OTHER
from rpcprof.analyze.stack_walk import FrameAnswers, cached, walk_callers


class CallersGroups:
    """groups(callers): the tuple of (level 1, level 2[, tax]) groups of a stack under callers `a;b;` whose leaf
    answers no question, from the tallies' answers (level 1, level 2, and tax when there are tax groups)."""

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
            level2 = self.sub(callers, category) or f"{category}/{OTHER}"
        if self.tax is None:
            return category, level2
        return category, level2, self.tax_group(callers)

    def sub(self, callers: str, category: str) -> str | None:
        known, ask = self.level2.subs[category], self.level2.sub_of
        return walk_callers(callers, self.subs.setdefault(category, {}),
                            lambda frame, _cut: cached(known, ask, frame, category))

    def tax_group(self, callers: str) -> str:
        known, ask = self.tax.tax_stop, self.tax.tax_stop_of
        found = walk_callers(callers, self.taxes, lambda frame, _cut: cached(known, ask, frame))
        return found or self.tax.rules.tax.rest
