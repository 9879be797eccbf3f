"""Least-squares straight lines: slope, intercept and R², for checking that a cost grows linearly
with a knob (tests/live/test_perturbation.py, bench/perturb.sh).

The line is `statistics.linear_regression` (ordinary least squares of y on x). R² is the share of
y's variance around its mean that the line explains, 1 - SS_res / SS_tot: 1 for points on a line,
0 for a line no better than the mean. It is undefined (NaN) when every y is the same.
Pure functions, no numpy.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class LinearFit:
    slope: float
    intercept: float
    r2: float           # NaN when y does not vary
    n: int              # points fitted

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x

    def __str__(self) -> str:
        return f"y = {self.slope:.4g}·x {'-' if self.intercept < 0 else '+'} {abs(self.intercept):.4g} " \
               f"(R² {self.r2:.3f}, {self.n} points)"


def r_squared(xs: Sequence[float], ys: Sequence[float], slope: float, intercept: float) -> float:
    """1 - SS_res / SS_tot of the line y = intercept + slope·x over the points; NaN if y is constant."""
    mean = statistics.fmean(ys)
    ss_tot = math.fsum((y - mean) ** 2 for y in ys)
    if ss_tot == 0:
        return math.nan
    ss_res = math.fsum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    return 1.0 - ss_res / ss_tot


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """The least-squares line through (xs[i], ys[i]). Needs two points or more and x that varies."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys):
        raise ValueError(f"linear_fit: {len(xs)} x values but {len(ys)} y values")
    if len(xs) < 2:
        raise ValueError("linear_fit: needs at least two points")
    if min(xs) == max(xs):
        raise ValueError("linear_fit: x must take at least two different values")
    slope, intercept = statistics.linear_regression(xs, ys)
    return LinearFit(slope, intercept, r_squared(xs, ys, slope, intercept), len(xs))
