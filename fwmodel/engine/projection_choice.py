"""projection="auto": which blocks take projected-gradient steps, chosen by measured cost.

A block whose set has a Euclidean projection (``Block.project``) can move by
a projected-gradient step on L(., y) (:class:`fwmodel.engine.projection_step.ProjectionStep`)
instead of a Frank-Wolfe step. A FW step adds one atom (one entry pair of an
L1 ball, one rank-one matrix of a trace-norm ball); a projection step moves
every entry or singular value at once. Which one pays depends on the
solution (a FW iterate needs about as many iterations as the solution has
atoms) and on the costs: an L1 soft-thresholding costs about an LMO, while a
trace-norm projection is a full eigendecomposition, O(d^3) against the
O(d^2) Lanczos products of the LMO (paper Sec. 5, Fig. 3).

The rule. A block whose set declares its projection about as cheap as its
LMO (``cheap_projection``: L1 and L2 balls, boxes) takes projection steps
from the first iteration: there is nothing to measure (paper Sec. 5: the
L1 ball's soft-thresholding and its LMO are both one pass over the
entries, up to a sort). The other blocks start with FW steps; after ``PROBE_ITERATIONS``
iterations :class:`AutoProjection` knows what an iteration costs on this
problem and this machine (Lanczos LMOs, line searches, vector passes: at
d = 200 an iteration took 20x the time of one gradient and one LMO at the
starting point, so a measurement before the first iteration misjudges it).
It then times one projection per candidate block, at the current point, and
switches the blocks whose projection costs at most ``MAX_ITERATIONS``
iterations to projection steps for the rest of the solve. The decision is
taken again, for the blocks left, after 2x, 4x, ... as many iterations (an
iteration gets dearer as the solve goes on; see :class:`AutoProjection`).
A block whose
``projection_estimate()`` exceeds ``ESTIMATE_MARGIN`` budgets is not timed
at all (a d = 4000 trace-norm projection takes ~20 s on one core).

Why these numbers (benchmarks/RESULTS.md, "Trace-norm defaults"; one core).
On L1Ball ∩ TraceNormBall with both balls binding, the solution's
trace-norm copy has high rank (44 of 60 and 193 of 200 on the ``lrs``
model of benchmarks/trace_defaults.py, 979 of 1000 on the paper's covariance
problem at the 1e-3 level) and FW steps on it ended at max_iter far from the
optimum, while with both copies projected the same models end "optimal",
faster than CVXPY + SCS. On the paper's problem, a trace-norm projection
against an iteration once the solve is under way (FW on the trace-norm copy,
projection steps on the L1 copy): 0.28 s against 0.12 s at d = 1000 (ratio
2; projecting both copies reached relative infeasibility 4.6e-4 after 60 s
where the L1-only projection steps left 0.15), 2.25 s against 0.5-0.6 s at
d = 2000 (ratio 4; projection splitting reached 1e-2 suboptimality in 56 s,
FW-AL with FW steps on the trace-norm copy not in 150 s), 19.7 s against
2.7 s at d = 4000 (ratio 7; the two tied at a loose accuracy and an
iteration of either costs seconds); at d = 400, 15-22 ms against 11-15 ms.
``MAX_ITERATIONS = 5`` therefore projects up to d of about 2000 on one core
and keeps the LMO beyond, where its O(d^2) cost is the point of FW-AL. The
first iterations are much cheaper (1 ms at d = 400, 0.03 s at d = 1000),
hence the decisions taken again as the solve goes on; each block's
projection is timed once.

On a model made only of polytopes, the blocks that project are its L1
balls, simplices and capped simplices (cheap projections that are not boxes:
a box keeps its exact per-coordinate FW steps), from the start, and its Birkhoff polytopes where their
projection's measured cost fits the budget above, with or without rows (equality rows, the slacks of inequality rows),
where the objective is curved and reads the block as its variable's only
copy. A vertex (BPCG) iterate needs about one iteration per atom of the
solution and then some; a projection step moves every entry at once.

* Without rows: least squares in an L1 ball (80 x 200, radius 5: 65
  nonzeros at the optimum) took 3,620 BPCG iterations against 763
  projection steps, 4.2x the time; logistic regression in an L1 ball 58
  against 12 and 200 against 11 iterations (benchmarks/RESULTS.md,
  "Projection steps for L1 balls without rows (round 9)").
* With rows (benchmarks/RESULTS.md, "Projection steps on models with rows
  (round 10)"; benchmarks/rows_projection.py): least squares in an L1 ball
  with 3 equality rows 641 -> 212 iterations, with 10 rows 2,240 -> 275,
  with 5 inequality rows 452 -> 73. Boxes stay on vertex steps: projecting
  the box of the capped portfolio when it was two copies tied by rows
  took 482 iterations against 274, 2x the time (on
  benchmarks/rows_projection.py's instance 507 against 343), and
  projecting the slacks' box too of 5 inequality rows 1,159 against 73.
* The Birkhoff polytope (``BirkhoffPolytope``: semismooth Newton on the
  projection's dual, ``sets/_birkhoff_projection.py``) declares a projection
  that is not cheap (a few O(n^3) Newton steps, against one O(n^3)
  assignment LMO): it is a candidate on polytope models under the same
  conditions, but is timed first (:func:`timed_warm`: the Newton
  projection starts from its previous multipliers, so it is timed on
  nearby points in turn, as a solve calls it) and projects when that costs
  at most ``MAX_ITERATIONS`` iterations. The projection of a matrix C onto
  it then takes one projection step where vertex steps needed about one
  iteration per permutation of X*'s face (tens of thousands at n = 200):
  at n = 200, 6 iterations against 1,577 (benchmarks/RESULTS.md, "The
  Birkhoff polytope's Euclidean projection").
* A capped simplex (a simplex and a box on one variable, one set where no
  other set and no row touches the variable): the portfolio of
  ``benchmarks/zoo.py`` took 8 projection steps against 34 BPCG
  iterations, a capped row-stochastic projection 1 against 21
  (benchmarks/RESULTS.md, "Capped simplices as one set (round 10)").
* An L1 ball tied to another set on the same variable (an L1 ball and a
  box on x: two copies, x's value their average) keeps vertex steps,
  although projecting it took 10x fewer iterations (460 -> 43, 1,420 ->
  223): the projected copy's difference to the other copy is dense, and
  the average then leaves the L1 ball by up to sqrt(n) / 2 times the
  residual that the stopping rule bounds. On the random models of
  benchmarks/trust_fuzz.py the returned point's violation of the sets grew
  5-10x on such models, and one went past the cross-check's 1e-3 (2.2e-3
  against 5.2e-4 with vertex steps, whose residual is sparse).
* An L1 block the objective does not read (an L1 ball of ``D @ x``, a block
  of the expression tied to x by rows: the TV denoiser of benchmarks/zoo.py)
  keeps vertex steps: its projection step is only the penalty's pull
  towards D x, and it took 850 iterations against 430. Except a set that
  asks for projections although unread (``projects_unread``: the hidden
  excess s of a hinge budget ``fm.sum(fm.pos(e)) <= t``, dense at the
  optimum, one entry per binding row): least squares with a hinge budget
  over 1,000 rows took 8,700 iterations with vertex steps on s, 228 with
  projections; 200 rows 1,180 against 198 (benchmarks/RESULTS.md, "Hinge
  budgets: the hidden excess projected"). Under a linear objective it
  keeps vertex steps too (the rule below): the 60 first models of
  benchmarks/hinge_tails.py took 3,181 iterations so, 4,476 projected.
* A linear objective keeps FW steps: its optimum is a vertex, found by an
  LMO call (one iteration against up to 91). Linear is measured, not read
  from the objective's structure: a quadratic whose curvature along its
  first FW direction is below ``schedules.NEARLY_LINEAR`` (1e-3) of its
  slope counts as linear (:func:`nearly_linear`), the same test by which it
  gets a linear objective's penalty. ``1e-6 * sum_squares(A x - b) + c' x``
  (or the weight a Parameter set to 0) in an L1 ball with one equality row
  took 7,022 projection steps against 29 vertex steps, as many as ``c' x``
  alone; eight random instances 244-1,778 against 24-30
  (benchmarks/near_linear.py; benchmarks/RESULTS.md, "Nearly linear
  objectives keep vertex steps"). Elsewhere, a linear
  objective keeps FW and in-face steps on a trace-norm or PSD ball on
  which it is flat along a face (:func:`flat_linear_face`).
* A step kind asked for by name (``step="fw"``, "away", "pairwise") is
  taken on every block: the driver then runs projection="auto" as False
  (before, a model with a block that is not a polytope projected its cheap
  blocks whatever the step asked, and every step kind gave the same
  iterates). ``projection=True`` with a named step still projects.

When every block projects, the dual schedule takes the method of
multipliers' step eta = lam (``primal_steps_are_projections``); through
general rows it may still halve lam, since a penalty stiffer than the rows
need shortens every projected-gradient step (``fwal._multiplier_step_of_projections``).

A solve's result then depends on the measured times (a loaded machine can
move a borderline block to the other side); ``projection=True`` or ``False``
fixes the choice.
"""
from __future__ import annotations

