"""The gap between two servers explained by mechanism, from the run's own figures.

Input, per server: CPU µs per request by level-2 group (the profile's shares × the unprofiled CPU per
request, as `report.py compare --level 2` shows them) and the kernel's per-request figures of the syscall
window (result.json `syscalls`). Output: one finding per category that carries the difference, largest
first, each a sentence and the figures it was made from (server, key in result.json, value), so that
every number in the sentence can be looked up in the run folder. Nothing here knows a server by name.

Which kernel figures speak for which category:
    send     write-family syscalls per request, bytes per write, CPU per write
    recv     read-family syscalls per request, bytes per read, reads that found nothing (EAGAIN)
    runtime  epoll waits, futex calls, context switches and wake-ups per request
A figure is named as a mechanism only where the two servers differ by FACTOR or more.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from rpcprof.analyze.indirect import gap_sentence
from rpcprof.analyze.rules_file import Groups
from rpcprof.syscall_families import READS, WAITS, WRITES

FACTOR = 1.5              # a kernel figure "differs" when one server's is this many times the other's
COVER = 0.9               # findings until they carry this much of the summed absolute differences ...
MAX_FINDINGS = 4          # ... or this many
MIN_US = 0.05             # a category's difference below this (µs/req) is not a finding


@dataclass
class Figure:
    label: str            # words for the sentence
    key: str              # where it is in result.json
    value: float | None


@dataclass
class Finding:
    category: str
    delta_us: float                   # other − base, µs per request
    share_of_gap: float               # of the total difference, signed fraction
    text: str
    sources: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"category": self.category, "delta_us": self.delta_us, "share_of_gap": self.share_of_gap,
                "text": self.text, "sources": self.sources}


def _get(record: dict, dotted: str):
    node = record
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def kernel_figures(syscalls: dict | None) -> dict[str, Figure]:
    """The per-request kernel figures of one server's syscall window (None where not measured)."""
    sc = syscalls or {}
    by = sc.get("by_syscall_per_req") or {}
    if not set(by) - {"other"}:
        # no syscall named (the per-syscall tracepoints were not found: every call is `other`): the
        # family figures were not measured, and 0 write syscalls would be a figure nobody measured
        by = {}
        if sc.get("writes_per_req") == 0 and not (sc.get("by_syscall") or {}).keys() - {"other"}:
            sc = {**sc, "writes_per_req": None}

    def summed(names, key):
        present = [n for n in names if n in by]
        return Figure("", key, sum((by[n] for n in present), 0.0) if by else None)

    figures = {
        "writes_per_req": Figure("write syscalls per request", "syscalls.writes_per_req", sc.get("writes_per_req")),
        "bytes_per_write": Figure("bytes per write", "syscalls.bytes_per_write", sc.get("bytes_per_write")),
        "req_per_write": Figure("requests per write", "syscalls.req_per_write", sc.get("req_per_write")),
        "reads_per_req": Figure("read syscalls per request", "syscalls.reads_per_req", sc.get("reads_per_req")),
        "bytes_per_read": Figure("bytes per read", "syscalls.bytes_per_read", sc.get("bytes_per_read")),
        "eagain_reads_per_req": Figure("reads that found nothing (EAGAIN) per request",
                                       "syscalls.eagain_reads_per_req", sc.get("eagain_reads_per_req")),
        "waits_per_req": summed(WAITS, "syscalls.by_syscall_per_req.epoll_wait"),
        "futex_per_req": Figure("futex calls per request", "syscalls.by_syscall_per_req.futex",
                                by.get("futex", 0.0) if by else None),
        "switches_per_req": Figure("context switches per request", "syscalls.events_per_req.context_switches",
                                   _get(sc, "events_per_req.context_switches")),
        "wakeups_per_req": Figure("wake-ups issued per request", "syscalls.events_per_req.wakeups_issued",
                                  _get(sc, "events_per_req.wakeups_issued")),
    }
    figures["waits_per_req"].label = "epoll waits per request"
    if figures["writes_per_req"].value is None and by:
        figures["writes_per_req"] = summed(WRITES, "syscalls.by_syscall_per_req.(write family)")
        figures["writes_per_req"].label = "write syscalls per request"
    if figures["reads_per_req"].value is None and by:
        figures["reads_per_req"] = summed(READS, "syscalls.by_syscall_per_req.(read family)")
        figures["reads_per_req"].label = "read syscalls per request"
    if figures["req_per_write"].value is None and figures["writes_per_req"].value:
        figures["req_per_write"].value = 1 / figures["writes_per_req"].value
        figures["req_per_write"].key = "1 / syscalls.writes_per_req"
    return figures


