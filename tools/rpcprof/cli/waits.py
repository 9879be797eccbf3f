"""report.py waits: where each server's threads waited in the run's off-CPU window."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import rules_option, show
from rpcprof.cli.report_options import saved_folder_options
from rpcprof.rundir import resolve


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@rules_option
@saved_folder_options
def waits(run_dir, rules_path, runs_dir, fmt):
    """Where each server's threads waited in the run's off-CPU window: time, waits and mean wait per
    reason (categorize.yaml `waits:`), the TCP state of its connections, and a Nagle / delayed-ACK stall
    named when the numbers show one.

    \b
    eg, ./report.py waits flamegraphs/RUN
    """
    from rpcprof.report.waits import render_waits
    show(render_waits(resolve(run_dir, runs_dir), load_rules(rules_path), fmt), fmt)
