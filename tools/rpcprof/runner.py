"""The measured comparison run: for each server, start it pinned, wait until it answers a real gRPC
call, warm up, measure a window with no profiler attached, (optionally) profile a second window,
stop it. Every run writes its own folder; nothing is overwritten, and whatever happens every process
started here is stopped by PID.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import UserError
from .frames import compile_regex
from .load import LoadSettings, make_driver
from .capture import ProfileTarget, capture_profile, write_json
from .categorize import load_rules
from .procstat import CgroupCpu, CpuWindow, ProcessMonitor, command_version, cpu_seconds_per_second, machine_specs
from .profiler import CALL_GRAPHS, MIN_SAMPLES, ProfilePlan, max_sample_rate, pmu_event
from . import syscalls
from .scenario import get_scenario, probe
from .servers import ROOT, ServerSpec, load_server

RUNS_DIR = ROOT / "flamegraphs"
CLIENT_BOUND_SHARE = 0.90     # load generator at >= 90 % of its CPUs: it, not the server, limits req/s
LATENCY_BOUND_SHARE = 0.60    # both sides below 60 %: something else (e.g. Nagle + delayed ACK) limits
IN_FLIGHT_SHARE = 0.02        # S in flight at the window's end above 2 % of the requests counted: flagged
SATURATED_SHARE = 0.90        # server at >= 90 % of its CPUs: it limits req/s; below, with neither flag
                              # above, the run is unsaturated (e.g. server and client taking turns)


@dataclass
class RunOptions:
    servers: list[str]
    connections: int = 1
    streams: int = 100
    duration: float = 20.0
    warmup: float = 5.0
    scenario: str = "helloworld"
    driver: str = "h2load"
    server_cpus: list[int] = field(default_factory=lambda: [0])
    load_cpus: list[int] | None = None
    port: int = 50051
    label: str = ""
    params: dict[str, str] = field(default_factory=dict)
    ready_timeout: float = 60.0
    profile: bool = True            # a second window with the profiler attached
    call_graph: str | None = None   # None: each server's own (server.yaml call_graph, else dwarf)
    frequency: int = 999
    profile_duration: float = 10.0
    min_samples: int = MIN_SAMPLES
    app: str | None = None          # overrides the servers' app pattern
    ruler: str | None = None        # overrides the servers' ruler pattern (seed 001's check)
    syscalls: bool = True           # a window counting syscalls (perf stat on tracepoints)
    syscall_duration: float = 5.0
    repeat: int = 1                 # measurements per server, restarted between them

    def resolved_load_cpus(self) -> list[int]:
        if self.load_cpus:
            return self.load_cpus
        others = [c for c in range(os.cpu_count() or 1) if c not in self.server_cpus]
        if not others:
            raise UserError("no CPU left for the load generator: give --server-cpus fewer CPUs or set --load-cpus")
        return others


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_run_dir(label: str, base: Path = RUNS_DIR) -> Path:
    """A new folder base/YYYYmmdd-HHMMSS-label; a suffix -2, -3... if one exists (never reuse)."""
    base.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "run"
    for i in range(1, 1000):
        path = base / (f"{stamp}-{safe}" if i == 1 else f"{stamp}-{safe}-{i}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise UserError(f"could not create a run folder under {base}")


def git_commit() -> dict:
    def git(*args):
        r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


def tool_versions() -> dict:
    ghz = command_version(["bash", "-c", 'go version -m "$(command -v ghz)" | grep -m1 "mod.*ghz"'])
    return {
        "perf": command_version(["perf", "--version"]),
        "h2load": command_version(["h2load", "--version"]),
        "ghz": " ".join(ghz.split()[1:3]) if ghz not in ("not found", "unknown") else ghz,
        # inferno's binaries have no --version: cargo knows what it installed
        "inferno": command_version(["bash", "-c", "cargo install --list | grep -m1 '^inferno v'"]).rstrip(":"),
        "py-spy": command_version(["py-spy", "--version"]),
        "protoc": command_version(["protoc", "--version"]),
        "python": sys.version.split()[0],
    }


def port_owner(port: int) -> str:
    """'pid N (name)' of whatever listens on 127.0.0.1:port, from ss; '' if unknown."""
    try:
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True).stdout
    except OSError:
        return ""
    m = re.search(r'users:\(\("([^"]+)",pid=(\d+)', out)
    return f"pid {m.group(2)} ({m.group(1)})" if m else ""


def check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as servers bind: a connection of a stopped server lingering in TIME_WAIT does not block the
        # port, a listener does
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            owner = port_owner(port)
            who = f" by {owner}" if owner else ""
            raise UserError(f"port {port} is in use{who}: stop it or pass --port with a free port") from None


def log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


class ServerFailed(Exception):
    """This server could not be measured; the run goes on with the next."""


class ServerProcess:
    """A server started pinned, in a CPU-accounting cgroup of its own; stop() by PID, always."""

    def __init__(self, spec: ServerSpec, argv: list[str], cpus: list[int], log_path: Path, cgroup_name: str):
        self.spec = spec
        self.log_path = log_path
        self.log = open(log_path, "wb")
        # workdir: run: the server writes its profiling files (V8's jitdump) into the run folder
        self.workdir = log_path.parent / "workdir" if spec.workdir == "run" else spec.folder
        self.workdir.mkdir(exist_ok=True)
        self.keep_workdir = False     # set once a profile refers to files in it
        pinned = ["taskset", "-c", ",".join(map(str, cpus)), *argv]
        try:
            self.proc = subprocess.Popen(pinned, cwd=self.workdir, stdout=self.log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            self.log.close()
            raise ServerFailed(f"{spec.name}: could not start {argv[0]}: {e.strerror} "
                               f"(build it with servers/{spec.name}/build.sh)") from None
        self.pid = self.proc.pid
        try:
            self.cgroup = CgroupCpu(cgroup_name)
            self.cgroup.add(self.pid)
        except OSError:
            self.cgroup = None   # fall back to per-thread schedstat polling
        self.monitor = ProcessMonitor(self.pid, self.cgroup)

    def exited(self) -> int | None:
        return self.proc.poll()

    def wait_ready(self, scenario, port: int, timeout: float) -> float:
        """Poll with real gRPC calls until one succeeds; returns seconds taken."""
        t0 = time.monotonic()
        last = "no answer"
        while time.monotonic() - t0 < timeout:
            if self.exited() is not None:
                raise ServerFailed(f"{self.spec.name} exited with status {self.proc.returncode} before it was "
                                   f"ready: {log_tail(self.log_path)}")
            problem = probe(scenario, port, timeout=1.0)
            if problem is None:
                return time.monotonic() - t0
            last = problem
            if not problem.startswith("grpc-status UNAVAILABLE"):
                raise ServerFailed(f"{self.spec.name} answered {scenario.method} wrongly: {problem}")
            time.sleep(0.1)
        raise ServerFailed(f"{self.spec.name} did not answer a gRPC call within {timeout:g} s ({last}): "
                           f"{log_tail(self.log_path)}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; the whole session, so no child outlives it."""
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(self.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self.monitor.close()
        if self.cgroup:
            self.cgroup.remove()
        self.log.close()
        # JIT runtimes started with --perf-basic-prof leave their symbol map behind
        Path(f"/tmp/perf-{self.pid}.map").unlink(missing_ok=True)
        if self.workdir != self.spec.folder and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)    # no profile needs its jitdump


