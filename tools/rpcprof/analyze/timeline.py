"""A measured window over time: the server's CPU per request in slices of SLICE_S seconds, so that a
reader sees whether a pace changed inside a window or only between rounds.

The server's CPU comes from the same counter the window's total does (its cgroup, read about every
0.1 s by the process monitor), interpolated at the slice edges; the requests from the load driver's
per-request record (h2load's --log-file, ghz's details: each request's start time, in BUCKET_S buckets).
A request is counted where it started: with latencies of milliseconds against half-second slices, where it
ended would move a few per mille of a slice's requests. The slices begin on a bucket's edge, so that every
bucket lies whole in one slice: a slice that took a bucket cut by the window's start or end counted the
requests of part of it against the CPU of all of it (with 0.1 s buckets set by their middles, the last slice
of the README's runs read 4-5 % above their median on average, up to 28 %). They end the window's longest
latency (its EDGE_PERCENTILE, at most a slice: measure/windows.py) before its end: the requests in flight then,
cut by the end, are in no record; and after a lead, they begin that long after its start: the lead's
requests, answered then, are in none either.
"""
from __future__ import annotations

import math

SLICE_S = 0.5
BUCKET_S = 0.01           # the driver's start times are counted in buckets this wide


def _cpu_at(series: list[tuple[float, int]], t: float) -> float:
    """The cumulative CPU ns at wall time t, linear between the samples around it."""
    if t <= series[0][0]:
        return float(series[0][1])
    for (t0, c0), (t1, c1) in zip(series, series[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
    return float(series[-1][1])


def timeline(series: list[tuple[float, int]], starts: dict[int, int], tail_s: float = 0.0, head_s: float = 0.0,
             slice_s: float = SLICE_S) -> dict | None:
    """{slice_s, t_s, cpu_us_per_req, req_per_s, server_cpu_cores} over the window the CPU series covers,
    from its first bucket edge head_s after its start to tail_s (its longest latency) before its end; starts: {start time in
    BUCKET_S units since the epoch: requests}. None without two CPU samples or requests. A slice that
    counted no request has None for its CPU per request."""
    if len(series) < 2 or not starts:
        return None
    first = math.ceil((series[0][0] + head_s) / BUCKET_S - 1e-6)       # the first bucket whole in the window
    begin, end = first * BUCKET_S, series[-1][0] - tail_s
    n = int((end - begin) // slice_s)
    if n < 1:
        return None
    per_slice = round(slice_s / BUCKET_S)
    counts = [0] * n
    for bucket, count in starts.items():
        k = (bucket - first) // per_slice
        if 0 <= k < n:
            counts[k] += count
    edges = [_cpu_at(series, begin + k * slice_s) for k in range(n + 1)]
    cpu_ns = [b - a for a, b in zip(edges, edges[1:])]
    return {"slice_s": slice_s, "t_s": [round(k * slice_s, 3) for k in range(n)],
            "cpu_us_per_req": [round(c / 1e3 / r, 4) if r else None for c, r in zip(cpu_ns, counts)],
            "req_per_s": [round(r / slice_s, 1) for r in counts],
            "server_cpu_cores": [round(c / 1e9 / slice_s, 4) for c in cpu_ns]}
