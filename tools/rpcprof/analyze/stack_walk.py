"""Categorise a folded file as it is read, for profiles of millions of distinct stacks (a fleet's merge).

The answer is Rules.classify_stack's, stack by stack (rpcprof.analyze.categorize.categorize is the
reference, tests/unit/test_stack_walk.py compares both); what changes is the work per stack:

- the file is streamed: a stack is never held beyond its line, nor split into a list of frames;
- each distinct frame meets the rules once per question (its level-1 category, its sub-category in a
  category, its tax or waits group), all the question's rules at once (Rules.first_rule, analyze/rule_set.py);
  a stack then costs a dictionary look-up per frame walked, from the leaf, and the walk stops where the
  frame decides. The answers kept are bounded (rules.CACHE_LIMIT per question), so a profile of millions
  of distinct frames, each seen once, does not hold them all.
"""
from __future__ import annotations

from math import gcd
from pathlib import Path

from rpcprof.analyze.categorize import Breakdown, categorize
from rpcprof.analyze.rules import OTHER, Rules, remember
from rpcprof.folded import no_samples, stream_folded
from rpcprof.pprof_in import is_pprof, read_pprof

_UNSEEN = object()
NEUTRAL = ("", "")        # a leaf that answers none of the walk's questions: its stack is its callers' answer


