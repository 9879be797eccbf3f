"""The ruler's check on a run of rounds: its shares pool every round's samples, so the ratios it is held
against are the run's own, over every round's pairs (the ratio line's figure), not one round's."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

RUN = ROOT / "docs" / "data" / "20261124-073646-rust_tonic_mt-rust_pajamax"


def report(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(ROOT / "report.py"), *args, "--format", "json"], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_rulers_ratios_are_the_runs_paired_ones():
    from rpcprof.analyze.intervals import profiled_ratio
    from rpcprof.rundir import load_run
    ruler = next(r for r in report("compare", str(RUN))["ruler"] if r["base"])
    run = report("run", str(RUN))
    printed = next(r for r in run["rows"] if r["server"] == "rust_pajamax")["ratio_interval"]["ratio"]
    _, metrics = load_run(RUN)
    paired = profiled_ratio(metrics["rust_tonic_mt"], metrics["rust_pajamax"])
    assert ruler["measured_ratio"] == pytest.approx(printed)
    assert ruler["profiled_ratio"] == pytest.approx(paired.ratio)
    # the first round's figure, which the check used before, is another number on this run
    first = metrics["rust_tonic_mt"]["profile"]["cpu_us_per_req_profiled"] / \
        metrics["rust_pajamax"]["profile"]["cpu_us_per_req_profiled"]
    assert abs(first / paired.ratio - 1) > 0.02
