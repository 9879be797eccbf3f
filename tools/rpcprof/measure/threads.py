"""A process's threads as /proc shows them, to find those asleep through a whole window.

The off-CPU recording sees a thread only when it switches; a thread that slept through the window (an
idle acceptor, a blocking-pool thread, a signal handler thread) leaves no event. Two snapshots, at the
window's start and end, name them: a thread present in both whose context-switch count did not move
and that is not running at the end slept the whole window. Where it sleeps is its wait channel
(/proc/PID/task/TID/wchan: the kernel function it sleeps in, e.g. ep_poll, futex_wait_queue,
inet_csk_accept, do_sigtimedwait); the count, its name and that channel are all the figures give.
The comparison is analyze/waits.py's (asleep_whole_window).
"""
from __future__ import annotations

import os
from pathlib import Path

from rpcprof.measure.children import read_stripped

PROC = Path("/proc")


def status_fields(path: Path | str) -> dict[str, str] | None:
    """The `Name:  value` lines of a /proc status file as {name: value, stripped}; None if it cannot be read."""
    text = read_stripped(path)
    return None if text is None else {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def task_ids(pid: int, proc: Path = PROC) -> list[int]:
    """The ids of pid's threads now ([] if the process is gone)."""
    try:
        return [int(d) for d in os.listdir(proc / str(pid) / "task") if d.isdigit()]
    except OSError:
        return []


def thread_snapshot(pid: int, proc: Path = PROC) -> dict[int, dict]:
    """tid -> {name, state, switches, wchan} for every thread of pid now ({} if the process is gone)."""
    snapshot = {}
    for tid in task_ids(pid, proc):
        task = proc / str(pid) / "task" / str(tid)
        fields = status_fields(task / "status")
        if fields is None:
            continue
        try:
            switches = int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])
        except (KeyError, ValueError):
            continue
        wchan = read_stripped(task / "wchan")
        snapshot[tid] = {"tid": tid, "name": fields.get("Name", ""), "state": fields.get("State", "")[:1],
                         "switches": switches, "wchan": wchan if wchan and wchan != "0" else None}
    return snapshot
