"""The first run on a fresh machine: tracefs is not mounted until something mounts it (perf does, on
first use), so tracepoints planned from /sys/kernel/tracing/events before that are all missing, and the
first server of the first run got no syscall names (every call counted as `other`, 0 writes per request).

Reproduced in a private mount namespace (unshare -m) with tracefs and debugfs unmounted there: the
syscall counter must still name the syscalls and count a writer's writes.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""
    import subprocess, sys, time
    from pathlib import Path
    out = Path(sys.argv[1])
    print("events-before", Path("/sys/kernel/tracing/events").exists(), Path("/sys/kernel/debug/tracing/events").exists())
    sys.path.insert(0, sys.argv[2])
    from rpcprof.measure import syscalls
    writer = subprocess.Popen([sys.executable, "-c",
        "import os, time\\nend = time.time() + 20\\nwhile time.time() < end:\\n    os.write(1, b'x')\\n    time.sleep(0.0005)"],
        stdout=subprocess.DEVNULL)
    try:
        counter = syscalls.start_count(writer.pid, out, "syscalls")
        counter.wait_attached()
        time.sleep(1.0)
        counter.stop()
    finally:
        writer.kill()
    counts = syscalls.parse_perf_stat_csv((out / "syscalls.csv").read_text())
    per = syscalls.per_request(counts, 1)
    print("names", sorted(counts["by_syscall"]))
    print("writes", counts["by_syscall"].get("write", 0), per["writes_per_req"])
""")


@pytest.mark.skipif(not shutil.which("unshare") or not shutil.which("perf"), reason="needs unshare and perf")
def test_syscall_counts_are_named_when_tracefs_is_not_mounted_yet(tmp_path):
    unmount = ("umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; "
               "umount /sys/kernel/debug 2>/dev/null; ")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           unmount + 'exec "$0" - "$1" "$2"', sys.executable, str(tmp_path), str(ROOT / "tools")],
                          input=PROBE, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    # the namespace really starts as a fresh machine does: no tracepoint listed anywhere
    assert lines["events-before"] == "False False", proc.stdout
    assert "write" in lines["names"], proc.stdout
    writes, per_req = lines["writes"].split()
    assert int(writes) > 100, proc.stdout          # ~2,000 writes a second for a second
    assert float(per_req) == int(writes)
