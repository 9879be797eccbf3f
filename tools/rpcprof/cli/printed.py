"""What profile.sh's commands print of the folder they made, part by part as each is ready (the run table
before the comparison that takes seconds more): the same renderers as report.py's commands. In csv the
tables follow one another apart by a blank line, with no heading between them that would be a row of prose.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from rpcprof.analyze.categorize import load_rules
from rpcprof.report.agreement import earlier_lines
from rpcprof.report.compare import render_compare, render_shares
from rpcprof.records import ServerResult
from rpcprof.report.summary import render_run


def run_report(run_dir: Path, results: dict[str, ServerResult], rules, fmt: str, latency: str, runs_dir: Path,
               profile: bool = True, app: str | None = None, ruler: str | None = None) -> Iterator[str]:
    """What `run` prints of its folder: the run table, the interval over earlier runs of its setup, where each
    request's CPU goes, where the threads waited (json: the run table's document alone)."""
    yield render_run(run_dir, fmt, latency)
    if fmt in ("table", "markdown"):
        yield "".join(f"{x}\n" for x in earlier_lines(run_dir, runs_dir))
    if profile and fmt != "json" and any(r.figures.get("profile") for r in results.values()):
        yield heading(f"Where each request's CPU goes (report.py compare {run_dir}):", fmt)
        yield render_compare(run_dir, rules, fmt, app, ruler)
    yield waits_report(run_dir, results, fmt, verdicts=False)   # the run table said them


def heading(line: str, fmt: str) -> str:
    """A line before a table that follows another; in csv only the blank line, so that each table stays csv."""
    return f"\n{line}\n\n" if fmt in ("table", "markdown") else "\n"


def attach_report(run_dir: Path, results: dict[str, ServerResult], rules, fmt: str,
                  app: str | None = None) -> Iterator[str]:
    """What `attach` prints of its folder: the shares, the per-request comparison when there is one, where the
    threads waited; json: one document of the shares and the comparison."""
    per_request = any(r.figures.get("cpu_us_per_req") for r in results.values())
    if fmt == "json":
        doc = {"run": str(run_dir), "shares": json.loads(render_shares(run_dir, rules, fmt)),
               "compare": json.loads(render_compare(run_dir, rules, fmt, app)) if per_request else None}
        yield json.dumps(doc, indent=2, sort_keys=True) + "\n"
        return
    yield render_shares(run_dir, rules, fmt)
    if per_request:
        yield "\n" + render_compare(run_dir, rules, fmt, app)
    elif fmt in ("table", "markdown"):
        yield "\nPer-request costs need the request count: --requests N, --rps R, or --load --target HOST:PORT.\n"
    yield waits_report(run_dir, results, fmt, verdicts=True)       # attach prints no run table


def waits_report(run_dir: Path, results: dict[str, ServerResult], fmt: str, verdicts: bool) -> str:
    """The off-CPU window's wait reasons and verdict, when one was recorded (not in JSON: one document)."""
    if fmt == "json" or not any(r.figures.get("offcpu") for r in results.values()):
        return ""
    from rpcprof.report.waits import render_waits
    return heading(f"Where the threads waited (report.py waits {run_dir}):", fmt) + render_waits(
        run_dir, load_rules(), fmt, verdicts)
