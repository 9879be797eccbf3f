"""The package's structure, held by tests: the one-way flow capture -> fold -> categorize -> report, and
one owner of the run folder on disk.

    measure/   servers, processes, load, kernel accounting, windows, the session owning processes
    capture/   perf and py-spy attached to a PID, folding
    analyze/   categorize, frame shares, statistics, repeats
    report/    tables, flame graphs, charts, documents
    jobs/      run, attach, sweep: thin drivers over the steps of measure and capture, on one scaffold
               (jobs/base.py) and their defaults (jobs/defaults.py)
    cli/       both command lines
    rundir.py  the run folder: written and read there only
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tools" / "rpcprof"


def imports_of(path: Path) -> set[str]:
    """Every rpcprof module a file imports (absolute names), including imports inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rpcprof"):
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; write rpcprof.<package>.<module>")
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("rpcprof"))
    return out


@pytest.mark.parametrize("layer", ["analyze", "report"])
def test_analysis_and_reports_never_import_what_measures(layer):
    """Reports run on saved files: they must not pull in servers, load drivers or profilers."""
    for path in sorted((PKG / layer).glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] and m.split(".")[1] in ("measure", "capture", "jobs", "cli")}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_measurement_never_imports_reports_or_jobs():
    for layer in ("measure", "capture"):
        for path in sorted((PKG / layer).glob("*.py")):
            bad = {m for m in imports_of(path) if m.split(".")[1:2] and m.split(".")[1] in ("report", "jobs", "cli")}
            assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_measure_is_below_capture():
    """capture attaches profilers to what measure starts; measure never imports capture (Recorder and
    require are measure/recorder.py's)."""
    for path in sorted((PKG / "measure").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["capture"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_jobs_never_import_the_command_lines():
    """The command lines are thin: they import the jobs, never the other way (defaults live in jobs)."""
    for path in sorted((PKG / "jobs").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["cli"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"


def test_one_job_scaffold():
    """Folders, manifests, leftovers and the profile plan are jobs/base.py's: no job builds them itself."""
    for path in sorted((PKG / "jobs").glob("*.py")):
        if path.name in ("base.py", "leftovers.py"):     # the scaffold, and what it calls for leftovers
            continue
        text = path.read_text()
        for name in ("Manifest(", "RunFolder.create(", "tidy_leftovers(", "ProfilePlan.for_load(", "machine_specs("):
            assert name not in text, f"{path.relative_to(PKG)} calls {name}...): use rpcprof.jobs.base"


def test_only_rundir_names_the_run_folders_files():
    """manifest.json, metrics.json, result.json and profile.json are written and read in rundir.py."""
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "rundir.py":
            continue
        text = path.read_text()
        for name in ("manifest.json", "metrics.json", "result.json", "profile.json"):
            assert f'"{name}"' not in text, f"{path.relative_to(PKG)} names {name}: go through rpcprof.rundir"


def test_only_rundir_names_the_files_of_a_server_folder():
    """Recordings, folded stacks and logs a later stage reads are named once, in rundir.py."""
    for path in sorted(PKG.rglob("*.py")):
        if path.name == "rundir.py":
            continue
        text = path.read_text()
        for name in ("profile.folded", "offcpu.folded", "perf.data", "offcpu.data", "sockets.log", "py-spy.raw"):
            assert f'"{name}"' not in text, f"{path.relative_to(PKG)} names {name}: use the name rpcprof.rundir gives it"


def test_report_py_never_imports_what_measures():
    """report.py runs on saved files; folding a saved perf.data is the one capture stage it reruns."""
    bad = {m for m in imports_of(PKG / "cli" / "report.py") if m.split(".")[1] in ("measure", "jobs")}
    assert not bad, f"cli/report.py imports {sorted(bad)}"


def test_capture_reads_folded_files_without_importing_the_analysis():
    """The folded-file reader is rpcprof.folded, below both: capture (which checks a py-spy file) never
    imports analyze, and the reader imports no layer."""
    for path in sorted((PKG / "capture").glob("*.py")):
        bad = {m for m in imports_of(path) if m.split(".")[1:2] == ["analyze"]}
        assert not bad, f"{path.relative_to(PKG)} imports {sorted(bad)}"
    layers = ("measure", "capture", "analyze", "report", "jobs", "cli")
    bad = {m for m in imports_of(PKG / "folded.py") if m.split(".")[1:2] and m.split(".")[1] in layers}
    assert not bad, f"folded.py imports {sorted(bad)}"


@pytest.mark.parametrize("layer", ["analyze", "measure", "capture", "jobs"])
def test_no_module_of_these_layers_is_over_400_lines(layer):
    for path in sorted((PKG / layer).glob("*.py")):
        assert len(path.read_text().splitlines()) <= 400, f"{path.relative_to(PKG)} is over 400 lines: split it"
