"""The gap between two servers explained by mechanism, in words: analyze/mechanism.py's Gap said as the
headline and the sentences `report.py compare` prints (and its JSON keeps beside the figures they were
made from), and the names of the kernel figures in its table.

The indirect cost of a syscall said (its figures: analyze/indirect.py): the line that quotes the record, the
sentence of the user code the extra writes slow (in the mechanism behind a gap) and the ruler check's verdict
where the syscalls per request predict a ratio.
"""
from __future__ import annotations

import math

from rpcprof.analyze.indirect import IndirectCost, SlowedWrites, syscalls_explain
from rpcprof.analyze.mechanism import Differing, Finding, Gap, Send, Writes, gap_findings
from rpcprof.analyze.rules_file import Groups

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
        slowed = slowed_text(send.slowed) if send.slowed else ""
        return f" {base} {batching_text(send.a)}, {other} {batching_text(send.b)}." + slowed
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


def headline_text(gap: Gap) -> str:
    word = "less" if gap.delta < 0 else "more"
    return (f"{gap.other} needs {abs(gap.delta):.2f} CPU µs per request {word} than {gap.base} "
            f"({gap.total_b:.2f} vs {gap.total_a:.2f}).")


def finding_text(gap: Gap, f: Finding) -> str:
    """The category's difference (with its share of the gap where one means something), the sub-categories
    that moved most, and the kernel figures behind it."""
    d, base, other = f.delta_us, gap.base, gap.other
    text = (f"{f.category}: {other} spends {abs(d):.2f} µs/req {'less' if d < 0 else 'more'} than {base} "
            f"({f.b_us:.2f} vs {f.a_us:.2f}; {100 * d / gap.delta:.0f} % of the difference)" if f.with_share else
            f"{f.category}: {f.b_us:.2f} vs {f.a_us:.2f} µs/req")
    parts = [f"{g} {delta:+.2f}" for g, delta in f.subs]
    text += (", of which " + ", ".join(parts) if parts else "") + "."
    return text + (send_text(base, other, f.send) if f.send else differing_text(base, other, f.differing))


def explain_gap(base: str, other: str, us: dict[str, dict[str, float]], syscalls: dict[str, dict | None],
                category_groups: Groups, indirect=None) -> tuple[str, list[dict]]:
    """(headline, findings said): analyze/mechanism.py's gap_findings (its arguments) in words, each finding as
    compare keeps it: its figures (category, delta_us, share_of_gap), its sentence (text) and the figures behind
    the sentence (sources)."""
    gap = gap_findings(base, other, us, syscalls, category_groups, indirect=indirect)
    return headline_text(gap), [{"category": f.category, "delta_us": f.delta_us, "share_of_gap": f.share_of_gap,
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
