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


def test_psd_dual_is_none_where_the_trace_bound_comes_from_the_diagonals_bounds():
    """Y >> 0 bounded only by Y <= 0.2 entrywise: the compiler closes it with trace(Y) <= sum of the diagonal's
    bounds, an active bound whose multiplier belongs to those bounds (Z = G + diag(their multipliers)),
    not a trace constraint's: None, not a wrong Z."""
    Y = fm.Variable((N, N), symmetric=True)
    psd = Y >> 0
    prob = fm.Problem(fm.Minimize(fm.sum_squares(Y - B - 2 * np.eye(N))), [psd, Y <= 0.2])
    prob.solve(**TIGHT)
    assert prob.status == fm.OPTIMAL
    assert np.trace(Y.value) == pytest.approx(0.2 * N, rel=1e-6)  # the derived trace bound is active
    assert psd.dual_value is None
