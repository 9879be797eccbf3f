"""What a run sets on the machine for as long as it measures, and what it measures of the host: the
server CPUs' idle (--idle poll, spin or halt, measure/idle.py) and the host card (measure/hostcard.py).
Each is said in one line and recorded; a setting that cannot be made falls back, says so and records
what the run did instead.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.measure import hostcard
from rpcprof.measure.idle import IdlePoll, IdleSpin, NoPollingState, poll_time_us
from rpcprof.measure.session import Session
from rpcprof.progress import log
from rpcprof.rundir import load_manifest

HALTING = "this run's server CPUs halt when idle (recorded as --idle halt)"


def hold_idle(mode: str, cpus: list[int], machine: Session) -> tuple[str, object | None]:
    """(the mode in force, what holds it) for --idle mode on cpus, owned by machine: poll where cpuidle
    offers a polling state, else a SCHED_IDLE busy loop (spin); halt where neither can be set."""
    holders = {"poll": IdlePoll, "spin": IdleSpin}
    while mode in holders:
        try:
            return mode, machine.own(holders[mode](cpus))
        except NoPollingState as e:
            log(f"rpcprof: {e}; a SCHED_IDLE busy loop keeps them from halting instead (recorded as --idle spin)")
            mode = "spin"
        except UserError as e:
            log(f"rpcprof: WARNING: {e}; {HALTING}")
            mode = "halt"
    return mode, None


class IdleEffect:
    """What the idle setting did between start and end, measured: the time the server's CPUs spent polling,
    or the busy loop's CPU; a poll that took no time at all is named as having taken no effect."""

    def __init__(self, mode: str, cpus: list[int], holder):
        self.mode, self.cpus, self.holder = mode, cpus, holder
        self.polled = [poll_time_us(c) for c in cpus]
        self.spun = holder.cpu_seconds() if isinstance(holder, IdleSpin) else 0.0

    def line(self) -> str | None:
        if self.mode == "poll":
            after = [poll_time_us(c) for c in self.cpus]
            spent = sum((b - a) / 1e6 for a, b in zip(self.polled, after) if a is not None and b is not None)
            if spent > 0:
                return f"rpcprof: --idle poll: the server's CPUs polled {spent:.1f} s while idle during the rounds"
            return ("rpcprof: --idle poll: the server's CPUs spent no time polling during the rounds: they never "
                    "idled, or the setting took no effect")
        if self.mode == "spin":
            return (f"rpcprof: --idle spin: the busy loop ran {self.holder.cpu_seconds() - self.spun:.1f} s on the "
                    "server's CPUs while the server idled during the rounds")
        return None


def card_of(source: Path, server_cpu: int, load_cpu: int, idle: str) -> dict:
    """The host card of an earlier run (--host-card RUN, its folder), to take as this run's; UserError in one line
    when it has none, or was measured on another boot, other CPUs or another --idle."""
    card = load_manifest(source).get("host") or {}
    wrong = ("it holds none" if not card or card.get("error") else
             "it was measured before this machine last booted" if card.get("boot_id") != hostcard.boot_id() else
             f"it was measured on CPUs {card.get('server_cpu')} and {card.get('load_cpu')} with --idle {card.get('idle')}, "
             f"this run's are {server_cpu} and {load_cpu} with --idle {idle}"
             if (card.get("server_cpu"), card.get("load_cpu"), card.get("idle")) != (server_cpu, load_cpu, idle) else None)
    if wrong:
        raise UserError(f"--host-card {source}: {wrong}; give a run of this boot with the same CPUs and --idle, "
                        "or leave --host-card out to measure the card")
    return {**card, "taken_from": str(source)}


def host_card(card: dict | None, server_cpu: int, load_cpu: int, idle: str) -> dict:
    """The host card: card when a sweep measured it already, else measured now; its line printed. A card
    that cannot be made is a warning and an {"error": ...} record, never a lost run."""
    if card is None:
        try:
            card = hostcard.measure(server_cpu, load_cpu, idle)
        except (hostcard.HostCardError, OSError) as e:
            log(f"rpcprof: WARNING: no host card: {e}")
            card = {"error": str(e)}
    log(f"rpcprof: {hostcard.card_line(card)}")
    return card
