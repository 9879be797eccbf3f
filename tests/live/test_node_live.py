"""node_grpcjs run by `profile.sh run`: DWARF stacks through JS frames by perf inject --jit, which writes an ELF
file per JIT function beside the round's jit-PID.dump; the run keeps those the samples run in, and its recording
folds again to the same stacks from them."""
from __future__ import annotations

import json
import subprocess

from conftest import ROOT


def test_a_node_round_keeps_the_jit_elf_files_its_samples_run_in_and_folds_again_the_same(profile, port):
    # -S 100: on a host where node answers 4,000 req/s, the default 1000 in flight at each end of a 1 s window is
    # half of what it counts, and the window is refused as too short
    done = profile.run("run", "node_grpcjs", "-d", "1", "-w", "1", "--rounds", "1", "--profile-duration", "2", "-S", "100",
                       "--no-syscalls", "--no-off-cpu", "--port", str(port), "--label", "pytest-node")
    assert done.returncode == 0, done.stderr
    folder = done.run_dir / "node_grpcjs"
    prof = json.loads((folder / "profile.json").read_text())
    assert prof["call_graph"] == "dwarf-jit" and prof["samples"] > 0
    (dump,) = prof["jitdumps"]
    pid = dump.rsplit("jit-", 1)[1].removesuffix(".dump")
    left = sorted(p.name for p in folder.rglob(f"jitted-{pid}-*.so"))
    assert 0 < prof["jit_elf_kept"] == len(left) < prof["jit_elf_files"]
    assert f"{prof['jit_elf_kept']:,} kept, those the samples run in" in done.stderr
    # every ELF file a sample's frame runs in is still there: the recording folds again to the same stacks
    again = folder / "again.folded"
    refold = subprocess.run([str(ROOT / "report.py"), "fold", str(folder / "perf.data"), "-o", str(again)],
                            capture_output=True, text=True, cwd=ROOT)
    assert refold.returncode == 0, refold.stderr
    assert again.read_bytes() == (folder / "profile.folded").read_bytes()
