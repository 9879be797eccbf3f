"""The run table: seed 000's columns plus req/s per CPU and the ratio between servers.

What a run says about paces, in words: which rounds of a server ran at which pace, the ratio within
each pace, and which categories and sub-categories changed between the paces (the figures and their
tests: analyze/paces.py). The pace line and the ratios come from the rounds' figures alone (report.py run,
profile.sh run, report.html); the categories from each round's own profile (report.py compare, report.html).
"""
from __future__ import annotations

import json
from pathlib import Path

from rpcprof.analyze.breakdowns import round_numbers
from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.hosts import pace_units
from rpcprof.analyze.intervals import RatioInterval, cv, figure_by_round, pilot_of, server_ratio
from rpcprof.analyze.paces import pace_categories, pace_ratios, server_paces
from rpcprof.analyze.regime import counters_steady, profiler_paced, regime_flags
from rpcprof.host_units import HOST_UNITS
from rpcprof.report.mechanism import describe
from rpcprof.report.tables import Shown, render
from rpcprof.records import beside_busy, round_rows, rounds_asked, stolen_cpus, view_of
from rpcprof.rundir import load_manifest, load_run, profile_folded
from rpcprof.status import Status

# what a run's --idle did, in its headline (runs made before the option halted)
IDLE_TEXT = {"poll": ", server CPUs polling when idle", "spin": ", server CPUs kept from halting by an idle-priority loop"}


def setup_text(p: dict, scenario: str, windows: str = "window") -> str:
    """A run's setup in its headline: `helloworld, h2load C=1 S=1000, 6 s window, server CPU [0], load CPU [1]`;
    an attach's: `pid 4321, helloworld, h2load C=1 S=100, 5 s window` (its load, if it drove one)."""
    load = f"{scenario}, {p['driver']} C={p['connections']} S={p['streams']}, " if scenario else ""
    if "pid" in p:
        return f"pid {p['pid']}, {load or 'its own load, '}{p['duration']:g} s {windows}"
    return (f"{load}{p['duration']:g} s {windows}, server CPU {p['server_cpus']}, load CPU {p['load_cpus']}"
            + IDLE_TEXT.get(p.get("idle") or "halt", ""))


RUN_COLUMNS = [
    ("server", "name"), ("req_per_s", "req/s"), ("avg_cpu_pct", "avg. cpu [%]"), ("req_per_cpu_s", "req/s per CPU"),
    ("cpu_us_per_req", "CPU [µs/req]"), ("relative", "relative"), ("avg_ms", "avg. latency [ms]"),
    ("p90_ms", "90 % in [ms]"), ("p95_ms", "95 % in [ms]"), ("p99_ms", "99 % in [ms]"),
    ("rss_avg_mib", "avg. memory [MiB]"), ("syscalls_per_req", "syscalls/req"), ("client_cpu_pct", "client cpu [%]"),
    ("notes", "notes"),
]


# seed 003's latency figures, for --latency full: replace seed 000's latency columns
FULL_LATENCY_COLUMNS = [
    ("avg_ms", "avg. latency [ms]"), ("p50_ms", "50 % [ms]"), ("p90_ms", "90 % [ms]"), ("p99_ms", "99 % [ms]"),
    ("p99_9_ms", "99.9 % [ms]"), ("p99_99_ms", "99.99 % [ms]"), ("max_ms", "max [ms]"), ("tm99_ms", "tm99 [ms]"),
    ("stddev_ms", "stddev [ms]"),
]
SEED_LATENCY_KEYS = ("avg_ms", "p90_ms", "p95_ms", "p99_ms")


def run_columns(latency: str = "seed") -> list[tuple[str, str]]:
    """The run table's columns; latency 'full' swaps seed 000's four latency columns for seed 003's set."""
    if latency == "seed":
        return RUN_COLUMNS
    at = [k for k, _ in RUN_COLUMNS].index("avg_ms")
    rest = [c for c in RUN_COLUMNS if c[0] not in SEED_LATENCY_KEYS]
    return rest[:at] + FULL_LATENCY_COLUMNS + rest[at:]


