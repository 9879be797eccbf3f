"""Runs across hosts (report.py runs): how the hosts differ, unit cost by unit cost (each run's host card,
measure/hostcard.py), and how much of each server's change in CPU per request those unit costs predict
from the server's own counts (analyze/hosts.py's model), against the change measured.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from rpcprof.analyze.categorize import Rules
from rpcprof.analyze.hosts import (HOSTS_TO_SCORE, MAX_SLOPES, TARGET_PCT, LedgerHost, alike_cards, leave_one_out,
                                   predictions, unit_cost)
from rpcprof.analyze.intervals import median_interval
from rpcprof.analyze.waits import contention
from rpcprof.errors import UserError
from rpcprof.host_units import FIRST_UNITS, HOST_UNITS
from rpcprof.paths import ROOT
from rpcprof.report.compare import compare_rows
from rpcprof.records import beside_busy
from rpcprof.report.summary import busy_parts
from rpcprof.report.tables import Shown, render
from rpcprof.rundir import load_run, write_text

UNITS = [(key, f"{name} [{unit}]") for key, name, unit, _ in HOST_UNITS]


def host_key(manifest: dict) -> tuple:
    """What tells two hosts apart: the boot (a new host, or the same host rebooted) and the kernel."""
    return ((manifest.get("owner") or {}).get("boot_id"), (manifest.get("machine") or {}).get("kernel"))


def host_rows(loaded: list[tuple[Path, dict, dict]]) -> list[dict]:
    """A row per run: its host (kernel, idle driver and setting), each unit cost KEY and KEY_factor over run #1's."""
    first = loaded[0][1].get("host") or {}
    rows = []
    for i, (d, manifest, _) in enumerate(loaded, 1):
        card = manifest.get("host") or {}
        costs = {key: (unit_cost(card, key), unit_cost(first, key)) for key, _ in UNITS}
        rows.append({"#": i, "run": d.name, "kernel": host_key(manifest)[1],
                     "idle": card.get("idle") or (manifest.get("parameters") or {}).get("idle") or "halt",
                     "cpuidle": card.get("cpuidle_driver") or "-", **{key: v for key, (v, _) in costs.items()},
                     **{f"{key}_factor": v / v0 if v is not None and v0 else None for key, (v, v0) in costs.items()}})
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


# `23.1`, or why no share is given: the change lies within the runs' own noise, or their noise is unknown
PREDICTION_CELLS = {"explained_pct": Shown(
    lambda p: ("noise unknown (one round)" if p["beyond_noise"] is None else
               f"{p['explained_pct']:.1f}" if p["beyond_noise"] else "no change beyond noise"),
    (("explained_pct", "of the change predicted [%]"), ("noise_us", "noise [µs/req]")))}
HOST_COLUMNS = [("#", "#"), ("run", "run"), ("kernel", "kernel"), ("cpuidle", "cpuidle"), ("idle", "idle"), *UNITS]


