"""An L1 ball intersected with a box, as one set: the boxed L1 ball.

``L1Ball(x, r) ∩ Box(x, lower, upper)`` is the sparse regression with
bounded coefficients (``norm1(w) <= r, -c <= w <= c``), the long-only
L1 budget (``norm1(x) <= r, x >= 0``), the lasso with an L-infinity cap.
Given as two sets, the compiler would copy x once per set and tie the
copies by rows of M, and FW-AL would spend its iterations making the copies
agree (least squares 80 x 200 in ``benchmarks/rows_projection.py``: 1,420
iterations; 242 projection steps on this set, 7.5x less time). The intersection has an exact LMO and an exact projection of
its own, so the compiler merges the two sets into this one
(:mod:`fwmodel.compiler.lowering`, item 7): one block, no rows.

Every entry has a closest point to 0 in its interval, ``c_i = clip(0, l_i,
u_i)`` (0 when the box contains 0, the usual case); the set is empty when
``sum |c_i| > r``, and ``B = r - sum |c_i|`` is the L1 budget left above
those floors. Moving entry i away from ``c_i`` (the only way it can move)
raises ``|x_i|`` one for one.

LMO. ``min <d, s>`` is a fractional knapsack: start from c and move the
entries in decreasing order of ``|d_i|`` towards ``-sign(d_i)`` (the way
that lowers ``<d, s>``), each up to its bound (``u_i`` or ``l_i``), until
the budget B is spent (the last one moved partly). With the box around 0
the vertex is sparse: ``-sign(d_i) min(cap_i, what is left of r)`` on the
entries of largest ``|d_i|``, the L1 ball's LMO when the caps do not bind
and the box's when r does not. A vertex has at most one entry strictly
between 0 (or c_i) and its bound.

Projection. ``x_i(tau) = clip(soft(y_i, tau), l_i, u_i)`` with
``soft(y, tau) = sign(y) max(|y| - tau, 0)`` and the smallest ``tau >= 0``
at which ``||x(tau)||_1 <= r`` (the KKT conditions of
``min ||x - y||^2 / 2 + tau ||x||_1`` over the box, a separable problem
whose one-dimensional minimizers are the clipped soft-thresholds).
``|x_i(tau)| = clip(|y_i| - tau, |c_i|, cap_i)`` with ``cap_i`` the bound on
y_i's side, so ``||x(tau)||_1`` is nonincreasing and piecewise linear in
tau with 2 n breakpoints; the piece where it crosses r, and tau on it, are
found as for :class:`~fwmodel.sets.capped_simplex.CappedSimplex`: by pivots
on the breakpoints from 4096 entries on (expected O(n): 0.08 s at n = 10^6
where sorting them took 1.17 s, one run), by sorting them below.

Steps. With vertex steps (``projection=False``, or where "auto" does not
project), ``step="auto"`` takes pairwise steps on this set rather than BPCG
(:meth:`BoxedL1Ball.auto_active_set_step`).
"""
from __future__ import annotations

import numpy as np

from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import DenseAtom, SparseAtom
from ._thresholds import clipped_projection_exactly, clipped_sum_levels, non_finite, sum_tolerance
from .merged import MergedSets


