"""The end of a solve: the returned point, its value and the warm-start state, also after an interrupt.

An interrupt (KeyboardInterrupt) may land anywhere in an iteration: after
x moved but before its active sets, r or f followed. :func:`finish` then
rebuilds everything from x (:func:`~fwmodel.engine.warm_start.make_active_sets_consistent`:
each block's point is its active set's, paper eq. active_set_decomposition)
and never changes the loop's variables, so the driver can call it again if
another interrupt lands while it runs (:data:`MAX_FINISH_ATTEMPTS`). A solve
that ends without meeting its tolerances returns the best point seen when
its merit is less than half the last one's.
"""
from __future__ import annotations

import time

import numpy as np

from .progress import BEST_POINT_FACTOR
from .result import FWALResult, SolverState
from .stopping import GAP_ROUNDING, objective_gap, suboptimality_bound
from .vector_ops import dot, norm
from .warm_start import make_active_sets_consistent

INTERRUPT_MESSAGE = "interrupted by the user (KeyboardInterrupt)"
#: how many interrupts in a row the result assembly absorbs before letting one through
MAX_FINISH_ATTEMPTS = 3


def value_and_gap(objective, blocks, Mop, x, y, r, lam):
    """f(x) and the FW gap of L(., y) at x (paper OPT2), computed from scratch (with the LMOs that certify)."""
    f, g = objective.value_and_grad(x)
    grad = g + Mop.rmatvec(y + lam * r) if Mop.shape[0] else g
    gap = dot(x, grad)
    for blk in blocks:
        gap -= blk.trusted_lmo(grad[blk.slice]).dot(grad[blk.slice])
    return float(f), float(gap)


def finish(status, message, lagrangian, stopping, it, gap, gap_known, t, active, faces, progress, schedule,
           backtracking):
    """Assemble the :class:`FWALResult` without changing the loop's variables (so it can be retried).

    ``gap`` is the FW gap of L(., y) at the last iterate, ``gap_known`` False
    when it cannot certify the returned point: a lazy step skipped its LMO
    there, an LMO was seen to be inexact, or the solve diverged.
    """
    objective, blocks, Mop, b = lagrangian.objective, lagrangian.blocks, lagrangian.Mop, lagrangian.b
    x, y, r, f, lam_value = it.x, it.y, it.r, it.f, it.lam
    b_norm = float(norm(b))
    interrupted = status == "interrupted" and message.startswith(INTERRUPT_MESSAGE)
    if interrupted:  # x is rebuilt below: work on copies (the loop's x stays as it was, for a retry)
        x, y = x.copy(), y.copy()
    # otherwise x and y are only read here, and the loop no longer writes them: the
    # result takes them as they are (no second pair of full-size copies)
    active, faces = dict(active), dict(faces)
    if interrupted:
        make_active_sets_consistent(blocks, x, active, faces)
        r = Mop.matvec(x) - b
        f, gap = value_and_gap(objective, blocks, Mop, x, y, r, lam_value)
        gap_known = gap >= -GAP_ROUNDING * stopping.objective_scale  # an exact LMO gives gap >= 0
    feas = float(norm(r))
    gap_f = None  # as in the loop: the FW gap of f, while the objective scale is unknown
    if stopping.needs_objective_scale and np.isfinite(f):
        gap_f = objective_gap(blocks, x, objective.value_and_grad(x)[1])

    # ---- return the best point found when the last one is not acceptable
    stopping.observe_residual(r)
    stopping.observe_value(f, feas)
    dual_residual = dot(y + lam_value * r, r) if r.size else 0.0  # test (2) of stopping.py
    bound = suboptimality_bound(gap, dual_residual, gap_known and np.isfinite(f))
    final_merit = stopping.merit(gap, feas, gap_f, dual_residual) \
        if np.isfinite(gap) and np.isfinite(f) and np.isfinite(feas) else np.inf
    best = progress.best
    if status != "optimal" and best is not None and best[0] < BEST_POINT_FACTOR * final_merit:
        x, y, f, gap, bound = best[1].copy(), best[2].copy(), best[3], best[4], best[5]
        r = Mop.matvec(x) - b
        feas = float(norm(r))
        if status != "diverged":
            message += "; returning the best point found"
        # restored point: active sets no longer describe it
        active, faces = {}, {}
    # the best weak-duality lower bound on f* seen (stopping.py, test (1b)) certifies the returned point as
    # well: f - L >= f - f*, often far below the point's own gap - <w, r> (a ball 1,000x wider than the data:
    # 0.05 against 700, |f| = 13)
    below = f - stopping.lower_bound
    if np.isfinite(below) and below >= 0 and not bound <= below:
        bound = float(below)
    feas_rel = feas / max(1.0, float(norm(x)), b_norm)
    solve_time = time.perf_counter() - progress.start
    step_counts = progress.step_counts
    progress.printer.footer(status, message, t, f, gap, feas, stopping, solve_time, step_counts, bound)
    active.update({("face", k): aset for k, aset in faces.items()})
    # the warm-start state shares the result's x and y (a warm start copies them, warm_start.py):
    # copies here would be three more full-size arrays at d = 4000 (x has two copies of X), the
    # largest memory of the whole solve
    state = SolverState(x, y, active, lam_value, schedule.current, backtracking.lipschitz)
    return FWALResult(
        x=x, y=y, status=status, message=message, objective=float(f), fw_gap=float(gap), suboptimality_bound=bound,
        feasibility=float(feas), feasibility_rel=float(feas_rel), iterations=int(t),
        solve_time=solve_time, lam=float(lam_value), eta=float(schedule.current), history=progress.history,
        state=state, step_counts=dict(step_counts), objective_scale=stopping.objective_scale,
        feasibility_scale=stopping.point_scale, tol=stopping.tol, feas_tol=stopping.feas_tol,
    )
