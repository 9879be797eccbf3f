"""Capture: perf record (native code, Go, Node) or py-spy (CPython) attached to a PID (folding is in
capture/fold.py).

Call-graph modes for perf:
  dwarf       --call-graph dwarf (8 KiB of stack per sample): the default. Deep async stacks are cut
              near the root, but the leaf side, which decides categories, is intact.
  dwarf-deep  --call-graph dwarf,32768: complete stacks, ~4x the data.
  fp          -g (frame pointers): cheapest, but callers inside glibc (no frame pointers in Debian's
              build) are lost: blocking recv/send wrappers and malloc lose their callers.
  dwarf-jit   dwarf-deep for a JIT runtime that writes a jitdump with unwinding info (Node/V8 started with
              --perf-prof --perf-prof-unwinding-info): recorded with -k mono, then `perf inject --jit` turns
              the dump into one small ELF per JIT function (written beside the dump) so DWARF unwinding
              goes through JS frames too, and perf.data is replaced by the injected file.
perf samples the `cpu-clock` software event where there is no hardware PMU (this machine kind), so
time spent with interrupts off is charged where they are re-enabled; category shares are not
distorted by this, leaf "top frame" lists are.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import children

CALL_GRAPHS = {"dwarf": ["--call-graph", "dwarf"], "dwarf-deep": ["--call-graph", "dwarf,32768"], "fp": ["-g"],
               # perf inject --jit needs sample times on the jitdump's clock (CLOCK_MONOTONIC)
               "dwarf-jit": ["-k", "mono", "--call-graph", "dwarf,32768"]}
PROFILERS = ("perf", "py-spy")
from rpcprof.cli.defaults import MIN_SAMPLES  # noqa: E402  (one place for defaults)
# py-spy samples every thread it thinks is busy; for grpcio's idle pool workers waiting in
# Condition.wait its idle detection fails (two thirds of the samples), so only the thread holding
# the GIL is sampled: Python on CPU. Work done without the GIL (gRPC core's C code, the kernel's
# recv/send) is not in such a profile: perf's view of the same process shows it.
PYSPY_EVENT = "py-spy samples of the GIL holder (--gil --nonblocking): no kernel time, no GIL-free native work"


def pmu_event() -> str:
    """'cycles' when a hardware PMU counts, else 'cpu-clock' (software hrtimer)."""
    try:
        out = subprocess.run(["perf", "stat", "-x,", "-e", "cycles", "true"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "cpu-clock"
    return "cpu-clock" if ("not supported" in out.stderr or "<not" in out.stderr or out.returncode) else "cycles"


def max_sample_rate() -> int:
    try:
        return int(Path("/proc/sys/kernel/perf_event_max_sample_rate").read_text())
    except (OSError, ValueError):
        return 10000


def recorded_frequency(data: Path) -> int | None:
    """The sampling rate perf actually asked the kernel for, from perf.data's event attributes (perf
    lowers -F to kernel.perf_event_max_sample_rate); None if it cannot be read."""
    try:
        out = children.run(["perf", "evlist", "-F", "-i", str(data)], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    rates = [int(m) for m in re.findall(r"sample_freq=(\d+)", out.stdout)]
    return min(rates) if rates else None


@dataclass
class ProfilePlan:
    """Rate and duration chosen so that the profile should hold at least min_samples samples."""
    frequency: int
    duration: float
    expected_samples: int
    raised: str = ""

    @classmethod
    def for_load(cls, cpu_cores: float, frequency: int, duration: float, min_samples: int = MIN_SAMPLES,
                 max_frequency: int = 4999, max_duration: float = 60.0) -> "ProfilePlan":
        """Raise the rate first (up to max_frequency), then the duration, using the CPU the server
        used in the unprofiled window to predict samples = cores x seconds x Hz."""
        cores = max(cpu_cores, 1e-3)
        want = min_samples * 1.1
        raised = []
        if cores * duration * frequency < want and frequency < max_frequency:
            frequency = min(max_frequency, max(frequency, math.ceil(want / (cores * duration))))
            raised.append(f"rate raised to {frequency} Hz")
        if cores * duration * frequency < want and duration < max_duration:
            duration = min(max_duration, max(duration, math.ceil(want / (cores * frequency))))
            raised.append(f"duration raised to {duration:g} s")
        return cls(frequency, duration, int(cores * duration * frequency), ", ".join(raised))


def require(tool: str, how: str = "run tools/setup.sh") -> str:
    path = shutil.which(tool)
    if not path:
        raise UserError(f"{tool} not found: {how}")
    return path


class Recorder:
    """A profiler attached to one PID until stop(); stop() always leaves no process behind."""

    def __init__(self, argv: list[str], out_path: Path, log_path: Path, stop_signal=signal.SIGINT):
        self.argv = argv
        self.out_path = out_path
        self.log_path = log_path
        self.stop_signal = stop_signal
        self.log = open(log_path, "wb")
        self.proc = children.popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def wait_attached(self, timeout: float = 10.0) -> None:
        """Poll until the profiler has written its output header (perf) or is running (py-spy)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                tail = " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-3:])
                raise UserError(f"{Path(self.argv[0]).name} exited at start (status {self.proc.returncode}): {tail}")
            if self.out_path.name.endswith(".data"):
                if self.out_path.exists() and self.out_path.stat().st_size > 0:
                    return
            elif time.monotonic() - t0 > 0.5:
                return
            time.sleep(0.05)

    def stop(self, timeout: float = 120.0) -> int:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, self.stop_signal)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode


def start_perf(pid: int, out_dir: Path, frequency: int, call_graph: str, event: str) -> Recorder:
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    data = out_dir / "perf.data"
    argv = [perf, "record", "-e", event, "-F", str(frequency), *CALL_GRAPHS[call_graph], "-p", str(pid),
            "-o", str(data)]
    return Recorder(argv, data, out_dir / "perf-record.log")


def start_pyspy(pid: int, folded: Path, frequency: int) -> Recorder:
    pyspy = require("py-spy", "run tools/setup.sh (py-spy is in the project's virtualenv)")
    # --nonblocking: don't pause the interpreter to sample it (~4 % cost instead of ~18 %)
    argv = [pyspy, "record", "--pid", str(pid), "--format", "raw", "--nonblocking", "--gil", "--rate", str(frequency),
            "--output", str(folded)]
    return Recorder(argv, folded, folded.with_name("py-spy.log"))
