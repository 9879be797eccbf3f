"""The measured comparison run: for each server, start it pinned, wait until it answers a real gRPC
call, warm up, measure a window with no profiler attached, count syscalls, profile a window, stop it.
Every run writes its own folder (rundir); every process started is owned by the run's session and
stopped by PID whatever happens.
"""
from __future__ import annotations

import io
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.frames import compile_regex
from rpcprof.analyze.intervals import PILOT_ROUNDS, log_ratios, rounds_needed
from rpcprof.analyze.repeats import aggregate_repeats
from rpcprof.capture.profiler import pmu_event
from rpcprof.capture.window import ProfileTarget
from rpcprof.jobs.defaults import RUN
from rpcprof.errors import UserError
from rpcprof.jobs import steps
from rpcprof.jobs.base import (load_cpus_besides, new_manifest, open_folder, profile_plan, render_pictures,
                               round_sample_target, shown)
from rpcprof.measure import hostcard
from rpcprof.measure.idle import IDLE_MODES, IdlePoll, IdleSpin, NoPollingState, poll_time_us
from rpcprof.measure.load import LoadSettings, make_driver
from rpcprof.measure.process import ServerFailed, ServerProcess, check_port_free, log_tail
from rpcprof.measure.procstat import cgroup_name, keep_off
from rpcprof.measure.scenario import get_scenario
from rpcprof.measure.servers import ServerSpec, load_server
from rpcprof.measure.session import Session
from rpcprof.measure.syscalls import IO_FIGURES
from rpcprof.measure.windows import too_short
from rpcprof.paths import RUNS_DIR
from rpcprof.profiler_names import CALL_GRAPHS
from rpcprof.progress import log
from rpcprof.rundir import BUILD_LOG, LOAD_LOG, RUNS, SERVER_LOG, RunFolder, now, write_text


@dataclass
class RunOptions:
    """Every option of a run; the defaults are jobs/defaults.py's RUN. profile.sh's options are built from
    these fields by name (cli/values.py): a new option is a field here, its default in RUN and a click option."""
    servers: list[str]
    connections: int = RUN["connections"]
    streams: int = RUN["streams"]
    duration: float = RUN["duration"]
    warmup: float = RUN["warmup"]
    scenario: str = RUN["scenario"]
    driver: str = RUN["driver"]
    server_cpus: list[int] = field(default_factory=lambda: list(RUN["server_cpus"]))
    load_cpus: list[int] | None = None
    port: int = RUN["port"]
    label: str = RUN["label"]
    params: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    profile: bool = RUN["profile"]  # a window with the profiler attached
    call_graph: str | None = None   # None: each server's own (server.yaml call_graph, else dwarf)
    frequency: int = RUN["frequency"]
    profile_duration: float = RUN["profile_duration"]
    min_samples: int = RUN["min_samples"]
    app: str | None = None          # overrides the servers' app pattern
    ruler: str | None = None        # overrides the servers' ruler pattern (seed 001's check)
    syscalls: bool = RUN["syscalls"]    # count syscalls (perf stat on tracepoints): in the profile window, else alone
    syscall_duration: float = RUN["syscall_duration"]
    io_sizes: bool = RUN["io_sizes"]    # a window of its own recording every read/write's size (first round)
    off_cpu: bool | None = None     # a window recording where threads wait: None = when the server waited
    off_cpu_duration: float = RUN["off_cpu_duration"]
    repeat: int = RUN["repeat"]     # rounds: every server measured once per round, in turn (A B A B ...)
    precision: float | None = None  # keep adding rounds until every ratio's 95 % interval is within ±this
    max_time: float = RUN["max_time"]   # ... or until the next round would end after this many seconds
    idle: str = RUN["idle"]         # poll: the server's CPUs poll when idle instead of halting while the run measures
    runs_dir: Path = RUNS_DIR

    def resolved_load_cpus(self) -> list[int]:
        return load_cpus_besides(self.server_cpus, self.load_cpus, "no CPU left for the load generator: give "
                                 "--server-cpus fewer CPUs or set --load-cpus")


