"""Euclidean projection onto the Birkhoff polytope (doubly stochastic matrices).

``P(Z) = argmin ||X - Z||_F^2`` over ``X >= 0``, ``X 1 = 1``, ``X^T 1 = 1``.

The dual. With multipliers u (rows) and v (columns) the minimizer of the
Lagrangian over ``X >= 0`` is ``X(u, v) = max(0, Z + u 1^T + 1 v^T)``, and
``(u, v)`` minimizes the convex, once differentiable function

    phi(u, v) = 1/2 ||X(u, v)||_F^2 - 1^T u - 1^T v,

whose gradient is the marginals' residual ``(X 1 - 1, X^T 1 - 1)``. Its
generalized Hessian is the Laplacian-like matrix of the support pattern S
(``S_ij = 1`` where ``X_ij > 0``): ``[[diag(S 1), S], [S^T, diag(S^T 1)]]``.
We minimize phi by the semismooth Newton method of Lorenz, Manns & Meyer,
"Quadratically regularized optimal transport" (Appl. Math. Optim. 2021;
arXiv:1903.01112, 2019), Alg. 1: a Newton step on that generalized Hessian
(regularized, as theirs, by a small multiple of the identity, since it is
singular along ``(1, -1)``), with an Armijo backtracking on phi. The u part of
the Newton system is eliminated (its block is diagonal), and the n x n Schur
complement in v is solved by a dense Cholesky factorization: ``O(n^3)``
per Newton step, as one assignment LMO, and a few steps from a warm start.

Exact feasibility. Newton stops at a residual of ~1e-13 (rounding of Z's
entries bounds it below), and the iterates of FW-AL must stay in the set
exactly, so the Newton point is rounded onto the polytope by Altschuler, Weed
& Rigollet, "Near-linear time approximation algorithms for optimal transport
via Sinkhorn iteration" (NeurIPS 2017), Alg. 2: rows scaled down to sums
<= 1, then columns, then the rank-one correction ``err_r err_c^T /
||err_r||_1``; it moves X by at most ``2 ||residual||_1`` (their Lemma 7), so
the output is the projection up to that, nonnegative, with row and column
sums 1 up to a few roundings.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, blas, cho_factor, cho_solve

#: Newton stops when ||X 1 - 1||_1 + ||X^T 1 - 1||_1 is at most this times n max(1, |Z|) (the rounding of
#: Z + u + v: X's entries are O(1) whatever Z's size), or where no step lowers it any more (1e-13 left
#: entries 1e-7 off at |Z| ~ 1e6, a projection gap of 0.03)
RESIDUAL_TOL = 4 * np.finfo(float).eps
#: most Newton steps (measured: 3-12 cold from the affine projection, 1-4 warm)
MAX_NEWTON = 60
#: Armijo's sufficient-decrease constant and most halvings of one Newton step
ARMIJO = 1e-4
MAX_HALVINGS = 40
#: ... of which at most this many below phi's rounding where none lowers the residual (then Newton stops)
FLOOR_HALVINGS = 6
#: the regularization of the Newton system (times n; the Hessian is singular along (1, -1) and one more
#: direction per extra component of the support): 1e-8 measured fewest Newton steps of 1e-12 .. 1e-6
#: on sparse projections (rounding noise over a smaller delta made steps of 1e-9 that stalled)
DELTA = 1e-8


def affine_start(Z):
    """Multipliers (u, v) of the projection onto the affine set ``{X 1 = 1, X^T 1 = 1}`` (no sign constraint).

    ``Z + u 1^T + 1 v^T`` then has row and column sums 1, so every row and
    column has a positive entry: a start where the Newton system is regular.
    """
    n = Z.shape[0]
    rows, cols = Z.sum(axis=1), Z.sum(axis=0)
    shift = (rows.sum() - n) / (2.0 * n * n)
    return (1.0 - rows) / n + shift, (1.0 - cols) / n + shift


def _reach_empty(Z, u, v):
    """(u, v) with every empty row and column of X(u, v) moved until its largest entry is 1 (so its sum is
    >= 1): a step of 1 / count would take ~|Z| / 1 steps there (a row 1e6 below the others)."""
    Y = Z + u[:, None] + v[None, :]
    low = Y.max(axis=1) <= 0.0
    if low.any():
        u = u.copy()
        u[low] += 1.0 - Y[low].max(axis=1)
        Y = Z + u[:, None] + v[None, :]
    low = Y.max(axis=0) <= 0.0
    if low.any():
        v = v.copy()
        v[low] += 1.0 - Y[:, low].max(axis=0)
    return u, v


def _phi(Z, u, v, buf):
    """phi(u, v) and X(u, v) (written in ``buf``)."""
    np.add(Z, u[:, None], out=buf)
    buf += v[None, :]
    np.maximum(buf, 0.0, out=buf)
    return 0.5 * float(np.vdot(buf, buf)) - float(u.sum()) - float(v.sum()), buf


def _residual(X):
    """||X 1 - 1||_1 + ||X^T 1 - 1||_1."""
    return float(np.abs(X.sum(axis=1) - 1.0).sum() + np.abs(X.sum(axis=0) - 1.0).sum())


def newton_duals(Z, u, v, tol=None, max_steps=MAX_NEWTON):
    """Minimize phi from (u, v) by semismooth Newton (module docstring); returns (u, v, X, residual_l1, steps)."""
    n = Z.shape[0]
    scale = max(1.0, float(np.abs(Z).max()) if Z.size else 1.0)
    tol = RESIDUAL_TOL * n * scale if tol is None else tol
    X, trial = np.empty_like(Z), np.empty_like(Z)
    z_norm = float(np.vdot(Z, Z)) ** 0.5  # (for phi's rounding below)
    f, X = _phi(Z, u, v, X)
    steps = 0
    while True:
        rr = X.sum(axis=1) - 1.0
        rc = X.sum(axis=0) - 1.0
        res = float(np.abs(rr).sum() + np.abs(rc).sum())
        if res <= tol or steps >= max_steps or not np.isfinite(res):
            return u, v, X, res, steps
        S = (X > 0).astype(float)
        r_cnt, c_cnt = S.sum(axis=1), S.sum(axis=0)
        if not (r_cnt.all() and c_cnt.all()):
            # an empty row or column: its Newton step (below, 1 / count) would be 1 per step however far
            # below the others it lies (at Z ~ 1e6: 60 steps and a residual of 4); moved to reach it first
            u, v = _reach_empty(Z, u, v)
            f, X = _phi(Z, u, v, X)
            steps += 1
            continue
        # every row and column has support here (the branch above)
        delta = DELTA * max(1.0, n)  # Lorenz-Manns-Meyer's regularization of the singular direction (1, -1)
        dr = r_cnt + delta
        dc = c_cnt + delta
        # [[diag(dr), S], [S^T, diag(dc)]] (du, dv) = -(rr, rc): eliminate du = -(rr + S dv) / dr
        # K = diag(dc) - S^T diag(1 / dr) S, formed as -W^T W + diag(dc) with W = diag(dr)^(-1/2) S by
        # one symmetric rank-k update (half the flops of the product; K's upper triangle only)
        W = S
        W *= (1.0 / np.sqrt(dr))[:, None]  # (S is not used again)
        K = blas.dsyrk(-1.0, W, trans=1, lower=0)
        K[np.diag_indices(n)] += dc
        rhs = -rc + (rr / np.sqrt(dr)) @ W
        try:
            dv = cho_solve(cho_factor(K, lower=False, check_finite=False), rhs, check_finite=False)
        except (LinAlgError, ValueError):
            K = np.triu(K) + np.triu(K, 1).T
            dv = np.linalg.lstsq(K, rhs, rcond=None)[0]
        root = np.sqrt(dr)
        du = -(rr / dr + (W @ dv) / root)  # -(rr + S dv) / dr
        slope = float(rr @ du + rc @ dv)
        if not slope < 0:
            return u, v, X, res, steps
        t = 1.0
        # phi's rounding (a few ulps of |phi|) hides the decrease t * slope ~ residual^2 near the
        # solution; there a step that lowers the residual is taken instead (a Newton step's own test)
        rounding = 64 * np.finfo(float).eps * (abs(f) + z_norm + 1.0)
        below = 0
        for _ in range(MAX_HALVINGS):
            f_new, _ = _phi(Z, u + t * du, v + t * dv, trial)
            if f_new <= f + ARMIJO * t * slope:
                break
            if -t * slope <= rounding:
                if _residual(trial) < res:
                    break
                below += 1
                if below > FLOOR_HALVINGS:
                    return u, v, X, res, steps  # at the rounding floor: no step lowers phi or the residual
            t *= 0.5
        else:
            return u, v, X, res, steps
        u, v = u + t * du, v + t * dv
        f, (X, trial) = f_new, (trial, X)
        steps += 1


def round_to_polytope(X):
    """Altschuler, Weed & Rigollet 2017, Alg. 2: a doubly stochastic matrix near a nonnegative X (in place)."""
    n = X.shape[0]
    np.maximum(X, 0.0, out=X)
    rows = X.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        X *= np.where(rows > 1.0, 1.0 / rows, 1.0)[:, None]
    cols = X.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        X *= np.where(cols > 1.0, 1.0 / cols, 1.0)[None, :]
    err_r = 1.0 - X.sum(axis=1)
    err_c = 1.0 - X.sum(axis=0)
    np.maximum(err_r, 0.0, out=err_r)  # >= 0 after the scaling, up to rounding
    np.maximum(err_c, 0.0, out=err_c)
    total = float(err_r.sum())
    if total > 0:
        X += np.outer(err_r, err_c / total)
    elif n and not X.any():
        X[...] = 1.0 / n
    return X


class BirkhoffProjector:
    """The Euclidean projection onto the ``n x n`` doubly stochastic matrices, warm-started (module docstring).

    Keeps the multipliers (u, v) of the last call: consecutive points of a
    projected-gradient method differ little, and Newton from the previous
    multipliers takes 1-4 steps. The warm start is taken only where it is
    better (a lower phi) than the cold start, so a far point costs nothing
    extra. Not thread-safe (one solve at a time uses it).
    """

    def __init__(self, n):
        self.n = int(n)
        self.duals = None
        self.last_steps = 0
        self.last_residual = 0.0

    def reset(self):
        self.duals = None

    def __call__(self, Z, out=None):
        """The projection of the ``n x n`` matrix Z (float); written in ``out`` (n x n) where given."""
        n = self.n
        Z = np.asarray(Z, dtype=float)
        if Z.shape != (n, n):
            raise ValueError(f"Birkhoff projection: point has shape {Z.shape}, expected {(n, n)}")
        if not np.isfinite(Z).all():
            result = np.full((n, n), np.nan)
        elif n == 1:
            result = np.ones((1, 1))
        else:
            u, v = affine_start(Z)
            if self.duals is not None:
                buf = np.empty_like(Z)
                wu, wv = self.duals
                if _phi(Z, wu, wv, buf)[0] < _phi(Z, u, v, buf)[0]:
                    u, v = wu.copy(), wv.copy()
            u, v, X, res, steps = newton_duals(Z, u, v)
            self.last_steps, self.last_residual = steps, res
            if np.isfinite(u).all() and np.isfinite(v).all():
                shift = 0.5 * (float(u.mean()) - float(v.mean()))  # (u + t, v - t) gives the same X
                self.duals = (u - shift, v + shift)
            result = round_to_polytope(X)
        if out is None:
            return result
        out[...] = result
        return out


def project_birkhoff(Z):
    """The Euclidean projection of a square matrix Z onto the doubly stochastic matrices (no warm start)."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2 or Z.shape[0] != Z.shape[1]:
        raise ValueError(f"Birkhoff projection: Z must be a square matrix, got shape {Z.shape}")
    return BirkhoffProjector(Z.shape[0])(Z)
