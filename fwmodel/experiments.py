"""The experiment of the paper's Sec. 5: FW-AL against projection splitting.

Problem (Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018, eq.
``constrained_sparse_low_rank``; data from :mod:`fwmodel.datasets`)::

    minimize ||mask * (S - Sigma_hat)||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2

Two solvers, each timed on its own clock (the time spent measuring it is
excluded):

* fwmodel: the model written in four lines and solved by FW-AL with default
  options; one Lanczos eigenpair (eq. ``LMO_trance_norm``) for the FW step
  on the trace-norm ball and an arg-max on the L1 ball, O(d^2) each; after a
  few iterations ``projection="auto"`` moves the copies whose projection
  costs at most five iterations by projected-gradient steps instead (the
  L1 copy always: soft-thresholding is as cheap as its LMO; the trace-norm
  copy up to d of about 2000 on one core, see
  ``fwmodel.engine.projection_choice``).
* GFB: the generalized forward-backward splitting of Raguet, Fadili & Peyre
  (2013), the baseline of the paper and of Richard, Savalle & Vayatis
  (2012): one projection onto each set per iteration; the projection onto
  the trace-norm ball needs a full eigendecomposition, O(d^3).

Both methods produce two points, one in each set (FW-AL: the copies of S,
read with ``prob.point_in(set)``; GFB: the two projections). Each method's
estimate is measured under the same three rules (:data:`ESTIMATES`): the
average of the two points (fwmodel's ``S.value``), the point in the L1 ball
(sparse) and the point in the trace-norm ball (low rank). The default
estimate ``S`` is the average, its
*relative infeasibility* is ``||a - b||_F / scale`` (scale: the Frobenius
norm of the reference solution) and its *support* is ``|S_ij| > 1e-2`` (as
in the paper's Fig. 2), scored against the support of the true Sigma
(recall, precision, F1). The paper's other measure is the *estimate error*
``||S - Sigma||_F / ||Sigma||_F``: both need only the true Sigma.

Suboptimality needs f*. :func:`certified_reference` runs GFB until a dual
bound certifies its answer (``f_lower <= f* <= f_upper`` with a relative gap
chosen by the caller), instead of trusting a run cut off by a clock.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .datasets import CovarianceData, sparse_low_rank_covariance

__all__ = [
    "Trajectory",
    "build_problem",
    "run_fwmodel",
    "run_gfb",
    "run_cvxpy",
    "reference_solution",
    "certified_reference",
    "Reference",
    "dual_lower_bound",
    "feasible_point",
    "estimate_error",
    "estimate_checkpoints",
    "statistical_floor",
    "ESTIMATES",
    "f1_score",
    "support_scores",
    "summarize",
    "markdown_table",
    "plot_comparison",
    "sparse_low_rank_covariance",
]

#: the name of fwmodel's run with Frank-Wolfe-type steps only (``projection=False``: FW, pairwise and
#: in-face steps, no projection), the paper's algorithm
FW_ONLY = "fwmodel (projection=False)"

#: entries with |S_ij| above this count as the estimated support (paper, Fig. 2)
SUPPORT_THRESHOLD = 1e-2

#: the estimate rules, the same for both methods: the average of the two points (fwmodel's
#: ``S.value``; GFB's iterate), the point in the L1 ball (fwmodel's ``prob.point_in(l1)``; GFB's
#: projection p1), the point in the trace-norm ball (``prob.point_in(trace)``; GFB's p2)
ESTIMATES = ("average", "L1-ball point", "trace-ball point")


# ----------------------------------------------------------------- metrics
def support_scores(S, support, threshold=SUPPORT_THRESHOLD):
    """(recall, precision, size) of the support ``|S_ij| > threshold`` against ``support``."""
    est = np.abs(S) > threshold
    hits = int(np.count_nonzero(est & support))
    size = int(np.count_nonzero(est))
    true = int(np.count_nonzero(support))
    recall = hits / true if true else 1.0
    precision = hits / size if size else 1.0
    return recall, precision, size


def f1_score(recall, precision):
    """The harmonic mean of recall and precision (0 when both are 0)."""
    return 2.0 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0


def estimate_error(S, sigma):
    """The paper's estimation error ``||S - Sigma||_F / ||Sigma||_F``."""
    return float(np.linalg.norm(S - sigma)) / max(float(np.linalg.norm(sigma)), 1e-300)


