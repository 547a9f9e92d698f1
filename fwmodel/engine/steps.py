"""Step kinds: one small object per block that proposes a feasible direction.

Every step kind has the same interface:

* ``propose(x_k, g_k, ctx) -> Proposal``: a direction ``d`` for the block
  (flat, the block's size) such that ``x_k + gamma d`` stays in the set for
  ``0 <= gamma <= gamma_max``, the block's Frank-Wolfe gap ``<x_k - s, g_k>``
  when the step called the LMO (None when it did not), and a ``kind`` label
  for the step counts;
* ``commit(proposal, gamma)``: update the step's bookkeeping (its active set)
  after the driver moved the block by ``gamma * d``.

The driver (:func:`fwmodel.engine.fwal.minimize_fwal`) picks the step size of
every block by a line search on the augmented Lagrangian restricted to that
block, so each block moves as far as its own direction allows instead of
the whole product space being throttled by the smallest cap.

Step kinds and the algorithms they implement:

* :class:`FWStep`: plain Frank-Wolfe, ``d = s - x`` (paper Alg. 2, line 2).
* :class:`AwayStep`: away-step Frank-Wolfe (paper Alg. 1): the FW direction
  or the away direction ``x - v`` (v the active atom with the largest
  gradient product), whichever has the larger gap.
* :class:`PairwiseStep`: pairwise Frank-Wolfe (Lacoste-Julien & Jaggi 2015):
  ``d = s - v``, weight moves from the away atom to the FW atom.
* :class:`BlendedPairwiseStep`: blended pairwise conditional gradients
  (BPCG, Tsuji, Tanaka & Pokutta 2022, Alg. 1): a *local* pairwise step
  between two active atoms (the one with the smallest and the one with the
  largest gradient product) when its gap is at least the FW gap, a FW step
  otherwise. With ``lazy=True`` the LMO is called only when no active atom
  gives a local gap of at least ``phi / lazy_factor``, ``phi`` the last FW
  gap measured (lazified conditional gradients, Braun, Pokutta & Zink 2017).
  The active set only grows on FW steps, and local steps are cheap (no LMO).
* :class:`GroupPairwiseStep`: for a block that is a product of many small
  simplices (a batched Simplex, the node and edge tables of a MAP LP): a
  pairwise step *in every group at once*, each group with its own step size
  (a Jacobi sweep over the groups). On a simplex the active set is implicit
  (the atoms are the coordinates in the support), so no atom is stored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .active_set import ActiveSet
from .vector_ops import dot

#: BPCG's lazy oracle: reuse active atoms while their local gap is at least phi / LAZY_FACTOR
LAZY_FACTOR = 2.0
#: every this many iterations all blocks call their LMO (the driver's ``lazy_allowed``)
LAZY_CHECK_EVERY = 20


@dataclass
class Proposal:
    """One block's move: ``x_k + gamma d`` is feasible for ``0 <= gamma <= gamma_max``."""

    d: np.ndarray
    gamma_max: float
    kind: str
    gap: Optional[float] = None  # the block's FW gap <x_k - s, g_k> if the LMO was called
    fw_atom: object = None  # the LMO's vertex, when called
    data: tuple = ()  # what commit() needs (positions in the active set)
    #: True when the step's size is already chosen per group inside ``d`` (gamma = 1 is the intended move)
    prescaled: bool = False


def _direction_out(ctx, block):
    """The array the driver lends for this block's direction (``ctx.directions``), or None.

    Reused from one iteration to the next: a fresh block-size array per step
    costs page faults (measured at d = 4000: 0.3 s for a 128 MB direction on a
    busy machine, against 13 ms for writing a reused one).
    """
    lender = getattr(ctx, "directions", None)
    return None if lender is None else lender.direction(block)


def _fw_direction(x_k, atom, out=None):
    d = np.negative(x_k, out=out)
    atom.add_to(d, 1.0)
    return d


