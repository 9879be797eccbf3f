"""categorize.yaml read and checked: its types and keys by the JSON Schema (rpcprof.schema.RULES), then what
a schema cannot say (each regex compiled through the guarded UserRegex, names defined twice, a `sub:` that
its category does not declare, the `app` category), and, for check-rules, every rule's examples.
Every problem is one UserError line naming the file, the key or the rule, and the fix.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from rpcprof import schema
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.rules import LEVELS, OTHER, Rule, Rules, TaxGroup, View
from rpcprof.errors import UserError
from rpcprof.paths import RULES_PATH

CATEGORY_KEYS = {"name", "color", "description", "rules", "subcategories"}
RULE_KEYS = {"name", "match", "where", "examples", "sub", "level"}
TAX_RULE_KEYS = {"name", "match", "where", "examples"}
WHERE = ("any", "kernel", "user")


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
               default_rest: str = "everything-else") -> View:
    """The `tax:` section, or another of its shape (`waits:`): groups of rules, and the rest's name."""
    if tax is None:
        return View([], [], default_rest)
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
    return View(groups, rules, rest)


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
    spaces += [(r, lambda ex: rules.tax_rule(ex, "waits")) for r in rules.waits.rules]
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