@dataclass
class Trajectory:
    """A method's trajectory: cheap values at every iteration, full metrics at checkpoints.

    ``time``, ``objective``, ``infeasibility`` (relative) are recorded at
    every iteration; ``checkpoints`` (a list of dicts with keys time,
    objective, infeasibility, distance, recall, precision, nnz) at times
    growing geometrically. ``final`` is the last estimate S.
    """

    method: str
    time: list = field(default_factory=list)
    objective: list = field(default_factory=list)
    infeasibility: list = field(default_factory=list)
    checkpoints: list = field(default_factory=list)
    final: np.ndarray = None
    info: dict = field(default_factory=dict)

    def arrays(self):
        return np.asarray(self.time), np.asarray(self.objective), np.asarray(self.infeasibility)


#: checkpoints (the estimate's error and F1, their cost not billed to the method) are
#: taken from 1 ms on (at small d the first iterates are the closest to Sigma: a
#: later first checkpoint missed them) at times growing by this factor, so the race's
#: times are accurate to 5%, or to one iteration where iterations take longer (at
#: d = 1000 an earlier grid, 30% apart, decided the race: 0.94x or 1.57x by the grid,
#: 2.1-3.6x scored at every iteration; benchmarks/RESULTS.md, "The Fig. 2 race, final
#: main of this round")
CHECKPOINT_GROWTH = 1.05


class _Recorder:
    """Keeps a method's clock and its trajectory; measuring is not billed to the method."""

    def __init__(self, method, data, reference=None, scale=None, time_limit=None, first_checkpoint=1e-3,
                 checkpoint_growth=CHECKPOINT_GROWTH, progress=None):
        self.traj = Trajectory(method)
        self.data = data
        self.reference = reference
        if scale is None:
            scale = float(np.linalg.norm(reference)) if reference is not None else float(np.linalg.norm(data.sigma))
        self.scale = max(scale, 1e-300)
        self.ref_norm = float(np.linalg.norm(reference)) if reference is not None else None
        self.time_limit = time_limit
        self.next_checkpoint = first_checkpoint
        self.growth = checkpoint_growth
        self.progress = progress
        self.paused = 0.0
        self.t0 = None

    def start(self):
        self.t0 = time.perf_counter()
        self.paused = 0.0

    def now(self):
        return time.perf_counter() - self.t0 - self.paused

    def _scores(self, S):
        recall, precision, size = support_scores(S, self.data.support)
        return dict(error=estimate_error(S, self.data.sigma), f1=f1_score(recall, precision), recall=recall,
                    precision=precision, nnz=size)

    def checkpoint(self, t, f, infeas, S, points=None):
        dist = float(np.linalg.norm(S - self.reference)) / max(self.ref_norm, 1e-300) \
            if self.reference is not None else float("nan")
        entry = dict(time=t, objective=f, infeasibility=infeas, distance=dist, **self._scores(S))
        # every rule of ESTIMATES: the average (S itself) and each point in one set
        entry["estimates"] = {ESTIMATES[0]: {k: entry[k] for k in ("error", "f1", "recall", "precision", "nnz")}}
        for name, P in (points or {}).items():
            entry["estimates"][name] = self._scores(P)
        self.traj.checkpoints.append(entry)

    def record(self, f, infeas_abs, point, force=False, points=None):
        """Record one iteration; ``point()`` gives S (called only at checkpoints).

        ``points()``, when given, returns {rule: point} for the other rules of
        :data:`ESTIMATES` (called only at checkpoints). Returns False when the
        time limit is reached.
        """
        t = self.now()
        enter = time.perf_counter()
        infeas = infeas_abs / self.scale
        self.traj.time.append(t)
        self.traj.objective.append(float(f))
        self.traj.infeasibility.append(infeas)
        done = self.time_limit is not None and t >= self.time_limit
        if force or done or t >= self.next_checkpoint:
            self.checkpoint(t, float(f), infeas, point(), points() if points is not None else None)
            while self.next_checkpoint <= t:
                self.next_checkpoint *= self.growth
        if self.progress is not None:
            self.progress(self.traj.method, t, len(self.traj.time), float(f), infeas)
        self.paused += time.perf_counter() - enter
        return not done


