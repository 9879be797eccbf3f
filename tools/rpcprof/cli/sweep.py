"""report.py sweep: seed 000's table for a saved sweep folder."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import rules_option, show
from rpcprof.cli.report_options import saved_folder_options
from rpcprof.rundir import resolve


@click.command("sweep")
@click.argument("sweep_dir", type=click.Path(path_type=Path))
@rules_option
@saved_folder_options
def sweep_table(sweep_dir, rules_path, runs_dir, fmt):
    """Seed 000's table for a saved sweep folder (a path, or its name under --runs-dir)."""
    from rpcprof.report.sweep_table import render_sweep
    rules = load_rules(rules_path)
    show(render_sweep(resolve(sweep_dir, runs_dir), rules, fmt), fmt)
