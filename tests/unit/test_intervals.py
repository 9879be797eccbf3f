"""Ratio intervals from interleaved repeats, on known numbers."""
from __future__ import annotations

import math
import statistics

import pytest

from rpcprof.analyze.intervals import T975, cv, paired_ratio, precision_reached, server_ratio, t975


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
    shares its slot's speed; sequential (A A A, then B B B), B's repeats all run later and slower."""
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


def test_server_ratio_pairs_by_repeat_index_and_skips_missing_repeats():
    base = {"repeats": [{"repeat": 1, "started": "t1", "req_per_cpu_s": 10},
                        {"repeat": 2, "started": "t3", "req_per_cpu_s": 11},
                        {"repeat": 3, "started": "t5", "req_per_cpu_s": 9}]}
    other = {"repeats": [{"repeat": 1, "started": "t2", "req_per_cpu_s": 20},
                         {"repeat": 3, "started": "t6", "req_per_cpu_s": 18}]}
    r = server_ratio(base, other)
    assert r.n == 2 and r.ratio == pytest.approx(2.0)
    assert server_ratio({"repeat": 1, "req_per_cpu_s": 5}, {"repeat": 1, "req_per_cpu_s": 10}).ratio == 2.0


def test_repeats_measured_before_rounds_give_no_paired_interval():
    """Older runs measured one server's repeats after the other: their k-th repeats were not adjacent."""
    legacy = {"repeats": [{"repeat": 1, "req_per_cpu_s": 10}, {"repeat": 2, "req_per_cpu_s": 11}]}
    rounds = {"repeats": [{"repeat": 1, "started": "t2", "req_per_cpu_s": 20},
                          {"repeat": 2, "started": "t4", "req_per_cpu_s": 22}]}
    assert server_ratio(legacy, rounds) is None and server_ratio(rounds, legacy) is None


def test_precision_stop_rule():
    narrow = paired_ratio([100, 101, 99, 100], [200, 201, 199, 201])
    wide = paired_ratio([100, 120, 80], [200, 180, 230])
    assert narrow.half_width < 0.02 and wide.half_width > 0.05
    assert precision_reached([narrow], 0.05) is True
    assert precision_reached([narrow, wide], 0.05) is False
    assert precision_reached([paired_ratio([1.0], [2.0])], 0.05) is False     # one pair: no interval yet
    assert precision_reached([], 0.05) is False


def test_cv():
    assert cv([10, 10, 10]) == 0 and cv([1]) is None
    assert cv([9, 11]) == pytest.approx(statistics.stdev([9, 11]) / 10)
