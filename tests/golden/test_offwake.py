"""Who woke whom: the off-CPU window's waits paired with the wake-ups that ended them (offwake.folded).

Saved captures (tests/data/offcpu, see its README): one window each of pajamax at exactly 50 streams in
flight (the Nagle stall) and of tonic_mt at S=1000, both recordings of the same window (sched_switch of
the server's threads, sched_waking of the machine kept to those threads' wake-ups).
"""
import gzip
import re
from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.wakers import split_wake, waker_rows
from rpcprof.capture.offcpu import collapse_weighted, pair_wakes, weigh_switches
from rpcprof.folded import WAKE_SEPARATOR
from rpcprof.report.waits import wakers_text

pytestmark = pytest.mark.fast

DATA = Path(__file__).parents[1] / "data" / "offcpu"


def script(name: str) -> list[bytes]:
    return gzip.decompress((DATA / name).read_bytes()).splitlines(keepends=True)


def folded_wakes(capture: str, tmp_path: Path) -> tuple[Path, dict, list]:
    spans, stats = [], {}
    weigh_switches(script(f"{capture}.offcpu.script.gz"), {}, spans)
    lines = pair_wakes(script(f"{capture}.offwake.script.gz"), spans, stats)
    out = tmp_path / "offwake.folded"
    collapse_weighted(lines, out)
    return out, stats, spans


def plain_pairs(capture: str, spans: list) -> int:
    """Waits with a wake-up of their thread between switch-out and switch-in, found plainly."""
    wakes = []
    for line in script(f"{capture}.offwake.script.gz"):
        m = re.match(rb"^\S.*?\s(\d+\.\d+): sched:sched_waking: comm=.* pid=(\d+) prio=", line)
        if m:
            wakes.append((int(m.group(2)), float(m.group(1))))
    return sum(1 for tid, t_out, t_in, *_ in spans if any(w == tid and t_out <= t <= t_in for w, t in wakes))


@pytest.mark.parametrize("capture", ["pajamax-50-wake", "tonic-mt-wake", "pajamax-50-controlled"])
def test_each_wait_is_paired_with_a_wake_up_of_its_thread_inside_it_and_weighted_by_its_time(capture, tmp_path):
    folded, stats, spans = folded_wakes(capture, tmp_path)
    assert stats["waits"] == len(spans) and stats["paired"] == plain_pairs(capture, spans) > 0
    stacks = open_folded(folded)
    assert sum(w for _, w in stacks) == stats["paired_us"] <= stats["waits_us"]
    sleepers = {comm for *_, comm, _ in spans}
    for frames, _ in stacks:
        assert frames.count(WAKE_SEPARATOR) == 1
        waker, sleeper = split_wake(frames)
        assert sleeper[0].encode() in sleepers               # the sleeper's thread name on top
        assert waker[-1] == "try_to_wake_up_[k]"          # the waker's stack ends in the wake-up itself
        assert sleeper[-1] in ("__schedule_[k]", "schedule_[k]")   # ... and the sleeper's where it slept


def test_pajamax_at_50_in_flight_waits_for_socket_data_and_is_woken_by_the_clients_write(tmp_path):
    folded, stats, spans = folded_wakes("pajamax-50-wake", tmp_path)
    # every wait but the acceptor's (asleep in accept for the whole window, cut at its end) is paired
    assert stats["paired"] == stats["waits"] - 1
    rows = waker_rows(folded, load_rules())
    assert list(rows) == ["socket-data"]
    top = rows["socket-data"]["wakers"][0]
    assert top["waker"] == "h2load: writev() -> a TCP segment's arrival (loopback softirq)" and top["share_pct"] > 99
    assert wakers_text("socket-data", rows["socket-data"]).startswith("socket-data: woken by h2load: writev()")


def test_tonic_mt_idle_in_epoll_is_woken_by_the_clients_writes_through_the_loopback(tmp_path):
    folded, stats, spans = folded_wakes("tonic-mt-wake", tmp_path)
    rows = waker_rows(folded, load_rules())
    top = rows["idle-poll"]["wakers"][0]
    assert top["waker"].startswith("h2load: ") and "loopback softirq" in top["waker"] and top["share_pct"] > 90
    assert sum(w["us"] for w in rows["idle-poll"]["wakers"]) <= rows["idle-poll"]["us"]
