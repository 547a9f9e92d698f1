"""The stopping rule is relative to the problem's own scales (fwmodel.engine.stopping).

Scaling the objective by s_obj, and the data and the radii by s_data, maps
the solution x* to s_data x* and the optimum f* to s_obj s_data^2 f*: a
solve must reach the same relative accuracy at every scale. The references
are CVXPY + Clarabel solves in unit scale, mapped by this exact law
(Clarabel's own absolute tolerances make it unreliable at 1e-6 scales).
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine import Block, minimize_fwal
from fwmodel.sets.atoms import SparseAtom

SCALES = [(1.0, 1.0), (1e-3, 1e-3), (1e-6, 1e-6), (1e3, 1e3), (1.0, 1e-3), (1e-6, 1.0), (1e3, 1e-6)]


@pytest.fixture(scope="module")
def l1_box_least_squares():
    """min ||A x - b||^2 over L1Ball(2) ∩ [-0.15, 0.15]^50 (two copies of x tied by M), and its CVXPY optimum."""
    rng = np.random.default_rng(7)
    A, b = rng.standard_normal((30, 50)), rng.standard_normal(30)
    radius, bound = 2.0, 0.15
    xc = cp.Variable(50)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)),
                        [cp.norm1(xc) <= radius, cp.abs(xc) <= bound]).solve(solver="CLARABEL")
    return A, b, radius, bound, f_star, xc.value


def _solve_scaled(data, s_obj, s_data, **options):
    A, b, radius, bound, _, _ = data
    x = fm.Variable(50, name="x")
    prob = fm.Problem(fm.Minimize(s_obj * fm.sum_squares(A @ x - s_data * b)),
                      # the box on the slice x[:]: two tied copies, whose feasibility scale is tested here
                      [fm.L1Ball(x, s_data * radius), fm.Box(x[:], -s_data * bound, s_data * bound)])
    prob.solve(**options)
    return prob, x


def test_l1_box_least_squares_reaches_the_same_relative_accuracy_at_every_scale(l1_box_least_squares):
    A, b, radius, bound, f_star, x_star = l1_box_least_squares
    reference = None
    for s_obj, s_data in SCALES:
        prob, x = _solve_scaled(l1_box_least_squares, s_obj, s_data)
        unit = s_obj * s_data ** 2  # the unit of the objective at this scale
        assert prob.status == "optimal", (s_obj, s_data)
        assert prob.stats.iterations > 10, (s_obj, s_data)  # the old absolute rule stopped at 0 below scale 1
        rel_error = abs(prob.value - unit * f_star) / (unit * f_star)
        assert rel_error <= 1e-4, (s_obj, s_data, rel_error)
        # the point, mapped back to unit scale, is the CVXPY solution and lies in both sets
        # (up to the copies' disagreement, bounded by feas_tol relative to the sets' size)
        x_unit = x.value / s_data
        assert np.linalg.norm(x_unit - x_star) <= 2e-3 * np.linalg.norm(x_star), (s_obj, s_data)
        assert np.abs(x_unit).sum() <= radius * (1 + 1e-3) and np.abs(x_unit).max() <= bound * (1 + 1e-3)
        # the scales follow the problem exactly: same numbers in unit scale
        scales = (prob.stats.objective_scale / unit, prob.stats.feasibility_scale / s_data)
        if reference is None:
            reference = scales
        assert scales == pytest.approx(reference, rel=1e-9), (s_obj, s_data)
        assert prob.stats.fw_gap <= 1e-4 * prob.stats.objective_scale
        assert prob.stats.feasibility <= 1e-4 * prob.stats.feasibility_scale


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_lasso_in_small_and_large_units(scale):
    """Objective x scale, data and radius x scale: was "optimal" at its starting point below scale 1."""
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((30, 40)), rng.standard_normal(30)
    xc = cp.Variable(40)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc) <= 1.0]).solve(solver="CLARABEL")
    x = fm.Variable(40, name="x")
    prob = fm.Problem(fm.Minimize(scale * fm.sum_squares(A @ x - scale * b)), [fm.L1Ball(x, scale)])
    prob.solve()
    assert prob.status == "optimal" and prob.stats.iterations > 10
    f_ref = scale ** 3 * f_star
    assert abs(prob.value - f_ref) <= 1e-4 * f_ref
    # the certificate the rule gives: f - f* <= FW gap <= tol * (objective's range from the start)
    assert prob.value - f_ref <= prob.stats.fw_gap * (1 + 1e-6) + 1e-12 * f_ref
    assert prob.stats.fw_gap <= 1e-4 * prob.stats.objective_scale


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_scaled_sum_squares_over_an_l2_ball(scale):
    """Minimize(1e-3 * sum_squares(...)) over an L2 ball was 0.8 % off at "optimal" (now ~1e-4)."""
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((40, 60)), rng.standard_normal(40)
    xc = cp.Variable(60)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm(xc, 2) <= 0.5]).solve(solver="CLARABEL")
    x = fm.Variable(60, name="x")
    prob = fm.Problem(fm.Minimize(scale * fm.sum_squares(A @ x - b)), [fm.L2Ball(x, 0.5)])
    prob.solve()
    assert prob.status == "optimal"
    assert abs(prob.value - scale * f_star) <= 1e-3 * scale * f_star
    assert prob.value - scale * f_star <= prob.stats.fw_gap * (1 + 1e-6)
    assert prob.stats.fw_gap <= 1e-4 * prob.stats.objective_scale


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_portfolio_with_a_small_objective_gets_a_relative_certificate(scale):
    """max mu'w - w' S w over the simplex, objective ~0.02: the old rule certified only 4e-3 relative."""
    rng = np.random.default_rng(0)
    n = 50
    mu = 0.01 + 0.01 * rng.standard_normal(n)
    F = 0.05 * rng.standard_normal((n, 5))
    Sigma = F @ F.T + np.diag(rng.uniform(0.001, 0.01, n))
    wc = cp.Variable(n)
    best = cp.Problem(cp.Maximize(mu @ wc - cp.quad_form(wc, Sigma)), [wc >= 0, cp.sum(wc) == 1]).solve(
        solver="CLARABEL")
    w = fm.Variable(n, name="w")
    prob = fm.Problem(fm.Maximize(scale * (mu @ w - fm.quad_form(w, Sigma))), [fm.Simplex(w)])
    prob.solve()
    assert prob.status == "optimal"
    # the FW gap certifies best - value <= gap; relative to the objective it is now small at every scale
    assert prob.stats.fw_gap <= 1e-3 * abs(prob.value)
    assert scale * best - prob.value <= prob.stats.fw_gap * (1 + 1e-6) + 1e-9 * scale * abs(best)
    assert abs(prob.value - scale * best) <= 1e-5 * scale * abs(best)


def test_warm_start_keeps_the_scale_of_a_cold_solve(l1_box_least_squares):
    """The objective scale is measured at the cold starting point, not at the (near-optimal) warm one."""
    prob, _ = _solve_scaled(l1_box_least_squares, 1e-3, 1e-3)
    cold_scale = prob.stats.objective_scale
    prob.solve(warm_start=True)
    assert prob.status == "optimal"
    assert prob.stats.objective_scale == pytest.approx(cold_scale, rel=1e-12)
    assert prob.stats.iterations <= 5


def test_engine_reports_its_scales_and_needs_no_modeling_layer():
    """minimize_fwal alone: min 1e-6 ||x - c||^2 over the simplex; the answer is the closed-form projection."""
    n = 10
    c = np.linspace(-0.05, 0.25, n)

    class Objective:
        is_quadratic = True

        def value(self, z):
            return 1e-6 * float((z - c) @ (z - c))

        def value_and_grad(self, z):
            return self.value(z), 2e-6 * (z - c)

        def curvature(self, z, d):
            return 2e-6 * float(d @ d)

    def simplex_lmo(g):
        return SparseAtom([int(np.argmin(g))], [1.0], n)

    block = Block(0, n, simplex_lmo, lambda: simplex_lmo(np.zeros(n)), True, "simplex")
    res = minimize_fwal(Objective(), [block], tol=1e-8)
    assert res.status == "optimal" and res.iterations > 0
    # projection of c onto the simplex: clip(c - tau, 0) with sum 1
    tau = np.sort(c)[::-1]
    k = max(i for i in range(1, n + 1) if tau[i - 1] - (tau[:i].sum() - 1) / i > 0)
    expected = np.maximum(c - (tau[:k].sum() - 1) / k, 0)
    assert np.allclose(res.x, expected, atol=1e-5)
    assert res.objective_scale > 0 and res.feasibility_scale == pytest.approx(1.0)
    assert res.fw_gap <= 1e-8 * res.objective_scale


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_objective_scale_when_the_start_minimizes_f_over_the_sets(scale):
    """min s ||x||^2 over L1Ball(2) with sum(x) = 1: grad f = 0 at the start (x = 0), so G_ref = 0
    and the scale comes from the iterates. Closed form: x* = 1/n, f* = s / n."""
    n = 20
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(scale * fm.sum_squares(x)), [fm.L1Ball(x, 2.0), fm.sum(x) == 1])
    prob.solve(tol=1e-6, feas_tol=1e-6)
    assert prob.status == "optimal"
    assert prob.stats.objective_scale > 0
    assert prob.value == pytest.approx(scale / n, rel=1e-4)
    assert np.allclose(x.value, 1.0 / n, atol=1e-3)


def test_inface_steps_without_curvature_follow_the_scale():
    """A non-quadratic objective (huber) over L1 ∩ trace-norm ball: the in-face trial step has no curvature
    and is as long as the ball's radius, so the trajectory is the same in any units. FW-type steps only
    (projection=False): with "auto" the L1 copy takes projection steps from the first iteration, and the
    trace-norm copy after a few, which leaves the in-face steps few iterations to be tested on."""
    rng = np.random.default_rng(0)
    C = rng.standard_normal((8, 8))
    normalized = []
    for s in (1e-3, 1.0, 1e3):
        X = fm.Variable((8, 8), name="X")
        prob = fm.Problem(fm.Minimize(s * fm.sum(fm.huber(X - s * C, s * 1.0))),
                          [fm.TraceNormBall(X, s * 3.0), fm.L1Ball(X, 10 * s)])
        prob.solve(max_iter=150, projection=False)
        assert prob.stats.step_counts["inface"] > 0
        normalized.append(prob.value / s ** 3)  # huber(s z, s M) = s^2 huber(z, M)
    assert normalized == pytest.approx([normalized[1]] * 3, rel=1e-6)


@pytest.mark.parametrize("scale", [1.0, 1e-3])
def test_feasibility_problem_with_a_constant_objective_stops_on_feasibility(scale):
    """Minimize(0): f has no range (objective scale 0); x minimizes f everywhere, so the solve
    stops once ||Mx - b|| is small, at the same relative accuracy at both scales."""
    rng = np.random.default_rng(5)
    n = 30
    A = rng.standard_normal((3, n))
    t = A @ (0.05 * rng.standard_normal(n))  # a point of the box and the ball satisfies A x = t
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(0.0 * fm.sum(x)),
                      [fm.L1Ball(x, 2 * scale), fm.Box(x, -0.1 * scale, 0.1 * scale), A @ x == scale * t])
    prob.solve(max_iter=3000)
    assert prob.status == "optimal" and prob.stats.objective_scale == 0.0
    # feasibility_scale is in the rows the solve ran on: each row at least at the tied copies' norm, sqrt(2)
    # (engine/stopping.py row_norm_equilibration; raised to the ties' width over the sets, tie_level, which
    # only tightens the test in the rows at sqrt(2)); prob.stats.feasibility is in the model's rows (and
    # counts the copies' ties)
    solved_rows = np.sqrt(2) * (A @ x.value - scale * t) / np.linalg.norm(A, axis=1)
    assert np.linalg.norm(solved_rows) <= 1e-4 * prob.stats.feasibility_scale
    x_unit = x.value / scale
    assert np.linalg.norm(A @ x_unit - t) <= 1e-3 * np.linalg.norm(t)
    assert np.abs(x_unit).sum() <= 2 * (1 + 1e-3) and np.abs(x_unit).max() <= 0.1 * (1 + 1e-3)


@pytest.fixture(scope="module")
def tv_denoiser():
    """min ||x - y||^2 s.t. ||D x||_1 <= t, 0 <= x <= 1 (n = 100), and its CVXPY optimum.

    f* = 1.2 is 1.6 % of the objective's range from the start (75): the case where the FW gap and
    the feasibility tests alone stopped 0.5 % below f* (the model zoo's TV denoiser).
    """
    rng = np.random.default_rng(0)
    n = 100
    truth = np.repeat(rng.uniform(0, 1, 5), n // 5)
    y = truth + 0.1 * rng.standard_normal(n)
    D = np.diff(np.eye(n), axis=0)
    t = 0.8 * np.abs(D @ truth).sum()
    z = cp.Variable(n)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [cp.norm1(D @ z) <= t, z >= 0, z <= 1]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return y, D, t, f_star


@pytest.mark.parametrize("s_obj, s_data", [(1.0, 1.0), (1e-3, 1e3), (1e3, 1e-3), (1e-6, 1e-6)])
def test_small_optimum_next_to_a_large_range_is_reached_relative_to_itself(tv_denoiser, s_obj, s_data):
    """f* << objective range: "optimal" must be within 1e-3 of f* relative to |f*| (measured: ~1e-4),
    whatever the units, with the same iterations at every scale."""
    y, D, t, f_star = tv_denoiser
    x = fm.Variable(y.size, name="x")
    prob = fm.Problem(fm.Minimize(s_obj * fm.sum_squares(x - s_data * y)),
                      [fm.L1Ball(D @ x, s_data * t), fm.Box(x, 0.0, s_data)])
    prob.solve()
    unit = s_obj * s_data ** 2
    assert prob.status == "optimal"
    assert f_star < 0.05 * prob.stats.objective_scale / unit  # the regime this test is about
    assert abs(prob.value - unit * f_star) <= 1e-3 * unit * f_star
    # f* >= f(x) + <w, r> - gap (weak duality with w = y + lam r): the certified part of the claim
    assert prob.value - unit * f_star <= prob.stats.fw_gap * (1 + 1e-9) + 1e-3 * unit * f_star
    reference = _tv_iterations.setdefault("its", prob.stats.iterations)
    assert prob.stats.iterations == reference


_tv_iterations = {}


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_zero_optimum_with_equality_rows_stops_on_the_range(scale):
    """f* = 0: min ||x - c||^2 over the simplex with A x = A c, c inside the simplex.

    |f| has no relative accuracy at 0; the multiplier test falls back to 1 % of the range, so
    the solve stops, and x is c (closed form: x* = c, y* = 0).
    """
    rng = np.random.default_rng(3)
    n = 40
    c = rng.dirichlet(np.ones(n))
    A = rng.uniform(0, 1, (3, n))
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(scale * fm.sum_squares(x - c)), [fm.Simplex(x), A @ x == A @ c])
    prob.solve()
    assert prob.status == "optimal"
    assert prob.value <= 1e-4 * prob.stats.objective_scale
    assert np.linalg.norm(x.value - c) <= 1e-2 * np.linalg.norm(c)


def test_rule_asks_the_multiplier_term_relative_to_the_value():
    """StoppingRule alone: the accuracy scale is min(range, max(|f|, min(range, spread) / 100)), in f's units
    (spread: max - min of the values seen)."""
    from fwmodel.engine.stopping import StoppingRule

    for unit in (1e-6, 1.0, 1e6):
        rule = StoppingRule(1e-4, 1e-4, objective_scale=75.0 * unit, feasibility_scale=9.0)
        rule.observe_value(1.2 * unit)  # |f| well inside the range: relative to |f|
        assert rule.accuracy_scale == pytest.approx(1.2 * unit)
        assert rule.met(gap=7e-3 * unit, feas=4e-4, dual_residual=1e-4 * unit)
        assert not rule.met(gap=7e-3 * unit, feas=4e-4, dual_residual=6e-3 * unit)  # the TV denoiser's stop
        rule.observe_value(0.0)  # f = 0: 1 % of the values' spread over the points seen (1.2), below the range
        assert rule.accuracy_scale == pytest.approx(0.012 * unit)
        rule.observe_value(-300.0 * unit)  # |f| above the range: the range
        assert rule.accuracy_scale == pytest.approx(75.0 * unit)
        rule.observe_value(0.0)  # f = 0 after values 301.2 apart: 1 % of the range, the smaller
        assert rule.accuracy_scale == pytest.approx(0.75 * unit)


def test_setup_scales_and_penalty_match_a_hand_computation():
    """The stopping scales and the default penalty of a cold start (one set of LMOs shared by both since
    the setup was cut) against numpy: G_ref = <g, x_ref> - sum_k min_{s in X_k} <g_k, s> with the L1
    ball's arg-max and the trace-norm ball's top singular pair from a full SVD, the feasibility scale of
    test (3) the largest of ||b||, ||x_ref||, ||M x_ref|| (the points', not the vertex s_ref's: 0 at this
    start), and lam = c_f / ||M d|| ^ 2 along d = s_ref - x_ref."""
    rng = np.random.default_rng(11)
    C = rng.standard_normal((9, 7))
    X = fm.Variable((9, 7))
    r1, r2 = 6.0, 4.0
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)])
    prob.solve(max_iter=0)  # no step: the state is the cold starting point x_ref
    l1, trace = prob.compile().blocks
    x = prob._state.x
    x1, x2 = x[l1.slice].reshape(9, 7), x[trace.slice].reshape(9, 7)
    g = (0.5 * (x1 + x2) - C)  # the gradient of ||(x1 + x2) / 2 - C||^2 on each copy
    i = np.unravel_index(np.argmax(np.abs(g)), g.shape)
    s1 = np.zeros_like(g)
    s1[i] = -r1 * np.sign(g[i])
    U, sv, Vt = np.linalg.svd(g)
    s2 = -r2 * np.outer(U[:, 0], Vt[0])
    gap = np.vdot(g, x1) + np.vdot(g, x2) - np.vdot(g, s1) - np.vdot(g, s2)
    assert prob.stats.objective_scale == pytest.approx(gap, rel=1e-9)
    norms = [np.linalg.norm(np.concatenate([x1.ravel(), x2.ravel()])), np.linalg.norm(x1 - x2)]
    assert prob.stats.feasibility_scale == pytest.approx(max(norms), rel=1e-9, abs=1e-300)
    d1, d2 = s1 - x1, s2 - x2
    lam = 2 * np.vdot(0.5 * (d1 + d2), 0.5 * (d1 + d2)) / np.vdot(d1 - d2, d1 - d2)
    prob.solve(max_iter=0)
    assert prob.stats.lam == pytest.approx(lam, rel=1e-9)


# ---------------------------------------------------------------- the certified bound
def _birkhoff_projection(n, seed):
    """min ||X - C||^2 over doubly stochastic X (no consistency rows) and Clarabel's optimum."""
    rng = np.random.default_rng(seed)
    C = (1.0 + rng.standard_normal((n, n))) / n
    Xc = cp.Variable((n, n))
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)),
                        [Xc >= 0, cp.sum(Xc, axis=0) == 1, cp.sum(Xc, axis=1) == 1]).solve(solver="CLARABEL")
    return C, f_star