def _pair_direction(size, plus, minus, out=None):
    if out is None:
        d = np.zeros(size)
    else:
        d = out
        d.fill(0.0)
    plus.add_to(d, 1.0)
    minus.add_to(d, -1.0)
    return d


class FWStep:
    """Plain Frank-Wolfe (Alg. 2): ``d = s - x``, gamma in [0, 1]."""

    def __init__(self, block, active=None):
        self.block = block
        self.active = active  # kept up to date when given (warm starts of other step kinds)

    def propose(self, x_k, g_k, ctx=None):
        s = self.block.lmo(g_k)
        gap = dot(x_k, g_k) - s.dot(g_k)
        return Proposal(_fw_direction(x_k, s, _direction_out(ctx, self.block)), 1.0, "fw", gap, s)

    def commit(self, p, gamma):
        if self.active is not None:
            self.active.fw_update(p.fw_atom, gamma)


class _ActiveSetStep:
    """Shared part of the steps that keep the block's iterate as a convex combination of atoms."""

    def __init__(self, block, active=None):
        self.block = block
        self.active = active if active is not None else ActiveSet(block.initial_atom())

    def _fw(self, x_k, s, gap, ctx=None):
        return Proposal(_fw_direction(x_k, s, _direction_out(ctx, self.block)), 1.0, "fw", gap, s)

    def commit(self, p, gamma):
        if gamma <= 0:
            return
        if p.kind == "fw":
            self.active.fw_update(p.fw_atom, gamma)
        elif p.kind == "away":
            self.active.away_update(p.data[0], min(gamma, p.gamma_max))
        elif p.kind == "pairwise":
            self.active.pairwise_update(p.fw_atom, p.data[0], min(gamma, p.gamma_max))
        else:  # "local": both atoms already active
            self.active.move_weight(p.data[0], p.data[1], min(gamma, p.gamma_max))


class AwayStep(_ActiveSetStep):
    """Away-step Frank-Wolfe (paper Alg. 1, lines 4-11)."""

    def propose(self, x_k, g_k, ctx=None):
        s = self.block.lmo(g_k)
        xg = dot(x_k, g_k)
        gap = xg - s.dot(g_k)
        pos, v, alpha, v_dot = self.active.away_vertex(g_k)
        if len(self.active) > 1 and v_dot - xg > gap and alpha < 1.0:  # away gap larger (line 6)
            d = x_k.copy()
            v.add_to(d, -1.0)
            return Proposal(d, alpha / (1.0 - alpha), "away", gap, s, (pos,))
        return self._fw(x_k, s, gap, ctx)


class PairwiseStep(_ActiveSetStep):
    """Pairwise Frank-Wolfe: ``d = s - v``, gamma in [0, alpha_v]."""

    def propose(self, x_k, g_k, ctx=None):
        s = self.block.lmo(g_k)
        gap = dot(x_k, g_k) - s.dot(g_k)
        pos, v, alpha, _ = self.active.away_vertex(g_k)
        if s.key == v.key:
            return self._fw(x_k, s, gap, ctx)
        return Proposal(_pair_direction(x_k.size, s, v, _direction_out(ctx, self.block)), alpha, "pairwise",
                        gap, s, (pos,))


