"""Bad input and bad luck through ./profile.sh: every one ends with a clear line on stderr, a non-zero
exit and no traceback, and leaves no server process behind.

The runs here use --no-profile: what is tested is the run's error handling, not the profiler.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ERROR_LINE, ROOT, error_lines, pid_alive, take_port
from rpcprof.measure.servers import load_server

KNOWN_SERVERS = sorted(p.parent.name for p in (ROOT / "servers").glob("*/server.yaml"))
QUICK = ["--no-profile", "-d", "1", "-w", "0"]


def server_processes(name: str, port: int) -> list[str]:
    """Command lines of running NAME servers started on port (others run their own servers on other ports),
    found by the binary server.yaml starts (rust_tonic_st and _mt are both target/release/rust_tonic)."""
    argv = load_server(name).argv(port)
    command = " ".join([Path(argv[0]).name, *argv[1:]])
    pattern = re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", command) + "$"     # pgrep's regex: the line's end
    out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
    return out.stdout.splitlines()


def test_server_processes_finds_a_running_server(port):
    """The check the tests below make of what a run left behind: it finds a server that is running."""
    spec = load_server("rust_tonic_st")
    subprocess.run(["bash", "build.sh"], cwd=spec.folder, check=True, capture_output=True)
    proc = subprocess.Popen(spec.argv(port), cwd=spec.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert len(server_processes("rust_tonic_st", port)) == 1
        assert server_processes("rust_tonic_mt", port) == server_processes("rust_tonic_st", port + 1) == []
    finally:
        proc.kill()
        proc.wait()
    assert server_processes("rust_tonic_st", port) == []


def assert_one_clear_error(done, *must_contain: str) -> str:
    """Non-zero exit, no traceback, and exactly one error line that contains every given text."""
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if ERROR_LINE.match(line)]
    assert len(errors) == 1, done.stderr
    for text in must_contain:
        assert text in errors[0], errors[0]
    return errors[0]


# Command lines refused before anything starts are tested in-process: tests/unit/test_cli.py.


# ----- the port -----------------------------------------------------------------------------------

def test_port_in_use_is_reported_naming_the_port_and_the_process_holding_it(profile, port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        done = profile.run("run", "rust_tonic_st", *QUICK, "--port", str(port), "--label", "pytest-portinuse")
        assert done.returncode != 0
        assert "Traceback" not in done.stderr, done.stderr
        assert [line for line in done.stderr.splitlines() if ERROR_LINE.match(line)], done.stderr
        naming = [line for line in done.stderr.splitlines()
                  if f"port {port}" in line and f"pid {os.getpid()}" in line]
        assert naming, f"no line names port {port} and pid {os.getpid()}:\n{done.stderr}"
        holder.getsockname()                  # still ours: rpcprof did not touch it
    assert server_processes("rust_tonic_st", port) == []
    if done.run_dir:                          # if a folder was made, it must not claim success
        manifest = json.loads((done.run_dir / "manifest.json").read_text())
        assert manifest["status"] != "complete"
        assert manifest["servers"].get("rust_tonic_st") != "ok"


# ----- a server that dies mid-window --------------------------------------------------------------

CRASH_SERVERS = ("rust_tonic_st", "rust_pajamax", "rust_tonic_mt")


def test_server_crashing_mid_window_fails_it_keeps_those_before_and_the_run_goes_on(profile, port):
    """rust_tonic_st, rust_pajamax, rust_tonic_mt in one run; rust_pajamax is SIGKILLed 1 s into its 3 s
    measured window: it fails with one clear line, the server measured before it is kept, and the run goes
    on to the one after it."""
    running = profile.start("run", *CRASH_SERVERS, "--no-profile", "--no-syscalls", "-d", "3", "-w", "0", "--port", str(port),
                            "--label", "pytest-crash")
    pid = int(running.wait_for(r"rust_pajamax \(pid (\d+)\)").group(1))
    running.wait_for(r"rust_pajamax: measuring")
    time.sleep(1.0)                           # well inside the 3 s window
    os.kill(pid, signal.SIGKILL)
    done = running.finish()
    manifest = json.loads((done.run_dir / "manifest.json").read_text())
    metrics = json.loads((done.run_dir / "metrics.json").read_text())
    assert done.returncode == 1
    assert_one_clear_error(done, "rust_pajamax")
    assert manifest["status"] == "failed"
    assert manifest["servers"]["rust_tonic_st"] == "ok", {name: m.get("error") for name, m in metrics.items()}
    assert metrics["rust_tonic_st"]["req_per_s"] > 0
    assert manifest["servers"]["rust_pajamax"] == "failed"
    assert "exited with status -9 during the measured window" in metrics["rust_pajamax"]["error"]
    # The run went on to the next server. Whether it could measure it is another matter: see
    # test_port_check_ignores_connections_left_in_time_wait.
    assert manifest["servers"]["rust_tonic_mt"] != "not run"
    assert (done.run_dir / "rust_tonic_mt" / "result.json").is_file()
    assert [server_processes(name, port) for name in CRASH_SERVERS] == [[], [], []]


# ----- Ctrl-C -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def interrupted(module_profile):
    """rust_tonic_st then rust_pajamax, with SIGINT sent to profile.sh's process group mid-window of rust_tonic_st."""
    port = take_port()
    running = module_profile.start("run", "rust_tonic_st", "rust_pajamax", "--no-profile", "-d", "4", "-w", "0",
                                   "--port", str(port), "--label", "pytest-ctrlc")
    running.wait_for(r"rust_tonic_st: measuring")
    time.sleep(1.0)                           # well inside the 4 s window
    os.killpg(running.proc.pid, signal.SIGINT)
    done = running.finish()
    done.port = port
    return done


def test_ctrl_c_exits_130_with_one_line_and_no_traceback(interrupted):
    assert interrupted.returncode == 130
    line = assert_one_clear_error(interrupted, "interrupted")
    assert error_lines(interrupted.stderr) == [line]


def test_ctrl_c_marks_the_run_interrupted_and_keeps_the_folder(interrupted):
    manifest = json.loads((interrupted.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert manifest["servers"] == {"rust_tonic_st": "interrupted", "rust_pajamax": "not run"}
    assert "INTERRUPTED" in interrupted.stdout and "NOT RUN" in interrupted.stdout


def test_ctrl_c_leaves_no_server_process(interrupted):
    result = json.loads((interrupted.run_dir / "rust_tonic_st" / "result.json").read_text())
    assert not pid_alive(result["pid"])
    assert server_processes("rust_tonic_st", interrupted.port) == []
    assert server_processes("rust_pajamax", interrupted.port) == []


def test_ctrl_c_leaves_no_raw_latency_log(interrupted):
    assert list(interrupted.run_dir.rglob("*.latency.tsv")) == []
