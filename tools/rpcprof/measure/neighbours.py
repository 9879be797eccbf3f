"""Other programs on the machine during a window: the CPU each process outside the run used over it.

A run's figures hold only if the server and the load driver had their CPUs to themselves. Another busy
program takes time from one of them and shares their caches, and nothing else in the figures shows it:
the server's CPU per request rises, or the client becomes the bottleneck, for a reason the run cannot name.
So /proc is scanned at the two ends of each window the run's own load drives (measured, profile,
syscall-count, read/write size, off-CPU: every process's utime + stime, /proc/PID/stat, in clock ticks),
from rpcprof's own process on the load CPUs: the server pays nothing for it.

A process outside the run (rpcprof and what it started, the process measured and its children) that used
NEIGHBOUR_CORES of a CPU or more over the window is named in the result (`neighbours`: pid, name, CPUs used
per second), and the reports flag the server BUSY-HOST. Kernel threads are left out: their work (softirqs,
writeback, RCU) is the run's own as often as not.

In a virtual machine the other programs may be another guest's: the hypervisor runs them on the physical
CPU and the guest's CPU waits, its steal time (/proc/stat). The same two readings take each CPU's share of
the window stolen (`steal`, as top's st); a CPU stolen STEAL_SHARE of the window or more flags it BUSY-HOST
too (records.py). A CPU the run lets halt when idle (`halting`) is also charged the host's delay in waking
it as steal, and flags only at HALT_STEAL_SHARE.
"""
from __future__ import annotations

import os
import time
from contextlib import suppress

from rpcprof.measure.threads import Window

NEIGHBOUR_CORES = 0.05      # a process outside the run at 5 % of a CPU or more over the window is named
PF_KTHREAD = 0x00200000     # a kernel thread (linux/sched.h), /proc/PID/stat's flags
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def scan() -> dict[int, tuple[int, str, int]]:
    """{pid: (parent pid, name, utime + stime in ticks)} of every user-space process now."""
    out = {}
    for entry in os.scandir("/proc"):
        with suppress(OSError, ValueError, IndexError):
            if entry.name.isdigit():
                with open(f"/proc/{entry.name}/stat") as f:
                    head, _, rest = f.read().rpartition(")")
                fields = rest.split()           # fields[0] is proc(5)'s field 3, the state
                if not int(fields[6]) & PF_KTHREAD:
                    out[int(entry.name)] = (int(fields[1]), head.partition("(")[2], int(fields[11]) + int(fields[12]))
    return out


def cpu_steal() -> dict[int, tuple[int, int]]:
    """{cpu: (steal ticks, all ticks)} now, from /proc/stat: of each CPU's time, what the hypervisor gave elsewhere."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3:4].isdigit():
                name, *ticks = line.split()
                counted = [int(t) for t in ticks[:8]]     # user nice system idle iowait irq softirq steal
                out[int(name[3:])] = (counted[7], sum(counted))
    return out


def stolen(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> dict[str, float]:
    """{cpu: the share of its time stolen} between two cpu_steal() readings (JSON's keys: strings)."""
    return {str(c): round((after[c][0] - before[c][0]) / max(after[c][1] - before[c][1], 1), 4)
            for c in sorted(after) if c in before}


def outside(processes: dict[int, tuple[int, str, int]], roots: set[int]) -> set[int]:
    """The pids of processes that are neither a root nor below one."""
    inside: dict[int, bool] = {}

    def within(pid: int) -> bool:
        chain = []
        while pid not in inside and pid in processes and pid not in roots:
            chain.append(pid)
            pid = processes[pid][0]
        found = pid in roots or inside.get(pid, False)
        inside.update(dict.fromkeys(chain, found))
        return found
    return {pid for pid in processes if not within(pid)}


def busy_outside(before: tuple[float, dict], after: tuple[float, dict], roots: set[int]) -> list[dict]:
    """The processes outside roots that used NEIGHBOUR_CORES or more between two (time, scan()) readings,
    busiest first: pid, name, CPUs used per second."""
    (t0, old), (t1, new) = before, after
    wall = max(t1 - t0, 1e-9)
    found = []
    for pid in outside(new, roots):
        used = (new[pid][2] - (old[pid][2] if pid in old and old[pid][1] == new[pid][1] else 0)) * TICK_S / wall
        if used >= NEIGHBOUR_CORES:
            found.append({"pid": pid, "name": new[pid][1], "cores": round(used, 3)})
    return sorted(found, key=lambda x: -x["cores"])


class NeighbourWindow(Window):
    """The other programs' CPU, and each CPU's steal, between a window's start and end (a Window: a load
    driver marks it)."""

    def __init__(self, *measured: int, halting: tuple[int, ...] = ()):
        super().__init__(lambda: (time.monotonic(), scan(), cpu_steal()))
        self.roots = {os.getpid(), *measured}
        self.halting = sorted(set(halting))

    def found(self) -> list[dict]:
        (t0, old, _), (t1, new, _) = self.ends()
        return busy_outside((t0, old), (t1, new), self.roots)

    def steal(self) -> dict[str, float]:
        (_, _, old), (_, _, new) = self.ends()
        return stolen(old, new)

    def busy(self) -> dict:
        """{"neighbours": [...], "steal": {cpu: share}, "halting": [cpu, ...]}: what a result or a host card records
        of it."""
        return {"neighbours": self.found(), "steal": self.steal(), "halting": self.halting}
