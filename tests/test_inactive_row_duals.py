"""Complementary slackness for the rows of ``G @ x <= h`` that a solution leaves clearly slack: their
``dual_value`` is 0, in any units the rows are written in (1, 1e-6, 1e6), checked against CVXPY + Clarabel.

A row's multiplier is its slack row's ``y + lam (M x - b)``; where the row is inactive that is noise at the
solve's tolerance, which the row's units multiply (a row written times 1e-6 showed -4.8 and -13.8 where
Clarabel gives 0). Clarabel's absolute tolerances make it solve the model written in 1e-6 units loosely
(value 2e-2 off, the binding row's multiplier wrong), so the binding row's reference is the multiplier of the
model in unit scale over the units (the rows times s have multiplier lambda / s: an identity), and the
inactive rows' is Clarabel's on the scaled model itself.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

from _against_clarabel import DUAL_ATOL, DUAL_RTOL, OBJ_RTOL, TIGHT, X_ATOL  # noqa: E402, I001

N = 6


def _data(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N), rng.standard_normal((3, N)), np.array([-0.3, 5.0, 0.2])


def _solve(m, seed, units, **options):
    c, G, h = _data(seed)
    x = m.Variable(N)
    rows = units * (G @ x) <= units * h
    prob = m.Problem(m.Minimize(c @ x + 0.5 * m.sum_squares(x)), [rows, m.abs(x) <= 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(**options)
    return prob, x, rows


@pytest.mark.parametrize("units", [1.0, 1e-6, 1e6])
@pytest.mark.parametrize("seed,tight", [(2, False), (2, True), (0, False), (4, True)])
def test_inactive_rows_get_zero_and_binding_rows_keep_their_multiplier(units, seed, tight):
    """seed 2: all three rows slack (the first by 0.34); seed 0: the first binds, two slack; seed 4: two bind."""
    prob, x, rows = _solve(fm, seed, units, **(TIGHT if tight else {}))
    assert prob.status == "optimal"
    ref, ref_x, ref_rows = _solve(cp, seed, 1.0, solver=cp.CLARABEL)  # the unit-scale model: the reference
    scaled, _, scaled_rows = _solve(cp, seed, units, solver=cp.CLARABEL)
    tol = dict(rtol=1e-3, atol=1e-3) if not tight else dict(rtol=DUAL_RTOL, atol=DUAL_ATOL)
    assert abs(prob.value - ref.value) <= (OBJ_RTOL if tight else 1e-3) * max(1.0, abs(ref.value))
    np.testing.assert_allclose(x.value, ref_x.value, atol=X_ATOL if tight else 1e-2)
    c, G, h = _data(seed)
    slack = h - G @ ref_x.value
    inactive = slack > 1e-2
    assert np.any(inactive)
    # the inactive rows: 0, as Clarabel's on the model in these units
    assert np.all(rows.dual_value[inactive] == 0.0)
    np.testing.assert_allclose(rows.dual_value[inactive], scaled_rows.dual_value[inactive], atol=1e-3)
    # the binding rows keep their multiplier, in the rows' units: the unit model's over the units
    binding = ~inactive
    np.testing.assert_allclose(rows.dual_value[binding] * units, ref_rows.dual_value[binding], **tol)
    if np.any(binding):
        assert np.all(rows.dual_value[binding] * units > 1e-2)


def test_a_row_just_inside_its_bound_keeps_its_multiplier():
    """A row that binds at the optimum (slack 0) but whose iterate stops a tolerance inside it is not zeroed:
    only slack beyond 100 times the feasibility tolerance counts as inactive (at the loose default
    tolerances, where the iterate is farthest from the binding face)."""
    for units in (1.0, 1e-6, 1e6):
        prob, x, rows = _solve(fm, 0, units, tol=1e-3, feas_tol=1e-3)
        ref, _, ref_rows = _solve(cp, 0, 1.0, solver=cp.CLARABEL)
        assert ref_rows.dual_value[0] > 0.05
        assert rows.dual_value[0] * units == pytest.approx(ref_rows.dual_value[0], rel=0.05)
