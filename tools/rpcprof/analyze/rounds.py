"""A server's rounds reduced to one result: the median round's figures and the spread."""
from __future__ import annotations

from dataclasses import replace

from rpcprof.analyze.intervals import paired_ratio
from rpcprof.analyze.regime import round_row
from rpcprof.records import ROUND_KEY, ROUNDS_KEY, ServerResult
from rpcprof.status import Status


FIGURES = ("req_per_s", "server_cpu_cores", "server_cpu_s", "req_per_cpu_s", "cpu_us_per_req", "requests_ok",
           "requests_non_ok", "window_s", "client_cpu_s", "client_cpu_cores", "client_cpu_share", "server_cpu_share",
           "client_bound", "latency_bound", "unsaturated", "in_flight_share", "in_flight_flag", "latency", "memory")
SPREAD = ("req_per_s", "server_cpu_cores", "req_per_cpu_s", "cpu_us_per_req", "client_cpu_share")


def aggregate_rounds(rounds: list[ServerResult]) -> ServerResult:
    """One result from a server's N rounds: the figures of the median round by req/s per CPU (the lower
    middle one for even N), so that every invariant between figures still holds, plus the min-max
    spread of each figure across rounds. The profile and syscall records are the first round's (its
    files are in SERVER/); each round's figures are in its rows (ROUNDS_KEY, analyze/regime.round_row), and
    the profile's cost is paired round by round. A round that did not end ok is the result."""
    failed = [r for r in rounds if r.status != Status.OK]
    if len(rounds) == 1 or failed:
        return (failed or rounds)[0]
    median = sorted(rounds, key=lambda r: r.figures["req_per_cpu_s"])[(len(rounds) - 1) // 2]
    each = [r.figures for r in rounds]
    out = dict(rounds[0].figures)
    out.update({k: median.figures[k] for k in FIGURES if k in median.figures})
    out["median_of_repeats"] = {"n": len(rounds), "chosen": median.round}
    for flag in ("stalled", "too_short", "neighbours"):     # a round's flag stands for the server, whichever is the median
        flagged = [r for r in rounds if r.figures.get(flag)]
        if flagged:
            out[flag] = flagged[0].figures[flag]
            out[f"{flag}_rounds"] = [r.round for r in flagged]
    steals = [r.figures.get("steal") or {} for r in rounds]      # each CPU's steal, at its most in any round
    out["steal"] = {cpu: max(s.get(cpu, 0.0) for s in steals) for cpu in sorted(set().union(*steals))}
    if any("halting" in f for f in each):
        out["halting"] = sorted(set().union(*(f.get("halting") or [] for f in each)))
    out["spread"] = {k: [min(f[k] for f in each), max(f[k] for f in each)] for k in SPREAD}
    for k in ("p99_ms", "avg_ms"):
        out["spread"][k] = [min(f["latency"][k] for f in each), max(f["latency"][k] for f in each)]
    out[ROUNDS_KEY] = [{ROUND_KEY: r.round, "started": r.started, **{k: r.figures.get(k) for k in ("timeline", *SPREAD)},
                        **round_row(r.figures)} for r in rounds]
    profiled = [(f["cpu_us_per_req"], (f.get("profile") or {}).get("cpu_us_per_req_profiled")) for f in each]
    profiled = [(a, b) for a, b in profiled if a and b]
    if profiled:
        cost = paired_ratio([a for a, _ in profiled], [b for _, b in profiled])
        out["profile"] = {**out["profile"], "overhead_pct": 100 * (cost.ratio - 1),
                          "overhead_interval_pct": ([100 * (cost.low - 1), 100 * (cost.high - 1)]
                                                    if cost.low is not None else None)}
    return replace(rounds[0], figures=out)
