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
"""
from __future__ import annotations

import functools
import re
from re import _constants as sre_c      # the parser re itself uses; any surprise counts as "not bounded"
from re import _parser as sre_parse

from rpcprof.errors import UserError

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
        if op in REPEATS:
            _low, high, body = av
            if high > 1 and any(o in _NESTED for o, _ in body):
                return None
            inner = _unbounded_repeats(body)
            if inner is None:
                return None
            total += inner + (high > LONG_REPEAT)
        elif op in (sre_c.SUBPATTERN, sre_c.ATOMIC_GROUP, sre_c.ASSERT, sre_c.ASSERT_NOT):
            inner = _unbounded_repeats(av[-1])
            if inner is None:
                return None
            total += inner
        elif op is sre_c.BRANCH:
            counts = [_unbounded_repeats(b) for b in av[1]]
            if None in counts:
                return None
            total += max(counts, default=0)
        elif op in (sre_c.GROUPREF, sre_c.GROUPREF_EXISTS):
            return None
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
        self._guarded = None
        try:
            compiled = re.compile(source)          # the syntax rules have always had, checked at load
        except (re.error, ValueError, OverflowError, RecursionError) as e:
            raise UserError(f"{origin}: invalid regex {source!r}: {e}") from None
        self._fast = compiled if bounded_backtracking(source) else None

    def _compile_guarded(self):
        """The regex module's compilation, made when first needed (its import costs 15 ms)."""
        if self._guarded is None:
            import regex
            try:
                self._guarded = regex.compile(self.pattern)
            except (regex.error, ValueError, OverflowError, RecursionError) as e:
                raise UserError(f"{self.origin}: invalid regex {self.pattern!r}: {e}") from None
        return self._guarded

    def search(self, text: str):
        if self._fast is not None and len(text) <= FAST_MAX_CHARS:
            return self._fast.search(text)
        try:
            return self._compile_guarded().search(text, timeout=BUDGET_S)
        except TimeoutError:
            raise UserError(f"{self.origin}: regex {self.pattern!r} took over {BUDGET_S:g} s on one frame "
                            f"({len(text):,} characters, {text[:40]!r}...): it backtracks catastrophically; "
                            "rewrite it without nested repeats such as (a+)+") from None

    def __repr__(self) -> str:
        return f"UserRegex({self.pattern!r})"
