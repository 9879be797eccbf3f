"""One regime per run: were the instrumented windows in the measured window's regime?

The figures of a run come from windows with the same load: the measured one (no profiler: req/s, CPU
per request) and the profile one (shares, and the syscall counts taken in the same window). Multiplying
shares from one by CPU per request from another is right only if the server behaved alike in both. A
server whose batching changes (tonic on current_thread writing once per batch in one window, once per
response in another) is not in the same regime, whatever its CPU says.

So each instrumented window's req/s is checked against the measured window of the same round, and the
process's own counters, which the kernel keeps in every window at no cost (/proc: VFS writes and context
switches per request), are checked between the two. With rounds, the check is on the geometric mean of
the rounds' changes, so that one noisy round does not flag a run and a steady shift does.

A read/write size window (--io-sizes) is instrumented more heavily; its figures are checked the same way
and flagged IO-REGIME.
"""
from __future__ import annotations

import math

from rpcprof.records import round_rows

REQ_PER_S = 0.10          # req/s more than 10 % away from the measured window's
PER_REQ_RELATIVE = 0.25   # a per-request counter more than 25 % away ...
PER_REQ_ABSOLUTE = 0.02   # ... and by more than 0.02 (a batching factor that changed)
PROFILER_PACED = 0.05    # req/s within 5 points of what the profiled CPU per request alone would give
COUNTERS = (("vfs_writes", "VFS writes per request"), ("context_switches", "context switches per request"))


def _moved(a: float, b: float) -> bool:
    return abs(b - a) > PER_REQ_ABSOLUTE and abs(b - a) > PER_REQ_RELATIVE * max(a, b)


def _rounds(result: dict) -> list[dict]:
    """Each round's measured and instrumented figures; runs whose rounds did not each carry a profile
    (before every round had one) are one round: the aggregated result, as they were checked then."""
    rows = round_rows(result)
    return rows if rows and all("profile_req_per_s" in r for r in rows) else [round_row(result)]


def round_row(r: dict) -> dict:
    """The figures of one round that the regime check and the round intervals need."""
    prof, sc, io = r.get("profile") or {}, r.get("syscalls") or {}, r.get("io_sizes") or {}
    proc, prof_proc = r.get("proc_per_req") or {}, (sc.get("proc_per_req") if sc.get("window") == "profile" else None) or {}
    return {"req_per_s": r.get("req_per_s"), "cpu_us_per_req": r.get("cpu_us_per_req"),
            "profile_req_per_s": prof.get("req_per_s"),
            "profiled_cpu_us_per_req": prof.get("cpu_us_per_req_profiled"),
            "syscall_window": sc.get("window"), "syscall_req_per_s": sc.get("req_per_s"),
            "io_req_per_s": io.get("req_per_s"),
            **{f"measured_{k}_per_req": proc.get(k) for k, _ in COUNTERS},
            **{f"profile_{k}_per_req": prof_proc.get(k) for k, _ in COUNTERS},
            "writes_per_req": sc.get("writes_per_req"), "syscalls_per_req": sc.get("per_req") if sc.get("per_req") is not None else sc.get("named_per_req"),
            "profile_samples": prof.get("samples")}


def _change(rows: list[dict], before: str, after: str) -> float | None:
    """The geometric mean over rounds of after / before, less 1 (None where no round has both)."""
    logs = [math.log(b / a) for a, b in ((r.get(before), r.get(after)) for r in rows) if a and b and a > 0 and b > 0]
    return math.exp(sum(logs) / len(logs)) - 1 if logs else None


def _rps_change(rows: list[dict], key: str) -> str | None:
    change = _change(rows, "req_per_s", key)
    return f"req/s {100 * change:+.0f} %" if change is not None and abs(change) > REQ_PER_S else None


def profiler_paced(result: dict) -> tuple[float, float] | None:
    """(the profile window's req/s change, the change its CPU per request while profiled gives on its own at
    the same CPU use), when the two lie within PROFILER_PACED of each other: a server that used all its CPU
    served fewer requests by what the profiler's own cost added to each, not in another regime. Else None."""
    rows = _rounds(result)
    seen, cost = _change(rows, "req_per_s", "profile_req_per_s"), _change(rows, "profiled_cpu_us_per_req", "cpu_us_per_req")
    return (seen, cost) if seen is not None and cost is not None and abs(seen - cost) <= PROFILER_PACED else None


def _counter_changes(rows: list[dict]) -> list[str] | None:
    """The counters that moved between the measured and the profile windows; None when none was taken in both."""
    out, taken = [], False
    for key, label in COUNTERS:
        pairs = [(r.get(f"measured_{key}_per_req"), r.get(f"profile_{key}_per_req")) for r in rows]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if not pairs:
            continue
        taken = True
        a, b = (sum(column) / len(pairs) for column in zip(*pairs))
        if _moved(a, b):
            out.append(f"{label} {a:.2f} -> {b:.2f}")
    return out if taken else None


def counters_steady(result: dict) -> bool | None:
    """True when the process's own counters (VFS writes, context switches per request) were taken in both
    the measured and the profile windows and none moved past the thresholds: the server batched alike, so
    a req/s change is the same work at another pace. False when one moved; None when they were not taken."""
    changes = _counter_changes(_rounds(result))
    return None if changes is None else not changes


def regime_flags(result: dict) -> list[str]:
    """Flags such as `PROFILE-REGIME: req/s -18 %, VFS writes per request 0.05 -> 0.31` for one server's
    result. A syscall window of its own (--no-profile, or runs made before the counts went into the
    profile window) is checked as SYSCALL-REGIME."""
    if not result.get("req_per_s"):
        return []
    rows = _rounds(result)
    parts = {"SYSCALL-REGIME": [_rps_change([r for r in rows if r.get("syscall_window") != "profile"],
                                            "syscall_req_per_s")],
             "PROFILE-REGIME": [_rps_change(rows, "profile_req_per_s"), *(_counter_changes(rows) or []),
                                *_own_window_writes(result)],
             "IO-REGIME": [_rps_change(rows, "io_req_per_s")]}
    return [f"{flag}: " + ", ".join(p for p in found if p) for flag, found in parts.items() if any(found)]


def _own_window_writes(result: dict) -> list[str]:
    """Counts from a syscall window of its own: the profile window's writes per request against it."""
    sc, prof = result.get("syscalls") or {}, result.get("profile") or {}
    a, b = sc.get("writes_per_req"), (prof.get("syscalls") or {}).get("writes_per_req")
    if sc.get("window") != "profile" and a is not None and b is not None and _moved(a, b):
        return [f"writes per request {a:.2f} -> {b:.2f}"]
    return []
