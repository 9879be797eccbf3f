"""Off-CPU waits: where a server's threads waited, why, and whether TCP held the data back.

From an off-CPU window's saved files (capture/offcpu.py, measure/sockets.py), rerunnable on them:
- wait_rows: per wait reason (categorize.yaml `waits:`), the time off CPU, its share, the number of
  waits, the mean wait and waits per request;
- socket_summary: over every sample of the server's connections, how often data was held back with
  room in the congestion window (notsent > 0 while unacked < cwnd), and the RTT and delayed-ACK
  timeout of both ends;
- stall_verdict: a Nagle / delayed-ACK stall, named only when the numbers show one: in most samples
  the server held written data behind an unacknowledged segment, and its smoothed RTT is far above the
  path's minimum (the ACK that releases the data comes late because the peer delays it);
- wakers (analyze/wakers.py): per wait reason, who ended the waits (offwake.folded), when recorded;
- asleep_whole_window: the threads that never switched in the window (which the recording cannot see),
  from /proc snapshots at its ends (measure/threads.py), with the kernel function each sleeps in.
"""
from __future__ import annotations

import gzip
import statistics
from pathlib import Path

from rpcprof.analyze.categorize import Rules, categorize, open_folded
from rpcprof.analyze.sockets import parse_log
from rpcprof.analyze.wakers import waker_rows
from rpcprof.rundir import OFFCPU_FOLDED, OFFWAKE_FOLDED, SOCKETS_LOG, count_path, load_run, saved_copy

HELD_SHARE = 0.5          # held in at least half of the server's socket samples ...
RTT_OVER_MIN = 20         # ... and a smoothed RTT 20x the minimum ...
RTT_FLOOR_MS = 1.0        # ... and at least 1 ms: ACKs come late


def wait_rows(folded: Path, rules: Rules, requests: int | None) -> list[dict]:
    """One row per wait reason, in the rules' order, with what it cost (reasons never seen are left out)."""
    waits = rules.using(view="waits")
    timed = categorize(open_folded(saved_copy(folded)), waits, 1)
    counted_path = saved_copy(count_path(folded))
    counts = categorize(open_folded(counted_path), waits, 1).weights if counted_path.exists() else {}
    rows = []
    for reason in waits.all_categories:
        us = timed.weights.get(reason, 0)
        if not us:
            continue
        n = counts.get(reason)
        rows.append({"reason": reason, "ms": us / 1e3, "share_pct": 100 * us / timed.total, "waits": n,
                     "mean_us": us / n if n else None,
                     "waits_per_req": n / requests if n and requests else None,
                     "description": waits.descriptions.get(reason, "")})
    return rows


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def socket_summary(log: Path, ports: list[int]) -> dict | None:
    """What the server's connections looked like over the window (a SocketSampler log); None without samples."""
    log = saved_copy(log)
    if not log.exists():
        return None
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt", errors="replace") as f:
        return socket_figures(f.read(), ports)


def socket_figures(log_text: str, ports: list[int]) -> dict | None:
    samples = parse_log(log_text)
    server = [s for _, socks in samples for s in socks if s.local_port in ports]
    peer = [s for _, socks in samples for s in socks if s.peer_port in ports and s.local_port not in ports]
    if not server:
        return None
    held = [s for s in server if s.get("notsent") > 0 and 0 < s.get("unacked") < max(1, s.get("cwnd"))]
    return {
        "samples": len(samples), "server_socket_samples": len(server),
        "held_share": len(held) / len(server),
        "held_notsent_bytes_median": _median([s.get("notsent") for s in held]),
        "held_unacked_median": _median([s.get("unacked") for s in held]),
        "cwnd_median": _median([s.get("cwnd") for s in server if "cwnd" in s.info]),
        "server_rtt_ms_median": _median([s.get("rtt") for s in server if "rtt" in s.info]),
        "server_minrtt_ms": min((s.get("minrtt") for s in server if "minrtt" in s.info), default=None),
        "server_ato_ms_median": _median([s.get("ato") for s in server if "ato" in s.info]),
        "peer_ato_ms_median": _median([s.get("ato") for s in peer if "ato" in s.info]),
        "peer_socket_samples": len(peer),
    }


