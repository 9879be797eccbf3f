"""The rules asked at once (analyze/patterns.py) give the per-rule loop's answer, the rule it finds walking the
list in order: on every frame of the real captures and of hostile.folded, for every question (level-1
category, each category's sub-categories, tax, waits), and on the patterns RE2 reads differently from
Python's `re`."""
from __future__ import annotations

from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules, normalize_frame, open_folded
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.patterns import RuleSet, re2_superset
from rpcprof.analyze.rules import Rule

DATA = Path(__file__).resolve().parents[1] / "data"
RULES = load_rules().with_app(r"main\.\(\*server\)|Greeter|<script>")
FRAMES = sorted({f for p in sorted(DATA.glob("*.folded.gz")) + [DATA / "hostile.folded"]
                 for frames, _ in open_folded(p) for f in frames})
QUESTIONS = {"category": [r for r in RULES.rules if r.level == 1], "tax": RULES.tax.rules, "waits": RULES.waits.rules}
QUESTIONS |= {f"sub:{c}": [r for r in RULES.rules if r.category == c and r.sub] for c in RULES.subcategories}


def loop(rules: list[Rule], name: str, kernel: bool) -> Rule | None:
    return next((r for r in rules if r.matches(name, kernel)), None)


def rules_of(*patterns: str) -> list[Rule]:
    return [Rule("app", f"r{i}", UserRegex(p, f"r{i}")) for i, p in enumerate(patterns)]


@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_every_captured_frame_gets_the_per_rule_answer(question):
    rules = QUESTIONS[question]
    rule_set = RuleSet(rules)
    answers = [(frame, rule_set.first(*normalize_frame(frame))) for frame in FRAMES]
    assert answers == [(frame, loop(rules, *normalize_frame(frame))) for frame in FRAMES]
    if question == "category":
        assert sum(a is not None for _, a in answers) > 1000       # the captures' frames do meet the rules


def test_every_rule_of_categorize_yaml_is_in_the_automaton():
    for rules in QUESTIONS.values():
        assert not RuleSet(rules)._outside


@pytest.mark.parametrize("pattern, frame, decides", [
    (r"^grpc::(?!CompletionQueue::)", "grpc::CompletionQueue::Next", False),     # a lookahead: Python refuses
    (r"^grpc::(?!CompletionQueue::)", "grpc::Server::Start", True),
    (r"^x{,2}y$", "xxy", True),              # {,n} is {0,n} to Python, text to RE2
    (r"^x{,2}y$", "x{,2}y", False),
    (r"(ab)\1$", "main::abab", True),         # a backreference: outside the automaton, asked in its turn
    (r"(ab)\1$", "main::abba", False),
    (r"^caf\w$", "café", True),              # Python's \w is Unicode, RE2's ASCII: the frame takes the loop
    (r"\s", "a\tb", True),                   # \t is not printable: the loop
    (r"(?i)^KELVIN$", "kelvin", True),
    (r"a\Z", "ba", True),
    (r"a++a", "aaa", False),                 # possessive: never matches in Python; RE2 is told a+a
    (r"(?>a+)b", "aab", True),
])
def test_a_pattern_re2_reads_differently_gets_pythons_answer(pattern, frame, decides):
    rules = rules_of(r"^never$", pattern, r".")
    want = rules[1] if decides else rules[2]
    assert RuleSet(rules).first(frame, False) is want is loop(rules, frame, False)


def test_a_backreference_stays_outside_the_automaton_and_keeps_its_place():
    rules = rules_of(r"^a", r"(b)\1", r"b")
    rule_set = RuleSet(rules)
    assert rule_set._outside == [1]
    assert rule_set.first("xbb", False) is rules[1]
    assert rule_set.first("xb", False) is rules[2]
    assert rule_set.first("abb", False) is rules[0]


def test_where_is_honoured_among_the_candidates():
    kernel, user = Rule("recv", "k", UserRegex("^read$", "k"), "kernel"), Rule("app", "u", UserRegex("read", "u"), "user")
    rule_set = RuleSet([kernel, user])
    assert rule_set.first("read", True) is kernel
    assert rule_set.first("read", False) is user
    assert rule_set.first("pread", True) is None


def test_the_rewriting_keeps_what_python_parsed():
    assert re2_superset(r"(?i)a{,3}b\Z") == "(?i:(?:a){0,3}b$)"
    assert re2_superset(r"^grpc::(?!Alarm)") == r"(?:^grpc\x3a\x3a)"
    assert re2_superset(r"(a)\1") is None
