"""--idle poll: keep the CPUs polling when idle instead of halting, for as long as a run measures.

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
(jobs/leftovers.py).
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.errors import UserError

CPU_ROOT = Path("/sys/devices/system/cpu")
IDLE_MODES = ("halt", "poll")
POLL = "n/a"            # no resume latency tolerated: poll
NO_CONSTRAINT = "0"     # the kernel's default


def resume_latency_file(cpu: int, root: Path = CPU_ROOT) -> Path:
    return root / f"cpu{cpu}" / "power" / "pm_qos_resume_latency_us"


class IdlePoll:
    """The given CPUs poll when idle until stopped (a Session owns it); their old settings come back then."""

    def __init__(self, cpus: list[int], root: Path = CPU_ROOT):
        self.saved: dict[Path, str] = {}
        for cpu in cpus:
            path = resume_latency_file(cpu, root)
            try:
                old = path.read_text().strip()
                path.write_text(POLL)
            except OSError as e:
                self.stop()
                raise UserError(f"--idle poll: cannot set {path} ({e.strerror}): it needs Linux's per-CPU PM QoS "
                                "and root; or measure with --idle halt") from None
            self.saved[path] = old

    def stop(self) -> None:
        for path, old in list(self.saved.items()):
            try:
                path.write_text(old)
            except OSError:
                pass            # a CPU gone offline keeps nothing to restore
            del self.saved[path]


def release(cpus: list[int], root: Path = CPU_ROOT) -> list[int]:
    """Give CPUs left polling by a run that was killed their default back; the CPUs that were polling."""
    done = []
    for cpu in cpus:
        path = resume_latency_file(cpu, root)
        try:
            if path.read_text().strip() == POLL:
                path.write_text(NO_CONSTRAINT)
                done.append(cpu)
        except OSError:
            continue
    return done


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