def stall_verdict(sockets: dict | None, rows: list[dict]) -> str | None:
    """`NAGLE/DELAYED-ACK: ...` when the samples show written data held behind an unacknowledged
    segment most of the time, with ACKs arriving far later than the path allows; else None."""
    if not sockets or sockets["held_share"] < HELD_SHARE:
        return None
    rtt, minrtt = sockets["server_rtt_ms_median"], sockets["server_minrtt_ms"]
    if rtt is None or minrtt is None or rtt < RTT_FLOOR_MS or rtt < RTT_OVER_MIN * max(minrtt, 1e-3):
        return None
    ato = sockets["peer_ato_ms_median"]
    recv = next((r for r in rows if r["reason"] == "socket-data"), None)
    text = (f"NAGLE/DELAYED-ACK: in {100 * sockets['held_share']:.0f} % of {sockets['server_socket_samples']} samples "
            f"of the server's connections, {sockets['held_notsent_bytes_median']:,.0f} B it had written were not "
            f"sent, held behind {sockets['held_unacked_median']:.0f} unacknowledged segment(s) with room in the "
            f"congestion window (cwnd {sockets['cwnd_median']:.0f}): Nagle's algorithm waits for that ACK, which "
            f"comes late - the server's smoothed RTT is {rtt:.1f} ms against {minrtt:.3f} ms at best"
            + (f", the peer may delay an ACK by up to {ato:.0f} ms" if ato else "") + ".")
    if recv and recv["mean_us"]:
        text += (f" Meanwhile its threads waited for socket data {recv['share_pct']:.0f} % of their off-CPU time "
                 f"(mean wait {recv['mean_us'] / 1e3:.2f} ms).")
    return text + " TCP_NODELAY on the server's sockets (or writing each batch whole) removes the stall."


def _duration(us: float) -> str:
    return f"{us:g} µs" if us < 1000 else f"{us / 1e3:g} ms" if us < 1e6 else f"{us / 1e6:g} s"


CONTENDED_SHARE = 0.2     # other programs took the CPU from a runnable thread for >= 20 % of the off-CPU time


def contention_verdict(stats: dict, window_s: float | None) -> str | None:
    """`CPU-CONTENDED: ...` when other programs ran on the server's CPU while its threads were ready to run."""
    taken = stats.get("runnable_to") or {}
    total = stats.get("off_cpu_us") or 0
    us = sum(taken.values())
    if not total or us < CONTENDED_SHARE * total:
        return None
    who = ", ".join(f"{name} {v / 1e6:.2f} s" for name, v in list(taken.items())[:4])
    return (f"CPU-CONTENDED: its threads were ready to run but other programs had the CPU for {us / 1e6:.2f} s"
            + (f" of the {window_s:.1f} s window" if window_s else "") + f" ({100 * us / total:.0f} % of the time "
            f"off CPU): {who}. The server's CPU was shared, so its figures are not its own alone; keep other "
            "work off its CPUs (--server-cpus).")


def histogram_text(histogram: list[int]) -> str:
    """'38 waits of 32.8-65.5 ms, ...' for the log2-µs buckets that hold waits."""
    return ", ".join(f"{n} of {_duration(2 ** i)}-{_duration(2 ** (i + 1))}" for i, n in enumerate(histogram) if n)


def summarise(out: Path, rules: Rules, ports: list[int], requests: int | None, stats: dict) -> dict:
    """The off-CPU record of one window from its saved files: reasons, sockets, verdict."""
    rows = wait_rows(out / OFFCPU_FOLDED, rules, requests)
    sockets = socket_summary(out / SOCKETS_LOG, ports)
    wakes = saved_copy(out / OFFWAKE_FOLDED)
    return {"waits": stats.get("waits"), "threads": stats.get("threads"),
            "off_cpu_s": (stats.get("off_cpu_us") or 0) / 1e6, "cut": stats.get("cut"),
            "histogram": stats.get("histogram"), "reasons": rows, "sockets": sockets, "ports": ports,
            "runnable_to": stats.get("runnable_to"), "runnable_own_us": stats.get("runnable_own_us"),
            "verdict": stall_verdict(sockets, rows), "contention": contention_verdict(stats, stats.get("window_s")),
            "wakes": stats.get("wakes"), "wakers": waker_rows(wakes, rules) if wakes.exists() else None}


def asleep_whole_window(before: dict[int, dict], after: dict[int, dict]) -> list[dict]:
    """The threads in both snapshots that never switched between them and are not running at the end."""
    return [{k: a[k] for k in ("tid", "name", "state", "wchan")} for tid, a in sorted(after.items())
            if tid in before and before[tid]["switches"] == a["switches"] and a["state"] != "R"]


def asleep_text(asleep: list[dict]) -> str:
    """'2 thread(s) asleep the whole window, not in these figures: 1 x rust_tonic in futex_do_wait, 1 x ...'"""
    groups: dict[tuple, int] = {}
    for t in asleep:
        key = (t.get("name") or "?", t.get("wchan") or "an unknown place")
        groups[key] = groups.get(key, 0) + 1
    parts = ", ".join(f"{n} x {name} in {wchan}" for (name, wchan), n in sorted(groups.items(), key=lambda kv: -kv[1]))
    return f"{len(asleep)} thread(s) asleep the whole window, not in these figures: {parts}"


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
            fresh = summarise(out, rules, saved.get("ports") or [], saved.get("requests_ok"), stats)
            saved = {**saved, **fresh}
        records[name] = saved
    return records
