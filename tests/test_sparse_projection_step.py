"""The projection step on a sparse L1 copy, read and moved on its support (``L1Ball.projected_step_sparse``,
``engine/projection_step.py``, ``ProjectionStep._take_sparse``).

The direction ``P(x + s (g +- w)) - x`` found in one pass over x, g and w is
checked against a sort-based soft-thresholding written here (Duchi et al.
2008) and against the set's own dense projection, with the level guessed
from a sample of the target (the first step) or from the last projection;
its refusals (a guess above the level, a point too dense, NaN) leave the
dense path to decide. A
d = 200 covariance solve with the sparse step follows the solve with the
dense step to rounding, iteration by iteration.
"""
import numpy as np
import pytest

import fwmodel as fm
import fwmodel.engine.projection_step as projection_step
from fwmodel.sets import l1 as l1_module
from tests._covariance_trace import covariance_solver


def sorted_l1_projection(v, radius):
    """Euclidean projection onto {||x||_1 <= radius} by sorting (Duchi, Shalev-Shwartz, Singer, Chandra 2008)."""
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    cumulative = np.cumsum(u)
    ks = np.arange(1, u.size + 1)
    rho = np.nonzero(u * ks > cumulative - radius)[0][-1]
    tau = (cumulative[rho] - radius) / (rho + 1.0)
    return np.sign(v) * np.maximum(a - tau, 0.0)


def sparse_point(n, nnz, rng):
    x = np.zeros(n)
    support = rng.choice(n, nnz, replace=False)
    x[support] = rng.normal(size=nnz)
    g = 0.05 * rng.normal(size=n)
    w = 0.05 * rng.normal(size=n)
    g[support] += rng.normal(size=nnz)
    return x, g, w


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_sparse_direction_matches_sorted_projection(sign):
    rng = np.random.default_rng(3)
    side = 220
    n = side * side
    x, g, w = sparse_point(n, 400, rng)
    scale = -1.0 / 1.7
    target = x + scale * (g + sign * w)
    radius = 0.05 * np.abs(target).sum()
    ball = fm.L1Ball(fm.Variable((side, side)), radius)
    # no warm start yet: the level guessed from a sample of the target, the same direction
    cold = ball.projected_step_sparse(x, g, w, sign, scale)
    assert cold is not None
    cold_hint = ball._level_hint
    ball._level_hint = None
    warm = target.copy()
    ball.project_flat(warm, out=warm)  # the dense path's projection, in place: sets the level hint
    assert ball._level_hint == cold_hint  # the same level
    found = ball.projected_step_sparse(x, g, w, sign, scale)
    assert found is not None
    positions, d, g_p, w_p = found
    cold_full = np.zeros(n)
    cold_full[cold[0]] = cold[1]  # (gathered from a lower guess: more entries, the extra ones 0)
    assert set(positions) <= set(cold[0])
    assert np.all(np.diff(positions) > 0)
    full = np.zeros(n)
    full[positions] = d
    expected = sorted_l1_projection(target, radius) - x
    np.testing.assert_allclose(full, expected, rtol=0, atol=1e-12 * np.abs(target).max())
    # the entries are the dense path's: projected in place, then x subtracted
    np.testing.assert_array_equal(full, warm - x)
    np.testing.assert_array_equal(cold_full, full)
    np.testing.assert_array_equal(g_p, g[positions])
    np.testing.assert_array_equal(w_p, w[positions])
    # the support holds every nonzero of d and of x
    assert set(np.flatnonzero(expected)) <= set(positions)
    assert set(np.flatnonzero(x)) <= set(positions)
    assert positions.size < n // 32


def test_sparse_direction_refused_where_the_dense_path_decides():
    rng = np.random.default_rng(5)
    side = 220
    n = side * side
    x, g, w = sparse_point(n, 400, rng)
    scale = -0.5
    target = x + scale * (g + w)
    ball = fm.L1Ball(fm.Variable((side, side)), 0.05 * np.abs(target).sum())
    ball.project_flat(target.copy(), out=target.copy())
    warm = target.copy()
    ball.project_flat(warm, out=warm)
    hint = ball._level_hint
    # a dense x: more entries than SPARSE_STEP_FRACTION of the point
    dense_x = x + 1e-3 * rng.normal(size=n)
    assert ball.projected_step_sparse(dense_x, g, w, 1.0, scale) is None
    assert ball._level_hint == hint  # a refusal keeps the hint
    # a NaN in the gradient
    bad = g.copy()
    bad[7] = np.nan
    assert ball.projected_step_sparse(x, bad, w, 1.0, scale) is None
    # a target inside the ball: no entry above the guess, refused (the dense path returns it as it is)
    assert ball.projected_step_sparse(1e-4 * x, 1e-4 * g, 1e-4 * w, 1.0, scale) is None
    # a symmetric ball projects elsewhere
    sym = fm.L1Ball(fm.Variable((side, side)), 1.0, symmetric=True)
    sym._level_hint = hint
    assert sym.projected_step_sparse(x, g, w, 1.0, scale) is None


def test_covariance_solve_with_the_sparse_step_follows_the_dense_step(monkeypatch):
    solve = covariance_solver(d=200)
    taken, starts = [], []
    original = projection_step.ProjectionStep._take_sparse

    def counting(self, objective, it, rows, copy, *args):
        at_start = not np.any(it.x[copy[0].slice])  # the copy still at its starting point, 0
        moved = original(self, objective, it, rows, copy, *args)
        taken.append(moved is not None)
        starts.append(at_start)
        return moved

    monkeypatch.setattr(projection_step.ProjectionStep, "_take_sparse", counting)
    _, X_sparse, trace_sparse = solve()
    assert sum(taken) >= 10  # the sparse step ran on most projection steps
    # the first one too: its L_c is f's Hessian on the copy plus lam (nothing measured along a dense
    # gradient), its level guessed from a sample of the target
    assert starts[0] and taken[0]
    monkeypatch.setattr(fm.L1Ball, "projected_step_sparse", lambda self, *args: None)
    taken.clear()
    _, X_dense, trace_dense = solve()
    assert not any(taken)
    assert trace_sparse.shape == trace_dense.shape
    # the same steps; the dots summed over the support round differently
    np.testing.assert_allclose(trace_sparse[:, 0], trace_dense[:, 0], rtol=1e-9)
    np.testing.assert_allclose(trace_sparse[:, 2], trace_dense[:, 2], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(X_sparse, X_dense, rtol=0, atol=1e-8 * np.abs(X_dense).max())
