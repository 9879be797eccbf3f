"""report.py html: report.html of a run, one self-contained page."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import output_for, rules_option, runs_dir_option, show
from rpcprof.cli.report_options import indirect_of, indirect_option
from rpcprof.rundir import REPORT_HTML, inputs_of, resolve, write_text


@click.command("html")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write [default: RUN/report.html].")
@rules_option
@indirect_option
@runs_dir_option
def html_report(run_dir, out, rules_path, indirect_path, runs_dir):
    """report.html of a run: one self-contained page (tables, flags, charts, interactive flame graphs,
    the mechanism, the manifest) that opens offline."""
    from rpcprof.report.html import build_html
    run_dir = resolve(run_dir, runs_dir)
    out = output_for(out or run_dir / REPORT_HTML, *inputs_of(run_dir))
    write_text(out, build_html(run_dir, load_rules(rules_path), indirect_of(indirect_path)))
    show(f"report.py: wrote {out}\n", err=True)
