"""A simplex intersected with a box, as one set: the capped simplex.

``Simplex(x) ∩ Box(x, lower, upper)`` is the set of a fully invested portfolio
with position limits, of a row-stochastic matrix with capped entries, of a
probability vector with floors. Given as two sets, the compiler would copy x
once per set and tie the copies by rows of M, and FW-AL would spend its
iterations making the copies agree (the capped portfolio of
``benchmarks/zoo.py``: 274 iterations). The intersection has an exact LMO of
its own, so the compiler merges the two sets into this one
(:mod:`fwmodel.compiler.lowering`, item 7): one block, no rows.

LMO. Per group (one simplex of the Simplex's ``axis`` layout), with
``l = max(lower, 0)``, ``u = upper`` and the budget ``R = total - sum l``,
``min <d, s>`` over ``{l <= s <= u, sum s = total}`` is a fractional knapsack:
start from ``l`` and fill the entries in increasing order of ``d`` up to
their cap ``u`` until the budget is spent (the last one filled partly). With
``equality=False`` (``sum s <= total``) only entries with ``d < 0`` are
filled. A vertex has at most one entry strictly between its bounds.

Projection. ``clip(v - tau, l, u)`` with the ``tau`` per group at which the
sum is ``total`` (``tau >= 0`` with ``equality=False``): the sum is
nonincreasing and piecewise linear in ``tau``, with 2 n breakpoints: the
piece where it crosses ``total`` and ``tau`` on it are found by pivots on
the breakpoints for groups of 4096 entries or more (expected O(n)), by
sorting them (all groups at once) below
(:func:`~fwmodel.sets._thresholds.clipped_sum_levels`).
"""
from __future__ import annotations

import numpy as np

from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from ._thresholds import clipped_projection, non_finite
from .atoms import DenseAtom, SparseAtom
from .merged import MergedSets


