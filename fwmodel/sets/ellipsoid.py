"""The ellipsoid {e : e' P e <= bound} for a constant positive definite P."""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point
from .atoms import DenseAtom
from .base import ConvexSet, nonnegative_data

_keys = itertools.count()


class Ellipsoid(ConvexSet):
    """The ellipsoid ``{e : e' P e <= bound}`` (``fm.quad_form(e, P) <= bound``), P constant and positive definite.

    LMO. ``min <d, e>`` over the set is reached at
    ``e* = -sqrt(bound / (d' P^{-1} d)) P^{-1} d`` (Cauchy-Schwarz in the
    metric of P: ``<d, e> = <P^{-1/2} d, P^{1/2} e>`` with ``||P^{1/2} e|| <=
    sqrt(bound)``), with ``P^{-1} d`` from P's eigendecomposition (formed once)
    in two products per call. The Euclidean projection is cheap too
    (:meth:`project_flat`), so the engine may take projection steps on it. Every boundary point is
    extreme, so vertices are stored densely, as an L2 ball's.

    Unlike an L2 ball on the image ``L' e`` (``P = L L'``), the ellipsoid holds
    ``e`` itself: on a variable (or on ``a * x + c`` elementwise) it bounds
    that variable, so ``fm.quad_form(x, P) <= t`` needs no other set on x.
    Its entries lie in ``|e_i| <= sqrt(bound (P^{-1})_ii)``.
    """

    is_polytope = False

    def __init__(self, expr, P, bound=1.0):
        super().__init__(expr)
        self._store_data("bound", bound, nonnegative_data("bound", "Ellipsoid"))
        if hasattr(P, "_has_params") and getattr(P, "_has_params", False):
            raise ModelError("Ellipsoid: P must be constant (a NumPy array or a sparse matrix), not an fm.Parameter: "
                             "its Cholesky factor is formed once")
        P = P.toarray() if hasattr(P, "toarray") else np.asarray(getattr(P, "value", P), dtype=float)
        n = self.size
        if P.shape != (n, n):
            raise ModelError(f"Ellipsoid: P must have shape ({n}, {n}) to match the expression of shape "
                             f"{tuple(self.shape)}, got {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ModelError("Ellipsoid: P has NaN or infinite entries")
        if not np.allclose(P, P.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(P).max()))):
            raise ModelError("Ellipsoid: P must be symmetric")
        P = 0.5 * (P + P.T)
        eigenvalues, eigenvectors = np.linalg.eigh(P)
        if not float(eigenvalues[0]) > 1e-10 * max(float(eigenvalues[-1]), 0.0):
            raise ModelError(f"Ellipsoid: P must be positive definite (its eigenvalues range from "
                             f"{float(eigenvalues[0]):.3g} to {float(eigenvalues[-1]):.3g}): a singular P makes the "
                             "set unbounded; fm.quad_form(e, P) <= t holds it as a ball on an image of e")
        self.P = P
        # P = Q diag(l) Q': the LMO's P^{-1} d and the projection's (I + nu P)^{-1} y in two products each
        self._eigenvalues, self._eigenvectors = eigenvalues, eigenvectors
        self._inverse_diagonal = np.einsum("ik,k,ik->i", eigenvectors, 1.0 / eigenvalues, eigenvectors)

    def _solve(self, d):
        """``P^{-1} d``."""
        return self._eigenvectors @ ((self._eigenvectors.T @ d) / self._eigenvalues)

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        w = self._solve(d)
        q = float(d @ w)  # d' P^{-1} d >= 0
        if not q > 0.0 or not np.isfinite(q):
            if q == 0.0 or not np.any(d):
                return DenseAtom(np.zeros(self.size), key=("ellipsoid-center",))
            scale = float(np.max(np.abs(d)))  # overflow: rescale the direction (the vertex does not change)
            d = d / scale
            w = self._solve(d)
            q = float(d @ w)
        return DenseAtom(-np.sqrt(self.bound / q) * w, key=("ellipsoid", next(_keys)))

    def lmo(self, direction):
        d = as_direction(self, direction)
        return self.lmo_atom(d.ravel()).vector.reshape(tuple(self.shape))

    has_cheap_projection = True

    def project_flat(self, flat_point):
        """Euclidean projection: ``(I + nu P)^{-1} y`` with ``nu >= 0`` the root of ``phi(nu) = x' P x - bound``.

        In P's eigenbasis ``phi(nu) = sum_i l_i yh_i^2 / (1 + nu l_i)^2 - bound`` is convex and decreasing, so
        Newton's method from ``nu = 0`` rises monotonically to the root (two products with Q, O(n) per step).
        """
        y = np.array(flat_point, dtype=float).ravel()
        Q, lam = self._eigenvectors, self._eigenvalues
        yh = Q.T @ y
        weighted = lam * yh * yh
        if float(weighted.sum()) <= self.bound:
            return y
        if not self.bound > 0:
            return np.zeros_like(y)
        nu = 0.0
        for _ in range(100):
            shrink = 1.0 / (1.0 + nu * lam)
            phi = float(np.sum(weighted * shrink ** 2)) - self.bound
            slope = -2.0 * float(np.sum(weighted * lam * shrink ** 3))
            if phi <= 1e-14 * self.bound or slope == 0.0:
                break
            nu -= phi / slope
        return Q @ (yh / (1.0 + nu * lam))

    def contains(self, point, tol=1e-9):
        e = as_point(self, point)
        if e is None:
            return False
        e = e.ravel()
        return bool(float(e @ self.P @ e) <= self.bound + tol * max(1.0, self.bound))

    def diameter(self):
        return 2.0 * float(np.sqrt(self.bound / self._eigenvalues[0]))

    def coordinate_bounds(self):
        """``|e_i| <= sqrt(bound (P^{-1})_ii)``: the LMO along ``-e_i`` and ``+e_i``, in closed form."""
        half_width = np.sqrt(self.bound * self._inverse_diagonal)
        return -half_width, half_width

    def multiplier(self, point, gradient):
        """CVXPY's multiplier of ``quad_form(e, P) <= bound`` at ``point`` from the block's gradient G of the
        Lagrangian: KKT ``G + 2 lambda P e = 0``, so ``<G, e> = -2 lambda bound`` on the boundary (0 inside,
        where G = 0); None for ``bound = 0``."""
        if not self.bound > 0:
            return None
        return max(0.0, -float(np.ravel(gradient) @ np.ravel(point))) / (2.0 * self.bound)

    def __repr__(self):
        return f"Ellipsoid({self.expr!r}, P, bound={self._datum_text('bound')})"