class BlendedPairwiseStep(_ActiveSetStep):
    """BPCG (Tsuji, Tanaka & Pokutta 2022, Alg. 1), optionally with a lazified LMO."""

    def __init__(self, block, active=None, lazy=True):
        super().__init__(block, active)
        self.lazy = lazy
        self.phi = np.inf  # the last FW gap measured (the lazy oracle's threshold)

    def propose(self, x_k, g_k, ctx=None):
        aset = self.active
        dots = aset.dots(g_k)
        a, s_loc = int(np.argmax(dots)), int(np.argmin(dots))
        local_gap = float(dots[a] - dots[s_loc])  # <a - s_loc, g>: the local pairwise gap
        # Lazy: skip the LMO while an active pair gives a fair fraction of the last
        # FW gap, but not once that gap is small enough that the FW gap could
        # certify convergence (the driver stops only on measured gaps), and not
        # when the driver asks every block for its LMO (``ctx.lazy_allowed``
        # False, every LAZY_CHECK_EVERY iterations: a measured gap of all blocks at once).
        if (self.lazy and ctx.lazy_allowed and a != s_loc
                and local_gap >= max(self.phi / LAZY_FACTOR, ctx.gap_target)):
            return self._local(x_k.size, a, s_loc, None, ctx)
        s = self.block.lmo(g_k)
        gap = dot(x_k, g_k) - s.dot(g_k)
        self.phi = max(gap, 0.0)
        if a != s_loc and local_gap >= gap:  # line 7 of BPCG: the local step is at least as good
            return self._local(x_k.size, a, s_loc, gap, ctx)
        return self._fw(x_k, s, gap, ctx)

    def _local(self, size, a, s_loc, gap, ctx=None):
        aset = self.active
        d = _pair_direction(size, aset.atom(s_loc), aset.atom(a), _direction_out(ctx, self.block))
        return Proposal(d, aset.weight(a), "pairwise", gap, None, (a, s_loc))

    def commit(self, p, gamma):
        if p.kind == "pairwise":
            if gamma > 0:
                self.active.move_weight(p.data[0], p.data[1], min(gamma, p.gamma_max))
        else:
            super().commit(p, gamma)


class GroupPairwiseStep:
    """A pairwise step in every simplex of a batched block, each with its own size.

    In group g (entries ``index[g]``, a simplex of total t) the pairwise
    direction moves mass from a support entry ``v`` to ``s`` (the entry with
    the smallest gradient): ``d_g = e_s - e_v``, at most ``x_v`` of it. The
    amount minimizes the second-order model of the augmented Lagrangian
    along ``d_g`` alone,

        amount_g = min(x_v, (g_v - g_s) / c_g),
        c_g = lam (||M e_s||^2 + ||M e_v||^2) + 2 L_f,

    and ``v`` is the support entry whose pair gives the largest model
    decrease (the away vertex of pairwise FW, the largest ``g_v``, can hold a
    vanishing mass: moved by a fraction tau < 1 of a step, it never drops out).

    with ``L_f`` the objective's curvature per unit step measured along this
    block's previous direction. The groups move together (a Jacobi sweep);
    the driver's line search on the block then scales the whole move, which
    keeps every step a descent step even where groups interact.
    """

    cheap_proposal = True  # no LMO call: a Gauss-Seidel sweep may propose again

    def __init__(self, block, groups, col_norms2):
        self.block = block
        self.index = groups.index  # (G, S) flat indices of each group in the block
        self.total = groups.total
        self.col_norms2 = col_norms2  # ||M e_i||^2 for the block's columns
        self.curvature_f = 0.0  # L_f: objective curvature per unit squared step
        self.rows = np.arange(self.index.shape[0])
        self.contiguous = bool(np.array_equal(self.index.ravel(), np.arange(self.index.size)))
        self.norms2_grouped = col_norms2[self.index]

    def propose(self, x_k, g_k, ctx):
        idx = self.index
        if self.contiguous:  # groups are consecutive runs of the block: views, no gathers
            X, G = x_k.reshape(idx.shape), g_k.reshape(idx.shape)
        else:
            X, G = x_k[idx], g_k[idx]
        rows = self.rows
        s = np.argmin(G, axis=1)
        g_s = G[rows, s]
        gap = float(np.einsum("ij,ij->", X, G) - self.total * g_s.sum())
        cols_s = idx[rows, s]
        # for every support entry i: the model's best amount moved from i to s and its decrease
        slope = G - g_s[:, None]  # g_i - g_s >= 0
        c = ctx.lam * (self.norms2_grouped + self.col_norms2[cols_s][:, None]) + 2.0 * self.curvature_f
        with np.errstate(divide="ignore", invalid="ignore"):
            amount = np.where(c > 0, np.minimum(X, slope / c), X)
        amount[~((X > 0) & (slope > 0))] = 0.0
        decrease = amount * (slope - 0.5 * c * amount)
        # v: the entry whose pair with s decreases the model most (the largest
        # gradient alone can hold a vanishing mass and stall the group)
        v = np.argmax(decrease, axis=1)
        amount = amount[rows, v]
        cols_v = idx[rows, v]
        d = np.zeros(x_k.size)
        d[cols_s] = amount  # one s per group, groups disjoint; s != v wherever amount > 0
        d[cols_v] -= amount
        return Proposal(d, 1.0, "pairwise", gap, None, prescaled=True)

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        """Record the objective's curvature along this block's last direction (for the next c_g)."""
        if d_norm2 > 0 and c_f is not None and np.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2


