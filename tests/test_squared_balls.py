"""``fm.sum_squares(e) <= t`` and ``fm.quad_form(e, P) <= t``: Euclidean balls written squared, as CVXPY users do.

The compiler holds ``sum_squares(e) <= t`` as the ball ``norm2(e) <= sqrt(t)``
and ``quad_form(e, P) <= t`` (P constant, PSD, ``P = L L'``) as ``norm2(L' e)
<= sqrt(t)``; the constraint's ``dual_value`` is CVXPY's multiplier of the
form written, the ball's over ``2 sqrt(t)``. Where nothing else holds e's
variable and P is positive definite, ``fm.Ellipsoid(e, P, t)`` holds it
instead (it bounds e itself). Checked against closed forms and CVXPY + Clarabel.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

RNG = np.random.default_rng(0)
N = 6
A = RNG.standard_normal((8, N))
B = RNG.standard_normal(8)
C = RNG.standard_normal(N)


def clarabel(prob):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver=cp.CLARABEL)


def test_a_linear_objective_on_the_squared_unit_ball_has_the_closed_form():
    # min c'x over ||x||^2 <= t: x* = -sqrt(t) c / ||c||; KKT c + 2 lambda x* = 0 gives lambda = ||c|| / (2 sqrt(t))
    x = fm.Variable(N)
    t = fm.Parameter(value=1.0)
    ball = fm.sum_squares(x) <= t
    prob = fm.Problem(fm.Minimize(C @ x), [ball])
    for value in (1.0, 4.0, 0.25):
        t.value = value
        prob.solve(tol=1e-9)
        assert prob.status == fm.OPTIMAL
        norm_c = np.linalg.norm(C)
        np.testing.assert_allclose(x.value, -np.sqrt(value) * C / norm_c, atol=1e-6)
        assert ball.dual_value == pytest.approx(norm_c / (2 * np.sqrt(value)), rel=1e-6)


MODELS = {
    "sum_squares(x - 1) <= 2": lambda m, x: (m.Minimize(m.sum_squares(A @ x - 3 * B)), [m.sum_squares(x - 1) <= 2]),
    "norm(x, 2) ** 2 <= 0.5": lambda m, x: (m.Minimize(m.sum_squares(A @ x - 3 * B)), [m.norm(x, 2) ** 2 <= 0.5]),
    "square(norm2(x)) <= 0.1 with x >= -0.05": lambda m, x: (
        m.Minimize(m.sum_squares(A @ x - 3 * B)), [m.square(m.norm2(x)) <= 0.1, x >= -0.05]),
    "sum_squares(X) <= 1 (Frobenius)": lambda m, x: (
        m.Minimize(m.sum_squares(m.reshape(x, (2, 3), order="C") - 2.0)), [m.sum_squares(m.reshape(x, (2, 3), order="C")) <= 1]),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_squared_balls_match_clarabel(name):
    out = []
    for m in (fm, cp):
        x = m.Variable(N)
        objective, constraints = MODELS[name](m, x)
        prob = m.Problem(objective, constraints)
        if m is fm:
            prob.solve(tol=1e-8)
            assert prob.status == fm.OPTIMAL
        else:
            clarabel(prob)
        out.append((prob.value, float(np.ravel(constraints[0].dual_value)[0])))
    (value, dual), (ref, dual_ref) = out
    assert value == pytest.approx(ref, rel=1e-6)
    assert dual_ref > 1e-2  # the ball binds
    assert dual == pytest.approx(dual_ref, rel=1e-3)


def _markowitz(m, seed, factors, level, n=20):
    """CVXPY's portfolio example in module m: max mu'w s.t. w'Sigma w <= level, sum(w) == 1, w >= 0."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, factors))
    sigma = 0.01 * F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    w = m.Variable(n)
    risk = m.quad_form(w, sigma) <= level
    return m.Problem(m.Maximize(mu @ w), [risk, m.sum(w) == 1, w >= 0]), w, sigma, risk


def _markowitz_both(fm_options, **data):
    """The portfolio of :func:`_markowitz` solved by fwmodel (``fm_options``) and Clarabel: each side's
    ``(value, risk multiplier)``, and fwmodel's ``(problem, w, sigma)``."""
    out, mine = [], None
    for m in (fm, cp):
        prob, w, sigma, risk = _markowitz(m, **data)
        if m is fm:
            prob.solve(**fm_options)
            mine = (prob, w, sigma)
        else:
            clarabel(prob)
        out.append((prob.value, float(np.ravel(risk.dual_value)[0])))
    return out, mine


