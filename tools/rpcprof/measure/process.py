"""Servers under test as processes: started pinned, in a CPU-accounting cgroup of their own, polled with
real gRPC calls until ready, and stopped by PID (SIGTERM, then SIGKILL) on every exit path.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from contextlib import suppress
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import children
from rpcprof.measure.procstat import CgroupCpu, ProcessMonitor
from rpcprof.measure.recorder import log_tail
from rpcprof.measure.scenario import learn_reply
from rpcprof.measure.servers import ServerSpec
from rpcprof.profiler_names import perf_map


def check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as servers bind: a connection of a stopped server lingering in TIME_WAIT does not block the
        # port, a listener does
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            ss = children.output(["ss", "-Htanp", f"sport = :{port}"])       # whatever holds it: a listener ...
            held = [x for x in (ss.stdout if ss else "").splitlines() if "users:" in x]
            line = next((x for x in held if x.startswith("LISTEN")), held[0] if held else "")
            m = re.search(r'users:\(\("([^"]+)",pid=(\d+)', line)
            who = f" by pid {m.group(2)} ({m.group(1)})" if m else ""
            if not line or line.startswith("LISTEN"):
                raise UserError(f"port {port} is in use{who}: stop it or pass --port with a free port") from None
            # ... or a client connection given it as its local port, from the ephemeral range
            low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
            raise UserError(f"port {port} is the local end of a connection{who} (ports {low}-{high} are given to "
                            f"client connections): pass --port with one below {low}") from None


class ServerFailed(Exception):
    """This server could not be measured; the run goes on with the next."""


class ServerProcess:
    """A server started pinned, in a CPU-accounting cgroup of its own; stop() by PID, always."""

    def __init__(self, spec: ServerSpec, argv: list[str], cpus: list[int], log_path: Path, cgroup_name: str):
        self.spec, self.log_path = spec, log_path
        self.log = open(log_path, "wb")
        # workdir: run: the server writes its profiling files (V8's jitdump) into the run folder
        self.workdir = log_path.parent / "workdir" if spec.workdir == "run" else spec.folder
        self.workdir.mkdir(exist_ok=True)
        self.keep_workdir = False     # set once a profile refers to files in it
        pinned = ["taskset", "-c", ",".join(map(str, cpus)), *argv]
        try:
            self.proc = children.popen(pinned, cwd=self.workdir, stdout=self.log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            self.log.close()
            raise ServerFailed(f"{spec.name}: could not start {argv[0]}: {e.strerror} "
                               f"(build it with servers/{spec.name}/build.sh)") from None
        self.pid = self.proc.pid
        try:
            self.cgroup = CgroupCpu(cgroup_name)
            self.cgroup.add(self.pid)
        except OSError:
            self.cgroup = None   # fall back to per-thread schedstat polling
        self.monitor = ProcessMonitor(self.pid, self.cgroup)
        self.reply = None             # learned by wait_ready

    def exited(self) -> int | None:
        return self.proc.poll()

    def wait_ready(self, scenario, port: int, timeout: float) -> float:
        """Poll with real gRPC calls until they succeed; returns seconds taken. The reply they got is kept
        in self.reply (what OK responses are counted by)."""
        t0 = time.monotonic()
        problem = "no answer"
        while time.monotonic() - t0 < timeout:
            if self.exited() is not None:
                raise ServerFailed(f"{self.spec.name} exited with status {self.proc.returncode} before it was "
                                   f"ready: {log_tail(self.log_path)}")
            self.reply, problem = learn_reply(scenario, port, timeout=1.0)
            if problem is None:
                return time.monotonic() - t0
            if not problem.startswith("grpc-status UNAVAILABLE"):
                raise ServerFailed(f"{self.spec.name} answered {scenario.method} wrongly: {problem}")
            time.sleep(0.1)
        raise ServerFailed(f"{self.spec.name} did not answer a gRPC call within {timeout:g} s ({problem}): "
                           f"{log_tail(self.log_path)}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; the whole session, so no child outlives it."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with suppress(ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.pid, sig)
                self.proc.wait(timeout=5.0)
        self.monitor.stop()
        if self.cgroup:
            self.cgroup.remove()
        self.log.close()
        # JIT runtimes started with --perf-basic-prof leave their symbol map behind
        perf_map(self.pid).unlink(missing_ok=True)
        if self.workdir != self.spec.folder and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)    # no profile needs its jitdump
