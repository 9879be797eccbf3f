"""One profile window on one process: attach the profiler, let the caller drive (or wait), stop, fold,
categorise. Shared by `profile.sh run` (servers it started) and `profile.sh attach` (any PID).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .categorize import Rules, categorize, open_folded
from .procstat import CpuWindow, ProcessMonitor
from .profiler import (PYSPY_EVENT, ProfilePlan, count_folded_samples, fold_perf, inject_jit, jitdumps, start_perf,
                       start_pyspy)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class ProfileTarget:
    name: str            # how reports name this profile (server name)
    pid: int
    profiler: str        # perf | py-spy
    call_graph: str      # perf only
    event: str           # perf's sampled event
    rules: Rules         # with the app pattern already added
    out: Path            # folder for perf.data, profile.folded, profile.json
    min_samples: int


def capture_profile(target: ProfileTarget, plan: ProfilePlan, monitor: ProcessMonitor,
                    drive: Callable[[CpuWindow], int | None], owner) -> dict:
    """Profile target.pid while drive(window) runs; returns the profile record (also profile.json).

    drive calls window.start() and window.end() when its window begins and ends (an end not marked is
    taken when drive returns) and returns the OK requests it saw, or None when unknown. owner.recorder
    holds the running profiler so the caller can stop it on any exit path.
    """
    what = (f"perf {target.event}, {target.call_graph} call graphs" if target.profiler == "perf"
            else f"py-spy ({PYSPY_EVENT})")
    log(f"rpcprof: {target.name}: profiling {plan.duration:g} s at {plan.frequency} Hz with {what}"
        + (f" ({plan.raised} to reach {target.min_samples} samples)" if plan.raised else ""))
    folded = target.out / "profile.folded"
    if target.profiler == "perf":
        owner.recorder = start_perf(target.pid, target.out, plan.frequency, target.call_graph, target.event)
    else:
        owner.recorder = start_pyspy(target.pid, folded, plan.frequency)
    owner.recorder.wait_attached()
    window = CpuWindow(monitor)
    requests = drive(window)
    cpu_ns = window.ns()
    dumps = jitdumps(target.pid) if target.profiler == "perf" and target.call_graph == "dwarf-jit" else []
    code = owner.recorder.stop()
    owner.recorder = None
    record = {
        "profiler": target.profiler,
        "event": target.event if target.profiler == "perf" else PYSPY_EVENT,
        "call_graph": target.call_graph if target.profiler == "perf" else "python (py-spy)",
        "frequency_hz": plan.frequency,
        "duration_s": plan.duration,
        "plan": plan.raised or "as requested",
        "weight": ("sample period in ns (inferno weights perf samples by period)" if target.profiler == "perf"
                   else "samples"),
        "recorder_exit_code": code,
        "requests_ok": requests,
        "server_cpu_s": cpu_ns / 1e9,
        "cpu_us_per_req_profiled": cpu_ns / 1e3 / requests if requests else None,
    }
    data = target.out / "perf.data"
    if target.profiler == "perf" and target.call_graph == "dwarf-jit" and data.exists():
        record.update(inject_jit(data, dumps))
        if "jit_error" in record:
            log(f"rpcprof: WARNING: {target.name}: {record['jit_error']}")
        else:
            log(f"rpcprof: {target.name}: perf inject --jit wrote {record['jit_elf_files']} ELF files beside "
                f"{', '.join(record['jitdumps'])} (perf.data names them)")
    if target.profiler == "perf":
        record.update(fold_perf(data, folded) if data.exists() else {"samples": 0})
    else:
        record["samples"] = count_folded_samples(folded) if folded.exists() else 0
    record["too_few_samples"] = record["samples"] < target.min_samples
    if record["too_few_samples"] and record["samples"]:
        log(f"rpcprof: WARNING: {target.name}: only {record['samples']} samples (< {target.min_samples}): shares "
            "are rough; raise the profile duration or --frequency")
    if folded.exists() and folded.stat().st_size:
        b = categorize(open_folded(folded), target.rules)
        record["shares"] = {c: b.share(c) for c in target.rules.all_categories}
    write_json(target.out / "profile.json", record)
    return record


def write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
