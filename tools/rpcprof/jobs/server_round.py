"""One server measured in one round of a run, in a session of its own: built, started pinned, warmed
up, a measured window with no profiler attached, the profile window (counting syscalls), and in the first
round the read/write size and off-CPU windows; its result written whatever happens, its processes stopped
by PID on every exit path.
"""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.intervals import PILOT_ROUNDS
from rpcprof.analyze.stall import stall
from rpcprof.capture.profiler import ProfileTarget
from rpcprof.errors import UserError
from rpcprof.jobs import steps
from rpcprof.jobs.base import profile_plan, round_sample_target
from rpcprof.measure.connections import h2_settings
from rpcprof.measure.load import make_driver
from rpcprof.measure.process import ServerFailed, ServerProcess, check_port_free, log_tail
from rpcprof.measure.procstat import cgroup_name
from rpcprof.measure.servers import ServerSpec
from rpcprof.measure.session import Session
from rpcprof.measure.syscalls import IO_FIGURES
from rpcprof.measure.windows import too_short
from rpcprof.progress import log
from rpcprof.records import ServerResult, halting_cpus
from rpcprof.report.mechanism import describe
from rpcprof.rundir import BUILD_LOG, LOAD_LOG, RUNS, SERVER_LOG, RunFolder, now, write_text
from rpcprof.status import Status

if TYPE_CHECKING:
    from rpcprof.jobs.run import Run


