"""Off-CPU capture: where a process's threads wait, and for how long.

perf record on the `sched:sched_switch` tracepoint of the process's threads (-p PID, every event: -c 1)
takes the stack of each thread as it leaves a CPU: where it blocked. `--switch-events` adds the
kernel's record of each switch out and back in, so each switch-out sample is weighted by the time until
that thread ran again. A thread switched out while still runnable (prev_state R or R+: preempted, or
yielding) gets the leaf frame `[runnable]`, so the waits view (categorize.yaml `waits:`) takes that
reason from the scheduler's record, not from its stack.

fold_offcpu writes two folded files from one recording, both through inferno-collapse-perf (the same
frame names as the on-CPU profile): OUT weighted by microseconds off CPU, and OUT.count (the `.count`
suffix added) weighted by the number of waits, so a wait reason's mean wait is their ratio. The waits
still going on when the recording stopped are weighted up to its last event (and counted in `cut`).
A thread asleep for the whole window never switches, so it is not in the recording (an idle acceptor
thread, say): the figures are of the threads that worked in the window, and the sleepers are named
apart, from /proc snapshots at the window's ends (measure/threads.py).

Who woke whom (as bcc's offwaketime): beside it, a second perf record takes every `sched:sched_waking`
of the process's threads, machine-wide (the waker is another program, a softirq or a timer as often as
one of the process's own threads), with the waker's kernel and frame-pointer stack. It takes every
wake-up on the machine: a kernel filter on the thread ids would miss the threads started in the window
(pajamax starts one per connection, and names it anew). fold_offwake pairs each wait with
the last wake-up of its thread between its switch-out and its switch-in, and writes one stack per wait,
waker first: `WAKER;waker root...leaf;--;sleeper leaf...root;SLEEPER` weighted by the wait's µs
(a thread preempted while runnable is not woken: those waits are left out).

Cost: one event per context switch, with a DWARF stack copy (8 KiB) for native code. A server that
switches 100,000 times a second writes ~800 MB/s: this is a window of its own, never the profile's.
"""
from __future__ import annotations

import bisect
import re
import subprocess
import time
from pathlib import Path

from rpcprof.measure.recorder import PERF_KEPT_OPTIONS, PERF_RECORD_OPTIONS, Recorder, perf_recorder, require
from rpcprof.profiler_names import CALL_GRAPHS
from rpcprof.errors import UserError
from rpcprof.folded import WAKE_SEPARATOR
from rpcprof.measure import children
from rpcprof.rundir import OFFCPU_DATA, OFFWAKE_DATA, PERF_OFFCPU_LOG, PERF_OFFWAKE_LOG, count_path, output_file

RUNNABLE_FRAME = "[runnable]"
# histogram of single waits, log2 microsecond buckets: 1, 2, 4 ... 2^24 µs (16.8 s)
BUCKETS = 25

# [CPU]: -01 on the switch records of a recording started disabled (-D -1: perf's tracking event has no CPU)
_HEADER = re.compile(rb"^(?P<comm>.*?)\s+(?P<tid>\d+)(?:/\d+)?\s+(?:\[(?P<cpu>-?\d+)\]\s+)?(?P<time>\d+\.\d+):\s+(?:\d+\s+)?"
                     rb"(?P<event>PERF_RECORD_SWITCH(?:_CPU_WIDE)?|[\w-]+:[\w-]+)(?P<rest>.*)$")
_STATE = re.compile(rb"prev_state=(\S+)")
_COMM = re.compile(rb"prev_comm=(.*?) prev_pid=")
_NEXT = re.compile(rb"next_comm=(.*?) next_pid=(\d+)")
_WAKEE = re.compile(rb"comm=.* pid=(\d+) prio=")


def start_offcpu(pid: int, out_dir: Path, call_graph: str) -> Recorder:
    """Start recording pid's context switches into out_dir/offcpu.data (perf-offcpu.log)."""
    perf, data = require("perf", "run tools/setup.sh (Debian package linux-perf)"), out_dir / OFFCPU_DATA
    # a JIT's stacks need its jitdump injected; off-CPU stacks stop at the JIT frames instead
    graph = CALL_GRAPHS.get(call_graph if call_graph != "dwarf-jit" else "dwarf", CALL_GRAPHS["dwarf"])
    return perf_recorder([perf, "record", *PERF_RECORD_OPTIONS, *PERF_KEPT_OPTIONS, "-e", "sched:sched_switch", "-c",
                          "1", "--switch-events", *graph, "-p", str(pid), "-m", "1024", "-o", str(data)],
                         data, out_dir / PERF_OFFCPU_LOG)


