"""Do several runs of one setup agree? Each run's ratio and interval, which runs' ratios each interval
holds, and how far the runs spread against what their rounds predict.

A run's interval comes from its rounds (analyze/intervals.py): it covers the noise between rounds, a
minute apart. Runs minutes or hours apart can differ by more: the shared machine drifts on a scale no
run's rounds see. Two figures tell the parts apart, on the log ratios (a one-way random-effects split):

- within: the rounds' pooled variance s_w² (each run's pairs around its own mean); from it alone the runs'
  ratios would spread with variance s_w² · mean(1/n_i);
- between: the variance s_m² of the runs' own log ratios; what exceeds the rounds' prediction,
  max(0, s_m² − s_w² · mean(1/n_i)), is what the runs differ by beyond their rounds: a drift between
  runs, or a round that ran apart by more than normal noise would (the figures cannot tell which).

Over k runs, each run taken as one estimate (the drift included, since each run drew its own), the ratio
is exp(mean ± t(k−1) · s / √k), and a next run of the same setup should land within
exp(mean ± t(k−1) · s · √(1 + 1/k)) (a 95 % prediction interval), where s is s_m or, where larger, the
rounds' prediction √(s_w² · mean(1/n_i)): runs that happen to land close together do not know the ratio
better than their rounds measured it. Even without drift, three runs' 95 %
intervals hold each other's ratios all six ways only about 61 % of the time, and one run's interval holds
the next run's ratio about 88 % of the time (normal log noise, 5 pairs each; tests/unit/test_agreement.py
simulates it): a run's interval is for the ratio, not for the next run's estimate.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rpcprof.analyze.intervals import RatioInterval, t975


@dataclass(frozen=True)
class RunRatio:
    label: str                   # the run (its folder's name)
    interval: RatioInterval      # the ratio and its 95 % interval, as the run printed it
    logs: list[float]            # its pairs' log ratios

    def holds(self, ratio: float) -> bool | None:
        i = self.interval
        return None if i.low is None else i.low <= ratio <= i.high


@dataclass(frozen=True)
class Agreement:
    runs: list[RunRatio]
    misses: list[tuple[str, str]]        # (run whose ratio, run whose interval does not hold it)
    checks: int                          # run-to-run checks made (runs with an interval x the others)
    within_sd: float | None              # the rounds' pooled sd of the log ratios
    expected_sd: float | None            # how far the runs' log ratios would spread from their rounds alone
    runs_sd: float | None                # how far they did spread (sd of the runs' log ratios)
    between_sd: float | None             # how far the runs differ beyond their rounds' spread (0 when not)
    over_runs: RatioInterval | None      # each run one estimate: the mean over runs and its 95 % interval
    next_run: tuple[float, float] | None  # 95 % prediction interval for a next run's ratio

    def as_dict(self) -> dict:
        return {"runs": [{"run": r.label, **r.interval.as_dict(), "pairs": len(r.logs)} for r in self.runs],
                "misses": [{"ratio_of": a, "outside_interval_of": b} for a, b in self.misses], "checks": self.checks,
                "within_sd": self.within_sd, "expected_sd": self.expected_sd, "runs_sd": self.runs_sd,
                "between_sd": self.between_sd, "over_runs": self.over_runs.as_dict() if self.over_runs else None,
                "next_run": list(self.next_run) if self.next_run else None}


def agreement(runs: list[RunRatio]) -> Agreement:
    """The figures above for runs of one setup (each with its ratio, interval and pairs)."""
    misses, checks = [], 0
    for a in runs:
        for b in runs:
            if a is not b and b.holds(a.interval.ratio) is not None:
                checks += 1
                if not b.holds(a.interval.ratio):
                    misses.append((a.label, b.label))
    within = [r.logs for r in runs if len(r.logs) >= 2]
    df = sum(len(x) - 1 for x in within)
    within_var = sum((len(x) - 1) * statistics.variance(x) for x in within) / df if df else None
    means = [math.log(r.interval.ratio) for r in runs]
    k = len(means)
    expected_var = (within_var * statistics.fmean(1 / len(r.logs) for r in runs)
                    if within_var is not None and all(r.logs for r in runs) else None)
    runs_var = statistics.variance(means) if k >= 2 else None
    over = next_run = None
    if runs_var is not None:
        # the runs' spread, or the rounds' prediction of it where larger: a few runs that happen to land close
        # together do not know the ratio better than their rounds measured it
        sd = math.sqrt(max(runs_var, expected_var or 0.0))
        mean, t = statistics.fmean(means), t975(k - 1)
        half = t * sd / math.sqrt(k)
        over = RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), k)
        spread = t * sd * math.sqrt(1 + 1 / k)
        next_run = (math.exp(mean - spread), math.exp(mean + spread))
    between = (math.sqrt(max(0.0, runs_var - expected_var))
               if runs_var is not None and expected_var is not None else None)
    return Agreement(runs, misses, checks, None if within_var is None else math.sqrt(within_var),
                     None if expected_var is None else math.sqrt(expected_var),
                     None if runs_var is None else math.sqrt(runs_var), between, over, next_run)
