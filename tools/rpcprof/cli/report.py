"""The commands behind report.py, each in a module of its own (cli/table.py for `report.py table`, ...):
this module only registers them. A new command is a new module with a click.command, added here."""
from __future__ import annotations

import click

from rpcprof.cli.chart import chart
from rpcprof.cli.check_rules import check_rules
from rpcprof.cli.common import run_click
from rpcprof.cli.compare import compare
from rpcprof.cli.diff import diff
from rpcprof.cli.documents import results, seeds
from rpcprof.cli.explain import explain
from rpcprof.cli.export import export
from rpcprof.cli.fold import fold
from rpcprof.cli.html import html_report
from rpcprof.cli.run import run_table
from rpcprof.cli.runs import runs
from rpcprof.cli.svg import svg
from rpcprof.cli.sweep import sweep_table
from rpcprof.cli.table import table
from rpcprof.cli.top import top
from rpcprof.cli.waits import waits
from rpcprof.cli.whatif import whatif


@click.group(name="report.py", context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Explain profiles: category shares, per-request CPU by category, and the rules behind them."""


# in the order they were written; click lists them by name
for command in (table, compare, top, explain, check_rules, svg, chart, html_report, export, diff, run_table, waits,
                sweep_table, whatif, fold,
                results, seeds,         # the generated documents: cli/documents.py
                runs):                  # runs of one setup side by side
    main.add_command(command)


def entry(args: list[str] | None = None) -> None:
    run_click(main, args)
