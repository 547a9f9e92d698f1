"""Rows in other units than the variables: the same statuses as CVXPY + Clarabel on the unit model.

The feasibility scale and the infeasibility certificate measure the points
in the rows' units (engine/stopping.py ``RowUnits``): an infeasible model
whose rows alone are in tiny units is certified infeasible, and a feasible
one is "optimal" only with its rows met relative to their own size.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm

UNITS = [(1.0, 1.0), (1e-6, 1.0), (1e6, 1.0), (1.0, 1e-6), (1.0, 1e6), (1e-6, 1e-6), (1e6, 1e-6), (1e-6, 1e6)]


def _set(lib, kind, x, s_x):
    mod = fm if lib == "fm" else cp
    if kind == "l1":
        return [mod.norm1(x) <= s_x]
    if kind == "simplex":
        return [x >= 0, mod.sum(x) == s_x]
    return [x >= -0.5 * s_x, x <= s_x]  # box


def _range_of_rows(kind, G):
    """(min, max) of G_i x over the unit set, per row (closed forms)."""
    if kind == "l1":
        top = np.abs(G).max(axis=1)
        return -top, top
    if kind == "simplex":
        return G.min(axis=1), G.max(axis=1)
    top = np.maximum(G, 0).sum(axis=1) - 0.5 * np.minimum(G, 0).sum(axis=1)
    low = np.minimum(G, 0).sum(axis=1) - 0.5 * np.maximum(G, 0).sum(axis=1)
    return low, top


def _model(kind, rows, rhs, G, c):
    def build(lib, s_rows, s_x):
        n = G.shape[1]
        x = fm.Variable(n, name="x") if lib == "fm" else cp.Variable(n)
        mod = fm if lib == "fm" else cp
        cons = _set(lib, kind, x, s_x)
        lhs = (s_rows * G) @ x
        cons.append(lhs <= s_rows * s_x * rhs if rows == "ineq" else lhs == s_rows * s_x * rhs)
        return mod.Minimize(mod.sum_squares(x - s_x * c)), cons, x
    return build


def _clarabel(build):
    obj, cons, x = build("cp", 1.0, 1.0)
    prob = cp.Problem(obj, cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.status, prob.value, x.value


@pytest.mark.parametrize("kind", ["l1", "simplex", "box"])
@pytest.mark.parametrize("rows", ["ineq", "eq"])
def test_infeasible_rows_in_any_units(kind, rows):
    """Rows half their range beyond what the set allows: "infeasible", as Clarabel says, whether the rows,
    the variable or both are in units of 1e-6 or 1e6 (before the rows' units counted: max_iter where the
    rows alone were 1e-6 times the variable's units)."""
    rng = np.random.default_rng(3)
    G = rng.standard_normal((2, 15))
    low, top = _range_of_rows(kind, G)
    build = _model(kind, rows, low - 0.5 * (top - low), G, rng.standard_normal(15))
    assert _clarabel(build)[0] == cp.INFEASIBLE
    for s_rows, s_x in UNITS:
        obj, cons, _ = build("fm", s_rows, s_x)
        prob = fm.Problem(obj, cons)
        prob.solve(max_iter=2000)
        assert prob.status == fm.INFEASIBLE, (s_rows, s_x, prob.status)


@pytest.mark.parametrize("kind", ["l1", "simplex", "box"])
@pytest.mark.parametrize("rows", ["ineq", "eq"])
def test_rows_at_the_edge_of_the_set_are_not_infeasible(kind, rows):
    """Feasible only on a face of the set (the rows pass through the vertex where row 0 is smallest):
    bounds of the certificate are 0 up to rounding there, and no units make the model "infeasible";
    it ends "optimal" near Clarabel's optimum."""
    rng = np.random.default_rng(5)
    n = 12
    G = rng.standard_normal((1, n))
    if kind == "l1":
        v = np.zeros(n)
        j = int(np.argmax(np.abs(G[0])))
        v[j] = -np.sign(G[0, j])
    elif kind == "simplex":
        v = np.zeros(n)
        v[int(np.argmin(G[0]))] = 1.0
    else:
        v = np.where(G[0] > 0, -0.5, 1.0)
    c = rng.standard_normal(n)
    build = _model(kind, rows, G @ v, G, c)
    status, f_ref, _ = _clarabel(build)
    assert status == cp.OPTIMAL
    for s_rows, s_x in UNITS:
        obj, cons, x = build("fm", s_rows, s_x)
        prob = fm.Problem(obj, cons)
        prob.solve(max_iter=20000)
        assert prob.status != fm.INFEASIBLE, (s_rows, s_x)
        if prob.status == fm.OPTIMAL:
            assert prob.value / s_x ** 2 == pytest.approx(f_ref, rel=2e-3, abs=1e-3)


@pytest.mark.parametrize("s_rows", [1.0, 1e-6, 1e6])
def test_feasibility_problem_with_rows_in_tiny_units_meets_its_rows(s_rows):
    """A constant objective (test (3) alone decides): with the rows in units 1e-6 of the variable's, the
    solve stopped "optimal" at its starting point x = 0 with ``A x = b`` violated by all of ||b||. Now the
    rows hold to what they hold in unit units: within 1e-3 of ||b|| at the point returned (Clarabel: the
    model is feasible)."""
    rng = np.random.default_rng(0)
    n = 20
    A = rng.standard_normal((2, n))
    x0 = rng.standard_normal(n)
    x0 *= 0.5 / np.abs(x0).sum()
    b = A @ x0
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(0), [cp.norm1(xc) <= 1, A @ xc == b])
    ref.solve(solver=cp.CLARABEL)
    assert ref.status == cp.OPTIMAL
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(0 * fm.sum(x)), [fm.norm1(x) <= 1, (s_rows * A) @ x == s_rows * b])
    prob.solve()
    assert prob.status == fm.OPTIMAL
    assert np.linalg.norm(A @ x.value - b) <= 1e-3 * np.linalg.norm(b)


