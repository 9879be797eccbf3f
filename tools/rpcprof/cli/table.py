"""report.py table: the share of each category per profile (or, with --requests, CPU µs per request by category)."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.cli.common import format_option, requests_option, rules_option, show
from rpcprof.cli.report_options import app_option, grouping_options, with_app
from rpcprof.report.tables import render


@click.command()
@click.argument("folded", nargs=-1, required=True, type=click.Path(path_type=Path))
@rules_option
@app_option
@requests_option("once per profile, in their order")
@grouping_options
@format_option
def table(folded, rules_path, app, requests, level, view, fmt):
    """Share of each category per profile, plus `other` (stacks no rule matched); with --requests, CPU µs
    per request by category instead. FOLDED: folded stacks, or pprof profiles (.pb.gz)."""
    from rpcprof.analyze.per_request import cpu_us_per_req, requests_per_profile
    from rpcprof.folded import weight_unit
    rules = load_rules(rules_path).using(level, view)
    rows = []
    for path, n in zip(folded, requests_per_profile(requests, folded)):
        b = categorize_file(path, with_app(rules, app, path), keep_frames=False)
        row = {"profile": str(path), "samples": b.samples, **{c: 100 * b.share(c) for c in rules.all_categories}}
        if n:
            us = cpu_us_per_req(path, weight_unit(path), b.total, n)
            row.update({"requests": n, "total_us": us, **{f"{c}_us": b.share(c) * us for c in rules.all_categories}})
        rows.append(row)
    columns = [("profile", "profile"), ("samples", "samples")]
    if requests:
        columns += ([("requests", "requests")] + [(f"{c}_us", f"{c} [µs/req]") for c in rules.all_categories]
                    + [("total_us", "total [µs/req]")])
    else:
        columns += [(c, f"{c} [%]") for c in rules.all_categories]
    show(render(rows, columns, fmt), fmt)
