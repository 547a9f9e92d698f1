"""A large block with no rows in M beside tied copies, in the Gauss-Seidel sweep.

Where every block's columns of M are a signed identity (tied copies) or absent,
the sweep writes a block's fresh gradient of L into the driver's block buffer,
which on a large block (``LARGE_BLOCK`` entries) is also the array its lazy
direction is formed in (engine/fwal.py, ``_Buffers.shared_direction``). A block
whose columns are not in M must not put its gradient there: its slope
<g_k, d_k> would read the direction over it (<d_k, d_k> > 0, the block skipped).
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine import block_search


def _project_l1(v, radius):
    """Euclidean projection onto the l1 ball (sort-based closed form)."""
    if np.abs(v).sum() <= radius:
        return v.copy()
    u = np.sort(np.abs(v))[::-1]
    excess = np.cumsum(u) - radius
    k = np.nonzero(u * np.arange(1, u.size + 1) > excess)[0][-1]
    return np.sign(v) * np.maximum(np.abs(v) - excess[k] / (k + 1), 0.0)


def _project_trace(B, radius):
    """Projection onto the trace-norm ball: the singular values projected onto the l1 ball."""
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    return (U * _project_l1(s, radius)) @ Vt


@pytest.mark.parametrize("untied_set, rank_k", [("trace", False), ("trace", True)])
def test_untied_large_block_after_tied_copies_matches_closed_form_and_cvxpy(monkeypatch, untied_set, rank_k):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    W = fm.Variable((6, 6))  # in two sets: two tied copies (signed identity columns of M)
    if untied_set == "trace":
        n = 130  # 16,900 entries >= LARGE_BLOCK
        # a dominant singular value: the projection is a rank-one point (a vertex, reached in few steps)
        u, v = rng.standard_normal(n), rng.standard_normal(n)
        B = 30.0 * np.outer(u / np.linalg.norm(u), v / np.linalg.norm(v)) + 0.01 * rng.standard_normal((n, n))
        Z = fm.Variable((n, n))
        z_set, z_star = fm.TraceNormBall(Z, 5.0), _project_trace(B, 5.0)
    else:
        B = rng.standard_normal(20000)
        Z = fm.Variable(20000)
        z_set, z_star = fm.L1Ball(Z, 300.0), _project_l1(B, 300.0)
    assert B.size >= block_search.LARGE_BLOCK
    # Z last: its turn comes after W's copies have moved
    prob = fm.Problem(fm.Minimize(fm.sum_squares(W - A) + fm.sum_squares(Z - B)),
                      [fm.L1Ball(W, 6.0), fm.TraceNormBall(W, 3.0), z_set])

    # spy: the fresh gradient of the untied large block must not share its array with the direction
    calls = {"fresh": 0, "shared": 0}
    live = []
    fresh, formed = block_search._fresh_block_gradient, block_search.formed

    def spy_fresh(g, sl, signed, dual_term, grad, Mop):
        out = fresh(g, sl, signed, dual_term, grad, Mop)
        if signed is not None and not signed[2] and sl.stop - sl.start >= block_search.LARGE_BLOCK:
            calls["fresh"] += 1
            live.append(out)
        return out

    def spy_formed(p):
        d = formed(p)
        while live:
            calls["shared"] += bool(np.shares_memory(live.pop(), d))
        return d

    monkeypatch.setattr(block_search, "_fresh_block_gradient", spy_fresh)
    monkeypatch.setattr(block_search, "formed", spy_formed)
    prob.solve(tol=1e-7, sweep="gauss-seidel", rank_k=rank_k)
    assert calls["fresh"] > 0, "the model must reach the untied large block's fresh gradient"
    assert calls["shared"] == 0

    Wc = cp.Variable((6, 6))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Wc - A)),
                     [cp.sum(cp.abs(Wc)) <= 6.0, cp.normNuc(Wc) <= 3.0])
    ref.solve(solver=cp.CLARABEL)
    f_star = ref.value + np.sum((z_star - B) ** 2)
    assert prob.status == "optimal"
    assert abs(prob.value - f_star) <= 1e-5 * abs(f_star)
    assert np.linalg.norm(Z.value - z_star) <= 1e-3 * np.linalg.norm(z_star)
    assert np.linalg.norm(W.value - Wc.value) <= 1e-3 * max(1.0, np.linalg.norm(Wc.value))


def test_block_gradient_is_formed_again_after_its_shared_buffer_is_written():
    """The per-block gradient of L lives in one buffer that large blocks' lazy directions share; after
    ``forget`` (what the sweep calls once a direction is formed) a read forms g_k + sign w again
    instead of returning whatever the buffer holds. Checked against the slice formed by hand."""
    from types import SimpleNamespace

    from fwmodel.engine.block_search import BlockLagrangianGradient

    rng = np.random.default_rng(3)
    g, w = rng.standard_normal(8), rng.standard_normal(4)
    buffer = np.empty(4)
    cols = SimpleNamespace(signed=[(0, 4, 1.0), (0, 4, -1.0)], block_of={(0, 4): 0, (4, 8): 1})
    grad = BlockLagrangianGradient(g, w, cols, lambda size: buffer)
    first = grad[slice(0, 4)]
    np.testing.assert_array_equal(first, g[:4] + w)
    buffer[:] = -7.0  # a direction formed in the shared array
    grad.forget()
    np.testing.assert_array_equal(grad[slice(0, 4)], g[:4] + w)
    np.testing.assert_array_equal(grad[slice(4, 8)], g[4:] - w)
