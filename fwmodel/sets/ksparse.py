"""The k-sparse polytope: convex hull of k-sparse vectors with entries +-radius."""
from __future__ import annotations

import numpy as np

from ._common import as_direction, as_flat_direction, as_point, check_positive_int, dense_vertex
from .atoms import SparseAtom
from .base import ConvexSet, nonnegative_data


class KSparsePolytope(ConvexSet):
    """``conv{x : at most k nonzeros, each +-radius}``.

    Equivalently ``{x : ||x||_inf <= radius, ||x||_1 <= k * radius}`` (the
    intersection of a scaled L-infinity ball and a scaled L1 ball). For
    ``k = 1`` it is the L1 ball of that radius; for ``k >= n`` the
    L-infinity ball (``k`` is clipped to the number of entries).

    LMO. ``<d, s>`` over the vertices is minimized by spending the ``k``
    nonzeros on the ``k`` entries with largest ``|d_i|``, each set to
    ``-radius * sign(d_i)``, giving ``<d, s> = -radius * (sum of the k
    largest |d_i|)``. The k largest are found by ``np.argpartition`` in
    ``O(n)``; the vertex is a :class:`SparseAtom` with k entries (sorted
    indices, so equal vertices have equal keys).

    Steps. Under ``step="auto"`` the block takes pairwise steps
    (Lacoste-Julien & Jaggi 2015) rather than BPCG's FW steps: see
    :meth:`auto_active_set_step`.
    """

    is_polytope = True

    def __init__(self, expr, k, radius=1.0):
        super().__init__(expr)
        self.k = check_positive_int("k", k, "KSparsePolytope")
        self._store_data("radius", radius, nonnegative_data("radius", "KSparsePolytope"))
        self._k_eff = min(self.k, self.size)

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        n, k = self.size, self._k_eff
        if k == n:
            idx = np.arange(n)
        else:
            # the k largest |d_i| sit after position n - k once partitioned
            idx = np.sort(np.argpartition(np.abs(d), n - k)[n - k:])
        values = np.where(d[idx] < 0, self.radius, -self.radius)
        return SparseAtom(idx, values, n)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def auto_active_set_step(self):
        """Pairwise steps under ``step="auto"`` (Lacoste-Julien & Jaggi 2015: weight moves from the away
        vertex to the LMO's vertex), not BPCG's FW steps (Tsuji, Tanaka & Pokutta 2022); BPCG's local
        phase still runs where it applies (no rows, an isotropic objective: a projection).

        A vertex moves k entries to +-radius at once, so the vertices are far apart and an
        optimum inside a face needs many of them (16-18 active at 25 entries, k = 8). BPCG adds
        atoms only by FW steps ``s - x``, which shrink every active weight, and its local steps
        then trade weight among those overlapping vertices in ever smaller steps; a pairwise step
        puts the new vertex's weight where the worst active one had it. The same polytope as the
        boxed L1 ball with radius k * cap, which takes pairwise steps for this reason
        (:meth:`fwmodel.sets.boxed_l1.BoxedL1Ball.auto_active_set_step`; the driver's step:
        ``BlendedPairwiseStep(pairwise_steps=True)``). Measured in ``benchmarks/ksparse_steps.py``
        (benchmarks/RESULTS.md, "Vertex steps on the K-sparse polytope"): fuzz model 1530
        (projection with 5 rows) 400 -> 170 iterations, 122 (two copies, logistic) 1,280 -> 633.
        """
        return "pairwise"

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        a = np.abs(x.ravel())
        slack = tol * self.radius  # (relative, no floor of 1)
        return bool(a.max() <= self.radius + slack and a.sum() <= self._k_eff * (self.radius + slack))

    def diameter(self):
        # ||x - y|| <= ||x|| + ||y|| <= 2 * radius * sqrt(k), attained at +-vertex
        return float(2.0 * self.radius * np.sqrt(self._k_eff))

    def coordinate_bounds(self):
        """Every entry lies in [-radius, radius]."""
        return np.full(self.size, -self.radius), np.full(self.size, self.radius)

    def __repr__(self):
        return f"KSparsePolytope({self.expr!r}, k={self.k}, radius={self._datum_text('radius')})"
