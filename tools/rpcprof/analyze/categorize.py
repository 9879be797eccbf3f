"""Bucket sampled stacks into recv / send / runtime / protocol / app (+ other) with categorize.yaml.

Semantics (also in categorize.yaml's header): walk each stack from the leaf toward the root; the first
frame that matches a rule decides; no match at all is `other`. Within one frame, the category listed
first in the file wins.

Three more groupings come from the same file, chosen with Rules.using(level=2) or Rules.using(view=...):
- level 2 splits each category into its sub-categories (protocol/http2, send/syscall...): the stack's
  category is decided as above, then, walking again from the leaf, the first frame that matches a rule
  of that category carrying a `sub:` decides the sub-category (`CATEGORY/other` when none does). Level-1
  shares are therefore the sums of their level-2 shares, by construction.
- the tax view groups samples by the kind of work at the leaf (allocation, data movement, hashing,
  locks and atomics, syscall entry/exit, everything else): walking from the leaf, no further than the
  frame that decided the category, the first frame that matches a `tax:` rule decides.
- the waits view (view="waits", for off-CPU stacks: where a thread went to sleep, weighted by how long
  it slept) groups them by wait reason (socket data, sending, locks, idle poll, timers, runnable...):
  walking from the leaf over the whole stack, the first frame that matches a `waits:` rule decides.
"""
from __future__ import annotations

import colorsys
import gzip
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from rpcprof import schema
from rpcprof.analyze.patterns import UserRegex
from rpcprof.errors import UserError
from rpcprof.paths import RULES_PATH

CATEGORY_KEYS = {"name", "color", "description", "rules", "subcategories"}
RULE_KEYS = {"name", "match", "where", "examples", "sub", "level"}
TAX_RULE_KEYS = {"name", "match", "where", "examples"}
LEVELS = (1, 2)
VIEWS = ("category", "tax", "waits")
WHERE = ("any", "kernel", "user")
OTHER = "other"
_IDENT = re.compile(r"[A-Za-z0-9_]")


def strip_generics(name: str) -> str:
    """Remove generic argument lists (`Vec<u8>`, `::<T>`) but keep qualified paths `<X as Trait>` and
    `<impl Trait for X>`, whose contents are stripped in turn."""
    out = []
    i, n = 0, len(name)
    while i < n:
        ch = name[i]
        if ch == "<":
            prev = name[i - 1] if i else ""
            after_colons = name.endswith("::", 0, i)
            generic = bool(_IDENT.match(prev)) or (after_colons and not name.startswith("impl ", i + 1))
            if generic:
                depth, j = 0, i
                while j < n:
                    c = name[j]
                    if c == "<":
                        depth += 1
                    elif c == ">" and name[j - 1] != "-":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                i = j + 1
                if after_colons and out[-2:] == [":", ":"]:
                    del out[-2:]          # `collect::<T>` -> `collect`
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def normalize_frame(raw: str) -> tuple[str, bool]:
    """(frame name ready for matching, is_kernel). inferno marks kernel frames `_[k]`, JIT `_[j]`."""
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


