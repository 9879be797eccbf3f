"""User regexes (categorize.yaml's `match`, --app, --ruler) that cannot hang a report.

A regex such as `(a+)+$` backtracks exponentially on a long frame of a's, and Python's `re` cannot be
interrupted. Each pattern is therefore checked once, when compiled:

- a pattern whose backtracking is bounded (no repeat holding another repeat, an alternation or a
  backreference; at most one long repeat, `*`, `+` or over LONG_REPEAT, on any path through it: at
  worst quadratic in the frame's length) runs on `re`, as fast as before, on frames up to
  FAST_MAX_CHARS long;
- anything else, and longer frames, run on the `regex` module with a time budget per search
  (BUDGET_S); a search over budget is a UserError naming the rule and the frame.

Both engines give the same answers for the patterns rules use (`regex` is compatible with `re`).

RuleSet: the first rule of a list that matches a frame, every rule asked at once. RE2's Set (google-re2)
compiles the list into one automaton, which reads the frame once and names every rule that may match it.

Why: a profile merged across a fleet holds millions of distinct frames, and asking each frame rule by rule
costs one regex search per rule (80 in categorize.yaml) for every frame that matches none; the set costs one
pass, in time linear in the frame's length whatever the patterns (bench/distinct_stacks measures both).

The answer stays the per-rule loop's, byte for byte:
- RE2 and Python's `re` read some patterns differently (lookarounds, backreferences, Unicode classes, `\\Z`,
  `{,n}`). So the set is not given the rules' text: each pattern is rewritten from the parse tree Python's
  own `re` makes of it, into RE2 syntax that matches at least what Python matches, on printable ASCII text:
  a lookaround becomes empty, a possessive repeat or an atomic group a plain one, a repeat over RE2's bound
  of 1000 an open one. A pattern holding anything else (a backreference, a non-ASCII character under `(?i)`)
  stays out of the set and is asked in its turn, as before.
- The set only says which rules may match. Walking those in the list's order, the first one that its own
  UserRegex confirms decides (`re`, or `regex` under a time budget, as above: a hostile pattern still cannot
  hang a report).
- A frame that is not printable ASCII (where RE2's ASCII `\\w`, `\\s`, `\\b` differ from Python's Unicode
  ones) meets the rules one at a time, as before.
- The set also holds the empty pattern, which matches every frame: an answer without it means RE2 gave up
  (its automaton ran out of memory), and the frame meets the rules one at a time.

LeafFilter says at once, of many leaf frames, that no rule of any question matches any of them: one RE2 Set
(the rewriting above, each pattern in multi-line mode) over the leaves joined by newlines. A rule's match on a
leaf alone is a match on that leaf's line, so a Set that names no rule proves every leaf answers no question;
when it names one, the caller asks each leaf as before.
"""
from __future__ import annotations

import functools
import re
from re import _constants as sre_c      # the parser re itself uses; any surprise counts as "not bounded"
from re import _parser as sre_parse
from typing import TYPE_CHECKING

from rpcprof.errors import UserError

if TYPE_CHECKING:
    from rpcprof.analyze.rules import Rule

BUDGET_S = 1.0
FAST_MAX_CHARS = 4096
LONG_REPEAT = 16
REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT))
_NESTED = (sre_c.SUBPATTERN, sre_c.ATOMIC_GROUP, sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.BRANCH) + REPEATS


def _unbounded_repeats(items) -> int | None:
    """The most long repeats on one path through parsed pattern items; None when a repeat holds
    another repeat or an alternation, or the pattern uses backreferences (backtracking unbounded)."""
    total = 0
    for op, av in items:
        if (op in (sre_c.GROUPREF, sre_c.GROUPREF_EXISTS)
                or op in REPEATS and av[1] > 1 and any(o in _NESTED for o, _ in av[2])):
            return None
        if op in _NESTED:          # a repeat (low, high, body), a group or a lookaround (..., body), a branch
            counts = [_unbounded_repeats(b) for b in av[1]] if op is sre_c.BRANCH else [_unbounded_repeats(av[-1])]
            if None in counts:
                return None
            total += max(counts, default=0) + (op in REPEATS and av[1] > LONG_REPEAT)
    return total


@functools.lru_cache(maxsize=4096)
def bounded_backtracking(source: str) -> bool:
    """True when `re` cannot backtrack catastrophically on this pattern (see the module's docstring)."""
    try:
        repeats = _unbounded_repeats(sre_parse.parse(source))
    except Exception:                      # noqa: BLE001 - an unknown construct: take the guarded engine
        return False
    return repeats is not None and repeats <= 1


