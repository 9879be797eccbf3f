"""What the kernel says a process used: CPU time with ns precision, resident memory; and what a run folder
records about where it ran: machine specs, the git commit and the tools' versions.

/proc/PID/stat counts CPU in clock ticks (1/100 s): a server at 3 % of a core over 10 s is 30 ticks,
too coarse. We read nanoseconds instead, from one of two sources (the manifest records which):

- ``cgroup``: the process is moved into a cgroup of its own at start, and the cgroup's CPU counter
  (v1 ``cpuacct.usage`` in ns, v2 ``cpu.stat usage_usec``) covers every thread, including threads
  that exit during the window. Used for servers rpcprof starts itself.
- ``schedstat``: the sum of ``/proc/PID/task/*/schedstat`` (ns on CPU per thread), polled so that a
  thread exiting during the window keeps the time it had at the last poll. Used when attaching to a
  process rpcprof did not start, whose cgroup it leaves alone.
"""
from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

from rpcprof.measure.children import output, read_stripped, stat_ints
from rpcprof.measure.threads import Window, status_fields, task_ids, thread_switches
from rpcprof.paths import ROOT

CGROUP_V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")
CGROUP_V2_CANDIDATES = (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))
CGROUP_PREFIX = "rpcprof-"


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """ns on CPU per live thread of pid, from /proc/PID/task/*/schedstat."""
    # a thread that exited between listdir and open has none
    now = {tid: (read_stripped(f"/proc/{pid}/task/{tid}/schedstat") or "").split()[:1] for tid in task_ids(pid)}
    return {tid: int(ns[0]) for tid, ns in now.items() if ns}


def rss_bytes(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) in bytes, or None if the process is gone."""
    if (fields := status_fields(f"/proc/{pid}/status")) is None:
        return None
    return int(fields.get("VmRSS", "0").split()[0]) * 1024, int(fields.get("VmHWM", "0").split()[0]) * 1024


def cgroup_root() -> tuple[Path | None, int]:
    """(the cgroup hierarchy that accounts CPU, its version 1 or 2), or (None, 0) if there is none."""
    if (CGROUP_V1_CPUACCT / "cpuacct.usage").exists():
        return CGROUP_V1_CPUACCT, 1
    for root in CGROUP_V2_CANDIDATES:
        if (root / "cgroup.controllers").exists():
            return root, 2
    return None, 0


def cgroup_name(server: str, pid: int | None = None) -> str:
    """The cgroup of a server rpcprof process pid (default: this one) starts: rpcprof-PID-SERVER."""
    return f"{CGROUP_PREFIX}{os.getpid() if pid is None else pid}-{server}"


def stale_cgroups(owner_alive) -> tuple[list[Path], list[Path], list[str]]:
    """rpcprof's cgroups whose owning process (the PID in the name) owner_alive(pid) says is gone:
    (those removed now, those that could not be, the processes stopped in them as 'pid N (name)').

    A process still in one was started by that rpcprof and outlived it (the parent-death signal reaches
    a direct child only): it is stopped by PID, SIGTERM then SIGKILL, and the cgroup removed."""
    root, _ = cgroup_root()
    removed, busy, stopped = [], [], []
    for path in sorted(root.glob(f"{CGROUP_PREFIX}*")) if root else []:
        pid = path.name[len(CGROUP_PREFIX):].split("-", 1)[0]
        if not path.is_dir() or not pid.isdigit() or owner_alive(int(pid)):
            continue
        stopped += _stop_members(path)
        try:
            path.rmdir()               # the kernel refuses while a process is in it
            removed.append(path)
        except OSError:
            busy.append(path)
    return removed, busy, stopped


def _members(cgroup: Path) -> list[int]:
    with suppress(OSError, ValueError):
        return [int(x) for x in (cgroup / "cgroup.procs").read_text().split()]
    return []


def _stop_members(cgroup: Path, grace_s: float = 3.0) -> list[str]:
    """SIGTERM every process in cgroup, SIGKILL those left after grace_s; 'pid N (name)' for each."""
    said = [f"pid {pid} ({(status_fields(f'/proc/{pid}/status') or {}).get('Name', '?')})" for pid in _members(cgroup)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _members(cgroup):
            with suppress(OSError):
                os.kill(pid, sig)
        end = time.monotonic() + grace_s
        while _members(cgroup) and time.monotonic() < end:
            time.sleep(0.05)
    return said


class CgroupCpu:
    """A cgroup of our own holding one process; ``read_ns`` returns its total CPU time."""

    def __init__(self, name: str):
        root, self.version = cgroup_root()
        if root is None:
            raise OSError("no cgroup CPU accounting available")
        self.path = root / name
        self.path.mkdir()

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def read_ns(self) -> int:
        if self.version == 1:
            return int((self.path / "cpuacct.usage").read_text())
        for line in (self.path / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec"):
                return int(line.split()[1]) * 1000
        raise OSError(f"{self.path}/cpu.stat has no usage_usec")

    def remove(self) -> None:
        """Delete the cgroup; the kernel refuses while a task is in it, so wait for exit first."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def process_cpu_ns(pid: int) -> int:
    """User + system CPU of a whole process, exited threads included (/proc/PID/stat, clock ticks); 0 if gone."""
    ticks = stat_ints(pid, 11, 12)      # utime, stime
    return sum(ticks) * 1_000_000_000 // os.sysconf("SC_CLK_TCK") if ticks else 0


