"""A cold start inside the sets where the objective is infinite at their starting vertex.

``-sum(log(z))`` (an ``fm.smooth`` atom) on a box ``0 <= z <= 1``, a simplex or a budget is infinite at the
vertex the iterates started from (the origin, or the LMO of a zero direction), so the solve ended "diverged"
at iteration 0 where CVXPY solves it. The engine now starts such blocks at the mean of their starting atom
and the vertices that move each coordinate with an infinite gradient inward
(``engine.warm_start.interior_start``). Values and points against CVXPY + Clarabel.
"""
import warnings

import numpy as np
import pytest
import sympy as sp

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

z = sp.Symbol("z", positive=True)
C = np.random.default_rng(19).standard_normal(5)

MODELS = {  # name: (fwmodel constraints, CVXPY constraints), on z
    "z >= 0, z <= 1": (lambda x: [x >= 0, x <= 1], lambda x: [x >= 0, x <= 1]),
    "fm.Box(z, 0, 1)": (lambda x: [fm.Box(x, 0, 1)], lambda x: [x >= 0, x <= 1]),
    "z >= 0, sum(z) <= 2, z <= 1": (lambda x: [x >= 0, fm.sum(x) <= 2, x <= 1],
                                    lambda x: [x >= 0, cp.sum(x) <= 2, x <= 1]),
    "fm.Simplex(z)": (lambda x: [fm.Simplex(x)], lambda x: [x >= 0, cp.sum(x) == 1]),
    "z >= 0, sum(z) == 1": (lambda x: [x >= 0, fm.sum(x) == 1], lambda x: [x >= 0, cp.sum(x) == 1]),
    "z >= 0, z[:2] <= 1, sum(z[2:]) == 1": (lambda x: [x >= 0, x[:2] <= 1, fm.sum(x[2:]) == 1],
                                            lambda x: [x >= 0, x[:2] <= 1, cp.sum(x[2:]) == 1]),
}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("linear", [True, False])
def test_minus_log_on_sets_whose_corner_is_the_domains_edge_solves_as_cvxpy(name, linear):
    ours, theirs = MODELS[name]
    x = fm.Variable(5)
    rest = C @ x if linear else fm.sum_squares(x - C)
    prob = fm.Problem(fm.Minimize(-fm.sum(fm.smooth(sp.log(z), {z: x})) + rest), ours(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=20000)
    xc = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(-cp.sum(cp.log(xc)) + (C @ xc if linear else cp.sum_squares(xc - C))), theirs(xc))
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL, prob.stats.message
    assert prob.value == pytest.approx(ref.value, rel=1e-6, abs=1e-6)
    np.testing.assert_allclose(x.value, xc.value, atol=1e-4)


def test_a_set_that_pins_the_argument_at_the_edge_still_ends_diverged():
    """Where no point of the set is inside the domain (z fixed at 0), there is no finite start: "diverged", as
    before (CVXPY: the objective is +inf at every feasible point)."""
    x = fm.Variable(3)
    prob = fm.Problem(fm.Minimize(-fm.sum(fm.smooth(sp.log(z), {z: x}))), [x >= 0, x[0] <= 0, x[1:] <= 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prob.solve()
    assert prob.status == "diverged"
