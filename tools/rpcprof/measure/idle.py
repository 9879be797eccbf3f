"""--idle poll: the server's CPUs poll when idle instead of halting, for as long as a run measures.

In a virtual machine an idle CPU halts (the haltpoll cpuidle driver, with halt-polling off on this
machine kind): the host may run something else on that core, and the server pays for it when it wakes
(cold caches, the exit and entry). A server that idles between bursts, as a client-bound one does, pays
it thousands of times a second, in amounts the host's other tenants decide: pajamax's CPU per request ran
0.19-0.25 µs in the rounds of one run halting, 0.166-0.175 µs in two runs polling (docs/run.md).

Writing "n/a" to a CPU's PM QoS resume latency (/sys/devices/system/cpu/cpuN/power/
pm_qos_resume_latency_us) makes cpuidle pick its polling state on that CPU only: the server's CPUs poll,
the load generator's keep halting. (A 0 µs request on /dev/cpu_dma_latency does it on every CPU: the load
generator then woke sooner too, and tonic_mt ran more of its rounds in its slow pace, docs/run.md.)
Polling is spent in the idle task: no server is charged for it. The old values are written back when
the run ends; after a run killed without warning, the next invocation writes them back
(jobs/base.py, tidy_leftovers).

PM QoS only chooses among the idle states cpuidle offers. Some hosts of this machine kind run no cpuidle
driver (/sys/devices/system/cpu/cpuidle/current_driver reads `none`, no cpuN/cpuidle/ folder): there the
write succeeds and changes nothing, and an idle CPU halts. So a run checks first that each server CPU
has cpuidle's polling state; where one has none, --idle spin keeps it from halting another way: a busy
loop at SCHED_IDLE priority pinned to it, outside the server's cgroup, which runs only when nothing else
wants the CPU and gives way at once when the server wakes (IdleSpin). Its CPU time is measured and said.
"""
from __future__ import annotations

import json
import subprocess
import time
from contextlib import suppress
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure.children import identity, popen, read_stripped, still_running
from rpcprof.measure.procstat import process_cpu_ns

CPU_ROOT = Path("/sys/devices/system/cpu")
IDLE_MODES = ("halt", "poll", "spin")
POLL = "n/a"            # no resume latency tolerated: poll
NO_CONSTRAINT = "0"     # the kernel's default
# who holds the setting and what it replaced, machine-wide (a tmpfs, cleared at boot as the setting is): any
# later invocation, whatever its runs folder, gives it back when its holder is gone (jobs/base.py)
STATE = Path("/run/rpcprof/idle-poll.json")
SPIN_ARGV = ["chrt", "--idle", "0", "taskset", "-c", "{cpu}", "sh", "-c", "while :; do :; done"]


class NoPollingState(UserError):
    """A server CPU offers cpuidle no polling state: PM QoS would change nothing there."""


def polling_state(cpu: int, root: Path = CPU_ROOT) -> Path | None:
    """The folder of cpuidle's polling state of CPU cpu (a driver's state named POLL); None if it has none."""
    states = sorted((root / f"cpu{cpu}" / "cpuidle").glob("state*"))
    return next((state for state in states if read_stripped(state / "name") == "POLL"), None)


def idle_driver(root: Path = CPU_ROOT) -> str:
    return read_stripped(root / "cpuidle" / "current_driver") or "none"


def resume_latency_file(cpu: int, root: Path = CPU_ROOT) -> Path:
    return root / f"cpu{cpu}" / "power" / "pm_qos_resume_latency_us"


