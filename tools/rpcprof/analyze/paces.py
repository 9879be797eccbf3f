"""Paces: did a server's rounds run at two speeds?

A shared host can move a server between two paces for minutes at a time (rust_tonic_mt at 27-31k and
41-45k req/s per CPU on one host, whole rounds at one or the other). Averaged, two paces widen the
ratio's interval and read as noise; named, they say which rounds ran where, what each pace costs, and
which categories changed between them.

The test. Each round gives x = ln(CPU µs per request). Sorted, the rounds are cut in two at every place;
the statistic is the largest two-sample t over the cuts (pooled variance, n - 2 degrees of freedom: the
likelihood-ratio test of two equal-variance normal groups against one). Under one pace with normal noise
it does not depend on the noise's size, so its critical value per number of rounds is the 95th percentile
over SIMULATIONS sets of n normal rounds (fixed seed). Two paces are named when the statistic passes it
AND their CPU per request differ by at least MIN_APART (a 3 % step is real but is not a pace).

The noise inside a pace, from each round's time slices (analyze/timeline.py: CPU µs per request in 0.5 s
slices). With 5 rounds the rounds' spread inside the paces has 3 degrees of freedom, and a noisy host's
paces (rounds at 22-23 and 31-37 µs/req) pass for noise. A round's slices scatter about it, which says how
far its figure strays by chance (variance s²/m over m slices, pooled over the rounds: ~55 degrees of
freedom). When the rounds' spread inside the paces is no more than the slices account for (F below its
POOL_LEVEL quantile), the two estimates are pooled; the critical value is simulated as above for rounds
whose spread is their slices' noise, so that one pace is named two in at most 5 % of runs by either
branch. Otherwise, and for rounds without slices (runs made before the timeline), the rounds' spread alone
decides.

What it can and cannot see (tests/unit/test_paces.py simulates both): one pace at any spread is named two
in at most 5 % of runs; two paces 1.5x apart, 5 rounds landing in either at random, are found in over 95 %
of runs that caught both at a 2.5 % spread within a pace, about 77 % at 4 % and 42 % at 6 %; rounds at 22,
23, 31, 34 and 37 µs/req whose slices scatter as rust_tonic_mt's did on a noisy host (sd 24 %) are named
two paces in over 80 % of runs, which the rounds' spread alone never names. The cost: rounds that drift
between rounds by a little more than their slices say are pooled and named two paces too often (at a 6 %
spread of which a quarter to a half is the slices' noise, in a quarter to a third of runs). More rounds
(--rounds) sharpen the pretest as well as the test.

Within a run: each server's paces (server_paces), the ratio within each pace (pace_ratios) and each
category's change between the paces from each round's own profile (pace_categories), tested as report.py
diff tests two sets of rounds (Welch's t, each round's sampling variance the floor under its spread,
Benjamini-Hochberg at 5 %). report/summary.py says them in words.
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
POOL_LEVEL = 0.75        # the slices' noise is pooled unless the rounds spread beyond it at the 25 % level
MIN_PACE_ROUNDS = 2       # a pace's ratio needs this many rounds of it (an interval needs two pairs)


@lru_cache(maxsize=None)
def _null(n: int):
    """The statistic's distribution under one pace of n normal rounds, sorted: the largest pooled two-sample t
    over the cuts of each simulation's sorted rounds."""
    import numpy as np
    x = np.sort(np.random.default_rng(SEED + n).standard_normal((SIMULATIONS, n)), axis=1)
    gap, ss, k = _cuts(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = gap / (np.sqrt(ss / (n - 2)) * k)
    return np.sort(np.where(np.isnan(t), -np.inf, t).max(axis=0))


@lru_cache(maxsize=None)
def _pooled_null(n: int, df: int):
    """One pace of n rounds whose spread is their slices' noise alone (df degrees of freedom), simulated:
    (the pooled statistic of the simulations that pass the pretest, sorted; the share of simulations that
    fail it and pass the rounds' own test)."""
    import numpy as np
    rng = np.random.default_rng(SEED + 1000 * n + df)
    x = np.sort(rng.standard_normal((SIMULATIONS, n)), axis=1)
    w = rng.chisquare(df, SIMULATIONS) / df
    gap, ss, k = _cuts(x)
    best = np.argmax(gap / np.sqrt(ss / (n - 2)) / k, axis=0)[None]      # the cut split() takes
    gap, ss, k = (np.take_along_axis(c, best, axis=0)[0] for c in (gap, ss, k))
    pooled = ss / (n - 2) / w < pool_below(n, df)
    alone = float(np.mean(~pooled & (gap / np.sqrt(ss / (n - 2)) / k > critical_t(n))))
    return np.sort((gap / np.sqrt((ss + df * w) / (n - 2 + df)) / k)[pooled]), alone


def _reaching(null, t: float) -> float:
    """The share of the SIMULATIONS whose statistic (null: those kept, sorted) reaches t."""
    import numpy as np
    return (len(null) - np.searchsorted(null, t, side="left")) / SIMULATIONS


def _cut_terms(a, b):
    """(gap of means, within sum of squares, sqrt(1/na + 1/nb)) of the groups a and b (rows are runs)."""
    import numpy as np
    ma, mb = a.mean(axis=-1), b.mean(axis=-1)
    ss = ((a - ma[..., None]) ** 2).sum(axis=-1) + ((b - mb[..., None]) ** 2).sum(axis=-1)
    return mb - ma, ss, np.full(np.shape(ma), math.sqrt(1 / a.shape[-1] + 1 / b.shape[-1]))


def _cuts(x):
    """_cut_terms of every cut of x (sorted along its last axis) into the values below it and above, the cuts first."""
    import numpy as np
    return (np.stack(c) for c in zip(*(_cut_terms(x[..., :i], x[..., i:]) for i in range(1, x.shape[-1]))))


@lru_cache(maxsize=None)
def pool_below(n: int, df: int) -> float:
    """The pretest: the rounds' spread inside the paces over their slices' is pooled with the slices' below
    F's POOL_LEVEL quantile (n - 2 and df degrees of freedom)."""
    from scipy.special import fdtri     # what scipy.stats.f.ppf computes, without importing scipy.stats (a second)
    return float(fdtri(n - 2, df, POOL_LEVEL))


def critical_t(n: int) -> float:
    """The statistic's PACE_LEVEL quantile for n rounds of one pace."""
    null = _null(n)
    return float(null[min(len(null) - 1, int(math.ceil(PACE_LEVEL * len(null))) - 1)])


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
    slices: int = 0              # the time slices whose noise was pooled with the rounds' (0: the rounds' alone)

    @property
    def apart(self) -> float:
        return self.slow_us / self.fast_us

    def as_dict(self) -> dict:
        noise = f", the noise pooled from the rounds and their {self.slices} slices" if self.slices else ""
        return {"fast_rounds": list(self.fast), "slow_rounds": list(self.slow), "fast_cpu_us_per_req": self.fast_us,
                "slow_cpu_us_per_req": self.slow_us, "apart": self.apart, "t": self.t, "critical_t": self.critical,
                "p": self.p, "slices": self.slices, "test": f"largest split t of {len(self.fast) + len(self.slow)} "
                f"sorted rounds, {int(100 * PACE_LEVEL)} % level, paces {100 * (MIN_APART - 1):.0f} % apart or more{noise}"}


def split(values: dict[int, float]) -> tuple[float, tuple[int, ...], tuple[int, ...]] | None:
    """(the largest split t, the rounds below the cut, the rounds above) of {round: CPU µs per request};
    None with fewer than MIN_ROUNDS positive values or no spread inside the groups to weigh the cut by."""
    import numpy as np
    items = sorted((math.log(v), k) for k, v in values.items() if v and v > 0)
    n = len(items)
    if n < MIN_ROUNDS:
        return None
    x = np.array([v for v, _ in items])
    gap, ss, k = _cuts(x)
    if not (ss > 0).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ss > 0, gap / (np.sqrt(ss / (n - 2)) * k), -np.inf)
    cut = int(np.argmax(t)) + 1         # the first cut with the largest t
    rounds = [k for _, k in items]
    return float(t[cut - 1]), tuple(sorted(rounds[:cut])), tuple(sorted(rounds[cut:]))