class UserRegex:
    """A user's regex with search() under a time budget; `pattern` is its source, `origin` names it in
    errors (e.g. "categorize.yaml: rule 'tokio' in runtime")."""

    def __init__(self, source: str, origin: str):
        self.pattern = source
        self.origin = origin
        if not isinstance(source, str):
            raise UserError(f"{origin}: a regex must be a string, got {type(source).__name__} {source!r}")
        try:
            compiled = re.compile(source)          # the syntax rules have always had, checked at load
        except (re.error, ValueError, OverflowError, RecursionError) as e:
            raise UserError(f"{origin}: invalid regex {source!r}: {e}") from None
        self._fast = compiled if bounded_backtracking(source) else None

    @functools.cached_property
    def _guarded(self):
        """The regex module's compilation, made when first needed (its import costs 15 ms)."""
        import regex
        try:
            return regex.compile(self.pattern)
        except (regex.error, ValueError, OverflowError, RecursionError) as e:
            raise UserError(f"{self.origin}: invalid regex {self.pattern!r}: {e}") from None

    def search(self, text: str):
        if self._fast is not None and len(text) <= FAST_MAX_CHARS:
            return self._fast.search(text)
        try:
            return self._guarded.search(text, timeout=BUDGET_S)
        except TimeoutError:
            raise UserError(f"{self.origin}: regex {self.pattern!r} took over {BUDGET_S:g} s on one frame "
                            f"({len(text):,} characters, {text[:40]!r}...): it backtracks catastrophically; "
                            "rewrite it without nested repeats such as (a+)+") from None

    def __repr__(self) -> str:
        return f"UserRegex({self.pattern!r})"


# --- the rules of one question asked at once ----------------------------------------------------------