# ------------------------------------------------------------------ fwmodel
def build_problem(data, variable=None):
    """The model of eq. ``constrained_sparse_low_rank`` in fwmodel: ``(problem, X)``.

    ``fm.sum_squares(fm.multiply(mask, X - Sigma_hat))`` for the masked
    variant, ``fm.sum_squares(X - Sigma_hat)`` otherwise; one L1 ball and one
    trace-norm ball on the same variable (FW-AL copies X once per set).
    """
    import fwmodel as fm

    d = data.d
    X = fm.Variable((d, d), name="S") if variable is None else variable
    residual = X - data.sigma_hat
    if data.mask is not None:
        residual = fm.multiply(data.mask, residual)
    problem = fm.Problem(fm.Minimize(fm.sum_squares(residual)),
                         [fm.L1Ball(X, data.radius_l1), fm.TraceNormBall(X, data.radius_trace)])
    return problem, X


def _copies(problem):
    """{rule: set} for the point rules of :data:`ESTIMATES`: the L1 ball and the trace-norm ball of the model."""
    l1, trace = problem.constraints
    return {ESTIMATES[1]: l1, ESTIMATES[2]: trace}


def run_fwmodel(data, time_limit=10.0, max_iter=10**7, reference=None, scale=None, progress=None, name="fwmodel",
                **options):
    """Solve with fwmodel (FW-AL, default options unless given) and record the trajectory under ``name``."""
    rec = _Recorder(name, data, reference, scale, time_limit, progress=progress)
    t_build = time.perf_counter()
    problem, X = build_problem(data)
    copies = _copies(problem)

    def points_of(solved):
        """{rule: the copy held in that rule's set} of a callback state or of the solved problem."""
        return {name: solved.point_in(s) for name, s in copies.items()}

    def callback(state):
        return rec.record(state.objective, state.feasibility, lambda: state.value(X), points=lambda: points_of(state))

    rec.start()
    rec.paused -= time.perf_counter() - t_build  # the modeling time counts too
    problem.solve(max_iter=max_iter, callback=callback, **options)
    S = X.value
    traj = rec.traj
    traj.final = S
    if _returned_point_unseen(traj, problem):
        # the trajectory ends at the point the solve returned, billed at the time it returned
        rec.record(problem.value, problem.stats.feasibility, lambda: S, force=True, points=lambda: points_of(problem))
    elif not traj.checkpoints or traj.checkpoints[-1]["time"] < traj.time[-1]:
        rec.checkpoint(traj.time[-1], traj.objective[-1], traj.infeasibility[-1], S, points_of(problem))
    traj.info = dict(iterations=problem.stats.iterations, status=problem.status,
                     step_counts=problem.stats.step_counts, lam=problem.stats.lam)
    return traj


def _returned_point_unseen(traj, problem):
    """Whether the point ``problem.solve`` returned is not the last one its callback recorded.

    The callback sees iterations 0, ..., T - 1 of a solve that stops "optimal"
    at iteration T (the stopping test comes before the callback), so the
    returned iterate T is not in the trajectory; a solve that ends otherwise
    may return the best point it saw instead of its last (engine/finish.py),
    which shows as another objective value.
    """
    if not traj.time:
        return True
    if len(traj.time) <= problem.stats.iterations:
        return True
    return not math.isclose(problem.value, traj.objective[-1], rel_tol=1e-9)


# ---------------------------------------------------------------------- GFB
def _projectors(data):
    import fwmodel as fm

    X = fm.Variable((data.d, data.d))
    l1 = fm.L1Ball(X, data.radius_l1)
    trace = fm.TraceNormBall(X, data.radius_trace, symmetric=True)
    return l1.project, trace.project


