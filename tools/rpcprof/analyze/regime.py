"""One regime per run: are the syscall-count and profile windows in the measured window's regime?

The figures of a run come from three windows with the same load: the measured one (no profiler: req/s,
CPU per request), the syscall-count one (syscalls per request) and the profile one (shares). Multiplying
shares from one by CPU per request from another is right only if the server behaved alike in all three.
A server whose batching changes (tonic on current_thread writing once per batch in one window, once per
response in another) is not in the same regime, whatever its CPU says. So each window's req/s is checked
against the measured one, and the profile window's writes per request against the syscall window's.
"""
from __future__ import annotations

REQ_PER_S = 0.10          # req/s more than 10 % away from the measured window's
WRITES_RELATIVE = 0.25    # writes per request more than 25 % away ...
WRITES_ABSOLUTE = 0.02    # ... and by more than 0.02 (a batching factor that changed)


def _rps_change(window: dict, measured: float | None) -> str | None:
    rps = window.get("req_per_s")
    if not rps or not measured:
        return None
    change = rps / measured - 1
    return f"req/s {100 * change:+.0f} %" if abs(change) > REQ_PER_S else None


def regime_flags(result: dict) -> list[str]:
    """Flags such as `PROFILE-REGIME: req/s -18 %, writes per request 0.05 -> 0.31` for one server's result."""
    measured = result.get("req_per_s")
    sc, prof = result.get("syscalls") or {}, result.get("profile") or {}
    flags = []
    change = _rps_change(sc, measured)
    if change:
        flags.append(f"SYSCALL-REGIME: {change}")
    parts = [x for x in (_rps_change(prof, measured),) if x]
    a, b = sc.get("writes_per_req"), (prof.get("syscalls") or {}).get("writes_per_req")
    if a is not None and b is not None and abs(b - a) > WRITES_ABSOLUTE and abs(b - a) > WRITES_RELATIVE * max(a, b):
        parts.append(f"writes per request {a:.2f} -> {b:.2f}")
    if parts:
        flags.append("PROFILE-REGIME: " + ", ".join(parts))
    return flags
