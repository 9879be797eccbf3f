"""Runs across hosts (report.py runs): how the hosts differ, unit cost by unit cost (each run's host card,
measure/hostcard.py), and how much of each server's change in CPU per request those unit costs predict
from the server's own counts (analyze/hosts.py's model), against the change measured.
"""
from __future__ import annotations

from pathlib import Path

from rpcprof.analyze.hosts import predictions, unit_cost
from rpcprof.host_units import HOST_UNITS
from rpcprof.report.tables import Shown, render

UNITS = [(key, f"{name} [{unit}]") for key, name, unit, _ in HOST_UNITS]


def host_key(manifest: dict) -> tuple:
    """What tells two hosts apart: the boot (a new host, or the same host rebooted) and the kernel."""
    return ((manifest.get("owner") or {}).get("boot_id"), (manifest.get("machine") or {}).get("kernel"))


def host_rows(loaded: list[tuple[Path, dict, dict]]) -> list[dict]:
    """A row per run: its host (kernel, idle driver, idle setting) and each unit cost KEY, with its factor
    over the first run's (KEY_factor)."""
    first = loaded[0][1].get("host") or {}
    rows = []
    for i, (d, manifest, _) in enumerate(loaded, 1):
        card = manifest.get("host") or {}
        row = {"#": i, "run": d.name, "kernel": (manifest.get("machine") or {}).get("kernel"),
               "idle": card.get("idle") or (manifest.get("parameters") or {}).get("idle") or "halt",
               "cpuidle": card.get("cpuidle_driver") or "-"}
        for key, _ in UNITS:
            v, v0 = unit_cost(card, key), unit_cost(first, key)
            row[key], row[f"{key}_factor"] = v, (v / v0 if v is not None and v0 else None)
        rows.append(row)
    return rows


def unit_text(key: str):
    """A unit cost as the table shows it: `0.969 (x0.99)`, the factor from run #2 on."""
    def text(row: dict) -> str | None:
        v, x = row[key], row[f"{key}_factor"]
        return None if v is None else f"{v:.3g}" + (f" (x{x:.2f})" if x is not None and row["#"] > 1 else "")
    return text


UNIT_CELLS = {key: Shown(unit_text(key), ((key, header), (f"{key}_factor", f"{name} x")))
              for (key, header), (_, name, _, _) in zip(UNITS, HOST_UNITS)}


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
            "run #1's):\n\n" + render(rows, HOST_COLUMNS, fmt, UNIT_CELLS))
    missing = [r["#"] for r, (_, m, _) in zip(rows, loaded) if not unit_cost(m.get("host") or {}, "write_us")]
    if missing:
        text += (f"Run{'s' * (len(missing) > 1)} #{', #'.join(map(str, missing))} carr{'y' if len(missing) > 1 else 'ies'}"
                 " no host card (made before runs had one): how those hosts differ is not known.\n")
    if preds:
        text += ("\nWhat the unit costs predict from run #1's counts (writes, other syscalls and sleeps per request, "
                 "the rest scaled by the loop), against what was measured:\n\n" + render(preds, PREDICTION_COLUMNS, fmt)
                 + "".join(prediction_line(p) + "\n" for p in preds))
    return text, record
