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
freedom: more rounds (--rounds) are what sharpen it.

Within a run: each server's paces (server_paces), the ratio within each pace (pace_ratios) and each
category's change between the paces from each round's own profile (pace_categories), tested as report.py
diff tests two sets of rounds: Welch's t across rounds, each round's sampling variance the floor under its
spread, Benjamini-Hochberg at 5 % over every group tested. report/paces.py says them in words.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.intervals import figure_by_round, paired_ratio
from rpcprof.analyze.significance import benjamini_hochberg, sampling_variance, welch_gap
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.records import round_of, round_rows
from rpcprof.status import Status

PACE_LEVEL = 0.95         # the test's level: one pace is named two in at most 5 % of runs
MIN_APART = 1.10          # ... and only when the paces' CPU per request differ by 10 % or more
MIN_ROUNDS = 4            # with 3 rounds the critical t is ~38: nothing short of a 2x jump passes
SIMULATIONS = 100_000
SEED = 20261126
MIN_PACE_ROUNDS = 2       # a pace's ratio needs this many rounds of it (an interval needs two pairs)


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


# --- the paces of a run's servers -------------------------------------------------------------------

def server_paces(result: dict) -> Paces | None:
    """The two paces of one server's rounds (CPU µs per request of the unprofiled windows), or None."""
    if not result or result.get("status") != Status.OK:
        return None
    return find_paces(figure_by_round(result, "cpu_us_per_req"))


def pace_ratios(metrics: dict, order: list[str], server: str, p: Paces) -> list[dict]:
    """The ratio (req/s per CPU over the first server's) within each pace of `server` that has at least
    MIN_PACE_ROUNDS rounds, for every pair of the run that involves it."""
    names = [n for n in order if (metrics.get(n) or {}).get("status") == Status.OK]
    if len(names) < 2 or server not in names:
        return []
    base = names[0]
    pairs = [(base, server)] if server != base else [(base, o) for o in names[1:]]
    out = []
    for a, b in pairs:
        ra, rb = figure_by_round(metrics[a]), figure_by_round(metrics[b])
        for pace, rounds in (("fast", p.fast), ("slow", p.slow)):
            common = [k for k in rounds if k in ra and k in rb]
            if len(common) < MIN_PACE_ROUNDS:
                continue
            interval = paired_ratio([ra[k] for k in common], [rb[k] for k in common])
            out.append({"pair": f"{b} vs {a}", "pace_of": server, "pace": pace, "rounds": common,
                        "ratio": interval.as_dict()})
    return out


def _group_values(profiles: dict[int, Path], rules: Rules, result: dict,
                  name: str) -> dict[int, tuple[dict, dict]] | None:
    """{round: ({group: CPU µs/req}, {group: sampling variance})} at level 1 and 2 from each round's own
    profile; None when not every round had one (runs made before every round was profiled)."""
    level2 = rules.with_app(result.get("app"), f"{name}'s app pattern").using(level=2)
    out = {}
    for row in round_rows(result):
        folded = profiles.get(round_of(row))
        us = row.get("cpu_us_per_req")
        if not us or folded is None or not folded.exists() or not folded.stat().st_size:
            return None
        b = categorize_file(folded, level2)
        shares = {g: b.share(g) for g in level2.all_categories}
        for g in list(shares):
            parent = level2.parent(g)
            if parent != g:
                shares[parent] = shares.get(parent, 0.0) + shares[g]
        out[round_of(row)] = ({g: s * us for g, s in shares.items()},
                              {g: sampling_variance(s, b.samples, us) for g, s in shares.items()})
    return out


def pace_categories(profiles: dict[int, Path], rules: Rules, result: dict, name: str, p: Paces) -> list[dict]:
    """Each category and level-2 group: its CPU µs/req in the slow pace minus the fast, with Welch's t
    across the paces' rounds and Benjamini-Hochberg over every group tested, from each round's profile
    ({round: its profile}); [] when the rounds lack profiles. A pace of one round gives point estimates
    with no test (significant None)."""
    values = _group_values(profiles, rules, result, name)
    if not values:
        return []
    groups = sorted({g for v, _ in values.values() for g in v})
    rows = []
    for g in groups:
        fast = [values[k][0].get(g, 0.0) for k in p.fast if k in values]
        slow = [values[k][0].get(g, 0.0) for k in p.slow if k in values]
        floor_fast = statistics.fmean(values[k][1].get(g, 0.0) for k in p.fast if k in values)
        floor_slow = statistics.fmean(values[k][1].get(g, 0.0) for k in p.slow if k in values)
        gap = welch_gap(fast, slow, floor_fast, floor_slow)
        rows.append({"group": g, "level": 2 if "/" in g else 1, "fast_us": statistics.fmean(fast),
                     "slow_us": statistics.fmean(slow), "delta_us": gap.delta, "half": gap.half, "p": gap.p})
    tested = [r for r in rows if r["p"] is not None]
    for r, found in zip(tested, benjamini_hochberg([r["p"] for r in tested])):
        r["significant"] = found
    for r in rows:
        r.setdefault("significant", None)
    return rows