import time

import numpy as np

#: iterations run with FW steps before the choice (iteration 0 pays one-time
#: costs: fresh memory, the first Lanczos runs, the BLAS-or-einsum timings)
PROBE_ITERATIONS = 4
#: a block takes projection steps when one projection costs at most this many iterations
MAX_ITERATIONS = 5.0
#: a projection whose ``projection_estimate()`` exceeds this many budgets is not timed.
#: The trace-norm estimate errs high (by up to ~2x), so 1 can skip a block whose
#: projection would just fit the budget, a borderline case either way; 2 made the
#: d = 4000 demo time a 15 s eigendecomposition (estimate 24-26 s, budget 5 iterations
#: of 1.7-2.5 s) that was then not taken: a quarter of its 60 s budget
ESTIMATE_MARGIN = 1.0


def timed(fn, *args):
    """(seconds, result) of a call: the best of three when a call takes under 10 ms (timer and load noise)."""
    t0 = time.perf_counter()
    out = fn(*args)
    elapsed = time.perf_counter() - t0
    for _ in range(2):
        if elapsed >= 0.01:
            break
        t0 = time.perf_counter()
        out = fn(*args)
        elapsed = min(elapsed, time.perf_counter() - t0)
    return elapsed, out


def polytope_may_project(blk):
    """Whether a polytope block may take projection steps under projection="auto" on a product of polytopes:
    it has a projection and is not a box (a box keeps its exact per-coordinate FW steps). A cheap one
    (L1 balls, capped simplices) projects from the start; another one (the Birkhoff polytope's Newton
    projection) when :func:`choose` measures it at most ``MAX_ITERATIONS`` iterations."""
    return blk.project is not None and not blk.is_box and blk.intervals is None


