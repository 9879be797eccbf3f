"""The rule set of categorize.yaml as the analysis uses it: rules, the groupings they define (level-1
categories, level-2 sub-categories, the tax and waits views: rpcprof.analyze.categorize says how a stack is
grouped), and a profile's Breakdown. The file is read and validated in rpcprof.analyze.rules_file.
"""
from __future__ import annotations

import colorsys
import heapq
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from rpcprof.analyze.patterns import RuleSet, UserRegex
from rpcprof.errors import UserError

LEVELS = (1, 2)
VIEWS = ("category", "tax", "waits")
OTHER = "other"
_IDENT = re.compile(r"[A-Za-z0-9_]")

_ANGLE = re.compile(r"[<>]")


def strip_generics(name: str) -> str:
    """Remove generic argument lists (`Vec<u8>`, `::<T>`) but keep qualified paths `<X as Trait>` and
    `<impl Trait for X>`, whose contents are stripped in turn. A `<` is a list's when it follows an identifier
    character, or `::` without `impl ` after it; the list ends at its matching `>` (one of `->` is no bracket).
    The text between brackets is copied a piece at a time (tests/unit/test_categorize.py checks it against
    the character-by-character reading of this rule)."""
    if "<" not in name:
        return name
    out, i, n = "", 0, len(name)
    while (k := name.find("<", i)) >= 0:
        out += name[i:k]
        after_colons = name.endswith("::", 0, k)
        if not ((k and _IDENT.match(name, k - 1)) or (after_colons and not name.startswith("impl ", k + 1))):
            out += "<"
            i = k + 1
            continue
        depth, end = 0, n
        for m in _ANGLE.finditer(name, k):
            j = m.start()
            if name[j] == "<":
                depth += 1
            elif name[j - 1] != "-":
                depth -= 1
                if depth == 0:
                    end = j
                    break
        i = end + 1
        if after_colons and out.endswith("::"):
            out = out[:-2]          # `collect::<T>` -> `collect`
    return out + name[i:]


@lru_cache(maxsize=1 << 16)
def normalize_frame(raw: str) -> tuple[str, bool]:
    """(frame name ready for matching, is_kernel). inferno marks kernel frames `_[k]`, JIT `_[j]`. Kept for
    the last frames asked: each question (category, sub-category, tax group) asks a frame's in turn."""
    kernel = raw.endswith("_[k]")
    if kernel or raw.endswith("_[j]"):
        raw = raw[:-4]
    return strip_generics(raw), kernel


@dataclass
class Rule:
    category: str
    name: str
    pattern: UserRegex
    where: str = "any"
    examples: list[str] = field(default_factory=list)
    sub: str | None = None          # the level-2 group it decides (CATEGORY/SUB), if any
    level: int = 1                  # 2: decides only the sub-category, inside stacks of its category

    def matches(self, name: str, kernel: bool) -> bool:
        if self.where == "kernel" and not kernel or self.where == "user" and kernel:
            return False
        return self.pattern.search(name) is not None


@dataclass
class TaxGroup:
    name: str
    color: str
    description: str


class View(NamedTuple):
    """A leaf view's groups (tax: kinds of work; waits: reasons), its rules, and the name of what no rule takes."""
    groups: list[TaxGroup]
    rules: list[Rule]
    rest: str


NO_TAX = View([], [], "everything-else")
NO_WAITS = View([], [], "other-wait")


CACHE_LIMIT = 1 << 17       # answers remembered per question; a fleet's millions of distinct frames would
                            # otherwise hold hundreds of MB: past it, the answers start afresh


_UNASKED = object()


def remember(cache: dict, key, answer):
    """cache[key] = answer, the cache emptied first when it holds CACHE_LIMIT answers; returns answer."""
    if len(cache) >= CACHE_LIMIT:
        cache.clear()
    cache[key] = answer
    return answer