class IntervalStep:
    """Frank-Wolfe in every coordinate of a box at once, each with its own step size.

    A box is a product of intervals [lo_i, hi_i]; on each, the FW vertex is
    ``s_i = hi_i`` where ``g_i < 0`` and ``lo_i`` elsewhere (Alg. 2 per
    coordinate), and the step along ``s_i - x_i`` that minimizes the
    second-order model of the augmented Lagrangian in that coordinate alone
    (curvature ``c_i = lam ||M e_i||^2 + L_f``) is
    ``delta_i = clip(-g_i / c_i, lo_i - x_i, hi_i - x_i)``. The coordinates
    move together (a Jacobi sweep), scaled by the driver's line search on the
    block. No active set: a box has 2^n vertices, and a dense vertex per
    step would make every inner product cost a full block per atom.
    """

    cheap_proposal = True  # no LMO call: a Gauss-Seidel sweep may propose again

    def __init__(self, block, bounds, col_norms2):
        self.block = block
        self.lo, self.hi = bounds
        self.col_norms2 = col_norms2
        self.curvature_f = 0.0

    def propose(self, x_k, g_k, ctx):
        s = np.where(g_k < 0, self.hi, self.lo)
        gap = dot(x_k - s, g_k)
        c = ctx.lam * self.col_norms2 + self.curvature_f
        with np.errstate(divide="ignore", invalid="ignore"):
            target = np.where(c > 0, x_k - g_k / c, s)
        d = np.clip(target, self.lo, self.hi)
        d -= x_k
        return Proposal(d, 1.0, "fw", gap, None, prescaled=True)

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        if d_norm2 > 0 and c_f is not None and np.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2


@dataclass
class SimplexGroups:
    """A block that is a product of simplices: ``index[g]`` are the flat entries of group g, each summing to ``total``."""

    index: np.ndarray
    total: float


_ACTIVE_SET_STEPS = {"auto": BlendedPairwiseStep, "pairwise": PairwiseStep, "away": AwayStep}


def make_step(block, step, active, col_norms2):
    """The step object for a block under the ``step`` option.

    "auto": BPCG on polytope blocks that keep an active set, per-group
    pairwise steps on products of simplices, FW elsewhere; "pairwise" and
    "away": those steps on polytope blocks (pairwise per group on products of
    simplices); "fw": FW everywhere. Boxes take per-coordinate FW steps under "auto".
    ``col_norms2()`` gives ||M e_i||^2 for the block's entries (called only by
    the steps that need it: building it costs a pass over M).
    """
    if step in ("auto", "pairwise") and block.groups is not None:
        return GroupPairwiseStep(block, block.groups, col_norms2())
    if step == "auto" and block.intervals is not None:
        return IntervalStep(block, block.intervals, col_norms2())
    if active is not None and step in _ACTIVE_SET_STEPS:
        return _ACTIVE_SET_STEPS[step](block, active)
    return FWStep(block)