def classify_bottleneck(server_cores: float, server_cpu_count: int, client_cores: float,
                        load_cpu_count: int) -> dict:
    """Flags saying what limited the run: the client, latency (neither side busy), neither side saturated
    (unsaturated), or else the server."""
    server_share = server_cores / server_cpu_count
    client_share = client_cores / load_cpu_count
    client_bound = client_share >= CLIENT_BOUND_SHARE
    latency_bound = server_share < LATENCY_BOUND_SHARE and client_share < LATENCY_BOUND_SHARE
    return {
        "server_cpu_share": server_share,
        "client_cpu_share": client_share,
        "client_bound": client_bound,
        "latency_bound": latency_bound,
        "unsaturated": server_share < SATURATED_SHARE and not client_bound and not latency_bound,
    }


def measured_window(driver, settings: LoadSettings, port: int, out: Path, monitor: ProcessMonitor):
    """The efficiency window: load with no profiler attached, and the server's CPU and RSS over exactly
    it. Returns (load result, CPU ns, memory figures)."""
    memory = {}
    window = CpuWindow(monitor, on_start=monitor.start_rss_window,
                       on_end=lambda: memory.update(monitor.stop_rss_window()))
    load = driver.run(settings, port, out / "load.log", on_start=window.start, on_end=window.end)
    cpu_ns = window.ns()
    return load, cpu_ns, memory


