"""Paces: did a server's rounds run at two speeds?

A shared host can move a server between two paces for minutes at a time (rust_tonic_mt at 27-31k and
41-45k req/s per CPU on one host, whole rounds at one or the other). Averaged, two paces widen the
ratio's interval and read as noise; named, they say which rounds ran where, what each pace costs, and
which categories changed between them.

The test. Each round gives one figure, x = ln(CPU µs per request). Sorted, the rounds are cut in two
at every place in turn; each cut gives the two-sample t of the groups' means (pooled variance, n - 2
degrees of freedom); the statistic is the largest of these t (the likelihood-ratio test of two equal-
variance normal groups against one). Under one pace with normal noise its distribution does not depend
on the noise's size, so one critical value per number of rounds serves every server: the 95th
percentile of the statistic over SIMULATIONS sets of n normal rounds (fixed seed: the same value every
time). Two paces are named when the statistic passes it AND the paces' CPU per request differ by at
least MIN_APART: a 3 % step between steady rounds is real but is not what a reader calls a pace.

What it can and cannot see (tests/unit/test_paces.py simulates both): one pace at any spread is named
two paces in under 5 % of runs; two paces 1.5x apart, each of 5 rounds landing in either at random, are
found in over 95 % of runs that caught both when the rounds within a pace spread by 2.5 %, about 77 %
at 4 % and 42 % at 6 %. With 5 rounds the spread inside the paces is estimated from 3 degrees of
freedom: more rounds (--repeat) are what sharpen it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

PACE_LEVEL = 0.95         # the test's level: one pace is named two in at most 5 % of runs
MIN_APART = 1.10          # ... and only when the paces' CPU per request differ by 10 % or more
MIN_ROUNDS = 4            # with 3 rounds the critical t is ~38: nothing short of a 2x jump passes
SIMULATIONS = 100_000
SEED = 20261126


def _max_split_t(rows):
    """The largest pooled two-sample t over the cuts of each sorted row (numpy array, rounds x n)."""
    import numpy as np
    x = np.sort(rows, axis=1)
    n = x.shape[1]
    best = np.full(x.shape[0], -np.inf)
    for i in range(1, n):
        a, b = x[:, :i], x[:, i:]
        ma, mb = a.mean(axis=1), b.mean(axis=1)
        ss = ((a - ma[:, None]) ** 2).sum(axis=1) + ((b - mb[:, None]) ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (mb - ma) / (np.sqrt(ss / (n - 2)) * math.sqrt(1 / i + 1 / (n - i)))
        best = np.maximum(best, np.where(np.isnan(t), -np.inf, t))
    return best


@lru_cache(maxsize=None)
def _null(n: int):
    """The statistic's distribution under one pace of n normal rounds, sorted."""
    import numpy as np
    rng = np.random.default_rng(SEED + n)
    return np.sort(_max_split_t(rng.standard_normal((SIMULATIONS, n))))


def critical_t(n: int, level: float = PACE_LEVEL) -> float:
    """The statistic's `level` quantile for n rounds of one pace."""
    null = _null(n)
    return float(null[min(len(null) - 1, int(math.ceil(level * len(null))) - 1)])


def p_value(t: float, n: int) -> float:
    """The share of one-pace simulations whose statistic reaches t."""
    import numpy as np
    null = _null(n)
    return float((len(null) - np.searchsorted(null, t, side="left")) / len(null))


@dataclass(frozen=True)
class Paces:
    """Two paces of one server's rounds: which rounds ran in each, and what each cost."""
    fast: tuple[int, ...]        # rounds at the lower CPU per request
    slow: tuple[int, ...]
    fast_us: float               # geometric mean CPU µs per request of each pace's rounds
    slow_us: float
    t: float
    critical: float
    p: float

    @property
    def apart(self) -> float:
        return self.slow_us / self.fast_us

    def as_dict(self) -> dict:
        return {"fast_rounds": list(self.fast), "slow_rounds": list(self.slow), "fast_cpu_us_per_req": self.fast_us,
                "slow_cpu_us_per_req": self.slow_us, "apart": self.apart, "t": self.t, "critical_t": self.critical,
                "p": self.p, "test": f"largest split t of {len(self.fast) + len(self.slow)} sorted rounds, "
                f"{int(100 * PACE_LEVEL)} % level, paces {100 * (MIN_APART - 1):.0f} % apart or more"}


def split(values: dict[int, float]) -> tuple[float, tuple[int, ...], tuple[int, ...]] | None:
    """(the largest split t, the rounds below the cut, the rounds above) of {round: CPU µs per request};
    None with fewer than MIN_ROUNDS positive values or no spread inside the groups to weigh the cut by."""
    import numpy as np
    items = sorted((math.log(v), k) for k, v in values.items() if v and v > 0)
    n = len(items)
    if n < MIN_ROUNDS:
        return None
    x = np.array([v for v, _ in items])
    best, cut = -math.inf, None
    for i in range(1, n):
        a, b = x[:i], x[i:]
        ss = float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum())
        if ss <= 0:
            continue
        t = float(b.mean() - a.mean()) / (math.sqrt(ss / (n - 2)) * math.sqrt(1 / i + 1 / (n - i)))
        if t > best:
            best, cut = t, i
    if cut is None:
        return None
    rounds = [k for _, k in items]
    return best, tuple(sorted(rounds[:cut])), tuple(sorted(rounds[cut:]))


def find_paces(values: dict[int, float]) -> Paces | None:
    """Two paces when the rounds' CPU per request ({round: µs}) pass the test (module docstring), else None."""
    found = split(values)
    if found is None:
        return None
    t, low, high = found
    n = len(low) + len(high)
    crit = critical_t(n)

    def gmean(ks):
        return math.exp(sum(math.log(values[k]) for k in ks) / len(ks))
    fast_us, slow_us = gmean(low), gmean(high)
    if t <= crit or slow_us / fast_us < MIN_APART:
        return None
    return Paces(low, high, fast_us, slow_us, t, crit, p_value(t, n))
