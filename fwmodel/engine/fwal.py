"""The FW-AL iteration on flat NumPy vectors (paper eq. fwal).

Problem (OPT2 of the paper, with a right-hand side b)::

    min_x max_y  L(x, y) = f(x) + <y, Mx - b> + lam/2 ||Mx - b||^2
    s.t.         x = (x^(1), ..., x^(K)),  x^(k) in X_k,

where each X_k is known through its linear minimization oracle (and, where it
is cheap, its Euclidean projection). Each
iteration moves every block by its own step on L(., y_t), then takes the
dual ascent step y_{t+1} = y_t + eta_t (M x_{t+1} - b):

* every block has a step object (:mod:`fwmodel.engine.steps`) that proposes
  a feasible direction: plain FW (Alg. 2), away steps (Alg. 1), pairwise
  steps, blended pairwise steps with a lazified LMO (BPCG) on polytope
  blocks, a pairwise step per simplex of a batched Simplex, and a FW step
  per coordinate of a box;
* each block's step size is a line search on L(., y_t) restricted to that
  block, the blocks taken one after another (Gauss-Seidel) or together
  (Jacobi) (:mod:`fwmodel.engine.block_search`).
Options add corrective primal steps before the dual step, within the sets:
in-face steps on trace-norm blocks (:mod:`fwmodel.engine.inface`) and
projected-gradient steps on blocks whose set has a cheap projection
(:func:`_projection_step`).

Stopping: the FW gap of L(., y) and ||Mx - b|| are measured against scales
of the problem itself, never against an absolute 1
(:mod:`fwmodel.engine.stopping`), so ``tol`` is a relative accuracy at any
scale. Interrupts: a KeyboardInterrupt at any moment ends the solve with a
consistent result, rebuilt from x (:func:`_finish`), and a warm start copies
and checks the state it is given.

This module knows nothing of the modeling language: it takes an objective
with ``value_and_grad``, a list of :class:`Block` and the operator M.
"""
from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp

from .active_set import ActiveSet
from .block_search import BlockColumns, BlockLagrangianGradient, gauss_seidel_sweep, jacobi_step
from .steps import LAZY_CHECK_EVERY, make_step
from .rank_k import RANK_K_CHOICES
from .line_search import Backtracking, bounded_scalar_step, exact_quadratic_step
from .projection_choice import AutoProjection
from .result import FWALResult, History, SolverState
from .schedules import make_dual_schedule, default_penalty
from .stopping import StoppingRule, objective_gap, reference_point
from .threads import with_blas_threads
from .verbose import VerbosePrinter
from .vector_ops import dot, norm

STEP_KINDS = ("auto", "fw", "away", "pairwise")
PROJECTION_CHOICES = ("auto", True, False)
#: with inface="auto", in-face steps run on trace-norm blocks up to this size
AUTO_INFACE_MAX_DIM = 500
#: above this many entries of x and y together no best-point snapshot is kept: it
#: would hold a copy of x and y for the whole solve (3 of the ~15 d x d arrays of the
#: covariance problem's iteration). Trade-off: a solve stopped by max_iter or
#: time_limit there returns its last point, not the best one seen (the iterates of a
#: long solve mostly improve; a diverged solve still reports "diverged").
BEST_POINT_MAX_ENTRIES = 10 ** 6
LINE_SEARCHES = ("auto", "exact", "backtracking")


@dataclass
class Block:
    """One factor X_k of the product space: x[offset:offset+size] lies in it.

    ``lmo(g)`` takes the block's slice of the gradient (flat) and returns an
    Atom minimizing <g, s> over X_k; ``initial_atom()`` gives a starting
    vertex. Away/pairwise steps are used only where ``is_polytope``.
    """

    offset: int
    size: int
    lmo: Callable
    initial_atom: Callable
    is_polytope: bool = False
    name: str = ""
    #: False for a product of many small polytopes (a batched simplex): there the
    #: active set would hold joint vertices, so step="auto" takes FW steps
    active_set_steps: bool = True
    #: optional :class:`~fwmodel.engine.inface.LowRankFace` (trace-norm blocks):
    #: enables in-face corrective steps on this block
    face: object = None
    #: optional Euclidean projection onto X_k (flat -> flat): enables
    #: projected-gradient steps on this block (option ``projection``)
    project: Callable = None
    #: True when ``project`` costs about an LMO (L1, L2 balls, boxes): taken with
    #: projection=True; other projections only when "auto" measures them cheap enough
    cheap_projection: bool = True
    #: optional () -> seconds: a guess of ``project``'s cost, so that "auto" does not
    #: time a projection far too slow to be taken
    projection_estimate: Callable = None
    #: optional :class:`~fwmodel.engine.steps.SimplexGroups`: the block is a
    #: product of simplices (enables per-group pairwise steps)
    groups: object = None
    #: optional (lower, upper) flat bounds: the block is a box (per-coordinate FW steps)
    intervals: object = None
    #: optional int S: the block is a batch of polytopes over consecutive runs of S
    #: entries whose joint LMO vertex splits into the groups' vertices (BPCG per group)
    batch_group_size: int = None

    @property
    def slice(self):
        return slice(self.offset, self.offset + self.size)


