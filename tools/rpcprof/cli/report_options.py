"""The options and helpers several report.py commands share: the grouping of the samples (--level,
--view), --app, --indirect, the options of a command on saved folders, and a graph's title."""
from __future__ import annotations

import shlex
from pathlib import Path

import click

from rpcprof.analyze.rules import LEVELS, VIEWS
from rpcprof.cli.common import format_option, runs_dir_option, stacked
from rpcprof.rundir import RESULT_FILE, read_server_result


# --level 1|2 and --view category|tax: which grouping of the samples a report shows
grouping_options = stacked(
    click.option("--level", type=click.IntRange(min(LEVELS), max(LEVELS)), default=1, show_default=True,
                 help="1: categories; 2: their sub-categories (protocol/http2, send/syscall...)."),
    click.option("--view", type=click.Choice(list(VIEWS)), default="category", show_default=True,
                 help="category: where the CPU goes (recv, send, protocol...); tax: what kind of work the "
                      "leaf does (allocation, data movement, hashing, locks, syscall entry, the rest); waits: "
                      "why threads waited (for an off-CPU profile, RUN/SERVER/offcpu.folded)."))


app_option = click.option("--app", default=None, metavar="REGEX",
                          help="Regex of the application handler's frames (else the server's, where known).")


indirect_option = click.option(
    "--indirect", "indirect_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="The indirect cost of a syscall as bench/indirect wrote it (docs/data/indirect-syscall-cost.json): "
         "adds the user code the extra writes slow down, and the ruler ratio the syscalls predict.")


def indirect_of(path: Path | None):
    from rpcprof.analyze.indirect import load_indirect
    return load_indirect(path) if path else None


def app_for(folded: Path) -> tuple[str | None, str]:
    """(the app pattern, where it comes from): the one a pprof export carries (report/export.py), else the one
    recorded in its run folder."""
    from rpcprof.report.export import app_carried
    if carried := app_carried(folded):
        return carried, "the profile's comment"
    result = read_server_result(Path(folded).parent)
    return (result.figures.get("app") if result else None), RESULT_FILE


def with_app(rules, app: str | None, folded: Path):
    """rules with --app, else with the app pattern of folded (app_for), each named where it comes from."""
    return rules.with_app(app, "--app") if app else rules.with_app(*app_for(folded))


# -o FILE of a command that draws an SVG, and --title
svg_output_option = click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
                                 help="SVG file to write.")
title_option = click.option("--title", default=None, help="Title (default: this command line).")


def command_line(*parts: str | None, **options) -> str:
    """The report.py command that made a graph, for its title: the arguments given, default options left out."""
    argv = ["report.py", *(p for p in parts if p)]
    for flag, value in options.items():
        if value is True:
            argv.append(flag)
        elif value:
            argv += [flag, str(value)]
    return shlex.join(argv)


# --runs-dir (a folder given by name is looked up there) and --format, for commands on saved folders
saved_folder_options = stacked(runs_dir_option, format_option)
