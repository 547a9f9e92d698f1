"""``dual_value`` where a solve stops within its tolerances, where the compiler shares a constraint's multiplier
with a set it derived, and after a solve that ends on the data alone: a value that matches CVXPY + Clarabel's,
or None (never a wrong number)."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def test_boxed_l1_duals_of_binding_constraints_when_the_solve_stops_just_inside():
    """The solve stops 2-3e-8 inside both bounds: read as slack, both duals were 0 (CVXPY 0.839 and 0.662)."""
    rng = np.random.default_rng(13)
    n, m = 5, 7
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    rng.standard_normal((2, n)), rng.standard_normal(2)
    r, t = float(rng.uniform(0.3, 2)), float(rng.uniform(-0.3, 0.5))
    x = fm.Variable(n)
    cons = [fm.max(x) <= t, fm.norm1(x) <= 3 * r]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), cons)
    prob.solve()
    assert [type(blk.set).__name__ for blk in prob.compile().blocks] == ["BoxedL1Ball"]
    z = cp.Variable(n)
    ref = [cp.max(z) <= t, cp.norm1(z) <= 3 * r]
    cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), ref).solve(solver=cp.CLARABEL)
    assert float(np.sum(cons[0].dual_value)) == pytest.approx(float(ref[0].dual_value), rel=1e-3)
    assert cons[1].dual_value == pytest.approx(float(ref[1].dual_value), rel=1e-3)


def test_boxed_l1_dual_of_a_ball_the_solve_ends_just_inside():
    """Nonnegative entries under an L1 budget, log-sum-exp: the point ends 7e-6 (relative) inside the ball, and
    the gradient on the support pins the multiplier (it was reported 0)."""
    rng = np.random.default_rng(1)
    n, m = int(rng.integers(2, 8)), int(rng.integers(2, 10))
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    rng.choice(5), rng.choice(6), rng.choice(4)
    r = float(rng.uniform(0.2, 3.0))
    x = fm.Variable(n, nonneg=True)
    ball = fm.norm1(x) <= r
    fm.Problem(fm.Minimize(fm.log_sum_exp(A @ x)), [ball]).solve()
    z = cp.Variable(n)
    ref = cp.norm1(z) <= r
    cp.Problem(cp.Minimize(cp.log_sum_exp(A @ z)), [ref, z >= 0]).solve(solver=cp.CLARABEL)
    assert ball.dual_value == pytest.approx(float(ref.dual_value), rel=1e-3)


def test_no_dual_values_from_an_earlier_solve_after_data_empty_a_set():
    rng = np.random.default_rng(0)
    n = 4
    A, b = rng.standard_normal((6, n)), rng.standard_normal(6)
    r, lo = fm.Parameter(nonneg=True), fm.Parameter(n)
    x = fm.Variable(n)
    cons = [fm.norm1(x) <= r, x >= lo, x <= lo + 1.0]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), cons)
    r.value, lo.value = 2.0, np.array([-0.5, 0.3, -2.0, 0.1])
    prob.solve()
    assert prob.status == "optimal" and cons[0].dual_value is not None
    r.value = 0.3  # the box's entries nearest to 0 alone need more than 0.3
    prob.solve()
    assert prob.status == "infeasible" and x.value is None
    assert all(c.dual_value is None for c in cons)


def test_a_trace_equality_that_also_bounds_a_psd_matrix_combines_the_row_and_the_ball():
    """trace(Y) == t with Y >> 0 is a trace ball and the row: the ball carries part of the multiplier, so the
    row's alone was wrong (5.6e-16 where CVXPY has 1.996); the dual value is the row's plus the ball's mu."""
    rng = np.random.default_rng(1)
    k = 4
    C = rng.standard_normal((k, k))
    C = (C + C.T) / 2
    t = float(rng.uniform(0.5, 2))
    Y = fm.Variable((k, k), symmetric=True)
    eq = fm.trace(Y) == t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(Y - C)), [Y >> 0, eq])
    prob.solve()
    Z = cp.Variable((k, k), symmetric=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [Z >> 0, cp.trace(Z) == t])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal" and prob.value == pytest.approx(ref.value, rel=1e-4)
    assert eq.dual_value == pytest.approx(ref.constraints[1].dual_value, rel=1e-2)


