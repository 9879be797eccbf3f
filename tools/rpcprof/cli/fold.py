"""report.py fold: a saved recording folded again."""
from __future__ import annotations

from pathlib import Path

import click

from rpcprof.cli.common import show


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Folded file to write.")
def fold(source, out):
    """Fold a saved profile again: perf.data (perf script | inferno-collapse-perf), an off-CPU recording
    (RUN/SERVER/offcpu.data: weighted by µs off CPU) or a py-spy raw file (checked and copied). The first stage of capture -> fold -> categorize -> report, on saved files.

    \b
    eg, ./report.py fold flamegraphs/RUN/rust_tonic_mt/perf.data -o /tmp/tonic.folded
    """
    from rpcprof.capture.fold import fold as fold_file
    done = fold_file(Path(source), out)
    what = (f"{done['waits']:,} waits, {done['off_cpu_us'] / 1e6:.2f} s off CPU (weights in µs; counts in {out}.count)"
            if "waits" in done else f"{done['samples']:,} samples")
    show(f"report.py: folded {what} ({done['input']}) into {out}\n", err=True)
