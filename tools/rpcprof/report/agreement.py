"""report.py runs: runs of one setup side by side, each ratio with its interval, whether each interval
holds the other runs' ratios, and the drift between runs that no run's rounds see (analyze/agreement.py)."""
from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path

from rpcprof.analyze.agreement import Agreement, RunRatio, agreement
from rpcprof.analyze.intervals import log_ratios, pilot_of, server_ratio
from rpcprof.errors import UserError
from rpcprof.report.hosts import render_hosts
from rpcprof.report.summary import idle_text, ratio_text
from rpcprof.report.tables import render
from rpcprof.rundir import load_manifest, load_run

# what makes two runs one setup: the same load on the same CPUs for the same windows
SETUP = ("scenario", "driver", "connections", "streams", "duration", "warmup", "server_cpus", "load_cpus", "params",
         "idle")
LATER = {"idle": "halt"}    # keys added since runs were first published: what runs without them did


def setup_value(parameters: dict, key: str):
    """A run's setting, with what a run from before the key existed did."""
    return parameters.get(key, LATER.get(key))


def _setup_text(p: dict) -> str:
    return (f"{p['scenario']}, {p['driver']} C={p['connections']} S={p['streams']}, {p['duration']:g} s windows, "
            f"server CPU {p['server_cpus']}, load CPU {p['load_cpus']}"
            + idle_text(p))


def _ok(metrics: dict, server: str) -> dict | None:
    m = metrics.get(server) or {}
    return m if m.get("status") == "ok" and m.get("req_per_cpu_s") else None


def runs_agreement(run_dirs: list[Path]) -> tuple[dict, dict[str, Agreement], dict[str, str]]:
    """(the setup's parameters, {"B vs A": Agreement}, {run: when it started}) for every server measured
    in every run, over the first server of the first run. UserError when the runs are not of one setup or
    share no pair."""
    if len(run_dirs) < 2:
        raise UserError("runs: give two run folders or more (of one setup: same servers, load and windows)")
    loaded = [(Path(d), *load_run(d)) for d in run_dirs]
    first_dir, first, _ = loaded[0]
    p0 = first["parameters"]
    for d, manifest, _ in loaded[1:]:
        p = manifest["parameters"]
        for key in SETUP:
            if setup_value(p, key) != setup_value(p0, key):
                raise UserError(f"runs: {d.name} differs from {first_dir.name} in {key} ({setup_value(p, key)!r} "
                                f"against {setup_value(p0, key)!r}): compare runs of one setup")
    servers = [s for s in p0["servers"] if all(_ok(metrics, s) for _, _, metrics in loaded)]
    if len(servers) < 2:
        raise UserError("runs: no two servers were measured in every run given: nothing to compare")
    base = servers[0]
    out = {}
    for other in servers[1:]:
        ratios = []
        for d, manifest, metrics in loaded:
            a, b = _ok(metrics, base), _ok(metrics, other)
            interval = server_ratio(a, b, pilot=pilot_of(manifest["parameters"]))
            if interval is None:
                raise UserError(f"runs: {d.name} has no paired rounds of {base} and {other} (made before rounds): "
                                "compare runs made with --rounds")
            ratios.append(RunRatio(d.name, interval, log_ratios(a, b)))
        out[f"{other} vs {base}"] = agreement(ratios)
    started = {d.name: manifest.get("started") for d, manifest, _ in loaded}
    return {**{k: setup_value(p0, k) for k in SETUP}, "servers": servers}, out, started


def _pct(sd: float | None) -> str:
    return "-" if sd is None else f"{100 * (math.exp(sd) - 1):.1f} %"


def agreement_lines(name: str, a: Agreement) -> list[str]:
    """What the figures say, each sentence only when its condition holds."""
    lines = []
    if a.checks:
        if a.misses:
            by = {r.label: (f"#{i}", r.interval) for i, r in enumerate(a.runs, 1)}

            def miss(x: str, y: str) -> str:
                (nx, ix), (ny, iy) = by[x], by[y]
                # as many decimals as it takes to show the ratio outside the bounds it passed
                digits = next((d for d in (1, 2, 3)
                               if f"{ix.ratio:.{d}f}" not in (f"{iy.low:.{d}f}", f"{iy.high:.{d}f}")), 4)

                def f(v: float) -> str:
                    return ratio_text(v) if digits == 1 else f"{v:.{digits}f}"
                return f"{nx}'s ^{f(ix.ratio)} is outside {ny}'s [{f(iy.low)}-{f(iy.high)}]"
            shown = "; ".join(miss(x, y) for x, y in a.misses[:4])
            more = f"; {len(a.misses) - 4} more" if len(a.misses) > 4 else ""
            lines.append(f"{name}: the runs disagree: {len(a.misses)} of {a.checks} run-to-run checks fail: "
                         f"{shown}{more}.")
        else:
            lines.append(f"{name}: the runs agree: every run's interval holds every other run's ratio.")
    if a.runs_sd is not None and a.expected_sd is not None:
        line = (f"{name}: the runs' ratios spread by {_pct(a.runs_sd)} (sd); their rounds alone would spread them by "
                f"{_pct(a.expected_sd)}")
        if a.between_sd:
            line += (f": the runs differ by about {_pct(a.between_sd)} beyond what their rounds predict (the machine "
                     "drifting between runs, or a round that ran apart), so the interval over runs below is the one "
                     "to quote")
        lines.append(line + ".")
    if a.over_runs is not None and a.over_runs.low is not None:
        low, high = a.next_run
        lines.append(f"{name}: over the {len(a.runs)} runs (each run one estimate): {a.over_runs.text()} (95 %); "
                     f"a next run's ratio should land in [{ratio_text(low)}-{ratio_text(high)}] (95 % prediction).")
    return lines


