"""The commands behind report.py. Each maps options onto a function of the package and prints rows."""
from __future__ import annotations

import shlex
from pathlib import Path

import click

from .categorize import RULES_PATH, OTHER, categorize, check_examples, load_rules, normalize_frame, open_folded
from .clicommon import format_option, run_click
from .compare import render_compare
from .errors import UserError
from .flamegraph import category_diff_rows, render_diff_flamegraph, render_flamegraph, run_of_folded, subtitle_for_run
from .tables import render

rules_option = click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=str(RULES_PATH),
                            show_default="categorize.yaml", help="Categorisation rules.")
app_option = click.option("--app", default=None, metavar="REGEX",
                          help="Regex of the application handler's frames (else the server's, where known).")


def app_for(folded: Path) -> str | None:
    """The app pattern recorded for a folded file's server in its run folder, if any."""
    import json
    result = folded.parent / "result.json"
    try:
        return json.loads(result.read_text()).get("app")
    except (OSError, ValueError):
        return None


@click.group(name="report.py", context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """Explain profiles: category shares, per-request CPU by category, and the rules behind them."""


@main.command()
@click.argument("folded", nargs=-1, required=True, type=click.Path(path_type=Path))
@rules_option
@app_option
@format_option
def table(folded, rules_path, app, fmt):
    """Share of each category per profile, plus `other` (stacks no rule matched)."""
    rules = load_rules(rules_path)
    rows = []
    for path in folded:
        b = categorize(open_folded(path), rules.with_app(app or app_for(path), "--app" if app else "result.json"))
        row = {"profile": str(path), "samples": b.samples}
        row.update({c: 100 * b.share(c) for c in rules.all_categories})
        rows.append(row)
    columns = [("profile", "profile"), ("samples", "samples")] + [(c, f"{c} [%]") for c in rules.all_categories]
    click.echo(render(rows, columns, fmt), nl=False)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@rules_option
@app_option
@click.option("--ruler", default=None, metavar="REGEX",
              help="Frames doing the same work per request in every server (else each server's recorded ruler).")
@format_option
def compare(run_dir, rules_path, app, ruler, fmt):
    """Per server of a run: req/s per CPU, the ratio to the first, CPU µs per request by category, and
    seed 001's ruler check (the ratio of the ruler's shares beside the measured ratio)."""
    click.echo(render_compare(run_dir, load_rules(rules_path), fmt, app, ruler), nl=False)


@main.command()
@click.argument("folded", type=click.Path(path_type=Path))
@click.option("-c", "--category", required=True, help="Category to look into (recv, send, ..., other).")
@click.option("-n", "--limit", default=20, show_default=True, help="Rows.")
@rules_option
@app_option
@format_option
def top(folded, category, limit, rules_path, app, fmt):
    """The frames that decide CATEGORY's samples (for `other`: the leaf frames of unmatched stacks)."""
    rules = load_rules(rules_path)
    if category not in rules.all_categories:
        raise UserError(f"--category {category!r}: choose one of {', '.join(rules.all_categories)}")
    r = rules.with_app(app or app_for(folded), "--app" if app else "result.json")
    b = categorize(open_folded(folded), r)
    frames = sorted(b.by_frame.get(category, {}).items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    rows = []
    for frame, w in frames:
        hit = r.classify_frame(frame)
        rows.append({"frame": frame, "share": 100 * w / b.total if b.total else 0.0,
                     "rule": hit[1].name if hit else "(none: leaf of an unmatched stack)" if category == OTHER else "-"})
    columns = [("share", "share [%]"), ("rule", "rule"), ("frame", "frame")]
    click.echo(render(rows, columns, fmt), nl=False)


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
        click.echo("\n".join(f"{k.ljust(width)}  {v if not isinstance(v, bool) else ('yes' if v else 'no')}"
                             for k, v in row.items()))
        return
    click.echo(render([row], [(k, k) for k in row], fmt), nl=False)


@main.command("check-rules")
@rules_option
@format_option
def check_rules(rules_path, fmt):
    """Validate the rules file and that every rule decides its own examples."""
    rules = load_rules(rules_path)
    problems = check_examples(rules)
    if fmt != "table":
        rows = [{"rule": r.name, "category": r.category, "examples": len(r.examples)} for r in rules.rules]
        click.echo(render(rows, [("category", "category"), ("rule", "rule"), ("examples", "examples")], fmt), nl=False)
    if problems:
        raise UserError(f"{Path(rules_path).name}: " + "; ".join(problems), exit_code=1)
    if fmt == "table":
        n = sum(len(r.examples) for r in rules.rules)
        click.echo(f"{Path(rules_path).name}: {len(rules.rules)} rules in {len(rules.categories)} categories, "
                   f"{n} examples, all decided by their own rule.")


def command_line(*parts: str | None, **options) -> str:
    """The report.py command that made a graph, for its title: the arguments given, default options left out."""
    argv = ["report.py", *(p for p in parts if p)]
    for flag, value in options.items():
        if value is True:
            argv.append(flag)
        elif value:
            argv += [flag, str(value)]
    return shlex.join(argv)


def profile_labels(a: Path, b: Path) -> tuple[str, str, str]:
    """(label of A, label of B, where they come from): server names for profiles of runs, else paths."""
    run_a, run_b = run_of_folded(a), run_of_folded(b)
    if run_a and run_b and run_a[0].resolve() == run_b[0].resolve():
        return run_a[1], run_b[1], f"run {run_a[0].name}"
    label_a = f"{run_a[1]} of run {run_a[0].name}" if run_a else str(a)
    label_b = f"{run_b[1]} of run {run_b[0].name}" if run_b else str(b)
    return label_a, label_b, ""


@main.command()
@click.argument("folded", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="SVG file to write.")
@click.option("--title", default=None, help="Title (default: this command line).")
@rules_option
@app_option
def svg(folded, out, title, rules_path, app):
    """Annotated flame graph of FOLDED: frames coloured by category, legend, figures of its run."""
    rules = load_rules(rules_path)
    r = rules.with_app(app or app_for(folded), "--app" if app else "result.json")
    run = run_of_folded(folded)
    if run:
        subtitle = subtitle_for_run(*run)
    else:
        b = categorize(open_folded(folded), r)
        subtitle = f"{folded.name} · {b.samples:,} samples"
    default_rules = Path(rules_path).resolve() == RULES_PATH.resolve()
    title = title or command_line("svg", str(folded), "-o", str(out), **{"--app": app},
                                  **{"--rules": None if default_rules else rules_path})
    render_flamegraph(folded, r, out, title, subtitle)
    click.echo(f"report.py: wrote {out}", err=True)


@main.command()
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="SVG file to write.")
@click.option("--normalize/--no-normalize", default=True, show_default=True,
              help="Scale A to B's total samples first (inferno-diff-folded -n).")
@click.option("--title", default=None, help="Title (default: this command line).")
@rules_option
@app_option
@format_option
def diff(a, b, out, normalize, title, rules_path, app, fmt):
    """Differential flame graph of B against A (widths are B's; red: more in B, blue: less), and the
    share of each category in A and B: frame-level colours mislead when a parent is unchanged but its
    children grew."""
    rules = load_rules(rules_path)
    rules_a = rules.with_app(app or app_for(a), "--app" if app else "result.json")
    rules_b = rules.with_app(app or app_for(b), "--app" if app else "result.json")
    rows = category_diff_rows(a, b, rules_a, rules_b)
    label_a, label_b, origin = profile_labels(a, b)
    scaling = "normalised: A scaled to B's total" if normalize else "not normalised: raw weights"
    subtitle = " · ".join(x for x in (f"A = {label_a} → B = {label_b}", origin, "widths: B",
                                      "red: more in B, blue: less", scaling) if x)
    default_rules = Path(rules_path).resolve() == RULES_PATH.resolve()
    title = title or command_line("diff", str(a), str(b), "-o", str(out), **{"--no-normalize": not normalize},
                                  **{"--app": app}, **{"--rules": None if default_rules else rules_path})
    render_diff_flamegraph(a, b, out, title, subtitle, normalize, rows)
    columns = [("category", "category"), ("a", "A [%]"), ("b", "B [%]"), ("delta", "B−A [points]")]
    if fmt in ("table", "markdown"):
        click.echo(f"A = {label_a}\nB = {label_b}" + (f" ({origin})" if origin else "") + "\n")
    click.echo(render(rows, columns, fmt), nl=False)
    if fmt in ("table", "markdown"):
        click.echo(f"\nShare of samples per category; the differences sum to 0. Wrote {out} ({scaling}).")


@main.command()
@click.argument("sweep_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the document here (e.g. docs/results.md) instead of stdout.")
@rules_option
def results(sweep_dir, output, rules_path):
    """The results document of a sweep: table, per-request explanation, seed figures beside them."""
    from .results import build_results
    if not (Path(sweep_dir) / "manifest.json").exists():
        raise UserError(f"{sweep_dir}: not a sweep folder (no manifest.json); give flamegraphs/<...-sweep-...>")
    manifest = __import__("json").loads((Path(sweep_dir) / "manifest.json").read_text())
    if manifest.get("mode") != "sweep":
        raise UserError(f"{sweep_dir}: a run folder, not a sweep: make one with ./profile.sh sweep")
    write_document(build_results(Path(sweep_dir), load_rules(rules_path)), output)


def write_document(text: str, output: Path | None) -> None:
    """A generated document to a file (written whole under a temporary name, then renamed) or stdout."""
    if not output:
        click.echo(text, nl=False)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(text)
    tmp.replace(output)
    click.echo(f"wrote {output}", err=True)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the document here (e.g. docs/seeds.md) instead of stdout.")
@click.option("--also", "also", multiple=True, type=click.Path(path_type=Path),
              help="Another run folder of the same servers (another driver, C or S), set beside it; repeatable.")
@rules_option
def seeds(run_dir, output, also, rules_path):
    """Seed 001 reproduced: the figures of a run of its setup beside the seed's (ratio, client and server
    CPU, the flame graphs' frame shares, the format_inner ruler), and why they differ, from the run's figures.

    eg, ./profile.sh run rust_tonic_mt rust_pajamax rust_tonic_st --driver ghz -C 1 -S 50 --label seed-001
        ./report.py seeds flamegraphs/<...-seed-001> -o docs/seeds.md
    """
    from .seeds import build_seeds
    write_document(build_seeds(Path(run_dir), load_rules(rules_path), list(also)), output)


@main.command("run")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--latency", type=click.Choice(["seed", "full"]), default="seed", show_default=True,
              help="Latency columns: seed 000's (avg, 90, 95, 99 %) or all (p50 ... p99.99, max, tm99, stddev).")
@format_option
def run_table(run_dir, latency, fmt):
    """The run table of a saved run folder, as profile.sh run printed it."""
    from .compare import load_run
    from .summary import render_run
    load_run(run_dir)
    click.echo(render_run(Path(run_dir), fmt, latency), nl=False)


@main.command("sweep")
@click.argument("sweep_dir", type=click.Path(path_type=Path))
@rules_option
@format_option
def sweep_table(sweep_dir, rules_path, fmt):
    """Seed 000's table for a saved sweep folder."""
    from .sweep import render_sweep
    if not (Path(sweep_dir) / "manifest.json").exists():
        raise UserError(f"{sweep_dir}: not a sweep folder (no manifest.json)")
    click.echo(render_sweep(Path(sweep_dir), load_rules(rules_path), fmt), nl=False)


def entry() -> None:
    run_click(main)
