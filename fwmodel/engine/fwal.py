"""The FW-AL driver: the iteration of paper eq. fwal on flat NumPy vectors.

Problem (OPT2 of the paper, with a right-hand side b)::

    min_x max_y  L(x, y) = f(x) + <y, Mx - b> + lam/2 ||Mx - b||^2
    s.t.         x = (x^(1), ..., x^(K)),  x^(k) in X_k,

where each X_k is known through its linear minimization oracle (and, where it
is cheap, its Euclidean projection). One iteration of :func:`minimize_fwal`:

1. the gradient of L(., y_t) at x_t;
2. every block's step object proposes a feasible direction (its LMO, or a
   lazy reuse of an active atom), and the proposals' FW gaps sum to the FW
   gap of L(., y_t) (:mod:`fwmodel.engine.steps`: FW, Alg. 2; away steps,
   Alg. 1; pairwise; BPCG; per-group and per-coordinate steps; BlockFW
   rank-k steps, :mod:`fwmodel.engine.rank_k`);
3. stopping (:mod:`fwmodel.engine.stopping`), the infeasibility certificate
   (:mod:`fwmodel.engine.certificates`) and the bookkeeping
   (:mod:`fwmodel.engine.progress`);
4. each block's step size by a line search on L(., y_t) restricted to it,
   the blocks one after another (Gauss-Seidel) or together (Jacobi)
   (:mod:`fwmodel.engine.block_search`), and each step object commits;
5. corrective primal steps within the sets, still on L(., y_t): projected-
   gradient steps on blocks with a cheap projection
   (:mod:`fwmodel.engine.projection_step`) and in-face steps on low-rank
   blocks (:mod:`fwmodel.engine.inface`);
6. the dual step y_{t+1} = y_t + eta_t (M x_{t+1} - b) (eq. fwal;
   :mod:`fwmodel.engine.schedules`), after repeated drop steps in Alg. 1.

Two step interfaces. A *block step* (one per block) has
``propose(x_k, g_k, ctx) -> Proposal`` and ``commit(proposal, gamma)``; a
proposal without a direction (``d`` None) only reports the block's FW gap
(a block moved by a corrective step). A *corrective step* has ``kind`` (its
label in the step counts), ``blocks`` (the blocks it moves now) and
``take(lagrangian, iterate) -> number of moves``, which moves x and r in
place and refreshes f and its gradient.

Around the loop: option checks (:mod:`fwmodel.engine.options`), the first
iterate and warm starts (:mod:`fwmodel.engine.warm_start`), the result and
its repair after a KeyboardInterrupt (:mod:`fwmodel.engine.finish`).

This module knows nothing of the modeling language: it takes an objective
with ``value_and_grad``, a list of :class:`Block` and the operator M.
"""
from __future__ import annotations

import math
import re
import time
from typing import Optional

import numpy as np
from scipy.linalg import blas

from .block_search import (LARGE_BLOCK, BlockColumns, BlockLagrangianGradient, gauss_seidel_sweep, jacobi_step,
                           signed_block_gradient)
from .certificates import (InfeasibilityCheck, infeasibility_bound, lower_digits, refuse_maximizing_lmo,
                           refuse_missed_lmo)
from .finish import INTERRUPT_MESSAGE, MAX_FINISH_ATTEMPTS, finish
from .hull_rows import reduced_by_hulls
from .inface import InFaceStep, inface_blocks
from .lagrangian import AugmentedLagrangian, Block, IterationState, Iterate, _Operator  # noqa: F401 (re-exported)
from .line_search import Backtracking
from .face_step import FaceStep
from .options import PROJECTION_CHOICES, check_choice, check_options
from .row_metric import RowMetric
from .progress import Progress
from .projection_choice import AutoProjection, nearly_linear, polytope_may_project
from .projection_step import ProjectedBlock, ProjectionStep, initial_projection_blocks
from .result import FWALResult, SolverState  # noqa: F401 (the result types of minimize_fwal)
from .schedules import make_dual_schedule, default_penalty
from .steps import LAZY_CHECK_EVERY, DeferredProposal, make_step, takes_rank_k_steps
from .stopping import (LmoCheck, StoppingRule, certifies, gap_at_rounding, lowest_gap, objective_gap, reference_point,
                       REL_FACTOR, sets_width,
                       row_norm_equilibration, suboptimality_bound)
from .._shared_setting import in_own_context
from .pages import with_plain_pages
from .threads import with_blas_threads
from .vector_ops import dot, norm
from .warm_start import data_changed, in_new_units, initial_point, interior_start