EXTRA_FIGURES = (("involuntary_per_req", "involuntary context switches per request", "events_per_req.involuntary_switches"),
                 ("page_faults_per_req", "page faults per request", "events_per_req.page_faults"),
                 ("syscalls_per_req", "syscalls per request", "per_req"),
                 ("named_per_req", "request-path syscalls per request (those counted by name)", "named_per_req"))


def kernel_table(syscalls: dict | None) -> dict[str, Figure]:
    """Every per-request kernel figure of the syscall window, for tables: kernel_figures and a few more."""
    figures = kernel_figures(syscalls)
    for name, label, key in EXTRA_FIGURES:
        figures[name] = Figure(label, f"syscalls.{key}", _get(syscalls or {}, key))
    return figures


def differs(a: float | None, b: float | None) -> bool:
    """Whether two per-request figures differ by FACTOR or more (both measured)."""
    if a is None or b is None or (math.isnan(a) or math.isnan(b)):
        return False
    lo, hi = sorted((abs(a), abs(b)))
    return hi > 0 and (lo == 0 or hi / lo >= FACTOR) and hi - lo >= 0.01


def _batching(fig: dict[str, Figure]) -> str:
    per = fig["req_per_write"].value
    writes = fig["writes_per_req"].value
    if not per:
        return f"{writes:.2f} write syscalls per request"
    if 0.8 <= per <= 1.25:
        how = "writes once per response"
    elif per > 1.25:
        how = f"writes once per {per:.0f} responses" if per >= 2 else f"writes once per {per:.1f} responses"
    else:
        how = f"writes {1 / per:.1f} times per response"
    size = fig["bytes_per_write"].value
    return f"{how} ({writes:.2f} write syscalls/req" + (f", {size:,.0f} B per write)" if size is not None else ")")


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def _send(base, other, fa, fb, us_a, us_b, indirect=None):
    """Sentences and the figures used, for send (with the indirect cost of a syscall, the user code the
    extra writes slow down)."""
    used = ["writes_per_req", "req_per_write", "bytes_per_write"]
    wa, wb = fa["writes_per_req"].value, fb["writes_per_req"].value
    if wa is None or wb is None:
        return "", []
    if differs(wa, wb):
        more = gap_sentence(indirect, wa, wb, base, other) if indirect is not None else ""
        return f" {base} {_batching(fa)}, {other} {_batching(fb)}." + more, used
    text = f" Both make about as many write syscalls ({wa:.2f} and {wb:.2f} per request)"
    if wa and wb:
        text += f"; send costs {_num(us_a / wa)} µs per write in {base}, {_num(us_b / wb)} in {other}"
        size_a, size_b = fa["bytes_per_write"].value, fb["bytes_per_write"].value
        if size_a is not None and size_b is not None:
            text += f" ({size_a:,.0f} and {size_b:,.0f} B per write)"
    return text + ".", used


def _mechanisms(base, other, fa, fb, keys):
    """' base X, other Y' for each figure of keys that differs."""
    parts, used = [], []
    for k in keys:
        a, b = fa[k].value, fb[k].value
        if differs(a, b):
            parts.append(f"{fa[k].label}: {_num(a)} in {base}, {_num(b)} in {other}")
            used.append(k)
    text = "; ".join(parts)
    return (" " + text[:1].upper() + text[1:] + "." if parts else ""), used


# the kernel figures that explain a category, by the part it plays in categorize.yaml's groups (the category
# of the reads, of the waits and switches; the writes' has a model of its own, _send)
MECHANISM_KEYS = {"reads": ["reads_per_req", "bytes_per_read", "eagain_reads_per_req"],
                  "scheduling": ["waits_per_req", "futex_per_req", "switches_per_req", "wakeups_per_req"]}


