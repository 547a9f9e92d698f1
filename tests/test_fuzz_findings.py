"""Regressions for what the randomized cross-check (benchmarks/trust_fuzz.py) found, each against Clarabel.

- a projected-gradient step that sees no curvature along the gradient (a
  linear objective on two tied copies of a vector, both with a cheap
  projection) took a step of length ||grad|| (an absolute curvature 1.0):
  with the objective in small units or the sets in large ones it crawled to
  max_iter, 96 % off the optimum, where unit scale was optimal in 28
  iterations;
- the default penalty with one row on a few entries of a trace-norm block
  (``X[0, 1] == c``, ``fm.sum(X[0, :]) == c``): the first FW vertex, a
  rank-one u v' with little mass on those entries, gave lam up to 4.7e5 and
  max_iter 55 % off (the floor of ``default_penalty`` weighed d's own
  entries, the same few).
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from _benchmarks import benchmark


def _linear_over_l2_and_linf(s, s_obj, c):
    x = fm.Variable(c.size, name="x")
    prob = fm.Problem(fm.Minimize(s_obj * (c @ x)), [fm.norm_inf(x) <= 0.3 * s, fm.L2Ball(x, 0.5 * s)])
    return prob, x


@pytest.mark.parametrize("s, s_obj", [(1.0, 1.0), (1.0, 1e-6), (1e6, 1.0), (1e-6, 1e6), (1e6, 1e-6)])
def test_linear_objective_on_projected_copies_is_solved_in_any_units(s, s_obj):
    c = np.random.default_rng(214).standard_normal(19)
    z = cp.Variable(c.size)
    reference = cp.Problem(cp.Minimize(c @ z), [cp.norm_inf(z) <= 0.3, cp.norm(z, 2) <= 0.5])
    reference.solve(solver="CLARABEL")
    f_star = s_obj * s * reference.value  # the optimum scales with the objective and the data

    prob, x = _linear_over_l2_and_linf(s, s_obj, c)
    value = prob.solve()
    assert prob.status == "optimal"
    assert prob.stats.step_counts["projection"] > 0  # the path of the fix: both copies project
    assert abs(value - f_star) <= 1e-3 * abs(f_star)
    np.testing.assert_allclose(x.value / s, z.value, atol=1e-2)
    unit, _ = _linear_over_l2_and_linf(1.0, 1.0, c)
    unit.solve()
    assert prob.stats.iterations <= 2 * unit.stats.iterations


ROW_ON_FEW_ENTRIES = [
    ("entry", (3, 9), lambda X: X[0, 1], 0.1),
    ("row sum", (4, 4), lambda X: X[0, :].sum() if isinstance(X, cp.Expression) else fm.sum(X[0, :]), -0.3),
]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("label, shape, row, value", ROW_ON_FEW_ENTRIES)
def test_one_row_on_few_entries_of_a_trace_norm_ball_is_solved_with_defaults(label, shape, row, value, seed):
    C = np.random.default_rng(seed).standard_normal(shape)
    Y = cp.Variable(shape)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(Y - C)), [cp.normNuc(Y) <= 1.5, row(Y) == value])
    reference.solve(solver="CLARABEL")

    X = fm.Variable(shape, name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 1.5), row(X) == value])
    found = prob.solve()
    assert prob.status == "optimal"
    assert abs(found - reference.value) <= 1e-3 * abs(reference.value)


@pytest.mark.parametrize("s, s_obj", [(1.0, 1.0), (1.0, 1e-6), (1e6, 1e-6)])
def test_tied_copies_step_without_curvature_is_the_general_step(s, s_obj, monkeypatch):
    """A linear objective on two tied copies that both project: the first projection step sees no curvature and
    no penalty along the gradient. The tied-copies path took lam (else 1.0) as curvature there, the general path
    the stopping rule's S_f / S_x^2: one rule now, so both paths give the same iterates (up to rounding), and the
    solve reaches Clarabel's optimum."""
    from fwmodel.engine.projection_step import ProjectionStep

    c = np.random.default_rng(214).standard_normal(19)
    tied_calls = []
    original = ProjectionStep._take_tied_copies
    monkeypatch.setattr(ProjectionStep, "_take_tied_copies",
                        lambda self, *args: tied_calls.append(1) or original(self, *args))
    tied, x_tied = _linear_over_l2_and_linf(s, s_obj, c)
    tied.solve(max_iter=6)
    assert tied_calls  # the tied-copies path ran
    monkeypatch.setattr(ProjectionStep, "_tied_copies", lambda self, lagrangian: None)
    # the same dual schedule (lam kept fixed after tied copies' steps): only the step's arithmetic differs
    monkeypatch.setattr(ProjectionStep, "on_tied_copies", lambda self, lagrangian: True)
    general, x_general = _linear_over_l2_and_linf(s, s_obj, c)
    general.solve(max_iter=6)
    np.testing.assert_allclose(x_tied.value, x_general.value, rtol=1e-9, atol=1e-12 * s)

    z = cp.Variable(c.size)
    f_star = cp.Problem(cp.Minimize(c @ z), [cp.norm_inf(z) <= 0.3, cp.norm(z, 2) <= 0.5]).solve(solver="CLARABEL")
    monkeypatch.undo()
    full, _ = _linear_over_l2_and_linf(s, s_obj, c)
    value = full.solve()
    assert full.status == "optimal"
    assert abs(value - s_obj * s * f_star) <= 1e-3 * abs(s_obj * s * f_star)


