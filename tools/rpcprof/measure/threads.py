"""A process's threads as /proc shows them, and the counters the kernel keeps for every process anyway,
read from /proc at a window's ends: reading them costs the server nothing, so every window (the
unprofiled one included) has them.

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

Threads asleep through a whole window: the off-CPU recording sees a thread only when it switches; a
thread that slept through the window (an idle acceptor, a blocking-pool thread, a signal handler thread)
leaves no event. Two snapshots, at the window's start and end, name them: a thread present in both whose context-switch count did not move
and that is not running at the end slept the whole window. Where it sleeps is its wait channel
(/proc/PID/task/TID/wchan: the kernel function it sleeps in, e.g. ep_poll, futex_wait_queue,
inet_csk_accept, do_sigtimedwait); the count, its name and that channel are all the figures give.
The comparison is analyze/waits.py's (asleep_whole_window).
"""
from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from rpcprof.measure.children import read_stripped, stat_ints


def status_fields(path: Path | str) -> dict[str, str] | None:
    """The `Name:  value` lines of a /proc status file as {name: value, stripped}; None if it cannot be read."""
    text = read_stripped(path)
    return None if text is None else {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def task_ids(pid: int) -> list[int]:
    """The ids of pid's threads now ([] if the process is gone)."""
    with suppress(OSError):
        return [int(d) for d in os.listdir(f"/proc/{pid}/task") if d.isdigit()]
    return []


def _switches(fields: dict[str, str] | None) -> tuple[int, int] | None:
    """(voluntary, involuntary) switches of a thread's status fields; None if they cannot be read."""
    with suppress(TypeError, KeyError, ValueError):
        return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])
    return None


def thread_switches(pid: int) -> dict[int, tuple[int, int]]:
    """Each live thread's (voluntary, involuntary) switches now."""
    now = {tid: _switches(status_fields(f"/proc/{pid}/task/{tid}/status")) for tid in task_ids(pid)}
    return {tid: s for tid, s in now.items() if s is not None}


def thread_snapshot(pid: int) -> dict[int, dict]:
    """tid -> {name, state, switches, wchan} for every thread of pid now ({} if the process is gone)."""
    snapshot = {}
    for tid in task_ids(pid):
        task = Path(f"/proc/{pid}/task/{tid}")
        fields = status_fields(task / "status")
        if (switches := _switches(fields)) is None:
            continue
        wchan = read_stripped(task / "wchan")
        snapshot[tid] = {"tid": tid, "name": fields.get("Name", ""), "state": fields.get("State", "")[:1],
                         "switches": sum(switches), "wchan": wchan if wchan and wchan != "0" else None}
    return snapshot


def snapshot(pid: int, seen: dict | None = None) -> dict:
    """The counters of pid now (see the module's text); with seen (the process monitor's switches, updated
    now), threads that exited keep their last polled switches."""
    threads = thread_switches(pid)
    if seen is not None:
        seen.update(threads)
        threads = dict(seen)
    try:
        with open(f"/proc/{pid}/io") as f:
            io = {key.strip(): int(value) for key, _, value in (line.partition(":") for line in f)}
    except (OSError, ValueError):
        io = {}
    faults = stat_ints(pid, 7, 9)        # minflt, majflt (fields 10 and 12 of proc(5))
    return {"threads": threads, "page_faults": sum(faults) if faults else None,
            "vfs_reads": io.get("syscr"), "vfs_writes": io.get("syscw"), "rchar": io.get("rchar"),
            "wchar": io.get("wchar")}


def difference(start: dict, end: dict) -> dict:
    """What the process did between two snapshots: the keys above, None where a counter could not be read.
    Switches: of the threads alive at the end, those born in the window counted from 0."""
    before, after = start["threads"], end["threads"]
    vol, invol = (sum(after[t][i] - before.get(t, (0, 0))[i] for t in after) for i in (0, 1))
    have = bool(before or after)
    return {"voluntary_switches": vol if have else None, "involuntary_switches": invol if have else None,
            "context_switches": vol + invol if have else None,
            **{k: end[k] - start[k] if start[k] is not None and end[k] is not None else None
               for k in ("page_faults", "vfs_reads", "vfs_writes", "rchar", "wchar")}}


def per_request(counts: dict, requests: int | None) -> dict:
    """Each counter per request; None where it was not read or nothing was served."""
    return {k: (v / requests if v is not None and requests else None) for k, v in counts.items()}


class Window:
    """A window's two ends, each read (read()) once, when first marked: pass start and end to a load driver as
    its on_start and on_end callbacks (called when the driver's timed window starts and ends), then on_start()
    or on_end() is called too. An end never marked is taken when the window is read."""

    def __init__(self, read, on_start=None, on_end=None):
        self.read, self.marks = read, {}
        self.hooks = {"start": on_start, "end": on_end}

    def _mark(self, key: str) -> None:
        if key not in self.marks:
            self.marks[key] = self.read()
            if self.hooks[key]:
                self.hooks[key]()

    def start(self, _pid: int | None = None) -> None:
        self._mark("start")

    def end(self, _pid: int | None = None) -> None:
        self._mark("end")

    def ends(self) -> tuple:
        self.end()
        return self.marks.get("start", self.marks["end"]), self.marks["end"]


class ProcWindow(Window):
    """The counters' snapshots at a window's start and end; seen: as snapshot takes it."""

    def __init__(self, pid: int, seen: dict | None = None):
        super().__init__(lambda: snapshot(pid, seen))

    def counts(self) -> dict:
        return difference(*self.ends())
