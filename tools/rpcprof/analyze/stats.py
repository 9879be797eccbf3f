"""Latency statistics from per-request samples.

Percentiles use the nearest-rank method on the sorted samples (the value at rank ceil(p/100 * n)),
so every reported percentile is a latency that was really observed. Samples are kept as an exact
histogram of integer microseconds, so millions of requests cost little memory.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from fractions import Fraction
from itertools import accumulate

PERCENTILES = (50, 90, 95, 99, 99.9, 99.99)


class LatencyHistogram:
    """Exact counts of latencies in integer microseconds."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.n = 0

    def add(self, us: int, count: int = 1) -> None:
        self.counts[us] += count
        self.n += count

    def percentile(self, p: float) -> float:
        """Nearest-rank percentile in µs; NaN when empty."""
        if self.n == 0:
            return math.nan
        # exact arithmetic: in floats 99.9/100*1000 is 999.0000000000001, one rank too far
        rank = max(1, math.ceil(Fraction(str(p)) * self.n / 100))
        values = sorted(self.counts)
        i = bisect_left(list(accumulate(map(self.counts.__getitem__, values))), rank)
        return float(values[min(i, len(values) - 1)])

    def mean(self) -> float:
        return sum(v * c for v, c in self.counts.items()) / self.n if self.n else math.nan

    def stddev(self) -> float:
        """Population standard deviation in µs."""
        m = self.mean()
        return math.sqrt(sum(c * (v - m) ** 2 for v, c in self.counts.items()) / self.n) if self.n else math.nan

    def trimmed_mean(self, p: float = 99) -> float:
        """Mean of the samples at or below the p-th percentile (tm99 for p=99)."""
        if self.n == 0:
            return math.nan
        cut = self.percentile(p)
        kept = [(v, c) for v, c in self.counts.items() if v <= cut]
        return sum(v * c for v, c in kept) / sum(c for _, c in kept)

    def summary(self) -> dict:
        """Latency figures in milliseconds, keyed as in the metrics JSON."""
        if self.n == 0:
            return {"samples": 0}
        us = {"avg": self.mean(), **{f"p{p:g}".replace(".", "_"): self.percentile(p) for p in PERCENTILES},
              "tm99": self.trimmed_mean(99), "stddev": self.stddev(), "min": min(self.counts), "max": max(self.counts)}
        return {"samples": self.n, **{f"{k}_ms": v / 1000.0 for k, v in us.items()}}