def prediction_line(p: dict) -> str:
    """What moved, term by term: `S on #2: 9.25 -> 30.1 µs/req measured, 12.3 predicted: writes 1.00/req x ...`."""
    a, ta, tb = p["counts_a"], p["terms_a"], p["terms_b"]
    terms = [f"{name} {a[k]:.{n}f}/req {ta[k]:.2f} -> {tb[k]:.2f}"
             for k, name, n in (("writes", "writes", 2), ("syscalls", "other syscalls", 2), ("sleeps", "sleeps", 3))]
    terms.append(f"the rest {ta['rest']:.2f} -> {tb['rest']:.2f}")
    moved = p["counts_b"]
    same = (f"; on {p['run']} it wrote {moved['writes']:.2f}/req and slept {moved['sleeps']:.3f}/req"
            if any(abs(moved[k] - a[k]) > 0.25 * max(a[k], 0.02) for k in ("writes", "sleeps")) else "")
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
    columns = [(k, h) for k, h in HOST_COLUMNS if k not in UNIT_CELLS or any(r[k] is not None for r in rows)]
    text = ("\nThe runs ran on different hosts; each host's unit costs (its host card: median of 7 batches, x: over "
            "run #1's):\n\n" + render(rows, columns, fmt, UNIT_CELLS))
    if missing := [r["#"] for r, (_, m, _) in zip(rows, loaded) if not unit_cost(m.get("host") or {}, "write_us")]:
        text += (f"Run{'s' * (len(missing) > 1)} #{', #'.join(map(str, missing))} carr{'y' if len(missing) > 1 else 'ies'}"
                 " no host card (made before runs had one): how those hosts differ is not known.\n")
    if busy := [r["#"] for r, (_, m, _) in zip(rows, loaded) if beside_busy(m.get("host") or {})]:
        text += (f"Run{'s' * (len(busy) > 1)} #{', #'.join(map(str, busy))}: the host card was measured beside busy "
                 "programs or a stolen CPU (BUSY-HOST): its unit costs are not its host's alone, and nothing is "
                 "predicted with them.\n")
    if preds:
        text += ("\nWhat the unit costs predict from run #1's counts (writes, other syscalls and sleeps per request, "
                 "the rest scaled by the loop), against what was measured:\n\n"
                 + render(preds, PREDICTION_COLUMNS, fmt, PREDICTION_CELLS)
                 + "".join(prediction_line(p) + "\n" for p in preds))
    return text, record


# The ledger of hosts (report.py hosts add): one line per host met, for the README's setup, fixed here (not
# taken from today's defaults: a line must stay comparable with the lines before it when those move). Its
# --idle poll records spin on a host with no cpuidle polling state (measure/idle.py): both keep the CPU awake.
LEDGER = ROOT / "docs" / "data" / "hosts.jsonl"
README_SETUP = {"servers": ["rust_tonic_mt", "rust_pajamax"], "scenario": "helloworld", "connections": 1,
                "streams": 1000, "driver": "h2load", "duration": 6.0, "warmup": 2.0, "idle": ("poll", "spin"),
                "server_cpus": [0], "params": {}}


def setup_mismatch(manifest: dict) -> str | None:
    """Why a run is not the README's setup (`its streams is 100`), or None."""
    if manifest.get("mode") != "run":
        return f"it is {'an' if manifest.get('mode') == 'attach' else 'a'} {manifest.get('mode')}, not a run"
    p = manifest.get("parameters") or {}
    for key, want in README_SETUP.items():
        allowed = want if isinstance(want, tuple) else (want,)
        if p.get(key, {} if key == "params" else None) not in allowed:
            return f"its {key} is {p.get(key, 'not recorded')}, the README's {' or '.join(map(str, allowed))}"
    return None


def run_entry(run_dir: Path, rules: Rules) -> tuple[dict, dict]:
    """(manifest, {server: {category: CPU µs/req}}) of a run of the README's setup with a host card; UserError else."""
    manifest, metrics = load_run(run_dir)
    if why := setup_mismatch(manifest):
        raise UserError(f"{run_dir}: not the README's setup (./profile.sh run rust_tonic_mt rust_pajamax): {why}")
    if any(unit_cost(manifest.get("host") or {}, k) is None for k in FIRST_UNITS):
        raise UserError(f"{run_dir}: no host card in its manifest (made before runs had one)")
    contended = [s for s, m in metrics.items() if m.get("offcpu")
                 and contention({**m["offcpu"], "off_cpu_us": (m["offcpu"].get("off_cpu_s") or 0) * 1e6}, None)]
    if contended:
        raise UserError(f"{run_dir}: {', '.join(contended)} CPU-CONTENDED (other programs had the server's CPU): its "
                        "figures are not the host's; run again with the machine otherwise idle")
    if busy := busy_parts(manifest, metrics):
        raise UserError(f"{run_dir}: BUSY-HOST: {', '.join(busy)}: its figures are not the host's alone; run again "
                        "with the machine otherwise idle")
    rows = compare_rows(run_dir, rules)[0]
    return manifest, {s: {r["category"]: r[f"{s}_us"] for r in rows if r["category"] != "total"}
                      for s in README_SETUP["servers"]}


def figure(x: float) -> float:
    """A ledger's figure: four significant digits, more than any of them holds."""
    return float(f"{x:.4g}")


