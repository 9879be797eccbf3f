"""profile.sh's options are built from click's parameters by name (cli/profile.py): every parameter of run,
sweep and attach is a field of its job's options or one of the few the command keeps for itself, and with
no option given the command line builds the job's own defaults (jobs/defaults.py). Nothing is started."""
from __future__ import annotations

from dataclasses import fields

import pytest

from rpcprof.cli import profile as profile_cli
from rpcprof.cli.profile import job_options
from rpcprof.jobs.attach import AttachOptions
from rpcprof.jobs.defaults import ATTACH, RUN, SWEEP
from rpcprof.jobs.run import RunOptions

JOBS = {"run": (RunOptions, ["rust_tonic_st"]), "sweep": (RunOptions, ["rust_tonic_st"]),
        "attach": (AttachOptions, ["--pid", "1"])}


def parsed(command: str, args: list[str]) -> dict:
    """click's parameters of a command line, callbacks applied, without running the command."""
    with profile_cli.main.commands[command].make_context(command, list(args)) as ctx:
        return dict(ctx.params)


def test_every_command_of_profile_sh_is_a_job_with_options():
    assert set(profile_cli.main.commands) == set(JOBS) == set(profile_cli.NOT_JOB_OPTIONS)


@pytest.mark.parametrize("command", sorted(JOBS))
def test_every_parameter_is_a_field_of_the_jobs_options_or_kept_by_the_command(command):
    cls, _ = JOBS[command]
    names = {f.name for f in fields(cls)}
    kept = set(profile_cli.NOT_JOB_OPTIONS[command])
    params = {p.name for p in profile_cli.main.commands[command].params}
    assert params - kept <= names, f"{command}: {sorted(params - kept - names)} are no field of {cls.__name__}"
    assert kept <= params, f"{command}: {sorted(kept - params)} kept but no parameter"
    assert not kept & names, f"{command}: {sorted(kept & names)} are fields, yet kept from the job"


def test_with_no_option_run_builds_the_defaults_of_a_run():
    opts = job_options(RunOptions, parsed("run", ["rust_tonic_st"]), profile_cli.NOT_JOB_OPTIONS["run"])
    assert opts == RunOptions(servers=["rust_tonic_st"])
    assert all(getattr(opts, k) == v for k, v in RUN.items()), "RunOptions' defaults are jobs/defaults.py's RUN"


def test_with_no_option_attach_builds_the_defaults_of_an_attach():
    opts = job_options(AttachOptions, parsed("attach", ["--pid", "1"]), profile_cli.NOT_JOB_OPTIONS["attach"])
    assert opts == AttachOptions(pid=1)
    assert all(getattr(opts, k) == v for k, v in ATTACH.items()), "AttachOptions' defaults are jobs/defaults.py's ATTACH"


def test_with_no_option_sweep_builds_its_own_defaults_and_grid():
    params = parsed("sweep", ["rust_tonic_st"])
    opts = job_options(RunOptions, params, profile_cli.NOT_JOB_OPTIONS["sweep"])
    grid = ("connections", "streams")
    assert {k: getattr(opts, k) for k in SWEEP if k not in grid} == {k: v for k, v in SWEEP.items() if k not in grid}
    assert params["conn_list"] == [int(c) for c in SWEEP["connections"].split(",")]
    assert params["stream_list"] == [int(s) for s in SWEEP["streams"].split(",")]


def test_an_option_given_reaches_its_field():
    opts = job_options(RunOptions, parsed("run", ["a", "b", "--no-syscalls", "--server-cpus", "1", "--param", "k=v"]),
                       profile_cli.NOT_JOB_OPTIONS["run"])
    assert (opts.servers, opts.syscalls, opts.server_cpus, opts.params) == (["a", "b"], False, [1], {"k": "v"})


def test_a_parameter_that_is_no_field_is_named():
    with pytest.raises(TypeError, match="RunOptions has no field colour"):
        job_options(RunOptions, {"servers": ("a",), "colour": "red"})


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_load_cpus_on_the_servers_cpu_are_refused_with_exit_2_before_anything_is_measured(command, tmp_path):
    from conftest import invoke
    args = [command, "rust_tonic_st", "--server-cpus", "0", "--load-cpus", "0", "--runs-dir", str(tmp_path)]
    if command == "sweep":
        args += ["-C", "1", "-S", "1"]
    done = invoke(profile_cli.entry, *args)
    assert done.code == 2, done.err
    assert len(done.error_lines) == 1
    assert "--load-cpus 0 overlaps --server-cpus 0 (CPU 0): the load would steal the server's CPU" in done.err
    assert not any(tmp_path.iterdir())          # no run folder: nothing was measured


def test_attach_refuses_load_cpus_on_the_processs_own_cpus():
    import os
    from rpcprof.errors import UserError
    from rpcprof.jobs.base import load_cpus_besides
    with pytest.raises(UserError) as e:
        load_cpus_besides({0}, [0, 1], "none left", server_option=f"pid {os.getpid()}'s CPUs")
    assert e.value.exit_code == 2 and f"overlaps pid {os.getpid()}'s CPUs 0 (CPU 0)" in str(e.value)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_rounds_is_the_option_and_repeat_its_old_name(command):
    assert parsed(command, ["rust_tonic_st", "--rounds", "4"])["rounds"] == 4
    assert parsed(command, ["rust_tonic_st", "--repeat", "4"])["rounds"] == 4