def test_a_portfolio_with_a_risk_bound_written_as_a_quadratic_form():
    ((value, dual), (ref, dual_ref)), (prob, w, sigma) = _markowitz_both(dict(tol=1e-7), seed=3, factors=3,
                                                                         level=0.02)
    assert prob.status == fm.OPTIMAL
    assert float(w.value @ sigma @ w.value) <= 0.02 * (1 + 1e-4)
    assert value == pytest.approx(ref, rel=1e-5)
    assert dual == pytest.approx(dual_ref, rel=1e-3)


def test_forms_that_stay_refused_say_why():
    x = fm.Variable(N, name="x")
    with pytest.raises(fm.ModelError, match=r"sum_squares\(x\) <= -1.*negative"):
        fm.sum_squares(x) <= -1
    P = fm.Parameter((N, N), psd=True, value=np.eye(N), name="P")
    with pytest.raises(fm.ModelError, match="P must then be constant"):
        fm.quad_form(x, P) <= 1
    with pytest.raises(fm.ModelError, match="must be affine"):
        fm.sum_squares(x) + fm.sum(x) <= 1  # not the ball's form: other terms on its side


def _pd_matrix(n, seed, cond=100.0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return Q @ np.diag(np.geomspace(1.0, cond, n)) @ Q.T


def test_the_ellipsoids_oracle_bounds_and_projection_match_closed_forms_and_clarabel():
    n, bound = 7, 2.5
    P = _pd_matrix(n, 1)
    inverse = np.linalg.inv(P)
    x = fm.Variable(n)
    ellipsoid = fm.Ellipsoid(x, P, bound)
    rng = np.random.default_rng(2)
    for _ in range(5):  # LMO: -sqrt(bound / d'P^-1 d) P^-1 d, on the boundary
        d = rng.standard_normal(n)
        expected = -np.sqrt(bound / (d @ inverse @ d)) * inverse @ d
        np.testing.assert_allclose(ellipsoid.lmo(d), expected, rtol=1e-10, atol=1e-12)
    lower, upper = ellipsoid.coordinate_bounds()
    for i in range(n):  # the bounds are the LMO's extreme entries
        e = np.zeros(n)
        e[i] = 1.0
        assert lower[i] == pytest.approx(ellipsoid.lmo(e)[i], rel=1e-10)
        assert upper[i] == pytest.approx(ellipsoid.lmo(-e)[i], rel=1e-10)
    inside = 0.05 * rng.standard_normal(n)
    np.testing.assert_array_equal(ellipsoid.project_flat(inside), inside)  # a point inside stays
    for _ in range(3):  # outside: KKT (on the boundary, y - z = nu P z with nu >= 0), and Clarabel's value
        y = 3.0 * rng.standard_normal(n)
        projected = ellipsoid.project_flat(y)
        assert projected @ P @ projected == pytest.approx(bound, rel=1e-10)
        Pz = P @ projected
        nu = float((y - projected) @ Pz) / float(Pz @ Pz)
        assert nu > 0
        np.testing.assert_allclose(y - projected, nu * Pz, atol=1e-10 * np.linalg.norm(y))
        z = cp.Variable(n)
        reference = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [cp.quad_form(z, P) <= bound])
        clarabel(reference)
        assert float(np.sum((projected - y) ** 2)) == pytest.approx(reference.value, rel=1e-7)


def test_an_ellipsoid_alone_bounds_its_variable_with_the_closed_form_optimum():
    # min c'x over x'Px <= t (nothing else on x: it was "not in any bounded set"): the value is
    # -sqrt(t c'P^-1 c), CVXPY's multiplier sqrt(c'P^-1 c) / (2 sqrt(t)); t a Parameter, warm starts
    n = 6
    P = _pd_matrix(n, 3)
    q = float(C @ np.linalg.solve(P, C))
    x = fm.Variable(n)
    t = fm.Parameter(value=1.0)
    risk = fm.quad_form(x, P) <= t
    prob = fm.Problem(fm.Minimize(C @ x), [risk])
    for value in (1.0, 9.0, 0.25):
        t.value = value
        prob.solve(tol=1e-9, warm_start=True)
        assert prob.status == fm.OPTIMAL
        assert prob.value == pytest.approx(-np.sqrt(value * q), rel=1e-7)
        assert risk.dual_value == pytest.approx(np.sqrt(q) / (2 * np.sqrt(value)), rel=1e-5)