def ledger_line(runs: list[tuple[Path, dict, dict]]) -> dict:
    """The ledger's line for runs of one host ((folder, manifest, categories) each): each figure the median
    over the runs (a unit's min and max: the runs' lowest and highest), and each server's total CPU µs/req in
    each run (`totals`: how far the host's own runs spread)."""
    manifests = [m for _, m, _ in runs]
    cards = [m["host"] for m in manifests]
    card = {}
    for key, *_ in HOST_UNITS:
        figures = [c[key] for c in cards if isinstance(c.get(key), dict)]
        if len(figures) == len(cards):
            card[key] = {"median": figure(statistics.median(f["median"] for f in figures)),
                         "min": figure(min(f["min"] for f in figures)), "max": figure(max(f["max"] for f in figures)),
                         **({"set_kib": figures[0]["set_kib"]} if "set_kib" in figures[0] else {})}
    card.update({k: cards[0][k] for k in ("caches_kib", "cpuidle_driver", "idle") if cards[0].get(k) is not None})
    servers = {s: {c: figure(statistics.median(cats[s][c] for _, _, cats in runs)) for c in runs[0][2][s]}
               for s in README_SETUP["servers"]}
    key = host_key(manifests[0])
    totals = {s: [figure(sum(cats[s].values())) for _, _, cats in runs] for s in README_SETUP["servers"]}
    return {"host": key[0], "kernel": key[1], "date": (manifests[0].get("finished") or "")[:10],
            "runs": [d.name for d, _, _ in runs], "card": card, "servers": servers, "totals": totals}


LINE_KEYS = {"host": str, "kernel": str, "date": str, "runs": list, "card": dict, "servers": dict}


def read_ledger(path: Path = LEDGER, missing_ok: bool = False) -> list[dict]:
    """The ledger's lines, oldest first; UserError for a line that is not one (missing_ok: [] for no file)."""
    if not path.exists():
        if missing_ok:
            return []
        raise UserError(f"{path}: no such ledger (report.py hosts add RUN makes one)")
    lines = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        try:
            line = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}: line {n}: not JSON ({e.msg})") from None
        bad = [k for k, kind in LINE_KEYS.items() if not isinstance(line, dict) or not isinstance(line.get(k), kind)]
        if not bad and not all(isinstance(c, dict) and all(isinstance(v, (int, float)) for v in c.values())
                               for c in line["servers"].values()):
            bad = ["servers"]
        if bad:
            raise UserError(f"{path}: line {n}: not a host's line ({', '.join(bad)} missing or of another kind)")
        lines.append(line)
    return lines


def add_hosts(run_dirs: list[Path], rules: Rules, path: Path = LEDGER) -> tuple[dict, bool]:
    """(the line of one host made of run_dirs, whether it replaced that host's line): appended to the ledger, or
    made anew in its place where the ledger has the host and run_dirs hold every run its line was made from (by
    folder name); UserError for runs of several hosts, a run given twice, not the README's setup, or a host the
    ledger has from runs not given."""
    given = [d.name for d in run_dirs]
    if twice := sorted({name for name in given if given.count(name) > 1}):
        raise UserError(f"{', '.join(twice)}: given twice: give each run once")
    # oldest first, whatever the order given: the line's date is its first run's
    runs = sorted(((d, *run_entry(d, rules)) for d in run_dirs), key=lambda r: (r[1].get("finished") or "", r[0].name))
    keys = {host_key(m) for _, m, _ in runs}
    if len(keys) > 1:
        raise UserError(f"{', '.join(map(str, run_dirs))}: runs of {len(keys)} hosts (boot and kernel): "
                        "add one host at a time")
    (host, kernel), = keys
    if not host or not kernel:
        raise UserError(f"{run_dirs[0]}: its manifest names no boot or no kernel: which host it ran on is not known")
    lines = read_ledger(path, missing_ok=True)
    at = next((i for i, line in enumerate(lines) if (line["host"], line["kernel"]) == (host, kernel)), None)
    if at is not None and (missing := [r for r in lines[at]["runs"] if r not in given]):
        raise UserError(f"{run_dirs[0]}: its host (boot {host}, kernel {kernel}) is in {path} already, from "
                        f"{', '.join(lines[at]['runs'])}: to make its line anew from all its runs, give "
                        f"{', '.join(missing)} too")
    line = ledger_line(runs)
    if at is None:
        lines.append(line)
    else:
        lines[at] = line
    write_text(path, "".join(json.dumps(x, sort_keys=True, ensure_ascii=False) + "\n" for x in lines), "--ledger")
    return line, at is not None


