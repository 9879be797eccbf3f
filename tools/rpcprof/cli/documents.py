"""The commands of report.py that write a generated document (docs/results.md, docs/seeds.md) from run
folders: a header naming where every figure comes from, written whole to -o or printed."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.common import document_options, output_for, rules_given, show
from rpcprof.documents.provenance import generator_command
from rpcprof.report.text import terminal_lines
from rpcprof.rundir import inputs_of, load_run, load_sweep, resolve, write_text


@click.command()
@click.argument("sweep_dir", type=click.Path(path_type=Path))
@click.option("--stall", "stall", multiple=True, type=click.Path(path_type=Path),
              help="A run of the sweep's scenario in which a server that stalled in the sweep stalled again and "
                   "its replays named why (docs/sweep.md); said beside that server's STALLED cells; repeatable.")
@document_options("docs/results.md")
def results(sweep_dir, output, stall, rules_path, runs_dir):
    """The results document of a sweep: table, per-request explanation, seed figures beside them."""
    from rpcprof.documents.results import build_results
    sweep_dir = resolve(sweep_dir, runs_dir)
    load_sweep(sweep_dir)
    stall = [resolve(r, runs_dir) for r in stall]
    for folder in stall:
        load_run(folder)
    command = generator_command("results", sweep_dir, output=output,
                                options=(*(("--stall", r) for r in stall), ("--rules", rules_given(rules_path))))
    write_document(build_results(sweep_dir, load_rules(rules_path), command, tuple(stall)), output, sweep_dir, *stall)


def write_document(text: str, output: Path | None, *sources: Path) -> None:
    """A generated document (markdown) to a file (written whole under a temporary name, then renamed) or
    stdout, never over a file of the run folders it was made from; control characters from names escaped
    either way."""
    if not output:
        show(text)
        return
    write_text(output_for(output, *(f for source in sources for f in inputs_of(source))), terminal_lines(text))
    show(f"wrote {output}\n", err=True)


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--also", "also", multiple=True, type=click.Path(path_type=Path),
              help="Another run folder of the same servers (another driver, C or S), set beside it; repeatable.")
@click.option("--seed-002", "seed_002", multiple=True, type=click.Path(path_type=Path),
              help="A run of seed 002's streams per connection (-C 1 -S 100 or -S 1000) of a one-thread tonic and "
                   "pajamax, for its section; repeatable.")
@document_options("docs/seeds.md")
def seeds(run_dir, output, also, seed_002, rules_path, runs_dir):
    """Seed 001 reproduced: the figures of a run of its setup beside the seed's (ratio, client and server
    CPU, the flame graphs' frame shares, the format_inner ruler), and why they differ, from the run's figures.

    \b
    eg, ./profile.sh run rust_tonic_mt rust_pajamax rust_tonic_st --driver ghz -C 1 -S 50 --label seed-001
        ./report.py seeds flamegraphs/<...-seed-001> -o docs/seeds.md
    """
    from rpcprof.documents.seeds import build_seeds
    first, others = resolve(run_dir, runs_dir), [resolve(a, runs_dir) for a in also]
    seed_002 = [resolve(r, runs_dir) for r in seed_002]
    for folder in [first, *others, *seed_002]:
        load_run(folder)
    command = generator_command("seeds", first, output=output, options=(
        *(("--also", a) for a in others), *(("--seed-002", r) for r in seed_002), ("--rules", rules_given(rules_path))))
    write_document(build_seeds(first, load_rules(rules_path), others, seed_002, command), output,
                   first, *others, *seed_002)
