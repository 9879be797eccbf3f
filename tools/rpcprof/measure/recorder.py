"""A recording process (perf record, perf stat, py-spy...) attached to a PID until stop(), owned by a
Session so that it is stopped on every exit path; and `require`, which names the setup step when a tool
is missing. Below both measure/ and capture/, so that neither imports the other for them.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import children


# perf record's options on every recording: --no-bpf-event: no side-band thread for BPF program events
# (no RPC server's frames are BPF programs); that thread polls with a 1 s timeout and perf waits for it at
# exit, so each recording took 0.5-1.0 s to stop instead of 0.1 s (perf 6.1, measured here)
PERF_RECORD_OPTIONS = ["--no-bpf-event"]
# ... and on the recordings a run folder keeps (the profile window's perf.data, the off-CPU window's
# offcpu.data), which `report.py fold` folds again: zstd-compressed as perf writes them (-z, level 1;
# Debian's perf is built with zstd, and perf script, inject and evlist read them back). With DWARF
# stacks each sample copies 8 KiB of the thread's stack, mostly the same bytes from sample to sample:
# uncompressed, a default run's rounds of tonic_mt took 41-45 MB each here, and where the server's CPU is
# kept from halting by a busy loop (--idle spin) its samples are recorded too (CPU 0 is sampled whole):
# pajamax's rounds took 105-341 MB, 1.2 GB the run. Compressed, on the same host: tonic_mt's 3.0-4.0 MB,
# pajamax's 4.2-9.0 MB, 56 MB the run.
PERF_KEPT_OPTIONS = ["-z"]
GATE = ["sh", "-c", 'read -r _ && exec "$@" </dev/null', "sh"]      # a deferred Recorder's: Recorder.__init__
POLL_SYSCALLS = {"7", "271"}      # x86-64 poll and ppoll: the first field of /proc/PID/syscall while blocked in one


def log_tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log, joined by ' | ' ('' if it cannot be read)."""
    return " | ".join((children.read_stripped(path) or "").splitlines()[-lines:])


def require(tool: str, how: str = "run tools/setup.sh") -> str:
    if not (path := shutil.which(tool)):
        raise UserError(f"{tool} not found: {how}")
    return path