class _GFBState:
    """One GFB iterate: ``S`` (the average), ``p1``, ``p2`` (the projections) and the trace-norm multiplier."""

    __slots__ = ("iteration", "S", "p1", "p2", "_normal", "_gamma")

    def __init__(self, iteration, S, p1, p2, normal, gamma):
        self.iteration, self.S, self.p1, self.p2 = iteration, S, p1, p2
        self._normal, self._gamma = normal, gamma

    def multiplier(self):
        """``Y = (U_2 - P_2(U_2)) / (2 gamma)``, a normal vector of the trace-norm ball at ``p2``.

        At a fixed point of GFB, ``grad f(S) + Y_1 + Y_2 = 0`` with ``Y_i`` in
        the normal cone of set i: ``Y_2`` is the multiplier of the
        consistency constraint in :func:`dual_lower_bound`.
        """
        return self._normal / (2.0 * self._gamma)


def _gfb_iterates(data, step=1.0, max_iter=10**6):
    """Generalized forward-backward splitting on eq. ``constrained_sparse_low_rank``: yields one :class:`_GFBState` per iteration.

    With weights 1/2 and step ``gamma = step / L`` (``L = 2``, the Lipschitz
    constant of the gradient of ``f``; GFB needs ``step < 2``)::

        G = grad f(S)
        z_i <- z_i + P_i(2 S - z_i - gamma G) - S     (i = 1: the L1 ball, 2: the trace-norm ball)
        S <- (z_1 + z_2) / 2
    """
    proj_l1, proj_trace = _projectors(data)
    d = data.d
    gamma = step / 2.0
    z1 = np.zeros((d, d))
    z2 = np.zeros((d, d))
    S = np.zeros((d, d))
    mask = data.mask
    for it in range(1, max_iter + 1):
        G = S - data.sigma_hat
        if mask is not None:
            G *= mask
        G *= 2.0 * gamma  # gamma * grad f(S)
        # the two prox inputs 2S - z_i - gamma G, one at a time to save memory
        U = 2.0 * S
        U -= G
        U -= z1
        p1 = proj_l1(U)
        z1 += p1
        z1 -= S
        np.subtract(2.0 * S - G, z2, out=U)
        del G
        p2 = proj_trace(U)
        z2 += p2
        z2 -= S
        U -= p2  # U_2 - P_2(U_2): in the normal cone of the trace-norm ball at p2
        S = 0.5 * (z1 + z2)
        yield _GFBState(it, S, p1, p2, U, gamma)
        del U


def run_gfb(data, time_limit=10.0, max_iter=10**6, reference=None, scale=None, progress=None, step=1.0):
    """Generalized forward-backward splitting (Raguet, Fadili & Peyre 2013) on eq. ``constrained_sparse_low_rank``.

    Each iteration (see :func:`_gfb_iterates`) takes one projection onto each
    set: soft-thresholding for the L1 ball, a full eigendecomposition
    (O(d^3)) for the trace-norm ball (the matrices are symmetric). The
    estimate ``S`` is the average of the two projections, which lie in their
    sets; their distance is the infeasibility. Stops at ``time_limit`` or
    ``max_iter``.
    """
    rec = _Recorder("GFB", data, reference, scale, time_limit, progress=progress)
    rec.start()
    state = None
    for state in _gfb_iterates(data, step=step, max_iter=max_iter):
        S = state.S
        points = {ESTIMATES[1]: state.p1, ESTIMATES[2]: state.p2}
        if not rec.record(data.loss(S), float(np.linalg.norm(state.p1 - state.p2)), lambda: S,
                          points=lambda: points):
            break
    traj = rec.traj
    traj.final = state.S
    if not traj.checkpoints or traj.checkpoints[-1]["time"] < traj.time[-1]:
        rec.checkpoint(traj.time[-1], traj.objective[-1], traj.infeasibility[-1], state.S,
                       {ESTIMATES[1]: state.p1, ESTIMATES[2]: state.p2})
    traj.info = dict(iterations=state.iteration, step=step)
    return traj