@pytest.mark.parametrize("max_iter", [3, 30, 10_000])
def test_suboptimality_bound_holds_without_rows(max_iter):
    C, f_star = _birkhoff_projection(8, seed=1)
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    prob.solve(max_iter=max_iter)
    bound = prob.stats.suboptimality_bound
    # no rows: the bound is the FW gap itself, an upper bound on the error (weak duality)
    assert bound == pytest.approx(prob.stats.fw_gap, rel=1e-12)
    assert prob.value - f_star <= bound + 1e-9
    if max_iter == 3:  # a few iterations: far from the optimum, and the bound says so
        assert prob.status == "max_iter" and bound > 1e-3


def test_suboptimality_bound_is_tight_where_tol_is_loose():
    """A small optimum next to a large range: tol (relative to the range) promises little about |f*|,
    the bound says how close the returned point is, and a smaller tol brings it down."""
    C, f_star = _birkhoff_projection(30, seed=0)
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    # vertex steps (projection="auto" projects the block: the exact projection, 5e-10 below Clarabel's f*)
    prob.solve(projection=False)
    assert prob.stats.objective_scale > 100 * f_star  # the regime of the test
    loose = prob.stats.suboptimality_bound
    assert 0 <= prob.value - f_star <= loose + 1e-9
    prob.solve(tol=1e-6, projection=False)
    assert 0 <= prob.value - f_star <= prob.stats.suboptimality_bound + 1e-9
    assert prob.stats.suboptimality_bound < loose / 10


