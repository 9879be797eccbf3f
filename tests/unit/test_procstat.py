"""CPU accounting on a real child process that burns a known amount of its own thread CPU time.

The child spins until its thread CPU clock (time.thread_time(), the same per-thread sum the kernel
reports in schedstat and cpuacct) has advanced by the requested amount, then blocks on stdin. So the
CPU measured between two marks must be at least what was burned, and only a little more (the child's
own bookkeeping). Nothing here depends on how fast the machine is.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from rpcprof.measure import procstat
from rpcprof.measure.procstat import CgroupCpu, ProcessMonitor, cpu_seconds_per_second, thread_cpu_ns

BURN_S = 0.3
SLACK_S = 0.2           # allowed CPU above what was burned: interpreter work around the spin

CHILD = textwrap.dedent("""
    import sys, threading, time

    def burn(seconds):
        t0 = time.thread_time()
        while time.thread_time() - t0 < seconds:
            pass

    parked = []
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, arg = (line.split() + [""])[:2]
        if cmd == "burn":                  # burn in the main thread
            burn(float(arg))
            print("done", flush=True)
        elif cmd == "burn-thread":         # burn in a new thread that then exits
            t = threading.Thread(target=burn, args=(float(arg),))
            t.start()
            t.join()
            print(f"done {t.native_id}", flush=True)
        elif cmd == "park-thread":         # burn in a new thread that stays alive until "release"
            burned, release = threading.Event(), threading.Event()
            def work():
                burn(float(arg))
                burned.set()
                release.wait()
            t = threading.Thread(target=work)
            t.start()
            burned.wait()
            parked.append((t, release))
            print(f"done {t.native_id}", flush=True)
        elif cmd == "release":
            t, release = parked.pop()
            release.set()
            t.join()
            print("done", flush=True)
