"""Work the driver shares instead of repeating, on the paper's L1 ∩ trace-norm covariance problem
(paper Sec. 5) at a size where the blocks take the large-block paths (``LARGE_BLOCK`` entries, the
Lanczos LMO with its check):

* ||x|| summed from the blocks' squared norms, the trace-norm block's passed on to its rank-k
  proposal (``fwal._point_norm``) instead of a dot over x and another over the block;
* the LMO check's block gradient written into the driver's shared block array instead of a fresh one
  (``fwal._own_block_gradient``).

Each is compared with the solve that does the work the old way (the functions swapped back), which
must take the same steps to the bit; the norm against NumPy's.
"""
import numpy as np
import pytest

import fwmodel as fm
import fwmodel.engine.fwal as fwal
from fwmodel.engine.block_search import BlockLagrangianGradient, signed_block_gradient
from fwmodel.engine.vector_ops import dot as engine_dot, norm


def covariance_problem(d=160, seed=0):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((d, 3))
    S = np.zeros((d, d))
    mask = np.triu(rng.random((d, d)) < 0.03, 1)
    S[mask] = rng.standard_normal(int(mask.sum()))
    sigma = L @ L.T + S + S.T + np.eye(d)
    noise = rng.standard_normal((d, d)) * 0.1
    C = sigma + (noise + noise.T) / 2
    X = fm.Variable((d, d), name="X")
    r1, r2 = float(np.abs(sigma).sum()), float(np.linalg.svd(sigma, compute_uv=False).sum())
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)]), X


def _old_point_norm(x, blocks, ctx, by_block):
    return float(norm(x))


def _old_own_block_gradient(grad, blocks, k):
    blk = blocks[k]
    if isinstance(grad, BlockLagrangianGradient):
        return signed_block_gradient(grad.g[blk.slice], grad.dual_term, grad.signed[k], np.empty(blk.size))
    return grad[blk.slice]


def _solve(options, monkeypatch=None, old=False):
    prob, X = covariance_problem()
    rows = []
    if old:
        monkeypatch.setattr(fwal, "_point_norm", _old_point_norm)
        monkeypatch.setattr(fwal, "_own_block_gradient", _old_own_block_gradient)
    prob.solve(callback=lambda s: rows.append((s.objective, s.fw_gap, s.feasibility, s.feasibility_rel)),
               **options)
    if old:
        monkeypatch.undo()
    return prob, X.value.copy(), rows


@pytest.mark.parametrize("options", [
    dict(max_iter=25, tol=1e-12, feas_tol=1e-12, rank_k=True, projection=False),
    dict(max_iter=25, tol=1e-12, feas_tol=1e-12, rank_k=True),
    dict(rank_k=True, tol=1e-3, feas_tol=1e-3),
])
def test_shared_norms_leave_the_steps_unchanged(options, monkeypatch):
    new, x_new, rows_new = _solve(options)
    old, x_old, rows_old = _solve(options, monkeypatch, old=True)
    assert new.stats.step_counts.get("rank_k", 0) > 0  # the rank-k proposals read the shared ||x_k||^2
    assert np.array_equal(x_new, x_old)
    assert new.stats.iterations == old.stats.iterations and new.status == old.status
    assert new.stats.step_counts == old.stats.step_counts
    assert [r[:3] for r in rows_new] == [r[:3] for r in rows_old]  # f, the FW gap and ||Mx - b||: bit for bit
    # ||x|| (in the relative feasibility) is rounded as the blocks' sums: equal up to rounding
    np.testing.assert_allclose([r[3] for r in rows_new], [r[3] for r in rows_old], rtol=1e-13, atol=0)
    assert new.stats.suboptimality_bound == old.stats.suboptimality_bound or (
        np.isnan(new.stats.suboptimality_bound) and np.isnan(old.stats.suboptimality_bound))


def test_point_norm_by_blocks():
    """The blocks' sum against NumPy's norm of the whole point; each block's square passed on unchanged."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(3 * 20000 + 7)

    class Blk:
        def __init__(self, offset, size):
            self.offset, self.size, self.slice = offset, size, slice(offset, offset + size)

    blocks = [Blk(0, 20000), Blk(20000, 40007)]
    ctx = fwal._StepContext(1.0)
    value = fwal._point_norm(x, blocks, ctx, True)
    assert value == pytest.approx(np.linalg.norm(x), rel=1e-14)
    for blk in blocks:
        x_k = x[blk.slice]
        assert ctx.point_norm2(blk, x_k) == engine_dot(x_k, x_k)  # the engine's own dot, to the bit
    ctx.point_norms2 = None
    assert ctx.point_norm2(blocks[0], x[blocks[0].slice]) == engine_dot(x[:20000], x[:20000])
    assert fwal._point_norm(x, blocks, fwal._StepContext(1.0), False) == pytest.approx(np.linalg.norm(x), rel=1e-14)