def test_a_ball_whose_implied_bounds_a_box_takes_gets_the_multiplier_back_from_the_box():
    """Per-entry bounds that the L1 ball tightens: the box holds the ball's bound on that entry, so the ball's
    block alone gave 2.0 where the multiplier is 4 (KKT, and CVXPY); the box's multiplier on the side the ball
    implied goes back to the ball (was None)."""
    a, r = np.array([0.1, -3.0, 0.0]), 1.0
    lo, hi = np.array([-1.5, -1.2, -0.5]), np.array([2.0, 0.8, 0.5])
    x = fm.Variable(3)
    cons = [fm.norm1(x) <= r, x >= lo, x <= hi]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - a)), cons)
    prob.solve()
    assert prob.status == "optimal" and prob.value == pytest.approx(4.01, rel=1e-6)
    z = cp.Variable(3)
    ref = [cp.norm1(z) <= r, z >= lo, z <= hi]
    cp.Problem(cp.Minimize(cp.sum_squares(z - a)), ref).solve(solver=cp.CLARABEL)
    assert cons[0].dual_value == pytest.approx(float(ref[0].dual_value), rel=1e-3)
    for mine, theirs in zip(cons[1:], ref[1:]):
        np.testing.assert_allclose(mine.dual_value, theirs.dual_value, atol=1e-4)


C5 = np.array([3.0, -0.2, 0.1, 0.05, -4.0])
ROW = np.array([[1.0, 1.0, 0.0, 0.0, 0.0]])
IMPLIED_SIDES = {  # a ball next to one-sided bounds on some entries: the box's other side is the ball's
    "l1, x[:2] <= 0.3": (lambda m, x: [m.norm1(x) <= 1, x[:2] <= 0.3], C5),
    "l1, x[:2] <= 0.3, pulled the other way": (lambda m, x: [m.norm1(x) <= 1, x[:2] <= 0.3], -C5),
    "l1, x[3:] >= -0.3": (lambda m, x: [m.norm1(x) <= 1, x[3:] >= -0.3], C5),
    "l1, x[3:] >= -0.3, ball inactive": (lambda m, x: [m.norm1(x) <= 1, x[3:] >= -0.3], 0.1 * C5),
    "l1, x <= 0.3 and a row": (lambda m, x: [m.norm1(x) <= 1, x <= 0.3, ROW @ x <= 0.2], C5),
    "l1, x >= -0.5 and a row": (lambda m, x: [m.norm1(x) <= 1, x >= -0.5, ROW @ x <= 0.2], C5),
    "l2, x[:2] <= 0.3": (lambda m, x: [m.norm(x, 2) <= 1, x[:2] <= 0.3], C5),
    "l2, x[4:] >= -0.3": (lambda m, x: [m.norm(x, 2) <= 1, x[4:] >= -0.3], -C5),
    "linf, x[:2] <= 0.3": (lambda m, x: [m.norm_inf(x) <= 1, x[:2] <= 0.3], C5),
    # a ball on a slice (its own entries are x's 0..2 or 4, 1): the box holds entries of x the ball does not
    "l2 on x[:3], x >= 0, x <= 2": (lambda m, x: [m.norm(x[:3], 2) <= 0.5, x >= 0, x <= 2], C5),
    "l1 on x[1:4], x[:2] <= 0.3": (lambda m, x: [m.norm1(x[1:4]) <= 1, x[:2] <= 0.3, x >= -2, x <= 2], -C5),
    "linf on x[[4, 1]], x >= -0.2": (lambda m, x: [m.norm_inf(x[[4, 1]]) <= 1, x >= -0.2, x <= 5], C5),
    "l2 on x[2:], x[3:] >= -0.3": (lambda m, x: [m.norm(x[2:], 2) <= 1, x[3:] >= -0.3, x[:2] >= -3,
                                                 x[:2] <= 3], C5),
}


@pytest.mark.parametrize("name", list(IMPLIED_SIDES))
def test_a_ball_next_to_one_sided_bounds_has_cvxpys_dual_value(name):
    """The box closing ``x[:2] <= 0.3`` takes ``-r`` from the ball: the two share the ball's multiplier, which
    was None; now ``tau = mu + <above_d - below_d, z> / r`` from the two blocks (write_norm_duals)."""
    build, c = IMPLIED_SIDES[name]
    x, z = fm.Variable(5), cp.Variable(5)
    cons, ref = build(fm, x), build(cp, z)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), cons)
    prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=100000)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(z - c)), ref)
    reference.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal" and prob.value == pytest.approx(reference.value, rel=1e-5)
    assert cons[0].dual_value is not None
    assert cons[0].dual_value == pytest.approx(float(ref[0].dual_value), rel=1e-3, abs=1e-5)