def notes_for(m: dict) -> str:
    if m.get("status") != Status.OK:
        return m.get("status", "?").upper() + (": " + m["error"] if m.get("error") else "")
    if m.get("stalled"):        # the other flags describe the burst and the silence, which this one names
        return f"STALLED ({m['stalled']['mechanism']})" + (f", {m['requests_non_ok']} non-OK" if m.get("requests_non_ok") else "")
    notes = [flag for key, flag in (("client_bound", "CLIENT-BOUND"), ("latency_bound", "LATENCY-BOUND"),
                                    ("unsaturated", "UNSATURATED"), ("too_short", "TOO-SHORT")) if m.get(key)]
    if m.get("in_flight_flag"):
        notes.append(f"IN-FLIGHT {100 * m['in_flight_share']:.0f} %")
    if m.get("requests_non_ok"):
        notes.append(f"{m['requests_non_ok']} non-OK")
    notes += regime_flags(m) + busy_flags(m)
    return ", ".join(notes)


def busy_parts(manifest: dict, metrics: dict) -> list[str]:
    """What of a run had other programs busy beside it, or a CPU stolen (BUSY-HOST): its servers' windows, and its
    host card, each with what was busy (`rust_tonic_mt (CPU 1 6 % stolen)`)."""
    host = manifest.get("host") or {}
    return [f"{s} ({busy_host(m)})" for s, m in metrics.items() if isinstance(m, dict) and beside_busy(m)] + \
        [f"its host card ({busy_host(host)})"] * beside_busy(host)


def busy_flags(m: dict) -> list[str]:
    """`BUSY-HOST: pid 1234 python 0.83 CPU` for a result whose windows had busy programs beside them, else none."""
    return [f"BUSY-HOST: {busy_host(m)}"] if beside_busy(m) else []


def busy_host(record: dict) -> str:
    """`pid 1234 python 0.83 CPU, CPU 0 7 % stolen`: the busy processes outside a run beside its windows or its
    host card (record: a result or a card), and the CPUs the hypervisor stole from (measure/neighbours.py)."""
    neighbours = record.get("neighbours") or []
    return ", ".join([f"pid {n['pid']} {n['name']} {n['cores']:.2f} CPU" for n in neighbours[:3]]
                     + [f"and {len(neighbours) - 3} more"] * (len(neighbours) > 3)
                     + [f"CPU {cpu} {100 * share:.0f} % stolen" for cpu, share in stolen_cpus(record).items()])


def syscalls_per_request(sc: dict | None) -> float | None:
    """Syscalls per request: all of them where the total was counted, else the request-path ones by name."""
    sc = sc or {}
    return sc.get("per_req") if sc.get("per_req") is not None else sc.get("named_per_req")


# the figures of a server's result that its row keeps as they are
PASSED_ON = ("req_per_s", "req_per_cpu_s", "cpu_us_per_req", "client_bound", "latency_bound", "unsaturated",
             "in_flight_share", "in_flight_ends", "in_flight_flag", "stalled", "too_short", "server_cpu_share",
             "client_cpu_share", "neighbours", "steal")


