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

setup_agreement makes these figures of runs of one setup, pair by pair; earlier_peers chooses the runs a new one is
set beside (report/agreement.py reads the runs from their folders, and writes both).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable

from rpcprof.analyze.intervals import RatioInterval, log_ratios, pilot_of, server_ratio, t975
from rpcprof.errors import UserError
from rpcprof.status import Status


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
    held = [(a, b, b.holds(a.interval.ratio)) for a in runs for b in runs if a is not b]     # None: b has no interval
    checks = sum(h is not None for _, _, h in held)
    misses = [(a.label, b.label) for a, b, h in held if h is not None and not h]
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
        sd = math.sqrt(max(runs_var, expected_var or 0.0))
        mean, t = statistics.fmean(means), t975(k - 1)
        half = t * sd / math.sqrt(k)
        over = RatioInterval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), k)
        spread = t * sd * math.sqrt(1 + 1 / k)
        next_run = (math.exp(mean - spread), math.exp(mean + spread))
    between = max(0.0, runs_var - expected_var) if runs_var is not None and expected_var is not None else None
    return Agreement(runs, misses, checks, *(None if v is None else math.sqrt(v)
                                             for v in (within_var, expected_var, runs_var, between)), over, next_run)


# --- runs of one setup ----------------------------------------------------------------------------

# what makes two runs one setup: the same load on the same CPUs for the same windows
SETUP = ("scenario", "driver", "connections", "streams", "duration", "warmup", "server_cpus", "load_cpus", "params",
         "idle")
LATER = {"idle": "halt"}    # keys added since runs were first published: what runs without them did


def setup_value(parameters: dict, key: str):
    """A run's setting, with what a run from before the key existed did."""
    return parameters.get(key, LATER.get(key))


def _ok(metrics: dict, server: str) -> dict | None:
    m = metrics.get(server) or {}
    return m if m.get("status") == Status.OK and m.get("req_per_cpu_s") else None


def setup_agreement(loaded: list[tuple[str, dict, dict]]) -> tuple[dict, dict[str, Agreement], dict[str, str]]:
    """(the setup's parameters, {"B vs A": Agreement}, {run: when it started}) for every server measured
    in every run ((its folder's name, manifest, metrics) each), over the first server of the first run.
    UserError when fewer than two runs are given, the runs are not of one setup or share no pair."""
    if len(loaded) < 2:
        raise UserError("runs: give two run folders or more (of one setup: same servers, load and windows)")
    first_name, first, _ = loaded[0]
    p0 = first["parameters"]
    for name, manifest, _ in loaded[1:]:
        p = manifest["parameters"]
        for key in SETUP:
            if setup_value(p, key) != setup_value(p0, key):
                raise UserError(f"runs: {name} differs from {first_name} in {key} ({setup_value(p, key)!r} "
                                f"against {setup_value(p0, key)!r}): compare runs of one setup")
    servers = [s for s in p0["servers"] if all(_ok(metrics, s) for _, _, metrics in loaded)]
    if len(servers) < 2:
        raise UserError("runs: no two servers were measured in every run given: nothing to compare")
    base = servers[0]
    out = {}
    for other in servers[1:]:
        ratios = []
        for name, manifest, metrics in loaded:
            a, b = _ok(metrics, base), _ok(metrics, other)
            interval = server_ratio(a, b, pilot=pilot_of(manifest["parameters"]))
            if interval is None:
                raise UserError(f"runs: {name} has no paired rounds of {base} and {other} (made before rounds): "
                                "compare runs made with --rounds")
            ratios.append(RunRatio(name, interval, log_ratios(a, b)))
        out[f"{other} vs {base}"] = agreement(ratios)
    started = {name: manifest.get("started") for name, manifest, _ in loaded}
    return {**{k: setup_value(p0, k) for k in SETUP}, "servers": servers}, out, started


EARLIER_HOURS = 24          # earlier runs taken beside a new one: of the last day,
EARLIER_MAX = 9             # at most this many, the latest


def _same_bench(a: dict, b: dict) -> bool:
    """Same setup, servers, machine and code (commit and uncommitted changes)."""
    pa, pb = a["parameters"], b["parameters"]
    machine = ("hostname", "cpu_model", "cpus", "kernel")
    return (all(setup_value(pa, k) == setup_value(pb, k) for k in SETUP) and pa.get("servers") == pb.get("servers")
            and all((a.get("machine") or {}).get(k) == (b.get("machine") or {}).get(k) for k in machine)
            and a.get("git") == b.get("git") and a.get("mode") == b.get("mode") == "run")


def earlier_peers(this: dict, candidates: Iterable[tuple[Path, dict | None]]) -> list[Path]:
    """Of candidates ((folder, its manifest or None where it could not be read), the latest first), the complete
    runs of the same setup, servers, machine and code as this (a run's manifest), started in the EARLIER_HOURS
    before it, the latest EARLIER_MAX, oldest first. Candidates are read no further than needed."""
    start = datetime.fromisoformat(this["started"])
    found = []
    for d, m in candidates:
        try:
            started = datetime.fromisoformat(m["started"])
        except (KeyError, TypeError, ValueError):
            continue                    # not a run folder, or one a reader cannot use: not this run's peer
        if start - started > timedelta(hours=EARLIER_HOURS):
            break
        if m.get("status") == Status.COMPLETE and _same_bench(this, m):
            found.append(d)
            if len(found) == EARLIER_MAX:
                break
    return found[::-1]
