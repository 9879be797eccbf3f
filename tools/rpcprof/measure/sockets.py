"""TCP socket state sampled during a window: `ss -tin` on the server's connections, both ends.

Every INTERVAL a thread runs `ss -tinH state established '( sport = :P or dport = :P )'` pinned to the
load CPUs (never the server's) and appends its output to a log, each sample headed `# t=SECONDS`. The
log is the saved capture; report/waits.py reads it back, analyze/waits.py parses and
summarises it. The fields used (ss(8), from the kernel's tcp_info):
  notsent   bytes written by the application that TCP has not sent yet
  unacked   segments sent and not acknowledged yet
  cwnd, mss congestion window (segments) and segment size
  rtt       smoothed RTT/variance (ms), minrtt the smallest RTT seen (ms)
  ato       the delayed-ACK timeout of this end (ms): how long it may hold an ACK
Data waiting (notsent > 0) while fewer segments than cwnd are unacked is not held by congestion
control: on a socket without TCP_NODELAY it is Nagle's algorithm holding a small segment until the
previous one is acknowledged.
"""
from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from rpcprof.measure.recorder import require

INTERVAL = 0.05          # seconds between samples


def listening_ports(pid: int) -> list[int]:
    """The TCP ports pid listens on (ss -tlnp)."""
    ss = require("ss", "run tools/setup.sh (Debian package iproute2)")
    out = subprocess.run([ss, "-tlnpH"], capture_output=True, text=True).stdout
    return sorted({int(m.group(1)) for line in out.splitlines() if re.search(rf"\bpid={pid},", line)
                   and (m := re.search(r"\S+:(\d+)\s+\S+:\S+", line))})


class SocketSampler:
    """Samples the connections of ports into log every interval seconds until stopped (the session owns it);
    late: from start() on, a marker of procstat.Marks called when the driver's timed window begins, after its
    lead (the samples' times count from there)."""

    def __init__(self, log: Path, ports: list[int], cpus: tuple[int, ...] | list[int] = (), interval: float = INTERVAL,
                 late: bool = False):
        self.log, self.ports, self.interval = Path(log), list(ports), interval
        ss = require("ss", "run tools/setup.sh (Debian package iproute2)")
        pin = ["taskset", "-c", ",".join(map(str, cpus))] if cpus else []
        self.argv = [*pin, ss, "-tinH", "state", "established",
                     "( " + " or ".join(f"sport = :{p} or dport = :{p}" for p in self.ports) + " )"]
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rpcprof-ss", daemon=True)
        if not late:
            self.start()

    def start(self, _pid: int | None = None) -> None:
        if self._thread.ident is None:
            self._thread.start()

    def end(self, _pid: int | None = None) -> None:
        """The sampling ends when the session stops it."""

    def _loop(self) -> None:
        t0 = time.monotonic()
        with open(self.log, "w") as f:
            while not self._stop.is_set():
                started = time.monotonic()
                out = subprocess.run(self.argv, capture_output=True, text=True).stdout
                f.write(f"# t={started - t0:.3f}\n{out}")
                self.samples += 1
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def stop(self) -> int:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=10)
        return self.samples
