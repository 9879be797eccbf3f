"""stats.LatencyHistogram against figures computed here, independently, from small known inputs."""
from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction

import pytest

from rpcprof.analyze.stats import PERCENTILES, LatencyHistogram

ONE_TO_HUNDRED = list(range(1, 101))
# Mostly fast, a few slow, one very slow: mean, tm99 and the high percentiles all differ.
SKEWED = [100] * 90 + [250] * 6 + [900] * 3 + [40_000]
SEEDED = [random.Random(7).randint(50, 5_000) for _ in range(997)]


def nearest_rank(values: list[int], p: float) -> int:
    """The sample at rank ceil(p/100 * n) of the sorted values, computed in exact arithmetic."""
    ordered = sorted(values)
    rank = max(1, math.ceil(Fraction(str(p)) * len(ordered) / 100))
    return ordered[rank - 1]


def histogram(values: list[int]) -> LatencyHistogram:
    h = LatencyHistogram()
    for v in values:
        h.add(v)
    return h


@pytest.mark.parametrize("values", [ONE_TO_HUNDRED, SKEWED, SEEDED], ids=["1..100", "skewed", "seeded"])
@pytest.mark.parametrize("p", PERCENTILES)
def test_percentile_is_the_nearest_rank_sample(values, p):
    assert histogram(values).percentile(p) == nearest_rank(values, p)


def test_percentiles_of_one_to_hundred_are_the_ranks_themselves():
    h = histogram(ONE_TO_HUNDRED)
    assert [h.percentile(p) for p in (1, 50, 90, 95, 99, 99.9, 100)] == [1, 50, 90, 95, 99, 100, 100]


@pytest.mark.parametrize("p", [0.01, 33.3, 50, 66.7, 99, 99.9, 99.99])
def test_nearest_rank_percentile_is_an_observed_value(p):
    assert histogram(SEEDED).percentile(p) in set(SEEDED)


def test_percentile_zero_is_the_minimum_and_hundred_the_maximum():
    h = histogram(SKEWED)
    assert h.percentile(0) == min(SKEWED)
    assert h.percentile(100) == max(SKEWED)


def test_p99_9_of_a_thousand_samples_is_the_999th():
    assert histogram(list(range(1, 1001))).percentile(99.9) == 999


def test_adding_a_count_equals_adding_the_value_that_many_times():
    by_count, one_by_one = LatencyHistogram(), LatencyHistogram()
    by_count.add(250, 6)
    by_count.add(100, 90)
    for v in [100] * 90 + [250] * 6:
        one_by_one.add(v)
    assert by_count.counts == one_by_one.counts
    assert by_count.n == one_by_one.n == 96
    assert by_count.summary() == one_by_one.summary()


@pytest.mark.parametrize("values", [ONE_TO_HUNDRED, SKEWED, SEEDED], ids=["1..100", "skewed", "seeded"])
def test_mean_and_population_stddev_match_the_statistics_module(values):
    h = histogram(values)
    assert h.mean() == pytest.approx(statistics.fmean(values), rel=1e-12)
    assert h.stddev() == pytest.approx(statistics.pstdev(values), rel=1e-9)


def test_stddev_is_the_population_one_not_the_sample_one():
    # [2, 4, 4, 4, 5, 5, 7, 9]: population stddev 2, sample stddev 2.138...
    assert histogram([2, 4, 4, 4, 5, 5, 7, 9]).stddev() == pytest.approx(2.0)


@pytest.mark.parametrize("values", [ONE_TO_HUNDRED, SKEWED, SEEDED], ids=["1..100", "skewed", "seeded"])
def test_tm99_is_the_mean_of_samples_at_or_below_p99(values):
    cut = nearest_rank(values, 99)
    kept = [v for v in values if v <= cut]
    assert histogram(values).trimmed_mean(99) == pytest.approx(statistics.fmean(kept), rel=1e-12)


def test_tm99_drops_the_outlier_of_a_skewed_list():
    # p99 of SKEWED is 900 (rank 99); only the 40 ms outlier is above it.
    assert histogram(SKEWED).trimmed_mean(99) == pytest.approx((90 * 100 + 6 * 250 + 3 * 900) / 99)


def test_tm99_keeps_every_sample_equal_to_p99():
    # p99 is rank 99 = 7; the sample at rank 100 is also 7 and is at or below p99, so it counts.
    values = [1] * 98 + [7, 7]
    assert histogram(values).trimmed_mean(99) == pytest.approx(sum(values) / 100)


def test_empty_histogram_gives_nan_figures_and_only_a_sample_count():
    h = LatencyHistogram()
    for figure in (h.percentile(50), h.mean(), h.stddev(), h.trimmed_mean(99)):
        assert math.isnan(figure)
    assert h.summary() == {"samples": 0}


def test_summary_has_every_key_of_the_metrics_json_in_milliseconds():
    h = histogram(SKEWED)
    s = h.summary()
    assert set(s) == {"samples", "avg_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms", "p99_99_ms",
                      "tm99_ms", "stddev_ms", "min_ms", "max_ms"}
    assert s["samples"] == len(SKEWED)
    assert s["avg_ms"] == pytest.approx(statistics.fmean(SKEWED) / 1000)
    assert s["p50_ms"] == nearest_rank(SKEWED, 50) / 1000
    assert s["p90_ms"] == nearest_rank(SKEWED, 90) / 1000
    assert s["p95_ms"] == nearest_rank(SKEWED, 95) / 1000
    assert s["p99_ms"] == nearest_rank(SKEWED, 99) / 1000
    assert s["p99_9_ms"] == nearest_rank(SKEWED, 99.9) / 1000
    assert s["p99_99_ms"] == nearest_rank(SKEWED, 99.99) / 1000
    assert s["stddev_ms"] == pytest.approx(statistics.pstdev(SKEWED) / 1000)
    assert s["min_ms"] == min(SKEWED) / 1000
    assert s["max_ms"] == max(SKEWED) / 1000


def test_summary_percentiles_are_ordered():
    s = histogram(SEEDED).summary()
    chain = [s["min_ms"], s["p50_ms"], s["p90_ms"], s["p95_ms"], s["p99_ms"], s["p99_9_ms"], s["p99_99_ms"],
             s["max_ms"]]
    assert chain == sorted(chain)
    assert s["min_ms"] <= s["tm99_ms"] <= s["p99_ms"]
