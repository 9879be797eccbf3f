"""The progress bar (rpcprof/progress.py): drawn with the time left on a terminal, never off one nor with
JSON; the job's lines printed once each, above it."""
from __future__ import annotations

import io
import sys

import pytest

from rpcprof import progress
from rpcprof.progress import bar_allowed, log, progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def allowed():
    bar_allowed(True)
    yield
    bar_allowed(True)


def test_on_a_terminal_a_bar_counts_the_steps_with_the_time_left_and_the_lines_print_above_it(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress_bar(3, "measurements") as bar:
        for k in range(3):
            log(f"rpcprof: step {k}")
            bar.update(1)
    out = term.getvalue()
    assert bar.n == 3 and "/3 measurements" in out and "left" in out
    assert all(out.count(f"rpcprof: step {k}\n") == 1 for k in range(3))
    assert progress._bar is None


def test_off_a_terminal_or_with_json_the_lines_are_all_there_is(monkeypatch):
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    with progress_bar(2, "measurements") as bar:
        log("rpcprof: a line")
        bar.update(1)
    assert plain.getvalue() == "rpcprof: a line\n"
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    bar_allowed(False)
    with progress_bar(2, "measurements") as bar:
        log("rpcprof: a line")
        bar.update(1)
    assert term.getvalue() == "rpcprof: a line\n"


def test_one_bar_at_a_time_a_sweeps_cells_draw_none_of_their_own(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress_bar(2, "cells") as outer:
        with progress_bar(5, "measurements") as inner:
            inner.update(1)
        outer.update(1)
    assert "measurements" not in term.getvalue() and "cells" in term.getvalue()


def test_a_runs_rounds_step_the_bar_once_per_measurement(monkeypatch):
    from test_rounds import FakeRun, opts
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    run = FakeRun(opts(rounds=2), {"rust_tonic_mt": [100.0], "rust_pajamax": [1000.0]})
    run.rounds()
    assert "0/4 measurements" in term.getvalue()           # two rounds of two servers