@in_own_context
@with_plain_pages
@with_blas_threads
def minimize_fwal(
    objective,
    blocks,
    M=None,
    b=None,
    *,
    max_iter=10000,
    tol=1e-4,
    feas_tol=1e-4,
    time_limit=None,
    lam=None,
    eta=None,
    step="auto",
    line_search="auto",
    verbose=False,
    print_every=None,
    callback=None,
    warm_state: Optional[SolverState] = None,
    seed=None,
    infeasibility_check_every=25,
    max_drop_steps=None,
    inface="auto",
    projection="auto",
    sweep="gauss-seidel",
    rank_k="auto",
    face_step="auto",
    **unknown,
):
    """Minimize f over the blocks subject to Mx = b with FW-AL.

    Parameters
    ----------
    objective : object with ``value(x)``, ``value_and_grad(x)``, and optionally
        ``curvature(x, d)`` (d' Hf d, or None) and ``is_quadratic``.
    blocks : list of :class:`Block` covering x contiguously.
    M, b : the consistency constraint Mx = b (scipy.sparse, dense, or an
        object with matvec/rmatvec); None for no constraint.
    tol, feas_tol : stop ("optimal") at the first iterate with
        FW gap of L(., y) <= tol * objective_scale,
        |<y + lam r, r>| <= tol * min(objective_scale, max(|f|, objective_scale / 100))
        (the objective error an infeasible point can hide) and
        ||Mx - b|| <= feas_tol * feasibility_scale, scales measured on
        the problem itself (:mod:`fwmodel.engine.stopping`): the FW gap of f
        at the cold starting point (the objective's range from there) and
        the largest norm of b, the points and the vertices seen. Scaling the
        objective, the data or the variables by any factor scales both sides
        alike, so ``tol`` is a relative accuracy at every scale; both scales
        are returned in the result.
    lam, eta : penalty and dual step (numbers, or None for the adaptive
        defaults of :mod:`fwmodel.engine.schedules`; eta may also be a
        callable t -> eta_t or one of "theorem2", "theorem3", "adaptive").
    step : "auto" (BPCG with a lazy LMO on polytope blocks with an active
        set, per-group pairwise steps on products of simplices, per-coordinate
        FW steps on boxes, FW elsewhere), "fw", "away" (Alg. 1 on polytope
        blocks), or "pairwise" (also per group on products of simplices);
        see :func:`fwmodel.engine.steps.make_step`.
    line_search : "auto" (exact for quadratic f, backtracking otherwise),
        "exact", or "backtracking".

    inface : "auto" (in-face corrective steps on trace-norm blocks of at most
        ``AUTO_INFACE_MAX_DIM`` rows or columns that do not take projection
        steps; see :mod:`fwmodel.engine.inface`), True (on every block that
        declares a low-rank face and takes FW steps) or False.
    sweep : "gauss-seidel" (the blocks move one after another, each from the
        point the previous ones left, with a fresh gradient) or "jacobi" (all
        blocks from the same point, each with its own step size, the combined
        move scaled by one line search); see :mod:`fwmodel.engine.block_search`
        and benchmarks/RESULTS.md ("Block sweeps") for the measurement behind
        the default.
    projection : True: blocks with a cheap Euclidean projection (``Block.project``
        with ``cheap_projection``: L1, L2 balls, boxes) take projected-gradient
        steps instead of FW steps (see :mod:`fwmodel.engine.projection_step`); False: never;
        "auto": the cheap ones from the start and, after a few FW iterations,
        the blocks whose projection costs at most a few iterations, measured
        (not a trace-norm or PSD ball on which a linear objective is flat
        along a face);
        on a model made only of polytopes, none, except L1 balls (and capped
        simplices; Birkhoff polytopes by measured cost) read by a curved objective, curvature measured (a quadratic
        nearly linear over the sets keeps vertex steps), with or without rows
        (see :mod:`fwmodel.engine.projection_choice`). A step kind named by
        ``step`` (not "auto") turns "auto" into False: the named step is taken
        on every block.
    rank_k : True: blocks with a low-rank face (trace-norm balls) that do not
        take projection steps take BlockFW rank-k steps instead of FW steps
        (:mod:`fwmodel.engine.rank_k`; no in-face steps on them); "auto" (the
        default): those of at least ``rank_k.AUTO_MIN_DIM`` rows and columns,
        with k capped by its cost, counted in operations (never timed); False: FW steps (measured in
        benchmarks/RESULTS.md, "Rank-k steps" and "The Fig. 2 race").
    threads : BLAS threads during the solve (a positive integer, default 1,
        or None to leave the BLAS as configured); see :mod:`fwmodel.engine.threads`.

    A KeyboardInterrupt ends the solve with status "interrupted" and a
    consistent result: x in its sets, ``objective`` = f(x), the active sets
    rebuilt to describe x (see :mod:`fwmodel.engine.finish`).

    Returns an :class:`FWALResult`.
    """
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, sorted(unknown)))} of minimize_fwal")
    check_choice("face_step", face_step, PROJECTION_CHOICES)
    check_options(max_iter, tol, feas_tol, time_limit, lam, eta, verbose, print_every, callback, seed,
                  infeasibility_check_every, max_drop_steps, step, line_search, inface, projection, sweep,
                  rank_k)
    start = time.perf_counter()
    n = sum(blk.size for blk in blocks)
    Mop = _Operator(M, n)
    m = Mop.shape[0]
    # reshape, not ravel: a broadcast right-hand side of zeros (no memory) stays a view
    b = np.zeros(m) if b is None else np.asarray(b, dtype=float).reshape(-1)
    if b.shape != (m,):
        raise ValueError(f"b has shape {b.shape}, expected ({m},) to match the rows of M")
    M_given, b_given = M, b  # the rows as the model wrote them (an "infeasible" message's bound is in these)
    # rows nearly parallel to a set's own sums kept as their part off them: the same constraint on the
    # sets, in its own units (engine/hull_rows.py)
    M_reduced, b = reduced_by_hulls(M, b, blocks)
    if M_reduced is not M:
        M, Mop = M_reduced, _Operator(M_reduced, n)
    b_norm = float(norm(b))
    # a step kind asked for by name is taken on every block: "auto" then switches none to projections
    if step != "auto" and projection == "auto":
        projection = False
    # polytope blocks keep vertex steps for a linear objective, and for one measured nearly linear over
    # the sets (a quadratic of tiny or zero weight: projection_choice.nearly_linear)
    linear = bool(getattr(objective, "is_linear", False))
    keep_vertex = linear or (projection == "auto" and _nearly_linear_on_polytopes(objective, blocks, n))
    # on polytope models, an L1 block projects only where the objective reads it as its variable's only
    # copy (projection_choice.candidates): not a ball of D x, not one of two tied copies
    read_alone = _read_alone(objective, blocks)
    proj_blocks = initial_projection_blocks(blocks, projection, rows=m, keep_vertex_steps=keep_vertex,
                                            read_alone=read_alone)
    auto_projection = (AutoProjection(blocks, projected=proj_blocks, rows=m, keep_vertex_steps=keep_vertex,
                                      read_alone=read_alone,
                                      linear_gradient=_variable_gradient(objective) if linear else None)
                       if projection == "auto" else None)
    warm_choice = warm_state.active_sets.get(("projection",)) if warm_state is not None else None
    if auto_projection is not None and warm_choice is not None:
        proj_blocks, auto_projection = list(warm_choice), None  # the last solve's choice
    buffers = _Buffers()  # the gradient of L(., y), y + lam r and the directions, reused by every iteration
    lagrangian = AugmentedLagrangian(objective, blocks, Mop, b, buffers)
    if line_search == "auto":
        line_search = "exact" if lagrangian.quadratic else "backtracking"
    # seed=None is a fixed seed: the same model solves the same way every time
    # (the default penalty may draw a random direction; its draw changed the
    # iteration count of one LP from 44 to 3234 between runs)
    rng = np.random.default_rng(0 if seed is None else seed)

    # ---- the first iterate, its stopping scales, the penalty and the dual schedule
    # blocks moved by rank-k steps take no in-face steps: they keep no face set (a warm start then keeps
    # their point instead of restarting a face it did not save)
    face_blocks = [k for k in inface_blocks(blocks, inface, proj_blocks) if not takes_rank_k_steps(blocks[k], rank_k)]
    x, y, active, faces = initial_point(blocks, n, m, warm_state, step, proj_blocks, face_blocks)
    r = Mop.matvec(x)
    r -= b
    # the objective's gradient kept once for tied copies where it offers that (compiler/objective.py)
    loop_value_and_grad = getattr(objective, "value_and_grad_shared", objective.value_and_grad)
    f, g = loop_value_and_grad(x)
    cold = warm_state is None  # the scales of the stopping rule: at the cold starting point (stopping.py)
    if cold and not _is_finite(Iterate(x, None, r, f, g, 0.0)) and interior_start(blocks, x, active, faces, g):
        # -log(z) on a box 0 <= z <= 1: infinite at the starting vertex; start inside the sets instead
        r = Mop.matvec(x)
        r -= b
        f, g = loop_value_and_grad(x)
    # a cold start begins at the reference point: its gradient, M x (= r + b) and the
    # LMOs there serve both the stopping scales and the default penalty (the penalty's
    # direction is formed in the LMOs' vertex array)
    setup = {} if cold else None
    x_ref, g_ref = (x, g) if cold else (reference_point(blocks, n), None)

    def measured(Mop, b, r):
        """||b||, M x_ref and the stopping rule's scales for the rows ``Mop`` (one LMO call per block)."""
        b_norm = float(norm(b))
        Mx_ref = (r if b_norm == 0 else r + b) if cold else None
        return b_norm, Mx_ref, StoppingRule.from_reference(tol, feas_tol, objective, blocks, Mop, b, x_ref, g_ref,
                                                           Mx_ref=Mx_ref, keep=setup, f_ref=f if cold else None)

    # The rows the solve works on, each change given back in the model's units at the end: every
    # constraint's row at unit norm (stopping.row_norm_equilibration); pieces still in units far from the
    # others' rescaled to theirs (RowPieces.equilibration, from the stopping rule's scales); then rows that
    # overlap (a chain of differences) replaced by orthonormal ones (engine/row_metric.py).
    M_original, row_factors, metric = M, None, None
    b_original = np.asarray(M_original.b, dtype=float).reshape(-1) if hasattr(M, "b") else b
    row_norms, by_row = row_norm_equilibration(M, n, blocks)
    if y is not None and row_norms is not None:
        _carry_multipliers(y, warm_state, row_norms)
    if by_row is not None and hasattr(M, "with_row_factors"):
        M = M.with_row_factors(by_row)
        row_factors = _RowFactors(by_row, M_original, b_original).applied_to(r, y)
        Mop, b = _Operator(M, n), np.asarray(M.b, dtype=float).reshape(-1)
    b_norm, Mx_ref, stopping = measured(Mop, b, r)
    by_piece = _row_equilibration(stopping, M)
    if by_piece is not None:
        M = M.with_piece_factors(by_piece)
        step_factors = _RowFactors(np.repeat(by_piece, np.diff(M.offsets)), M_original, b_original).applied_to(r, y)
        row_factors = step_factors if row_factors is None else row_factors.times(step_factors)
        Mop, b = _Operator(M, n), np.asarray(M.b, dtype=float).reshape(-1)
        b_norm, Mx_ref, stopping = measured(Mop, b, r)
    made = RowMetric.of(M)
    if made is not None:
        metric, M = made
        Mop, b = _Operator(M, n), metric.b_after
        r = Mop.matvec(x)
        r -= b
        if y is not None:
            y = metric.to_solve_rows(y)
        b_norm, Mx_ref, stopping = measured(Mop, b, r)
    if M is not M_original:
        lagrangian = AugmentedLagrangian(objective, blocks, Mop, b, buffers)
    x_ref = g_ref = measured = None  # (not kept by the loop)
    if warm_state is not None:  # test (1b)'s factor: at most the looseness the last solve measured (stopping.py)
        stopping.prior_looseness = getattr(warm_state, "looseness", None) or REL_FACTOR
    # the units of this solve's duals (kept in its warm-start state): the objective scale and the cold
    # start's penalty; a warm start after a data change carries its duals to them from the last solve's,
    # or restarts them where those were far apart (warm_start.in_new_units)
    lam_0 = None
    if lam is None and (cold or data_changed(warm_state)):
        lam_0 = default_penalty(
            objective, blocks, Mop, x, g, rng,
            fallback=_fallback_penalty(stopping.objective_scale, stopping.feasibility_scale),
            vertex=(setup["s_ref"], setup["Ms_ref"], Mx_ref), slope=stopping.objective_scale) if cold \
            else _cold_penalty(objective, blocks, Mop, b, n, rng, stopping)
    reference_scales = (stopping.objective_scale, lam_0)
    if warm_state is not None:
        if lam_0 is None:  # the same data (or lam given): the last solve's units
            reference_scales = getattr(warm_state, "reference_scales", None)
        warm_state, y_factor = in_new_units(warm_state, reference_scales or (None, None))
        if y_factor == 0.0:
            y.fill(0.0)
        elif y_factor != 1.0:
            y *= y_factor
    if lam is None:
        lam = warm_state.lam if warm_state is not None and warm_state.lam is not None else lam_0
    spare = setup or {}  # the setup's vertex arrays, free now (reused below: _spare_arrays)
    setup = Mx_ref = None
    if y is None:  # y = 0, made after the setup
        y = _spare_arrays(spare, "Ms_ref", m)
        if y is None:
            y = np.zeros(m)
        else:
            y.fill(0.0)
    it = Iterate(x, y, r, f, g, float(lam))
    schedule = make_dual_schedule(eta, it.lam, warm_state)
    # feasibility's target relative to the FW gap's (feas_tol / tol): the penalty's balance rule compares
    # the two tests in the same units, not against targets the caller set apart (AdaptiveMultiplier._balance)
    feas_units = stopping.feas_tol / stopping.tol if stopping.tol > 0 else 1.0
    # ---- one step object per block, and the corrective steps
    cols = BlockColumns(M, Mop, blocks)
    if BlockLagrangianGradient.applies(cols) and any(blk.size == n - m for blk in blocks):
        # the loop's dual term (m entries) and its per-block gradient array (n - m, the size of a block)
        # fill the setup's vertex array exactly: they take it instead of fresh memory
        buffers.take_spare(_spare_arrays(spare, "s_ref", n), m)
    spare = None
    steps = [ProjectedBlock(blk) if k in proj_blocks
             else make_step(blk, step, active.get(k), lambda k=k: cols.norms2(k), coupled=m > 0, rank_k=rank_k)
             for k, blk in enumerate(blocks)]
    # the steps write their directions into the buffers' arrays; a Gauss-Seidel sweep forms them at each block's turn
    ctx = _StepContext(it.lam, buffers, lazy_directions=sweep == "gauss-seidel")
    ctx.space_size = n
    # the blocks whose steps read ||x_k||^2 at their proposal (``reads_point_norm2``): the driver's
    # ||x|| is then summed from the blocks' (_point_norm)
    point_norms = any(getattr(st, "reads_point_norm2", False) for st in steps) and len(blocks) > 1
    ctx.block_curvature, ctx.block_hessian = _block_curvature(objective, it)
    # the active sets are the step objects' own (a warm-started set that no step uses is let go)
    active = {k: st.active for k, st in enumerate(steps) if getattr(st, "active", None) is not None}
    if warm_choice is not None and auto_projection is None and projection == "auto":
        active[("projection",)] = tuple(proj_blocks)  # still "auto"'s choice for the next warm start
    projections, infaces = ProjectionStep(blocks, proj_blocks, cols), InFaceStep(blocks, faces)
    projections.fallback_curvature = lambda: _fallback_penalty(stopping.objective_scale, stopping.feasibility_scale)
    # every block projects from the start (or as the last solve chose): the multiplier step may follow
    _multiplier_step_of_projections(projections, lagrangian, schedule)
    correctives = (projections, infaces)
    # the step on the free coordinates of the current face (engine/face_step.py), after the other correctives
    faces_step = FaceStep(blocks, steps, face_step) if face_step is not False else None
    backtracking = Backtracking(warm_state.lipschitz if warm_state is not None else None)
    certificate = InfeasibilityCheck(blocks, Mop, b, infeasibility_check_every, copies_only=cols.all_signed)
    lmo_check = LmoCheck.of(blocks)  # None where every LMO is exact
    progress = Progress(start, n, m, blocks, verbose, print_every, callback,
                        [c.kind for c in correctives if c.blocks]
                        + (["rank_k"] if any(getattr(st, "replaces_inface", False) for st in steps) else []),
                        objective_sign=getattr(objective, "sign", 1.0))  # (-1: a compiled Maximize)
    progress.printer.header(step=step, line_search=line_search, lam=it.lam, stopping=stopping)
    step_counts = progress.step_counts
    # Alg. 1 repeats drop steps before the dual step (pairwise and BPCG steps do not)
    repeat_drops = step not in ("pairwise", "auto")
    drops_in_row = 0
    max_drops = max_drop_steps if max_drop_steps is not None else 10 * len(blocks) + 10
    # certified: the last gap may serve as a certificate (every block's measured, none below zero)
    status, message, gap, certified, t = "max_iter", "", np.inf, False, 0
    r_norm = None  # ||r|| when measured since r last moved (the dual step's is the next iteration's)

    try:
        for t in range(max_iter + 1):
            if not _is_finite(it):
                status, message = "diverged", "the objective or its gradient is not finite"
                certified = False  # the last gap was measured at an earlier point
                break
            if auto_projection is not None and auto_projection.due(t):
                # the point to time is made in the per-block gradient array (free before the sweep)
                chosen = auto_projection.choose(it.x, it.g, buffers.block_gradient, lagrangian.curvature)
                _switch_to_projections(chosen, projections, infaces, steps, active, step_counts)
                _multiplier_step_of_projections(projections, lagrangian, schedule)
            # ---- gradient of the augmented Lagrangian (paper OPT2), into reused buffers
            dual_term = buffers.dual_term(it.r, it.y, it.lam)
            grad = buffers.lagrangian_grad(Mop, it.g, dual_term, cols)
            # ---- every block proposes a step (its LMO, unless a lazy step reuses an
            # active atom); their FW gaps sum to the FW gap of L(., y)
            ctx.start_iteration(t, it.lam, stopping.gap_target() / len(blocks), last=t == max_iter)
            # ||x|| for the stopping scales: one pass over x, block by block where a step reads its
            # block's ||x_k||^2 (the same number as its own dot: passed on, not computed twice)
            x_norm = _point_norm(it.x, blocks, ctx, point_norms)
            proposals, gap, gap_known, block_gaps = _propose(steps, blocks, it.x, grad, ctx,
                                                             defer=sweep == "gauss-seidel")
            ctx.point_norms2 = None  # valid at this x only
            certified = certifies(gap_known, lowest_gap(block_gaps), stopping.objective_scale)
            if not certified:  # a gap below zero beyond rounding: an LMO that does not minimize is an error
                refuse_missed_lmo(blocks, block_gaps, it.x, lambda k: _own_block_gradient(grad, blocks, k),
                                  stopping.objective_scale, stopping.feasibility_scale)
            # ---- measurements, bookkeeping and stopping
            feas = float(norm(it.r)) if r_norm is None else r_norm
            feas_rel = feas / max(1.0, x_norm, b_norm)  # the documented stats value, not the stopping scale
            stopping.observe_point(x_norm, it.x)
            stopping.observe_residual(it.r)
            stopping.observe_value(it.f, feas)
            # the worst piece of rows against its own test (stopping.RowPieces): the dual schedule aims at it
            feas_target = stopping.feasibility_target() / stopping.pieces_excess(feas)
            # <y + lam r, r>: how far infeasibility can move f from f* (stopping.py, test (2))
            dual_residual = dot(dual_term, it.r) if m else 0.0
            gap_f = None  # the FW gap of f alone, needed only while the objective scale is unknown
            if stopping.needs_objective_scale:  # rare: f's FW gap was 0 at the reference point
                # at rounding level against f's change across the points seen (||grad f|| S_x): f is at its
                # minimum over the sets, not a scale (a gap of 6e-20 at X = 0 became S_f, and the dual
                # test against it never held: max_iter at the exact optimum)
                gap_f = gap_at_rounding(objective_gap(blocks, it.x, it.g), blocks, it.g, stopping.feasibility_scale)
                stopping.observe_objective_gap(gap_f)
            if lmo_check is None:  # the best certified lower bound on f* (test (1b)); checked gaps below
                stopping.observe_bound(it.f, suboptimality_bound(gap, dual_residual, certified))
            checked = False  # the gap of blocks with an inexact LMO re-measured at this iterate (stopping.LmoCheck)
            if lmo_check is not None and gap_known and (
                    t == max_iter or stopping.met(gap, feas, gap_f, dual_residual)):
                gap, certified = _checked_gap(lmo_check, blocks, it.x, grad, gap, block_gaps, stopping,
                                              (feas, gap_f, dual_residual))
                checked = True
                stopping.observe_bound(it.f, suboptimality_bound(gap, dual_residual, certified))
            elif lmo_check is not None:
                certified = False  # an unchecked gap of an inexact LMO certifies nothing
            if gap_known and stopping.floor_skips and stopping.met(gap, feas, gap_f, dual_residual):
                # (1b)'s "f* ~ 0" judged where the solve is too, not only against S_f taken at the cold start
                # (stopping.py): one LMO per block on -grad f, only where the skip would end the solve
                stopping.observe_width(sets_width(blocks, it.x, it.g))
            elapsed, eta_now = progress.elapsed(), schedule.current
            # an unchecked gap of an inexact LMO may understate: such an iterate does not compete for
            # the best point (its merit would beat checked ones on a gap that is not true)
            merit = stopping.merit(gap, feas, gap_f, dual_residual) if lmo_check is None or checked else math.inf
            progress.record(t, elapsed, it, gap, feas, feas_rel, eta_now, stopping, merit,
                            suboptimality_bound(gap, dual_residual, certified))
            status, message = _stop_reason(t, gap, gap_known, feas, feas_rel, gap_f, dual_residual, elapsed, eta_now,
                                           it, stopping, progress, certificate, max_iter, time_limit, feas_target)
            if status is not None:
                if lmo_check is not None and gap_known and not checked and status != "diverged":  # time limit, callback
                    gap, certified = _checked_gap(lmo_check, blocks, it.x, grad, gap, block_gaps, stopping,
                                                  (feas, gap_f, dual_residual))
                if status == "optimal":  # a user LMO that maximizes can give a gap of 0: one call along -g each
                    refuse_maximizing_lmo(blocks, lambda k: _own_block_gradient(grad, blocks, k))
                break
            if faces_step is not None and faces_step.blocks:
                faces_step.observe(it, merit)
            # ---- step sizes per block (line search on L(., y) restricted to each block); x and r move,
            # f and its gradient follow them where f is quadratic (else it.g is None: evaluated below)
            # a projection step follows on tied copies: the sweep keeps y + lam r current for it (one axpy)
            moved, proposals = _move_blocks(sweep, proposals, steps, lagrangian, it, grad, dual_term, cols,
                                            line_search, backtracking, ctx, keep_dual_term=bool(projections.blocks))
            buffers.dual_kept = ctx.dual_term_kept
            drop = _commit(proposals, moved, steps, infaces, step_counts)
            # release this step's full-size temporaries before the next gradient
            # (at d = 4000 each product-space vector is 256 MB); r moved: its norm is unknown
            grad = dual_term = proposals = r_norm = None
            if it.g is None:
                it.f, it.g = loop_value_and_grad(it.x)
            # ---- corrective steps within the sets, still on L(., y_t)
            for corrective in correctives:
                if corrective.blocks:
                    step_counts[corrective.kind] += corrective.take(lagrangian, it)
                    buffers.dual_kept = False  # r may have moved
            if faces_step is not None and faces_step.blocks and faces_step.take(lagrangian, it):
                step_counts["face"] = step_counts.get("face", 0) + 1
            buffers.dual_kept = False  # y moves next (and the face step may have moved r)
            # ---- dual step (eq. fwal); Alg. 1 repeats drop steps before it
            if drop and repeat_drops and drops_in_row < max_drops:
                drops_in_row += 1
                continue
            drops_in_row = 0
            if m:
                r_norm = float(norm(it.r))
                eta_t = schedule.step(t, feas=r_norm, lam=it.lam, gap=gap,
                                      gap_target=stopping.gap_target(), feas_target=feas_target,
                                      dual_residual=dual_residual, dual_target=stopping.tol * stopping.accuracy_scale,
                                      y=it.y, r=it.r, feas_units=feas_units)
                buffers.add_scaled(it.y, eta_t, it.r)
                new_lam = schedule.penalty(it.lam)
                if new_lam != it.lam:
                    it.lam = new_lam
                    backtracking.lipschitz = None
    except KeyboardInterrupt:
        status, message = "interrupted", INTERRUPT_MESSAGE

    # ---- the returned point, its value and the warm-start state. After an
    # interrupt everything is rebuilt from x (finish.py). Another interrupt while
    # this runs restarts it: it only reads the loop's variables, so the answer is
    # the same. A third one in a row is let through: whoever presses Ctrl-C that
    # often wants out.
    grad = dual_term = proposals = buffers = lagrangian.buffers = ctx.directions = None  # not needed for the result
    for attempt in range(MAX_FINISH_ATTEMPTS):
        try:
            result = finish(status, message, lagrangian, stopping, it, gap, certified, t, active, infaces.faces,
                            progress, schedule, backtracking)
            if metric is not None:
                result = metric.unscale(result)
            if row_factors is not None:
                result = row_factors.unscale(result)
            if result.status == "infeasible" and M is not M_given:
                result["message"] = _bound_in_model_rows(result.message, blocks, M_given, b_given, result.x,
                                                         result.get("row_multipliers", result.y), n)
            result.state.row_norms = row_norms
            result.state.reference_scales = reference_scales
            result.state.looseness = stopping.looseness
            return result
        except KeyboardInterrupt:
            if attempt == MAX_FINISH_ATTEMPTS - 1:
                raise
            status, message = "interrupted", INTERRUPT_MESSAGE


