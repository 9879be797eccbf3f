"""Values are checked for meaning, not only type: a duration that is NaN, infinite, negative or 0, a
request count of 0, a port that does not exist, a server named twice, a label that cannot name a folder
are each refused before anything starts, in one line naming the option; a window too short for the
figures printed from it fails that server in one line instead of printing them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import invoke
from rpcprof.cli import profile as profile_cli

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
