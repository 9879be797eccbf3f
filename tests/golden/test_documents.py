"""The generated documents (docs/seeds.md, docs/results.md) from small saved run folders.

tests/data/runs/ holds real, short runs (tests/data/capture_runs.sh): seed 001's setup and a two-cell
sweep, with their JSON files and gzip'd folded stacks. The generators read only those, so the tests
check the documents against the same files.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from rpcprof.analyze.categorize import open_folded
from rpcprof.analyze.frames import frame_share, share_ratio
from rpcprof.analyze.patterns import UserRegex
from rpcprof.analyze.intervals import server_ratio
from rpcprof.documents.results import RATIO_DEFINITION, batching, headline_cell
from rpcprof.documents.seeds import RULER, SEED_FRAMES, correlation_reading

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
    assert "`report.py seeds tests/data/runs/seed-001 -o " in seeds_doc
    manifest = json.loads((SEED_RUN / "manifest.json").read_text())
    assert f"measured by `{shlex.join(manifest['command'])}` at git {manifest['git']['commit'][:12]}" in seeds_doc


def test_seeds_ratio_is_the_paired_ratio_of_the_rounds(seeds_doc, metrics):
    for tonic in ("rust_tonic_mt", "rust_tonic_st"):
        interval = server_ratio(metrics[tonic], metrics["rust_pajamax"])
        assert f"- over {tonic}: **{interval.text()}**" in seeds_doc
    assert RATIO_DEFINITION in seeds_doc


def test_seeds_quotes_every_seed_frame_beside_the_measured_share(seeds_doc):
    rows = {line.split("|")[2].strip(): line for line in seeds_doc.splitlines() if line.startswith("| tonic |")
            or line.startswith("| pajamax |")}
    for f in SEED_FRAMES:
        row = rows[f"`{f.label}`"]
        assert f"| {f.seed_pct:.2f} % |" in row
        server = "rust_tonic_mt" if f.role == "tonic" else "rust_pajamax"
        fs = frame_share(open_folded(SEED_RUN / server / "profile.folded.gz"), UserRegex(f.regex, f.label))
        assert f"{100 * fs.share:.2f} ± {100 * fs.stderr:.2f} %" in row


def test_seeds_multi_thread_tonic_writes_more_than_current_thread(seeds_doc):
    """The runtime's invariant, read off the saved profiles: one write per response vs per batch."""
    f = next(f for f in SEED_FRAMES if "poll_write_vectored" in f.label)
    shares = {s: frame_share(open_folded(SEED_RUN / s / "profile.folded.gz"), UserRegex(f.regex, "w")).share
              for s in ("rust_tonic_mt", "rust_tonic_st")}
    assert shares["rust_tonic_mt"] > 2 * shares["rust_tonic_st"]


def test_seeds_ruler_ratio_and_verdict_follow_the_samples(seeds_doc, metrics):
    a = frame_share(open_folded(SEED_RUN / "rust_tonic_mt" / "profile.folded.gz"), UserRegex(RULER, "r"))
    b = frame_share(open_folded(SEED_RUN / "rust_pajamax" / "profile.folded.gz"), UserRegex(RULER, "r"))
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
    load_cpus = json.loads((SEED_RUN / "manifest.json").read_text())["parameters"]["load_cpus"]
    assert f"client had {len(load_cpus)} core" in seeds_doc


@pytest.mark.slow
def test_seeds_is_the_same_document_twice():
    assert seeds_of(SEED_RUN) == seeds_of(SEED_RUN)


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


# Every sentence that states a reading comes from the figures: fed a run where its condition is false,
# the sentence is gone (docs/seeds.md and docs/results.md are generated from such files).

def edited_copy(src, dest, edit):
    """A copy of a saved run or sweep folder with edit(path -> dict) applied to its JSON files."""
    shutil.copytree(src, dest)
    for path in dest.rglob("*.json"):
        data = json.loads(path.read_text())
        data = edit(path, data) or data
        path.write_text(json.dumps(data))
    return dest