def keep_off(cpus_for_us: list[int]) -> None:
    """Run this process, and every child it starts from now on, on cpus_for_us (the load CPUs): the
    instruments' own work (perf writing its samples, the monitor's polls) then never runs on the server's
    CPUs, where it would take the server's time and land in the counts of those CPUs. Servers are pinned
    explicitly (taskset) and are not affected."""
    with suppress(OSError, ValueError):
        os.sched_setaffinity(0, cpus_for_us)


class CpuWindow(Window):
    """A process's CPU between two instants (a Window of the monitor's marks)."""

    def __init__(self, monitor: "ProcessMonitor", on_start=None, on_end=None):
        super().__init__(monitor.mark, on_start, on_end)

    def ns(self) -> int:
        start, end = self.ends()
        return end - start


class Marks:
    """Several window markers driven as one: a load driver calls start and end once each."""

    def __init__(self, *marks):
        self.marks = [m for m in marks if m is not None]

    def start(self, pid: int | None = None) -> None:
        for m in self.marks:
            m.start(pid)

    def end(self, pid: int | None = None) -> None:
        for m in self.marks:
            m.end(pid)


class ProcessMonitor:
    """Polls a process in the background: CPU time (ns) and resident memory. The difference of two
    mark()s is the CPU the process used between them, all threads."""

    def __init__(self, pid: int, cgroup: CgroupCpu | None = None, interval: float = 0.1):
        self.pid, self.cgroup, self.interval = pid, cgroup, interval
        self.method = f"cgroup-v{cgroup.version}" if cgroup else "schedstat"
        self._last_seen: dict[int, int] = {}
        self._lock = threading.Lock()
        self._hwm = 0
        self._rss_samples: list[int] | None = None             # RSS over a window
        self._series: list[tuple[float, int]] | None = None    # (wall clock, CPU ns) over a window
        self.switches: dict[int, tuple[int, int]] = {}     # context switches per thread, kept when a thread exits
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _poll_threads(self) -> int:
        now = thread_cpu_ns(self.pid)
        with self._lock:
            self._last_seen.update(now)
            return sum(self._last_seen.values())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if not self.cgroup:
                self._poll_threads()
            with self._lock:
                self.switches.update(thread_switches(self.pid))
            if self._series is not None:
                point = (time.time(), self.mark())      # mark() takes the lock itself
                with self._lock:
                    if self._series is not None:
                        self._series.append(point)
            if (mem := rss_bytes(self.pid)) is None:
                continue
            with self._lock:
                if self._rss_samples is not None:
                    self._rss_samples.append(mem[0])
                self._hwm = max(self._hwm, mem[1])

    def mark(self) -> int:
        """Total CPU ns used by the process so far."""
        return self.cgroup.read_ns() if self.cgroup else self._poll_threads()

    def start_window(self) -> None:
        """Record the process's resident memory and CPU at every poll (each `interval`) until stop_window."""
        point = (time.time(), self.mark())
        with self._lock:
            self._rss_samples, self._series = [], [point]

    def stop_window(self) -> tuple[dict, list[tuple[float, int]]]:
        """RSS average and peak (MiB) over the window, the peak the kernel's high-water mark; and the
        (wall clock s, CPU ns so far) pairs since start_window, the last one taken now."""
        mem = rss_bytes(self.pid)
        point = (time.time(), self.mark())
        with self._lock:
            samples = self._rss_samples or ([mem[0]] if mem else [])
            series = (self._series or []) + [point]
            self._rss_samples = self._series = None
            if mem:
                self._hwm = max(self._hwm, mem[1])
            hwm = self._hwm
        mib = 1024 * 1024
        return {"rss_avg_mib": (sum(samples) / len(samples) / mib) if samples else None,
                "rss_peak_mib": hwm / mib if hwm else None, "rss_samples": len(samples)}, series

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1)