def render_runs(run_dirs: list[Path], fmt: str = "table") -> str:
    setup, pairs, started = runs_agreement(run_dirs)
    hosts, host_record = render_hosts([(Path(d), *load_run(d)) for d in run_dirs], setup["servers"], fmt)
    if fmt == "json":
        return json.dumps({"setup": setup, "pairs": {k: v.as_dict() for k, v in pairs.items()}, **host_record},
                          indent=2, sort_keys=True) + "\n"
    columns = [("#", "#"), ("run", "run"), ("started", "started"), ("pairs", "pairs"),
               ("ratio", "ratio [95 % interval]"), ("half_width_pct", "± [%]"), ("holds", "holds the others' ratios")]
    blocks = []
    for name, a in pairs.items():
        rows = [{"pair": name, "#": i, "run": r.label, "started": started[r.label], "pairs": len(r.logs),
                 "ratio": r.interval.text(),
                 "half_width_pct": None if r.interval.half_width is None else f"{100 * r.interval.half_width:.1f}",
                 "holds": (f"{sum(1 for o in a.runs if o is not r and r.holds(o.interval.ratio))} of {len(a.runs) - 1}"
                           if r.interval.low is not None else "-")} for i, r in enumerate(a.runs, 1)]
        table = render(rows, [("pair", "pair")] * (fmt == "csv") + columns, fmt)
        if fmt == "csv":
            blocks.append(table if not blocks else table.split("\n", 1)[1])
            continue
        blocks.append(f"{name}, {len(a.runs)} runs of one setup ({_setup_text(setup)}):\n\n{table}\n"
                      + "\n".join(agreement_lines(name, a)) + "\n")
    return ("" if fmt == "csv" else "\n").join(blocks) + hosts


EARLIER_HOURS = 24          # earlier runs taken beside a new one: of the last day,
EARLIER_MAX = 9             # at most this many, the latest


def _same_bench(a: dict, b: dict) -> bool:
    """Same setup, servers, machine and code (commit and uncommitted changes)."""
    pa, pb = a["parameters"], b["parameters"]
    machine = ("hostname", "cpu_model", "cpus", "kernel")
    return (all(setup_value(pa, k) == setup_value(pb, k) for k in SETUP) and pa.get("servers") == pb.get("servers")
            and all((a.get("machine") or {}).get(k) == (b.get("machine") or {}).get(k) for k in machine)
            and a.get("git") == b.get("git") and a.get("mode") == b.get("mode") == "run")


def earlier_runs(run_dir: Path, runs_base: Path) -> list[Path]:
    """The complete runs in runs_base of the same setup, servers, machine and code as run_dir, started in
    the EARLIER_HOURS before it, the latest EARLIER_MAX, oldest first."""
    this = load_manifest(run_dir)
    start = datetime.fromisoformat(this["started"])
    base = Path(runs_base)
    # folder names begin with their start time: the latest first
    candidates = sorted((d for d in base.iterdir() if d.is_dir() and d.name < run_dir.name), reverse=True) \
        if base.is_dir() else []
    found = []
    for d in candidates:
        try:
            m = load_manifest(d)
            started = datetime.fromisoformat(m["started"])
        except (UserError, KeyError, TypeError, ValueError):
            continue                    # not a run folder, or one a reader cannot use: not this run's peer
        if start - started > timedelta(hours=EARLIER_HOURS):
            break
        if m.get("status") == "complete" and _same_bench(this, m):
            found.append(d)
            if len(found) == EARLIER_MAX:
                break
    return found[::-1]


def earlier_lines(run_dir: Path, runs_base: Path) -> list[str]:
    """Beside a new run's ratios: the interval over it and the earlier runs of its setup here, one line
    per ratio; none when there is no earlier run."""
    earlier = earlier_runs(run_dir, runs_base)
    if not earlier:
        return []
    try:
        _, pairs, _ = runs_agreement([*earlier, run_dir])
    except UserError:
        return []
    lines = []
    for name, a in pairs.items():
        if a.over_runs is None or a.over_runs.low is None:
            continue
        line = (f"{name} over this run and {len(earlier)} earlier one{'s' * (len(earlier) > 1)} of this setup here: "
                f"{a.over_runs.text()} (95 %, each run one estimate; report.py runs for each)")
        if a.between_sd:
            line += f"; the runs differ by about {_pct(a.between_sd)} beyond what their rounds predict"
        lines.append(line)
    return lines
