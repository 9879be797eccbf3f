"""Kernel events and read/write sizes of the syscall-counting window (measure/syscalls.py), on real outputs.

tests/data/kernel/ holds copies of real perf output from this machine kind (perf 6.1, kernel 6.18):
  tonic_mt-syscalls.csv          perf stat -x, of a `profile.sh run rust_tonic_mt -d 2 -w 1 ...` syscalls
                                 window (40,722 requests), as the run folder kept it
  tonic_mt-profile-syscalls.csv  the same run's profile-window count
  tonic_st-interval-syscalls.csv a round's profile-window count of `profile.sh run rust_tonic_st -d 1 -w 0.5
                                 --profile-duration 1 --repeat 4`, counted CPU-wide with -I (its lines led by
                                 a time stamp, perf's "Events enabled/disabled" notes first)
  tonic_mt-io.txt                `perf script -F event,trace --show-lost-events` of that window's
                                 syscalls-io.data, trimmed to lines 1-120, 25680-25690 and 41800-41820
                                 (the EAGAIN, the end-of-file and perf's warnings kept)
  tonic_mt-io-lost.txt           the same for a recording of rust_tonic_mt with a 1-page buffer (-m 1),
                                 which lost events: lines 1-10, 7030-7040, 10548-10553
  stopped-process.csv            perf stat of a SIGSTOPped process: every counter `<not counted>`,
                                 `instructions` `<not supported>` (no hardware PMU here)
  sleeper-two-switches.csv       perf stat of a process sleeping 1 ms in a loop, sched_switch counted
                                 twice: with the involuntary filter first, unfiltered second
  sched_switch.format            /sys/kernel/tracing/events/sched/sched_switch/format
Expected numbers were counted from the files with grep/awk, not with the code under test.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rpcprof.measure import syscalls

DATA = Path(__file__).resolve().parents[1] / "data" / "kernel"


def text(name: str) -> str:
    return (DATA / name).read_text()


# ----- perf stat: syscalls unchanged, kernel events added ------------------------------------------

def test_syscall_counts_keep_their_keys_and_values():
    counts = syscalls.parse_perf_stat_csv(text("tonic_mt-syscalls.csv"))
    assert counts["total"] == 42748
    assert counts["by_syscall"] == {"writev": 40825, "recvfrom": 987, "epoll_wait": 924, "accept4": 2,
                                    "epoll_ctl": 2, "futex": 2, "close": 1, "write": 1, "other": 4}


def test_kernel_events_of_the_syscalls_window():
    events = syscalls.parse_perf_stat_csv(text("tonic_mt-syscalls.csv"))["events"]
    assert events == {"context_switches": 283, "involuntary_switches": 36, "voluntary_switches": 247,
                      "wakeups_issued": 10609, "page_faults": 1}


def test_kernel_events_of_the_profile_window():
    events = syscalls.parse_kernel_events(text("tonic_mt-profile-syscalls.csv"))
    assert events == {"context_switches": 664, "involuntary_switches": 376, "voluntary_switches": 288,
                      "wakeups_issued": 21456, "page_faults": 3}


def test_events_per_request_divide_each_count_by_the_requests():
    counts = syscalls.parse_perf_stat_csv(text("tonic_mt-syscalls.csv"))
    record = syscalls.per_request(counts, 40722)
    assert record["writes_per_req"] == pytest.approx((40825 + 1) / 40722)       # unchanged
    assert record["events"] == counts["events"]
    per = record["events_per_req"]
    assert per["context_switches"] == pytest.approx(283 / 40722)
    assert per["involuntary_switches"] == pytest.approx(36 / 40722)
    assert per["voluntary_switches"] == pytest.approx(247 / 40722)
    assert per["wakeups_issued"] == pytest.approx(10609 / 40722)
    assert per["page_faults"] == pytest.approx(1 / 40722)


def test_no_requests_gives_no_per_request_event():
    counts = syscalls.parse_perf_stat_csv(text("tonic_mt-syscalls.csv"))
    record = syscalls.per_request(counts, 0)
    assert record["per_req"] is None
    assert record["events"]["context_switches"] == 283
    assert set(record["events_per_req"].values()) == {None}


def test_not_counted_events_are_none_never_zero():
    counts = syscalls.parse_perf_stat_csv(text("stopped-process.csv"))
    assert counts["total"] == 0 and counts["by_syscall"] == {}                    # syscalls: as before
    assert counts["events"] == dict.fromkeys(syscalls.EVENT_KEYS)
    assert set(syscalls.per_request(counts, 10)["events_per_req"].values()) == {None}


def test_not_supported_is_none():
    # the real `<not supported>` line of this machine (no PMU), read through a spec naming it
    events = syscalls.parse_kernel_events(text("stopped-process.csv"), [("page_faults", "instructions")])
    assert events["page_faults"] is None


def test_an_absent_tracepoint_leaves_its_key_none_and_the_others_intact():
    lines = [line for line in text("tonic_mt-syscalls.csv").splitlines() if "sched:" not in line]
    events = syscalls.parse_kernel_events("\n".join(lines))
    assert events == {"context_switches": 283, "involuntary_switches": None, "voluntary_switches": None,
                      "wakeups_issued": None, "page_faults": 1}


def test_two_sched_switch_lines_are_told_apart_by_position():
    # filtered first (0 of a sleeper's switches were involuntary), unfiltered second (924)
    specs = [("context_switches", "context-switches"), ("involuntary_switches", "sched:sched_switch"),
             ("all_switches", "sched:sched_switch"), ("wakeups_issued", "sched:sched_waking"),
             ("page_faults", "page-faults")]
    events = syscalls.parse_kernel_events(text("sleeper-two-switches.csv"), specs)
    assert events == {"context_switches": 924, "involuntary_switches": 0, "voluntary_switches": 924,
                      "wakeups_issued": 1, "page_faults": 0}
    # the default specs count sched_switch once: the first line is the filtered one, the second is ignored
    assert syscalls.parse_kernel_events(text("sleeper-two-switches.csv"))["involuntary_switches"] == 0


def test_voluntary_switches_are_never_negative():
    # a filtered count can exceed the software event's by a switch at the window's edges
    csv = "5,,context-switches,1,100.00,,\n7,,sched:sched_switch,1,100.00,,\n"
    assert syscalls.parse_kernel_events(csv)["voluntary_switches"] == 0


def test_preempted_state_is_read_from_the_tracepoint_format():
    assert syscalls.preempted_state(text("sched_switch.format")) == 0x100
    assert syscalls.preempted_state("no such format") == syscalls.TASK_REPORT_MAX


def test_the_filter_binds_to_sched_switch_and_each_kernel_event_has_its_own_option():
    argv = syscalls.count_argv("perf", 1234, Path("/x/syscalls.csv"))
    assert argv[:4] == ["perf", "stat", "-x,", "-e"] and argv[4].startswith("raw_syscalls:sys_enter")
    assert argv[-4:] == ["-p", "1234", "-o", "/x/syscalls.csv"]
    for key, event, tp_filter in syscalls.kernel_events():
        i = argv.index(event)
        assert argv[i - 1] == "-e"
        if tp_filter:
            assert argv[i + 1:i + 3] == ["--filter", tp_filter]
    if syscalls.tracepoint_exists("sched", "sched_switch"):
        assert argv.count("--filter") == 1 and argv.count("sched:sched_switch") == 1


# ----- perf script of the sys_exit recording ------------------------------------------------------

def test_io_summary_of_a_real_recording():
    summary = syscalls.summarise_io_script(text("tonic_mt-io.txt").splitlines())
    io = summary["io"]
    assert summary["lost"] == 0
    assert io["writev"] == {"calls": 135, "bytes": 6745, "eagain": 0, "errors": 0, "zero": 0}
    assert io["write"] == {"calls": 1, "bytes": 8, "eagain": 0, "errors": 0, "zero": 0}     # tokio's eventfd
    assert io["recvfrom"] == {"calls": 9, "bytes": 17350, "eagain": 1, "errors": 0, "zero": 1}
    assert set(io) == set(syscalls.IO_READS + syscalls.IO_WRITES)                           # all watched
    assert io["sendto"]["calls"] == 0


def test_io_figures_per_request():
    io = syscalls.summarise_io_script(text("tonic_mt-io.txt").splitlines())["io"]
    figures = syscalls.io_per_request(io, 100)
    assert figures["reads_per_req"] == pytest.approx(9 / 100)
    assert figures["eagain_reads_per_req"] == pytest.approx(1 / 100)
    assert figures["bytes_per_read"] == pytest.approx(17350 / 9)          # over every read call, EAGAIN too
    assert figures["bytes_per_write"] == pytest.approx((6745 + 8) / 136)
    assert figures["req_per_write"] == pytest.approx(100 / 136)


def test_io_figures_without_a_recording_or_requests():
    assert set(syscalls.io_per_request(None, 100).values()) == {None}
    io = syscalls.summarise_io_script([])["io"]
    figures = syscalls.io_per_request(io, 0)
    assert figures == dict.fromkeys(figures)


def test_lost_events_are_counted():
    summary = syscalls.summarise_io_script(text("tonic_mt-io-lost.txt").splitlines())
    assert summary["lost"] == 109 + 55
    assert summary["io"]["writev"]["calls"] == 13 and summary["io"]["writev"]["bytes"] == 627
    assert summary["io"]["recvfrom"] == {"calls": 4, "bytes": 7680, "eagain": 1, "errors": 0, "zero": 0}


def test_negative_returns_are_twos_complement():
    assert syscalls._signed("0xfffffffffffffff5") == -11
    assert syscalls._signed("0x32") == 50
    # ECONNRESET (-104) as perf prints it: an error other than EAGAIN
    io = syscalls.summarise_io_script(["syscalls:sys_exit_recvfrom: 0xffffffffffffff98"])["io"]
    assert io["recvfrom"] == {"calls": 1, "bytes": 0, "eagain": 0, "errors": 1, "zero": 0}


def test_io_record_argv_takes_every_family_member_given():
    argv = syscalls.io_record_argv("perf", 42, Path("/x/syscalls-io.data"), ["recvfrom", "writev"])
    assert argv[:2] == ["perf", "record"] and "-B" in argv and "-N" in argv
    assert argv[argv.index("-e") + 1] == "syscalls:sys_exit_recvfrom,syscalls:sys_exit_writev"
    assert argv[-4:] == ["-p", "42", "-o", "/x/syscalls-io.data"]


# ----- this kernel: the involuntary filter applies, and counts what /proc counts -------------------


def test_every_perf_record_stops_without_the_bpf_side_band_thread(tmp_path, monkeypatch):
    """--no-bpf-event on each perf record rpcprof starts: that thread's 1 s poll held every stop."""
    from rpcprof.capture import offcpu, profiler
    monkeypatch.setattr(profiler, "require", lambda *a, **k: "perf")
    monkeypatch.setattr(offcpu, "require", lambda *a, **k: "perf")
    monkeypatch.setattr(offcpu, "perf_recorder", lambda argv, *a, **k: argv)
    monkeypatch.setattr(profiler, "perf_recorder", lambda argv, *a, **k: argv)
    argvs = [syscalls.io_record_argv("perf", 42, tmp_path / "io.data", ["writev"]),
             offcpu.start_offcpu(42, tmp_path, "dwarf"), offcpu.start_offwake(tmp_path)]
    argvs.append(profiler.start_perf(42, tmp_path, 99, "fp", "cpu-clock", cpus=[0]))
    for argv in argvs:
        assert argv[:2] == ["perf", "record"] and "--no-bpf-event" in argv, argv
    # the recordings of stacks a run folder keeps (report.py fold reads them again) are compressed as perf
    # writes them: the off-CPU window's and the profile window's
    assert "-z" in argvs[1] and "-z" in argvs[3]


