"""analyze/labels.py's CallersGroups gives every callers text the groups the walks of stack_walk give it (level 1,
level 2, tax), on each distinct callers text of the real captures and of hostile names, with and without an
app pattern: asked in the captures' order and again in reverse (the prefixes kept in another order)."""
from __future__ import annotations

from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.labels import CallersGroups
from rpcprof.analyze.stack_walk import Tally

DATA = Path(__file__).resolve().parents[1] / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz")) + [DATA / "hostile.folded"]
APP = r"main\.\(\*server\)|Greeter|<script>|handle"


def tallies(rules) -> list:
    made = [Tally(rules, False), Tally(rules.using(level=2), False)]
    return made + [Tally(rules.using(view="tax"), False)] if rules.tax.groups else made


@pytest.mark.parametrize("app", [None, APP])
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_callers_groups_are_the_walks(capture, app):
    rules = load_rules().with_app(app, "--app") if app else load_rules()
    callers = list(dict.fromkeys(";".join(frames[:i]) + ";" for frames, _ in open_folded(capture)
                                 for i in range(1, len(frames))))
    assert callers
    walks = tallies(rules)
    want = {c: tuple(t.callers_answer(c)[0] for t in walks) for c in callers}
    for order in (callers, callers[::-1]):
        groups = CallersGroups(tallies(rules))
        assert {c: groups.groups(c) for c in order} == want
    if capture.suffix == ".gz":          # a real capture reaches several groups
        assert len({g for gs in want.values() for g in gs}) > 3
