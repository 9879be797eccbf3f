"""Values are checked for meaning, not only type: a duration that is NaN, infinite, negative or 0, a
request count of 0, a port that does not exist, a server named twice, a label that cannot name a folder
are each refused before anything starts, in one line naming the option; a window too short for the
figures printed from it fails that server in one line instead of printing them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rpcprof.cli import profile as profile_cli
from test_cli import invoke

RUN_VALUES = {
    "a NaN window": (["-d", "nan"], "--duration"),
    "an infinite window": (["-d", "inf"], "--duration"),
    "a negative window": (["-d", "-1"], "--duration"),
    "a zero window": (["-d", "0"], "--duration"),
    "a NaN warm-up": (["-w", "nan"], "--warmup"),
    "an infinite warm-up": (["-w", "inf"], "--warmup"),
    "a negative warm-up": (["-w", "-2"], "--warmup"),
    "a NaN profile window": (["--profile-duration", "nan"], "--profile-duration"),
    "an infinite syscall window": (["--syscall-duration", "inf"], "--syscall-duration"),
    "a zero sampling rate": (["-F", "0"], "--frequency"),
    "a NaN time budget": (["--max-time", "nan"], "--max-time"),
    "a negative sample minimum": (["--min-samples", "-5"], "--min-samples"),
    "a label with a slash": (["--label", "a/b"], "--label"),
    "a label too long for a file name": (["--label", "x" * 101], "--label"),
    "a label of multi-byte letters too long": (["--label", "é" * 51], "--label"),
}


@pytest.fixture
def runs(tmp_path):
    path = tmp_path / "runs"
    path.mkdir()
    return path


def assert_refused(r, option: str, runs: Path) -> None:
    assert r.code == 2 and "Traceback" not in r.err, r.err
    assert len(r.error_lines) == 1 and option in r.error_lines[0], r.err
    assert list(runs.iterdir()) == [], "a folder was made for a command line that was refused"


@pytest.mark.parametrize("args, option", list(RUN_VALUES.values()), ids=list(RUN_VALUES))
def test_run_refuses_a_value_without_meaning_in_one_line(runs, args, option):
    assert_refused(invoke(profile_cli.entry, "run", "rust_tonic_st", *args, "--runs-dir", str(runs)), option, runs)


@pytest.mark.parametrize("args, option", [
    (["-d", "nan"], "--duration"),
    (["-w", "-1"], "--warmup"),
    (["--label", "../up"], "--label"),
], ids=["NaN window", "negative warm-up", "label with a slash"])
def test_sweep_refuses_a_value_without_meaning_in_one_line(runs, args, option):
    assert_refused(invoke(profile_cli.entry, "sweep", "rust_tonic_st", "-C", "1", "-S", "1", *args,
                          "--runs-dir", str(runs)), option, runs)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_server_named_twice_is_refused(runs, command):
    r = invoke(profile_cli.entry, command, "rust_tonic_st", "rust_pajamax", "rust_tonic_st", "--runs-dir", str(runs))
    assert_refused(r, "'rust_tonic_st' is named twice", runs)


ATTACH_VALUES = {
    "zero requests": (["--requests", "0"], "--requests"),
    "negative requests": (["--requests", "-5"], "--requests"),
    "a zero rate": (["--rps", "0"], "--rps"),
    "a NaN rate": (["--rps", "nan"], "--rps"),
    "an infinite rate": (["--rps", "inf"], "--rps"),
    "a port above 65535": (["--target", "127.0.0.1:70000"], "port 70000"),
    "a port above 65535 that wraps to 50051": (["--target", "127.0.0.1:115587"], "port 115587"),
    "port 0": (["--target", "127.0.0.1:0"], "port 0"),
    "a NaN window": (["-d", "nan"], "--duration"),
    "a NaN warm-up": (["-w", "nan"], "--warmup"),
    "a name with a slash": (["--name", "../x"], "--name"),
}


@pytest.mark.parametrize("args, option", list(ATTACH_VALUES.values()), ids=list(ATTACH_VALUES))
def test_attach_refuses_a_value_without_meaning_in_one_line(runs, args, option):
    r = invoke(profile_cli.entry, "attach", "--pid", str(os.getpid()), *args, "--runs-dir", str(runs))
    assert_refused(r, option, runs)


# ----- a window too short for its figures: real runs --------------------------------------------------

@pytest.fixture(scope="module")
def too_short(module_profile):
    from conftest import take_port
    # the calibration server burning 2 ms of CPU per request serves ~500 req/s: a 0.4 s window counts
    # about 200 requests, with the 100 in flight at its end far above the 25 % limit, however fast the machine
    return module_profile.run("run", "calibration", "--param", "burn_us=2000", "--no-profile", "--no-syscalls",
                              "-w", "0", "-d", "0.4", "--port", str(take_port()), "--label", "pytest-too-short")


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
    from rpcprof.capture.window import sampling_rate_used
    asked = 2 * max_sample_rate()
    data = tmp_path / "perf.data"
    with subprocess.Popen(["sleep", "1"]) as sleeper:
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(asked), "-p", str(sleeper.pid),
                        "-o", str(data)], capture_output=True, check=True)
    record = sampling_rate_used("sleeper", asked, data)
    assert record == {"frequency_used_hz": max_sample_rate(), "max_sample_rate": max_sample_rate()}
    warnings = [line for line in capsys.readouterr().err.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and f"asked perf for {asked} Hz; it used {max_sample_rate()} Hz" in warnings[0]
