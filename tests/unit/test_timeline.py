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
    starts = {int(T0 * 100) + k: 10 for k in range(200)}
    t = timeline(series, starts)
    assert t["t_s"] == [0.0, 0.5, 1.0, 1.5]
    assert t["req_per_s"] == [1000.0] * 4
    assert t["cpu_us_per_req"] == pytest.approx([10.0, 10.0, 30.0, 30.0])
    assert t["server_cpu_cores"] == pytest.approx([0.01, 0.01, 0.03, 0.03])


def test_a_slice_with_no_request_has_no_cpu_per_request_and_nothing_is_invented():
    series = [(T0, 0), (T0 + 0.5, 5_000_000), (T0 + 1.0, 6_000_000)]
    t = timeline(series, {int(T0 * 100) + 70: 10})
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
    assert dict(starts) == {179_000_000_012: 1, 179_000_000_017: 1, 179_000_000_022: 1, 179_000_000_027: 1,
                            179_000_000_032: 1, 179_000_000_037: 1}


def test_ghzs_call_times_give_start_buckets_in_utc():
    from rpcprof.measure.load import ghz_start_buckets
    stamps = Counter({"2026-11-26T01:43:12.29": 5, "2026-11-26T01:43:12.30": 2, "": 1})
    # 2026-11-26T01:43:12.29 UTC is 1,795,657,392.29 s after the epoch
    assert ghz_start_buckets(stamps) == {179_565_739_229: 5, 179_565_739_230: 2}


def test_a_window_cut_mid_bucket_gives_every_slice_its_own_requests_and_stops_before_those_cut_in_flight():
    """A steady window that starts and ends inside a bucket: the slices begin on the first whole bucket, so no
    slice counts part of a bucket against its CPU, and they stop the longest latency before the end."""
    begin, end = T0 + 0.1037, T0 + 3.1037      # 3 s, 1 ms of CPU and 10 requests per 10 ms throughout
    series = [(begin + 0.1 * k, 10_000_000 * k) for k in range(31)]
    assert series[-1][0] == pytest.approx(end)
    starts = Counter()
    for j in range(3000):                       # a request every ms from the window's start
        starts[int((begin + j / 1000) * 100)] += 1
    t = timeline(series, dict(starts))
    assert t["cpu_us_per_req"] == pytest.approx([100.0] * 5)       # 3 s less the first partial bucket: 5 slices
    assert t["req_per_s"] == [1000.0] * 5
    assert len(timeline(series, dict(starts), tail_s=0.2)["t_s"]) == 5
    assert len(timeline(series, dict(starts), tail_s=0.6)["t_s"]) == 4
    # after a lead: from that long after the start, each slice still its own requests
    led = timeline(series, dict(starts), tail_s=0.2, head_s=0.2)
    assert led["cpu_us_per_req"] == pytest.approx([100.0] * 5) and len(timeline(series, dict(starts), 0.3, 0.3)["t_s"]) == 4
