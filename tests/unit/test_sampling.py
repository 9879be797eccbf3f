"""What py-spy's log says of its sampling (capture/profiler.pyspy_sampling), on logs py-spy wrote here
(tests/data/pyspy/README.md): the stacks it kept, the ticks it failed to read, how far it fell behind.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from rpcprof.capture.profiler import pyspy_sampling

DATA = Path(__file__).parents[1] / "data" / "pyspy"


def test_a_window_that_kept_up_gives_its_counts_and_no_warning(capsys):
    record = pyspy_sampling("grpcio", 1101, 10.0, DATA / "grpcio.log")
    assert record["pyspy_kept"] == 5356 and record["pyspy_errors"] == 383
    assert record["pyspy_behind_s"] == 0.0
    assert record["pyspy_error_share"] == pytest.approx(383 / 11010)
    assert capsys.readouterr().err == ""


def test_a_sampler_that_fell_behind_is_said_with_its_largest_delay(capsys):
    record = pyspy_sampling("spinner", 20000, 6.0, DATA / "behind.log")
    assert record["pyspy_behind_s"] == pytest.approx(4.07)
    assert record["pyspy_kept"] == 28302 and record["pyspy_errors"] == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "py-spy fell up to 4.07 s behind its 20000 Hz" in err and "lower --frequency" in err


def test_many_unreadable_ticks_are_warned(capsys, tmp_path):
    log = tmp_path / "py-spy.log"
    log.write_text((DATA / "grpcio.log").read_text().replace("Errors: 383", "Errors: 2000"))
    record = pyspy_sampling("grpcio", 1101, 10.0, log)
    assert record["pyspy_error_share"] == pytest.approx(2000 / 11010)
    assert "could not read the stacks at 18 % of its ticks" in capsys.readouterr().err


def test_no_log_is_no_figure():
    assert pyspy_sampling("x", 100, 1.0, DATA / "missing.log") == {}