def _bound_in_model_rows(message, blocks, M, b, x, multipliers, n):
    """An "infeasible" message with its certified bound on ||Mx - b|| restated in the rows as the model wrote
    them. The certificate ran on the solve's rows (each constraint's rows at unit norm, a row nearly parallel
    to a set's sums as its part off them, ...), where the same distance reads in other units: 22 for a row
    1e-2 beyond a simplex's reach, nearly parallel to its sum. The bound is taken again along the model's
    residual at the returned point and along the rows' multipliers in the model's rows (which grow along
    the infeasible direction; where copies are tied the residual mixes the ties in), one LMO call per block
    and direction, any direction giving a valid bound; where neither proves anything, the message says in
    which rows its number is."""
    Mop = _Operator(M, n)
    r = Mop.matvec(x) - b
    candidates = (r,) if multipliers is None else (r, np.asarray(multipliers, dtype=float))
    bound = infeasibility_bound(blocks, Mop, b, candidates)
    if bound > 0:
        return re.sub(r"\|\|Mx - b\|\| >= \S+", f"||Mx - b|| >= {lower_digits(bound)}", message, count=1)
    return message.replace("everywhere", "everywhere in the solve's rows (each constraint's rows at unit norm, a row "
                                         "nearly parallel to a set's sums as its part off them)", 1)


