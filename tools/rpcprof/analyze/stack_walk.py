"""The categorisation: every stack's group in the rules' grouping, for a folded file as it is read (categorize_file,
up to a fleet's merge of millions of distinct stacks) and for stacks held in memory (categorize, group_of), by one
walk (stack_group) over the stack's text. A file's work per stack is kept small:

- the file is streamed: the compiled core reads it (rpcprof.folded.chunks) and numbers its distinct callers
  texts (`a;b;`), and each chunk's distinct leaves; a stack is never held beyond its chunk of rows, nor split
  into a list of frames;
- a chunk's distinct leaves are asked, a run of leaves that no rule of any question may match at once (LeafFilter,
  one RE2 Set call over them); a row whose leaf answers no question takes its callers' answer, asked once per
  distinct callers text (Grouping), a chunk's rows then grouped by those numbers;
- each distinct frame meets the rules once per question (its level-1 category, its sub-category in a
  category, its tax or waits group), all the question's rules at once (Rules.first_rule, analyze/patterns.py);
  a stack then costs a dictionary look-up per frame walked, from the leaf, and the walk stops where the
  frame decides. The answers kept are bounded (rules.CACHE_LIMIT per question), so a profile of millions
  of distinct frames, each seen once, does not hold them all.
"""
from __future__ import annotations

import functools
import weakref
from contextlib import contextmanager
from contextvars import ContextVar
from math import gcd
from pathlib import Path

import rpcprof_core

from rpcprof.analyze.patterns import leaf_filter
from rpcprof.analyze.rules import OTHER, Breakdown, Rules, remember
from rpcprof.folded import chunks, in_memory, no_samples, refusal
from rpcprof.pprof_in import collapsed_file, is_pprof

UNSEEN = object()
_NONE = object()          # a kept answer of None (walk_callers)
NEUTRAL = ("", "")        # a leaf that answers none of the walk's questions: its stack is its callers' answer


