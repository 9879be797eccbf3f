"""A run's profiles read as breakdowns by category, each server with its own app pattern: the first
round's per server (run_breakdowns), each round's with its unprofiled CPU µs per request (round_breakdowns),
and every round's stacks together, in samples (every_round). The caller names the profiles, from the run
folder (rundir.py's profile_folded, for the rounds round_numbers gives); a profile missing or empty is left out.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.categorize import Breakdown, Rules, open_folded
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.folded import sample_weight
from rpcprof.records import round_of, round_rows
from rpcprof.status import MEASURED


def round_numbers(m: dict) -> list[int]:
    """The rounds of one server's result, oldest first: its rounds, or 1 for a result of one measurement."""
    return [round_of(r) for r in round_rows(m)] or [1]


def _profiled(folded: Path | None) -> bool:
    return folded is not None and folded.exists() and folded.stat().st_size > 0


def run_breakdowns(profiles: dict[str, Path], metrics: dict, rules: Rules,
                   app_override: str | None = None) -> dict[str, Breakdown]:
    """Breakdown per profiled server of a run (profiles: each server's first-round profile, in the run's
    order), with each server's own app pattern."""
    return {name: categorize_file(folded, rules.with_app(app_override or metrics[name].get("app"),
                                                         "--app" if app_override else f"{name}'s app pattern"))
            for name, folded in profiles.items()
            if (metrics.get(name) or {}).get("status") in MEASURED and _profiled(folded)}


def round_breakdowns(profiles: dict[int, Path], rules: Rules, m: dict, name: str,
                     app_override: str | None = None) -> dict[int, tuple[float, Breakdown]]:
    """{round: (its unprofiled CPU µs per request, its profile's breakdown)} for the rounds of a server (m:
    its result; profiles: {round: its profile}) that each had a profile window (runs made before every
    round had one: only the first)."""
    r = rules.with_app(app_override or m.get("app"), "--app" if app_override else f"{name}'s app pattern")
    return {round_of(row): (row["cpu_us_per_req"], categorize_file(profiles[round_of(row)], r)) for row in round_rows(m)
            if row.get("cpu_us_per_req") and _profiled(profiles.get(round_of(row)))}


def every_round(profiles: dict[int, Path]) -> list:
    """The stacks of every round's profile of a server ({round: its profile}, round_numbers' rounds) together, in
    samples (a ruler's share needs every sample; rounds may have sampled at different rates, so each round's weights
    are divided by its own sample period); runs whose later rounds had no profile: the first round's."""
    rounds = [open_folded(folded) for folded in profiles.values() if _profiled(folded)]
    if len(rounds) == 1:
        return rounds[0]
    periods = [sample_weight(stacks) for stacks in rounds]      # once a round: each stack's weight in its samples
    return [(frames, w // period) for stacks, period in zip(rounds, periods) for frames, w in stacks]