@pytest.mark.parametrize("sense", ["min", "max"])
@pytest.mark.parametrize("max_iter", [5, 10_000])
def test_suboptimality_bound_holds_with_consistency_rows(l1_box_least_squares, sense, max_iter):
    """Two copies tied by M: the bound is FW gap - <y + lam r, r>, and holds on either side of f*."""
    A, b, radius, bound, f_star, _ = l1_box_least_squares
    x = fm.Variable(50)
    expr = fm.sum_squares(A @ x - b)
    objective = fm.Minimize(expr) if sense == "min" else fm.Maximize(-expr)
    prob = fm.Problem(objective, [fm.L1Ball(x, radius), fm.Box(x, -bound, bound)])
    prob.solve(max_iter=max_iter)
    certified = prob.stats.suboptimality_bound
    assert np.isfinite(certified)
    error = prob.value - f_star if sense == "min" else -f_star - prob.value
    assert error <= certified + 1e-9 * abs(f_star)
    if max_iter == 10_000:
        assert prob.status == "optimal"
        # "optimal" means tests (1) and (2): gap <= tol S_f and |<w, r>| <= tol A_t <= tol S_f
        assert certified <= 2 * 1e-4 * prob.stats.objective_scale


def test_suboptimality_bound_follows_the_units(l1_box_least_squares):
    """The bound is in the objective's units: scaling the objective scales it by the same factor."""
    bounds = []
    for s_obj in (1.0, 1e-6):
        prob, _ = _solve_scaled(l1_box_least_squares, s_obj, 1.0)
        bounds.append(prob.stats.suboptimality_bound / s_obj)
    # the bound is a difference (gap - <w, r>): its rounding is ~1e-8 of the objective, 2e-6 of the bound
    assert bounds[1] == pytest.approx(bounds[0], rel=1e-5, abs=1e-12)


