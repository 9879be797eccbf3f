"""The gap between two servers explained by mechanism, from the run's own figures.

Input, per server: CPU µs per request by level-2 group (the profile's shares × the unprofiled CPU per
request, as `report.py compare --level 2` shows them) and the kernel's per-request figures of the syscall
window (result.json `syscalls`). Output: a Gap, one Finding per category that carries the difference,
largest first, each with the figures it was made from (server, key in result.json, value) and which of them
differ, so that every number report/mechanism.py says can be looked up in the run folder. Nothing here
knows a server by name.

Which kernel figures speak for which category:
    send     write-family syscalls per request, bytes per write, CPU per write
    recv     read-family syscalls per request, bytes per read, reads that found nothing (EAGAIN)
    runtime  epoll waits, futex calls, context switches and wake-ups per request
A figure is named as a mechanism only where the two servers differ by FACTOR or more.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from rpcprof.analyze.indirect import IndirectCost, SlowedWrites, slowed_by_writes
from rpcprof.analyze.rules_file import Groups
from rpcprof.syscall_families import READS, WAITS, WRITES

FACTOR = 1.5              # a kernel figure "differs" when one server's is this many times the other's
COVER = 0.9               # findings until they carry this much of the summed absolute differences ...
MAX_FINDINGS = 4          # ... or this many
MIN_US = 0.05             # a category's difference below this (µs/req) is not a finding


@dataclass
class Figure:
    key: str              # where it is in result.json
    value: float | None


@dataclass(frozen=True)
class Writes:
    """How one server writes: write syscalls per request, requests per write and bytes per write (None: not known)."""
    per_req: float
    req_per_write: float | None
    bytes_per_write: float | None


@dataclass(frozen=True)
class Send:
    """The mechanism of the writes' category: both servers' writes; where their counts differ (differ), the
    user code the extra writes slow (with the indirect cost); where they do not, the send CPU µs per write
    of each (where both write)."""
    a: Writes
    b: Writes
    differ: bool
    us_per_write: tuple[float, float] | None = None
    slowed: SlowedWrites | None = None


@dataclass(frozen=True)
class Differing:
    """A kernel figure (a name of kernel_figures) that differs by FACTOR or more between the two servers."""
    name: str
    a: float
    b: float


@dataclass
class Finding:
    category: str
    delta_us: float                   # other − base, µs per request
    share_of_gap: float               # of the total difference, signed fraction
    a_us: float                       # the category's µs per request in base and in other
    b_us: float
    with_share: bool                  # the gap is large enough against the categories' movement to give a share
    subs: list[tuple[str, float]] = field(default_factory=list)   # sub-categories that moved (3 at most), largest first
    send: Send | None = None          # the writes' category, where both servers' write counts are known
    differing: list[Differing] = field(default_factory=list)      # the kernel figures behind another category
    sources: list[dict] = field(default_factory=list)


@dataclass
class Gap:
    """Where other's CPU per request differs from base's: the totals and the findings, largest first."""
    base: str
    other: str
    total_a: float
    total_b: float
    findings: list[Finding] = field(default_factory=list)

    @property
    def delta(self) -> float:
        return self.total_b - self.total_a


def _get(record: dict, dotted: str):
    for part in dotted.split("."):
        record = record.get(part) if isinstance(record, dict) else None
    return record


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
        return Figure(key, sum((by[n] for n in names if n in by), 0.0) if by else None)

    plain = ("writes_per_req", "bytes_per_write", "req_per_write", "reads_per_req", "bytes_per_read",
             "eagain_reads_per_req")
    figures = {name: Figure(f"syscalls.{name}", sc.get(name)) for name in plain}
    figures["waits_per_req"] = summed(WAITS, "syscalls.by_syscall_per_req.epoll_wait")
    figures["futex_per_req"] = Figure("syscalls.by_syscall_per_req.futex", by.get("futex", 0.0) if by else None)
    figures |= {name: Figure(f"syscalls.{key}", _get(sc, key)) for name, key in (
        ("switches_per_req", "events_per_req.context_switches"), ("wakeups_per_req", "events_per_req.wakeups_issued"))}
    for name, family, kind in (("writes_per_req", WRITES, "write"), ("reads_per_req", READS, "read")):
        if figures[name].value is None and by:
            figures[name] = summed(family, f"syscalls.by_syscall_per_req.({kind} family)")
    if figures["req_per_write"].value is None and figures["writes_per_req"].value:
        figures["req_per_write"] = Figure("1 / syscalls.writes_per_req", 1 / figures["writes_per_req"].value)
    return figures


# the figures of kernel_table beside kernel_figures': name, key in the syscall record
EXTRA_FIGURES = (("involuntary_per_req", "events_per_req.involuntary_switches"),
                 ("page_faults_per_req", "events_per_req.page_faults"),
                 ("syscalls_per_req", "per_req"),
                 ("named_per_req", "named_per_req"))


def kernel_table(syscalls: dict | None) -> dict[str, Figure]:
    """Every per-request kernel figure of the syscall window, for tables: kernel_figures and a few more."""
    return kernel_figures(syscalls) | {name: Figure(f"syscalls.{key}", _get(syscalls or {}, key))
                                       for name, key in EXTRA_FIGURES}


def differs(a: float | None, b: float | None) -> bool:
    """Whether two per-request figures differ by FACTOR or more (both measured)."""
    if a is None or b is None or (math.isnan(a) or math.isnan(b)):
        return False
    lo, hi = sorted((abs(a), abs(b)))
    return hi > 0 and (lo == 0 or hi / lo >= FACTOR) and hi - lo >= 0.01


# the kernel figures send's sentence rests on
SEND_KEYS = ["writes_per_req", "req_per_write", "bytes_per_write"]


def _send(base, other, fa, fb, us_a, us_b, indirect=None) -> Send | None:
    """The Send of both servers' writes (indirect: the cost of a syscall); None where a write count is not known."""
    wa, wb = fa["writes_per_req"].value, fb["writes_per_req"].value
    if wa is None or wb is None:
        return None
    writes = [Writes(*(fig[k].value for k in SEND_KEYS)) for fig in (fa, fb)]
    if differs(wa, wb):
        return Send(*writes, True, slowed=slowed_by_writes(indirect, wa, wb, base, other) if indirect else None)
    return Send(*writes, False, (us_a / wa, us_b / wb) if wa and wb else None)


