"""bench/instrument_cost's bad input: one line naming the problem and the fix, a non-zero exit, before
anything is built or measured."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "instrument_cost"


@pytest.mark.parametrize("args, words", [
    (["-g", "dwarf,nosuch"], ["unknown call graph 'nosuch'", "dwarf"]),
    (["-n", "1"], ["-n 2 or more"]),
])
def test_bad_options_get_one_line(args, words):
    p = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench/instrument_cost: ")
    assert all(w in lines[0] for w in words)


def test_a_folder_that_is_no_run_gets_one_line(tmp_path):
    p = subprocess.run([str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [f"bench/instrument_cost: {tmp_path}: no SERVER/result.json there: give "
                                             "a run folder (flamegraphs/... or docs/data/...)"]
