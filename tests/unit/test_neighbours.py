"""measure/neighbours.py: the busy programs outside a run, named from /proc over a window; and what the reports
and the ledger do with them."""
import os
import subprocess
import sys
import time

from rpcprof.measure.neighbours import NEIGHBOUR_CORES, NeighbourWindow, busy_outside, cpu_steal, outside, scan, stolen
from rpcprof.records import HALT_STEAL_SHARE, STEAL_SHARE, beside_busy, halting_cpus
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
    assert busy_host({"neighbours": neighbours}) == "pid 4242 python 0.83 CPU"
    assert "BUSY-HOST: pid 4242 python 0.83 CPU" in notes_for({"status": "ok", "neighbours": neighbours})
    assert "BUSY-HOST" not in notes_for({"status": "ok", "neighbours": []})
    many = [{"pid": p, "name": "x", "cores": 0.1} for p in range(5)]
    assert busy_host({"neighbours": many}).endswith(" and 2 more")


def test_each_cpus_steal_is_read_from_proc_stat_and_its_share_of_the_window_taken():
    now = cpu_steal()
    assert sorted(now) == list(range(os.cpu_count()))
    assert all(0 <= steal <= ticks for steal, ticks in now.values())
    # CPU 0: 30 of its 400 ticks stolen; CPU 1: none; a CPU found at one end only is left out
    assert stolen({0: (10, 1000), 1: (0, 1000)}, {0: (40, 1400), 1: (0, 1400), 2: (5, 10)}) == {"0": 0.075, "1": 0.0}


def test_a_cpu_stolen_from_flags_the_window_busy_host_as_a_neighbour_does():
    just_below, at = {"0": round(STEAL_SHARE - 0.001, 4), "1": 0.0}, {"0": STEAL_SHARE, "1": 0.01}
    assert not beside_busy({"neighbours": [], "steal": just_below})
    assert beside_busy({"neighbours": [], "steal": at})
    assert busy_host({"neighbours": [], "steal": at}) == f"CPU 0 {100 * STEAL_SHARE:.0f} % stolen"
    assert f"BUSY-HOST: CPU 0 {100 * STEAL_SHARE:.0f} % stolen" in notes_for({"status": "ok", "neighbours": [], "steal": at})
    both = {"neighbours": [{"pid": 7, "name": "a", "cores": 0.6}], "steal": {"1": 0.2}}
    assert busy_host(both) == "pid 7 a 0.60 CPU, CPU 1 20 % stolen"


def test_a_cpu_that_halts_when_idle_flags_only_at_the_higher_share():
    # the load generator's CPU halts between the client's bursts, and the host's delay in waking it counts as
    # steal: 8 % of it flags nothing where the record names it halting, and still flags a CPU kept from halting
    load_cpu_stolen = {"neighbours": [], "steal": {"0": 0.0, "1": 0.08}}
    assert not beside_busy({**load_cpu_stolen, "halting": [1]})
    assert beside_busy({**load_cpu_stolen, "halting": [0]})
    assert beside_busy(load_cpu_stolen)                       # a record from before `halting`: as it was read then
    at = {"neighbours": [], "steal": {"0": 0.0, "1": HALT_STEAL_SHARE}, "halting": [1]}
    assert busy_host(at) == f"CPU 1 {100 * HALT_STEAL_SHARE:.0f} % stolen"
    below = {"neighbours": [], "steal": {"0": 0.0, "1": round(HALT_STEAL_SHARE - 0.001, 4)}, "halting": [1]}
    assert not beside_busy(below)
    # which CPUs halt: the load generator's; the server's too where the run does not hold their idle
    assert halting_cpus([0], [1], "spin") == halting_cpus([0], [1], "poll") == (1,)
    assert halting_cpus([0], [1, 2], "halt") == (0, 1, 2)



def test_each_window_adds_its_busy_programs_to_the_result_each_pid_once_at_its_most(capsys):
    from pathlib import Path
    from rpcprof.jobs.steps import Subject, busy_beside
    subject = Subject("s", 1, None, Path("."))
    figures = {"neighbours": [], "steal": {}}
    busy_beside(subject, figures, {"neighbours": [], "steal": {"0": 0.01, "1": 0.0}, "halting": [1]}, "measured")
    assert figures == {"neighbours": [], "steal": {"0": 0.01, "1": 0.0}, "halting": [1]}      # figures, kept
    assert capsys.readouterr().err == ""                                      # and nothing said of a quiet window
    busy_beside(subject, figures, {"neighbours": [{"pid": 7, "name": "a", "cores": 0.2}], "steal": {"0": 0.0, "1": 0.0}},
                "measured")
    busy_beside(subject, figures, {"neighbours": [{"pid": 7, "name": "a", "cores": 0.6}, {"pid": 9, "name": "b", "cores": 0.4}],
                                   "steal": {"0": 0.0, "1": 0.02}}, "profile")
    busy_beside(subject, figures, {"neighbours": [], "steal": {"0": 0.09, "1": 0.0}}, "off-CPU")
    assert figures["neighbours"] == [{"pid": 7, "name": "a", "cores": 0.6}, {"pid": 9, "name": "b", "cores": 0.4}]
    assert figures["steal"] == {"0": 0.09, "1": 0.02}                         # each CPU at its most
    err = capsys.readouterr().err
    assert [line.split(" window")[0] for line in err.splitlines()] == [
        f"rpcprof: WARNING: s: other programs were busy in the {w}" for w in ("measured", "profile", "off-CPU")]
    assert "(CPU 0 9 % stolen)" in err.splitlines()[-1]
