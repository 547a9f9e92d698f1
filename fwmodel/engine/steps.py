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
  Where the block's quadratic model is exact (no consistency rows, the
  objective's curvature a multiple of ``||d||^2``, as in a projection), a
  local phase takes up to ``MAX_LOCAL_STEPS`` local steps per iteration in
  weight space with the active set's Gram matrix.
* :class:`GroupPairwiseStep`: for a block that is a product of many small
  simplices (a batched Simplex, the node and edge tables of a MAP LP): a
  pairwise step *in every group at once*, each group with its own step size
  (a Jacobi sweep over the groups). On a simplex the active set is implicit
  (the atoms are the coordinates in the support), so no atom is stored.
* :class:`BatchBPCGStep`: for a batch of polytopes in one block (many
  alignments): BPCG in every group at once, each group with its own active
  set (:class:`BatchedActiveSets`) and its own step size.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..sets.atoms import SparseAtom
from .active_set import ActiveSet
from .vector_ops import dot

#: BPCG's lazy oracle: reuse active atoms while their local gap is at least phi / LAZY_FACTOR
LAZY_FACTOR = 2.0
#: every this many iterations all blocks call their LMO (the driver's ``lazy_allowed``)
LAZY_CHECK_EVERY = 20
#: BPCG's local phase stops once the local gap is below this fraction of the last FW gap
LOCAL_PHASE_REDUCTION = 0.1
#: at most this many local steps per local phase (each O(k), k active atoms)
MAX_LOCAL_STEPS = 100
#: and at most max(LOCAL_PHASE_WORK, LOCAL_PHASE_SHARE * k * e) atom-steps (steps x k) per
#: phase, e the entries per stored atom: k * e is the cost of the inner products <g, a_i>
#: that every iteration pays, so the phase costs at most half of them and an iteration's
#: cost grows with the active set no faster than those products. Measured on the Birkhoff
#: projection at n = 200 (benchmarks/RESULTS.md, "the local phase's budget"): 20 steps of
#: at most 4000 atom-steps left 4 steps per phase at 1000 atoms, and the solve to 1e-6
#: ended at max_iter; 100 steps took it to "optimal" in 3,463 iterations
LOCAL_PHASE_WORK = 4000
LOCAL_PHASE_SHARE = 0.5
#: a local gap below this fraction of max |<g, a>| is rounding: the local phase stops there
LOCAL_GAP_ROUNDING = 1e-12
#: above this many atoms the local phase stops (its Gram matrix is k x k: 128 MB at 4000;
#: the Birkhoff projection at n = 200 needs ~3,500 atoms for 1e-6)
GRAM_MAX_ATOMS = 4000
#: directions whose curvature ratios c_f / ||d||^2 must agree before the local phase starts
CURVATURE_CHECKS = 3
#: relative agreement of those ratios
CURVATURE_MATCH = 1e-8


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
    #: <g_k, d>, the slope of the step along d at the point it was proposed from, where the step
    #: knows it from its atoms' products with g_k (FW: -gap; pairwise: <s - v, g_k>): no pass over d
    slope: Optional[float] = None
    #: ||d||^2 where the step knows it from its factors (a rank-k step: ||s||^2 - 2 <X, V> + ||X||^2,
    #: trusted only away from cancellation): the sweep then makes no pass over d for it
    d_norm2: Optional[float] = None


def _direction_out(ctx, block):
    """The array the driver lends for this block's direction (``ctx.directions``), or None.

    Reused from one iteration to the next: a fresh block-size array per step
    costs page faults (measured at d = 4000: 0.3 s for a 128 MB direction on a
    busy machine, against 13 ms for writing a reused one).
    """
    lender = getattr(ctx, "directions", None)
    return None if lender is None else lender.direction(block)


class LazyDirection:
    """A direction ``form(*args, out)`` left to be formed when the Gauss-Seidel sweep reaches its block.

    In a Gauss-Seidel sweep (paper eq. fwal, the blocks in turn) block k
    moves only at its turn, so its direction ``s - x_k`` (or ``s - v``) is
    the same number formed at the proposal or at the turn, and the
    directions of the blocks are never needed at the same time: formed at
    the turn, they share one array (``ctx.directions.shared_direction``),
    one full-size array instead of one per block. The sweep calls
    :func:`formed`; the direction is valid until the next block's is formed.
    """

    __slots__ = ("_form", "_args", "_lender", "_block")

    def __init__(self, form, args, lender, block):
        self._form, self._args, self._lender, self._block = form, args, lender, block

    def form(self):
        return self._form(*self._args, self._lender.shared_direction(self._block))

    def sparse(self):
        """(indices, values) of the direction when it is the difference of two sparse atoms (a pairwise
        step on an L1 ball or a simplex: a few nonzeros), each index once; else None."""
        if self._form is not _pair_direction:
            return None
        _, plus, minus = self._args
        if type(plus) is not SparseAtom or type(minus) is not SparseAtom:
            return None
        indices, inverse = np.unique(np.concatenate([plus.indices, minus.indices]), return_inverse=True)
        return indices, np.bincount(inverse, weights=np.concatenate([plus.values, -minus.values]),
                                    minlength=indices.size)