#: points of a warm-started projection's timing (:func:`timed_warm`): the first warms it up, the others are timed
WARM_POINTS = 4


def step_curvature(curvature, x, g, sl):
    """L = d' Hf d / ||d||^2 along d = -g on the block ``sl`` (0 elsewhere), the curvature by which a
    projected-gradient step scales its target ``x - g / L`` (``ProjectionStep.take``, without the
    penalty's term); 1 where f tells none (a linear objective) or it is not positive and finite."""
    if curvature is None:
        return 1.0
    d = np.zeros(x.size)
    np.negative(g[sl], out=d[sl])
    dd = float(np.dot(d[sl], d[sl]))
    c = curvature(x, d)
    if c is None or not dd > 0:
        return 1.0
    L = float(c) / dd
    return L if L > 0 and np.isfinite(L) else 1.0


def timed_warm(project, x, step, point):
    """Seconds of a warm-started projection as a solve calls it: the least over the targets
    ``x - (1 + 2^-(j + 2)) step``, j = 1 .. ``WARM_POINTS`` - 1, each projected from the state of the one
    before (``x - step``, in ``point``, starts it): targets that settle, as a solve's do (``step``: the
    gradient over f's curvature, :func:`step_curvature`: the projected-gradient step's own target).

    Timing one point again, as :func:`timed` does, would measure a warm start at the answer itself
    (the Birkhoff projection's Newton then takes no step: 0.8 ms at n = 200 where a solve's projections
    took 3-4 ms), and its first call a cold start (10-14 ms): neither is what the solve's steps pay.
    Targets at a unit step ``x - g`` instead of ``x - g / L`` (L = 2 for ``||X - C||^2``, whose target
    is then C) were near permutations, where Newton needs 7-10 steps: 10-12 ms at n = 200 against 1-2 ms
    per iteration, though the solve took one projection (6 iterations against 328 with vertex steps).
    """
    np.subtract(x, step, out=point)
    project(point)
    best = np.inf
    for j in range(1, WARM_POINTS):
        np.multiply(step, -(1.0 + 0.5 ** (j + 2)), out=point)
        point += x
        t0 = time.perf_counter()
        project(point)
        best = min(best, time.perf_counter() - t0)
    return best


