"""--idle poll (measure/idle.py): the server's CPUs poll when idle while the run measures, the others keep
halting; the old settings come back when it stops, and after a run killed without warning; bad input in
one line."""
import json
import os
import time

import pytest

from rpcprof.errors import UserError
from rpcprof.jobs.run import Run, RunOptions
from rpcprof.measure.idle import (IdlePoll, IdleSpin, NoPollingState, poll_time_us, polling_state, release_stale,
                                  resume_latency_file)

REAL = resume_latency_file(0)
needs_qos = pytest.mark.skipif(not (REAL.exists() and os.geteuid() == 0 and poll_time_us(0) is not None),
                               reason="needs per-CPU PM QoS, cpuidle's polling state and root")


def fake_cpus(tmp_path, values: dict[int, str], polling: bool = True):
    """CPUs with a PM QoS file each and, with polling, cpuidle's states POLL and HALT (haltpoll's)."""
    for cpu, value in values.items():
        f = resume_latency_file(cpu, tmp_path)
        f.parent.mkdir(parents=True)
        f.write_text(value + "\n")
        for i, name in enumerate(("POLL", "haltpoll") if polling else ()):
            state = tmp_path / f"cpu{cpu}" / "cpuidle" / f"state{i}"
            state.mkdir(parents=True)
            (state / "name").write_text(name + "\n")
    return tmp_path


def test_a_cpu_with_no_polling_state_is_refused_before_anything_is_written(tmp_path):
    # the cpuidle driver `none`: no cpuN/cpuidle folder; writing n/a would succeed and change nothing
    root = fake_cpus(tmp_path, {0: "0"}, polling=False)
    (tmp_path / "cpuidle").mkdir()
    (tmp_path / "cpuidle" / "current_driver").write_text("none\n")
    assert not polling_state(0, root)
    with pytest.raises(NoPollingState) as e:
        IdlePoll([0], root, tmp_path / "state.json")
    assert str(e.value) == ("--idle poll: CPU 0 has no polling idle state (cpuidle driver none): PM QoS would change "
                            "nothing there")
    assert resume_latency_file(0, root).read_text() == "0\n" and not (tmp_path / "state.json").exists()


def test_without_a_polling_state_a_run_keeps_the_server_cpu_busy_with_an_idle_priority_loop(monkeypatch, capsys):
    from rpcprof.jobs import run as run_module
    from rpcprof.measure.session import Session

    def refuse(cpus):
        raise NoPollingState("--idle poll: CPU 0 has no polling idle state (cpuidle driver none): PM QoS would "
                             "change nothing there")
    monkeypatch.setattr(run_module, "IdlePoll", refuse)
    the_run = Run(RunOptions(servers=["rust_tonic_st"], server_cpus=[0], load_cpus=[1], profile=False), ["t"])
    with Session() as machine:
        holder = run_module.hold_idle(the_run.opts, machine)
        assert the_run.opts.idle == "spin"
        (proc,) = holder.procs
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
        assert os.sched_getaffinity(proc.pid) == {0}
    assert proc.poll() is not None                  # stopped with the session, by PID
    assert "recorded as --idle spin" in capsys.readouterr().err


def test_the_busy_loop_stops_when_stopped_and_counts_its_cpu():
    spin = IdleSpin([0])
    pid = spin.procs[0].pid
    assert spin.cpu_seconds() >= 0
    spin.stop()
    assert not os.path.exists(f"/proc/{pid}/stat") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    spin.stop()                                     # a second stop is harmless


def test_the_given_cpus_poll_while_held_and_get_their_old_values_back(tmp_path):
    root = fake_cpus(tmp_path, {0: "0", 1: "50"})
    state = tmp_path / "state.json"
    holder = IdlePoll([1], root, state)
    assert resume_latency_file(1, root).read_text() == "n/a"
    assert resume_latency_file(0, root).read_text() == "0\n"        # not given: untouched
    assert json.loads(state.read_text())["saved"] == {str(resume_latency_file(1, root)): "50"}
    holder.stop()
    assert resume_latency_file(1, root).read_text() == "50" and not state.exists()
    holder.stop()                       # a second stop is harmless (a session may stop it again)
    assert resume_latency_file(1, root).read_text() == "50"


