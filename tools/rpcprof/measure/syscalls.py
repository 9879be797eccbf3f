"""Syscalls per request, counted from kernel tracepoints (perf stat, in-kernel counting: no samples
are written), in a window of its own so that counting never touches the efficiency window.

The same perf stat counts the server's kernel events (every thread, -p PID):
  context_switches      software event `context-switches`: every time one of its threads left a CPU
  involuntary_switches  `sched:sched_switch` filtered on prev_state: switched out while still runnable.
                        Measured on kernel 6.18 (PREEMPT_DYNAMIC, preempt=none): a thread preempted on
                        its way back to user space is reported as prev_state 0 (`R`), but one preempted
                        inside the kernel (cond_resched in a long read) as TASK_REPORT_MAX, 0x100 (`R+`):
                        `prev_state == 0` alone caught 1 of 165 such switches. Both are counted, which is
                        what the kernel's nonvoluntary_ctxt_switches counts (166 against /proc's 171);
                        a thread sleeping in a loop gave 0 of 1,836 switches (the filter applies).
  voluntary_switches    context_switches - involuntary_switches: it blocked (never negative)
  wakeups_issued        `sched:sched_waking`: the tracepoint fires in the waker's context, so these are
                        wake-ups the server's threads issued, including those done by softirq work run
                        on their behalf (loopback delivery inside its sends wakes the peer)
  page_faults           software event `page-faults`
An event the kernel lacks or perf cannot count is None, never 0.

In the dedicated syscalls window only (it costs a sample per call, so never in the profile window),
perf record on the sys_exit tracepoints of the read and write families gives each call's return value:
bytes moved, EAGAIN, other errors, zero (end of file) per syscall name (summarise_io_script).
"""
from __future__ import annotations

import functools
import operator
import re
import subprocess
import time
from contextlib import suppress
from pathlib import Path

from rpcprof.measure import threads
from rpcprof.measure.children import read_stripped
from rpcprof.measure.recorder import PERF_RECORD_OPTIONS, Recorder, log_tail, perf_recorder, require
from rpcprof.measure.session import Session
from rpcprof.progress import log
from rpcprof.rundir import beside, window_file
from rpcprof.syscall_families import IO_READS, IO_WRITES, SYSCALLS, WRITES

TRACING = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))
TRACEFS_MOUNT = Path("/sys/kernel/tracing")
LATE_INTERVAL_MS = 86_400_000     # perf stat -I: a day, so that its one print is the one at its interrupt
INTERVAL_STAMP = re.compile(r"\s*\d+\.\d{9}$")    # the first field of an -I line: seconds since start


def _events_root() -> Path | None:
    """Where the kernel lists its tracepoints. On a fresh machine tracefs is not mounted until perf first
    uses a tracepoint, so the folder is empty and every tracepoint would look missing on the first run
    only: mount it first (root), as perf would."""
    if not any(r.exists() for r in TRACING) and TRACEFS_MOUNT.is_dir():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS_MOUNT)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return next((r for r in TRACING if r.exists()), None)


def tracepoint_exists(group: str, name: str) -> bool:
    root = _events_root()
    return root is not None and (root / group / name).exists()


def available_syscalls(names=SYSCALLS, point: str = "enter") -> list[str]:
    """Those of names (default SYSCALLS) whose sys_POINT tracepoint this kernel has."""
    return [s for s in names if tracepoint_exists("syscalls", f"sys_{point}_{s}")]


# --- kernel events counted beside the syscalls ----------------------------------------------------

EVENT_KEYS = ("context_switches", "involuntary_switches", "voluntary_switches", "wakeups_issued", "page_faults")
# (key, perf event) counted by perf stat; voluntary_switches is derived
EVENT_SPECS = (("context_switches", "context-switches"), ("involuntary_switches", "sched:sched_switch"),
               ("wakeups_issued", "sched:sched_waking"), ("page_faults", "page-faults"))
TASK_REPORT_MAX = 0x100      # sched_switch's prev_state of a task preempted in the kernel (`R+`), Linux >= 4.14


def preempted_state(format_text: str | None = None) -> int:
    """The prev_state value sched_switch reports for a preempted task, read from the tracepoint's print
    format (the mask it prints as `+`); TASK_REPORT_MAX where the format is not readable."""
    if format_text is None:
        root = _events_root()
        format_text = (read_stripped(root / "sched" / "sched_switch" / "format") if root else None) or ""
    # Linux >= 4.14 prints `REC->prev_state & (((S | S ...) + 1) << 1) ? "+"`: TASK_REPORT_MAX
    m = re.search(r'REC->prev_state & \(\(\(([0-9a-fA-Fx |]+)\) \+ 1\) << 1\) \? "\+"', format_text)
    try:
        return (functools.reduce(operator.or_, (int(w.strip(), 0) for w in m.group(1).split("|"))) + 1) << 1
    except (AttributeError, ValueError):        # no such print format, or not numbers
        return TASK_REPORT_MAX


