"""Both command lines in-process through click's CliRunner: every command's --help, and the argument
checks that refuse a command line before anything starts (one line naming the option, exit 2 or 1, no
run folder, no traceback). Nothing here starts a server or a profiler.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import ROOT, invoke
from rpcprof.cli import profile as profile_cli
from rpcprof.cli import report as report_cli

PROFILE_COMMANDS = sorted(profile_cli.main.commands)        # every command of each group, as click has them
REPORT_COMMANDS = sorted(report_cli.main.list_commands(click.Context(report_cli.main)))     # imported when asked
KNOWN_SERVERS = sorted(p.parent.name for p in (ROOT / "servers").glob("*/server.yaml"))


def test_the_cli_modules_are_the_ones_the_scripts_run():
    assert "-m rpcprof.cli.profile" in (ROOT / "profile.sh").read_text()
    assert "from rpcprof.cli.report import entry" in (ROOT / "report.py").read_text()


@pytest.mark.parametrize("command", PROFILE_COMMANDS)
def test_every_profile_command_has_help(command):
    r = invoke(profile_cli.entry, command, "--help")
    assert r.code == 0 and f"Usage: profile.sh {command}" in r.out and "--runs-dir" in r.out


@pytest.mark.parametrize("command", REPORT_COMMANDS)
def test_every_report_command_has_help(command):
    r = invoke(report_cli.entry, command, "--help")
    assert r.code == 0 and f"Usage: report.py {command}" in r.out


def examples() -> list[tuple]:
    """(entry, command, its `eg,` paragraph's lines) of every command whose help gives an example."""
    out = []
    for entry, group, commands in ((profile_cli.entry, profile_cli.main, PROFILE_COMMANDS),
                                   (report_cli.entry, report_cli.main, REPORT_COMMANDS)):
        for command in commands:
            doc = group.get_command(click.Context(group), command).help or ""
            if "eg," in doc:
                out.append((entry, command, [x for x in doc[doc.find("eg,"):].split("\n\n")[0].splitlines() if x.strip()]))
    return out


@pytest.mark.parametrize("entry, command, example", examples())
def test_every_example_prints_a_command_a_line(entry, command, example):
    """An example keeps its command lines as written (click's \\b), not rewrapped into one paragraph."""
    out = invoke(entry, command, "--help").out.splitlines()
    assert all(any(line.strip() == shown.strip() for shown in out) for line in example), (example, out)


def test_the_commands_are_read_from_the_groups():
    assert {"run", "sweep", "attach"} <= set(PROFILE_COMMANDS)
    assert {"table", "compare", "chart", "html", "export", "fold"} <= set(REPORT_COMMANDS)


def test_the_groups_list_every_command():
    p, r = invoke(profile_cli.entry, "--help"), invoke(report_cli.entry, "--help")
    assert all(c in p.out for c in PROFILE_COMMANDS)
    assert all(c in r.out for c in REPORT_COMMANDS)


@pytest.fixture
def runs(tmp_path):
    """An empty runs folder: a refused command line must leave it empty."""
    path = tmp_path / "runs"
    path.mkdir()
    return path


OPTION_ERRORS = {
    "zero streams": (["-S", "0"], "--streams"),
    "streams not a multiple of connections": (["-C", "2", "-S", "3"], "--streams"),
    "a CPU this machine lacks": (["--server-cpus", str(max(7, os.cpu_count()))], "--server-cpus"),
    "an empty CPU range": (["--server-cpus", "1-0"], "--server-cpus"),
    "an unknown server parameter": (["--param", "unknown=1"], "--param"),
    "a port out of range": (["--port", "70000"], "--port"),
    "load CPUs overlapping the server's": (["--load-cpus", "0"], "--load-cpus"),
    "a bad ruler regex": (["--ruler", "("], "--ruler"),
    "an unknown latency set": (["--latency", "some"], "--latency"),
}


@pytest.mark.parametrize("args, option", list(OPTION_ERRORS.values()), ids=list(OPTION_ERRORS))
def test_run_refuses_a_bad_option_in_one_line_naming_it(runs, args, option):
    r = invoke(profile_cli.entry, "run", "rust_tonic_st", *args, "--runs-dir", str(runs))
    assert r.code in (1, 2) and "Traceback" not in r.err
    assert len(r.error_lines) == 1 and option in r.error_lines[0], r.err
    assert list(runs.iterdir()) == [], "a run folder was made for a command line that was refused"


def test_unknown_server_is_refused_listing_the_known_servers(runs):
    r = invoke(profile_cli.entry, "run", "no_such_server", "--runs-dir", str(runs))
    assert r.code == 2 and len(r.error_lines) == 1
    assert "no_such_server" in r.error_lines[0] and all(n in r.error_lines[0] for n in KNOWN_SERVERS)
    assert list(runs.iterdir()) == []


def test_the_old_tonic_name_says_what_it_is_now(runs):
    r = invoke(profile_cli.entry, "run", "rust_tonic", "--runs-dir", str(runs))
    assert r.code == 2 and "rust_tonic_st" in r.error_lines[0] and "rust_tonic_mt" in r.error_lines[0]


def test_a_server_named_twice_is_refused(runs):
    r = invoke(profile_cli.entry, "run", "rust_tonic_st", "rust_tonic_st", "--runs-dir", str(runs))
    assert r.code == 2 and "named twice" in r.error_lines[0]


@pytest.mark.parametrize("args, message", [
    (["-C", "1", "-S", "10000"], "no cell has C <= S <= C x 1000"),
    (["-C", "100", "-S", "10"], "no cell has C <= S <= C x 1000"),
    (["-C", "10", "-S", "15"], "S=15 is not a multiple of C=10"),
    (["-C", "1", "-S", "1", "--max-per-connection", "0"], "--max-per-connection"),
    (["-C", "x"], "--connections"),
])
def test_sweep_cells_that_cannot_run_are_one_line_errors(runs, args, message):
    r = invoke(profile_cli.entry, "sweep", "rust_tonic_mt", *args, "--runs-dir", str(runs))
    assert r.code in (1, 2) and len(r.error_lines) == 1 and message in r.error_lines[0], r.err
    assert list(runs.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--pid", "999999999"], "no process with pid 999999999"),
    (["--pid", str(os.getpid()), "--requests", "1", "--rps", "1"], "--requests and --rps"),
    (["--pid", str(os.getpid()), "--load"], "--load needs --target"),
    (["--pid", str(os.getpid()), "--target", "10.0.0.1:50051"], "loopback"),
])
def test_attach_refuses_bad_input_in_one_line(runs, args, message):
    r = invoke(profile_cli.entry, "attach", *args, "--runs-dir", str(runs))
    assert r.code in (1, 2) and len(r.error_lines) == 1 and message in r.error_lines[0], r.err
    assert list(runs.iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["compare", "/nonexistent/run"], "not a run folder"),
    (["run", "/nonexistent/run"], "not a run folder"),
    (["results", "/nonexistent/sweep"], "not a run folder"),
    (["sweep", "/nonexistent/sweep"], "not a run folder"),
    (["seeds", "/nonexistent/run"], "not a run folder"),
    (["table", "/nonexistent.folded"], "no such folded file"),
    (["top", "/nonexistent.folded", "-c", "nope"], "--category"),
    (["fold", "/nonexistent/perf.data", "-o", "/tmp/x.folded"], "no such file"),
    (["compare", str(ROOT / "tests" / "data" / "runs" / "seed-001"), "--ruler", "("], "--ruler"),
])
def test_report_refuses_bad_input_in_one_line(args, message):
    r = invoke(report_cli.entry, *args)
    assert r.code in (1, 2) and "Traceback" not in r.err
    assert len(r.error_lines) == 1 and message in r.error_lines[0], r.err