def run_rows(metrics: dict[str, dict], order: list[str] | None = None, pilot: int | None = None,
             host: dict | None = None) -> list[dict]:
    """One row per server in run order; 'relative' is req/s per CPU over the first measured server's.
    A server that failed shows no figures: a window it did not finish is not a measurement. pilot: the
    run's --precision pilot (intervals.pilot_of), for the two-stage interval; host: the run's host card,
    whose cards before each round are set beside a server's paces (analyze/hosts.pace_units)."""
    names = order or list(metrics)
    figures = {n: (metrics[n] if metrics.get(n, {}).get("status") == Status.OK else {}) for n in names}
    # ratios from adjacent pairs of the interleaved rounds, over the first measured server
    first = next((n for n in names if figures[n].get("req_per_cpu_s")), None)
    base = figures[first]["req_per_cpu_s"] if first else None
    rows = []
    for name in names:
        m = metrics.get(name, {"server": name, "status": Status.NOT_RUN})
        f = figures[name]
        lat = f.get("latency") or {}
        rpc = f.get("req_per_cpu_s")
        spread = (f.get("spread") or {}).get("req_per_cpu_s")
        rsd = cv(list(figure_by_round(f, "req_per_cpu_s").values())) if f else None
        view = view_of(metrics, name)
        interval = server_ratio(figures[first], f, pilot=pilot) if first and rpc and name != first and not view else None
        paces = server_paces(f)
        rows.append({
            "server": name,
            "status": m.get("status"),
            **{k: f.get(k) for k in PASSED_ON},
            "avg_cpu_pct": 100 * f["server_cpu_cores"] if f.get("server_cpu_cores") is not None else None,
            "relative": interval.ratio if interval else rpc / base if rpc and base and not view else None,
            "view_of": view,
            **{k: lat.get(k) for k, _ in FULL_LATENCY_COLUMNS + [("p95_ms", "")]},
            "rss_avg_mib": (f.get("memory") or {}).get("rss_avg_mib"),
            "syscalls_per_req": syscalls_per_request(f.get("syscalls")),
            "client_cpu_pct": 100 * f["client_cpu_share"] if f.get("client_cpu_share") is not None else None,
            "waits_verdicts": [v for v in ((f.get("offcpu") or {}).get(k) for k in ("verdict", "contention")) if v],
            "notes": notes_for(m),
            "regime_flags": regime_flags(f) if f else [],
            "counters_steady": counters_steady(f) if f else None,
            "profiler_paced": profiler_paced(f) if f else None,
            "spread_req_per_cpu_s": spread,
            "req_per_cpu_s_min": spread[0] if spread else None,
            "req_per_cpu_s_max": spread[1] if spread else None,
            "repeats": len(round_rows(f)) or (1 if f else 0),
            "cv_cpu_us_per_req": cv(list(figure_by_round(f, "cpu_us_per_req").values())) if f else None,
            "cv_req_per_cpu_s": rsd,
            "req_per_cpu_s_cv_pct": 100 * rsd if rsd is not None else None,
            "ratio_interval": interval.as_dict() if interval else None,
            "ratio": interval and interval.ratio,
            "ratio_low": interval and interval.low,
            "ratio_high": interval and interval.high,
            "paces": paces.as_dict() if paces else None,
            "pace_ratios": pace_ratios(figures, names, name, paces) if paces else [],
            "pace_units": pace_units(host, paces.fast, paces.slow) if paces else None,
        })
    return rows


def ratio_text(ratio: float) -> str:
    """One decimal as seed 000 prints it, two below 1 so that a 0.04 does not read as 0.0."""
    return f"{ratio:.1f}" if ratio >= 1 else f"{ratio:.2f}"


def interval_text(row: dict) -> str | None:
    """`^54.7 [54.3-55.1]`: a row's ratio over the first server with its interval (None: no paired ratio)."""
    i = row.get("ratio_interval")
    return RatioInterval.of(i).text() if i else None


def spread_text(row: dict) -> str | None:
    """`103,459-104,880 (CV 0.5 %)`: the least and most req/s per CPU of a server's rounds, and their CV."""
    return None if row.get("req_per_cpu_s_min") is None or row.get("req_per_cpu_s_cv_pct") is None else (
        f"{row['req_per_cpu_s_min']:,.0f}-{row['req_per_cpu_s_max']:,.0f} (CV {row['req_per_cpu_s_cv_pct']:.1f} %)")


# the run table's cells of several figures; csv has each figure in a column of its own
SPREAD_CELL = Shown(spread_text, (("req_per_cpu_s_min", "req/s per CPU min"), ("req_per_cpu_s_max", "req/s per CPU max"),
                                   ("req_per_cpu_s_cv_pct", "req/s per CPU CV [%]")))
RATIO_CELL = Shown(interval_text, (("ratio", "ratio"), ("ratio_low", "ratio low (95 % interval)"),
                                   ("ratio_high", "ratio high (95 % interval)")))
RUN_CELLS = {"spread_text": SPREAD_CELL, "ratio_text": RATIO_CELL}


