"""Runs across hosts (analyze/hosts.py, report/hosts.py): the hosts' unit costs side by side and what they predict, on
copies of a recorded run given host cards."""
from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from rpcprof.analyze.intervals import figure_by_round
from rpcprof.report.agreement import render_runs
from rpcprof.rundir import load_run

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "data" / "20261125-172323-rust_tonic_mt-rust_pajamax"
CARD = {"syscall_ns": 120.0, "write_us": 2.0, "wake_us": 20.0, "wake_cpu_us": 10.0, "loop_ns": 1.0}


def card(**scaled) -> dict:
    out = {}
    for k, v in CARD.items():
        v *= scaled.get(k, 1.0)
        out[k] = {"median": v, "min": 0.9 * v, "max": 1.1 * v, "batches": [v] * 7}
    return {**out, "idle": "poll", "cpuidle_driver": "haltpoll", "seconds": 3.0, "server_cpu": 0, "load_cpu": 1}


def copy_run(tmp_path: Path, name: str, host: dict | None, boot: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    shutil.copy(RUN / "metrics.json", d / "metrics.json")
    manifest = json.loads((RUN / "manifest.json").read_text())
    manifest["owner"]["boot_id"] = boot
    if host is not None:
        manifest["host"] = host
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


def test_the_unit_costs_predict_what_a_dearer_write_costs_each_server(tmp_path):
    a = copy_run(tmp_path, "20261126-000000-a", card(), "boot-a")
    b = copy_run(tmp_path, "20261126-000100-b", card(write_us=2.0, loop_ns=1.5), "boot-b")
    data = json.loads(render_runs([a, b], "json"))
    assert [(h["write_us"], h["write_us_factor"]) for h in data["hosts"]] == [(2.0, 1.0), (4.0, 2.0)]   # numbers
    _, metrics = load_run(RUN)
    for p in data["predictions"]:
        m = metrics[p["server"]]
        sc = m["syscalls"]
        cpu = statistics.fmean(figure_by_round(m, "cpu_us_per_req").values())
        writes = sc["writes_per_req"]
        other = sc["named_per_req"] - writes
        sleeps = m["proc_per_req"]["voluntary_switches"]
        wake = 10.0 - 2 * 0.12
        rest = cpu - writes * 2.0 - other * 0.12 - sleeps * wake
        assert p["measured_a"] == pytest.approx(cpu) and p["measured_b"] == pytest.approx(cpu)   # the same figures
        assert p["predicted_b"] == pytest.approx(writes * 4.0 + other * 0.12 + sleeps * wake + 1.5 * rest)
    text = render_runs([a, b])
    assert "The runs ran on different hosts" in text
    first, second = (line for line in text.splitlines() if "haltpoll" in line)      # the hosts table
    assert "(x" not in first and " 4 (x2.00) " in second            # the table shows a factor from run #2 on
    assert "rust_tonic_mt on #2: " in text and "predicted by the unit costs (writes 1.00/req" in text


def test_runs_of_one_host_print_no_hosts_section(tmp_path):
    a = copy_run(tmp_path, "20261126-000000-a", card(), "boot-a")
    b = copy_run(tmp_path, "20261126-000100-b", card(), "boot-a")
    assert "different hosts" not in render_runs([a, b])
    assert "hosts" not in json.loads(render_runs([a, b], "json"))


def test_a_run_made_before_host_cards_is_named_and_nothing_is_predicted_for_it(tmp_path):
    a = copy_run(tmp_path, "20261126-000000-a", card(), "boot-a")
    b = copy_run(tmp_path, "20261126-000100-b", None, "boot-b")
    text = render_runs([a, b])
    assert "Run #2 carries no host card (made before runs had one)" in text
    assert "predicted by the unit costs" not in text