class _Operator:
    """M as two fast callables (CSR products, or a user LinearOperator)."""

    def __init__(self, M, n):
        if M is None:
            M = sp.csr_matrix((0, n))
        if sp.issparse(M):
            M = M.tocsr()
            MT = M.T.tocsr()
            self.matvec, self.rmatvec = M.dot, MT.dot
        elif hasattr(M, "matvec") and hasattr(M, "rmatvec"):
            self.matvec, self.rmatvec = M.matvec, M.rmatvec
        else:
            M = np.asarray(M, dtype=float)
            self.matvec, self.rmatvec = M.dot, M.T.dot
        self.shape = M.shape
        if self.shape[1] != n:
            raise ValueError(f"M has {self.shape[1]} columns but the blocks have {n} entries in all")
        # the compiler's operator fuses g + M' r and describes copy columns (see consistency.py)
        self._add_rmatvec = getattr(M, "add_rmatvec", None)
        self.signed_rows = getattr(M, "signed_rows", lambda start, stop: None)

    def add_rmatvec(self, r, g, out=None):
        """``g + M' r``, into ``out`` when given (a buffer reused from one iteration to the next)."""
        if self._add_rmatvec is not None:
            return self._add_rmatvec(r, g, out)
        if out is None:
            out = self.rmatvec(r)
            out += g
            return out
        np.add(g, self.rmatvec(r), out=out)
        return out


class IterationState:
    """What a callback sees each iteration (read-only by convention)."""

    __slots__ = ("iteration", "time", "objective", "fw_gap", "feasibility", "feasibility_rel", "lam", "eta", "x", "y")
    # x: the product-space iterate (all blocks), y: the dual variable of M x = b

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _same_choice(value, choice):
    # compare kinds too: True == 1, so `1 in (True, False)` would accept a number as a boolean
    if isinstance(choice, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) == choice
    return isinstance(value, str) and value == choice


def _check_option(name, value, allowed):
    if not any(_same_choice(value, a) for a in allowed):
        raise ValueError(f"option {name}={value!r} is not one of {', '.join(map(repr, allowed))}")