@pytest.mark.parametrize("option", ["-n", "--limit"])
def test_a_negative_row_limit_is_refused_in_one_line(option):
    folded = ROOT / "tests" / "data" / "hostile.folded"
    r = invoke(report_cli.entry, "top", str(folded), "-c", "other", option, "-1")
    assert r.code == 2 and r.out == ""
    assert len(r.error_lines) == 1 and "--limit" in r.error_lines[0] and "-1" in r.error_lines[0], r.err


def test_report_finds_a_run_by_name_under_runs_dir():
    saved = ROOT / "tests" / "data" / "runs"
    by_path = invoke(report_cli.entry, "run", str(saved / "seed-001"), "--format", "json")
    by_name = invoke(report_cli.entry, "run", "seed-001", "--runs-dir", str(saved), "--format", "json")
    assert by_path.code == by_name.code == 0 and by_path.out == by_name.out


def test_fold_refuses_to_overwrite_its_input(tmp_path):
    src = tmp_path / "x.folded"
    src.write_text("a;b 1\n")
    r = invoke(report_cli.entry, "fold", str(src), "-o", str(src))
    assert r.code == 2 and "replace its own input" in r.error_lines[0]


def test_run_table_with_full_latency_shows_seed_003s_figures():
    r = invoke(report_cli.entry, "run", str(ROOT / "tests" / "data" / "runs" / "seed-001"), "--latency", "full")
    header = r.out.splitlines()[1]
    assert r.code == 0
    for column in ("50 % [ms]", "99.9 % [ms]", "99.99 % [ms]", "max [ms]", "tm99 [ms]", "stddev [ms]"):
        assert column in header, header
    seed = invoke(report_cli.entry, "run", str(ROOT / "tests" / "data" / "runs" / "seed-001"))
    assert "99.99 % [ms]" not in seed.out and "95 % in [ms]" in seed.out


