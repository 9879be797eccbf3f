"""Nothing lost: every output is written whole or not at all, never over one of the command's own
inputs, and a full disk or an unwritable path is one line naming the file and the fix, with a non-zero
exit; a run folder on a disk that fills up is marked failed and keeps what was captured.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, fill, invoke
from rpcprof.cli import report as report_cli

SAVED_RUN = ROOT / "tests" / "data" / "runs" / "seed-001"


@pytest.fixture
def run_copy(tmp_path) -> Path:
    """A copy of a saved run folder: a command that wrongly writes over its input damages only the copy."""
    copy = tmp_path / "seed-001"
    shutil.copytree(SAVED_RUN, copy)
    for gz in copy.glob("*/profile.folded.gz"):       # svg, diff and fold read plain folded files too
        subprocess.run(["gzip", "-dk", str(gz)], check=True)
    return copy


def folded_of(run: Path) -> Path:
    return sorted(run.glob("*/profile.folded"))[0]


def second_folded_of(run: Path) -> Path:
    return sorted(run.glob("*/profile.folded"))[1]


# each: the command line with RUN for the run copy, F and G for two of its folded files; OUT the -o
SAME_PATH = {
    "svg over its folded file": (["svg", "F", "-o", "F"], "F"),
    "diff over its first profile": (["diff", "F", "G", "-o", "F"], "F"),
    "diff over its second profile": (["diff", "F", "G", "-o", "G"], "G"),
    "export over its profile": (["export", "F", "--format", "collapsed", "-o", "F"], "F"),
    "fold over its input": (["fold", "F", "-o", "F"], "F"),
    "chart over the run's metrics": (["chart", "RUN", "-o", "RUN/metrics.json"], "RUN/metrics.json"),
    "html over the run's manifest": (["html", "RUN", "-o", "RUN/manifest.json"], "RUN/manifest.json"),
    "seeds over a server's result": (["seeds", "RUN", "-o", "RUN/rust_tonic_mt/result.json"],
                                     "RUN/rust_tonic_mt/result.json"),
}


def expand(args: list[str], run: Path) -> list[str]:
    names = {"F": str(folded_of(run)), "G": str(second_folded_of(run))}
    return [names.get(a, a.replace("RUN", str(run))) for a in args]


@pytest.mark.parametrize("args, victim", list(SAME_PATH.values()), ids=list(SAME_PATH))
def test_an_output_equal_to_an_input_is_refused_and_the_input_kept(run_copy, args, victim):
    victim = Path(expand([victim], run_copy)[0])
    before = victim.read_bytes()
    r = invoke(report_cli.entry, *expand(args, run_copy))
    assert r.code == 2 and "Traceback" not in r.err, r.err
    assert len(r.error_lines) == 1, r.err
    assert "its own input" in r.error_lines[0] or "being exported" in r.error_lines[0], r.err
    assert victim.read_bytes() == before


# each: a command line writing to OUT
WRITERS = {
    "svg": ["svg", "F", "-o", "OUT"],
    "diff": ["diff", "F", "G", "-o", "OUT"],
    "chart": ["chart", "RUN", "-o", "OUT"],
    "html": ["html", "RUN", "-o", "OUT"],
    "seeds": ["seeds", "RUN", "-o", "OUT"],
    "fold": ["fold", "F", "-o", "OUT"],
    "export": ["export", "F", "--format", "speedscope", "-o", "OUT"],
}


def writer_args(name: str, run: Path, out: Path) -> list[str]:
    return [str(out) if a == "OUT" else a for a in expand(WRITERS[name], run)]


@pytest.fixture
def full_device(tmp_path) -> Path:
    """A device node of its own like /dev/full (every write: no space left), so that a writer that renames
    over its output replaces this node, never the machine's /dev/full."""
    path = tmp_path / "full"
    subprocess.run(["mknod", "-m", "666", str(path), "c", "1", "7"], check=True)
    return path


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_full_device_is_one_line_naming_the_file_and_the_fix(run_copy, full_device, name):
    r = invoke(report_cli.entry, *writer_args(name, run_copy, full_device))
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert len(r.error_lines) == 1, r.err
    assert f"cannot write {full_device}: No space left on device; free space or choose another -o" in r.error_lines[0]
    assert full_device.is_char_device()         # written in place, not replaced by a file


@pytest.mark.parametrize("name", ["svg", "chart", "html", "seeds", "fold"])
def test_an_unwritable_path_is_one_line_naming_it(run_copy, name):
    out = Path("/proc/rpcprof-nope/out")
    r = invoke(report_cli.entry, *writer_args(name, run_copy, out))
    assert r.code in (1, 2) and "Traceback" not in r.err, r.err
    assert len(r.error_lines) == 1 and f"cannot write {out}" in r.error_lines[0], r.err


@pytest.mark.parametrize("name", ["svg", "html", "fold"])
def test_a_disk_that_fills_up_leaves_no_partial_output_and_no_temporary_file(run_copy, small_disk, name):
    """The outputs are larger than the disk: nothing of them remains, the folder holds what it held."""
    out = small_disk / "out"
    if name == "fold":                    # a py-spy raw file larger than the disk
        big = run_copy / "big.folded"
        big.write_text("".join(f"main;work_{i} {i + 1}\n" for i in range(20000)))
        args = ["fold", str(big), "-o", str(out)]
    else:
        args = writer_args(name, run_copy, out)
    r = invoke(report_cli.entry, *args)
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert len(r.error_lines) == 1 and f"cannot write {out}: No space left on device" in r.error_lines[0], r.err
    assert list(small_disk.iterdir()) == []


def test_a_run_folder_on_a_full_disk_still_says_how_the_run_ended(small_disk):
    """With no room for a second copy, the manifest is rewritten in the space it holds."""
    from rpcprof.records import Manifest, ServerResult
    from rpcprof.status import Status
    from rpcprof.rundir import CannotWrite, RunFolder, now
    folder = RunFolder.create("pytest-full", small_disk)
    manifest = Manifest(mode="run", status=Status.RUNNING, command=["pytest"], started=now(), machine={}, tools={},
                        git={}, parameters={"servers": ["s"]})
    folder.write(manifest, {"s": ServerResult("s")})
    fill(small_disk)
    with pytest.raises(CannotWrite, match="No space left on device; free space or choose another --runs-dir"):
        folder.write(manifest.finish(Status.FAILED), {"s": ServerResult("s", Status.FAILED, error="x" * 8192)})
    assert json.loads((folder.path / "manifest.json").read_text())["status"] == "failed"
    assert sorted(p.name for p in folder.path.iterdir()) == ["manifest.json", "metrics.json"]   # no temporary file
