"""CPU µs per request of a profile that has no run folder (a fleet's pprof, a folded file), from the request
count the user gives (`--requests N`, e.g. from the service's request metrics over the profile's window):
its CPU nanoseconds over N. Inside a run folder the unprofiled window measures the CPU instead
(report.py compare); here the profile's own weights are the CPU, as its profiler sampled it. What the weights
are (CPU nanoseconds, or samples counted) is weight_unit's, which report.py export also labels them with.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.pprof_in import is_pprof, sample_type_of
from rpcprof.rundir import read_profile


def weight_unit(folded: Path) -> tuple[str, str]:
    """(sample type, unit) of a folded file's weights: ("cpu", "nanoseconds") for perf, else ("samples", "count");
    for a pprof profile, the sample type its weights were read as."""
    if is_pprof(folded):
        return sample_type_of(folded)
    try:
        prof = read_profile(Path(folded).parent)
    except UserError:
        prof = {}
    if prof.get("profiler") == "perf" or "period in ns" in str(prof.get("weight", "")):
        return "cpu", "nanoseconds"
    return "samples", "count"


def requests_per_profile(requests: tuple[int, ...], profiles: tuple[Path, ...] | list[Path]) -> list[int | None]:
    """The request count of each profile (--requests once per profile, in their order), or None for each."""
    if not requests:
        return [None] * len(profiles)
    if len(requests) != len(profiles):
        raise UserError(f"--requests given {len(requests)} time(s) for {len(profiles)} profile(s): give one request "
                        "count per profile, in their order")
    return list(requests)


def cpu_us_per_req(profile: Path, total_weight: int, requests: int) -> float:
    """CPU µs per request: the profile's weights (total_weight, their sum) in CPU nanoseconds over the requests;
    UserError when they are not CPU time."""
    kind, unit = weight_unit(profile)
    if (kind, unit) != ("cpu", "nanoseconds"):
        raise UserError(f"{profile}: --requests needs weights in CPU nanoseconds and this profile's are {kind}/{unit}: "
                        "give a pprof CPU profile (cpu/nanoseconds) or perf's profile.folded inside its run folder")
    return total_weight / 1e3 / requests
