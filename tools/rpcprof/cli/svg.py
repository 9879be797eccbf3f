"""report.py svg: the annotated flame graph of a folded profile."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import output_for, rules_given, rules_option, show
from rpcprof.cli.report_options import (app_option, command_line, grouping_options, svg_output_option, title_option,
                                        with_app)
from rpcprof.report.flamegraph import render_flamegraph, subtitle_for_run
from rpcprof.rundir import run_of_folded


@click.command()
@click.argument("folded", type=click.Path(path_type=Path))
@svg_output_option
@title_option
@rules_option
@app_option
@grouping_options
def svg(folded, out, title, rules_path, app, level, view):
    """Annotated flame graph of FOLDED: frames coloured by category, legend, figures of its run."""
    output_for(out, folded)
    rules = with_app(load_rules(rules_path).using(level, view), app, folded)
    run = run_of_folded(folded)
    subtitle = subtitle_for_run(*run) if run else (lambda samples: f"{folded.name} · {samples:,} samples")
    title = title or command_line("svg", str(folded), "-o", str(out), **{
        "--app": app, "--rules": rules_given(rules_path), "--level": level if level != 1 else None,
        "--view": view if view != "category" else None})
    render_flamegraph(folded, rules, out, title, subtitle, "µs" if view == "waits" else "samples")
    show(f"report.py: wrote {out}\n", err=True)
