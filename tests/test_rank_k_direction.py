"""The rank-k step's direction and prox in the forms that save passes at scale (engine/rank_k.py).

Each is checked against the plain dense computation it replaces: the symmetric direction by
``dsyrk`` and a mirrored triangle against ``sym(U S V') - X``, the prox of a scaled matrix against
the prox of the matrix scaled beforehand, and the covariance solve that keeps y + lam r through
the sweep and takes ||V - X||^2 from the factors against the same solve with both turned off.
"""
import numpy as np
import pytest

from fwmodel._kernels import mirror_lower_in_place
from fwmodel.engine.rank_k import _low_rank_minus, rank_k_prox


@pytest.mark.parametrize("n", [1, 5, 128, 129, 300])
def test_mirror_lower_matches_the_lower_triangle_reflected(n):
    rng = np.random.default_rng(n)
    D = rng.standard_normal((n, n))
    lower = np.tril(D)
    expected = lower + np.tril(D, -1).T
    mirror_lower_in_place(D)
    assert np.array_equal(D, expected)
    assert np.array_equal(D, D.T)


@pytest.mark.parametrize("signs", ["none", "positive", "mixed", "negative"])
@pytest.mark.parametrize("with_x", [True, False])
def test_symmetric_direction_by_dsyrk_matches_the_dense_symmetrized_product(signs, with_x):
    """U S V' - X with V = U * signs: exactly symmetric, and within rounding of (U S V' + V S U') / 2 - X
    formed densely (the form it replaced); values at 0 are left out as before."""
    rng = np.random.default_rng(7)
    n, k = 260, 9
    U = np.linalg.qr(rng.standard_normal((n, k)))[0]
    s = rng.random(k) * 3.0
    s[-2:] = 0.0
    if signs == "none":
        V = U
    else:
        sign = {"positive": np.ones(k), "negative": -np.ones(k),
                "mixed": np.where(np.arange(k) % 3 == 0, -1.0, 1.0)}[signs]
        V = U * sign
    B = rng.standard_normal((n, n))
    X = (B + B.T) / 2
    out = np.empty(n * n)
    _low_rank_minus(X.ravel() if with_x else None, U, s, V, True, out)
    D = out.reshape(n, n)
    P = (U * s) @ V.T
    expected = (P + P.T) / 2 - (X if with_x else 0.0)
    assert np.array_equal(D, D.T)
    np.testing.assert_allclose(D, expected, rtol=0, atol=1e-13 * max(np.abs(expected).max(), 1.0))


def test_symmetric_direction_with_every_value_zero_is_minus_x():
    rng = np.random.default_rng(3)
    n = 140
    U = np.linalg.qr(rng.standard_normal((n, 4)))[0]
    B = rng.standard_normal((n, n))
    X = (B + B.T) / 2
    out = np.full(n * n, np.nan)
    _low_rank_minus(X.ravel(), U, np.zeros(4), U, True, out)
    assert np.array_equal(out.reshape(n, n), -X)


@pytest.mark.parametrize("kind", ["psd", "symmetric", "general"])
@pytest.mark.parametrize("scale", [-1.0 / 3.7, 2.5])
def test_prox_of_a_scaled_matrix_is_the_prox_of_the_scaled_matrix(kind, scale):
    """rank_k_prox(A, scale=c) against rank_k_prox(c A): the same rank-k point, values, and products
    that are those of c A with the returned V."""
    rng = np.random.default_rng(11)
    n, k, radius = 200, 6, 4.0
    A = rng.standard_normal((n, n))
    if kind != "general":
        A = A + A.T
    psd, symmetric = kind == "psd", kind == "symmetric"
    U0, s0, V0 = rank_k_prox(scale * A, radius, k, psd=psd, symmetric=symmetric, rng=np.random.default_rng(0))
    U1, s1, V1, P1 = rank_k_prox(A, radius, k, psd=psd, symmetric=symmetric, rng=np.random.default_rng(0),
                                 products=True, scale=scale)
    np.testing.assert_allclose(s1, s0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose((U1 * s1) @ V1.T, (U0 * s0) @ V0.T, rtol=0, atol=1e-10)
    np.testing.assert_allclose(P1[0], (scale * A) @ V1, rtol=0, atol=1e-10 * np.abs(scale * A).max())


def test_covariance_solve_with_the_kept_dual_term_and_factor_norms_matches_the_plain_one(monkeypatch):
    """The paper's covariance problem at d = 200 (both copies past LARGE_BLOCK, rank-k steps on the
    trace-norm copy, projection steps on the L1 copy): y + lam r kept through the sweep and ||V - X||^2
    from the factors give the iterates of the solve that forms both afresh, up to rounding."""
    import fwmodel.engine.fwal as fwal
    import fwmodel.engine.rank_k as rank_k
    from _covariance_trace import covariance_solver

    solve = covariance_solver()

    kept_reads = []
    original = fwal._Buffers.dual_term

    def counting(self, r, y, lam):
        kept_reads.append(self.dual_kept)
        return original(self, r, y, lam)

    factor_norms = []
    propose = rank_k.RankKStep.propose

    def recording(self, x_k, g_k, ctx):
        p = propose(self, x_k, g_k, ctx)
        factor_norms.append(p.d_norm2 is not None)
        return p

    monkeypatch.setattr(fwal._Buffers, "dual_term", counting)
    monkeypatch.setattr(rank_k.RankKStep, "propose", recording)
    prob, X_new, trace_new = solve()
    assert prob.stats.step_counts.get("rank_k", 0) > 0 and any(kept_reads) and any(factor_norms)

    # both cuts off: the dual term formed afresh, ||V - X||^2 by a pass over the direction
    plain_move = fwal._move_blocks
    monkeypatch.setattr(fwal, "_move_blocks",
                        lambda *args, keep_dual_term=False, **kw: plain_move(*args, keep_dual_term=False, **kw))
    monkeypatch.setattr(rank_k, "NORM_TRUST", np.inf)
    kept_reads.clear()
    factor_norms.clear()
    prob_plain, X_plain, trace_plain = solve()
    assert not any(kept_reads) and not any(factor_norms)
    assert prob.stats.step_counts == prob_plain.stats.step_counts
    np.testing.assert_allclose(trace_new, trace_plain, rtol=1e-8, atol=1e-9 * np.abs(trace_plain).max())
    np.testing.assert_allclose(X_new, X_plain, rtol=0, atol=1e-8 * np.abs(X_plain).max())