def kernel_events() -> list[tuple[str, str, str | None]]:
    """(key, perf event, tracepoint filter) of the kernel events counted (EVENT_SPECS), those this kernel has, in the
    order they are given to perf stat. sched_switch is counted once, filtered on a thread switched out while
    runnable (R, or R+: preempted in the kernel): the unfiltered total is the context-switches software event,
    so no two lines of perf's output carry the same event name."""
    runnable = f"prev_state == 0 || prev_state == {preempted_state()}"
    return [(key, event, runnable if key == "involuntary_switches" else None) for key, event in EVENT_SPECS
            if ":" not in event or tracepoint_exists(*event.split(":"))]


def count_argv(perf: str, pid: int, csv: Path, cpus: list[int] | None = None) -> list[str]:
    """perf stat's command line: syscalls, then each kernel event with its own -e (a --filter binds to
    the event just before it). cpus: count the syscalls on those whole CPUs (the server is pinned there)
    with no per-thread event to switch at each context switch; the kernel events are then not counted
    here (the caller reads the process's own from /proc, measure/threads.py)."""
    named = [f"syscalls:sys_enter_{s}" for s in available_syscalls()]
    if cpus:
        # the request-path syscalls only: raw_syscalls:sys_enter fires on every syscall and costs 190 ns
        # each (a getppid loop on this machine kind: 195 ns bare, 383 with it, 243 with the named events
        # only), so the total is not counted here (None) and no `other` is known
        # -I with an interval no window reaches and no -o: perf prints the counts on stderr (unbuffered, the
        # recorder's log, which is csv) the moment it is interrupted, then closes its events, one RCU grace
        # period each (~0.8 s for these 22); read_counts() takes them without waiting for that exit
        return [perf, "stat", "-x,", "-I", str(LATE_INTERVAL_MS), "-e", ",".join(named), "-a", "-C",
                ",".join(map(str, cpus))]
    argv = [perf, "stat", "-x,", "-e", ",".join(["raw_syscalls:sys_enter"] + named)]
    for _, event, tp_filter in kernel_events():
        argv += ["-e", event] + (["--filter", tp_filter] if tp_filter else [])
    return argv + ["-p", str(pid), "-o", str(csv)]


def start_count(pid: int, out: Path, name: str = "syscalls", cpus: list[int] | None = None) -> Recorder:
    """perf stat (count_argv) until stopped; results in out/NAME.csv."""
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    csv = out / window_file(name, "counts")
    # counting starts when perf says its events are enabled, ends when they are disabled
    return perf_recorder(count_argv(perf, pid, csv, cpus), csv, csv if cpus else out / window_file(name, "messages"))


def read_counts(counter: Recorder, timeout: float = 5.0) -> str | None:
    """The counts of a CPU-wide counter (start_count with cpus) once it has been interrupted: perf prints
    them before it closes its events, so they can be read while it exits. None if they did not all come
    within timeout (the caller then waits for the exit, as for any other counter)."""
    expected = sum(len(event.split(",")) for option, event in zip(counter.argv, counter.argv[1:]) if option == "-e")
    deadline = time.monotonic() + timeout
    while True:
        text = counter.log_path.read_text(errors="replace") if counter.log_path.exists() else ""
        text = text[:text.rfind("\n") + 1]             # whole lines only
        if sum(1 for _ in _csv_rows(text)) >= expected:
            return text
        if counter.proc.poll() is not None or time.monotonic() > deadline:
            return None
        time.sleep(0.005)


