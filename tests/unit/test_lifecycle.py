"""Nothing left behind, nothing mislabelled, without a server: a folder left running by an rpcprof that is
gone (and a process left in its cgroup), and an interrupt Python would drop (runs stopped by a signal,
killed or failing after a server started: tests/live/test_lifecycle_live.py).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rpcprof.errors import UserError
from rpcprof.measure import children
from rpcprof.measure.recorder import Recorder


def manifest_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def test_a_process_left_in_a_stale_cgroup_is_stopped_and_the_cgroup_removed(tmp_path):
    """A process an rpcprof started that outlived it (the parent-death signal reaches direct children
    only: a server's own child, say) is still in that rpcprof's cgroup: the next invocation stops it by
    PID and removes the cgroup."""
    from rpcprof.jobs.base import tidy_leftovers
    from rpcprof.measure.procstat import cgroup_name, cgroup_root
    root, _ = cgroup_root()
    if root is None:
        pytest.skip("no cgroup CPU accounting here")
    gone = subprocess.Popen(["true"])
    gone.wait()                                           # a pid whose process has ended: the dead owner
    stale = root / cgroup_name("pytest_orphan", gone.pid)
    stale.mkdir()
    orphan = subprocess.Popen(["sleep", "60"])
    try:
        (stale / "cgroup.procs").write_text(str(orphan.pid))
        line = tidy_leftovers(tmp_path)
        assert orphan.wait(timeout=10) == -signal.SIGTERM
        assert not stale.exists()
        assert f"1 process(es) it started that outlived it stopped (pid {orphan.pid} (sleep))" in line
        assert stale.name in line
    finally:
        orphan.kill()
        orphan.wait()
        if stale.exists():
            stale.rmdir()                                   # empty now that the orphan is gone


def test_a_folder_whose_owner_still_runs_is_left_running(tmp_path):
    from rpcprof.jobs.base import tidy_leftovers
    from rpcprof.measure.children import identity
    folder = tmp_path / "20260101-000000-live"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"status": "running", "owner": identity()}))
    tidy_leftovers(tmp_path)
    assert manifest_of(folder)["status"] == "running"


def test_a_folder_whose_owner_pid_was_reused_is_marked_killed(tmp_path):
    from rpcprof.jobs.base import tidy_leftovers
    from rpcprof.measure.children import identity
    folder = tmp_path / "20260101-000000-reused"
    folder.mkdir()
    owner = {**identity(), "start_ticks": identity()["start_ticks"] - 1}     # this pid, another process
    (folder / "manifest.json").write_text(json.dumps({"status": "running", "owner": owner}))
    assert tidy_leftovers(tmp_path) is not None
    assert manifest_of(folder)["status"] == "killed"


DROPPED_INTERRUPT = r'''
import os, signal, subprocess, sys, time
import click
from rpcprof.cli.common import run_click

@click.group(name="probe")
def group():
    pass

@group.command()
@click.argument("where")
def wait(where):
    if where == "fork":        # the signal arrives while a fork's at-fork hooks run, where exceptions are dropped
        os.register_at_fork(after_in_parent=lambda: signal.raise_signal(signal.SIGHUP))
        subprocess.run(["true"], preexec_fn=lambda: None)    # as rpcprof starts its children (a death signal)
    else:                      # ... or while a finaliser runs
        class Dropper:
            def __del__(self):
                signal.raise_signal(signal.SIGTERM)
        Dropper()
    print("dropped, waiting", flush=True)
    time.sleep(30)
    print("the interrupt was lost", flush=True)

run_click(group)
'''


@pytest.mark.parametrize("where", ["fork", "finaliser"])
def test_an_interrupt_raised_where_python_drops_exceptions_still_stops_the_command(tmp_path, where):
    script = tmp_path / "probe.py"
    script.write_text(DROPPED_INTERRUPT)
    tools = Path(__file__).resolve().parents[2] / "tools"
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(script), "wait", where], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tools)})
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "the interrupt was lost" not in done.stdout
    assert time.monotonic() - t0 < 25
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.strip() == "probe: interrupted", done.stderr


@pytest.mark.parametrize("raised, failed, status", [(None, False, "complete"), (None, True, "failed"),
                                                    (KeyboardInterrupt, False, "interrupted"),
                                                    (RuntimeError, False, "failed")])
def test_one_lifecycle_writes_running_then_the_status_every_job_means_alike(raised, failed, status):
    from rpcprof.jobs.base import lifecycle
    written = []
    try:
        with lifecycle(written.append) as life:
            life.failed = failed
            if raised:
                raise raised()
    except (KeyboardInterrupt, RuntimeError):
        pass
    assert written == ["running", status]


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]


def _exec_seen(pid: int, want: bytes, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _cmdline(pid)[:1] == [want]:
            return True
        time.sleep(0.01)
    return False


def test_a_deferred_recorder_starts_at_its_window_and_stops_by_pid(tmp_path):
    """py-spy's recorder in a window with a lead (capture/profiler.py): a gate until the window's start, the
    profiler itself from then on, and stopped at the end like any other; never started, stop() says None."""
    never = Recorder(["sleep", "30"], tmp_path / "never.out", tmp_path / "never.log", deferred=True)
    never.wait_attached()                   # nothing to wait for yet
    never.check()
    assert _cmdline(never.proc.pid)[0] == b"sh"
    assert never.stop() is None and never.proc.poll() is not None
    rec = Recorder(["sleep", "30"], tmp_path / "out", tmp_path / "log", deferred=True)
    assert _cmdline(rec.proc.pid)[0] == b"sh"
    rec.start()
    assert _exec_seen(rec.proc.pid, b"sleep")
    rec.check()
    assert rec.stop() is not None and rec.proc.poll() is not None


def test_a_deferred_profiler_dies_with_rpcprof_when_rpcprof_is_sigkilled(tmp_path):
    """Started by the driver's reader thread, which has ended by then, the profiler keeps the death signal: its
    gate was forked from the main thread (children.py)."""
    code = ("import sys, threading, time; from pathlib import Path; from rpcprof.measure.recorder import Recorder; "
            "r = Recorder(['sleep', '60'], Path(sys.argv[1]) / 'out', Path(sys.argv[1]) / 'log', deferred=True); "
            "t = threading.Thread(target=r.start); t.start(); t.join(); print(r.proc.pid, flush=True); time.sleep(60)")
    owner = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(owner.stdout.readline())
        assert _exec_seen(pid, b"sleep")
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 10
    while (children.stat_fields(pid) or ["Z"])[0] != "Z":         # gone, or a zombie of the reaper's
        assert time.monotonic() < deadline, "the profiler outlived rpcprof"
        time.sleep(0.01)


def test_a_deferred_recorder_that_exits_in_its_window_is_one_line(tmp_path):
    rec = Recorder(["false"], tmp_path / "out", tmp_path / "log", deferred=True)
    rec.start()
    rec.proc.wait()
    with pytest.raises(UserError, match=r"^false exited during the window \(status 1\)"):
        rec.check()
    assert rec.stop() == 1
