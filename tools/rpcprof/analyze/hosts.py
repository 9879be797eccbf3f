"""Runs across hosts: how much of each server's change in CPU per request from one host to another the hosts'
unit costs (each run's host card, measure/hostcard.py) predict from the server's own counts
(report/hosts.py sets it against the change measured, in report.py runs).

The model, for a server measured on host A (the first run) and host B:
  CPU/req = writes/req x write + other syscalls/req x syscall + sleeps/req x wake-up CPU + rest
where writes and other syscalls per request are the run's syscall counts, sleeps per request its
voluntary context switches (each a sleep and a wake-up of a server thread), and the rest what the three
leave of A's measured CPU per request: the server's own code, scaled from A to B by the card's fixed
user-space loop. A wake-up's unit is the card's CPU per round trip on the server's CPU less the two bare
syscalls of that round trip, which the syscall counts already hold. The prediction for B is the same
sum with B's unit costs and A's counts: what the host alone would change, if the server did the same work
per request on both. A measured change far from it says the server's work moved too (its batching, its
pace) or that a cost the card does not hold moved.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from rpcprof.analyze.intervals import figure_by_round
from rpcprof.host_units import HOST_UNITS


def unit_cost(card: dict, key: str) -> float | None:
    """A host card's unit cost (its median), or None."""
    f = (card or {}).get(key)
    return f.get("median") if isinstance(f, dict) else None


def _counts(m: dict) -> dict | None:
    """A server's per-request counts and mean CPU µs per request over its rounds, from its result."""
    sc, proc = m.get("syscalls") or {}, m.get("proc_per_req") or {}
    cpu = list(figure_by_round(m, "cpu_us_per_req").values())
    total = sc.get("per_req") if sc.get("per_req") is not None else sc.get("named_per_req")
    if not cpu or total is None or sc.get("writes_per_req") is None:
        return None
    writes = sc["writes_per_req"]
    return {"cpu_us": statistics.fmean(cpu), "writes": writes, "syscalls": max(0.0, total - writes),
            "sleeps": proc.get("voluntary_switches") or 0.0}


def _costs(c: dict, card: dict, rest: float | None = None, loop_factor: float = 1.0) -> dict:
    """The model's terms (µs per request) for counts c on a host with card; rest given: scaled by loop_factor."""
    sys_us = unit_cost(card, "syscall_ns") / 1e3
    wake = max(0.0, unit_cost(card, "wake_cpu_us") - 2 * sys_us)
    terms = {"writes": c["writes"] * unit_cost(card, "write_us"), "syscalls": c["syscalls"] * sys_us,
             "sleeps": c["sleeps"] * wake}
    terms["rest"] = max(0.0, c["cpu_us"] - sum(terms.values())) if rest is None else rest * loop_factor
    return terms


def predictions(loaded: list[tuple[Path, dict, dict]], servers: list[str]) -> list[dict]:
    """For each server and each run after the first whose host card and the first's are both there: the
    CPU µs per request measured on each host and the one the unit costs predict (module docstring)."""
    (_, m0, metrics0) = loaded[0]
    card0 = m0.get("host") or {}
    if any(unit_cost(card0, k) is None for k, *_ in HOST_UNITS):
        return []
    out = []
    for i, (d, manifest, metrics) in enumerate(loaded[1:], 2):
        card = manifest.get("host") or {}
        if any(unit_cost(card, k) is None for k, *_ in HOST_UNITS):
            continue
        loop = unit_cost(card, "loop_ns") / unit_cost(card0, "loop_ns")
        for s in servers:
            a, b = _counts(metrics0.get(s) or {}), _counts(metrics.get(s) or {})
            if a is None or b is None:
                continue
            here = _costs(a, card0)
            there = _costs(a, card, here["rest"], loop)
            predicted = sum(there.values())
            out.append({"server": s, "run": f"#{i}", "measured_a": a["cpu_us"], "measured_b": b["cpu_us"],
                        "predicted_b": predicted, "measured_factor": b["cpu_us"] / a["cpu_us"],
                        "predicted_factor": predicted / a["cpu_us"],
                        "explained_pct": (100 * (predicted - a["cpu_us"]) / (b["cpu_us"] - a["cpu_us"])
                                          if abs(b["cpu_us"] - a["cpu_us"]) > 1e-9 else None),
                        "terms_a": here, "terms_b": there, "counts_a": a, "counts_b": b})
    return out
