"""--idle poll (measure/idle.py): a 0 µs latency request held while the run measures, dropped by the
kernel when its file is closed; bad input in one line."""
import os

import pytest

from rpcprof.errors import UserError
from rpcprof.jobs.run import RunOptions, Run
from rpcprof.measure.idle import LATENCY_DEVICE, IdlePoll, latency_request, poll_time_us

needs_qos = pytest.mark.skipif(not (LATENCY_DEVICE.exists() and os.geteuid() == 0),
                               reason="needs /dev/cpu_dma_latency and root")


@needs_qos
def test_the_request_holds_while_open_and_is_gone_when_stopped():
    before = latency_request()
    assert before is not None and before > 0
    holder = IdlePoll()
    try:
        assert latency_request() == 0
    finally:
        holder.stop()
    assert latency_request() == before
    holder.stop()                       # a second stop is harmless (a session may stop it again)


@needs_qos
def test_an_idle_cpu_polls_while_it_is_held():
    import time
    cpus = [c for c in range(os.cpu_count() or 1) if poll_time_us(c) is not None]
    if not cpus:
        pytest.skip("no cpuidle polling state on this machine")

    def polled():
        return sum(poll_time_us(c) for c in cpus)
    holder = IdlePoll()
    try:
        a = polled()
        for _ in range(30):             # this process sleeps: some CPU idles, unless others keep all busy
            time.sleep(0.1)
            if polled() > a:
                break
        b = polled()
    finally:
        holder.stop()
    assert b > a


def test_a_device_that_cannot_be_opened_is_one_line(tmp_path):
    with pytest.raises(UserError) as e:
        IdlePoll(tmp_path / "no-such-device")
    assert "--idle poll: cannot open" in str(e.value) and "--idle halt" in str(e.value)
    assert "\n" not in str(e.value)


def test_an_unknown_idle_mode_is_refused():
    with pytest.raises(UserError, match="--idle must be one of halt, poll"):
        Run(RunOptions(servers=["rust_tonic_mt"], idle="spin"), [])
