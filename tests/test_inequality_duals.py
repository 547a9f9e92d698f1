"""``dual_value`` of affine inequalities as CVXPY gives it, checked against CVXPY + Clarabel.

``fm.max(e) <= t`` is compiled to ``e <= t`` entrywise; its ``dual_value``
is CVXPY's one multiplier of the constraint as written (the sum of the
entries', by the maximum's subgradient), with CVXPY's ``shape``. Bounds that
become a box (``x <= hi``, ``x >= lo``, single-entry rows of ``G @ x <= h``)
get their multipliers from the block that holds them (a box, a boxed L1
ball, a simplex or capped simplex), assembled with the slack rows'
multipliers in the constraint's shape.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-8, feas_tol=1e-8, max_iter=100000)
RTOL, ATOL = 1e-3, 1e-4

rng = np.random.default_rng(1)
C = rng.standard_normal(5) + 1
A = rng.standard_normal((3, 5))
G = np.vstack([A, np.eye(5)[[0, 2]]])  # three general rows and two single-entry rows (bounds)
H = np.concatenate([np.full(3, 0.3), [0.1, 0.2]])


def both(build):
    """Solve the model with fwmodel and with CVXPY + Clarabel; the checked constraints of each."""
    out = []
    for m in (fm, cp):
        x, X, Y = m.Variable(5), m.Variable((3, 3), symmetric=True), m.Variable((3, 4))
        objective, constraints, checked = build(m, x, X, Y)
        prob = m.Problem(m.Minimize(objective), constraints)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL
        else:
            with warnings.catch_warnings():  # CVXPY's note on its canonicalization backend
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=cp.CLARABEL)
            assert prob.status == cp.OPTIMAL
        out.append((prob.value, checked))
    (value, ours), (ref, theirs) = out
    assert abs(value - ref) <= 1e-5 * max(1.0, abs(ref))
    return ours, theirs


def assert_duals_match(ours, theirs):
    for mine, ref in zip(ours, theirs):
        assert mine.dual_value is not None, mine
        assert np.shape(mine.dual_value) == np.shape(ref.dual_value) == tuple(mine.shape), (mine, mine.dual_value)
        np.testing.assert_allclose(mine.dual_value, ref.dual_value, rtol=RTOL, atol=ATOL)


EXTREMA = {
    "max, boxed L1": lambda m, x, X, Y: (m.sum_squares(x - C), [m.norm1(x) <= 3, k := m.max(x) <= 0.5], [k]),
    "max, box": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= -2, k := m.max(x) <= 0.5], [k]),
    "max, nonneg": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, k := m.max(x) <= 0.5], [k]),
    "max, slack rows": lambda m, x, X, Y: (m.sum_squares(x - C), [m.norm(x, 2) <= 3, k := m.max(A @ x) <= 0.5], [k]),
    "max, capped simplex": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, m.sum(x) == 1, k := m.max(x) <= 0.3],
                                            [k]),
    "max, inactive": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, m.sum(x) == 1, k := m.max(x) <= 1.0], [k]),
    "min": lambda m, x, X, Y: (m.sum_squares(x + C), [m.norm(x, 2) <= 3, k := m.min(x) >= -0.5], [k]),
    "t <= min": lambda m, x, X, Y: (m.sum_squares(x + C), [x <= 2, k := -0.5 <= m.min(x)], [k]),
    "max axis 1": lambda m, x, X, Y: (m.sum_squares(Y - 1), [m.norm(Y, "fro") <= 3,
                                                            k := m.max(Y, axis=1) <= np.array([0.2, 0.5, 2.0])], [k]),
    "max axis 0": lambda m, x, X, Y: (m.sum_squares(Y - np.arange(4)), [m.norm(Y, "fro") <= 5,
                                                                       k := m.max(Y, axis=0) <= 1.5], [k]),
    "max axis 1 keepdims": lambda m, x, X, Y: (m.sum_squares(Y - np.arange(4)), [m.norm(Y, "fro") <= 5,
                                                                                k := m.max(Y, axis=1, keepdims=True)
                                                                                <= 1.5], [k]),
}


@pytest.mark.parametrize("name", list(EXTREMA))
def test_extremum_bounds_have_cvxpys_dual_value(name):
    ours, theirs = both(EXTREMA[name])
    assert_duals_match(ours, theirs)


def test_max_dual_value_is_the_sum_of_the_entries_multipliers():
    """max(x) <= t and x <= t (entrywise) are the same set: the first's multiplier is the sum of the second's."""
    ours, _ = both(EXTREMA["max, box"])
    entrywise, _ = both(lambda m, x, X, Y: (m.sum_squares(x - C), [x >= -2, k := x <= 0.5], [k]))
    assert ours[0].shape == () and isinstance(ours[0].dual_value, float)
    np.testing.assert_allclose(ours[0].dual_value, entrywise[0].dual_value.sum(), rtol=1e-9)
    assert ours[0].dual_value > 1.0  # the bound binds (three entries of C are above 0.5)


BOUNDS = {
    "box rows": lambda m, x, X, Y: (m.sum_squares(x - C), [k1 := x <= 0.5, k2 := x >= -0.2, k3 := x[1] <= 0.3],
                                 [k1, k2, k3]),
    "scaled bound": lambda m, x, X, Y: (m.sum_squares(x - C), [k := 2 * x <= 1, x >= -1], [k]),
    "mixed rows, ball": lambda m, x, X, Y: (m.sum_squares(x - C), [m.norm(x, 2) <= 3, k := G @ x <= H], [k]),
    "mixed rows, box": lambda m, x, X, Y: (m.sum_squares(x - C), [x <= 1, x >= -1, k := G @ x <= H], [k]),
    "simplex floor": lambda m, x, X, Y: (m.sum_squares(x - C), [k := x >= 0, e := m.sum(x) == 1], [k, e]),
    "capped simplex": lambda m, x, X, Y: (m.sum_squares(x - C), [k := x >= 0, e := m.sum(x) == 1, k2 := x <= 0.3],
                                       [k, e, k2]),
    "symmetric box": lambda m, x, X, Y: (m.sum_squares(X - 1) + m.sum_squares(x),
                                      [k := X <= 0.5, X >= -1, m.norm(x, 2) <= 1], [k]),
}


@pytest.mark.parametrize("name", list(BOUNDS))
def test_bounds_that_become_a_box_have_cvxpys_dual_value(name):
    ours, theirs = both(BOUNDS[name])
    assert_duals_match(ours, theirs)


BUDGETS = {
    "sum(x) <= 1, active": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, k := m.sum(x) <= 1], [k]),
    "sum(x) <= 10, slack": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, k := m.sum(x) <= 10], [k]),
    "2 sum(x) <= 1 and floors": lambda m, x, X, Y: (m.sum_squares(x - C), [k1 := x >= 0, k := 2 * m.sum(x) <= 1],
                                                    [k, k1]),
    "sum(x) <= 1 with caps": lambda m, x, X, Y: (m.sum_squares(x - C), [x >= 0, k := m.sum(x) <= 1, k2 := x <= 0.3],
                                                 [k, k2]),
    "a budget row among general rows": lambda m, x, X, Y: (
        m.sum_squares(x - C), [x >= 0, k := np.vstack([np.ones(5), np.eye(5)[0] - np.eye(5)[1]]) @ x
                               <= np.array([1.0, -0.2])], [k]),
}


@pytest.mark.parametrize("name", list(BUDGETS))
def test_a_budget_row_that_became_a_simplex_has_cvxpys_dual_value(name):
    """sum(x) <= t with x >= 0 is a simplex (equality=False), without a row: its multiplier (was None, or a
    partial array of the other rows' multipliers) comes from the simplex block's KKT conditions."""
    ours, theirs = both(BUDGETS[name])
    assert_duals_match(ours, theirs)
