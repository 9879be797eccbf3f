"""The host card: what this host charges for the unit costs RPC servers are made of, measured in about a
second before each round of a run (the run's card combines them: combine), so that runs on different hosts
can be set side by side (report/hosts.py), and a round's figures beside the host as it was then.

Hosts of one machine kind differ 1.7-3.8x in a server's CPU per request, and unevenly across servers: a
server that writes once per response pays the host's loopback write, one that sleeps between bursts its
wake-ups. tools/hostcard.c measures each unit on the run's own CPUs, with the run's idle setting in
force: a bare syscall, a 100-byte loopback TCP write (the peer's receive included, as the sender runs
it), a cross-CPU wake-up over a pipe (its latency, and the server CPU's own CPU for it), a fixed
user-space loop, and what user code spends on: a dependent load in working sets that sit in L1, L2, L3
and DRAM (sized from the CPU's caches in sysfs), a malloc/free pair of mixed sizes and an indirect call to
an unpredictable target. Each is the median of 7 batches, with their min and max. The program is built
with cc on first use and kept, by its source's hash, in the user's cache folder. What was busy beside it
while it ran (other programs, each CPU's steal) is recorded in it (measure/neighbours.py): a card taken
beside them is not the host's.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from rpcprof.host_units import HOST_UNITS
from rpcprof.measure.children import boot_id
from rpcprof.measure.idle import idle_driver
from rpcprof.measure.neighbours import NeighbourWindow
from rpcprof.paths import ROOT
from rpcprof.records import halting_cpus, merge_busy

SOURCE = ROOT / "tools" / "hostcard.c"
TIMEOUT_S = 30


class HostCardError(Exception):
    """The card could not be made: why, in one line."""


def build(source: Path = SOURCE) -> Path:
    """The compiled program for this source, built once per source hash in the user's cache folder."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    exe = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rpcprof" / f"hostcard-{digest}"
    if exe.exists():
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(f".{os.getpid()}.tmp")
    try:
        r = subprocess.run(["cc", "-O2", "-pthread", str(source), "-o", str(tmp)], capture_output=True, text=True)
    except FileNotFoundError:
        raise HostCardError("no C compiler (cc) to build tools/hostcard.c: apt-get install gcc") from None
    if r.returncode != 0:
        raise HostCardError(f"cc could not build tools/hostcard.c: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    tmp.replace(exe)
    return exe


def measure(server_cpu: int, load_cpu: int, idle: str) -> dict:
    """The host card: each figure of tools/hostcard.c, and where and how it was taken."""
    exe = build()
    started, others = time.monotonic(), NeighbourWindow(halting=halting_cpus([server_cpu], [load_cpu], idle))
    others.start()
    try:
        r = subprocess.run([str(exe), str(server_cpu), str(load_cpu)], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise HostCardError(f"tools/hostcard.c took over {TIMEOUT_S} s") from None
    if r.returncode != 0:
        raise HostCardError((r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1])
    try:
        card = json.loads(r.stdout)
    except json.JSONDecodeError:
        raise HostCardError("tools/hostcard.c printed no JSON") from None
    return {**card, "seconds": round(time.monotonic() - started, 2), "server_cpu": server_cpu, "load_cpu": load_cpu,
            "idle": idle, "cpuidle_driver": idle_driver(), "boot_id": boot_id(), **others.busy()}


def combine(cards: list[dict]) -> dict:
    """A run's card from the cards it took, one before each round: each unit's median the median of the cards'
    medians, its min and max the lowest and highest batch of any card, its batches all of theirs; what was busy
    beside any of them; and each card as it was (`cards`, in round order), so that a round's figures can be set
    beside the host as it was then. One card is itself."""
    if len(cards) < 2:
        return cards[0]
    out = {**{k: v for k, v in cards[0].items() if k != "round"}, "neighbours": [], "steal": {},
           "seconds": round(sum(c.get("seconds", 0) for c in cards), 2)}
    for key, *_ in HOST_UNITS:
        each = [c[key] for c in cards if isinstance(c.get(key), dict)]
        if each:
            out[key] = {**each[0], "median": statistics.median(f["median"] for f in each),
                        "min": min(f["min"] for f in each), "max": max(f["max"] for f in each),
                        "batches": [b for f in each for b in f.get("batches") or []]}
    for c in cards:
        merge_busy(out, c)
    out["cards"] = [{k: v for k, v in c.items() if k != "cards"} for c in cards]
    return out


def card_line(card: dict | None) -> str:
    """`host: syscall 118 ns [112-125], ...`: each figure's median [min-max] over its batches."""
    if not card:
        return "host: no host card (runs made before it)"
    if card.get("error"):
        return f"host: no host card ({card['error']})"
    parts = [f"{label} {fmt.format(f['median'])} {unit} [{fmt.format(f['min'])}-{fmt.format(f['max'])}]"
             + (f" ({f['set_kib']:,} KiB)" if f.get("set_kib") else "")
             for key, label, unit, fmt in HOST_UNITS if (f := card.get(key))]
    of = (f"the median of {len(card['cards'])} cards' medians [their lowest-highest batch], a card before each round"
          if card.get("cards") else "median [min-max] of 7 batches each")
    return (f"host: {', '.join(parts)} ({of}, CPU {card.get('server_cpu')} and "
            f"{card.get('load_cpu')}, {card.get('seconds', 0):.1f} s"
            + (f"; taken from {card['taken_from']})" if card.get("taken_from") else ")"))