ELLIPSOID_MODELS = {
    "x >= 0": lambda m, x, P: [m.quad_form(x, P) <= 1, x >= 0],
    "x <= 0.2": lambda m, x, P: [m.quad_form(x, P) <= 1, x <= 0.2],
    "sum(x) == 0.5": lambda m, x, P: [m.quad_form(x, P) <= 1, m.sum(x) == 0.5],
    "shifted": lambda m, x, P: [m.quad_form(x - 0.3, P) <= 2],
}


@pytest.mark.parametrize("name", sorted(ELLIPSOID_MODELS))
def test_ellipsoids_next_to_bounds_and_rows_match_clarabel(name):
    # one-sided bounds get their other side from the ellipsoid's box; its multiplier is then shared with
    # the box's (x >= 0 binds where the ellipsoid would go negative) and recovered from both blocks
    P = _pd_matrix(N, 4, cond=10.0)
    out = []
    for m in (fm, cp):
        x = m.Variable(N)
        constraints = ELLIPSOID_MODELS[name](m, x, P)
        prob = m.Problem(m.Minimize(C @ x), constraints)
        if m is fm:
            prob.solve(tol=1e-8)
            assert prob.status == fm.OPTIMAL
        else:
            clarabel(prob)
        out.append((prob.value, [None if k.dual_value is None else np.ravel(k.dual_value) for k in constraints]))
    (value, duals), (ref, duals_ref) = out
    assert value == pytest.approx(ref, rel=1e-6)
    for dual, dual_ref in zip(duals, duals_ref):
        assert dual is not None
        np.testing.assert_allclose(dual, dual_ref, rtol=1e-3, atol=1e-4)


def test_ellipsoid_data_errors_name_the_problem():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match="positive definite"):
        fm.Ellipsoid(x, np.diag([1.0, 1.0, 0.0]))
    with pytest.raises(fm.ModelError, match=r"shape \(3, 3\)"):
        fm.Ellipsoid(x, np.eye(2))
    with pytest.raises(fm.ModelError, match="symmetric"):
        fm.Ellipsoid(x, np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    with pytest.raises(fm.ModelError, match="bound"):
        fm.Ellipsoid(x, np.eye(3), -1.0)


@pytest.mark.parametrize("form", ["partly held: norm1(x[:2])", "two on overlapping slices", "a ball and a quad_form"])
def test_quad_forms_next_to_sets_on_slices_hold_the_free_entries(form):
    # other sets hold only part of x: the ellipsoid holds e itself (was "not in any bounded set")
    P4 = np.array([[2, .5, 0, 0], [.5, 2, .5, 0], [0, .5, 2, .5], [0, 0, .5, 2]])
    P3 = P4[:3, :3]
    target = np.array([3.0, -2.0, 1.0, -1.0])
    build = {"partly held: norm1(x[:2])": lambda m, x: [m.quad_form(x, P4) <= 1, m.norm1(x[:2]) <= 0.5],
             "two on overlapping slices": lambda m, x: [m.quad_form(x[:3], P3) <= 1, m.quad_form(x[1:], P3) <= 2],
             "a ball and a quad_form": lambda m, x: [m.sum_squares(x[:3]) <= 1, m.quad_form(x[1:], P3) <= 2]}[form]
    out = []
    for m in (fm, cp):
        x = m.Variable(4)
        constraints = build(m, x)
        prob = m.Problem(m.Minimize(m.sum_squares(x - target)), constraints)
        if m is fm:
            prob.solve(tol=1e-8)
            assert prob.status == fm.OPTIMAL
        else:
            clarabel(prob)
        out.append((prob.value, [float(np.ravel(k.dual_value)[0]) for k in constraints]))
    (value, duals), (ref, duals_ref) = out
    assert value == pytest.approx(ref, rel=1e-6)
    np.testing.assert_allclose(duals, duals_ref, rtol=1e-3, atol=1e-4)


def test_the_projection_lands_on_the_boundary_at_any_scale():
    # Newton on the secular equation from a point left of the root: a point 1e20 outside, P of condition 1e8
    # (Newton on x'Px - bound from 0 grew 1.5x a step and stopped after 100 steps far outside)
    n = 10
    P = _pd_matrix(n, 5, cond=1e8)
    rng = np.random.default_rng(6)
    for bound, scale in ((1e-16, 1e20), (1e-16, 1e6), (1.0, 1e3), (1e8, 1e9)):
        ellipsoid = fm.Ellipsoid(fm.Variable(n), P, bound)
        z = ellipsoid.project_flat(scale * rng.standard_normal(n))
        assert z @ P @ z == pytest.approx(bound, rel=1e-7)
        assert ellipsoid.contains(z)
    A = rng.standard_normal((15, n))
    b = 1e3 * rng.standard_normal(15)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.quad_form(x, P) <= 1e-30])
    prob.solve(projection=True)  # (it was "optimal" with x'Px 1e7 times the bound)
    assert prob.status == fm.OPTIMAL
    assert float(x.value @ P @ x.value) <= 1e-30 * (1 + 1e-6)


