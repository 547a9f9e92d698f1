"""The L1 ball {x : ||vec(x)||_1 <= radius}."""
from __future__ import annotations

import numpy as np

from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import SparseAtom
from .base import ConvexSet, check_nonnegative


class L1Ball(ConvexSet):
    """The L1 ball ``{x : sum_i |x_i| <= radius}`` over all entries of ``expr``.

    Its vertices are the ``2 n`` points ``+-radius * e_i``. The LMO minimizes
    ``<d, s>`` by putting all the mass on the coordinate where ``|d_i|`` is
    largest, with the sign opposite to ``d_i``::

        i = argmax_j |d_j|,   s = -radius * sign(d_i) * e_i

    (``-radius * e_i`` when ``d_i = 0``), so ``<d, s> = -radius * ||d||_inf``.
    The vertex is returned as a one-entry :class:`SparseAtom`.
    """

    is_polytope = True

    def __init__(self, expr, radius=1.0):
        super().__init__(expr)
        self.radius = check_nonnegative("radius", radius, "L1Ball")

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        i = int(np.argmax(np.abs(d)))
        # d_i = 0 only when d = 0: any vertex minimizes, take -radius * e_i.
        value = self.radius if d[i] < 0 else -self.radius
        return SparseAtom([i], [value], self.size)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        return bool(np.abs(x).sum() <= self.radius + tol * max(1.0, self.radius))

    def diameter(self):
        return 2.0 * self.radius

    def __repr__(self):
        return f"L1Ball({self.expr!r}, radius={self.radius:g})"
