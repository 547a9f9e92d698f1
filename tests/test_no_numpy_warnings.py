"""Valid models solve without NumPy RuntimeWarnings reaching the user.

Infinite entries are part of the data in places (a simplex group with no
finite floor, a Hessian entry at a domain's edge); the arithmetic on them is
judged by the code, and NumPy's "invalid value" warnings were noise that a
user running with warnings as errors saw as a crash.
"""
import warnings

import numpy as np
import pytest
import sympy as sp

import fwmodel as fm


def _solve_with_runtime_warnings_as_errors(prob, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return prob.solve(**options)


def test_entropy_on_a_floored_capped_simplex():
    # duals of the budget: the middle of [floor side, cap side] was formed as -inf + inf
    zp = sp.Symbol("zp", positive=True)
    w = fm.Variable(4)
    budget = fm.sum(w) == 1
    prob = fm.Problem(fm.Minimize(fm.sum(fm.smooth(zp * sp.log(zp), {zp: w}))), [w >= 0.01, budget, w <= 1])
    value = _solve_with_runtime_warnings_as_errors(prob)
    assert prob.status == "optimal"
    assert value == pytest.approx(-np.log(4.0), abs=1e-6)  # the uniform point
    np.testing.assert_allclose(w.value, 0.25, atol=1e-3)
    # stationarity at the uniform point: log(1/4) + 1 + nu = 0 (CVXPY's sign: the dual of sum(w) == 1)
    assert budget.dual_value == pytest.approx(-(np.log(0.25) + 1.0), rel=1e-2)


def test_power_whose_hessian_is_infinite_at_the_domain_edge():
    z = sp.Symbol("z")
    x = fm.Variable(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SymPy cannot prove z**1.5 convex on the whole line)
        atom = fm.smooth(z ** sp.Rational(3, 2) + z, {z: x})
    prob = fm.Problem(fm.Minimize(fm.sum(atom)), [x >= -1, x <= 1])
    value = _solve_with_runtime_warnings_as_errors(prob, max_iter=2000)
    assert prob.status == "optimal"
    assert value == pytest.approx(0.0, abs=1e-6)  # z**1.5 + z >= 0 on z >= 0, 0 at z = 0