def significance(row: dict) -> str:
    """After the ratio: its interval's verdict, or a hint when there is none."""
    i = row.get("ratio_interval")
    if not i and row.get("repeats", 1) > 1:
        return (" (the median of its measurements; measured one server after the other, before rounds: no paired interval, the "
                "ratio may hold the machine's drift)")
    if not i or i["low"] is None:
        return " (one round: no interval; --rounds 5 or --precision 5% gives one)"
    pairs = f"95 % interval from {i['n']} adjacent pairs"
    return f" ({pairs}; NOT SIGNIFICANT: it contains 1)" if i["significant"] is False else f" ({pairs})"


def ratio_lines(rows: list[dict]) -> list[str]:
    """Sentences such as 'rust_pajamax vs rust_tonic: ^11.2 ...', then what each server's flags mean."""
    measured = [r for r in rows if r.get("req_per_cpu_s")]
    base = measured[0] if measured else None
    lines = []
    for r in measured[1:]:                # the ratios need two servers; the flags below are each server's
        if r.get("view_of"):
            lines.append(f"{r['server']}: the process of {r['view_of']} again, seen by another profiler: no ratio")
            continue
        text = interval_text(r) or f"^{ratio_text(r['req_per_cpu_s'] / base['req_per_cpu_s'])}"
        lines.append(f"{r['server']} vs {base['server']}: {text} requests per server CPU-second" + significance(r))
    for r in rows:
        if r.get("stalled"):        # its other flags describe the burst and the silence
            lines.append(f"{r['server']}: {describe(r['stalled'])}. Its figures are a burst and a silence, not its "
                         "pace; a longer -d adds only silence.")
            continue
        if r.get("paces"):
            lines += [pace_line(r["server"], r["paces"], r.get("pace_units")), *pace_ratio_lines(r["pace_ratios"])]
        if r.get("client_bound"):
            lines.append(f"{r['server']}: the load generator was the bottleneck (client CPU "
                         f"{r['client_cpu_pct']:.0f} %): req/s understates the server; req/s per CPU still holds.")
        if r.get("latency_bound"):
            lines.append(f"{r['server']}: neither side was busy: the run is latency-bound; "
                         + ("its off-CPU window says why (report.py waits)." if r.get("waits_verdicts") else
                            "where its threads waited: --off-cpu (automatic unless --no-off-cpu), report.py waits."))
        if r.get("unsaturated"):
            lines.append(unsaturated_line(r))
        lines += [f"{r['server']}: {v}" for v in r.get("waits_verdicts") or []]
        lines += [regime_line(r, flag) for flag in r.get("regime_flags") or []]
        if r.get("too_short"):
            lines.append(f"{r['server']}: {r['too_short']}; its figures are kept, flagged TOO-SHORT.")
        if r.get("in_flight_flag"):
            when = "began, after its lead, and when it ended" if r.get("in_flight_ends") == 2 else "ended"
            lines.append(f"{r['server']}: the requests in flight when the window {when} are "
                         f"{100 * r['in_flight_share']:.1f} % of those counted: partly served, not counted, so CPU per "
                         "request may be overstated by up to that much; a longer -d makes it smaller.")
    return lines


