"""Capture: perf record (native code, Go, Node) or py-spy (CPython) attached to a PID (folding is in
capture/fold.py; the profilers and perf's call-graph modes are named in rpcprof/profiler_names.py).

perf samples the `cpu-clock` software event where there is no hardware PMU (this machine kind), so
time spent with interrupts off is charged where they are re-enabled; category shares are not
distorted by this, leaf "top frame" lists are.
"""
from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rpcprof.measure import children
from rpcprof.measure.recorder import PERF_KEPT_OPTIONS, PERF_RECORD_OPTIONS, Recorder, perf_recorder, require
from rpcprof.profiler_names import CALL_GRAPHS
from rpcprof.rundir import PERF_DATA, PERF_RECORD_LOG, PYSPY_LOG

MIN_SAMPLES = 5000          # FIELD-NOTES: aim for 3,000-5,000 samples per profile
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


def perf_scope(pid: int, cpus: list[int] | None) -> list[str]:
    """Where perf's events are opened: on the CPUs a pinned server owns (`-a -C CPUS`), or on each of the
    process's threads (`-p PID`). Per-thread events are switched out and in with their thread at every
    context switch, and a per-thread cpu-clock timer is re-armed at each switch in: a server that blocks
    thousands of times a second pays that on each (pajamax: +36 % CPU per request at 999 Hz, FIELD-NOTES).
    Per-CPU events cost nothing at a switch; the samples and counts of other tasks on those CPUs are
    filtered out (profile: by PID when folding) or measured (counters: the CPUs' time not the server's)."""
    return ["-a", "-C", ",".join(map(str, cpus))] if cpus else ["-p", str(pid)]


def start_perf(pid: int, out_dir: Path, frequency: int, call_graph: str, event: str,
               cpus: list[int] | None = None) -> Recorder:
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    data = out_dir / PERF_DATA
    argv = [perf, "record", *PERF_RECORD_OPTIONS, *PERF_KEPT_OPTIONS, "-e", event, "-F", str(frequency), *CALL_GRAPHS[call_graph], *perf_scope(pid, cpus),
            "-o", str(data)]
    return perf_recorder(argv, data, out_dir / PERF_RECORD_LOG)


def start_pyspy(pid: int, folded: Path, frequency: int) -> Recorder:
    pyspy = require("py-spy", "run tools/setup.sh (py-spy is in the project's virtualenv)")
    # --nonblocking: don't pause the interpreter to sample it (~4 % cost instead of ~18 %)
    argv = [pyspy, "record", "--pid", str(pid), "--format", "raw", "--nonblocking", "--gil", "--rate", str(frequency),
            "--output", str(folded)]
    return Recorder(argv, folded, folded.with_name(PYSPY_LOG))
