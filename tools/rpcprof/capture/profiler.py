"""Capture: perf record (native code, Go, Node) or py-spy (CPython) attached to a PID (folding is in
capture/fold.py; a JIT runtime's perf maps in capture/jit_maps.py; the profilers and perf's call-graph modes
are named in rpcprof/profiler_names.py).

One profile window on one process (capture_profile): attach the profiler, let the caller drive (or wait),
stop, fold. Shared by `profile.sh run` (servers it started) and `profile.sh attach` (any PID). Categories
are not computed here: reports compute them from the folded file and the rules of the day.

perf samples the `cpu-clock` software event where there is no hardware PMU (this machine kind), so
time spent with interrupts off is charged where they are re-enabled; category shares are not
distorted by this, leaf "top frame" lists are.
"""
from __future__ import annotations

import math
import re
import time
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rpcprof.capture.fold import fold_perf, fold_pyspy, inject_jit, jitdumps, prune_jitted
from rpcprof.capture.jit_maps import JitMaps
from rpcprof.measure import children
from rpcprof.measure.procstat import CpuWindow, ProcessMonitor
from rpcprof.measure.recorder import PERF_KEPT_OPTIONS, PERF_RECORD_OPTIONS, Recorder, perf_recorder, require
from rpcprof.measure.session import Session
from rpcprof.profiler_names import CALL_GRAPHS
from rpcprof.progress import log
from rpcprof.rundir import PERF_DATA, PERF_RECORD_LOG, PROFILE_FOLDED, PYSPY_LOG, PYSPY_RAW, RunFolder

MIN_SAMPLES = 5000          # FIELD-NOTES: aim for 3,000-5,000 samples per profile
# py-spy samples every thread it thinks is busy; for grpcio's idle pool workers waiting in
# Condition.wait its idle detection fails (two thirds of the samples), so only the thread holding
# the GIL is sampled: Python on CPU. Work done without the GIL (gRPC core's C code, the kernel's
# recv/send) is not in such a profile: perf's view of the same process shows it.
PYSPY_EVENT = "py-spy samples of the GIL holder (--gil --nonblocking): no kernel time, no GIL-free native work"
_PYSPY_SUMMARY = re.compile(r"Samples: (\d+) Errors: (\d+)")
_PYSPY_BEHIND = re.compile(r"([\d.]+)(s|ms|µs|ns) behind in sampling")
_UNIT_S = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def pmu_event() -> str:
    """'cycles' when a hardware PMU counts, else 'cpu-clock' (software hrtimer)."""
    out = children.output(["perf", "stat", "-x,", "-e", "cycles", "true"], timeout=10)
    supported = out and out.returncode == 0 and "not supported" not in out.stderr and "<not" not in out.stderr
    return "cycles" if supported else "cpu-clock"


def max_sample_rate() -> int:
    with suppress(OSError, ValueError):
        return int(Path("/proc/sys/kernel/perf_event_max_sample_rate").read_text())
    return 10000


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


def start_perf(pid: int, out_dir: Path, frequency: int, call_graph: str, event: str,
               cpus: list[int] | None = None) -> Recorder:
    """perf record, its events opened on the CPUs a pinned server owns (`-a -C CPUS`), or on each of the
    process's threads (`-p PID`). Per-thread events are switched out and in with their thread at every
    context switch, and a per-thread cpu-clock timer is re-armed at each switch in: a server that blocks
    thousands of times a second pays that on each (pajamax: +36 % CPU per request at 999 Hz, FIELD-NOTES).
    Per-CPU events cost nothing at a switch; the samples and counts of other tasks on those CPUs are
    filtered out (profile: by PID when folding) or measured (counters: the CPUs' time not the server's)."""
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    data = out_dir / PERF_DATA
    scope = ["-a", "-C", ",".join(map(str, cpus))] if cpus else ["-p", str(pid)]
    argv = [perf, "record", *PERF_RECORD_OPTIONS, *PERF_KEPT_OPTIONS, "-e", event, "-F", str(frequency),
            *CALL_GRAPHS[call_graph], *scope, "-o", str(data)]
    return perf_recorder(argv, data, out_dir / PERF_RECORD_LOG)


