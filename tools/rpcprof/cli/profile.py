"""The commands behind profile.sh: run, sweep and attach. Thin: options in, jobs out.

A job's options are built from click's parameters by name (job_options): each option of `profile.sh run`, `sweep`
and `attach` is a click option named as its field in the job's options (jobs/run.py RunOptions, jobs/attach.py
AttachOptions), with its default from jobs/defaults.py. Adding an option is adding the field (and its default) and
the click option; nothing maps one onto the other by hand.
"""
from __future__ import annotations

import math
import sys
from dataclasses import fields
from pathlib import Path

import click

from rpcprof.cli.common import (format_option, latency_option, otlp_options, print_footprint, run_click,
                                runs_dir_option, stacked)
from rpcprof.jobs.defaults import ATTACH, RUN, SWEEP
from rpcprof.errors import EXIT_FAILED, EXIT_INTERRUPTED, UserError
from rpcprof.jobs.attach import Attach, AttachOptions
from rpcprof.jobs.run import Run, RunOptions
from rpcprof.jobs.sweep import MAX_STREAMS_PER_CONNECTION, Sweep
from rpcprof.measure.idle import IDLE_MODES
from rpcprof.measure.load import DRIVERS
from rpcprof.measure.scenario import SCENARIOS
from rpcprof.profiler_names import CALL_GRAPHS, PROFILERS
from rpcprof.analyze.categorize import load_rules
from rpcprof.cli.printed import attach_report, run_report
from rpcprof.report.summary import render_run
from rpcprof.report.sweep_table import render_sweep
from rpcprof.progress import bar_allowed
from rpcprof.rundir import SERVER_LOG, server_path
from rpcprof.status import Status

# The parameters of each command that are not options of its job (job_options): how to print, and a
# sweep's grid, which Sweep takes apart from the options of its runs.
NOT_JOB_OPTIONS = {"run": ("latency", "fmt"), "sweep": ("conn_list", "stream_list", "max_per_connection", "fmt"),
                   "attach": ("fmt",)}


def job_options(cls, params: dict, cli_only: tuple[str, ...] = (), **given):
    """An instance of the dataclass cls from click's parameters (ctx.params): each parameter goes to the field
    of its name (a tuple, from nargs=-1 or multiple=True, as a list); cli_only names the parameters that are
    not options of the job (how to print, or what the command passes apart); given sets fields the command
    line does not offer. A parameter that is neither a field nor in cli_only is a mistake in the command
    line's code: TypeError naming it (tests/unit/test_job_options.py finds it for every command)."""
    names = {f.name for f in fields(cls)}
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if k not in cli_only}
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}: name the click parameter as the "
                        "field, or list it among the command's parameters that are not job options")
    return cls(**values, **given)


def cpu_list(ctx, param, value):
    """'0', '0,2' or '1-3' -> [ints]."""
    if value is None:
        return None
    cpus = []
    try:
        for part in value.split(","):
            lo, dash, hi = part.partition("-")
            lo, hi = int(lo), int(hi if dash else lo)
            if hi < lo:
                raise ValueError
            cpus.extend(range(lo, hi + 1))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a CPU list such as 0 or 1,2 or 1-3") from None
    import os
    n = os.cpu_count() or 1
    bad = [c for c in cpus if c < 0 or c >= n]
    if bad:
        raise click.BadParameter(f"CPU {bad[0]} does not exist (this machine has CPUs 0-{n - 1})")
    return cpus


def key_values(ctx, param, values):
    bad = [v for v in values if "=" not in v]
    if bad:
        raise click.BadParameter(f"{bad[0]!r}: expected KEY=VALUE")
    return dict(v.split("=", 1) for v in values)


def finite(zero: bool):
    """The callback of a count, rate or duration: finite and above 0 (click reads 'nan' and 'inf' as numbers); with
    zero, of a warm-up or a minimum: finite, 0 or more."""
    def check(ctx, param, value):
        if value is not None and not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
            raise click.BadParameter(f"must be {'0 or ' if zero else ''}a positive number (got {value})")
        return value
    return check


