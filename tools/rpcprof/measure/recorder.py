"""A recording process (perf record, perf stat, py-spy...) attached to a PID until stop(), owned by a
Session so that it is stopped on every exit path; and `require`, which names the setup step when a tool
is missing. Below both measure/ and capture/, so that neither imports the other for them.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import children


def require(tool: str, how: str = "run tools/setup.sh") -> str:
    path = shutil.which(tool)
    if not path:
        raise UserError(f"{tool} not found: {how}")
    return path


class Recorder:
    """A profiler attached to one PID until stop(); stop() always leaves no process behind."""

    def __init__(self, argv: list[str], out_path: Path, log_path: Path, stop_signal=signal.SIGINT):
        self.argv = argv
        self.out_path = out_path
        self.log_path = log_path
        self.stop_signal = stop_signal
        self.log = open(log_path, "wb")
        self.proc = children.popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def wait_attached(self, timeout: float = 10.0) -> None:
        """Poll until the profiler has written its output header (perf) or is running (py-spy)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                tail = " | ".join(self.log_path.read_text(errors="replace").strip().splitlines()[-3:])
                raise UserError(f"{Path(self.argv[0]).name} exited at start (status {self.proc.returncode}): {tail}")
            if self.out_path.name.endswith(".data"):
                if self.out_path.exists() and self.out_path.stat().st_size > 0:
                    return
            elif time.monotonic() - t0 > 0.5:
                return
            time.sleep(0.05)

    def stop(self, timeout: float = 120.0) -> int:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, self.stop_signal)
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log.close()
        return self.proc.returncode