# ------------------------------------------------------ certified reference
def dual_lower_bound(data, Y):
    """A lower bound on the optimal value f* from any (d, d) multiplier ``Y``.

    Split S into a copy S_1 in the L1 ball and a copy S_2 in the trace-norm
    ball tied by S_1 = S_2 with multiplier Y. Weak duality gives, for every
    Y and every mu >= 0 (the multiplier of ||S_1||_1 <= beta_1)::

        f* >= min_{S_1} [f(S_1) + <Y, S_1> + mu ||S_1||_1] - mu beta_1
              + min_{||S_2||_* <= beta_2} <-Y, S_2>

    The last term is ``-beta_2 ||Y||_2`` (spectral norm, the dual of the trace
    norm). The first is separable: entry by entry a soft-thresholded
    quadratic, and for unobserved entries (mask 0) it is 0 if ``|Y_ij| <=
    mu`` and -infinity otherwise. The best ``mu`` solves
    ``sum_ij |S_1(mu)_ij| = beta_1``, found exactly from the sorted
    breakpoints (for the full variant it is the level of the L1 projection of
    ``Sigma_hat - Y / 2``). The bound is exact at an optimal Y.
    """
    Y = 0.5 * (np.asarray(Y, dtype=float) + np.asarray(Y, dtype=float).T)  # any Y is valid; symmetric is best here
    A = data.sigma_hat
    beta1 = data.radius_l1
    if data.mask is None:
        a, y, m = A.ravel(), Y.ravel(), np.ones(A.size)
        mu_min = 0.0
    else:
        seen = data.mask.ravel() > 0
        a, y, m = A.ravel()[seen], Y.ravel()[seen], data.mask.ravel()[seen]
        unseen = np.abs(Y.ravel()[~seen])
        mu_min = float(unseen.max()) if unseen.size else 0.0
    # entry ij: min_s m (s - a)^2 + y s + mu |s|  ->  s = soft(s0, mu w), s0 = a - y / (2m), w = 1 / (2m)
    s0 = a - y / (2.0 * m)
    w = 1.0 / (2.0 * m)
    size = np.abs(s0)
    breaks = size / w  # entry ij is nonzero for mu < breaks_ij
    order = np.argsort(-breaks)
    b_sorted = breaks[order]
    size_sum = np.cumsum(size[order])
    w_sum = np.cumsum(w[order])
    l1_at_break = size_sum - b_sorted * w_sum  # ||S_1(mu)||_1 at mu = b_sorted[j]: nondecreasing in j
    j = int(np.searchsorted(l1_at_break, beta1))
    if j >= l1_at_break.size:
        mu = 0.0  # even mu = 0 keeps S_1 inside the ball
    elif j == 0:
        mu = float(b_sorted[0])
    else:
        mu = float((size_sum[j - 1] - beta1) / w_sum[j - 1])
    mu = max(mu, mu_min, 0.0)
    s = np.sign(s0) * np.maximum(size - mu * w, 0.0)
    l1_part = float(np.sum(m * (s - a) ** 2 + y * s + mu * np.abs(s))) - mu * beta1
    spectral = float(np.abs(np.linalg.eigvalsh(Y)).max())  # full eigendecomposition: reliable, not iterative
    return l1_part - data.radius_trace * spectral


def feasible_point(data, S):
    """``S`` symmetrized and scaled down into both balls: ``(point, f(point))``, an upper bound on f*."""
    S = 0.5 * (S + S.T)
    l1 = float(np.abs(S).sum())
    trace = float(np.abs(np.linalg.eigvalsh(S)).sum())
    c = min(1.0, data.radius_l1 / l1 if l1 > 0 else 1.0, data.radius_trace / trace if trace > 0 else 1.0)
    point = c * S
    return point, data.loss(point)


