"""conftest.linear_fit and r_squared against figures worked out by hand from small inputs."""
from __future__ import annotations

import math

import pytest

from conftest import LinearFit, linear_fit, r_squared


def test_points_on_a_line_give_that_line_and_r2_one():
    f = linear_fit([0, 2, 4, 8], [1, 5, 9, 17])         # y = 2x + 1
    assert (f.slope, f.intercept, f.r2, f.n) == (pytest.approx(2), pytest.approx(1), pytest.approx(1), 4)
    assert f.predict(10) == pytest.approx(21)


def test_a_scattered_set_by_hand():
    # x = 1 2 3 4, y = 2 3 5 6: mean x 2.5, mean y 4
    # Sxy = (-1.5)(-2) + (-0.5)(-1) + (0.5)(1) + (1.5)(2) = 3 + 0.5 + 0.5 + 3 = 7
    # Sxx = 2.25 + 0.25 + 0.25 + 2.25 = 5  ->  slope 7/5 = 1.4, intercept 4 - 1.4*2.5 = 0.5
    # fitted 1.9 3.3 4.7 6.1, residuals 0.1 -0.3 0.3 -0.1: SS_res = 0.01+0.09+0.09+0.01 = 0.2
    # SS_tot = 4 + 1 + 1 + 4 = 10  ->  R² = 1 - 0.2/10 = 0.98
    f = linear_fit([1, 2, 3, 4], [2, 3, 5, 6])
    assert f.slope == pytest.approx(1.4)
    assert f.intercept == pytest.approx(0.5)
    assert f.r2 == pytest.approx(0.98)


def test_a_negative_slope():
    f = linear_fit([0, 1, 2], [10, 7, 4])                # y = -3x + 10
    assert (f.slope, f.intercept, f.r2) == (pytest.approx(-3), pytest.approx(10), pytest.approx(1))


def test_no_relation_gives_r2_zero():
    # x = 0 1 2 3 4, y = 1 -1 0 -1 1 is symmetric about x = 2: Sxy = 0, slope 0, intercept = mean y = 0,
    # so the line is the mean and explains nothing.
    f = linear_fit([0, 1, 2, 3, 4], [1, -1, 0, -1, 1])
    assert f.slope == pytest.approx(0, abs=1e-12)
    assert f.intercept == pytest.approx(0, abs=1e-12)
    assert f.r2 == pytest.approx(0, abs=1e-12)


def test_repeated_x_values_are_fitted_as_points():
    # two points at x=0 (1 and 3, mean 2) and two at x=2 (5 and 7, mean 6): the line through the means,
    # y = 2x + 2; SS_res = 4·1 = 4, SS_tot = 9+1+1+9 = 20 -> R² = 0.8
    f = linear_fit([0, 0, 2, 2], [1, 3, 5, 7])
    assert (f.slope, f.intercept, f.r2) == (pytest.approx(2), pytest.approx(2), pytest.approx(0.8))


def test_r_squared_of_a_given_line():
    assert r_squared([1, 2, 3, 4], [2, 3, 5, 6], 1.4, 0.5) == pytest.approx(0.98)
    # the mean line explains nothing, a worse line less than nothing
    assert r_squared([1, 2, 3, 4], [2, 3, 5, 6], 0, 4) == pytest.approx(0)
    assert r_squared([1, 2], [0, 2], 0, 0) == pytest.approx(1 - 4 / 2)


def test_constant_y_has_no_r2():
    f = linear_fit([1, 2, 3], [5, 5, 5])
    assert f.slope == 0 and f.intercept == 5
    assert math.isnan(f.r2)


@pytest.mark.parametrize("xs, ys, message", [
    ([1], [1], "at least two points"),
    ([1, 2], [1], "2 x values but 1 y values"),
    ([3, 3, 3], [1, 2, 3], "two different values"),
])
def test_unfittable_input_is_refused(xs, ys, message):
    with pytest.raises(ValueError, match=message):
        linear_fit(xs, ys)


def test_str_names_the_line_and_its_r2():
    assert str(LinearFit(2.0, -1.5, 0.987, 4)) == "y = 2·x - 1.5 (R² 0.987, 4 points)"