def test_backtracking_does_not_blow_up_on_a_decrease_below_rounding():
    """A direction whose whole predicted decrease is below the rounding of phi (a FW gap of 4e-16): phi(gamma)
    comes out equal to phi(0). The sufficient-decrease test failed at every L and doubled the estimate 60 times
    (2^60); now the step is taken and the estimate is the usual shrink of the previous one."""
    from fwmodel.engine.line_search import Backtracking

    search = Backtracking(lipschitz=1e-2)
    phi0 = 1.2110399223081514
    gamma, value = search.step(lambda gamma: phi0, phi0, slope=-4e-16, d_norm2=1e-30, gamma_max=1.0)
    assert gamma == 1.0 and value == phi0
    assert search.lipschitz == pytest.approx(1e-2 * Backtracking.shrink)


def _fuzz_model(index):
    """Model ``index`` of benchmarks/trust_fuzz.py (its own generator, seed 20261126 + index)."""
    return benchmark("trust_fuzz").make_model(index, 20261126)


@pytest.mark.parametrize("s", [1.0, 1e6])
def test_log_sum_exp_on_a_ksparse_polytope_with_rows_is_solved_in_any_units(s):
    """Model 1550 of the fuzz run on seeds 1000-1599: log_sum_exp(D x) over norm_inf(x) <= 0.4, norm1(x) <= 0.8
    (a k-sparse polytope), 3 equality rows and 1 inequality row. In units of 1e6 a pairwise step of rounding size
    (the rounding above) blew up the backtracking estimate: max_iter 13 % off, where unit scale was optimal in 503
    iterations. Now optimal at both scales, at Clarabel's optimum."""
    model = _fuzz_model(1550)
    obj, cons, _ = model.build("cp", 1.0, 1.0)
    f_star = cp.Problem(obj, cons).solve(solver="CLARABEL")
    obj, cons, _ = model.build("fm", s, 1.0)
    prob = fm.Problem(obj, cons)
    value = prob.solve()
    assert prob.status == "optimal"
    assert abs(value - f_star) <= 1e-4 * max(abs(f_star), prob.stats.objective_scale / 100)


@pytest.mark.parametrize("index", [796, 710, 1278])
def test_models_whose_default_penalty_is_far_too_small_are_solved(index):
    """Models 796 (a simplex with three rows that meet it in one point), 710 (Birkhoff ∩ PSD trace ball with an
    entry row) and 1278 (k-sparse ∩ L2 ball, two rows, a Huber objective): the default penalty was 10-10^4 times
    smaller than the rows' multipliers need, y drifted toward them at a steady pace with the same residual window
    after window, and the solves ended at max_iter (796 90 % off). The schedule now raises lam on that drift."""
    model = _fuzz_model(index)
    obj, cons, _ = model.build("cp", 1.0, 1.0)
    f_star = cp.Problem(obj, cons).solve(solver="CLARABEL")
    obj, cons, _ = model.build("fm", 1.0, 1.0)
    prob = fm.Problem(obj, cons)
    value = prob.solve()
    assert prob.status == "optimal"
    assert abs(value - f_star) <= 1e-4 * max(abs(f_star), prob.stats.objective_scale / 100)
