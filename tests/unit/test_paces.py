"""Paces (analyze/paces.py, report/summary.py): the split test's false alarms and power by simulation, and
what a recorded run with two paces prints."""
from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.intervals import figure_by_round
from rpcprof.analyze.paces import MIN_APART, critical_t, find_paces, split
from rpcprof.report.compare import render_compare
from rpcprof.report.summary import render_run
from rpcprof.records import round_of, round_rows
from rpcprof.rundir import load_run

ROOT = Path(__file__).resolve().parents[2]
TWO_PACES = ROOT / "docs" / "data" / "20261124-223529-rust_tonic_mt-rust_pajamax"   # tonic_mt 9.0-9.1 and 9.9-10.0
NOISY = ROOT / "docs" / "data" / "20261127-112826-rust_tonic_mt-rust_pajamax"       # rounds ±15-22 %, slices sd 24 %
TRIALS = 3000
SLICES = 12               # a 6 s window's 0.5 s slices


def one_pace(rng: random.Random, cv: float, n: int = 5) -> dict[int, float]:
    return {k: 10.0 * math.exp(rng.gauss(0, cv)) for k in range(1, n + 1)}


def two_paces(rng: random.Random, apart: float, cv: float, n: int = 5) -> tuple[dict[int, float], bool]:
    """Rounds landing in either pace at random; (rounds, whether both paces were caught)."""
    slow = [rng.random() < 0.5 for _ in range(n)]
    rounds = {k: 10.0 * (apart if s else 1.0) * math.exp(rng.gauss(0, cv)) for k, s in enumerate(slow, 1)}
    return rounds, 0 < sum(slow) < n


def with_slices(rng: random.Random, rounds: dict[int, float], sd: float) -> tuple[dict[int, float], dict[int, list]]:
    """Each round's SLICES slices, ln-normal about its level with sd; (the rounds' figures, their slices)."""
    slices = {k: [v * math.exp(rng.gauss(0, sd)) for _ in range(SLICES)] for k, v in rounds.items()}
    return {k: math.exp(statistics.fmean(math.log(v) for v in s)) for k, s in slices.items()}, slices


def slices_about(rng: random.Random, rounds: dict[int, float], sd: float) -> dict[int, list]:
    """Each round's SLICES slices, ln-normal with sd, moved so that their ln mean is the round's figure."""
    out = {}
    for k, v in rounds.items():
        e = [rng.gauss(0, sd) for _ in range(SLICES)]
        out[k] = [v * math.exp(x - statistics.fmean(e)) for x in e]
    return out


def at_most_5_percent(alarms: int) -> bool:
    """alarms / TRIALS within two binomial standard deviations of a test at the 5 % level."""
    return alarms / TRIALS <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / TRIALS)


def noisy_slices() -> dict[int, list[float]]:
    """rust_tonic_mt's slices on the noisy host, each over its round's figure (their scatter alone)."""
    _, metrics = load_run(NOISY)
    return {round_of(r): [v / r["cpu_us_per_req"] for v in r["timeline"]["cpu_us_per_req"] if v]
            for r in round_rows(metrics["rust_tonic_mt"])}


@pytest.mark.parametrize("cv", [0.025, 0.06])
def test_one_pace_at_pajamaxs_spread_is_named_two_in_at_most_5_percent_of_runs(cv):
    rng = random.Random(7)
    alarms = sum(find_paces(one_pace(rng, cv)) is not None for _ in range(TRIALS))
    assert alarms / TRIALS <= 0.05


@pytest.mark.parametrize("cv", [0.06, 0.15])
def test_one_pace_whose_rounds_spread_by_their_slices_noise_is_named_two_in_at_most_5_percent_of_runs(cv):
    rng = random.Random(5)
    alarms = sum(find_paces(*with_slices(rng, {k: 10.0 for k in range(1, 6)}, cv * math.sqrt(SLICES))) is not None
                 for _ in range(TRIALS))
    assert at_most_5_percent(alarms)


def test_one_pace_drifting_far_beyond_its_slices_keeps_the_rounds_own_test():
    rng = random.Random(9)
    alarms = 0
    for _ in range(TRIALS):
        values, slices = with_slices(rng, one_pace(rng, 0.06), 0.001)
        p = find_paces(values, slices)
        assert p == find_paces(values)
        alarms += p is not None
    assert at_most_5_percent(alarms)


def test_paces_at_22_23_and_31_37_are_named_with_the_noisy_hosts_slices():
    levels = {1: 34.0, 2: 22.0, 3: 23.0, 4: 37.0, 5: 31.0}
    scatter = noisy_slices()
    assert statistics.stdev(math.log(v) for s in scatter.values() for v in s) > 0.2
    p = find_paces(levels, {k: [v * levels[k] for v in s] for k, s in scatter.items()})
    assert (p.fast, p.slow) == ((2, 3), (1, 4, 5)) and p.slices == sum(map(len, scatter.values()))
    assert find_paces(levels) is None                   # the rounds' spread alone cannot tell them
    rng = random.Random(13)
    named = sum(find_paces(levels, slices_about(rng, levels, 0.24)) is not None for _ in range(1000))
    assert named / 1000 >= 0.80


def test_rounds_without_slices_keep_the_rounds_own_test():
    rounds = {1: 30.0, 2: 20.0, 3: 30.5, 4: 20.4, 5: 29.8}
    assert find_paces(rounds, {1: [30.0], 2: None}) == find_paces(rounds) == find_paces(rounds, None)
    assert find_paces(rounds).slices == 0


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


def test_the_noisy_hosts_run_names_its_paces_from_its_slices():
    line = next(x for x in render_run(NOISY).splitlines() if "ran at two paces" in x)
    assert line.startswith("rust_tonic_mt ran at two paces: rounds 2, 3, 5 at ")
    assert "rounds 1, 4 at " in line and "noise from the rounds and their 58 slices" in line
    _, metrics = load_run(NOISY)
    assert find_paces(figure_by_round(metrics["rust_tonic_mt"], "cpu_us_per_req")) is None


def test_runs_published_with_one_pace_print_no_pace_line():
    with_paces = {TWO_PACES.name, "20261126-022902-rust_tonic_mt-rust_pajamax", NOISY.name,     # docs/run.md quotes them
                  "20261128-101827-rust_tonic_mt-rust_pajamax"}      # the third ledger host's: rounds 1-3 and 4-5
    for run in sorted((ROOT / "docs" / "data").glob("*rust_tonic_mt-rust_pajamax")):
        if run.name not in with_paces:
            assert "ran at two paces" not in render_run(run), run.name
