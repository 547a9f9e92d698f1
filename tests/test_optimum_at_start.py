"""Models whose optimum is the starting point X = 0 of a PSD trace ball, with rows beside it.

f's FW gap is 0 there up to rounding. Before: a rounding-level gap (6e-20) became the objective scale, and
the dual-residual test against it never held (max_iter after 10,000 iterations at the exact optimum); and a
rounding-level negative block gap (-5.5e-19, with x and the vertex at 1e-17) was read as an LMO that does
not minimize (a ModelError). Both are compared with CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

OPTIONS = [{}, dict(inface=True, projection=False, rank_k=False), dict(inface=False, projection=False)]


def _pd(n, seed):
    B = np.random.default_rng(seed).standard_normal((n, n))
    B = B + B.T
    return B @ B + 0.1 * np.eye(n)


@pytest.mark.parametrize("options", OPTIONS)
def test_psd_trace_rows_optimum_at_zero(options):
    n = 4
    P = _pd(n, 7)
    Z = cp.Variable((n, n), symmetric=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z + 0.1 * P)), [Z >> 0, cp.trace(Z) <= 1, cp.sum(Z) <= 0.5])
    ref.solve(solver=cp.CLARABEL)
    X = fm.Variable((n, n), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X + 0.1 * P)), [X >> 0, fm.trace(X) <= 1, fm.sum(X) <= 0.5])
    prob.solve(**options)  # a ModelError ("returned no minimizer") with the first two before
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert np.abs(X.value).max() < 1e-6


@pytest.mark.parametrize("options", OPTIONS)
def test_trace_ball_entry_bound_optimum_at_zero(options):
    n = 4
    P = np.eye(n)
    Z = cp.Variable((n, n), symmetric=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z + 0.1 * P)),
                     [Z >> 0, cp.trace(Z) <= 1, Z[0, 0] >= 0, cp.sum(Z) <= 0.5])
    ref.solve(solver=cp.CLARABEL)
    X = fm.Variable((n, n), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X + 0.1 * P)),
                      [fm.TraceNormBall(X, 1.0, psd=True), X[0, 0] >= 0.0, fm.sum(X) <= 0.5])
    prob.solve(max_iter=2000, **options)  # max_iter (10,000 at the defaults) before
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert np.abs(X.value).max() < 1e-6


@pytest.mark.parametrize("zero_entry", [False, True])
def test_negative_parameter_trace_bound_is_infeasible(zero_entry):
    """``trace(X) <= t`` with ``X >> 0`` and t < 0 at a solve: "infeasible" as CVXPY says (a ModelError about
    the ball's radius before), and the next solve with t >= 0 is optimal again at Clarabel's value."""
    n = 4
    C = np.random.default_rng(5).standard_normal((n, n))
    C = C + C.T
    results = {}
    for m in (cp, fm):
        t = m.Parameter()
        X = m.Variable((n, n), symmetric=True)
        cons = [X >> 0, m.trace(X) <= t] + ([X[0, 0] == 0] if zero_entry else [])
        prob = m.Problem(m.Minimize(m.sum_squares(X - C)), cons)
        for value in (2.0, -1.0, 1.0):
            t.value = value
            prob.solve(**({} if m is fm else dict(solver=cp.CLARABEL)))
            results[m.__name__, value] = (prob.status, prob.value)
    for value in (2.0, -1.0, 1.0):
        ours, theirs = results["fwmodel", value], results["cvxpy", value]
        assert ours[0] == theirs[0]
        if theirs[0] == "optimal":
            assert ours[1] == pytest.approx(theirs[1], rel=1e-4)