positive, not_negative = finite(False), finite(True)


def amount(defaults: dict, *decls: str, zero: bool = False, **kw):
    """A count, rate or duration option with its default from defaults (RUN, SWEEP, ATTACH) by its field's name,
    shown in --help: finite and above 0, or with zero (a warm-up, a minimum) 0 or more."""
    name = decls[-1].lstrip("-").replace("-", "_")
    return click.option(*decls, default=defaults[name], show_default=True, callback=not_negative if zero else positive,
                        **kw)


LABEL_MAX_BYTES = 100


def file_label(ctx, param, value):
    """A name that becomes part of a folder name: no '/' or NUL, at most LABEL_MAX_BYTES bytes."""
    if "/" in value or "\0" in value:
        raise click.BadParameter(f"{value!r}: it names a folder; leave out '/'")
    if len(value.encode()) > LABEL_MAX_BYTES:
        raise click.BadParameter(f"{len(value.encode())} bytes: it names a folder; give at most {LABEL_MAX_BYTES}")
    return value


def share(ctx, param, value):
    """'5%' or '0.05' -> 0.05."""
    if value is None:
        return None
    try:
        x = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a share such as 5% or 0.05") from None
    if not 0 < x < 1:
        raise click.BadParameter(f"{value!r}: give a share between 0 and 100 %, such as 5%")
    return x


def rounds_options(what: str, defaults: dict):
    """--rounds (or --repeat, its old name), --precision, --max-time: the rounds of run and sweep."""
    return stacked(
        amount(defaults, "--rounds", "--repeat", "rounds",
               help=f"Rounds: every server measured once per round, in turn (A B A B ...), restarted; "
                    f"ratios come from adjacent pairs with a 95 % interval{what}. --repeat is its old name."),
        click.option("--precision", default=None, callback=share, metavar="SHARE",
                     help="Measure as many rounds as every ratio's 95 % interval needs to be within ±SHARE "
                          f"(e.g. 5%): a pilot of max(--rounds, 3) rounds sets how many (two-stage rule){what}."),
        amount(RUN, "--max-time",
               help=f"With --precision: stop before a round would end after this many seconds{what}."))


def off_cpu_options(defaults: dict, when: str):
    """--off-cpu/--no-off-cpu and --off-cpu-duration."""
    return stacked(click.option("--off-cpu/--no-off-cpu", "off_cpu", default=None,
                                help=f"A window recording where the server's threads wait (context switches with "
                                     f"stacks: offcpu.svg, wait reasons) and its connections' TCP state (ss -tin: a "
                                     f"Nagle / delayed-ACK stall is named) [default: {when}]."),
                   amount(defaults, "--off-cpu-duration", help="Off-CPU window [s]."))


def pictures_option(default: bool, what: str):
    """--pictures/--no-pictures: whether the job draws its pictures at the end."""
    return click.option("--pictures/--no-pictures", default=default, show_default=True,
                        help=f"Draw the flame graphs, the per-request charts and report.html at the end{what}. "
                             "Without them the measurement is the same; report.py svg, chart and html draw them "
                             "later from the folder.")


# The options `run` and `sweep` share: workload, driver, CPU placement, port.
placement_and_load_options = stacked(
    click.option("--scenario", type=click.Choice(list(SCENARIOS)), default=RUN["scenario"], show_default=True),
    click.option("--driver", type=click.Choice(DRIVERS), default=RUN["driver"], show_default=True,
                 help="Load driver."),
    click.option("--server-cpus", default=",".join(map(str, RUN["server_cpus"])), show_default=True,
                 callback=cpu_list, help="CPUs the server is pinned to."),
    click.option("--load-cpus", default=None, callback=cpu_list,
                 help="CPUs for the load driver [default: the others]."),
    click.option("--port", default=RUN["port"], show_default=True, type=click.IntRange(1024, 65535)),
    click.option("--idle", type=click.Choice(IDLE_MODES), default=RUN["idle"], show_default=True,
                 help="While measuring, the server's CPUs poll when idle, or halt (the machine's own way): in a "
                      "virtual machine a halted CPU wakes slower and colder, by amounts the host decides, which "
                      "a server that idles between bursts pays. spin keeps them from halting with an "
                      "idle-priority busy loop, as poll does where cpuidle offers no polling state. The load "
                      "generator's CPUs halt either way."))


