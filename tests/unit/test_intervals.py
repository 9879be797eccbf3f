"""Ratio intervals from interleaved rounds, on known numbers."""
from __future__ import annotations

import math
import statistics

import pytest

from reference_statistics import T975
from rpcprof.analyze.intervals import cv, median_interval, paired_ratio, pilot_of, rounds_needed, server_ratio, t975


def test_t_quantiles_are_the_tables():
    assert t975(1) == 12.706 and t975(4) == 2.776 and t975(30) == 2.042
    assert 1.96 < t975(60) < 2.042 and t975(1000) == pytest.approx(1.96, abs=0.003)
    assert list(T975) == sorted(T975, reverse=True)


def test_interval_of_known_pairs():
    a = [100.0, 102.0, 98.0, 101.0, 99.0]
    b = [200.0, 206.0, 194.0, 203.0, 197.0]
    logs = [math.log(y / x) for x, y in zip(a, b)]
    half = 2.776 * statistics.stdev(logs) / math.sqrt(5)
    r = paired_ratio(a, b)
    assert r.n == 5
    assert r.ratio == pytest.approx(math.exp(statistics.fmean(logs)))
    assert r.low == pytest.approx(math.exp(statistics.fmean(logs) - half))
    assert r.high == pytest.approx(math.exp(statistics.fmean(logs) + half))
    assert r.low < 2.0 < r.high and r.significant is True
    assert r.text() == f"^{r.ratio:.1f} [{r.low:.1f}-{r.high:.1f}]"


def test_a_drift_lands_in_a_sequential_ratio_but_not_in_interleaved_pairs():
    """The machine slows 3 % per measurement slot. B is truly 2x A. Interleaved (A B A B ...), each pair
    shares its slot's speed; sequential (A A A, then B B B), B's rounds all run later and slower."""
    speed = [1.0 - 0.03 * slot for slot in range(10)]
    interleaved_a = [100 * speed[2 * k] for k in range(5)]
    interleaved_b = [200 * speed[2 * k + 1] for k in range(5)]
    sequential_a = [100 * speed[k] for k in range(5)]
    sequential_b = [200 * speed[5 + k] for k in range(5)]
    inter = paired_ratio(interleaved_a, interleaved_b)
    seq = paired_ratio(sequential_a, sequential_b)
    assert abs(inter.ratio / 2 - 1) < 0.04          # one slot of drift at most
    assert abs(seq.ratio / 2 - 1) > 0.15            # five slots of drift
    assert not (seq.low <= 2.0 <= seq.high)         # and the interval does not even hold the truth


def test_an_interval_containing_one_is_not_significant():
    r = paired_ratio([100, 100, 100, 100], [104, 97, 101, 99])
    assert r.low < 1 < r.high and r.significant is False


def test_one_pair_gives_a_ratio_without_interval():
    r = paired_ratio([100.0], [150.0])
    assert r.ratio == pytest.approx(1.5) and r.low is None and r.significant is None and r.text() == "^1.5"


def test_server_ratio_pairs_by_round_and_skips_missing_rounds():
    base = {"repeats": [{"repeat": 1, "started": "t1", "req_per_cpu_s": 10},
                        {"repeat": 2, "started": "t3", "req_per_cpu_s": 11},
                        {"repeat": 3, "started": "t5", "req_per_cpu_s": 9}]}
    other = {"repeats": [{"repeat": 1, "started": "t2", "req_per_cpu_s": 20},
                         {"repeat": 3, "started": "t6", "req_per_cpu_s": 18}]}
    r = server_ratio(base, other)
    assert r.n == 2 and r.ratio == pytest.approx(2.0)
    assert server_ratio({"repeat": 1, "req_per_cpu_s": 5}, {"repeat": 1, "req_per_cpu_s": 10}).ratio == 2.0


def test_measurements_made_before_rounds_give_no_paired_interval():
    """Older runs measured one server's measurements after the other: their k-th ones were not adjacent."""
    legacy = {"repeats": [{"repeat": 1, "req_per_cpu_s": 10}, {"repeat": 2, "req_per_cpu_s": 11}]}
    rounds = {"repeats": [{"repeat": 1, "started": "t2", "req_per_cpu_s": 20},
                          {"repeat": 2, "started": "t4", "req_per_cpu_s": 22}]}
    assert server_ratio(legacy, rounds) is None and server_ratio(rounds, legacy) is None