def _csv_rows(text: str):
    """(value, event) of each counter line of `perf stat -x,` output, in order."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split(",")
        if len(parts) >= 4 and INTERVAL_STAMP.match(parts[0]):
            parts = parts[1:]           # -I: each line starts with the time it was read at
        if len(parts) >= 3:
            yield parts[0].strip(), parts[2].strip()


def parse_kernel_events(text: str, specs=EVENT_SPECS) -> dict:
    """{key: count or None} for EVENT_KEYS from `perf stat -x,` output. Lines are matched to specs in
    order: the n-th line naming an event is the n-th spec with that event (perf prints its events in the
    order given, and a filtered tracepoint's line carries only its name). `<not supported>`, `<not
    counted>` or no line at all: None."""
    pending: dict[str, list[str]] = {}
    for key, event, *_ in specs:
        pending.setdefault(event, []).append(key)
    values: dict[str, int | None] = {}
    for value, event in _csv_rows(text):
        if keys := pending.get(event):
            values[keys.pop(0)] = int(value) if value.isdigit() else None
    cs, inv = values.get("context_switches"), values.get("involuntary_switches")
    values["voluntary_switches"] = max(cs - inv, 0) if cs is not None and inv is not None else None
    return {k: values.get(k) for k in EVENT_KEYS}


def parse_perf_stat_csv(text: str) -> dict:
    """{'total': N, 'by_syscall': {name: N, ..., 'other': N}, 'events': {...}} from `perf stat -x,` output.
    For syscalls '<not counted>' (the task never ran while counting) is 0; events: parse_kernel_events.
    Without a raw_syscalls:sys_enter line (the named syscalls only were counted) total is None and there
    is no `other`."""
    total = None
    by: dict[str, int] = {}
    for value, event in _csv_rows(text):
        n = int(value) if value.isdigit() else 0
        if event == "raw_syscalls:sys_enter":
            total = n
        elif event.startswith("syscalls:sys_enter_"):
            by[event.removeprefix("syscalls:sys_enter_")] = n
    by = {k: v for k, v in by.items() if v}
    other = total - sum(by.values()) if total is not None else 0
    if other > 0:
        by["other"] = other
    return {"total": total, "by_syscall": dict(sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))),
            "events": parse_kernel_events(text)}


def events_from_proc(proc: dict) -> dict:
    """The kernel events from the process's own /proc counters (measure/threads.py): context
    switches and page faults; wake-ups issued have no /proc counter (None: not counted)."""
    return {k: proc.get(k) for k in EVENT_KEYS}


def per_request(counts: dict, requests: int) -> dict:
    """Syscalls per request, total and by syscall; kernel events, raw and per request."""
    events = {"events": counts.get("events") or dict.fromkeys(EVENT_KEYS),
              "events_per_req": threads.per_request(events_from_proc(counts.get("events") or {}), requests)}
    if not requests:
        return {"per_req": None, "writes_per_req": None, "by_syscall_per_req": {}, **events}
    named = counts["by_syscall"].keys() - {"other"}
    return {"per_req": counts["total"] / requests if counts["total"] is not None else None,
            # the request-path syscalls counted by name (SYSCALLS), all of them when the total was not counted
            "named_per_req": sum(v for k, v in counts["by_syscall"].items() if k != "other") / requests,
            # no syscall named at all: the per-syscall tracepoints were missing, the writes were not counted
            "writes_per_req": sum(counts["by_syscall"].get(w, 0) for w in WRITES) / requests if named else None,
            "by_syscall_per_req": {k: v / requests for k, v in counts["by_syscall"].items()}, **events}


# --- bytes per read and per write: perf record on sys_exit ---------------------------------------

EAGAIN = 11
IO_KEEP_BYTES = 1 << 20          # a recording up to 1 MiB is kept beside its summary; larger ones deleted
IO_BUFFER_PAGES = 1024           # 4 MiB ring buffer per CPU: a sample per call at 100k+ calls/s loses none
IO_SCRIPT_TIMEOUT = 300.0
_EXIT = re.compile(r"syscalls:sys_exit_(\w+):\s+(0x[0-9a-fA-F]+|-?\d+)\s*$")
_LOST = re.compile(r"PERF_RECORD_LOST(?:_SAMPLES)?\s+lost\s+(\d+)")
IO_COUNTS = ("calls", "bytes", "eagain", "errors", "zero")
IO_SYSCALLS = IO_READS + IO_WRITES
IO_FIGURES = ("reads_per_req", "eagain_reads_per_req", "bytes_per_read", "bytes_per_write", "req_per_write")


def io_record_argv(perf: str, pid: int, data: Path, names: list[str]) -> list[str]:
    """perf record of the sys_exit tracepoints of names; -B -N: no build-id pass at the end (it would
    read the whole file) and no build-id cache (no symbols are needed)."""
    return [perf, "record", "-q", "-B", "-N", *PERF_RECORD_OPTIONS, "-m", str(IO_BUFFER_PAGES),
            "-e", ",".join(f"syscalls:sys_exit_{s}" for s in names), "-p", str(pid), "-o", str(data)]


def start_io_record(pid: int, out: Path, name: str = "syscalls-io") -> Recorder | None:
    """perf record (io_record_argv) of pid into out/NAME.data until stopped; None without the tracepoints."""
    if not (names := available_syscalls(IO_SYSCALLS, "exit")):
        return None
    perf = require("perf", "run tools/setup.sh (Debian package linux-perf)")
    data = out / window_file(name, "recording")
    return perf_recorder(io_record_argv(perf, pid, data, names), data, out / window_file(name, "messages"))


def summarise_io(session: Session, recorder: Recorder) -> dict | None:
    """summarise_io_script of a stopped start_io_record recording, by a perf script the session owns
    (`syscalls:sys_exit_NAME: 0xRET` lines and lost-event records, into the recording's text file); that text
    is deleted, and the recording too unless it is small (IO_KEEP_BYTES). None, with a warning, when perf
    script fails."""
    data = recorder.out_path
    if not data.exists() or data.stat().st_size == 0:
        log(f"rpcprof: WARNING: {data} was not written: no bytes per read/write")
        return None
    perf, text = require("perf", "run tools/setup.sh (Debian package linux-perf)"), beside(data, "text")
    script = session.own(Recorder([perf, "script", "-i", str(data), "-F", "event,trace", "--show-lost-events"], text, text))
    with suppress(subprocess.TimeoutExpired):     # the session stops it on any exit path
        script.proc.wait(timeout=IO_SCRIPT_TIMEOUT)
    code = session.stop(script)
    try:
        if code != 0:
            log(f"rpcprof: WARNING: perf script of {data} failed (status {code}): {log_tail(text, 2)}; "
                "no bytes per read/write")
            return None
        with open(text, errors="replace") as lines:
            summary = summarise_io_script(lines, available_syscalls(IO_SYSCALLS, "exit") or IO_SYSCALLS)
    finally:
        text.unlink(missing_ok=True)
        if data.exists() and data.stat().st_size > IO_KEEP_BYTES:
            data.unlink()
    if summary["lost"]:
        log(f"rpcprof: WARNING: perf record lost {summary['lost']} sys_exit events: read/write calls per request "
            "are undercounted")
    return summary


def _signed(word: str) -> int:
    """A return value as perf prints it ('0x%lx' of a long: -11 is 0xfffffffffffffff5)."""
    v = int(word, 16) if word.lower().startswith("0x") else int(word)
    return v - (1 << 64) if v >= 1 << 63 else v


def summarise_io_script(lines, names=IO_SYSCALLS) -> dict:
    """{'io': {name: {calls, bytes, eagain, errors, zero}}, 'lost': N} from perf script -F event,trace
    output: bytes sums the positive returns, eagain counts -EAGAIN, errors the other negative returns,
    zero the returns of 0. Every name watched is listed, with 0 calls if it had none; lines that are
    not sys_exit samples or lost-event records (perf's warnings) are ignored."""
    io = {n: dict.fromkeys(IO_COUNTS, 0) for n in names}
    lost = 0
    for line in lines:
        if m := _EXIT.search(line):
            s = io.setdefault(m.group(1), dict.fromkeys(IO_COUNTS, 0))
            ret = _signed(m.group(2))
            s["calls"] += 1
            if ret > 0:
                s["bytes"] += ret
            else:
                s["zero" if ret == 0 else "eagain" if ret == -EAGAIN else "errors"] += 1
        elif m := _LOST.search(line):
            lost += int(m.group(1))
    return {"io": io, "lost": lost}


def io_per_request(io: dict | None, requests: int) -> dict:
    """Figures of the read and write families from an io summary:
      reads_per_req          read-family calls per request (EAGAIN and 0 returns included: each is a syscall paid)
      eagain_reads_per_req   read-family calls per request that returned EAGAIN (a poll that found nothing)
      bytes_per_read         read-family bytes over ALL read-family calls, EAGAIN included: what one read
                             syscall brings in on average (per successful read: io's bytes / (calls - eagain - ...))
      bytes_per_write        write-family bytes over all write-family calls
      req_per_write          requests per write-family call: the batching factor (1 = a write per response)
    A tokio eventfd wake-up is an 8-byte `write`: it counts as a write here; io, per syscall name, tells it apart.
    None where there is nothing to divide by."""
    def family(names):
        return [sum(io[n][key] for n in names if n in io) for key in ("calls", "bytes", "eagain")]

    if io is None:
        return dict.fromkeys(IO_FIGURES)
    r_calls, r_bytes, r_eagain = family(IO_READS)
    w_calls, w_bytes, _ = family(IO_WRITES)
    return {"reads_per_req": r_calls / requests if requests else None,
            "eagain_reads_per_req": r_eagain / requests if requests else None,
            "bytes_per_read": r_bytes / r_calls if r_calls else None,
            "bytes_per_write": w_bytes / w_calls if w_calls else None,
            "req_per_write": requests / w_calls if w_calls else None}
