"""report.py explain: which rule a frame matches, and why."""
from __future__ import annotations

import click

from rpcprof.analyze.categorize import load_rules, normalize_frame
from rpcprof.cli.common import format_option, rules_option, show
from rpcprof.cli.report_options import app_option
from rpcprof.report.tables import render
from rpcprof.report.text import terminal


@click.command()
@click.argument("frame")
@rules_option
@app_option
@format_option
def explain(frame, rules_path, app, fmt):
    """Which rule FRAME matches, and why (the normalised name the rules see)."""
    rules = load_rules(rules_path).with_app(app)
    name, kernel = normalize_frame(frame)
    hit = rules.classify_frame(frame)
    row = {"frame": frame, "matched_as": name, "kernel": kernel,
           "category": hit[0] if hit else "(none: falls to its nearest classified caller, or other)",
           "rule": hit[1].name if hit else "-", "pattern": hit[1].pattern.pattern if hit else "-"}
    if fmt == "table":
        width = max(len(k) for k in row)
        click.echo("\n".join(f"{k.ljust(width)}  {terminal(v) if not isinstance(v, bool) else ('yes' if v else 'no')}"
                             for k, v in row.items()))
        return
    show(render([row], [(k, k) for k in row], fmt), fmt)
