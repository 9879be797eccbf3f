"""A tiny real sweep (2 cells, short windows): table structure and invariants, never timings."""
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    proc = subprocess.run(
        [str(ROOT / "profile.sh"), "sweep", "rust_tonic_mt", "rust_pajamax", "-C", "1", "-S", "1,10", "-d", "1",
         "-w", "0.5", "--rounds", "2", "--profile-duration", "1", "--min-samples", "500", "--syscall-duration", "1",
         "--no-off-cpu", "--no-pictures", "--port", "30651", "--label", "pytest-sweep", "--runs-dir", str(runs)],
        capture_output=True, text=True, timeout=900)
    folders = list(runs.iterdir())
    assert len(folders) == 1, proc.stderr[-2000:]
    yield proc, folders[0]


def test_sweep_prints_seed_000_layout_with_ratios(sweep):
    proc, _ = sweep
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "--C=1:" in out
    cells = re.findall(r"^----S=(\d+)-+\^(\d+\.\d)", out, re.M)
    assert [s for s, _ in cells] == ["1", "10"]
    rows = [line.split()[0] for line in out.splitlines() if line.startswith("rust_")]
    assert rows == ["rust_tonic_mt", "rust_pajamax"] * 2


def test_sweep_announces_its_duration_and_progress(sweep):
    proc, _ = sweep
    assert re.search(r"2 cells x 2 server\(s\) x 2 round\(s\): about \d+ min \d+ s", proc.stderr)
    assert "[1/2] C=1 S=1:" in proc.stderr and "[2/2] C=1 S=10:" in proc.stderr and "ETA" in proc.stderr


def test_no_cell_draws_its_pictures_when_asked_and_each_says_how_to(sweep):
    """--no-pictures: the cells' profiles are kept, no SVG and no report.html is drawn, and each cell says so
    once, naming the commands that draw them from its folder."""
    proc, folder = sweep
    assert list(folder.rglob("profile.folded*")) and not list(folder.rglob("*.svg")) + list(folder.rglob("*.html"))
    assert proc.stderr.count("no pictures drawn (--no-pictures): report.py svg, chart and html") == 2


def test_the_later_cells_take_the_first_cells_card_named_by_its_folder(sweep):
    proc, folder = sweep
    cells = json.loads((folder / "manifest.json").read_text())["cells"]
    first, later = (folder / cells["C1-S1"]["run"], folder / cells["C1-S10"]["run"])
    card = json.loads((later / "manifest.json").read_text())["host"]
    assert card["taken_from"] == first.name and (folder / card["taken_from"] / "manifest.json").exists()
    assert f"taken from {first.name})" in proc.stderr


def test_ratio_is_the_mean_of_the_paired_rounds_with_its_interval(sweep):
    """Each cell's ratio: the geometric mean of pajamax over tonic round by round (both rounds of a cell
    were measured in turn), bracketed by its 95 % interval."""
    import math
    _, folder = sweep
    out = subprocess.run([str(ROOT / "report.py"), "sweep", str(folder), "--format", "json"], capture_output=True,
                         text=True, check=True).stdout
    rows = json.loads(out)
    assert len(rows) == 4
    manifest = json.loads((folder / "manifest.json").read_text())
    for cell in ("C1-S1", "C1-S10"):
        tonic, pajamax = [r for r in rows if r["cell"] == cell]
        metrics = json.loads((folder / manifest["cells"][cell]["run"] / "metrics.json").read_text())
        pairs = zip(metrics["rust_tonic_mt"]["repeats"], metrics["rust_pajamax"]["repeats"])
        logs = [math.log(p["req_per_cpu_s"] / t["req_per_cpu_s"]) for t, p in pairs]
        assert len(logs) == 2
        assert tonic["ratio"] == pytest.approx(math.exp(sum(logs) / 2))
        interval = tonic["cell_interval"]
        assert interval["n"] == 2 and interval["low"] <= tonic["ratio"] <= interval["high"]
    for r in rows:
        assert r["syscalls_per_req"] > 0
        assert r["spread_req_per_cpu_s"][0] <= r["req_per_cpu_s"] <= r["spread_req_per_cpu_s"][1]
        cats = [r[f"{c}_us"] for c in ("recv", "send", "runtime", "protocol", "app", "other")]
        assert sum(cats) == pytest.approx(r["cpu_us_per_req"])


def test_results_document_is_generated_from_the_sweep(sweep, tmp_path):
    _, folder = sweep
    doc = tmp_path / "results.md"
    subprocess.run([str(ROOT / "report.py"), "results", str(folder), "-o", str(doc)], check=True,
                   capture_output=True)
    text = doc.read_text()
    assert "## Set beside the published figures" in text and "| 1 | 10 | 10 | 4.2 |" in text
    assert "syscalls per request" in text.lower()


def test_sweep_json_is_one_document(tmp_path):
    """profile.sh sweep --format json prints exactly one JSON document (json.loads, jq)."""
    proc = subprocess.run(
        [str(ROOT / "profile.sh"), "sweep", "rust_pajamax", "-C", "1", "-S", "1", "-d", "1", "-w", "0",
         "--no-profile", "--no-syscalls", "--no-off-cpu", "--port", "30652", "--label", "pytest-sweep-json",
         "--runs-dir", str(tmp_path), "--format", "json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc and "rust_pajamax" in json.dumps(doc)
