"""The commands behind report.py. Each maps options onto a function of the package and prints rows."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import OTHER, categorize, check_examples, load_rules, normalize_frame, open_folded
from rpcprof.analyze.rules import LEVELS, VIEWS
from rpcprof.analyze.rules_file import problems_line
from rpcprof.analyze.stack_walk import categorize_file
from rpcprof.cli.common import (command_line, format_option, latency_option, output_for, requests_option, rules_option,
                                run_click, runs_dir_option, show)
from rpcprof.cli.documents import results, seeds
from rpcprof.cli.runs import runs
from rpcprof.errors import EXIT_FAILED, UserError
from rpcprof.paths import INDIRECT_COST, RULES_PATH
from rpcprof.report.compare import render_compare
from rpcprof.report.export import FORMATS as EXPORT_FORMATS
from rpcprof.report.flamegraph import render_flamegraph, subtitle_for_run
from rpcprof.report.tables import render
from rpcprof.report.text import terminal
from rpcprof.rundir import REPORT_HTML, RESULT_FILE, inputs_of, read_result, resolve, run_of_folded, write_text


def grouping_options(f):
    """--level 1|2 and --view category|tax: which grouping of the samples a report shows."""
    f = click.option("--view", type=click.Choice(list(VIEWS)), default="category", show_default=True,
                     help="category: where the CPU goes (recv, send, protocol...); tax: what kind of work the "
                          "leaf does (allocation, data movement, hashing, locks, syscall entry, the rest); waits: "
                          "why threads waited (for an off-CPU profile, RUN/SERVER/offcpu.folded).")(f)
    return click.option("--level", type=click.IntRange(min(LEVELS), max(LEVELS)), default=1, show_default=True,
                        help="1: categories; 2: their sub-categories (protocol/http2, send/syscall...).")(f)


app_option = click.option("--app", default=None, metavar="REGEX",
                          help="Regex of the application handler's frames (else the server's, where known).")


indirect_option = click.option(
    "--indirect", "indirect_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="The indirect cost of a syscall as bench/indirect wrote it (docs/data/indirect-syscall-cost.json): "
         "adds the user code the extra writes slow down, and the ruler ratio the syscalls predict.")


def indirect_of(path: Path | None):
    from rpcprof.analyze.indirect import load_indirect
    return load_indirect(path) if path else None


def app_for(folded: Path) -> str | None:
    """The app pattern a pprof export carries (report/export.py), else the one recorded in its run folder."""
    from rpcprof.report.export import app_carried
    return app_carried(folded) or (read_result(Path(folded).parent) or {}).get("app")


@click.group(name="report.py", context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Explain profiles: category shares, per-request CPU by category, and the rules behind them."""


main.add_command(results)       # the generated documents: cli/documents.py
main.add_command(seeds)
main.add_command(runs)          # runs of one setup side by side: cli/runs.py


@main.command()
@click.argument("folded", nargs=-1, required=True, type=click.Path(path_type=Path))
@rules_option
@app_option
@requests_option("once per profile, in their order")
@grouping_options
@format_option
def table(folded, rules_path, app, requests, level, view, fmt):
    """Share of each category per profile, plus `other` (stacks no rule matched); with --requests, CPU µs
    per request by category instead. FOLDED: folded stacks, or pprof profiles (.pb.gz)."""
    from rpcprof.report.per_request import cpu_us_per_req, requests_per_profile
    rules = load_rules(rules_path).using(level, view)
    rows = []
    for path, n in zip(folded, requests_per_profile(requests, folded)):
        b = categorize_file(path, rules.with_app(app or app_for(path), "--app" if app else RESULT_FILE), keep_frames=False)
        row = {"profile": str(path), "samples": b.samples}
        row.update({c: 100 * b.share(c) for c in rules.all_categories})
        if n:
            us = cpu_us_per_req(path, b.total, n)
            row.update({"requests": n, "total_us": us, **{f"{c}_us": b.share(c) * us for c in rules.all_categories}})
        rows.append(row)
    columns = [("profile", "profile"), ("samples", "samples")]
    if requests:
        columns += ([("requests", "requests")] + [(f"{c}_us", f"{c} [µs/req]") for c in rules.all_categories]
                    + [("total_us", "total [µs/req]")])
    else:
        columns += [(c, f"{c} [%]") for c in rules.all_categories]
    show(render(rows, columns, fmt), fmt)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@rules_option