def candidates(blocks, rows=0, keep_vertex_steps=False, read_alone=None):
    """Blocks that projection="auto" may switch to projection steps.

    On a product of polytopes: the blocks with a projection that are not
    boxes (:func:`polytope_may_project`: L1 balls, a capped simplex, cheap,
    from the start; the Birkhoff polytope, measured; a box keeps its exact
    per-coordinate FW steps), with or without rows (``rows``, M's, no longer
    changes the answer: kept for the callers), unless ``keep_vertex_steps`` (the driver
    sets it for a linear objective, minimized at a vertex that FW steps
    reach by their LMO calls, and for a quadratic measured nearly linear:
    :func:`nearly_linear`; a step kind asked for by name turns "auto" off
    altogether). ``read_alone`` (block slice -> bool;
    the driver's ``fwal._read_alone``): an L1 block that the objective does
    not read (a ball of ``D @ x``), or reads as one of several tied copies of
    its variable (an L1 ball and a box on x), keeps its vertex steps (a simplex
    whose variable's other copies are boxes is read alone: ``fwal._read_alone``), unless
    its set ``projects_unread`` (a hinge budget's hidden excess). They
    project from the start (see the module docstring). Elsewhere: every
    block with a projection (:class:`AutoProjection` leaves out, under a
    linear objective, a PSD or trace-norm ball on which f is flat along a
    face: :func:`flat_linear_face`; and a linear objective, minimized at a
    vertex, keeps the vertex steps of a polytope whose projection is not
    cheap: the Birkhoff polytope).
    """
    if all(blk.is_polytope for blk in blocks):
        if keep_vertex_steps:
            return []
        return [k for k, blk in enumerate(blocks)
                if polytope_may_project(blk) and (read_alone is None or read_alone(blk.slice) or blk.projects_unread)]
    # a linear objective: a polytope whose projection is measured (the Birkhoff polytope) keeps its vertex
    # steps here too (fuzz model 44, PSD and Birkhoff sets under c' X: 179 iterations so, 239 projected)
    return [k for k, blk in enumerate(blocks) if blk.project is not None
            and not (keep_vertex_steps and blk.is_polytope and not blk.cheap_projection)]