def window_metrics(result, cpu_ns: int, memory: dict, opts: RunOptions, load_cpus: list[int]) -> dict:
    """The figures of one measured window; every rate uses the same wall clock around the driver."""
    wall = result.wall_s
    server_cores = cpu_seconds_per_second(cpu_ns, wall)
    ok = result.ok
    m = {
        "window_s": wall,
        "requests_ok": ok,
        "requests_non_ok": result.non_ok,
        "req_per_s": ok / wall if wall > 0 else 0.0,
        "server_cpu_s": cpu_ns / 1e9,
        "server_cpu_cores": server_cores,
        "req_per_cpu_s": ok / (cpu_ns / 1e9) if cpu_ns > 0 else None,
        "cpu_us_per_req": (cpu_ns / 1e3 / ok) if ok else None,
        "client_cpu_s": result.client_cpu_s,
        "client_cpu_cores": result.client_cpu_cores,
        "latency": result.latency.summary(),
        "memory": memory,
        "driver_exit_code": result.exit_code,
        "driver_figures": result.raw,
    }
    # the S requests in flight when the window ends were partly served (their CPU is in the window) but
    # are not counted: as a share of the requests counted, the most CPU per request can be overstated by
    m["in_flight_share"] = opts.streams / ok if ok else None
    m["in_flight_flag"] = bool(ok) and m["in_flight_share"] > IN_FLIGHT_SHARE
    m.update(classify_bottleneck(server_cores, len(opts.server_cpus), result.client_cpu_cores, len(load_cpus)))
    return m


FIGURES = ("req_per_s", "server_cpu_cores", "server_cpu_s", "req_per_cpu_s", "cpu_us_per_req", "requests_ok",
           "requests_non_ok", "window_s", "client_cpu_s", "client_cpu_cores", "client_cpu_share", "server_cpu_share",
           "client_bound", "latency_bound", "unsaturated", "in_flight_share", "in_flight_flag", "latency", "memory")
SPREAD = ("req_per_s", "server_cpu_cores", "req_per_cpu_s", "cpu_us_per_req", "client_cpu_share")