@app_option
@click.option("--ruler", default=None, metavar="REGEX",
              help="Frames doing the same work per request in every server (else each server's recorded ruler).")
@indirect_option
@grouping_options
@runs_dir_option
@format_option
def compare(run_dir, rules_path, app, ruler, indirect_path, level, view, runs_dir, fmt):
    """Per server of a run: req/s per CPU, the ratio to the first, CPU µs per request by category, and
    seed 001's ruler check (the ratio of the ruler's shares beside the measured ratio). With --indirect,
    the user code the extra writes slow down in the mechanism, and the ruler ratio to expect given the
    syscalls per request (e.g. --indirect docs/data/indirect-syscall-cost.json)."""
    show(render_compare(resolve(run_dir, runs_dir), load_rules(rules_path).using(level, view), fmt, app, ruler,
                        indirect_of(indirect_path)), fmt)


@main.command()
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
    from rpcprof.report.per_request import cpu_us_per_req, requests_per_profile
    rules = load_rules(rules_path).using(level, view)
    if category not in rules.all_categories:
        raise UserError(f"--category {category!r}: choose one of {', '.join(rules.all_categories)}")
    (n,) = requests_per_profile(requests, [folded])
    r = rules.with_app(app or app_for(folded), "--app" if app else RESULT_FILE)
    b = categorize_file(folded, r)
    us = cpu_us_per_req(folded, b.total, n) if n else None
    frames = b.top_frames(category, limit)
    rows = []
    for frame, w in frames:
        hit = r.rule_for(frame, category)
        rows.append({"frame": frame, "share": 100 * w / b.total if b.total else 0.0,
                     "rule": hit.name if hit else "(none: leaf of an unmatched stack)" if category == OTHER else "-"})
        if us is not None:
            rows[-1]["us_per_req"] = w / b.total * us
    columns = [("share", "share [%]")] + ([("us_per_req", "µs/req")] if n else []) + [("rule", "rule"), ("frame", "frame")]
    show(render(rows, columns, fmt), fmt)


@main.command()
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


@main.command("check-rules")
@rules_option
@format_option
def check_rules(rules_path, fmt):
    """Validate the rules file and that every rule decides its own examples."""
    rules = load_rules(rules_path)
    problems = check_examples(rules)
    if fmt != "table":
        rows = [{"rule": r.name, "category": r.category, "examples": len(r.examples)} for r in rules.rules]
        show(render(rows, [("category", "category"), ("rule", "rule"), ("examples", "examples")], fmt), fmt)
    if problems:
        raise UserError(f"{Path(rules_path).name}: " + problems_line(problems), exit_code=EXIT_FAILED)
    if fmt == "table":
        n = sum(len(r.examples) for r in rules.rules + rules.tax_rules + rules.waits.rules)
        subs = sum(len(v) for v in rules.subcategories.values())
        show(f"{Path(rules_path).name}: {len(rules.rules)} rules in {len(rules.categories)} categories "
                   f"({subs} sub-categories), {len(rules.tax_rules)} tax rules in {len(rules.tax_groups)} groups, "
                   f"{len(rules.waits.rules)} wait rules in {len(rules.waits.groups)} reasons, {n} examples, all decided "
                   "by their own rule.\n")


