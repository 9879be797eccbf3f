"""Off-CPU waits: where a server's threads waited, why, and whether TCP held the data back.

From an off-CPU window's stacks and socket samples (read from the run folder by report/waits.py, which says
these figures, and by jobs/steps.py as the window ends): the time off CPU per wait reason (categorize.yaml
`waits:`), how often TCP held written data back (socket_figures), a Nagle / delayed-ACK stall where the
numbers show one, other programs on the server's CPU while its threads were ready to run (contention), who
ended the waits (analyze/wakers.py), and the threads that never switched in the window, which the recording
cannot see (from /proc snapshots at its ends, measure/threads.py).
"""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass

from rpcprof.analyze.categorize import Rules, categorize

HELD_SHARE = 0.5          # held in at least half of the server's socket samples ...
RTT_OVER_MIN = 20         # ... and a smoothed RTT 20x the minimum ...
RTT_FLOOR_MS = 1.0        # ... and at least 1 ms: ACKs come late


def reason_rows(timed_stacks, counted_stacks, rules: Rules, requests: int | None) -> list[dict]:
    """One row per wait reason, in the rules' order, with what it cost (reasons never seen are left out):
    timed_stacks weighted by the µs off CPU, counted_stacks (None where not kept) by the number of waits."""
    waits = rules.using(view="waits")
    timed = categorize(timed_stacks, waits, 1)
    counts = categorize(counted_stacks, waits, 1).weights if counted_stacks is not None else {}
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


# a SocketSampler log (measure/sockets.py): each sample's connection ends and their tcp_info fields as ss prints them
_ADDR_LINE = re.compile(r"^(\d+)\s+(\d+)\s+(\S+):(\d+)\s+(\S+):(\d+)")
_FIELD = re.compile(r"\b(unacked|notsent|cwnd|mss|rtt|minrtt|ato|lastsnd|lastrcv|lastack|retrans|bytes_acked)"
                    r":([\d.]+)(?:/([\d.]+))?")


def parse_log(text: str) -> list[list[tuple[int, int, dict[str, float]]]]:
    """(local port, peer port, tcp_info fields) of each connection end, per sample of a SocketSampler log."""
    samples: list[list[tuple[int, int, dict[str, float]]]] = []
    info: dict[str, float] | None = None
    for line in text.splitlines():
        if line.startswith("# t="):
            samples.append([])
            info = None
        elif samples and (m := _ADDR_LINE.match(line.strip())) and not line[:1].isspace():
            info = {}
            samples[-1].append((int(m.group(4)), int(m.group(6)), info))
        elif info is not None:
            info.update((key, float(value)) for key, value, _ in _FIELD.findall(line))
    return samples


def socket_figures(log_text: str, ports: list[int]) -> dict | None:
    """Over every sample of the server's connections (ports), how often data was held back with room in the
    congestion window (notsent > 0 while unacked < cwnd), and the RTT and delayed-ACK timeout of both ends."""
    samples = parse_log(log_text)
    server = [info for socks in samples for local, _, info in socks if local in ports]
    peer = [info for socks in samples for local, remote, info in socks if remote in ports and local not in ports]
    if not server:
        return None
    held = [s for s in server if s.get("notsent", 0) > 0 and 0 < s.get("unacked", 0) < max(1, s.get("cwnd", 0))]

    def median(socks: list[dict], key: str) -> float | None:
        values = [s[key] for s in socks if key in s]
        return statistics.median(values) if values else None
    return {
        "samples": len(samples), "server_socket_samples": len(server),
        "held_share": len(held) / len(server),
        "held_notsent_bytes_median": median(held, "notsent"),
        "held_unacked_median": median(held, "unacked"),
        "cwnd_median": median(server, "cwnd"),
        "server_rtt_ms_median": median(server, "rtt"),
        "server_minrtt_ms": min((s["minrtt"] for s in server if "minrtt" in s), default=None),
        "server_ato_ms_median": median(server, "ato"),
        "peer_ato_ms_median": median(peer, "ato"),
        "peer_socket_samples": len(peer),
    }


@dataclass(frozen=True)
class NagleStall:
    """Written data held behind an unacknowledged segment in most socket samples, with ACKs far later than
    the path allows: Nagle's algorithm waiting on a delayed ACK."""
    held_share: float                 # of the server's socket samples
    samples: int
    held_bytes: float                 # median bytes written and not sent, where held
    unacked: float                    # median unacknowledged segments, where held
    cwnd: float
    rtt_ms: float                     # the server's smoothed RTT (median) and its minimum
    minrtt_ms: float
    peer_ato_ms: float | None         # the peer's delayed-ACK timeout (median), where sampled
    socket_data_pct: float | None = None      # the share of the off-CPU time spent waiting for socket data ...
    socket_data_mean_us: float | None = None  # ... and the mean wait, where those waits were counted


def nagle_stall(sockets: dict | None, rows: list[dict]) -> NagleStall | None:
    """The stall when written data sat behind an unacknowledged segment in most samples, the server's smoothed RTT
    far above the path's minimum (the peer delays the ACK that releases the data); else None."""
    if not sockets or sockets["held_share"] < HELD_SHARE:
        return None
    rtt, minrtt = sockets["server_rtt_ms_median"], sockets["server_minrtt_ms"]
    if rtt is None or minrtt is None or rtt < RTT_FLOOR_MS or rtt < RTT_OVER_MIN * max(minrtt, 1e-3):
        return None
    recv = next((r for r in rows if r["reason"] == "socket-data"), None)
    waited = recv is not None and bool(recv["mean_us"])
    return NagleStall(sockets["held_share"], sockets["server_socket_samples"], sockets["held_notsent_bytes_median"],
                      sockets["held_unacked_median"], sockets["cwnd_median"], rtt, minrtt, sockets["peer_ato_ms_median"],
                      recv["share_pct"] if waited else None, recv["mean_us"] if waited else None)


CONTENDED_SHARE = 0.2     # other programs took the CPU from a runnable thread for >= 20 % of the off-CPU time


@dataclass(frozen=True)
class Contention:
    """Other programs ran on the server's CPU while its threads were ready to run."""
    taken_us: float                   # the time they took from the server's runnable threads
    off_cpu_us: float                 # the threads' whole time off CPU
    window_s: float | None
    programs: list[tuple[str, float]]  # who took it (the first 4, as recorded) and their µs


def contention(stats: dict, window_s: float | None) -> Contention | None:
    """Contention when other programs took CONTENDED_SHARE or more of the time off CPU; else None."""
    taken = stats.get("runnable_to") or {}
    total = stats.get("off_cpu_us") or 0
    us = sum(taken.values())
    if not total or us < CONTENDED_SHARE * total:
        return None
    return Contention(us, total, window_s, list(taken.items())[:4])


def asleep_whole_window(before: dict[int, dict], after: dict[int, dict]) -> list[dict]:
    """The threads in both snapshots that never switched between them and are not running at the end."""
    return [{k: a[k] for k in ("tid", "name", "state", "wchan")} for tid, a in sorted(after.items())
            if tid in before and before[tid]["switches"] == a["switches"] and a["state"] != "R"]


def sleepers(asleep: list[dict]) -> list[tuple[str | None, str | None, int]]:
    """(thread name, kernel function it sleeps in, how many) of the threads asleep the whole window, the most
    first; None where not known."""
    groups = Counter((t.get("name") or None, t.get("wchan") or None) for t in asleep)
    return [(name, wchan, n) for (name, wchan), n in groups.most_common()]