class CappedSimplex(MergedSets):
    """``simplex ∩ box`` over the same expression: entries in ``[max(lower, 0), upper]`` summing to ``total``.

    Built by the compiler from a :class:`~fwmodel.sets.Simplex` and a
    :class:`~fwmodel.sets.Box` on the same variable; it reads its data
    through them (their fm.Parameters included), per group of the simplex's
    ``axis``. See the module docstring for the LMO and the projection; with
    ``projection="auto"`` a model whose objective reads the block alone
    takes projection steps on it (``engine/projection_choice.py``).

    Data that leave the set empty (a Parameter's new value: caps summing to
    less than the total) end the solve "infeasible" before it iterates, with
    the reason in ``prob.stats.message`` and no point (as CVXPY does). A
    model whose two sets do not meet for the data at compile time is not
    merged, and its solve returns the best point found.
    """

    is_polytope = True
    has_cheap_projection = True

    def __init__(self, simplex, box):
        super().__init__(simplex, box)
        self.simplex = simplex
        self.box = box
        # the flat entries of every group (None where the groups are already the C order): the LMO
        # and the projection write their grouped results back through it every call
        self._group_index = None if simplex._identity_perm else simplex._grouped(np.arange(simplex.size))
        self._data_changed()

    # ------------------------------------------------------------------ data
    @property
    def total(self):
        return self.simplex.total

    @property
    def equality(self):
        return self.simplex.equality

    def affine_hull(self):
        """The simplex's: each group sums to its total (``equality=True``)."""
        return self.simplex.affine_hull()

    def _data_changed(self):
        """Per-group bounds ``(groups, group_size)`` and budgets, and why the data leave the set empty."""
        object.__setattr__(self, "empty_reason", self.simplex.empty_reason or self.box.empty_reason)
        if self.empty_reason is not None or self.total is None or self.box.lower is None or self.box.upper is None:
            return
        lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), tuple(self.shape))
                        for b in (self.box.lower, self.box.upper))
        self._lo = np.ascontiguousarray(self.simplex._grouped(np.maximum(lower, 0.0)))
        self._hi = np.ascontiguousarray(self.simplex._grouped(upper))
        self._room = self._hi - self._lo
        self._budget = self.total - self._lo.sum(axis=1)
        self._sparse_vertices = not np.any(self._lo)
        reason = None
        # rounding of sums of group_size entries, relative to the data's own size (an absolute floor of 1 took
        # a box of 1e-10 whose upper bounds sum 1 % below the total for a nonempty set)
        size = max(abs(float(self.total)), float(np.max(np.abs(self._hi), initial=0.0)),
                   float(np.max(np.abs(self._lo), initial=0.0)))
        slack = 1e-12 * size * self.simplex.group_size
        if np.any(self._room < 0):
            reason = "the box's upper bound is below 0 (the simplex's lower bound) at some entry"
        elif np.any(self._budget < -slack):
            g = int(np.argmin(self._budget))
            reason = (f"the box's lower bounds sum to {self.total - self._budget[g]:.6g} in group {g}, "
                      f"above the simplex's total {self.total:.6g}")
        elif self.equality and np.any(self._budget > self._room.sum(axis=1) + slack):
            g = int(np.argmax(self._budget - self._room.sum(axis=1)))
            reason = (f"the box's upper bounds sum to {self._hi[g].sum():.6g} in group {g}, below the simplex's "
                      f"total {self.total:.6g}")
        if reason is not None:
            object.__setattr__(self, "empty_reason", f"{self!r} is empty: {reason}")
        self._budget = np.maximum(self._budget, 0.0)
        # the groups whose projection exists (bounds that meet the total): project_flat certifies these
        self._attainable = (self._lo.sum(axis=1) <= self.total) & (self._hi.sum(axis=1) >= self.total)

    # ------------------------------------------------------------ the oracle
    def _fill(self, D):
        """The knapsack amounts above the lower bounds, ``(groups, group_size)``, for direction D (grouped)."""
        order = np.argsort(D, axis=1, kind="stable")
        rows = np.arange(D.shape[0])[:, None]
        room = self._room[rows, order]
        before = np.cumsum(room, axis=1) - room
        amount = np.clip(self._budget[:, None] - before, 0.0, room)
        if not self.equality:
            amount[D[rows, order] >= 0] = 0.0  # the budget need not be spent: fill only where d < 0
        filled = np.empty_like(amount)
        filled[rows, order] = amount
        return filled

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        filled = self._fill(self.simplex._grouped(d))
        if self._sparse_vertices:  # lower bounds 0: the vertex is its filled entries (equal vertices, equal keys)
            groups, positions = np.nonzero(filled)
            return SparseAtom(self.simplex._flat_indices(groups, positions), filled[groups, positions], self.size)
        return DenseAtom(self._ungrouped(self._lo + filled))

    def _ungrouped(self, grouped):
        """A ``(groups, group_size)`` array back as a flat vector in the expression's C order."""
        if self._group_index is None:
            return np.array(grouped, dtype=float).ravel()  # a copy: the caller owns the flat vector
        flat = np.empty(self.size)
        flat[self._group_index] = grouped
        return flat

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def group_count(self):
        """The simplex's groups; 1 with floors above 0, whose vertices are one dense vector: step="auto" then
        keeps pairwise steps between them (10 rows of 6 with floors 0.05, projection=False: 289 iterations,
        where FW steps were at 3,000 still 4e-4 of the scale from optimal)."""
        return self.simplex.n_groups if self._sparse_vertices else 1

    def batch_group_size(self):
        """The group size when the groups are consecutive runs of entries (BPCG per group), else None.

        Also None with floors above 0: the vertices are then dense (the floors everywhere), and the
        engine's per-group steps split sparse vertices only (they would fall back to plain FW)."""
        if self.simplex.n_groups > 1 and self.simplex._identity_perm and self._sparse_vertices:
            return self.simplex.group_size
        return None

    # ------------------------------------------------------------ projection
    def project_flat(self, flat_point):
        """Euclidean projection: ``clip(v - tau, l, u)`` per group, with the exact ``tau`` (module docstring).

        The group's sum ``s(tau)`` is piecewise linear: entry i contributes
        ``u_i`` up to ``tau = v_i - u_i``, then ``v_i - tau`` (slope -1), then
        ``l_i`` from ``tau = v_i - l_i`` on; ``tau`` is found on the piece
        where ``s`` crosses ``total`` (:func:`~fwmodel.sets._thresholds.clipped_sum_levels`:
        pivots on the 2 n breakpoints, expected O(n), for groups of 4096
        entries or more; sorting them below, O(n log n) per group).

        Those cumulated slopes round at the breakpoints' scale: for a point
        huge next to the bounds (a projected-gradient target with a tiny
        curvature) the piece could be wrong and the sum off by percents.
        Every group's result is checked (its sum is ``total`` to rounding at
        ``total``'s scale: then it is the projection, see
        :mod:`fwmodel.sets._thresholds`); a group that fails is projected
        again by :func:`~fwmodel.sets._thresholds.clipped_projection_exactly`. A NaN or infinite entry makes every entry NaN.
        """
        V = self.simplex._grouped(np.asarray(flat_point, dtype=float).ravel())
        if non_finite(float(V.sum()), V):
            return np.full(self.size, np.nan)
        # (the sets whose bounds leave them empty, no projection, keep the piecewise answer unchecked)
        X = clipped_projection(V, self._lo, self._hi, self.total, self.equality, checked=self._attainable)
        return self._ungrouped(X)

    # --------------------------------------------------------- other hooks
    def contains_origin(self):
        """Exactly: floors 0 and a total of 0 (or ``equality=False``), within caps >= 0 (see
        :meth:`Simplex.contains_origin`: :meth:`contains`'s slack has a floor of 1)."""
        if self.empty_reason is not None or not hasattr(self, "_lo"):
            return super().contains_origin()
        return bool(not np.any(self._lo) and np.all(self._hi >= 0)
                    and (not self.equality or not np.any(np.asarray(self.total, dtype=float))))

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        X = self.simplex._grouped(x)
        slack = tol * max(abs(float(self.total)), float(np.max(np.abs(self._hi))))  # (relative: no floor of 1)
        if np.any(X < self._lo - slack) or np.any(X > self._hi + slack):
            return False
        sums = X.sum(axis=1)
        allowed = slack * max(1.0, np.sqrt(self.simplex.group_size))
        if self.equality:
            return bool(np.all(np.abs(sums - self.total) <= allowed))
        return bool(np.all(sums <= self.total + allowed))

    def coordinate_bounds(self):
        """Per entry: at least its floor (and what the others' caps leave, with a sum fixed), at most its
        cap and its floor plus the group's budget."""
        upper = np.minimum(self._hi, self._lo + self._budget[:, None])
        lower = self._lo
        if self.equality:
            others = self._room.sum(axis=1)[:, None] - self._room
            lower = np.maximum(self._lo, self._lo + self._budget[:, None] - others)
        return self._ungrouped(lower), self._ungrouped(upper)

    def entry_bounds(self):
        """Flat ``(max(lower, 0), upper)``: the floor and cap of every entry (the box's, within the simplex)."""
        return self._ungrouped(self._lo), self._ungrouped(self._hi)

    def diameter(self):
        box = float(np.sqrt(np.sum(np.minimum(self._room, self._budget[:, None]) ** 2)))
        simplex = self.simplex.diameter()
        return min(box, simplex) if simplex is not None else box

    def __repr__(self):
        return f"CappedSimplex({self.simplex!r} ∩ {self.box!r})"