class ServerRound:
    """Measures the servers of one run, one server and round at a time (Run.measure)."""

    def __init__(self, run: "Run"):
        self.run = run
        self.opts = run.opts

    def measure(self, spec: ServerSpec, k: int = 1) -> ServerResult:
        """One measurement of spec in round k, in a session of its own; rounds after the first go in
        SERVER/round-K. Every round has its profile window (with the syscall counts); the read/write
        size and off-CPU windows are the first round's only. Its result is written however it ends."""
        out = self.run.folder.server_dir(spec.name, k)
        result = ServerResult(spec.name, round=k, description=spec.description, started=now(precise=True))
        if self.opts.rounds > 1 or self.opts.precision is not None:
            total = f"/{self.opts.rounds}" if self.opts.precision is None else ""
            log(f"rpcprof: {spec.name}: round {k}{total}")
        try:
            with Session() as session:
                self._measure(session, spec, out, result.figures, first=k == 1)
                return result.end(Status.OK)
        except (ServerFailed, UserError) as e:
            result.end(Status.FAILED, str(e))
            log(f"rpcprof: FAILED {e}")
            return result
        except KeyboardInterrupt:
            result.end(Status.INTERRUPTED, "interrupted by the user; figures so far are kept")
            self.run.results[spec.name] = result
            raise
        except Exception as e:
            result.end(Status.FAILED, f"internal error: {type(e).__name__}: {e}")
            self.run.results[spec.name] = result
            raise
        finally:
            RunFolder.write_result(out, result)

    def _start(self, session: Session, spec: ServerSpec, out: Path, figures: dict) -> ServerProcess:
        opts = self.opts
        build_log = io.StringIO()
        try:
            spec.build(build_log)
        finally:
            write_text(out / BUILD_LOG, build_log.getvalue(), RUNS)
        check_port_free(opts.port)
        figures["argv"] = argv = spec.argv(opts.port, {k: v for k, v in opts.params.items() if k in spec.params})
        server = session.own(ServerProcess(spec, argv, opts.server_cpus, out / SERVER_LOG,
                                           cgroup_name(spec.name)))
        figures["pid"] = server.pid
        ready_s = server.wait_ready(self.run.scenario, opts.port, opts.ready_timeout)
        log(f"rpcprof: {spec.name} (pid {server.pid}) answered a gRPC call after {ready_s:.1f} s")
        return server

    def _measure(self, session: Session, spec: ServerSpec, out: Path, figures: dict, first: bool = True) -> None:
        """The windows of one round, their figures put in figures; an exception where it cannot end ok."""
        opts = self.opts
        server = self._start(session, spec, out, figures)
        subject = steps.Subject(spec.name, server.pid, server.monitor, out, make_driver(opts.driver, self.run.scenario, out),
                                self.run.settings, opts.port, len(opts.server_cpus), tuple(self.run.load_cpus),
                                halting=halting_cpus(opts.server_cpus, self.run.load_cpus, opts.idle))
        steps.use_reply(subject, server.reply, figures)
        windows = steps.warmup_windows(opts.warmup, spec.warmup_s)
        if sum(windows) > opts.warmup and first:
            log(f"rpcprof: {spec.name}: warm-up raised to {sum(windows):g} s, in windows of {steps.WARMUP_PIECE_S:g} s "
                "(server.yaml warmup_s: its CPU per request is steady only after that long under load, connections "
                "ended)")
        figures["warmup_s"] = sum(windows)
        steps.warm_up(subject, windows)
        self._check_alive(server, "during the warm-up")
        self.run.exiting.close()        # an earlier round's counter, if still exiting, is gone before this window
        figures.update(steps.measure(subject))
        self._check_alive(server, "during the measured window")
        if figures["requests_ok"] == 0:
            raise ServerFailed(f"{spec.name}: no request was answered with grpc-status 0 and the expected reply "
                               f"({figures['requests_non_ok']} non-OK; {opts.driver} exit {figures['driver_exit_code']}: "
                               f"{log_tail(out / LOAD_LOG, 2)}): see {out / LOAD_LOG}")
        stalled = stalled_window(opts, self.run.scenario.method, subject, figures)
        short = None if stalled else too_short(figures, opts.streams)
        if short and not opts.keep_short:
            raise ServerFailed(f"{spec.name}: {short}")
        if short:
            figures["too_short"] = short
            log(f"rpcprof: WARNING: {spec.name}: {short}; its figures are kept, flagged TOO-SHORT")
        if figures["requests_non_ok"]:
            log(f"rpcprof: WARNING: {spec.name}: {figures['requests_non_ok']} responses were not OK; they are not "
                 "counted in req/s")
        figures.update(app=opts.app or spec.app, ruler=opts.ruler or spec.ruler, profiler=spec.profiler)
        # Every round: the profile window, counting syscalls on the server's CPUs at the same time (both
        # cheap: bench/overhead), so the breakdown, the syscall figures and their intervals describe the
        # state the measured window was in. Without a profile, the counters get a window of their own.
        if stalled:
            return                      # kept with its flag: the windows below would load a stalled server again
        if opts.profile:
            self._profile(session, spec, server, subject, figures)
            self._check_alive(server, "during the profile window")
        elif opts.syscalls:
            figures["syscalls"] = steps.count_syscalls(session, subject, opts.syscall_duration, figures,
                                                       cpus=opts.server_cpus, reap=self.run.exiting)
            self._check_alive(server, "during the syscall-count window")
        if first and (opts.io_sizes or steps.wants_off_cpu(opts.off_cpu, figures)):
            self.run.exiting.close()    # the windows below are the first round's own: nothing else exits during them
        if opts.io_sizes and first:
            # counted on the server's threads, as the sizes are recorded: counts of its whole CPUs would take in
            # any other process's reads and writes there, rpcprof's own and perf's among them
            figures["io_sizes"] = sizes = steps.count_syscalls(session, subject, opts.syscall_duration,
                                                               figures, record_io=True)
            if figures.get("syscalls"):
                figures["syscalls"].update({k: sizes.get(k) for k in IO_FIGURES})
            self._check_alive(server, "during the read/write size window")
        if first and steps.wants_off_cpu(opts.off_cpu, figures):
            figures["offcpu"] = steps.off_cpu(session, subject, opts.off_cpu_duration, opts.call_graph or spec.call_graph,
                                              self.run.rules or load_rules(), [opts.port], figures)
            self._check_alive(server, "during the off-CPU window")

    def _profile(self, session: Session, spec: ServerSpec, server: ServerProcess, subject: steps.Subject,
                 figures: dict) -> None:
        opts = self.opts
        # a profile in every round: the samples the breakdown needs are reached over the planned rounds
        rounds = max(opts.rounds, PILOT_ROUNDS if opts.precision is not None else 1)
        earlier = self.run.sampled.setdefault(spec.name, [])       # (samples, planned) of its earlier rounds
        plan = profile_plan(figures["server_cpu_cores"], spec.profiler, opts.frequency, opts.profile_duration,
                            round_sample_target(opts.min_samples, rounds, earlier))
        target = ProfileTarget(spec.name, server.pid, spec.profiler, opts.call_graph or spec.call_graph, self.run.event,
                               subject.out, math.ceil(opts.min_samples / rounds), cpus=opts.server_cpus,
                               warn_few=rounds == 1, after=spec.after_profile_argv(server.pid))
        server.keep_workdir = True      # perf.data may name files the server wrote there
        record = steps.profile(session, subject, target, plan, figures, count=opts.syscalls,
                               count_cpus=opts.server_cpus, reap=self.run.exiting)
        earlier.append((record.get("samples") or 0, plan.expected_samples))

    @staticmethod
    def _check_alive(server: ServerProcess, when: str) -> None:
        code = server.exited()
        if code is not None:
            raise ServerFailed(f"{server.spec.name} exited with status {code} {when}: {log_tail(server.log_path)}")


def stalled_window(opts, method: str, subject: steps.Subject, figures: dict) -> dict | None:
    """The stall of the measured window (analyze/stall.py) with its evidence, kept in figures and said; the
    server's HTTP/2 settings are asked of it (one call to method) only when the window stalled."""
    if not stall(figures, opts.connections, opts.streams, None):
        return None
    body = getattr(subject.driver, "body", None)
    message = body.stat().st_size if body is not None and body.exists() else None
    h2 = h2_settings(opts.port, method, body) if message else None
    found = stall(figures, opts.connections, opts.streams, message, figures.get("connections"), h2)
    figures["stalled"] = found
    log(f"rpcprof: WARNING: {subject.name}: {describe(found)}")
    return found
