"""Seeded synthetic data sets for the experiments of the FW-AL paper.

:func:`sparse_low_rank_covariance` builds the covariance estimation problem
of Gidel, Pedregosa & Lacoste-Julien (AISTATS 2018), Sec. 5, eq.
``constrained_sparse_low_rank``, following the recipe of Richard, Savalle &
Vayatis (ICML 2012): a block-diagonal covariance that is both sparse and low
rank, noisy samples drawn from it, and their empirical covariance::

    minimize ||S - Sigma_hat||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2

With ``observed`` < 1 it is the matrix-completion variant: only a random
symmetric subset of the entries of ``Sigma_hat`` is seen, and the loss is
``||mask * (S - Sigma_hat)||_F^2``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CovarianceData", "sparse_low_rank_covariance"]


@dataclass
class CovarianceData:
    """One instance of the sparse + low-rank covariance problem.

    Attributes
    ----------
    sigma_hat : (d, d) array
        The observed empirical covariance (symmetric).
    sigma : (d, d) array
        The true, thresholded block-diagonal matrix Sigma.
    radius_l1, radius_trace : float
        beta_1 = ||Sigma||_1 (sum of absolute entries) and
        beta_2 = ||Sigma||_* (sum of singular values): the paper's radii.
    mask : (d, d) float array of 0/1, or None
        The observed entries (symmetric; None when everything is observed).
    support : (d, d) bool array
        Where Sigma is nonzero.
    blocks : list of (start, stop)
        The diagonal blocks of Sigma.
    params : dict
        The generator's arguments (d, n, threshold, noise, n_blocks,
        observed, seed).
    """

    sigma_hat: np.ndarray
    sigma: np.ndarray
    radius_l1: float
    radius_trace: float
    mask: np.ndarray = None
    support: np.ndarray = None
    blocks: list = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def d(self):
        return self.sigma.shape[0]

    @property
    def radii(self):
        """(beta_1, beta_2)."""
        return self.radius_l1, self.radius_trace

    def loss(self, S):
        """The objective ``||mask * (S - Sigma_hat)||_F^2`` at a (d, d) array."""
        R = np.subtract(S, self.sigma_hat)
        if self.mask is not None:
            R *= self.mask
        return float(np.vdot(R, R))


def _integer(name, value):
    """``value`` as an int; ValueError naming ``name`` for anything else (floats, strings, booleans)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise ValueError(f"{name} must be an integer, got {value!r}")


