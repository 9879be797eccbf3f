"""Bucket sampled stacks into recv / send / runtime / protocol / app (+ other) with categorize.yaml.

Semantics (also in categorize.yaml's header): walk each stack from the leaf toward the root; the first
frame that matches a rule decides; no match at all is `other`. Within one frame, the category listed
first in the file wins.
"""
from __future__ import annotations

import gzip
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from rpcprof.errors import UserError
from rpcprof.paths import RULES_PATH
CATEGORY_KEYS = {"name", "color", "description", "rules"}
RULE_KEYS = {"name", "match", "where", "examples"}
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
    pattern: re.Pattern
    where: str = "any"
    examples: list[str] = field(default_factory=list)

    def matches(self, name: str, kernel: bool) -> bool:
        if self.where == "kernel" and not kernel or self.where == "user" and kernel:
            return False
        return self.pattern.search(name) is not None


class Rules:
    """The validated rule set; `classify_stack` is the whole categorisation."""

    def __init__(self, categories: list[str], colors: dict[str, str], descriptions: dict[str, str],
                 rules: list[Rule], source: str):
        self.categories = categories
        self.colors = colors
        self.descriptions = descriptions
        self.rules = rules
        self.source = source
        self._cache: dict[str, tuple[str, Rule] | None] = {}

    def with_app(self, regex: str | None, origin: str = "--app") -> "Rules":
        """A copy with the server's app pattern added to the `app` category."""
        if not regex:
            return self
        try:
            pattern = re.compile(regex)
        except re.error as e:
            raise UserError(f"{origin}: invalid regex {regex!r}: {e}") from None
        rules = list(self.rules)
        idx = next((i for i, r in enumerate(rules) if self.categories.index(r.category) > self.categories.index("app")),
                   len(rules))
        rules.insert(idx, Rule("app", f"app ({origin})", pattern, "user"))
        return Rules(self.categories, self.colors, self.descriptions, rules, self.source)

    def classify_frame(self, raw: str) -> tuple[str, Rule] | None:
        """(category, rule) of the first rule matching this frame, or None."""
        hit = self._cache.get(raw, False)
        if hit is not False:
            return hit
        name, kernel = normalize_frame(raw)
        hit = next(((r.category, r) for r in self.rules if r.matches(name, kernel)), None)
        self._cache[raw] = hit
        return hit

    def classify_stack(self, frames: list[str]) -> tuple[str, int]:
        """(category, index of the deciding frame or -1). frames go root first, leaf last."""
        for i in range(len(frames) - 1, -1, -1):
            hit = self.classify_frame(frames[i])
            if hit:
                return hit[0], i
        return OTHER, -1

    @property
    def all_categories(self) -> list[str]:
        return self.categories + [OTHER]


def _fail(path, msg):
    raise UserError(f"{Path(path).name}: {msg}")