def formed(p):
    """``p.d`` as an array, forming a :class:`LazyDirection` now (in the array shared by the lazy directions)."""
    if type(p.d) is LazyDirection:
        p.d = p.d.form()
    return p.d


def _lent_direction(ctx, block, form, *args):
    """``form(*args, out)``: the block's direction in the array the driver lends, now, or a
    :class:`LazyDirection` when the driver forms directions at the sweep's turn (``ctx.lazy_directions``)."""
    if getattr(ctx, "lazy_directions", False):
        return LazyDirection(form, args, ctx.directions, block)
    return form(*args, _direction_out(ctx, block))


class DeferredProposal:
    """A cheap step's proposal left for the Gauss-Seidel sweep to form; only its FW gap is known.

    In a Gauss-Seidel sweep a block with a cheap proposal (``cheap_proposal``)
    proposes again once an earlier block has moved, so the direction it
    would propose before the sweep is thrown away whenever an earlier block
    moves. The driver then asks it for its FW gap alone (``fw_gap``) and
    the sweep forms the proposal where it is used: from the fresh gradient,
    or, when no earlier block moved, from the gradient it would have been
    formed from before (the same numbers).
    """

    __slots__ = ("gap",)

    def __init__(self, gap):
        self.gap = gap


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
        return Proposal(_lent_direction(ctx, self.block, _fw_direction, x_k, s), 1.0, "fw", gap, s, slope=-gap)

    def commit(self, p, gamma):
        if self.active is not None:
            self.active.fw_update(p.fw_atom, gamma)


class _ActiveSetStep:
    """Shared part of the steps that keep the block's iterate as a convex combination of atoms."""

    def __init__(self, block, active=None):
        self.block = block
        self.active = active if active is not None else ActiveSet(block.initial_atom())

    def _fw(self, x_k, s, gap, ctx=None):
        return Proposal(_lent_direction(ctx, self.block, _fw_direction, x_k, s), 1.0, "fw", gap, s, slope=-gap)

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
            return Proposal(d, alpha / (1.0 - alpha), "away", gap, s, (pos,), slope=xg - v_dot)
        return self._fw(x_k, s, gap, ctx)


class PairwiseStep(_ActiveSetStep):
    """Pairwise Frank-Wolfe: ``d = s - v``, gamma in [0, alpha_v]."""

    def propose(self, x_k, g_k, ctx=None):
        s = self.block.lmo(g_k)
        s_dot = s.dot(g_k)
        gap = dot(x_k, g_k) - s_dot
        pos, v, alpha, v_dot = self.active.away_vertex(g_k)
        if s.key == v.key:
            return self._fw(x_k, s, gap, ctx)
        return Proposal(_lent_direction(ctx, self.block, _pair_direction, x_k.size, s, v), alpha, "pairwise",
                        gap, s, (pos,), slope=s_dot - v_dot)


