"""``dual_value`` of ``E >> 0`` (CVXPY's PSD matrix Z) and of its trace bound, against CVXPY + Clarabel.

The compiler holds E in the PSD trace ball ``{E PSD, trace E <= r}``; the
block's KKT conditions give ``Z = G + mu I`` (G the symmetrized gradient of
the augmented Lagrangian in E, mu the trace bound's multiplier), which is
CVXPY's dual: PSD, with ``<Z, E> = 0``.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-9, feas_tol=1e-9, max_iter=200000)
N = 4
_rng = np.random.default_rng(0)
B = _rng.standard_normal((N, N))
B = B + B.T
SHIFT = 0.1 * np.eye(N)

MODELS = {
    "Y >> 0, trace bound active": lambda m, Y: (m.sum_squares(Y - B), [Y >> 0, m.trace(Y) <= 1], Y),
    "Y >> 0, trace bound slack": lambda m, Y: (m.sum_squares(Y - B), [Y >> 0, m.trace(Y) <= 10], Y),
    "Y >> 0, trace equality": lambda m, Y: (m.sum_squares(Y - B), [Y >> 0, m.trace(Y) == 1], Y),
    "0 << Y, linear objective": lambda m, Y: (m.trace(B @ Y), [0 << Y, m.trace(Y) <= 1], Y),
    "Y << 0": lambda m, Y: (m.sum_squares(Y - B), [Y << 0, m.trace(Y) >= -2], -Y),
    "Y >> 0.1 I": lambda m, Y: (m.sum_squares(Y - B), [Y >> SHIFT, m.trace(Y - SHIFT) <= 2], Y - SHIFT),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_psd_constraint_dual_value_is_cvxpys(name):
    results = []
    for m in (fm, cp):
        Y = m.Variable((N, N), symmetric=True)
        objective, constraints, E = MODELS[name](m, Y)
        prob = m.Problem(m.Minimize(objective), constraints)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=cp.CLARABEL)
            assert prob.status == cp.OPTIMAL
        results.append((prob.value, constraints, E.value))
    (value, ours, E), (ref, theirs, _) = results
    assert abs(value - ref) <= 1e-6 * max(1.0, abs(ref))
    Z = ours[0].dual_value
    assert isinstance(Z, np.ndarray) and Z.shape == (N, N)
    np.testing.assert_allclose(Z, theirs[0].dual_value, atol=1e-4)
    np.testing.assert_allclose(Z, Z.T, atol=1e-12)
    assert np.linalg.eigvalsh(Z)[0] >= -1e-6  # PSD, up to the solve's accuracy
    assert abs(np.vdot(Z, E)) <= 1e-6 * max(1.0, np.abs(Z).max())  # complementary to E
    assert ours[1].dual_value == pytest.approx(theirs[1].dual_value, rel=1e-4, abs=1e-6)


def test_psd_and_bound_duals_where_the_trace_bound_comes_from_the_diagonals_bounds():
    """Y >> 0 bounded only by Y <= 0.2 entrywise: the compiler closes it with trace(Y) <= sum of the diagonal's
    bounds, an active bound whose row is the sum of those bounds' rows. Its multiplier mu gives Z = G + mu I,
    and is part of each diagonal bound's multiplier (it was left out of both: Z was None and the bounds'
    duals the box's share alone). The optimum is rank one with off-diagonal entries at the bound too, so
    the multipliers are not unique (Clarabel's differ from ours by 0.5): checked by CVXPY's KKT conditions
    (stationarity, Z PSD, <Z, Y> = 0, nu >= 0 and complementary), the value against Clarabel."""
    Y = fm.Variable((N, N), symmetric=True)
    psd, bound = Y >> 0, Y <= 0.2
    target = B + 2 * np.eye(N)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(Y - target)), [psd, bound])
    prob.solve(**TIGHT)
    assert prob.status == fm.OPTIMAL
    Yc = cp.Variable((N, N), symmetric=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(Yc - target)), [Yc >> 0, Yc <= 0.2]).solve(solver=cp.CLARABEL)
    assert prob.value == pytest.approx(ref, rel=1e-7)
    Yv, Z, nu = Y.value, psd.dual_value, bound.dual_value
    assert np.trace(Yv) == pytest.approx(0.2 * N, rel=1e-6)  # the derived trace bound is active
    assert Z is not None and nu is not None
    scale = float(np.abs(nu).max())
    np.testing.assert_allclose(2 * (Yv - target) + 0.5 * (nu + nu.T) - Z, 0.0, atol=1e-6 * scale)
    assert np.linalg.eigvalsh(Z)[0] >= -1e-6 * scale
    assert abs(float(np.vdot(Z, Yv))) <= 1e-6 * scale
    assert nu.min() >= 0.0 and np.abs(nu * (0.2 - Yv)).max() <= 1e-6 * scale