def test_engine_bound_against_a_hand_computed_certificate():
    """minimize_fwal's bound equals FW gap - <y + lam r, r> recomputed from the returned x, y, lam."""
    rng = np.random.default_rng(3)
    c = rng.standard_normal(12)
    x = fm.Variable(12)
    # the box on the slice x[:]: two tied copies, whose rows enter the certificate
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.L1Ball(x, 1.0), fm.Box(x[:], -0.2, 0.2)])
    compiled = prob.compile()
    prob.solve(max_iter=40)
    state = prob._state
    M, b = compiled.M, compiled.b
    r = M @ state.x - b
    w = state.y + state.lam * r
    # the FW gap of f + <w, M x - b> over the product of the two sets, with the LMOs in closed
    # form: min over the L1 ball of <g, s> is -||g||_inf, over the box -0.2 ||g||_1
    x_blocks = {type(blk.set).__name__: slice(blk.offset, blk.offset + blk.size) for blk in compiled.blocks}
    assert sorted(x_blocks) == ["Box", "L1Ball"]
    grad = compiled.objective.value_and_grad(state.x)[1] + M.T @ w
    gap = grad @ state.x + np.abs(grad[x_blocks["L1Ball"]]).max() + 0.2 * np.abs(grad[x_blocks["Box"]]).sum()
    assert prob.stats.suboptimality_bound == pytest.approx(gap - w @ r, rel=1e-9, abs=1e-12)


