"""A server's rounds reduced to one result: the median round's figures and the spread."""
from __future__ import annotations

from rpcprof.analyze.intervals import paired_ratio
from rpcprof.analyze.regime import round_row
from rpcprof.records import ROUND_KEY, ROUNDS_KEY, round_of
from rpcprof.status import Status


FIGURES = ("req_per_s", "server_cpu_cores", "server_cpu_s", "req_per_cpu_s", "cpu_us_per_req", "requests_ok",
           "requests_non_ok", "window_s", "client_cpu_s", "client_cpu_cores", "client_cpu_share", "server_cpu_share",
           "client_bound", "latency_bound", "unsaturated", "in_flight_share", "in_flight_flag", "latency", "memory")
SPREAD = ("req_per_s", "server_cpu_cores", "req_per_cpu_s", "cpu_us_per_req", "client_cpu_share")


def aggregate_rounds(rounds: list[dict]) -> dict:
    """One result from a server's N rounds: the figures of the median round by req/s per CPU (the lower
    middle one for even N), so that every invariant between figures still holds, plus the min-max
    spread of each figure across rounds. The profile and syscall records are the first round's (its
    files are in SERVER/); each round's figures are in its rows (ROUNDS_KEY, analyze/regime.round_row), and
    the profile's cost is paired round by round."""
    if len(rounds) == 1:
        return rounds[0]
    if any(r.get("status") != Status.OK for r in rounds):
        return next(r for r in rounds if r.get("status") != Status.OK)
    ranked = sorted(rounds, key=lambda r: r["req_per_cpu_s"])
    median = ranked[(len(ranked) - 1) // 2]
    out = dict(rounds[0])
    out.update({k: median[k] for k in FIGURES if k in median})
    out["median_of_repeats"] = {"n": len(rounds), "chosen": round_of(median)}
    for flag in ("stalled", "too_short"):       # a round's flag stands for the server, whichever round is the median
        flagged = [r for r in rounds if r.get(flag)]
        if flagged:
            out[flag] = flagged[0][flag]
            out[f"{flag}_rounds"] = [round_of(r) for r in flagged]
    out["spread"] = {k: [min(r[k] for r in rounds), max(r[k] for r in rounds)] for k in SPREAD}
    for k in ("p99_ms", "avg_ms"):
        out["spread"][k] = [min(r["latency"][k] for r in rounds), max(r["latency"][k] for r in rounds)]
    out[ROUNDS_KEY] = [{ROUND_KEY: round_of(r), **{k: r.get(k) for k in ("started", "timeline", *SPREAD)}, **round_row(r)}
                       for r in rounds]
    profiled = [(r["cpu_us_per_req"], (r.get("profile") or {}).get("cpu_us_per_req_profiled")) for r in rounds]
    profiled = [(a, b) for a, b in profiled if a and b]
    if profiled:
        # the profile window's cost: profiled over unprofiled CPU per request, paired round by round
        cost = paired_ratio([a for a, _ in profiled], [b for _, b in profiled])
        out["profile"] = {**out["profile"], "overhead_pct": 100 * (cost.ratio - 1),
                          "overhead_interval_pct": ([100 * (cost.low - 1), 100 * (cost.high - 1)]
                                                    if cost.low is not None else None)}
    return out
