"""A transpose-invariant set restricted to symmetric matrices."""
from __future__ import annotations

import numpy as np

from ._common import InnerData, as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import SparseAtom
from .base import ConvexSet


class SymmetricPart(InnerData, ConvexSet):
    """``inner ∩ {X = X^T}`` for a set ``inner`` with ``X in inner <=> X^T in inner``.

    For symmetric S, ``<D, S> = <sym(D), S>`` with ``sym(D) = (D + D^T) / 2``,
    so the LMO over the intersection is the LMO of ``inner`` along ``sym(D)``
    provided that it returns a symmetric vertex for a symmetric direction;
    the Euclidean ball (``-r D / ||D||``) and boxes with symmetric bounds
    (the sign pattern of ``sym(D)``) do. Vertices are then exactly
    symmetric, so are the iterates built from them. The projection is the
    inner set's projection of ``sym(P)``. Used by the compiler for
    ``fm.Variable(..., symmetric=True)``; data and Parameters are the inner
    set's.
    """

    def __init__(self, inner):
        super().__init__(inner.expr)
        self.inner = inner
        self.is_polytope = inner.is_polytope
        self.is_box = inner.is_box
        self.has_cheap_projection = getattr(inner, "has_cheap_projection", False)
        self._n = self.shape[0]

    def _sym(self, flat):
        D = flat.reshape(self._n, self._n)
        return (0.5 * (D + D.T)).ravel()

    def lmo_atom(self, flat_direction):
        return self.inner.lmo_atom(self._sym(as_flat_direction(self, flat_direction)))

    def lmo_for_solve(self):
        """Through the inner set's own :meth:`lmo_for_solve`: its per-solve state (the Birkhoff
        polytope's warm-started assignment solver) serves the solve, fresh for each solve, so that
        a re-solve repeats the first. A subclass builds its vertex in :meth:`_vertex` (one LMO for
        both paths); one that overrides :meth:`lmo_atom` but neither :meth:`_vertex` nor this method
        gets its own :meth:`lmo_atom` here (the inner set's LMO would not be its LMO)."""
        cls = type(self)
        if cls.lmo_atom is not SymmetricPart.lmo_atom and cls._vertex is SymmetricPart._vertex:
            return self.lmo_atom
        inner_lmo = self.inner.lmo_for_solve()
        return lambda flat_direction: self._vertex(inner_lmo, flat_direction)

    def _vertex(self, inner_lmo, flat_direction):
        """The intersection's vertex from an LMO of the inner set: its vertex along sym(D)."""
        return inner_lmo(self._sym(as_flat_direction(self, flat_direction)))

    def lmo(self, direction):
        return dense_vertex(self, self.lmo_atom(as_direction(self, direction).ravel()))

    def project_flat(self, flat_point):
        return self.inner.project_flat(self._sym(np.asarray(flat_point, dtype=float).ravel()))

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        scale = float(np.max(np.abs(x), initial=0.0))  # (relative to the point's size, no floor of 1)
        return bool(np.max(np.abs(x - x.T), initial=0.0) <= tol * scale) and bool(self.inner.contains(x, tol))

    def contains_origin(self):
        return self.inner.contains_origin()

    def coordinate_bounds(self):
        return self.inner.coordinate_bounds()

    def diameter(self):
        return self.inner.diameter()

    # Structure declarations are not read through to the inner set: a
    # per-coordinate step on a box, or a step per simplex group, moves the
    # entries (i, j) and (j, i) apart. Only whole symmetric vertices keep the
    # iterates symmetric.
    def interval_bounds(self):
        return None

    def simplex_groups(self):
        return None

    def low_rank_face(self):
        return None

    keeps_symmetric = True

    def group_count(self):
        return self.inner.group_count()

    def __getattr__(self, name):
        # data fields (radius, lower, upper) read through to the inner set
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self):
        return f"SymmetricPart({self.inner!r})"


def symmetrized_atom(atom, n, size, scale=1.0):
    """``scale * (V + V^T) / 2`` for a sparse vertex V of an n x n matrix set (sorted, merged indices)."""
    indices = np.asarray(atom.indices)
    values = np.broadcast_to(np.asarray(atom.values, dtype=float), indices.shape)
    rows, cols = np.divmod(indices, n)
    both = np.concatenate([indices, cols * n + rows])
    merged, slot = np.unique(both, return_inverse=True)  # sorted and merged: one key per vertex
    weights = np.bincount(slot, weights=np.concatenate([values, values]), minlength=merged.size)
    return SparseAtom(merged, 0.5 * scale * weights, size)


class SymmetrizedVertices(SymmetricPart):
    """``inner ∩ {X = X^T}`` for a transpose-closed polytope whose LMO vertices are not symmetric.

    For a symmetric direction D, ``<D, V^T> = <D, V>``, so with V the inner
    LMO's vertex along ``sym(D)``, ``(V + V^T) / 2`` is as good, lies in
    ``inner`` (closed under transposition and convex) and is symmetric: an
    LMO over the intersection whose iterates are exactly symmetric. For the
    Birkhoff polytope these are the vertices of the symmetric doubly
    stochastic matrices, ``(P + P^T) / 2`` (Katz 1970).
    """

    def _vertex(self, inner_lmo, flat_direction):
        """(V + V^T) / 2 for the inner LMO's vertex V along sym(D)."""
        return symmetrized_atom(SymmetricPart._vertex(self, inner_lmo, flat_direction), self._n, self.size)

    def lmo_atom(self, flat_direction):
        return self._vertex(self.inner.lmo_atom, flat_direction)
