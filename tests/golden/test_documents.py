"""The generated documents (docs/seeds.md, docs/results.md) from small saved run folders.

tests/data/runs/ holds real, short runs (tests/data/capture_runs.sh): seed 001's setup and a two-cell
sweep, with their JSON files and gzip'd folded stacks. The generators read only those, so the tests
check the documents against the same files.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from rpcprof.analyze.categorize import open_folded
from rpcprof.analyze.frames import compile_regex, frame_share, share_ratio
from rpcprof.report.seeds import RULER, SEED_FRAMES

RUNS = ROOT / "tests" / "data" / "runs"
SEED_RUN = RUNS / "seed-001"
SWEEP = RUNS / "sweep"


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "report.py"), *args], capture_output=True, text=True,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def seeds_doc(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("docs") / "seeds.md"
    done = report("seeds", str(SEED_RUN), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out.read_text()


@pytest.fixture(scope="module")
def metrics() -> dict:
    return json.loads((SEED_RUN / "metrics.json").read_text())


def test_seeds_document_names_its_run_folder(seeds_doc):
    assert f"`report.py seeds {SEED_RUN.name}`" in seeds_doc


def test_seeds_ratio_is_the_runs_req_per_cpu_ratio(seeds_doc, metrics):
    for tonic in ("rust_tonic_mt", "rust_tonic_st"):
        ratio = metrics["rust_pajamax"]["req_per_cpu_s"] / metrics[tonic]["req_per_cpu_s"]
        assert f"- over {tonic}: **{ratio:.1f}x**" in seeds_doc


def test_seeds_quotes_every_seed_frame_beside_the_measured_share(seeds_doc):
    rows = {line.split("|")[2].strip(): line for line in seeds_doc.splitlines() if line.startswith("| tonic |")
            or line.startswith("| pajamax |")}
    for f in SEED_FRAMES:
        row = rows[f"`{f.label}`"]
        assert f"| {f.seed_pct:.2f} % |" in row
        server = "rust_tonic_mt" if f.role == "tonic" else "rust_pajamax"
        fs = frame_share(open_folded(SEED_RUN / server / "profile.folded.gz"), compile_regex(f.regex, f.label))
        assert f"{100 * fs.share:.2f} ± {100 * fs.stderr:.2f} %" in row


def test_seeds_multi_thread_tonic_writes_more_than_current_thread(seeds_doc):
    """The runtime's invariant, read off the saved profiles: one write per response vs per batch."""
    f = next(f for f in SEED_FRAMES if "poll_write_vectored" in f.label)
    shares = {s: frame_share(open_folded(SEED_RUN / s / "profile.folded.gz"), compile_regex(f.regex, "w")).share
              for s in ("rust_tonic_mt", "rust_tonic_st")}
    assert shares["rust_tonic_mt"] > 2 * shares["rust_tonic_st"]


def test_seeds_ruler_ratio_and_verdict_follow_the_samples(seeds_doc, metrics):
    a = frame_share(open_folded(SEED_RUN / "rust_tonic_mt" / "profile.folded.gz"), compile_regex(RULER, "r"))
    b = frame_share(open_folded(SEED_RUN / "rust_pajamax" / "profile.folded.gz"), compile_regex(RULER, "r"))
    ratio, lo, hi = share_ratio(a, b)
    line = next(x for x in seeds_doc.splitlines() if x.startswith("- rust_pajamax over rust_tonic_mt: ruler shares"))
    assert f"**{ratio:.1f}x** [95 %: {lo:.1f}-{hi:.1f}]" in line
    prof = lambda s: metrics[s]["profile"]["cpu_us_per_req_profiled"]          # noqa: E731
    agrees = lo <= prof("rust_tonic_mt") / prof("rust_pajamax") <= hi
    assert ("the ruler agrees" in line) == agrees and ("DISAGREES" in line) == (not agrees)


def test_seeds_says_why_from_the_runs_flags(seeds_doc, metrics):
    for name, m in metrics.items():
        if m.get("client_bound"):
            assert f"{name}: CLIENT-BOUND" in seeds_doc
        if m.get("unsaturated"):
            assert f"{name}: UNSATURATED" in seeds_doc
    assert "client had 1 core here" in seeds_doc


def test_seeds_is_the_same_document_twice(seeds_doc, tmp_path):
    out = tmp_path / "again.md"
    assert report("seeds", str(SEED_RUN), "-o", str(out)).returncode == 0
    assert out.read_text() == seeds_doc


def test_seeds_also_sets_other_runs_beside_it(tmp_path):
    done = report("seeds", str(SEED_RUN), "--also", str(SWEEP / next(
        json.loads((SWEEP / "manifest.json").read_text())["cells"].values().__iter__())["run"]))
    assert done.returncode == 0, done.stderr
    assert "## The same servers in other setups" in done.stdout


def test_seeds_on_a_sweep_folder_is_one_clear_line():
    done = report("seeds", str(SWEEP))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "sweep" in done.stderr


def test_results_document_tests_the_guess_in_every_cell_for_each_tonic_build(tmp_path):
    out = tmp_path / "results.md"
    done = report("results", str(SWEEP), "-o", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    manifest = json.loads((SWEEP / "manifest.json").read_text())
    rows = [line for line in text.split("## Seed 000's guess, cell by cell")[1].splitlines()
            if re.match(r"\| \d+ \| \d+ \|", line)]
    cells = [(c["connections"], c["streams"]) for c in manifest["cells"].values()]
    for c, s in cells:
        metrics = json.loads((SWEEP / manifest["cells"][f"C{c}-S{s}"]["run"] / "metrics.json").read_text())
        for x in ("rust_tonic_mt", "rust_tonic_st"):
            row = next(r for r in rows if r.startswith(f"| {c} | {s} | {x} |"))
            ratio = metrics["rust_pajamax"]["req_per_cpu_s"] / metrics[x]["req_per_cpu_s"]
            diff = metrics[x]["cpu_us_per_req"] - metrics["rust_pajamax"]["cpu_us_per_req"]
            assert f"| {ratio:.1f} |" in row or f"| {ratio:.2f} |" in row
            assert f"| {diff:.2f} |" in row


def test_results_on_a_run_folder_is_one_clear_line():
    done = report("results", str(SEED_RUN))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