def seeds_of(folder, *more) -> str:
    done = report("seeds", str(folder), *more)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_client_cores_come_from_the_manifest(tmp_path):
    def three_load_cpus(path, data):
        if path.name == "manifest.json":
            data["parameters"]["load_cpus"] = [1, 2, 3]
    text = seeds_of(edited_copy(SEED_RUN, tmp_path / "run", three_load_cpus))
    assert "the client had 3 cores here" in text and "1 core here" not in text


@pytest.mark.slow
def test_a_latency_bound_server_gets_no_nagle_story_without_a_verdict(tmp_path):
    def latency_bound(path, data):
        if path.name == "metrics.json":
            data["rust_pajamax"].update(latency_bound=True, offcpu=None)
    text = seeds_of(edited_copy(SEED_RUN, tmp_path / "run", latency_bound))
    assert "rust_pajamax: LATENCY-BOUND" in text and "Nagle" not in text

    def with_verdict(path, data):
        if path.name == "metrics.json":
            data["rust_pajamax"].update(latency_bound=True, offcpu={"verdict": "NAGLE/DELAYED-ACK: measured here"})
    text = seeds_of(edited_copy(SEED_RUN, tmp_path / "run2", with_verdict))
    assert "its off-CPU window says: NAGLE/DELAYED-ACK: measured here" in text


def test_the_pmu_sentence_needs_cpu_clock(tmp_path, seeds_doc):
    assert "no hardware PMU event was available" in seeds_doc          # the saved run sampled cpu-clock

    def cycles(path, data):
        if path.name == "manifest.json":
            data["sampled_event"] = "cycles"
    text = seeds_of(edited_copy(SEED_RUN, tmp_path / "run", cycles))
    assert "PMU" not in text and "sampled event cycles" in text


def test_client_bound_server_idled_only_when_both_figures_are_below_the_seeds(tmp_path, seeds_doc, metrics):
    bound = [n for n, m in metrics.items() if m.get("client_bound")]
    assert bound and "idled for lack of requests" in seeds_doc

    def faster(path, data):
        if path.name == "metrics.json":
            for n in bound:
                data[n]["req_per_s"] = 10 * 65135.31
    text = seeds_of(edited_copy(SEED_RUN, tmp_path / "run", faster))
    assert "idled for lack of requests" not in text


def test_the_correlation_reading_follows_its_sign():
    assert "cost more per request" in correlation_reading(0.8, 5)
    assert "cost less per request" in correlation_reading(-0.8, 5)
    assert "No clear tendency" in correlation_reading(0.3, 5) and "cost more" not in correlation_reading(0.3, 5)


def test_the_batching_sentence_follows_the_syscall_counts():
    assert "about as many syscalls" in batching("a", "b", {"syscalls_per_req": 1.0}, {"syscalls_per_req": 0.9})
    text = batching("a", "b", {"syscalls_per_req": 1.0}, {"syscalls_per_req": 0.1})
    assert "about as many" not in text and "a makes 10.0x the syscalls per request of b" in text


def test_the_headline_cell_is_the_most_reliable_not_the_largest():
    flagged = {"client_bound": True, "cell_interval": {"low": 40.0, "high": 60.0}, "ratio": 50.0}
    clean_wide = {"cell_interval": {"low": 5.0, "high": 20.0}, "ratio": 10.0}
    clean_narrow = {"cell_interval": {"low": 2.9, "high": 3.1}, "ratio": 3.0}
    pairs = [(1, 100, {}, flagged), (1, 10, {}, clean_wide), (10, 10, {}, clean_narrow)]
    assert headline_cell(pairs)[:2] == (10, 10)
    assert headline_cell(pairs[:1])[:2] == (1, 100)          # every cell flagged: the fewest flags compete


