"""measure/load.py's reading of h2load's --log-file (start µs, HTTP status, duration µs per request), on a
real log of 2,000 requests to rust_tonic_mt (h2load -c1 -m10 -n 2000 --log-file), and on damaged lines."""
import gzip
from collections import Counter
from pathlib import Path

from rpcprof.analyze.stats import LatencyHistogram
from rpcprof.measure.load import read_h2load_latency_log

REAL = Path(__file__).resolve().parents[1] / "data" / "h2load" / "tonic-mt-2000.latency.tsv.gz"


def by_line(data: bytes) -> Counter:
    """The plain reading: each line split on tabs, 2xx statuses only."""
    counts = Counter()
    for line in data.splitlines():
        parts = line.split(b"\t")
        if len(parts) >= 3 and parts[1].startswith(b"2") and parts[2].strip().isdigit():
            counts[int(parts[2])] += 1
    return counts


def read(tmp_path, data: bytes) -> LatencyHistogram:
    path = tmp_path / "latency.tsv"
    path.write_bytes(data)
    hist = LatencyHistogram()
    read_h2load_latency_log(path, hist)
    return hist


def test_a_real_log_gives_every_request_its_duration(tmp_path):
    data = gzip.decompress(REAL.read_bytes())
    hist = read(tmp_path, data)
    assert hist.n == 2000 == sum(hist.counts.values())
    assert hist.counts == by_line(data)
    assert 0 < hist.percentile(50) <= hist.percentile(99)


def test_other_statuses_and_a_cut_last_line_are_left_out(tmp_path):
    data = gzip.decompress(REAL.read_bytes())
    damaged = data + b"1795587872400000\t503\t70\n1795587872400001\t200\t\n1795587872400002\t20"
    hist = read(tmp_path, damaged)
    assert hist.n == 2000 and hist.counts == by_line(data)


def test_histograms_add_up_across_logs(tmp_path):
    hist = LatencyHistogram()
    for i, text in enumerate((b"1\t200\t5\n2\t200\t7\n", b"3\t204\t5\n4\t500\t9\n")):
        path = tmp_path / f"{i}.tsv"
        path.write_bytes(text)
        read_h2load_latency_log(path, hist)
    assert hist.n == 3 and hist.counts == Counter({5: 2, 7: 1})