def nearly_linear(objective, blocks, x, g):
    """Whether a quadratic objective is measured nearly linear over the sets: along its first FW
    direction d = s - x from ``x`` (s the product of the blocks' LMO vertices at the gradient ``g``),
    its curvature d' Hf d is below ``schedules.NEARLY_LINEAR`` times the slope |<g, d>|, so over a
    whole step across the sets f moves by less than that fraction through its curvature.

    The same test (:func:`fwmodel.engine.schedules.nearly_linear_along`), at the same point and direction,
    by which :func:`fwmodel.engine.schedules.default_penalty`
    gives such an objective the slope's penalty, as to a linear one; the driver then keeps the vertex steps
    of a linear objective on products of polytopes too (:func:`candidates`). With projected-gradient
    steps on an L1 ball and that penalty, a linear objective plus ``1e-6 * sum_squares(A x - b)`` (or a
    weight Parameter set to 0) with one equality row ran 7,022 iterations, where the vertex steps took 29
    (benchmarks/near_linear.py). Only for a quadratic, whose curvature is the same at every point;
    False where the objective does not tell its curvature, or the slope is 0 (x already minimizes the
    linearization: nothing measured).
    """
    from .schedules import nearly_linear_along, toward_vertices

    curvature = getattr(objective, "curvature", None)
    if curvature is None or not getattr(objective, "is_quadratic", False):
        return False
    d = toward_vertices(blocks, x, lambda blk: g[blk.slice])
    slope = abs(float(np.dot(g, d)))
    if not (slope > 0 and np.isfinite(slope)):
        return False
    c_f = curvature(x, d)
    return c_f is not None and nearly_linear_along(float(c_f), slope)


def choose(blocks, ks, iteration_time, x, g, max_iterations=MAX_ITERATIONS, measured=None, workspace=None,
           curvature=None):
    """The blocks among ``ks`` whose projection at ``x - g`` costs at most ``max_iterations`` iterations.

    ``curvature``: the objective's ``(x, d) -> d' Hf d`` (or None): a warm-started projection is timed
    at the projected-gradient step's own targets, ``x - g / L`` with L f's curvature along g on the block
    (:func:`timed_warm`), where its cost depends on the point.

    ``measured`` (block -> seconds) keeps the projection times already taken:
    a block is timed once per solve, whatever the number of decisions.
    ``workspace``: size -> a free array of that size for the point (the driver's
    per-block gradient array, free before the sweep), else one is made.
    """
    budget = max_iterations * iteration_time
    measured = {} if measured is None else measured
    chosen = []
    for k in ks:
        blk = blocks[k]
        if k not in measured:
            if blk.projection_estimate is not None and blk.projection_estimate() > ESTIMATE_MARGIN * budget:
                continue
            sl = blk.slice
            point = np.subtract(x[sl], g[sl], out=workspace(blk.size) if workspace is not None else None)
            if blk.projection_warm_starts:
                measured[k] = timed_warm(blk.project, x[sl], g[sl] / step_curvature(curvature, x, g, sl), point)
            else:
                # projected in the point's own array where the set can (no second block-size array)
                measured[k] = timed(lambda: blk.project(point, out=point) if blk.project_in_place
                                    else blk.project(point))[0]
        if measured[k] <= budget:
            chosen.append(k)
    return chosen


#: relative width of a tie between the extreme eigenvalues (singular values) of a linear objective's gradient
FLAT_TIE = 1e-8


