"""Probability simplices, one or a batch of them along chosen axes."""
from __future__ import annotations

import functools
import operator

import numpy as np

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point, check_flag, check_number_array, dense_vertex
from ._thresholds import clipped_projection, non_finite, project_nonnegative_l1
from .atoms import SparseAtom
from .base import JOINT_GROUPS_LIMIT, ConvexSet, nonnegative_data
from .birkhoff import SymmetricStochastic
from .hulls import GroupSums
from .symmetric import SymmetrizedVertices


def _normalize_axes(axis, ndim):
    """``axis`` (None, int or tuple, negatives allowed) as a sorted tuple of axes."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = []
    for a in items:
        try:
            a = operator.index(a)
        except TypeError:
            raise ValueError(f"Simplex: axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise ValueError(f"Simplex: axis {a} is out of range for an expression with {ndim} dimensions")
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise ValueError(f"Simplex: axis {axis!r} repeats an axis")
    if not axes:
        raise ValueError("Simplex: axis must name at least one axis (or be None)")
    return tuple(sorted(axes))


def _group_totals(n_groups, kept_shape, value):
    """The check of a Simplex's ``total`` (picklable, for ``_store_data``): a nonnegative number, or one
    nonnegative number per group (an array of the kept axes' shape, or flat), kept as a flat array."""
    if np.ndim(value) == 0 or np.size(value) == 1:
        return nonnegative_data("total", "Simplex")(value)
    arr = np.asarray(value)
    if arr.size != n_groups or (arr.ndim > 1 and tuple(arr.shape) != tuple(kept_shape)):
        raise ModelError(f"Simplex: total has shape {arr.shape}; give one number, or one per group "
                         f"({n_groups} groups, the shape {tuple(kept_shape)} of the axes not summed)")
    totals = check_number_array("Simplex", "total", arr.reshape(-1), (n_groups,))
    if np.any(totals < 0):
        raise ModelError(f"Simplex: total must be nonnegative (>= 0), got {float(totals.min()):g} in group "
                         f"{int(np.argmin(totals))}")
    return totals


class Simplex(ConvexSet):
    """Entries ``>= 0`` summing to ``total`` (at most ``total`` if ``equality=False``).

    With ``axis=None`` all entries of ``expr`` form one simplex. With ``axis``
    (an int or a tuple, negatives allowed) the entries that
    ``expr.sum(axis=axis)`` adds up form one simplex for each index of the
    remaining axes: ``axis=1`` makes every row of a matrix a simplex,
    ``axis=(1, 2)`` every ``(K, K)`` table of an ``(E, K, K)`` array.
    ``total`` is one number, or one per group (an array of the shape of the
    axes not summed: ``fm.sum(X, axis=1) <= t`` with a vector ``t``); a set
    with totals per group is not merged with a box into a capped simplex.
    :meth:`simplex_groups` declares the groups to the engine's per-group
    pairwise steps (with the origin as a vertex where ``equality=False``).

    LMO. The set is a product of simplices, so the LMO is separable by group;
    over one simplex ``{s >= 0, sum s = t}`` the linear function ``<d, s>`` is
    minimized at the vertex ``t * e_i`` with ``i = argmin_j d_j``. With
    ``equality=False`` the origin is also a vertex and is taken when
    ``min_j d_j >= 0``. All groups are solved at once: the summed axes are
    moved last, the direction is viewed as a ``(groups, group_size)`` matrix
    and ``argmin`` runs along its rows. The vertex is a :class:`SparseAtom`
    with one flat index per group (no index for a group at the origin).
    """

    is_polytope = True

    def __init__(self, expr, total=1.0, axis=None, equality=True):
        super().__init__(expr)
        self.equality = check_flag("Simplex", "equality", equality)
        shape = tuple(self.shape)
        ndim = len(shape)
        if ndim == 0:
            if axis is not None:
                raise ValueError(f"Simplex: axis {axis!r} given for a scalar expression")
            self.axis = None
            summed = ()
        else:
            summed = _normalize_axes(axis, ndim)
            if axis is None:
                self.axis = None
            elif isinstance(axis, (tuple, list)):
                self.axis = summed
            else:
                self.axis = summed[0]
        kept = tuple(a for a in range(ndim) if a not in summed)
        self._summed_axes = summed
        self._kept_axes = kept
        self._perm = kept + summed
        self._identity_perm = self._perm == tuple(range(ndim))
        self._kept_shape = tuple(shape[a] for a in kept)
        self._summed_shape = tuple(shape[a] for a in summed)
        self.n_groups = int(np.prod(self._kept_shape, dtype=np.int64))
        self.group_size = int(np.prod(self._summed_shape, dtype=np.int64))
        self._store_data("total", total, functools.partial(_group_totals, self.n_groups, self._kept_shape))

    def _entry_totals(self):
        """The total of each entry's group, flat in C order (a number when all groups share one)."""
        if np.ndim(self.total) == 0:
            return self.total
        out = np.empty(self.size)
        out[self._grouped(np.arange(self.size))] = self.total[:, None]
        return out

    # ------------------------------------------------------------ group layout
    def _grouped(self, array):
        """``array`` (the expression's shape) as a ``(groups, group_size)`` matrix."""
        a = np.asarray(array).reshape(tuple(self.shape))
        if not self._identity_perm:
            a = a.transpose(self._perm)  # summed axes last (reshape below copies)
        return a.reshape(self.n_groups, self.group_size)

    def _flat_indices(self, groups, positions):
        """Flat C-order indices in the expression of entries ``(group, position)``."""
        if self._identity_perm:
            # summed axes already trailing: the grouped matrix is a plain reshape
            return groups * self.group_size + positions
        multi = [None] * len(self.shape)
        for a, idx in zip(self._kept_axes, np.unravel_index(groups, self._kept_shape)):
            multi[a] = idx
        for a, idx in zip(self._summed_axes, np.unravel_index(positions, self._summed_shape)):
            multi[a] = idx
        return np.ravel_multi_index(tuple(multi), tuple(self.shape))

    # -------------------------------------------------------------- the oracle
    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        D = self._grouped(d)
        groups = np.arange(self.n_groups)
        best = np.argmin(D, axis=1)
        if not self.equality:
            # the origin is a vertex too; it wins (ties included) when min d >= 0
            active = D[groups, best] < 0
            groups, best = groups[active], best[active]
        values = self.total if np.ndim(self.total) == 0 else self.total[groups]
        return SparseAtom(self._flat_indices(groups, best), values, self.size)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def group_count(self):
        """One simplex per index of the kept axes."""
        return self.n_groups

    def simplex_groups(self):
        """The flat indices of every group, as a ``(groups, group_size)`` array, the total(s), and
        whether the origin is a vertex too (``equality=False``).

        Declares the set a product of simplices, so that a solver can take a
        step in every group at once; None for a group of one entry. With
        ``equality=False`` or a total per group it is declared only beyond
        ``JOINT_GROUPS_LIMIT`` groups, where a solver keeps no joint active set
        (at most that many, BPCG on joint vertices was measured as fast).
        """
        if self.group_size < 2:
            return None
        plain = self.equality and np.ndim(self.total) == 0
        if not plain and self.n_groups <= JOINT_GROUPS_LIMIT:
            return None
        index = self._grouped(np.arange(self.size))
        total = self.total if np.ndim(self.total) == 0 else np.asarray(self.total, dtype=float).reshape(-1)
        return np.ascontiguousarray(index), total, not self.equality

    # ------------------------------------------------------------ projection
    @property
    def has_cheap_projection(self):
        """The Euclidean projection costs about the LMO (a sort per group), so projection="auto" may take
        projected-gradient steps on the simplex (``engine.projection_choice``): where the optimum is dense (a
        minimum-variance portfolio, every weight positive) vertex steps add one weight per iteration, while
        a projection step finds the support and the face step (``engine.face_step``) solves the model on it.
        Declared where the face step can read the groups (:meth:`simplex_groups`); elsewhere (a simplex
        ``sum <= t``, or totals per group, in a few groups) the blocks keep their active sets, on whose atoms
        the face step works (fuzz models with such a simplex took up to 14x the iterations projected)."""
        return self.simplex_groups() is not None

    def project_flat(self, flat_point):
        """Euclidean projection, per group: ``max(v - tau, 0)`` summing to the group's total t (at most t
        with ``equality=False``: tau = 0 where ``max(v, 0)`` already sums to at most t).

        A simplex of total t is the capped simplex with caps t (no point of it has an entry above t), and
        ``P_t(v) = t P_1(v / t)``: each group is projected onto the unit simplex by the capped simplex's
        checked level search (:func:`~fwmodel.sets._thresholds.clipped_projection`).
        A group of total 0 is the origin. A NaN or infinite entry makes every entry NaN.
        """
        V = self._grouped(np.asarray(flat_point, dtype=float).ravel())
        if non_finite(float(V.sum()), V):
            return np.full(self.size, np.nan)
        totals = np.broadcast_to(np.asarray(self.total, dtype=float), (self.n_groups,))
        X = np.zeros_like(V)
        positive = totals > 0
        if np.any(positive):
            W = V[positive] / totals[positive, None]
            X[positive] = clipped_projection(W, 0.0, 1.0, 1.0, self.equality) * totals[positive, None]
        out = np.empty(self.size)
        out[self._grouped(np.arange(self.size)).ravel()] = X.ravel()
        return out

    def affine_hull(self):
        """Each group sums to its total (``equality=True``; None otherwise)."""
        if not self.equality:
            return None
        return GroupSums(self._grouped(np.arange(self.size)), self.total, self.size)

    def symmetric_variant(self):
        """This set restricted to symmetric matrices, with exactly symmetric vertices (``symmetric=True``).

        One simplex over all the entries of a square matrix is closed under
        transposition: its vertices symmetrized (``t (E_ij + E_ji) / 2``).
        Rows (or columns) that each sum to t: with X symmetric this is t times
        the symmetric doubly stochastic matrices (``SymmetricStochastic``).
        Other layouts, and ``equality=False``, keep consistency rows (None).
        """
        shape = tuple(self.shape)
        if len(shape) != 2 or shape[0] != shape[1] or not self.equality or np.ndim(self.total) > 0:
            return None
        if self._summed_axes == (0, 1):  # one simplex over all entries (axis None or (0, 1))
            return SymmetrizedVertices(self)
        return SymmetricStochastic(self)  # rows or columns (axis 0, 1, (0,) or (1,))

    # ---------------------------------------------------------- optional hooks
    def contains_origin(self):
        """Exactly: with ``equality=False``, or where every total is 0. Not :meth:`contains` at 0, whose
        slack has a floor of 1: a simplex of total 1.5e-9 (a budget in units of 1e-10) held the origin
        by it, the engine started the block there, outside the set, and a model whose sets do not
        meet ended max_iter with the block still at 0, not "infeasible"."""
        if self.total is None:
            return super().contains_origin()
        return bool(not self.equality or not np.any(np.asarray(self.total, dtype=float)))

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        # relative to the totals (no floor of 1: a simplex of total 1e-9 then contained 0, the solve started
        # there and returned x = 0, sum 0, as "optimal")
        slack = tol * float(np.max(np.abs(self.total)))
        if np.any(x < -slack):
            return False
        sums = self._grouped(x).sum(axis=1)
        if self.equality:
            return bool(np.all(np.abs(sums - self.total) <= slack * max(1.0, np.sqrt(self.group_size))))
        return bool(np.all(sums <= self.total + slack * max(1.0, np.sqrt(self.group_size))))

    def diameter(self):
        # per group: ||t e_i - t e_j|| = sqrt(2) t (or t to the origin when
        # the group has one entry); groups add up in squares.
        per_group = self.total * (np.sqrt(2.0) if self.group_size > 1 else (0.0 if self.equality else 1.0))
        if np.ndim(per_group) > 0:  # a total per group
            return float(np.sqrt(np.sum(per_group ** 2)))
        return float(per_group * np.sqrt(self.n_groups))

    def coordinate_bounds(self):
        """Every entry lies in [0, its group's total]."""
        if np.ndim(self.total) == 0:
            return np.zeros(self.size), np.full(self.size, self.total)
        return np.zeros(self.size), self._entry_totals()

    def __repr__(self):
        if self.total is not None and np.ndim(self.total) > 0:
            extra = f", total={np.array2string(self.total, threshold=6, precision=6)}"
        else:
            extra = "" if self.total == 1.0 else f", total={self._datum_text('total')}"
        if self.axis is not None:
            extra += f", axis={self.axis!r}"
        if not self.equality:
            extra += ", equality=False"
        return f"Simplex({self.expr!r}{extra})"


class HingeExcessSimplex(Simplex):
    """``{s >= 0, sum(s) <= t}`` on the hidden excess s of a hinge budget ``fm.sum(fm.pos(e)) <= t``, projected.

    The compiler builds it (never the user) for the auxiliary variable of
    :class:`~fwmodel.expressions.constraints.HingeBudget`, one group
    (``fm.sum(fm.pos(e)) <= t`` without ``axis``): the set of
    ``Simplex(s, t, equality=False)`` with its Euclidean projection
    ``max(v - tau, 0)`` (Duchi et al. 2008, :func:`project_nonnegative_l1`),
    about the cost of the LMO. At the optimum s is ``pos(e)``, as dense as
    the rows the budget binds (433 of 1,000 rows on the 1,000-row model of
    ``benchmarks/hinge_budgets.py``), so vertex steps, one entry pair per
    iteration, need about that many iterations and then some (8,700 there),
    while a projection step moves every entry at once (228). The objective
    never reads s, so the engine's rule that keeps vertex steps on a block
    the objective does not read (an L1 ball of ``D @ x``, whose solution is
    sparse) is lifted for it (``projects_unread``; benchmarks/RESULTS.md,
    "Hinge budgets: the hidden excess projected").
    """

    has_cheap_projection = True
    #: the engine projects this block although the objective does not read it (``engine.projection_choice``)
    projects_unread = True

    def __init__(self, expr, total=1.0):
        super().__init__(expr, total, axis=None, equality=False)

    def project_flat(self, flat_point):
        return project_nonnegative_l1(np.asarray(flat_point, dtype=float).ravel(), float(self.total))