@main.command()
@click.argument("folded", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="SVG file to write.")
@click.option("--title", default=None, help="Title (default: this command line).")
@rules_option
@app_option
@grouping_options
def svg(folded, out, title, rules_path, app, level, view):
    """Annotated flame graph of FOLDED: frames coloured by category, legend, figures of its run."""
    output_for(out, folded)
    rules = load_rules(rules_path).using(level, view)
    r = rules.with_app(app or app_for(folded), "--app" if app else RESULT_FILE)
    run = run_of_folded(folded)
    if run:
        subtitle = subtitle_for_run(*run)
    else:
        b = categorize(open_folded(folded), r)
        subtitle = f"{folded.name} · {b.samples:,} samples"
    default_rules = Path(rules_path).resolve() == RULES_PATH.resolve()
    title = title or command_line("svg", str(folded), "-o", str(out), **{"--app": app},
                                  **{"--rules": None if default_rules else rules_path},
                                  **{"--level": level if level != 1 else None, "--view": view if view != "category" else None})
    render_flamegraph(folded, r, out, title, subtitle, countname="µs" if view == "waits" else "samples")
    show(f"report.py: wrote {out}\n", err=True)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="SVG file to write.")
@rules_option
@app_option
@grouping_options
@runs_dir_option
def chart(run_dir, out, rules_path, app, level, view, runs_dir):
    """The per-request chart of a run (breakdown.svg): CPU µs per request of each server, stacked by
    category, sub-category (--level 2, in shades of their category) or kind of work (--view tax)."""
    from rpcprof.report.chart import render_breakdown_chart
    run_dir = resolve(run_dir, runs_dir)
    output_for(out, *inputs_of(run_dir))
    render_breakdown_chart(run_dir, load_rules(rules_path).using(level, view), out, app)
    show(f"report.py: wrote {out}\n", err=True)


@main.command("html")
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


@main.command()
@click.argument("profile", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="pprof (gzip'd profile.proto, labels category/subcategory/tax, the app pattern), speedscope JSON "
                   "or collapsed stacks (Pyroscope's folded ingest; neither carries the labels nor the app pattern), "
                   "or otlp (OpenTelemetry profiles, attributes category/subcategory/tax; JSON for -o FILE.json).")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path), help="File to write.")
@rules_option
@app_option
def export(profile, fmt, out, rules_path, app):
    """Export a folded profile for pprof, Pyroscope/Parca, speedscope, with rpcprof's categories as labels.

    eg, ./report.py export flamegraphs/RUN/rust_tonic_mt/profile.folded --format pprof -o tonic.pb.gz
        go tool pprof -top -tagfocus=category=send tonic.pb.gz
    """
    from rpcprof.report.export import export as export_profile
    rules = load_rules(rules_path).with_app(app or app_for(profile), "--app" if app else RESULT_FILE)
    n = export_profile(profile, rules, fmt, out, app or app_for(profile))
    show(f"report.py: wrote {out} ({n:,} stacks, {fmt})\n", err=True)


@main.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="SVG file to write.")
@click.option("--normalize", "mode", type=click.Choice(["share", "per-request", "absolute"]), default="share", show_default=True,
              help="share: shares of samples (without rounds, A scaled to B's total); per-request: CPU µs per request "
                   "(each round's shares × its unprofiled CPU per request: run folders, or profiles with --requests); "
                   "absolute: samples as counted. With rounds, B−A is tested in the mode chosen.")
