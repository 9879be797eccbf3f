"""The measured window: load with no profiler attached, and the server's CPU, memory and latency over
exactly that window; the figures that follow from it and what limited it (client, latency, neither).
"""
from __future__ import annotations

import threading
from pathlib import Path

from rpcprof.analyze.timeline import SLICE_S, timeline
from rpcprof.measure.connections import established
from rpcprof.measure.load import LoadSettings
from rpcprof.measure.neighbours import NeighbourWindow
from rpcprof.measure.threads import ProcWindow, per_request
from rpcprof.measure.procstat import CpuWindow, Marks, ProcessMonitor, cpu_seconds_per_second
from rpcprof.rundir import LOAD_LOG

CLIENT_BOUND_SHARE = 0.90     # load generator at >= 90 % of its CPUs: it, not the server, limits req/s
LATENCY_BOUND_SHARE = 0.60    # both sides below 60 %: something else (e.g. Nagle + delayed ACK) limits
IN_FLIGHT_SHARE = 0.02        # S in flight at the window's ends above 2 % of the requests counted: flagged
END_EARLY_S = 0.25            # the connections are counted this long before the window's end
TOO_SHORT_SHARE = 0.25        # ... above 25 %: CPU per request would mean nothing; the window is refused
EDGE_PERCENTILE = 99.9        # the latency percentile a timeline leaves out at a window's ends (window_metrics)
SATURATED_SHARE = 0.90        # server at >= 90 % of its CPUs: it limits req/s; below, with neither flag
                              # above, the run is unsaturated (e.g. server and client taking turns)


def classify_bottleneck(server_cores: float, server_cpu_count: int, client_cores: float,
                        load_cpu_count: int) -> dict:
    """Flags saying what limited the run: the client, latency (neither side busy), neither side saturated
    (unsaturated), or else the server."""
    server_share = server_cores / server_cpu_count
    client_share = client_cores / load_cpu_count
    client_bound = client_share >= CLIENT_BOUND_SHARE
    latency_bound = server_share < LATENCY_BOUND_SHARE and client_share < LATENCY_BOUND_SHARE
    return {"server_cpu_share": server_share, "client_cpu_share": client_share, "client_bound": client_bound,
            "latency_bound": latency_bound,
            "unsaturated": server_share < SATURATED_SHARE and not client_bound and not latency_bound}


def measured_window(driver, settings: LoadSettings, port: int, out: Path, monitor: ProcessMonitor,
                    halting: tuple[int, ...] = ()):
    """The efficiency window: load with no profiler attached, and the server's CPU and RSS over exactly
    it, and the process's own kernel counters (free to read: measure/threads.py).
    With a driver that marks its timed window (h2load), the server's established connections are
    counted at its start and END_EARLY_S before its end (memory["connections"]; measure/connections.py):
    at the end line h2load is already closing them.
    The other programs' CPU and each CPU's steal over it are taken at its ends too (measure/neighbours.py;
    halting: the CPUs let halt when idle).
    Returns (load result, CPU ns, memory figures, counters, what was busy beside it: NeighbourWindow.busy())."""
    memory, conns = {}, {}
    late = threading.Timer(max(0.0, settings.duration - END_EARLY_S), lambda: conns.update(end=established(port)))
    late.daemon = True

    def start() -> None:
        monitor.start_window()
        if getattr(driver, "WINDOW", None) is not None:
            conns["start"] = established(port)
            late.start()

    def end() -> None:
        rss, points = monitor.stop_window()
        memory.update(rss, series=points)
    window = CpuWindow(monitor, on_start=start, on_end=end)
    own, others = ProcWindow(monitor.pid, monitor.switches), NeighbourWindow(monitor.pid, halting=halting)
    marks = Marks(window, own, others)
    load = driver.run(settings, port, out / LOAD_LOG, on_start=marks.start, on_end=marks.end)
    cpu_ns = window.ns()
    late.cancel()
    if conns:
        memory["connections"] = conns
    return load, cpu_ns, memory, own.counts(), others.busy()