class Rules:
    """The validated rule set; `classify_stack` is the whole categorisation, in the grouping chosen with
    `using` (level 1 categories by default; level-2 sub-categories; the tax view)."""

    def __init__(self, categories: list[str], colors: dict[str, str], descriptions: dict[str, str],
                 rules: list[Rule], source: str, subcategories: dict[str, list[str]] | None = None,
                 tax_groups: list[TaxGroup] | None = None, tax_rules: list[Rule] | None = None,
                 tax_rest: str = "everything-else", level: int = 1, view: str = "category",
                 waits: tuple[list[TaxGroup], list[Rule], str] = ([], [], "other-wait")):
        self.categories = categories
        self.rules = rules
        self.source = source
        self.subcategories = subcategories or {}
        self.tax_groups = tax_groups or []
        self.tax_rules = tax_rules or []
        self.tax_rest = tax_rest
        self.waits = waits              # (groups, rules, rest) of the waits view
        self.level = level
        self.view = view
        self.category_colors = colors
        self.category_descriptions = descriptions
        self._cache: dict[str, tuple[str, Rule] | None] = {}
        self._sub_cache: dict[tuple[str, str], Rule | None] = {}
        self._tax_cache: dict[tuple[str, str], Rule | None] = {}

    def _copy(self, **changes) -> "Rules":
        args = dict(categories=self.categories, colors=self.category_colors,
                    descriptions=self.category_descriptions, rules=self.rules, source=self.source,
                    subcategories=self.subcategories, tax_groups=self.tax_groups, tax_rules=self.tax_rules,
                    tax_rest=self.tax_rest, level=self.level, view=self.view, waits=self.waits)
        args.update(changes)
        return Rules(**args)

    def using(self, level: int = 1, view: str = "category") -> "Rules":
        """A copy that groups samples at level 1 or 2 of the categories, or in the tax view."""
        if level not in LEVELS:
            raise UserError(f"--level {level}: choose 1 (categories) or 2 (sub-categories)")
        if view not in VIEWS:
            raise UserError(f"--view {view!r}: choose one of {', '.join(VIEWS)}")
        if view == "tax" and not self.tax_groups or view == "waits" and not self.waits[0]:
            raise UserError(f"{Path(self.source).name} has no `{view}:` section: the {view} view needs one")
        return self._copy(level=level, view=view)

    def with_app(self, regex: str | None, origin: str = "--app") -> "Rules":
        """A copy with the server's app pattern added to the `app` category."""
        if not regex:
            return self
        pattern = UserRegex(regex, origin)
        rules = list(self.rules)
        idx = next((i for i, r in enumerate(rules) if self.categories.index(r.category) > self.categories.index("app")),
                   len(rules))
        rules.insert(idx, Rule("app", f"app ({origin})", pattern, "user"))
        return self._copy(rules=rules)

    # --- the groups of the chosen grouping -------------------------------------------------------

    def groups_of(self, category: str) -> list[str]:
        """Level-2 groups of a category, in file order, `CATEGORY/other` last; [category] if unsplit."""
        subs = self.subcategories.get(category)
        return [f"{category}/{s}" for s in subs] + [f"{category}/{OTHER}"] if subs else [category]

    def _leaf_view(self) -> tuple[list[TaxGroup], list[Rule], str] | None:
        """(groups, rules, rest) of the tax or waits view; None in the category view."""
        if self.view == "tax":
            return self.tax_groups, self.tax_rules, self.tax_rest
        return self.waits if self.view == "waits" else None

    @property
    def all_categories(self) -> list[str]:
        """The groups of the chosen grouping, in report order (`other` / the tax or waits rest last)."""
        if view := self._leaf_view():
            groups, _, rest = view
            return [g.name for g in groups if g.name != rest] + [rest]
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
            groups, _, rest = view
            return {rest: self.category_colors[OTHER]} | {g.name: g.color for g in groups}
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
            return {g.name: g.description for g in view[0]}
        return self.category_descriptions

    # --- classification ----------------------------------------------------------------------------

    def classify_frame(self, raw: str) -> tuple[str, Rule] | None:
        """(category, rule) of the first level-1 rule matching this frame, or None."""
        hit = self._cache.get(raw, False)
        if hit is not False:
            return hit
        name, kernel = normalize_frame(raw)
        hit = next(((r.category, r) for r in self.rules if r.level == 1 and r.matches(name, kernel)), None)
        self._cache[raw] = hit
        return hit

    def sub_rule(self, raw: str, category: str) -> Rule | None:
        """The first rule of category with a `sub` matching this frame (level 2), or None."""
        key = (raw, category)
        if key not in self._sub_cache:
            name, kernel = normalize_frame(raw)
            self._sub_cache[key] = next((r for r in self.rules
                                         if r.category == category and r.sub and r.matches(name, kernel)), None)
        return self._sub_cache[key]

    def tax_rule(self, raw: str, view: str = "tax") -> Rule | None:
        """The first rule of the tax (or waits) view matching this frame, or None."""
        key = (raw, view)
        if key not in self._tax_cache:
            name, kernel = normalize_frame(raw)
            rules = self.waits[1] if view == "waits" else self.tax_rules
            self._tax_cache[key] = next((r for r in rules if r.matches(name, kernel)), None)
        return self._tax_cache[key]

    def rule_for(self, frame: str, group: str) -> Rule | None:
        """The rule that made frame decide group in this grouping (for `top`), or None."""
        if self._leaf_view():
            return self.tax_rule(frame, self.view)
        if self.level == 2 and "/" in group:
            return self.sub_rule(frame, self.parent(group))
        hit = self.classify_frame(frame)
        return hit[1] if hit else None

    def classify_category(self, frames: list[str]) -> tuple[str, int]:
        """(level-1 category, index of the deciding frame or -1). frames go root first, leaf last."""
        for i in range(len(frames) - 1, -1, -1):
            hit = self.classify_frame(frames[i])
            if hit:
                return hit[0], i
        return OTHER, -1

    def classify_stack(self, frames: list[str]) -> tuple[str, int]:
        """(group in the chosen grouping, index of the deciding frame or -1)."""
        if self.view == "waits":
            for i in range(len(frames) - 1, -1, -1):
                rule = self.tax_rule(frames[i], "waits")
                if rule:
                    return rule.category, i
            return self.waits[2], -1
        category, idx = self.classify_category(frames)
        if self.view == "tax":
            stop = max(idx, 0)
            for i in range(len(frames) - 1, stop - 1, -1):
                rule = self.tax_rule(frames[i])
                if rule:
                    return rule.category, i
            return self.tax_rest, idx
        if self.level == 1 or category == OTHER or category not in self.subcategories:
            return category, idx
        for i in range(len(frames) - 1, -1, -1):
            rule = self.sub_rule(frames[i], category)
            if rule:
                return f"{category}/{rule.sub}", i
        return f"{category}/{OTHER}", idx


