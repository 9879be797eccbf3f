"""N measurements of one server reduced to one result: the median repeat's figures and the spread."""
from __future__ import annotations

from rpcprof.analyze.intervals import paired_ratio
from rpcprof.analyze.regime import round_row
from rpcprof.status import Status


FIGURES = ("req_per_s", "server_cpu_cores", "server_cpu_s", "req_per_cpu_s", "cpu_us_per_req", "requests_ok",
           "requests_non_ok", "window_s", "client_cpu_s", "client_cpu_cores", "client_cpu_share", "server_cpu_share",
           "client_bound", "latency_bound", "unsaturated", "in_flight_share", "in_flight_flag", "latency", "memory")
SPREAD = ("req_per_s", "server_cpu_cores", "req_per_cpu_s", "cpu_us_per_req", "client_cpu_share")


def aggregate_repeats(repeats: list[dict]) -> dict:
    """One result from N measurements: the figures of the median repeat by req/s per CPU (the lower
    middle one for even N), so that every invariant between figures still holds, plus the min-max
    spread of each figure across repeats. The profile and syscall records are the first round's (its
    files are in SERVER/); each round's figures are in `repeats` (analyze/regime.round_row), and the
    profile's cost is paired round by round."""
    if len(repeats) == 1:
        return repeats[0]
    if any(r.get("status") != Status.OK for r in repeats):
        return next(r for r in repeats if r.get("status") != Status.OK)
    ranked = sorted(repeats, key=lambda r: r["req_per_cpu_s"])
    median = ranked[(len(ranked) - 1) // 2]
    out = dict(repeats[0])
    out.update({k: median[k] for k in FIGURES if k in median})
    out["median_of_repeats"] = {"n": len(repeats), "chosen": median["repeat"]}
    for flag in ("stalled", "too_short"):       # a round's flag stands for the server, whichever round is the median
        flagged = [r for r in repeats if r.get(flag)]
        if flagged:
            out[flag] = flagged[0][flag]
            out[f"{flag}_rounds"] = [r["repeat"] for r in flagged]
    out["spread"] = {k: [min(r[k] for r in repeats), max(r[k] for r in repeats)] for k in SPREAD}
    for k in ("p99_ms", "avg_ms"):
        out["spread"][k] = [min(r["latency"][k] for r in repeats), max(r["latency"][k] for r in repeats)]
    out["repeats"] = [{**{k: r.get(k) for k in ("repeat", "started", "timeline", *SPREAD)}, **round_row(r)}
                      for r in repeats]
    profiled = [(r["cpu_us_per_req"], (r.get("profile") or {}).get("cpu_us_per_req_profiled")) for r in repeats]
    profiled = [(a, b) for a, b in profiled if a and b]
    if profiled:
        # the profile window's cost: profiled over unprofiled CPU per request, paired round by round
        cost = paired_ratio([a for a, _ in profiled], [b for _, b in profiled])
        out["profile"] = {**out["profile"], "overhead_pct": 100 * (cost.ratio - 1),
                          "overhead_interval_pct": ([100 * (cost.low - 1), 100 * (cost.high - 1)]
                                                    if cost.low is not None else None)}
    return out