class Run:
    """One invocation of `profile.sh run` (or one cell of a sweep): a folder, a manifest, a result per server."""

    def __init__(self, opts: RunOptions, command: list[str]):
        self.opts = opts
        self.scenario = get_scenario(opts.scenario)
        self.load_cpus = opts.resolved_load_cpus()
        self.settings = LoadSettings(opts.connections, opts.streams, opts.duration, self.load_cpus, opts.driver)
        self.settings.validate()
        if opts.repeat < 1:
            raise UserError(f"--repeat must be at least 1 (got {opts.repeat})")
        if opts.precision is not None and not 0 < opts.precision < 1:
            raise UserError(f"--precision must be a share between 0 and 1, e.g. 0.05 or 5% (got {opts.precision})")
        if opts.precision is not None and len(opts.servers) < 2:
            raise UserError("--precision needs two servers or more: it is the precision of their ratio")
        if opts.warmup < 0:
            raise UserError(f"--warmup must be 0 or more (got {opts.warmup})")
        if opts.idle not in IDLE_MODES:
            raise UserError(f"--idle must be one of {', '.join(IDLE_MODES)} (got {opts.idle!r})")
        if len(set(opts.servers)) != len(opts.servers):
            dup = next(s for s in opts.servers if opts.servers.count(s) > 1)
            raise UserError(f"server {dup!r} is named twice: name each server once")
        self.specs = [load_server(name) for name in opts.servers]
        for key in opts.params:
            if not any(key in spec.params for spec in self.specs):
                raise UserError(f"--param {key}: none of {', '.join(opts.servers)} has a parameter {key!r}")
        if opts.call_graph is not None and opts.call_graph not in CALL_GRAPHS:
            raise UserError(f"--call-graph must be one of {', '.join(CALL_GRAPHS)}")
        self.command = command
        self.results: dict[str, dict] = {}
        self.sampled: dict[str, list[tuple[int, int]]] = {}      # per server: (samples, planned) of each profile
        self.stopped_by: str | None = None
        self.folder: RunFolder | None = None
        self.rules = load_rules() if opts.profile else None
        if self.rules and opts.app:
            self.rules.with_app(opts.app)        # validates the regex before anything starts
        if opts.ruler:
            compile_regex(opts.ruler, "--ruler")
        self.event = pmu_event() if opts.profile else None
        self.exiting = Session()        # counters still exiting after their window: stopped before the next one
        self.host: dict | None = None   # the host card; a sweep measures it once for all its cells
        self.idle_holder = None         # what keeps the server's CPUs from halting (--idle poll or spin)

    @property
    def dir(self) -> Path | None:
        return self.folder.path if self.folder else None

    def write(self, status: str) -> None:
        params = {**asdict(self.opts), "load_cpus": self.load_cpus, "runs_dir": str(self.opts.runs_dir)}
        self.manifest.parameters = params
        self.manifest.stopped_by = self.stopped_by
        self.folder.write(self.manifest.finish(status), self.results)

    def execute(self, base: Path | None = None) -> Path:
        with Session() as machine:      # --idle poll's setting, held for the whole run, given back on any exit
            self.hold_idle(machine)
            return self._execute(base)

    def hold_idle(self, machine: Session) -> None:
        """--idle poll (the default): the server's CPUs poll when idle. Where cpuidle offers them no polling
        state, a SCHED_IDLE busy loop keeps them from halting instead (--idle spin). Where neither can be
        set, the run goes on with them halting. Each fallback is said in one line and recorded."""
        mode = self.opts.idle
        if mode == "poll":
            try:
                self.idle_holder = machine.own(IdlePoll(self.opts.server_cpus))
            except NoPollingState as e:
                log(f"rpcprof: {e}; a SCHED_IDLE busy loop keeps them from halting instead (recorded as --idle spin)")
                mode = "spin"
            except UserError as e:
                log(f"rpcprof: WARNING: {e}; this run's server CPUs halt when idle (recorded as --idle halt)")
                mode = "halt"
        if mode == "spin":
            try:
                self.idle_holder = machine.own(IdleSpin(self.opts.server_cpus))
            except UserError as e:
                log(f"rpcprof: WARNING: {e}; this run's server CPUs halt when idle (recorded as --idle halt)")
                mode = "halt"
        self.opts.idle = mode

    def card_host(self) -> None:
        """The host card (measure/hostcard.py), once per run, with the run's idle setting in force."""
        if self.host is None:
            try:
                self.host = hostcard.measure(self.opts.server_cpus[0], self.load_cpus[0], self.opts.idle)
            except (hostcard.HostCardError, OSError) as e:
                log(f"rpcprof: WARNING: no host card: {e}")
                self.host = {"error": str(e)}
        self.manifest.host = self.host
        log(f"rpcprof: {hostcard.card_line(self.host)}")

    def _execute(self, base: Path | None) -> Path:
        label = self.opts.label or "-".join(self.opts.servers)
        keep_off(self.load_cpus)    # rpcprof and its instruments stay off the server's CPUs
        self.folder = open_folder(label, self.opts.runs_dir, base)
        self.manifest = new_manifest("run", self.command, sampled_event=self.event,
                                     scenario={"name": self.scenario.name, "method": self.scenario.method})
        self.write("running")
        log(f"rpcprof: run folder {shown(self.dir)}")
        self.card_host()
        self.write("running")
        log(f"rpcprof: {len(self.specs)} server(s) x ({self.opts.warmup:g} s warm-up + {self.opts.duration:g} s "
             f"measured), {self.opts.driver} C={self.opts.connections} S={self.opts.streams}, "
             f"server CPU {self.opts.server_cpus}, load CPU {self.load_cpus}. Ctrl-C stops.")
        status = "failed"           # unless the rounds end: an error of rpcprof's own is never complete
        with self.exiting:          # the last round's counters exit while the pictures are drawn
            try:
                polled = [poll_time_us(c) for c in self.opts.server_cpus]
                spun = self.idle_holder.cpu_seconds() if isinstance(self.idle_holder, IdleSpin) else 0.0
                self.rounds()
                self.idle_line(polled, spun)
                status = "complete"
            except KeyboardInterrupt:
                status = "incomplete"
                for spec in self.specs:
                    self.results.setdefault(spec.name, {"server": spec.name, "status": "not run"})
            finally:
                if status == "complete" and any(r.get("status") != "ok" for r in self.results.values()):
                    status = "failed"
                self.write(status)
            if self.opts.profile or any(r.get("offcpu") for r in self.results.values()):
                render_pictures(self.dir, self.rules or load_rules(), [s.name for s in self.specs])
        if status == "incomplete":
            raise KeyboardInterrupt
        return self.dir

    def idle_line(self, polled_before: list[int | None], spun_before: float) -> None:
        """What the idle setting did during the rounds, measured: the time the server's CPUs spent polling,
        or the busy loop's CPU; a setting that took no effect says so."""
        if self.opts.idle == "poll":
            after = [poll_time_us(c) for c in self.opts.server_cpus]
            spent = sum((b - a) / 1e6 for a, b in zip(polled_before, after) if a is not None and b is not None)
            if spent > 0:
                log(f"rpcprof: --idle poll: the server's CPUs polled {spent:.1f} s while idle during the rounds")
            else:
                log("rpcprof: --idle poll: the server's CPUs spent no time polling during the rounds: they never idled, "
                    "or the setting took no effect")
        elif self.opts.idle == "spin":
            spun = self.idle_holder.cpu_seconds() - spun_before
            log(f"rpcprof: --idle spin: the busy loop ran {spun:.1f} s on the server's CPUs while the server idled "
                "during the rounds")

    def rounds(self) -> None:
        """Rounds of one measurement per server, in turn (A B A B ...), each server restarted: --repeat
        rounds; or with --precision, Stein's two stages (analyze/intervals.py): a pilot of
        max(--repeat, 3) rounds sets how many rounds every ratio's interval needs to be within the target,
        then those are measured, unless the next round would end after --max-time. A server that fails is
        left out of the rounds after."""
        opts, t0 = self.opts, time.monotonic()
        repeats: dict[str, list[dict]] = {spec.name: [] for spec in self.specs}
        pilot = max(opts.repeat, PILOT_ROUNDS)
        wanted = opts.repeat if opts.precision is None else pilot
        k = 0
        while k < wanted:
            k += 1
            started = time.monotonic()
            for spec in self.specs:
                if repeats[spec.name] and repeats[spec.name][-1].get("status") != "ok":
                    continue
                repeats[spec.name].append(self.measure(spec, k))
                self.results[spec.name] = aggregate_repeats(repeats[spec.name])
                self.write("running")
            round_s = time.monotonic() - started
            if opts.precision is None:
                continue
            if k == pilot:
                logs = self.pilot_logs()
                if not logs:
                    self.stopped_by = f"no ratio to make precise after the {pilot}-round pilot"
                    break
                wanted = rounds_needed(logs, opts.precision)
                log(f"rpcprof: pilot of {pilot} rounds: {wanted} rounds put every ratio within "
                     f"±{100 * opts.precision:g} % (two-stage rule)")
            if k < wanted and time.monotonic() - t0 + round_s > opts.max_time:
                self.stopped_by = (f"time budget: another round would pass --max-time {opts.max_time:g} s; "
                                   f"{k} of the {wanted} rounds the target needs were measured")
                break
        else:
            if opts.precision is not None:
                self.stopped_by = (f"two-stage rule: {k} rounds after a {pilot}-round pilot, for every ratio "
                                   f"within ±{100 * opts.precision:g} %")
        if self.stopped_by:
            log(f"rpcprof: {self.stopped_by}")

    def pilot_logs(self) -> list[list[float]]:
        """The pilot's log ratios of each later server over the first (req/s per CPU)."""
        names = [s.name for s in self.specs if self.results.get(s.name, {}).get("status") == "ok"]
        if len(names) < 2:
            return []
        base = self.results[names[0]]
        return [x for x in (log_ratios(base, self.results[n]) for n in names[1:]) if len(x) >= 2]

    def measure(self, spec: ServerSpec, repeat: int = 1) -> dict:
        """One measurement of spec in a session of its own; repeats after the first go in
        SERVER/repeat-K. Every round has its profile window (with the syscall counts); the read/write
        size and off-CPU windows are the first round's only."""
        out = self.folder.server_dir(spec.name, repeat)
        result = {"server": spec.name, "description": spec.description, "status": "running", "repeat": repeat,
                  "started": now(precise=True)}
        if self.opts.repeat > 1 or self.opts.precision is not None:
            total = f"/{self.opts.repeat}" if self.opts.precision is None else ""
            log(f"rpcprof: {spec.name}: repeat {repeat}{total}")
        try:
            with Session() as session:
                return self._measure(session, spec, out, result, first=repeat == 1)
        except (ServerFailed, UserError) as e:
            result.update(status="failed", error=str(e))
            log(f"rpcprof: FAILED {e}")
            return result
        except KeyboardInterrupt:
            result.update(status="interrupted", error="interrupted by the user; figures so far are kept")
            self.results[spec.name] = result
            raise
        except Exception as e:
            result.update(status="failed", error=f"internal error: {type(e).__name__}: {e}")
            self.results[spec.name] = result
            raise
        finally:
            RunFolder.write_result(out, result)

    def _start(self, session: Session, spec: ServerSpec, out: Path, result: dict) -> ServerProcess:
        opts = self.opts
        build_log = io.StringIO()
        try:
            spec.build(build_log)
        finally:
            write_text(out / BUILD_LOG, build_log.getvalue(), RUNS)
        check_port_free(opts.port)
        argv = spec.argv(opts.port, {k: v for k, v in opts.params.items() if k in spec.params})
        result["argv"] = argv
        server = session.own(ServerProcess(spec, argv, opts.server_cpus, out / SERVER_LOG,
                                           cgroup_name(spec.name)))
        result["pid"] = server.pid
        ready_s = server.wait_ready(self.scenario, opts.port, opts.ready_timeout)
        log(f"rpcprof: {spec.name} (pid {server.pid}) answered a gRPC call after {ready_s:.1f} s")
        return server

    def _measure(self, session: Session, spec: ServerSpec, out: Path, result: dict, first: bool = True) -> dict:
        opts = self.opts
        server = self._start(session, spec, out, result)
        subject = steps.Subject(spec.name, server.pid, server.monitor, out, make_driver(opts.driver, self.scenario, out),
                                self.settings, opts.port, len(opts.server_cpus), tuple(self.load_cpus))
        steps.use_reply(subject, server.reply, result)
        windows = steps.warmup_windows(opts.warmup, spec.warmup_s)
        if sum(windows) > opts.warmup and first:
            log(f"rpcprof: {spec.name}: warm-up raised to {sum(windows):g} s, in windows of {steps.WARMUP_PIECE_S:g} s "
                "(server.yaml warmup_s: its CPU per request is steady only after that long under load, connections "
                "ended)")
        result["warmup_s"] = sum(windows)
        steps.warm_up(subject, windows)
        self._check_alive(server, "during the warm-up")
        self.exiting.close()        # an earlier round's counter, if still exiting, is gone before this window
        log(f"rpcprof: {spec.name}: measuring {opts.duration:g} s (no profiler attached)")
        result.update(steps.measure(subject))
        self._check_alive(server, "during the measured window")
        if result["requests_ok"] == 0:
            raise ServerFailed(f"{spec.name}: no request was answered with grpc-status 0 and the expected reply "
                               f"({result['requests_non_ok']} non-OK; {opts.driver} exit {result['driver_exit_code']}: "
                               f"{log_tail(out / LOAD_LOG, 2)}): see {out / LOAD_LOG}")
        short = too_short(result, opts.streams)
        if short:
            raise ServerFailed(f"{spec.name}: {short}")
        if result["requests_non_ok"]:
            log(f"rpcprof: WARNING: {spec.name}: {result['requests_non_ok']} responses were not OK; they are not "
                 "counted in req/s")
        result["app"] = opts.app or spec.app
        result["ruler"] = opts.ruler or spec.ruler
        result["profiler"] = spec.profiler
        # Every round: the profile window, counting syscalls on the server's CPUs at the same time (both
        # cheap: bench/overhead), so the breakdown, the syscall figures and their intervals describe the
        # state the measured window was in. Without a profile, the counters get a window of their own.
        if opts.profile:
            result["profile"] = self._profile(session, spec, server, subject, result)
            if "counted" in result["profile"]:
                result["syscalls"] = result["profile"].pop("counted")
            self._check_alive(server, "during the profile window")
        elif opts.syscalls:
            result["syscalls"] = steps.count_syscalls(session, subject, opts.syscall_duration, result["cpu_us_per_req"],
                                                      cpus=opts.server_cpus, reap=self.exiting)
            self._check_alive(server, "during the syscall-count window")
        if first and (opts.io_sizes or steps.wants_off_cpu(opts.off_cpu, result)):
            self.exiting.close()    # the windows below are the first round's own: nothing else exits during them
        if opts.io_sizes and first:
            sizes = steps.count_syscalls(session, subject, opts.syscall_duration, result["cpu_us_per_req"],
                                         cpus=opts.server_cpus, record_io=True)
            result["io_sizes"] = sizes
            if result.get("syscalls"):
                result["syscalls"].update({k: sizes.get(k) for k in IO_FIGURES})
            self._check_alive(server, "during the read/write size window")
        if first and steps.wants_off_cpu(opts.off_cpu, result):
            result["offcpu"] = steps.off_cpu(session, subject, opts.off_cpu_duration, opts.call_graph or spec.call_graph,
                                             self.rules or load_rules(), [opts.port])
            self._check_alive(server, "during the off-CPU window")
        result["status"] = "ok"
        return result

    def _profile(self, session: Session, spec: ServerSpec, server: ServerProcess, subject: steps.Subject,
                 result: dict) -> dict:
        opts = self.opts
        # a profile in every round: the samples the breakdown needs are reached over the planned rounds
        rounds = max(opts.repeat, PILOT_ROUNDS if opts.precision is not None else 1)
        earlier = self.sampled.setdefault(spec.name, [])       # (samples, planned) of its earlier rounds
        plan = profile_plan(result["server_cpu_cores"], spec.profiler, opts.frequency, opts.profile_duration,
                            round_sample_target(opts.min_samples, rounds, earlier))
        target = ProfileTarget(spec.name, server.pid, spec.profiler, opts.call_graph or spec.call_graph, self.event,
                               subject.out, math.ceil(opts.min_samples / rounds), cpus=opts.server_cpus,
                               warn_few=rounds == 1, after=spec.after_profile_argv(server.pid))
        server.keep_workdir = True      # perf.data may name files the server wrote there
        record = steps.profile(session, subject, target, plan, result.get("cpu_us_per_req"), count=opts.syscalls,
                               count_cpus=opts.server_cpus, reap=self.exiting)
        earlier.append((record.get("samples") or 0, plan.expected_samples))
        return record

    @staticmethod
    def _check_alive(server: ServerProcess, when: str) -> None:
        code = server.exited()
        if code is not None:
            raise ServerFailed(f"{server.spec.name} exited with status {code} {when}: {log_tail(server.log_path)}")