def test_a_cpu_that_cannot_be_set_is_one_line_and_the_ones_set_before_it_are_restored(tmp_path):
    root = fake_cpus(tmp_path, {0: "0"})
    (tmp_path / "cpu7" / "cpuidle" / "state0").mkdir(parents=True)      # a polling state, but no PM QoS file
    (tmp_path / "cpu7" / "cpuidle" / "state0" / "name").write_text("POLL\n")
    with pytest.raises(UserError) as e:
        IdlePoll([0, 7], root, tmp_path / "state.json")
    assert "--idle poll: cannot set" in str(e.value) and "cpu7" in str(e.value) and "--idle halt" in str(e.value)
    assert "\n" not in str(e.value)
    assert resume_latency_file(0, root).read_text().strip() == "0"


def killed_holder(tmp_path, root):
    """The state a SIGKILLed rpcprof leaves: CPU 0 polling, its holder gone."""
    state = tmp_path / "state.json"
    resume_latency_file(0, root).write_text("n/a")
    gone = {"pid": 2 ** 22 + 7, "start_ticks": 1, "boot_id": "x"}
    state.write_text(json.dumps({"owner": gone, "saved": {str(resume_latency_file(0, root)): "0"}}))
    return state


def test_a_killed_runs_setting_is_given_back_by_the_next_invocation_whatever_its_runs_folder(tmp_path, monkeypatch):
    from rpcprof.jobs import base as leftovers
    root = fake_cpus(tmp_path / "sys", {0: "0"})
    state = killed_holder(tmp_path, root)
    monkeypatch.setattr(leftovers, "release_stale", lambda: release_stale(state))
    monkeypatch.setattr(leftovers, "stale_cgroups", lambda running: ([], [], []))     # this machine's own: not here
    (tmp_path / "other-runs").mkdir()
    line = leftovers.tidy_leftovers(tmp_path / "other-runs")
    assert "CPU 0 left polling by a killed run's --idle poll set back" in line
    assert resume_latency_file(0, root).read_text() == "0" and not state.exists()


def test_a_new_holder_saves_the_machines_default_not_a_killed_runs_poll(tmp_path):
    root = fake_cpus(tmp_path, {0: "n/a"})
    holder = IdlePoll([0], root, tmp_path / "state.json")
    holder.stop()
    assert resume_latency_file(0, root).read_text() == "0"


@needs_qos
@pytest.mark.slow
def test_the_server_cpu_polls_while_held_and_halts_after():
    before = REAL.read_text()
    holder = IdlePoll([0])
    try:
        assert REAL.read_text().strip() == "n/a"
        a = poll_time_us(0)
        for _ in range(30):             # this process sleeps: CPU 0 idles, unless others keep it busy
            time.sleep(0.1)
            if poll_time_us(0) > a:
                break
        assert poll_time_us(0) > a
    finally:
        holder.stop()
    assert REAL.read_text().strip() == ("0" if before.strip() == "n/a" else before.strip())


def test_an_unknown_idle_mode_is_refused():
    with pytest.raises(UserError, match="--idle must be one of halt, poll, spin"):
        Run(RunOptions(servers=["rust_tonic_mt"], idle="sleep"), [])


def test_by_default_a_run_polls_and_where_it_cannot_it_halts_says_so_and_records_it(monkeypatch, capsys):
    from rpcprof.jobs import run as run_module
    from rpcprof.measure.session import Session
    assert RunOptions(servers=["rust_tonic_mt"]).idle == "poll"

    def refuse(cpus):
        raise UserError("--idle poll: cannot set /sys/x (Permission denied): it needs Linux's per-CPU PM QoS "
                        "and root; or measure with --idle halt")
    monkeypatch.setattr(run_module, "IdlePoll", refuse)
    r = Run(RunOptions(servers=["rust_tonic_mt"], profile=False), [])
    with Session() as machine:
        assert run_module.hold_idle(r.opts, machine) is None
    assert r.opts.idle == "halt"
    assert "WARNING: --idle poll: cannot set /sys/x" in capsys.readouterr().err
