"""analyze/significance.py: Student's t (scipy.stats), the paired and Welch tests
across rounds, Benjamini-Hochberg, and the tree of boxes with its tests."""
from __future__ import annotations

import random

import pytest

from reference_statistics import T975
from rpcprof.analyze.significance import (FrameTree, Gap, benjamini_hochberg, bh_adjusted, boxes_to_test,
                                          frame_tests, paired_gap, t_quantile, t_two_sided_p, welch_gap)


@pytest.mark.parametrize("df", range(1, 31))
def test_the_t_quantile_is_the_tables(df):
    """The 0.975 quantile is the t table's (3 decimals)."""
    assert t_quantile(df) == pytest.approx(T975[df - 1], abs=1.5e-3)
    assert t_two_sided_p(T975[df - 1], df) == pytest.approx(0.05, abs=1e-3)


def test_t_p_values_at_known_points():
    assert t_two_sided_p(0.0, 4) == 1.0
    assert t_two_sided_p(1.0, 1) == pytest.approx(0.5)                 # Cauchy: P(|T| >= 1) = 1/2
    assert t_two_sided_p(-2.0, 2) == pytest.approx(1 - 2 / 6 ** 0.5)    # df 2: closed form 1 - t/sqrt(2 + t^2)


def test_a_paired_gap_uses_the_rounds_both_measured():
    g = paired_gap({1: 1.0, 2: 2.0, 3: 3.0, 4: 9.0}, {1: 2.0, 2: 3.1, 3: 3.9})
    assert g.n_a == g.n_b == 3 and g.delta == pytest.approx(1.0)
    assert g.significant and g.mark() == "*" and g.test == "paired t"


def test_a_gap_whose_interval_contains_zero_is_marked_not_significant():
    g = welch_gap([1.0, 2.0, 3.0], [1.5, 2.5, 2.0])
    assert g.half > abs(g.delta) and g.significant is False and g.mark() == "n.s."
    assert g.as_dict()["significant"] is False


def test_one_round_gives_no_interval_and_no_mark():
    g = welch_gap([1.0], [2.0, 3.0])
    assert g.half is None and g.p is None and g.significant is None and g.mark() == ""


def test_welch_gap_matches_a_hand_computation():
    # a: mean 2, var 1; b: mean 6.1667, var 1.5833; se^2 = 1/3 + 1.5833/3; df (Welch-Satterthwaite) 3.81
    g = welch_gap([1.0, 2.0, 3.0], [5.0, 6.0, 7.5])
    assert g.delta == pytest.approx(4.1667, abs=1e-4)
    assert g.p == pytest.approx(0.0122, abs=5e-4)


def test_no_spread_and_no_difference_is_not_significant():
    assert paired_gap({1: 2.0, 2: 2.0}, {1: 2.0, 2: 2.0}).p == 1.0


def test_benjamini_hochberg_step_up():
    # sorted: 0.01 <= 1/4·0.05; 0.03 > 2/4·0.05 = 0.025; 0.04 > 0.0375; 0.5 > 0.05
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.5]) == [True, False, False, False]
    # step-up: the third smallest passes (0.03 <= 3/4 · 0.05), so the second passes with it
    assert benjamini_hochberg([0.001, 0.036, 0.03, 0.9]) == [True, True, True, False]
    assert bh_adjusted([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])


def test_under_no_difference_about_5_percent_of_welch_tests_reject_and_bh_almost_none():
    """3 rounds against 3 of the same normal figure, 400 boxes: the uncorrected test rejects about 5 %
    of them, Benjamini-Hochberg at 5 % (almost always) none."""
    rng = random.Random(7)
    pvalues = [welch_gap([rng.gauss(10, 1) for _ in range(3)], [rng.gauss(10, 1) for _ in range(3)]).p
               for _ in range(400)]
    uncorrected = sum(p < 0.05 for p in pvalues)
    assert 8 <= uncorrected <= 35
    assert sum(benjamini_hochberg(pvalues)) < uncorrected


def test_the_tree_adds_inclusive_weights_and_tests_only_boxes_thick_enough():
    tree = FrameTree()
    for k in (1, 2, 3):
        tree.add(("A", k), [(["main", "a"], 10 + k), (["main", "b"], 90 - k)])
        tree.add(("B", k), [(["main", "a"], 30 + k), (["main", "b"], 70 - k), (["main", "c"], 0)])
    main = tree.children[0]["main"]
    a_node = tree.children[main]["a"]
    assert tree.path(a_node) == ["main", "a"] and tree.weights[main][("A", 2)] == 100
    totals = {(s, k): 100 for s in "AB" for k in (1, 2, 3)}
    kept = boxes_to_test(tree, totals, 0.05)
    assert set(kept) == {main, a_node, tree.children[main]["b"]}       # c has no weight
    scales = {s: {k: ((s, k), 100, 100, 1.0) for k in (1, 2, 3)} for s in "AB"}
    tests = {t.node: t for t in frame_tests(tree, scales["A"], scales["B"], True, kept)}
    assert tests[a_node].discovery and tests[a_node].gap.delta == pytest.approx(0.2)
    assert tests[main].gap.p == 1.0 and not tests[main].discovery          # main is every sample on both sides


def test_gap_is_a_value():
    assert Gap(1.0, 0.5, 0.01, "Welch t", 3, 3).significant is True