def load_rules(path: Path | str = RULES_PATH) -> Rules:
    """Load and validate categorize.yaml; every problem is one UserError line naming file, category, rule."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such rules file (pass --rules with the path of categorize.yaml)") from None
    except yaml.YAMLError as e:
        _fail(path, f"invalid YAML: {' '.join(str(e).split())}")
    if not isinstance(data, dict) or not isinstance(data.get("categories"), list):
        _fail(path, "expected a top-level `categories:` list")
    unknown_top = set(data) - {"categories", "other_color"}
    if unknown_top:
        _fail(path, f"unknown top-level key(s) {', '.join(sorted(unknown_top))}")
    categories, colors, descriptions, rules = [], {OTHER: str(data.get("other_color", "#b4b4b4"))}, {}, []
    for ci, cat in enumerate(data["categories"]):
        if not isinstance(cat, dict):
            _fail(path, f"category #{ci + 1}: expected a mapping with {', '.join(sorted(CATEGORY_KEYS))}")
        cname = cat.get("name")
        if not cname or not isinstance(cname, str):
            _fail(path, f"category #{ci + 1}: missing field `name`")
        unknown = set(cat) - CATEGORY_KEYS
        if unknown:
            _fail(path, f"category {cname!r}: unknown key(s) {', '.join(sorted(unknown))}")
        if cname in categories or cname == OTHER:
            _fail(path, f"category {cname!r} is defined twice" if cname != OTHER else "category 'other' is reserved")
        for key in ("color", "rules"):
            if key not in cat:
                _fail(path, f"category {cname!r}: missing field `{key}`")
        if not re.fullmatch(r"#[0-9a-fA-F]{6}", str(cat["color"])):
            _fail(path, f"category {cname!r}: color must look like #4caf50 (got {cat['color']!r})")
        categories.append(cname)
        colors[cname] = cat["color"]
        descriptions[cname] = str(cat.get("description", ""))
        for ri, rule in enumerate(cat["rules"] or []):
            where = f"rule #{ri + 1} in {cname}"
            if not isinstance(rule, dict):
                _fail(path, f"{where}: expected a mapping with {', '.join(sorted(RULE_KEYS))}")
            rname = rule.get("name") or f"#{ri + 1}"
            where = f"rule {rname!r} in {cname}"
            unknown = set(rule) - RULE_KEYS
            if unknown:
                _fail(path, f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
            for key in ("name", "match", "examples"):
                if key not in rule:
                    _fail(path, f"{where}: missing field `{key}`")
            try:
                pattern = re.compile(str(rule["match"]))
            except re.error as e:
                _fail(path, f"{where}: invalid regex: {e}")
            w = rule.get("where", "any")
            if w not in WHERE:
                _fail(path, f"{where}: `where` must be one of {', '.join(WHERE)} (got {w!r})")
            examples = rule["examples"]
            if not isinstance(examples, list) or not examples or not all(isinstance(x, str) for x in examples):
                _fail(path, f"{where}: `examples` must be a non-empty list of frame names")
            rules.append(Rule(cname, rname, pattern, w, examples))
    if "app" not in categories:
        _fail(path, "a category named `app` is required (the server's handler pattern is added to it)")
    return Rules(categories, colors, descriptions, rules, str(path))


def check_examples(rules: Rules) -> list[str]:
    """Problems with the rules' examples: an example decided by another rule (a shadowed or wrong rule)."""
    problems = []
    for rule in rules.rules:
        if not rule.examples:
            continue
        deciders = [rules.classify_frame(ex) for ex in rule.examples]
        if all(d is not None and d[1] is not rule for d in deciders):
            first = deciders[0]
            problems.append(f"rule {rule.name!r} in {rule.category} can never decide its examples: "
                            f"rule {first[1].name!r} in {first[0]} matches them first (shadowed)")
            continue
        for ex, d in zip(rule.examples, deciders):
            if d is None:
                problems.append(f"rule {rule.name!r} in {rule.category}: example {ex!r} matches no rule")
            elif d[1] is not rule:
                problems.append(f"rule {rule.name!r} in {rule.category}: example {ex!r} is decided by "
                                f"rule {d[1].name!r} in {d[0]}")
    return problems


# --- folded stacks -----------------------------------------------------------------------------

def read_folded(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """(frames root-first, weight) for each `a;b;c 123` line; py-spy raw output is the same format."""
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not count.isdigit():
            raise UserError(f"line {lineno} is not a folded stack ('frame;frame;... COUNT'): {line[:80]!r}")
        yield stack.split(";"), int(count)


def open_folded(path: Path | str) -> list[tuple[list[str], int]]:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            stacks = list(read_folded(f))
    except FileNotFoundError:
        raise UserError(f"{path}: no such folded file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a folded file (e.g. RUN/SERVER/perf.folded)") from None
    except (OSError, EOFError) as e:
        raise UserError(f"{path}: unreadable: {e}") from None
    except UserError as e:
        raise UserError(f"{path}: {e}") from None
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