class FrameAnswers:
    """What the rules say of each distinct frame, asked once per frame and question."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.category: dict[str, str | None] = {}
        self.subs: dict[str, dict[str, str | None]] = {c: {} for c in rules.subcategories}
        self.by_leaf: dict[str, tuple[str, str] | None] = {}
        # the tax or waits view's question, whose first answer from the leaf decides a stack, and the group of
        # a stack where no frame answers it (the grouping's last: OTHER in the category view)
        self.view_known: dict[str, str | None] = {}
        self.view_of = self.tax_stop_of if rules.view == "tax" else self.leaf_view_of
        self.view_rest = rules.all_categories[-1]

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
        return remember(self.view_known, frame, rule.category if rule else None)

    def tax_stop_of(self, frame: str) -> str | None:
        """The tax walk's answer at a frame: its tax group; else the tax rest where the frame decides the level-1
        category (the walk stops there); else None."""
        rule = self.rules.first_rule(frame, "tax")
        group = rule.category if rule else None
        if group is None and self.category_of(frame) is not None:
            group = self.rules.tax.rest
        return remember(self.view_known, frame, group)


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


def categorize_file(path: Path | str, rules: Rules, keep_frames: bool = True, between=None) -> Breakdown:
    """The Breakdown of a folded file (or a pprof profile), as categorize(open_folded(path), rules) gives it,
    streamed, between() called after each chunk of rows when given; UserError naming the file when it is missing,
    damaged, or holds no samples. keep_frames=False: its by_frame left empty (`table` has no use for it)."""
    kept, key = _KEPT.get(), (Path(path), rules, keep_frames)
    if kept is not None and key in kept:
        return kept[key]
    try:
        b = read_breakdown(collapsed_file(path)[0] if is_pprof(path) else path, rules, keep_frames, between)
    except (EOFError, rpcprof_core.Refused) as e:
        raise refusal(path, e) from None
    if kept is not None:
        kept[key] = b
    return b


def read_breakdown(path: Path | str, rules: Rules, keep_frames: bool = False, between=None) -> Breakdown:
    """categorize_file's Breakdown of a folded file the core reads (folded.chunks), between() called after each
    chunk; rpcprof_core.Refused, or EOFError, as chunks raise them."""
    if not Path(path).is_file():
        raise rpcprof_core.Refused(str(path))
    sums = Sums(rules, keep_frames)
    for chunk in chunks(Path(path)):
        sums.add(chunk)
        if between:
            between()
    return sums.breakdown(path)


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


NEUTRAL_LEAF, WALKED_LEAF = -1, -2     # a leaf's code: its stacks take their callers' group; each is walked
LEAVES_AT_ONCE = 256                   # leaves asked of the LeafFilter in one call, when a whole chunk's may match
FILTER_FROM = 4096                     # distinct leaves of a chunk worth the LeafFilter (a fleet's, not a capture's)


class Grouping:
    """Each row's group in the rules' grouping (its number: its place in rules.all_categories), a chunk of the
    core's rows at a time (folded.chunks), as stack_group's walk gives it. Each of a chunk's distinct leaves
    decides its stacks alone, or answers no question (NEUTRAL: its stacks take their callers' answer, asked once
    per distinct callers text, by walk_callers), or neither (each of its stacks is walked). A run of leaves that
    no rule of any question may match (one RE2 Set call over them, LeafFilter) is NEUTRAL at once."""

    def __init__(self, rules: Rules) -> None:
        self.rules, self.answers = rules, FrameAnswers(rules)
        self.number = {g: i for i, g in enumerate(rules.all_categories)}
        self.rest = self.answers.view_rest             # OTHER, or the tax or waits view's rest
        self.memo: dict[str, object] = {}              # callers prefix -> its answer (walk_callers)
        self.sub_memo: dict[str, dict[str, object]] = {}    # level 2: category -> callers prefix -> its answer
        self.callers_codes: list[int] = []             # per callers number: its group
        self.callers_frames: dict[int, str] = {}       # per callers number: the frame that decides it, if one does

    def rows(self, chunk, frames: bool = False) -> tuple[list[int], list[str] | None]:
        """(each row's group number, with frames each row's frame its samples count under: the deciding frame, or
        its leaf where none decides) of a chunk, in its order."""
        codes = self._leaf_codes(chunk.leaves)
        ids, known, neutral = chunk.callers_ids, self.callers_codes, codes.count(NEUTRAL_LEAF)
        leaves = list(map(chunk.leaves.__getitem__, chunk.leaf_ids)) if frames or WALKED_LEAF in codes else None
        named = leaves
        if neutral:
            for i in range(len(known), len(chunk.callers)):     # each callers text asked once, in order
                group, frame = self.callers_answer(chunk.callers[i])
                known.append(self.number[group])
                if frame is not None:
                    self.callers_frames[i] = frame
        if neutral == len(codes):                               # every row takes its callers' group
            groups = list(map(known.__getitem__, ids))
            if frames:
                named = list(map(self.callers_frames.get, ids, leaves))
        else:
            groups = list(map(codes.__getitem__, chunk.leaf_ids))
            if neutral and frames:
                by_callers = self.callers_frames
                named = [f if g != NEUTRAL_LEAF else by_callers.get(c, f) for g, c, f in zip(groups, ids, leaves)]
            if neutral:
                groups = [g if g != NEUTRAL_LEAF else known[c] for g, c in zip(groups, ids)]
        if WALKED_LEAF in codes:
            for row in [row for row, g in enumerate(groups) if g == WALKED_LEAF]:
                group, frame = stack_group(chunk.callers[chunk.callers_ids[row]] + leaves[row], self.answers)
                groups[row] = self.number[group]
                if frames:
                    named[row] = frame
        return groups, named if frames else None

    def _leaf_codes(self, leaves: list[str]) -> list[int]:
        """Each leaf's group number, NEUTRAL_LEAF or WALKED_LEAF."""
        codes = [NEUTRAL_LEAF] * len(leaves)
        none_match = self.none_match if len(leaves) >= FILTER_FROM else lambda _: False
        if none_match("\n".join(leaves)):
            return codes
        by_leaf, decides = self.answers.by_leaf, self.answers.leaf_decides
        for at in range(0, len(leaves), LEAVES_AT_ONCE):
            run = leaves[at:at + LEAVES_AT_ONCE]
            if none_match("\n".join(run)):
                continue
            for i, leaf in enumerate(run, at):
                key = cached(by_leaf, decides, leaf)
                if key is None:
                    codes[i] = WALKED_LEAF
                elif key is not NEUTRAL:
                    codes[i] = self.number[key[0]]
        return codes

    @functools.cached_property
    def none_match(self):
        """The LeafFilter's test of every question's rules (made once per process: a parse of every rule)."""
        every = self.rules.rules + self.rules.tax.rules + self.rules.waits.rules
        return leaf_filter(tuple(r.pattern.pattern for r in every)).none_match

    def callers_answer(self, callers: str) -> tuple[str, str | None]:
        """(group, deciding frame) of a stack's callers `a;b;` whose leaf answers no question; the frame None when
        no frame decides (the stack's own leaf is then the frame its samples are counted under)."""
        if not callers:
            return self.rest, None
        answers, rules = self.answers, self.rules
        if rules.view != "category":
            known, ask = answers.view_known, answers.view_of
            return walk_callers(callers, self.memo, lambda f, cut: self._own(known, ask, f, cut)) or (self.rest, None)
        category, frame = walk_callers(callers, self.memo, self._level1_own)
        if rules.level == 1 or category == OTHER or category not in answers.subs:
            return category, frame
        known, ask = answers.subs[category], answers.sub_of
        return walk_callers(callers, self.sub_memo.setdefault(category, {}),
                            lambda f, _cut: self._own(known, ask, f, 0, category)) or (f"{category}/{OTHER}", frame)

    def _own(self, known: dict, ask, frame: str, cut: int, *args):
        """walk_callers' answer at a frame for one question: (group, frame) if it answers, (the rest, None) at root."""
        group = cached(known, ask, frame, *args)
        return (group, frame) if group is not None else (self.rest, None) if cut < 0 else None

    def _level1_own(self, frame: str, cut: int) -> tuple[str, str | None] | None:
        """walk_callers' answer at a frame of the callers at level 1: the frame decides, or none does up to the root."""
        decided = cached(self.answers.category, self.answers.category_of, frame)
        if decided is not None:
            return decided, frame if decided != OTHER else None
        return (OTHER, None) if cut < 0 else None