def ledger_hosts(lines: list[dict]) -> list[LedgerHost]:
    return [LedgerHost(line["host"], line["kernel"], {k: unit_cost(line["card"], k) for k, *_ in HOST_UNITS
                                                       if unit_cost(line["card"], k)}, line["servers"],
                       {k: (f["min"], f["max"]) for k, f in line["card"].items() if isinstance(f, dict) and "min" in f})
            for line in lines]


MISS_COLUMNS = [("host", "host"), ("server", "server"), ("measured", "measured [µs/req]"),
                ("predicted", "predicted [µs/req]"), ("error_pct", "error [%]"), ("category", "missed most in"),
                ("category_measured", "its measured [µs/req]"), ("category_predicted", "its predicted [µs/req]"),
                ("runs_spread", "the host's runs [µs/req]"), ("median_spread", "their median, 95 % [µs/req]")]
# json and csv: the host whose card cannot tell this one dearer, for a server it costs more on here (alike_cards)
ALIKE_COLUMNS = [("alike_host", "alike host"),
                 ("alike_floor_pct", "the least miss predicting the two alike [%]")]
MISS_CELLS = {f"{kind}_spread": Shown(lambda r, kind=kind: None if r[f"{kind}_low"] is None
                                      else f"{r[f'{kind}_low']:.3g}-{r[f'{kind}_high']:.3g}",
                                      ((f"{kind}_low", f"{what}, lowest [µs/req]"), (f"{kind}_high", f"{what}, highest [µs/req]")))
              for kind, what in (("runs", "the host's runs"), ("median", "their median's 95 % interval"))}


def runs_spread(line: dict, server: str) -> dict[str, float | None]:
    """A server's total CPU µs/req over the runs a ledger line was made of: the lowest and highest (runs_low,
    runs_high; None for one run, or a line made before the runs' totals were kept) and the 95 % interval of their
    median (median_low, median_high; None for fewer than 6 runs: analyze/intervals.py's median_interval)."""
    totals = (line.get("totals") or {}).get(server) or []
    spread = (min(totals), max(totals)) if len(totals) > 1 else (None, None)
    return dict(zip(("runs_low", "runs_high", "median_low", "median_high"),
                    (*spread, *(median_interval(totals) or (None, None)))))


def ledger_rows(lines: list[dict]) -> tuple[list[dict], list[tuple[str, str]]]:
    """(rows, columns) of the ledger as a table: a row per unit cost some host's card has and per server's CPU
    µs/req, a column per host."""
    hosts = [(f"h{i}", f"{line['host'][:8]} {line['kernel']} {line['date']}") for i, line in enumerate(lines, 1)]
    rows = [{"figure": f"{name} [{unit}]", **costs} for key, name, unit, _ in HOST_UNITS
            if any((costs := {h: unit_cost(line["card"], key) for (h, _), line in zip(hosts, lines)}).values())]
    rows += [{"figure": f"{s} [µs/req]", **{h: sum(line["servers"].get(s, {}).values()) or None
                                           for (h, _), line in zip(hosts, lines)}}
             for s in README_SETUP["servers"]]
    return rows, [("figure", "host (boot, kernel, date):")] + hosts


def own_spread(line: dict, server: str, predicted: float) -> str:
    """How far the host's own runs of server spread, and whether the prediction lies within the 95 % interval of
    their median (the host's own noise); "" for one run."""
    r = runs_spread(line, server)
    if r["runs_low"] is None:
        return ""
    text = (f"; that host's own runs of it spread by {100 * (r['runs_high'] / r['runs_low'] - 1):.0f} % "
            f"({r['runs_low']:.3g}-{r['runs_high']:.3g} µs/req)")
    if r["median_low"] is None:
        return text
    within = r["median_low"] <= predicted <= r["median_high"]
    return text + (f", the 95 % interval of their median {r['median_low']:.3g}-{r['median_high']:.3g}, "
                   + ("within which the prediction lies: the miss is within that host's own noise" if within
                      else f"outside which the prediction ({predicted:.3g}) lies"))