class _RowFactors:
    """The factors by which the solve multiplies the rows of M, one per row (``by_row``)."""

    def __init__(self, by_row, M_original, b_original):
        self.by_row = by_row
        self.M_original, self.b_original = M_original, b_original

    def applied_to(self, r, y):
        """These factors applied to the residual and the multipliers in place (``D r``, ``D^{-1} y``); returns self."""
        r *= self.by_row
        if y is not None:
            y /= self.by_row
        return self

    def times(self, other):
        """This rescaling followed by ``other`` (its factors on the same rows, already rescaled by these)."""
        return _RowFactors(self.by_row * other.by_row, self.M_original, self.b_original)

    def unscale(self, result):
        """The result in the model's own rows: y times the factors (``<y, D (Mx - b)> = <D y, Mx - b>``)
        and the residual's norm recomputed (the warm-start state shares y: it keeps these units too)."""
        r = self.M_original.matvec(result.x) - self.b_original
        # the rows' multipliers y + lam (M x - b) of the solve's rows, D (y + lam D r), in the model's rows
        result["row_multipliers"] = self.by_row * (result.y + result.lam * (self.by_row * r))
        result.y *= self.by_row
        feasibility = float(norm(r))
        result["feasibility"] = feasibility
        result["feasibility_rel"] = feasibility / max(1.0, float(norm(result.x)), float(norm(self.b_original)))
        return result