class Control:
    """perf's control fifos (--control fifo:CTL,ACK with -D -1): its events are opened disabled and
    enabled on request, acknowledged once they count, so a window starts when the counters do, with no
    wait guessed; disabled likewise at the window's end, so the counts hold still while perf exits (perf
    stat closes each tracepoint event with an RCU grace period, ~40 ms each here, before it writes them,
    unless it runs with -I: measure/syscalls.py's read_counts)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rpcprof-perf-control-"))
        self.ctl, self.ack = self.folder / "ctl", self.folder / "ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)

    def argv(self) -> list[str]:
        return ["-D", "-1", "--control", f"fifo:{self.ctl},{self.ack}"]

    def command(self, word: str, proc: subprocess.Popen, timeout: float) -> bool:
        """Send word (enable, disable) and wait for perf's ack; False if perf exited or did not answer."""
        deadline = time.monotonic() + timeout
        ack = os.open(self.ack, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:             # perf opens the fifos once it has parsed its options
                try:
                    ctl = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        return False
                    time.sleep(0.01)
            try:
                os.write(ctl, word.encode() + b"\n")
            finally:
                os.close(ctl)
            seen = b""
            while b"ack" not in seen:
                left = deadline - time.monotonic()
                if proc.poll() is not None or left <= 0:
                    return False
                ready, _, _ = select.select([ack], [], [], min(left, 0.1))
                if ready:
                    seen += os.read(ack, 64)
            return True
        finally:
            os.close(ack)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def perf_recorder(argv: list[str], out_path: Path, log_path: Path) -> "Recorder":
    """A perf record or perf stat (argv: perf, its subcommand, its options) driven through a Control, its events
    disabled at start: wait_attached() enables them, interrupt() disables them, the same window for every recorder."""
    control = Control()
    return Recorder(argv[:2] + control.argv() + argv[2:], out_path, log_path, control=control)


class Recorder:
    """A profiler attached to one PID until stop(); stop() always leaves no process behind.
    control: the Control whose fifos argv names (perf stat -D -1 --control ...)."""

    def __init__(self, argv: list[str], out_path: Path, log_path: Path, control: Control | None = None,
                 deferred: bool = False):
        self.argv, self.control, self.out_path, self.log_path = argv, control, out_path, log_path
        self.deferred, self.released = deferred, not deferred
        # perf stat -I prints its counts when a signal interrupts its poll(); one that comes while it is
        # still answering the disable command ends it without a print, so interrupt() waits for the poll
        self.signal_in_poll = control is not None and "-I" in argv
        self.signalled = False
        self.late_error: str | None = None
        self.log = open(log_path, "wb")
        # deferred: started now behind a gate, a shell that execs the profiler once start() writes a line to it,
        # so that it is a child of this thread (its death signal, children.py) and the window's start pays a
        # pipe write, not a fork and exec (7-14 ms for py-spy here, which delayed the window's later markers)
        self.proc = children.popen(GATE + argv if deferred else argv, stdout=self.log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.PIPE if deferred else subprocess.DEVNULL, start_new_session=True)

    def wait_attached(self, timeout: float = 10.0, enable: bool = True) -> None:
        """With a control (perf), wait until perf acknowledges that its events are enabled (enable False:
        that it answers, its events still off, for start() to enable; `ping`, not `disable`: a disable turns
        off perf record's side-band events too, and a process started before start() is then unnamed in
        the recording); without one (py-spy), until the profiler has run for 0.5 s; deferred, not at all."""
        if self.deferred:
            return
        t0 = time.monotonic()
        if self.control is not None:
            if self.control.command("enable" if enable else "ping", self.proc, timeout):
                return
            if self.proc.poll() is None:
                raise UserError(f"{Path(self.argv[0]).name} did not answer its control fifo within {timeout:g} s")
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise UserError(f"{Path(self.argv[0]).name} exited at start (status {self.proc.returncode}): "
                                f"{log_tail(self.log_path, 3)}")
            if time.monotonic() - t0 > 0.5:
                return
            time.sleep(0.05)

    def start(self, _pid: int | None = None) -> None:
        """A window's start (a marker of measure/procstat.Marks, called when the load driver's timed window
        begins, after its lead): enable the events attached disabled, or start a deferred profiler (py-spy,
        which cannot be attached with its sampling off: it samples once it has attached); check() says if
        either failed."""
        if self.control is None:
            if not self.released:
                self.released = True
                with suppress(OSError):         # a gate that is gone: check() says so
                    self.proc.stdin.write(b"go\n")
                    self.proc.stdin.close()
        elif not self.control.command("enable", self.proc, 2.0):
            self.late_error = f"{Path(self.argv[0]).name} did not enable its events at the window's start"

    def end(self, _pid: int | None = None) -> None:
        """The events are disabled when the recording is interrupted, after the driver exits."""

    def check(self) -> None:
        if self.deferred and self.released and self.proc.poll() is not None and not self.signalled:
            self.late_error = f"{Path(self.argv[0]).name} exited during the window (status {self.proc.returncode})"
        if self.late_error:
            raise UserError(f"{self.late_error} ({log_tail(self.log_path, 3)})")

    def interrupt(self) -> None:
        """End the recording now (with a control: disable its events first) and let it exit while other
        work goes on; stop() then waits for it."""
        if self.signalled or self.proc.poll() is not None:
            return
        if self.control is not None:
            self.control.command("disable", self.proc, 2.0)
        deadline = time.monotonic() + 2.0
        while self.signal_in_poll and time.monotonic() < deadline:     # until its main thread is in poll/ppoll, or gone
            state = children.read_stripped(f"/proc/{self.proc.pid}/syscall")
            if state is None or state.split(" ", 1)[0] in POLL_SYSCALLS:
                break
            time.sleep(0.001)
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        self.signalled = True

    def stop(self, timeout: float = 120.0) -> int | None:
        if self.proc.poll() is None:
            try:
                self.interrupt()
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.close()
        if self.control is not None:
            self.control.close()
        if self.proc.stdin:
            with suppress(OSError):
                self.proc.stdin.close()
        return self.proc.returncode if self.released else None