@dataclass
class Reference:
    """A solution of eq. ``constrained_sparse_low_rank`` with a certified accuracy.

    ``S`` lies in both balls and ``f_upper = f(S)``; ``f_lower`` is a dual
    bound, so ``f_lower <= f* <= f_upper``. ``rel_gap = (f_upper - f_lower)
    / (f(0) - f_lower)`` bounds the error of a normalized suboptimality
    measured against ``f_upper``; for the full variant (f is 2-strongly
    convex) ``||S - S*||_F <= sqrt(f_upper - f_lower)``.
    """

    S: np.ndarray
    f_upper: float
    f_lower: float
    f0: float
    iterations: int
    seconds: float
    certified: bool

    @property
    def f_star(self):
        return self.f_upper

    @property
    def gap(self):
        return self.f_upper - self.f_lower

    @property
    def rel_gap(self):
        return self.gap / max(self.f0 - self.f_lower, 1e-300)

    @property
    def distance_bound(self):
        """Upper bound on ``||S - S*||_F / ||S||_F`` (valid for the full variant, where f is 2-strongly convex)."""
        return math.sqrt(max(self.gap, 0.0)) / max(float(np.linalg.norm(self.S)), 1e-300)


def certified_reference(data, gap_tol=1e-4, max_iter=100000, check_every=10, progress=None):
    """Run GFB until the certified relative gap is at most ``gap_tol``: a :class:`Reference`.

    Every ``check_every`` iterations: an upper bound (GFB's projection onto
    the L1 ball scaled into both balls, :func:`feasible_point`) and a lower bound (:func:`dual_lower_bound` with
    GFB's trace-norm multiplier). Each check costs about one GFB iteration.
    Stops when ``(f_upper - f_lower) / (f(0) - f_lower) <= gap_tol`` or after
    ``max_iter`` iterations (then ``certified`` is False and ``rel_gap`` says
    how accurate the result is). ``progress(iteration, seconds, rel_gap)``
    is called after each check.
    """
    if isinstance(gap_tol, bool) or not isinstance(gap_tol, (int, float, np.integer, np.floating)) or not gap_tol > 0:
        raise ValueError(f"gap_tol must be a positive number, got {gap_tol!r}")
    for name, value in (("check_every", check_every), ("max_iter", max_iter)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    f0 = data.loss(np.zeros((data.d, data.d)))
    t0 = time.perf_counter()
    best_S, upper, lower = np.zeros((data.d, data.d)), f0, -math.inf
    state = None
    for state in _gfb_iterates(data, max_iter=max_iter):
        if state.iteration % check_every and state.iteration != max_iter:
            continue
        point, value = feasible_point(data, state.p1)  # the L1 projection gave the best bounds in our runs
        if value < upper:
            best_S, upper = point, value
        lower = max(lower, dual_lower_bound(data, state.multiplier()))
        rel_gap = (upper - lower) / max(f0 - lower, 1e-300)
        if progress is not None:
            progress(state.iteration, time.perf_counter() - t0, rel_gap)
        if rel_gap <= gap_tol:
            break
    iterations = state.iteration if state is not None else 0
    certified = (upper - lower) / max(f0 - lower, 1e-300) <= gap_tol
    return Reference(S=best_S, f_upper=upper, f_lower=lower, f0=f0, iterations=iterations,
                     seconds=time.perf_counter() - t0, certified=certified)


def reference_solution(data, max_iter=100000, tol=1e-4):
    """A certified solution: ``(S_star, f_star, iterations)`` (see :func:`certified_reference`; ``tol`` is its ``gap_tol``)."""
    ref = certified_reference(data, gap_tol=tol, max_iter=max_iter)
    return ref.S, ref.f_star, ref.iterations


# -------------------------------------------------------------------- CVXPY
def run_cvxpy(data, solver="SCS", eps=1e-6, verbose=False):
    """CVXPY (``solver``) on the same problem: ``(S, f, seconds)`` (modeling and solve)."""
    import cvxpy as cp

    t0 = time.perf_counter()
    d = data.d
    X = cp.Variable((d, d))
    residual = X - data.sigma_hat
    if data.mask is not None:
        residual = cp.multiply(data.mask, residual)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(residual)),
                         [cp.sum(cp.abs(X)) <= data.radius_l1, cp.normNuc(X) <= data.radius_trace])
    kwargs = dict(eps=eps, max_iters=100000) if solver == "SCS" else {}
    problem.solve(solver=solver, verbose=verbose, **kwargs)
    seconds = time.perf_counter() - t0
    S = np.asarray(X.value)
    return S, data.loss(S), seconds