def _project_onto_nuclear_ball(C, radius):
    """Closed form: soft-threshold the singular values so they sum to at most ``radius``."""
    U, s, Vt = np.linalg.svd(C, full_matrices=False)
    if s.sum() > radius:
        u = np.sort(s)[::-1]
        css = np.cumsum(u) - radius
        rho = np.nonzero(u - css / np.arange(1, u.size + 1) > 0)[0][-1]
        s = np.maximum(s - css[rho] / (rho + 1), 0.0)
    return (U * s) @ Vt


@pytest.mark.parametrize("seed", [4, 5])
def test_an_inexact_lmo_gives_no_false_certificate(seed):
    """A loose Lanczos tolerance can return an eigenpair that is not the extreme one: the block's FW
    gap then comes out negative, which an exact LMO never gives. The bound must not certify such a
    point (NaN), whatever the status; with the default tolerance the bound holds."""
    C = np.random.default_rng(seed).standard_normal((60, 50))
    f_star = float(np.sum((_project_onto_nuclear_ball(C, 5.0) - C) ** 2))
    for lmo_tol in (1e-2, 0.3, None):
        X = fm.Variable(C.shape)
        options = {} if lmo_tol is None else dict(lmo_tol=lmo_tol, dense_threshold=2)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 5.0, **options)])
        prob.solve()
        bound = prob.stats.suboptimality_bound
        assert np.isnan(bound) or prob.value - f_star <= bound + 1e-9 * f_star, (lmo_tol, bound)
        if lmo_tol is None:
            assert prob.status == "optimal" and np.isfinite(bound)
            assert prob.value - f_star <= bound + 1e-9 * f_star


