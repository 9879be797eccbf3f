"""CPU µs per request of a profile that has no run folder (a fleet's pprof, a folded file), from the request
count the user gives (`--requests N`, e.g. from the service's request metrics over the profile's window):
its CPU nanoseconds over N. Inside a run folder the unprofiled window measures the CPU instead
(report.py compare); here the profile's own weights are the CPU, as its profiler sampled it. What the weights
are (CPU nanoseconds, or samples counted) the caller gives: rpcprof/folded.py's weight_unit, which report.py export
also labels them with.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.errors import UserError


def requests_per_profile(requests: tuple[int, ...], profiles: tuple[Path, ...] | list[Path]) -> list[int | None]:
    """The request count of each profile (--requests once per profile, in their order), or None for each."""
    if not requests:
        return [None] * len(profiles)
    if len(requests) != len(profiles):
        raise UserError(f"--requests given {len(requests)} time(s) for {len(profiles)} profile(s): give one request "
                        "count per profile, in their order")
    return list(requests)


def cpu_us_per_req(profile: Path, weights: tuple[str, str], total_weight: int, requests: int) -> float:
    """CPU µs per request: the profile's weights (total_weight: their sum; weights: their kind, as rpcprof/folded.py's
    weight_unit gives it) in CPU nanoseconds over the requests; UserError when they are not CPU time."""
    kind, unit = weights
    if (kind, unit) != ("cpu", "nanoseconds"):
        raise UserError(f"{profile}: --requests needs weights in CPU nanoseconds and this profile's are {kind}/{unit}: "
                        "give a pprof CPU profile (cpu/nanoseconds) or perf's profile.folded inside its run folder")
    return total_weight / 1e3 / requests