def flat_linear_face(blk, g_k):
    """Whether a linear objective with gradient ``g_k`` on ``blk`` (flat, in its variable's units) is
    minimized over the block's trace-norm or PSD ball on a face of positive dimension, not at one point: a
    PSD ball's gradient G with lambda_min(G) tied with the next eigenvalue or with 0 (within ``FLAT_TIE``
    of max |lambda|), a trace-norm ball's with its top singular value tied.

    f is then flat along that face and only the rows choose the point in it. There projected-gradient
    steps, 1 / (lam ||M||^2) long with no curvature of f to scale them, crawled along the face (min
    trace(G X), G = b b', X >> 0, trace(X) <= 0.5, `X[0, 1] >= 0.05`: max_iter at 3,000 iterations where FW
    and in-face steps took 46), while with one minimizer they often paid (benchmarks/RESULTS.md, "Linear
    objectives flat on a face of a PSD ball keep FW steps"). False for a block without a low-rank face,
    or whose gradient is not a matrix of the face's shape.
    """
    face = getattr(blk, "face", None)
    if face is None or g_k is None or len(face.shape) != 2 or min(face.shape) < 2:
        return False
    G = np.asarray(g_k, dtype=float)
    if G.size != face.shape[0] * face.shape[1] or not np.all(np.isfinite(G)):
        return False
    G = G.reshape(face.shape) / face.scale  # the gradient in the ball's z = scale x + offset
    if face.psd:
        if face.shape[0] != face.shape[1]:
            return False
        w = np.linalg.eigvalsh((G + G.T) / 2)
        width = FLAT_TIE * max(float(np.abs(w).max()), np.finfo(float).tiny)
        return bool(w[1] - w[0] <= width or abs(w[0]) <= width)
    sv = np.linalg.svd(G, compute_uv=False)
    return bool(sv[0] - sv[1] <= FLAT_TIE * max(float(sv[0]), np.finfo(float).tiny))


class AutoProjection:
    """Times the iterations, then picks the blocks to project (see the module docstring).

    In the driver: ``due(t)`` at the top of iteration t; when it returns
    True, ``choose(x, g)`` (g the objective's gradient at x) returns the
    blocks to switch now. The first decision comes after ``probe``
    iterations; later ones after 2x, 4x, ... as many (iterations
    ``probe * 2^j``), each from the mean time of the iterations since the
    previous one, for the blocks not switched yet. Early FW iterations are
    cheap (warm Lanczos starts on a well separated spectrum, few atoms);
    measured on the paper's problem at d = 400, the first ones took ~1 ms and
    the later ones 15 ms, about one trace-norm projection, so a single early
    decision kept FW steps that were not paying. A block, once switched,
    stays switched.
    """

    def __init__(self, blocks, probe=PROBE_ITERATIONS, max_iterations=MAX_ITERATIONS, projected=(), rows=0,
                 keep_vertex_steps=False, read_alone=None, linear_gradient=None):
        self.blocks = blocks
        # ``projected``: blocks that project from the start (declared cheap), not measured
        self.ks = [k for k in candidates(blocks, rows, keep_vertex_steps, read_alone) if k not in projected]
        # a linear objective: block slice, its gradient -> the gradient in its variable's units (the driver's
        # fwal._variable_gradient), to leave out the blocks on which f is flat along a face
        self.linear_gradient = linear_gradient
        self.probe = probe
        self.max_iterations = max_iterations
        self._window = None  # (iteration, clock) where the current timing window began
        self._next = probe + 1  # the earliest iteration of the next decision
        self.iteration_time = None
        #: blocks switched so far (None before the first decision)
        self.chosen = None
        #: block -> seconds of one projection, timed once
        self.measured = {}

    def due(self, t):
        if not self.ks:
            return False
        now = time.perf_counter()
        if self._window is None:  # timing starts at iteration 1 (0 pays one-time costs) and after each decision
            if t >= 1:
                self._window = (t, now)
            return False
        start, clock = self._window
        if t >= self._next and t > start:
            self.iteration_time = (now - clock) / (t - start)
            self._next = 2 * (t - 1) + 1
            return True
        return False

    def choose(self, x, g, workspace=None, curvature=None):
        new = choose(self.blocks, self.ks, self.iteration_time, x, g, self.max_iterations, self.measured, workspace,
                     curvature)
        self.ks = [k for k in self.ks if k not in new]
        if self.linear_gradient is not None:
            # tested only on the blocks chosen (their spectrum costs less than the projection just timed);
            # a linear objective's gradient does not move, so a flat block stays on FW steps for good
            new = [k for k in new
                   if not flat_linear_face(self.blocks[k], self.linear_gradient(self.blocks[k].slice, g))]
        self.chosen = (self.chosen or []) + new
        self._window = None  # the next window starts after this decision (not timing the projections)
        return new
