"""The syscall families of an RPC server's request path, named once: measure counts them (and records the
read and write families' return values), analyze names them as mechanisms. Below every layer: it imports
nothing.
"""
from __future__ import annotations

READS = ("read", "readv", "recvfrom", "recvmsg", "recvmmsg")
WRITES = ("write", "writev", "sendto", "sendmsg", "sendmmsg")
WAITS = ("epoll_wait", "epoll_pwait")
# the calls whose return value is the bytes moved (recvmmsg and sendmmsg return a count of messages)
IO_READS = tuple(s for s in READS if s != "recvmmsg")
IO_WRITES = tuple(s for s in WRITES if s != "sendmmsg")
# The syscalls an RPC server's request path uses; everything else is counted as `other`.
SYSCALLS = (*READS, *WRITES, *WAITS, "epoll_ctl", "poll", "ppoll", "futex", "sched_yield", "nanosleep",
            "clock_nanosleep", "io_uring_enter", "accept4", "close")
