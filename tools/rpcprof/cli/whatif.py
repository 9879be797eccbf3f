"""report.py whatif: B's CPU per request if it wrote as A does."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import rules_option, show
from rpcprof.cli.report_options import indirect_of, saved_folder_options
from rpcprof.paths import INDIRECT_COST
from rpcprof.rundir import resolve


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("a")
@click.argument("b")
@click.option("--indirect", "indirect_path", type=click.Path(dir_okay=False, path_type=Path), default=INDIRECT_COST,
              show_default=True, help="The indirect cost of a syscall, as bench/indirect wrote it.")
@click.option("--ratio", type=float, metavar="R",
              help="Run the model backwards: the requests per write at which B would serve R times A's requests "
                   "per CPU-second.")
@rules_option
@saved_folder_options
def whatif(run_dir, a, b, indirect_path, ratio, rules_path, runs_dir, fmt):
    """B's CPU µs per request if it wrote as A does (A's requests per write), with a 95 % interval: B's own
    send cost per write (over its rounds) plus the user code each syscall slows (--indirect), checked
    against A's measured figures category by category.

    \b
    eg, ./report.py whatif docs/data/20261124-074115-seed-001 rust_tonic_st rust_tonic_mt
        ./report.py whatif docs/data/20261124-074115-seed-001 rust_tonic_mt rust_pajamax --ratio 9.5
    """
    from rpcprof.report.whatif import render_ratio, render_whatif
    args = (resolve(run_dir, runs_dir), load_rules(rules_path), a, b, indirect_of(indirect_path))
    show(render_whatif(*args, fmt) if ratio is None else render_ratio(*args, ratio, fmt), fmt)
