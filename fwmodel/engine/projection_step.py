"""Projected-gradient steps on the blocks whose set has a cheap Euclidean projection.

A linearized augmented-Lagrangian block step: on the blocks K_P chosen by
the option ``projection`` (all at once, one step size),

    d_k = P_k(x_k - grad_k L(x, y) / L_c) - x_k,      x <- x + gamma d,

with ``L_c`` the curvature of L(., y) along the gradient restricted to K_P
and gamma in [0, 1] from a line search on L(., y). When the Hessian of
L(., y) on K_P is a multiple of the identity (the star-tied copies of
sum_squares(X - C), as in the covariance problem) ``x + d`` is the exact
minimizer over them. The FW-AL structure is unchanged (one primal pass on
L(., y_t), then the dual step of eq. fwal): the step is a corrective primal
step taken after the Frank-Wolfe sweep, and blocks without a cheap
projection still move by LMOs only.

Two objects, both behind the step interfaces of the driver:

* :class:`ProjectedBlock`: the block's entry in the FW sweep (the block
  step interface of :mod:`fwmodel.engine.steps`): it proposes no direction
  and reports the block's FW gap, which the stopping rule still needs;
* :class:`ProjectionStep`: the corrective step (``kind``, ``blocks``,
  ``take(lagrangian, iterate) -> moves``; see :mod:`fwmodel.engine.fwal`)
  that moves all projected blocks together.

Which blocks: :func:`initial_projection_blocks` for ``projection=True``;
``projection="auto"`` adds blocks during the solve by measured cost
(:mod:`fwmodel.engine.projection_choice`).
"""
from __future__ import annotations

import numpy as np

from .block_search import LARGE_BLOCK
from .line_search import Backtracking, exact_quadratic_step
from .steps import Proposal
from .vector_ops import dot


def initial_projection_blocks(blocks, projection):
    """Indices of the blocks that take projected-gradient steps from the start.

    True: the blocks with a cheap projection. "auto": the blocks whose set
    declares its projection about as cheap as its LMO (``cheap_projection``:
    L1 and L2 balls, boxes; soft-thresholding onto the L1 ball is O(n log n),
    its LMO O(n)) among the candidates of
    :func:`fwmodel.engine.projection_choice.candidates` (none on products of
    polytopes): nothing is left to measure for them, so they project from
    the first iteration; "auto" adds the other blocks later by measured cost
    (:mod:`fwmodel.engine.projection_choice`). False: none.
    """
    if projection is True:
        return [k for k, blk in enumerate(blocks) if blk.project is not None and blk.cheap_projection]
    if projection == "auto":
        from .projection_choice import candidates

        return [k for k in candidates(blocks) if blocks[k].cheap_projection]
    return []


class ProjectedBlock:
    """A block that moves by :class:`ProjectionStep`: in the FW sweep it proposes nothing and reports its FW gap."""

    def __init__(self, block):
        self.block = block

    def propose(self, x_k, g_k, ctx=None):
        gap = dot(x_k, g_k) - self.block.lmo(g_k).dot(g_k)
        return Proposal(None, 0.0, "projection", gap)

    def commit(self, p, gamma):
        pass