def machine_specs() -> dict:
    """CPU model, cores, kernel and memory: seed 000's 'Machine Specs'."""
    def after(path: str, prefix: str) -> str:
        """What follows prefix on the first line of path that starts with it ('' if none)."""
        lines = (read_stripped(path) or "").splitlines()
        return next((line[len(prefix):] for line in lines if line.startswith(prefix)), "")
    mem_kib = after("/proc/meminfo", "MemTotal:").split()
    return {"os": after("/etc/os-release", "PRETTY_NAME=").strip('"'), "kernel": platform.release(),
            "cpu_model": after("/proc/cpuinfo", "model name").partition(":")[2].strip(), "cpus": os.cpu_count(),
            "memory_gib": round(int(mem_kib[0]) / 1024 / 1024, 1) if mem_kib else 0.0, "hostname": platform.node()}


def command_version(argv: list[str]) -> str:
    """First line a tool prints for its version, or 'not found'."""
    if (out := output(argv, timeout=10)) is None:
        return "not found"
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else "unknown"


def git_commit() -> dict:
    def git(*args):
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.rstrip("\n") if r.returncode == 0 else ""
    status = git("status", "--porcelain")
    # the paths that differ from the commit (porcelain: two status letters, a space, the path)
    changed = [line[3:] for line in status.splitlines()]
    return {"commit": git("rev-parse", "HEAD").strip() or "unknown", "dirty": bool(status), "changed": changed[:50]}


def tool_versions() -> dict:
    ghz = command_version(["bash", "-c", 'go version -m "$(command -v ghz)" | grep -m1 "mod.*ghz"'])
    return {"perf": command_version(["perf", "--version"]), "h2load": command_version(["h2load", "--version"]),
            "ghz": " ".join(ghz.split()[1:3]) if ghz not in ("not found", "unknown") else ghz,
            # inferno's binaries have no --version: cargo knows what it installed
            "inferno": command_version(["bash", "-c", "cargo install --list | grep -m1 '^inferno v'"]).rstrip(":"),
            "py-spy": command_version(["py-spy", "--version"]), "protoc": command_version(["protoc", "--version"]),
            "python": sys.version.split()[0]}


def cpu_seconds_per_second(cpu_ns: int, wall_s: float) -> float:
    """CPU cores used on average over a window (1.0 = one core busy)."""
    return cpu_ns / 1e9 / wall_s if wall_s > 0 else 0.0
