"""The gap between two servers explained by mechanism, in words: analyze/mechanism.py's Gap said as the
headline and the sentences `report.py compare` prints (and its JSON keeps beside the figures they were
made from), and the names of the kernel figures in its table.

The indirect cost of a syscall said (its figures: analyze/indirect.py): the line that quotes the record, the
sentence of the user code the extra writes slow (in the mechanism behind a gap) and the ruler check's verdict
where the syscalls per request predict a ratio.

A stalled window said: its mechanism, then the evidence (analyze/stall.py's figures), each line only
when its figures hold it, and the replays of its load after the window (measure/connections.py's records).
"""
from __future__ import annotations

import math

from rpcprof.analyze.indirect import IndirectCost, SlowedWrites, syscalls_explain
from rpcprof.analyze.mechanism import Differing, Finding, Gap, Send, Writes, gap_findings
from rpcprof.analyze.rules_file import Groups
from rpcprof.analyze.stall import Evidence, evidence
from rpcprof.analyze.timeline import SLICE_S

# each kernel figure (analyze/mechanism.py's kernel_table) by its name in a table and a sentence
FIGURE_NAMES = {
    "writes_per_req": "write syscalls per request", "bytes_per_write": "bytes per write",
    "req_per_write": "requests per write", "reads_per_req": "read syscalls per request",
    "bytes_per_read": "bytes per read", "eagain_reads_per_req": "reads that found nothing (EAGAIN) per request",
    "waits_per_req": "epoll waits per request", "futex_per_req": "futex calls per request",
    "switches_per_req": "context switches per request", "wakeups_per_req": "wake-ups issued per request",
    "involuntary_per_req": "involuntary context switches per request", "page_faults_per_req": "page faults per request",
    "syscalls_per_req": "syscalls per request",
    "named_per_req": "request-path syscalls per request (those counted by name)",
}


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def batching_text(w: Writes) -> str:
    """'writes once per 44 responses (0.02 write syscalls/req, 2,300 B per write)'."""
    per, writes = w.req_per_write, w.per_req
    if not per:
        return f"{writes:.2f} write syscalls per request"
    how = ("writes once per response" if 0.8 <= per <= 1.25 else
           f"writes {1 / per:.1f} times per response" if per < 0.8 else
           f"writes once per {per:.{0 if per >= 2 else 1}f} responses")
    size = w.bytes_per_write
    return f"{how} ({writes:.2f} write syscalls/req" + (f", {size:,.0f} B per write)" if size is not None else ")")


def send_text(base: str, other: str, send: Send) -> str:
    """How each server writes where the counts differ (and the user code extra writes slow), else its cost per write."""
    if send.differ:
        return f" {base} {batching_text(send.a)}, {other} {batching_text(send.b)}." + (
            slowed_text(send.slowed) if send.slowed else "")
    text = f" Both make about as many write syscalls ({send.a.per_req:.2f} and {send.b.per_req:.2f} per request)"
    if send.us_per_write:
        per_a, per_b = send.us_per_write
        text += f"; send costs {_num(per_a)} µs per write in {base}, {_num(per_b)} in {other}"
        size_a, size_b = send.a.bytes_per_write, send.b.bytes_per_write
        if size_a is not None and size_b is not None:
            text += f" ({size_a:,.0f} and {size_b:,.0f} B per write)"
    return text + "."


def differing_text(base: str, other: str, differing: list[Differing]) -> str:
    """' Epoll waits per request: 0.50 in base, 0.00 in other; ...' for each kernel figure that differs."""
    text = "; ".join(f"{FIGURE_NAMES[x.name]}: {_num(x.a)} in {base}, {_num(x.b)} in {other}" for x in differing)
    return " " + text[:1].upper() + text[1:] + "." if differing else ""


def finding_text(gap: Gap, f: Finding) -> str:
    """The category's difference (with its share of the gap where one means something), the sub-categories
    that moved most, and the kernel figures behind it."""
    d, base, other = f.delta_us, gap.base, gap.other
    share = 100 * d / gap.delta if f.with_share else 0.0
    share = f"{share:.0f} % of the difference" if share >= 0 else f"against the difference, {-share:.0f} % of its size"
    text = (f"{f.category}: {other} spends {abs(d):.2f} µs/req {'less' if d < 0 else 'more'} than {base} "
            f"({f.b_us:.2f} vs {f.a_us:.2f}; {share})" if f.with_share else
            f"{f.category}: {f.b_us:.2f} vs {f.a_us:.2f} µs/req")
    text += (", of which " + ", ".join(f"{g} {delta:+.2f}" for g, delta in f.subs) if f.subs else "") + "."
    return text + (send_text(base, other, f.send) if f.send else differing_text(base, other, f.differing))


def explain_gap(base: str, other: str, us: dict[str, dict[str, float]], syscalls: dict[str, dict | None],
                category_groups: Groups, indirect=None) -> tuple[str, list[dict]]:
    """(headline, findings said): analyze/mechanism.py's gap_findings (its arguments) in words, each finding as
    compare keeps it: its figures (category, delta_us, share_of_gap), its sentence (text) and the figures behind
    the sentence (sources)."""
    gap = gap_findings(base, other, us, syscalls, category_groups, indirect=indirect)
    headline = (f"{other} needs {abs(gap.delta):.2f} CPU µs per request {'less' if gap.delta < 0 else 'more'} than "
                f"{base} ({gap.total_b:.2f} vs {gap.total_a:.2f}).")
    return headline, [{"category": f.category, "delta_us": f.delta_us, "share_of_gap": f.share_of_gap,
                                 "text": finding_text(gap, f), "sources": f.sources} for f in gap.findings]