def shade(color: str, i: int, n: int) -> str:
    """The i-th of n shades of color, from darker to lighter, the base colour in the middle."""
    r, g, b = (int(color[k:k + 2], 16) / 255 for k in (1, 3, 5))
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    t = i / (n - 1) if n > 1 else 0.5
    light = min(0.9, max(0.15, light + (t - 0.5) * 0.45))
    return "#" + "".join(f"{round(255 * v):02x}" for v in colorsys.hls_to_rgb(h, light, s))


def _fail(path, msg):
    raise UserError(f"{Path(path).name}: {msg}")


def _names(keys) -> str:
    """Keys for a message, sorted; YAML keys need not be strings."""
    return ", ".join(sorted(map(str, keys)))


def _color(path, owner: str, value) -> str:
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", str(value)):
        _fail(path, f"{owner}: color must look like #4caf50 (got {value!r})")
    return str(value)


def _parse_rule(path, rule, owner: str, index: int, keys: set[str]) -> Rule:
    """One rule of `owner` (a category or a tax group), validated; sub/level checked by the caller."""
    where = f"rule #{index + 1} in {owner}"
    if not isinstance(rule, dict):
        _fail(path, f"{where}: expected a mapping with {', '.join(sorted(keys))}")
    rname = rule.get("name") or f"#{index + 1}"
    where = f"rule {rname!r} in {owner}"
    unknown = set(rule) - keys
    if unknown:
        _fail(path, f"{where}: unknown key(s) {_names(unknown)}")
    for key in ("name", "match", "examples"):
        if key not in rule:
            _fail(path, f"{where}: missing field `{key}`")
    pattern = UserRegex(rule["match"], f"{Path(path).name}: {where}")
    w = rule.get("where", "any")
    if w not in WHERE:
        _fail(path, f"{where}: `where` must be one of {', '.join(WHERE)} (got {w!r})")
    examples = rule["examples"]
    if not isinstance(examples, list) or not examples or not all(isinstance(x, str) for x in examples):
        _fail(path, f"{where}: `examples` must be a non-empty list of frame names")
    return Rule(owner, rname, pattern, w, examples)


