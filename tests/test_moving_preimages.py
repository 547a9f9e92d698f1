"""Sets on ``x - q`` and on ``multiply(p, x) + c`` with Parameters q, p, c, alone on x (CVXPY solves them).

``fm.quad_form(x - q, P) <= r`` is the ellipsoid around q: a set on x itself whose center is read at each
solve (``MovingPreimage``); ``fm.norm1(fm.multiply(p, x) + c) <= r`` (p a vector Parameter) is the ball on
``p * x + c`` seen from x, its scale and offset read at each solve (``ScaledPreimage``). Both were refused
("not in any bounded set"). Values, points and dual values are checked against CVXPY + Clarabel, across
warm re-solves of one Problem after the Parameters move.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.errors import ModelError
from _benchmarks import benchmark

cp = pytest.importorskip("cvxpy")


def _clarabel(problem):
    problem.solve(solver="CLARABEL")
    return problem


def _benchmark_models():
    """benchmarks/maps_and_domains.py, whose model builders these tests share."""
    return benchmark("maps_and_domains")


@pytest.mark.parametrize("nonneg", [False, True])
def test_quad_form_around_a_parameter_center(nonneg):
    prob, x, q, con, centers, reference = _benchmark_models().quad_form_around_a_center(nonneg)
    for q_value in centers:
        q.value = q_value
        value = prob.solve(tol=1e-9, feas_tol=1e-9, warm_start=True)
        ref, xc, cc = reference(q_value)
        ref = _clarabel(ref)
        assert prob.status == "optimal", prob.stats.message
        assert value == pytest.approx(ref.value, rel=1e-6, abs=1e-6)
        np.testing.assert_allclose(x.value, xc.value, atol=2e-3)
        assert float(con.dual_value) == pytest.approx(float(np.ravel(cc.dual_value)[0]), rel=2e-3, abs=1e-5)


@pytest.mark.parametrize("kind", ["norm1", "norm2", "norm_inf", "abs"])
def test_norm_of_a_vector_parameter_multiple(kind):
    rng = np.random.default_rng(2)
    n = 6
    w = 3 * rng.standard_normal(n)
    fm_atom = {"norm1": fm.norm1, "norm2": lambda e: fm.norm(e, 2), "norm_inf": fm.norm_inf, "abs": fm.abs}[kind]
    cp_atom = {"norm1": cp.norm1, "norm2": lambda e: cp.norm(e, 2), "norm_inf": cp.norm_inf, "abs": cp.abs}[kind]
    x, p, c = fm.Variable(n), fm.Parameter(n), fm.Parameter(n)
    con = fm_atom(fm.multiply(p, x) + c) <= 1.5
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - w)), [con])
    for p_value in (rng.uniform(0.5, 2, n), rng.uniform(-3, 3, n), 1e-3 * rng.uniform(1, 2, n)):
        c_value = 0.3 * rng.standard_normal(n)
        p.value, c.value = p_value, c_value
        value = prob.solve(tol=1e-9, feas_tol=1e-9, warm_start=True)
        xc = cp.Variable(n)
        cc = cp_atom(cp.multiply(p_value, xc) + c_value) <= 1.5
        ref = _clarabel(cp.Problem(cp.Minimize(cp.sum_squares(xc - w)), [cc]))
        assert prob.status == "optimal", prob.stats.message
        assert value == pytest.approx(ref.value, rel=1e-6, abs=1e-6)
        np.testing.assert_allclose(x.value, xc.value, atol=2e-3 * max(1.0, float(np.abs(xc.value).max())))
        np.testing.assert_allclose(np.ravel(con.dual_value), np.ravel(cc.dual_value), rtol=2e-3, atol=1e-4)


def test_a_zero_entry_of_the_vector_parameter_is_named():
    """p_i = 0 leaves x_i unbounded by the constraint, and nothing else holds x: a ModelError naming the
    constraint and the entries, saying to bound x with another set; the next solve with p nonzero is
    CVXPY's again, and with a box on x the zero p solves (the ball stays on the expression)."""
    n = 4
    w = np.array([2.0, -1.0, 0.5, 3.0])
    x, p = fm.Variable(n), fm.Parameter(n, value=np.ones(n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - w)), [fm.norm1(fm.multiply(p, x)) <= 1.0])
    prob.solve()
    p.value = np.array([1.0, 0.0, 2.0, 0.0])
    with pytest.raises(ModelError, match=r"norm1\(.*\) <= 1.*flat entries 1, 3.*fm\.Box"):
        prob.solve()
    p.value = np.array([1.0, 0.5, 2.0, 1.0])
    value = prob.solve(tol=1e-9, feas_tol=1e-9)
    xc = cp.Variable(n)
    ref = _clarabel(cp.Problem(cp.Minimize(cp.sum_squares(xc - w)), [cp.norm1(cp.multiply(p.value, xc)) <= 1.0]))
    assert prob.status == "optimal" and value == pytest.approx(ref.value, rel=1e-6)
    boxed = fm.Problem(fm.Minimize(fm.sum_squares(x - w)), [fm.norm1(fm.multiply(p, x)) <= 1.0, x >= -5, x <= 5])
    p.value = np.array([1.0, 0.0, 2.0, 0.0])
    value = boxed.solve(tol=1e-9, feas_tol=1e-9)
    ref = _clarabel(cp.Problem(cp.Minimize(cp.sum_squares(xc - w)),
                               [cp.norm1(cp.multiply(p.value, xc)) <= 1.0, xc >= -5, xc <= 5]))
    assert boxed.status == "optimal" and value == pytest.approx(ref.value, rel=1e-5)
