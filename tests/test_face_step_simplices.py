"""The face step on simplices moved by per-group pairwise steps (engine/face_step.py, ``_GroupPart``).

A dense optimum over a simplex (a minimum-variance portfolio: every weight positive) is approached by
pairwise steps one pair at a time (10,000 iterations, max_iter, before this part existed); the face step
moves every positive weight at once, each group keeping its sum where it is at its total. Checked against
CVXPY + Clarabel: the objective, the point, and fewer iterations than without the step.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _factor_data(n, seed, k=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, k)) / np.sqrt(n), 0.05 + 0.02 * rng.standard_normal(n)


@pytest.mark.parametrize("seed", range(2))
def test_minimum_variance_portfolio_dense_optimum(seed):
    n = 60
    F, _ = _factor_data(n, seed)
    wc = cp.Variable(n)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(F.T @ wc) + 1e-3 * cp.sum_squares(wc)),
                        [wc >= 0, cp.sum(wc) == 1]).solve(solver=cp.CLARABEL)
    assert np.all(wc.value > 1e-5)  # a dense optimum: the case this step is for
    out = {}
    for option in ("auto", False):
        w = fm.Variable(n)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(F.T @ w) + 1e-3 * fm.sum_squares(w)), [fm.Simplex(w)])
        prob.solve(face_step=option, max_iter=3000)
        out[option] = prob
    auto = out["auto"]
    assert auto.status == "optimal" and auto.stats.step_counts.get("face", 0) > 0
    assert abs(auto.value - f_star) <= 1e-4 * f_star
    assert auto.stats.iterations <= 3 * n
    assert out[False].stats.iterations > 10 * auto.stats.iterations  # (max_iter at 3,000 without the step)


@pytest.mark.parametrize("projection", ["auto", False])
def test_simplices_with_room_and_several_groups(projection):
    """Rows of X in simplices ``sum <= 1`` (``equality=False``, the origin a vertex; 12 groups, so the block
    declares its groups): a target with some rows summing below 1 at the optimum (room left: those groups'
    sums move freely) and others at 1, every entry positive. The defaults project the rows; ``projection=False``
    moves them by per-group pairwise steps; the face step acts in both. Against Clarabel, point and value."""
    rng = np.random.default_rng(4)
    G, k = 12, 10
    T = rng.uniform(0.0, 0.25, (G, k))
    T[:6] *= 0.2  # rows summing well below 1: inside the budget
    P = rng.standard_normal((k, k)) / np.sqrt(k)
    Xc = cp.Variable((G, k))
    f_star = cp.Problem(cp.Minimize(cp.sum_squares((Xc - T) @ P) + 1e-2 * cp.sum_squares(Xc - T)),
                        [Xc >= 0, cp.sum(Xc, axis=1) <= 1]).solve(solver=cp.CLARABEL)
    sums = Xc.value.sum(axis=1)
    assert np.any(sums < 0.9) and np.any(sums > 1 - 1e-6)  # both kinds of groups
    X = fm.Variable((G, k))
    prob = fm.Problem(fm.Minimize(fm.sum_squares((X - T) @ P) + 1e-2 * fm.sum_squares(X - T)),
                      [fm.Simplex(X, 1.0, axis=1, equality=False)])
    assert prob.compile().blocks[0].set.simplex_groups() is not None
    prob.solve(tol=1e-7, feas_tol=1e-7, projection=projection)
    assert prob.status == "optimal" and prob.stats.step_counts.get("face", 0) > 0
    assert prob.stats.step_counts.get("projection" if projection == "auto" else "pairwise", 0) > 0
    assert abs(prob.value - f_star) <= 1e-5 * max(1.0, abs(f_star))
    np.testing.assert_allclose(X.value, Xc.value, atol=2e-3)
    assert np.all(X.value >= 0) and np.all(X.value.sum(axis=1) <= 1 + 1e-9)


def test_a_large_dense_optimum_is_found_by_projection_then_face_steps():
    """300 weights, all positive at the optimum: the projection steps find the support in bulk and the face
    step solves the model on it (faces of projected simplices up to FACE_MAX_DIM coordinates): a few
    iterations, where vertex steps add one weight per iteration (max_iter at 3,000 before projections)."""
    n = 300
    F, _ = _factor_data(n, 7)
    wc = cp.Variable(n)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(F.T @ wc) + 1e-3 * cp.sum_squares(wc)),
                        [wc >= 0, cp.sum(wc) == 1]).solve(solver=cp.CLARABEL)
    w = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(F.T @ w) + 1e-3 * fm.sum_squares(w)), [fm.Simplex(w)])
    prob.solve()
    assert prob.status == "optimal" and prob.stats.iterations <= 50
    assert prob.stats.step_counts.get("projection", 0) > 0 and prob.stats.step_counts.get("face", 0) > 0
    assert abs(prob.value - f_star) <= 1e-4 * f_star


def test_a_face_beyond_the_direct_solve_is_taken_by_cg_on_a_projected_simplex():
    """1,000 positive weights: above FACE_MAX_DIM, the face of a projected simplex is solved by the step's
    projected CG (a vertex-stepped block's face of that size takes no step under "auto")."""
    from fwmodel.engine import face_step

    n = 1000
    assert n > face_step.FACE_MAX_DIM
    F, _ = _factor_data(n, 8)
    wc = cp.Variable(n)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(F.T @ wc) + 1e-3 * cp.sum_squares(wc)),
                        [wc >= 0, cp.sum(wc) == 1]).solve(solver=cp.CLARABEL)
    assert np.sum(wc.value > 1e-6) > face_step.FACE_MAX_DIM
    w = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(F.T @ w) + 1e-3 * fm.sum_squares(w)), [fm.Simplex(w)])
    prob.solve()
    assert prob.status == "optimal" and prob.stats.iterations <= 50
    assert prob.stats.step_counts.get("face", 0) > 0
    assert abs(prob.value - f_star) <= 1e-4 * f_star


