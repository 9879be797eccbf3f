"""Counters the kernel keeps for every process anyway, read from /proc at a window's ends: reading them
costs the server nothing, so every window (the unprofiled one included) has them.

  voluntary_switches    sum over threads of /proc/PID/task/TID/status voluntary_ctxt_switches (it blocked)
  involuntary_switches  ... nonvoluntary_ctxt_switches (switched out while runnable)
  context_switches      their sum
  page_faults           minflt + majflt of /proc/PID/stat (the whole process, exited threads included)
  vfs_reads, vfs_writes syscr and syscw of /proc/PID/io: read-family and write-family calls that go through
                        the VFS (read, readv, write, writev...; not recv/recvfrom/send/sendto/sendmsg, which
                        bypass it), the whole process, exited threads included
  rchar, wchar          their bytes

A thread that exits inside the window takes its switches with it (they are per thread): its switches
after the start snapshot are lost, and what it had at the start is dropped from the difference.
"""
from __future__ import annotations

import os

SWITCH_KEYS = ("voluntary_switches", "involuntary_switches")


def _thread_switches(pid: int) -> dict[int, tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        vol = invol = None
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        invol = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if vol is not None and invol is not None:
            out[int(tid)] = (vol, invol)
    return out


def _faults(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[7]) + int(fields[9])        # minflt, majflt (fields 10 and 12 of proc(5))
    except (OSError, ValueError, IndexError):
        return None


def _io(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key.strip()] = int(value)
    except (OSError, ValueError):
        return {}
    return out


def snapshot(pid: int) -> dict:
    """The counters of pid now (see the module's text)."""
    io = _io(pid)
    return {"threads": _thread_switches(pid), "page_faults": _faults(pid),
            "vfs_reads": io.get("syscr"), "vfs_writes": io.get("syscw"), "rchar": io.get("rchar"),
            "wchar": io.get("wchar")}


def _diff(a, b):
    return b - a if a is not None and b is not None else None


def difference(start: dict, end: dict) -> dict:
    """What the process did between two snapshots: the keys above, None where a counter could not be read."""
    common = start["threads"].keys() & end["threads"].keys()
    vol = sum(end["threads"][t][0] - start["threads"][t][0] for t in common)
    invol = sum(end["threads"][t][1] - start["threads"][t][1] for t in common)
    born = end["threads"].keys() - start["threads"].keys()
    vol += sum(end["threads"][t][0] for t in born)
    invol += sum(end["threads"][t][1] for t in born)
    have = bool(start["threads"] or end["threads"])
    return {"voluntary_switches": vol if have else None, "involuntary_switches": invol if have else None,
            "context_switches": vol + invol if have else None,
            **{k: _diff(start[k], end[k]) for k in ("page_faults", "vfs_reads", "vfs_writes", "rchar", "wchar")}}


def per_request(counts: dict, requests: int | None) -> dict:
    """Each counter per request; None where it was not read or nothing was served."""
    return {k: (v / requests if v is not None and requests else None) for k, v in counts.items()}


class ProcWindow:
    """Snapshots at a window's start and end (pass start/end as a driver's callbacks, as CpuWindow)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.marks: dict[str, dict] = {}

    def start(self, _pid: int | None = None) -> None:
        self.marks.setdefault("start", snapshot(self.pid))

    def end(self, _pid: int | None = None) -> None:
        self.marks.setdefault("end", snapshot(self.pid))

    def counts(self) -> dict:
        self.end()
        return difference(self.marks.get("start", self.marks["end"]), self.marks["end"])