def summary_line(cost: IndirectCost) -> str:
    """One line: the figure with its interval, and what it rests on."""
    return (f"user code slowed by a syscall: {cost.user.slope:.2f} µs/req per extra syscall per request "
            f"[{cost.user.low:.2f} to {cost.user.high:.2f}], from {cost.user.n} windows of the calibration server "
            f"({cost.source}; the cause, caches and predictors evicted, is inferred: no PMU counts it here)")


def slowed_text(s: SlowedWrites) -> str:
    """' Of the gap, ~X µs/req is user code slowed by the extra writes (...)'."""
    return (f" Of the gap, ~{s.us:.2f} µs/req [{s.low:.2f}-{s.high:.2f}] is user code in {s.more} slowed by the extra "
            f"writes ({s.extra:.2f} more write syscalls/req than {s.less} × {s.per_syscall:.2f} µs each, measured on "
            "the calibration server; caches and predictors evicted: inferred, not counted, no PMU here).")


def ruler_verdict(row: dict, base: dict, sc_base: float, sc_other: float, cost: IndirectCost) -> str:
    """The verdict of a ruler check that has an expected ratio (analyze/indirect.py's ruler_expectation):
    DISAGREE only when the measured interval misses the expected one, and then how much of the ruler's own
    difference the syscalls explain."""
    why = (f"expected ^{row['expected_ratio']:.2f} [{row['expected_low']:.2f}-{row['expected_high']:.2f}] from the "
           f"syscalls per request ({row['server']} {sc_other:.2f}, {base['server']} {sc_base:.2f}) and the ruler's "
           f"{cost.ruler.slope:.3f} µs/req per syscall on the calibration server")
    if row["agrees"]:
        return "agree within the sampling error; " + why
    if row["expected_agrees"]:
        return "agree with the " + why + ": the ruler's extra cost is the syscalls' indirect cost"
    a, b = base["us_per_req"], row["us_per_req"]
    err = 2 * math.hypot(base["us_per_req_err"], row["us_per_req_err"])
    return (f"DISAGREE beyond the sampling error and the {why}: the same work costs {a:.3f} µs/req in "
            f"{base['server']} and {b:.3f} in {row['server']} (±{err:.3f}), of which the syscalls explain "
            f"{syscalls_explain(cost, sc_base, sc_other):.3f} µs/req")


def evidence_lines(e: Evidence) -> list[str]:
    """The answers' stop, then the connections, the flow control and the streams allowed where they speak."""
    lines = [f"answers stopped within the window's first {e.answered_for_s:.1f} s of {e.window_s:.3g} s, after "
             f"{e.answered:,} requests, the server's CPU idle from then on, with {e.in_flight:,} requests in flight"]
    if e.closed is not None:
        lines.append(f"{e.closed} of the {e.connections} connection(s) h2load opened were closed by the window's "
                     "end (h2load closes and reopens none of its own in a timed window)")
    elif e.still_open is not None:
        lines.append(f"its {e.still_open} connection(s) stayed open: it stopped answering on them (where its threads "
                     "waited: the off-CPU window)")
    if f := e.flow:
        raised = " (raised at its start)" if f.raised else ""
        lines.append(f"each connection carried {e.per_connection:,} requests of {f.message_bytes} B, {f.need:,} B "
                     f"against the {f.grant:,} B connection flow-control window the server grants{raised}, credited "
                     "back as it reads: the client waits on flow control, and sends a request's message in pieces "
                     "when the window runs short")
    if e.streams_allowed is not None:
        lines.append(f"the server allows {e.streams_allowed:,} concurrent streams on a connection, fewer than the "
                     f"{e.per_connection:,} asked: the client queues the rest")
    if e.replays:
        lines.append("replayed after the window, each on one new connection with nghttp: "
                     + "; ".join(replay_line(r, e.connection_window) for r in e.replays))
    return lines


def replay_line(r: dict, window: int) -> str:
    """One replay (measure/connections.parse_replay) said: what was sent, what was answered, how it ended;
    window: the connection window the server granted at the start."""
    n, size = r["requests"], r["message_bytes"]
    head = f"{n:,} requests of {size} B ({n * size:,} B)"
    ended = ("" if r["answered"] == n else
             " and ended the connection with " + ("a GOAWAY" if r.get("goaway") else
                                                 f"{r['rst_streams']} RST_STREAM" if r.get("rst_streams") else
                                                 "neither GOAWAY nor RST_STREAM"))
    split = r.get("split")
    if not split:
        return f"{head}: none split, {r['answered']:,} answered{ended}"
    left = window + split["credited_before"] - split["data_before"]
    return (f"{head}: {split['data_before']:,} B of DATA sent and {split['credited_before']:,} B credited back left "
            f"{left:,} B of the {window:,} B window, and the client sent stream {split['stream']}'s {size} B message "
            f"as a DATA frame of {split['sent']} B without END_STREAM, the rest to follow; the server answered "
            f"{r['answered']:,} of the {n:,}{ended}")


def describe(s: dict, connections: int | None = None, streams: int | None = None) -> str:
    """One line: the mechanism, then the evidence. A record made before the figures were kept all is said
    from them with the run's C and S when the caller knows them, else in its own saved lines."""
    if "connections_asked" not in s and connections and streams:
        s = {**s, "connections_asked": connections, "streams": streams, "slice_s": SLICE_S}
    if "connections_asked" not in s:
        return f"STALLED ({s['mechanism']}): " + "; ".join(s["evidence"])
    e = evidence(s)
    return f"STALLED ({e.mechanism.value}): " + "; ".join(evidence_lines(e))
