"""Seed 000's table from a sweep folder: a header line per cell with the ratio of req/s per CPU between
the first two servers (^N.N = second / first), then a row per server with CPU µs per request by category.
"""
from __future__ import annotations

import json
from pathlib import Path

from rpcprof.analyze.breakdowns import run_breakdowns
from rpcprof.analyze.categorize import OTHER, Rules
from rpcprof.analyze.intervals import interleaved
from rpcprof.analyze.mechanism import kernel_figures
from rpcprof.report.compare import first_profiles
from rpcprof.report.summary import RATIO_CELL, SPREAD_CELL, ratio_text, run_rows
from rpcprof.report.tables import render
from rpcprof.rundir import load_sweep

FIGURE_COLUMNS = [
    ("server", "name"), ("req_per_s", "req/s"), ("avg_cpu_pct", "avg. cpu [%]"), ("avg_ms", "avg. latency [ms]"),
    ("p90_ms", "90 % in [ms]"), ("p95_ms", "95 % in [ms]"), ("p99_ms", "99 % in [ms]"),
    ("rss_avg_mib", "avg. memory [MiB]"), ("req_per_cpu_s", "req/s per CPU"), ("spread_text", "min-max"),
    ("syscalls_per_req", "syscalls/req"), ("writes_per_req", "writes/req"), ("bytes_per_write", "B/write"),
    ("switches_per_req", "ctx switches/req"),
]


def categories(rules: Rules) -> list[str]:
    """The level-1 categories of the rules, in seed 000's column order (categorize.yaml's groups), one the seed
    did not have after these in the file's order, then `other`."""
    order = {c: i for i, c in enumerate(rules.groups.seed_000_columns)}
    return sorted(rules.categories, key=lambda c: order.get(c, len(order))) + [OTHER]


def sweep_columns(rules: Rules) -> list[tuple[str, str]]:
    return FIGURE_COLUMNS + [(f"{c}_us", f"{c} [µs/req]") for c in categories(rules)] + [("notes", "notes")]


def sweep_rows(sweep_dir: Path, rules: Rules) -> list[dict]:
    """A row per (cell, server), with the cell's ratio (second / first server's req/s per CPU)."""
    manifest, cells = load_sweep(sweep_dir)
    servers = manifest["parameters"]["servers"]
    rows = []
    for key, cell in manifest["cells"].items():
        run_dir = sweep_dir / cell["run"]
        metrics = cells[key][1]
        base_rows = run_rows(metrics, servers)
        breakdowns = run_breakdowns(first_profiles(run_dir, cells[key][0]), metrics, rules)
        voided = any(r.get("stalled") for r in base_rows[:2])     # a stalled window's figures are not a pace
        second = base_rows[1] if len(base_rows) > 1 and base_rows[0].get("req_per_cpu_s") and not voided else {}
        ratio, interval = second.get("relative"), second.get("ratio_interval")
        for r in base_rows:
            m = metrics.get(r["server"], {})
            b, figures = breakdowns.get(r["server"]), kernel_figures(m.get("syscalls"))
            rows.append({**r, "cell": key, "connections": cell["connections"], "streams": cell["streams"],
                         "ratio": ratio, "ratio_low": (interval or {}).get("low"),
                         "ratio_high": (interval or {}).get("high"), "cell_interval": interval,
                         "ratio_significant": interval["significant"] if interval else None,
                         "rounds_interleaved": interleaved(m),
                         **{f"{c}_us": b.share(c) * m["cpu_us_per_req"] if b and m.get("cpu_us_per_req") else None
                            for c in categories(rules)},
                         **{k: figures[k].value for k in ("writes_per_req", "bytes_per_write", "switches_per_req")}})
    return rows


def render_sweep(sweep_dir: Path, rules: Rules, fmt: str = "table") -> str:
    """Seed 000's layout: --C=N: lines, ----S=N----^R.R---- lines, then the servers' rows."""
    rows = sweep_rows(sweep_dir, rules)
    if fmt == "json":
        return json.dumps(rows, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "csv":        # the cell's ratio (second server over first) with its interval, on each of its rows
        cols = [("connections", "C"), ("streams", "S"), *RATIO_CELL.parts] + sweep_columns(rules)
        return render(rows, cols, "csv", {"spread_text": SPREAD_CELL})
    # a column no cell filled (B/write without --io-sizes, min-max of one round) is left out of the layout
    cols = [c for c in sweep_columns(rules) if c[0] in ("server", "notes") or any(r.get(c[0]) is not None for r in rows)]
    header, rule, *body = render(rows, cols, "table", {"spread_text": SPREAD_CELL}).splitlines()
    width = len(rule)
    servers = load_sweep(sweep_dir)[0]["parameters"]["servers"]
    fence = ["```"] * (fmt == "markdown")
    out = [*fence]
    if len(servers) >= 2:
        out.append(f"^N.N = req/s per server CPU of {servers[1]} / {servers[0]}")
    out += ["-" * width, header]
    for prev, row, line in zip([{}, *rows], rows, body):
        if row["connections"] != prev.get("connections"):
            out.append(f"--C={row['connections']}:".ljust(width, "-"))
        if row["cell"] != prev.get("cell"):
            ci = row.get("cell_interval")
            mark = (f"^{ratio_text(row['ratio'])}" + (f" [{ratio_text(ci['low'])}-{ratio_text(ci['high'])}]"
                                                      if ci and ci["low"] else "")) if row["ratio"] else ""
            mark += " (not significant)" * (row.get("ratio_significant") is False)
            out.append(f"----S={row['streams']}".ljust(15, "-") + mark.ljust(width - 15, "-"))
        out.append(line)
    return "\n".join([*out, "-" * width, *fence]) + "\n"
