"""The steps every command is made of, on one process under load: warm up, measure a window with no
profiler attached, count syscalls in a window of their own, profile a window, send the profile to a
Collector. `run` applies them to the servers it starts, `attach` to a process it did not start, `sweep` to
every cell's run.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from rpcprof.capture.profiler import ProfilePlan, ProfileTarget, capture_profile
from rpcprof.errors import EXIT_FAILED, UserError
from rpcprof.measure import syscalls
from rpcprof.measure.load import LoadSettings
from rpcprof.measure.neighbours import NeighbourWindow
from rpcprof.measure.threads import ProcWindow, per_request, thread_snapshot
from rpcprof.measure.procstat import CpuWindow, Marks, ProcessMonitor
from rpcprof.measure.session import Session
from rpcprof.measure.windows import measured_window, window_metrics
from rpcprof import rundir
from rpcprof.progress import log
from rpcprof.records import beside_busy, merge_busy
from rpcprof.report.summary import busy_host
from rpcprof.rundir import OFFCPU_LOAD_LOG, PROFILE_LOAD_LOG, WARMUP_LOG, RunFolder

# a JIT server's warm-up (server.yaml warmup_s) is driven as windows of at most this many seconds, each on a
# new connection (warm_up)
WARMUP_PIECE_S = 5.0


@dataclass
class Subject:
    """A process being measured, and the load that reaches it (driver None: no load of rpcprof's)."""
    name: str
    pid: int
    monitor: ProcessMonitor
    out: Path                       # its folder in the run folder
    driver: object | None = None
    settings: LoadSettings | None = None
    port: int | None = None
    server_cpu_count: int = 1
    load_cpus: tuple[int, ...] = ()
    lead: float = 0.0               # seconds each window's load runs on its own connections before it (warm_up)
    halting: tuple[int, ...] = ()   # the CPUs let halt when idle (records.halting_cpus)

    def drive(self, seconds: float, log_name: str, window=None, lead: float = 0.0):
        """Load for seconds, after lead seconds on the same connections; marks window's start and end at the
        driver's own window lines. The driver logs every request's latency in every window, as in the
        measured one: h2load's log costs the client CPU, and a client-bound server runs at the client's pace
        (pajamax: +48 % req/s in a profile window driven without the log, a regime of its own). No figure uses these windows' latencies (the
        measured window's are measured_window's), so the log is not read."""
        settings = replace(self.settings, duration=seconds, lead=lead)
        return self.driver.run(settings, self.port, self.out / log_name, read_latencies=False,
                               on_start=window.start if window else None, on_end=window.end if window else None)


def use_reply(subject: Subject, reply, result: dict) -> None:
    """The load driver counts OK responses by the reply the server was seen to give; the result says which."""
    if reply is None or subject.driver is None:
        return
    if hasattr(subject.driver, "use_reply"):
        subject.driver.use_reply(reply)
    result["reply"] = reply.record()
    if not reply.builtin:
        log(f"rpcprof: {subject.name} replies {reply.text.strip()[:80]!r}, not the built-in reply: "
            f"OK responses are counted by its size ({', '.join(map(str, sorted(set(reply.sizes))))} B)")
    if reply.framed_len is None:
        log(f"rpcprof: {subject.name}: reply sizes vary ({sorted(set(reply.sizes))} B): OK responses are h2load's "
            "2xx responses (--driver ghz checks every grpc-status)")


def warmup_windows(asked: float, server_warmup_s: float) -> list[float]:
    """The warm-up windows a server gets: the warm-up asked, raised to its server.yaml warmup_s; a server
    with a warmup_s (a JIT) gets it as windows of at most WARMUP_PIECE_S, each on a new connection. A JIT
    (grpc-java) deoptimises its hot code when a connection closes with streams still in flight, as every
    window's end cuts them, and recompiles it for seconds after: a warm-up that never ended a connection
    leaves that to the measured window (java_grpc at S=1000 after 20 s on one connection: 15k, 44k, 62k,
    64k req/s in the next four 1 s windows; after 4 x 5 s: 128k-160k)."""
    left = max(asked, server_warmup_s)
    piece = WARMUP_PIECE_S if server_warmup_s else left
    windows = []
    while left > 0:
        windows.append(min(piece, left))
        left -= windows[-1]
    return windows


def warm_up(subject: Subject, windows: list[float]) -> None:
    """Load for each of windows in turn (warmup_windows) before measuring. The last window becomes the
    subject's lead, when the driver can drive it on a window's own connections (h2load's --warm-up-time):
    the measured window, and the profile and syscall windows with perf, begin on connections already
    under load, not new ones. A new connection's first half second cost java_grpc 36-45 CPU µs/req against
    8-9 after it, node_grpcjs 83-100 against 68-71 (the measured window's slices, one run of each)."""
    subject.lead = windows[-1] if windows and getattr(subject.driver, "LEADS", False) else 0.0
    for seconds in windows[:len(windows) - (subject.lead > 0)]:
        subject.drive(seconds, WARMUP_LOG)


def measure(subject: Subject) -> dict:
    """The efficiency window: no profiler attached; the figures of exactly that window, after the subject's
    lead (warm_up)."""
    lead = subject.lead
    after = f", after {lead:g} s of load on its connections" if lead else ""
    log(f"rpcprof: {subject.name}: measuring {subject.settings.duration:g} s (no profiler attached{after})")
    settings = replace(subject.settings, lead=lead)
    load, cpu_ns, memory, proc, busy = measured_window(subject.driver, settings, subject.port, subject.out,
                                                       subject.monitor, subject.halting)
    if lead and not load.ok:
        # the connections ended in the lead (a server that closes a connection, as rust_pajamax does on a
        # message split across DATA frames): the window is measured again on connections of its own
        log(f"rpcprof: {subject.name}: no request answered after the lead (its connections ended in it; "
            f"{rundir.LEAD_ENDED_LOG}): measuring {settings.duration:g} s again on new connections")
        (subject.out / rundir.LOAD_LOG).replace(subject.out / rundir.LEAD_ENDED_LOG)
        subject.lead = 0.0          # and every later window likewise
        return measure(subject)
    figures = {**window_metrics(load, cpu_ns, memory, settings.streams, subject.server_cpu_count,
                                list(subject.load_cpus), proc, lead),
               "cpu_method": subject.monitor.method, "load_argv": load.argv, "lead_s": lead, "neighbours": [], "steal": {}}
    busy_beside(subject, figures, busy, "measured")
    return figures


def busy_beside(subject: Subject, figures: dict, seen: dict, window: str) -> None:
    """What was busy beside one of the subject's windows (seen: NeighbourWindow.busy(), measure/neighbours.py)
    goes in the result: its neighbours, each pid once at the most CPU it used in a window, and each CPU's
    steal at its most; a WARNING names what flags it BUSY-HOST."""
    merge_busy(figures, seen)
    if beside_busy(seen):
        log(f"rpcprof: WARNING: {subject.name}: other programs were busy in the {window} window ({busy_host(seen)}): "
            "its figures are not this host's alone; run again with the machine otherwise idle")


def attached(session: Session, recorder, warning: Callable[[UserError], str], enable: bool = True):
    """recorder (owned by session) once attached (enable False: its events still disabled), None stays None;
    None when it could not attach: stopped, and warning(why) said (a recording the figures can do without)."""
    if recorder is not None:
        try:
            recorder.wait_attached(enable=enable)
        except UserError as e:
            session.stop(recorder)
            log(warning(e))
            return None
    return recorder


def counted_window(session: Session, subject: Subject, seconds: float, name: str, window: CpuWindow | Marks, lead: float,
                   record_io: bool = False, cpus: list[int] | None = None, reap: Session | None = None):
    """Load for seconds while perf stat counts syscalls into out/NAME.csv: on the whole CPUs cpus (the
    server is pinned there; no per-thread event to switch), else on every thread of the subject with its
    kernel events; the process's own /proc counters are read at the window's ends (with cpus they stand
    for the kernel events). record_io: perf record also takes every read/write-family return value
    (out/NAME-io.data), summarised into counts['io'] and counts['io_lost'] (None if not recorded). The
    session owns them all. Returns (load, finish): finish() waits for them to exit and returns the counts,
    so that perf stat's slow exit (an RCU grace period per tracepoint) overlaps the caller's own work; with
    cpus and reap, it reads the counts perf printed when interrupted and hands the exiting perf stat to
    reap, whose owner stops it before its next measured window. The counters count from the driver's
    window start, after lead seconds of load on its connections."""
    counter = session.own(syscalls.start_count(subject.pid, subject.out, name, cpus))
    io_recorder = syscalls.start_io_record(subject.pid, subject.out, rundir.window_file(name, "io")) \
        if record_io else None
    if io_recorder is not None:
        session.own(io_recorder)
    elif record_io:
        log(f"rpcprof: WARNING: {subject.name}: this kernel has no sys_exit tracepoint of the read/write "
            "families; no bytes per read/write")
    counter.wait_attached(enable=not lead)
    io_recorder = attached(session, io_recorder, lambda e: f"rpcprof: WARNING: {subject.name}: {e}; no bytes per read/write",
                           enable=not lead)
    own = ProcWindow(subject.pid, subject.monitor.switches)
    late = (counter, io_recorder) if lead else ()
    load = subject.drive(seconds, rundir.window_file(name, "load"), Marks(window, own, *late), lead)
    for recorder in filter(None, (counter, io_recorder)):
        recorder.check()
        recorder.interrupt()

    def finish() -> dict:
        session.stop(io_recorder)
        text = syscalls.read_counts(counter) if cpus and reap is not None else None
        if text is None:
            session.stop(counter)
            text = (subject.out / rundir.window_file(name, "counts")).read_text()
            if cpus and reap is not None and not syscalls.parse_perf_stat_csv(text)["by_syscall"]:
                log(f"rpcprof: WARNING: {subject.name}: perf stat printed no syscall count "
                    f"({subject.out / rundir.window_file(name, 'counts')})")
        else:
            session.hand_over(counter, reap)
        counts = syscalls.parse_perf_stat_csv(text)
        counts["proc"] = own.counts()
        if cpus:
            counts["events"] = syscalls.events_from_proc(counts["proc"])
        if record_io:
            summary = syscalls.summarise_io(session, io_recorder) if io_recorder is not None else None
            counts["io"], counts["io_lost"] = (summary["io"], summary["lost"]) if summary else (None, None)
        return counts
    return load, finish


def syscall_record(load, counts: dict, cpu_ns: int, unprofiled_us: float | None, window: str,
                   cpus: list[int] | None) -> dict:
    """The syscalls record of a counted window: counts, per request, its own req/s and CPU per request,
    and what counting cost against the unprofiled window (counting_cost_pct)."""
    record = {"window": window, "scope": f"CPU {','.join(map(str, cpus))}" if cpus else "threads",
              "window_s": load.wall_s, "requests_ok": load.ok, **counts,
              **syscalls.per_request(counts, load.ok), **syscalls.io_per_request(counts.get("io"), load.ok),
              "proc_per_req": per_request(counts.get("proc") or {}, load.ok),
              "req_per_s": load.ok / load.wall_s if load.wall_s else None,
              "server_cpu_cores": cpu_ns / 1e9 / load.wall_s if load.wall_s else None,
              "cpu_us_per_req_counting": cpu_ns / 1e3 / load.ok if load.ok else None}
    if load.ok and unprofiled_us:
        record["counting_cost_pct"] = 100 * (record["cpu_us_per_req_counting"] / unprofiled_us - 1)
    return record


def count_syscalls(session: Session, subject: Subject, seconds: float, figures: dict,
                   cpus: list[int] | None = None, record_io: bool = False, reap: Session | None = None) -> dict:
    """A window of its own with the same load, counting syscalls (and with record_io taking each
    read/write's return value: bytes per read and per write, EAGAIN reads, requests per write); its own
    CPU per request, against the unprofiled window's in figures, shows what counting and recording cost.
    Used when no profile window carries the counters, and for the read/write sizes, whose recording costs a
    sample per call. What was busy beside it goes in figures (busy_beside)."""
    what = "counting syscalls" + (" and recording read/write sizes" if record_io else "")
    log(f"rpcprof: {subject.name}: {what} for {seconds:g} s (tracepoints, "
        f"{'CPU ' + ','.join(map(str, cpus)) if cpus else 'every thread'})")
    window, others = CpuWindow(subject.monitor), NeighbourWindow(subject.pid, halting=subject.halting)
    load, finish = counted_window(session, subject, seconds, rundir.SYSCALLS_WINDOW, Marks(window, others), subject.lead,
                                  record_io=record_io, cpus=cpus, reap=reap)
    busy_beside(subject, figures, others.busy(), "read/write size" if record_io else "syscall-count")
    return syscall_record(load, finish(), window.ns(), figures.get("cpu_us_per_req"), "io-sizes" if record_io else "own",
                          cpus)


def profile(session: Session, subject: Subject, target: ProfileTarget, plan: ProfilePlan, figures: dict,
            drive: Callable[[CpuWindow], int | None] | None = None, count: bool = True,
            count_cpus: list[int] | None = None, reap: Session | None = None) -> dict:
    """A window with the profiler attached: driven by the subject's load, or by drive (e.g. waiting while
    someone else's load runs). With count, the same window counts syscalls (count_cpus: on those whole
    CPUs), so the breakdown and the syscall figures describe one state: that window's syscalls record goes
    in figures['syscalls']. The record, with the window's cost against the unprofiled window (figures'
    cpu_us_per_req), goes in figures['profile'] and is returned."""
    unprofiled_us = figures.get("cpu_us_per_req")
    seen = {}
    # the subject's lead, after which the samples begin (perf's events are enabled, py-spy is started)
    lead = subject.lead if drive is None else 0.0
    # beside the subject's own load, the other programs' CPU too (beside someone else's load, that load is theirs)
    others = NeighbourWindow(subject.pid, halting=subject.halting) if drive is None else None
    if drive is None:
        def drive(window):
            window = Marks(window, others)
            if count:
                seen["load"], seen["finish"] = counted_window(session, subject, plan.duration, rundir.PROFILE_SYSCALLS,
                                                              window, lead, cpus=count_cpus, reap=reap)
            else:
                seen["load"] = subject.drive(plan.duration, PROFILE_LOAD_LOG, window, lead)
            return seen["load"].ok
    record = capture_profile(target, plan, subject.monitor, drive, session, late=lead > 0)
    record["lead_s"] = lead
    if others is not None:
        busy_beside(subject, figures, others.busy(), "profile")
    if "load" in seen:
        load = seen["load"]
        record.update(window_s=load.wall_s, req_per_s=load.ok / load.wall_s if load.wall_s else None)
        if "finish" in seen:        # the counter exits while the profile is stopped and folded
            counts = seen["finish"]()
            record["syscalls"] = syscalls.per_request(counts, load.ok)
            cpu_ns = round(record["server_cpu_s"] * 1e9)
            seen["counted"] = syscall_record(load, counts, cpu_ns, unprofiled_us, "profile", count_cpus)
    if unprofiled_us and record.get("cpu_us_per_req_profiled"):
        record["overhead_pct"] = 100 * (record["cpu_us_per_req_profiled"] / unprofiled_us - 1)
    RunFolder.write_profile(subject.out, record)
    if "counted" in seen:
        figures["syscalls"] = seen["counted"]
    figures["profile"] = record
    return record


class ProfileSender:
    """--otlp-endpoint: each profile sent over OTLP as soon as its server's folder is written, exported as `report.py
    export --format otlp` makes it (report/otlp_push.py). After one is not taken, no other is sent (a Collector
    that is down would cost each round its timeout), and check() ends the command with exit 1."""

    def __init__(self, url: str | None, timeout: float):
        from rpcprof.report.otlp_push import endpoint
        self.to = endpoint(url) if url else None        # a URL of no form it takes: exit 2 before anything starts
        self.timeout = timeout
        self.error: str | None = None

    def send(self, run_dir: Path, name: str, rules, app: str | None, repeat: int = 1) -> None:
        """Server name's profile in run_dir (its round repeat), categorised by rules and its app pattern, sent if
        one is to be."""
        folded = rundir.profile_folded(run_dir, name, repeat) if self.to and not self.error and rules else None
        if folded is None or not folded.is_file():
            return
        from rpcprof.report.export import export
        from rpcprof.report.otlp_push import push_file
        with tempfile.TemporaryDirectory(prefix="rpcprof-otlp-") as scratch:
            try:
                out = Path(scratch) / "profile.pb"
                export(folded, rules.with_app(app), "otlp", out, app)
                push_file(out, self.to, self.timeout)
            except UserError as e:
                self.error = f"{name}'s profile was not sent: {e}"
                log(f"rpcprof: WARNING: {self.error}; no other profile is sent")
                return
        log(f"rpcprof: {name}: profile sent to {self.to}")

    def check(self, run_dir: Path) -> None:
        """UserError (exit 1) when a profile was not sent: what the endpoint did, and how to send it again."""
        if self.error:
            raise UserError(f"{self.error}; every profile is in {run_dir} (report.py export SERVER/profile.folded "
                            "--format otlp -o FILE --otlp-endpoint URL sends one)", EXIT_FAILED)


def wants_off_cpu(asked: bool | None, result: dict) -> bool:
    """--off-cpu: always; --no-off-cpu: never; neither: when the measured window says the server waited
    (LATENCY-BOUND or UNSATURATED), which an on-CPU profile cannot explain."""
    return asked if asked is not None else bool(result.get("latency_bound") or result.get("unsaturated"))


def off_cpu(session: Session, subject: Subject, seconds: float, call_graph: str, rules, ports: list[int],
            figures: dict) -> dict:
    """A window recording where the subject's threads wait (every context switch, with its stack and
    how long until the thread ran again) while its connections' TCP state is sampled (ss -tin), with the
    same load (or none: attach without --load waits). Writes offcpu.folded (µs), offcpu.folded.count,
    sockets.log; returns the summary (report/waits.py's, of analyze/waits.py's figures) with the window's own
    req/s. What was busy beside the load goes in figures (busy_beside)."""
    from rpcprof.analyze.waits import asleep_whole_window
    from rpcprof.capture.offcpu import fold_offcpu, start_offcpu, start_offwake
    from rpcprof.measure.sockets import SocketSampler
    from rpcprof.report.text import terminal
    from rpcprof.report.waits import asleep_text, histogram_text, summarise
    log(f"rpcprof: {subject.name}: recording where its threads wait (context switches with stacks) and sampling "
        f"its connections' TCP state for {seconds:g} s")
    lead = subject.lead if subject.driver is not None else 0.0     # its events turned on after it, as the profile's
    recorder = session.own(start_offcpu(subject.pid, subject.out, call_graph))
    recorder.wait_attached(enable=not lead)
    threads_before = thread_snapshot(subject.pid)
    wakes = attached(session, session.own(start_offwake(subject.out)),
                     lambda e: f"rpcprof: {subject.name}: WARNING: no record of who woke its threads: {e}", enable=not lead)
    sampler = session.own(SocketSampler(subject.out / rundir.SOCKETS_LOG, ports, subject.load_cpus,
                                        late=bool(lead))) if ports else None
    window = CpuWindow(subject.monitor)
    if subject.driver is not None:
        others = NeighbourWindow(subject.pid, halting=subject.halting)
        load = subject.drive(seconds, OFFCPU_LOAD_LOG, Marks(window, others, *((recorder, wakes, sampler) if lead else ())),
                             lead)
        busy_beside(subject, figures, others.busy(), "off-CPU")
        for started in filter(None, (recorder, wakes)):
            started.check()
        requests, wall = load.ok, load.wall_s
    else:
        window.start()
        time.sleep(seconds)
        window.end()
        requests, wall = None, seconds
    asleep = asleep_whole_window(threads_before, thread_snapshot(subject.pid))
    session.stop(sampler)
    session.stop(recorder)
    session.stop(wakes)                 # None when it could not attach: nothing to stop
    stats = fold_offcpu(subject.out / rundir.OFFCPU_DATA, subject.out / rundir.OFFCPU_FOLDED,
                        subject.out / rundir.OFFWAKE_DATA if wakes else None, subject.out / rundir.OFFWAKE_FOLDED)
    record = summarise(subject.out, rules, ports, requests, {**stats, "window_s": wall})
    record.update(window_s=wall, requests_ok=requests, req_per_s=requests / wall if requests and wall else None,
                  server_cpu_cores=window.ns() / 1e9 / wall if wall else None, fold_seconds=stats["fold_seconds"],
                  asleep=asleep)
    log(f"rpcprof: {subject.name}: {record['waits']:,} waits, {record['off_cpu_s']:.2f} s off CPU over "
        f"{record['threads']} thread(s) in {wall:.1f} s: {histogram_text(record['histogram'])}")
    if asleep:
        log(f"rpcprof: {subject.name}: {terminal(asleep_text(asleep))}")
    named = [key for key in ("verdict", "contention") if record[key]]
    if named:
        log(f"rpcprof: {subject.name}: {' and '.join(record[k].split(':')[0] for k in named)} (said in full with the run's figures)")
    return record
