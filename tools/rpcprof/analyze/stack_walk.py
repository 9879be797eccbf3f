"""The categorisation: every stack's group in the rules' grouping, for a folded file as it is read (categorize_file,
up to a fleet's merge of millions of distinct stacks) and for stacks held in memory (categorize, group_of), by one
walk (stack_group) over the stack's text. A file's work per stack is kept small:

- the file is streamed: the compiled core reads it (analyze/encoded_rows.py), a stack is never held beyond its
  chunk of rows, nor split into a list of frames;
- a run of leaves that no rule of any question may match (one RE2 Set call over them, LeafFilter) is counted by
  the stacks' callers alone: without deciding frames (`table`), a sum per distinct caller whose answer
  is asked once at the end; with them (`top`), each leaf added to its callers' group's frames;
- each distinct frame meets the rules once per question (its level-1 category, its sub-category in a
  category, its tax or waits group), all the question's rules at once (Rules.first_rule, analyze/patterns.py);
  a stack then costs a dictionary look-up per frame walked, from the leaf, and the walk stops where the
  frame decides. The answers kept are bounded (rules.CACHE_LIMIT per question), so a profile of millions
  of distinct frames, each seen once, does not hold them all.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from contextvars import ContextVar
from math import gcd
from pathlib import Path

from rpcprof.analyze.encoded_rows import read_into
from rpcprof.analyze.patterns import LeafFilter, leaf_filter
from rpcprof.analyze.rules import CACHE_LIMIT, OTHER, Breakdown, Rules, remember
from rpcprof.folded import no_samples, refusal
from rpcprof.pprof_in import is_pprof, read_pprof

UNSEEN = object()
_NONE = object()          # a kept answer of None (walk_callers)
NEUTRAL = ("", "")        # a leaf that answers none of the walk's questions: its stack is its callers' answer


class FrameAnswers:
    """What the rules say of each distinct frame, asked once per frame and question."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.category: dict[str, str | None] = {}
        self.subs: dict[str, dict[str, str | None]] = {c: {} for c in rules.subcategories}
        self.leaf_view: dict[str, str | None] = {}
        self.tax_stop: dict[str, str | None] = {}
        self.by_leaf: dict[str, tuple[str, str] | None] = {}
        # the tax or waits view's question, whose first answer from the leaf decides a stack, and the group of
        # a stack where no frame answers it
        self.view_known, self.view_of, self.view_rest = (
            (self.tax_stop, self.tax_stop_of, rules.tax.rest) if rules.view == "tax" else
            (self.leaf_view, self.leaf_view_of, rules.waits.rest))

    def leaf_decides(self, leaf: str) -> tuple[str, str] | None:
        """(group, leaf) when the leaf frame decides every stack it ends, whatever its callers; NEUTRAL when
        it answers none of the questions the walk asks of it; else None."""
        rules = self.rules
        answer = None
        if rules.view in ("tax", "waits"):
            group = self.view_of(leaf)
            answer = NEUTRAL if group is None else (group, leaf)
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

    def tax_stop_of(self, frame: str) -> str | None:
        """The tax walk's answer at a frame: its tax group; else the tax rest where the frame decides the level-1
        category (the walk stops there); else None."""
        rule = self.rules.first_rule(frame, "tax")
        group = rule.category if rule else None
        if group is None and self.category_of(frame) is not None:
            group = self.rules.tax.rest
        return remember(self.tax_stop, frame, group)


def cached(known: dict, ask, frame: str, *args):
    """known[frame] where the frame was asked before, else ask(frame, *args) (which keeps its answer in known)."""
    answer = known.get(frame, UNSEEN)
    return ask(frame, *args) if answer is UNSEEN else answer


def _first_from_leaf(stack: str, known: dict, ask, *args) -> tuple[str | None, str]:
    """(the first answer walking from the leaf, its frame); (None, leaf) when no frame answers.
    known: the answers so far, frame -> answer or None; ask(frame, *args) answers a frame not seen yet."""
    end = len(stack)
    while True:
        cut = stack.rfind(";", 0, end)
        frame = stack[cut + 1:end]
        answer = known.get(frame, UNSEEN)
        if answer is UNSEEN:
            answer = ask(frame, *args)
        if answer is not None:
            return answer, frame
        if cut < 0:
            return None, stack[stack.rfind(";") + 1:]
        end = cut