def start_offwake(out_dir: Path) -> Recorder:
    """Start recording every wake-up on the machine (module doc) into out_dir/offwake.data (perf-offwake.log)."""
    perf, data = require("perf", "run tools/setup.sh (Debian package linux-perf)"), out_dir / OFFWAKE_DATA
    return perf_recorder([perf, "record", *PERF_RECORD_OPTIONS, "-a", "-e", "sched:sched_waking", "-g", "-m", "256",
                          "-o", str(data)], data, out_dir / PERF_OFFWAKE_LOG)


def samples(lines):
    """perf script output -> (header match, its stack lines) for each sample and record, the stack's
    lines without the blank ones, each ending in a newline; a header that does not parse is skipped
    with its stack."""
    header, stack = None, []
    for line in lines:
        if line[:1] in (b"\t", b" ") or line.strip() == b"":
            if line.strip():
                stack.append(line if line.endswith(b"\n") else line + b"\n")
            continue
        if header:
            yield header, stack
        header, stack = _HEADER.match(line.rstrip(b"\n")), []
    if header:
        yield header, stack


def weigh_switches(lines, stats: dict, spans: list | None = None) -> tuple[list[bytes], list[bytes]]:
    """perf script --show-switch-events output -> (lines weighted by µs off CPU, lines weighted by 1),
    each sched_switch sample's header rewritten with the weight as its period (which inferno sums) and
    the switch records dropped. stats gets waits, off_cpu_us, cut, unmatched, histogram, and
    runnable_to: for the switches of a still-runnable thread, which other program took the CPU (its
    thread name -> µs), and runnable_own_us: the time one of the process's own threads took it.
    spans, when given, gets each wait that was not a preemption: (tid, out, in, comm, stack lines leaf first)."""
    # [comm, tid, time, lines, runnable, who ran next (comm, tid) for runnable switches, µs off CPU]
    blocks: list[list] = []
    pending: dict[int, int] = {}                             # tid -> index of its open wait in blocks
    last_time = 0.0
    for m, stack in samples(lines):
        tid, t, event = int(m["tid"]), float(m["time"]), m["event"]
        last_time = max(last_time, t)
        if event.startswith(b"PERF_RECORD_SWITCH"):
            if b" IN" in m["rest"] and tid in pending:
                block = blocks[pending.pop(tid)]
                block[6] = (t - block[2]) * 1e6
            continue
        if event != b"sched:sched_switch":
            continue
        state = _STATE.search(m["rest"])
        runnable = bool(state) and state.group(1).startswith(b"R")
        if tid in pending:                    # switched out twice without a switch in between
            stats["unmatched"] = stats.get("unmatched", 0) + 1
        pending[tid] = len(blocks)
        comm = _COMM.search(m["rest"])     # the kernel's name for the thread: perf's may be ":TID"
        taker = _NEXT.search(m["rest"]) if runnable else None
        blocks.append([comm.group(1) if comm else m["comm"].strip(), tid, t, stack, runnable,
                       (taker.group(1), int(taker.group(2))) if taker else None, None])
    stats["cut"] = len(pending)
    for i in pending.values():
        blocks[i][6] = (last_time - blocks[i][2]) * 1e6
    timed: list[bytes] = []
    counted: list[bytes] = []
    histogram = [0] * BUCKETS
    total = 0
    runnable_to: dict[str, int] = {}
    own_tids, own_us = {b[1] for b in blocks}, 0          # the process's threads that ran in the window
    for comm, tid, t, stack, runnable, taker, us in blocks:
        weight = max(1, round(us or 0))
        if spans is not None and not runnable:
            spans.append((tid, t, t + (us or 0) / 1e6, comm, stack))
        total += weight
        histogram[min(BUCKETS - 1, max(0, weight.bit_length() - 1))] += 1
        leaf = [f"\t0 {RUNNABLE_FRAME} ([unknown])\n".encode()] if runnable else []
        for out, w in ((timed, weight), (counted, 1)):
            out += [comm + f" {tid} {t:.6f}: {w} sched:sched_switch:\n".encode(), *leaf, *stack, b"\n"]
        if taker and taker[1] in own_tids:
            own_us += weight
        elif taker:
            name = taker[0].decode(errors="replace")
            runnable_to[name] = runnable_to.get(name, 0) + weight
    stats.update(waits=len(blocks), threads=len(own_tids), off_cpu_us=total, histogram=histogram, runnable_own_us=own_us,
                 runnable_to=dict(sorted(runnable_to.items(), key=lambda kv: -kv[1])[:8]))
    stats.setdefault("unmatched", 0)
    return timed, counted


