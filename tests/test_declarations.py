"""Sets declare what they offer; Problem and the compiler read only the declarations.

A user-defined set that declares a structure gets the same treatment as a
built-in set with that structure (no type is tested anywhere): symmetric
vertices (``keeps_symmetric``: no symmetry rows), a PSD set
(``implies_psd``: no trace ball added), a product of many groups
(``group_count``: no active-set steps on the whole block). Each answer is
checked against a closed form.
"""
import numpy as np
import pytest

import fwmodel as fm


class SymmetricUnitBox(fm.ConvexSet):
    """Symmetric matrices with entries in [-1, 1]; the LMO returns symmetric vertices."""

    is_polytope = True

    def __init__(self, expr, declare):
        super().__init__(expr)
        self.keeps_symmetric = declare

    def lmo(self, direction):
        D = np.asarray(direction, dtype=float)
        return np.where(0.5 * (D + D.T) > 0, -1.0, 1.0)


@pytest.mark.parametrize("declare", [True, False])
def test_keeps_symmetric_replaces_the_symmetry_rows(declare):
    n = 4
    C = np.random.default_rng(0).standard_normal((n, n)) * 1.5
    X = fm.Variable((n, n), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [SymmetricUnitBox(X, declare)])
    rows = prob.compile().M.shape[0]
    assert rows == (0 if declare else n * (n - 1) // 2)  # one row per pair (i, j), i < j, when undeclared
    prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=20000)
    closed_form = np.clip(0.5 * (C + C.T), -1.0, 1.0)  # the projection onto symmetric [-1, 1] matrices
    assert prob.status == "optimal"
    np.testing.assert_allclose(X.value, closed_form, atol=1e-3)


class PSDTraceBall(fm.ConvexSet):
    """{X symmetric PSD, trace X <= 1}: its vertices are 0 and u u' with ||u|| = 1."""

    def __init__(self, expr, declare):
        super().__init__(expr)
        self.implies_psd = declare

    def lmo(self, direction):
        D = np.asarray(direction, dtype=float)
        w, V = np.linalg.eigh(0.5 * (D + D.T))
        if w[0] >= 0:
            return np.zeros_like(D)
        return np.outer(V[:, 0], V[:, 0])


@pytest.mark.parametrize("declare", [True, False])
def test_implies_psd_replaces_the_added_trace_ball(declare):
    n = 3
    X = fm.Variable((n, n), PSD=True)
    C = np.diag([0.6, 0.3, -0.5])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [PSDTraceBall(X, declare)])
    # undeclared, the compiler closes the PSD variable with a trace ball of its own
    assert len(prob.compile().blocks) == (1 if declare else 2)
    prob.solve(tol=1e-6, feas_tol=1e-6)
    # closed form: project the eigenvalues (0.6, 0.3, -0.5) onto {z >= 0, sum z <= 1}
    np.testing.assert_allclose(X.value, np.diag([0.6, 0.3, 0.0]), atol=2e-3)


class OneSimplex(fm.ConvexSet):
    """The probability simplex; ``groups`` is what it declares as its group count."""

    is_polytope = True

    def __init__(self, expr, groups):
        super().__init__(expr)
        self._groups = groups

    def lmo(self, direction):
        d = np.asarray(direction, dtype=float)
        s = np.zeros_like(d)
        s[np.argmin(d)] = 1.0
        return s

    def group_count(self):
        return self._groups


def _simplex_projection(c):
    u = np.sort(c)[::-1]
    css = np.cumsum(u) - 1.0
    rho = np.flatnonzero(u - css / np.arange(1, c.size + 1) > 0)[-1]
    return np.maximum(c - css[rho] / (rho + 1.0), 0.0)


@pytest.mark.parametrize("groups", [1, 20])
def test_group_count_turns_off_active_set_steps(groups):
    c = np.array([0.9, 0.5, 0.1, -0.2, 0.4])
    x = fm.Variable(5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [OneSimplex(x, groups)])
    prob.solve()
    counts = prob.stats.step_counts
    if groups == 1:  # one polytope: BPCG's pairwise steps
        assert counts["pairwise"] > 0
    else:  # declared a product of many groups: plain FW steps under step="auto"
        assert counts["pairwise"] == 0 and counts["away"] == 0 and counts["fw"] > 0
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, _simplex_projection(c), atol=5e-3)
