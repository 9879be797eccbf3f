"""Rounds without servers: Run.rounds drives a stand-in measure() with known figures, so the order of
measurements, the precision stop rule and the time budget are checked exactly."""
from __future__ import annotations

import itertools
import math

import pytest

from rpcprof.analyze.intervals import pilot_of, rounds_needed, server_ratio
from rpcprof.jobs.run import Run, RunOptions
from rpcprof.records import ServerResult
from rpcprof.status import Status


class FakeRun(Run):
    """A Run whose measure() returns figures from a table instead of starting servers."""

    def __init__(self, opts, rpc: dict[str, list[float]]):
        super().__init__(opts, ["profile.sh", "run"])
        self.rpc = rpc
        self.order: list[tuple[str, int]] = []
        self.written = 0

    def measure(self, spec, k=1):
        self.order.append((spec.name, k))
        values = self.rpc[spec.name]
        v = values[(k - 1) % len(values)]
        return ServerResult(spec.name, Status.OK, k, started=f"round {k:03d} {spec.name}", figures={
            "req_per_cpu_s": v, "cpu_us_per_req": 1e6 / v, "req_per_s": v, "server_cpu_cores": 1.0,
            "client_cpu_share": 0.5, "latency": {"p99_ms": 1, "avg_ms": 1}})

    def write(self, status):
        self.written += 1


def opts(**kw):
    return RunOptions(servers=["rust_tonic_mt", "rust_pajamax"], profile=False, syscalls=False, **kw)


def test_rounds_interleave_the_servers():
    run = FakeRun(opts(rounds=3), {"rust_tonic_mt": [100.0], "rust_pajamax": [1000.0]})
    run.rounds()
    assert run.order == [("rust_tonic_mt", 1), ("rust_pajamax", 1), ("rust_tonic_mt", 2), ("rust_pajamax", 2),
                         ("rust_tonic_mt", 3), ("rust_pajamax", 3)]


@pytest.mark.slow
def test_precision_measures_the_rounds_the_pilot_asks_for():
    # the pilot's spread sets the rounds (Stein's second stage), whatever the rounds after it show
    tonic = [100, 104, 96] + [100] * 30
    run = FakeRun(opts(precision=0.05, rounds=3), {"rust_tonic_mt": tonic, "rust_pajamax": [1000] * 33})
    run.rounds()
    rounds = max(k for _, k in run.order)
    logs = [math.log(1000 / v) for v in tonic[:3]]
    assert rounds == rounds_needed([logs], 0.05) > 3 and "two-stage rule" in run.stopped_by
    assert run.order[-2:] == [("rust_tonic_mt", rounds), ("rust_pajamax", rounds)]
    manifest = {"repeat": 3, "precision": 0.05}
    interval = server_ratio(run.results["rust_tonic_mt"].to_json(), run.results["rust_pajamax"].to_json(),
                            pilot=pilot_of(manifest))
    assert interval.n == rounds and interval.half_width <= 0.05


def test_precision_with_a_steady_pilot_stops_after_it():
    run = FakeRun(opts(precision=0.05, rounds=3), {"rust_tonic_mt": [100.0], "rust_pajamax": [1000.0]})
    run.rounds()
    assert max(k for _, k in run.order) == 3


def test_precision_stops_at_the_time_budget(monkeypatch):
    clock = itertools.count(0, 50)                      # every call to the clock: 50 s later
    monkeypatch.setattr("rpcprof.jobs.run.time.monotonic", lambda: next(clock))
    run = FakeRun(opts(precision=0.001, max_time=400), {"rust_tonic_mt": [100, 130, 70], "rust_pajamax": [1000]})
    run.rounds()
    assert "time budget" in run.stopped_by
    assert max(k for _, k in run.order) < 6


def test_precision_needs_two_servers():
    from rpcprof.errors import UserError
    with pytest.raises(UserError, match="two servers"):
        Run(RunOptions(servers=["rust_tonic_mt"], precision=0.05, profile=False), ["x"])