def start_pyspy(pid: int, folded: Path, frequency: int, deferred: bool = False) -> Recorder:
    """py-spy record on pid; deferred: started by the Recorder's start(), at the window's start."""
    pyspy = require("py-spy", "run tools/setup.sh (py-spy is in the project's virtualenv)")
    # --nonblocking: don't pause the interpreter to sample it (~4 % cost instead of ~18 %)
    argv = [pyspy, "record", "--pid", str(pid), "--format", "raw", "--nonblocking", "--gil", "--rate", str(frequency),
            "--output", str(folded)]
    return Recorder(argv, folded, folded.with_name(PYSPY_LOG), deferred=deferred)


@dataclass
class ProfileTarget:
    name: str            # how reports name this profile (server name)
    pid: int
    profiler: str        # perf | py-spy
    call_graph: str      # perf only
    event: str           # perf's sampled event
    out: Path            # folder for perf.data, profile.folded, profile.json
    min_samples: int
    cpus: list[int] | None = None   # perf: sample these whole CPUs (the server is pinned there), keep pid's samples
    warn_few: bool = True           # warn when the profile holds fewer than min_samples (not for one of several
                                    # rounds: their sum is what the breakdown uses, and compare says it)
    after: list[str] | None = None  # a command run when the window ends, after the profiler stopped and before
                                    # the samples are symbolised (server.yaml after_profile: a JIT's perf map),
                                    # and before the profiler starts (keep_freed_code)


def sampling_rate_used(name: str, asked: int, data: Path) -> dict:
    """The rate perf used (perf.data's event attributes) and the kernel's limit at the window's end (it
    lowers kernel.perf_event_max_sample_rate when sampling interrupts take too long); a warning when
    either is below the rate asked."""
    evlist = children.output(["perf", "evlist", "-F", "-i", str(data)], timeout=30)
    used = min((int(m) for m in re.findall(r"sample_freq=(\d+)", evlist.stdout if evlist else "")), default=None)
    limit = max_sample_rate()
    if (used is not None and used < asked) or limit < asked:
        log(f"rpcprof: WARNING: {name}: asked perf for {asked} Hz; it used {used if used is not None else '?'} Hz "
            f"(kernel.perf_event_max_sample_rate is {limit}): fewer samples than planned")
    return {"frequency_used_hz": used, "max_sample_rate": limit}


def pyspy_sampling(name: str, asked: int, seconds: float, log_path: Path) -> dict:
    """What py-spy's log says of its sampling: the stacks it kept and the ticks it failed to read (its
    last line, `Samples: N Errors: M`), and how far it fell behind its rate (it says so past 1 s behind).
    py-spy keeps one stack per tick and thread that holds the GIL (--gil), so the rate it held is not
    in its log; its delay is. A warning when it fell behind or failed on more than 5 % of the ticks."""
    if (text := children.read_stripped(log_path)) is None:
        return {}
    summary = _PYSPY_SUMMARY.findall(text)
    behind = [float(v) * _UNIT_S[unit] for v, unit in _PYSPY_BEHIND.findall(text)]
    record = {"pyspy_kept": int(summary[-1][0]) if summary else None,
              "pyspy_errors": int(summary[-1][1]) if summary else None,
              "pyspy_behind_s": max(behind) if behind else 0.0}
    ticks = asked * seconds
    if record["pyspy_errors"] is not None and ticks:
        record["pyspy_error_share"] = record["pyspy_errors"] / ticks
    if behind:
        log(f"rpcprof: WARNING: {name}: py-spy fell up to {max(behind):.2f} s behind its {asked} Hz: fewer samples "
            "than planned, and late ones; lower --frequency")
    if record.get("pyspy_error_share", 0) > 0.05:
        log(f"rpcprof: WARNING: {name}: py-spy could not read the stacks at {100 * record['pyspy_error_share']:.0f} % "
            f"of its ticks ({record['pyspy_errors']:,} errors, --nonblocking reads race the interpreter): those "
            "instants are missing from the shares")
    return record


