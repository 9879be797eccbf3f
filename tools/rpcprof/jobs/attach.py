"""Profile a running process by PID, any language, without restarting it.

The profiler is chosen from what the process is: perf for native code (Rust, C, C++; frame pointers
for Go), py-spy for CPython (then perf's view of the same process as a second profile); for Node, DWARF stacks
through JS frames (perf inject --jit) when it was started with --perf-prof --perf-prof-unwinding-info, else
frame pointers with the JIT map of --perf-basic-prof; for a JVM, frame pointers with the map `jcmd PID
Compiler.perfmap` writes when the window ends (jobs/process_kind.py). The process's cgroup is left alone: its
CPU time is read from per-thread schedstat.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rpcprof.analyze.categorize import load_rules
from rpcprof.capture.profiler import ProfilePlan, ProfileTarget, pmu_event
from rpcprof.jobs.defaults import ATTACH
from rpcprof.errors import EXIT_FAILED, UserError
from rpcprof.jobs import steps
from rpcprof.jobs.process_kind import (check_permissions, choose_profiler, guess_app, inspect_process,
                                       jvm_after_profile, proc_state)
from rpcprof.jobs.base import (Job, lifecycle, load_cpus_besides, new_manifest, open_folder, profile_plan,
                               render_pictures, shown)
from rpcprof.measure.load import LoadSettings, make_driver
from rpcprof.measure.procstat import ProcessMonitor
from rpcprof.measure.scenario import get_scenario, learn_reply
from rpcprof.measure.session import Session
from rpcprof.measure.sockets import listening_ports
from rpcprof.measure.windows import too_short
from rpcprof.paths import RUNS_DIR
from rpcprof.progress import log, progress_bar
from rpcprof.records import ServerResult
from rpcprof.rundir import RunFolder
from rpcprof.status import Status

MEASURED_KEYS = ("req_per_s", "server_cpu_cores", "req_per_cpu_s", "cpu_us_per_req", "window_s", "requests_ok",
                 "latency", "memory", "client_cpu_cores", "client_cpu_share", "client_bound", "latency_bound",
                 "unsaturated", "in_flight_share", "in_flight_flag", "request_count_source")

def parse_target(target: str) -> int:
    """The port of a loopback HOST:PORT; load goes to this machine only."""
    m = re.fullmatch(r"(127\.\d+\.\d+\.\d+|localhost|\[::1\]):(\d+)", target)
    if not m:
        raise UserError(f"--target {target!r}: give a loopback HOST:PORT such as 127.0.0.1:50051 "
                        "(load goes to this machine only)")
    port = int(m.group(2))
    if not 1 <= port <= 65535:
        raise UserError(f"--target {target!r}: port {port} does not exist; give one from 1 to 65535")
    return port


@dataclass
class AttachOptions:
    """Every option of an attach; the defaults are jobs/defaults.py's ATTACH (profile.sh's options are built
    from these fields by name, cli/profile.py)."""
    pid: int
    duration: float = ATTACH["duration"]
    name: str = ATTACH["name"]
    app: str | None = None
    profiler: str | None = None
    call_graph: str | None = None
    frequency: int = ATTACH["frequency"]
    min_samples: int = ATTACH["min_samples"]
    requests: int | None = None
    rps: float | None = None
    load: bool = False
    target: str | None = None
    driver: str = ATTACH["driver"]
    scenario: str = ATTACH["scenario"]
    connections: int = ATTACH["connections"]
    streams: int = ATTACH["streams"]
    warmup: float = ATTACH["warmup"]
    load_cpus: list[int] | None = None
    second_profile: bool = ATTACH["second_profile"]
    off_cpu: bool | None = None       # where its threads wait: None = with --load, when the window says it waited
    off_cpu_duration: float = ATTACH["off_cpu_duration"]
    pictures: bool = ATTACH["pictures"]   # flame graphs, charts and report.html drawn at the end
    otlp_endpoint: str | None = None      # each profile sent there over OTLP as it is made
    otlp_timeout: float = ATTACH["otlp_timeout"]
    command: list[str] = field(default_factory=list)
    runs_dir: Path = RUNS_DIR


class Attach(Job):
    """One `profile.sh attach`: a run folder like `run` writes, for a process rpcprof did not start."""

    def __init__(self, opts: AttachOptions):
        self.opts, self.sender = opts, steps.ProfileSender(opts.otlp_endpoint, opts.otlp_timeout)
        self.info = inspect_process(opts.pid)
        self.name = re.sub(r"[^A-Za-z0-9_.-]+", "-", opts.name or self.info.comm).strip("-") or f"pid{opts.pid}"
        self.profiler, self.call_graph, self.hints = choose_profiler(self.info, opts.profiler)
        if opts.call_graph and self.profiler == "perf":
            self.call_graph = opts.call_graph
        check_permissions(self.info, self.profiler)
        if opts.requests is not None and opts.rps is not None:
            raise UserError("--requests and --rps both given: the request count is one or the other")
        if opts.load and not opts.target:
            raise UserError("--load needs --target HOST:PORT, the loopback address the process serves on")
        self.port = parse_target(opts.target) if opts.target else None
        self.rules = load_rules()
        self.rules.with_app(opts.app)          # validate the regex now
        self.app, self.app_source = opts.app, "--app"
        if not opts.app:
            try:
                cwd = os.readlink(f"/proc/{opts.pid}/cwd")
            except OSError:
                cwd = "/"
            self.app, self.app_source = guess_app(self.info.kind, self.info.exe, self.info.cmdline, cwd)
            self.rules.with_app(self.app, "the app rule found")
        self.event = pmu_event()
        self.results: dict[str, ServerResult] = {}
        if opts.load:
            self.scenario = get_scenario(opts.scenario)
            self.load_cpus = load_cpus_besides(
                self.info.affinity, opts.load_cpus, f"pid {opts.pid} may run on every CPU, so the load cannot be "
                f"kept off its CPUs: pin it (taskset -pc 0 {opts.pid}) or choose --load-cpus",
                server_option=f"pid {opts.pid}'s CPUs")
            self.settings = LoadSettings(opts.connections, opts.streams, opts.duration, self.load_cpus, opts.driver)
            self.settings.validate()

    def write(self, status: Status) -> None:
        self.manifest.parameters = {**asdict(self.opts), "servers": list(self.results) or [self.name]}
        self.folder.write(self.manifest.finish(status), self.results)

    def execute(self) -> Path:
        self.folder = open_folder(f"attach-{self.name}", self.opts.runs_dir)
        self.manifest = new_manifest(
            "attach", self.opts.command, sampled_event=self.event,
            process={k: v for k, v in asdict(self.info).items() if k != "uid"},
            scenario={"name": self.opts.scenario if self.opts.load else None})
        log(f"rpcprof: run folder {shown(self.dir)}")
        log(f"rpcprof: attaching to pid {self.info.pid} ({self.info.comm}, {self.info.kind}) for "
            f"{self.opts.duration:g} s. Ctrl-C stops.")
        log(f"rpcprof: app frames: {self.app or 'none'} ({self.app_source})")     # with --app, its pattern
        for hint in self.hints:
            log(f"rpcprof: NOTE: {hint}")
        monitor = ProcessMonitor(self.info.pid, None)
        try:
            second = self.profiler == "py-spy" and self.opts.second_profile
            with Session() as session, lifecycle(self.write) as life, progress_bar(1 + second, "profiles") as bar:
                session.own(monitor)
                self._attach(session, monitor, self.name, self.profiler, self.call_graph)
                self.sender.send(self.dir, self.name, self.rules, self.app)
                bar.update(1)
                if second and proc_state(self.info.pid) not in (None, "Z"):      # not gone
                    measured = self.results[self.name] if self.opts.load else None
                    self._attach(session, monitor, f"{self.name}-perf", "perf", "dwarf", measured)
                    self.sender.send(self.dir, f"{self.name}-perf", self.rules, self.app)
                life.failed = any(r.status != Status.OK for r in self.results.values())
        finally:            # what was captured is drawn whatever ended the attach
            render_pictures(self.dir, self.rules, list(self.results), self.opts.pictures)
        return self.dir

    def _attach(self, session: Session, monitor: ProcessMonitor, name: str, profiler: str, call_graph: str,
                measured: ServerResult | None = None) -> ServerResult:
        opts = self.opts
        out = self.folder.server_dir(name)
        result = ServerResult(name, figures={"pid": self.info.pid, "profiler": profiler, "app": self.app,
                                             "app_source": self.app_source, "mode": "attach"})
        figures = result.figures
        load = (make_driver(opts.driver, self.scenario, out), self.settings, self.port, len(self.info.affinity),
                tuple(self.load_cpus)) if opts.load else ()
        subject = steps.Subject(name, self.info.pid, monitor, out, *load, halting=tuple(range(os.cpu_count() or 1)))
        try:
            if measured:                                   # the second profile reuses the measured window
                figures.update({k: measured.figures[k] for k in MEASURED_KEYS if k in measured.figures})
                subject.lead = measured.figures.get("lead_s") or 0.0    # and its lead
            elif opts.load:
                self._measure_with_load(subject, figures)
            cores = figures.get("server_cpu_cores") or cpu_now(monitor)
            plan = profile_plan(cores, profiler, opts.frequency, opts.duration, opts.min_samples,
                                max_duration=opts.duration)
            # with --load, perf samples the process's CPUs as run does and keeps its samples (not a per-thread event)
            target = ProfileTarget(name, self.info.pid, profiler, call_graph, self.event, out, opts.min_samples,
                                   cpus=list(self.info.affinity) if opts.load and profiler == "perf" else None,
                                   after=jvm_after_profile(self.info) if profiler == "perf" else None)
            ended = {}
            drive = None if opts.load else (lambda window: wait_watching(self.info.pid, plan.duration, window, ended))
            # with --load the process is pinned apart from the load: its syscalls counted on its CPUs, as run counts
            # them, not per thread (a per-thread counter switches its events at every context switch: +20-49 % CPU
            # per request on python_grpcio, against +2-7 % on its CPU)
            record = steps.profile(session, subject, target, plan, figures, drive,
                                   count_cpus=list(self.info.affinity) if opts.load else None)
            if not opts.load and not measured:
                figures_without_load(opts, figures, record, plan, monitor)
            self.results[name] = result
            if "at" in ended:
                result.end(Status.PID_EXITED, f"pid {self.info.pid} exited {ended['at']:.1f} s into the "
                           f"{plan.duration:g} s window; the profile holds what was captured until then")
                raise UserError(result.error, exit_code=EXIT_FAILED)
            if record["samples"] == 0:
                result.end(Status.FAILED, "no samples")
                raise UserError(f"no samples: pid {self.info.pid} was idle during the {plan.duration:g} s window "
                                f"({record['server_cpu_s']:.3f} s of CPU): drive load (--load --target HOST:PORT) "
                                "or attach while it is busy", exit_code=EXIT_FAILED)
            if not measured and steps.wants_off_cpu(opts.off_cpu, figures):
                ports = [self.port] if self.port else listening_ports(self.info.pid)
                if not ports:
                    log(f"rpcprof: NOTE: pid {self.info.pid} listens on no TCP port: no socket state is sampled")
                figures["offcpu"] = steps.off_cpu(session, subject, opts.off_cpu_duration, call_graph, self.rules, ports,
                                                    figures)
            return result.end(Status.OK)
        except KeyboardInterrupt:
            result.end(Status.INTERRUPTED, "interrupted by the user; what was captured is kept")
            raise
        except Exception as e:
            if result.status == Status.RUNNING:        # it did not end as the lines above say: it failed
                result.end(Status.FAILED, str(e) if isinstance(e, UserError) else f"internal error: {type(e).__name__}: {e}")
            raise
        finally:
            RunFolder.write_result(out, result)

    def _measure_with_load(self, subject: steps.Subject, figures: dict) -> None:
        """Unprofiled warm-up and window with the load driver, as `run` measures."""
        reply, problem = learn_reply(self.scenario, self.port, timeout=2.0)
        if problem:
            raise UserError(f"--target {self.opts.target} did not answer {self.scenario.method} correctly: {problem}")
        steps.use_reply(subject, reply, figures)
        steps.warm_up(subject, steps.warmup_windows(self.opts.warmup, 0))
        figures.update(steps.measure(subject))
        figures["request_count_source"] = f"{self.opts.driver} (--load)"
        short = too_short(figures, self.opts.streams)
        if short:
            raise UserError(f"{subject.name}: {short}", exit_code=EXIT_FAILED)


def cpu_now(monitor: ProcessMonitor, seconds: float = 0.5) -> float:
    """Cores the process uses right now, over a short look, to plan the sampling rate."""
    a = monitor.mark()
    time.sleep(seconds)
    return (monitor.mark() - a) / 1e9 / seconds


def wait_watching(pid: int, duration: float, window, ended: dict) -> None:
    """The profile window without load of ours: wait, watching the process; ended["at"]: when it exited."""
    window.start()
    t0 = time.monotonic()
    while time.monotonic() - t0 < duration:
        if proc_state(pid) in (None, "Z"):
            ended["at"] = time.monotonic() - t0
            break
        time.sleep(0.1)


def figures_without_load(opts: AttachOptions, figures: dict, record: dict, plan: ProfilePlan,
                         monitor: ProcessMonitor) -> None:
    """CPU over the (profiled) window, and per-request cost when the user gave the request count."""
    window = plan.duration
    cpu_s = record["server_cpu_s"]
    figures.update(window_s=window, server_cpu_cores=cpu_s / window, cpu_method=monitor.method,
                   cpu_note="measured while profiling: includes the profiler's cost")
    count = opts.requests if opts.requests is not None else (opts.rps * window if opts.rps is not None else None)
    if count:
        figures.update(requests_ok=count, req_per_s=count / window, req_per_cpu_s=count / cpu_s if cpu_s else None,
                       cpu_us_per_req=cpu_s * 1e6 / count,
                       request_count_source="--requests" if opts.requests is not None else "--rps")