class Sums:
    """The Breakdown of chunks of rows (Grouping.rows): each group's weight, with keep_frames each counted frame's."""

    def __init__(self, rules: Rules, keep_frames: bool) -> None:
        self.rules, self.keep_frames, self.grouping = rules, keep_frames, Grouping(rules)
        self.weights = [0] * len(rules.all_categories)
        self.frames: list[dict[str, int]] = [{} for _ in rules.all_categories]     # per group: frame -> weight
        self.stacks = self.unit = 0

    def add(self, chunk) -> None:
        groups, frames = self.grouping.rows(chunk, self.keep_frames)
        weights, counts = self.weights, chunk.counts
        for g, w in zip(groups, counts):
            weights[g] += w
        self.stacks += len(counts)
        self.unit = gcd(self.unit, *set(counts))
        if frames:
            by_group = self.frames
            for g, frame, w in zip(groups, frames, counts):
                known = by_group[g]
                known[frame] = known.get(frame, 0) + w

    def breakdown(self, path=None, unit: int | None = None) -> Breakdown:
        """The Breakdown of the rows so far, UserError naming path (the file read) when they hold no samples; unit:
        one sample's weight, else the gcd of their weights."""
        names = self.rules.all_categories
        total = sum(self.weights)
        if path is not None and not total:
            raise no_samples(path)
        return Breakdown(dict(zip(names, self.weights)), total, total // (unit or self.unit or 1),
                         {names[g]: frames for g, frames in enumerate(self.frames) if frames}, self.stacks)


def categorize(stacks: list[tuple[list[str], int]], rules: Rules, sample_weight: int | None = None) -> Breakdown:
    """The Breakdown of stacks held in memory ((frames root first, weight)), counted as a file's rows are; sample_weight:
    one sample's weight (perf's period when inferno weighted by period), else the gcd of the weights."""
    sums = Sums(rules, keep_frames=True)
    sums.add(in_memory(stacks))
    return sums.breakdown(unit=sample_weight)


_ANSWERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()     # Rules -> its FrameAnswers, for group_of


def group_of(frames: list[str], rules: Rules) -> str:
    """The group of one stack (frames root first) in the rules' grouping, by stack_group's walk."""
    answers = _ANSWERS.get(rules) or _ANSWERS.setdefault(rules, FrameAnswers(rules))
    return stack_group(";".join(frames), answers)[0]
