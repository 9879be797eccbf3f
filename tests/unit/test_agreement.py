"""Runs of one setup compared (analyze/agreement.py): known numbers, and by simulation what a run's
interval promises about the next run, and what the interval over runs promises when the machine drifts."""
from __future__ import annotations

import math
import random
import statistics

import pytest

from rpcprof.analyze.agreement import RunRatio, agreement
from rpcprof.analyze.intervals import paired_ratio, t975

PAIRS = 5


def run_of(label: str, logs: list[float]) -> RunRatio:
    """A run whose pairs have these log ratios (base 100 each round)."""
    return RunRatio(label, paired_ratio([100.0] * len(logs), [100.0 * math.exp(x) for x in logs]), logs)


def simulated_run(rng: random.Random, label: str, center: float, within: float) -> RunRatio:
    return run_of(label, [rng.gauss(center, within) for _ in range(PAIRS)])


def test_known_runs_give_the_random_effects_split_by_hand():
    a = run_of("a", [0.00, 0.02, -0.02, 0.01, -0.01])
    b = run_of("b", [0.10, 0.12, 0.08, 0.11, 0.09])
    c = run_of("c", [0.05, 0.07, 0.03, 0.06, 0.04])
    got = agreement([a, b, c])
    within = statistics.variance(a.logs)                   # the three runs have the same spread around their means
    assert got.within_sd == pytest.approx(math.sqrt(within))
    assert got.expected_sd == pytest.approx(math.sqrt(within / PAIRS))
    assert got.runs_sd == pytest.approx(statistics.stdev([0.0, 0.10, 0.05]))
    assert got.between_sd == pytest.approx(math.sqrt(statistics.variance([0.0, 0.10, 0.05]) - within / PAIRS))
    assert got.over_runs.ratio == pytest.approx(math.exp(0.05))
    half = t975(2) * got.runs_sd / math.sqrt(3)
    assert (got.over_runs.low, got.over_runs.high) == pytest.approx((math.exp(0.05 - half), math.exp(0.05 + half)))
    spread = t975(2) * got.runs_sd * math.sqrt(1 + 1 / 3)
    assert got.next_run == pytest.approx((math.exp(0.05 - spread), math.exp(0.05 + spread)))
    # a's interval (about ±2.8 %) holds neither b's ratio nor c's; b's and c's hold none either
    assert got.checks == 6 and len(got.misses) == 6 and ("b", "a") in got.misses


def test_runs_closer_than_their_rounds_keep_the_rounds_spread():
    a = run_of("a", [0.0, 0.1, -0.1, 0.05, -0.05])
    b = run_of("b", [0.001, 0.101, -0.099, 0.051, -0.049])
    got = agreement([a, b])
    assert got.between_sd == 0 and got.runs_sd < got.expected_sd
    half = t975(1) * got.expected_sd / math.sqrt(2)       # not the runs' own, tiny, spread
    assert math.log(got.over_runs.high / got.over_runs.ratio) == pytest.approx(half)
    assert got.misses == [] and got.checks == 2


def test_a_run_without_an_interval_is_not_checked_against():
    one_pair = run_of("single", [0.3])
    got = agreement([run_of("a", [0.0, 0.02, -0.02]), one_pair])
    assert got.checks == 1          # a's interval against single's ratio; single has no interval to hold a's
    assert got.misses == [("single", "a")]


@pytest.mark.slow
def test_without_drift_three_runs_hold_each_others_ratios_all_six_ways_only_about_61_percent_of_the_time():
    """What the docstring says a 95 % interval promises, and what it does not: each run's interval holds
    the true ratio 95 % of the time, the next run's ratio about 88 %, and three runs pass all six checks
    about 61 %. Normal log noise, no drift, 5 pairs a run."""
    rng = random.Random(19)
    trials, truth, all_six, next_held, covered = 4000, 0.0, 0, 0, 0
    for _ in range(trials):
        runs = [simulated_run(rng, str(i), truth, 0.05) for i in range(3)]
        got = agreement(runs)
        all_six += not got.misses
        next_held += runs[0].holds(runs[1].interval.ratio)
        covered += runs[0].holds(1.0)
    assert 0.93 < covered / trials < 0.97
    assert 0.85 < next_held / trials < 0.91
    assert 0.57 < all_six / trials < 0.66


@pytest.mark.slow
def test_with_drift_between_runs_the_prediction_over_three_runs_holds_a_fourth_runs_ratio():
    """The machine moves each run by a drift (sd 0.04) the rounds (sd 0.03 a pair) cannot see: one run's
    interval then holds the next run's ratio far less often than 95 %, and the prediction from three
    runs holds a fourth about 95 % of the time."""
    rng = random.Random(20)
    trials, one_run, predicted = 3000, 0, 0
    for _ in range(trials):
        runs = [simulated_run(rng, str(i), rng.gauss(0.0, 0.04), 0.03) for i in range(4)]
        got = agreement(runs[:3])
        low, high = got.next_run
        predicted += low <= runs[3].interval.ratio <= high
        one_run += runs[0].holds(runs[3].interval.ratio)
    assert one_run / trials < 0.6
    assert 0.93 < predicted / trials <= 0.99