def fold_offcpu(data: Path, folded: Path, wakes: Path | None = None, wakes_folded: Path | None = None) -> dict:
    """offcpu.data -> folded (µs off CPU) and folded.count (waits); returns weigh_switches' stats plus
    fold_seconds, and with wakes (offwake.data) and wakes_folded, fold_offwake's figures under stats["wakes"]."""
    t0 = time.monotonic()
    stats: dict = {}
    spans: list = []
    timed, counted = weigh_switches(perf_script(data, "--show-switch-events").splitlines(keepends=True), stats, spans)
    if not stats["waits"]:
        raise UserError(f"{data}: no context switch of the process was recorded: its threads never waited "
                        "in the window (or perf could not attach to sched:sched_switch)")
    collapse_weighted(timed, folded)
    collapse_weighted(counted, count_path(folded))
    if wakes is not None and wakes_folded is not None and wakes.exists():
        stats["wakes"] = fold_offwake(wakes, spans, wakes_folded)
    stats["fold_seconds"] = time.monotonic() - t0
    return stats


def pair_wakes(lines, spans: list, stats: dict) -> list[bytes]:
    """perf script lines of sched_waking samples + the waits (weigh_switches' spans) -> one sample per
    wait with a wake-up, in perf script's form for inferno: the waker's comm as the sample's, its period
    the wait's µs, its stack (leaf first) the sleeper's name, the sleeper's stack root first, `--`, and
    the waker's stack leaf first, which inferno folds as WAKER;root...leaf;--;leaf...root;SLEEPER."""
    wakes: dict[int, list[tuple[float, bytes, list[bytes]]]] = {}
    for m, stack in samples(lines):
        if m["event"] == b"sched:sched_waking" and (wakee := _WAKEE.search(m["rest"])):
            wakes.setdefault(int(wakee.group(1)), []).append((float(m["time"]), m["comm"].strip(), stack))
    for found in wakes.values():
        found.sort(key=lambda w: w[0])
    out: list[bytes] = []
    paired = paired_us = total_us = 0
    for tid, t_out, t_in, comm, stack in spans:
        us = max(1, round((t_in - t_out) * 1e6))
        total_us += us
        # the thread's last wake-up in its wait: the one that ended it (earlier ones found it awake)
        found = wakes.get(tid) or []
        i = bisect.bisect_right(found, t_in, key=lambda w: w[0]) - 1
        if i < 0 or found[i][0] < t_out:
            continue
        t_wake, waker, waker_stack = found[i]
        paired += 1
        paired_us += us
        out += [waker + f" 0 {t_wake:.6f}: {us} sched:sched_waking:\n".encode(), b"\t0 " + comm + b" ([unknown])\n",
                *reversed(stack), f"\t0 {WAKE_SEPARATOR} ([unknown])\n".encode(), *waker_stack, b"\n"]
    stats.update(wakeups=sum(len(v) for v in wakes.values()), waits=len(spans), paired=paired,
                 paired_us=paired_us, waits_us=total_us)
    return out


def fold_offwake(wakes: Path, spans: list, folded: Path) -> dict:
    """offwake.data + the waits -> folded (waker;--;sleeper, µs off CPU); returns the pairing's figures."""
    stats: dict = {}
    if lines := pair_wakes(perf_script(wakes).splitlines(keepends=True), spans, stats):
        collapse_weighted(lines, folded)
    return stats


def collapse_weighted(lines: list[bytes], out: Path) -> None:
    """inferno-collapse-perf --kernel on weigh_switches' lines (it sums each sample's period) into out."""
    collapse(None, out, b"".join(lines))


def perf_script(data: Path, *options: str, stdout=subprocess.PIPE) -> bytes | None:
    """perf script's output of data (or None, written to stdout, a file); UserError when it fails.
    --no-inline: this perf is built without libbfd and would call addr2line per frame otherwise (~25x slower)."""
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    proc = children.run([perf, "script", "-i", str(data), "--no-inline", *options], stdout=stdout, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise UserError(f"perf script failed on {data}: {proc.stderr.decode(errors='replace').strip()[:200]}")
    return proc.stdout


def collapse(script: Path | None, folded: Path, text: bytes | None = None) -> None:
    """inferno-collapse-perf --kernel on a perf script file (or its text, on stdin) into folded, which is written
    whole or not at all."""
    inferno = require("inferno-collapse-perf")
    with output_file(folded) as out:
        done = children.run([inferno, "--kernel", *([str(script)] if script else [])], input=text, stdout=out,
                            stderr=subprocess.PIPE)
        if done.returncode != 0:
            raise UserError(f"inferno-collapse-perf failed: {done.stderr.decode(errors='replace').strip()[:200]}")