@click.option("--no-normalize", is_flag=True, help="The same as --normalize absolute.")
@click.option("--per-request", is_flag=True, help="The same as --normalize per-request.")
@click.option("--title", default=None, help="Title (default: this command line).")
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

    eg, ./report.py diff flamegraphs/RUN/rust_tonic_mt flamegraphs/RUN/rust_pajamax -o diff.svg
    """
    from rpcprof.report.sigdiff import render_diff
    output_for(out, a, b)
    default_rules = Path(rules_path).resolve() == RULES_PATH.resolve()
    title = title or command_line("diff", str(a), str(b), "-o", str(out), *(x for n in requests for x in ("--requests", str(n))),
                                  **{"--normalize": None if mode == "share" else mode, "--no-normalize": no_normalize},
                                  **{"--per-request": per_request}, **{"--app": app},
                                  **{"--rules": None if default_rules else rules_path})
    mode = "per-request" if per_request else "absolute" if no_normalize else mode
    show(render_diff(a, b, out, load_rules(rules_path), app, mode != "absolute", mode == "per-request", title, fmt, requests),
         fmt)


def saved_folder_options(f):
    """--runs-dir (a folder given by name is looked up there) and --format, for commands on saved folders."""
    return runs_dir_option(format_option(f))


@main.command("run")
@click.argument("run_dir", type=click.Path(path_type=Path))
@latency_option
@saved_folder_options
def run_table(run_dir, latency, runs_dir, fmt):
    """The run table of a saved run folder, as profile.sh run printed it."""
    from rpcprof.report.summary import render_run
    show(render_run(resolve(run_dir, runs_dir), fmt, latency), fmt)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@rules_option
@saved_folder_options
def waits(run_dir, rules_path, runs_dir, fmt):
    """Where each server's threads waited in the run's off-CPU window: time, waits and mean wait per
    reason (categorize.yaml `waits:`), the TCP state of its connections, and a Nagle / delayed-ACK stall
    named when the numbers show one.

    eg, ./report.py waits flamegraphs/RUN
    """
    from rpcprof.report.waits import render_waits
    show(render_waits(resolve(run_dir, runs_dir), load_rules(rules_path), fmt), fmt)


@main.command("sweep")
@click.argument("sweep_dir", type=click.Path(path_type=Path))
@rules_option
@saved_folder_options
def sweep_table(sweep_dir, rules_path, runs_dir, fmt):
    """Seed 000's table for a saved sweep folder (a path, or its name under --runs-dir)."""
    from rpcprof.report.sweep_table import render_sweep
    rules = load_rules(rules_path)
    show(render_sweep(resolve(sweep_dir, runs_dir), rules, fmt), fmt)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.argument("a")
@click.argument("b")
@click.option("--indirect", "indirect_path", type=click.Path(dir_okay=False, path_type=Path), default=INDIRECT_COST,
              show_default=True, help="The indirect cost of a syscall, as bench/indirect wrote it.")
@rules_option
@saved_folder_options
def whatif(run_dir, a, b, indirect_path, rules_path, runs_dir, fmt):
    """B's CPU µs per request if it wrote as A does (A's requests per write), with a 95 % interval: B's own
    send cost per write (over its rounds) plus the user code each syscall slows (--indirect), checked
    against A's measured figures category by category.

    eg, ./report.py whatif docs/data/20261124-074115-seed-001 rust_tonic_st rust_tonic_mt
    """
    from rpcprof.analyze.indirect import load_indirect
    from rpcprof.report.whatif import render_whatif
    cost = load_indirect(indirect_path)
    show(render_whatif(resolve(run_dir, runs_dir), load_rules(rules_path), a, b, cost, fmt), fmt)


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Folded file to write.")
def fold(source, out):
    """Fold a saved profile again: perf.data (perf script | inferno-collapse-perf), an off-CPU recording
    (RUN/SERVER/offcpu.data: weighted by µs off CPU) or a py-spy raw file (checked and copied). The first stage of capture -> fold -> categorize -> report, on saved files.

    eg, ./report.py fold flamegraphs/RUN/rust_tonic_mt/perf.data -o /tmp/tonic.folded
    """
    from rpcprof.capture.fold import fold as fold_file
    done = fold_file(Path(source), out)
    what = (f"{done['waits']:,} waits, {done['off_cpu_us'] / 1e6:.2f} s off CPU (weights in µs; counts in {out}.count)"
            if "waits" in done else f"{done['samples']:,} samples")
    show(f"report.py: folded {what} ({done['input']}) into {out}\n", err=True)


def entry(args: list[str] | None = None) -> None:
    run_click(main, args)