def capture_profile(target: ProfileTarget, plan: ProfilePlan, monitor: ProcessMonitor,
                    drive: Callable[[CpuWindow], int | None], session: Session, late: bool = False) -> dict:
    """Profile target.pid while drive(window) runs; returns the profile record (also profile.json).

    drive calls window.start() and window.end() when its window begins and ends (an end not marked is
    taken when drive returns) and returns the OK requests it saw, or None when unknown. late:
    the samples begin at window.start(), not before drive (a driver's lead is not profiled: perf's events
    are enabled then, and py-spy, which cannot be attached with its sampling off, is started then). The session
    owns the profiler while it runs, so it is stopped on any exit path.
    """
    perf = target.profiler == "perf"
    jit = perf and target.call_graph == "dwarf-jit"
    cpus = target.cpus if perf else None
    scope = f"CPU {','.join(map(str, cpus))}, pid {target.pid}'s samples kept" if cpus else f"pid {target.pid}'s threads"
    what = f"perf {target.event}, {target.call_graph} call graphs, {scope}" if perf else f"py-spy ({PYSPY_EVENT})"
    log(f"rpcprof: {target.name}: profiling {plan.duration:g} s at {plan.frequency} Hz with {what}"
        + (f" ({plan.raised} to reach {target.min_samples} samples)" if plan.raised else ""))
    folded, data, raw = target.out / PROFILE_FOLDED, target.out / PERF_DATA, target.out / PYSPY_RAW
    maps = JitMaps(target.name, target.pid, target.after, target.out) if perf else None
    recorder = session.own(start_perf(target.pid, target.out, plan.frequency, target.call_graph, target.event, cpus)
                           if perf else start_pyspy(target.pid, raw, plan.frequency, deferred=late))
    recorder.wait_attached(enable=not late)
    started = [time.time_ns()]

    def begin() -> None:        # the driver's timed window begins, after its lead: the samples with it
        started[0] = time.time_ns()
        recorder.start()
        if maps:
            maps.start()
    window = CpuWindow(monitor, on_start=begin if late else None)
    with maps.during(late) if maps else nullcontext():
        requests = drive(window)
    cpu_ns = window.ns()
    recorder.check()
    dumps = jitdumps(target.pid) if jit else []
    code = session.stop(recorder)
    record = {"profiler": target.profiler, "event": target.event if perf else PYSPY_EVENT,
              "call_graph": target.call_graph if perf else "python (py-spy)", "frequency_hz": plan.frequency,
              "duration_s": plan.duration, "started_unix_ns": started[0], "plan": plan.raised or "as requested",
              "weight": "sample period in ns (inferno weights perf samples by period)" if perf else "samples",
              "recorder_exit_code": code, "scope": scope if perf else f"pid {target.pid}",
              "pid_filter": target.pid if cpus else None, "requests_ok": requests, "server_cpu_s": cpu_ns / 1e9,
              "cpu_us_per_req_profiled": cpu_ns / 1e3 / requests if requests else None}
    if maps and (after := maps.end()):
        record["after_profile"] = after
    if perf and data.exists():
        if jit:
            record.update(inject_jit(data, dumps))
            if "jit_error" in record:
                log(f"rpcprof: WARNING: {target.name}: {record['jit_error']}")
        record.update(sampling_rate_used(target.name, plan.frequency, data))
        elves = set() if "jitdumps" in record else None
        record.update(fold_perf(data, folded, target.pid if cpus else None, target.name, elves))
        if elves is not None:
            record["jit_elf_kept"] = prune_jitted(dumps, elves, target.out)
            log(f"rpcprof: {target.name}: perf inject --jit wrote {record['jit_elf_files']:,} ELF files beside "
                f"{', '.join(record['jitdumps'])} (perf.data names them); {record['jit_elf_kept']:,} kept, those "
                "the samples run in, or all where the dump is not the run's")
        if record["samples"]:
            maps.cost(folded, record)
    elif not perf and raw.exists():
        record.update(fold_pyspy(raw, folded))
        record.update(pyspy_sampling(target.name, plan.frequency, plan.duration, target.out / PYSPY_LOG))
        if record["rejoined"]:
            log(f"rpcprof: NOTE: {target.name}: {record['rejoined']} py-spy record(s) broken by a newline in a frame "
                "name it misread (--nonblocking) were joined again")
    else:
        record["samples"] = 0
    record["too_few_samples"] = record["samples"] < target.min_samples
    if record["too_few_samples"] and record["samples"] and target.warn_few:
        log(f"rpcprof: WARNING: {target.name}: only {record['samples']} samples (< {target.min_samples}): shares "
            "are rough; raise the profile duration or --frequency")
    RunFolder.write_profile(target.out, record)
    return record
