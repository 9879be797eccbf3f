"""Seed 001's figures against this project's, with here ÷ seed and, for every gap over GAP, a reason
derived from the run's own figures: what set the pace (the client's CPUs, the requests in flight), the
requests per write, the share of the work the seed's flame graph and the run's profile give, and the host
card where the run has one. The seed's ratio is placed on the what-if model run backwards
(analyze/whatif.solve_writes): the requests per write at which pajamax's predicted ratio over tonic equals
it, with its interval.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.indirect import load_indirect
from rpcprof.analyze.intervals import server_ratio
from rpcprof.analyze.whatif import solve_writes
from rpcprof.errors import UserError
from rpcprof.paths import INDIRECT_COST
from rpcprof.report.whatif import both_rounds
from rpcprof.documents.seed_figures import SEED_CLIENT_CPUS, SEED_FRAMES, SEED_RATIO_QUOTED, SEED_RUN

GAP = 0.20                # a figure more than 20 % away from the seed's gets its reason
SAME_SPLIT = 5.0          # send shares within this many points: the same split of work as the seed's


def _writes(m: dict) -> float | None:
    return (m.get("syscalls") or {}).get("writes_per_req")


def _pace(m: dict, client_cpus: int, streams: int, role: str) -> str:
    """What set this server's req/s here, against the seed's client."""
    setter = ("the load generator set it" if m.get("client_bound") else
              "neither side was saturated: waiting set it" if m.get("unsaturated") or m.get("latency_bound") else
              "the server set it")
    return (f"{setter}: {streams} in flight from a client of {client_cpus} CPU{'s' * (client_cpus != 1)} at "
            f"{100 * (m.get('client_cpu_share') or 0):.0f} %, against the seed's {SEED_CLIENT_CPUS} CPUs at "
            f"{SEED_RUN[role][0]:.0f} %")


def gap_rows(run_dir: Path, rules: Rules, metrics: dict, manifest: dict, tonic: str, pajamax: str,
             send_shares: dict[str, float]) -> tuple[list[dict], object | None]:
    """The table's rows (figure, seed, here, here ÷ seed, reason) and the model solved at the seed's ratio
    (None when the run cannot give it: no per-round profiles or write counts)."""
    p = manifest["parameters"]
    client_cpus, streams = len(p.get("load_cpus") or []) or 1, p.get("streams")
    host = "this run's host card: " + ", ".join(f"{k} {v['median']:.3g}" for k, v in (manifest.get("host") or {}).items()
                                                if isinstance(v, dict) and "median" in v) \
        if (manifest.get("host") or {}).get("write_us") else "no host card in this run"
    try:
        rounds = both_rounds(run_dir, rules, tonic, pajamax)
        cost = load_indirect(INDIRECT_COST)
    except UserError:
        rounds = cost = None

    def solve(ratio: float):
        return solve_writes(rounds[pajamax][0], rounds[tonic][0], cost, ratio, rules.groups) if rounds else None
    solved = solve(SEED_RATIO_QUOTED)
    rows = []
    for role, name in (("tonic", tonic), ("pajamax", pajamax)):
        m, (seed_client, seed_server, seed_rps) = metrics[name], SEED_RUN[role]
        seed_us = 1e6 * (seed_server / 100) / seed_rps
        writes = _writes(m)
        per_write = f"one write per {1 / writes:.1f} requests here" if writes else "no write count here"
        send = "TcpStream::poll_write_vectored" if role == "tonic" else "ResponseEnd::flush"
        here, there = 100 * send_shares[name], next(f.seed_pct for f in SEED_FRAMES if f.label == send)
        if abs(here - there) <= SAME_SPLIT:
            work = (f"the seed's split of work (send {here:.1f} % of the profile here, {there:.1f} % in its flame "
                    f"graph; {per_write}): the same work per request at another host's unit costs ({host}; the "
                    "seed's host has none)")
        else:
            work = f"send {here:.1f} % of the profile here, {there:.1f} % in the seed's flame graph ({per_write})"
            at = solve(statistics.fmean(r.cpu for r in rounds[tonic][0]) / seed_us) if role == "pajamax" and rounds \
                else None
            if at and (value := at.requests_per_write[0]):
                work += f"; the what-if model puts {seed_us:.2f} µs/req at one write per {value:.1f} requests"
        rows += [
            {"figure": f"{role} req/s", "seed": seed_rps, "here": m["req_per_s"], "why": _pace(m, client_cpus, streams, role)},
            {"figure": f"{role} server CPU [%]", "seed": seed_server, "here": 100 * m["server_cpu_cores"],
             "why": f"req/s x{m['req_per_s'] / seed_rps:.2f} times CPU µs/req x{m['cpu_us_per_req'] / seed_us:.2f}"},
            {"figure": f"{role} client CPU [%]", "seed": seed_client, "here": 100 * m["client_cpu_cores"],
             "why": f"a client of {client_cpus} CPU{'s' * (client_cpus != 1)} here, {SEED_CLIENT_CPUS} in the seed"},
            {"figure": f"{role} CPU µs/req", "seed": seed_us, "here": m["cpu_us_per_req"], "why": work},
        ]
    ratio = server_ratio(metrics[tonic], metrics[pajamax])
    why = "the what-if model gives nothing here (no per-round profiles or write counts)"
    if solved is not None:
        value, low, high = solved.requests_per_write
        w = _writes(metrics[pajamax])
        why = (f"the what-if model puts ^{SEED_RATIO_QUOTED} at one write per {value:.1f} requests"
               + (f" [{low:.1f}-{high:.1f}]" if low and high else "") + f" for {pajamax}, which wrote once per "
               f"{1 / w:.1f} here: its batching, which the client and the requests in flight set"
               if value and w else f"the what-if model finds no write rate that gives ^{SEED_RATIO_QUOTED}")
    rows.append({"figure": f"{pajamax} / {tonic} req/s per CPU", "seed": SEED_RATIO_QUOTED,
                 "here": ratio.ratio if ratio else metrics[pajamax]["req_per_cpu_s"] / metrics[tonic]["req_per_cpu_s"],
                 "why": why})
    for r in rows:
        r["factor"] = r["here"] / r["seed"] if r["seed"] else None
        if r["factor"] is not None and abs(r["factor"] - 1) <= GAP:
            r["why"] = ""
    return rows, solved


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def gap_section(run_dir: Path, rules: Rules, metrics: dict, manifest: dict, tonic: str, pajamax: str,
                send_shares: dict[str, float]) -> list[str]:
    """The markdown section: one table, then the seed's ratio placed on the model in one line."""
    rows, solved = gap_rows(run_dir, rules, metrics, manifest, tonic, pajamax, send_shares)
    out = ["## Here against seed 001", "",
           f"Each of seed 001's figures beside this run's, here ÷ seed, and for every figure more than "
           f"{100 * GAP:.0f} % away, its reason from the run's own figures.", "",
           "| figure | seed 001 | here | here ÷ seed | why |", "|---|---:|---:|---:|---|"]
    out += [f"| {r['figure']} | {_num(r['seed'])} | {_num(r['here'])} | {r['factor']:.2f} | {r['why']} |" for r in rows]
    if solved is not None:
        value, low, high = solved.requests_per_write
        w = solved.writes
        out += ["", f"`report.py whatif {run_dir} {tonic} {pajamax} --ratio {SEED_RATIO_QUOTED}`: {pajamax} at "
                f"^{SEED_RATIO_QUOTED} over {tonic} needs {solved.target_cpu:.2f} CPU µs/req, at "
                f"{w.value:.3f}" + (f" [{w.low:.3f}-{w.high:.3f}]" if w.half is not None else "")
                + " write syscalls per request" + (f": one write per {value:.1f} requests" if value else "")
                + (f" [{low:.1f}-{high:.1f}]" if value and low and high else "") + "."]
    return out + [""]