def test_each_perf_recorder_starts_disabled_behind_a_control_fifo(tmp_path, monkeypatch):
    """perf record and perf stat start with their events off (-D -1) and are switched with the window
    through --control fifos, so every instrument of a window covers the same span."""
    from rpcprof.measure import recorder as rec
    started = []
    monkeypatch.setattr(rec.Recorder, "__init__", lambda self, argv, *a, control=None, **k: started.append((argv, control)))
    rec.perf_recorder(["perf", "stat", "-x,", "-e", "x"], tmp_path / "x.csv", tmp_path / "x.log")
    (argv, control), = started
    assert argv[:4] == ["perf", "stat", "-D", "-1"] and argv[4:6] == ["--control", f"fifo:{control.ctl},{control.ack}"]
    assert control.ctl.is_fifo() and control.ack.is_fifo()
    control.close()
    assert not control.folder.exists()


def test_the_cpu_wide_count_prints_its_counts_on_interrupt_and_its_lines_are_read():
    """CPU-wide, perf stat runs with -I and no -o: its one interval line per event comes on stderr (the
    run folder's CSV) when it is interrupted, before its slow exit, each line led by a time stamp."""
    argv = syscalls.count_argv("perf", 1234, Path("/x/profile-syscalls.csv"), [0])
    assert argv[argv.index("-I") + 1] == str(syscalls.LATE_INTERVAL_MS) and "-o" not in argv
    assert argv[-3:] == ["-a", "-C", "0"]
    capture = text("tonic_st-interval-syscalls.csv")       # a real round's (rust_tonic_st, 1 s profile window)
    counts = syscalls.parse_perf_stat_csv(capture)
    stripped = "\n".join(line.split(",", 1)[1] if line.startswith(" ") else line for line in capture.splitlines())
    assert counts == syscalls.parse_perf_stat_csv(stripped)
    assert counts["total"] is None and counts["by_syscall"]["writev"] > 0 and counts["by_syscall"]["recvfrom"] > 0
    assert set(counts["by_syscall"]) <= set(syscalls.available_syscalls()) | {"other"}


@pytest.mark.parametrize("evlist, switches", [
    ("sched:sched_switch\ndummy:HG\n# Tip: use 'perf evlist --trace-fields' to show fields for tracepoint events\n", True),
    ("sched:sched_switch\n", True),
    ("cpu-clock:ppp\ndummy:HG\n", False),
    ("sched:sched_waking\n", False)])
def test_an_off_cpu_recording_is_told_by_its_event_beside_perfs_dummy_one(monkeypatch, tmp_path, evlist, switches):
    """report.py fold of a run's offcpu.data: perf evlist lists the dummy event --switch-events adds (it
    was read as another event, and the recording folded as a profile of no samples)."""
    from rpcprof.capture import fold
    monkeypatch.setattr(fold, "require", lambda *a, **k: "perf")
    monkeypatch.setattr(fold.subprocess, "run",
                        lambda argv, **k: subprocess.CompletedProcess(argv, 0, stdout=evlist, stderr=""))
    assert fold.records_switches(tmp_path / "offcpu.data") is switches