def _parse_subcategories(path, cname: str, subs) -> list[str]:
    if subs is None:
        return []
    if not isinstance(subs, list) or not all(isinstance(s, dict) and isinstance(s.get("name"), str) for s in subs):
        _fail(path, f"category {cname!r}: `subcategories` must be a list of {{name, description}}")
    names = [s["name"] for s in subs]
    bad = [n for n in names if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", n) or n == OTHER]
    if bad or len(set(names)) != len(names):
        _fail(path, f"category {cname!r}: sub-category names must be distinct lower-case words, not "
                    f"'{OTHER}' (got {', '.join(bad) or 'a name twice'})")
    return names


def _parse_tax(path, tax, section: str = "tax",
               default_rest: str = "everything-else") -> tuple[list[TaxGroup], list[Rule], str]:
    """The `tax:` section, or another of its shape (`waits:`): groups of rules, and the rest's name."""
    if tax is None:
        return [], [], default_rest
    if not isinstance(tax, dict) or not isinstance(tax.get("groups"), list):
        _fail(path, f"`{section}:` must be a mapping with a `groups:` list (and `rest:`, the name of what no rule takes)")
    unknown = set(tax) - {"groups", "rest", "description"}
    if unknown:
        _fail(path, f"{section}: unknown key(s) {_names(unknown)}")
    rest = str(tax.get("rest") or default_rest)
    groups, rules = [], []
    for gi, group in enumerate(tax["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("name"), str):
            _fail(path, f"{section} group #{gi + 1}: expected a mapping with name, color, description, rules")
        gname = group["name"]
        unknown = set(group) - {"name", "color", "description", "rules"}
        if unknown:
            _fail(path, f"{section} group {gname!r}: unknown key(s) {_names(unknown)}")
        if gname in {g.name for g in groups}:
            _fail(path, f"{section} group {gname!r} is defined twice")
        groups.append(TaxGroup(gname, _color(path, f"{section} group {gname!r}", group.get("color")),
                               str(group.get("description", ""))))
        rules += [_parse_rule(path, r, gname, ri, TAX_RULE_KEYS) for ri, r in enumerate(group.get("rules") or [])]
    return groups, rules, rest


def load_rules(path: Path | str = RULES_PATH) -> Rules:
    """Load and validate categorize.yaml; every problem is one UserError line naming file, category, rule."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such rules file (pass --rules with the path of categorize.yaml)") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a folder; pass --rules with the path of categorize.yaml") from None
    except UnicodeDecodeError as e:
        _fail(path, f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); save it as UTF-8")
    except yaml.YAMLError as e:
        _fail(path, f"invalid YAML: {' '.join(str(e).split())}")
    except (OSError, RecursionError) as e:
        _fail(path, f"unreadable: {getattr(e, 'strerror', None) or type(e).__name__}")
    if not isinstance(data, dict) or not isinstance(data.get("categories"), list):
        _fail(path, "expected a top-level `categories:` list")
    unknown_top = set(data) - {"categories", "other_color", "tax", "waits"}
    if unknown_top:
        _fail(path, f"unknown top-level key(s) {_names(unknown_top)}")
    schema.check(data, schema.RULES, path.name, "fix categorize.yaml (its header says what each key takes)")
    categories, colors, descriptions, rules = [], {OTHER: data.get("other_color", "#b4b4b4")}, {}, []
    subcategories: dict[str, list[str]] = {}
    for ci, cat in enumerate(data["categories"]):
        if not isinstance(cat, dict):
            _fail(path, f"category #{ci + 1}: expected a mapping with {', '.join(sorted(CATEGORY_KEYS))}")
        cname = cat.get("name")
        if not cname or not isinstance(cname, str):
            _fail(path, f"category #{ci + 1}: missing field `name`")
        unknown = set(cat) - CATEGORY_KEYS
        if unknown:
            _fail(path, f"category {cname!r}: unknown key(s) {_names(unknown)}")
        if cname in categories or cname == OTHER or "/" in cname:
            _fail(path, f"category {cname!r} is defined twice" if cname in categories else
                  f"category name {cname!r} is reserved or has a '/'")
        for key in ("color", "rules"):
            if key not in cat:
                _fail(path, f"category {cname!r}: missing field `{key}`")
        categories.append(cname)
        colors[cname] = _color(path, f"category {cname!r}", cat["color"])
        descriptions[cname] = str(cat.get("description", ""))
        subs = _parse_subcategories(path, cname, cat.get("subcategories"))
        if subs:
            subcategories[cname] = subs
        for ri, raw in enumerate(cat["rules"] or []):
            rule = _parse_rule(path, raw, cname, ri, RULE_KEYS)
            where = f"rule {rule.name!r} in {cname}"
            sub, level = raw.get("sub"), raw.get("level", 1)
            if sub is not None and sub not in subs:
                _fail(path, f"{where}: sub {sub!r} is not one of {cname}'s subcategories "
                            f"({', '.join(subs) or 'none declared'})")
            if level not in LEVELS or level == 2 and not sub:
                _fail(path, f"{where}: `level` must be 1 or 2, and a level-2 rule needs a `sub`")
            rule.sub, rule.level = sub, level
            rules.append(rule)
    if "app" not in categories:
        _fail(path, "a category named `app` is required (the server's handler pattern is added to it)")
    tax_groups, tax_rules, tax_rest = _parse_tax(path, data.get("tax"))
    waits = _parse_tax(path, data.get("waits"), "waits", "other-wait")
    return Rules(categories, colors, descriptions, rules, str(path), subcategories, tax_groups, tax_rules, tax_rest,
                 waits=waits)


def check_examples(rules: Rules) -> list[str]:
    """Problems with the rules' examples: an example decided by another rule (a shadowed or wrong rule),
    at level 1, at level 2 (rules with a `sub`) and in the tax and waits views."""
    problems = []
    spaces = [(r, lambda ex: rules.classify_frame(ex)) for r in rules.rules if r.level == 1]
    spaces += [(r, lambda ex, c=r.category: rules.sub_rule(ex, c)) for r in rules.rules if r.sub]
    spaces += [(r, lambda ex: rules.tax_rule(ex)) for r in rules.tax_rules]
    spaces += [(r, lambda ex: rules.tax_rule(ex, "waits")) for r in rules.waits[1]]
    for rule, decide in spaces:
        deciders = [decide(ex) for ex in rule.examples]
        deciders = [d[1] if isinstance(d, tuple) else d for d in deciders]
        what = f"rule {rule.name!r} in {rule.category}" + (f" (sub {rule.sub})" if rule.sub else "")
        if all(d is not None and d is not rule for d in deciders):
            problems.append(f"{what} can never decide its examples: rule {deciders[0].name!r} in "
                            f"{deciders[0].category} matches them first (shadowed)")
            continue
        for ex, d in zip(rule.examples, deciders):
            if d is None:
                problems.append(f"{what}: example {ex!r} matches no rule")
            elif d is not rule:
                problems.append(f"{what}: example {ex!r} is decided by rule {d.name!r} in {d.category}")
    return problems


# --- folded stacks -----------------------------------------------------------------------------

def read_folded(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """(frames root-first, weight) for each `a;b;c 123` line; py-spy raw output is the same format."""
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        # ASCII digits only: int() also takes '١٢' (Arabic-Indic) and isdigit() '²', which perf and
        # inferno never write: such a count is a damaged line, not a weight
        if not sep or not (count.isascii() and count.isdigit()):
            raise UserError(f"line {lineno} is not a folded stack ('frame;frame;... COUNT' with COUNT in "
                            f"0-9): {line[:80]!r}")
        if len(count) > 15:
            # 10^15 ns is 11 days of CPU on one stack: beyond that, not a weight perf or py-spy writes, and
            # inferno's 64-bit sums would overflow
            raise UserError(f"line {lineno}: count {count[:20]}{'...' if len(count) > 20 else ''} is 10^15 or more, "
                            "more than any profile's weight: a damaged line")
        yield stack.split(";"), int(count)


def open_folded(path: Path | str) -> list[tuple[list[str], int]]:
    """The stacks of a folded file (.gz too; bytes that are not UTF-8 read as U+FFFD); UserError naming
    the file when it is missing, damaged, or holds no samples."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        # lines end at LF only (as inferno reads them): a CR inside a frame stays in its name
        with opener(path, "rt", encoding="utf-8", errors="replace", newline="\n") as f:
            stacks = list(read_folded(f))
    except FileNotFoundError:
        raise UserError(f"{path}: no such folded file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a folded file (e.g. RUN/SERVER/perf.folded)") from None
    except (OSError, EOFError) as e:
        raise UserError(f"{path}: unreadable: {e}") from None
    except UserError as e:
        raise UserError(f"{path}: {e}") from None
    if not any(w for _, w in stacks):
        raise UserError(f"{path}: no samples (the file is empty or every count is 0): profile again, or "
                        "give another folded file")
    return stacks


@dataclass
class Breakdown:
    """Weights per category of one profile, and per deciding frame for `top`."""
    weights: dict[str, int]
    total: int
    samples: int
    by_frame: dict[str, dict[str, int]]     # category -> deciding frame -> weight
    stacks: int

    def share(self, category: str) -> float:
        return self.weights.get(category, 0) / self.total if self.total else math.nan


def categorize(stacks: list[tuple[list[str], int]], rules: Rules, sample_weight: int | None = None) -> Breakdown:
    """The category breakdown of folded stacks. sample_weight: weight of one sample (perf's period
    when inferno weighted by period); inferred as the gcd of the weights when not given."""
    weights: dict[str, int] = defaultdict(int)
    by_frame: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    total = 0
    for frames, w in stacks:
        cat, idx = rules.classify_stack(frames)
        weights[cat] += w
        by_frame[cat][frames[idx] if idx >= 0 else frames[-1]] += w
        total += w
    if sample_weight is None:
        sample_weight = reduce(math.gcd, (w for _, w in stacks), 0) or 1
    return Breakdown({c: weights.get(c, 0) for c in rules.all_categories}, total,
                     total // sample_weight if sample_weight else 0,
                     {c: dict(v) for c, v in by_frame.items()}, len(stacks))
