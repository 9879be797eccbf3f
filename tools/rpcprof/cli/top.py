"""report.py top: the frames that decide a category's samples."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import OTHER, load_rules
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.cli.common import format_option, requests_option, rules_option, show
from rpcprof.cli.report_options import app_option, grouping_options, with_app
from rpcprof.errors import UserError
from rpcprof.report.tables import render


@click.command()
@click.argument("folded", type=click.Path(path_type=Path))
@click.option("-c", "--category", required=True,
              help="Category to look into (recv, send, ..., other; protocol/http2... with --level 2; "
                   "allocation... with --view tax).")
@click.option("-n", "--limit", type=click.IntRange(min=0), default=20, show_default=True, help="Rows.")
@rules_option
@app_option
@requests_option("once")
@grouping_options
@format_option
def top(folded, category, limit, rules_path, app, requests, level, view, fmt):
    """The frames that decide CATEGORY's samples (for `other`: the leaf frames of unmatched stacks)."""
    from rpcprof.analyze.per_request import cpu_us_per_req, requests_per_profile
    from rpcprof.folded import weight_unit
    rules = load_rules(rules_path).using(level, view)
    if category not in rules.all_categories:
        raise UserError(f"--category {category!r}: choose one of {', '.join(rules.all_categories)}")
    (n,) = requests_per_profile(requests, [folded])
    r = with_app(rules, app, folded)
    b = categorize_file(folded, r)
    us = cpu_us_per_req(folded, weight_unit(folded), b.total, n) if n else None
    rows = []
    for frame, w in b.top_frames(category, limit):
        hit = r.rule_for(frame, category)
        rows.append({"frame": frame, "share": 100 * w / b.total if b.total else 0.0,
                     "rule": hit.name if hit else "(none: leaf of an unmatched stack)" if category == OTHER else "-"})
        if us is not None:
            rows[-1]["us_per_req"] = w / b.total * us
    columns = [("share", "share [%]")] + ([("us_per_req", "µs/req")] if n else []) + [("rule", "rule"), ("frame", "frame")]
    show(render(rows, columns, fmt), fmt)
