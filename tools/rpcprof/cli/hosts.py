"""report.py hosts: the ledger of hosts (docs/data/hosts.jsonl) and the host model fitted on it (report/hosts.py)."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import format_option, runs_dir_option, show
from rpcprof.report.hosts import LEDGER, add_hosts, read_ledger, render_model
from rpcprof.rundir import resolve

def shown(path: Path) -> Path:
    """A path as the user would type it from here."""
    try:
        return path.resolve().relative_to(Path.cwd())
    except ValueError:
        return path


# given before or after `add`, the same option: `hosts --ledger F add RUN` adds to F
ledger_option = click.option("--ledger", type=click.Path(dir_okay=False, path_type=Path), default=None,
                             show_default="docs/data/hosts.jsonl", help="The ledger of hosts.")


@click.group(invoke_without_command=True)
@ledger_option
@format_option
@click.pass_context
def hosts(ctx, ledger, fmt):
    """The hosts of the ledger (their cards, kernels and each server's CPU µs/req by category, for the
    README's setup) and the host model: each server's CPU µs/req on each host predicted by category from its
    card, fitted on the other hosts, with its error per server.

    \b
    eg, ./report.py hosts
    """
    ctx.obj = ledger = ledger or LEDGER
    if ctx.invoked_subcommand is None:
        show(render_model(read_ledger(ledger), shown(ledger), fmt), fmt)


@hosts.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@ledger_option
@runs_dir_option
@click.pass_context
def add(ctx, run_dirs, ledger, runs_dir):
    """Adds the host of a run of the README's setup (./profile.sh run rust_tonic_mt rust_pajamax) to the
    ledger: its card, kernel, date and each server's CPU µs/req by category (several runs of one host: the
    median of each figure). A host the ledger has already is made anew, in its place, from the runs given,
    which must include every run its line was made from. Refuses another setup and a run with no host card.

    \b
    eg, ./report.py hosts add flamegraphs/RUN
    """
    ledger = ledger or ctx.obj
    line, remade = add_hosts([resolve(d, runs_dir) for d in run_dirs], load_rules(), ledger)
    what = f"made host {line['host']}'s line anew" if remade else f"added host {line['host']}"
    show(f"{shown(ledger)}: {what} (kernel {line['kernel']}, {line['date']}) from {', '.join(line['runs'])}\n")
