"""What both rpcprof command lines share: one-line errors, exit codes, the options several commands take
(--format, --rules, --runs-dir, --requests, --otlp-endpoint), printing a report and checking an -o before any work."""
from __future__ import annotations

import os
import signal
import sys
from functools import reduce
from pathlib import Path

import click

from rpcprof.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, UserError
from rpcprof.paths import RULES_PATH, RUNS_DIR
from rpcprof.progress import log
from rpcprof.report.otlp_push import FORMS as OTLP_FORMS, OTLP_TIMEOUT_S
from rpcprof.report.tables import FORMATS
from rpcprof.report.text import terminal, terminal_lines
from rpcprof.rundir import PERF_DATA, CannotWrite, check_not_input

format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
                             help="Output format.")
rules_option = click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=str(RULES_PATH),
                            show_default="categorize.yaml", help="Categorisation rules.")


def rules_given(rules_path) -> str | None:
    """--rules as the command line that regenerates an output repeats it: None for the default rules file."""
    return None if Path(rules_path).resolve() == RULES_PATH.resolve() else rules_path


latency_option = click.option(
    "--latency", type=click.Choice(["seed", "full"]), default="seed", show_default=True,
    help="Latency columns: seed 000's (avg, 90, 95, 99 %) or all (p50 ... p99.99, max, tm99, stddev).")


def requests_option(how_many: str):
    """--requests N: the requests a profile with no run folder served, for CPU µs per request."""
    return click.option("--requests", type=click.IntRange(min=1), multiple=True, metavar="N",
                        help="Requests the profile served over its window (for a fleet's pprof: from the service's "
                             "request metrics): CPU µs per request from its CPU nanoseconds; " + how_many + ".")


def stacked(*options):
    """One decorator of several click options, given in the order --help lists them."""
    return lambda f: reduce(lambda g, option: option(g), reversed(options), f)


def otlp_options(what: str):
    """--otlp-endpoint URL and --otlp-timeout SECONDS: what is sent to an OpenTelemetry Collector, over OTLP."""
    return stacked(click.option("--otlp-endpoint", metavar="URL", default=None,
                                help=f"Send {what} to an OpenTelemetry Collector over OTLP: {OTLP_FORMS}."),
                   click.option("--otlp-timeout", metavar="SECONDS", default=OTLP_TIMEOUT_S, show_default=True,
                                type=click.FloatRange(min=0, min_open=True),
                                help="Give up on an --otlp-endpoint that has not answered by then."))


def document_options(example: str):
    """-o FILE, --rules and --runs-dir: the options of a command that writes a generated document."""
    return stacked(click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
                                help=f"Write the document here (e.g. {example}) instead of stdout."),
                   rules_option,
                   click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=RUNS_DIR,
                                show_default="flamegraphs/", help="Where run folders are looked up by name."))


runs_dir_option = click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=RUNS_DIR,
                               show_default="flamegraphs/", help="Where run folders are written (and looked up by name).")


def output_for(out: Path, *inputs: Path) -> Path:
    """-o checked before any work: not one of the command's inputs, and its folder made."""
    check_not_input(out, *inputs)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CannotWrite(out, e) from None
    return out


def show(text: str, fmt: str = "table", err: bool = False) -> None:
    """Print a report or a note. Text meant for people (table, markdown, notes) goes through
    terminal_lines, so a control character in a frame, server or file name is shown as an escape, never
    sent to the terminal raw; csv and json are printed as their writers made them."""
    click.echo(text if fmt in ("csv", "json") else terminal_lines(text), nl=False, err=err)


def footprint(folder: Path) -> tuple[int, int]:
    """(bytes the folder takes on disk, as du counts them: allocated blocks; of which its recordings, perf.data
    and the like, which `report.py fold` folds again)."""
    total = recordings = 0
    for path in Path(folder).rglob("*"):
        try:
            st = path.lstat()
        except OSError:             # gone while counted
            continue
        total += st.st_blocks * 512
        recordings += st.st_blocks * 512 if path.suffix == Path(PERF_DATA).suffix and path.is_file() else 0
    return total, recordings


def print_footprint(folder: Path) -> None:
    """A job's last line on stderr: what its folder takes on disk, and how much of that its recordings."""
    total, recordings = footprint(folder)
    log(f"rpcprof: {folder} takes {total / 2**20:.1f} MiB on disk ({recordings / 2**20:.1f} MiB of it the "
        f"recordings that report.py fold folds again)")


def internal_error(prog: str, error: BaseException) -> int:
    """An unexpected exception: the traceback to a file, one line naming it on stderr; the exit code."""
    import tempfile
    import traceback
    fd, path = tempfile.mkstemp(prefix="rpcprof-internal-error-", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write(f"{prog} {' '.join(sys.argv[1:])}\n\n")
        traceback.print_exception(error, file=f)
    first = terminal((str(error).splitlines() or [""])[0][:200])
    click.echo(f"{prog}: internal error: {type(error).__name__}: {first}; details in {path}", err=True)
    return EXIT_INTERNAL


def catch_interrupts() -> None:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, and that interrupt is never lost.

    Python drops an exception raised where it cannot propagate (an at-fork hook, a __del__, a weakref
    callback) and goes on: a signal landing there would let a 30 s window run to its end and exit 0, as CI
    once saw (SIGHUP during a fork, "Exception ignored in: _releaseLock"). The unraisable hook sees the
    dropped interrupt and raises it again 50 ms later, by SIGALRM, once the place that dropped it is left;
    the alarm also breaks the main thread's blocking wait. Dropped again, it is raised again."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
        signal.signal(signum, on_signal)
    default_hook = sys.unraisablehook

    def on_unraisable(unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            return
        default_hook(unraisable)
    sys.unraisablehook = on_unraisable


def run_click(group: click.Group, args: list[str] | None = None) -> None:
    """Run a click group on args (default: the command line): UserError -> one line on stderr (control
    characters shown as escapes, so a hostile name can neither break the line nor drive the terminal) and its
    exit code; SIGTERM and SIGHUP act like Ctrl-C so every cleanup path runs; anything unexpected -> one
    line naming a file with the traceback, exit 70; never a traceback on the terminal. Always ends in
    SystemExit with the exit code."""
    catch_interrupts()
    try:
        group(args=args, prog_name=group.name, standalone_mode=False)
    except click.ClickException as e:          # a usage error names the command's --help
        hint = f" (try '{e.ctx.command_path} --help')" if getattr(e, "ctx", None) else ""
        click.echo(f"{group.name}: error: {terminal(e.format_message())}{hint}", err=True)
        sys.exit(e.exit_code)
    except UserError as e:
        click.echo(f"{group.name}: error: {terminal(e)}", err=True)
        sys.exit(e.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo(f"{group.name}: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(EXIT_OK)
    except Exception as e:                 # noqa: BLE001 - the error boundary
        sys.exit(internal_error(group.name, e))
    sys.exit(EXIT_OK)

