"""scipy.stats gives the statistics the reports computed before with code written by hand
(tests/reference_statistics.py): every p-value, t quantile and Benjamini-Hochberg adjustment the reports
compute over the recorded runs (docs/data, tests/data/runs) is the same within 1e-9."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

import reference_statistics as hand
from conftest import ROOT, invoke
from rpcprof.analyze import intervals, significance
from rpcprof.cli.report import entry
from rpcprof.records import rounds_asked

TOLERANCE = 1e-9
INDIRECT = ROOT / "docs" / "data" / "indirect-syscall-cost.json"


def test_p_values_are_the_hand_written_ones_on_a_grid():
    for df in [1, 1.5, 2, 2.37, 3, 4, 5.8, 9, 17.25, 30, 31, 64, 200, 1000]:
        for t in [0, 1e-3, 0.1, 0.5, 1, 1.7, 2, 2.78, 3.5, 5, 8, 13, 25, 60, -2.5, float("nan"), float("inf")]:
            assert significance.t_two_sided_p(t, df) == pytest.approx(hand.t_two_sided_p(t, df), abs=TOLERANCE), (t, df)


def test_near_zero_scipy_keeps_the_precision_the_continued_fraction_lost():
    """At t = 1e-6 the hand-written p was 2e-9 off (df 64); with df 2 the closed form shows scipy's exact."""
    for t in (1e-6, 1e-9):
        assert significance.t_two_sided_p(t, 2) == pytest.approx(1 - t / (2 + t * t) ** 0.5, abs=1e-15)


def test_t_quantiles_are_the_hand_written_ones():
    for df in [1, 1.01, 1.5, 2, 2.63, 3, 4, 7.77, 12.5, 29.99, 30, 30.4, 45, 120, 999.6]:
        for level in (0.95, 0.9, 0.99):
            assert significance.t_quantile(df, level) == pytest.approx(hand.t_quantile(df, level), abs=TOLERANCE)


def test_the_t975_table_is_scipys_quantile_to_three_decimals():
    assert [intervals.t975(df) for df in range(1, 31)] == list(hand.T975)


def test_benjamini_hochberg_is_the_hand_written_step_up():
    rng = random.Random(33)
    for m in (0, 1, 2, 5, 40, 300):
        for _ in range(20):
            p = [rng.random() ** rng.choice((1, 3, 8)) for _ in range(m)]
            p += p[: m // 4]                          # ties
            assert significance.benjamini_hochberg(p) == hand.benjamini_hochberg(p)
            assert significance.bh_adjusted(p) == pytest.approx(hand.bh_adjusted(p), abs=TOLERANCE)


def recorded_commands(run: Path, tmp: Path) -> list[list[str]]:
    """The reports that compute p-values and intervals over one run (compare, run, diff, whatif)."""
    servers = [p.name for p in sorted(run.iterdir()) if p.is_dir() and any(p.glob("result.json*"))]
    out = [["compare", str(run), "--format", "json"], ["run", str(run), "--format", "json"],
           ["compare", str(run), "--indirect", str(INDIRECT), "--format", "json"]]
    for a, b in zip(servers, servers[1:]):
        out += [["diff", f"{run}/{a}", f"{run}/{b}", "-o", str(tmp / "d.svg"), "--format", "json"],
                ["whatif", str(run), b, a, "--format", "json"]]
    return out


def across_runs_commands(runs: list[Path], tmp: Path) -> list[list[str]]:
    """The reports that test one server across runs: diff of two runs (Welch's t), and runs."""
    pairs = [r for r in runs if r.name.endswith("rust_tonic_mt-rust_pajamax")]
    out = [["diff", f"{a}/rust_pajamax", f"{b}/rust_pajamax", "-o", str(tmp / "d.svg"), "--format", "json"]
           for a, b in zip(pairs, pairs[1:])]
    return out + [["runs", *map(str, pairs), "--format", "json"]] if len(pairs) > 1 else out


def calls_of_the_reports(monkeypatch, commands: list[list[str]]) -> dict[str, list]:
    """Run the commands with every statistics function recorded wherever a module imported it:
    {function name: [(args, result)]}."""
    recorded = {name: [] for name in ("t_two_sided_p", "t_quantile", "benjamini_hochberg", "bh_adjusted", "t975")}
    originals = {name: getattr(significance if name != "t975" else intervals, name) for name in recorded}
    for name, f in originals.items():
        def recorder(*args, _f=f, _name=name):
            result = _f(*args)
            recorded[_name].append((args, result))
            return result
        for module in [m for n, m in sys.modules.items() if n.startswith("rpcprof")]:
            if getattr(module, name, None) is f:
                monkeypatch.setattr(module, name, recorder)
    for argv in commands:
        result = invoke(entry, *argv)
        assert result.code in (0, 2), (argv, result.err)
    return recorded


def assert_the_same_as_by_hand(recorded: dict[str, list], tested: bool = True) -> None:
    """Every call recorded gave what the hand-written code gives; tested: the reports made tests (a run of one
    round has none to make, and makes none)."""
    if tested:
        assert recorded["t_two_sided_p"] and recorded["t_quantile"] and recorded["bh_adjusted"]
    else:
        assert not any(recorded.values()), {name: len(calls) for name, calls in recorded.items()}
    for (t, df), p in set(recorded["t_two_sided_p"]):
        assert abs(p - hand.t_two_sided_p(t, df)) <= TOLERANCE, (t, df)
    for args, q in set(recorded["t_quantile"]):
        assert abs(q - hand.t_quantile(*args)) <= TOLERANCE, args
    for (df,), t in set(recorded["t975"]):
        assert t == hand.t975(df), df
    for (pvalues, *q), found in recorded["benjamini_hochberg"]:
        assert found == hand.benjamini_hochberg(pvalues, *q)
    for (pvalues,), adjusted in recorded["bh_adjusted"]:
        assert adjusted == pytest.approx(hand.bh_adjusted(pvalues), abs=TOLERANCE)


def recorded_runs() -> list[Path]:
    runs = sorted(p for p in (ROOT / "docs" / "data").iterdir() if any(p.glob("metrics.json*")))
    return runs + sorted(p for p in (ROOT / "tests" / "data" / "runs").iterdir() if any(p.glob("metrics.json*")))


@pytest.mark.slow
@pytest.mark.parametrize("run", recorded_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_reports_of_every_recorded_run_compute_what_they_did_by_hand(monkeypatch, tmp_path, run):
    """One run at a time, so that the full suite's workers share them out (tests/data/runs/rounds among them); a run of
    one round tests nothing."""
    rounds = rounds_asked(json.loads((run / "manifest.json").read_text())["parameters"])
    assert_the_same_as_by_hand(calls_of_the_reports(monkeypatch, recorded_commands(run, tmp_path)), rounds > 1)


@pytest.mark.slow
def test_the_reports_across_recorded_runs_compute_what_they_did_by_hand(monkeypatch, tmp_path):
    commands = across_runs_commands(recorded_runs(), tmp_path)
    assert any(c[0] == "runs" for c in commands)
    assert_the_same_as_by_hand(calls_of_the_reports(monkeypatch, commands))
