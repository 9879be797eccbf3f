"""Off-CPU waits: sched_switch stacks weighted by the time until the thread ran again, wait reasons,
socket state and the Nagle / delayed-ACK verdict.

Saved captures (tests/data/offcpu, see its README): pajamax at exactly 50 streams in flight (the stall)
and at 49 and 51 (no stall), tonic_mt on a CPU another program shared. Live: pajamax at 50 and 51 in
flight through profile.sh run, and attach by PID to a pajamax driven by someone else's h2load.
"""
import gzip
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rpcprof.analyze.categorize import load_rules, open_folded
from rpcprof.analyze.waits import socket_figures
from rpcprof.capture.offcpu import RUNNABLE_FRAME, collapse_weighted, weigh_switches
from rpcprof.report.waits import contention_verdict, histogram_text, stall_verdict, wait_rows
from rpcprof.rundir import count_path

DATA = Path(__file__).parents[1] / "data" / "offcpu"
PORTS = {49: 50181, 50: 50191, 51: 50181}     # the port of each saved pajamax socket log (README)


def script(name: str) -> list[bytes]:
    return gzip.decompress((DATA / name).read_bytes()).splitlines(keepends=True)


def sockets_log(name: str) -> str:
    return gzip.decompress((DATA / name).read_bytes()).decode()


def switch_times(lines: list[bytes]) -> list[tuple[int, float, float | None]]:
    """(tid, switched-out time, next switched-in time) per sched_switch sample, read plainly."""
    out, open_ = [], {}
    for line in lines:
        m = re.match(rb"^\S.*?\s(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+(PERF_RECORD_SWITCH IN|sched:sched_switch)", line)
        if not m:
            continue
        tid, t = int(m.group(1)), float(m.group(2))
        if m.group(3) == b"sched:sched_switch":
            open_[tid] = len(out)
            out.append((tid, t, None))
        elif tid in open_:
            i = open_.pop(tid)
            out[i] = (out[i][0], out[i][1], t)
    return out


def weights(lines: list[bytes]) -> list[int]:
    return [int(re.search(rb": (\d+) sched:sched_switch:", line).group(1)) for line in lines
            if b"sched:sched_switch:" in line]


def test_each_wait_is_weighted_by_the_time_until_its_thread_ran_again():
    lines = script("pajamax-50.script.gz")
    stats = {}
    timed, counted = weigh_switches(lines, stats)
    plain = switch_times(lines)
    assert stats["waits"] == len(plain) > 100
    closed = [(w, round((t_in - t_out) * 1e6)) for w, (_, t_out, t_in) in zip(weights(timed), plain) if t_in]
    assert closed and all(abs(w - expected) <= 1 for w, expected in closed)
    assert stats["cut"] == len(plain) - len(closed)
    assert set(weights(counted)) == {1}
    assert stats["off_cpu_us"] == sum(weights(timed)) and sum(stats["histogram"]) == stats["waits"]


def test_pajamax_at_50_in_flight_waits_about_one_delayed_ack_each_time():
    """Most of its time off CPU is spent in waits of 32-65 ms (the peer's 40 ms delayed-ACK timer),
    in recv: the stall an on-CPU profile cannot see."""
    stats = {}
    timed, _ = weigh_switches(script("pajamax-50.script.gz"), stats)
    w = weights(timed)
    assert sum(x for x in w if 32_768 <= x < 65_536) > 0.8 * sum(w)
    assert stats["histogram"][15] == sum(1 for x in w if 32_768 <= x < 65_536)
    # the buckets read as a person would write them: three figures, thousands separated
    many = [0] * 25
    many[15], many[21] = 3760, 2
    assert histogram_text(many) == "3,760 of 32.8 ms-65.5 ms, 2 of 2.1 s-4.19 s"


def test_folded_waits_hold_the_time_and_the_rules_call_it_waiting_for_socket_data(tmp_path):
    stats = {}
    timed, counted = weigh_switches(script("pajamax-50.script.gz"), stats)
    folded = tmp_path / "offcpu.folded"
    collapse_weighted(timed, folded)
    collapse_weighted(counted, count_path(folded))
    stacks = open_folded(folded)
    assert sum(w for _, w in stacks) == stats["off_cpu_us"]
    assert sum(w for _, w in open_folded(count_path(folded))) == stats["waits"]
    assert all(frames[0] == "pajamax-w" for frames, _ in stacks)        # the thread's name, not ":TID"
    rows = {r["reason"]: r for r in wait_rows(folded, load_rules(), 10_000)}
    assert rows["socket-data"]["share_pct"] > 99
    assert rows["socket-data"]["waits"] > 100 and rows["socket-data"]["mean_us"] > 10_000