def _carry_multipliers(y, warm_state, row_norms):
    """A warm start's y (in the model's rows of the last solve) carried to the rows as they are now.

    A Parameter that multiplies a constraint's rows by c (``P * (x0 + x1) == P * 0.5``, P from 1e-6 to
    1e6) divides their multipliers by c: y kept in the old rows' units started the solve 10^12 off and
    ran it to max_iter, where a cold solve took ~50 iterations. The multiplier of the row brought to
    unit norm, ``y_i * rho_i`` (rho_i the row's unit: its norm, over the factor by which the rows were
    raised to the ties' width, ``stopping.row_norm_equilibration``), does not depend on c: y is carried as
    that, ``y_i <- y_i rho_old / rho_new``, row by row (rows whose unit was or is 0 keep theirs).
    """
    old = getattr(warm_state, "row_norms", None)
    if old is None or old.shape != row_norms.shape:
        return
    moved = (old > 0) & (row_norms > 0) & (old != row_norms)
    if np.any(moved):
        y[moved] *= old[moved] / row_norms[moved]


def _row_equilibration(stopping, M):
    """The factors per piece of the compiler's operator by ``RowPieces.equilibration``, or None where it moves none."""
    pieces = stopping.row_pieces
    if pieces is None or not hasattr(M, "with_piece_factors"):
        return None
    return pieces.equilibration(M.pieces)


