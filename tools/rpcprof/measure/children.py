"""Processes rpcprof starts (servers, load drivers, profilers) die with it, even when it is SIGKILLed:
each child asks the kernel for SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG), before it execs.

The kernel sends that signal when the *thread* that forked the child exits, not the process: so it is
asked for only when the child is started from the main thread, which lives as long as rpcprof does
(every start is; a start from another thread gets no death signal rather than one that fires early).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
from contextlib import suppress
from pathlib import Path

PR_SET_PDEATHSIG = 1

try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl     # resolved here, not in the forked child
except (OSError, AttributeError):
    _prctl = None


def dies_with_us() -> dict:
    """Popen keyword arguments that make the child die with this process (none off the main thread): its
    preexec_fn asks for SIGKILL on the parent's death, and if the parent died before it ran, dies now (the
    kernel would never send it)."""
    if _prctl is None or threading.current_thread() is not threading.main_thread():
        return {}
    parent = os.getpid()

    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
    return {"preexec_fn": preexec}


def popen(argv: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen of a child that dies with rpcprof."""
    return subprocess.Popen(argv, **kwargs, **dies_with_us())


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run of a child that dies with rpcprof."""
    return subprocess.run(argv, **kwargs, **dies_with_us())


def output(argv: list[str], timeout: float | None = None, **kwargs) -> subprocess.CompletedProcess | None:
    """run() with its output captured as text; None if argv could not start or ran past timeout."""
    with suppress(OSError, subprocess.TimeoutExpired):
        return run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
    return None


def read_stripped(path: Path | str) -> str | None:
    """A /proc, /sys or log file's text, stripped; None if it cannot be read (a process or thread that exited,
    no permission, no such file)."""
    with suppress(OSError):
        return Path(path).read_text(errors="replace").strip()
    return None


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (proc(5)'s field 3, the state, is [0]); None if
    there is no such process."""
    with suppress(OSError, IndexError), open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split() or None
    return None


def stat_ints(pid: int, *fields: int) -> list[int] | None:
    """Fields of /proc/PID/stat as integers, counted as stat_fields counts them; None if there is no such process."""
    with suppress(TypeError, IndexError, ValueError):
        return [int(stat_fields(pid)[i]) for i in fields]
    return None


def _start_ticks(pid: int) -> int | None:
    """When pid started (clock ticks after boot, /proc/PID/stat field 22); None if there is no such process."""
    return (stat_ints(pid, 19) or [None])[0]


def boot_id() -> str:
    return read_stripped("/proc/sys/kernel/random/boot_id") or ""


def pid_running(pid: int) -> bool:
    """True if a process pid exists (a zombie too: it has not been reaped yet)."""
    return _start_ticks(pid) is not None


def identity(pid: int | None = None) -> dict:
    """What names a process across PID reuse: pid, start time and the boot it started in (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start_ticks": _start_ticks(pid), "boot_id": boot_id()}


def still_running(owner: dict) -> bool:
    """True if the process identity() described is still running (same pid, start time and boot)."""
    pid = owner.get("pid")
    return (isinstance(pid, int) and owner.get("boot_id") == boot_id()
            and (started := _start_ticks(pid)) is not None and started == owner.get("start_ticks"))