@dataclass(eq=False, repr=False)
class Rules:
    """The validated rule set, in the grouping chosen with `using` (level 1 categories by default; level-2
    sub-categories; the tax or waits view): the groups of that grouping (their names, parents, colours and
    descriptions) and what it says of one frame. A stack's group is stack_walk's walk."""
    categories: list[str]
    category_colors: dict[str, str]
    category_descriptions: dict[str, str]
    rules: list[Rule]
    source: str
    subcategories: dict[str, list[str]] = field(default_factory=dict)
    tax: View = NO_TAX                  # the tax view
    level: int = 1
    view: str = "category"
    waits: View = NO_WAITS              # the waits view
    groups: object = None               # how the reports group and order the categories (rules_file.Groups)
    _sets: dict[str, RuleSet] = field(default_factory=dict, init=False)     # question -> its rules in one automaton
    _copies: dict[tuple, Rules] = field(default_factory=dict, init=False)   # using's and with_app's copies

    def groups_of(self, category: str) -> list[str]:
        """Level-2 groups of a category, in file order, `CATEGORY/other` last; [category] if unsplit."""
        subs = self.subcategories.get(category)
        return [f"{category}/{s}" for s in subs] + [f"{category}/{OTHER}"] if subs else [category]

    def _leaf_view(self) -> View | None:
        """The tax or waits view chosen; None in the category view."""
        return {"tax": self.tax, "waits": self.waits}.get(self.view)

    @property
    def all_categories(self) -> list[str]:
        """The groups of the chosen grouping, in report order (`other` / the tax or waits rest last)."""
        if view := self._leaf_view():
            return [g.name for g in view.groups if g.name != view.rest] + [view.rest]
        if self.level == 2:
            return [g for c in self.categories for g in self.groups_of(c)] + [OTHER]
        return self.categories + [OTHER]

    def parent(self, group: str) -> str:
        """The level-1 category of a level-2 group (itself for level-1 names and tax groups)."""
        return group.split("/", 1)[0]

    @property
    def colors(self) -> dict[str, str]:
        """Colour of every group of the chosen grouping: level-2 groups are shades of their category."""
        if view := self._leaf_view():
            return {view.rest: self.category_colors[OTHER]} | {g.name: g.color for g in view.groups}
        colors = dict(self.category_colors)
        if self.level == 2:
            for c in self.categories:
                groups = self.groups_of(c)
                if len(groups) > 1:
                    colors.update({g: shade(colors[c], i, len(groups)) for i, g in enumerate(groups)})
        return colors

    @property
    def descriptions(self) -> dict[str, str]:
        if view := self._leaf_view():
            return {g.name: g.description for g in view.groups}
        return self.category_descriptions

    def _copy(self, **changes) -> "Rules":
        copy = replace(self, **changes)
        if copy.rules is self.rules:
            copy._sets = self._sets          # the same rules: the automata compiled so far serve both
        return copy

    def using(self, level: int = 1, view: str = "category") -> "Rules":
        """A copy that groups samples at level 1 or 2 of the categories, or in the tax view."""
        if level not in LEVELS:
            raise UserError(f"--level {level}: choose 1 (categories) or 2 (sub-categories)")
        if view not in VIEWS:
            raise UserError(f"--view {view!r}: choose one of {', '.join(VIEWS)}")
        if view != "category" and not getattr(self, view).groups:
            raise UserError(f"{Path(self.source).name} has no `{view}:` section: the {view} view needs one")
        if (level, view) not in self._copies:
            self._copies[level, view] = self._copy(level=level, view=view)
        return self._copies[level, view]

    def with_app(self, regex: str | None, origin: str = "--app") -> "Rules":
        """A copy with the server's app pattern added to the `app` category; the same copy for the same
        pattern and origin (its rules compiled once, and report.html's reports share its answers)."""
        if not regex:
            return self
        if (regex, origin) not in self._copies:
            pattern = UserRegex(regex, origin)
            rules = list(self.rules)
            idx = next((i for i, r in enumerate(rules)
                        if self.categories.index(r.category) > self.categories.index("app")), len(rules))
            rules.insert(idx, Rule("app", f"app ({origin})", pattern, "user"))
            self._copies[regex, origin] = self._copy(rules=rules)
        return self._copies[regex, origin]

    # --- classification ----------------------------------------------------------------------------

    def first_rule(self, raw: str, question: str) -> Rule | None:
        """The rule that decides a frame, kept for every grouping of these rules: question "category" (level 1),
        "sub:CATEGORY" (a rule of CATEGORY with a `sub`; "sub:*", of any category), "tax" or "waits"; None when
        no rule of the question matches."""
        rule_set = self._sets.get(question)
        if rule_set is None:
            if question.startswith("sub:"):
                rules = [r for r in self.rules if r.sub and question[4:] in (r.category, "*")]
            else:
                rules = {"category": [r for r in self.rules if r.level == 1], "tax": self.tax.rules,
                         "waits": self.waits.rules}[question]
            rule_set = self._sets[question] = RuleSet(rules)
        rule = rule_set.known.get(raw, _UNASKED)
        return remember(rule_set.known, raw, rule_set.first(*normalize_frame(raw))) if rule is _UNASKED else rule

    def classify_frame(self, raw: str) -> tuple[str, Rule] | None:
        """(category, rule) of the first level-1 rule matching this frame, or None."""
        rule = self.first_rule(raw, "category")
        return (rule.category, rule) if rule else None

    def rule_for(self, frame: str, group: str) -> Rule | None:
        """The rule that made frame decide group in this grouping (for `top`), or None."""
        if self._leaf_view():
            return self.first_rule(frame, self.view)
        if self.level == 2 and "/" in group:
            return self.first_rule(frame, f"sub:{self.parent(group)}")
        return self.first_rule(frame, "category")


@dataclass
class Breakdown:
    """A profile's weights per group of the rules' grouping, and per deciding frame (for `top`)."""
    weights: dict[str, int]
    total: int
    samples: int
    by_frame: dict[str, dict[str, int]]     # category -> deciding frame -> weight
    stacks: int

    def share(self, category: str) -> float:
        return self.weights.get(category, 0) / self.total if self.total else math.nan

    def top_frames(self, category: str, limit: int) -> list[tuple[str, int]]:
        """The limit (frame, weight) of category with the most weight, ties by name (a fleet's profile can
        hold a million: none is sorted beyond them)."""
        frames = self.by_frame.get(category, {})
        if limit <= 0 or not frames:
            return []
        # heapq.nsmallest(limit, items, key=(-weight, name)) without a key call per frame: the limit-th largest
        # weight, the frames above it by that order, then the ties at it by name
        least = heapq.nlargest(limit, frames.values())[-1]
        above = sorted([(f, w) for f, w in frames.items() if w > least], key=lambda kv: (-kv[1], kv[0]))
        ties = heapq.nsmallest(limit - len(above), [f for f, w in frames.items() if w == least])
        return above + [(f, least) for f in ties]


def shade(color: str, i: int, n: int) -> str:
    """The i-th of n shades of color, from darker to lighter, the base colour in the middle."""
    r, g, b = (int(color[k:k + 2], 16) / 255 for k in (1, 3, 5))
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    t = i / (n - 1) if n > 1 else 0.5
    light = min(0.9, max(0.15, light + (t - 0.5) * 0.45))
    return "#" + "".join(f"{round(255 * v):02x}" for v in colorsys.hls_to_rgb(h, light, s))
