"""Ground truth for attribution and for significance: the calibration server burns a configured CPU time
per request in `calibration_burn_cpu`; rpcprof must report that cost back as app µs per request, and
report.py diff of two settings must find app significant, carrying the difference.

Real server, real perf, real load: one run per burn setting (50 and 100 µs), 4 rounds each. The burn
loop overshoots its target by 1-5 µs per call (it reads the thread CPU clock a few times per call, each
a syscall in a VM, whose cost drifts with the machine), so the truth a profile is checked against is the
burn the server measured: it prints the thread CPU per call its burns took when it exits (server.log),
e.g. 53.0 µs for a 50 µs setting.

App reads a few % above the burn, within the 10 % bound: the handlers' own frames (format, drops: ~1 %
of the samples), the halves of the burn's first and last clock reads that its measure leaves out (perf
put 2.0 % more samples in calibration_burn_cpu than the 3.18 s the server measured over a whole life of
30,000 calls, 2026-11-28), and the requests in flight at the window's end (1 % at S=100; at the default
S=1000, 9 %, and app read 11 % above the burn in a CI run).

The first round's profile shares are multiplied by its own window's CPU per request: the attribution
under test is the profile's, and this server at C=1 S=100 is unsaturated, so its batching, and with it
the non-app CPU per request, drifts between windows (a CI run: 73.7 µs/req measured, 69.3 while
profiled, at +10 % req/s), while the burn per call does not.

Significance (issue 22, item 1): report.py diff of the two runs (Welch's t over their rounds, categories
corrected with Benjamini-Hochberg) must find app significant with the difference of the burns the server
measured, and any other category found significant must be a small fraction of app's gap. Measured here
with 20 against 40 µs (2026-11-24, two pairs of runs), the other categories stayed within their
intervals in one pair; in the other, protocol rose by 1.35 ± 0.73 µs/req (7.57 to 8.92, q 0.01): at
40 µs the server serves about 16k req/s instead of 31k, so h2 batches fewer requests per frame and per
read, and user code may run slower after the burn's clock reads (issue 22, item 3). That is a real
per-request difference, and the test does not call it an error.
"""
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import card_run, category_shares
from rpcprof.analyze.categorize import categorize, load_rules, open_folded
from rpcprof.records import round_of, round_rows
from rpcprof.rundir import profile_folded

ROOT = Path(__file__).resolve().parents[2]
BURNS = (50, 100)
STREAMS = 50     # S: at the default 1000 a 1.5 s window ends with ~9 % of its requests in flight (IN-FLIGHT),
                 # burned but not counted, and app per request reads ~10 % above the burn; at 100, 2.1 % on a
                 # host 2-4x slower than the others, over the 2 % that flags it
ROUNDS = 4       # 3 left the burn's frames at q 0.056 over 391 boxes on a noisy host (p 0.0012 each, Welch df ~2)
SMALL = 0.15        # of app's gap: the most another category found significant may move


@pytest.fixture(scope="module")
def calibration_runs(tmp_path_factory):
    """One run of ROUNDS rounds per burn setting: its metrics for the calibration server."""
    runs = {}
    runs_dir = tmp_path_factory.mktemp("runs")
    for burn in BURNS:
        label = f"pytest-calibration-{burn}"
        proc = subprocess.run(
            [str(ROOT / "profile.sh"), "run", "calibration", "--param", f"burn_us={burn}", "-d", "1.5", "-w", "0.5",
             "--profile-duration", "1.5", "--no-off-cpu", "-S", str(STREAMS), "--rounds", str(ROUNDS), "--port", "30551", "--label", label,
             "--no-pictures", "--format", "json", "--runs-dir", str(runs_dir), "--host-card", str(card_run())],
            capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
        run_dir = next(runs_dir.glob(f"*-{label}"))
        m = json.loads((run_dir / "metrics.json").read_text())["calibration"]
        assert not m["in_flight_flag"], f"{run_dir}: {100 * m['in_flight_share']:.1f} % of its requests in flight"
        log = (run_dir / "calibration" / "server.log").read_text()
        measured = float(re.search(r"measured thread CPU per call ([\d.]+) us", log).group(1))
        runs[burn] = (run_dir, m, category_shares(run_dir, "calibration"), measured)
    yield runs


@pytest.mark.parametrize("burn", BURNS)
def test_the_server_burns_what_it_is_told(calibration_runs, burn):
    """Its own measure of each burn: at least the setting, overshooting by a few µs at most."""
    *_, measured = calibration_runs[burn]
    assert burn <= measured <= burn + 8


@pytest.mark.parametrize("burn", BURNS)
def test_app_cost_per_request_matches_the_configured_burn(calibration_runs, burn):
    run_dir, m, shares, measured = calibration_runs[burn]
    app_us = shares["app"] * m["profile"]["cpu_us_per_req_profiled"]
    assert app_us == pytest.approx(measured, rel=0.10), (
        f"app {app_us:.1f} µs/req for a burn the server measured at {measured:.1f} µs ({burn} asked; {run_dir})")


@pytest.mark.parametrize("burn", BURNS)
def test_app_share_is_the_burn_over_the_whole_request(calibration_runs, burn):
    _, m, shares, measured = calibration_runs[burn]
    expected_share = measured / m["profile"]["cpu_us_per_req_profiled"]
    assert shares["app"] == pytest.approx(expected_share, rel=0.10)
    assert shares["other"] < 0.03


def test_compare_reports_the_mean_over_rounds_of_each_rounds_app_cost(calibration_runs):
    """compare's app µs/req: the mean over the rounds of each round's app share (its own folded file)
    times that round's unprofiled CPU per request; the categories add up to the total."""
    run_dir, m, _, _ = calibration_runs[BURNS[-1]]
    out = subprocess.run([str(ROOT / "report.py"), "compare", str(run_dir), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    rows = {r["category"]: r for r in json.loads(out)["rows"]}
    rules = load_rules().with_app(m.get("app"))
    per_round = [categorize(open_folded(profile_folded(run_dir, "calibration", round_of(r))), rules).share("app")
                 * r["cpu_us_per_req"] for r in round_rows(m)]
    assert len(per_round) == ROUNDS
    assert rows["app"]["calibration_us"] == pytest.approx(sum(per_round) / ROUNDS)
    assert sum(rows[c]["calibration_us"] for c in rows if c != "total") == pytest.approx(rows["total"]["calibration_us"])


def test_the_burns_difference_makes_app_significant_and_carries_the_gap(calibration_runs, tmp_path):
    (low, *_, low_measured), (high, *_, high_measured) = (calibration_runs[b] for b in BURNS)
    out = subprocess.run([str(ROOT / "report.py"), "diff", str(low), str(high), "-o", str(tmp_path / "d.svg"),
                          "--per-request", "--format", "json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["test"] == f"Welch t over {ROUNDS} and {ROUNDS} rounds"
    rows = {r["category"]: r for r in data["categories"]}
    app = rows.pop("app")
    gap = high_measured - low_measured
    assert app["delta_us_sig"] == "*" and 0.75 * gap < app["delta_us"] < 1.5 * gap, (app, gap)
    others = {c: (round(r["delta_us"], 2), r["delta_us_q"]) for c, r in rows.items()}
    assert all(abs(r["delta_us"]) < SMALL * app["delta_us"] for r in rows.values() if r["delta_us_sig"] == "*"), others
    assert [f for f in data["frames"] if f.get("sig_us") == "*"], "the burn's frames are found"
