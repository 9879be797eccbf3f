"""report.py diff: the differential flame graph of two profiles, tested across rounds (report/sigdiff.py)."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import format_option, output_for, requests_option, rules_given, rules_option, show
from rpcprof.cli.report_options import app_option, command_line, svg_output_option, title_option


@click.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@svg_output_option
@click.option("--normalize", "mode", type=click.Choice(["share", "per-request", "absolute"]), default="share",
              show_default=True,
              help="share: shares of samples (without rounds, A scaled to B's total); per-request: CPU µs per request "
                   "(each round's shares × its unprofiled CPU per request: run folders, or profiles with --requests); "
                   "absolute: samples as counted. With rounds, B−A is tested in the mode chosen.")
@click.option("--no-normalize", is_flag=True, help="The same as --normalize absolute.")
@click.option("--per-request", is_flag=True, help="The same as --normalize per-request.")
@title_option
@rules_option
@app_option
@requests_option("twice, A's then B's, when A and B are profiles without a run folder")
@format_option
def diff(a, b, out, mode, no_normalize, per_request, title, rules_path, app, requests, fmt):
    """Differential flame graph of B against A (widths are B's; red: more in B, blue: less), and each
    category's share and CPU µs per request in A and B: frame-level colours mislead when a parent is
    unchanged but its children grew. A and B: folded files, or a server of a run (RUN/SERVER, its
    profile.folded, or a run of one server) with all its rounds: then every difference is tested across
    rounds, and only the frames whose difference is significant are coloured (Benjamini-Hochberg at 5 %).

    \b
    eg, ./report.py diff flamegraphs/RUN/rust_tonic_mt flamegraphs/RUN/rust_pajamax -o diff.svg
    """
    output_for(out, a, b)
    title = title or command_line("diff", str(a), str(b), "-o", str(out), *(x for n in requests for x in ("--requests", str(n))),
                                  **{"--normalize": None if mode == "share" else mode, "--no-normalize": no_normalize,
                                     "--per-request": per_request, "--app": app, "--rules": rules_given(rules_path)})
    mode = "per-request" if per_request else "absolute" if no_normalize else mode
    from rpcprof.report.sigdiff import render_diff
    show(render_diff(a, b, out, load_rules(rules_path), app, mode != "absolute", mode == "per-request", title, fmt,
                     requests), fmt)
