"""categorize.yaml read and checked: its types and keys by the JSON Schema (rpcprof.schema.RULES), then what
a schema cannot say (each regex compiled through the guarded UserRegex, names defined twice, a `sub:` that
its category does not declare, the `app` category), and, for check-rules, every rule's examples.
Every problem is one UserError line naming the file, the key or the rule, and the fix.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from rpcprof import schema
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.rules import NO_TAX, NO_WAITS, OTHER, Rule, Rules, TaxGroup, View
from rpcprof.errors import UserError
from rpcprof.paths import RULES_PATH

FIX = "fix categorize.yaml (its header says what each key takes)"
APP = "app"           # the category the server's handler pattern is added to: every rules file has it


@dataclass(frozen=True)
class Groups:
    """How the reports group and order the file's categories: its `groups:` (none where the file has no `groups:`)."""
    socket: tuple[str, ...] = ()            # the syscall path and the kernel below it (seed 000's guess)
    above_socket: tuple[str, ...] = ()      # the server's work above the socket, the handler left out
    user_space: tuple[str, ...] = ()        # the user code an extra syscall slows (bench/indirect, whatif)
    seed_000_columns: tuple[str, ...] = ()  # seed 000's column order (report.py sweep, results)
    reads: str | None = None                # the category of the read syscalls
    writes: str | None = None               # the category of the write syscalls: its cost is per write
    scheduling: str | None = None           # the category of waits, wake-ups and context switches


def _groups(path: Path, section: dict | None, categories: list[str]) -> Groups:
    """The `groups:` section, every name in it a category of the file."""
    section = section or {}
    for key, value in section.items():
        for name in [value] if isinstance(value, str) else value:
            if name not in categories:
                _fail(path, f"groups: {key} names {name!r}, which is not a category ({', '.join(categories)}); "
                            "name a category of the file")
    return Groups(**{k: tuple(v) if isinstance(v, list) else v for k, v in section.items()})


# libyaml's safe loader where PyYAML was built with it (a tenth of the pure-Python one's time on
# categorize.yaml, which every command reads), the pure-Python one otherwise: the same documents
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _fail(path, msg):
    raise UserError(f"{Path(path).name}: {msg}")


def _read(path: Path):
    """The YAML document of the rules file; UserError when it cannot be read or parsed."""
    try:
        return yaml.load(path.read_bytes().decode("utf-8"), Loader=SAFE_LOADER)
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


def _rule(path: Path, raw: dict, owner: str, index: int) -> Rule:
    """One rule of `owner` (a category or a group of a view), its regex compiled through the guard."""
    name = raw["name"] or f"#{index + 1}"
    pattern = UserRegex(raw["match"], f"{path.name}: rule {name!r} in {owner}")
    return Rule(owner, name, pattern, raw.get("where", "any"), raw["examples"])


def _view(path: Path, data: dict, key: str, default: View) -> View:
    """The `tax:` section, or another of its shape (`waits:`): groups of rules, and the rest's name."""
    section = data.get(key)
    if section is None:
        return default
    groups, rules = [], []
    for group in section["groups"]:
        name = group["name"]
        if name in {g.name for g in groups}:
            _fail(path, f"{key} group {name!r} is defined twice; rename or merge one of them")
        groups.append(TaxGroup(name, group["color"], group.get("description", "")))
        rules += [_rule(path, r, name, i) for i, r in enumerate(group.get("rules") or [])]
    return View(groups, rules, section.get("rest") or default.rest)


def load_rules(path: Path | str = RULES_PATH) -> Rules:
    """Load and validate categorize.yaml; every problem is one UserError line naming file, category, rule."""
    path = Path(path)
    data = schema.check(_read(path), schema.RULES, path.name, FIX)
    categories, colors, descriptions, rules = [], {OTHER: data.get("other_color", "#b4b4b4")}, {}, []
    subcategories: dict[str, list[str]] = {}
    for cat in data["categories"]:
        cname = cat["name"]
        if cname in categories:
            _fail(path, f"category {cname!r} is defined twice; rename or merge one of them")
        categories.append(cname)
        colors[cname] = cat["color"]
        descriptions[cname] = cat.get("description", "")
        subs = [s["name"] for s in cat.get("subcategories") or []]
        twice = sorted({s for s in subs if subs.count(s) > 1})
        if twice:
            _fail(path, f"category {cname!r}: sub-category {', '.join(twice)} is declared twice; declare each once")
        if subs:
            subcategories[cname] = subs
        for ri, raw in enumerate(cat["rules"] or []):
            rule = _rule(path, raw, cname, ri)
            sub = raw.get("sub")
            if sub is not None and sub not in subs:
                _fail(path, f"rule {rule.name!r} in {cname}: sub {sub!r} is not one of {cname}'s subcategories "
                            f"({', '.join(subs) or 'none declared'})")
            rule.sub, rule.level = sub, raw.get("level", 1)
            rules.append(rule)
    if APP not in categories:
        _fail(path, f"a category named `{APP}` is required (the server's handler pattern is added to it)")
    return Rules(categories, colors, descriptions, rules, str(path), subcategories,
                 groups=_groups(path, data.get("groups"), categories),      # checked in this order
                 tax=_view(path, data, "tax", NO_TAX), waits=_view(path, data, "waits", NO_WAITS))


def check_examples(rules: Rules) -> list[str]:
    """Problems with the rules' examples: an example decided by another rule (a shadowed or wrong rule),
    at level 1, at level 2 (rules with a `sub`) and in the tax and waits views."""
    problems = []
    spaces = [(r, "category") for r in rules.rules if r.level == 1]
    spaces += [(r, f"sub:{r.category}") for r in rules.rules if r.sub]
    spaces += [(r, "tax") for r in rules.tax.rules] + [(r, "waits") for r in rules.waits.rules]
    for rule, question in spaces:
        deciders = [rules.first_rule(ex, question) for ex in rule.examples]
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


SHOWN_PROBLEMS = 3


def problems_line(problems: list[str]) -> str:
    """check_examples' problems for one error line: all of them when few, else the first few and a count
    (a broad rule can shadow a hundred others: the first ones name it)."""
    if len(problems) <= SHOWN_PROBLEMS:
        return "; ".join(problems)
    return (f"{len(problems)} problems with the rules' examples, the first {SHOWN_PROBLEMS}: "
            + "; ".join(problems[:SHOWN_PROBLEMS])
            + f"; and {len(problems) - SHOWN_PROBLEMS} more (fix these, then run check-rules again)")