RE2_MAX_REPEAT = 1000           # RE2's bound on {n,m}
RE2_MAX_MEM = 64 << 20          # the automaton's memory budget (RE2's default is 8 MiB)
_CATEGORIES = {sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D", sre_c.CATEGORY_SPACE: r"\s",
               sre_c.CATEGORY_NOT_SPACE: r"\S", sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W"}
_AT = {sre_c.AT_BEGINNING: "^", sre_c.AT_BEGINNING_STRING: "^", sre_c.AT_BEGINNING_LINE: "^",
       sre_c.AT_END: "$", sre_c.AT_END_STRING: "$", sre_c.AT_END_LINE: "$",
       sre_c.AT_BOUNDARY: r"\b", sre_c.AT_NON_BOUNDARY: r"\B"}    # the same on text with no newline
_CASE = sre_c.SRE_FLAG_IGNORECASE


class _NotInSet(Exception):
    """The pattern holds something this rewriting does not carry into RE2."""


def _char(code: int, ignorecase: bool) -> str:
    if code < 128:
        return chr(code) if chr(code).isalnum() else f"\\x{code:02x}"
    if ignorecase:                 # Python folds some non-ASCII letters onto ASCII ones (K, ſ): keep it Python's
        raise _NotInSet
    return f"\\x{{{code:x}}}"


def _class(items, ignorecase: bool) -> str:
    out = []
    for op, av in items:
        if op is sre_c.NEGATE:
            out.insert(0, "^")
        elif op is sre_c.LITERAL:
            out.append(_char(av, ignorecase))
        elif op is sre_c.RANGE:
            out.append(f"{_char(av[0], ignorecase)}-{_char(av[1], ignorecase)}")
        elif op is sre_c.CATEGORY and av in _CATEGORIES:
            out.append(_CATEGORIES[av])
        else:
            raise _NotInSet
    return "[" + "".join(out) + "]"


def _rewrite(items, ignorecase: bool) -> str:
    """RE2 syntax matching at least what these parsed items match, on printable ASCII text."""
    out = []
    for op, av in items:
        if op is sre_c.LITERAL:
            out.append(_char(av, ignorecase))
        elif op is sre_c.NOT_LITERAL:
            out.append(f"[^{_char(av, ignorecase)}]")
        elif op is sre_c.ANY:
            out.append("(?s:.)")
        elif op is sre_c.IN:
            out.append(_class(av, ignorecase))
        elif op is sre_c.AT and av in _AT:
            out.append(_AT[av])
        elif op is sre_c.BRANCH:
            out.append("(?:" + "|".join(_rewrite(b, ignorecase) for b in av[1]) + ")")
        elif op is sre_c.SUBPATTERN:
            _group, add, drop, body = av
            case = (ignorecase or bool(add & _CASE)) and not drop & _CASE
            flag = "(?i:" if case and not ignorecase else "(?-i:" if ignorecase and not case else "(?:"
            out.append(flag + _rewrite(body, case) + ")")
        elif op is sre_c.ATOMIC_GROUP:
            out.append("(?:" + _rewrite(av, ignorecase) + ")")
        elif op in REPEATS:
            low, high, body = av
            if low > RE2_MAX_REPEAT:
                raise _NotInSet
            bound = "," if high == sre_c.MAXREPEAT or high > RE2_MAX_REPEAT else f",{high}"
            out.append(f"(?:{_rewrite(body, ignorecase)}){{{low}{bound}}}")
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            continue                       # a lookaround left out: the pattern matches more, never less
        else:                              # backreferences, conditionals, anything new
            raise _NotInSet
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def re2_superset(source: str) -> str | None:
    """RE2 syntax for a Python pattern, matching at least what it matches on printable ASCII text; None
    when the pattern holds what the rewriting does not carry (see the module's docstring)."""
    try:
        parsed = sre_parse.parse(source)
        flags = parsed.state.flags
        if flags & (sre_c.SRE_FLAG_LOCALE | getattr(sre_c, "SRE_FLAG_TEMPLATE", 0)):
            return None
        case = bool(flags & _CASE)
        return ("(?i:" if case else "(?:") + _rewrite(parsed, case) + ")"
    except (_NotInSet, Exception):         # noqa: BLE001 - an unknown construct stays out of the set
        return None


def compile_set(patterns: list[str | None]):
    """(the RE2 Set's own Match, given bytes, set index -> list position, list positions not in the set, the
    sentinel's index); Match is None when google-re2 is missing or the set does not compile."""
    try:
        import re2
    except ImportError:
        return None, [], list(range(len(patterns))), -1
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    rule_set = re2.Set.SearchSet(options)
    members, outside = [], []
    for pos, pattern in enumerate(patterns):
        try:
            if pattern is None:
                raise re2.error("not rewritten")
            rule_set.Add(pattern)
            members.append(pos)
        except re2.error:
            outside.append(pos)
    sentinel = rule_set.Add("")
    try:
        rule_set.Compile()
    except re2.error:
        return None, [], list(range(len(patterns))), -1
    # the binding's own Match, given bytes: its Python wrapper's checks and encoder cost a third as much again
    return getattr(rule_set, "_set", rule_set).Match, members, outside, sentinel


class RuleSet:
    """The rules of one question (a frame's category, its sub-category in a category, its tax or waits
    group), in priority order; `first` is the rule that decides a frame, or None."""

    def __init__(self, rules: list[Rule]):
        self.rules = rules
        self.known: dict = {}        # raw frame -> its first rule (Rules.first_rule): every grouping's and side's
        self._match, self._members, self._outside, self._sentinel = compile_set(
            [re2_superset(r.pattern.pattern) for r in rules])

    def first(self, name: str, kernel: bool) -> Rule | None:
        """The first rule that matches name (a normalised frame), as the per-rule loop finds it."""
        rules = self.rules
        if self._match is not None and name.isascii() and name.isprintable():
            hits = self._match(name.encode())
            if self._sentinel in hits:
                if len(hits) == 1 and not self._outside:
                    return None
                members = self._members
                order = sorted([members[i] for i in hits if i != self._sentinel] + self._outside)
                return next((rules[p] for p in order if rules[p].matches(name, kernel)), None)
        return next((r for r in rules if r.matches(name, kernel)), None)


class LeafFilter:
    """Whether no rule of any question matches any of many leaf frames, in one RE2 call."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        # each pattern in multi-line mode; a rule RE2 cannot stand in for leaves no filter: every leaf is asked
        rewritten = [re2_superset(p) for p in patterns]
        match, _, outside, self._sentinel = compile_set([None if p is None else "(?m)" + p for p in rewritten])
        self._match = None if outside else match
        self._last = ("", False)        # the last leaves asked and their answer: the groupings of one chunk ask alike

    def none_match(self, leaves: str) -> bool:
        """True when no rule matches any of the leaves (joined by newlines) as categorize.yaml reads them;
        False when one may, or the leaves hold what the filter cannot judge."""
        # printable ASCII (where RE2 and Python read patterns alike), and nothing normalize_frame changes
        # (generic arguments, a `_[k]` or `_[j]` suffix)
        if leaves == self._last[0]:
            return self._last[1]
        none = not (self._match is None or not leaves.isascii() or "<" in leaves or "_[" in leaves
                    or not leaves.replace("\n", " ").isprintable()) and self._match(leaves.encode()) == [self._sentinel]
        self._last = leaves, none
        return none


# the LeafFilter of these patterns (the rules' sources), made once per process for the same patterns (its RE2 set costs
# a parse of every pattern)
leaf_filter = functools.cache(LeafFilter)
