"""report.py chart: the per-request chart of a run (breakdown.svg)."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import output_for, rules_option, runs_dir_option, show
from rpcprof.cli.report_options import app_option, grouping_options, svg_output_option
from rpcprof.rundir import inputs_of, resolve


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@svg_output_option
@rules_option
@app_option
@grouping_options
@runs_dir_option
def chart(run_dir, out, rules_path, app, level, view, runs_dir):
    """The per-request chart of a run (breakdown.svg): CPU µs per request of each server, stacked by
    category, sub-category (--level 2, in shades of their category) or kind of work (--view tax)."""
    from rpcprof.report.chart import render_breakdown_chart
    run_dir = resolve(run_dir, runs_dir)
    output_for(out, *inputs_of(run_dir))
    render_breakdown_chart(run_dir, load_rules(rules_path).using(level, view), out, app)
    show(f"report.py: wrote {out}\n", err=True)