def slice_noise(slices: dict[int, list[float]], rounds) -> tuple[float, int] | None:
    """(the variance of a round's ln CPU µs/req from its slices' scatter alone, its degrees of freedom) over
    `rounds`, from {round: its slices' CPU µs per request}; None unless every round has 2 or more and they scatter."""
    ys = [[math.log(v) for v in slices.get(k) or [] if v and v > 0] for k in rounds]
    if any(len(y) < 2 for y in ys):
        return None
    df = sum(len(y) - 1 for y in ys)
    within = sum(sum((v - statistics.fmean(y)) ** 2 for v in y) for y in ys) / df
    return (within * statistics.fmean(1 / len(y) for y in ys), df) if within > 0 else None


def find_paces(values: dict[int, float], slices: dict[int, list[float]] | None = None) -> Paces | None:
    """Two paces when the rounds' CPU per request ({round: µs}) pass the test (module docstring), else None;
    slices: {round: CPU µs per request of each of its time slices}, where recorded."""
    import numpy as np
    if (found := split(values)) is None:
        return None
    _, low, high = found
    n = len(low) + len(high)
    x = {k: math.log(values[k]) for k in low + high}
    gap, ss, k = (float(v) for v in _cut_terms(*(np.array([x[r] for r in g]) for g in (low, high))))
    t, crit, used = gap / (math.sqrt(ss / (n - 2)) * k), critical_t(n), 0
    p = float(_reaching(_null(n), t))
    noise = slice_noise(slices, low + high) if slices else None
    if noise and ss / (n - 2) / noise[0] < pool_below(n, noise[1]):
        var, df = noise
        t = gap / (math.sqrt((ss + df * var) / (n - 2 + df)) * k)
        null, alone = _pooled_null(n, df)
        # the critical value: one pace of n rounds (their slices' noise, df) is named two, by either branch of
        # the test, in at most 1 - PACE_LEVEL of runs
        room = int((1 - PACE_LEVEL - alone) * SIMULATIONS)
        crit, p, used = float(null[max(0, len(null) - room - 1)]), float(_reaching(null, t) + alone), df + n
    fast_us, slow_us = (math.exp(sum(x[k] for k in ks) / len(ks)) for ks in (low, high))
    if t <= crit or slow_us / fast_us < MIN_APART:
        return None
    return Paces(low, high, fast_us, slow_us, t, crit, p, used)