def test_membership_is_tested_in_the_expressions_units():
    # e'e = 3e-10 is 300 times the bound 1e-12: a constraint on data alone that does not hold
    x = fm.Variable(3)
    e = np.full(3, 1e-5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.quad_form(e, np.eye(3)) <= 1e-12, fm.Box(x, -1, 1)])
    prob.solve()
    assert prob.status == fm.INFEASIBLE
    assert not fm.Ellipsoid(fm.Variable(3), np.eye(3), 1e-12).contains(e)
    assert fm.Ellipsoid(fm.Variable(3), np.eye(3), 1e-12).contains(e * 0.0577)  # e'e just below 1e-12


def test_ellipsoid_inputs_that_are_not_real_matrices_and_tiny_directions():
    y = fm.Variable(2)
    with pytest.raises(fm.ModelError, match="complex"):
        fm.Ellipsoid(y, np.array([[2, 1j], [-1j, 2]]))
    with pytest.raises(fm.ModelError, match=r"Ellipsoid: P must be a matrix"):
        fm.Ellipsoid(y, "ab")
    with pytest.raises(fm.ModelError, match="above the limit"):
        fm.Ellipsoid(y, 1e200 * np.eye(2))
    np.testing.assert_allclose(fm.Ellipsoid(y, np.eye(2)).lmo(np.array([1e-170, 0.0])), [-1.0, 0.0])


@pytest.mark.parametrize("form", ["norm1(x) <= t", "norm(x, 2) <= t", "sum_squares(x) <= t",
                                  "quad_form(x, P) <= t", "quad_form(x, P) <= t with a box"])
def test_a_bound_a_parameter_makes_negative_is_infeasible_then_solves_again(form):
    # CVXPY: infeasible; this raised "L2Ball: radius must be nonnegative", a set the model never wrote
    P = np.array([[2, .5, 0], [.5, 2, .5], [0, .5, 2]])
    probs, params = [], []
    for m in (fm, cp):
        x, t = m.Variable(3), m.Parameter()
        bound = {"norm1(x) <= t": lambda: m.norm1(x) <= t, "norm(x, 2) <= t": lambda: m.norm(x, 2) <= t,
                 "sum_squares(x) <= t": lambda: m.sum_squares(x) <= t,
                 "quad_form(x, P) <= t": lambda: m.quad_form(x, P) <= t,
                 "quad_form(x, P) <= t with a box": lambda: m.quad_form(x, P) <= t}[form]()
        constraints = [bound] + ([m.abs(x) <= 0.5] if form.endswith("box") else [])
        probs.append(m.Problem(m.Minimize(m.sum_squares(x - 1)), constraints))
        params.append(t)
    for value, expected in ((1.0, "optimal"), (-1.0, "infeasible"), (0.5, "optimal")):
        for t in params:
            t.value = value
        probs[0].solve(tol=1e-8, warm_start=True)
        clarabel(probs[1])
        assert probs[1].status == expected
        assert probs[0].status == expected, probs[0].stats.message
        if expected == "infeasible":
            assert "holds for no point" in probs[0].stats.message and params[0].name in probs[0].stats.message
        else:
            assert probs[0].value == pytest.approx(probs[1].value, rel=1e-5)


def test_squares_written_other_ways_are_balls_too():
    # fm.square of a scalar and fm.sum(fm.square(e)) are sum_squares; a zero P is named, not "must be affine"
    x = fm.Variable()
    square = fm.square(x) <= 4
    prob = fm.Problem(fm.Minimize(x), [square])
    prob.solve(tol=1e-9)
    assert prob.value == pytest.approx(-2.0, abs=1e-7)
    assert square.dual_value == pytest.approx(0.25, rel=1e-6)  # 1 + 2 lambda x = 0 at x = -2
    y = fm.Variable(3)
    total = fm.sum(fm.square(y)) <= 1
    prob = fm.Problem(fm.Minimize(fm.sum(y)), [total])
    prob.solve(tol=1e-9)
    assert prob.value == pytest.approx(-np.sqrt(3.0), rel=1e-7)
    assert total.dual_value == pytest.approx(np.sqrt(3.0) / 2, rel=1e-6)
    with pytest.raises(fm.ModelError, match="P is zero"):
        fm.quad_form(y, np.zeros((3, 3))) <= 1


