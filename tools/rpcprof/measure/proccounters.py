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

Switches are per thread, and a thread that exits takes its own with it (pajamax's thread per connection
exits when the load driver closes its connection, as the window ends). So the process monitor polls
them every 0.1 s (its `switches`, thread_switches) and keeps each thread's last seen counts: a thread
that exits inside the window keeps what it had at the last poll.
"""
from __future__ import annotations

from rpcprof.measure.children import stat_ints
from rpcprof.measure.threads import status_fields, task_ids


def thread_switches(pid: int) -> dict[int, tuple[int, int]]:
    """Each live thread's (voluntary, involuntary) switches now."""
    out: dict[int, tuple[int, int]] = {}
    for tid in task_ids(pid):
        fields = status_fields(f"/proc/{pid}/task/{tid}/status") or {}
        try:
            out[tid] = (int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"]))
        except (KeyError, ValueError):
            continue
    return out


def _faults(pid: int) -> int | None:
    faults = stat_ints(pid, 7, 9)        # minflt, majflt (fields 10 and 12 of proc(5))
    return sum(faults) if faults else None


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


def snapshot(pid: int, seen: dict | None = None) -> dict:
    """The counters of pid now (see the module's text); with seen, each thread's switches as last seen
    (the process monitor's, polled in the background; updated now), threads that exited keep their last
    polled switches."""
    threads = thread_switches(pid)
    if seen is not None:
        seen.update(threads)
        threads = dict(seen)
    io = _io(pid)
    return {"threads": threads, "page_faults": _faults(pid),
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
    """Snapshots at a window's start and end (pass start/end as a driver's callbacks, as CpuWindow);
    seen: the process monitor's switches, polled in the background (snapshot)."""

    def __init__(self, pid: int, seen: dict | None = None):
        self.pid = pid
        self.seen = seen
        self.marks: dict[str, dict] = {}

    def start(self, _pid: int | None = None) -> None:
        self.marks.setdefault("start", snapshot(self.pid, self.seen))

    def end(self, _pid: int | None = None) -> None:
        self.marks.setdefault("end", snapshot(self.pid, self.seen))

    def counts(self) -> dict:
        self.end()
        return difference(self.marks.get("start", self.marks["end"]), self.marks["end"])