def test_a_reference_gap_at_rounding_level_is_zero_not_a_scale():
    """x_ref minimizing f's linearization, but the two inner products summed in other orders: the FW gap
    comes out ~1e-17 instead of 0, and a scale of that size would make test (1) unreachable."""
    from fwmodel.engine.stopping import objective_gap
    from fwmodel.sets.atoms import DenseAtom

    x = np.array([0.1, 0.2, 0.3, 0.4])
    g = np.array([1.0 / 3.0, 2.0 / 3.0, 1.0, 4.0 / 3.0])
    same_point = x.copy()
    same_point[0] += 1e-15  # the same vertex, a few roundings away
    block = Block(0, 4, lambda d: DenseAtom(same_point), lambda: DenseAtom(x), True)
    rounded = float(np.dot(x, g) - np.dot(same_point, g))
    assert rounded != 0.0  # (what the gap was before)
    assert objective_gap([block], x, g) == 0.0
    farther = x.copy()
    farther[0] -= 1e-9  # a true gap of 1e-9 / 3 stays
    block = Block(0, 4, lambda d: DenseAtom(farther), lambda: DenseAtom(x), True)
    assert objective_gap([block], x, g) == pytest.approx(1e-9 / 3.0, rel=1e-6)


def test_a_capped_simplex_under_rows_whose_start_minimizes_f_reaches_optimal():
    """Found by benchmarks/trust_fuzz.py (model 688, its data below): the start minimized f's
    linearization over the capped simplex, the FW gap there came out 9e-16 by rounding, that became
    the objective's scale, and the solve ran to max_iter at the optimum."""
    A_eq = np.array([[-0.17337920431999326, -1.39970519635407, 0.06637946543353329, -0.3068740390001925],
                     [0.11934687273106741, 0.5993082525297846, -1.12266344839118, -0.6712592583386112]])
    b_eq = np.array([-0.42764279656308396, -0.37844711255377295])
    A = np.array([[-0.02695738894178449, -0.9174345655164525, 0.3184867079160397, -3.1576671442411195],
                  [0.3256304461467233, 3.035331789112512, -0.28169777871310053, 0.9618358706790996],
                  [0.36749321131482815, -0.01790380038435255, -2.403266649396051, -0.4133665414339964],
                  [0.7844587451497219, 0.22068691686535444, 2.064379095819061, 2.6588188728870517],
                  [1.3443370572542137, -1.393343323048155, 0.09637850295510514, -0.7019174905402777],
                  [0.1400337494557569, -0.5768047528580768, -0.85757479653237, -1.3954395350128224],
                  [1.0146453146608416, -1.55010097844168, 0.00484106759741965, -0.4684706312582631]])
    b = np.array([1.0863379490882488, 1.1027312683981885, 0.7293381626132496, -0.3418902090101014,
                  -0.05504284285897061, -0.47895313758102215, -2.9710371401473306])
    c = np.array([-0.3771923134751569, -0.7254376110764241, -0.6719747208330475, -1.3050260309051056])
    x = fm.Variable(4)
    from fwmodel.sets.capped_simplex import CappedSimplex

    # the capped simplex as one set under the rows (the compiler merges the two sets only without rows)
    capped = CappedSimplex(fm.Simplex(x), fm.LinfBall(x, 0.3))
    prob = fm.Problem(fm.Maximize(-fm.sum_squares(A @ x - b) + c @ x), [capped, A_eq @ x == b_eq])
    prob.solve()
    z = cp.Variable(4)
    ref = cp.Problem(cp.Maximize(-cp.sum_squares(A @ z - b) + c @ z),
                     [z >= 0, cp.sum(z) == 1, cp.norm_inf(z) <= 0.3, A_eq @ z == b_eq])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.stats.objective_scale > 1e-6
    assert prob.value == pytest.approx(ref.value, abs=1e-3 * max(1.0, abs(ref.value)))