def aggregate_repeats(repeats: list[dict]) -> dict:
    """One result from N measurements: the figures of the median repeat by req/s per CPU (the lower
    middle one for even N), so that every invariant between figures still holds, plus the min-max
    spread of each figure across repeats. The profile and syscall counts come from the first."""
    if len(repeats) == 1:
        return repeats[0]
    if any(r.get("status") != "ok" for r in repeats):
        return next(r for r in repeats if r.get("status") != "ok")
    ranked = sorted(repeats, key=lambda r: r["req_per_cpu_s"])
    median = ranked[(len(ranked) - 1) // 2]
    out = dict(repeats[0])
    out.update({k: median[k] for k in FIGURES if k in median})
    out["median_of_repeats"] = {"n": len(repeats), "chosen": median["repeat"]}
    out["spread"] = {k: [min(r[k] for r in repeats), max(r[k] for r in repeats)] for k in SPREAD}
    for k in ("p99_ms", "avg_ms"):
        out["spread"][k] = [min(r["latency"][k] for r in repeats), max(r["latency"][k] for r in repeats)]
    out["repeats"] = [{k: r.get(k) for k in ("repeat", *SPREAD)} for r in repeats]
    if out.get("profile", {}).get("cpu_us_per_req_profiled"):
        out["profile"] = {**out["profile"], "overhead_pct": 100 * (
            out["profile"]["cpu_us_per_req_profiled"] / out["cpu_us_per_req"] - 1)}
    return out


def render_pictures(run_dir: Path, rules, servers: list[str]) -> None:
    """flame.svg per profiled server and breakdown.svg for the run; a picture that cannot be drawn is
    a warning, never a lost run."""
    from .chart import render_breakdown_chart
    from .flamegraph import render_run_flamegraph
    drawn = []
    for name in servers:
        folded = run_dir / name / "profile.folded"
        if folded.exists() and folded.stat().st_size:
            try:
                render_run_flamegraph(run_dir, name, rules)
                drawn.append(name)
            except (UserError, OSError) as e:
                _log(f"rpcprof: WARNING: {name}: no flame graph: {e}")
    if drawn:
        try:
            render_breakdown_chart(run_dir, rules, run_dir / "breakdown.svg")
        except (UserError, OSError, ValueError) as e:
            _log(f"rpcprof: WARNING: no breakdown chart: {e}")
        _log(f"rpcprof: flame graphs: {', '.join(f'{n}/flame.svg' for n in drawn)}; per-request chart: breakdown.svg")


class Run:
    """One invocation of `profile.sh run`: a folder, a manifest, a result per server."""

    def __init__(self, opts: RunOptions, command: list[str]):
        self.opts = opts
        self.scenario = get_scenario(opts.scenario)
        self.load_cpus = opts.resolved_load_cpus()
        self.settings = LoadSettings(opts.connections, opts.streams, opts.duration, self.load_cpus, opts.driver)
        self.settings.validate()
        if opts.repeat < 1:
            raise UserError(f"--repeat must be at least 1 (got {opts.repeat})")
        if opts.warmup < 0:
            raise UserError(f"--warmup must be 0 or more (got {opts.warmup})")
        self.specs = [load_server(name) for name in opts.servers]
        for key in opts.params:
            if not any(key in spec.params for spec in self.specs):
                raise UserError(f"--param {key}: none of {', '.join(opts.servers)} has a parameter {key!r}")
        self.command = command
        self.results: dict[str, dict] = {}
        self.dir: Path | None = None
        self.current: ServerProcess | None = None
        self.recorder = None
        if opts.call_graph is not None and opts.call_graph not in CALL_GRAPHS:
            raise UserError(f"--call-graph must be one of {', '.join(CALL_GRAPHS)}")
        self.rules = load_rules() if opts.profile else None
        if self.rules and opts.app:
            self.rules.with_app(opts.app)        # validates the regex before anything starts
        if opts.ruler:
            compile_regex(opts.ruler, "--ruler")
        self.event = pmu_event() if opts.profile else None

    def manifest(self, status: str) -> dict:
        params = asdict(self.opts)
        params["load_cpus"] = self.load_cpus
        return {
            "status": status,
            "command": self.command,
            "started": self.started,
            "finished": dt.datetime.now().isoformat(timespec="seconds") if status != "running" else None,
            "machine": self.machine,
            "tools": self.tools,
            "git": self.git,
            "parameters": params,
            "scenario": {"name": self.scenario.name, "method": self.scenario.method},
            "sampled_event": self.event,
            "servers": {name: r.get("status") for name, r in self.results.items()},
        }

    def write_manifest(self, status: str) -> None:
        write_json(self.dir / "manifest.json", self.manifest(status))
        write_json(self.dir / "metrics.json", self.results)

    def execute(self, base: Path = RUNS_DIR) -> Path:
        label = self.opts.label or "-".join(self.opts.servers)
        self.dir = make_run_dir(label, base)
        self.started = dt.datetime.now().isoformat(timespec="seconds")
        self.machine, self.tools, self.git = machine_specs(), tool_versions(), git_commit()
        self.write_manifest("running")
        _log(f"rpcprof: run folder {self.dir.relative_to(ROOT) if self.dir.is_relative_to(ROOT) else self.dir}")
        _log(f"rpcprof: {len(self.specs)} server(s) x ({self.opts.warmup:g} s warm-up + {self.opts.duration:g} s "
             f"measured), {self.opts.driver} C={self.opts.connections} S={self.opts.streams}, "
             f"server CPU {self.opts.server_cpus}, load CPU {self.load_cpus}. Ctrl-C stops.")
        status = "complete"
        try:
            for spec in self.specs:
                repeats = []
                for k in range(1, self.opts.repeat + 1):
                    repeats.append(self.measure(spec, k))
                    self.results[spec.name] = aggregate_repeats(repeats)
                    self.write_manifest("running")
                    if repeats[-1].get("status") != "ok":
                        break
        except KeyboardInterrupt:
            status = "incomplete"
            for spec in self.specs:
                self.results.setdefault(spec.name, {"server": spec.name, "status": "not run"})
        finally:
            self._stop_all()
            if status == "complete" and any(r.get("status") != "ok" for r in self.results.values()):
                status = "failed"
            self.write_manifest(status)
        if self.opts.profile:
            render_pictures(self.dir, self.rules, [s.name for s in self.specs])
        if status == "incomplete":
            raise KeyboardInterrupt
        return self.dir

    def measure(self, spec: ServerSpec, repeat: int = 1) -> dict:
        """One measurement of spec; repeats after the first go in SERVER/repeat-K, without profile
        and syscall windows (the explanation is taken once; repeats measure the spread)."""
        out = self.dir / spec.name if repeat == 1 else self.dir / spec.name / f"repeat-{repeat}"
        out.mkdir()
        result = {"server": spec.name, "description": spec.description, "status": "running", "repeat": repeat}
        if self.opts.repeat > 1:
            _log(f"rpcprof: {spec.name}: repeat {repeat}/{self.opts.repeat}")
        try:
            return self._measure(spec, out, result, first=repeat == 1)
        except (ServerFailed, UserError) as e:
            result.update(status="failed", error=str(e))
            _log(f"rpcprof: FAILED {e}")
            return result
        except KeyboardInterrupt:
            result.update(status="interrupted", error="interrupted by the user; figures so far are kept")
            self.results[spec.name] = result
            raise
        finally:
            self._stop_all()
            write_json(out / "result.json", result)

    def _measure(self, spec: ServerSpec, out: Path, result: dict, first: bool = True) -> dict:
        opts = self.opts
        with open(out / "build.log", "w") as blog:
            spec.build(blog)
        check_port_free(opts.port)
        argv = spec.argv(opts.port, {k: v for k, v in opts.params.items() if k in spec.params})
        result["argv"] = argv
        self.current = server = ServerProcess(spec, argv, opts.server_cpus, out / "server.log",
                                              f"rpcprof-{os.getpid()}-{spec.name}")
        result["pid"] = server.pid
        ready_s = server.wait_ready(self.scenario, opts.port, opts.ready_timeout)
        _log(f"rpcprof: {spec.name} (pid {server.pid}) answered a gRPC call after {ready_s:.1f} s")
        driver = make_driver(opts.driver, self.scenario, out)
        if opts.warmup > 0:
            warm = LoadSettings(**{**asdict(self.settings), "duration": opts.warmup})
            driver.run(warm, opts.port, out / "warmup.log", latencies=False)
            self._check_alive(server, "during the warm-up")
        _log(f"rpcprof: {spec.name}: measuring {opts.duration:g} s (no profiler attached)")
        load, cpu_ns, memory = measured_window(driver, self.settings, opts.port, out, server.monitor)
        result["cpu_method"] = server.monitor.method
        result["load_argv"] = load.argv
        result.update(window_metrics(load, cpu_ns, memory, opts, self.load_cpus))
        self._check_alive(server, "during the measured window")
        if load.ok == 0:
            raise ServerFailed(f"{spec.name}: no request was answered with grpc-status 0 and the expected reply "
                               f"({load.non_ok} non-OK; {opts.driver} exit {load.exit_code}: "
                               f"{log_tail(out / 'load.log', 2)}): see {out / 'load.log'}")
        if load.non_ok:
            _log(f"rpcprof: WARNING: {spec.name}: {load.non_ok} responses were not OK; they are not counted in req/s")
        result["app"] = opts.app or spec.app
        result["ruler"] = opts.ruler or spec.ruler
        result["profiler"] = spec.profiler
        if opts.syscalls and first:
            result["syscalls"] = self._count_syscalls(spec, server, driver, out, result)
        if opts.profile and first:
            result["profile"] = self._profile(spec, server, driver, out, result)
        result["status"] = "ok"
        return result

    def _stop_all(self) -> None:
        """Stop the profiler, then the server: by PID, whatever happened."""
        if self.recorder:
            self.recorder.stop()
            self.recorder = None
        if self.current:
            self.current.stop()
            self.current = None

    def _count_syscalls(self, spec: ServerSpec, server: ServerProcess, driver, out: Path, result: dict) -> dict:
        """A window with the same load and perf stat counting syscalls on every thread of the server.
        It is kept apart from the efficiency window; its own CPU per request shows what counting costs."""
        opts = self.opts
        _log(f"rpcprof: {spec.name}: counting syscalls for {opts.syscall_duration:g} s (tracepoints)")
        self.recorder = syscalls.start_count(server.pid, out)
        self.recorder.wait_attached()
        window = CpuWindow(server.monitor)
        settings = LoadSettings(**{**asdict(self.settings), "duration": opts.syscall_duration})
        load = driver.run(settings, opts.port, out / "syscalls-load.log", latencies=False,
                          on_start=window.start, on_end=window.end)
        cpu_ns = window.ns()
        self.recorder.stop()
        self.recorder = None
        self._check_alive(server, "during the syscall-count window")
        counts = syscalls.parse_perf_stat_csv((out / "syscalls.csv").read_text())
        record = {"window_s": load.wall_s, "requests_ok": load.ok, **counts, **syscalls.per_request(counts, load.ok),
                  "cpu_us_per_req_counting": cpu_ns / 1e3 / load.ok if load.ok else None}
        if load.ok and result.get("cpu_us_per_req"):
            record["counting_cost_pct"] = 100 * (record["cpu_us_per_req_counting"] / result["cpu_us_per_req"] - 1)
        return record

    def _profile(self, spec: ServerSpec, server: ServerProcess, driver, out: Path, result: dict) -> dict:
        """A second window with the same load and the profiler attached; returns the profile's record."""
        opts = self.opts
        # py-spy --gil samples only while a thread holds the GIL: plan for half the measured CPU
        cores = result["server_cpu_cores"] * (0.5 if spec.profiler == "py-spy" else 1.0)
        plan = ProfilePlan.for_load(cores, opts.frequency, opts.profile_duration,
                                    opts.min_samples, max_frequency=min(4999, max_sample_rate()))
        origin = "--app" if opts.app else f"servers/{spec.name}/server.yaml"
        target = ProfileTarget(spec.name, server.pid, spec.profiler, opts.call_graph or spec.call_graph, self.event,
                               self.rules.with_app(opts.app or spec.app, origin), out, opts.min_samples)
        settings = LoadSettings(**{**asdict(self.settings), "duration": plan.duration})

        def drive(window):
            return driver.run(settings, opts.port, out / "profile-load.log", latencies=False,
                              on_start=window.start, on_end=window.end).ok

        server.keep_workdir = True      # perf.data may name files the server wrote there
        record = capture_profile(target, plan, server.monitor, drive, self)
        self._check_alive(server, "during the profile window")
        unprofiled = result.get("cpu_us_per_req")
        if unprofiled and record["cpu_us_per_req_profiled"]:
            record["overhead_pct"] = 100 * (record["cpu_us_per_req_profiled"] / unprofiled - 1)
            write_json(out / "profile.json", record)
        return record

    def _check_alive(self, server: ServerProcess, when: str) -> None:
        code = server.exited()
        if code is not None:
            raise ServerFailed(f"{server.spec.name} exited with status {code} {when}: {log_tail(server.log_path)}")