def window_metrics(result, cpu_ns: int, memory: dict, streams: int, server_cpu_count: int, load_cpus: list[int],
                   proc: dict | None = None, lead: float = 0.0) -> dict:
    """The figures of one measured window; every rate uses the same wall clock around the driver. lead: the
    seconds of load on its connections before it."""
    series = memory.pop("series", None)
    conns = memory.pop("connections", None)
    wall = result.wall_s
    server_cores = cpu_seconds_per_second(cpu_ns, wall)
    # the timeline leaves out the requests in flight at the window's ends: its EDGE_PERCENTILE latency at
    # each, at most one slice (a window whose requests take longer is flagged IN-FLIGHT or TOO-SHORT)
    longest = min(result.latency.percentile(EDGE_PERCENTILE) / 1e6, SLICE_S) if result.latency.n else 0.0
    ok = result.ok
    m = {"window_s": wall, "requests_ok": ok, "requests_non_ok": result.non_ok,
         "req_per_s": ok / wall if wall > 0 else 0.0, "server_cpu_s": cpu_ns / 1e9, "server_cpu_cores": server_cores,
         "req_per_cpu_s": ok / (cpu_ns / 1e9) if cpu_ns > 0 else None,
         "cpu_us_per_req": (cpu_ns / 1e3 / ok) if ok else None,
         "client_cpu_s": result.client_cpu_s, "client_cpu_cores": result.client_cpu_cores,
         "latency": result.latency.summary(), "memory": memory, "proc": proc,
         "proc_per_req": per_request(proc, ok) if proc else None,
         "timeline": timeline(series, result.starts, longest, longest if lead else 0.0) if series else None,
         "connections": conns,
         "driver_exit_code": result.exit_code, "driver_figures": result.raw}
    # the S requests in flight when the window ends were partly served (their CPU is in the window) but
    # are not counted, nor, after a lead, the S in flight when it began (the driver counts the requests it
    # started in its window): as a share of the requests counted, the most CPU per request can be overstated by
    m["in_flight_ends"] = 2 if lead else 1
    m["in_flight_share"] = m["in_flight_ends"] * streams / ok if ok else None
    m["in_flight_flag"] = bool(ok) and m["in_flight_share"] > IN_FLIGHT_SHARE
    m.update(classify_bottleneck(server_cores, server_cpu_count, result.client_cpu_cores, len(load_cpus)))
    return m


def too_short(m: dict, streams: int) -> str | None:
    """Why a measured window (window_metrics) is too short for the figures printed from it, or None:
    CPU per request that would print as 0.00 (the server's CPU did not register), or the S requests in
    flight at its ends (in_flight_share) above TOO_SHORT_SHARE of those counted (CPU per request overstated
    that much)."""
    ok, cpu_us = m.get("requests_ok") or 0, m.get("cpu_us_per_req")
    what = f"the {m['window_s']:.3g} s window counted {ok:,} requests"
    if ok and (cpu_us is None or cpu_us < 0.005):
        return f"{what} and {m['server_cpu_s'] * 1e6:.0f} µs of server CPU: too short to measure CPU per request; lengthen -d"
    share = m.get("in_flight_share") or (streams / ok if ok else 0)
    if ok and share > TOO_SHORT_SHARE:
        # Little's law: with S in flight at N req/s, each request took S / N seconds
        rate = ok / m["window_s"]
        ends = "each of its ends" if m.get("in_flight_ends") == 2 else "its end"
        return (f"{what} with {streams} more in flight at {ends} ({100 * share:.0f} %): too short for CPU per "
                f"request; by Little's law each request took about {streams / rate:.3g} s ({streams} in flight / "
                f"{rate:,.0f} req/s): lengthen -d well past that, or lower -S")
    return None
