"""The ConvexSet base class: a compact convex set known through its LMO.

A set constrains one expression (a variable or an affine expression of
variables). It knows nothing about problems: the compiler gives every set a
block of the product space and asks the set only for vertices.

To define your own set, subclass :class:`ConvexSet` and implement
:meth:`ConvexSet.lmo`::

    class GroupL1Ball(fm.ConvexSet):
        is_polytope = False
        def __init__(self, expr, radius=1.0):
            super().__init__(expr)
            self.radius = radius
        def lmo(self, direction):
            ...  # a minimizer of <direction, s> over the set, same shape

Optional hooks a subclass may override:

- ``is_polytope`` (class attribute): True when the set is the convex hull of
  finitely many vertices; the engine then uses away/pairwise steps on it.
- ``diameter()``: an upper bound on max ||s - s'||; used for scaling defaults.
- ``lmo_atom(flat_direction)``: return a structured :class:`~fwmodel.sets.atoms.Atom`
  (sparse, rank-one, ...) instead of a dense vertex, to keep active sets small.
- ``contains(point, tol)``: membership test, used by ``fm.check_lmo``.
- ``reset()``: forget warm-start state (e.g. a Lanczos start vector).

Declarations of structure the engine can exploit (a set offers them; no
caller tests the set's type):

- ``simplex_groups()``: ``(index, total)`` when the set is a product of
  simplices (``index[g]`` the flat entries of group g): a pairwise step in
  every group at once (:class:`~fwmodel.sets.simplex.Simplex`).
- ``interval_bounds()``: flat ``(lower, upper)`` when the set is a box: a
  Frank-Wolfe step in every coordinate (:class:`~fwmodel.sets.box.Box`).
- ``low_rank_face()``: ``(radius, psd, shape)`` for sets whose faces are
  low-rank matrices: in-face steps
  (:class:`~fwmodel.sets.trace_norm.TraceNormBall`).
- ``has_cheap_projection`` and ``project_flat(point)``: projected-gradient
  steps (option ``projection``).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .atoms import DenseAtom, SparseAtom


class ConvexSet:
    """A compact convex set over the values of ``expr``, given by its LMO.

    A subclass needs only :meth:`lmo`. Optional hooks: ``is_polytope``
    (enables away/pairwise steps), :meth:`diameter`, :meth:`contains`,
    :meth:`lmo_atom` (a structured vertex instead of a dense one) and
    :meth:`reset` (forget warm-start state); see the module docstring.
    ``fm.check_lmo(MySet, shape=...)`` tests an implementation.
    """

    #: True when the set is a polytope (finitely many vertices).
    is_polytope = False
    #: True when :meth:`project_flat` is about as cheap as the LMO (one or a
    #: few passes over the entries): the engine may then take projected-gradient
    #: steps on the set's block (``solve(projection=...)``).
    has_cheap_projection = False

    def project_flat(self, flat_point):
        """Euclidean projection of a flat point onto the set (only where ``has_cheap_projection``)."""
        raise NotImplementedError(f"{type(self).__name__} has no cheap Euclidean projection")

    def __init__(self, expr):
        from ..expressions import as_expression  # sets -> expressions only

        self.expr = as_expression(expr)
        if self.expr.size == 0:
            raise ModelError(f"{type(self).__name__}: the constrained expression {self.expr!r} has no entries (shape {self.expr.shape})")
        if not self.expr.is_affine():
            raise ModelError(
                f"{type(self).__name__}: the constrained expression must be affine in the variables, got {self.expr!r}"
            )

    # ------------------------------------------------------------------ shape
    @property
    def shape(self):
        """Shape of the constrained expression (and of every vertex)."""
        return self.expr.shape

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    # -------------------------------------------------------------- the oracle
    def lmo(self, direction):
        """Return a vertex ``s`` minimizing ``<direction, s>`` over the set.

        ``direction`` and the result have the expression's shape.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement lmo(direction)")

    def lmo_atom(self, flat_direction):
        """Engine entry point: the LMO on a flat direction, as an Atom.

        The default calls :meth:`lmo` and stores the vertex densely.
        """
        direction = flat_direction.reshape(self.shape)
        vertex = np.asarray(self.lmo(direction), dtype=float)
        if vertex.shape != tuple(self.shape):
            if vertex.size == self.size:
                vertex = vertex.reshape(self.shape)
            else:
                raise ModelError(
                    f"{type(self).__name__}.lmo returned shape {vertex.shape}, expected {tuple(self.shape)}"
                )
        if not np.isfinite(vertex).all() and np.isfinite(direction).all():
            raise ModelError(
                f"{type(self).__name__}.lmo returned NaN or infinite entries for a finite direction: "
                "a vertex of a bounded set is finite"
            )
        return DenseAtom(vertex.ravel())

    def initial_atom(self):
        """The point the iterates start from.

        The origin when the set contains it (norm balls, boxes around 0, the
        empty alignment): starting there keeps the first iterates small, as
        splitting methods do, instead of at a vertex of possibly huge norm.
        Otherwise the LMO of a zero direction (some vertex).
        """
        if self.contains_origin():
            return SparseAtom(np.zeros(0, dtype=np.intp), np.zeros(0), self.size)
        return self.lmo_atom(np.zeros(self.size))

    def contains_origin(self):
        """True when 0 is in the set (by ``contains``, asked once; False when unknown).

        Sets whose membership test is expensive (a trace-norm ball needs an
        SVD) override this with the answer they know.
        """
        cached = getattr(self, "_contains_origin", None)
        if cached is None:
            try:
                cached = bool(self.contains(np.zeros(self.shape)))
            except Exception:  # a user's contains() that cannot take 0: do not guess
                cached = False
            self._contains_origin = cached
        return cached

    # ---------------------------------------------------------- optional hooks
    def diameter(self):
        """An upper bound on the set's diameter, or None when unknown."""
        return None

    def contains(self, point, tol=1e-9):
        """Membership test (with relative tolerance); None when not implemented."""
        return None

    def reset(self):
        """Forget any warm-start state."""

    def __repr__(self):
        return f"{type(self).__name__}({self.expr!r})"


def check_nonnegative(name, value, owner, strict=False):
    """Validate a scalar set parameter (a radius, a total); ModelError naming it.

    See :func:`fwmodel.sets._common.check_number` for what is refused.
    """
    from ._common import check_number

    return check_number(owner, name, value, sign="positive" if strict else "nonneg")
