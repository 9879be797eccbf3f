"""A stall, live: rust_pajamax at complex_proto with 1,000 requests in flight on one connection stops
answering (its connection closed once the client, short of HTTP/2 flow-control window, splits a message over
two DATA frames). The run must keep the window's figures, flag it STALLED with that evidence, named by its
replays (the requests that fit in the window whole all answered, the longer replay split and cut short), and
skip its profile window; the same server with 10 in flight is not flagged. Never timings."""
import json
import subprocess
from pathlib import Path

import pytest
from conftest import card_run

ROOT = Path(__file__).resolve().parents[2]


def run(runs: Path, streams: int, label: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run(
        [str(ROOT / "profile.sh"), "run", "rust_pajamax", "--scenario", "complex_proto", "-C", "1", "-S", str(streams),
         "-d", "2", "-w", "0.5", "--rounds", "1", "--profile-duration", "1", "--min-samples", "200",
         "--syscall-duration", "1", "--no-off-cpu", "--no-pictures", "--port", "30661", "--label", label, "--runs-dir", str(runs),
         "--host-card", str(card_run())],
        capture_output=True, text=True, timeout=300)
    folder = next(runs.glob(f"*-{label}"))
    return proc, json.loads((folder / "rust_pajamax" / "result.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


def test_a_stall_is_kept_flagged_with_its_mechanism(runs):
    proc, result = run(runs, 1000, "stall")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert result["status"] == "ok" and result["requests_ok"] > 0
    # its connection ended in the lead, so the window was measured again on a new one
    assert "measuring 2 s again on new connections" in proc.stderr and result["lead_s"] == 0
    folder = next(runs.glob("*-stall")) / "rust_pajamax"
    assert "with 0.5s of warm-up time" in (folder / "load-lead-ended.log").read_text()    # the first attempt, kept
    assert "with 0s of warm-up time" in (folder / "load.log").read_text()
    stalled = result["stalled"]
    assert stalled["mechanism"] == "connection closed on a message split across DATA frames", stalled
    whole, over = stalled["h2"]["replays"]
    assert whole["answered"] == whole["requests"] and whole["split"] is None
    assert over["split"] and over["answered"] < over["requests"]
    assert stalled["connections"]["end"] == 0
    assert stalled["h2"]["connection_window"] == 65_535
    assert "profile" not in result
    assert "STALLED (connection closed on a message split across DATA frames)" in proc.stdout
    assert "lengthen -d" not in proc.stdout + proc.stderr


def test_the_same_server_within_the_window_is_not_flagged(runs):
    proc, result = run(runs, 10, "steady")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "stalled" not in result and result["connections"] == {"start": 1, "end": 1}
    assert result["lead_s"] == 0.5       # measured on the connection its warm-up loaded
    assert "STALLED" not in proc.stdout