class BlendedPairwiseStep(_ActiveSetStep):
    """BPCG (Tsuji, Tanaka & Pokutta 2022, Alg. 1), optionally with a lazified LMO.

    Several local steps per iteration where the block's quadratic model is
    exact. When the block has no consistency rows (``coupled`` False) and the
    objective's curvature along every direction measured so far is the same
    multiple of ``||d||^2`` (f restricted to the block is ``L/2 ||x||^2`` plus
    a linear term, as in a projection ``||X - C||_F^2``), then along
    ``d = A (w' - w)`` (A the active atoms, w their weights)

        f(x + d) = f(x) + <A' g, w' - w> + L/2 (w' - w)' A'A (w' - w)

    holds exactly. A local phase then runs BPCG's local pairwise steps (line 7
    of Alg. 1, each with its exact step size) on this model in weight space,
    O(k) each with the Gram matrix ``A'A`` that the active set keeps, until
    the local gap falls below ``LOCAL_PHASE_REDUCTION`` times the last FW gap
    (at most ``MAX_LOCAL_STEPS`` steps, fewer with many atoms: see
    ``LOCAL_PHASE_WORK``, ``LOCAL_PHASE_SHARE``). The driver receives the combined
    move ``d`` (gamma = 1 intended; its line search is exact for a quadratic).
    An LMO call (an assignment problem on a Birkhoff block) costs far more
    than these steps, and each LMO call now finds the active set near its
    own optimum, as fully-corrective FW would (Lacoste-Julien & Jaggi 2015).

    ``pairwise_steps=True`` (a set whose ``auto_active_set_step`` is
    "pairwise": the K-sparse polytope, the boxed L1 ball): wherever the
    local phase does not run, the block takes pairwise FW steps
    (:class:`PairwiseStep`, Lacoste-Julien & Jaggi 2015: weight moves from
    the away vertex to the LMO's vertex, an LMO call every iteration)
    instead of BPCG's FW and single local steps. On those sets a vertex
    moves many entries to their bounds at once; BPCG adds atoms only by FW
    steps ``s - x``, which shrink every active weight, and its local steps
    then trade weight among many overlapping vertices in ever smaller steps
    (benchmarks/RESULTS.md, "Vertex steps on the boxed L1 ball" and "Vertex
    steps on the K-sparse polytope"). Where the local phase runs (a block
    without rows whose objective is isotropic, a projection), its
    near-fully-corrective steps beat both, so the block takes BPCG's steps
    once the curvature checks have found it there.
    """

    def __init__(self, block, active=None, lazy=True, coupled=True, pairwise_steps=False):
        super().__init__(block, active)
        self.lazy = lazy
        self.pairwise_steps = pairwise_steps
        self.phi = np.inf  # the last FW gap measured (the lazy oracle's threshold)
        self.coupled = coupled  # the block has consistency rows: the penalty term is not isotropic
        self._curvature_ratios = []  # c_f / ||d||^2 along the directions measured so far
        self.model_curvature = None  # L once the block's curvature is known to be L ||d||^2

    def observe_curvature(self, c_f, d_norm2):
        """Record the objective's curvature along the last direction (decides the local phase)."""
        ratios = self._curvature_ratios
        if self.coupled or ratios is None or d_norm2 <= 0:
            return
        if c_f is None or not math.isfinite(c_f) or c_f <= 0 or (
                ratios and abs(c_f / d_norm2 - ratios[0]) > CURVATURE_MATCH * ratios[0]):
            self._curvature_ratios, self.model_curvature = None, None  # not isotropic: never again
            return
        ratios.append(float(c_f) / d_norm2)
        if len(ratios) >= CURVATURE_CHECKS and self.model_curvature is None \
                and _sparse_atoms(self.active):
            self.model_curvature = ratios[0]
            self.active.track_gram(self.block.size, GRAM_MAX_ATOMS)

    def propose(self, x_k, g_k, ctx=None):
        if self.pairwise_steps and not self._weight_space_model():
            p = PairwiseStep.propose(self, x_k, g_k, ctx)
            self.phi = max(p.gap, 0.0)  # (the lazy threshold, should the local phase start later)
            return p
        aset = self.active
        dots = aset.dots(g_k)
        a, s_loc = int(dots.argmax()), int(dots.argmin())  # the methods: no np.argmax wrapper per iteration
        local_gap = float(dots[a] - dots[s_loc])  # <a - s_loc, g>: the local pairwise gap
        # Lazy: skip the LMO while an active pair gives a fair fraction of the last
        # FW gap, but not once that gap is small enough that the FW gap could
        # certify convergence (the driver stops only on measured gaps), and not
        # when the driver asks every block for its LMO (``ctx.lazy_allowed``
        # False, every LAZY_CHECK_EVERY iterations: a measured gap of all blocks at once).
        if (self.lazy and ctx.lazy_allowed and a != s_loc
                and local_gap >= max(self.phi / LAZY_FACTOR, ctx.gap_target)):
            return self._local(x_k.size, dots, a, s_loc, None, ctx)
        s = self.block.lmo(g_k)
        s_dot = s.dot(g_k)
        gap = dot(x_k, g_k) - s_dot
        self.phi = max(gap, 0.0)
        if a != s_loc and local_gap >= gap:  # line 7 of BPCG: the local step is at least as good
            return self._local(x_k.size, dots, a, s_loc, gap, ctx)
        return self._fw(x_k, s, gap, ctx)

    def _weight_space_model(self):
        """Whether the quadratic model in weight space is exact and its Gram matrix kept (and small enough)."""
        aset = self.active
        if self.model_curvature is not None and (len(aset) > GRAM_MAX_ATOMS or aset.gram is None):
            aset.stop_gram()  # the Gram matrix would be too big (the active set also stops at its cap)
            self.model_curvature, self._curvature_ratios = None, None
        return self.model_curvature is not None and aset.gram is not None

    def _local(self, size, dots, a, s_loc, gap, ctx):
        aset = self.active
        if self._weight_space_model() and len(aset) > 2:
            target = max(LOCAL_PHASE_REDUCTION * self.phi, getattr(ctx, "gap_target", 0.0))
            return self._local_phase(size, dots, target, gap)
        d = _lent_direction(ctx, self.block, _pair_direction, size, aset.atom(s_loc), aset.atom(a))
        return Proposal(d, aset.weight(a), "pairwise", gap, None, (a, s_loc), slope=float(dots[s_loc] - dots[a]))

    def _local_phase(self, size, dots, target, gap):
        """Local pairwise steps on the exact quadratic model in weight space (see the class docstring)."""
        aset = self.active
        w0 = aset.weights
        w = w0.copy()
        q = dots.copy()  # the model's gradient in weight space: A'g + L G (w - w0)
        self._local_steps(w, q, aset.gram, target)
        dw = w - w0
        moved = dw.nonzero()[0]
        return Proposal(self._weight_move(size, dw), 1.0, "pairwise", gap, None, (w0, w), prescaled=True,
                        slope=float(np.dot(dots[moved], dw[moved])))

    def _local_steps(self, w, q, G, target):
        """BPCG's local pairwise steps (Alg. 1, line 7, exact step sizes) on the quadratic model, in place.

        ``w``: the weights, ``q``: the model's gradient in weight space
        (A'g + L G (w - w_start)), ``G``: the Gram matrix of the atoms that ``w``
        weighs. Stops once the local gap is at most ``target``, after at most
        ``MAX_LOCAL_STEPS`` steps (fewer with many atoms: ``LOCAL_PHASE_WORK``,
        ``LOCAL_PHASE_SHARE``).
        """
        L = self.model_curvature
        # below this the local gap is rounding in q (a converged active set: no step is worth taking)
        target = max(target, LOCAL_GAP_ROUNDING * float(np.abs(q).max()))
        # scalars as Python floats (the same IEEE operations as on NumPy scalars, at a
        # fraction of the cost: this loop runs up to MAX_LOCAL_STEPS times per iteration)
        work = max(LOCAL_PHASE_WORK, LOCAL_PHASE_SHARE * w.size * self.active.entries_per_atom())
        # the away atom is the largest q among positive weights; while every weight is positive
        # (``zero_weights`` counts those that are not) that is q itself, with no masked copy per step
        zero_weights = w.size - int(np.count_nonzero(w > 0))
        change = np.empty_like(q)  # L amount (G[s] - G[a]), formed in place
        for _ in range(min(MAX_LOCAL_STEPS, max(2, int(work // w.size)))):
            q_active = np.where(w > 0, q, -np.inf) if zero_weights else q
            a, s = int(q_active.argmax()), int(q.argmin())
            local_gap = float(q_active[a]) - float(q[s])
            if a == s or not local_gap > target:
                break
            curv = L * (float(G[a, a]) + float(G[s, s]) - 2.0 * float(G[a, s]))
            w_a = float(w[a])
            s_was_empty = not w[s] > 0
            if curv <= 0 or local_gap >= curv * w_a:  # a drop step: a leaves the active set
                amount, w[a] = w_a, 0.0
            else:
                amount = local_gap / curv
                w[a] = w_a - amount
            w[s] += amount
            zero_weights += (not w[a] > 0) + (not w[s] > 0) - s_was_empty  # a had weight before this step
            np.subtract(G[s], G[a], out=change)
            change *= L * amount
            q += change

    def _weight_move(self, size, dw):
        """The block's move ``sum_i dw_i a_i``."""
        aset = self.active
        moved = dw.nonzero()[0]
        d = np.zeros(size)
        if aset.add_unit_atoms(d, moved, dw[moved]):
            return d
        _add_atoms(d, [aset.atom(int(i)) for i in moved], [float(dw[i]) for i in moved])
        return d

    def commit(self, p, gamma):
        if p.prescaled:  # a local phase: weights w0 + gamma (w - w0)
            if gamma > 0:
                w0, w = p.data
                self.active.set_weights(w0 + min(gamma, 1.0) * (w - w0))
        elif p.kind == "pairwise" and p.fw_atom is None:  # a local step (a pairwise FW step has its LMO vertex)
            if gamma > 0:
                self.active.move_weight(p.data[0], p.data[1], min(gamma, p.gamma_max))
        else:
            super().commit(p, gamma)


def _add_atoms(x, atoms, weights):
    """x += sum_i weights[i] atoms[i], atom after atom.

    Sparse atoms go through one ``np.add.at`` over their concatenated entries
    instead of one call each: ``np.add.at`` adds entry after entry in the
    given order, so the sums are the same, in the same order, as atom by atom.
    """
    if len(atoms) > 1 and all(type(a) is SparseAtom for a in atoms):
        np.add.at(x, np.concatenate([a.indices for a in atoms]),
                  np.concatenate([w * a.values for a, w in zip(atoms, weights)]))
        return
    for a, w in zip(atoms, weights):
        a.add_to(x, w)


def _sparse_atoms(aset):
    """Whether the active set holds sparse atoms only (their Gram columns cost O(k nnz))."""
    return len(aset) > 0 and all(hasattr(a, "indices") for a in aset.atoms)


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

    Where each group sums to at most its total (``groups.origin``), the origin
    is a vertex too: it enters as one more entry of every group, with gradient
    0, column norm 0 and the mass ``t_g - sum(x_g)`` (its barycentric weight
    times t_g). Mass moved to it lowers an entry (``d = -e_v``), mass moved
    from it raises one (``d = e_s``); such a move has ``||d||^2`` = 1 per unit
    (2 for a pair), so its ``c_g`` counts ``L_f`` once.
    """

    cheap_proposal = True  # no LMO call: a Gauss-Seidel sweep may propose again

    def __init__(self, block, groups, col_norms2):
        self.block = block
        self.index = groups.index  # (G, S) flat indices of each group in the block
        self.total = groups.total  # a number, or one per group
        self.origin = bool(getattr(groups, "origin", False))
        self.col_norms2 = col_norms2  # ||M e_i||^2 for the block's columns
        self.curvature_f = 0.0  # L_f: objective curvature per unit squared step
        self.rows = np.arange(self.index.shape[0])
        self.contiguous = bool(np.array_equal(self.index.ravel(), np.arange(self.index.size)))
        self.norms2_grouped = col_norms2[self.index]
        if self.origin:  # the origin's column: norm 0 (moving mass to or from it moves one entry)
            self.norms2_grouped = np.hstack([self.norms2_grouped, np.zeros((self.rows.size, 1))])

    def _support(self, x_k, g_k):
        """Each group's FW vertex s, the support entries (x_i > 0) and the block's FW gap."""
        idx = self.index
        if self.contiguous:  # groups are consecutive runs of the block: views, no gathers
            X, G = x_k.reshape(idx.shape), g_k.reshape(idx.shape)
        else:
            X, G = x_k[idx], g_k[idx]
        if self.origin:  # one more entry per group: the origin, its mass t_g - sum(x_g), its gradient 0
            room = np.maximum(self.total - X.sum(axis=1), 0.0)
            X, G = np.hstack([X, room[:, None]]), np.hstack([G, np.zeros((G.shape[0], 1))])
        s = np.argmin(G, axis=1)
        g_s = G[self.rows, s]
        # Only support entries (x_i > 0) can give mass: after t iterations a group
        # holds at most t + 1 of them, so the model below is formed on the support
        # alone (on a MAP LP's edge tables, K^2 entries per group, a small fraction).
        r, c = np.nonzero(X > 0)
        xs, gs = X[r, c], G[r, c]
        # <x, g> - <s, g>; zeros of x add nothing
        t_g_s = self.total * g_s.sum() if np.ndim(self.total) == 0 else float(np.dot(self.total, g_s))
        gap = float(np.dot(xs, gs) - t_g_s)
        return s, g_s, r, c, xs, gs, gap

    def fw_gap(self, x_k, g_k):
        """The block's FW gap alone (the gap of :meth:`propose`, without forming its direction)."""
        return self._support(x_k, g_k)[-1]

    def propose(self, x_k, g_k, ctx):
        idx, rows = self.index, self.rows
        s, g_s, r, c, xs, gs, gap = self._support(x_k, g_k)
        # for every support entry i: the model's best amount moved from i to s and its decrease
        slope = gs - g_s[r]  # g_i - g_s >= 0
        # L_f is per unit squared step: a pair moves two coordinates (||d||^2 = 2 per unit), a move to or
        # from the origin one
        moving = 2.0 if not self.origin else (c < self.index.shape[1]) + (s[r] < self.index.shape[1]).astype(float)
        curv = ctx.lam * (self.norms2_grouped[r, c] + self.norms2_grouped[rows, s][r]) + moving * self.curvature_f
        # min(x_i, slope / curv), and x_i where curv <= 0 (no curvature: the whole mass)
        amount = np.minimum(xs, np.divide(slope, curv, out=np.full(slope.shape, np.inf), where=curv > 0))
        amount[~(slope > 0)] = 0.0
        decrease = amount * (slope - 0.5 * curv * amount)
        # v: in every group, the entry whose pair with s decreases the model most (the
        # largest gradient alone can hold a vanishing mass and stall the group).
        # np.nonzero lists the support row by row, so each group's entries are one run
        # of r: per-run maxima (reduceat) and first winners (where r changes) need no
        # scatter and no sort (np.maximum.at, np.unique: most of this step's time on small groups)
        if rows.size == 1:  # one simplex: the first entry of largest decrease, if that is > 0 (the same choice)
            chosen = np.array([decrease.argmax()]) if r.size and decrease.max() > 0 else np.zeros(0, dtype=np.intp)
        else:
            best = np.zeros(rows.size)
            if r.size:
                runs = _run_starts(r)
                best[r[runs]] = np.maximum(np.maximum.reduceat(decrease, runs), 0.0)
            winners = ((decrease > 0) & (decrease == best[r])).nonzero()[0]
            chosen = winners[_run_starts(r[winners])]  # one winner per group (the first on ties)
        groups_moving = r[chosen]
        moved = amount[chosen]
        to_s, from_v = s[groups_moving], c[chosen]
        d = np.zeros(x_k.size)
        size = idx.shape[1]  # the origin's position, where it is an entry: not a coordinate of x
        into = to_s < size
        d[idx[groups_moving[into], to_s[into]]] = moved[into]  # one s per group, groups disjoint; s != v
        out_of = from_v < size
        d[idx[groups_moving[out_of], from_v[out_of]]] -= moved[out_of]
        return Proposal(d, 1.0, "pairwise", gap, None, prescaled=True)

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        """Record the objective's curvature along this block's last direction (for the next c_g)."""
        if d_norm2 > 0 and c_f is not None and math.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2


def _run_starts(sorted_labels):
    """Positions where a run of equal labels starts in a sorted 1-D array (the first of each label)."""
    if sorted_labels.size == 0:
        return np.zeros(0, dtype=np.intp)
    starts = np.empty(sorted_labels.size, dtype=bool)
    starts[0] = True
    np.not_equal(sorted_labels[1:], sorted_labels[:-1], out=starts[1:])
    return starts.nonzero()[0]


class BatchBPCGStep:
    """BPCG (Tsuji, Tanaka & Pokutta 2022, Alg. 1) in every polytope of a batch, each with its own step size.

    A batched set (``fm.AlignmentPolytope`` with ``axis=0``: B alignments in
    one block) is a product of B polytopes. Its vertices are joint vertices;
    an active set of joint vertices would tie the groups together, and one
    step size for all of them is throttled by the worst group (the smallest
    away weight). Here every group g (entries ``g*S .. (g+1)*S - 1``) keeps
    its own active set of *group* vertices (:class:`BatchedActiveSets`). Each
    iteration calls the batched LMO once and splits its vertex into the
    groups' vertices s_g; in group g

    * a local pairwise step ``d_g = a_min - a_max`` between two active atoms
      (smallest and largest gradient product) when its gap is at least the
      group's FW gap ``<x_g - s_g, g_g>`` (BPCG line 7), at most the weight of
      a_max;
    * a FW step ``d_g = s_g - x_g`` otherwise, at most 1.

    The amount of each group's step minimizes the separable second-order
    model of the augmented Lagrangian along d_g alone,
    ``gamma_g = min(cap_g, <-g_g, d_g> / c_g)``, ``c_g = lam sum_i ||M e_i||^2
    d_gi^2 + L_f ||d_g||^2`` (``L_f`` the objective's curvature per unit squared
    step along the block's previous direction), as :class:`GroupPairwiseStep`
    does for simplices; the driver's line search then scales the joint move,
    which keeps the iteration a descent step where groups interact. All
    groups are handled at once by array operations (no loop over groups).
    """

    def __init__(self, block, group_size, col_norms2):
        self.block = block
        self.S = int(group_size)
        self.B = block.size // self.S
        self.col_norms2 = col_norms2
        self.curvature_f = 0.0
        self.sets = None  # the groups' active sets, built from the starting vertex
        self.fallback = None  # FW steps when the starting point is not a known vertex (a warm start)

    def _start(self, x_k):
        atom = self.block.initial_atom()
        x0 = np.zeros(self.block.size)
        atom.add_to(x0, 1.0)
        if not (hasattr(atom, "indices") and np.array_equal(x0, x_k)):
            self.fallback = FWStep(self.block)
            return
        self.sets = BatchedActiveSets(self.B, self.S, *_split_vertex(atom, self.B, self.S))

    def propose(self, x_k, g_k, ctx):
        if self.sets is None and self.fallback is None:
            self._start(x_k)
        if self.fallback is not None:
            return self.fallback.propose(x_k, g_k, ctx)
        B, S, sets = self.B, self.S, self.sets
        s_idx, s_val = _split_vertex(self.block.lmo(g_k), B, S)
        X, G = x_k.reshape(B, S), g_k.reshape(B, S)
        rows = np.arange(B)
        fw_gap = np.einsum("ij,ij->i", X, G) - np.einsum("ij,ij->i", g_k[s_idx], s_val)
        dots = sets.dots(g_k)  # (B, capacity); empty slots are masked by ``alive`` below
        a = np.argmax(np.where(sets.alive, dots, -np.inf), axis=1)
        lo = np.argmin(np.where(sets.alive, dots, np.inf), axis=1)
        local_gap = dots[rows, a] - dots[rows, lo]
        local = (a != lo) & (local_gap >= fw_gap)  # BPCG line 7, per group
        # unscaled directions, every group at once: s_g - x_g or a_lo - a_a
        D = np.where(local[:, None], 0.0, -X)
        flat = D.reshape(-1)
        fw = ~local
        flat += np.bincount(s_idx[fw].ravel(), s_val[fw].ravel(), minlength=flat.size)
        flat += np.bincount(sets.idx[rows[local], lo[local]].ravel(), sets.val[rows[local], lo[local]].ravel(),
                            minlength=flat.size)
        flat -= np.bincount(sets.idx[rows[local], a[local]].ravel(), sets.val[rows[local], a[local]].ravel(),
                            minlength=flat.size)
        slope = -np.where(local, local_gap, fw_gap)
        cap = np.where(local, sets.weight[rows, a], 1.0)
        c = ctx.lam * np.einsum("ij,ij->i", self.col_norms2.reshape(B, S), D * D) \
            + self.curvature_f * np.einsum("ij,ij->i", D, D)
        with np.errstate(divide="ignore", invalid="ignore"):
            amount = np.where(c > 0, np.minimum(cap, -slope / c), cap)
        amount[~(slope < 0)] = 0.0
        D *= amount[:, None]
        return Proposal(flat, 1.0, "fw", float(fw_gap.sum()), None, (local, a, lo, amount, s_idx, s_val),
                        prescaled=True)

    def commit(self, p, gamma):
        if self.fallback is not None:
            return self.fallback.commit(p, gamma)
        if gamma <= 0:
            return
        local, a, lo, amount, s_idx, s_val = p.data
        self.sets.update(local, a, lo, min(gamma, 1.0) * amount, s_idx, s_val)

    def observe_curvature(self, c_f, d_norm2):
        if d_norm2 > 0 and c_f is not None and math.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2


def _split_vertex(atom, B, S):
    """A joint sparse vertex of a batch as padded per-group rows: (B, w) flat indices and values.

    Padding entries point at the group's first entry with value 0.
    """
    idx = np.asarray(atom.indices)
    vals = np.broadcast_to(np.asarray(atom.values, dtype=float), idx.shape)
    order = np.argsort(idx, kind="stable")
    idx, vals = idx[order], vals[order]
    group = idx // S
    counts = np.bincount(group, minlength=B)
    width = max(1, int(counts.max()) if counts.size else 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    col = np.arange(idx.size) - starts[group]
    out_idx = np.repeat((np.arange(B) * S)[:, None], width, axis=1)
    out_val = np.zeros((B, width))
    out_idx[group, col] = idx
    out_val[group, col] = vals
    return out_idx, out_val


class BatchedActiveSets:
    """One active set per group of a batch, stored together: (B, capacity, width) atoms and (B, capacity) weights.

    Slot ``[g, j]`` holds an atom of group g (flat indices into the block,
    padded with the group's first entry and value 0) when ``alive[g, j]``;
    each group's weights are nonnegative and sum to one (paper eq.
    active_set_decomposition, per group). Inner products with every atom of
    every group are one gather; updates are array operations over the
    groups; atoms whose weight falls to zero free their slot.
    """

    def __init__(self, B, S, first_idx, first_val):
        self.B, self.S = B, S
        self.idx = first_idx[:, None, :].copy()
        self.val = first_val[:, None, :].copy()
        self.weight = np.ones((B, 1))
        self.alive = np.ones((B, 1), dtype=bool)

    def __len__(self):
        return int(self.alive.sum())

    def dots(self, g):
        return np.einsum("gkw,gkw->gk", g[self.idx], self.val)

    def _widen(self, width):
        if width > self.idx.shape[2]:
            extra = width - self.idx.shape[2]
            pad = np.repeat(self.idx[:, :, :1], extra, axis=2)  # the padding convention: a group entry, value 0
            pad[...] = (np.arange(self.B) * self.S)[:, None, None]
            self.idx = np.concatenate([self.idx, pad], axis=2)
            self.val = np.concatenate([self.val, np.zeros(self.val.shape[:2] + (extra,))], axis=2)

    def _grow(self):
        B, cap, w = self.idx.shape
        self.idx = np.concatenate([self.idx, np.repeat((np.arange(B) * self.S)[:, None, None], cap, 1)
                                   .repeat(w, 2)], axis=1)
        self.val = np.concatenate([self.val, np.zeros((B, cap, w))], axis=1)
        self.weight = np.concatenate([self.weight, np.zeros((B, cap))], axis=1)
        self.alive = np.concatenate([self.alive, np.zeros((B, cap), dtype=bool)], axis=1)

    def update(self, local, a, lo, amount, s_idx, s_val):
        """Local steps (weight ``amount`` from slot a to slot lo) and FW steps toward (s_idx, s_val)."""
        moving = amount > 0
        lg = np.flatnonzero(local & moving)
        held = self.weight[lg, a[lg]]
        take = np.minimum(amount[lg], held)
        self.weight[lg, a[lg]] = np.where(take >= held, 0.0, held - take)  # a drop step empties the slot exactly
        self.weight[lg, lo[lg]] += take
        fg = np.flatnonzero(~local & moving)
        if fg.size:
            self._widen(s_idx.shape[1])
            w = self.idx.shape[2]
            new_idx = np.repeat((np.arange(self.B) * self.S)[:, None], w, axis=1)
            new_val = np.zeros((self.B, w))
            new_idx[:, : s_idx.shape[1]] = s_idx
            new_val[:, : s_val.shape[1]] = s_val
            gam = np.minimum(amount[fg], 1.0)
            self.weight[fg] *= (1.0 - gam)[:, None]
            # the vertex may already be active in its group (same cells and values)
            same = self.alive[fg] & np.all(self.idx[fg] == new_idx[fg][:, None, :], axis=2) \
                & np.all(self.val[fg] == new_val[fg][:, None, :], axis=2)
            found = same.any(axis=1)
            hit = fg[found]
            self.weight[hit, np.argmax(same[found], axis=1)] += gam[found]
            miss, gam_miss = fg[~found], gam[~found]
            if miss.size:
                if np.any(self.alive[miss].all(axis=1)):
                    self._grow()
                slot = np.argmin(self.alive[miss], axis=1)  # the first free slot
                self.idx[miss, slot] = new_idx[miss]
                self.val[miss, slot] = new_val[miss]
                self.weight[miss, slot] = gam_miss
                self.alive[miss, slot] = True
        dead = self.alive & (self.weight <= _GROUP_DROP_TOL)
        if dead.any():
            self.alive &= ~dead
            self.weight[dead] = 0.0
        touched = np.flatnonzero(moving)
        self.weight[touched] /= self.weight[touched].sum(axis=1, keepdims=True)

    def dense(self):
        """The block's iterate rebuilt from the groups' atoms."""
        x = np.zeros(self.B * self.S)
        w = np.where(self.alive, self.weight, 0.0)
        np.add.at(x, self.idx.ravel(), (self.val * w[:, :, None]).ravel())
        return x


#: a group's weight at or below this is rounding: its atom leaves the group's active set
_GROUP_DROP_TOL = 1e-13


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
        self._curvatures = (None, None, None, None)  # (lam, curvature_f, c, c > 0): kept while both stay the same

    def fw_gap(self, x_k, g_k):
        """The block's FW gap alone (the gap of :meth:`propose`, without forming its direction)."""
        return dot(x_k - np.where(g_k < 0, self.hi, self.lo), g_k)

    def _coordinate_curvatures(self, lam):
        """c_i = lam ||M e_i||^2 + L_f, formed again only when lam or L_f changed (rarely: a quadratic f
        gives the same L_f at every step, and lam moves only on the penalty's raises)."""
        kept_lam, kept_curvature, c, positive = self._curvatures
        if kept_lam != lam or kept_curvature != self.curvature_f:
            c = lam * self.col_norms2 + self.curvature_f
            positive = c > 0
            self._curvatures = (lam, self.curvature_f, c, positive)
        return c, positive

    def propose(self, x_k, g_k, ctx):
        s = np.where(g_k < 0, self.hi, self.lo)
        gap = dot(x_k - s, g_k)
        c, positive = self._coordinate_curvatures(ctx.lam)
        # x_k - g_k / c where c > 0, else s (no errstate context: it costs more than the arithmetic here)
        d = np.divide(g_k, c, out=np.zeros(c.shape), where=positive)
        np.subtract(x_k, d, out=d)
        d = np.where(positive, d, s)
        np.minimum(np.maximum(d, self.lo, out=d), self.hi, out=d)  # np.clip(target, lo, hi)
        d -= x_k
        return Proposal(d, 1.0, "fw", gap, None, prescaled=True)

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        if d_norm2 > 0 and c_f is not None and math.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2


@dataclass
class SimplexGroups:
    """A block that is a product of simplices: ``index[g]`` are the flat entries of group g, each summing to ``total``.

    ``total`` is one number or one per group; ``origin``: each group sums to at
    most its total (the origin is a vertex too, ``Simplex(..., equality=False)``).
    """

    index: np.ndarray
    total: object
    origin: bool = False


_ACTIVE_SET_STEPS = {"auto": BlendedPairwiseStep, "pairwise": PairwiseStep, "away": AwayStep}


def takes_rank_k_steps(block, rank_k):
    """Whether :func:`make_step` moves ``block`` by rank-k steps under option ``rank_k`` (see there)."""
    if block.face is None or rank_k is False:
        return False
    if rank_k is True:
        return True
    from .rank_k import AUTO_MIN_DIM  # rank_k imports this module

    return min(block.face.shape) >= AUTO_MIN_DIM


def make_step(block, step, active, col_norms2, coupled=True, rank_k=False):
    """The step object for a block under the ``step`` and ``rank_k`` options.

    "auto": BPCG on polytope blocks that keep an active set (pairwise steps
    with BPCG's local phase where the set asks for pairwise steps,
    ``block.auto_step``), per-group
    pairwise steps on products of simplices, BPCG per group on batches of
    polytopes (``block.batch_group_size``), FW elsewhere; "pairwise" and
    "away": those steps on polytope blocks (pairwise per group on products of
    simplices); "fw": FW everywhere. Boxes take per-coordinate FW steps under "auto".
    ``col_norms2()`` gives ||M e_i||^2 for the block's entries (called only by
    the steps that need it: building it costs a pass over M). ``coupled``:
    whether M has rows (consistency rows or the model's equality rows;
    BPCG's local phase needs a block whose model is the objective alone, and
    a coupled rank-k block keeps the plain cost cap).
    ``rank_k=True``: blocks with a low-rank face (trace-norm balls) take
    BlockFW rank-k steps (:class:`fwmodel.engine.rank_k.RankKStep`);
    ``"auto"``: those of at least ``AUTO_MIN_DIM`` rows and columns, with k
    capped by cost (see :mod:`fwmodel.engine.rank_k`).
    """
    if takes_rank_k_steps(block, rank_k):
        from .rank_k import AUTO_COST_CAP, RankKStep  # rank_k imports this module

        if rank_k is True:  # uncapped: the coupling only matters to the cost cap
            return RankKStep(block, block.face, col_norms2())
        return RankKStep(block, block.face, col_norms2(), cost_cap=AUTO_COST_CAP, coupled=coupled)
    if step in ("auto", "pairwise") and block.groups is not None:
        return GroupPairwiseStep(block, block.groups, col_norms2())
    if step == "auto" and block.intervals is not None:
        return IntervalStep(block, block.intervals, col_norms2())
    if step == "auto" and getattr(block, "batch_group_size", None) is not None:
        return BatchBPCGStep(block, block.batch_group_size, col_norms2())
    if active is not None and step == "auto":
        if getattr(block, "auto_step", None) == "pairwise":  # pairwise steps, BPCG's local phase where it runs
            return BlendedPairwiseStep(block, active, coupled=coupled, pairwise_steps=True)
        if getattr(block, "auto_step", None) is not None:  # the set's own choice (ConvexSet.auto_active_set_step)
            return _ACTIVE_SET_STEPS[block.auto_step](block, active)
        return BlendedPairwiseStep(block, active, coupled=coupled)
    if active is not None and step in _ACTIVE_SET_STEPS:
        return _ACTIVE_SET_STEPS[step](block, active)
    return FWStep(block)