def regime_line(r: dict, flag: str) -> str:
    """What a regime flag means for this server: client-bound, the server's pace is the client's, so an
    instrument that slows either side changes its batching, inherently; else the window's figures do not
    describe the measured one."""
    if r.get("client_bound"):
        return (f"{r['server']}: {flag}: the load generator set this server's pace (client CPU "
                f"{r['client_cpu_pct']:.0f} %), so any cost on either side changes how many requests each read "
                "and write carries, and its req/s: inherent to a client-bound run, which a rerun does not remove. "
                "Its shares describe the profile window; its req/s per CPU the measured one.")
    head = (f"{r['server']}: {flag}: that window was not in the measured window's regime, so its figures (shares, "
            "syscalls) do not describe the measured CPU per request")
    steady = r.get("counters_steady")
    if flag.startswith("PROFILE-REGIME") and r.get("profiler_paced") and steady is not False:
        cost = r["profiler_paced"][1]
        rise = 1 / (1 + cost) - 1
        why = ("fewer requests because each cost more" if rise > 0 else "more requests because each cost less "
               "(a profiler only adds cost: the server got cheaper between the windows, as a JIT still warming up or a "
               "faster machine would make it)")
        return (f"{r['server']}: {flag}: its CPU per request was {100 * abs(rise):.0f} % "
                f"{'higher' if rise > 0 else 'lower'} while profiled, which alone takes req/s {100 * cost:+.0f} % at "
                f"the same CPU use: {why}, " + ("not another regime: its VFS writes and context switches per request were the "
                                      "same in both windows." if steady else "whether it also batched differently is "
                                      "not known (its per-request counters were not taken)."))
    if steady and flag.startswith("PROFILE-REGIME"):
        # its writes and switches per request held: not a batching change, the same work at another pace
        return (head + ": its VFS writes and context switches per request were the same in both windows, so it "
                "did not batch differently: the same work ran at another pace, more than the instruments' own cost "
                "per event (bench/instrument_cost) accounts for; the machine's pace moved between the windows.")
    if steady is False:
        return head + ": it batched differently there (the per-request counters above moved)."
    return head + "; whether it batched differently is not known (its per-request counters were not taken)."


def unsaturated_line(r: dict) -> str:
    """Why an unsaturated run's req/s is not the server's capacity, with the shares that say so."""
    server, client = 100 * r["server_cpu_share"], 100 * r["client_cpu_share"]
    line = (f"{r['server']}: neither side was saturated (server {server:.0f} %, client {client:.0f} % of their CPUs): "
            "req/s is below the server's capacity; CPU per request still holds.")
    if server + client >= 85:
        line += (f" The two shares add up to {server + client:.0f} %, as when server and client take turns, each "
                 "waiting for the other's batch: more connections (-C) let them overlap.")
    return line


def column_after(columns: list[tuple[str, str]], key: str, column: tuple[str, str], shown: bool) -> list:
    """columns with column after key's, where shown."""
    at = [k for k, _ in columns].index(key) + 1
    return columns[:at] + [column] * shown + columns[at:]


def render_run(run_dir: Path, fmt: str = "table", latency: str = "seed") -> str:
    manifest, metrics = load_run(run_dir)
    p = manifest["parameters"]
    rows = run_rows(metrics, p["servers"], pilot_of(p), manifest.get("host"))
    if fmt == "json":
        return json.dumps({"manifest": manifest, "rows": rows, "metrics": metrics}, indent=2, sort_keys=True) + "\n"
    rounds = f"rounds to ±{100 * p['precision']:g} %" if p.get("precision") else f"{rounds_asked(p)} rounds"
    columns = column_after(run_columns(latency), "req_per_cpu_s", ("spread_text", f"min-max of {rounds}"),
                           any(spread_text(r) for r in rows))
    columns = column_after(columns, "relative", ("ratio_text", "ratio [95 % interval]"),
                           any((r.get("ratio_interval") or {}).get("low") for r in rows))
    text = render(rows, columns, fmt, RUN_CELLS)
    if fmt not in ("table", "markdown"):
        return text
    lines = ratio_lines(rows) + ([f"rounds: {manifest['stopped_by']}"] if manifest.get("stopped_by") else [])
    return (f"{setup_text(p, manifest['scenario']['name'])} [{manifest['status']}]\n" + text
            + ("\n" + "\n".join(lines) + "\n" if lines else ""))


def _rounds(ks) -> str:
    return f"round{'s' * (len(ks) > 1)} {', '.join(map(str, ks))}"


def pace_line(server: str, p: dict, units: list[dict] | None = None) -> str:
    """One line: the rounds in each pace, each pace's CPU µs per request, and the test (p: Paces.as_dict());
    then what the host cards taken before its rounds showed of them (units: analyze/hosts.pace_units)."""
    noise = f", noise from the rounds and their {p['slices']} slices" if p.get("slices") else ""
    return (f"{server} ran at two paces: {_rounds(p['fast_rounds'])} at {p['fast_cpu_us_per_req']:.3g} CPU µs/req, "
            f"{_rounds(p['slow_rounds'])} at {p['slow_cpu_us_per_req']:.3g} ({p['apart']:.2f}x; split test t "
            f"{p['t']:.1f} > {p['critical_t']:.1f}{noise}, p {p['p']:.3f}): its intervals over all rounds mix the two."
            + pace_units_text(units))


