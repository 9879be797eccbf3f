"""report.py runs: whether runs of one setup agree (report/agreement.py)."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.cli.common import format_option, runs_dir_option, show
from rpcprof.report.agreement import render_runs
from rpcprof.rundir import resolve


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@runs_dir_option
@format_option
def runs(run_dirs, runs_dir, fmt):
    """Runs of one setup side by side: each ratio with its 95 % interval, whether each interval holds
    the other runs' ratios, how far the runs spread against what their rounds predict, and the ratio
    over runs (each run one estimate) with where a next run should land.

    \b
    eg, ./report.py runs flamegraphs/RUN1 flamegraphs/RUN2 flamegraphs/RUN3
    """
    show(render_runs([resolve(d, runs_dir) for d in run_dirs], fmt), fmt)