def stack_group(stack: str, answers: FrameAnswers) -> tuple[str, str]:
    """(group of stack `a;b;c` in the rules' grouping, the frame its samples are counted under in `top`): the
    deciding frame, or the leaf when none decides. The walks are those analyze/categorize.py's docstring states."""
    rules = answers.rules
    if rules.view != "category":
        group, frame = _first_from_leaf(stack, answers.view_known, answers.view_of)
        return (group, frame) if group else (answers.view_rest, frame)
    category, decider = _first_from_leaf(stack, answers.category, answers.category_of)
    category = category or OTHER
    if rules.level == 1 or category == OTHER or category not in answers.subs:
        return category, decider
    group, frame = _first_from_leaf(stack, answers.subs[category], answers.sub_of, category)
    return (group, frame) if group else (f"{category}/{OTHER}", decider)


_KEPT: ContextVar[dict | None] = ContextVar("rpcprof_breakdowns_kept", default=None)


@contextmanager
def breakdowns_kept():
    """Within it, categorize_file of a file it categorised before with the same Rules object gives the same
    Breakdown again (report.html's charts, tables and mechanism each read a run's profiles); the files must not
    change meanwhile, nor anyone change a Breakdown it returns."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def categorize_file(path: Path | str, rules: Rules, keep_frames: bool = True) -> Breakdown:
    """The Breakdown of a folded file (or a pprof profile), as categorize(open_folded(path), rules) gives it,
    streamed; UserError naming the file when it is missing, damaged, or holds no samples. keep_frames=False:
    its by_frame left empty (`table` has no use for it, and a fleet's distinct leaves would fill it)."""
    kept, key = _KEPT.get(), (Path(path), rules, keep_frames)
    if kept is not None and key in kept:
        return kept[key]
    if is_pprof(path):
        b = categorize(read_pprof(path), rules)
    elif read_into(tally := Tally(rules, keep_frames), Path(path)):
        b = tally.breakdown(path)
    else:
        raise refusal(path)
    if kept is not None:
        kept[key] = b
    return b


ROWS_AT_ONCE = 256        # leaves asked of the LeafFilter in one call


def new_leaves_at_once(callers, leaves, weights, leaf_into: dict, frames_for) -> bool:
    """A run of rows (their callers, leaves and weights, in order) whose stacks all count under their own leaf
    in one group's frames, each leaf new there: counted by one dict update, in the run's order as one row at a
    time would; False, having counted nothing, otherwise. leaf_into: callers -> the frames dict their stacks
    count their leaf into, or False (a frame of theirs decides, or no callers); frames_for(callers) puts callers
    there, in the run's order."""
    into = list(map(leaf_into.get, callers))
    if None in into:
        for c in callers:
            if c not in leaf_into:
                frames_for(c)
        into = list(map(leaf_into.get, callers))
    frames = into[0]
    if frames is None or frames is False or len(set(map(id, into))) != 1:
        return False
    new = dict(zip(leaves, map(int, weights)))
    if len(new) != len(callers) or not frames.keys().isdisjoint(new):
        return False
    frames.update(new)
    return True


def walk_callers(callers: str, memo: dict, own) -> object:
    """The first answer own(frame, cut) gives walking callers `a;b;c;` from its last frame up (cut: where the
    frame's `;` before it is, -1 at the root), None when none does; memo keeps it by prefix for each prefix
    walked, so that callers sharing their upper frames are walked once."""
    pending, end, prefix = [], len(callers) - 1, callers
    while True:
        hit = memo.get(prefix, UNSEEN)
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
        remember(memo, p, hit)
    return None if hit is _NONE else hit


class Tally:
    """The sums of categorize_file, one stack or one block of rows at a time."""

    def __init__(self, rules: Rules, keep_frames: bool):
        self.rules, self.keep_frames = rules, keep_frames
        self.answers = FrameAnswers(rules)
        # A leaf that no rule answers leaves the stack to its callers, whose answer is kept by their text: a
        # fleet's distinct leaves (JIT code, line numbers, addresses) mostly sit under callers seen before.
        self.by_callers: dict[str, tuple[str, str | None]] = {}
        self.weights: dict[str, int] = {}
        self.by_frame: dict[str, dict[str, int]] = {}    # group -> frame counted under -> weight, first seen first
        self.unit = self.stacks = 0
        # without the deciding frames, the stacks whose leaf no rule answers are summed by their callers (`a;b;`)
        # alone, and their callers' answers asked once at the end: under_callers, emptied into weights when it
        # grows past CACHE_LIMIT
        self.under_callers: dict[str, int] = {}
        self._frames_of: dict[str, tuple[dict[str, int], str | None]] = {}    # callers -> (by_frame[group], frame)
        self._leaf_into: dict[str, dict[str, int] | bool] = {"": False}        # see new_leaves_at_once

    def group_weights(self) -> dict[str, int]:
        """Group -> weight of the stacks so far."""
        if self.keep_frames:
            return {group: sum(frames.values()) for group, frames in self.by_frame.items()}
        weights = dict(self.weights)
        for callers, w in self.under_callers.items():
            group = self.callers_answer(callers)[0]
            weights[group] = weights.get(group, 0) + w
        return weights

    def answer(self, stack: str) -> tuple[str, str]:
        """(group, the frame its samples are counted under) of a stack `a;b;c`, as stack_group gives them."""
        answers = self.answers
        cut = stack.rfind(";")
        leaf = stack[cut + 1:]
        key = cached(answers.by_leaf, answers.leaf_decides, leaf)
        if key is NEUTRAL and cut >= 0:
            group, frame = self.callers_answer(stack[:cut + 1])
            return group, leaf if frame is None else frame
        if key is None or key is NEUTRAL:
            return stack_group(stack, answers)
        return key

    def callers_answer(self, callers: str) -> tuple[str, str | None]:
        """(group, deciding frame) of a stack's callers `a;b;` (the stack less a NEUTRAL leaf, with the callers' last
        ';'), kept by that text; the frame None when no frame decides (the stack's own leaf is then the frame its
        samples are counted under)."""
        known = self.by_callers.get(callers)
        if known is None:
            if self.rules.view == "category" and self.rules.level == 1:
                return walk_callers(callers, self.by_callers, self._level1_own)
            answers = self.answers
            group, frame = stack_group(callers[:-1], answers)
            if self.rules.view == "category":
                frame = frame if group != OTHER else None
            else:
                # the tax and waits walks name the callers' last frame both when it decides and when none does:
                # it decides only if it answers one of the questions
                last = callers[callers.rfind(";", 0, len(callers) - 1) + 1:-1]
                known = cached(answers.by_leaf, answers.leaf_decides, last)
                frame = frame if frame != last or known is not NEUTRAL else None
            known = remember(self.by_callers, callers, (group, frame))
        return known

    def _level1_own(self, frame: str, cut: int) -> tuple[str, str | None] | None:
        """walk_callers' answer at a frame of the callers at level 1: the frame decides, or none does up to the root."""
        decided = cached(self.answers.category, self.answers.category_of, frame)
        if decided is not None:
            return decided, frame if decided != OTHER else None
        return (OTHER, None) if cut < 0 else None

    def _count(self, group: str, frame: str, w: int) -> None:
        weights = self.weights
        weights[group] = weights.get(group, 0) + w
        if self.keep_frames:
            frames = self.by_frame.get(group)
            if frames is None:
                frames = self.by_frame[group] = {}
            frames[frame] = frames.get(frame, 0) + w

    def leaf_filter(self) -> LeafFilter:
        """The LeafFilter of every question's rules (made once per process: patterns.leaf_filter)."""
        rules = self.rules.rules + self.rules.tax.rules + self.rules.waits.rules
        return leaf_filter(tuple(r.pattern.pattern for r in rules))

    def leaves_at_once(self, callers: list[str], leaves: list[str], weights: list[int]) -> bool:
        """new_leaves_at_once of rows given as their callers, leaves and weights (counted in stacks and unit too)."""
        if not new_leaves_at_once(callers, leaves, weights, self._leaf_into, self._frames_for):
            return False
        self.counted(len(callers), gcd(*set(weights)))
        return True

    def counted(self, rows: int, unit: int) -> None:
        """rows stacks more, whose weights' gcd is unit."""
        self.stacks += rows
        self.unit = gcd(self.unit, unit)

    def add_rows(self, rows: list[tuple[str, str, str]]) -> None:
        """Rows (callers, leaf, count), in the file's order: a run of leaves that no rule answers (LeafFilter) is counted by
        its callers' answers alone; any other row by its own answer."""
        none_match = self.leaf_filter().none_match
        count, answer, frames_of = self._count, self.answer, self._frames_of
        keep_frames, under = self.keep_frames, self.under_callers
        for i in range(0, len(rows), ROWS_AT_ONCE):
            run = rows[i:i + ROWS_AT_ONCE]
            if not none_match("\n".join([leaf for _, leaf, _ in run])):
                for callers, leaf, w in run:
                    count(*answer(callers + leaf), int(w))
                continue
            if not keep_frames:
                for callers, leaf, w in run:
                    if callers:
                        under[callers] = under.get(callers, 0) + int(w)
                    else:
                        count(*answer(leaf), int(w))
                continue
            if new_leaves_at_once(*zip(*run), self._leaf_into, self._frames_for):
                continue
            for callers, leaf, w in run:       # summed into by_frame alone: the weights are its sums
                w = int(w)
                if not callers:
                    count(*answer(leaf), w)
                    continue
                frames, frame = frames_of.get(callers) or self._frames_for(callers)
                if frame is None:
                    frame = leaf
                frames[frame] = frames.get(frame, 0) + w
        if len(under) > CACHE_LIMIT:
            self.weights = self.group_weights()
            under.clear()
        self.counted(len(rows), gcd(*map(int, {w for _, _, w in rows})))

    def _frames_for(self, callers: str) -> tuple[dict[str, int], str | None]:
        """(by_frame's dict of the group of callers `a;b;`, the frame deciding it or None), kept by callers."""
        group, frame = self.callers_answer(callers)
        frames = self.by_frame.setdefault(group, {})
        remember(self._leaf_into, callers, frame is None and frames)
        return remember(self._frames_of, callers, (frames, frame))

    def breakdown(self, path=None, unit: int | None = None) -> Breakdown:
        """The Breakdown of the stacks so far, UserError naming path (the file read) when they hold no samples;
        unit: one sample's weight, else the gcd of their weights."""
        weights = self.group_weights()
        total = sum(weights.values())
        if path is not None and not total:
            raise no_samples(path)
        return Breakdown({c: weights.get(c, 0) for c in self.rules.all_categories}, total,
                         total // (unit or self.unit or 1), self.by_frame, self.stacks)


def categorize(stacks: list[tuple[list[str], int]], rules: Rules, sample_weight: int | None = None) -> Breakdown:
    """The Breakdown of stacks held in memory ((frames root first, weight)), counted as a file's rows are; sample_weight:
    one sample's weight (perf's period when inferno weighted by period), else the gcd of the weights."""
    tally = Tally(rules, keep_frames=True)
    tally.add_rows([(";".join(frames[:-1]) + ";" if len(frames) > 1 else "", frames[-1], w) for frames, w in stacks])
    return tally.breakdown(unit=sample_weight)


_ANSWERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()     # Rules -> its FrameAnswers, for group_of


def group_of(frames: list[str], rules: Rules) -> str:
    """The group of one stack (frames root first) in the rules' grouping, by stack_group's walk."""
    answers = _ANSWERS.get(rules) or _ANSWERS.setdefault(rules, FrameAnswers(rules))
    return stack_group(";".join(frames), answers)[0]
