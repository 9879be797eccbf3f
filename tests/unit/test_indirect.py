"""analyze/indirect.py: the slope with its interval, the record, and the figures made from it (the gap's
sentence: report/mechanism.py)."""
import json

import pytest

from rpcprof.analyze.indirect import IndirectCost, Slope, load_indirect, ruler_expectation, slope_interval
from rpcprof.errors import UserError
from rpcprof.analyze.indirect import slowed_by_writes
from rpcprof.report.mechanism import slowed_text


def cost(user=(0.9, 0.5, 1.3), ruler=(0.02, 0.01, 0.03)):
    return IndirectCost(Slope(*user, 0.0, 15), Slope(*ruler, 0.12, 15) if ruler else None, {}, "rec.json")


def test_points_on_a_line_give_its_slope_with_no_width():
    s = slope_interval([0, 1, 2, 3, 4], [1.0, 3.0, 5.0, 7.0, 9.0])
    assert (s.slope, s.intercept, s.n) == (pytest.approx(2.0), pytest.approx(1.0), 5)
    assert s.low == pytest.approx(2.0) and s.high == pytest.approx(2.0)


def test_the_interval_is_the_t_interval_of_the_least_squares_slope():
    xs, ys = [0, 1, 2, 3, 0, 1, 2, 3], [0.1, 0.9, 2.2, 2.9, -0.1, 1.1, 1.8, 3.1]
    s = slope_interval(xs, ys)
    # by hand: Sxx = 10, residual SS from the fitted line, t(6) = 2.447
    slope = sum((x - 1.5) * y for x, y in zip(xs, ys)) / 10
    icpt = sum(ys) / 8 - slope * 1.5
    se = (sum((y - icpt - slope * x) ** 2 for x, y in zip(xs, ys)) / 6 / 10) ** 0.5
    assert s.slope == pytest.approx(slope)
    assert s.high - s.slope == pytest.approx(2.447 * se, rel=1e-3)
    assert s.low < 1.0 < s.high


def test_a_slope_needs_three_points_and_x_that_varies():
    with pytest.raises(ValueError):
        slope_interval([0, 1], [0, 1])
    with pytest.raises(ValueError):
        slope_interval([1, 1, 1], [0, 1, 2])


def test_the_user_cost_scales_with_the_extra_syscalls():
    s = slowed_by_writes(cost(), 3.0, 1.0, "a", "b")
    assert (s.more, s.extra) == ("a", 2.0) and (s.us, s.low, s.high) == pytest.approx((1.8, 1.0, 2.6))


def test_the_expected_ruler_ratio_grows_with_the_syscalls_difference():
    # base ruler 0.12 µs/req; other makes 1 syscall/req more: 0.14 / 0.12, times the CPU ratio 0.5
    row = {"ratio": 0.58, "ratio_low": 0.55, "ratio_high": 0.6, "profiled_ratio": 0.5}
    out = ruler_expectation(cost(), row, {"us_per_req": 0.12}, 0.1, 1.1)
    assert out["expected_ratio"] == pytest.approx(0.14 / 0.12 * 0.5)
    assert (out["expected_low"], out["expected_high"]) == (pytest.approx(0.13 / 0.12 * 0.5),
                                                           pytest.approx(0.15 / 0.12 * 0.5))
    assert ruler_expectation(cost(ruler=None), row, {"us_per_req": 0.12}, 0.1, 1.1)["expected_ratio"] is None


def test_a_measured_ratio_outside_the_expected_one_is_not_in_agreement():
    base = {"us_per_req": 0.12}
    row = {"ratio": 0.9, "ratio_low": 0.85, "ratio_high": 0.95, "profiled_ratio": 0.5, "measured_ratio": 0.5}
    assert ruler_expectation(cost(), row, base, 0.1, 1.1)["expected_agrees"] is False
    row.update(ratio=0.58, ratio_low=0.55, ratio_high=0.6)
    out = ruler_expectation(cost(), row, base, 0.1, 1.1)
    assert out["expected_agrees"] is True and out["expected_key"] == "rec.json: ruler_us_per_syscall"
    assert ruler_expectation(cost(), row, base, None, 1.1)["expected_ratio"] is None


def test_the_gap_sentence_names_the_server_that_writes_more_and_the_figure():
    text = slowed_text(slowed_by_writes(cost(), 0.02, 1.02, "pajamax", "tonic"))
    assert "~0.90 µs/req [0.50-1.30] is user code in tonic slowed by the extra writes" in text
    assert "1.00 more write syscalls/req than pajamax" in text and "inferred, not counted" in text


def record(tmp_path, data) -> str:
    path = tmp_path / "rec.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("data, says", [("{", "not JSON"), ({"other": 1}, "no user_us_per_syscall"),
                                        ({"user_us_per_syscall": {"slope": 1}}, "not a slope")])
def test_a_bad_record_is_one_line_naming_the_file(tmp_path, data, says):
    with pytest.raises(UserError) as e:
        load_indirect(record(tmp_path, data))
    assert says in str(e.value) and "rec.json" in str(e.value) and "\n" not in str(e.value)


def test_a_missing_record_says_which_option_gives_one(tmp_path):
    with pytest.raises(UserError, match="--indirect"):
        load_indirect(tmp_path / "none.json")


def test_the_committed_record_loads_with_its_provenance():
    from rpcprof.paths import INDIRECT_COST
    c = load_indirect(INDIRECT_COST)
    data = json.loads(INDIRECT_COST.read_text())
    assert c.source == "docs/data/indirect-syscall-cost.json"
    assert c.user.low <= c.user.slope <= c.user.high and c.ruler is not None
    assert {"command", "commit", "machine", "date", "points"} <= set(data)
    # the figure is the fit of its own points, not a number typed in
    pts = data["points"]
    again = slope_interval([p["writes_per_req"] for p in pts], [p["user"] for p in pts])
    assert again.slope == pytest.approx(c.user.slope) and again.high == pytest.approx(c.user.high)
    assert all(p["user"] == pytest.approx(p["protocol"] + p["runtime"] + p["app"]) for p in pts)
