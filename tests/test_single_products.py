"""Block Krylov products in single precision for large symmetric rank-k steps (engine/rank_k.py,
``SingleProducts``).

Each is checked against the float64 computation it replaces: the rank-k prox of a symmetric matrix
(values, point, and the float64 products ``A V`` the step's slope reads) against the prox from
float64 products and against a dense eigendecomposition; a start that holds an exact eigenvector
(whose Krylov residual is float32 rounding noise, to be dropped, not orthogonalized); and a covariance
solve whose lean rank-k steps take the float32 products against the same solve with float64 ones.
"""
import numpy as np
import pytest

import fwmodel.engine.rank_k as rank_k
from fwmodel.engine.rank_k import SingleProducts, rank_k_prox, single_in_place, top_eigenpairs


def _spiked(n, seed, spikes=12):
    """A symmetric matrix with ``spikes`` separated eigenvalues over a Wigner bulk."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((n, spikes)))[0]
    B = rng.standard_normal((n, n)) / np.sqrt(n)
    A = (Q * np.linspace(12.0, 4.0, spikes)) @ Q.T + (B + B.T) / 2
    return (A + A.T) / 2


@pytest.mark.parametrize("psd", [True, False])
@pytest.mark.parametrize("scale", [1.0, -0.4])
def test_single_products_prox_matches_the_float64_prox(psd, scale, monkeypatch):
    """Rounds run to convergence (the step's 4 rounds stop short of it on this spectrum, and the two
    unconverged points differ by what the rounds leave, 0.3 % of the values here): the same rank-k
    point up to float32 rounding of the products, orthonormal vectors, and products with V exactly
    as float64 ``scale * A @ V``."""
    monkeypatch.setattr(rank_k, "MAX_ROUNDS", 80)
    monkeypatch.setattr(rank_k, "RITZ_RTOL", 1e-10)
    n, k, radius = 400, 6, 30.0
    A = _spiked(n, 3)
    A_op = -A if scale < 0 else A  # for scale < 0 the PSD prox reads the smallest eigenvalues of A
    kw = dict(psd=psd, symmetric=not psd, rng=np.random.default_rng(0), products=True, scale=scale)
    U0, s0, V0, P0 = rank_k_prox(A_op, radius, k, **kw)
    kw["rng"] = np.random.default_rng(0)
    U1, s1, V1, P1 = rank_k_prox(SingleProducts(A_op.astype(np.float32)), radius, k, **kw)
    np.testing.assert_allclose(s1, s0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((U1 * s1) @ V1.T, (U0 * s0) @ V0.T, rtol=0, atol=1e-5)
    np.testing.assert_allclose(U1.T @ U1, np.eye(k), rtol=0, atol=1e-12)
    # the carried products: float32's rounding, relative to ||A||_F
    np.testing.assert_allclose(P1[0], (scale * A_op) @ V1, rtol=0, atol=1e-6 * abs(scale) * np.linalg.norm(A))
    # and against the exact prox from a dense eigendecomposition
    w, E = np.linalg.eigh(scale * A_op)
    order = np.argsort(w if psd else np.abs(w))[::-1][:k]
    exact = rank_k.project_capped_simplex(w[order] if psd else np.abs(w[order]), radius)
    np.testing.assert_allclose(s1, exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 7, 181, 182, 300])  # 181^2 < 2^15 < 182^2: one chunk, two
def test_single_in_place_is_the_float32_rounding_and_the_norm(n):
    """The float32 matrix written over A's own memory is A.astype(float32) exactly, and the norm is
    A's float64 squared Frobenius norm."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-3, 4, (n, n))
    expected, norm2 = A.astype(np.float32), float(np.sum(A * A))
    single, total = single_in_place(A)
    assert np.shares_memory(single, A) and single.dtype == np.float32 and single.shape == (n, n)
    assert np.array_equal(single, expected)
    assert abs(total - norm2) <= 1e-13 * norm2


def test_a_start_holding_an_eigenvector_finds_the_top_eigenvalues():
    """A start column that is an exact eigenvector leaves a residual of float32 noise in A Q - Q Q' A Q;
    it is dropped (``SingleProducts.rounding``), and the rounds still find the top eigenvalues
    of a dense eigendecomposition."""
    n, k = 500, 8
    A = _spiked(n, 5)
    w, E = np.linalg.eigh(A)
    start = E[:, [-1, -3]]  # two exact eigenvectors
    got, vectors = top_eigenpairs(SingleProducts(A.astype(np.float32)), k, "LA", start=start, rng=np.random.default_rng(1),
                                  max_rounds=60, rtol=1e-9)
    np.testing.assert_allclose(np.sort(got)[::-1], w[::-1][:k], rtol=1e-5)
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(k), rtol=0, atol=1e-12)
    # the mechanism: Q spans an invariant subspace, so A Q adds no direction; from float32 products
    # the residual is noise far above float64's threshold, and the operator's own threshold drops it
    op = SingleProducts(A.astype(np.float32))
    Q = np.asfortranarray(E[:, -4:])
    for threshold, kept in ((op.rounding, 0), (1e-10, 4)):
        W = np.empty_like(Q, order="F")
        op.product_into(Q, W)
        assert rank_k._extend_in_place(Q, W, threshold) == kept


def test_covariance_solve_with_single_products_follows_the_float64_solve(monkeypatch):
    """The paper's covariance problem at d = 200 with the float32 Krylov products switched on for its
    size: the lean rank-k steps take them (counted), and the solve follows the float64 one: the same
    step counts, the objective within 1e-3 relative at every iteration and 1e-5 at the last, the
    feasibility within 1e-2 relative (measured: 1.3e-4, 2e-6 and 1.3e-3; the 4 Krylov rounds stop
    short of convergence, so float32 rounding of the products moves the Ritz vectors by more than
    itself, amplified by the inverse gaps of the clustered noise eigenvalues, as any rounding does)."""
    from _covariance_trace import covariance_solver

    solve = covariance_solver()

    made = []
    init = SingleProducts.__init__

    def counting(self, A32):
        made.append(A32.dtype)
        init(self, A32)

    monkeypatch.setattr(SingleProducts, "__init__", counting)
    prob64, X64, trace64 = solve()
    assert not made  # off by default (SINGLE_PRODUCTS_MIN_DIM None)
    monkeypatch.setattr(rank_k, "SINGLE_PRODUCTS_MIN_DIM", 100)
    prob32, X32, trace32 = solve()
    # the rank-k steps whose Krylov rounds run (k + OVERSAMPLING below DENSE_FRACTION of d: the first ones)
    assert 0 < len(made) <= prob32.stats.step_counts.get("rank_k", 0)
    assert set(made) == {np.dtype(np.float32)}
    assert prob32.stats.step_counts == prob64.stats.step_counts
    np.testing.assert_allclose(trace32[:, 0], trace64[:, 0], rtol=1e-3)
    assert abs(trace32[-1, 0] - trace64[-1, 0]) <= 1e-5 * abs(trace64[-1, 0])
    np.testing.assert_allclose(trace32[1:, 2], trace64[1:, 2], rtol=1e-2)
    np.testing.assert_allclose(X32, X64, rtol=0, atol=1e-3 * np.abs(X64).max())
