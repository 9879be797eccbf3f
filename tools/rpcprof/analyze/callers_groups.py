"""The groups an export labels a stack with (its level-1 category, its level-2 group and, when the rules have
tax groups, its tax group), for a stack whose leaf answers no question: its callers' groups, as the walks of
stack_walk.callers_answer give them, each new callers text `a;b;c;` costing the look-up of its last frame.

Each walk goes from the leaf up and stops at the first frame that answers, so the answer for `a;b;c;` is c's own
when c answers, and that of `a;b;` otherwise: kept by the callers' prefixes (bounded by rules.CACHE_LIMIT), a
fleet's callers that share their upper frames are walked once. The level-2 sub-category is the first frame's
from the leaf with a rule of the stack's category, kept by (prefix, category); the tax group is the first
frame's tax group up to the frame that decides the category (included), else the rules' tax rest.
tests/unit/test_callers_groups.py compares them with the walks on the captures.
"""
from __future__ import annotations

from rpcprof.analyze.rules import OTHER, remember
from rpcprof.analyze.stack_walk import UNSEEN, FrameAnswers

_NONE = object()          # a kept answer of None


def _walk(callers: str, memo: dict, key, own) -> object:
    """The first answer own(frame) gives walking callers `a;b;c;` from its last frame up, None when none does;
    memo keeps it by key(prefix) for each prefix walked."""
    pending, end, prefix = [], len(callers) - 1, callers
    while True:
        hit = memo.get(key(prefix), UNSEEN)
        if hit is not UNSEEN:
            break
        pending.append(prefix)
        cut = callers.rfind(";", 0, end)
        hit = own(callers[cut + 1:end], cut)
        if hit is not None or cut < 0:
            hit = _NONE if hit is None else hit
            break
        end, prefix = cut, callers[:cut + 1]
    for p in pending:
        remember(memo, key(p), hit)
    return None if hit is _NONE else hit


class CallersGroups:
    """groups(callers): the tuple of (level 1, level 2[, tax]) groups of a stack under callers `a;b;` whose leaf
    answers no question, from the tallies' answers (level 1, level 2, and tax when there are tax groups)."""

    def __init__(self, tallies: list) -> None:
        self.level1 = tallies[0]
        self.level2: FrameAnswers = tallies[1].answers
        self.tax: FrameAnswers | None = tallies[2].answers if len(tallies) > 2 else None
        self.subs: dict[tuple[str, str], object] = {}
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

        def own(frame: str, _cut: int) -> str | None:
            group = known.get(frame, UNSEEN)
            return ask(frame, category) if group is UNSEEN else group

        return _walk(callers, self.subs, lambda prefix: (prefix, category), own)

    def tax_group(self, callers: str) -> str:
        answers = self.tax
        rest = answers.rules.tax_rest

        def own(frame: str, cut: int) -> str | None:
            group = answers.leaf_view.get(frame, UNSEEN)
            if group is UNSEEN:
                group = answers.leaf_view_of(frame)
            if group is not None:
                return group
            decided = answers.category.get(frame, UNSEEN)
            if decided is UNSEEN:
                decided = answers.category_of(frame)
            return rest if decided is not None else None

        return _walk(callers, self.taxes, lambda prefix: prefix, own) or rest