def pace_units_text(units: list[dict] | None) -> str:
    """What the host cards before each pace's rounds showed: the units dearer before the slow pace beyond their
    batches' spread, or that none was; nothing where the run took no card before its rounds."""
    if units is None:
        return ""
    if not units:
        return (" The host cards taken before its rounds moved with it in no unit beyond their batches' spread: "
                "what changed is not among the card's units.")
    names = {k: (name, unit, fmt) for k, name, unit, fmt in HOST_UNITS}
    moved = "; ".join(f"{names[u['unit']][0]} {names[u['unit']][2].format(u['fast'])} {names[u['unit']][1]} before "
                      f"the fast pace, {names[u['unit']][2].format(u['slow'])} before the slow ({u['apart']:.2f}x)"
                      for u in units[:3])
    return f" The host cards taken before its rounds moved with it: {moved}."


def pace_ratio_lines(rows: list[dict]) -> list[str]:
    """`B vs A within S's fast pace (rounds 2, 4): ^60.1 [55.0-65.7]; slow pace (...): ...`, a line per pair."""
    by_pair: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_pair.setdefault((r["pair"], r["pace_of"]), []).append(r)
    return [f"{pair} within {who}'s " + "; ".join(f"{r['pace']} pace ({_rounds(r['rounds'])}): "
                                                  f"{RatioInterval.of(r['ratio']).text()}"
                                                  for r in rs) for (pair, who), rs in by_pair.items()]


def pace_category_line(name: str, rows: list[dict]) -> str | None:
    """`S's slow pace against its fast, by category (...): send +8.10 µs/req ± 2.00 * (of which send/loopback
    +5.20 *, ...); ...`: the level-1 categories that moved most, each marked * when significant after
    Benjamini-Hochberg, n.s. when not; with a pace of one round, point estimates only."""
    if not rows:
        return None
    tested = any(r["significant"] is not None for r in rows)
    mark = {True: " *", False: " n.s.", None: ""}

    def subs(cat: str) -> str:
        kids = sorted((r for r in rows if r["level"] == 2 and r["group"].startswith(cat + "/")
                       and abs(r["delta_us"]) >= 0.005), key=lambda r: -abs(r["delta_us"]))
        shown = ", ".join(f"{k['group']} {k['delta_us']:+.2f}{mark[k['significant']]}" for k in kids[:3])
        return f" (of which {shown})" if kids else ""

    def one(r: dict) -> str:
        pm = f" ± {r['half']:.2f}" if r["half"] is not None else ""
        return f"{r['group']} {r['delta_us']:+.2f} µs/req{pm}{mark[r['significant']]}{subs(r['group'])}"
    top = sorted((r for r in rows if r["level"] == 1 and abs(r["delta_us"]) >= 0.005), key=lambda r: -abs(r["delta_us"]))
    how = ("Welch t across rounds, * significant after Benjamini-Hochberg at 5 %" if tested else
           "a pace of one round: point estimates, no test")
    return f"{name}'s slow pace against its fast, by category ({how}): " + "; ".join(one(r) for r in top[:4]) + "."


def run_pace_findings(run_dir: Path, rules: Rules, metrics: dict, servers: list[str]) -> list[dict]:
    """Per server whose rounds fell into two paces: the paces, its lines, what changed between them by category."""
    out = []
    for name in servers:
        p = server_paces(metrics.get(name) or {})
        if p is None:
            continue
        profiles = {k: profile_folded(run_dir, name, k) for k in round_numbers(metrics[name])}
        rows = pace_categories(profiles, rules, metrics[name], name, p)
        units = pace_units(load_manifest(run_dir).get("host"), p.fast, p.slow)
        lines = [pace_line(name, p.as_dict(), units)] + [x for x in (pace_category_line(name, rows),) if x]
        out.append({"server": name, "paces": p.as_dict(), "units": units, "categories": rows, "lines": lines})
    return out
