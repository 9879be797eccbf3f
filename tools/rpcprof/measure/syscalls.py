"""Syscalls per request, counted from kernel tracepoints (perf stat, in-kernel counting: no samples
are written), in a window of its own so that counting never touches the efficiency window.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.capture.profiler import Recorder, require

TRACEFS = (Path("/sys/kernel/tracing/events/syscalls"), Path("/sys/kernel/debug/tracing/events/syscalls"))
# The syscalls an RPC server's request path uses; everything else is counted as `other`.
SYSCALLS = ("read", "readv", "recvfrom", "recvmsg", "recvmmsg", "write", "writev", "sendto", "sendmsg", "sendmmsg",
            "epoll_wait", "epoll_pwait", "epoll_ctl", "poll", "ppoll", "futex", "sched_yield", "nanosleep",
            "clock_nanosleep", "io_uring_enter", "accept4", "close")


def available_syscalls() -> list[str]:
    """The SYSCALLS whose sys_enter tracepoint this kernel has."""
    root = next((r for r in TRACEFS if r.exists()), None)
    if root is None:
        return []
    return [s for s in SYSCALLS if (root / f"sys_enter_{s}").exists()]


WRITES = ("write", "writev", "sendto", "sendmsg", "sendmmsg")


def start_count(pid: int, out: Path, name: str = "syscalls") -> Recorder:
    """perf stat on every thread of pid until stopped; results in out/NAME.csv."""
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    events = ["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{s}" for s in available_syscalls()]
    csv = out / f"{name}.csv"
    argv = [perf, "stat", "-x,", "-e", ",".join(events), "-p", str(pid), "-o", str(csv)]
    return Recorder(argv, csv, out / f"{name}.log")


def parse_perf_stat_csv(text: str) -> dict:
    """{'total': N, 'by_syscall': {name: N, ..., 'other': N}} from `perf stat -x,` output.
    '<not counted>' (the task never ran while counting) is 0."""
    total = 0
    by: dict[str, int] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split(",")
        if len(parts) < 3:
            continue
        value, event = parts[0], parts[2]
        n = int(value) if value.strip().isdigit() else 0
        if event == "raw_syscalls:sys_enter":
            total = n
        elif event.startswith("syscalls:sys_enter_"):
            by[event.removeprefix("syscalls:sys_enter_")] = n
    by = {k: v for k, v in by.items() if v}
    other = total - sum(by.values())
    if other > 0:
        by["other"] = other
    return {"total": total, "by_syscall": dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0])))}


def per_request(counts: dict, requests: int) -> dict:
    """Syscalls per request, total and by syscall."""
    if not requests:
        return {"per_req": None, "writes_per_req": None, "by_syscall_per_req": {}}
    return {"per_req": counts["total"] / requests,
            "writes_per_req": sum(counts["by_syscall"].get(w, 0) for w in WRITES) / requests,
            "by_syscall_per_req": {k: v / requests for k, v in counts["by_syscall"].items()}}
