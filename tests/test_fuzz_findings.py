"""Regressions for what the randomized cross-check (benchmarks/trust_fuzz.py) found, each against Clarabel.

- a projected-gradient step that sees no curvature along the gradient (a
  linear objective on two tied copies of a vector, both with a cheap
  projection) took a step of length ||grad|| (an absolute curvature 1.0):
  with the objective in small units or the sets in large ones it crawled to
  max_iter, 96 % off the optimum, where unit scale was optimal in 28
  iterations.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm


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