def test_two_stage_rounds_and_interval_on_known_pairs():
    pilot = [[0.10, 0.14, 0.06]]                      # sd 0.04
    need = math.ceil((t975(2) * 0.04 / math.log(1.05)) ** 2)
    assert rounds_needed(pilot, 0.05) == need == 13
    assert rounds_needed([[0.1, 0.1, 0.1]], 0.05) == 3       # no spread: the pilot is enough
    a = [100.0] * 5
    b = [100 * math.exp(x) for x in (0.10, 0.14, 0.06, 0.11, 0.09)]
    r = paired_ratio(a, b, pilot=3)
    logs = [0.10, 0.14, 0.06, 0.11, 0.09]
    half = t975(2) * statistics.stdev(logs[:3]) / math.sqrt(5)    # the pilot's spread, every pair's mean
    assert r.n == 5 and r.ratio == pytest.approx(math.exp(statistics.fmean(logs)))
    assert math.log(r.high / r.ratio) == pytest.approx(half)
    assert pilot_of({"precision": 0.05, "repeat": 1}) == 3 and pilot_of({"precision": 0.05, "repeat": 5}) == 5
    assert pilot_of({"precision": None, "repeat": 5}) is None


def _covers(sigma: float, target: float, rng, two_stage: bool, budget: int = 60) -> bool:
    """One simulated --precision run of one ratio (true log ratio 0, normal log noise sigma): covered?"""
    logs = [rng.gauss(0.0, sigma) for _ in range(3)]
    if two_stage:
        n = min(rounds_needed([logs], target), budget)
        logs += [rng.gauss(0.0, sigma) for _ in range(n - 3)]
        r = paired_ratio([1.0] * n, [math.exp(x) for x in logs], pilot=3)
    else:                                   # the old rule: stop as soon as the interval looks narrow enough
        r = paired_ratio([1.0] * 3, [math.exp(x) for x in logs])
        while r.half_width > target and len(logs) < budget:
            logs.append(rng.gauss(0.0, sigma))
            r = paired_ratio([1.0] * len(logs), [math.exp(x) for x in logs])
    return r.low <= 1.0 <= r.high


@pytest.mark.parametrize("sigma", [0.02, 0.05, 0.08, 0.10])
@pytest.mark.slow
def test_two_stage_precision_keeps_its_95_percent_promise(sigma):
    """--precision 5 %: the interval it ends on covers the true ratio in >= 94 % of simulated runs, for
    log noise up to 0.10 (and with the time budget cutting the rounds short); stopping on the observed
    interval (the rule before) does not."""
    import random
    rng = random.Random(20261124 + int(sigma * 1000))
    trials = 3000
    covered = sum(_covers(sigma, 0.05, rng, two_stage=True) for _ in range(trials)) / trials
    assert covered >= 0.94, covered
    if sigma >= 0.05:
        old = sum(_covers(sigma, 0.05, rng, two_stage=False) for _ in range(trials)) / trials
        assert old < 0.935, old


def test_cv():
    assert cv([10, 10, 10]) == 0 and cv([1]) is None
    assert cv([9, 11]) == pytest.approx(statistics.stdev([9, 11]) / 10)


@pytest.mark.parametrize("n", range(1, 31))
def test_the_interval_of_a_median_is_the_widest_pair_of_order_statistics_scipys_binomial_gives_95_percent(n):
    from scipy.stats import binom
    values = [float(v) for v in range(n, 0, -1)]            # any order: 1..n, so a value is its rank
    # k-th lowest to k-th highest covers the median with 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2)
    covering = [k for k in range(1, n // 2 + 1) if 1 - 2 * binom.cdf(k - 1, n, 0.5) >= 0.95]
    assert median_interval(values) == ((max(covering), n + 1 - max(covering)) if covering else None)
    assert (median_interval(values) is None) == (n < 6)
