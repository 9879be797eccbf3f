"""A run's profiles read as breakdowns by category, each server with its own app pattern: the first
round's per server (run_breakdowns), each round's with its unprofiled CPU µs per request (round_breakdowns),
and every round's stacks together, in samples (every_round).
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.categorize import Breakdown, Rules, open_folded
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.folded import sample_weight
from rpcprof.records import round_of, round_rows
from rpcprof.rundir import load_run, profile_folded
from rpcprof.status import MEASURED


def run_breakdowns(run_dir: Path, rules: Rules, app_override: str | None = None) -> dict[str, Breakdown]:
    """Breakdown per profiled server of a run, with each server's own app pattern."""
    manifest, metrics = load_run(run_dir)
    out = {}
    for name in manifest["parameters"]["servers"]:
        m = metrics.get(name) or {}
        folded = profile_folded(run_dir, name)
        if m.get("status") not in MEASURED or not folded.exists() or not folded.stat().st_size:
            continue
        r = rules.with_app(app_override or m.get("app"), "--app" if app_override else f"{name}'s app pattern")
        out[name] = categorize_file(folded, r)
    return out


def round_breakdowns(run_dir: Path, rules: Rules, metrics: dict, name: str,
                     app_override: str | None = None) -> dict[int, tuple[float, Breakdown]]:
    """{round: (its unprofiled CPU µs per request, its profile's breakdown)} for the rounds of a server
    that each had a profile window (runs made before every round had one: only the first)."""
    m = metrics[name]
    r = rules.with_app(app_override or m.get("app"), "--app" if app_override else f"{name}'s app pattern")
    out = {}
    for row in round_rows(m):
        folded = profile_folded(run_dir, name, round_of(row))
        if row.get("cpu_us_per_req") and folded.exists() and folded.stat().st_size:
            out[round_of(row)] = (row["cpu_us_per_req"], categorize_file(folded, r))
    return out


def every_round(run_dir: Path, name: str, m: dict) -> list:
    """The stacks of every round's profile of a server, together, weighted in samples (a ruler's share
    needs every sample it can get; rounds may have sampled at different rates, so each round's weights
    are divided by its own sample period); runs whose later rounds had no profile: the first round's."""
    rounds = []
    for k in [round_of(r) for r in round_rows(m)] or [1]:
        folded = profile_folded(run_dir, name, k)
        if folded.exists() and folded.stat().st_size:
            rounds.append(open_folded(folded))
    if len(rounds) == 1:
        return rounds[0]
    return [(frames, w // sample_weight(stacks)) for stacks in rounds for frames, w in stacks]