# ---------------------------------------------------------------- a loose box around the solution
@pytest.mark.parametrize("bound", [10.0, 1e3, 1e6])
def test_a_loose_box_does_not_loosen_the_rows(bound):
    """``abs(y) <= B`` with B far above the solution (a "big-M" bound) and three rows ``A @ y == b``:
    test (3) is relative to the points' size, not to the box's corner (~ B sqrt(n)), so the answer
    does not depend on B. With the vertices' norms in the scale, B = 1e6 ended "optimal" 3.4e-3 below
    Clarabel's value with ||Ay - b|| = 1.3e-2 (B = 10: 3.2e-4)."""
    rng = np.random.default_rng(13)
    n = 5
    a, A, b = rng.standard_normal(n), rng.standard_normal((3, n)), rng.standard_normal(3)
    answers = []
    for m in (fm, cp):
        y = m.Variable(n)
        prob = m.Problem(m.Minimize(m.sum_squares(y - a)), [m.abs(y) <= bound, A @ y == b])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        assert prob.status == "optimal"
        answers.append((prob.value, y.value))
    (value, y), (ref, y_ref) = answers
    assert abs(value - ref) <= 1e-4 * abs(ref)  # tol relative to |f*| (the range is ~ B^2 here)
    assert np.linalg.norm(A @ y - b) <= 1e-4 * max(np.linalg.norm(b), np.linalg.norm(y_ref)) * 5


@pytest.mark.parametrize("bound", [10.0, 1e3, 1e6])
def test_a_loose_box_does_not_loosen_the_multiplier_test(bound):
    """``abs(y) <= B`` and rows ``G @ y <= h`` active at the optimum: the objective scale S_f (f's FW gap over
    the box, ~ B ||grad f||_1) made test (2)'s floor, 1 % of S_f, let <y + lam r, r> hide 3.5e-4 of |f*|
    (the value below Clarabel's) at B >= 1e3; the floor is now taken of the values seen."""
    rng = np.random.default_rng(5)
    n = 8
    a, G = rng.standard_normal(n), rng.standard_normal((4, n))
    h = G @ (0.2 * rng.standard_normal(n)) - 0.5
    values = []
    for m in (fm, cp):
        y = m.Variable(n)
        prob = m.Problem(m.Minimize(m.sum_squares(y - a)), [m.abs(y) <= bound, G @ y <= h])
        values.append(prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL))
        assert prob.status == "optimal"
    assert abs(values[0] - values[1]) <= 1e-4 * abs(values[1])


# ---------------------------------------------------------------- the values' spread: points of the problem only
def _box103(s_obj, s_var):
    """A box QP with one equality row (n = 26, seed 103 of benchmarks/gap_scale.py's box family): f* = -0.23
    against a range over the box S_f = 117, in units s_obj (objective) and s_var (variable, box and row)."""
    rng = np.random.default_rng(103)
    n = int(rng.integers(20, 31))
    r = int(rng.integers(1, n + 3)) if rng.random() < 0.5 else 2
    A, bb = rng.standard_normal((r, n)), rng.standard_normal(r)
    me, mi = int(rng.integers(0, 10)), int(rng.integers(0, 10))
    E, _, c = rng.standard_normal((me, n)), rng.standard_normal((mi, n)), rng.standard_normal(n)
    rng.random()  # (a repeated row where me > 1)
    assert (me, mi, rng.random() < 0.3) == (1, 0, False)  # the drawn model: one row, quadratic objective
    xf = rng.uniform(0, 1, n)
    root = np.sqrt(s_obj)  # the units in the data: s_obj ||A x / s_var - bb||^2 = ||(root A / s_var) x - root bb||^2
    A_u, bb_u, c_u = root * A / s_var, root * bb, 0.1 * s_obj * c / s_var
    models = []
    for m in (fm, cp):
        x = m.Variable(n)
        obj = m.sum_squares(A_u @ x - bb_u) + c_u @ x
        models.append(m.Problem(m.Minimize(obj), [x >= 0, x <= s_var, E @ x == s_var * (E @ xf)]))
    return models


