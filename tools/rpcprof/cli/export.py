"""report.py export: a folded profile for pprof, Pyroscope/Parca or speedscope, categories as labels."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import otlp_options, rules_option, show
from rpcprof.cli.report_options import app_for, app_option, with_app
from rpcprof.errors import UserError
from rpcprof.report.export import FORMATS as EXPORT_FORMATS


@click.command()
@click.argument("profile", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="pprof (gzip'd profile.proto, labels category/subcategory/tax, the app pattern), speedscope JSON "
                   "or collapsed stacks (Pyroscope's folded ingest; neither carries the labels nor the app pattern), "
                   "or otlp (OpenTelemetry profiles, attributes category/subcategory/tax; JSON for -o FILE.json).")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path), help="File to write.")
@otlp_options("the OTLP profile written (--format otlp), once written,")
@rules_option
@app_option
def export(profile, fmt, out, otlp_endpoint, otlp_timeout, rules_path, app):
    """Export a folded profile for pprof, Pyroscope/Parca, speedscope, with rpcprof's categories as labels.

    \b
    eg, ./report.py export flamegraphs/RUN/rust_tonic_mt/profile.folded --format pprof -o tonic.pb.gz
        go tool pprof -top -tagfocus=category=send tonic.pb.gz
        ./report.py export RUN/SERVER/profile.folded --format otlp -o server.pb --otlp-endpoint 127.0.0.1:4317
    """
    from rpcprof.report.export import export as export_profile
    from rpcprof.report.otlp_push import endpoint, push_file
    if otlp_endpoint and fmt != "otlp":
        raise UserError(f"--otlp-endpoint sends an OTLP profile: give --format otlp, not {fmt}")
    to = endpoint(otlp_endpoint) if otlp_endpoint else None
    n = export_profile(profile, with_app(load_rules(rules_path), app, profile), fmt, out, app or app_for(profile)[0])
    show(f"report.py: wrote {out} ({n:,} stacks, {fmt})\n", err=True)
    if to:
        push_file(out, to, otlp_timeout)
        show(f"report.py: sent {out} to {to}\n", err=True)
