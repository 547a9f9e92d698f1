"""``fm.sum_squares(e) <= t`` and ``fm.quad_form(e, P) <= t``: Euclidean balls written squared, as CVXPY users do.

The compiler holds ``sum_squares(e) <= t`` as the ball ``norm2(e) <= sqrt(t)``
and ``quad_form(e, P) <= t`` (P constant, PSD, ``P = L L'``) as ``norm2(L' e)
<= sqrt(t)``; the constraint's ``dual_value`` is CVXPY's multiplier of the
form written, the ball's over ``2 sqrt(t)``. Checked against closed forms and
CVXPY + Clarabel.
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


def test_a_portfolio_with_a_risk_bound_written_as_a_quadratic_form():
    # CVXPY's portfolio example: max mu'w s.t. w'Sigma w <= risk, sum(w) == 1, w >= 0
    rng = np.random.default_rng(3)
    n = 20
    F = rng.standard_normal((n, 3))
    sigma = 0.01 * F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    out = []
    for m in (fm, cp):
        w = m.Variable(n)
        risk = m.quad_form(w, sigma) <= 0.02
        prob = m.Problem(m.Maximize(mu @ w), [risk, m.sum(w) == 1, w >= 0])
        if m is fm:
            prob.solve(tol=1e-7)
            assert prob.status == fm.OPTIMAL
            assert float(w.value @ sigma @ w.value) <= 0.02 * (1 + 1e-4)
        else:
            clarabel(prob)
        out.append((prob.value, float(np.ravel(risk.dual_value)[0])))
    (value, dual), (ref, dual_ref) = out
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