@pytest.mark.parametrize("n, seed", [(100, 0), (160, 0), (120, 3)])
def test_sector_caps_with_single_asset_sectors(n, seed):
    """A long-only portfolio with a cap per sector, some sectors of one asset: those caps are bounds of single
    weights, a box on a few entries of w beside the simplex that holds it whole. The simplex still takes
    projection steps (its variable's other copies are boxes only), and the solve ends "optimal" at Clarabel's
    optimum in a few dozen iterations (max_iter at 10,000 when the shared simplex kept pairwise steps)."""
    rng = np.random.default_rng(seed)
    F, mu = _factor_data(n, seed)
    sector = rng.integers(0, 40, size=n)
    groups = [np.flatnonzero(sector == s) for s in range(40) if np.any(sector == s)]
    assert any(g.size == 1 for g in groups)
    q, cap = float(np.quantile(mu, 0.6)), 1.5 / 40

    def solve(lib, w, simplex):
        cons = simplex + [mu @ w >= q] + [lib.sum(w[g]) <= cap for g in groups]
        prob = lib.Problem(lib.Minimize(lib.sum_squares(F.T @ w) + 1e-3 * lib.sum_squares(w)), cons)
        return prob

    wc = cp.Variable(n)
    f_star = solve(cp, wc, [wc >= 0, cp.sum(wc) == 1]).solve(solver=cp.CLARABEL)
    w = fm.Variable(n)
    prob = solve(fm, w, [fm.Simplex(w)])
    prob.solve()
    assert prob.status == "optimal"
    assert prob.stats.step_counts.get("projection", 0) > 0
    assert prob.stats.iterations <= 500
    assert abs(prob.value - f_star) <= 1e-3 * abs(f_star)
    np.testing.assert_allclose(w.value, wc.value, atol=2e-3)
