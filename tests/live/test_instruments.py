"""The cheap instruments, on real processes: the /proc counters every window reads, and perf sampling
whole CPUs with only the server's samples kept (no per-thread timer to re-arm at each context switch)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from rpcprof.measure.threads import ProcWindow, per_request

WRITER = ("import os, sys, time\n"
          "fd = os.open('/dev/null', os.O_WRONLY)\n"
          "sys.stdin.readline()\n"
          "for _ in range(300):\n"
          "    os.write(fd, b'xy')\n"
          "    time.sleep(0.001)\n"
          "print('done', flush=True)\n"
          "sys.stdin.readline()\n")


def test_proc_counters_count_what_the_process_did_between_the_marks():
    proc = subprocess.Popen([sys.executable, "-c", WRITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)                      # the interpreter's own start-up is before the window
        window = ProcWindow(proc.pid)
        window.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
        counts = window.counts()
    finally:
        proc.kill()
        proc.wait()
    assert 300 <= counts["vfs_writes"] <= 310          # the 300 writes, and the 'done' line
    assert counts["wchar"] >= 600
    assert counts["voluntary_switches"] >= 250         # each sleep blocks (a few may be served by a spin)
    assert counts["context_switches"] == counts["voluntary_switches"] + counts["involuntary_switches"]
    assert per_request(counts, 300)["vfs_writes"] == pytest.approx(counts["vfs_writes"] / 300)


@pytest.mark.skipif(not shutil.which("perf") or not shutil.which("inferno-collapse-perf"), reason="needs perf, inferno")
def test_a_recording_of_a_whole_cpu_keeps_only_the_servers_samples(tmp_path):
    from rpcprof.capture.fold import fold_perf
    from rpcprof.capture.profiler import pmu_event, start_perf
    spin = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"
    target = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", spin])
    # a shell spinning without forking (a `date` per turn made thousands of processes, whose mmaps took perf
    # script up to 19 s to read); killed below, like the target
    other = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    try:
        recorder = start_perf(target.pid, tmp_path, 499, "fp", pmu_event(), cpus=[0])
        recorder.wait_attached()
        time.sleep(2.0)
        recorder.stop()
    finally:
        for p in (target, other):
            p.kill()
            p.wait()
    assert "-a" in recorder.argv and "-C" in recorder.argv and "-p" not in recorder.argv
    every = fold_perf(tmp_path / "perf.data", tmp_path / "all.folded")
    kept = fold_perf(tmp_path / "perf.data", tmp_path / "kept.folded", pid=target.pid)
    roots = lambda f: {line.split(";", 1)[0] for line in f.read_text().splitlines() if line}   # noqa: E731
    assert roots(tmp_path / "kept.folded") <= {"python", "python3", "python3.11", "taskset"}, roots(tmp_path / "kept.folded")
    assert any(r.startswith("sh") for r in roots(tmp_path / "all.folded"))
    assert 0 < kept["samples"] < every["samples"]
    # kept compressed (perf record -z), and folded from that as it is
    header = subprocess.run(["perf", "report", "--header-only", "-i", str(tmp_path / "perf.data")],
                            capture_output=True, text=True).stdout
    assert "# compressed : Zstd" in header


BATCHES = ("import os, sys\n"
           "fd = os.open('/dev/null', os.O_WRONLY)\n"
           "for n in (100, 200, 400):\n"
           "    sys.stdin.readline()\n"
           "    for _ in range(n):\n"
           "        os.write(fd, b'x')\n"
           "    print('done', flush=True)\n"
           "sys.stdin.readline()\n")


@pytest.mark.skipif(not shutil.which("perf"), reason="needs perf")
def test_the_counter_counts_from_its_enable_to_its_disable_only(tmp_path):
    """perf stat starts disabled and counts once it acknowledges `enable`; after interrupt() (disable, then
    the signal) nothing more is counted, though perf takes its time to exit."""
    from rpcprof.measure.syscalls import parse_perf_stat_csv, start_count

    proc = subprocess.Popen([sys.executable, "-c", BATCHES], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def batch():
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"

    counter = None
    try:
        counter = start_count(proc.pid, tmp_path)
        batch()                                  # 100 writes before the counter is enabled
        counter.wait_attached()
        batch()                                  # 200 writes (and the 'done' line) while it counts
        counter.interrupt()
        batch()                                  # 400 writes after it was told to stop
        code = counter.stop()
    finally:
        proc.kill()
        proc.wait()
    assert "-D" in counter.argv and "--control" in counter.argv
    assert code is not None and not counter.control.folder.exists()      # its fifos are gone with it
    counts = parse_perf_stat_csv((tmp_path / "syscalls.csv").read_text())
    assert 200 <= counts["by_syscall"].get("write", 0) <= 202, counts
