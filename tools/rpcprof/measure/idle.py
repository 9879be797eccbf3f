"""--idle poll: keep the CPUs polling when idle instead of halting, for as long as a run measures.

In a virtual machine an idle CPU halts (the haltpoll cpuidle driver, with halt-polling off on this
machine kind): the host may run something else on that core, and the server pays for it when it wakes
(cold caches, the exit and entry). A server that idles between bursts, as a client-bound one does, pays
it thousands of times a second, in amounts the host's other tenants decide: pajamax's CPU per request ran
0.19-0.25 µs in rounds of one run with halts, 0.16-0.17 µs in three runs polling (docs/run.md).

A latency request of 0 µs on /dev/cpu_dma_latency (the PM QoS interface) makes cpuidle pick its polling
state on every CPU. The request holds while the file is open, and the kernel drops it when the file is
closed, so a run that is killed leaves nothing set. Polling is spent in the idle task: no server is
charged for it.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

from rpcprof.errors import UserError

LATENCY_DEVICE = Path("/dev/cpu_dma_latency")
IDLE_MODES = ("halt", "poll")


class IdlePoll:
    """Holds a 0 µs latency request until stopped (a Session owns it)."""

    def __init__(self, device: Path = LATENCY_DEVICE):
        self.device = device
        try:
            self.fd: int | None = os.open(device, os.O_WRONLY)
        except OSError as e:
            raise UserError(f"--idle poll: cannot open {device} ({e.strerror}): it needs Linux's PM QoS and "
                            "root; or measure with --idle halt") from None
        try:
            os.write(self.fd, struct.pack("i", 0))
        except OSError as e:
            self.stop()
            raise UserError(f"--idle poll: {device} refused a 0 µs request ({e.strerror}); measure with --idle "
                            "halt") from None

    def stop(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def latency_request(device: Path = LATENCY_DEVICE) -> int | None:
    """The CPUs' current latency limit in µs (the strictest request held), None where it cannot be read."""
    try:
        with open(device, "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except (OSError, struct.error):
        return None


def poll_time_us(cpu: int) -> int | None:
    """Microseconds CPU cpu has spent in cpuidle's polling state since boot; None without cpuidle."""
    base = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpuidle")
    for state in sorted(base.glob("state*")):
        try:
            if (state / "name").read_text().strip() == "POLL":
                return int((state / "time").read_text())
        except (OSError, ValueError):
            return None
    return None
