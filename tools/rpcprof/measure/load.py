"""Load drivers: h2load (default) and ghz. Each runs pinned to the load CPUs for a fixed duration,
and returns what it measured: OK and non-OK responses, per-request latencies, its own CPU time.

h2load prints a line when its timed window starts (connections up) and when it ends (before it tears
them down); rpcprof marks the server's CPU, and h2load's own, at those lines, so start-up, teardown and
rpcprof's own parsing of the results stay out of the window. The S requests still in flight when the
window ends were (partly) served but are not counted: run tables flag a window where S is a notable
share of the requests counted.

h2load drives gRPC with a pre-framed body and counts HTTP status only. A gRPC error still comes
with HTTP 200, but carries no message: so OK responses are counted from the DATA bytes received
(every correct reply has the same framed length), and the rest of the HTTP successes are non-OK.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import children
from rpcprof.measure.procstat import process_cpu_ns
from rpcprof.measure.recorder import require
from rpcprof.measure.scenario import Scenario, grpc_frame
from rpcprof.rundir import CannotWrite, beside
from rpcprof.analyze.stats import LatencyHistogram

DRIVERS = ("h2load", "ghz")
_H2_PATTERNS = {
    "finished_s": (r"finished in ([\d.]+)s", float),
    "driver_rps": (r"finished in [\d.]+s, ([\d.]+) req/s", float),
    "total": (r"requests: (\d+) total", int),
    **{word: (rf"(\d+) {word}", int) for word in ("done", "succeeded", "failed", "errored", "timeout")},
    "status_2xx": (r"status codes: (\d+) 2xx", int),
    "data_bytes": (r"headers \(space savings [\d.]+%\), [\d.]+\w*B \((\d+)\) data", int),
}
# an h2load --log-file line: start time (µs since the epoch), HTTP status, duration (µs), tab-separated
_LATENCY_2XX = re.compile(rb"^[^\t\n]*\t2[^\t\n]*\t(\d+)", re.M)
_START_2XX = re.compile(rb"^(\d+)\d{4}\t2", re.M)      # the start time in 0.01 s (its last 4 digits dropped)


@dataclass
class LoadSettings:
    connections: int
    streams: int            # total concurrent streams in flight, across all connections (seed's S)
    duration: float
    cpus: list[int]
    driver: str = "h2load"
    lead: float = 0.0       # seconds of load on the window's own connections before it, not counted (h2load)

    def validate(self) -> None:
        if self.connections < 1:
            raise UserError(f"--connections must be at least 1 (got {self.connections})")
        if self.streams < self.connections:
            raise UserError(f"--streams ({self.streams}) must be at least --connections ({self.connections}): "
                            "S counts streams in flight across all connections")
        if self.streams % self.connections:
            raise UserError(f"--streams ({self.streams}) must be a multiple of --connections ({self.connections}) "
                            "so every connection carries the same number of streams")
        if self.duration <= 0:
            raise UserError(f"--duration must be positive (got {self.duration})")
        if self.driver not in DRIVERS:
            raise UserError(f"--driver must be one of {', '.join(DRIVERS)} (got {self.driver!r})")


@dataclass
class LoadResult:
    driver: str
    argv: list[str]
    wall_s: float                 # our own clock over the driver's timed window (else its process's life)
    ok: int                       # responses with grpc-status 0 and the expected message
    non_ok: int                   # everything else that was answered or failed
    client_cpu_s: float           # CPU of the driver over the same span, all threads
    latency: LatencyHistogram
    exit_code: int
    raw: dict = field(default_factory=dict)   # driver's own figures, for the record
    starts: dict[int, int] = field(default_factory=dict)   # requests by start time, in 0.01 s since the epoch

    @property
    def client_cpu_cores(self) -> float:
        return self.client_cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def run_measured(argv: list[str], log_path: Path, on_start=None, on_end=None,
                 window: tuple[bytes, bytes] | None = None) -> tuple[int, float, float]:
    """Run argv with output to log_path; returns (exit code, wall seconds, CPU seconds of the driver).

    Without window, on_start(pid) is called right after the process starts and on_end(pid) right after it
    exits, and the figures cover its life. With window = (start text, end text), lines the driver prints
    when its timed window starts and ends, the callbacks are called at those lines (read as they are
    printed) and the wall clock and the driver's CPU (clock ticks, all threads) cover just that window.
    """
    seen: dict[str, tuple[float, int]] = {}
    callbacks = {"start": on_start, "end": on_end}

    def mark(key: str, pid: int) -> None:
        if key not in seen:
            seen[key] = (time.monotonic(), process_cpu_ns(pid))
            if callbacks[key]:
                callbacks[key](pid)

    try:
        log = open(log_path, "wb")
    except OSError as e:
        raise CannotWrite(log_path, e, "--runs-dir") from None
    try:
        t0 = time.monotonic()
        proc = children.popen(argv, stdout=subprocess.PIPE if window else log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        reader = None
        try:
            if window:
                def read_lines():
                    for line in proc.stdout:
                        try:
                            log.write(line)
                        except OSError as e:      # keep draining the driver's pipe; said after it exits
                            seen.setdefault("log_error", e)
                        if window[0] in line:
                            mark("start", proc.pid)
                        elif window[1] in line and "start" in seen:
                            mark("end", proc.pid)
                reader = threading.Thread(target=read_lines, daemon=True)
                reader.start()
            else:
                mark("start", proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
            t_exit = time.monotonic()
            if reader:
                reader.join()
            from_lines = bool(window) and "end" in seen
            # a driver that never printed its window (it failed): marked now, its life stands in for it
            mark("start", proc.pid)
            mark("end", proc.pid)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        try:
            log.close()           # flushes: a full disk may show only here
        except OSError as e:
            seen.setdefault("log_error", e)
    if "log_error" in seen:
        raise CannotWrite(log_path, seen["log_error"], "--runs-dir")
    if from_lines:
        (t_start, cpu_start), (t_end, cpu_end) = seen["start"], seen["end"]
        return proc.returncode, t_end - t_start, (cpu_end - cpu_start) / 1e9
    return proc.returncode, t_exit - t0, usage.ru_utime + usage.ru_stime


class H2load:
    def __init__(self, scenario: Scenario, workdir: Path):
        self.scenario = scenario
        self.body = workdir / f"{scenario.package}.body"
        self.body.write_bytes(grpc_frame(scenario.request_bytes()))
        self.reply_len: int | None = len(grpc_frame(scenario.expected_reply_bytes()))

    def use_reply(self, reply) -> None:
        """Count OK responses by the reply the server was seen to give (scenario.learn_reply): DATA bytes
        over its framed length; when its sizes vary, by h2load's 2xx responses (a grpc-status error inside
        an HTTP 200 is then not seen: --driver ghz checks every status)."""
        self.reply_len = reply.framed_len

    def argv(self, settings: LoadSettings, port: int, latency_log: Path) -> list[str]:
        threads = max(1, min(len(settings.cpus), settings.connections))
        h2load = require("h2load", "run tools/setup.sh to install it")
        return ["taskset", "-c", ",".join(map(str, settings.cpus)), h2load,
                "-c", str(settings.connections), "-m", str(settings.streams // settings.connections),
                # h2load's -D takes whole seconds or a unit: milliseconds keep fractional windows
                "-t", str(threads), "-D", f"{round(settings.duration * 1000)}ms",
                *(["--warm-up-time", f"{round(settings.lead * 1000)}ms"] if settings.lead > 0 else []),
                "-d", str(self.body), "-H", "content-type: application/grpc", "-H", "te: trailers",
                "--log-file", str(latency_log), f"http://127.0.0.1:{port}{self.scenario.method}"]

    # printed by each h2load thread (rpcprof runs one per load CPU): the first start and the first end count;
    # with a lead (--warm-up-time), the start comes after it
    WINDOW = (b"Main benchmark duration is started", b"Main benchmark duration is over")
    LEADS = True

    def run(self, settings: LoadSettings, port: int, log_path: Path, on_start=None, on_end=None,
            read_latencies: bool = True) -> LoadResult:
        """h2load logs each request's latency (--log-file); read_latencies: and they are read into the result
        (a window whose latencies no figure uses logs them only for the client's pace)."""
        latency_log = beside(log_path, "latencies")
        argv = self.argv(settings, port, latency_log)
        hist = LatencyHistogram()
        starts: Counter[int] = Counter()
        try:
            code, wall, cpu = run_measured(argv, log_path, on_start, on_end, self.WINDOW)
            if read_latencies and latency_log.exists():
                read_h2load_latency_log(latency_log, hist, starts)
        finally:
            latency_log.unlink(missing_ok=True)   # millions of lines; the histogram keeps what matters
        text = log_path.read_text(errors="replace")     # h2load's summary: the figures of _H2_PATTERNS found
        raw = {key: conv(m.group(1)) for key, (pattern, conv) in _H2_PATTERNS.items()
               if (m := re.search(pattern, text))}
        answered = raw.get("succeeded", 0)
        ok = raw.get("data_bytes", 0) // self.reply_len if self.reply_len else answered
        raw["ok_counted_by"] = (f"DATA bytes / {self.reply_len} B per framed reply" if self.reply_len else
                                "h2load's 2xx responses (reply sizes vary)")
        if self.reply_len and settings.lead > 0:
            # h2load counts requests in its timed window only, but its traffic (DATA bytes) from the lead on:
            # the bytes then bound the OK count from above
            ok = min(ok, answered)
            raw["ok_counted_by"] += f", at most the 2xx responses (the bytes include the {settings.lead:g} s lead's)"
        non_ok = max(0, answered - ok) + raw.get("failed", 0) + raw.get("errored", 0) + raw.get("timeout", 0)
        return LoadResult("h2load", argv, wall, ok, non_ok, cpu, hist, code, raw, dict(starts))


def read_h2load_latency_log(path: Path, hist: LatencyHistogram, starts: Counter | None = None) -> None:
    """h2load --log-file lines (_LATENCY_2XX): only 2xx are counted. The durations are counted as bytes first
    (one regex pass over the file, ~2x a loop over lines: a window at 100,000 req/s logs that many lines a
    second), then turned into integers once per distinct value. starts: also count the requests by start
    time in 0.01 s buckets (analyze/timeline.py)."""
    data = path.read_bytes()
    for text, count in Counter(_LATENCY_2XX.findall(data)).items():
        hist.add(int(text), count)
    if starts is not None:
        for text, count in Counter(_START_2XX.findall(data)).items():
            starts[int(text)] += count


class Ghz:
    def __init__(self, scenario: Scenario, workdir: Path):
        self.scenario = scenario

    def argv(self, settings: LoadSettings, port: int, out_json: Path) -> list[str]:
        ghz = require("ghz", "run tools/setup.sh --ghz to install it")
        return ["taskset", "-c", ",".join(map(str, settings.cpus)), ghz,
                "--insecure", f"--proto={self.scenario.proto_path}", f"--call={self.scenario.ghz_call}",
                f"--data-file={self.scenario.json_path}",
                f"--connections={settings.connections}", f"--concurrency={settings.streams}",
                f"--duration={settings.duration:g}s", f"--cpus={len(settings.cpus)}",
                # template processing costs ghz ~58 % of its CPU per request: off
                "--disable-template-functions", "--disable-template-data",
                "--format=json", f"--output={out_json}", f"127.0.0.1:{port}"]

    def run(self, settings: LoadSettings, port: int, log_path: Path, on_start=None, on_end=None,
            read_latencies: bool = True) -> LoadResult:
        out_json = beside(log_path, "json")
        argv = self.argv(settings, port, out_json)
        try:
            code, wall, cpu = run_measured(argv, log_path, on_start, on_end)
            try:
                report = json.loads(out_json.read_text())
            except (OSError, json.JSONDecodeError):
                report = {}
        finally:
            out_json.unlink(missing_ok=True)   # per-request details: large; the histogram keeps what matters
        hist = LatencyHistogram()
        stamps: Counter[str] = Counter()
        for d in report.get("details") or []:
            if d.get("status") == "OK":
                hist.add(int(d.get("latency", 0)) // 1000)
                stamps[str(d.get("timestamp", ""))[:22]] += 1
        statuses = report.get("statusCodeDistribution") or {}
        ok = int(statuses.get("OK", 0))
        non_ok = sum(int(v) for k, v in statuses.items() if k != "OK")
        raw = {k: report.get(k) for k in ("count", "total", "rps", "statusCodeDistribution", "errorDistribution")}
        # When its duration ends ghz cancels the calls in flight (at most S); they are not server errors.
        cut = sum(int(v) for k, v in statuses.items() if k in ("Canceled", "Unavailable"))
        if 0 < cut <= settings.streams:
            raw["cut_off_at_end"] = cut
            non_ok -= cut
        return LoadResult("ghz", argv, wall, ok, non_ok, cpu, hist, code, raw, ghz_start_buckets(stamps))


def ghz_start_buckets(stamps: Counter) -> dict[int, int]:
    """ghz's per-call start times (RFC 3339 in UTC, `2026-11-26T01:43:12.297719391Z`), counted by their
    first 22 characters (to 0.01 s), as requests per 0.01 s since the epoch (analyze/timeline.py)."""
    out: Counter[int] = Counter()
    for prefix, count in stamps.items():
        try:
            t = dt.datetime.strptime(prefix, "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue            # not a time ghz wrote: no slice for it
        out[round(t.timestamp() * 100)] += count
    return dict(out)


def make_driver(name: str, scenario: Scenario, workdir: Path):
    """The load driver called name, one of DRIVERS (LoadSettings.validate has checked it)."""
    return (H2load if name == "h2load" else Ghz)(scenario, workdir)