def _is_finite(it):
    """f(x) finite and its gradient finite (on a sample of at most ~1000 entries: the test runs every iteration)."""
    g = it.g
    # the objective's gradient kept once for tied copies (compiler/objective.py) holds every
    # entry in ``values``: sampled there, the full vector is not formed
    values = getattr(g, "values", None)
    sample = values if isinstance(values, np.ndarray) else g
    n = sample.size
    if not math.isfinite(it.f):
        return False
    return bool(np.isfinite(sample if n <= 1000 else sample[:: n // 1000]).all())


def _stop_reason(t, gap, gap_known, feas, feas_rel, gap_f, dual_residual, elapsed, eta, it, stopping, progress,
                 certificate, max_iter, time_limit, feas_target):
    """(status, message) when the solve ends at iteration t, else (None, "").

    "optimal" needs a measured FW gap (``gap_known``: no lazy step skipped
    its LMO) below tolerance, the multiplier test ``dual_residual`` =
    <y + lam r, r> and feasibility below tolerance (:mod:`fwmodel.engine.stopping`), and no proof
    from the LMOs that the sets miss the rows (``certificate.at_optimal``: rows in units far apart); the callback
    may stop the solve; then the iteration and time limits; last the
    infeasibility certificate (:mod:`fwmodel.engine.certificates`).
    """
    if not np.isfinite(gap):
        return "diverged", "the Frank-Wolfe gap is not finite"
    if gap_known and stopping.met(gap, feas, gap_f, dual_residual):
        infeasible = certificate.at_optimal(it.r, it.y, stopping.feasibility_scale)
        if infeasible is not None:
            return "infeasible", infeasible
        return "optimal", "FW gap and feasibility below tolerance"
    if progress.callback_stops(t, elapsed, it, gap, feas, feas_rel, eta):
        return "interrupted", "the callback returned False"
    if t == max_iter:
        return "max_iter", f"reached max_iter={max_iter}"
    if time_limit is not None and elapsed > time_limit:
        return "time_limit", f"reached time_limit={time_limit} s"
    infeasible = certificate.message(t, feas, feas_target, it.r, it.y, proof_target=stopping.proof_target(),
                                     scale=stopping.feasibility_scale)
    if infeasible is not None:
        return "infeasible", infeasible
    return None, ""


def _checked_gap(lmo_check, blocks, x, grad, gap, block_gaps, stopping, tests):
    """The FW gap with the blocks of inexact LMOs re-measured (:class:`~fwmodel.engine.stopping.LmoCheck`),
    and whether it certifies; where it no longer meets the stopping rule, the LMOs that missed run at the
    trusted tolerance from now on. ``tests``: (feas, gap_f, dual_residual) of :meth:`StoppingRule.met`."""
    gap, block_gaps, missed = lmo_check.checked_gap(x, lambda k: _own_block_gradient(grad, blocks, k), gap,
                                                    block_gaps, stopping.objective_scale)
    if missed and not stopping.met(gap, *tests):
        lmo_check.tighten(missed)
    return gap, certifies(True, lowest_gap(block_gaps), stopping.objective_scale)


def _own_block_gradient(grad, blocks, k):
    """Block k's slice of the gradient of L(., y), formed afresh where that gradient is formed per block
    (its shared buffer may hold another block's slice, or a proposal's work, by now: a rank-k step's
    Y = X - G / L is written over G).

    A large block's (``LARGE_BLOCK`` entries) is written into that shared buffer, marked as no block's
    (``block_buffer``: the next read of a slice forms it again): it is read between the proposals and
    the sweep, when no direction lives there yet (the lazy ones are formed at the sweep's turn). At
    d = 4000 a fresh array here cost the page faults of 128 MB at every check of the trace-norm LMO
    (stopping.LmoCheck), 0.1-0.3 s; the numbers are the same.
    """
    blk = blocks[k]
    if isinstance(grad, BlockLagrangianGradient):
        out = grad.block_buffer(blk.size) if blk.size >= LARGE_BLOCK else np.empty(blk.size)
        return signed_block_gradient(grad.g[blk.slice], grad.dual_term, grad.signed[k], out)
    return grad[blk.slice]


def _variable_gradient(objective):
    """(block slice, g) -> the objective's gradient on the block in its variable's units, for a block that
    is a whole copy of one variable: g times each entry's copy count (a variable is the average of its
    copies, so f's gradient splits among them); None for another block or an objective that does not say."""
    copy_map = getattr(objective, "copy_map", None)
    if copy_map is None:
        return lambda block_slice, g: None

    def gradient(block_slice, g):
        for var in copy_map.variables:
            for entries, sl in copy_map.copies[var.id]:
                if entries is None and (sl.start, sl.stop) == (block_slice.start, block_slice.stop):
                    off = copy_map.var_layout[var.id][0]
                    return g[block_slice] * copy_map.counts[off:off + var.size]
        return None
    return gradient


def _nearly_linear_on_polytopes(objective, blocks, n):
    """projection="auto" on a product of polytopes: whether the objective, not linear by structure, is
    measured nearly linear at the cold starting point (:func:`projection_choice.nearly_linear`); it then
    keeps the vertex steps of a linear objective. Measured only where the answer changes a choice: a
    quadratic objective and a block that would project (``projection_choice.candidates``)."""
    if not getattr(objective, "is_quadratic", False) or not all(blk.is_polytope for blk in blocks):
        return False
    if not any(polytope_may_project(blk) for blk in blocks):
        return False
    x_ref = reference_point(blocks, n)
    return nearly_linear(objective, blocks, x_ref, objective.value_and_grad(x_ref)[1])


def _read_alone(objective, blocks):
    """block slice -> whether the compiled objective reads the block as the only copy of its variable
    (``reads_block``, ``copy_map.shared``), or reads a simplex block whose variable's other copies are all
    held by boxes; None for an objective that does not say (every block then).

    Boxes on a few entries of a variable held whole by a simplex (a long-only portfolio with caps on some
    assets: the single-asset sectors of ``benchmarks/dense_simplex_optima.py``) made it a shared copy, and the
    simplex kept its per-group pairwise steps: max_iter at 10,000 iterations at 100 and 160 assets, where with
    projection steps on the simplex (the box copies keep their coordinate steps) 58 iterations. Only
    simplices: an L1 ball beside a box (or an L-infinity ball) keeps its vertex steps, measured better so
    (``trust_fuzz.py`` model 1533: 67 iterations, 278 with the L1 copy projected).
    """
    reads = getattr(objective, "reads_block", None)
    copy_map = getattr(objective, "copy_map", None)
    if reads is None or copy_map is None:
        return None
    boxes = {(blk.slice.start, blk.slice.stop) for blk in blocks if blk.is_box}
    simplices = {(blk.slice.start, blk.slice.stop) for blk in blocks if blk.groups is not None}

    def others_are_boxes(block_slice):
        key = (block_slice.start, block_slice.stop)
        if key not in simplices:
            return False
        for copies in copy_map.copies.values():
            slices = [(sl.start, sl.stop) for _, sl in copies]
            if key in slices and any(other != key and other not in boxes for other in slices):
                return False
        return True

    return lambda block_slice: reads(block_slice) and (not copy_map.shared(block_slice)
                                                       or others_are_boxes(block_slice))


def _switch_to_projections(chosen, projections, infaces, steps, active, step_counts):
    """projection="auto" decided: the ``chosen`` blocks move by projections from now on."""
    for k in chosen:
        projections.blocks.append(k)
        steps[k] = ProjectedBlock(projections.all_blocks[k])
        active.pop(k, None)
        infaces.faces.pop(k, None)
        step_counts.setdefault("projection", 0)
    active[("projection",)] = tuple(projections.blocks)  # kept in the warm-start state


def _multiplier_step_of_projections(projections, lagrangian, schedule):
    """Every block now moves by projected-gradient steps: the dual schedule's
    ``primal_steps_are_projections`` (the method of multipliers' step eta = lam).

    It keeps lam fixed only on the tied copies of a quadratic
    (:meth:`ProjectionStep.on_tied_copies`: the covariance problem, where it was
    measured). Through general rows (equality rows, the slacks of inequality
    rows, a non-quadratic objective) lam may still be halved when the FW gap
    lags behind feasibility: a projected-gradient step is 1 / L_c long, with
    L_c at least the penalty's lam ||M d||^2 / ||d||^2, so a penalty stiffer
    than the rows need shortens every step. Measured (benchmarks/RESULTS.md,
    "Projection steps on models with rows (round 10)"): least squares in an L1
    ball with 3 equality rows 1,314 -> 212 iterations, in an L2 ball 1,528 -> 794;
    on the random models of benchmarks/trust_fuzz.py 2,876 -> 731 and 1,434 -> 168.
    """
    if len(projections.blocks) == len(projections.all_blocks) and hasattr(schedule, "primal_steps_are_projections"):
        schedule.primal_steps_are_projections(keep_lam=projections.on_tied_copies(lagrangian))


def _move_blocks(sweep, proposals, steps, lagrangian, it, grad, dual_term, cols, line_search, backtracking, ctx,
                 keep_dual_term=False):
    """Every block's step size and move (:mod:`fwmodel.engine.block_search`); returns ({k: gamma}, the proposals taken).

    x and r move in place (``keep_dual_term``: a Gauss-Seidel sweep keeps ``dual_term`` = y + lam r
    current too, ``ctx.dual_term_kept`` says whether it did). A Gauss-Seidel sweep may replace a block's
    proposal by a fresh one (cheap per-group and per-coordinate steps), and
    keeps ``it.f`` and ``it.g`` current where it can (blocks that f does not
    read, gradients that follow a quadratic f); it.g is None on return
    otherwise (always after a Jacobi step).
    """
    objective, blocks = lagrangian.objective, lagrangian.blocks
    ctx.dual_term_kept = False
    if sweep == "jacobi":
        it.g = None  # the line search's evaluations need not coexist with this gradient
        moved = jacobi_step(proposals, steps, blocks, objective, it.x, it.r, grad, dual_term, it.f, it.lam, cols,
                            lagrangian.curvature, lagrangian.quadratic, line_search, backtracking)
        return moved, proposals
    moved, taken = gauss_seidel_sweep(proposals, steps, blocks, objective, lagrangian.Mop, it.x, it.r, it.y, grad,
                                      it.f, it.lam, cols, lagrangian.curvature, lagrangian.quadratic, line_search,
                                      backtracking, ctx, dual_term=dual_term, start=it, keep_dual_term=keep_dual_term)
    return moved, [taken.get(k, p) for k, p in enumerate(proposals)]


def _propose(steps, blocks, x, grad, ctx, defer=False):
    """Every block's proposal at x, and the FW gap of L(., y) (paper OPT2) summed over the blocks.

    Returns (proposals, gap, gap_known, block_gaps): ``block_gaps`` holds
    each block's measured FW gap (None where a lazy step skipped its LMO;
    one below zero only where an LMO is inexact, see
    :func:`fwmodel.engine.stopping.certifies`). A block that moves by a corrective
    step (a proposal without a direction) contributes its FW gap and
    proposes nothing (None); a lazy step that skipped its LMO contributes its
    last measured gap, and then ``gap_known`` is False (the stopping rule
    waits for a measured gap). ``defer`` (Gauss-Seidel sweeps): a cheap step
    after a block that proposes a direction gives its FW gap only, and a
    :class:`~fwmodel.engine.steps.DeferredProposal` for the sweep to form.
    """
    proposals, gap, gap_known, block_gaps = [], 0.0, True, []
    moving_before = False  # an earlier block proposes a direction (then a cheap step defers)
    for k, blk in enumerate(blocks):
        step, sl = steps[k], blk.slice
        if defer and moving_before and getattr(step, "cheap_proposal", False):
            p = DeferredProposal(step.fw_gap(x[sl], grad[sl]))
            proposals.append(p)
            gap += p.gap
            block_gaps.append(p.gap)
            continue
        p = step.propose(x[sl], grad[sl], ctx)
        proposals.append(p if p.d is not None else None)
        moving_before = moving_before or p.d is not None
        block_gaps.append(p.gap)
        if p.gap is None:
            gap_known = False
            gap += steps[k].phi
        else:
            gap += p.gap
    return proposals, gap, gap_known, block_gaps


def _commit(proposals, moved, steps, infaces, step_counts):
    """Each step object updates its bookkeeping for the step its block took; True after a drop step.

    A drop step (Alg. 1 line 11: the away or pairwise step went to its cap,
    removing an atom) is counted once per iteration. The in-face steps follow
    the FW atoms of their low-rank blocks.
    """
    drop = False
    for k, p in enumerate(proposals):
        if p is None:
            continue
        step_counts[p.kind] = step_counts.get(p.kind, 0) + 1
        gm = moved.get(k, 0.0)
        steps[k].commit(p, gm)
        if p.kind in ("away", "pairwise") and not p.prescaled and gm >= p.gamma_max * (1 - 1e-12):
            drop = True
        infaces.follow(k, p.fw_atom, gm)
    if drop:
        step_counts["drop"] += 1
    return drop


class _StepContext:
    """What step objects read from the driver: the current penalty and the lazy oracles' thresholds."""

    def __init__(self, lam, directions=None, lazy_directions=False):
        self.lam = lam
        self.gap_target = 0.0  # a block FW gap below which lazy steps call the LMO
        self.lazy_allowed = False  # False: every block calls its LMO this iteration
        self.directions = directions  # lends each block an array for its direction (the driver's _Buffers)
        #: directions formed when the Gauss-Seidel sweep reaches their block (engine/steps.py, LazyDirection)
        self.lazy_directions = lazy_directions
        #: (block, d_k) -> d' Hf d for d = d_k on the block, 0 elsewhere; None where f gives no per-block curvature
        self.block_curvature = None
        #: block -> c where Hf on the block is c I (no direction needed), else None; None where f does not tell
        self.block_hessian = None
        #: the product space's dimension (rank-k steps price an iteration's vector passes by it)
        self.space_size = None
        #: block offset -> ||x_k||^2 at the point being proposed from (set by the driver for the
        #: proposals of one iteration, where a step reads it; else None)
        self.point_norms2 = None
        #: whether the last Gauss-Seidel sweep kept the driver's y + lam r current through its moves
        self.dual_term_kept = False

    def point_norm2(self, block, x_k):
        """||x_k||^2 of ``block`` at the proposals' point: the driver's where it measured it, else a dot."""
        known = self.point_norms2.get(block.offset) if self.point_norms2 is not None else None
        return known if known is not None else dot(x_k, x_k)

    def start_iteration(self, t, lam, gap_target, last=False):
        """``last``: the iteration is the solve's last (max_iter): every block measures its FW gap,
        so the returned point carries a certificate (``suboptimality_bound``)."""
        self.lam = lam
        self.gap_target = gap_target
        self.lazy_allowed = not last and t % LAZY_CHECK_EVERY != 0


def _point_norm(x, blocks, ctx, by_block):
    """||x|| (the stopping scales' size of the iterate); ``by_block``: summed from the blocks' squared
    norms, which ``ctx`` passes on to the proposals (:meth:`_StepContext.point_norm2`).

    A rank-k step reads ||x_k||^2 of its block (its model of ||V - X||^2): measured once here, its
    block's dot serves both, and the whole norm costs one pass over x instead of that and one more
    over the block (at d = 4000, 16 million entries). ||x|| is then rounded as the sum of the blocks'
    sums (not one dot over x): it sets only the stopping rule's scales and the reported relative
    feasibility, never a step.
    """
    if not by_block:
        return float(norm(x))
    norms2 = {blk.offset: dot(x[blk.slice], x[blk.slice]) for blk in blocks}
    ctx.point_norms2 = norms2
    return math.sqrt(sum(norms2[blk.offset] for blk in blocks))


def _block_curvature(objective, it):
    """``(block, d_k) -> curvature of f along d_k on that block`` at the current iterate, and
    ``block -> c`` where f's Hessian on the block is ``c I`` (else None); each None where f does not tell.

    A step that needs the objective's curvature before its first line search
    (a rank-k step's prox) measures it with these instead of waiting one
    iteration; ``objective.curvature_block`` forms no full-size direction, and
    ``objective.block_hessian`` (the Hessian of f's last gradient) needs no direction.
    """
    curvature_block = getattr(objective, "curvature_block", None)
    has = getattr(objective, "has_block_curvature", None)
    block_hessian = getattr(objective, "block_hessian", None)
    hessian = None if block_hessian is None else (lambda block: block_hessian(block.slice))
    if curvature_block is None or has is None:
        return None, hessian

    def curvature(block, d_k):
        return curvature_block(it.x, block.slice, d_k) if has(block.slice) else None

    return curvature, hessian


def _cold_penalty(objective, blocks, Mop, b, n, rng, stopping):
    """The default penalty a cold start takes (:func:`default_penalty` at the cold starting point, the
    reference x_ref): for a warm start whose duals restart (``warm_start.in_new_units``)."""
    x_ref = reference_point(blocks, n)
    _, g_ref = objective.value_and_grad(x_ref)
    _, s_ref = objective_gap(blocks, x_ref, g_ref, with_vertex=True)
    Ms_ref = Mx_ref = None
    if Mop.shape[0]:
        Ms_ref, Mx_ref = Mop.matvec(s_ref), Mop.matvec(x_ref)
    return default_penalty(objective, blocks, Mop, x_ref, g_ref, rng,
                           fallback=_fallback_penalty(stopping.objective_scale, stopping.feasibility_scale),
                           vertex=(s_ref, Ms_ref, Mx_ref), slope=stopping.objective_scale)


def _fallback_penalty(objective_scale, feasibility_scale):
    """lam = objective scale / feasibility scale^2 (units of f / ||Mx - b||^2), else 1."""
    if objective_scale > 0 and feasibility_scale > 0 and math.isfinite(objective_scale / feasibility_scale ** 2):
        return objective_scale / feasibility_scale ** 2
    return 1.0


def _spare_arrays(spare, name, size):
    """The setup's array ``spare[name]`` where it can serve as a fresh array of ``size`` entries, else None.

    At d = 4000 the page faults of a fresh 128 MB array cost 50-60 ms on this
    project's machine with 4 KB pages and 0.2-0.4 s with fresh huge pages,
    more than the passes over it (benchmarks/RESULTS.md, "The setup at
    d = 4000: page faults"); the arrays the setup no longer needs are
    reused instead. Only an array of its own (not a view), contiguous, of
    exactly that size and float type qualifies.
    """
    a = spare.get(name)
    if (isinstance(a, np.ndarray) and a.base is None and a.dtype == np.float64 and a.shape == (size,)
            and a.flags.c_contiguous and a.flags.writeable):
        return a
    return None


class _Buffers:
    """Work arrays reused from one iteration to the next.

    The gradient of L(., y), the dual term y + lam r (m entries) and every
    block's direction are formed every iteration; writing them into arrays
    kept for the whole solve saves an allocation per iteration (at d = 4000
    the page faults of a fresh 128 MB array cost 0.3 s on a busy machine,
    the pass itself 13 ms) and keeps the peak memory fixed. Their contents
    are valid only within the iteration that wrote them.

    Where every block's columns of M are a signed identity (two tied
    copies), the gradient of L(., y) is formed one block at a time into one
    block-size array (:class:`~fwmodel.engine.block_search.BlockLagrangianGradient`)
    instead of an n-vector.
    """

    def __init__(self):
        self._grad = self._dual = None
        self._directions = {}  # block offset -> that block's direction array; ("lazy", size) -> the lazy ones'
        self._block = {}  # size -> the per-block gradient's array
        self._spare_block = None  # an array for the per-block gradient, lent by the setup (take_spare)
        #: the dual term's buffer holds y + lam r for the current r, y and lam (the driver sets it after
        #: a sweep that kept it current; the next dual_term call returns it and clears this)
        self.dual_kept = False

    def take_spare(self, array, m):
        """Use ``array`` (None: nothing) for the dual term (its first m entries) and the per-block gradient (the rest).

        The two views are made now, so the array is never left half used; where
        m is not a multiple of 8 the second view would start off a 64-byte
        boundary (SIMD kernels may then round differently), and the array is
        not used.
        """
        if array is None or m % 8 or not 0 < m < array.size:
            return
        self._dual = array[:m]
        self._spare_block = array[m:]

    def lagrangian_grad(self, Mop, g, dual_term, cols=None):
        """g + M' (y + lam r): per block when ``cols`` shows two tied copies, else into an n-size buffer."""
        if cols is not None and BlockLagrangianGradient.applies(cols):
            return BlockLagrangianGradient(g, dual_term, cols, self.block_gradient)
        if not Mop.shape[0]:  # no rows: f's gradient itself (the steps only read it), no copy
            if isinstance(g, np.ndarray):
                return g
            # a shared gradient that is one variable's, whole (a single block): a view of it
            whole = getattr(g, "whole_view", None)
            view = whole() if whole is not None else None
            if view is not None:
                return view
        if self._grad is None:
            self._grad = np.empty(g.size)
        if Mop.shape[0]:
            return Mop.add_rmatvec(dual_term, g, out=self._grad)
        np.copyto(self._grad, g)
        return self._grad

    def block_gradient(self, size):
        """The array that holds one block's slice of the gradient of L(., y)."""
        if size not in self._block:
            spare = self._spare_block
            if spare is not None and spare.size == size:
                self._block[size], self._spare_block = spare, None
            else:
                self._block[size] = np.empty(size)
        return self._block[size]

    def add_scaled(self, y, eta, r):
        """y += eta * r (the dual step): one BLAS axpy on long vectors (``LARGE_BLOCK``), else with
        eta * r formed in the dual term's array (free by then; the same roundings as y += eta * r)."""
        if r.size >= LARGE_BLOCK:
            blas.daxpy(r, y, a=eta)
            return
        if self._dual is None or self._dual.size != r.size:
            y += eta * r
            return
        np.multiply(r, eta, out=self._dual)
        y += self._dual

    def shared_direction(self, block):
        """The array the lazy directions of ``block``'s size are formed in (engine/steps.py, LazyDirection).

        For a large block (``LARGE_BLOCK`` entries) it is also the array of the per-block
        gradient of L (:meth:`block_gradient`): the Gauss-Seidel sweep never needs the two at
        once there (it takes the first block's slope from its proposal and the later blocks'
        from f's gradient; block_search.py), so a solve on two tied copies holds one
        block-size array for both instead of three.
        """
        if block.size >= LARGE_BLOCK:
            return self.block_gradient(block.size)
        d = self._directions.get(("lazy", block.size))
        if d is None:
            d = self._directions[("lazy", block.size)] = np.empty(block.size)
        return d

    def direction(self, block):
        """The array lent to ``block``'s step for its direction (``ctx.directions``, see engine/steps.py)."""
        d = self._directions.get(block.offset)
        if d is None or d.size != block.size:
            d = self._directions[block.offset] = np.empty(block.size)
        return d

    def dual_term(self, r, y, lam):
        """y + lam r, written into the reused buffer; where the sweep kept it current since it was last
        formed (``dual_kept``, set by the driver and spent by this call), that buffer as it is."""
        if self.dual_kept and self._dual is not None and self._dual.size == r.size:
            self.dual_kept = False
            return self._dual
        self.dual_kept = False
        if self._dual is None:
            self._dual = np.empty(r.size)
        np.multiply(r, lam, out=self._dual)
        self._dual += y
        return self._dual