class FrameAnswers:
    """What the rules say of each distinct frame, asked once per frame and question."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.category: dict[str, str | None] = {}
        self.subs: dict[str, dict[str, str | None]] = {c: {} for c in rules.subcategories}
        self.leaf_view: dict[str, str | None] = {}
        self.by_leaf: dict[str, tuple[str, str] | None] = {}

    def leaf_decides(self, leaf: str) -> tuple[str, str] | None:
        """(group, leaf) when the leaf frame decides every stack it ends, whatever its callers; NEUTRAL when
        it answers none of the questions the walk asks of it; else None."""
        rules = self.rules
        answer = None
        if rules.view in ("tax", "waits"):
            group = self.leaf_view_of(leaf)
            if group is not None:
                answer = group, leaf
            elif rules.view == "waits":
                answer = NEUTRAL
            elif self.category_of(leaf) is not None:
                answer = rules.tax_rest, leaf        # the tax walk stops at the frame deciding the category
            else:
                answer = NEUTRAL
        elif (category := self.category_of(leaf)) is not None:
            if rules.level == 1 or category == OTHER or category not in self.subs:
                answer = category, leaf
            elif (group := self.sub_of(leaf, category)) is not None:
                answer = group, leaf
        elif rules.level == 1 or rules.first_rule(leaf, "sub:*") is None:
            answer = NEUTRAL                         # at level 2, no sub-category's rule matches it either
        return remember(self.by_leaf, leaf, answer)

    def category_of(self, frame: str) -> str | None:
        rule = self.rules.first_rule(frame, "category")
        return remember(self.category, frame, rule.category if rule else None)

    def sub_of(self, frame: str, category: str) -> str | None:
        rule = self.rules.first_rule(frame, f"sub:{category}")
        return remember(self.subs[category], frame, f"{category}/{rule.sub}" if rule else None)

    def leaf_view_of(self, frame: str) -> str | None:
        rule = self.rules.first_rule(frame, self.rules.view)
        return remember(self.leaf_view, frame, rule.category if rule else None)


def _first_from_leaf(stack: str, known: dict, ask, *args) -> tuple[str | None, str]:
    """(the first answer walking from the leaf, its frame); (None, leaf) when no frame answers.
    known: the answers so far, frame -> answer or None; ask(frame, *args) answers a frame not seen yet."""
    end = len(stack)
    leaf = None
    while True:
        cut = stack.rfind(";", 0, end)
        frame = stack[cut + 1:end]
        if leaf is None:
            leaf = frame
        answer = known.get(frame, _UNSEEN)
        if answer is _UNSEEN:
            answer = ask(frame, *args)
        if answer is not None:
            return answer, frame
        if cut < 0:
            return None, leaf
        end = cut


def _tax_group(stack: str, answers: FrameAnswers) -> tuple[str, str]:
    """The tax view's (group, frame), in one walk from the leaf: the first frame with a tax group, among
    the frames up to the one that decides the level-1 category (included); when none has one, the rest
    group, counted under the deciding frame (or the leaf, when no frame decides)."""
    known, ask = answers.leaf_view, answers.leaf_view_of
    category, category_of = answers.category, answers.category_of
    end = len(stack)
    leaf = None
    while True:
        cut = stack.rfind(";", 0, end)
        frame = stack[cut + 1:end]
        if leaf is None:
            leaf = frame
        group = known.get(frame, _UNSEEN)
        if group is _UNSEEN:
            group = ask(frame)
        if group is not None:
            return group, frame
        decided = category.get(frame, _UNSEEN)
        if decided is _UNSEEN:
            decided = category_of(frame)
        if decided is not None:
            return answers.rules.tax_rest, frame
        if cut < 0:
            return answers.rules.tax_rest, leaf
        end = cut


def stack_group(stack: str, answers: FrameAnswers) -> tuple[str, str]:
    """(group of stack `a;b;c` in the rules' grouping, the frame its samples are counted under in `top`): the
    deciding frame, or the leaf when none decides; as Rules.classify_stack."""
    rules = answers.rules
    if rules.view == "waits":
        group, frame = _first_from_leaf(stack, answers.leaf_view, answers.leaf_view_of)
        return (group, frame) if group else (rules.waits.rest, frame)
    if rules.view == "tax":
        return _tax_group(stack, answers)
    category, decider = _first_from_leaf(stack, answers.category, answers.category_of)
    category = category or OTHER
    if rules.level == 1 or category == OTHER or category not in answers.subs:
        return category, decider
    group, frame = _first_from_leaf(stack, answers.subs[category], answers.sub_of, category)
    return (group, frame) if group else (f"{category}/{OTHER}", decider)


def callers_answer(callers: str, answers: FrameAnswers) -> tuple[str, str | None]:
    """(group, deciding frame) of a stack's callers `a;b` (the stack less a NEUTRAL leaf), the frame None when
    no frame decides (the stack's own leaf is then the frame its samples are counted under)."""
    group, frame = stack_group(callers, answers)
    if answers.rules.view == "category":
        return group, frame if group != OTHER else None
    # the tax and waits walks name the callers' last frame both when it decides and when none does: it
    # decides only if it answers one of the questions
    last = callers[callers.rfind(";") + 1:]
    known = answers.by_leaf.get(last, _UNSEEN)
    if known is _UNSEEN:
        known = answers.leaf_decides(last)
    return group, frame if frame != last or known is not NEUTRAL else None


def categorize_file(path: Path | str, rules: Rules, keep_frames: bool = True) -> Breakdown:
    """The Breakdown of a folded file (or a pprof profile), as categorize(open_folded(path), rules) gives it,
    streamed; UserError naming the file when it is missing, damaged, or holds no samples. keep_frames=False:
    its by_frame left empty (`table` has no use for it, and a fleet's distinct leaves would fill it)."""
    if is_pprof(path):
        return categorize(read_pprof(path), rules)
    answers = FrameAnswers(rules)
    by_leaf = answers.by_leaf
    # A leaf that no rule answers leaves the stack to its callers, whose answer is kept by their text: a
    # fleet's distinct leaves (JIT code, line numbers, addresses) mostly sit under callers seen before.
    by_callers: dict[str, tuple[str, str | None]] = {}
    weights: dict[str, int] = {}
    by_frame: dict[str, dict[str, int]] = {}    # group -> frame counted under -> weight, first seen first
    total = unit = stacks = 0
    for stack, w in stream_folded(path):
        cut = stack.rfind(";")
        leaf = stack[cut + 1:]
        key = by_leaf.get(leaf, _UNSEEN)
        if key is _UNSEEN:
            key = answers.leaf_decides(leaf)
        if key is NEUTRAL and cut >= 0:
            callers = stack[:cut]
            group, frame = by_callers.get(callers) or remember(by_callers, callers, callers_answer(callers, answers))
            if frame is None:
                frame = leaf
        elif key is None or key is NEUTRAL:
            group, frame = stack_group(stack, answers)
        else:
            group, frame = key
        weights[group] = weights.get(group, 0) + w
        if keep_frames:
            frames = by_frame.get(group)
            if frames is None:
                frames = by_frame[group] = {}
            frames[frame] = frames.get(frame, 0) + w
        total += w
        stacks += 1
        if unit == 0 or w % unit:
            unit = gcd(unit, w)
    if not total:
        raise no_samples(path)
    return Breakdown({c: weights.get(c, 0) for c in rules.all_categories}, total, total // (unit or 1), by_frame,
                     stacks)