# the kernel figures that explain a category, by the part it plays in categorize.yaml's groups (the category
# of the reads, of the waits and switches; the writes' has a model of its own, _send)
MECHANISM_KEYS = {"reads": ["reads_per_req", "bytes_per_read", "eagain_reads_per_req"],
                  "scheduling": ["waits_per_req", "futex_per_req", "switches_per_req", "wakeups_per_req"]}


def gap_findings(base: str, other: str, us: dict[str, dict[str, float]], syscalls: dict[str, dict | None],
                 category_groups: Groups, indirect: IndirectCost | None = None) -> Gap:
    """Where other's CPU per request differs from base's, by category, with the kernel figures that differ
    between them. us[server][group] is CPU µs per request by level-2 group (level-1 names work too: no
    sub-category split is then given). indirect (analyze/indirect.py's IndirectCost): the send finding adds
    the user code slowed by the extra writes, where writes differ. category_groups: the rules file's, which
    name the categories of the reads, the writes and the scheduling."""
    keys = {category_groups.reads: MECHANISM_KEYS["reads"], category_groups.scheduling: MECHANISM_KEYS["scheduling"]}
    out = Gap(base, other, sum(us[base].values()), sum(us[other].values()))
    gap = out.delta
    groups = list(dict.fromkeys(list(us[base]) + list(us[other])))
    by_cat: dict[str, list[str]] = {}
    for g in groups:
        by_cat.setdefault(g.split("/", 1)[0], []).append(g)      # a level-2 group's category
    moved = {g: us[other].get(g, 0.0) - us[base].get(g, 0.0) for g in groups}
    deltas = {c: sum(moved[g] for g in gs) for c, gs in by_cat.items()}
    summed = sum(abs(d) for d in deltas.values()) or 1.0
    # a share of the difference means something only when the categories do not mostly cancel: two
    # profiles of one process (py-spy's and perf's) have the same CPU per request and categories merely
    # move; a gap of 0.24 µs/req made of -2.05, +1.90 and +0.26 is not "-858 %" send (the gap at least
    # half of the summed movement, or no share)
    share_floor = max(MIN_US, 0.5 * summed)
    fa, fb = kernel_figures(syscalls.get(base)), kernel_figures(syscalls.get(other))
    covered = 0.0
    for cat in sorted(deltas, key=lambda c: -abs(deltas[c])):
        d = deltas[cat]
        if abs(d) < MIN_US or len(out.findings) >= MAX_FINDINGS or covered >= COVER:
            break
        covered += abs(d) / summed
        a_us, b_us = (sum(us[s].get(g, 0.0) for g in by_cat[cat]) for s in (base, other))
        subs = sorted((g for g in by_cat[cat] if "/" in g), key=lambda g: -abs(moved[g]))
        f = Finding(cat, d, d / gap if gap else math.nan, a_us, b_us, abs(gap) >= share_floor,
                    [(g, moved[g]) for g in subs if abs(moved[g]) >= MIN_US][:3],
                    sources=[{"server": s, "key": f"CPU µs/req × share of {g}", "value": us[s].get(g, 0.0)}
                             for s in (base, other) for g in by_cat[cat]])
        if cat == category_groups.writes:
            f.send = _send(base, other, fa, fb, a_us, b_us, indirect)
            used = SEND_KEYS if f.send else []
        else:
            f.differing = [Differing(k, fa[k].value, fb[k].value) for k in keys.get(cat, [])
                           if differs(fa[k].value, fb[k].value)]
            used = [x.name for x in f.differing]
        f.sources += [{"server": s, "key": fig[k].key, "value": fig[k].value}
                      for k in used for s, fig in ((base, fa), (other, fb))]
        if f.send and f.send.slowed:
            f.sources.append({"server": None, "key": indirect.key(), "value": indirect.user.slope})
        out.findings.append(f)
    return out