def test_a_thread_switched_out_while_runnable_is_marked_and_who_took_its_cpu_is_named(tmp_path):
    """tonic_mt on a CPU another rust_tonic process shared: its runnable switches end in [runnable] and
    name the program that ran instead; the verdict says the server's CPU was contended."""
    lines = script("tonic-mt-contended.script.gz")
    runnable = sum(1 for line in lines if re.search(rb"sched:sched_switch: .*prev_state=R", line))
    stats = {}
    timed, _ = weigh_switches(lines, stats)
    marked = sum(1 for i, line in enumerate(timed) if b"sched:sched_switch:" in line
                 and timed[i + 1].strip().endswith(f"{RUNNABLE_FRAME} ([unknown])".encode()))
    assert runnable > 100 and marked == runnable
    assert "rust_tonic" in stats["runnable_to"] and stats["runnable_own_us"] == 0
    folded = tmp_path / "offcpu.folded"
    collapse_weighted(timed, folded)
    rows = {r["reason"]: r for r in wait_rows(folded, load_rules(), None)}
    assert rows["runnable"]["share_pct"] > 20 and "idle-poll" in rows
    verdict = contention_verdict(stats, 5.0)
    assert verdict.startswith("CPU-CONTENDED") and "rust_tonic" in verdict


@pytest.mark.parametrize("streams, stall", [(49, False), (50, True), (51, False)])
def test_nagle_delayed_ack_is_named_only_where_the_socket_samples_show_it(streams, stall):
    """At 50 in flight the server holds ~2.4 KB behind one unacknowledged segment in most samples and its
    RTT is tens of ms; at 51 Nagle holds data as often, but the ACK comes within a millisecond."""
    figures = socket_figures(sockets_log(f"pajamax-{streams}.sockets.log.gz"), [PORTS[streams]])
    verdict = stall_verdict(figures, [])
    assert figures["server_socket_samples"] > 50
    if stall:
        assert verdict.startswith("NAGLE/DELAYED-ACK") and figures["held_share"] > 0.8
        assert figures["server_rtt_ms_median"] > 5 and figures["peer_ato_ms_median"] == 40
    else:
        assert verdict is None and figures["server_rtt_ms_median"] < 1


def test_no_socket_sample_gives_no_verdict():
    assert socket_figures("", [PORTS[50]]) is None and stall_verdict(None, []) is None


# --- live -------------------------------------------------------------------------------------------


def test_a_thread_asleep_the_whole_window_is_named_with_where_it_sleeps(tmp_path):
    """A process whose acceptor thread blocks in accept() while its main thread works: only the acceptor
    is asleep the whole window, named with the kernel function it sleeps in."""
    from rpcprof.analyze.waits import asleep_whole_window
    from rpcprof.report.waits import asleep_text
    from rpcprof.measure.threads import thread_snapshot
    child = subprocess.Popen([sys.executable, "-c", ACCEPTOR], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not any(t["wchan"] == "inet_csk_accept" for t in thread_snapshot(child.pid).values()):
            assert time.monotonic() < deadline, thread_snapshot(child.pid)
            time.sleep(0.01)
        before = thread_snapshot(child.pid)
        time.sleep(0.5)
        asleep = asleep_whole_window(before, thread_snapshot(child.pid))
    finally:
        child.kill()
        child.wait()
    assert len(before) == 2
    assert [(t["name"], t["wchan"]) for t in asleep] == [("acceptor", "inet_csk_accept")], asleep
    assert asleep_text(asleep).endswith(": 1 x acceptor in inet_csk_accept")
    assert thread_snapshot(child.pid) == {} and asleep_whole_window(before, {}) == []


ACCEPTOR = """
import socket, threading
listener = socket.create_server(("127.0.0.1", 0))
def accept():
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
        f.write("acceptor")
    print("ready", flush=True)
    listener.accept()
threading.Thread(target=accept, daemon=True).start()
while True:
    pass
"""


# --- saved run folder (tests/data/runs/offcpu, made by tests/data/capture_runs.sh offcpu) ---------------

SAVED_RUN = Path(__file__).parents[1] / "data" / "runs" / "offcpu"


def test_waits_report_reclassifies_a_saved_run_and_names_the_stall(tmp_path):
    from click.testing import CliRunner
    from rpcprof.cli.report import main
    result = CliRunner().invoke(main, ["waits", str(SAVED_RUN)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert re.search(r"rust_pajamax\s+socket-data\s+(9\d\.\d\d|100\.0)\s", result.output)
    assert "NAGLE/DELAYED-ACK" in result.output
    # the rules decide: a rules file whose waits section lacks socket-data puts those waits elsewhere
    rules = (Path(__file__).parents[2] / "categorize.yaml").read_text().replace("name: socket-data", "name: sock-wait")
    (tmp_path / "rules.yaml").write_text(rules)
    result = CliRunner().invoke(main, ["waits", str(SAVED_RUN), "--rules", str(tmp_path / "rules.yaml")],
                                catch_exceptions=False)
    assert "sock-wait" in result.output and "socket-data" not in result.output.split("\n\n")[0]


def test_a_run_without_an_off_cpu_window_says_how_to_get_one():
    from click.testing import CliRunner
    from rpcprof.cli.report import main
    from rpcprof.errors import UserError
    with pytest.raises(UserError, match="--off-cpu"):
        CliRunner().invoke(main, ["waits", str(SAVED_RUN.parent / "seed-001")], catch_exceptions=False)


def test_html_of_a_saved_run_draws_the_off_cpu_graph():
    from rpcprof.report.html import build_html
    page = build_html(SAVED_RUN, load_rules())
    assert "Where the threads waited" in page and "off-CPU flame graph" in page and "NAGLE/DELAYED-ACK" in page
