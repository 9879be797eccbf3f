"""report.py compare: the servers of a run side by side, per request and by category, with the ruler check."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import format_option, rules_option, runs_dir_option, show
from rpcprof.cli.report_options import app_option, grouping_options, indirect_of, indirect_option
from rpcprof.report.compare import render_compare
from rpcprof.rundir import resolve


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@rules_option
@app_option
@click.option("--ruler", default=None, metavar="REGEX",
              help="Frames doing the same work per request in every server (else each server's recorded ruler).")
@indirect_option
@grouping_options
@runs_dir_option
@format_option
def compare(run_dir, rules_path, app, ruler, indirect_path, level, view, runs_dir, fmt):
    """Per server of a run: req/s per CPU, the ratio to the first, CPU µs per request by category, and
    seed 001's ruler check (the ratio of the ruler's shares beside the measured ratio). With --indirect,
    the user code the extra writes slow down in the mechanism, and the ruler ratio to expect given the
    syscalls per request (e.g. --indirect docs/data/indirect-syscall-cost.json)."""
    show(render_compare(resolve(run_dir, runs_dir), load_rules(rules_path).using(level, view), fmt, app, ruler,
                        indirect_of(indirect_path)), fmt)
