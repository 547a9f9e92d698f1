"""fwmodel.datasets: the covariance data of the paper's Sec. 5 is seeded and
has the documented structure (block-diagonal, thresholded, symmetric, radii
equal to the true norms, a symmetric observation mask)."""
import numpy as np
import pytest

from fwmodel.datasets import CovarianceData, sparse_low_rank_covariance


def test_seeded_and_reproducible():
    a = sparse_low_rank_covariance(60, seed=3, observed=0.3)
    b = sparse_low_rank_covariance(60, seed=3, observed=0.3)
    for name in ("sigma_hat", "sigma", "mask", "support"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.radii == b.radii
    c = sparse_low_rank_covariance(60, seed=4, observed=0.3)
    assert not np.array_equal(a.sigma_hat, c.sigma_hat)
    # a Generator works as the seed too
    g = sparse_low_rank_covariance(60, seed=np.random.default_rng(3))
    assert isinstance(g, CovarianceData) and g.params["seed"] is None


@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_structure_of_sigma(threshold):
    d, n_blocks = 103, 5
    data = sparse_low_rank_covariance(d, threshold=threshold, n_blocks=n_blocks, seed=0)
    S = data.sigma
    assert S.shape == (d, d) and data.d == d
    np.testing.assert_array_equal(S, S.T)
    # contiguous blocks covering 0..d, nearly equal sizes
    assert len(data.blocks) == n_blocks
    assert data.blocks[0][0] == 0 and data.blocks[-1][1] == d
    sizes = [b - a for a, b in data.blocks]
    assert max(sizes) - min(sizes) <= 1
    inside = np.zeros((d, d), bool)
    for a, b in data.blocks:
        inside[a:b, a:b] = True
        # each block is v v^T (|v_i| <= 1) thresholded
        block = S[a:b, a:b]
        assert np.abs(block).max() <= 1.0
    assert not np.any(S[~inside])
    nz = S[S != 0]
    assert np.all(np.abs(nz) > threshold)
    np.testing.assert_array_equal(data.support, S != 0)
    # radii are the true norms
    assert data.radius_l1 == pytest.approx(np.abs(S).sum())
    assert data.radius_trace == pytest.approx(np.linalg.svd(S, compute_uv=False).sum())
    # each block before thresholding is rank one: sign pattern s_i s_j on the support
    for a, b in data.blocks:
        block = S[a:b, a:b]
        rows = np.flatnonzero(np.any(block != 0, axis=1))
        if rows.size:
            i = rows[0]
            j = np.flatnonzero(block[i])[0]
            signs = np.sign(block[i, j]) * np.sign(block[i]) [None, :] * np.sign(block[:, j])[:, None]
            on = (block != 0) & (block[i][None, :] != 0) & (block[:, j][:, None] != 0)
            np.testing.assert_array_equal(np.sign(block)[on], signs[on])


def test_sigma_hat_is_a_noisy_covariance():
    d = 40
    data = sparse_low_rank_covariance(d, n=20000, noise=0.6, seed=1)
    H = data.sigma_hat
    np.testing.assert_array_equal(H, H.T)
    assert np.linalg.eigvalsh(H)[0] > 0  # a covariance of n >> d samples plus noise
    # E[Sigma_hat] = PSD part of Sigma + noise^2 I
    w, V = np.linalg.eigh(data.sigma)
    expected = (V * np.maximum(w, 0)) @ V.T + 0.36 * np.eye(d)
    assert np.abs(H - expected).max() < 0.1
    # the paper's setting: n = d by default
    assert sparse_low_rank_covariance(30, seed=0).params["n"] == 30
    # no noise, no threshold: Sigma is exactly the blocks v v^T, PSD
    clean = sparse_low_rank_covariance(25, threshold=0.0, noise=0.0, seed=2, n=50)
    assert np.linalg.matrix_rank(clean.sigma) == 5
    assert np.linalg.eigvalsh(clean.sigma_hat)[0] > -1e-10


def test_mask():
    d = 200
    full = sparse_low_rank_covariance(d, seed=5)
    assert full.mask is None
    assert full.loss(full.sigma_hat) == 0.0
    data = sparse_low_rank_covariance(d, observed=0.2, seed=5)
    M = data.mask
    assert M.dtype == float and set(np.unique(M)) <= {0.0, 1.0}
    np.testing.assert_array_equal(M, M.T)
    assert abs(M.mean() - 0.2) < 0.02
    # the mask does not change the data
    np.testing.assert_array_equal(data.sigma_hat, full.sigma_hat)
    np.testing.assert_array_equal(data.sigma, full.sigma)
    S = np.random.default_rng(0).standard_normal((d, d))
    assert data.loss(S) == pytest.approx(np.sum((M * (S - data.sigma_hat)) ** 2))


def test_paper_sparsity_level():
    # threshold 0.9 keeps about 0.1% of the entries (P(|v_i v_j| > 0.9) = 0.1 + 0.9 log 0.9)
    data = sparse_low_rank_covariance(1000, seed=0)
    frac = data.support.sum() / (1000 ** 2 / 5)
    assert 0.003 < frac < 0.009


@pytest.mark.parametrize("kwargs, match", [
    (dict(d=3), "n_blocks"),
    (dict(d=30, threshold=1.0), "threshold"),
    (dict(d=30, noise=-1), "noise"),
    (dict(d=30, observed=0.0), "observed"),
    (dict(d=30, n=0), "n must"),
    (dict(d=5.5), "d must be an integer"),
    (dict(d="10"), "d must be an integer"),
    (dict(d=True), "d must be an integer"),
    (dict(d=30, n=2.5), "n must be an integer"),
    (dict(d=30, n_blocks=2.0), "n_blocks must be an integer"),
    (dict(d=30, threshold=float("nan")), "threshold"),
    (dict(d=30, threshold="0.9"), "threshold must be a real number"),
    (dict(d=30, noise=float("nan")), "noise"),
    (dict(d=30, noise=float("inf")), "noise"),
    (dict(d=30, observed=float("nan")), "observed"),
    (dict(d=30, seed="a"), "seed"),
    (dict(d=30, seed=-1), "seed"),
    (dict(d=30, seed=1.5), "seed"),
])
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sparse_low_rank_covariance(**kwargs)
