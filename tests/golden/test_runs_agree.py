"""report.py runs on the published runs of the README's first command from before `--idle` (docs/data/):
five runs of one setup (the server's CPU halting when idle), on three hosts. Each run's ratio and interval must be the one `report.py run`
prints for that folder, each miss a real one, and the spread between runs the one their rounds give."""
from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys

import pytest

from conftest import ROOT
from rpcprof.analyze.intervals import figure_by_round

DATA = ROOT / "docs" / "data"
RUNS = sorted(DATA.glob("2026112[45]-*-rust_tonic_mt-rust_pajamax"))   # before --idle: one setup
PAIR = "rust_pajamax vs rust_tonic_mt"


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "report.py"), *args], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def doc() -> dict:
    done = report("runs", *map(str, RUNS), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_there_are_five_published_runs_of_the_first_command_from_before_idle():
    assert len(RUNS) == 5


@pytest.mark.slow
def test_each_runs_ratio_and_interval_are_those_report_py_run_prints(doc):
    got = doc["pairs"][PAIR]["runs"]
    for run_dir, row in zip(RUNS, got):
        printed = json.loads(report("run", str(run_dir), "--format", "json").stdout)
        interval = next(r["ratio_interval"] for r in printed["rows"] if r["server"] == "rust_pajamax")
        assert row["run"] == run_dir.name
        assert (row["ratio"], row["low"], row["high"]) == pytest.approx((interval["ratio"], interval["low"], interval["high"]))


def test_every_miss_is_a_ratio_outside_that_interval_and_every_other_check_holds(doc):
    rows = {r["run"]: r for r in doc["pairs"][PAIR]["runs"]}
    misses = {(m["ratio_of"], m["outside_interval_of"]) for m in doc["pairs"][PAIR]["misses"]}
    checks = 0
    for a in rows.values():
        for b in rows.values():
            if a is not b:
                checks += 1
                assert ((a["run"], b["run"]) in misses) == (not b["low"] <= a["ratio"] <= b["high"])
    assert doc["pairs"][PAIR]["checks"] == checks == 20
    assert misses, "the published runs disagree (docs/run.md says so): a report that finds no miss is wrong"


def test_the_spread_between_runs_is_the_runs_and_the_rounds_is_their_pairs(doc):
    got = doc["pairs"][PAIR]
    logs = []
    for run_dir in RUNS:
        metrics = json.loads((run_dir / "metrics.json").read_text())
        a = figure_by_round(metrics["rust_tonic_mt"])
        b = figure_by_round(metrics["rust_pajamax"])
        logs.append([math.log(b[k] / a[k]) for k in sorted(a)])
    assert got["runs_sd"] == pytest.approx(statistics.stdev(statistics.fmean(x) for x in logs))
    pooled = statistics.fmean(statistics.variance(x) for x in logs)        # five pairs in each run
    assert got["expected_sd"] == pytest.approx(math.sqrt(pooled / 5))
    assert got["between_sd"] == pytest.approx(math.sqrt(got["runs_sd"] ** 2 - got["expected_sd"] ** 2))
    low, high = got["next_run"]
    assert low < got["over_runs"]["low"] < got["over_runs"]["ratio"] < got["over_runs"]["high"] < high
    assert all(low <= r["ratio"] <= high for r in got["runs"])


@pytest.mark.slow
def test_the_text_says_what_the_figures_say():
    out = report("runs", *map(str, RUNS)).stdout
    assert f"{PAIR}: the runs disagree: " in out and "beyond what their rounds predict" in out
    assert "(the runs ran on different hosts, below)" in out and "The runs ran on different hosts" in out
    # two runs that do agree, and spread less than their rounds predict (the first two of the README's, polling
    # when idle): neither sentence of drift
    agreeing = sorted(DATA.glob("20261126-*-rust_tonic_mt-rust_pajamax"))[:2]
    out = report("runs", *map(str, agreeing)).stdout
    assert f"{PAIR}: the runs agree" in out and "disagree" not in out and "beyond" not in out


@pytest.mark.parametrize("args, says", [
    ((str(RUNS[0]),), "give two run folders or more"),
    ((str(RUNS[0]), str(DATA / "20261124-074608-seed-002-A")), "seed-002-A differs from 20261124-073646-rust_tonic_mt-rust_pajamax in streams (100 against 1000)"),
    ((str(RUNS[0]), str(DATA / "20261126-041905-seed-000")), "a sweep folder, not a run"),
    ((str(RUNS[0]), str(DATA / "20261125-091134-rust_tonic_mt-java_grpc-cpp_grpc")), "no two servers"),
])
def test_runs_that_cannot_be_compared_are_refused_in_one_line(args, says):
    done = report("runs", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr


TODAY = sorted(DATA.glob("20261125-17*-rust_tonic_mt-rust_pajamax"))      # three in a row, one commit


def copy_run(src, runs, name=None, **changes):
    """A copy of a published run under runs/ (NAME, or its own name), its manifest changed as given
    (key: value, or key path 'a.b': value)."""
    import shutil
    to = runs / (name or src.name)
    shutil.copytree(src, to)
    manifest = json.loads((to / "manifest.json").read_text())
    for key, value in changes.items():
        *path, last = key.split(".")
        node = manifest
        for p in path:
            node = node[p]
        node[last] = value
    (to / "manifest.json").write_text(json.dumps(manifest))
    return to


@pytest.mark.slow
def test_a_new_run_is_given_the_earlier_runs_of_its_setup_machine_and_code_only(tmp_path):
    from rpcprof.report.agreement import earlier_lines, earlier_runs
    first, second, third = (copy_run(d, tmp_path) for d in TODAY)
    # the same run but for one thing each, all started before the third: none is its peer
    other_load = copy_run(TODAY[1], tmp_path, "20261125-172200-other-load", **{"parameters.streams": 100})
    other_code = copy_run(TODAY[1], tmp_path, "20261125-172201-other-code", **{"git.commit": "0" * 40})
    other_host = copy_run(TODAY[1], tmp_path, "20261125-172202-other-host", **{"machine.hostname": "elsewhere"})
    polled = copy_run(TODAY[1], tmp_path, "20261125-172205-polled", **{"parameters.idle": "poll"})
    interrupted = copy_run(TODAY[1], tmp_path, "20261125-172203-interrupted", status="interrupted")
    a_day_before = copy_run(TODAY[0], tmp_path, "20261124-171838-a-day-before", started="2026-11-24T17:18:37")
    (tmp_path / "20261125-172204-not-a-run").mkdir()
    found = earlier_runs(third, tmp_path)
    assert found == [first, second]
    assert not {other_load, other_code, other_host, interrupted, a_day_before, polled} & set(found)
    assert earlier_runs(first, tmp_path) == [] and earlier_lines(first, tmp_path) == []
    # the line is report.py runs' interval over the three
    over = json.loads(report("runs", str(first), str(second), str(third), "--format", "json").stdout)
    interval = over["pairs"][PAIR]["over_runs"]
    line, = earlier_lines(third, tmp_path)
    text = f"^{interval['ratio']:.1f} [{interval['low']:.1f}-{interval['high']:.1f}]"
    assert line.startswith(f"{PAIR} over this run and 2 earlier ones of this setup here: {text} (95 %")
    assert ("beyond what their rounds predict" in line) == (over["pairs"][PAIR]["between_sd"] > 0)


@pytest.mark.slow
def test_idle_is_part_of_the_setup_and_runs_from_before_it_halted(tmp_path):
    """--idle poll moves a client-bound server's CPU per request: runs of each are not pooled. The published
    runs have no idle key: they halted, as a run with --idle halt does."""
    halted = copy_run(TODAY[1], tmp_path, "20261125-172206-halted", **{"parameters.idle": "halt"})
    polled = copy_run(TODAY[1], tmp_path, "20261125-172207-polled", **{"parameters.idle": "poll"})
    assert report("runs", str(TODAY[0]), str(halted)).returncode == 0
    done = report("runs", str(TODAY[0]), str(polled))
    assert done.returncode == 2 and "in idle ('poll' against 'halt')" in done.stderr, done.stderr


def test_how_long_each_run_took_is_its_manifests_end_less_its_start(doc):
    from datetime import datetime
    manifests = [json.loads((d / "manifest.json").read_text()) for d in RUNS]
    took = [(datetime.fromisoformat(m["finished"]) - datetime.fromisoformat(m["started"])).total_seconds()
            for m in manifests]
    assert doc["took_s"] == {d.name: s for d, s in zip(RUNS, took)}
    text = report("runs", *map(str, RUNS)).stdout
    low, high = min(took), max(took)
    assert (f"The 5 runs took {int(low) // 60} min {int(low) % 60:02d} s to {int(high) // 60} min "
            f"{int(high) % 60:02d} s each from start to end, as their manifests record") in text


def busy_copy(src, runs, server="rust_tonic_mt"):
    """A copy of a published run whose server's measured window had a busy program beside it (BUSY-HOST)."""
    to = copy_run(src, runs)
    metrics = json.loads((to / "metrics.json").read_text())
    metrics[server]["neighbours"] = [{"pid": 4242, "name": "python", "cores": 0.83}]
    (to / "metrics.json").write_text(json.dumps(metrics))
    return to


@pytest.mark.slow
def test_a_run_beside_busy_programs_is_named_as_the_drift_and_never_pooled(tmp_path):
    from rpcprof.report.agreement import earlier_lines
    first, busy, third = copy_run(TODAY[0], tmp_path), busy_copy(TODAY[1], tmp_path), copy_run(TODAY[2], tmp_path)
    out = report("runs", str(first), str(busy), str(third)).stdout
    assert "beyond what their rounds predict (#2 ran beside busy programs, below)." in out, out
    assert (f"{PAIR}: #2 ran beside busy programs (BUSY-HOST): no interval over runs with it; give report.py runs "
            "the others alone.") in out
    assert "over the 3 runs" not in out
    got = json.loads(report("runs", str(first), str(busy), str(third), "--format", "json").stdout)
    assert got["busy"] == [busy.name]
    # the new run's interval over earlier runs leaves the busy one out: it is the interval over the other two
    line, = earlier_lines(third, tmp_path)
    over = json.loads(report("runs", str(first), str(third), "--format", "json").stdout)["pairs"][PAIR]["over_runs"]
    assert line.startswith(f"{PAIR} over this run and 1 earlier one of this setup here: "
                           f"^{over['ratio']:.1f} [{over['low']:.1f}-{over['high']:.1f}] (95 %")
