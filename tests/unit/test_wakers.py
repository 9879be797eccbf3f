"""Who woke whom: the waker's name from its stack, and the split of a wake-up stack into its halves."""
import pytest

from rpcprof.analyze.wakers import split_wake, waker_name

pytestmark = pytest.mark.fast


def test_a_wake_up_stack_splits_at_the_separator_into_waker_and_sleeper_root_first():
    frames = ["h2load", "main", "__x64_sys_sendto_[k]", "try_to_wake_up_[k]", "--",
              "__schedule_[k]", "ep_poll_[k]", "epoll_wait", "main", "pajamax"]
    waker, sleeper = split_wake(frames)
    assert waker == ["h2load", "main", "__x64_sys_sendto_[k]", "try_to_wake_up_[k]"]
    assert sleeper == ["pajamax", "main", "epoll_wait", "ep_poll_[k]", "__schedule_[k]"]
    assert split_wake(["pajamax", "main", "epoll_wait"]) is None      # an off-CPU stack, not a wake-up


@pytest.mark.parametrize("frames, name", [
    (["h2load", "write", "__x64_sys_sendto_[k]", "tcp_sendmsg_[k]", "__dev_queue_xmit_[k]", "net_rx_action_[k]",
      "tcp_v4_rcv_[k]", "sock_def_readable_[k]", "ep_poll_callback_[k]", "try_to_wake_up_[k]"],
     "h2load: sendto() -> a TCP segment's arrival (loopback softirq)"),
    (["swapper/1", "do_idle_[k]", "__irq_exit_rcu_[k]", "run_timer_softirq_[k]", "call_timer_fn_[k]",
      "tcp_delack_timer_[k]", "tcp_send_ack_[k]", "tcp_v4_rcv_[k]", "try_to_wake_up_[k]"],
     "swapper/1: the delayed-ACK timer"),
    (["tokio-runtime-w", "park", "__x64_sys_futex_[k]", "futex_wake_[k]", "wake_up_q_[k]", "try_to_wake_up_[k]"],
     "tokio-runtime-w: futex() -> a futex wake"),
    (["kworker/0:1", "worker_thread_[k]", "some_work_fn_[k]", "__wake_up_common_[k]", "try_to_wake_up_[k]"],
     "kworker/0:1: some_work_fn"),
])
def test_the_waker_is_named_by_its_call_and_the_event_that_released_the_wait(frames, name):
    assert waker_name(frames) == name


def test_a_syscall_whose_wrapper_was_inlined_is_named_from_the_frame_after_the_entry():
    # pajamax at 50 in flight, recorded here: h2load's writev reaches the server through the loopback softirq
    frames = ["h2load", "__GI___writev", "entry_SYSCALL_64_after_hwframe_[k]", "do_syscall_64_[k]", "do_writev_[k]",
              "vfs_writev_[k]", "tcp_sendmsg_[k]", "net_rx_action_[k]", "tcp_v4_rcv_[k]", "sock_def_readable_[k]",
              "try_to_wake_up_[k]"]
    assert waker_name(frames) == "h2load: writev() -> a TCP segment's arrival (loopback softirq)"


def test_a_waker_with_a_sliver_of_the_time_is_not_printed_as_0_percent():
    from rpcprof.report.waits import wakers_text
    row = {"us": 1000, "wakers": [{"waker": "a: x", "us": 996, "share_pct": 99.6},
                                  {"waker": "b: y", "us": 4, "share_pct": 0.4}]}
    assert wakers_text("idle-poll", row) == "idle-poll: woken by a: x 100 %, b: y <1 %"
