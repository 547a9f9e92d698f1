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


def warm_ball(seed=5, side=220, scale=-0.5):
    """A sparse point, its g and w, and an L1 ball whose last projection (the dense path's) was of its target."""
    rng = np.random.default_rng(seed)
    n = side * side
    x, g, w = sparse_point(n, 400, rng)
    target = x + scale * (g + w)
    ball = fm.L1Ball(fm.Variable((side, side)), 0.05 * np.abs(target).sum())
    warm = target.copy()
    ball.project_flat(warm, out=warm)
    return rng, n, x, g, w, scale, ball


def test_sparse_direction_refused_where_the_dense_path_decides():
    rng, n, x, g, w, scale, ball = warm_ball()
    hint = ball._level_hint
    # a dense x: more entries than SPARSE_STEP_FRACTION of the point
    dense_x = x + 1e-3 * rng.normal(size=n)
    assert ball.projected_step_sparse(dense_x, g, w, 1.0, scale) is None
    assert ball._level_hint == hint  # a refusal keeps the hint
    ball.refresh()  # (a new solve: the refusals below are each checked by a pass, not skipped after that one)
    # a NaN in the gradient
    bad = g.copy()
    bad[7] = np.nan
    assert ball.projected_step_sparse(x, bad, w, 1.0, scale) is None
    # a target inside the ball: no entry above the guess, refused (the dense path returns it as it is)
    assert ball.projected_step_sparse(1e-4 * x, 1e-4 * g, 1e-4 * w, 1.0, scale) is None
    # a symmetric ball projects elsewhere
    side = int(round(np.sqrt(n)))
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


def cauchy_target(side, support_fraction, seed=0):
    """x = 0, w = 0 and Cauchy-distributed g (heavy tails), with the radius at which the projection of -g keeps
    ``support_fraction`` of the entries."""
    rng = np.random.default_rng(seed)
    n = side * side
    x, w, g = np.zeros(n), np.zeros(n), rng.standard_cauchy(n)
    a = np.sort(np.abs(g))[::-1]
    k = int(support_fraction * n)
    return x, g, w, float((a[:k] - a[k]).sum())


@pytest.mark.parametrize("support_fraction", [0.004, 0.008, 0.012])
def test_the_first_guess_holds_on_heavy_tailed_targets(support_fraction):
    """A guess from the sample's count of large entries (about n / 64 above it) is below the level wherever the
    projection keeps fewer entries, however heavy the tails: the cold step finds the sorted projection's
    direction (a guess from the sample's own soft-thresholding level fell above the level, or so far below it
    that the gathered entries overflowed, on these targets)."""
    side = 300
    x, g, w, radius = cauchy_target(side, support_fraction)
    ball = fm.L1Ball(fm.Variable((side, side)), radius)
    found = ball.projected_step_sparse(x, g, w, 1.0, -1.0)
    assert found is not None
    full = np.zeros(x.size)
    full[found[0]] = found[1]
    np.testing.assert_allclose(full, sorted_l1_projection(-g, radius), rtol=0, atol=1e-9 * np.abs(g).max())


def test_a_refused_first_guess_is_tried_again_at_the_next_step(monkeypatch):
    """A projection that keeps more than about n / 64 entries: the sampled guess is above the level and is
    refused (the dense path decides); the dense projection sets the level, and the next call tries the
    sparse step again at once (no steps skipped for a guess's miss)."""
    side = 300
    x, g, w, radius = cauchy_target(side, 0.025)
    ball = fm.L1Ball(fm.Variable((side, side)), radius)
    assert ball.projected_step_sparse(x, g, w, 1.0, -1.0) is None
    assert ball._dense_skip == 0
    target = -g.copy()
    ball.project_flat(target, out=target)  # the dense path's projection
    found = ball.projected_step_sparse(x, g, w, 1.0, -1.0)
    assert found is not None
    full = np.zeros(x.size)
    full[found[0]] = found[1]
    np.testing.assert_array_equal(full, target - x)


def test_a_dense_point_skips_the_sparse_step_for_a_while(monkeypatch):
    """Past the budget of gathered entries from the last level (a dense point), the next ``SPARSE_RETRY`` calls
    answer None without a pass over the point; a new solve (``refresh``) tries again from its first step."""
    rng, n, x, g, w, scale, ball = warm_ball()
    passes = []
    original = l1_module._sparse_projected_step

    def counted(*args):
        passes.append(1)
        return original(*args)

    monkeypatch.setattr(l1_module, "_sparse_projected_step", counted)
    dense_x = x + 1e-3 * rng.normal(size=n)
    assert ball.projected_step_sparse(dense_x, g, w, 1.0, scale) is None
    assert len(passes) == 1
    for _ in range(l1_module.SPARSE_RETRY):
        assert ball.projected_step_sparse(x, g, w, 1.0, scale) is None
    assert len(passes) == 1  # skipped without a pass
    assert ball.projected_step_sparse(x, g, w, 1.0, scale) is not None
    assert len(passes) == 2
    ball.projected_step_sparse(dense_x, g, w, 1.0, scale)
    ball.refresh()
    assert ball.projected_step_sparse(x, g, w, 1.0, scale) is not None