@pytest.mark.slow
def test_client_bound_cells_are_called_the_most_streams_only_when_they_are(tmp_path):
    def pajamax_bound_at(cell_streams):
        def edit(path, data):
            if path.name == "metrics.json" and "rust_pajamax" in data:
                streams = json.loads((path.parent / "manifest.json").read_text())["parameters"]["streams"]
                data["rust_pajamax"]["client_bound"] = streams == cell_streams
        return edit
    most = report("results", str(edited_copy(SWEEP, tmp_path / "a", pajamax_bound_at(100)))).stdout
    assert "Those are the cells with the most streams per connection (S/C ≥ 100)" in most
    fewest = report("results", str(edited_copy(SWEEP, tmp_path / "b", pajamax_bound_at(1)))).stdout
    assert "load generator was the bottleneck" in fewest and "the most streams" not in fewest


@pytest.mark.slow
def test_a_run_on_an_uncommitted_tree_says_so_in_the_first_line(tmp_path):
    def dirty(flag):
        def edit(path, data):
            if path.name == "manifest.json":
                data["git"]["dirty"] = flag
        return edit
    assert seeds_of(edited_copy(SEED_RUN, tmp_path / "d", dirty(True))).startswith("**Measured on an uncommitted tree")
    assert seeds_of(edited_copy(SEED_RUN, tmp_path / "c", dirty(False))).startswith("# Seed 001 reproduced")


@pytest.mark.slow
def test_a_sweep_with_a_cell_measured_on_an_uncommitted_tree_says_so_in_the_first_line(tmp_path):
    def dirty_cell(cell_streams, changed):
        def edit(path, data):
            if path.name == "manifest.json" and data.get("mode") != "sweep" and data.get("git") is not None:
                data["git"]["dirty"] = data["parameters"]["streams"] == cell_streams
                data["git"]["changed"] = changed if data["git"]["dirty"] else []
            elif path.name == "manifest.json" and data.get("git") is not None:
                data["git"]["dirty"] = False
        return edit
    one = report("results", str(edited_copy(SWEEP, tmp_path / "a", dirty_cell(1, ["README.md"])))).stdout
    first = one.splitlines()[0]
    assert first.startswith("**Measured on an uncommitted tree") and "in 1 of its" in first, first
    assert "the changed files: README.md" in first
    none = report("results", str(edited_copy(SWEEP, tmp_path / "b", dirty_cell(-1, [])))).stdout
    assert none.startswith("# Results") and "uncommitted" not in none


@pytest.mark.slow
def test_results_say_which_rounds_were_profiled_from_the_sweep_itself(tmp_path):
    def unprofiled_rounds(path, data):
        if path.name == "metrics.json":
            for m in data.values():
                for r in m.get("repeats") or []:
                    r["profile_samples"] = None
    old = report("results", str(edited_copy(SWEEP, tmp_path / "a", unprofiled_rounds))).stdout
    assert "From each cell's first round" in old and "From every round" not in old
    assert "a profile window per server in the first round" in old

    def profiled_rounds(path, data):
        if path.name == "metrics.json":
            for m in data.values():
                for r in m.get("repeats") or [m]:
                    r["profile_samples"] = 1000
    new = report("results", str(edited_copy(SWEEP, tmp_path / "b", profiled_rounds))).stdout
    assert "From every round of each cell" in new and "a profile window per server in every round" in new


def test_the_sweep_table_leaves_out_a_column_no_cell_filled_and_csv_keeps_every_column(tmp_path):
    one_round = edited_copy(SWEEP, tmp_path / "sweep", lambda path, data: None)
    header = report("sweep", str(one_round)).stdout.splitlines()[2]
    assert "min-max" not in header and "B/write" in header        # one round: no spread; --io-sizes: sizes
    csv = report("sweep", str(one_round), "--format", "csv").stdout.splitlines()[0]
    assert "req/s per CPU min" in csv and "B/write" in csv

    def no_sizes(path, data):
        for server in (data.values() if path.name == "metrics.json" else []):
            if isinstance(server, dict):
                server["syscalls"].pop("bytes_per_write", None)
    header = report("sweep", str(edited_copy(SWEEP, tmp_path / "no-sizes", no_sizes))).stdout.splitlines()[2]
    assert "B/write" not in header and "writes/req" in header
