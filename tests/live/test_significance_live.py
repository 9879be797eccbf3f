"""Every difference with its significance, on a known difference (issue 22, item 1): the calibration server
burning 20 µs of app CPU per request against 40, two short runs of 3 rounds each; report.py diff of the
two runs (Welch's t, categories corrected with Benjamini-Hochberg) finds app, and only app, significant
in CPU µs per request. About 40 s on the 2-CPU machine."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_burn_20_against_40_makes_app_and_nothing_else_significant(profile, port, tmp_path):
    runs = []
    for burn in (20, 40):
        done = profile.run("run", "calibration", "--param", f"burn_us={burn}", "-d", "1.5", "-w", "0.5",
                           "--profile-duration", "1.5", "--repeat", "3", "--port", str(port), "--label", f"burn-{burn}")
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(done.run_dir)
    out = subprocess.run([str(ROOT / "report.py"), "diff", str(runs[0]), str(runs[1]), "-o", str(tmp_path / "d.svg"),
                          "--per-request", "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["test"] == "Welch t over 3 and 3 rounds"
    rows = {r["category"]: r for r in data["categories"]}
    assert rows["app"]["delta_us_sig"] == "*" and 15 < rows["app"]["delta_us"] < 30, rows["app"]
    assert [c for c, r in rows.items() if r["delta_us_sig"] == "*"] == ["app"], \
        {c: (round(r["delta_us"], 2), r["delta_us_q"]) for c, r in rows.items()}