def why_lines(name: str, m: dict, seed_role: str, streams: int | None = None, client_cpus: int | None = None) -> list[str]:
    """What about this server's run differs from the seed's setup, from its own figures."""
    client, server = 100 * (m.get("client_cpu_share") or 0), 100 * (m.get("server_cpu_share") or 0)
    seed_client, seed_server, seed_rps = SEED_RUN[seed_role]
    cores = (f"the client had {client_cpus} core{'s' if client_cpus != 1 else ''} here and used {client:.0f} % of "
             f"{'it' if client_cpus == 1 else 'them'}" if client_cpus else f"the client used {client:.0f} % of its CPUs")
    out = [f"{name}: {cores}; seed 001's had {SEED_CLIENT_CPUS} and used {seed_client:.0f} % (of 1,200 %). "
           f"The server used {server:.0f} % of its core here, {seed_server:.0f} % in the seed."]
    if m.get("client_bound"):
        below = m["req_per_s"] < seed_rps and server < seed_server
        out.append(f"{name}: CLIENT-BOUND: the load generator, not the server, set the {m['req_per_s']:,.0f} req/s; "
                   + ("the server idled for lack of requests, so req/s and server CPU are both below the seed's, "
                      "and only req/s per CPU compares." if below else "only req/s per CPU compares."))
    if m.get("latency_bound"):
        verdict = (m.get("offcpu") or {}).get("verdict")
        out.append(f"{name}: LATENCY-BOUND: neither side was busy (server {server:.0f} %, client {client:.0f} %): "
                   "requests waited on something other than CPU"
                   + (f"; its off-CPU window says: {verdict}" if verdict else
                      " (the run recorded no off-CPU window that names the wait: report.py waits)."))
    if m.get("unsaturated"):
        out.append(f"{name}: UNSATURATED: server {server:.0f} %, client {client:.0f} %: neither side saturated.")
    avg_ms = (m.get("latency") or {}).get("avg_ms")
    if (m.get("unsaturated") or m.get("latency_bound")) and avg_ms and streams:
        out.append(f"{name}: Little's law: {streams} in flight / {avg_ms:.2f} ms average latency = "
                   f"{streams / avg_ms * 1000:,.0f} req/s, against {m['req_per_s']:,.0f} measured: the time each "
                   "request spends waiting, not CPU, set the rate.")
    overhead = (m.get("profile") or {}).get("overhead_pct")
    if overhead is not None and abs(overhead) >= 10:
        out.append(f"{name}: CPU per request was {overhead:+.0f} % in the profile window against the measured one: "
                   "the frame and category shares below come from that window.")
    return out