def render_model(lines: list[dict], path: Path, fmt: str = "table") -> str:
    """The ledger's hosts and the host model's leave-one-host-out error per server (analyze/hosts.py)."""
    hosts = ledger_hosts(lines)
    misses = leave_one_out(hosts)
    by_host = {line["host"]: line for line in lines}
    alike = alike_cards(hosts)
    pairs = {(x.dear, x.server): x for x in alike}
    rows = [{**m.__dict__, "host": m.host[:8], "units": {c: list(u) for c, u in m.units.items()},
             **runs_spread(by_host[m.host], m.server),
             "alike_host": pair.cheap[:8] if (pair := pairs.get((m.host, m.server))) else None,
             "alike_floor_pct": pair.floor_pct if pair else None}
            for m in misses]
    if fmt in ("json", "csv"):
        return render(rows, MISS_COLUMNS + ALIKE_COLUMNS * (fmt == "csv"), fmt, MISS_CELLS)
    text = (f"The ledger ({path}) holds {len(lines)} host{'s' * (len(lines) != 1)}:\n\n"
            + render(*ledger_rows(lines), fmt))
    if len(lines) < 2:
        return text + ("\nThe model needs 2 hosts to predict one from the other: add a host with "
                       "report.py hosts add RUN.\n")
    text += ("\nEach host left out in turn, each server's CPU µs/req predicted by category from that host's card, "
             "fitted on the other hosts:\n\n" + render(rows, MISS_COLUMNS, fmt, MISS_CELLS) + "\n")
    for s in README_SETUP["servers"]:
        mine = [m for m in misses if m.server == s]
        if not mine:
            continue
        worst = max(mine, key=lambda m: abs(m.error_pct))
        met = abs(worst.error_pct) <= TARGET_PCT
        verdict = (("within" if met else "outside") + f" the {TARGET_PCT:.0f} % target"
                   + f" (scored from {HOSTS_TO_SCORE} hosts)" * (len(lines) < HOSTS_TO_SCORE))
        text += (f"{s}: leave-one-host-out error up to {abs(worst.error_pct):.0f} % over {len(mine)} hosts, {verdict}"
                 + ("" if met else f"; it missed most in {worst.category} on {worst.host[:8]} ({worst.category_measured:.3g} "
                    f"µs/req measured, {worst.category_predicted:.3g} predicted)") + own_spread(by_host[worst.host], s, worst.predicted)
                 + ".\n")
    for s in README_SETUP["servers"]:
        if pair := next((x for x in alike if x.server == s), None):
            name = dict((k, n) for k, n, *_ in HOST_UNITS)[pair.closest]
            text += (f"{s} costs {pair.apart:.2f}x as much on {pair.dear[:8]} as on {pair.cheap[:8]} ({pair.dear_us:.3g} "
                     f"against {pair.cheap_us:.3g} µs/req), yet no unit of {pair.dear[:8]}'s card is dearer beyond its "
                     f"batches' spread (the nearest, {name}, x{pair.closest_apart:.2f}): the card cannot tell that host "
                     f"dearer, and predicting the two alike misses one by {pair.floor_pct:.1f} % or more.\n")
    fitted = len(lines) - 1
    slopes = min(MAX_SLOPES, fitted - 1)
    if slopes < MAX_SLOPES:
        text += (f"With {fitted} host{'s' * (fitted != 1)} to fit on, each category's fit has {slopes} unit "
                 f"slope{'s' * (slopes != 1)} (" + ("a prediction is the other host's figure, the card unused"
                                                     if slopes == 0 else "its most likely unit whose costs lie apart")
                 + f"); {MAX_SLOPES} from {MAX_SLOPES + 2} hosts on.\n")
    return text
