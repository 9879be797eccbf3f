"""bench/halt_steal's bad input: one line naming the problem and the fix, a non-zero exit, before anything is measured."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, line", [
    (["--sleeps-us", "200,soon"], "bench/halt_steal: --sleeps-us must be numbers separated by commas (got '200,soon')"),
    (["--seconds", "0"], "bench/halt_steal: --seconds, --rounds and each of --sleeps-us must be positive"),
    (["--cpu", str(os.cpu_count() + 7)],
     f"bench/halt_steal: no CPU {os.cpu_count() + 7} in /proc/stat: pass --cpu with one of 0-{os.cpu_count() - 1}"),
], ids=["a sleep not a number", "no time", "a CPU it does not have"])
def test_halt_steal_refuses_bad_input_in_one_line(args, line):
    p = subprocess.run([str(ROOT / "bench" / "halt_steal"), *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [line]