# ------------------------------------------------------------------ summary
def time_to_target(traj, f_star, f0, target, infeas_tol=1e-3):
    """First time with (f - f*) / (f0 - f*) <= target and relative infeasibility <= infeas_tol."""
    t, f, infeas = traj.arrays()
    ok = ((f - f_star) / (f0 - f_star) <= target) & (infeas <= infeas_tol)
    idx = np.flatnonzero(ok)
    return float(t[idx[0]]) if idx.size else float("nan")


def _at_time(traj, when):
    """The last checkpoint at or before ``when`` (None when there is none)."""
    best = None
    for c in traj.checkpoints:
        if c["time"] <= when * (1 + 1e-9):
            best = c
    return best


def checkpoint_time(traj, key, reached):
    """First checkpoint time at which ``reached(checkpoint[key])`` holds (NaN if never).

    Checkpoints are taken at times growing by :data:`CHECKPOINT_GROWTH` (5%), so
    this time is accurate to 5% or one iteration; ``time_to_target`` uses every
    iteration.
    """
    for c in traj.checkpoints:
        if reached(c[key]):
            return float(c["time"])
    return float("nan")


def estimate_checkpoints(traj, estimate=None):
    """The checkpoints of ``traj`` with error, F1, recall, precision of the rule ``estimate`` (None: the average)."""
    if estimate is None or estimate == ESTIMATES[0]:
        return traj.checkpoints
    out = []
    for c in traj.checkpoints:
        scores = c.get("estimates", {}).get(estimate)
        if scores is not None:
            out.append(dict(c, **scores))
    return out


def statistical_floor(traj, estimate=None):
    """The lowest estimate error of ``traj`` (GFB's: the statistical floor) under the rule ``estimate``."""
    checkpoints = estimate_checkpoints(traj, estimate)
    return min(c["error"] for c in checkpoints) if checkpoints else None


def summarize(trajectories, f_star, f0, targets=(1e-2, 1e-3), infeas_tol=1e-3, support_times=(),
              error_target=None, f1_target=None, floor_target=None, estimate=None):
    """One dict per method: times to targets, final metrics, support, error and F1 at given times.

    ``f_star`` may be None (no reference): the suboptimality entries are NaN.
    ``error_target`` / ``f1_target``: also the first (checkpoint) time with
    estimate error at most / support F1 at least that value, as
    ``t(error)`` and ``t(f1)``. ``floor_target``: the first (checkpoint) time
    with estimate error at most that value, as ``t(floor)`` (the issue's race:
    1.1 x the statistical floor, the lowest error GFB reaches in its budget).
    ``estimate``: the rule of :data:`ESTIMATES` the error and F1 columns use
    (None: the average of the two points).
    """
    rows = []
    for traj in trajectories:
        t, f, infeas = traj.arrays()
        checkpoints = estimate_checkpoints(traj, estimate)
        traj = Trajectory(traj.method, traj.time, traj.objective, traj.infeasibility, checkpoints, traj.final,
                          traj.info)
        last = traj.checkpoints[-1] if traj.checkpoints else {}
        known = f_star is not None and f.size
        # fwmodel's trajectory starts at its iteration 0 (before a step), GFB's at its first iterate:
        # the time per iteration divides by the iterations taken, not by the points recorded
        iterations = traj.info.get("iterations", len(t))
        row = dict(method=traj.method, iterations=iterations,
                   time=float(t[-1]) if t.size else float("nan"),
                   per_iteration=float(t[-1] / max(iterations, 1)) if t.size else float("nan"),
                   subopt=float((f[-1] - f_star) / (f0 - f_star)) if known else float("nan"),
                   infeasibility=float(infeas[-1]) if infeas.size else float("nan"),
                   distance=last.get("distance", float("nan")), recall=last.get("recall", float("nan")),
                   precision=last.get("precision", float("nan")), error=last.get("error", float("nan")),
                   f1=last.get("f1", float("nan")))
        for target in targets:
            row[f"t({target:g})"] = time_to_target(traj, f_star, f0, target, infeas_tol) if known else float("nan")
        if traj.checkpoints:
            best = min(traj.checkpoints, key=lambda c: c["error"])
            row["best_error"] = (best["error"], best["time"])
        if error_target is not None:
            row["t(error)"] = checkpoint_time(traj, "error", lambda e: e <= error_target)
        if floor_target is not None:
            row["t(floor)"] = checkpoint_time(traj, "error", lambda e: e <= floor_target)
        if f1_target is not None:
            row["t(f1)"] = checkpoint_time(traj, "f1", lambda v: v >= f1_target)
        for when in support_times:
            c = _at_time(traj, when)
            row[f"support@{when:g}s"] = (c["recall"], c["precision"]) if c else None
            row[f"error@{when:g}s"] = c["error"] if c else None
            row[f"f1@{when:g}s"] = c["f1"] if c else None
        rows.append(row)
    return rows


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, tuple):
        return "/".join(_fmt(x) for x in v)
    if isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return str(v)
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 0.01 or v == 0:
        return f"{v:.3g}"
    return f"{v:.1e}"


