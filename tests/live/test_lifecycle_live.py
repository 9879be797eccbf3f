"""Nothing left behind, nothing mislabelled: what a run leaves when it is stopped by a signal, killed
outright, or fails in its own code after a server started. Real servers, short windows, no profiler.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import pid_alive

QUICK = ["--no-profile", "--no-syscalls", "-w", "0"]


def wait_gone(pid: int, deadline_s: float = 15.0) -> bool:
    """True once pid has exited (a zombie counts as exited); False if it still runs at the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


def start_mid_window(profile, port: int, label: str, *extra: str):
    """A run of rust_tonic_st with a 30 s window, caught inside it; returns (running, server pid)."""
    running = profile.start("run", "rust_tonic_st", *QUICK, "-d", "30", "--port", str(port), "--label", label, *extra)
    server = int(running.wait_for(r"rust_tonic_st \(pid (\d+)\)").group(1))
    running.wait_for(r"rust_tonic_st: measuring")
    return running, server


def manifest_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_terminating_signal_mid_window_stops_the_server_keeps_the_folder_and_exits_130(profile, port, sig):
    running, server = start_mid_window(profile, port, f"pytest-{sig.name}")
    os.kill(running.proc.pid, sig)            # rpcprof's own process, as a hangup or `kill` would
    done = running.finish(timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert not pid_alive(server)
    manifest = manifest_of(done.run_dir)
    assert manifest["status"] == "interrupted"
    assert manifest["servers"] == {"rust_tonic_st": "interrupted"}


def kill_mid_window(profile, port: int, *extra: str):
    """A run whose rpcprof process was SIGKILLed mid-window: (run folder, server pid, rpcprof pid)."""
    running, server = start_mid_window(profile, port, "pytest-sigkill", *extra)
    os.kill(running.proc.pid, signal.SIGKILL)
    running.finish(timeout=60)
    return running.run_dir(), server, running.proc.pid


@pytest.fixture
def killed_run(profile, port):
    return (profile, *kill_mid_window(profile, port))


def test_a_server_dies_with_rpcprof_when_rpcprof_is_sigkilled(killed_run):
    _, run_dir, server, _ = killed_run
    assert wait_gone(server), f"server pid {server} outlived its rpcprof"
    assert manifest_of(run_dir)["status"] == "running"       # nobody could say otherwise yet


def test_the_load_driver_dies_with_rpcprof_when_rpcprof_is_sigkilled(profile, port):
    # ghz: h2load would die anyway, of SIGPIPE, at its next progress line to rpcprof's closed pipe
    _, server, _ = kill_mid_window(profile, port, "--driver", "ghz")
    end = time.monotonic() + 15
    while time.monotonic() < end:
        left = subprocess.run(["pgrep", "-f", f"ghz .*127.0.0.1:{port}"], capture_output=True, text=True).stdout.split()
        if not [pid for pid in left if pid_alive(int(pid))]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"ghz {left} outlived its rpcprof")
    assert wait_gone(server)


def test_the_next_run_marks_a_killed_runs_folder_killed_and_removes_its_cgroup(killed_run, port):
    from rpcprof.measure.procstat import cgroup_name, cgroup_root
    profile, run_dir, server, rpcprof_pid = killed_run
    assert wait_gone(server)
    root, _ = cgroup_root()
    stale = root / cgroup_name("rust_tonic_st", rpcprof_pid)
    done = profile.run("run", "rust_tonic_st", *QUICK, "-d", "1", "--port", str(port), "--label", "pytest-next")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if run_dir.name in line]
    assert len(lines) == 1 and "killed" in lines[0] and stale.name in lines[0], done.stderr
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "killed"
    assert f"pid {rpcprof_pid}" in manifest["killed"]
    assert not stale.exists()
    assert manifest_of(done.run_dir)["status"] == "complete"


# ----- a failure of rpcprof's own code after the server started -------------------------------------

@pytest.mark.parametrize("step", ["use_reply", "warm_up", "measure"])
def test_an_error_after_the_server_started_marks_the_run_failed_never_complete(tmp_path, port, monkeypatch, step):
    from rpcprof.jobs import steps
    from rpcprof.jobs.run import Run, RunOptions

    def broken(*args, **kwargs):
        raise RuntimeError(f"injected failure in {step}")
    monkeypatch.setattr(steps, step, broken)
    run = Run(RunOptions(servers=["rust_tonic_st"], duration=1, warmup=0, port=port, profile=False, syscalls=False,
                         runs_dir=tmp_path, label="pytest-broken"), command=["pytest"])
    with pytest.raises(RuntimeError, match="injected"):
        run.execute()
    manifest = manifest_of(run.dir)
    assert manifest["status"] == "failed"
    assert manifest["servers"] == {"rust_tonic_st": "failed"}
    result = json.loads((run.dir / "rust_tonic_st" / "result.json").read_text())
    assert result["status"] == "failed" and "injected" in result["error"]
    assert not pid_alive(result["pid"])


# ----- an interrupt Python would drop ------------------------------------------------------------------