def test_a_ball_on_a_slice_with_a_parameter_radius_next_to_a_floor_has_cvxpys_dual_value():
    """``norm(x[:3], 2) <= t`` (t an fm.Parameter) with ``x >= 0``: the box takes the ball's upper sides on
    x[:3] (read at each solve), and the ball's multiplier comes back from the two blocks at every value of t
    (it was None for a ball on a slice)."""
    t = fm.Parameter(nonneg=True, value=0.5)
    x, z = fm.Variable(5), cp.Variable(5)
    con = fm.norm(x[:3], 2) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C5)), [con, x >= 0, x <= 2])
    for radius in (0.5, 0.02, 2.5):
        t.value = radius
        prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=100000)
        ref = cp.norm(z[:3], 2) <= radius
        reference = cp.Problem(cp.Minimize(cp.sum_squares(z - C5)), [ref, z >= 0, z <= 2])
        reference.solve(solver=cp.CLARABEL)
        assert prob.status == "optimal" and prob.value == pytest.approx(reference.value, rel=1e-5)
        assert con.dual_value == pytest.approx(float(ref.dual_value), rel=1e-3, abs=1e-5)


C_ABS = np.array([3.0, -3.0, 0.5, 1.0, -0.2])
ABS_NEXT_TO_BOUNDS = {  # abs(x) <= t whose other side a bound box took: the box holds the abs bound there
    "abs(x) <= 2, x <= 1.6": lambda m, x: [m.abs(x) <= 2, x <= 1.6],
    "abs(x) <= 2, maximum(x - 1, 0.5) <= 0.6": lambda m, x: [m.abs(x) <= 2, m.maximum(x - 1, 0.5) <= 0.6],
    "abs(x[:3]) <= 2, -2.5 <= x <= 1.6": lambda m, x: [m.abs(x[:3]) <= 2, x >= -2.5, x <= 1.6],
    "abs(x) <= t (a vector), x >= -0.1": lambda m, x: [m.abs(x) <= np.array([2, 2, 1, 1, 1.0]), x >= -0.1],
}


@pytest.mark.parametrize("name", list(ABS_NEXT_TO_BOUNDS))
def test_abs_bounds_next_to_a_box_that_took_a_side_have_cvxpys_dual_value(name):
    """``abs(x) <= 2`` with ``x <= 1.6``: the bound box takes the abs bound's lower side -2, and x[1] = -2
    binds there, so the box and the abs box share its multiplier (unique: 2, Clarabel's); dual_value was None.
    Per entry it is the abs block's own multiplier plus the box's on the sides it took from abs."""
    build = ABS_NEXT_TO_BOUNDS[name]
    x, z = fm.Variable(5), cp.Variable(5)
    cons, ref = build(fm, x), build(cp, z)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C_ABS)), cons)
    prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=100000)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(z - C_ABS)), ref)
    reference.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal" and prob.value == pytest.approx(reference.value, rel=1e-6)
    assert cons[0].dual_value is not None
    np.testing.assert_allclose(cons[0].dual_value, ref[0].dual_value, atol=1e-3)


def test_abs_bound_with_a_parameter_next_to_a_box_that_took_a_side_has_cvxpys_dual_value():
    """The same with t an fm.Parameter: the sides the box takes are read at each solve's end."""
    t = fm.Parameter(nonneg=True, value=2.0)
    x = fm.Variable(5)
    con = fm.abs(x) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C_ABS)), [con, x <= 1.6])
    for value in (2.0, 0.5, 3.5):
        t.value = value
        prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=100000)
        z = cp.Variable(5)
        ref = cp.abs(z) <= value
        cp.Problem(cp.Minimize(cp.sum_squares(z - C_ABS)), [ref, z <= 1.6]).solve(solver=cp.CLARABEL)
        assert prob.status == "optimal" and con.dual_value is not None
        np.testing.assert_allclose(con.dual_value, ref.dual_value, atol=1e-3)