class BoxedL1Ball(MergedSets):
    """``L1Ball(x, radius) ∩ Box(x, lower, upper)`` over the same expression, as one set.

    Built by the compiler from an :class:`~fwmodel.sets.L1Ball` and a
    :class:`~fwmodel.sets.Box` (or :class:`~fwmodel.sets.LinfBall`) on the
    same variable; it reads its data through them (their fm.Parameters
    included). See the module docstring for the LMO and the projection;
    with ``projection="auto"`` a model whose objective reads the block alone
    takes projection steps on it (``engine/projection_choice.py``).

    Data that leave the set empty (a Parameter's new value: a box whose
    entries nearest to 0 have an L1 norm above the radius) end the solve
    "infeasible" before it iterates, with the reason in
    ``prob.stats.message`` and no point (as CVXPY does). A model whose two
    sets do not meet for the data at compile time is not merged, and its
    solve returns the best point found.
    """

    is_polytope = True
    has_cheap_projection = True

    def __init__(self, ball, box):
        super().__init__(ball, box)
        self.ball = ball
        self.box = box
        self._data_changed()

    # ------------------------------------------------------------------ data
    @property
    def radius(self):
        return self.ball.radius

    def _data_changed(self):
        """Flat bounds, the entries nearest to 0, the budget above them, and why the data leave the set empty."""
        object.__setattr__(self, "empty_reason", self.ball.empty_reason or self.box.empty_reason)
        if self.empty_reason is not None or self.radius is None or self.box.lower is None or self.box.upper is None:
            return
        shape = (self.size,)
        self._lo = np.array(np.broadcast_to(np.asarray(self.box.lower, dtype=float).ravel(), shape))
        self._hi = np.array(np.broadcast_to(np.asarray(self.box.upper, dtype=float).ravel(), shape))
        self._nearest = np.clip(0.0, self._lo, self._hi)  # c: each entry's point nearest to 0
        self._floor = np.abs(self._nearest)
        self._budget = float(self.radius) - float(self._floor.sum())
        self._sparse_vertices = not np.any(self._nearest)
        slack = 1e-12 * max(float(self.radius), float(np.max(self._floor, initial=0.0))) * self.size  # (no floor of 1)
        if self._budget < -slack:
            reason = (f"the box's entries nearest to 0 have an L1 norm of {self._floor.sum():.6g}, above the "
                      f"L1 ball's radius {float(self.radius):.6g}")
            object.__setattr__(self, "empty_reason", f"{self!r} is empty: {reason}")
        self._budget = max(self._budget, 0.0)
        self._neg_lo = -self._lo
        # the projection's floors and caps as scalars where every entry has the same (a box around 0, symmetric
        # about it): the level search then reads one array instead of three (its numbers are the same)
        self._uniform_floor = 0.0 if self._sparse_vertices else None
        uniform = self._sparse_vertices and np.all(self._hi == self._hi[0]) and np.all(self._neg_lo == self._hi[0])
        self._uniform_cap = float(self._hi[0]) if uniform and self.size else None

    # ------------------------------------------------------------ the oracle
    def _moves(self, d):
        """The knapsack's moves away from c for the direction d: ``(entries, signed amounts)``, entries increasing.

        Only the entries of largest |d_i| that the budget reaches are sorted:
        the k largest are picked by a partition (O(n)), k growing 8x until
        their room covers the budget (at n = 10^6 with 100 entries moved:
        0.06-0.16 s against 0.9 s for sorting every entry, load 5-8).
        """
        # room towards -sign(d_i): up to the upper bound where d_i < 0, down to the lower one where d_i > 0
        room_all = np.where(d < 0, self._hi - self._nearest, np.where(d > 0, self._nearest - self._lo, 0.0))
        if room_all.sum() <= self._budget:  # every entry moves to its bound: no order needed
            entries = np.flatnonzero(room_all)
            return entries, -np.sign(d[entries]) * room_all[entries]
        magnitude = np.abs(d)
        k = min(d.size, 64)
        while True:
            if k >= d.size:
                order = np.argsort(-magnitude, kind="stable")
            else:
                top = np.argpartition(-magnitude, k - 1)[:k]
                order = top[np.argsort(-magnitude[top], kind="stable")]
            room = room_all[order]
            filled = np.cumsum(room)
            if filled[-1] >= self._budget or k >= d.size:
                break
            k = min(d.size, 8 * k)
        direction = d[order]
        amount = np.clip(self._budget - (filled - room), 0.0, room)
        moved = amount > 0
        entries, signed = order[moved], -np.sign(direction[moved]) * amount[moved]
        increasing = np.argsort(entries)
        return entries[increasing], signed[increasing]

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        entries, signed = self._moves(d)
        if self._sparse_vertices:  # c = 0: the vertex is its moved entries (equal vertices, equal keys)
            return SparseAtom(entries, signed, self.size)
        vertex = self._nearest.copy()
        vertex[entries] += signed
        return DenseAtom(vertex)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def auto_active_set_step(self):
        """Pairwise steps under ``step="auto"`` (not BPCG): a knapsack vertex moves up to r / c entries at once,
        and BPCG's FW steps towards it kept adding such vertices (least squares 80 x 200, L1 5 ∩ box 0.2,
        ``projection=False``: 2,074 iterations with BPCG, 825 pairwise, 1,420 for the two tied copies;
        ``benchmarks/RESULTS.md``, "Vertex steps on the boxed L1 ball")."""
        return "pairwise"

    # ------------------------------------------------------------ projection
    def project_flat(self, flat_point):
        """Euclidean projection: ``clip(soft(y, tau), lower, upper)`` with the exact ``tau >= 0`` (module docstring).

        ``|x_i(tau)| = clip(|y_i| - tau, |c_i|, cap_i)``, with ``cap_i`` the
        bound on y_i's side of 0 (``upper_i`` for ``y_i >= 0``, ``-lower_i``
        below; at least ``|c_i|``): :func:`~fwmodel.sets._thresholds.clipped_sum_levels` finds the tau
        at which the L1 norm is the radius, in expected O(n) from 4096 entries on (pivots on the
        breakpoints; below, by sorting them).
        """
        y = np.asarray(flat_point, dtype=float).ravel()
        if non_finite(float(y.sum()), y):  # a defined result the solver's checks see (sets/_thresholds.py)
            return np.full(y.size, np.nan)
        inside = np.clip(y, self._lo, self._hi)
        if np.abs(inside).sum() <= self.radius:
            return inside  # tau = 0: the box's projection is in the ball
        a, radius = np.abs(y), float(self.radius)
        if self._uniform_cap is not None:  # the same floor (0) and cap for every entry
            floor, cap = self._uniform_floor, self._uniform_cap
        else:
            floor, cap = self._floor[None], np.maximum(np.where(y >= 0, self._hi, self._neg_lo), self._floor)[None]
        tau = max(float(clipped_sum_levels(a[None], floor, cap, radius)[0]), 0.0)
        # x = clip(sign(y) max(|y| - tau, 0), lower, upper), in place
        x = np.subtract(a, tau)
        np.maximum(x, 0.0, out=x)
        x *= np.sign(y)
        np.clip(x, self._lo, self._hi, out=x)
        if abs(float(np.abs(x).sum()) - radius) <= sum_tolerance(radius, a.size):  # (the sum's own rounding)
            return x
        # not certified (a huge point: x - g / L with a tiny L, where the cumulated slopes round at the
        # point's scale): |x| = clip(|y| - tau, floor, cap) summing to r is the capped simplex's projection
        # of |y|, solved on its crossing piece at the bounds' scale (sets/_thresholds.py)
        floor, cap = (np.broadcast_to(b, (1, a.size)) for b in (floor, cap))
        X = clipped_projection_exactly(a[None], floor, cap, radius)
        return np.clip(np.sign(y) * X[0], self._lo, self._hi)

    # --------------------------------------------------------- other hooks
    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        x = x.ravel()
        scale = max(float(self.radius), float(np.max(np.abs(self._lo))), float(np.max(np.abs(self._hi))))  # (no floor of 1)
        slack = tol * scale
        if np.any(x < self._lo - slack) or np.any(x > self._hi + slack):
            return False
        return bool(np.abs(x).sum() <= self.radius + slack * max(1.0, np.sqrt(self.size)))

    def coordinate_bounds(self):
        """Per entry: within its box, and at most the budget B farther from 0 than its point nearest to 0."""
        return (np.maximum(self._lo, self._nearest - self._budget),
                np.minimum(self._hi, self._nearest + self._budget))

    def entry_bounds(self):
        """Flat ``(lower, upper)``: the box's bounds of every entry."""
        return self._lo, self._hi

    def diameter(self):
        lower, upper = self.coordinate_bounds()
        box = float(np.linalg.norm(upper - lower))
        ball = self.ball.diameter()
        return min(box, ball) if ball is not None else box

    def __repr__(self):
        return f"BoxedL1Ball({self.ball!r} ∩ {self.box!r})"
