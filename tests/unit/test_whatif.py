"""analyze/whatif.py: B's CPU per request if it wrote as A does, from its own rounds and the indirect cost."""
import pytest

from rpcprof.analyze.categorize import load_rules
from rpcprof.analyze.indirect import IndirectCost, Slope
from rpcprof.analyze.whatif import Round
from rpcprof.analyze.whatif import predict as predict_with

GROUPS = load_rules().groups        # categorize.yaml's: send is the writes', protocol + runtime + app user space


def predict(b_rounds, a_rounds, cost):
    return predict_with(b_rounds, a_rounds, cost, GROUPS)


def cost(user=0.5, half=0.1):
    cats = {"protocol": Slope(user, user - half, user + half, 0, 9), "runtime": Slope(0, 0, 0, 0, 9),
            "app": Slope(0, 0, 0, 0, 9)}
    return IndirectCost(Slope(user, user - half, user + half, 0, 9), None, cats, "rec.json")


def rnd(cpu, send, protocol, writes):
    return Round(cpu, {"send": send, "protocol": protocol, "recv": cpu - send - protocol}, writes)


B = [rnd(20.0, 8.0, 9.0, 1.0), rnd(21.0, 8.4, 9.5, 1.05), rnd(19.0, 7.6, 8.5, 0.95)]


def test_each_saved_write_saves_its_direct_and_indirect_cost():
    a = [rnd(10.0, 0.8, 7.0, 0.1)] * 2
    w = predict(B, a, cost())
    # per round: cpu − (writes − 0.1) × (send / writes + 0.5)
    expect = [20 - 0.9 * 8.5, 21 - 0.95 * 8.5, 19 - 0.85 * 8.5]
    assert w.predicted.value == pytest.approx(sum(expect) / 3)
    assert w.direct.value == pytest.approx(8.0)
    assert w.fewer_writes == pytest.approx(0.9) and w.a_writes == pytest.approx(0.1)
    # the categories add up to the total and send keeps A's share of writes
    assert sum(c["predicted"] for c in w.categories.values()) == pytest.approx(w.predicted.value)
    assert w.categories["send"]["predicted"] == pytest.approx(0.8)


def test_the_verdict_follows_the_interval():
    inside = predict(B, [rnd(12.35, 0.8, 8.55, 0.1)] * 2, cost())
    assert inside.contains and inside.outside_by == 0
    below = predict(B, [rnd(8.0, 0.8, 5.0, 0.1)] * 2, cost())
    assert not below.contains and below.outside_by < 0
    assert below.missed_category() == "protocol"
    assert below.categories["protocol"]["miss"] == pytest.approx(5.0 - (9.0 - 0.9 * 0.5))


def test_the_indirect_cost_s_own_interval_widens_the_prediction():
    a = [rnd(10.0, 0.8, 7.0, 0.1)] * 2
    narrow, wide = predict(B, a, cost(half=0.0)), predict(B, a, cost(half=2.0))
    assert wide.predicted.half == pytest.approx((narrow.predicted.half ** 2 + (0.9 * 2.0) ** 2) ** 0.5)


def test_the_model_run_backwards_gives_the_writes_at_which_the_prediction_meets_the_ratio():
    from rpcprof.analyze.whatif import solve_writes
    a = [rnd(40.0, 16.0, 18.0, 1.0)] * 3
    s = solve_writes(B, a, cost(), 2.5, GROUPS)
    assert s.target_cpu == pytest.approx(16.0)
    # B's per-write cost is 8 + 0.5 µs in every round: w = writes + (16 − cpu) / 8.5
    expect = [1.0 - 4 / 8.5, 1.05 - 5 / 8.5, 0.95 - 3 / 8.5]
    assert s.writes.value == pytest.approx(sum(expect) / 3)
    # and forwards: B writing that often is predicted at A's CPU over the ratio
    at = [rnd(1.0, 0.0, 0.0, s.writes.value)] * 3
    assert predict(B, at, cost()).predicted.value == pytest.approx(16.0)
    value, low, high = s.requests_per_write
    assert value == pytest.approx(1 / s.writes.value) and low < value < high


def test_a_ratio_out_of_reach_says_so_and_bad_ratios_are_one_line(tmp_path):
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    run = root / "docs" / "data" / "20261124-074115-seed-001"
    far = subprocess.run([str(root / "report.py"), "whatif", str(run), "rust_tonic_mt", "rust_pajamax", "--ratio", "500"],
                         capture_output=True, text=True)
    assert far.returncode == 0 and "even writing never, rust_pajamax would not come down to it" in far.stdout
    bad = subprocess.run([str(root / "report.py"), "whatif", str(run), "rust_tonic_mt", "rust_pajamax", "--ratio", "0"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip() == ("report.py: error: --ratio must be a positive number, e.g. 9.5 "
                                                          "(got 0)")
