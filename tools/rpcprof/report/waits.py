"""Where each server's threads waited: the off-CPU window's wait reasons, socket figures and verdict.

Read back from the run folder's saved files (SERVER/offcpu.folded, .count, sockets.log) with the rules
given (analyze/waits.py's offcpu_records), so a changed `waits:` section reclassifies a saved run; the
window's own figures (waits, time, histogram, req/s) come from metrics.json.
"""
from __future__ import annotations

import json
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.waits import asleep_text, histogram_text, offcpu_records
from rpcprof.analyze.wakers import wakers_text
from rpcprof.errors import UserError
from rpcprof.report.tables import render
from rpcprof.report.text import terminal

COLUMNS = [("server", "server"), ("reason", "wait reason"), ("share_pct", "off-CPU [%]"), ("ms", "off-CPU [ms]"),
           ("waits", "waits"), ("mean_ms", "mean wait [ms]"), ("waits_per_req", "waits/req")]


def wait_rows(records: dict[str, dict]) -> list[dict]:
    return [{"server": name, **row, "mean_ms": row["mean_us"] / 1e3 if row.get("mean_us") else None}
            for name, rec in records.items() for row in rec.get("reasons") or []]


def notes(name: str, rec: dict, verdicts: bool = True) -> list[str]:
    """The window, the spread of single waits, the socket figures and (verdicts) the verdict, as sentences."""
    rps = f", {rec['req_per_s']:,.0f} req/s" if rec.get("req_per_s") else ""
    threads = f" over {rec['threads']} thread(s)" if rec.get("threads") else ""
    lines = [f"{name}: {rec.get('waits') or 0:,} waits, {rec.get('off_cpu_s') or 0:.2f} s off CPU{threads} in a "
             f"{rec.get('window_s') or 0:.1f} s window{rps}; single waits: {histogram_text(rec.get('histogram') or [])}"]
    s = rec.get("sockets")
    if s:
        rtt, minrtt = s.get("server_rtt_ms_median"), s.get("server_minrtt_ms")
        lines.append(f"{name}: TCP, {s['server_socket_samples']} samples of its connections: written data held back "
                     f"in {100 * s['held_share']:.0f} % of them; smoothed RTT "
                     + (f"{rtt:.3f} ms (minimum {minrtt:.3f} ms)" if rtt is not None and minrtt is not None else "-")
                     + (f"; the peer's delayed-ACK timeout {s['peer_ato_ms_median']:.0f} ms"
                        if s.get("peer_ato_ms_median") else ""))
    wakes = rec.get("wakes")
    if wakes and wakes.get("waits_us"):
        lines.append(f"{name}: who woke them: {wakes['paired']:,} of {wakes['waits']:,} waits paired with the wake-up "
                     f"that ended them ({100 * wakes['paired_us'] / wakes['waits_us']:.0f} % of their time off CPU; "
                     f"{wakes['wakeups']:,} wake-ups recorded)")
    for reason, row in (rec.get("wakers") or {}).items():
        lines.append(f"{name}: {terminal(wakers_text(reason, row))}")
    if rec.get("asleep"):
        lines.append(f"{name}: {terminal(asleep_text(rec['asleep']))}")
    lines += [f"{name}: {rec[key]}" for key in ("verdict", "contention") if verdicts and rec.get(key)]
    return lines


def render_waits(run_dir: Path, rules: Rules, fmt: str = "table", verdicts: bool = True) -> str:
    """The wait-reason table of every server with an off-CPU window, then the notes (json: one document);
    verdicts=False leaves out the verdicts, for output that has printed them already (the run table)."""
    records = offcpu_records(run_dir, rules)
    if not records:
        raise UserError(f"{run_dir}: no off-CPU window in this run: run with --off-cpu (it is automatic when a "
                        "window is LATENCY-BOUND or UNSATURATED)")
    rows = wait_rows(records)
    if fmt == "json":
        return json.dumps({"rows": rows, "servers": records}, indent=2, sort_keys=True, default=str) + "\n"
    text = render(rows, COLUMNS, fmt)
    if fmt in ("table", "markdown"):
        text += "\n" + "\n".join(line for name, rec in records.items() for line in notes(name, rec, verdicts)) + "\n"
    return text