def markdown_table(rows, columns=None, headers=None):
    """A markdown table of ``rows`` (dicts) with the given columns."""
    if not rows:
        return ""
    columns = columns or list(rows[0])
    headers = headers or columns
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


# -------------------------------------------------------------------- plots
def plot_comparison(trajectories, f_star, f0, path=None, title=None, data=None):
    """Suboptimality, infeasibility, estimate error and support F1 against time (the paper's Fig. 2 metrics).

    ``f_star`` may be None (no reference): the suboptimality panel is left
    empty. Returns the matplotlib figure (None when matplotlib is missing);
    saves it when ``path`` is given.
    """
    try:
        import matplotlib

        if path is not None and "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    colors = {"fwmodel": "C0", "GFB": "C1", "CVXPY": "C2", FW_ONLY: "C3"}
    for traj in trajectories:
        t, f, infeas = traj.arrays()
        c = colors.get(traj.method, None)
        if f_star is not None:
            # |.|: an infeasible point can lie below f*
            sub = np.maximum(np.abs(f - f_star) / (f0 - f_star), 1e-12)
            axes[0].loglog(np.maximum(t, 1e-3), sub, color=c, label=traj.method)
        axes[1].loglog(np.maximum(t, 1e-3), np.maximum(infeas, 1e-12), color=c, label=traj.method)
        ct = np.maximum([cp["time"] for cp in traj.checkpoints], 1e-3)
        axes[2].semilogx(ct, [cp.get("error", np.nan) for cp in traj.checkpoints], color=c, marker=".",
                         label=traj.method)
        axes[3].semilogx(ct, [cp.get("f1", np.nan) for cp in traj.checkpoints], color=c, marker=".",
                         label=traj.method)
    axes[0].axhline(1e-2, color="gray", lw=0.5)
    axes[0].set(xlabel="time (s)", ylabel="|f - f*| / (f(0) - f*)",
                title="suboptimality" if f_star is not None else "suboptimality (no reference)")
    axes[1].axhline(1e-3, color="gray", lw=0.5)
    axes[1].set(xlabel="time (s)", ylabel="||a - b|| / ||S*||", title="relative infeasibility")
    axes[2].set(xlabel="time (s)", ylabel="||S - Sigma||_F / ||Sigma||_F", title="estimate error")
    axes[3].set(xlabel="time (s)", ylabel="F1", ylim=(-0.02, 1.02),
                title=f"support F1 (|S_ij| > {SUPPORT_THRESHOLD:g})")
    for ax in axes:
        if any(not line.get_label().startswith("_") for line in ax.lines):  # axhline's gray line has no label
            ax.legend(fontsize=7)
        ax.grid(True, which="major", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=80)
    return fig
