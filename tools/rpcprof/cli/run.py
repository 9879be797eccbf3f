"""report.py run: the run table of a saved run folder."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.cli.common import latency_option, show
from rpcprof.cli.report_options import saved_folder_options
from rpcprof.rundir import resolve


@click.command("run")
@click.argument("run_dir", type=click.Path(path_type=Path))
@latency_option
@saved_folder_options
def run_table(run_dir, latency, runs_dir, fmt):
    """The run table of a saved run folder, as profile.sh run printed it."""
    from rpcprof.report.summary import render_run
    show(render_run(resolve(run_dir, runs_dir), fmt, latency), fmt)
