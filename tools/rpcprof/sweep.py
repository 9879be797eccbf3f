"""Sweeps: every (connections C, streams S) cell with S >= C, each a measured run of every server,
printed in seed 000's layout: a header line per cell with the ratio of req/s per CPU between the first
two servers (^N.N = second / first), then a row per server.
"""
from __future__ import annotations

import datetime as dt
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from .categorize import Rules
from .compare import run_breakdowns
from .errors import UserError
from .runner import RUNS_DIR, Run, RunOptions, git_commit, machine_specs, make_run_dir, tool_versions
from .summary import ratio_text, run_rows
from .tables import render

CATEGORY_US = ("recv", "send", "runtime", "protocol", "app", "other")


# Seed 000's cells keep S/C <= 1000 (C=100 goes to S=100000, C=1 stops at S=1000), and pajamax advertises
# SETTINGS_MAX_CONCURRENT_STREAMS 1000: a deeper cell would not put S streams in flight on it.
MAX_STREAMS_PER_CONNECTION = 1000


def cells(connections: list[int], streams: list[int],
          max_per_connection: int = MAX_STREAMS_PER_CONNECTION) -> list[tuple[int, int]]:
    """(C, S) pairs with C <= S <= C x max_per_connection, in seed 000's order (C, then S)."""
    out = [(c, s) for c in connections for s in streams if c <= s <= c * max_per_connection]
    if not out:
        raise UserError(f"no cell has C <= S <= C x {max_per_connection} for -C {connections} -S {streams}: "
                        "give other -S or -C values (or a larger --max-per-connection)")
    bad = [(c, s) for c, s in out if s % c]
    if bad:
        raise UserError(f"S={bad[0][1]} is not a multiple of C={bad[0][0]}: every connection must carry the same "
                        "number of streams")
    return out


def seconds_per_cell(opts: RunOptions) -> float:
    """Planned seconds for one cell: per server and repeat, warm-up, window, syscall and profile windows
    (first repeat only), start-up and folding."""
    one = opts.warmup + opts.duration + 2.0
    first_extra = (opts.syscall_duration if opts.syscalls else 0) + (opts.profile_duration + 2 if opts.profile else 0)
    return len(opts.servers) * (opts.repeat * one + first_extra)


