"""Ground truth for attribution: the calibration server burns a configured CPU time per request in
`calibration_burn_cpu`; rpcprof must report that cost back as app µs per request.

Real server, real perf, real load. The burn loop overshoots its target by 1-5 µs per call (it reads
the thread CPU clock a few times per call, each a syscall in a VM, whose cost drifts with the machine),
so the truth a profile is checked against is the burn the server measured: it prints the thread CPU per
call its burns took when it exits (server.log), e.g. 53.0 µs for a 50 µs setting.

The profile's shares are multiplied by its own window's CPU per request: the attribution under test is
the profile's, and this server at C=1 S=100 is unsaturated, so its batching, and with it the non-app
CPU per request, drifts between windows (a CI run: 73.7 µs/req measured, 69.3 while profiled, at +10 %
req/s), while the burn per call does not.
"""
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import category_shares

ROOT = Path(__file__).resolve().parents[2]
BURNS = (50, 200)


@pytest.fixture(scope="module")
def calibration_runs(tmp_path_factory):
    """One run per burn setting: its metrics for the calibration server."""
    runs = {}
    runs_dir = tmp_path_factory.mktemp("runs")
    for burn in BURNS:
        label = f"pytest-calibration-{burn}"
        proc = subprocess.run(
            [str(ROOT / "profile.sh"), "run", "calibration", "--param", f"burn_us={burn}", "-d", "4", "-w", "1",
             "--profile-duration", "5", "--no-off-cpu", "--repeat", "1", "--port", "50551", "--label", label, "--format", "json",
             "--runs-dir", str(runs_dir)],
            capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
        run_dir = next(runs_dir.glob(f"*-{label}"))
        m = json.loads((run_dir / "metrics.json").read_text())["calibration"]
        log = (run_dir / "calibration" / "server.log").read_text()
        measured = float(re.search(r"measured thread CPU per call ([\d.]+) us", log).group(1))
        runs[burn] = (run_dir, m, category_shares(run_dir, "calibration"), measured)
    yield runs


@pytest.mark.parametrize("burn", BURNS)
def test_the_server_burns_what_it_is_told(calibration_runs, burn):
    """Its own measure of each burn: at least the setting, overshooting by a few µs at most."""
    *_, measured = calibration_runs[burn]
    assert burn <= measured <= burn + 8


@pytest.mark.parametrize("burn", BURNS)
def test_app_cost_per_request_matches_the_configured_burn(calibration_runs, burn):
    run_dir, m, shares, measured = calibration_runs[burn]
    app_us = shares["app"] * m["profile"]["cpu_us_per_req_profiled"]
    assert app_us == pytest.approx(measured, rel=0.10), (
        f"app {app_us:.1f} µs/req for a burn the server measured at {measured:.1f} µs ({burn} asked; {run_dir})")


@pytest.mark.parametrize("burn", BURNS)
def test_app_share_is_the_burn_over_the_whole_request(calibration_runs, burn):
    _, m, shares, measured = calibration_runs[burn]
    expected_share = measured / m["profile"]["cpu_us_per_req_profiled"]
    assert shares["app"] == pytest.approx(expected_share, rel=0.10)
    assert shares["other"] < 0.03


def test_compare_reports_the_same_app_cost(calibration_runs):
    run_dir, m, shares, _ = calibration_runs[BURNS[-1]]
    out = subprocess.run([str(ROOT / "report.py"), "compare", str(run_dir), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    rows = {r["category"]: r for r in json.loads(out)["rows"]}
    assert rows["app"]["calibration_us"] == pytest.approx(shares["app"] * m["cpu_us_per_req"])
    assert sum(rows[c]["calibration_us"] for c in rows if c != "total") == pytest.approx(rows["total"]["calibration_us"])
