"""One regime per run: the flags that say a syscall or profile window behaved unlike the measured one."""
from __future__ import annotations

from rpcprof.analyze.regime import regime_flags
from rpcprof.report.summary import notes_for


def result(rps=100_000.0, sc_rps=100_000.0, prof_rps=100_000.0, sc_writes=0.05, prof_writes=0.05) -> dict:
    return {"status": "ok", "req_per_s": rps,
            "syscalls": {"req_per_s": sc_rps, "writes_per_req": sc_writes},
            "profile": {"req_per_s": prof_rps, "syscalls": {"writes_per_req": prof_writes}}}


def test_windows_in_the_same_regime_raise_no_flag():
    assert regime_flags(result()) == []
    assert regime_flags(result(prof_rps=95_000, sc_rps=104_000, prof_writes=0.06)) == []


def test_a_profile_window_that_batched_differently_is_flagged_with_its_figures():
    flags = regime_flags(result(prof_rps=82_000, prof_writes=0.31))
    assert flags == ["PROFILE-REGIME: req/s -18 %, writes per request 0.05 -> 0.31"]
    assert "PROFILE-REGIME: req/s -18 %" in notes_for(result(prof_rps=82_000, prof_writes=0.31))


def test_a_syscall_window_at_another_rate_is_flagged():
    assert regime_flags(result(sc_rps=130_000)) == ["SYSCALL-REGIME: req/s +30 %"]


def test_small_absolute_changes_in_writes_are_not_a_new_regime():
    # 1.00 -> 1.01 writes per request is the same regime (one write per response)
    assert regime_flags(result(sc_writes=1.00, prof_writes=1.01)) == []
    assert regime_flags(result(sc_writes=0.01, prof_writes=0.025)) == []


def test_windows_without_figures_raise_no_flag():
    assert regime_flags({"status": "ok", "req_per_s": 10.0}) == []


def round_result(rounds: list[tuple[float, float, float, float]]) -> dict:
    """A result of several rounds, each (measured req/s, profile req/s, measured VFS writes/req, profile
    VFS writes/req), with the counts taken in the profile window, as runs now measure."""
    rows = [{"repeat": k + 1, "req_per_s": a, "profile_req_per_s": b, "syscall_window": "profile",
             "syscall_req_per_s": b, "measured_vfs_writes_per_req": wa, "profile_vfs_writes_per_req": wb}
            for k, (a, b, wa, wb) in enumerate(rounds)]
    return {"status": "ok", "req_per_s": rounds[0][0], "repeats": rows,
            "syscalls": {"window": "profile", "req_per_s": rounds[0][1], "writes_per_req": 1.0}}


def test_rounds_are_checked_on_their_mean_change_and_counts_of_the_profile_window_are_no_other_regime():
    # one noisy round (-15 %) among steady ones is not a regime; the syscall counts share the profile
    # window, so no SYSCALL-REGIME can arise from them
    steady = round_result([(100.0, 85.0, 1.0, 1.0), (100.0, 101.0, 1.0, 1.0), (100.0, 99.0, 1.0, 1.0)])
    assert regime_flags(steady) == []
    shifted = round_result([(100.0, 86.0, 1.0, 1.0), (100.0, 88.0, 1.0, 1.0), (100.0, 87.0, 1.0, 1.0)])
    assert regime_flags(shifted) == ["PROFILE-REGIME: req/s -13 %"]


def test_a_batching_change_shows_in_the_free_counters_of_both_windows():
    flags = regime_flags(round_result([(100.0, 100.0, 0.05, 0.31), (100.0, 100.0, 0.05, 0.29)]))
    assert flags == ["PROFILE-REGIME: VFS writes per request 0.05 -> 0.30"]


def test_the_flags_sentence_says_batching_only_when_a_counter_moved():
    """A sentence is derived from the figures: a req/s shift with the per-request counters held is not a
    batching change; one with a counter that moved is; without counters nothing is claimed."""
    from rpcprof.analyze.regime import counters_steady
    from rpcprof.report.summary import regime_line

    shifted = round_result([(100.0, 86.0, 1.0, 1.0), (100.0, 88.0, 1.0, 1.0), (100.0, 87.0, 1.0, 1.0)])
    batched = round_result([(100.0, 100.0, 0.05, 0.31), (100.0, 100.0, 0.05, 0.29)])
    bare = {"status": "ok", "req_per_s": 100.0, "profile": {"req_per_s": 80.0}}
    assert counters_steady(shifted) is True
    assert counters_steady(batched) is False
    assert counters_steady(bare) is None

    def line(result):
        flag = regime_flags(result)[0]
        return regime_line({"server": "s", "counters_steady": counters_steady(result)}, flag)
    assert "did not batch differently" in line(shifted) and "batched differently there" not in line(shifted)
    assert "batched differently there" in line(batched) and "did not batch" not in line(batched)
    assert "not known" in line(bare) and "did not batch" not in line(bare)