@pytest.mark.parametrize("s_rows, s_x", UNITS)
def test_feasible_rows_in_any_units_reach_clarabels_optimum(s_rows, s_x):
    """Inequality and equality rows through an interior point, L1 ball: "optimal" in every units, within
    1e-3 of Clarabel's optimum (relative), and the rows met to 1e-3 of their own size."""
    rng = np.random.default_rng(7)
    n = 18
    G = rng.standard_normal((2, n))
    A = rng.standard_normal((1, n))
    x0 = rng.standard_normal(n)
    x0 *= 0.5 / np.abs(x0).sum()
    h, b = G @ x0 + 0.01, A @ x0
    c = rng.standard_normal(n)

    def build(lib, sr, sx):
        mod = fm if lib == "fm" else cp
        x = fm.Variable(n, name="x") if lib == "fm" else cp.Variable(n)
        cons = [mod.norm1(x) <= sx, (sr * G) @ x <= sr * sx * h, (sr * A) @ x == sr * sx * b]
        return mod.Minimize(mod.sum_squares(x - sx * c)), cons, x

    status, f_ref, _ = _clarabel(build)
    assert status == cp.OPTIMAL
    obj, cons, x = build("fm", s_rows, s_x)
    prob = fm.Problem(obj, cons)
    prob.solve()
    assert prob.status == fm.OPTIMAL
    assert prob.value / s_x ** 2 == pytest.approx(f_ref, rel=1e-3)
    xu = x.value / s_x
    size = np.abs(np.vstack([G, A])) @ np.abs(xu)
    assert np.all(np.maximum(G @ xu - h, 0) <= 1e-3 * size[:2])
    assert np.all(np.abs(A @ xu - b) <= 1e-3 * size[2:])


def _scale(rows_factor, x_factor):
    """The feasibility scale of a model at its cold starting point (rows and variable scaled)."""
    rng = np.random.default_rng(2)
    n = 10
    G = rng.standard_normal((3, n))
    c = rng.standard_normal(n)
    x = fm.Variable(n, name="x")
    cons = [fm.L1Ball(x, x_factor), (rows_factor * G) @ x == rows_factor * x_factor * np.full(3, 0.1)]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - x_factor * c)), cons)
    prob.solve(max_iter=0)  # no step: the scale of the cold starting point x_ref and its LMO vertex
    return prob.stats.feasibility_scale, G, c


def test_feasibility_scale_follows_the_variables_units_and_not_the_rows():
    """The rows are brought to unit norm before the solve (engine/stopping.py ``row_norm_equilibration``, a
    single group of rows too), so the rows written times any factor give the scale of the unit-norm rows;
    scaling the variable and its set by s scales it by s. At the cold point x_ref = 0 the scale is the
    largest of ||b||, ||M x_ref|| and the points' norms counted in the rows' units (stopping.RowUnits),
    here ||b|| of the unit-norm rows: the LMO's vertex s_ref (the set's extent) no longer counts."""
    base, G, c = _scale(1.0, 1.0)
    norms = np.linalg.norm(G, axis=1)
    assert base == pytest.approx(np.linalg.norm(0.1 / norms), rel=1e-12)
    for factor in (1e-2, 1e-6, 1e-9, 1e3):
        assert _scale(factor, 1.0)[0] == pytest.approx(base, rel=1e-9)
    for s in (1e-6, 1e6):
        assert _scale(1e-6, s)[0] == pytest.approx(s * base, rel=1e-9)
        assert _scale(1.0, s)[0] == pytest.approx(s * base, rel=1e-9)


@pytest.mark.parametrize("second", ["none", "box"])
def test_infeasible_tiny_rows_next_to_unit_rows_are_not_optimal(second):
    """x in an L1 ball, rows ``(1e-6 G) @ x <= 1e-6 h`` that the ball cannot meet (Clarabel: infeasible on
    the unit model), and optionally a second set on x (a Box, whose copy is tied to the first by rows of
    coefficient 1). The starting point x = 0 minimizes the objective and its residual is of size 1e-6:
    before, the solve stopped "optimal" at iteration 0 (the tie rows keep the feasibility scale in x's
    units). Now "infeasible" (the LMOs prove the sets apart from the rows at the point that would stop)."""
    rng = np.random.default_rng(3)
    n = 15
    G = rng.standard_normal((2, n))
    h = -2 * np.abs(G).max(axis=1)
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xc)), [cp.norm1(xc) <= 1, G @ xc <= h])
    ref.solve(solver=cp.CLARABEL)
    assert ref.status == cp.INFEASIBLE
    x = fm.Variable(n, name="x")
    cons = [fm.norm1(x) <= 1, (1e-6 * G) @ x <= 1e-6 * h] + ([fm.Box(x, -1, 1)] if second == "box" else [])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), cons)
    prob.solve(max_iter=2000)
    assert prob.status == fm.INFEASIBLE