def _is_number(value):
    """A real number that is not a boolean (True is an int in Python, but not a tolerance)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_count(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_options(max_iter, tol, feas_tol, time_limit, lam, verbose, print_every, callback, seed,
                   infeasibility_check_every, max_drop_steps, step, line_search, inface, projection):
    """Refuse a bad option with a ValueError that names it (before any work is done)."""
    _check_option("step", step, STEP_KINDS)
    _check_option("line_search", line_search, LINE_SEARCHES)
    _check_option("inface", inface, PROJECTION_CHOICES)
    _check_option("projection", projection, PROJECTION_CHOICES)
    if not (_is_count(max_iter) and max_iter >= 0):
        raise ValueError(f"option max_iter must be a nonnegative integer, got {max_iter!r}")
    for name, value in (("tol", tol), ("feas_tol", feas_tol)):
        if not (_is_number(value) and value > 0 and math.isfinite(value)):
            raise ValueError(f"option {name} must be a positive number, got {value!r}")
    if time_limit is not None and not (_is_number(time_limit) and time_limit > 0):
        raise ValueError(f"option time_limit must be a positive number of seconds, got {time_limit!r}")
    if lam is not None and not (_is_number(lam) and lam > 0 and math.isfinite(lam)):
        raise ValueError(f"option lam must be a positive number, got {lam!r}")
    if not isinstance(verbose, (bool, np.bool_)):
        raise ValueError(f"option verbose must be True or False, got {verbose!r}")
    if print_every is not None and not (_is_count(print_every) and print_every >= 1):
        raise ValueError(f"option print_every must be a positive integer (or None), got {print_every!r}")
    if callback is not None and not callable(callback):
        raise ValueError(f"option callback must be a callable (or None), got {callback!r}")
    seed_types = (np.random.SeedSequence, np.random.BitGenerator, np.random.Generator)
    if seed is not None and not ((_is_count(seed) and seed >= 0) or isinstance(seed, seed_types)):
        raise ValueError(f"option seed must be None, a nonnegative integer or a numpy.random Generator, "
                         f"got {seed!r}")
    if infeasibility_check_every is not None and not (_is_count(infeasibility_check_every)
                                                      and infeasibility_check_every >= 0):
        raise ValueError(f"option infeasibility_check_every must be a nonnegative integer (0: never), "
                         f"got {infeasibility_check_every!r}")
    if max_drop_steps is not None and not (_is_count(max_drop_steps) and max_drop_steps >= 0):
        raise ValueError(f"option max_drop_steps must be a nonnegative integer, got {max_drop_steps!r}")


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
    rank_k=False,
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
        steps instead of FW steps (see :func:`_projection_step`); False: never;
        "auto": after a few FW iterations, the blocks whose projection costs
        at most a few iterations, measured (see
        :mod:`fwmodel.engine.projection_choice`).
    rank_k : True: blocks with a low-rank face (trace-norm balls) that do not
        take projection steps take BlockFW rank-k steps instead of FW steps
        (:mod:`fwmodel.engine.rank_k`; no in-face steps on them); False (the
        default): FW steps (measured in benchmarks/RESULTS.md, "Rank-k steps").
    threads : BLAS threads during the solve (a positive integer, default 1,
        or None to leave the BLAS as configured); see :mod:`fwmodel.engine.threads`.

    A KeyboardInterrupt ends the solve with status "interrupted" and a
    consistent result: x in its sets, ``objective`` = f(x), the active sets
    rebuilt to describe x (see :func:`_finish`).

    Returns an :class:`FWALResult`.
    """
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, sorted(unknown)))} of minimize_fwal")
    _check_options(max_iter, tol, feas_tol, time_limit, lam, verbose, print_every, callback, seed,
                   infeasibility_check_every, max_drop_steps, step, line_search, inface, projection)
    if eta is not None and (isinstance(eta, (bool, np.bool_))):
        raise ValueError(f"option eta={eta!r} is not a number, a callable, or one of 'adaptive', 'theorem2', 'theorem3'")
    _check_option("sweep", sweep, ("gauss-seidel", "jacobi"))
    _check_option("rank_k", rank_k, RANK_K_CHOICES)

    start = time.perf_counter()
    n = sum(blk.size for blk in blocks)
    Mop = _Operator(M, n)
    m = Mop.shape[0]
    # reshape, not ravel: a broadcast right-hand side of zeros (no memory) stays a view
    b = np.zeros(m) if b is None else np.asarray(b, dtype=float).reshape(-1)
    if b.shape != (m,):
        raise ValueError(f"b has shape {b.shape}, expected ({m},) to match the rows of M")
    b_norm = float(norm(b))
    use_active = step in ("auto", "away", "pairwise")
    proj_blocks = _projection_blocks(blocks, projection)
    auto_projection = AutoProjection(blocks) if projection == "auto" else None
    warm_choice = warm_state.active_sets.get(("projection",)) if warm_state is not None else None
    if auto_projection is not None and warm_choice is not None:
        proj_blocks, auto_projection = list(warm_choice), None  # the last solve's choice
    # "auto": pairwise steps on polytope blocks. Measured on the test problems
    # (L1 ∩ box least squares, simplex ∩ box, simplex with equalities, three
    # sets), pairwise needed 0.5-0.9x the iterations of away steps (Alg. 1).
    pairwise = step in ("pairwise", "auto")
    quadratic = bool(getattr(objective, "is_quadratic", False))
    curvature_fn = getattr(objective, "curvature", None)
    if line_search == "auto":
        line_search = "exact" if quadratic else "backtracking"
    # seed=None is a fixed seed: the same model solves the same way every time
    # (the default penalty may draw a random direction; its draw changed the
    # iteration count of one LP from 44 to 3234 between runs)
    rng = np.random.default_rng(0 if seed is None else seed)

    # ---------------------------------------------------------- initial point
    if warm_state is not None:
        x = np.array(warm_state.x, dtype=float).ravel()
        if x.shape != (n,):
            raise ValueError(f"warm_state.x has {x.size} entries but the blocks have {n}")
        y = warm_state.y.copy() if warm_state.y.shape == (m,) else np.zeros(m)
        # Trust an incoming active set only if it is a valid decomposition, and
        # make it the source of truth for its block (x[block] = its point): a
        # state saved by an interrupted solve must not let away or pairwise
        # steps leave the set. Unusable ones are dropped (the block restarts).
        # Sound ones are copied (rebuilt): the solve never modifies the state
        # it was given, so an interrupt cannot leave that state half-updated.
        active = {}
        for k, aset in warm_state.active_sets.items():
            if isinstance(k, tuple) or not 0 <= k < len(blocks) or not _is_sound(aset):
                continue
            active[k] = _rebuilt_active_set(aset)
            x[blocks[k].slice] = active[k].dense(blocks[k].size)
    else:
        x = np.zeros(n)
        y = np.zeros(m)
        active = {}
    def wants_active_set(blk):
        if blk.groups is not None and pairwise:  # per-group pairwise steps: the atoms are implicit
            return False
        if blk.intervals is not None and step == "auto":  # per-coordinate steps: no atoms
            return False
        if blk.batch_group_size is not None and step == "auto":  # the step keeps one active set per group
            return False
        return blk.is_polytope and (step != "auto" or blk.active_set_steps)

    for k in proj_blocks:  # these blocks move by projections: no vertex bookkeeping
        active.pop(k, None)
    for k, blk in enumerate(blocks):
        if use_active and wants_active_set(blk) and k not in active and k not in proj_blocks:
            if warm_state is None:
                atom = blk.initial_atom()
                active[k] = ActiveSet(atom)
            else:
                # Warm start without an active set for this block: restart it.
                atom = blk.initial_atom()
                active[k] = ActiveSet(atom)
                x[blk.slice] = 0.0
                atom.add_to(x[blk.slice], 1.0)
                continue
            atom.add_to(x[blk.slice], 1.0)
        elif warm_state is None:
            blk.initial_atom().add_to(x[blk.slice], 1.0)
    if not use_active:
        active = {}
    # Low-rank blocks: their atoms are tracked (for the in-face step), while
    # their main step stays a plain FW step (Alg. 2).
    faces = {}
    if inface:
        for k, blk in enumerate(blocks):
            # "auto" keeps in-face steps to blocks where their O(m n k) passes are
            # cheap next to a FW iteration: measured, they turn small trace-norm
            # intersections into optimal solves, while at d = 1000 they did not
            # improve a 15 s run and at d = 4000 they dominated the time and memory.
            if blk.face is not None and k not in proj_blocks \
                    and (inface is True or min(blk.face.shape) <= AUTO_INFACE_MAX_DIM):
                aset = warm_state.active_sets.get(("face", k)) if warm_state is not None else None
                if aset is not None and _is_sound(aset):
                    aset = _rebuilt_active_set(aset)
                    x[blk.slice] = aset.dense(blk.size)
                else:
                    atom = blk.initial_atom()
                    aset = ActiveSet(atom)
                    if warm_state is not None:  # restart this block from its initial point
                        x[blk.slice] = 0.0
                        atom.add_to(x[blk.slice], 1.0)
                faces[k] = aset

    r = Mop.matvec(x)
    r -= b
    # the objective's gradient kept once for tied copies where it offers that (compiler/objective.py)
    loop_value_and_grad = getattr(objective, "value_and_grad_shared", objective.value_and_grad)
    f, g = loop_value_and_grad(x)
    # the scales of the stopping rule, measured at the cold starting point (see stopping.py)
    cold = warm_state is None
    stopping = StoppingRule.from_reference(tol, feas_tol, objective, blocks, Mop, b,
                                           x if cold else reference_point(blocks, n), g if cold else None)
    if lam is None:
        lam_value = warm_state.lam if warm_state is not None else default_penalty(
            objective, blocks, Mop, x, g, rng,
            fallback=_fallback_penalty(stopping.objective_scale, stopping.feasibility_scale))
    else:
        lam_value = float(lam)
    schedule = make_dual_schedule(eta, lam_value, warm_state)
    if proj_blocks and len(proj_blocks) == len(blocks) and hasattr(schedule, "primal_steps_are_projections"):
        schedule.primal_steps_are_projections()  # every block projects from the start (or as the last solve chose)
    # ---- one step object per block (None: the block moves by projections)
    cols = BlockColumns(M, Mop, blocks)
    steps = [None if k in proj_blocks
             else make_step(blk, step, active.get(k), lambda k=k: cols.norms2(k), coupled=m > 0, rank_k=rank_k)
             for k, blk in enumerate(blocks)]
    for k, st in enumerate(steps):
        if getattr(st, "replaces_inface", False):  # rank-k steps: no in-face steps on top
            faces.pop(k, None)
    ctx = _StepContext(lam_value)
    # the active sets are the step objects' own (a warm-started set that no step uses is let go)
    active = {k: st.active for k, st in enumerate(steps) if getattr(st, "active", None) is not None}
    if warm_choice is not None and auto_projection is None and projection == "auto":
        active[("projection",)] = tuple(proj_blocks)  # still "auto"'s choice for the next warm start
    backtracking = Backtracking(warm_state.lipschitz if warm_state is not None else None)

    history = History()
    printer = VerbosePrinter(verbose, print_every, n=n, m=m, blocks=blocks)
    printer.header(step=step, line_search=line_search, lam=lam_value, stopping=stopping)
    step_counts = {"fw": 0, "away": 0, "pairwise": 0, "drop": 0}
    if proj_blocks:
        step_counts["projection"] = 0
    if faces:
        step_counts["inface"] = 0
    if any(getattr(st, "replaces_inface", False) for st in steps):
        step_counts["rank_k"] = 0
    status = "max_iter"
    drops_in_row = 0
    max_drops = max_drop_steps if max_drop_steps is not None else 10 * len(blocks) + 10
    best = None  # (merit, x, y) snapshot, for returning the best point found
    keep_best = n + m <= BEST_POINT_MAX_ENTRIES
    gap = np.inf
    feas = feas_rel = np.inf
    t = 0
    message = ""
    feas_at_check = None  # feasibility at the last infeasibility check
    projection_memory = {}  # the curvature estimate of the projection steps
    buffers = _Buffers()  # the gradient of L(., y), y + lam r and the directions, reused by every iteration
    ctx.directions = buffers  # the steps write their directions into the buffers' arrays

    try:
        for t in range(max_iter + 1):
            if not (np.isfinite(f) and np.all(np.isfinite(g[:: max(1, n // 1000)]))):
                status, message = "diverged", "the objective or its gradient is not finite"
                break
            if auto_projection is not None and auto_projection.due(t):
                for k in auto_projection.choose(x, g):  # from now on these blocks move by projections
                    proj_blocks.append(k)
                    steps[k] = None
                    active.pop(k, None)
                    faces.pop(k, None)
                    step_counts.setdefault("projection", 0)
                active[("projection",)] = tuple(proj_blocks)  # kept in the warm-start state
                if len(proj_blocks) == len(blocks) and hasattr(schedule, "primal_steps_are_projections"):
                    schedule.primal_steps_are_projections()
            # ---- gradient of the augmented Lagrangian (paper OPT2)
            # (in place where possible: at d = 4000 every full-size temporary is 256 MB)
            # (into two buffers kept from one iteration to the next: no fresh full-size
            # memory per iteration; g + M' w in one pass per copy where M allows it)
            dual_term = buffers.dual_term(r, y, lam_value)
            grad = buffers.lagrangian_grad(Mop, g, dual_term, cols)
            # ---- every block proposes a step (calling its LMO unless a lazy step
            # reuses an active atom); FW gap of L(., y)
            ctx.lam = lam_value
            ctx.gap_target = stopping.gap_target() / len(blocks)
            ctx.lazy_allowed = t % LAZY_CHECK_EVERY != 0
            proposals, gap, gap_known = _propose(steps, blocks, x, grad, ctx)
            feas = float(norm(r))
            x_norm = float(norm(x))
            feas_rel = feas / max(1.0, x_norm, b_norm)  # the documented stats value, not the stopping scale
            stopping.observe_point(x_norm)
            stopping.observe_value(f)
            # <y + lam r, r>: how far infeasibility can move f from f* (stopping.py, test (2))
            dual_residual = dot(dual_term, r) if m else 0.0
            gap_f = None  # the FW gap of f alone, needed only while the objective scale is unknown
            if stopping.needs_objective_scale:  # rare: f's FW gap was 0 at the reference point
                gap_f = objective_gap(blocks, x, g)
                stopping.observe_objective_gap(gap_f)
            elapsed = time.perf_counter() - start
            eta_now = schedule.current
            history.append(iteration=t, time=elapsed, objective=f, fw_gap=gap, feasibility=feas,
                           feasibility_rel=feas_rel, lam=lam_value, eta=eta_now, step=_last_kind(step_counts))
            printer.row(t, f, gap, feas, stopping, lam_value, eta_now, elapsed, step_counts)
            merit = stopping.merit(gap, feas, gap_f, dual_residual)
            if keep_best and (best is None or merit < 0.5 * best[0]):
                best = (merit, x.copy(), y.copy(), f, gap)
            if not np.isfinite(gap):
                status, message = "diverged", "the Frank-Wolfe gap is not finite"
                break
            if gap_known and stopping.met(gap, feas, gap_f, dual_residual):
                status, message = "optimal", "FW gap and feasibility below tolerance"
                break
            if callback is not None:
                state = IterationState(iteration=t, time=elapsed, objective=f, fw_gap=gap, feasibility=feas,
                                       feasibility_rel=feas_rel, lam=lam_value, eta=eta_now, x=x, y=y)
                if callback(state) is False:
                    status, message = "interrupted", "the callback returned False"
                    break
            if t == max_iter:
                status, message = "max_iter", f"reached max_iter={max_iter}"
                break
            if time_limit is not None and elapsed > time_limit:
                status, message = "time_limit", f"reached time_limit={time_limit} s"
                break
            # The certificate costs one LMO call per block and direction (and it
            # moves the warm starts of Lanczos-based LMOs), so it runs only while
            # feasibility is not improving: not below half the best value seen at
            # the previous checks.
            check_due = m and infeasibility_check_every and t % infeasibility_check_every == 0 and t > 0 \
                and feas > stopping.feasibility_target()
            if check_due:
                stalled = feas_at_check is None or feas > 0.5 * feas_at_check
                feas_at_check = feas if feas_at_check is None else min(feas_at_check, feas)
            if check_due and stalled:
                bound = _infeasibility_bound(blocks, Mop, b, (r, y))
                if bound > stopping.feasibility_target():
                    status = "infeasible"
                    message = (f"no point of the sets satisfies the consistency constraints: "
                               f"||Mx - b|| >= {bound:.3g} everywhere (certified by the LMOs)")
                    break

            # ---- step sizes per block (line search on L(., y) restricted to each
            # block), one safeguarding scale for the combined move; x and r move
            g = None  # the sweep's fresh gradients need not coexist with this one
            if sweep == "jacobi":
                moved = jacobi_step(proposals, steps, blocks, objective, x, r, grad, dual_term, f, lam_value, cols,
                                    curvature_fn, quadratic, line_search, backtracking)
            else:
                moved, taken = gauss_seidel_sweep(proposals, steps, blocks, objective, Mop, x, r, y, grad, f,
                                                  lam_value, cols, curvature_fn, quadratic, line_search,
                                                  backtracking, ctx, dual_term=dual_term)
                proposals = [taken.get(k, p) for k, p in enumerate(proposals)]
            drop = _commit(proposals, moved, steps, faces, step_counts)
            # release this step's full-size temporaries before the next gradient
            # (at d = 4000 each product-space vector is 256 MB)
            grad = dual_term = g = proposals = taken = None  # taken holds the directions too
            f, g = loop_value_and_grad(x)
            if proj_blocks:
                f, g, moved = _projection_step(proj_blocks, blocks, objective, Mop, m, x, r, y, lam_value, f, g,
                                               curvature_fn, quadratic, projection_memory, buffers)
                step_counts["projection"] += int(moved)
            if faces:
                f, g = _inface_steps(faces, blocks, objective, Mop, m, x, r, y, lam_value, f, g,
                                     curvature_fn if quadratic else None, step_counts)
            # ---- dual step (eq. fwal); Alg. 1 repeats drop steps before it
            if drop and not pairwise and drops_in_row < max_drops:
                drops_in_row += 1
                continue
            drops_in_row = 0
            if m:
                eta_t = schedule.step(t, feas=float(norm(r)), lam=lam_value, gap=gap,
                                      gap_target=stopping.gap_target(),
                                      feas_target=stopping.feasibility_target(), dual_residual=dual_residual,
                                      dual_target=stopping.tol * stopping.accuracy_scale)
                buffers.add_scaled(y, eta_t, r)
                new_lam = schedule.penalty(lam_value)
                if new_lam != lam_value:
                    lam_value = new_lam
                    backtracking.lipschitz = None
    except KeyboardInterrupt:
        status, message = "interrupted", INTERRUPT_MESSAGE

    # ---- the returned point, its value and the warm-start state. An interrupt
    # may have landed anywhere in an iteration (after x moved but before its
    # active sets, r or f followed), so after one everything is rebuilt from x.
    # Another interrupt while this runs restarts it: it only reads the loop's
    # variables, so the answer is the same. A third one in a row is let
    # through: whoever presses Ctrl-C that often wants out.
    grad = dual_term = proposals = buffers = ctx.directions = None  # the work arrays are not needed for the result
    for attempt in range(MAX_FINISH_ATTEMPTS):
        try:
            return _finish(status, message, objective, blocks, Mop, b, b_norm, stopping, x, y, r, f, gap,
                           active, faces, best, t, start, lam_value, schedule, backtracking, history,
                           step_counts, printer)
        except KeyboardInterrupt:
            if attempt == MAX_FINISH_ATTEMPTS - 1:
                raise
            status, message = "interrupted", INTERRUPT_MESSAGE


INTERRUPT_MESSAGE = "interrupted by the user (KeyboardInterrupt)"
#: how many interrupts in a row the result assembly absorbs before letting one through
MAX_FINISH_ATTEMPTS = 3


def _finish(status, message, objective, blocks, Mop, b, b_norm, stopping, x, y, r, f, gap, active, faces,
            best, t, start, lam_value, schedule, backtracking, history, step_counts, printer):
    """Assemble the :class:`FWALResult` without changing the loop's variables (so it can be retried)."""
    interrupted = status == "interrupted" and message.startswith(INTERRUPT_MESSAGE)
    if interrupted:  # x is rebuilt below: work on copies (the loop's x stays as it was, for a retry)
        x, y = x.copy(), y.copy()
    # otherwise x and y are only read here, and the loop no longer writes them: the
    # result takes them as they are (no second pair of full-size copies)
    active, faces = dict(active), dict(faces)
    if interrupted:
        _make_active_sets_consistent(blocks, x, active, faces)
        r = Mop.matvec(x) - b
        f, gap = _value_and_gap(objective, blocks, Mop, x, y, r, lam_value)
    feas = float(norm(r))
    gap_f = None  # as in the loop: the FW gap of f, while the objective scale is unknown
    if stopping.needs_objective_scale and np.isfinite(f):
        gap_f = objective_gap(blocks, x, objective.value_and_grad(x)[1])

    # ---- return the best point found when the last one is not acceptable
    stopping.observe_value(f)
    dual_residual = dot(y + lam_value * r, r) if r.size else 0.0  # test (2) of stopping.py
    final_merit = stopping.merit(gap, feas, gap_f, dual_residual) \
        if np.isfinite(gap) and np.isfinite(f) and np.isfinite(feas) else np.inf
    if status != "optimal" and best is not None and best[0] < final_merit:
        x, y, f, gap = best[1].copy(), best[2].copy(), best[3], best[4]
        r = Mop.matvec(x) - b
        feas = float(norm(r))
        if status != "diverged":
            message += "; returning the best point found"
        # restored point: active sets no longer describe it
        active, faces = {}, {}
    feas_rel = feas / max(1.0, float(norm(x)), b_norm)
    solve_time = time.perf_counter() - start
    printer.footer(status, message, t, f, gap, feas, stopping, solve_time, step_counts)
    active.update({("face", k): aset for k, aset in faces.items()})
    state = SolverState(x.copy(), y.copy(), active, lam_value, schedule.current, backtracking.lipschitz)
    return FWALResult(
        x=x, y=y, status=status, message=message, objective=float(f), fw_gap=float(gap),
        feasibility=float(feas), feasibility_rel=float(feas_rel), iterations=int(t),
        solve_time=solve_time, lam=float(lam_value), eta=float(schedule.current), history=history,
        state=state, step_counts=dict(step_counts), objective_scale=stopping.objective_scale,
        feasibility_scale=stopping.feasibility_scale, tol=stopping.tol, feas_tol=stopping.feas_tol,
    )


def _is_sound(aset):
    """True when an active set is a valid decomposition: as many weights as atoms, positive, summing to one.

    Paper eq. (active_set_decomposition): x = sum_v alpha_v v with alpha in
    the simplex. An update cut short (an interrupt between changing the
    weights and the atoms) breaks this.
    """
    try:
        atoms = list(aset.atoms)
        weights = np.asarray(aset.weights, dtype=float)
    except Exception:  # a half-built object: not usable whatever went wrong
        return False
    return (len(atoms) == weights.size == len(aset) > 0 and bool(np.all(np.isfinite(weights)))
            and bool(np.all(weights > 0)) and abs(float(weights.sum()) - 1.0) <= 1e-8)


def _rebuilt_active_set(aset):
    """A fresh ActiveSet with the same atoms and weights (its internal indexes rebuilt from scratch)."""
    atoms, weights = list(aset.atoms), [float(w) for w in aset.weights]
    from_atoms = getattr(ActiveSet, "from_atoms", None)
    if from_atoms is not None:
        return from_atoms(atoms, weights)
    fresh = ActiveSet(atoms[0])
    total = weights[0]
    for atom, w in zip(atoms[1:], weights[1:]):
        # adding atom with step w / (total + w) scales the earlier weights by total / (total + w)
        total += w
        fresh.fw_update(atom, w / total)
    return fresh


def _make_active_sets_consistent(blocks, x, active, faces):
    """After an interrupt: every kept active set is rebuilt and x[block] set to its point.

    An interrupt between ``x += gamma d`` and the active-set update leaves the
    set describing the previous point; one inside an update can leave its
    internal index stale. A sound set is rebuilt (fresh internals) and its
    point, a point of the block's set, becomes x[block]; an unsound one is
    dropped (x[block], which only moves by convex combinations, stays; a warm
    start then restarts that block).
    """
    for table in (active, faces):
        for k, aset in list(table.items()):
            if not _is_sound(aset):
                del table[k]
                continue
            fresh = _rebuilt_active_set(aset)
            x[blocks[k].slice] = fresh.dense(blocks[k].size)
            table[k] = fresh


def _value_and_gap(objective, blocks, Mop, x, y, r, lam):
    """f(x) and the FW gap of L(., y) at x (paper OPT2), computed from scratch."""
    f, g = objective.value_and_grad(x)
    grad = g + Mop.rmatvec(y + lam * r) if Mop.shape[0] else g
    gap = dot(x, grad)
    for blk in blocks:
        gap -= blk.lmo(grad[blk.slice]).dot(grad[blk.slice])
    return float(f), float(gap)


def _fallback_penalty(objective_scale, feasibility_scale):
    """lam = objective scale / feasibility scale^2 (units of f / ||Mx - b||^2), else 1."""
    if objective_scale > 0 and feasibility_scale > 0 and math.isfinite(objective_scale / feasibility_scale ** 2):
        return objective_scale / feasibility_scale ** 2
    return 1.0


def _inface_steps(faces, blocks, objective, Mop, m, x, r, y, lam, f, g, curvature_fn, step_counts):
    """In-face corrective steps on low-rank blocks (see :mod:`fwmodel.engine.inface`)."""
    from .inface import inface_step

    dual_term = y + lam * r
    grad = g + Mop.rmatvec(dual_term) if m else g
    moved = False
    for k, aset in list(faces.items()):
        blk = blocks[k]
        sl = blk.slice
        n = x.size

        def merit(d_block, _sl=sl):
            d = np.zeros(n)
            d[_sl] = d_block
            Md = Mop.matvec(d) if m else np.zeros(0)
            slope = dot(grad[_sl], d_block)
            pen_lin = dot(dual_term, Md) if m else 0.0
            pen_quad = lam * dot(Md, Md) if m else 0.0
            curv = None
            if curvature_fn is not None:
                c = curvature_fn(x, d)
                curv = None if c is None else float(c) + pen_quad

            def phi(gm):
                return objective.value(x + gm * d) - f + gm * pen_lin + 0.5 * gm * gm * pen_quad

            merit.last = (d, Md)
            return slope, curv, phi

        out = inface_step(blk.face, aset, x[sl], grad[sl], merit)
        if out is None:
            continue
        gamma, d_block, new_set = out
        d, Md = merit.last if np.array_equal(merit.last[0][sl], d_block) else (None, None)
        if d is None:
            d = np.zeros(n)
            d[sl] = d_block
            Md = Mop.matvec(d) if m else np.zeros(0)
        x += gamma * d
        if m:
            r += gamma * Md
        if new_set is not None:
            faces[k] = new_set
        step_counts["inface"] = step_counts.get("inface", 0) + 1
        moved = True
    if moved:
        f, g = objective.value_and_grad(x)
    return f, g


def _projection_blocks(blocks, projection):
    """Indices of the blocks that take projected-gradient steps from the start.

    True: the blocks with a cheap projection; False and "auto": none ("auto"
    adds blocks after a few iterations, :mod:`fwmodel.engine.projection_choice`).
    """
    if projection is True:
        return [k for k, blk in enumerate(blocks) if blk.project is not None and blk.cheap_projection]
    return []


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
        self._directions = {}  # block offset -> that block's direction array
        self._block = {}  # size -> the per-block gradient's array

    def lagrangian_grad(self, Mop, g, dual_term, cols=None):
        """g + M' (y + lam r): per block when ``cols`` shows two tied copies, else into an n-size buffer."""
        if cols is not None and BlockLagrangianGradient.applies(cols):
            return BlockLagrangianGradient(g, dual_term, cols, self.block_gradient)
        if self._grad is None:
            self._grad = np.empty(g.size)
        if Mop.shape[0]:
            return Mop.add_rmatvec(dual_term, g, out=self._grad)
        np.copyto(self._grad, g)
        return self._grad

    def block_gradient(self, size):
        """The array that holds one block's slice of the gradient of L(., y)."""
        if size not in self._block:
            self._block[size] = np.empty(size)
        return self._block[size]

    def dual_term(self, r, y, lam):
        """y + lam r, written into the reused buffer."""
        if self._dual is None:
            self._dual = np.empty(r.size)
        np.multiply(r, lam, out=self._dual)
        self._dual += y
        return self._dual

    def add_scaled(self, y, eta, r):
        """y += eta * r (the dual step), with eta * r formed in the dual term's array (free by then)."""
        if self._dual is None or self._dual.size != r.size:
            y += eta * r
            return
        np.multiply(r, eta, out=self._dual)  # the same roundings as y += eta * r
        y += self._dual

    def direction(self, block):
        """The array lent to ``block``'s step for its direction (``ctx.directions``, see engine/steps.py)."""
        d = self._directions.get(block.offset)
        if d is None or d.size != block.size:
            d = self._directions[block.offset] = np.empty(block.size)
        return d


def _projection_step(proj_blocks, blocks, objective, Mop, m, x, r, y, lam, f, g, curvature_fn, quadratic, memory,
                     buffers=None):
    """One projected-gradient step on L(., y) over the blocks with a cheap projection.

    For each such block, ``d_k = P_k(x_k - grad_k / L) - x_k`` with ``L`` the
    curvature of L(., y) along the gradient restricted to these blocks. When
    the Hessian of L(., y) on these blocks is a multiple of the identity (the
    copies of a variable in sum_squares(X - C) with star-tied copies, as in
    the covariance problem) ``x + d`` is the exact minimizer over them.
    ``x + gamma d`` stays in the sets for gamma in [0, 1]; gamma comes from
    an exact line search (quadratic objectives) or from backtracking with its
    own Lipschitz estimate (``memory["backtracking"]``: the FW step's
    directions have a different curvature). ``memory`` also carries L from
    one call to the next. Returns ``(f, g, moved)``. This is the block update of a (linearized) augmented-Lagrangian
    method; the FW-AL structure (one primal pass, then the dual step of eq.
    ``fwal``) is unchanged, and blocks without a cheap projection still move
    by LMOs only.
    """
    n = x.size
    buffers = buffers if buffers is not None else _Buffers()  # the driver's: no new full-size arrays
    dual_term = buffers.dual_term(r, y, lam)
    grad = buffers.lagrangian_grad(Mop, g, dual_term)
    slices = [blocks[k].slice for k in proj_blocks]

    def block_dot(a, b):  # <a, b> over the projection blocks (d is 0 elsewhere)
        return sum(dot(a[sl], b[sl]) for sl in slices)

    d = np.zeros(n)
    for sl in slices:
        np.negative(grad[sl], out=d[sl])
    gnorm2 = block_dot(d, d)
    if gnorm2 == 0.0:
        return f, g, False
    backtracking = memory.setdefault("backtracking", Backtracking())
    # L: for quadratic objectives, the curvature measured along the previous
    # projection direction (free: the exact line search computes it); at the
    # start, after lam changed, after a shortened step, and for other
    # objectives, the curvature along the gradient (a curvature pass and an M
    # product), else the backtracking estimate
    L = memory.get("L") if memory.get("lam") == lam else None
    if L is None:
        Md = Mop.matvec(d) if m else np.zeros(0)
        curv = curvature_fn(x, d) if curvature_fn is not None else None
        if curv is not None and float(curv) + lam * dot(Md, Md) > 0:
            L = (float(curv) + lam * dot(Md, Md)) / gnorm2
        else:
            L = backtracking.lipschitz or 1.0
    for k, sl in zip(proj_blocks, slices):
        target = d[sl]  # d = -grad here: target = x - grad / L, in place
        target *= 1.0 / L
        target += x[sl]
        d[sl] = blocks[k].project(target)
        d[sl] -= x[sl]
    Md = Mop.matvec(d) if m else np.zeros(0)
    slope = block_dot(grad, d)
    if not slope < 0:
        return f, g, False
    pen_lin = dot(dual_term, Md) if m else 0.0
    pen_quad = lam * dot(Md, Md) if m else 0.0
    grad = dual_term = None  # not needed below: free them before the curvature pass
    if quadratic and curvature_fn is not None:
        c = curvature_fn(x, d)
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
        return f, g, False
    for sl in slices:
        x[sl] += gamma * d[sl]
    if m:
        Md *= gamma
        r += Md
    f, g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(x)
    return f, g, True


def _propose(steps, blocks, x, grad, ctx):
    """Every block's proposal at x, and the FW gap of L(., y) (paper OPT2) summed over the blocks.

    Returns (proposals, gap, gap_known): a block that moves by projections
    (no step object) contributes its FW gap and proposes nothing; a lazy step
    that skipped its LMO contributes its last measured gap, and then
    ``gap_known`` is False (the stopping rule waits for a measured gap).
    """
    proposals, gap, gap_known = [], 0.0, True
    for k, blk in enumerate(blocks):
        xk, gk = x[blk.slice], grad[blk.slice]
        if steps[k] is None:
            gap += dot(xk, gk) - blk.lmo(gk).dot(gk)
            proposals.append(None)
            continue
        p = steps[k].propose(xk, gk, ctx)
        proposals.append(p)
        if p.gap is None:
            gap_known = False
            gap += steps[k].phi
        else:
            gap += p.gap
    return proposals, gap, gap_known


def _commit(proposals, moved, steps, faces, step_counts):
    """Each step object updates its bookkeeping for the step its block took; True after a drop step.

    A drop step (Alg. 1 line 11: the away or pairwise step went to its cap,
    removing an atom) is counted once per iteration.
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
        if k in faces and gm > 0:  # the low-rank block's atoms, for its in-face steps
            faces[k].fw_update(p.fw_atom, gm)
    if drop:
        step_counts["drop"] += 1
    return drop


class _StepContext:
    """What step objects read from the driver: the current penalty."""

    def __init__(self, lam):
        self.lam = lam
        self.gap_target = 0.0  # a block FW gap below which lazy steps call the LMO
        self.lazy_allowed = False  # False: every block calls its LMO this iteration
        self.directions = None  # lends each block an array for its direction (the driver's _Buffers)


def _last_kind(counts):
    return sum(counts.values())


def _infeasibility_bound(blocks, Mop, b, candidates):
    """A certified lower bound on min_{x in X} ||Mx - b||, from the LMOs.

    For any direction w and any x in X, ||Mx - b|| >= <w, Mx - b> / ||w||
    >= (sum_k min_{s in X_k} <(M'w)_k, s> - <w, b>) / ||w||. A positive bound
    proves that the sets cannot meet the consistency constraints. Candidate
    directions: the residual and the dual variable (which grows along the
    infeasible direction when the problem is infeasible).
    """
    best = 0.0
    for w in candidates:
        w_norm = float(norm(w))
        if w_norm == 0 or not np.isfinite(w_norm):
            continue
        z = Mop.rmatvec(w)
        total = -dot(w, b)
        for blk in blocks:
            total += blk.lmo(z[blk.slice]).dot(z[blk.slice])
        best = max(best, total / w_norm)
    return best