def test_fold_copies_a_py_spy_raw_file_after_checking_it(tmp_path):
    src, out = tmp_path / "raw.txt", tmp_path / "out.folded"
    src.write_text("main (a.py:1);work (a.py:2) 7\nmain (a.py:1) 3\n")
    r = invoke(report_cli.entry, "fold", str(src), "-o", str(out))
    assert r.code == 0 and out.read_text() == src.read_text() and "10 samples" in r.err


def test_fold_joins_a_py_spy_record_broken_by_a_newline_in_a_misread_frame_name(tmp_path):
    """py-spy --nonblocking sometimes reads a frame name as garbage holding a newline (seen in a CI run:
    a line ' (' alone): the record is joined again rather than the whole profile refused."""
    src, out = tmp_path / "raw.txt", tmp_path / "out.folded"
    src.write_bytes(b"main (a.py:1);work (a.py:2) 7\nmain (a.py:1);\xc3\x8b\n (\n\x00) (b.py:3);leaf (a.py:4) 2\n"
                    b"main (a.py:1) 3\n")
    r = invoke(report_cli.entry, "fold", str(src), "-o", str(out))
    assert r.code == 0, r.err
    lines = out.read_text(errors="replace").splitlines()
    assert len(lines) == 3 and lines[1].startswith("main (a.py:1);") and lines[1].endswith(";leaf (a.py:4) 2")
    assert "12 samples" in r.err


def test_an_unexpected_exception_is_one_line_naming_the_traceback_file(monkeypatch):
    """The error boundary: exit 70, one line, the traceback in the file it names (not on the terminal)."""
    import rpcprof.report.summary as summary

    def broken(*a, **k):
        raise RuntimeError("something the code did not expect")
    monkeypatch.setattr(summary, "render_run", broken)
    r = invoke(report_cli.entry, "run", str(ROOT / "tests" / "data" / "runs" / "seed-001"))
    assert r.code == 70 and "Traceback" not in r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("report.py: internal error: RuntimeError: something the code")
    path = lines[0].rsplit("details in ", 1)[1]
    try:
        text = open(path).read()
        assert "Traceback" in text and "something the code did not expect" in text and "broken" in text
    finally:
        os.unlink(path)


def test_every_python_package_is_pinned_and_the_venv_holds_exactly_the_pinned_set():
    """requirements.txt pins what rpcprof asks for; constraints.txt pins everything pip resolves from it
    (transitive too), so a fresh machine gets the tested set. The virtualenv made by tools/setup.sh holds
    exactly those versions, besides rpcprof and its compiled core (a package installed by hand, or a constraint
    gone stale, fails here)."""
    import importlib.metadata as md
    root = Path(__file__).resolve().parents[2]

    def pins(path: Path) -> dict[str, str]:
        out = {}
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if not line or line.startswith("-r "):
                continue
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not pinned (name==version)"
            out[name.lower().replace("_", "-")] = version
        return out
    asked = {**pins(root / "requirements.txt"), **pins(root / "servers" / "requirements-python.txt")}
    locked = pins(root / "constraints.txt")
    assert {k: v for k, v in asked.items() if locked.get(k) != v} == {}
    if Path(sys.prefix).resolve() != (root / ".venv").resolve():
        pytest.skip("not the project's virtualenv")
    installed = {d.metadata["Name"].lower().replace("_", "-"): d.version for d in md.distributions()
                 if d.metadata["Name"] and d.metadata["Name"].lower() not in ("rpcprof", "rpcprof-core", "pip")}
    assert installed == locked


def test_a_folder_that_is_no_run_is_refused_naming_the_runs_folder_option_not_flamegraphs(tmp_path):
    r = invoke(report_cli.entry, "run", "no-such-run", "--runs-dir", str(tmp_path))
    assert r.code != 0 and "flamegraphs" not in r.err and "--runs-dir" in r.err, r.err


def test_a_folders_footprint_counts_what_du_counts_and_its_recordings_apart(tmp_path):
    from rpcprof.cli.common import footprint
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "perf.data").write_bytes(b"x" * 100_000)
    (tmp_path / "a" / "profile.folded").write_bytes(b"y" * 10_000)
    total, recordings = footprint(tmp_path)
    du = int(subprocess.run(["du", "-s", "-B1", str(tmp_path / "a")], capture_output=True,
                            text=True, check=True).stdout.split()[0])
    assert 100_000 <= recordings < total <= du


def test_report_py_lists_every_command_in_its_docstring():
    import ast
    doc = ast.get_docstring(ast.parse((ROOT / "report.py").read_text()))
    listed = re.findall(r"^  ([a-z][a-z-]*)(?= )", doc.split("USAGE:")[1].split("\n\n")[1], re.M)
    assert sorted(listed) == REPORT_COMMANDS and len(listed) == len(set(listed))
