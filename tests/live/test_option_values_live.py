"""A window too short for the figures printed from it fails that server in one line instead of printing
them: a real server (values refused before anything starts: tests/unit/test_option_values.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def too_short(module_profile):
    from conftest import take_port
    # the calibration server burning 2 ms of CPU per request serves ~500 req/s: a 0.4 s window counts
    # about 200 requests, with the 100 in flight at its end far above the 25 % limit, however fast the machine
    return module_profile.run("run", "calibration", "--param", "burn_us=2000", "--no-profile", "--no-syscalls",
                              "-w", "0", "-d", "0.4", "-S", "100", "--port", str(take_port()), "--label", "pytest-too-short")


def test_a_window_too_short_for_cpu_per_request_fails_the_server_in_one_line(too_short):
    assert too_short.returncode == 1, too_short.stderr
    failed = [line for line in too_short.stderr.splitlines() if line.startswith("rpcprof: FAILED")]
    assert len(failed) == 1 and "too short" in failed[0] and "lengthen -d" in failed[0], too_short.stderr
    metrics = json.loads((too_short.run_dir / "metrics.json").read_text())
    assert metrics["calibration"]["status"] == "failed"
    assert json.loads((too_short.run_dir / "manifest.json").read_text())["status"] == "failed"


def test_the_last_line_of_a_failed_run_names_the_real_server_log(too_short):
    last = too_short.stderr.strip().splitlines()[-1]
    assert last.startswith("profile.sh: error: calibration failed; see "), last
    named = Path(last.rsplit("see ", 1)[1])
    assert "<" not in str(named) and named == too_short.run_dir / "calibration" / "server.log"
    assert named.is_file()


def test_the_sampling_rate_perf_used_is_recorded_beside_the_one_asked_and_a_lower_one_warned(tmp_path, capsys):
    """perf lowers -F to kernel.perf_event_max_sample_rate: the record says so instead of the rate asked."""
    import subprocess
    from rpcprof.capture.profiler import max_sample_rate
    from rpcprof.capture.profiler import sampling_rate_used
    asked = 2 * max_sample_rate()
    data = tmp_path / "perf.data"
    with subprocess.Popen(["sleep", "1"]) as sleeper:
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(asked), "-p", str(sleeper.pid),
                        "-o", str(data)], capture_output=True, check=True)
    record = sampling_rate_used("sleeper", asked, data)
    assert record == {"frequency_used_hz": max_sample_rate(), "max_sample_rate": max_sample_rate()}
    warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and f"asked perf for {asked} Hz; it used {max_sample_rate()} Hz" in warnings[0]
