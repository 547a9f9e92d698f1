"""The ellipsoid {e : e' P e <= bound} for a constant positive definite P."""
from __future__ import annotations

import itertools

import numpy as np

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point, check_number_array, describe_value
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

    def __init__(self, expr, P, bound=1.0, *, _eigendecomposition=None):
        """``_eigendecomposition``: ``(eigenvalues, eigenvectors)`` of the symmetric part of P where the caller
        has formed it (the compiler, for ``fm.quad_form(e, P) <= t``), so that it is not formed twice."""
        super().__init__(expr)
        self._store_data("bound", bound, nonnegative_data("bound", "Ellipsoid"))
        if hasattr(P, "_has_params") and getattr(P, "_has_params", False):
            raise ModelError("Ellipsoid: P must be constant (a NumPy array or a sparse matrix), not an fm.Parameter: "
                             "its eigendecomposition is formed once")
        P = P.toarray() if hasattr(P, "toarray") else getattr(P, "value", P)
        n = self.size
        if np.ndim(P) != 2:
            raise ModelError(f"Ellipsoid: P must be a matrix of shape ({n}, {n}) to match the expression of shape "
                             f"{tuple(self.shape)}, got {describe_value(P)}")
        # real, finite, within the data limit (a complex Hermitian P is refused, not cast to its real part)
        P = check_number_array("Ellipsoid", "P", P, np.shape(P))
        if P.shape != (n, n):
            raise ModelError(f"Ellipsoid: P must have shape ({n}, {n}) to match the expression of shape "
                             f"{tuple(self.shape)}, got {P.shape}")
        if not np.allclose(P, P.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(P).max()))):
            raise ModelError("Ellipsoid: P must be symmetric")
        P = 0.5 * (P + P.T)
        eigenvalues, eigenvectors = (np.linalg.eigh(P) if _eigendecomposition is None
                                     else map(np.asarray, _eigendecomposition))
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
        if not np.any(d):
            return DenseAtom(np.zeros(self.size), key=("ellipsoid-center",))
        # the vertex does not change with the direction's length: scale it to max |d_i| = 1, so that
        # d' P^{-1} d neither underflows (a direction of 1e-170) nor overflows
        d = d / float(np.max(np.abs(d)))
        w = self._solve(d)
        q = float(d @ w)  # d' P^{-1} d > 0
        return DenseAtom(-np.sqrt(self.bound / q) * w, key=("ellipsoid", next(_keys)))

    def lmo(self, direction):
        d = as_direction(self, direction)
        return self.lmo_atom(d.ravel()).vector.reshape(tuple(self.shape))

    has_cheap_projection = True

    def project_flat(self, flat_point):
        """Euclidean projection: ``(I + nu P)^{-1} y`` with ``nu >= 0`` where ``x' P x = bound``.

        In P's eigenbasis ``q(nu) = x' P x = sum_i l_i yh_i^2 / (1 + nu l_i)^2``. Newton's method runs on
        ``g(nu) = 1 / sqrt(q(nu)) - 1 / sqrt(bound)`` (the secular equation of trust-region subproblems,
        Moré and Sorensen 1983): g is increasing and concave, exactly linear for one eigenvalue, so Newton
        from a point left of the root rises monotonically to it in a few steps at any scale. It starts at
        ``nu = (sqrt(q(0) / bound) - 1) / l_max``, which lies left of the root. A point Newton leaves
        outside by rounding is scaled onto the boundary (the answer is always in the set).
        """
        y = np.array(flat_point, dtype=float).ravel()
        Q, lam = self._eigenvectors, self._eigenvalues
        yh = Q.T @ y
        weighted = lam * yh * yh
        total = float(weighted.sum())
        if total <= self.bound:
            return y
        if not self.bound > 0:
            return np.zeros_like(y)
        target = 1.0 / np.sqrt(self.bound)
        nu = max(0.0, (np.sqrt(total / self.bound) - 1.0) / float(lam[-1]))
        for _ in range(100):
            shrink = 1.0 / (1.0 + nu * lam)
            q = float(np.sum(weighted * shrink ** 2))
            if abs(q - self.bound) <= 1e-13 * self.bound:
                break
            q_slope = -2.0 * float(np.sum(weighted * lam * shrink ** 3))
            g, g_slope = 1.0 / np.sqrt(q) - target, -0.5 * q ** -1.5 * q_slope
            if not g_slope > 0:
                break
            step = -g / g_slope
            if abs(step) <= 1e-15 * max(nu, 1e-300):
                break
            nu += step
        x = Q @ (yh / (1.0 + nu * lam))
        q = float(x @ self.P @ x)
        if q > self.bound:  # (rounding) the nearest point of the set along the same ray
            x *= np.sqrt(self.bound / q)
        return x

    def contains(self, point, tol=1e-9):
        e = as_point(self, point)
        if e is None:
            return False
        e = e.ravel()
        # in the units of e (as an L2 ball's test): sqrt(e' P e) <= sqrt(bound), relative tolerance tol
        radius = np.sqrt(self.bound)
        return bool(np.sqrt(max(float(e @ self.P @ e), 0.0)) <= radius * (1.0 + tol))  # (relative)

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
