"""What every rpcprof command line shares: one-line errors, exit codes, the --format option."""
from __future__ import annotations

import signal
import sys

import click

from .errors import UserError
from .tables import FORMATS

format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                             help="Output format.")


def run_click(group: click.Group) -> None:
    """Run a click group: UserError -> one line on stderr and its exit code; SIGTERM acts like Ctrl-C
    so every cleanup path runs; never a traceback for the user's mistakes."""
    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        group(prog_name=group.name, standalone_mode=False)
    except click.UsageError as e:
        hint = f" (try '{e.ctx.command_path} --help')" if e.ctx else ""
        click.echo(f"{group.name}: error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except UserError as e:
        click.echo(f"{group.name}: error: {e}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo(f"{group.name}: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo(f"{group.name}: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(0)