""")


class Child:
    """A Python child driven line by line over stdin/stdout."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.pid = self.proc.pid
        assert self.proc.stdout.readline().strip() == "ready"
        self.wait_idle()

    def ask(self, command: str) -> str:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        assert answer and answer[0] == "done", f"child answered {answer!r} to {command!r}"
        self.wait_idle()
        return answer[1] if len(answer) > 1 else ""

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Block until no thread of the child is running, so the kernel's CPU counters are up to date
        (a running thread's counter is only brought up to date at a tick or a context switch)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = []
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                try:
                    with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except (FileNotFoundError, ProcessLookupError):    # the thread exited between listdir and read
                    continue
            if states and "R" not in states:
                return
            time.sleep(0.01)
        raise AssertionError(f"child {self.pid} did not go idle within {timeout} s")

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def child():
    c = Child()
    yield c
    c.close()


@pytest.fixture
def cgroup():
    try:
        cg = CgroupCpu(f"rpcprof-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    except OSError as e:
        pytest.skip(f"no cgroup CPU accounting here: {e}")
    yield cg
    cg.remove()
    assert not cg.path.exists(), f"cgroup {cg.path} was left behind"


def measured_s(monitor: ProcessMonitor, child: Child, command: str) -> float:
    before = monitor.mark()
    child.ask(command)
    return (monitor.mark() - before) / 1e9


def test_cpu_seconds_per_second_is_cores_used_on_average():
    assert cpu_seconds_per_second(2_000_000_000, 4.0) == 0.5
    assert cpu_seconds_per_second(3_000_000_000, 1.5) == 2.0
    assert cpu_seconds_per_second(0, 10.0) == 0.0


def test_cpu_seconds_per_second_of_an_empty_window_is_zero_not_an_error():
    assert cpu_seconds_per_second(1_000_000, 0.0) == 0.0


def test_thread_cpu_ns_lists_every_thread_of_a_process(child):
    assert set(thread_cpu_ns(child.pid)) == {child.pid}
    tid = int(child.ask("park-thread 0.01"))
    threads = thread_cpu_ns(child.pid)
    assert set(threads) == {child.pid, tid}
    assert all(isinstance(ns, int) and ns > 0 for ns in threads.values())
    child.ask("release")


def test_thread_cpu_ns_of_a_missing_process_is_empty():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()     # reaped: the pid no longer exists
    assert thread_cpu_ns(proc.pid) == {}


def test_thread_cpu_ns_grows_by_at_least_the_cpu_a_thread_burned(child):
    before = thread_cpu_ns(child.pid)[child.pid]
    child.ask(f"burn {BURN_S}")
    after = thread_cpu_ns(child.pid)[child.pid]
    assert BURN_S <= (after - before) / 1e9 < BURN_S + SLACK_S


def test_thread_cpu_ns_reports_a_live_second_thread_separately(child):
    tid = int(child.ask(f"park-thread {BURN_S}"))
    threads = thread_cpu_ns(child.pid)
    assert tid in threads and tid != child.pid
    assert BURN_S <= threads[tid] / 1e9 < BURN_S + SLACK_S
    child.ask("release")
    assert tid not in thread_cpu_ns(child.pid)


def test_schedstat_monitor_measures_cpu_burned_in_the_main_thread(child):
    monitor = ProcessMonitor(child.pid)
    try:
        assert monitor.method == "schedstat"
        assert BURN_S <= measured_s(monitor, child, f"burn {BURN_S}") < BURN_S + SLACK_S
    finally:
        monitor.stop()


def test_schedstat_monitor_keeps_the_cpu_of_a_thread_that_exited_after_a_poll(child):
    monitor = ProcessMonitor(child.pid, interval=3600)    # no background polls: only mark() polls
    try:
        before = monitor.mark()
        tid = int(child.ask(f"park-thread {BURN_S}"))
        monitor.mark()                                    # the thread is seen, with its CPU, while alive
        child.ask("release")                              # ... then exits
        assert tid not in thread_cpu_ns(child.pid)
        assert BURN_S <= (monitor.mark() - before) / 1e9 < BURN_S + SLACK_S
    finally:
        monitor.stop()


def test_monitor_marks_never_decrease(child):
    monitor = ProcessMonitor(child.pid, interval=0.01)
    try:
        marks = [monitor.mark()]
        for command in (f"park-thread {BURN_S / 3}", "release", f"burn {BURN_S / 3}"):
            child.ask(command)
            marks.append(monitor.mark())
        assert marks == sorted(marks)
    finally:
        monitor.stop()


def test_cgroup_monitor_measures_cpu_burned_in_the_main_thread(cgroup, child):
    cgroup.add(child.pid)
    monitor = ProcessMonitor(child.pid, cgroup)
    try:
        assert monitor.method == f"cgroup-v{cgroup.version}"
        assert BURN_S <= measured_s(monitor, child, f"burn {BURN_S}") < BURN_S + SLACK_S
    finally:
        monitor.stop()


def test_cgroup_monitor_counts_a_thread_that_exited_during_the_window(cgroup, child):
    cgroup.add(child.pid)
    monitor = ProcessMonitor(child.pid, cgroup, interval=3600)
    try:
        before = monitor.mark()
        tid = int(child.ask(f"burn-thread {BURN_S}"))     # started and exited between the two marks
        assert tid not in thread_cpu_ns(child.pid)
        assert BURN_S <= (monitor.mark() - before) / 1e9 < BURN_S + SLACK_S
    finally:
        monitor.stop()


def test_cgroup_counts_only_the_processes_added_to_it(cgroup, child):
    # The test process burns CPU outside the cgroup; the cgroup, holding only the idle child, must not see it.
    cgroup.add(child.pid)
    before = cgroup.read_ns()
    t0 = time.thread_time()
    while time.thread_time() - t0 < BURN_S:
        pass
    child.wait_idle()
    assert (cgroup.read_ns() - before) / 1e9 < SLACK_S


def test_cgroup_can_be_removed_once_its_process_has_exited(cgroup):
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    cgroup.add(proc.pid)
    assert str(proc.pid) in (cgroup.path / "cgroup.procs").read_text().split()
    proc.stdin.close()
    proc.wait()
    cgroup.remove()
    assert not cgroup.path.exists()


def test_rss_window_reports_the_memory_of_a_live_process(child):
    monitor = ProcessMonitor(child.pid, interval=0.01)
    try:
        monitor.start_window()
        child.ask(f"burn {BURN_S / 3}")
        memory, _ = monitor.stop_window()
    finally:
        monitor.stop()
    rss_kib = procstat.rss_bytes(child.pid)[0] / 1024
    assert memory["rss_samples"] >= 1
    assert 0 < memory["rss_avg_mib"] <= memory["rss_peak_mib"]
    # A small Python child: within a factor of 4 of what /proc says now.
    assert rss_kib / 1024 / 4 < memory["rss_avg_mib"] < rss_kib / 1024 * 4


def test_rss_of_a_missing_process_is_none():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert procstat.rss_bytes(proc.pid) is None


# ----- the driver's timed window (load.run_measured) ----------------------------------------------

# A driver that burns CPU in its start-up, its window and its teardown, and waits at each of its two
# window lines until the test, called back at that line, lets it go on (a FIFO): rpcprof's readings at the
# lines are taken while the driver waits, so the window holds exactly the work between them. It prints
# what it measured of itself on its last line: its CPU (process_time) and clock (monotonic) just before it
# printed each window line and when it went on past it, and its CPU at its end.
FAKE_DRIVER = textwrap.dedent("""
    import json, sys, time
    fifo = sys.argv[1]
    def burn(s):
        t = time.process_time()
        while time.process_time() - t < s:
            pass
    def line_then_wait(text):
        before = (time.process_time(), time.monotonic())
        print(text, flush=True)
        with open(fifo) as f:                        # until the test's callback has run
            f.read()
        return before, (time.process_time(), time.monotonic())
    burn(0.2)                                        # start-up: outside the window
    start = line_then_wait("Main benchmark duration is started for thread #0.")
    burn(0.1)                                        # the window
    end = line_then_wait("Main benchmark duration is over for thread #0. Stopping all clients.")
    burn(0.2)                                        # teardown: outside the window
    print(json.dumps({"start": start, "end": end, "cpu_at_exit": time.process_time()}))
    print("finished")
""")


def _go_on(fifo, events, name):
    def callback(pid):
        events.append((name, time.monotonic()))
        with open(fifo, "w") as f:                   # lets the driver go on past its line
            f.write("go")
    return callback


def test_driver_window_is_between_the_lines_it_prints_not_its_whole_life(tmp_path):
    """The figures cover what the driver did between its two window lines: its start-up's and teardown's
    CPU are left out, and the wall clock runs from the first line's callback to the second's."""
    import json
    from rpcprof.measure.load import H2load, run_measured
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    events = []
    code, wall, cpu = run_measured([sys.executable, "-c", FAKE_DRIVER, str(fifo)], tmp_path / "log",
                                   on_start=_go_on(fifo, events, "start"), on_end=_go_on(fifo, events, "end"),
                                   window=H2load.WINDOW)
    lines = (tmp_path / "log").read_text().splitlines()
    assert code == 0 and [e for e, _ in events] == ["start", "end"]
    assert lines[-1] == "finished"                                            # the log keeps every line
    own = json.loads(lines[-2])
    (_, _), (cpu_went_on, clock_went_on) = own["start"]
    (cpu_printed_end, clock_printed_end), (_, _) = own["end"]
    # the driver's CPU between going on past the first line and printing the second: the window's work,
    # as /proc's clock ticks count it (a tick either side)
    window_cpu = cpu_printed_end - cpu_went_on
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert abs(cpu - window_cpu) <= 2 * tick, (cpu, window_cpu)
    assert cpu < own["cpu_at_exit"] - window_cpu - 2 * tick                # neither start-up nor teardown in it
    # the wall clock is the callbacks': the first came before the driver went on, the second after it printed
    assert events[0][1] <= clock_went_on and events[1][1] >= clock_printed_end
    assert wall >= clock_printed_end - clock_went_on


def test_a_driver_that_never_prints_its_window_is_measured_over_its_life(tmp_path):
    """No window line (a driver that failed early): the figures cover its whole life, and the callbacks come
    at its start and its end."""
    from rpcprof.measure.load import H2load, run_measured
    events = []
    code, wall, cpu = run_measured(
        [sys.executable, "-c", "import time\nt0 = time.monotonic()\nt = time.process_time()\n"
                               "while time.process_time() - t < 0.1: pass\n"
                               "print(time.monotonic() - t0, time.process_time())"],
        tmp_path / "log", on_start=lambda pid: events.append("start"), on_end=lambda pid: events.append("end"),
        window=H2load.WINDOW)
    lived, cpu_at_exit = map(float, (tmp_path / "log").read_text().split())
    assert code == 0 and events == ["start", "end"]
    assert wall >= lived                  # from before it started to after it exited
    assert cpu >= cpu_at_exit - 1e-3      # all of its CPU (the kernel's count at its exit), interpreter start-up too


def test_process_cpu_ns_counts_threads_that_have_exited(child):
    from rpcprof.measure.procstat import process_cpu_ns
    before = process_cpu_ns(child.pid)
    child.ask(f"burn-thread {BURN_S}")       # a second thread burns, then exits
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    assert BURN_S * 1e9 - 2 * tick <= process_cpu_ns(child.pid) - before < (BURN_S + SLACK_S) * 1e9
    assert process_cpu_ns(999_999_999) == 0
