"""Shared helpers for rpcprof's tests: ports, running profile.sh, and the run folders the tests create:
each Profile passes a runs folder of its own (--runs-dir, a temporary folder deleted afterwards), so no
test writes into flamegraphs/ or finds another run's folder. A command that names no off-CPU option gets
--no-off-cpu: the window is tested where a test asks for it (any --off-cpu... option), and would otherwise
add seconds to every latency-bound or unsaturated test run; a `run` that names no --rounds (--repeat) or --precision
gets --rounds 1 (the default of 3 rounds would triple every live test).

Ports start at 30151, below the kernel's range of ephemeral ports (net.ipv4.ip_local_port_range, 32768-60999
here): a client connection's local port never takes one of them (at 50652, one did, and the run said the
port was in use). 50051 belongs to someone else on this machine.

Tiers, by folder (every test lives in one; a test file anywhere else stops the collection):
    tests/unit/    the modules' own tests: no server, no load driver, no measuring profiler
    tests/golden/  the reports of saved captures and runs (tests/data)
    tests/fuzz/    random input to the parsers and reports, from saved runs (about a minute)
    tests/live/    real servers, perf, h2load and ghz
Each test gets its folder's marker (unit, golden, fuzz, live), and unit and golden tests `fast` too:
`pytest -m fast` runs the fast tier. A test outside tests/live that starts a live program fails, whether
it starts it itself or through profile.sh or report.py (tests/fast_tier/sitecustomize.py says how).
"""
from __future__ import annotations

import atexit
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import importlib.util

import pytest
from click.testing import CliRunner

pytest_plugins = ["pytester"]     # tests/unit/test_fast_tier.py runs a pytest session of its own

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
PROFILE_SH = ROOT / "profile.sh"
FIRST_PORT = 30151
LAST_PORT = 30299

# A whole run (build included, if the servers are not built yet) must end within this.
RUN_TIMEOUT_S = 600

_next_port = FIRST_PORT + 1     # 30151 itself is reserved for the integration run


def fleet_folded(path: Path, n: int, stacks: list[list[str]], odd: list[str] = ()) -> Path:
    """A folded file of bench/distinct_stacks' leaves shape (`main;worker_{i % 7};fn_{i % 13};leaf_{i}`, each leaf
    its own), with among them stacks (frames root first) as they are and their leaves under the fleet's callers,
    and stacks of one frame; odd: frames put as leaves and alone now and then (and then weights of 0 too)."""
    import random
    rng = random.Random(n)
    lines = []
    for i in range(n):
        if i % 50 == 7:
            lines.append(f"{';'.join(rng.choice(stacks))} {i % 5 + 1}")
        elif i % 50 == 9:
            lines.append(f"main;worker_{i % 7};{rng.choice(stacks)[-1]} 3")
        elif i % 997 == 3:
            lines.append(f"{rng.choice(odd)} {i % 5}" if odd else f"lonely_{i} {i % 5 + 1}")
        else:
            leaf = rng.choice(odd) if odd and i % 331 == 0 else f"leaf_{i}"
            lines.append(f"main;worker_{i % 7};fn_{i % 13};{leaf} {i % 7 + 1}")
    path.write_text("\n".join(lines) + ("" if odd else "\n"), encoding="utf-8", newline="\n")
    return path