class IdlePoll:
    """The given CPUs poll when idle until stopped (a Session owns it); their old settings come back then."""

    def __init__(self, cpus: list[int], root: Path = CPU_ROOT, state: Path = STATE):
        self.saved: dict[Path, str] = {}
        self.state = state
        if missing := [c for c in cpus if not polling_state(c, root)]:
            raise NoPollingState(f"--idle poll: CPU {', '.join(map(str, missing))} has no polling idle state (cpuidle "
                                 f"driver {idle_driver(root)}): PM QoS would change nothing there")
        if holder_alive(state):
            return              # another rpcprof holds it: the CPUs poll already, and it gives them back
        for cpu in cpus:
            path = resume_latency_file(cpu, root)
            try:
                old = path.read_text().strip()
                path.write_text(POLL)
            except OSError as e:
                self.stop()
                raise UserError(f"--idle poll: cannot set {path} ({e.strerror}): it needs Linux's per-CPU PM QoS "
                                "and root; or measure with --idle halt") from None
            self.saved[path] = NO_CONSTRAINT if old == POLL else old     # POLL: a killed run's, not the machine's
        with suppress(OSError):     # not recorded: this run still gives the CPUs back on any exit but SIGKILL
            state.parent.mkdir(parents=True, exist_ok=True)
            state.write_text(json.dumps({"owner": identity(), "saved": {str(p): v for p, v in self.saved.items()}}))

    def stop(self) -> None:
        give_back(self.saved)
        self.saved = {}
        if self.state.exists() and not holder_alive(self.state):
            self.state.unlink(missing_ok=True)


class IdleSpin:
    """The module's busy loop on each given CPU until stopped (a Session owns it): the CPU never halts. The loops
    are rpcprof's children, in no cgroup of a server's, so no server is charged for them; they die with rpcprof."""

    def __init__(self, cpus: list[int]):
        self.procs = []
        for cpu in cpus:
            argv = [a.format(cpu=cpu) for a in SPIN_ARGV]
            try:
                self.procs.append(popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
            except OSError as e:
                self.stop()
                raise UserError(f"--idle spin: cannot start {' '.join(argv[:4])} ({e.strerror}): it needs util-linux's "
                                "chrt and taskset; or measure with --idle halt") from None
        for p in self.procs:            # in force before the run measures: chrt and taskset have exec'd the loop (sh)
            end = time.monotonic() + 5.0
            while p.poll() is None and read_stripped(f"/proc/{p.pid}/comm") != "sh" and time.monotonic() < end:
                time.sleep(0.005)
            if p.poll() is not None or read_stripped(f"/proc/{p.pid}/comm") != "sh":
                self.stop()
                raise UserError("--idle spin: the busy loop did not start (chrt --idle or taskset failed); or measure "
                                "with --idle halt")

    def cpu_seconds(self) -> float:
        """CPU the loops have used so far (what the server's CPUs spent idle, kept busy)."""
        return sum(process_cpu_ns(p.pid) for p in self.procs) / 1e9

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []


def _read_state(state: Path) -> dict | None:
    with suppress(OSError, ValueError):
        data = json.loads(state.read_text())
        return data if isinstance(data, dict) else None
    return None


def holder_alive(state: Path = STATE) -> bool:
    """True if an rpcprof other than this process holds the setting and still runs."""
    owner = (_read_state(state) or {}).get("owner")
    return isinstance(owner, dict) and owner.get("pid") != identity()["pid"] and still_running(owner)


def release_stale(state: Path = STATE) -> list[str]:
    """The settings a killed rpcprof left: written back, the state removed; the files given back."""
    data = _read_state(state)
    if data is None or holder_alive(state) or (data.get("owner") or {}).get("pid") == identity()["pid"]:
        return []
    done = give_back(data.get("saved") or {})
    state.unlink(missing_ok=True)
    return done


def give_back(saved: dict) -> list[str]:
    """Each file's old setting written back; the files written (a CPU gone offline keeps nothing to restore)."""
    done = []
    for path, old in saved.items():
        with suppress(OSError):
            Path(path).write_text(old)
            done.append(str(path))
    return done


def poll_time_us(cpu: int) -> int | None:
    """Microseconds CPU cpu has spent in cpuidle's polling state since boot; None without cpuidle."""
    state = polling_state(cpu)
    with suppress(OSError, ValueError):
        return int((state / "time").read_text()) if state else None
    return None
