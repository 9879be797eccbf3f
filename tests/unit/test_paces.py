"""Paces (analyze/paces.py, report/paces.py): the split test's false alarms and power by simulation, and
what a recorded run with two paces prints."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.intervals import figure_by_round
from rpcprof.analyze.paces import MIN_APART, critical_t, find_paces, split
from rpcprof.report.compare import render_compare
from rpcprof.report.summary import render_run
from rpcprof.rundir import load_run

ROOT = Path(__file__).resolve().parents[2]
TWO_PACES = ROOT / "docs" / "data" / "20261124-223529-rust_tonic_mt-rust_pajamax"   # tonic_mt 9.0-9.1 and 9.9-10.0
TRIALS = 3000


def one_pace(rng: random.Random, cv: float, n: int = 5) -> dict[int, float]:
    return {k: 10.0 * math.exp(rng.gauss(0, cv)) for k in range(1, n + 1)}


def two_paces(rng: random.Random, apart: float, cv: float, n: int = 5) -> tuple[dict[int, float], bool]:
    """Rounds landing in either pace at random; (rounds, whether both paces were caught)."""
    slow = [rng.random() < 0.5 for _ in range(n)]
    rounds = {k: 10.0 * (apart if s else 1.0) * math.exp(rng.gauss(0, cv)) for k, s in enumerate(slow, 1)}
    return rounds, 0 < sum(slow) < n


@pytest.mark.parametrize("cv", [0.025, 0.06])
def test_one_pace_at_pajamaxs_spread_is_named_two_in_at_most_5_percent_of_runs(cv):
    rng = random.Random(7)
    alarms = sum(find_paces(one_pace(rng, cv)) is not None for _ in range(TRIALS))
    assert alarms / TRIALS <= 0.05


def test_two_paces_15x_apart_are_found_in_80_percent_of_5_round_runs_that_caught_both():
    rng = random.Random(11)
    found = caught = 0
    for _ in range(TRIALS):
        rounds, both = two_paces(rng, 1.5, 0.03)
        if both:
            caught += 1
            found += find_paces(rounds) is not None
    assert found / caught >= 0.80


def test_the_test_has_the_level_it_states_whatever_the_spread():
    rng = random.Random(3)
    # without the 10 % floor, one pace passes the split test in ~5 % of runs at any spread
    for cv in (0.01, 0.2):
        passed = sum(split(one_pace(rng, cv))[0] > critical_t(5) for _ in range(TRIALS))
        assert 0.03 <= passed / TRIALS <= 0.07


def test_paces_closer_than_the_floor_are_not_named():
    rounds = {1: 10.0, 2: 10.01, 3: 10.02, 4: 10.5, 5: 10.51}      # a clean split, 5 % apart
    assert split(rounds)[0] > critical_t(5)
    assert find_paces(rounds) is None
    assert find_paces({k: v * (MIN_APART + 0.5) if k > 3 else v for k, v in rounds.items()}) is not None


def test_a_clean_split_names_its_rounds_and_costs():
    p = find_paces({1: 30.0, 2: 20.0, 3: 30.5, 4: 20.4, 5: 29.8})
    assert (p.fast, p.slow) == ((2, 4), (1, 3, 5))
    assert p.fast_us == pytest.approx(math.sqrt(20.0 * 20.4))
    assert p.apart == pytest.approx(p.slow_us / p.fast_us) and p.apart > 1.4


def test_too_few_rounds_name_no_pace():
    assert find_paces({1: 10.0, 2: 20.0, 3: 10.1}) is None
    assert find_paces({1: 10.0}) is None


def test_a_recorded_run_with_two_paces_names_them_in_run_and_compare():
    text = render_run(TWO_PACES)
    line = next(x for x in text.splitlines() if "ran at two paces" in x)
    assert line.startswith("rust_tonic_mt ran at two paces: rounds 4, 5 at ")
    assert "rounds 1, 2, 3 at" in line
    assert "rust_pajamax vs rust_tonic_mt within rust_tonic_mt's fast pace (rounds 4, 5): ^" in text
    assert "rust_pajamax ran at" not in text
    compared = render_compare(TWO_PACES, load_rules())
    assert "rust_tonic_mt's slow pace against its fast, by category (Welch t" in compared
    found = json.loads(render_compare(TWO_PACES, load_rules(), "json"))["paces"]
    assert [f["server"] for f in found] == ["rust_tonic_mt"]
    rows = {r["group"]: r for r in found[0]["categories"]}
    # level-1 rows are the sums of their level-2 groups, per round, so their means are too
    send = sum(r["delta_us"] for g, r in rows.items() if g.startswith("send/"))
    assert rows["send"]["delta_us"] == pytest.approx(send)
    _, metrics = load_run(TWO_PACES)
    total = sum(r["delta_us"] for g, r in rows.items() if "/" not in g)
    by_round = figure_by_round(metrics["rust_tonic_mt"], "cpu_us_per_req")
    mean = lambda ks: sum(by_round[k] for k in ks) / len(ks)           # noqa: E731
    assert total == pytest.approx(mean((1, 2, 3)) - mean((4, 5)), rel=1e-6)


def test_runs_published_with_one_pace_print_no_pace_line():
    with_paces = {TWO_PACES.name, "20261126-022902-rust_tonic_mt-rust_pajamax"}     # docs/run.md quotes both
    for run in sorted((ROOT / "docs" / "data").glob("*rust_tonic_mt-rust_pajamax")):
        if run.name not in with_paces:
            assert "ran at two paces" not in render_run(run), run.name