def port_is_free(port: int) -> bool:
    """True if 127.0.0.1:port can be bound the way rpcprof checks it (no SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def take_port() -> int:
    """A port not used before by this test session and free right now."""
    global _next_port
    while _next_port <= LAST_PORT:
        port, _next_port = _next_port, _next_port + 1
        if port_is_free(port):
            return port
    raise RuntimeError(f"no free port left in {FIRST_PORT + 1}-{LAST_PORT}")


def wait_answering(proc: subprocess.Popen, port: int, scenario: str = "helloworld", timeout: float = 60) -> None:
    """Until a server started by a test (proc) answers the scenario's gRPC call on port; fails the test
    if it exits or does not answer within timeout."""
    import time
    from rpcprof.measure.scenario import SCENARIOS, learn_reply
    deadline = time.monotonic() + timeout
    while learn_reply(SCENARIOS[scenario], port, calls=1)[1] is not None:
        assert proc.poll() is None and time.monotonic() < deadline, f"the server on port {port} did not answer"
        time.sleep(0.1)


def pid_alive(pid: int) -> bool:
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


ERROR_LINE = re.compile(r"^(rpcprof|profile\.sh): error: ")


def error_lines(stderr: str) -> list[str]:
    """What stderr says beyond tools/setup.sh's install report and rpcprof's progress lines."""
    return [line for line in stderr.splitlines()
            if line.strip() and not line.startswith("setup:")
            and not (line.startswith("rpcprof: ") and not ERROR_LINE.match(line))]


RUN_FOLDER_LINE = re.compile(r"^rpcprof: run folder (\S+)", re.M)


COMMANDS_WITH_RUNS_DIR = ("run", "sweep", "attach")


CARD_OPTIONS = ("--host-card", "--server-cpus", "--load-cpus", "--idle")
_card_run: list[Path] = []


def card_run() -> Path:
    """A run folder of this session whose host card the live tests' runs take (--host-card), so that the card is
    measured once, not in every run (about 2 s each); made by a short run the first time it is asked for. The tests
    of the card itself measure it (Profile.run(..., measure_card=True), tests/live/test_hostcard_live.py)."""
    if not _card_run:
        runs = Path(tempfile.mkdtemp(prefix="rpcprof-test-card-"))
        atexit.register(shutil.rmtree, runs, True)
        done = subprocess.run([str(PROFILE_SH), "run", "rust_tonic_st", "--runs-dir", str(runs), "-d", "1", "-w", "0",
                               "--no-profile", "--no-syscalls", "--no-off-cpu", "--no-pictures", "--rounds", "1",
                               "--port", str(take_port())],
                              cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)
        found = RUN_FOLDER_LINE.search(done.stderr)
        assert done.returncode == 0 and found, done.stderr
        _card_run.append(Path(found.group(1)))
    return _card_run[0]


class Profile:
    """Runs ./profile.sh as subprocesses with a runs folder of its own; on cleanup stops any still running
    (SIGINT to its process group, so rpcprof stops its servers) and deletes that runs folder. A run that names
    none of CARD_OPTIONS takes the session's host card (card_run) unless measure_card is given."""

    def __init__(self) -> None:
        self.started: list[Running] = []
        self.runs_dir = Path(tempfile.mkdtemp(prefix="rpcprof-test-runs-"))

    def run(self, *args: str, timeout: float = RUN_TIMEOUT_S, measure_card: bool = False) -> "Finished":
        """Run profile.sh with args to the end; the result carries returncode, stdout, stderr, run_dir."""
        return self.start(*args, measure_card=measure_card).finish(timeout)

    def start(self, *args: str, measure_card: bool = False) -> "Running":
        """Start profile.sh in a process group of its own; stderr is read line by line in the background."""
        if args and args[0] in COMMANDS_WITH_RUNS_DIR and "--runs-dir" not in args:
            args = (args[0], "--runs-dir", str(self.runs_dir), *args[1:])
        if args and args[0] in COMMANDS_WITH_RUNS_DIR and not any(a.startswith(("--off-cpu", "--no-off-cpu"))
                                                                  for a in args):
            args = (*args, "--no-off-cpu")   # the off-CPU window is tests/live/test_offcpu_live.py's: it names its options
        if args and args[0] in COMMANDS_WITH_RUNS_DIR and not {"--pictures", "--no-pictures"} & set(args):
            args = (*args, "--no-pictures")  # drawn by the tests that read them (run_integration, offcpu): they name --pictures
        if args and args[0] == "run" and not any(a.startswith(("--rounds", "--repeat", "--precision")) for a in args):
            args = (*args, "--rounds", "1")  # rounds triple a run: the tests of rounds name their options
        if args and args[0] == "run" and not measure_card and not any(a.startswith(CARD_OPTIONS) for a in args):
            args = (*args, "--host-card", str(card_run()))
        proc = subprocess.Popen([str(PROFILE_SH), *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        running = Running(proc)
        self.started.append(running)
        return running

    def cleanup(self) -> None:
        for running in self.started:
            running.stop()
        shutil.rmtree(self.runs_dir, ignore_errors=True)


class Finished:
    def __init__(self, returncode: int, stdout: str, stderr: str, run_dir: Path | None):
        self.returncode, self.stdout, self.stderr, self.run_dir = returncode, stdout, stderr, run_dir


class Running:
    """A profile.sh still running: wait_for(pattern) blocks until a stderr line matches."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self._stdout: list[str] = []
        self._readers = [threading.Thread(target=self._read_stderr, daemon=True),
                         threading.Thread(target=lambda: self._stdout.append(proc.stdout.read()), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_for(self, pattern: str, timeout: float = RUN_TIMEOUT_S) -> re.Match:
        rx = re.compile(pattern)
        seen = 0
        with self._cond:
            while True:
                for line in self.lines[seen:]:
                    m = rx.search(line)
                    if m:
                        return m
                seen = len(self.lines)
                if self._eof:
                    raise AssertionError(f"profile.sh ended before printing {pattern!r}:\n{''.join(self.lines)}")
                if not self._cond.wait(timeout):
                    raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n{''.join(self.lines)}")

    def run_dir(self) -> Path | None:
        """The run folder profile.sh announced on stderr, if it did."""
        with self._cond:
            m = RUN_FOLDER_LINE.search("".join(self.lines))
        if not m:
            return None
        path = Path(m.group(1))
        return path if path.is_absolute() else ROOT / path

    def finish(self, timeout: float = RUN_TIMEOUT_S) -> Finished:
        """Wait for the end (TimeoutExpired after timeout s; cleanup then stops it)."""
        self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=30)
        return Finished(self.proc.returncode, "".join(self._stdout), "".join(self.lines), self.run_dir())

    def stop(self) -> None:
        """If still running: SIGINT to the process group (Ctrl-C: rpcprof stops what it started), then SIGKILL."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        for reader in self._readers:
            reader.join(timeout=30)


@pytest.fixture
def profile():
    """A Profile whose run folders are deleted when the test ends."""
    p = Profile()
    yield p
    p.cleanup()


@pytest.fixture(scope="module")
def module_profile():
    """Like profile, shared by the tests of one module (for one expensive run checked many ways)."""
    p = Profile()
    yield p
    p.cleanup()


@pytest.fixture
def port() -> int:
    return take_port()


def category_shares(run_dir: Path, server: str, level: int = 1, view: str = "category") -> dict[str, float]:
    """A server's category shares, computed as reports do: from its folded file and today's rules
    (level 2: sub-categories such as protocol/protobuf; view "tax": kinds of work at the leaf)."""
    from rpcprof.analyze.categorize import categorize, load_rules, open_folded
    from rpcprof.rundir import load_run, profile_folded
    _, metrics = load_run(run_dir)
    rules = load_rules().with_app(metrics[server].get("app")).using(level, view)
    b = categorize(open_folded(profile_folded(run_dir, server)), rules)
    return {c: b.share(c) for c in rules.all_categories}


def category_samples(run_dir: Path, server: str) -> int:
    """The number of samples behind a server's category shares."""
    from rpcprof.analyze.categorize import categorize, load_rules, open_folded
    from rpcprof.rundir import profile_folded
    return categorize(open_folded(profile_folded(run_dir, server)), load_rules()).samples


# ----- least-squares straight lines ------------------------------------------------------------------------
# for checking that a cost grows linearly with a knob (tests/live/test_perturbation.py, bench/perturb.sh): the
# line is `statistics.linear_regression`, R² the share of y's variance around its mean that the line explains,
# 1 - SS_res / SS_tot (NaN when y does not vary)

@dataclass(frozen=True)
class LinearFit:
    slope: float
    intercept: float
    r2: float           # NaN when y does not vary
    n: int              # points fitted

    def predict(self, x: float) -> float:
        return self.intercept + self.slope * x

    def __str__(self) -> str:
        return f"y = {self.slope:.4g}·x {'-' if self.intercept < 0 else '+'} {abs(self.intercept):.4g} " \
               f"(R² {self.r2:.3f}, {self.n} points)"


def r_squared(xs, ys, slope: float, intercept: float) -> float:
    """1 - SS_res / SS_tot of the line y = intercept + slope·x over the points; NaN if y is constant."""
    mean = statistics.fmean(ys)
    ss_tot = math.fsum((y - mean) ** 2 for y in ys)
    if ss_tot == 0:
        return math.nan
    ss_res = math.fsum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    return 1.0 - ss_res / ss_tot


def linear_fit(xs, ys) -> LinearFit:
    """The least-squares line through (xs[i], ys[i]). Needs two points or more and x that varies."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys):
        raise ValueError(f"linear_fit: {len(xs)} x values but {len(ys)} y values")
    if len(xs) < 2:
        raise ValueError("linear_fit: needs at least two points")
    if min(xs) == max(xs):
        raise ValueError("linear_fit: x must take at least two different values")
    slope, intercept = statistics.linear_regression(xs, ys)
    return LinearFit(slope, intercept, r_squared(xs, ys, slope, intercept), len(xs))


# ----- the command lines in-process (click's CliRunner) ---------------------------------------------

class Result:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if re.match(r"^(profile\.sh|report\.py): error: ", line)]


def invoke(entry, *args: str) -> Result:
    """entry(args) under CliRunner's isolation: stdout and stderr captured, the exit code returned."""
    runner = CliRunner()
    with runner.isolation() as streams:
        try:
            entry(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out, err = streams[0].getvalue().decode(), streams[1].getvalue().decode()
    return Result(code, out, err)


# ----- a disk that fills up ---------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path) -> None:
    """Fill disk to the last byte."""
    with open(disk / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


# ----- tiers: a marker per folder, and the fast tier's guard ------------------------------------------

TIERS = {"unit": ("unit", "fast"), "golden": ("golden", "fast"), "fuzz": ("fuzz",), "live": ("live",)}
FAST_TIER_DIR = TESTS / "fast_tier"
_spec = importlib.util.spec_from_file_location("rpcprof_fast_tier_guard", FAST_TIER_DIR / "sitecustomize.py")
guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(guard)
_guard_log = pytest.StashKey[Path]()


def tier_of(path: Path) -> str:
    """The tier of a test file: the folder under tests/ it lives in."""
    relative = Path(path).resolve().relative_to(TESTS)
    if len(relative.parts) != 2 or relative.parts[0] not in TIERS:
        raise pytest.UsageError(f"tests/{relative}: a test file belongs in tests/{', tests/'.join(TIERS)} "
                                "(conftest.py gives each folder's tests their markers)")
    return relative.parts[0]


def pytest_collection_modifyitems(config, items):
    """Each test gets its folder's markers; one marked `slow` is left out of the fast tier (it runs in the
    full suite)."""
    for item in items:
        for marker in TIERS[tier_of(item.path)]:
            if not (marker == "fast" and item.get_closest_marker("slow")):
                item.add_marker(marker)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test outside tests/live runs with the guard on, in this process and in every Python it starts
    (the fixtures it sets up and tears down included)."""
    if item.get_closest_marker("live"):
        return (yield)
    fd, log = tempfile.mkstemp(prefix="rpcprof-fast-tier-", suffix=".log")
    os.close(fd)
    item.stash[_guard_log] = Path(log)
    saved = {k: os.environ.get(k) for k in (guard.LOG_ENV, "PYTHONPATH")}
    os.environ[guard.LOG_ENV] = log
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(FAST_TIER_DIR), saved["PYTHONPATH"]) if p)
    guard.install()
    try:
        return (yield)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        Path(log).unlink(missing_ok=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test outside tests/live fails when it, or a process it started, started a live program (even where
    the code under test caught the refusal)."""
    report = yield
    log = item.stash.get(_guard_log, None)
    started = log.read_text().strip() if log and log.exists() else ""
    if started:
        log.write_text("")
        report.outcome = "failed"
        report.longrepr = (f"a test of tests/{tier_of(item.path)} started a live program; it belongs in "
                           f"tests/live:\n{started}")
    return report