def explain_gap(base: str, other: str, us: dict[str, dict[str, float]], syscalls: dict[str, dict | None],
                category_groups: Groups, parent=lambda g: g.split("/", 1)[0], indirect=None) -> tuple[str, list[Finding]]:
    """(headline, findings): where other's CPU per request differs from base's, by category, with the
    kernel figures that differ between them. us[server][group] is CPU µs per request by level-2 group
    (level-1 names work too: no sub-category split is then given). indirect (analyze/indirect.py's
    IndirectCost): the send finding adds the user code slowed by the extra writes, where writes differ.
    category_groups: the rules file's, which name the categories of the reads, the writes and the scheduling."""
    writes = category_groups.writes
    keys = {category_groups.reads: MECHANISM_KEYS["reads"], category_groups.scheduling: MECHANISM_KEYS["scheduling"]}
    total_a, total_b = sum(us[base].values()), sum(us[other].values())
    gap = total_b - total_a
    word = "less" if gap < 0 else "more"
    headline = (f"{other} needs {abs(gap):.2f} CPU µs per request {word} than {base} "
                f"({total_b:.2f} vs {total_a:.2f}).")
    groups = list(dict.fromkeys(list(us[base]) + list(us[other])))
    by_cat: dict[str, list[str]] = {}
    for g in groups:
        by_cat.setdefault(parent(g), []).append(g)
    deltas = {c: sum(us[other].get(g, 0.0) - us[base].get(g, 0.0) for g in gs) for c, gs in by_cat.items()}
    summed = sum(abs(d) for d in deltas.values()) or 1.0
    # a share of the difference means something only when the categories do not mostly cancel: two
    # profiles of one process (py-spy's and perf's) have the same CPU per request and categories merely
    # move; a gap of 0.24 µs/req made of -2.05, +1.90 and +0.26 is not "-858 %" send (the gap at least
    # half of the summed movement, or no share)
    share_floor = max(MIN_US, 0.5 * summed)
    fa, fb = kernel_figures(syscalls.get(base)), kernel_figures(syscalls.get(other))
    findings, covered = [], 0.0
    for cat in sorted(deltas, key=lambda c: -abs(deltas[c])):
        d = deltas[cat]
        if abs(d) < MIN_US or len(findings) >= MAX_FINDINGS or covered >= COVER:
            break
        covered += abs(d) / summed
        a_us = sum(us[base].get(g, 0.0) for g in by_cat[cat])
        b_us = sum(us[other].get(g, 0.0) for g in by_cat[cat])
        text = (f"{cat}: {other} spends {abs(d):.2f} µs/req {'less' if d < 0 else 'more'} than {base} "
                f"({b_us:.2f} vs {a_us:.2f}; {100 * d / gap:.0f} % of the difference)" if abs(gap) >= share_floor else
                f"{cat}: {b_us:.2f} vs {a_us:.2f} µs/req")
        subs = sorted((g for g in by_cat[cat] if "/" in g),
                      key=lambda g: -abs(us[other].get(g, 0.0) - us[base].get(g, 0.0)))
        parts = [f"{g} {us[other].get(g, 0.0) - us[base].get(g, 0.0):+.2f}" for g in subs
                 if abs(us[other].get(g, 0.0) - us[base].get(g, 0.0)) >= MIN_US][:3]
        text += (", of which " + ", ".join(parts) if parts else "") + "."
        sources = [{"server": s, "key": f"CPU µs/req × share of {g}", "value": us[s].get(g, 0.0)}
                   for s in (base, other) for g in by_cat[cat]]
        if cat == writes:
            more, used = _send(base, other, fa, fb, a_us, b_us, indirect)
        else:
            more, used = _mechanisms(base, other, fa, fb, keys.get(cat, []))
        text += more
        sources += [{"server": s, "key": f[k].key, "value": f[k].value}
                    for k in used for s, f in ((base, fa), (other, fb))]
        if cat == writes and indirect is not None and "Of the gap" in more:
            sources.append({"server": None, "key": indirect.key(), "value": indirect.user.slope})
        findings.append(Finding(cat, d, d / gap if gap else math.nan, text, sources))
    return headline, findings
