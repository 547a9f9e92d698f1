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
  that moves all projected blocks together. On tied copies (one or both of
  two copies of a variable, ``M_k = +-I``) the same step runs in block-size
  arrays (``ProjectionStep._take_tied_copies``), elsewhere with an n-size
  direction and ``M d``.

Which blocks: :func:`initial_projection_blocks` for ``projection=True``;
``projection="auto"`` adds blocks during the solve by measured cost
(:mod:`fwmodel.engine.projection_choice`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.linalg import blas

from .block_search import LARGE_BLOCK, signed_block_gradient
from .line_search import Backtracking, exact_quadratic_step
from .steps import Proposal
from .vector_ops import dot, signed_sum_norm2


def initial_projection_blocks(blocks, projection, rows=0, keep_vertex_steps=False, read_alone=None):
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

        return [k for k in candidates(blocks, rows, keep_vertex_steps, read_alone) if blocks[k].cheap_projection]
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
        # the blocks' columns of M (:class:`~fwmodel.engine.block_search.BlockColumns`): where the
        # projected blocks' columns are signed identities on the same rows (one or both of two tied
        # copies), M d is formed from their d_k and the step needs no n- or m-size array
        # (:meth:`_take_tied_copies`)
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
        tied = self._tied_copies(lagrangian)
        if tied is not None:
            return self._take_tied_copies(lagrangian, it, *tied)
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
            # an infinite curvature (the Hessian of z**1.5 at z = 0) is no estimate: the step 0 it gives
            # kept the solve at its start; the fallback below applies (Backtracking.step does the same)
            if curv is not None and float(curv) + lam * dot(Md, Md) > 0 and math.isfinite(
                    (float(curv) + lam * dot(Md, Md)) / gnorm2):
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
            # Near the optimum the terms of <grad, d> cancel to their last bits (the entries of d are
            # ~1e-8, the gradient's common value is not), and the computed slope can come out >= 0
            # although x is not optimal: the step stopped for good (a capped portfolio at tol=1e-9 went
            # to max_iter with no step after its 77th). The projection gives the slope a bound that
            # does not cancel: for d = P(x - grad / L) - x, <grad, d> <= -L ||d||^2.
            dd = block_dot(d, d)
            if not dd > 0:
                return 0
            slope = -L * dd
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

    def on_tied_copies(self, lagrangian):
        """Whether the projected blocks are tied copies of a quadratic (:meth:`_take_tied_copies`: an exact
        line search along a step that is the exact minimizer of L(., y) where the copies' Hessian is c I),
        or the model has no rows."""
        return not lagrangian.m or self._tied_copies(lagrangian) is not None

    def _tied_copies(self, lagrangian):
        """The projected blocks as tied copies: ``((lo, hi), [(block, signed), ...])``, or None.

        Applies when the objective is a quadratic with a curvature along a
        direction given on whole copies (``has_block_curvature``) and every
        projected block's columns of M are ``sign * I`` on the same rows lo:hi:
        one copy tied to another, or both of two tied copies (the paper's
        L1 ∩ trace-norm problem once "auto" projects both). The copies are listed
        in the order they are projected: those whose projection is not cheap
        first (the trace-norm ball's eigendecomposition and its eigenvectors:
        the largest workspace), while no other copy's direction is alive yet.
        """
        if self.cols is None or not lagrangian.m or not lagrangian.quadratic:
            return None
        has_curvature = getattr(lagrangian.objective, "has_block_curvature", None)
        if getattr(lagrangian.objective, "curvature_blocks", None) is None:
            return None
        copies = []
        for k in self.blocks:
            signed, block = self.cols.signed[k], self.all_blocks[k]
            if signed is None or not signed[2] or has_curvature is None or not has_curvature(block.slice):
                return None
            copies.append((block, signed))
        rows = {signed[:2] for _, signed in copies}
        if len(rows) != 1:
            return None
        copies.sort(key=lambda copy: bool(copy[0].cheap_projection))  # stable: the others keep their order
        return rows.pop(), copies

    def _take_tied_copies(self, lagrangian, it, rows, copies):
        """:meth:`take` for projected copies tied by ``M_k = sign_k I`` on the same rows lo:hi.

        The same step (a projected-gradient step on L(., y), exact line search)
        in block-size arrays. With w = y + lam r, copy k's gradient of L is
        ``g_k + sign_k w[lo:hi]``; ``M d = sum_k sign_k d_k`` on rows lo:hi, so
        ``||M d||^2`` is ``sign^2 ||d_k||^2`` for one copy and is summed in
        chunks of rows for two (:func:`~fwmodel.engine.vector_ops.signed_sum_norm2`: no m-size array),
        ``<w, M d> = sum_k sign_k <w[lo:hi], d_k>``, and f's curvature along d
        is the objective's along the copies' directions
        (``curvature_blocks``). The iterates agree with the general path up to
        rounding.

        Memory: copy k's direction is formed in place, ``grad_k`` first,
        then the target ``x_k - grad_k / L_c``, projected over itself where the
        set projects in place (``Block.project_in_place``), then ``- x_k``. The
        first copy's lives in the driver's per-block gradient array (free after
        the sweep), a second copy's in one array made after the first copy's
        projection (so the eigenvectors of a trace-norm projection, taken
        first, never coexist with it). One large copy on which f's Hessian
        is ``c I`` takes ``L_c = c + lam`` in closed form
        (:func:`_identity_curvature`), so even its first step may be sparse
        (:meth:`_take_sparse`). Where ``L_c`` is measured (along
        the gradient, at the start, after lam changed or after a shortened step)
        both gradients exist at once; the second is then formed again for its
        projection (the same numbers). On a large block (``LARGE_BLOCK``
        entries) the slope ``<grad_k, d_k>`` is taken as ``<g_k, d_k> + sign_k
        <w[lo:hi], d_k>`` (the gradient is not kept beside d_k; the same number
        up to rounding); a small block keeps ``grad_k`` (one dot).
        """
        objective, buffers, memory = lagrangian.objective, lagrangian.buffers, self.memory
        x, r, lam = it.x, it.r, it.lam
        lo, hi = rows
        dual_term = buffers.dual_term(r, it.y, lam)
        w = dual_term[lo:hi]
        size = hi - lo
        large = size >= LARGE_BLOCK
        signs = [signed[2] for _, signed in copies]

        def gradient(i, out):  # out <- grad_i = g_i + sign_i w
            block, signed = copies[i]
            return signed_block_gradient(it.g[block.slice], dual_term, signed, out)

        L = memory.get("L") if memory.get("lam") == lam else None
        if L is None and len(copies) == 1 and large:
            L = _identity_curvature(objective, copies[0], lam)
        if L is None:  # measured along the gradient (the curvature along -grad is the same): every copy's at once
            directions = [buffers.block_gradient(size)] + [np.empty(size) for _ in copies[1:]]
            for i, d in enumerate(directions):
                gradient(i, d)
            gnorm2 = sum(dot(d, d) for d in directions)
            if gnorm2 == 0.0:
                return 0
            curv = objective.curvature_blocks(x, [(block.slice, d) for (block, _), d in zip(copies, directions)])
            pen = lam * signed_sum_norm2(directions, signs, gnorm2)
            if curv is not None and float(curv) + pen > 0:
                L = (float(curv) + pen) / gnorm2
            else:
                # no curvature along the gradient: the general path's rule (see take)
                L = memory.setdefault("backtracking", Backtracking()).lipschitz or self.fallback_curvature()
            del directions[1:]  # formed again after the first copy's projection
        else:
            if len(copies) == 1 and large:
                moved = self._take_sparse(objective, it, rows, copies[0], w, lam, L)
                if moved is not None:
                    return moved
            directions = [buffers.block_gradient(size)]
            # (a zero gradient needs no test: the target is then x_k itself, in its set, and the slope 0 below)
            gradient(0, directions[0])
        slope = slope_f = 0.0
        for i, (block, signed) in enumerate(copies):
            if i == len(directions):
                directions.append(gradient(i, np.empty(size)))
            d, x_k = directions[i], x[block.slice]
            grad_k = None if large else d.copy()  # a small block keeps grad_k for the slope (one dot)
            # d = grad here: the target x - grad / L, in place (grad * (-1/L) is -grad * (1/L) to the bit)
            d *= -1.0 / L
            d += x_k
            if block.project_in_place:
                block.project(d, out=d)
            else:
                d[:] = block.project(d)
            d -= x_k
            if grad_k is not None:
                slope += dot(grad_k, d)
            else:
                slope_f = dot(it.g[block.slice], d)  # f's slope along d (f followed along the move below)
                slope += slope_f + signed[2] * dot(w, d)
        if not slope < 0:
            return 0
        dd = sum(dot(d, d) for d in directions)
        pen_quad = lam * signed_sum_norm2(directions, signs, dd)
        if len(copies) == 1 and large:
            # from ||d||^2 where f's Hessian is c I (objective.curvature_block): no pass over d; the same
            # number up to rounding (f's own ||d||^2 is summed in another order), so only on large blocks
            c = objective.curvature_block(x, copies[0][0].slice, directions[0], d_norm2=dd)
        else:
            c = objective.curvature_blocks(x, [(block.slice, d) for (block, _), d in zip(copies, directions)])
        if c is None:
            return 0
        gamma = exact_quadratic_step(slope, float(c) + pen_quad, 1.0)
        if float(c) + pen_quad > 0 and gamma >= 1.0:
            memory["L"], memory["lam"] = (float(c) + pen_quad) / dd, lam
        else:  # a shortened step: L was too small for this direction, measure it again
            memory.clear()
        if gamma <= 0:
            return 0
        for (block, signed), d in zip(copies, directions):
            if large:  # BLAS axpys from d itself: one pass per vector moved (as the sweep's _move_block)
                blas.daxpy(d, x[block.slice], a=gamma)
                blas.daxpy(d, r[lo:hi], a=signed[2] * gamma)
                continue
            d *= gamma
            x[block.slice] += d
            if signed[2] > 0:
                r[lo:hi] += d
            else:
                r[lo:hi] -= d
        # f and its gradient: followed along the move where f's Hessian on the copy is c I (one axpy on
        # the kept gradient instead of averaging the copies and evaluating X - C again; a fresh
        # evaluation every FOLLOW_STEPS moves, compiler/objective.py), else evaluated afresh
        follow = getattr(objective, "follow_step", None)
        if large and len(copies) == 1 and follow is not None and follow(it.g, copies[0][0].slice, directions[0], gamma):
            it.f += gamma * slope_f + 0.5 * gamma * gamma * float(c)
            directions = w = None
            return 1
        directions = w = None  # views of arrays about to be replaced
        it.f, it.g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(x)
        return 1

    def _take_sparse(self, objective, it, rows, copy, w, lam, L):
        """:meth:`_take_tied_copies` for one large copy whose direction is sparse: 1 or 0 as there, or None
        (then the dense path runs).

        Where the set finds the direction ``d = P(x_k - grad_k / L) - x_k`` on
        its support (``Block.project_sparse_step``: an L1 ball, whose
        soft-thresholded points are sparse; on the paper's problem at d = 4000
        the L1 copy holds about 0.2 % nonzeros) in one pass over x_k, g_k and w,
        the step reads and moves only those entries: the slopes, ||d||^2, the
        moves of x_k, r and f's followed gradient. d's entries and the level are
        the dense path's; the dots are summed over the support in another order,
        so the step length and the moves agree with the dense path's to rounding.
        Taken where f's Hessian on the copy is ``c I`` (``objective.block_hessian``:
        no pass over d for the curvature) and f's gradient can be followed.
        """
        block, signed = copy
        sparse = block.project_sparse_step
        if (sparse is None or getattr(objective, "follow_step", None) is None
                or getattr(objective, "block_hessian", None) is None or objective.block_hessian(block.slice) is None):
            return None
        sign = signed[2]
        x_k = it.x[block.slice]
        found = sparse(x_k, it.g[block.slice], w, sign, -1.0 / L)
        if found is None:  # (the set says when to try again: sets/l1.py, SPARSE_RETRY)
            return None
        positions, d, g_p, w_p = found
        slope_f = dot(g_p, d)
        slope = slope_f + sign * dot(w_p, d)
        if not slope < 0:
            return 0
        dd = dot(d, d)
        pen_quad = lam * (sign * sign * dd)  # signed_sum_norm2 of one direction
        c = objective.curvature_block(it.x, block.slice, None, d_norm2=dd)  # (no pass over d: block_hessian)
        gamma = exact_quadratic_step(slope, float(c) + pen_quad, 1.0)
        memory = self.memory
        if float(c) + pen_quad > 0 and gamma >= 1.0:
            memory["L"], memory["lam"] = (float(c) + pen_quad) / dd, lam
        else:
            memory.clear()
        if gamma <= 0:
            return 0
        lo, hi = rows
        x_k[positions] += gamma * d
        r_k = it.r[lo:hi]
        r_k[positions] += (sign * gamma) * d
        if objective.follow_step(it.g, block.slice, d, gamma, indices=positions):
            it.f += gamma * slope_f + 0.5 * gamma * gamma * float(c)
            return 1
        it.f, it.g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(it.x)
        return 1


def _identity_curvature(objective, copy, lam):
    """L_c of one tied copy where f's Hessian on it is ``c I`` (``objective.block_hessian``): ``c + lam sign^2``,
    the curvature of L(., y) along every direction on the copy, so along the gradient too (no pass over it to
    measure it; the first projection step can then find a sparse direction at once). None where unknown."""
    block_hessian = getattr(objective, "block_hessian", None)
    c = block_hessian(copy[0].slice) if block_hessian is not None else None
    if c is None:
        return None
    sign = copy[1][2]
    L = float(c) + lam * (sign * sign)
    return L if L > 0 else None
