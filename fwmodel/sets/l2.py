"""The Euclidean ball {x : ||vec(x)||_2 <= radius}."""
from __future__ import annotations

import itertools

import numpy as np

from ._common import as_direction, as_flat_direction, as_point
from .atoms import DenseAtom
from .base import ConvexSet, nonnegative_data

_keys = itertools.count()


class L2Ball(ConvexSet):
    """The Euclidean ball ``{x : ||vec(x)||_2 <= radius}``.

    The LMO is the boundary point opposite to the direction,
    ``s = -radius * d / ||d||_2``, so ``<d, s> = -radius * ||d||_2``
    (Cauchy-Schwarz). For ``d = 0`` every point minimizes; the center 0 is
    returned. Not a polytope: every boundary point is extreme, so the vertex
    is stored densely and never merged with another.
    """

    is_polytope = False

    def __init__(self, expr, radius=1.0):
        super().__init__(expr)
        self._store_data("radius", radius, nonnegative_data("radius", "L2Ball"))

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        norm = float(np.linalg.norm(d))
        if norm == 0.0 or not np.isfinite(norm):
            if norm == 0.0:
                return DenseAtom(np.zeros(self.size), key=("l2-center",))
            # overflow in the norm: rescale before normalizing
            d = d / np.max(np.abs(d))
            norm = float(np.linalg.norm(d))
        # a continuous family of vertices: repeats are (almost) never exact,
        # so skip hashing the vector and give each vertex a fresh key.
        return DenseAtom((-self.radius / norm) * d, key=("l2", next(_keys)))

    def lmo(self, direction):
        d = as_direction(self, direction)
        return self.lmo_atom(d.ravel()).vector.reshape(tuple(self.shape))

    has_cheap_projection = True

    def project_flat(self, flat_point):
        """Euclidean projection: scale the point back onto the ball when it lies outside."""
        x = np.array(flat_point, dtype=float).ravel()
        norm = float(np.linalg.norm(x))
        if norm > self.radius:
            x *= self.radius / norm
        return x

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        return bool(np.linalg.norm(x.ravel()) <= self.radius * (1.0 + tol))  # (relative: no floor of 1)

    def diameter(self):
        return 2.0 * self.radius

    def coordinate_bounds(self):
        """Every entry lies in [-radius, radius]."""
        return np.full(self.size, -self.radius), np.full(self.size, self.radius)

    def symmetric_variant(self):
        """The ball is transpose-invariant: its LMO along a symmetrized direction is symmetric."""
        from .symmetric import SymmetricPart

        shape = tuple(self.shape)
        return SymmetricPart(self) if len(shape) == 2 and shape[0] == shape[1] else None

    def __repr__(self):
        return f"L2Ball({self.expr!r}, radius={self._datum_text('radius')})"