# --- the paces of a run's servers -------------------------------------------------------------------

def server_paces(result: dict) -> Paces | None:
    """The two paces of one server's rounds (CPU µs per request of the unprofiled windows), or None."""
    if not result or result.get("status") != Status.OK:
        return None
    slices = {round_of(r): (r.get("timeline") or {}).get("cpu_us_per_req") for r in round_rows(result)}
    return find_paces(figure_by_round(result, "cpu_us_per_req"), slices)


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
            out.append({"pair": f"{b} vs {a}", "pace_of": server, "pace": pace, "rounds": common,
                        "ratio": paired_ratio([ra[k] for k in common], [rb[k] for k in common]).as_dict()})
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
        for g, s in list(shares.items()):
            if (parent := level2.parent(g)) != g:
                shares[parent] = shares.get(parent, 0.0) + s
        out[round_of(row)] = ({g: s * us for g, s in shares.items()},
                              {g: sampling_variance(s, b.samples, us) for g, s in shares.items()})
    return out


def pace_categories(profiles: dict[int, Path], rules: Rules, result: dict, name: str, p: Paces) -> list[dict]:
    """Each category and level-2 group: its CPU µs/req in the slow pace minus the fast, from each round's profile
    ({round: its profile}), Welch's t across the paces' rounds, Benjamini-Hochberg over every group tested; [] when
    the rounds lack profiles. A pace of one round gives point estimates with no test (significant None)."""
    if not (values := _group_values(profiles, rules, result, name)):
        return []
    rows = []
    for g in sorted({g for v, _ in values.values() for g in v}):
        (fast, floor_fast), (slow, floor_slow) = (
            ([values[k][0].get(g, 0.0) for k in ks if k in values],
             statistics.fmean(values[k][1].get(g, 0.0) for k in ks if k in values)) for ks in (p.fast, p.slow))
        gap = welch_gap(fast, slow, floor_fast, floor_slow)
        rows.append({"group": g, "level": 2 if "/" in g else 1, "fast_us": statistics.fmean(fast),
                     "slow_us": statistics.fmean(slow), "delta_us": gap.delta, "half": gap.half, "p": gap.p,
                     "significant": None})
    tested = [r for r in rows if r["p"] is not None]
    for r, found in zip(tested, benjamini_hochberg([r["p"] for r in tested])):
        r["significant"] = found
    return rows