@pytest.mark.parametrize("s_obj, s_var", [(1.0, 1.0), (1e-2, 1e3)])
def test_a_small_optimum_over_a_box_is_reached_relative_to_itself(s_obj, s_var):
    """f* = -0.23 with S_f = 117 and a starting point (x = 0) off the row: the spread of f's values behind
    test (2)'s floor counted f(x_ref), and "optimal" stopped 1.1 % above Clarabel's value (3,596
    iterations; in units 1e-2 / 1e3 main took another trajectory, 2,148 iterations, 6e-4 off). The spread
    counts the points that meet test (3) now: within 1e-3 of |f*| (963 iterations, 5e-5) in both units."""
    prob, ref = _box103(s_obj, s_var)
    ref.solve(solver="CLARABEL")
    prob.solve()
    assert prob.status == "optimal"
    assert prob.stats.objective_scale > 100 * abs(ref.value)  # the regime: a range far above |f*|
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)


def _huge_rows(unit, ineq):
    """``sum_squares(x - 1e6 x0)`` over ``0 <= x <= 1e7`` with rows whose right-hand sides are ~1e6 (f* = 2.4e5,
    f(x_ref) = 3.6e12, S_f = 1.2e14), data and variable times ``unit``."""
    rng = np.random.default_rng(1)
    n = 15
    rng.standard_normal((10, n)), rng.standard_normal(10)
    E, G = rng.standard_normal((3, n)), rng.standard_normal((4, n))
    x0 = rng.uniform(0, 1, n)
    models = []
    for m in (fm, cp):
        x = m.Variable(n)
        cons = [x >= 0, x <= 1e7 * unit, E @ x == (1e6 * (E @ x0) + 1e3) * unit]
        cons += [G @ x <= 1e6 * (G @ x0 + 0.1) * unit] if ineq else []
        models.append(m.Problem(m.Minimize(m.sum_squares(x - 1e6 * unit * x0)), cons))
    return models


@pytest.mark.parametrize("ineq", [True, False])
@pytest.mark.parametrize("unit", [1.0, 1e-3])
def test_rows_with_huge_right_hand_sides_are_met_to_the_value_they_move(unit, ineq):
    """Rows met to feas_tol = 1e-4 relative (||Ex - b|| ~ 260) move f by |y| ||Ex - b|| ~ 5e4, a fifth of
    f* = 2.4e5: test (2) asks <y + lam r, r> for tol of |f|, but its floor, 1 % of the values' spread, was
    taken from f(x_ref) = 3.6e12 at x = 0, a point far off the rows, and "optimal" ended 9-17 % off
    Clarabel's value in 35-37 iterations. Counting only the points that meet test (3): within 1e-3 of |f*|,
    with the same iterations in both units."""
    prob, ref = _huge_rows(unit, ineq)
    ref.solve(solver="CLARABEL")
    prob.solve()
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    reference = _huge_rows_iterations.setdefault(ineq, prob.stats.iterations)
    assert prob.stats.iterations == reference


_huge_rows_iterations = {}


def test_the_values_spread_counts_only_points_that_meet_the_feasibility_test():
    """StoppingRule alone: a value at a point that violates test (3) sets A_t (|f| there) but not the spread
    behind its floor, in any units."""
    from fwmodel.engine.stopping import StoppingRule

    for unit, rows in ((1e-6, 1e3), (1.0, 1.0), (1e6, 1e-3)):
        rule = StoppingRule(1e-4, 1e-4, objective_scale=1e14 * unit, feasibility_scale=1e6 * rows)
        rule.point_scale = 1e6 * rows
        rule.observe_value(5e12 * unit, feas=1e6 * rows)  # far off the rows: no value of the problem
        assert rule.value_spread == 0.0 and rule.accuracy_scale == pytest.approx(5e12 * unit)
        rule.observe_value(2.0e5 * unit, feas=50.0 * rows)  # meets (3): 5e-5 relative
        rule.observe_value(2.4e5 * unit, feas=10.0 * rows)
        assert rule.value_spread == pytest.approx(4e4 * unit)
        assert rule.accuracy_scale == pytest.approx(2.4e5 * unit)
        rule.observe_value(0.0, feas=0.0)  # f = 0: 1 % of the spread of the feasible values (2.4e5)
        assert rule.accuracy_scale == pytest.approx(2.4e3 * unit)