class ProjectionStep:
    """One projected-gradient step on L(., y) over the blocks with a cheap projection (module docstring)."""

    kind = "projection"

    def __init__(self, blocks, projected, cols=None):
        self.all_blocks = blocks
        # the blocks' columns of M (:class:`~fwmodel.engine.block_search.BlockColumns`): where the one
        # projected block's columns are a signed identity (a copy tied to another), M d is that block's
        # d itself and the step needs no n- or m-size array (:meth:`_take_tied_copy`)
        self.cols = cols
        self.blocks = list(projected)  # indices of the projected blocks (grows under projection="auto")
        # the curvature estimate L_c carried from one step to the next, and the
        # backtracking state of these steps (the FW step's directions have another curvature)
        self.memory = {}
        # the general path's n-size direction, kept from one step to the next: 0 outside the
        # projected blocks (the blocks only ever join, and each step overwrites all of theirs). A
        # fresh zeroed array per step cost its page faults every iteration (256 MB at d = 4000).
        self._direction = None
        # () -> a curvature in the units of L(., y) (f / length^2), used where the curvature along the
        # gradient is 0 (a linear objective, directions that M does not see): set by the driver to the
        # stopping rule's S_f / S_x^2, so the step is as long as the sets are wide in any units
        self.fallback_curvature = lambda: 1.0

    def take(self, lagrangian, it):
        """Move the projected blocks of ``it`` (x and r in place, f and g refreshed); returns 1 if they moved, else 0.

        ``d_k = P_k(x_k - grad_k / L_c) - x_k``; ``x + gamma d`` stays in the
        sets for gamma in [0, 1]; gamma comes from an exact line search
        (quadratic objectives) or from backtracking with its own Lipschitz
        estimate. L_c: for quadratic objectives, the curvature measured along
        the previous projection direction (free: the exact line search
        computes it); at the start, after lam changed, after a shortened step,
        and for other objectives, the curvature along the gradient (a
        curvature pass and an M product), else the backtracking estimate,
        else (no curvature seen: a linear objective) ``fallback_curvature()``.
        """
        if not self.blocks:
            return 0
        tied = self._tied_copy(lagrangian)
        if tied is not None:
            return self._take_tied_copy(lagrangian, it, *tied)
        blocks, memory = self.all_blocks, self.memory
        objective, Mop, m = lagrangian.objective, lagrangian.Mop, lagrangian.m
        curvature_fn, quadratic, buffers = lagrangian.curvature, lagrangian.quadratic, lagrangian.buffers
        x, r, y, lam, f = it.x, it.r, it.y, it.lam, it.f
        n = x.size
        dual_term = buffers.dual_term(r, y, lam)
        # on large tied copies the gradient of L is formed block by block in one block-size array
        # (BlockLagrangianGradient; the same numbers) instead of an n-size one: it is read one
        # projected block at a time below
        grad = buffers.lagrangian_grad(Mop, it.g, dual_term, self.cols if n >= LARGE_BLOCK else None)
        slices = [blocks[k].slice for k in self.blocks]

        def block_dot(a, b):  # <a, b> over the projection blocks (d is 0 elsewhere)
            return sum(dot(a[sl], b[sl]) for sl in slices)

        if self._direction is None or self._direction.size != n:
            self._direction = np.zeros(n)
        d = self._direction
        for sl in slices:
            np.negative(grad[sl], out=d[sl])
        gnorm2 = block_dot(d, d)
        if gnorm2 == 0.0:
            return 0
        backtracking = memory.setdefault("backtracking", Backtracking())
        L = memory.get("L") if memory.get("lam") == lam else None
        if L is None:
            Md = Mop.matvec(d) if m else np.zeros(0)
            curv = curvature_fn(x, d) if curvature_fn is not None else None
            if curv is not None and float(curv) + lam * dot(Md, Md) > 0:
                L = (float(curv) + lam * dot(Md, Md)) / gnorm2
            else:
                # no curvature along the gradient: only the sets bound the step. An absolute 1.0 here
                # made the step ||grad|| long, so a linear objective in small units (f times 1e-6, or
                # the sets 1e6 wide) crawled at max_iter where unit scale was optimal in 28 iterations
                L = backtracking.lipschitz or self.fallback_curvature()
            Md = None  # an m-size array: freed before the next one
        for k, sl in zip(self.blocks, slices):
            target = d[sl]  # d = -grad here: target = x - grad / L, in place
            target *= 1.0 / L
            target += x[sl]
            if blocks[k].project_in_place:
                blocks[k].project(target, out=target)
            else:
                d[sl] = blocks[k].project(target)
            d[sl] -= x[sl]
        slope = block_dot(grad, d)
        if not slope < 0:
            return 0
        grad = None
        # f's curvature along d before M d exists: the temporaries of the two passes do not coexist
        c = curvature_fn(x, d) if quadratic and curvature_fn is not None else None
        Md = Mop.matvec(d) if m else np.zeros(0)
        pen_lin = dot(dual_term, Md) if m else 0.0
        pen_quad = lam * dot(Md, Md) if m else 0.0
        dual_term = None
        if quadratic and curvature_fn is not None:
            gamma = exact_quadratic_step(slope, float(c) + pen_quad, 1.0)
            if float(c) + pen_quad > 0 and gamma >= 1.0:
                memory["L"], memory["lam"] = (float(c) + pen_quad) / block_dot(d, d), lam
            else:  # a shortened step: L was too small for this direction, measure it again
                memory.clear()
        else:
            def phi(gm):
                return objective.value(x + gm * d) + gm * pen_lin + 0.5 * gm * gm * pen_quad

            gamma, _ = backtracking.step(phi, f, slope, block_dot(d, d), 1.0, None)
        if gamma <= 0:
            return 0
        for sl in slices:  # x += gamma d, d scaled in place (no block-size temporary; d is rebuilt next step)
            d[sl] *= gamma
            x[sl] += d[sl]
        if m:
            Md *= gamma
            r += Md
        it.f, it.g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(x)
        return 1

    def _tied_copy(self, lagrangian):
        """(block, (lo, hi, sign)) when one block projects, its columns of M are sign * I on rows lo:hi,
        and the objective is a quadratic with a per-block curvature; else None."""
        if len(self.blocks) != 1 or self.cols is None or not lagrangian.m or not lagrangian.quadratic:
            return None
        k = self.blocks[0]
        signed, block = self.cols.signed[k], self.all_blocks[k]
        objective = lagrangian.objective
        if signed is None or not signed[2] or not getattr(objective, "has_block_curvature", lambda sl: False)(
                block.slice):
            return None
        return block, signed

    def _take_tied_copy(self, lagrangian, it, block, signed):
        """:meth:`take` for one projected copy tied by M_k = sign * I on rows lo:hi (two tied copies).

        The same step in block-size arrays: block k's gradient of L(., y) is
        ``g_k + sign w[lo:hi]`` (w = y + lam r), M d = sign d_k on rows lo:hi,
        so ||M d||^2 = sign^2 ||d_k||^2 and <w, M d> = sign <w[lo:hi], d_k>; the
        curvature of f along d is the objective's per-block curvature. The
        iterates agree with the general path up to rounding.

        One block-size array: d is formed in the driver's per-block gradient
        array (free after the sweep), starting as minus the block's gradient of
        L, and on a large block (``LARGE_BLOCK`` entries) the slope <grad_k, d>
        is taken as <g_k, d> + sign <w[lo:hi], d> (the gradient of L is not kept
        beside d; the same number up to rounding); a set that projects in place
        (``Block.project_in_place``: the L1 ball) projects d over itself.
        """
        objective, buffers, memory = lagrangian.objective, lagrangian.buffers, self.memory
        x, r, lam = it.x, it.r, it.lam
        lo, hi, sign = signed
        sl = block.slice
        x_k, g_k = x[sl], it.g[sl]
        dual_term = buffers.dual_term(r, it.y, lam)
        w_k = dual_term[lo:hi]
        d = buffers.block_gradient(block.size)
        if sign > 0:
            np.add(g_k, w_k, out=d)
        else:
            np.subtract(g_k, w_k, out=d)
        np.negative(d, out=d)  # d = -grad_k
        # a small block keeps grad_k for the slope (one dot: the plain path's rounding)
        grad_k = None if block.size >= LARGE_BLOCK else -d
        gnorm2 = dot(d, d)
        if gnorm2 == 0.0:
            return 0
        sign2 = sign * sign
        L = memory.get("L") if memory.get("lam") == lam else None
        if L is None:
            curv = objective.curvature_block(x, sl, d)
            if curv is not None and float(curv) + lam * sign2 * gnorm2 > 0:
                L = (float(curv) + lam * sign2 * gnorm2) / gnorm2
            else:
                L = memory.setdefault("backtracking", Backtracking()).lipschitz or lam or 1.0
        d *= 1.0 / L  # d = -grad here: the target x - grad / L, in place
        d += x_k
        if block.project_in_place:
            block.project(d, out=d)
        else:
            d[:] = block.project(d)
        d -= x_k
        slope = dot(grad_k, d) if grad_k is not None else dot(g_k, d) + sign * dot(w_k, d)
        if not slope < 0:
            return 0
        dd = dot(d, d)
        pen_quad = lam * sign2 * dd
        c = objective.curvature_block(x, sl, d)
        if c is None:
            return 0
        gamma = exact_quadratic_step(slope, float(c) + pen_quad, 1.0)
        if float(c) + pen_quad > 0 and gamma >= 1.0:
            memory["L"], memory["lam"] = (float(c) + pen_quad) / dd, lam
        else:  # a shortened step: L was too small for this direction, measure it again
            memory.clear()
        if gamma <= 0:
            return 0
        d *= gamma
        x_k += d
        if sign > 0:
            r[lo:hi] += d
        else:
            r[lo:hi] -= d
        g_k = None  # a view of the gradient about to be replaced
        it.f, it.g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(x)
        return 1
