"""Runs across hosts (report.py runs): how the hosts differ, unit cost by unit cost (each run's host card,
measure/hostcard.py), and how much of each server's change in CPU per request those unit costs predict
from the server's own counts, against the change measured.

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

from rpcprof.analyze.intervals import repeats_by_index
from rpcprof.host_units import HOST_UNITS
from rpcprof.report.tables import render

UNITS = [(key, f"{name} [{unit}]") for key, name, unit, _ in HOST_UNITS]


def host_key(manifest: dict) -> tuple:
    """What tells two hosts apart: the boot (a new host, or the same host rebooted) and the kernel."""
    return ((manifest.get("owner") or {}).get("boot_id"), (manifest.get("machine") or {}).get("kernel"))


def _unit(card: dict, key: str) -> float | None:
    f = (card or {}).get(key)
    return f.get("median") if isinstance(f, dict) else None


def host_rows(loaded: list[tuple[Path, dict, dict]]) -> list[dict]:
    """A row per run: its host (kernel, idle driver, idle setting) and each unit cost, with its factor
    over the first run's."""
    first = loaded[0][1].get("host") or {}
    rows = []
    for i, (d, manifest, _) in enumerate(loaded, 1):
        card = manifest.get("host") or {}
        row = {"#": i, "run": d.name, "kernel": (manifest.get("machine") or {}).get("kernel"),
               "idle": card.get("idle") or (manifest.get("parameters") or {}).get("idle") or "halt",
               "cpuidle": card.get("cpuidle_driver") or "-"}
        for key, _ in UNITS:
            v, v0 = _unit(card, key), _unit(first, key)
            row[key] = None if v is None else (f"{v:.3g}" + (f" (x{v / v0:.2f})" if v0 and i > 1 else ""))
        rows.append(row)
    return rows


def _counts(m: dict) -> dict | None:
    """A server's per-request counts and mean CPU µs per request over its rounds, from its result."""
    sc, proc = m.get("syscalls") or {}, m.get("proc_per_req") or {}
    cpu = list(repeats_by_index(m, "cpu_us_per_req").values())
    total = sc.get("per_req") if sc.get("per_req") is not None else sc.get("named_per_req")
    if not cpu or total is None or sc.get("writes_per_req") is None:
        return None
    writes = sc["writes_per_req"]
    return {"cpu_us": statistics.fmean(cpu), "writes": writes, "syscalls": max(0.0, total - writes),
            "sleeps": proc.get("voluntary_switches") or 0.0}


def _costs(c: dict, card: dict, rest: float | None = None, loop_factor: float = 1.0) -> dict:
    """The model's terms (µs per request) for counts c on a host with card; rest given: scaled by loop_factor."""
    sys_us = _unit(card, "syscall_ns") / 1e3
    wake = max(0.0, _unit(card, "wake_cpu_us") - 2 * sys_us)
    terms = {"writes": c["writes"] * _unit(card, "write_us"), "syscalls": c["syscalls"] * sys_us,
             "sleeps": c["sleeps"] * wake}
    terms["rest"] = max(0.0, c["cpu_us"] - sum(terms.values())) if rest is None else rest * loop_factor
    return terms


def predictions(loaded: list[tuple[Path, dict, dict]], servers: list[str]) -> list[dict]:
    """For each server and each run after the first whose host card and the first's are both there: the
    CPU µs per request measured on each host and the one the unit costs predict (module docstring)."""
    (_, m0, metrics0) = loaded[0]
    card0 = m0.get("host") or {}
    if any(_unit(card0, k) is None for k, _ in UNITS):
        return []
    out = []
    for i, (d, manifest, metrics) in enumerate(loaded[1:], 2):
        card = manifest.get("host") or {}
        if any(_unit(card, k) is None for k, _ in UNITS):
            continue
        loop = _unit(card, "loop_ns") / _unit(card0, "loop_ns")
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


PREDICTION_COLUMNS = [("server", "server"), ("run", "run"), ("measured_a", "#1 [µs/req]"),
                      ("measured_b", "measured [µs/req]"), ("predicted_b", "predicted [µs/req]"),
                      ("measured_factor", "measured x"), ("predicted_factor", "predicted x"),
                      ("explained_pct", "of the change predicted [%]")]
HOST_COLUMNS = [("#", "#"), ("run", "run"), ("kernel", "kernel"), ("cpuidle", "cpuidle"), ("idle", "idle")] + \
    UNITS


def prediction_line(p: dict) -> str:
    """What moved, term by term: `S on #2: 9.25 -> 30.1 µs/req measured, 12.3 predicted: writes 1.00/req x ...`."""
    a, ta, tb = p["counts_a"], p["terms_a"], p["terms_b"]
    terms = [f"writes {a['writes']:.2f}/req {ta['writes']:.2f} -> {tb['writes']:.2f}",
             f"other syscalls {a['syscalls']:.2f}/req {ta['syscalls']:.2f} -> {tb['syscalls']:.2f}",
             f"sleeps {a['sleeps']:.3f}/req {ta['sleeps']:.2f} -> {tb['sleeps']:.2f}",
             f"the rest {ta['rest']:.2f} -> {tb['rest']:.2f}"]
    moved = p["counts_b"]
    same = (f"; on {p['run']} it wrote {moved['writes']:.2f}/req and slept {moved['sleeps']:.3f}/req"
            if abs(moved["writes"] - a["writes"]) > 0.25 * max(a["writes"], 0.02)
            or abs(moved["sleeps"] - a["sleeps"]) > 0.25 * max(a["sleeps"], 0.02) else "")
    return (f"{p['server']} on {p['run']}: {p['measured_a']:.3g} -> {p['measured_b']:.3g} µs/req measured, "
            f"{p['predicted_b']:.3g} predicted by the unit costs ({'; '.join(terms)} µs/req){same}.")


def render_hosts(loaded: list[tuple[Path, dict, dict]], servers: list[str], fmt: str) -> tuple[str, dict]:
    """(text, record) of the hosts' section; ('', {}) when every run ran on one host."""
    if len({host_key(m) for _, m, _ in loaded}) < 2:
        return "", {}
    rows, preds = host_rows(loaded), predictions(loaded, servers)
    record = {"hosts": rows, "predictions": preds}
    if fmt in ("json", "csv"):
        return "", record
    text = ("\nThe runs ran on different hosts; each host's unit costs (its host card: median of 7 batches, x: over "
            "run #1's):\n\n" + render(rows, HOST_COLUMNS, fmt))
    missing = [r["#"] for r, (_, m, _) in zip(rows, loaded) if not _unit(m.get("host") or {}, "write_us")]
    if missing:
        text += (f"Run{'s' * (len(missing) > 1)} #{', #'.join(map(str, missing))} carr{'y' if len(missing) > 1 else 'ies'}"
                 " no host card (made before runs had one): how those hosts differ is not known.\n")
    if preds:
        text += ("\nWhat the unit costs predict from run #1's counts (writes, other syscalls and sleeps per request, "
                 "the rest scaled by the loop), against what was measured:\n\n" + render(preds, PREDICTION_COLUMNS, fmt)
                 + "".join(prediction_line(p) + "\n" for p in preds))
    return text, record