@pytest.mark.parametrize("form", ["norm(x, 2) <= t", "sum_squares(x) <= t"])
def test_a_warm_start_after_the_bound_moves_a_thousandfold_starts_cold(form):
    # t: 1 -> 1e-8 -> 1e6 -> 1 with warm_start=True: the multipliers and penalty carried over were in the
    # old units, and these solves ran to max_iter (10,000 iterations) where a cold solve takes 11-38
    rng = np.random.default_rng(0)
    c = 3.0 * rng.standard_normal(8)
    x, t = fm.Variable(8), fm.Parameter(value=1.0)
    bound = fm.norm(x, 2) <= t if form.startswith("norm") else fm.sum_squares(x) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [bound, x >= 0])
    for value in (1.0, 1e-8, 1e6, 1.0):
        t.value = value
        prob.solve(warm_start=True)
        assert prob.status == fm.OPTIMAL
        assert prob.stats.iterations <= 100
        radius = value if form.startswith("norm") else np.sqrt(value)
        positive = np.maximum(c, 0.0)  # closed form: the ball's point along the positive part of c
        expected = positive * min(1.0, radius / np.linalg.norm(positive))
        np.testing.assert_allclose(x.value, expected, atol=1e-3 * max(1.0, np.linalg.norm(expected)))


@pytest.mark.parametrize("form", ["quad_form(x, P) <= t", "sum_squares(x) <= t", "norm(x, 2) <= t"])
def test_the_bounds_dual_with_a_parameter_radius_next_to_a_floor(form):
    # x >= 0 takes its other side from the ball or ellipsoid (a box): the two share the bound's multiplier,
    # recovered at each solve's end; with t a Parameter it was None (the sides were recorded only for data)
    rng = np.random.default_rng(1)
    P = rng.standard_normal((5, 5))
    P = P @ P.T + 0.5 * np.eye(5)
    c = rng.standard_normal(5)
    probs, params, bounds = [], [], []
    for m in (fm, cp):
        x, t = m.Variable(5), m.Parameter(value=1.0)
        bound = {"quad_form(x, P) <= t": lambda: m.quad_form(x, P) <= t,
                 "sum_squares(x) <= t": lambda: m.sum_squares(x) <= t,
                 "norm(x, 2) <= t": lambda: m.norm(x, 2) <= t}[form]()
        probs.append(m.Problem(m.Minimize(c @ x), [bound, x >= 0]))
        params.append(t)
        bounds.append(bound)
    for value in (1.0, 4.0):
        for t in params:
            t.value = value
        probs[0].solve(tol=1e-8)
        clarabel(probs[1])
        assert probs[0].value == pytest.approx(probs[1].value, rel=1e-6)
        assert bounds[0].dual_value is not None
        assert float(bounds[0].dual_value) == pytest.approx(float(np.ravel(bounds[1].dual_value)[0]), rel=1e-3)


def test_markowitz_with_a_risk_bound_against_clarabel():
    # the risk bound is a ball on L'w tied to the simplex's copy by rows; the default penalty (0.26) held
    # those rows too weakly (543 iterations): the schedule doubles lam when feasibility lags the FW gap
    out = []
    for m in (fm, cp):
        prob = _markowitz(m, seed=20, factors=5, level=0.005)[0]
        if m is fm:
            prob.solve()
            assert prob.status == fm.OPTIMAL
            assert prob.stats.iterations <= 400
        else:
            clarabel(prob)
        out.append(prob.value)
    assert out[0] == pytest.approx(out[1], rel=1e-4)


def test_a_portfolio_started_at_its_own_vertex_gets_a_penalty_of_the_sets_size():
    """n = 100, data seed 0: the start is already the simplex vertex the linear objective picks, so the
    first FW direction is zero. Its penalty came from a Gaussian direction, unrelated to the sets' size
    (lam 0.0069, 100x below what the rows need), and the drift rule raised lam only every 400
    iterations while feasibility fell by 0.7 per window: 1,715 iterations. Now the direction goes to
    the vertices of a random direction (lam 0.24) and the drift rule also fires on a pace too slow
    for the target (241). Value and risk multiplier against Clarabel."""
    ((value, dual), (ref, dual_ref)), (prob, _, _) = _markowitz_both({}, seed=0, factors=3, level=0.005, n=100)
    assert prob.status == fm.OPTIMAL and prob.stats.iterations < 600
    assert value == pytest.approx(ref, rel=1e-4)
    assert dual == pytest.approx(dual_ref, rel=1e-2)
