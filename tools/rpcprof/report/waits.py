"""Where each server's threads waited: the off-CPU window's wait reasons, socket figures and verdicts.

Read back from the run folder's saved files (SERVER/offcpu.folded, .count, offwake.folded, sockets.log) with
the rules given (offcpu_records), so a changed `waits:` section reclassifies a saved run; the window's own
figures (waits, time, histogram, req/s) come from metrics.json. The figures are analyze/waits.py's and
analyze/wakers.py's; the verdicts and notes are said here (the off-CPU window of a run keeps its record,
summarise's, in metrics.json).
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from rpcprof.analyze.categorize import Rules, open_folded
from rpcprof.analyze.waits import contention, nagle_stall, reason_rows, sleepers, socket_figures
from rpcprof.analyze.wakers import waker_rows
from rpcprof.errors import UserError
from rpcprof.report.tables import render
from rpcprof.report.text import terminal
from rpcprof.rundir import OFFCPU_FOLDED, OFFWAKE_FOLDED, SOCKETS_LOG, count_path, load_run, saved_copy

COLUMNS = [("server", "server"), ("reason", "wait reason"), ("share_pct", "off-CPU [%]"), ("ms", "off-CPU [ms]"),
           ("waits", "waits"), ("mean_ms", "mean wait [ms]"), ("waits_per_req", "waits/req")]


def table_rows(records: dict[str, dict]) -> list[dict]:
    return [{"server": name, **row, "mean_ms": row["mean_us"] / 1e3 if row.get("mean_us") else None}
            for name, rec in records.items() for row in rec.get("reasons") or []]


# --- the window's files read back, and its record --------------------------------------------------

def wait_rows(folded: Path, rules: Rules, requests: int | None) -> list[dict]:
    """analyze/waits.py's reason_rows of an off-CPU window's folded stacks (and their counts beside them)."""
    counted = saved_copy(count_path(folded))
    return reason_rows(open_folded(saved_copy(folded)), open_folded(counted) if counted.exists() else None, rules,
                       requests)


def socket_summary(log: Path, ports: list[int]) -> dict | None:
    """What the server's connections looked like over the window (a SocketSampler log); None without samples."""
    log = saved_copy(log)
    if not log.exists():
        return None
    with (gzip.open if log.suffix == ".gz" else open)(log, "rt", errors="replace") as f:
        return socket_figures(f.read(), ports)


def summarise(out: Path, rules: Rules, ports: list[int], requests: int | None, stats: dict) -> dict:
    """The off-CPU record of one window from its saved files: reasons, sockets, verdicts."""
    rows = wait_rows(out / OFFCPU_FOLDED, rules, requests)
    sockets = socket_summary(out / SOCKETS_LOG, ports)
    wakes = saved_copy(out / OFFWAKE_FOLDED)
    return {**{k: stats.get(k) for k in ("waits", "threads", "cut", "histogram", "runnable_to", "runnable_own_us",
                                          "wakes")},
            "off_cpu_s": (stats.get("off_cpu_us") or 0) / 1e6, "reasons": rows, "sockets": sockets, "ports": ports,
            "verdict": stall_verdict(sockets, rows), "contention": contention_verdict(stats, stats.get("window_s")),
            "wakers": waker_rows(wakes, rules) if wakes.exists() else None}


def offcpu_records(run_dir: Path, rules: Rules) -> dict[str, dict]:
    """server -> its off-CPU record, reclassified from the saved files with rules."""
    run_dir = Path(run_dir)
    _, metrics = load_run(run_dir)
    records = {}
    for name, m in metrics.items():
        saved = m.get("offcpu")
        if not saved:
            continue
        out = run_dir / name
        if saved_copy(out / OFFCPU_FOLDED).exists():
            stats = {**saved, "off_cpu_us": (saved.get("off_cpu_s") or 0) * 1e6}   # what the window recorded
            saved = {**saved, **summarise(out, rules, saved.get("ports") or [], saved.get("requests_ok"), stats)}
        records[name] = saved
    return records


# --- the verdicts and notes ---------------------------------------------------------------------------

def stall_verdict(sockets: dict | None, rows: list[dict]) -> str | None:
    """`NAGLE/DELAYED-ACK: ...`: what the socket samples show (waits.py's nagle_stall) and the fix; None without one."""
    s = nagle_stall(sockets, rows)
    if not s:
        return None
    text = (f"NAGLE/DELAYED-ACK: in {100 * s.held_share:.0f} % of {s.samples} samples "
            f"of the server's connections, {s.held_bytes:,.0f} B it had written were not "
            f"sent, held behind {s.unacked:.0f} unacknowledged segment(s) with room in the "
            f"congestion window (cwnd {s.cwnd:.0f}): Nagle's algorithm waits for that ACK, which "
            f"comes late - the server's smoothed RTT is {s.rtt_ms:.1f} ms against {s.minrtt_ms:.3f} ms at best"
            + (f", the peer may delay an ACK by up to {s.peer_ato_ms:.0f} ms" if s.peer_ato_ms else "") + ".")
    if s.socket_data_mean_us:
        text += (f" Meanwhile its threads waited for socket data {s.socket_data_pct:.0f} % of their off-CPU time "
                 f"(mean wait {s.socket_data_mean_us / 1e3:.2f} ms).")
    return text + " TCP_NODELAY on the server's sockets (or writing each batch whole) removes the stall."


