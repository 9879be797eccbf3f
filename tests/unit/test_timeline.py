"""A measured window over time (analyze/timeline.py): CPU per request in slices from the monitor's CPU
samples and the driver's start times; h2load's log read into start-time buckets."""
from __future__ import annotations

from collections import Counter

import pytest

from rpcprof.analyze.stats import LatencyHistogram
from rpcprof.analyze.timeline import timeline
from rpcprof.measure.load import read_h2load_latency_log

T0 = 1_790_000_000.0          # a wall clock, in seconds since the epoch


def test_each_slice_is_its_cpu_over_the_requests_that_started_in_it():
    # CPU 1 ms per 0.1 s for the first second, 3 ms per 0.1 s after; 100 requests every 0.1 s
    series, cpu = [], 0
    for k in range(21):
        series.append((T0 + 0.1 * k, cpu))
        cpu += 1_000_000 if k < 10 else 3_000_000
    starts = {int(T0 * 10) + k: 100 for k in range(20)}
    t = timeline(series, starts)
    assert t["t_s"] == [0.0, 0.5, 1.0, 1.5]
    assert t["req_per_s"] == [1000.0] * 4
    assert t["cpu_us_per_req"] == pytest.approx([10.0, 10.0, 30.0, 30.0])
    assert t["server_cpu_cores"] == pytest.approx([0.01, 0.01, 0.03, 0.03])


def test_a_slice_with_no_request_has_no_cpu_per_request_and_nothing_is_invented():
    series = [(T0, 0), (T0 + 0.5, 5_000_000), (T0 + 1.0, 6_000_000)]
    t = timeline(series, {int(T0 * 10) + 7: 10})
    assert t["cpu_us_per_req"] == [None, pytest.approx(100.0)]
    assert timeline(series[:1], {1: 1}) is None and timeline(series, {}) is None


def test_h2loads_log_gives_latencies_and_start_buckets(tmp_path):
    start = 1_790_000_000_123_456          # µs since the epoch
    lines = [f"{start + i * 50_000}\t200\t{1000 + i}" for i in range(6)] + [f"{start}\t503\t99"]
    log = tmp_path / "load.latency.tsv"
    log.write_text("\n".join(lines) + "\n")
    hist, starts = LatencyHistogram(), Counter()
    read_h2load_latency_log(log, hist, starts)
    assert hist.n == 6
    assert dict(starts) == {17_900_000_001: 2, 17_900_000_002: 2, 17_900_000_003: 2}


def test_ghzs_call_times_give_start_buckets_in_utc():
    from rpcprof.measure.load import ghz_start_buckets
    stamps = Counter({"2026-11-26T01:43:12.2": 5, "2026-11-26T01:43:12.3": 2, "": 1})
    # 2026-11-26T01:43:12.2 UTC is 1,795,657,392.2 s after the epoch
    assert ghz_start_buckets(stamps) == {17_956_573_922: 5, 17_956_573_923: 2}
