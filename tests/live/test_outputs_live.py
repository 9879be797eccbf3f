"""Nothing lost, live: a run folder on a disk that fills up during a real run is marked failed and keeps
what was captured (the outputs of saved runs: tests/golden/test_outputs.py)."""
from __future__ import annotations

import json

from conftest import fill, pid_alive


def test_a_run_whose_disk_fills_up_is_marked_failed_and_keeps_what_it_captured(profile, port, small_disk):
    running = profile.start("run", "rust_tonic_st", "--no-profile", "--no-syscalls", "-w", "0", "-d", "5",
                            "--port", str(port), "--runs-dir", str(small_disk), "--label", "pytest-full")
    server = int(running.wait_for(r"rust_tonic_st \(pid (\d+)\)").group(1))
    running.wait_for(r"rust_tonic_st: measuring")
    fill(small_disk)
    done = running.finish(timeout=120)
    try:
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
        assert "No space left on device" in done.stderr
        manifest = json.loads((done.run_dir / "manifest.json").read_text())
        assert manifest["status"] == "failed"
        assert (done.run_dir / "rust_tonic_st" / "build.log").is_file()
        assert not pid_alive(server)
    finally:
        (small_disk / "filler").unlink()
