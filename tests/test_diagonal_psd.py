"""``X >> 0`` with ``fm.diag(X) == d`` (the MaxCut SDP relaxation), checked against CVXPY + Clarabel.

The rows fix X's diagonal, so ``trace X == sum(d)``: the compiler closes the
PSD cone with the PSD trace ball of that radius (it was refused: "nothing
bounds it"). The rows stay rows; their ``dual_value`` is CVXPY's, the rows'
multipliers plus the ball's (``y_i + mu / a_i``), and ``X >> 0``'s is Z.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


@pytest.mark.parametrize("n, declare, d", [(4, "symmetric", 1.0), (10, "symmetric", 1.0), (6, "PSD", 2.0),
                                           (5, "symmetric", "vector")])
def test_maxcut_relaxation_matches_cvxpy(n, declare, d):
    rng = np.random.default_rng(n)
    W = rng.standard_normal((n, n))
    S = (W + W.T) / 2
    diag = np.linspace(0.5, 2.0, n) if d == "vector" else d
    duals = []
    for m in (fm, cp):
        X = m.Variable((n, n), **{declare: True})
        e = 2 * m.diag(X) == 2 * diag  # (coefficient 2: the row's multiplier is in its own units)
        constraints = [e] if declare == "PSD" else [k := X >> 0, e]
        prob = m.Problem(m.Minimize(m.trace(S @ X)), constraints)
        if m is fm:
            prob.solve(tol=1e-7, feas_tol=1e-7)
            assert prob.status == fm.OPTIMAL
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=cp.CLARABEL)
        duals.append((prob.value, e.dual_value, None if declare == "PSD" else k.dual_value))
    (value, nu, Z), (ref, nu_ref, Z_ref) = duals
    assert abs(value - ref) <= 1e-5 * max(1.0, abs(ref))
    assert nu is not None and nu.shape == np.shape(nu_ref)
    np.testing.assert_allclose(nu, nu_ref, rtol=1e-3, atol=1e-3)
    if Z is not None:
        np.testing.assert_allclose(Z, Z_ref, atol=1e-3)


def test_a_partly_fixed_diagonal_still_needs_a_bound():
    X = fm.Variable((3, 3), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.trace(X)), [X >> 0, X[0, 0] == 1, X[1, 1] == 1])
    with pytest.raises(fm.ModelError, match="nothing bounds it"):
        prob.solve()


@pytest.mark.parametrize("seed, form", [(3, "diag(X) <= 1"), (4, "diag(X) <= 1"), (3, "2 diag(X) <= 2"),
                                        (4, "diag(X) <= h"), (3, "PSD=True, diag(X) <= 1")])
def test_diagonal_upper_bounds_carry_the_trace_balls_multiplier(seed, form):
    # X >> 0 with diag(X) <= h: the compiler closes the cone with the PSD trace ball of radius sum(h). With
    # every bound binding that ball is active, and its multiplier mu is part of each bound's (the trace row
    # is the sum of the bounds' rows): the bounds' dual_value was the box's share alone, mu below CVXPY's
    # by a few tenths, and X >> 0's was None.
    n = 5
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, n))
    C = (C + C.T) / 2
    duals = []
    for m in (fm, cp):
        declared = form.startswith("PSD=True")  # (no X >> 0 written: the variable's attribute)
        X = m.Variable((n, n), PSD=True) if declared else m.Variable((n, n), symmetric=True)
        bound = {"diag(X) <= 1": m.diag(X) <= 1, "2 diag(X) <= 2": 2 * m.diag(X) <= 2,
                 "diag(X) <= h": m.diag(X) <= np.linspace(0.5, 2.0, n),
                 "PSD=True, diag(X) <= 1": m.diag(X) <= 1}[form]
        psd = None if declared else X >> 0
        prob = m.Problem(m.Maximize(m.trace(C @ X)), [bound] if declared else [psd, bound])
        if m is fm:
            prob.solve(tol=1e-8)
            assert prob.status == fm.OPTIMAL
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=cp.CLARABEL)
        duals.append((prob.value, bound.dual_value, None if declared else psd.dual_value))
    (value, nu, Z), (ref, nu_ref, Z_ref) = duals
    assert abs(value - ref) <= 1e-6 * max(1.0, abs(ref))
    assert np.min(nu_ref) > 1e-2  # every bound binds (the case where the ball's multiplier counts)
    np.testing.assert_allclose(nu, nu_ref, rtol=1e-3, atol=1e-3)
    if Z_ref is not None:
        assert Z is not None
        np.testing.assert_allclose(Z, Z_ref, atol=1e-3)