def contention_verdict(stats: dict, window_s: float | None) -> str | None:
    """`CPU-CONTENDED: ...`: how long other programs had the server's CPU while its threads were ready, and who
    (analyze/waits.py's contention); None where the server's CPU was its own."""
    c = contention(stats, window_s)
    if not c:
        return None
    who = ", ".join(f"{name} {v / 1e6:.2f} s" for name, v in c.programs)
    return (f"CPU-CONTENDED: its threads were ready to run but other programs had the CPU for {c.taken_us / 1e6:.2f} s"
            + (f" of the {c.window_s:.1f} s window" if c.window_s else "") + f" ({100 * c.taken_us / c.off_cpu_us:.0f} "
            f"% of the time off CPU): {who}. The server's CPU was shared, so its figures are not its own alone; keep "
            "other work off its CPUs (--server-cpus).")


def _duration(us: float) -> str:
    return f"{us:.3g} µs" if us < 1000 else f"{us / 1e3:.3g} ms" if us < 1e6 else f"{us / 1e6:.3g} s"


def histogram_text(histogram: list[int]) -> str:
    """'38 waits of 32.8-65.5 ms, ...' for the log2-µs buckets that hold waits."""
    return ", ".join(f"{n:,} of {_duration(2 ** i)}-{_duration(2 ** (i + 1))}" for i, n in enumerate(histogram) if n)


def asleep_text(asleep: list[dict]) -> str:
    """'2 thread(s) asleep the whole window, not in these figures: 1 x rust_tonic in futex_do_wait, 1 x ...'"""
    parts = ", ".join(f"{n} x {name or '?'} in {wchan or 'an unknown place'}" for name, wchan, n in sleepers(asleep))
    return f"{len(asleep)} thread(s) asleep the whole window, not in these figures: {parts}"


def wakers_text(reason: str, row: dict) -> str:
    """'idle-poll: woken by h2load: sendto() -> ... 81 %, swapper/0: ... 12 %' (a row of wakers.py's waker_rows)."""
    return f"{reason}: woken by " + ", ".join(f"{w['waker']} {_pct(w['share_pct'])}" for w in row["wakers"])


def _pct(share: float) -> str:
    return "<1 %" if share < 0.5 else f"{share:.0f} %"


def notes(name: str, rec: dict, verdicts: bool = True) -> list[str]:
    """The window, the spread of single waits, the socket figures and (verdicts) the verdict, as sentences."""
    rps = f", {rec['req_per_s']:,.0f} req/s" if rec.get("req_per_s") else ""
    threads = f" over {rec['threads']} thread(s)" if rec.get("threads") else ""
    lines = [f"{name}: {rec.get('waits') or 0:,} waits, {rec.get('off_cpu_s') or 0:.2f} s off CPU{threads} in a "
             f"{rec.get('window_s') or 0:.1f} s window{rps}; single waits: {histogram_text(rec.get('histogram') or [])}"]
    if s := rec.get("sockets"):
        rtt, minrtt = s.get("server_rtt_ms_median"), s.get("server_minrtt_ms")
        lines.append(f"{name}: TCP, {s['server_socket_samples']} samples of its connections: written data held back "
                     f"in {100 * s['held_share']:.0f} % of them; smoothed RTT "
                     + (f"{rtt:.3f} ms (minimum {minrtt:.3f} ms)" if rtt is not None and minrtt is not None else "-")
                     + (f"; the peer's delayed-ACK timeout {s['peer_ato_ms_median']:.0f} ms"
                        if s.get("peer_ato_ms_median") else ""))
    if (wakes := rec.get("wakes")) and wakes.get("waits_us"):
        lines.append(f"{name}: who woke them: {wakes['paired']:,} of {wakes['waits']:,} waits paired with the wake-up "
                     f"that ended them ({100 * wakes['paired_us'] / wakes['waits_us']:.0f} % of their time off CPU; "
                     f"{wakes['wakeups']:,} wake-ups recorded)")
    lines += [f"{name}: {terminal(wakers_text(reason, row))}" for reason, row in (rec.get("wakers") or {}).items()]
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
    rows = table_rows(records)
    if fmt == "json":
        return json.dumps({"rows": rows, "servers": records}, indent=2, sort_keys=True, default=str) + "\n"
    text = render(rows, COLUMNS, fmt)
    if fmt in ("table", "markdown"):
        text += "\n" + "\n".join(line for name, rec in records.items() for line in notes(name, rec, verdicts)) + "\n"
    return text
