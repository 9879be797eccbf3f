"""One profile window on one process: attach the profiler, let the caller drive (or wait), stop, fold.
Shared by `profile.sh run` (servers it started) and `profile.sh attach` (any PID). Categories are not
computed here: reports compute them from the folded file and the rules of the day.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rpcprof.capture.fold import fold_perf, fold_pyspy, inject_jit, jitdumps
from rpcprof.capture.profiler import (PYSPY_EVENT, ProfilePlan, max_sample_rate, recorded_frequency, start_perf,
                                     start_pyspy)
from rpcprof.measure import children
from rpcprof.measure.procstat import CpuWindow, ProcessMonitor
from rpcprof.measure.session import Session
from rpcprof.progress import log
from rpcprof.rundir import PERF_DATA, PROFILE_FOLDED, PYSPY_LOG, PYSPY_RAW, RunFolder

_PYSPY_SUMMARY = re.compile(r"Samples: (\d+) Errors: (\d+)")
_PYSPY_BEHIND = re.compile(r"([\d.]+)(s|ms|µs|ns) behind in sampling")
_UNIT_S = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
AFTER_TIMEOUT_S = 60.0


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
                                    # the samples are symbolised (server.yaml after_profile: a JIT's perf map)


def sampling_rate_used(name: str, asked: int, data: Path) -> dict:
    """The rate perf used (perf.data's event attributes) and the kernel's limit at the window's end (it
    lowers kernel.perf_event_max_sample_rate when sampling interrupts take too long); a warning when
    either is below the rate asked."""
    used, limit = recorded_frequency(data), max_sample_rate()
    if (used is not None and used < asked) or limit < asked:
        log(f"rpcprof: WARNING: {name}: asked perf for {asked} Hz; it used {used if used is not None else '?'} Hz "
            f"(kernel.perf_event_max_sample_rate is {limit}): fewer samples than planned")
    return {"frequency_used_hz": used, "max_sample_rate": limit}


def pyspy_sampling(name: str, asked: int, seconds: float, log_path: Path) -> dict:
    """What py-spy's log says of its sampling: the stacks it kept and the ticks it failed to read (its
    last line, `Samples: N Errors: M`), and how far it fell behind its rate (it says so past 1 s behind).
    py-spy keeps one stack per tick and thread that holds the GIL (--gil), so the rate it held is not
    in its log; its delay is. A warning when it fell behind or failed on more than 5 % of the ticks."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
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


def run_after(name: str, argv: list[str], timeout: float = AFTER_TIMEOUT_S) -> dict:
    """The window's after-command (e.g. `jcmd PID Compiler.perfmap`: the JVM writes /tmp/perf-PID.map, which
    perf script reads to name JIT frames); its exit code and time are recorded. A failure is a warning: the
    profile is folded anyway, with the frames it would have named left as addresses."""
    t0 = time.monotonic()
    try:
        proc = children.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            timeout=timeout)
        code, tail = proc.returncode, " | ".join(proc.stdout.decode(errors="replace").strip().splitlines()[-2:])
    except OSError as e:
        code, tail = None, f"could not start {argv[0]}: {e.strerror}"
    except subprocess.TimeoutExpired:
        code, tail = None, f"still running after {timeout:g} s, stopped"
    record = {"argv": argv, "exit_code": code, "seconds": round(time.monotonic() - t0, 3)}
    if code != 0:
        record["error"] = tail[:300]
        log(f"rpcprof: WARNING: {name}: the after-profile command `{' '.join(argv)}` failed "
            f"({'exit ' + str(code) if code is not None else tail}): frames it should name stay unnamed"
            + (f": {tail[:200]}" if code is not None and tail else ""))
    return record


def capture_profile(target: ProfileTarget, plan: ProfilePlan, monitor: ProcessMonitor,
                    drive: Callable[[CpuWindow], int | None], session: Session) -> dict:
    """Profile target.pid while drive(window) runs; returns the profile record (also profile.json).

    drive calls window.start() and window.end() when its window begins and ends (an end not marked is
    taken when drive returns) and returns the OK requests it saw, or None when unknown. The session owns
    the profiler while it runs, so it is stopped on any exit path.
    """
    perf = target.profiler == "perf"
    jit = perf and target.call_graph == "dwarf-jit"
    cpus = target.cpus if perf else None
    scope = f"CPU {','.join(map(str, cpus))}, pid {target.pid}'s samples kept" if cpus else f"pid {target.pid}'s threads"
    what = f"perf {target.event}, {target.call_graph} call graphs, {scope}" if perf else f"py-spy ({PYSPY_EVENT})"
    log(f"rpcprof: {target.name}: profiling {plan.duration:g} s at {plan.frequency} Hz with {what}"
        + (f" ({plan.raised} to reach {target.min_samples} samples)" if plan.raised else ""))
    folded, data, raw = target.out / PROFILE_FOLDED, target.out / PERF_DATA, target.out / PYSPY_RAW
    recorder = session.own(start_perf(target.pid, target.out, plan.frequency, target.call_graph, target.event, cpus)
                           if perf else start_pyspy(target.pid, raw, plan.frequency))
    recorder.wait_attached()
    started = time.time_ns()
    window = CpuWindow(monitor)
    requests = drive(window)
    cpu_ns = window.ns()
    dumps = jitdumps(target.pid) if jit else []
    code = session.stop(recorder)
    after = run_after(target.name, target.after) if target.after else None
    record = {
        "profiler": target.profiler,
        "event": target.event if perf else PYSPY_EVENT,
        "call_graph": target.call_graph if perf else "python (py-spy)",
        "frequency_hz": plan.frequency,
        "duration_s": plan.duration,
        "started_unix_ns": started,
        "plan": plan.raised or "as requested",
        "weight": "sample period in ns (inferno weights perf samples by period)" if perf else "samples",
        "recorder_exit_code": code,
        "scope": scope if perf else f"pid {target.pid}",
        "pid_filter": target.pid if cpus else None,
        "requests_ok": requests,
        "server_cpu_s": cpu_ns / 1e9,
        "cpu_us_per_req_profiled": cpu_ns / 1e3 / requests if requests else None,
    }
    if after:
        record["after_profile"] = after
    if perf and data.exists():
        if jit:
            record.update(inject_jit(data, dumps))
            if "jit_error" in record:
                log(f"rpcprof: WARNING: {target.name}: {record['jit_error']}")
            else:
                log(f"rpcprof: {target.name}: perf inject --jit wrote {record['jit_elf_files']} ELF files beside "
                    f"{', '.join(record['jitdumps'])} (perf.data names them)")
        record.update(sampling_rate_used(target.name, plan.frequency, data))
        record.update(fold_perf(data, folded, target.pid if cpus else None))
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