def _real(name, value):
    """``value`` as a float; ValueError naming ``name`` for non-numbers (strings, booleans, arrays)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    raise ValueError(f"{name} must be a real number, got {value!r}")


def _block_bounds(d, n_blocks):
    edges = np.linspace(0, d, n_blocks + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def sparse_low_rank_covariance(d, n=None, threshold=0.9, noise=0.6, n_blocks=5, observed=1.0, seed=0):
    """The covariance estimation data of the paper's Sec. 5 (seeded).

    Construction (Gidel et al. 2018, Sec. 5; Richard et al. 2012):

    1. Sigma is block diagonal with ``n_blocks`` contiguous blocks of (nearly)
       equal size; block b is ``v_b v_b^T`` with ``v_b ~ U([-1, 1])``.
    2. Sparsity: only entries with ``|Sigma_ij| > threshold`` are kept (the
       paper uses 0.9). Sigma stays symmetric, sparse, and its blocks stay
       nearly rank one.
    3. ``n`` vectors (the paper uses ``n = d``) are drawn from N(0, Sigma);
       thresholding breaks positive semidefiniteness, so they are drawn from
       the PSD part of Sigma (each block's negative eigenvalues clipped to
       zero), the nearest covariance. Gaussian noise of standard deviation
       ``noise`` (the paper's sigma = 0.6) is added to every entry.
    4. ``Sigma_hat = (1/n) sum_i x_i x_i^T``, their (uncentred) covariance,
       so that Sigma_hat estimates Sigma + noise^2 I on the scale of Sigma.

    The radii are the true norms, beta_1 = ||Sigma||_1 and
    beta_2 = ||Sigma||_*. With ``observed`` in (0, 1), a symmetric mask keeps
    each entry of the upper triangle (diagonal included) with probability
    ``observed``.

    Parameters
    ----------
    d : int, dimension (>= n_blocks).
    n : int, number of samples (default d).
    threshold : float in [0, 1), sparsity threshold on |Sigma_ij|.
    noise : float >= 0, standard deviation of the entrywise noise.
    n_blocks : int, number of diagonal blocks.
    observed : float in (0, 1], fraction of observed entries (1: no mask).
    seed : int or numpy Generator.

    Returns
    -------
    CovarianceData

    Examples
    --------
    >>> import fwmodel as fm
    >>> from fwmodel.datasets import sparse_low_rank_covariance
    >>> data = sparse_low_rank_covariance(30, seed=0)
    >>> X = fm.Variable((30, 30))
    >>> prob = fm.Problem(fm.Minimize(fm.sum_squares(X - data.sigma_hat)),
    ...                   [fm.L1Ball(X, data.radius_l1), fm.TraceNormBall(X, data.radius_trace)])
    """
    d = _integer("d", d)
    n_blocks = _integer("n_blocks", n_blocks)
    if n_blocks < 1 or d < n_blocks:
        raise ValueError(f"need d >= n_blocks >= 1, got d={d}, n_blocks={n_blocks}")
    n = d if n is None else _integer("n", n)
    if n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    threshold, noise, observed = (_real(name, value) for name, value in
                                  (("threshold", threshold), ("noise", noise), ("observed", observed)))
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must lie in [0, 1), got {threshold}")
    if not 0.0 <= noise < math.inf:
        raise ValueError(f"noise must be finite and >= 0, got {noise}")
    if not 0.0 < observed <= 1.0:
        raise ValueError(f"observed must lie in (0, 1], got {observed}")
    if not (seed is None or isinstance(seed, np.random.Generator)
            or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0)):
        raise ValueError(f"seed must be None, a nonnegative integer or a numpy Generator, got {seed!r}")
    rng = np.random.default_rng(seed)
    blocks = _block_bounds(d, n_blocks)

    sigma = np.zeros((d, d))
    # samples X (n x d): block b contributes Z_b @ L_b^T with L_b L_b^T = PSD part of its block
    X = np.empty((n, d))
    for a, b in blocks:
        v = rng.uniform(-1.0, 1.0, b - a)
        block = np.outer(v, v)
        block[np.abs(block) <= threshold] = 0.0
        sigma[a:b, a:b] = block
        w, V = np.linalg.eigh(block)
        keep = w > 1e-12 * max(1.0, w[-1])
        L = V[:, keep] * np.sqrt(w[keep])
        X[:, a:b] = rng.standard_normal((n, L.shape[1])) @ L.T
    if noise > 0:
        X += noise * rng.standard_normal((n, d))
    sigma_hat = X.T @ X  # numpy calls SYRK for X.T @ X: half the flops
    sigma_hat *= 1.0 / n
    del X
    # exact symmetry (SYRK fills both triangles, but be explicit about it)
    sigma_hat = 0.5 * (sigma_hat + sigma_hat.T)

    mask = None
    if observed < 1.0:
        upper = np.triu(rng.random((d, d)) < observed)
        mask = (upper | upper.T).astype(float)

    radius_l1 = float(np.abs(sigma).sum())
    radius_trace = float(sum(np.abs(np.linalg.eigvalsh(sigma[a:b, a:b])).sum() for a, b in blocks))
    params = dict(d=d, n=n, threshold=float(threshold), noise=float(noise), n_blocks=n_blocks,
                  observed=float(observed), seed=seed if isinstance(seed, (int, np.integer)) else None)
    return CovarianceData(sigma_hat=sigma_hat, sigma=sigma, radius_l1=radius_l1, radius_trace=radius_trace,
                          mask=mask, support=sigma != 0, blocks=blocks, params=params)
