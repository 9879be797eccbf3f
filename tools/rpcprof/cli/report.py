"""The commands behind report.py, each in a module of its own (cli/table.py for `report.py table`, ...):
this module only registers them. A new command is a new module with a click.command, named here.

A command's module is imported when the command runs (or when --help lists them all), not at every start:
each command then starts without importing what the others need (matplotlib's charts, jsonschema, ...)."""
from __future__ import annotations

import importlib

import click

from rpcprof.cli.common import run_click

# command -> its module under cli/ and the click command there, in the order they were written
COMMANDS = {
    "table": "table:table", "compare": "compare:compare", "top": "top:top", "explain": "explain:explain",
    "check-rules": "check_rules:check_rules", "svg": "svg:svg", "chart": "chart:chart", "html": "html:html_report",
    "export": "export:export", "diff": "diff:diff", "run": "run:run_table", "waits": "waits:waits",
    "sweep": "sweep:sweep_table", "whatif": "whatif:whatif", "fold": "fold:fold",
    "results": "documents:results", "seeds": "documents:seeds",      # the generated documents
    "runs": "runs:runs",                                                # runs of one setup side by side
    "hosts": "hosts:hosts",                                             # the ledger of hosts and its model
}


class _Commands(click.Group):
    """A click group whose commands are imported from COMMANDS when asked for; click lists them by name."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, command = COMMANDS[name].split(":")
        return getattr(importlib.import_module(f"rpcprof.cli.{module}"), command)


@click.group(name="report.py", cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Explain profiles: category shares, per-request CPU by category, and the rules behind them."""


def entry(args: list[str] | None = None) -> None:
    run_click(main, args)
