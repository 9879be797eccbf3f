"""measure/neighbours.py: the busy programs outside a run, named from /proc over a window; and what the reports
and the ledger do with them."""
import os
import subprocess
import sys
import time

from rpcprof.measure.neighbours import NEIGHBOUR_CORES, NeighbourWindow, busy_outside, outside, scan
from rpcprof.report.summary import busy_host, notes_for

BUSY = [sys.executable, "-c", "while True: pass"]


def busy_for(seconds: float, roots: set[int]) -> tuple[list[dict], int]:
    """(what busy_outside found, the pid of a busy loop run over seconds between the two scans)."""
    loop = subprocess.Popen(BUSY)
    try:
        before = (time.monotonic(), scan())
        time.sleep(seconds)
        return busy_outside(before, (time.monotonic(), scan()), roots or {os.getpid()}), loop.pid
    finally:
        loop.kill()
        loop.wait()


def test_a_busy_process_outside_the_run_is_named_with_its_cpu():
    # the run's roots are a process that is not this one's ancestor: the loop, this test's child, is outside
    found, pid = busy_for(0.6, {1 << 30})
    mine = [n for n in found if n["pid"] == pid]
    assert mine and mine[0]["name"] == os.path.basename(sys.executable)[:15]
    assert 0.3 <= mine[0]["cores"] <= 1.1


def test_the_run_s_own_processes_are_not_named():
    found, pid = busy_for(0.6, {os.getpid()})
    assert pid not in {n["pid"] for n in found}


def test_a_window_marks_its_ends_and_leaves_out_what_it_measures():
    loop = subprocess.Popen(BUSY)
    try:
        window = NeighbourWindow(loop.pid)      # the loop stands for the measured server
        window.start()
        time.sleep(0.3)
        window.end()
        assert loop.pid not in {n["pid"] for n in window.found()}
    finally:
        loop.kill()
        loop.wait()


def test_below_a_root_is_inside_and_kernel_threads_are_not_scanned():
    processes = {10: (1, "init", 0), 20: (10, "rpcprof", 0), 30: (20, "h2load", 0), 40: (30, "child", 0),
                 50: (10, "other", 0), 60: (99, "orphan", 0)}
    assert outside(processes, {20}) == {10, 50, 60}
    assert 2 not in scan()                      # kthreadd
    assert os.getpid() in scan()


def test_a_process_below_the_threshold_is_not_named():
    before = (0.0, {7: (1, "quiet", 100)})
    after = (10.0, {7: (1, "quiet", 100 + int(NEIGHBOUR_CORES * 10 * os.sysconf("SC_CLK_TCK")) - 1)})
    assert busy_outside(before, after, {1 << 30}) == []
    after = (10.0, {7: (1, "quiet", 100 + int(NEIGHBOUR_CORES * 10 * os.sysconf("SC_CLK_TCK")) + 1)})
    assert [n["pid"] for n in busy_outside(before, after, {1 << 30})] == [7]


def test_a_reused_pid_counts_from_zero():
    # pid 7 was "old" at the start and is "new" at the end: all of its time is in the window
    found = busy_outside((0.0, {7: (1, "old", 500)}), (1.0, {7: (1, "new", 20)}), {1 << 30})
    assert found == [{"pid": 7, "name": "new", "cores": round(20 / os.sysconf("SC_CLK_TCK"), 3)}]


def test_the_run_table_flags_a_busy_host():
    neighbours = [{"pid": 4242, "name": "python", "cores": 0.83}]
    assert busy_host(neighbours) == "pid 4242 python 0.83 CPU"
    assert "BUSY-HOST: pid 4242 python 0.83 CPU" in notes_for({"status": "ok", "neighbours": neighbours})
    assert "BUSY-HOST" not in notes_for({"status": "ok", "neighbours": []})
    many = [{"pid": p, "name": "x", "cores": 0.1} for p in range(5)]
    assert busy_host(many).endswith(" and 2 more")



def test_each_window_adds_its_busy_programs_to_the_result_each_pid_once_at_its_most(capsys):
    from pathlib import Path
    from rpcprof.jobs.steps import Subject, busy_beside
    subject = Subject("s", 1, None, Path("."))
    figures = {"neighbours": []}
    busy_beside(subject, figures, [], "measured")
    assert figures == {"neighbours": []} and capsys.readouterr().err == ""       # nothing said of a quiet window
    busy_beside(subject, figures, [{"pid": 7, "name": "a", "cores": 0.2}], "measured")
    busy_beside(subject, figures, [{"pid": 7, "name": "a", "cores": 0.6}, {"pid": 9, "name": "b", "cores": 0.4}],
                "profile")
    busy_beside(subject, figures, [{"pid": 7, "name": "a", "cores": 0.1}], "off-CPU")
    assert figures["neighbours"] == [{"pid": 7, "name": "a", "cores": 0.6}, {"pid": 9, "name": "b", "cores": 0.4}]
    err = capsys.readouterr().err
    assert [line.split(" window")[0] for line in err.splitlines()] == [
        f"rpcprof: WARNING: s: other programs were busy in the {w}" for w in ("measured", "profile", "off-CPU")]