@click.group(name="profile.sh", context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """rpcprof: why does RPC server A serve N times more requests per CPU than server B?"""


@main.command()
@click.argument("servers", nargs=-1, required=True)
@amount(RUN, "-C", "--connections", help="Connections (C).")
@amount(RUN, "-S", "--streams", help="Concurrent streams in flight across all connections (S).")
@amount(RUN, "-d", "--duration", help="Measured window [s].")
@amount(RUN, "-w", "--warmup", zero=True, help="Warm-up before the window [s].")
@placement_and_load_options
@click.option("--label", default=RUN["label"], callback=file_label,
              help="Name part of the run folder [default: the servers].")
@click.option("--param", "params", multiple=True, callback=key_values, help="Server parameter KEY=VALUE.")
@click.option("--profile/--no-profile", default=RUN["profile"], show_default=True,
              help="After the measured window, profile a second window with the same load.")
@click.option("--call-graph", type=click.Choice(list(CALL_GRAPHS)), default=None,
              help="perf stack unwinding [default: the server's call_graph, else dwarf].")
@amount(RUN, "-F", "--frequency", help="Sampling rate [Hz].")
@amount(RUN, "--profile-duration", help="Profile window [s].")
@amount(RUN, "--min-samples", zero=True, help="Raise the rate, then the duration, to reach this many samples.")
@click.option("--app", default=None, metavar="REGEX", help="Regex of the app handler's frames (overrides the servers').")
@click.option("--ruler", default=None, metavar="REGEX",
              help="Regex of frames doing the same work per request in every server (overrides the servers' "
                   "ruler; the built-in Rust servers: the handler's format_inner).")
@latency_option
@click.option("--syscalls/--no-syscalls", default=RUN["syscalls"], show_default=True,
              help="Count syscalls per request on the server's CPUs, in the profile window (a window of their own "
                   "with --no-profile).")
@amount(RUN, "--syscall-duration", help="Syscall-count window [s] (with --no-profile, and for --io-sizes).")
@click.option("--io-sizes/--no-io-sizes", default=RUN["io_sizes"], show_default=True,
              help="Also record every read/write's return value in a window of its own (first round): bytes per "
                   "read and write, reads that found nothing (EAGAIN). It costs a sample per call, so it is not "
                   "in the profile window; its cost is printed.")
@off_cpu_options(RUN, "when the measured window is LATENCY-BOUND or UNSATURATED")
@rounds_options("", RUN)
@pictures_option(RUN["pictures"], "")
@otlp_options("each round's profile of each server, as it is made,")
@click.option("--host-card", default=None, metavar="RUN", type=click.Path(exists=True, path_type=Path),
              help="Take the host card of RUN (a run of this boot on the same CPUs and --idle) instead of measuring "
                   "it (its line gives the seconds that takes): for runs in a row on one host. The card records where "
                   "it came from.")
@runs_dir_option
@format_option
def run(**params):
    """Measure SERVERS one after another on the same load; print the comparison.

    \b
    eg, ./profile.sh run rust_tonic_mt rust_pajamax -C 1 -S 100
    """
    opts = job_options(RunOptions, params, NOT_JOB_OPTIONS["run"])
    fmt, latency = params["fmt"], params["latency"]
    bar_allowed(fmt != "json")          # on a terminal, a bar with the time left; never with JSON
    the_run = Run(opts, command=["profile.sh", *sys.argv[1:]])
    try:
        run_dir = the_run.execute()
    except KeyboardInterrupt:
        if the_run.dir:
            click.echo(render_run(the_run.dir, fmt, latency), nl=False)
            raise UserError(f"interrupted: everything started was stopped; what was measured is kept in "
                            f"{the_run.dir} (marked interrupted)", exit_code=EXIT_INTERRUPTED) from None
        raise UserError("interrupted", exit_code=EXIT_INTERRUPTED) from None
    for part in run_report(run_dir, the_run.results, the_run.rules, fmt, latency, opts.runs_dir, opts.profile, opts.app,
                           opts.ruler):
        click.echo(part, nl=False)
    print_footprint(run_dir)
    failed = {n: r for n, r in the_run.results.items() if r.status != Status.OK}
    if failed:
        logs = [str(server_path(run_dir, n, r.round or 1) / SERVER_LOG) for n, r in failed.items()]
        raise UserError(f"{', '.join(failed)} failed; see {', '.join(logs)}", exit_code=EXIT_FAILED)
    the_run.sender.check(run_dir)


def int_list(ctx, param, value):
    try:
        out = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a list of whole numbers such as 1,10,100") from None
    if not out or any(x < 1 for x in out):
        raise click.BadParameter(f"{value!r}: give positive whole numbers such as 1,10,100")
    return out


@main.command()
@click.argument("servers", nargs=-1, required=True)
@click.option("-C", "--connections", "conn_list", default=SWEEP["connections"], show_default=True, callback=int_list,
              help="Connection counts.")
@click.option("-S", "--streams", "stream_list", default=SWEEP["streams"], show_default=True, callback=int_list,
              help="Streams in flight (all connections); cells with S < C are skipped.")
@click.option("--max-per-connection", default=MAX_STREAMS_PER_CONNECTION, show_default=True, callback=positive,
              help="Skip cells with more than this many streams per connection (S/C) (seed 000's cells stop at "
                   "1000; pajamax allows 1000 concurrent streams).")
@amount(SWEEP, "-d", "--duration", help="Measured window [s].")
@amount(SWEEP, "-w", "--warmup", zero=True, help="Warm-up before each window [s].")
@rounds_options(" (per cell)", SWEEP)
@placement_and_load_options
@click.option("--label", default=SWEEP["label"], callback=file_label, help="Name part of the sweep folder.")
@click.option("--profile/--no-profile", default=SWEEP["profile"], show_default=True,
              help="Profile each cell (for µs by category).")
@amount(SWEEP, "--profile-duration", help="Profile window [s].")
@click.option("--syscalls/--no-syscalls", default=SWEEP["syscalls"], show_default=True,
              help="Count syscalls per request in each cell.")
@amount(SWEEP, "--syscall-duration", help="Syscall window [s].")
@amount(SWEEP, "--min-samples", zero=True,
              help="Raise the profile's rate, then its duration, to reach this many samples.")
@off_cpu_options(SWEEP, "in the cells whose measured window is LATENCY-BOUND or UNSATURATED")
@pictures_option(SWEEP["pictures"], " of each cell")
@runs_dir_option
@format_option
def sweep(**params):
    """Run every (C, S) cell with C <= S <= C x max-per-connection for SERVERS; print seed 000's table.

    \b
    eg, ./profile.sh sweep rust_tonic_mt rust_pajamax -C 1,10,100 -S 1,10,100,1000

    seed 000's twelve cells: -C 1,10,100 -S 1,10,100,1000,10000,100000
    """
    opts = job_options(RunOptions, params, NOT_JOB_OPTIONS["sweep"])
    fmt = params["fmt"]
    bar_allowed(fmt != "json")
    job = Sweep(opts, params["conn_list"], params["stream_list"], command=["profile.sh", *sys.argv[1:]],
                max_per_connection=params["max_per_connection"])
    try:
        sweep_dir = job.execute()
    except KeyboardInterrupt:
        raise UserError(f"interrupted: everything started was stopped; finished cells are kept in {job.dir} "
                        "(marked interrupted)", exit_code=EXIT_INTERRUPTED) from None
    click.echo(render_sweep(sweep_dir, job.rules or load_rules(), fmt), nl=False)   # no profile: no rules loaded yet
    print_footprint(sweep_dir)
    failed = sorted({f"{name} at {run.opts.label}" for run in job.runs for name, r in run.results.items()
                     if r.status != Status.OK})
    if failed:
        raise UserError(f"{len(failed)} measurement(s) failed ({'; '.join(failed[:4])}"
                        f"{', ...' if len(failed) > 4 else ''}); see the cell folders in {sweep_dir}", exit_code=EXIT_FAILED)


@main.command()
@click.option("--pid", type=int, required=True, help="The process to profile.")
@amount(ATTACH, "-d", "--duration", help="Profile window [s].")
@click.option("--name", default=ATTACH["name"], callback=file_label,
              help="Name in reports [default: the process's name].")
@click.option("--app", default=None, metavar="REGEX", help="Regex of the application handler's frames.")
@click.option("--profiler", type=click.Choice(PROFILERS), default=None,
              help="Override the choice made from what the process is.")
@click.option("--call-graph", type=click.Choice(list(CALL_GRAPHS)), default=None, help="perf stack unwinding.")
@amount(ATTACH, "-F", "--frequency", help="Sampling rate [Hz].")
@amount(ATTACH, "--min-samples", zero=True, help="Raise the rate to reach this many.")
@click.option("--requests", type=int, default=None, callback=positive, help="Requests the process served during the window.")
@click.option("--rps", type=float, default=None, callback=positive, help="Its request rate during the window [req/s].")
@click.option("--load", is_flag=True, help="Drive load at --target during the windows, as `run` does.")
@click.option("--target", default=None, metavar="HOST:PORT", help="Loopback address the process serves gRPC on.")
@click.option("--driver", type=click.Choice(DRIVERS), default=ATTACH["driver"], show_default=True)
@click.option("--scenario", type=click.Choice(list(SCENARIOS)), default=ATTACH["scenario"], show_default=True)
@amount(ATTACH, "-C", "--connections")
@amount(ATTACH, "-S", "--streams")
@amount(ATTACH, "-w", "--warmup", zero=True, help="Warm-up with --load [s].")
@click.option("--load-cpus", default=None, callback=cpu_list, help="CPUs for the load [default: those the process "
              "may not run on].")
@click.option("--second-profile/--no-second-profile", default=ATTACH["second_profile"], show_default=True,
              help="For CPython: also perf's view after py-spy's.")
@off_cpu_options(ATTACH, "with --load, when its measured window is LATENCY-BOUND or UNSATURATED")
@pictures_option(ATTACH["pictures"], "")
@otlp_options("each profile, as it is made,")
@runs_dir_option
@format_option
def attach(**params):
    """Profile a running process by PID, without restarting it.

    \b
    eg, ./profile.sh attach --pid 1234 --app 'my_service::handlers' --rps 20000
    """
    opts = job_options(AttachOptions, params, NOT_JOB_OPTIONS["attach"], command=["profile.sh", *sys.argv[1:]])
    fmt, app = params["fmt"], opts.app
    bar_allowed(fmt != "json")
    job = Attach(opts)
    try:
        run_dir = job.execute()
    except KeyboardInterrupt:
        raise UserError(f"interrupted: the profiler was stopped; what was captured is kept in {job.dir} "
                        "(marked interrupted)", exit_code=EXIT_INTERRUPTED) from None
    except UserError as e:
        if job.dir:
            raise UserError(f"{e} (kept in {job.dir})", e.exit_code) from None
        raise
    for part in attach_report(run_dir, job.results, job.rules, fmt, app):
        click.echo(part, nl=False)
    print_footprint(run_dir)
    job.sender.check(run_dir)


def entry(args: list[str] | None = None) -> None:
    run_click(main, args)


if __name__ == "__main__":
    entry()