def _fmt_duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Sweep:
    def __init__(self, opts: RunOptions, connections: list[int], streams: list[int], command: list[str],
                 max_per_connection: int = MAX_STREAMS_PER_CONNECTION):
        if len(opts.servers) < 1:
            raise UserError("name at least one server")
        self.opts = opts
        self.cells = cells(connections, streams, max_per_connection)
        self.command = command
        self.dir: Path | None = None
        self.results: dict[str, dict] = {}
        # validate every cell's options before anything starts
        self.runs = [Run(replace(opts, connections=c, streams=s, label=f"C{c}-S{s}"), command) for c, s in self.cells]
        self.rules = self.runs[0].rules

    def execute(self) -> Path:
        label = self.opts.label or "sweep-" + "-".join(self.opts.servers)
        self.dir = make_run_dir(label, RUNS_DIR)
        planned = seconds_per_cell(self.opts) * len(self.cells)
        _log(f"rpcprof: sweep folder {self.dir}")
        _log(f"rpcprof: {len(self.cells)} cells x {len(self.opts.servers)} server(s) x {self.opts.repeat} repeat(s): "
             f"about {_fmt_duration(planned)} (planned; started {dt.datetime.now():%H:%M}). Ctrl-C stops.")
        self.started = dt.datetime.now().isoformat(timespec="seconds")
        self.machine, self.tools, self.git = machine_specs(), tool_versions(), git_commit()
        status = "running"
        t0 = time.monotonic()
        try:
            self.write(status)
            for i, ((c, s), run) in enumerate(zip(self.cells, self.runs)):
                done = time.monotonic() - t0
                left = (done / i * (len(self.cells) - i)) if i else planned
                _log(f"rpcprof: [{i + 1}/{len(self.cells)}] C={c} S={s}: elapsed {_fmt_duration(done)}, "
                     f"ETA {_fmt_duration(left)}")
                run_dir = run.execute(self.dir)
                self.results[f"C{c}-S{s}"] = {"connections": c, "streams": s, "run": run_dir.name}
                self.write(status)
            status = "complete" if all(all(r.get("status") == "ok" for r in run.results.values())
                                       for run in self.runs) else "failed"
        except KeyboardInterrupt:
            status = "incomplete"
            raise
        finally:
            self.write(status if status != "running" else "failed")
        return self.dir

    def write(self, status: str) -> None:
        manifest = {"status": status, "mode": "sweep", "command": self.command, "started": self.started,
                    "machine": self.machine, "tools": self.tools, "git": self.git,
                    "parameters": {**asdict(self.opts), "cells": self.cells}, "cells": self.results}
        (self.dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


SWEEP_COLUMNS = [
    ("server", "name"), ("req_per_s", "req/s"), ("avg_cpu_pct", "avg. cpu [%]"), ("avg_ms", "avg. latency [ms]"),
    ("p90_ms", "90 % in [ms]"), ("p95_ms", "95 % in [ms]"), ("p99_ms", "99 % in [ms]"),
    ("rss_avg_mib", "avg. memory [MiB]"), ("req_per_cpu_s", "req/s per CPU"), ("spread_text", "min-max"),
    ("syscalls_per_req", "syscalls/req"),
] + [(f"{c}_us", f"{c} [µs/req]") for c in CATEGORY_US] + [("notes", "notes")]


def sweep_rows(sweep_dir: Path, rules: Rules) -> list[dict]:
    """A row per (cell, server), with the cell's ratio (second / first server's req/s per CPU)."""
    manifest = json.loads((sweep_dir / "manifest.json").read_text())
    servers = manifest["parameters"]["servers"]
    rows = []
    for key, cell in manifest["cells"].items():
        run_dir = sweep_dir / cell["run"]
        metrics = json.loads((run_dir / "metrics.json").read_text())
        base_rows = run_rows(metrics, servers)
        breakdowns = run_breakdowns(run_dir, rules)
        rpc = [r["req_per_cpu_s"] for r in base_rows[:2]]
        ratio = rpc[1] / rpc[0] if len(rpc) == 2 and all(rpc) else None
        for r in base_rows:
            m = metrics.get(r["server"], {})
            row = {"cell": key, "connections": cell["connections"], "streams": cell["streams"], "ratio": ratio, **r}
            b = breakdowns.get(r["server"])
            for c in CATEGORY_US:
                row[f"{c}_us"] = b.share(c) * m["cpu_us_per_req"] if b and m.get("cpu_us_per_req") else None
            row["ratio_significant"] = None
            rows.append(row)
        if ratio is not None:
            spreads = [(metrics[s].get("spread") or {}).get("req_per_cpu_s") for s in servers[:2]]
            if all(spreads):
                overlap = spreads[0][0] <= spreads[1][1] and spreads[1][0] <= spreads[0][1]
                for row in rows[-len(base_rows):]:
                    row["ratio_significant"] = not overlap
    return rows


def render_sweep(sweep_dir: Path, rules: Rules, fmt: str = "table") -> str:
    """Seed 000's layout: --C=N: lines, ----S=N----^R.R---- lines, then the servers' rows."""
    rows = sweep_rows(sweep_dir, rules)
    if fmt == "json":
        return json.dumps(rows, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "csv":
        cols = [("connections", "C"), ("streams", "S"), ("ratio", "ratio")] + SWEEP_COLUMNS
        return render(rows, cols, "csv")
    table = render(rows, SWEEP_COLUMNS, "table").splitlines()
    header, rule, body = table[0], table[1], table[2:]
    width = len(rule)
    manifest = json.loads((sweep_dir / "manifest.json").read_text())
    servers = manifest["parameters"]["servers"]
    out = []
    if fmt == "markdown":
        out.append("```")
    if len(servers) >= 2:
        out.append(f"^N.N = req/s per server CPU of {servers[1]} / {servers[0]}")
    out += ["-" * width, header]
    last_c = None
    for i, row in enumerate(rows):
        if row["connections"] != last_c:
            last_c = row["connections"]
            out.append(f"--C={last_c}:".ljust(width, "-"))
        if i == 0 or rows[i - 1]["cell"] != row["cell"]:
            mark = f"^{ratio_text(row['ratio'])}" if row["ratio"] else ""
            if row.get("ratio_significant") is False:
                mark += " (not significant)"
            out.append(f"----S={row['streams']}".ljust(15, "-") + mark.ljust(width - 15, "-"))
        out.append(body[i])
    out.append("-" * width)
    if fmt == "markdown":
        out.append("```")
    return "\n".join(out) + "\n"
