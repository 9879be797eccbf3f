"""Sweeps: every (connections C, streams S) cell with S >= C, each a measured run of every server,
printed in seed 000's layout: a header line per cell with the ratio of req/s per CPU between the first
two servers (^N.N = second / first), then a row per server.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, replace
from pathlib import Path

from rpcprof.errors import UserError
from rpcprof.jobs.base import Job, lifecycle, new_manifest, open_folder, shown
from rpcprof.jobs.run import Run, RunOptions
from rpcprof.progress import log, progress_bar
from rpcprof.records import parameters_json
from rpcprof.status import Status


# Seed 000's cells keep S/C <= 1000 (C=100 goes to S=100000, C=1 stops at S=1000), and pajamax advertises
# SETTINGS_MAX_CONCURRENT_STREAMS 1000: a deeper cell would not put S streams in flight on it.
MAX_STREAMS_PER_CONNECTION = 1000


def cells(connections: list[int], streams: list[int],
          max_per_connection: int = MAX_STREAMS_PER_CONNECTION) -> list[tuple[int, int]]:
    """(C, S) pairs with C <= S <= C x max_per_connection, in seed 000's order (C, then S)."""
    out = [(c, s) for c in connections for s in streams if c <= s <= c * max_per_connection]
    if not out:
        raise UserError(f"no cell has C <= S <= C x {max_per_connection} for -C {connections} -S {streams}: "
                        "give other -S or -C values (or a larger --max-per-connection)")
    bad = [(c, s) for c, s in out if s % c]
    if bad:
        raise UserError(f"S={bad[0][1]} is not a multiple of C={bad[0][0]}: every connection must carry the same "
                        "number of streams")
    return out


def seconds_per_cell(opts: RunOptions, every_off_cpu: bool = False) -> float:
    """Planned seconds for one cell: per server and round, warm-up, window, the profile window (which
    counts the syscalls; a syscall window instead with --no-profile), start-up and folding; in the first
    round the read/write size window (--io-sizes) and the off-CPU window when asked (--off-cpu), or with
    every_off_cpu=True when it may come (neither --off-cpu nor --no-off-cpu: it runs in the cells that turn
    out latency-bound or unsaturated, which no plan can know, so the plan gives both bounds). With h2load,
    each window after the measured one has the warm-up's last window as its lead (jobs/steps.warm_up)."""
    lead = opts.warmup if opts.driver == "h2load" else 0.0
    one = opts.warmup + opts.duration + 2.0 + (opts.profile_duration + lead + 2 if opts.profile else
                                               opts.syscall_duration + lead if opts.syscalls else 0)
    first_extra = opts.syscall_duration + lead if opts.io_sizes else 0
    off_cpu = opts.off_cpu or (every_off_cpu and opts.off_cpu is None)
    first_extra += opts.off_cpu_duration + lead + 1 if off_cpu else 0
    return len(opts.servers) * (opts.rounds * one + first_extra)


def planned(opts: RunOptions, n_cells: int) -> str:
    """The sweep's planned length, as said before it starts: "about 4 min 10 s", and when automatic off-CPU
    windows may lengthen it, "4 min 10 s to 5 min 40 s (the longer if every cell waits: off-CPU windows)"."""
    low, high = seconds_per_cell(opts) * n_cells, seconds_per_cell(opts, every_off_cpu=True) * n_cells
    if high == low:
        return f"about {_fmt_duration(low)}"
    return (f"about {_fmt_duration(low)} to {_fmt_duration(high)} (the longer if every cell is latency-bound or "
            "unsaturated and gets an off-CPU window)")


def _fmt_duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s"


class Sweep(Job):
    def __init__(self, opts: RunOptions, connections: list[int], streams: list[int], command: list[str],
                 max_per_connection: int = MAX_STREAMS_PER_CONNECTION):
        self.opts = opts
        self.cells = cells(connections, streams, max_per_connection)
        self.command = command
        self.results: dict[str, dict] = {}
        # validate every cell's options before anything starts
        self.runs = [Run(replace(opts, connections=c, streams=s, label=f"C{c}-S{s}", keep_short=True), command) for c, s in self.cells]
        self.rules = self.runs[0].rules

    def execute(self) -> Path:
        label = self.opts.label or "sweep-" + "-".join(self.opts.servers)
        self.folder = open_folder(label, self.opts.runs_dir)
        plan = seconds_per_cell(self.opts) * len(self.cells)
        log(f"rpcprof: sweep folder {shown(self.dir)}")
        log(f"rpcprof: {len(self.cells)} cells x {len(self.opts.servers)} server(s) x {self.opts.rounds} round(s): "
             f"{planned(self.opts, len(self.cells))} (planned; started {dt.datetime.now():%H:%M}). Ctrl-C stops.")
        params = {k: v for k, v in parameters_json(asdict(self.opts)).items() if k not in ("connections", "streams")}
        self.manifest = new_manifest("sweep", self.command, cells=self.results)
        self.manifest.parameters = {**params, "cells": self.cells}
        t0 = time.monotonic()
        with lifecycle(self.write) as life, progress_bar(len(self.cells), "cells") as bar:
            for i, ((c, s), run) in enumerate(zip(self.cells, self.runs)):
                done = time.monotonic() - t0
                left = (done / i * (len(self.cells) - i)) if i else plan
                log(f"rpcprof: [{i + 1}/{len(self.cells)}] C={c} S={s}: elapsed {_fmt_duration(done)}, "
                     f"ETA {_fmt_duration(left)}")
                first = self.runs[0]                # the host card: measured by the first cell, taken by the others
                run.host = {**first.host, "taken_from": first.dir.name} if i and first.host else None   # a sibling
                run_dir = run.execute(self.dir)
                self.manifest.host = self.runs[0].host
                self.results[f"C{c}-S{s}"] = {"connections": c, "streams": s, "run": run_dir.name}
                self.write(Status.RUNNING)
                bar.update(1)
            life.failed = not all(all(r.status == Status.OK for r in run.results.values()) for run in self.runs)
        return self.dir

    def write(self, status: Status) -> None:
        self.folder.write(self.manifest.finish(status))       # its cells: self.results, as they are done


