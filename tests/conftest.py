"""Shared helpers for rpcprof's tests: ports, running profile.sh, and the run folders the tests create:
each Profile passes a runs folder of its own (--runs-dir, a temporary folder deleted afterwards), so no
test writes into flamegraphs/ or finds another run's folder. A command that names no off-CPU option gets
--no-off-cpu: the window is tested where a test asks for it (any --off-cpu... option), and would otherwise
add seconds to every latency-bound or unsaturated test run; a `run` that names no --repeat or --precision
gets --repeat 1 (the default of 3 rounds would triple every live test).

Ports start at 50151; 50051 belongs to someone else on this machine.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROFILE_SH = ROOT / "profile.sh"
FIRST_PORT = 50151
LAST_PORT = 50299

# A whole run (build included, if the servers are not built yet) must end within this.
RUN_TIMEOUT_S = 600

_next_port = FIRST_PORT + 1     # 50151 itself is reserved for the integration run


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


class Profile:
    """Runs ./profile.sh as subprocesses with a runs folder of its own; on cleanup stops any still running
    (SIGINT to its process group, so rpcprof stops its servers) and deletes that runs folder."""

    def __init__(self) -> None:
        self.started: list[Running] = []
        self.runs_dir = Path(tempfile.mkdtemp(prefix="rpcprof-test-runs-"))

    def run(self, *args: str, timeout: float = RUN_TIMEOUT_S) -> "Finished":
        """Run profile.sh with args to the end; the result carries returncode, stdout, stderr, run_dir."""
        return self.start(*args).finish(timeout)

    def start(self, *args: str) -> "Running":
        """Start profile.sh in a process group of its own; stderr is read line by line in the background."""
        if args and args[0] in COMMANDS_WITH_RUNS_DIR and "--runs-dir" not in args:
            args = (args[0], "--runs-dir", str(self.runs_dir), *args[1:])
        if args and args[0] in COMMANDS_WITH_RUNS_DIR and not any(a.startswith(("--off-cpu", "--no-off-cpu"))
                                                                  for a in args):
            args = (*args, "--no-off-cpu")   # the off-CPU window is tests/test_offcpu.py's: it names its options
        if args and args[0] == "run" and not any(a.startswith(("--repeat", "--precision")) for a in args):
            args = (*args, "--repeat", "1")  # rounds triple a run: the tests of rounds name their options
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
