"""Seed 001's figures against a recorded run of its setup (documents/seed_gaps.py): here ÷ seed, and a reason
only where the gap is over 20 %, each from the run's own figures."""
from __future__ import annotations

from pathlib import Path

import pytest

from rpcprof.analyze.breakdowns import every_round
from rpcprof.analyze.categorize import categorize, load_rules
from rpcprof.documents.seed_figures import SEED_RATIO_QUOTED, SEED_RUN
from rpcprof.documents.seed_gaps import GAP, gap_rows
from rpcprof.report.compare import round_profiles
from rpcprof.rundir import load_run

RUN = Path(__file__).resolve().parents[2] / "docs" / "data" / "20261124-074115-seed-001"


@pytest.fixture(scope="module")
def rows():
    rules = load_rules()
    manifest, metrics = load_run(RUN)
    sends = {s: categorize(every_round(round_profiles(RUN, s, metrics[s])), rules).share("send")
             for s in ("rust_tonic_mt", "rust_pajamax")}
    return gap_rows(RUN, rules, metrics, manifest, "rust_tonic_mt", "rust_pajamax", sends)


def test_every_row_is_here_over_seed_and_only_gaps_over_20_percent_get_a_reason(rows):
    table, _ = rows
    assert [r["figure"] for r in table][:2] == ["tonic req/s", "tonic server CPU [%]"]
    for r in table:
        assert r["factor"] == pytest.approx(r["here"] / r["seed"])
        assert bool(r["why"]) == (abs(r["factor"] - 1) > GAP), r
    assert table[0]["seed"] == SEED_RUN["tonic"][2] and table[-1]["seed"] == SEED_RATIO_QUOTED


def test_a_server_cpu_gap_is_the_product_of_its_two_factors(rows):
    table, _ = rows
    by = {r["figure"]: r for r in table}
    for role in ("tonic", "pajamax"):
        rps, cpu = by[f"{role} req/s"]["factor"], by[f"{role} CPU µs/req"]["factor"]
        assert by[f"{role} server CPU [%]"]["factor"] == pytest.approx(rps * cpu, rel=0.02)


def test_the_seeds_ratio_is_placed_on_the_model_with_its_interval(rows):
    table, solved = rows
    value, low, high = solved.requests_per_write
    assert low < value < high
    assert f"one write per {value:.1f} requests [{low:.1f}-{high:.1f}]" in table[-1]["why"]
