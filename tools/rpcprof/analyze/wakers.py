"""Who woke the server's threads: the off-CPU window's waits paired with their wake-ups (offwake.folded).

Each stack of offwake.folded is one wait, weighted by its µs off CPU, written waker first:
`WAKER;waker root...leaf;--;sleeper leaf...root;SLEEPER` (capture/offcpu.py). The sleeper's half gets its
wait reason by the waits view of categorize.yaml, exactly as offcpu.folded does; the waker's half gets a
name from its comm and the path of its wake-up (waker_name). waker_rows gives, per wait reason, the
wakers that ended the most of its time (report/waits.py says them).
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from rpcprof.analyze.categorize import Rules, group_of, open_folded
from rpcprof.folded import WAKE_SEPARATOR

TOP = 3     # wakers named per reason

_KERNEL = re.compile(r"_\[k\]$")
_SYSCALL = re.compile(r"^__(?:x64|ia32|arm64)_sys_(\w+)$")
_ENTRY = re.compile(r"^(do_syscall_64|x64_sys_call|do_fast_syscall_32|el0_svc_common\S*|invoke_syscall\S*)$")
_SYSCALL_BODY = re.compile(r"^(?:__x64_sys_|__ia32_sys_|__arm64_sys_|__se_sys_|__do_sys_|ksys_|__sys_|do_)(\w+?)(?:\.\w+\.\d+)*$")
# what released the wait, from the waker's kernel stack (the first that appears wins): timers and the
# network receive path name the event; a futex or a pipe names the waker's call
WAKE_PATHS = [
    (re.compile(r"^tcp_delack_timer(_handler)?$"), "the delayed-ACK timer"),
    (re.compile(r"^tcp_(write|retransmit)_timer(_handler)?$"), "a TCP retransmit timer"),
    (re.compile(r"^tcp_(v4|v6)_rcv$"), "a TCP segment's arrival (loopback softirq)"),
    (re.compile(r"^(unix_stream_sendmsg|unix_dgram_sendmsg)$"), "a unix-socket write"),
    (re.compile(r"^(pipe_write|anon_pipe_write)$"), "a pipe write"),
    (re.compile(r"^eventfd_(write|signal)\w*$"), "an eventfd write"),
    (re.compile(r"^futex_wake\w*$"), "a futex wake"),
    (re.compile(r"^hrtimer_wakeup$"), "a timer expiry (sleep or timeout)"),
    (re.compile(r"^(process_timeout|call_timer_fn)$"), "a timeout"),
]


def split_wake(frames: list[str]) -> tuple[list[str], list[str]] | None:
    """(waker, sleeper), each root-first with its comm first; None when the stack is not a paired wake-up."""
    if WAKE_SEPARATOR not in frames:
        return None
    i = frames.index(WAKE_SEPARATOR)
    return frames[:i], frames[:i:-1]


def waker_name(waker: list[str]) -> str:
    """'h2load: sendto() -> a TCP segment's arrival (loopback softirq)', 'swapper/1: the delayed-ACK timer'."""
    comm = waker[0] if waker else "?"
    names = [_KERNEL.sub("", f) for f in waker[1:]]
    call = next((m.group(1) for m in map(_SYSCALL.match, names) if m), None) or syscall_after_entry(names)
    path = next((label for pattern, label in WAKE_PATHS if any(pattern.match(f) for f in names)), None)
    text = " -> ".join(p for p in (call and f"{call}()", path) if p)
    if not text:
        # the frame under the wake-up machinery, or the waker's leaf
        plain = [f for f in names if not re.search(r"wake|^(__)?schedule|^ep_poll_callback$|^sock_def_\w+$", f)]
        text = plain[-1] if plain else (names[-1] if names else "?")
    return f"{comm}: {text}"


def syscall_after_entry(names: list[str]) -> str | None:
    """The syscall a stack is in, from the frame after the kernel's syscall entry when the __x64_sys_
    wrapper was inlined (do_syscall_64 -> do_writev: writev)."""
    m = next((_SYSCALL_BODY.match(after) for name, after in zip(names, names[1:]) if _ENTRY.match(name)), None)
    return m.group(1) if m else None


def waker_rows(folded: Path, rules: Rules) -> dict[str, dict]:
    """reason -> {us: paired µs off CPU, wakers: [{waker, us, share_pct}], top ones largest first}, in rules' order."""
    waits = rules.using(view="waits")
    by: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for frames, w in open_folded(folded):
        if (halves := split_wake(frames)) is not None:
            by[group_of(halves[1], waits)][waker_name(halves[0])] += w
    rows = {}
    for reason in waits.all_categories:
        if reason not in by:
            continue
        total = sum(by[reason].values())
        ranked = sorted(by[reason].items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
        rows[reason] = {"us": total, "wakers": [{"waker": name, "us": us, "share_pct": 100 * us / total}
                                                for name, us in ranked]}
    return rows
