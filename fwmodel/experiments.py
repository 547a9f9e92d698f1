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
  costs at most a dozen iterations by projected-gradient steps instead (the
  L1 copy always: soft-thresholding is as cheap as its LMO; the trace-norm
  copy up to d of about 2000 on one core, see
  ``fwmodel.engine.projection_choice``).
* GFB: the generalized forward-backward splitting of Raguet, Fadili & Peyre
  (2013), the baseline of the paper and of Richard, Savalle & Vayatis
  (2012): one projection onto each set per iteration; the projection onto
  the trace-norm ball needs a full eigendecomposition, O(d^3).

Both methods produce two points, one in each set (FW-AL: the copies of S;
GFB: the two projections); the reported estimate ``S`` is their average, its
*relative infeasibility* is ``||a - b||_F / scale`` (scale: the Frobenius
norm of the reference solution) and its *support* is ``|S_ij| > 1e-2`` (as
in the paper's Fig. 2), scored against the support of the true Sigma.
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
    "support_scores",
    "summarize",
    "markdown_table",
    "plot_comparison",
    "sparse_low_rank_covariance",
]

#: entries with |S_ij| above this count as the estimated support (paper, Fig. 2)
SUPPORT_THRESHOLD = 1e-2


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


class _Recorder:
    """Keeps a method's clock and its trajectory; measuring is not billed to the method."""

    def __init__(self, method, data, reference=None, scale=None, time_limit=None, first_checkpoint=0.02,
                 checkpoint_growth=1.3, progress=None):
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

    def checkpoint(self, t, f, infeas, S):
        recall, precision, size = support_scores(S, self.data.support)
        dist = float(np.linalg.norm(S - self.reference)) / max(self.ref_norm, 1e-300) \
            if self.reference is not None else float("nan")
        self.traj.checkpoints.append(dict(time=t, objective=f, infeasibility=infeas, distance=dist,
                                          recall=recall, precision=precision, nnz=size))

    def record(self, f, infeas_abs, point, force=False):
        """Record one iteration; ``point()`` gives S (called only at checkpoints).

        Returns False when the time limit is reached.
        """
        t = self.now()
        enter = time.perf_counter()
        infeas = infeas_abs / self.scale
        self.traj.time.append(t)
        self.traj.objective.append(float(f))
        self.traj.infeasibility.append(infeas)
        done = self.time_limit is not None and t >= self.time_limit
        if force or done or t >= self.next_checkpoint:
            self.checkpoint(t, float(f), infeas, point())
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


def run_fwmodel(data, time_limit=10.0, max_iter=10**7, reference=None, scale=None, progress=None, **options):
    """Solve with fwmodel (FW-AL, default options unless given) and record the trajectory."""
    rec = _Recorder("fwmodel", data, reference, scale, time_limit, progress=progress)
    t_build = time.perf_counter()
    problem, X = build_problem(data)

    def callback(state):
        return rec.record(state.objective, state.feasibility, lambda: state.value(X))

    rec.start()
    rec.paused -= time.perf_counter() - t_build  # the modeling time counts too
    problem.solve(max_iter=max_iter, callback=callback, **options)
    S = X.value
    traj = rec.traj
    traj.final = S
    if not traj.checkpoints or traj.checkpoints[-1]["time"] < traj.time[-1]:
        rec.checkpoint(traj.time[-1], traj.objective[-1], traj.infeasibility[-1], S)
    traj.info = dict(iterations=problem.stats.iterations, status=problem.status,
                     step_counts=problem.stats.step_counts, lam=problem.stats.lam)
    return traj


# ---------------------------------------------------------------------- GFB
def _projectors(data):
    import fwmodel as fm

    X = fm.Variable((data.d, data.d))
    l1 = fm.L1Ball(X, data.radius_l1)
    trace = fm.TraceNormBall(X, data.radius_trace, symmetric=True)
    return l1.project, trace.project


def run_gfb(data, time_limit=10.0, max_iter=10**6, reference=None, scale=None, progress=None, step=1.0,
            tol=None, record=True):
    """Generalized forward-backward splitting (Raguet, Fadili & Peyre 2013) on eq. ``constrained_sparse_low_rank``.

    For ``min f(S) + i_B1(S) + i_B*(S)`` with weights 1/2 and step
    ``gamma = step / L`` (``L = 2``, the Lipschitz constant of the gradient
    of ``f``; GFB needs ``step < 2``), each iteration is::

        G = grad f(S)
        z_i <- z_i + P_i(2 S - z_i - gamma G) - S     (i = 1: the L1 ball, 2: the trace-norm ball)
        S <- (z_1 + z_2) / 2

    with ``P_i`` the Euclidean projections: soft-thresholding for the L1
    ball, a full eigendecomposition (O(d^3)) for the trace-norm ball (the
    matrices are symmetric). The new ``S`` is the average of the two
    projections, which lie in their sets; their distance is the
    infeasibility. Stops at ``time_limit``, ``max_iter``, or (``tol``) when
    ``||S_{k+1} - S_k||_F <= tol * ||S_k||_F`` and the infeasibility is below
    ``tol``.
    """
    proj_l1, proj_trace = _projectors(data)
    d = data.d
    gamma = step / 2.0
    rec = _Recorder("GFB", data, reference, scale, time_limit, progress=progress)
    z1 = np.zeros((d, d))
    z2 = np.zeros((d, d))
    S = np.zeros((d, d))
    mask = data.mask
    rec.start()
    it = 0
    for it in range(1, max_iter + 1):
        G = S - data.sigma_hat
        if mask is not None:
            G *= mask
        G *= 2.0 * gamma
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
        S_new = 0.5 * (z1 + z2)
        diff = p1 - p2
        infeas = float(np.linalg.norm(diff))
        del diff, U
        change = float(np.linalg.norm(S_new - S)) if tol is not None else None
        S = S_new
        if record:
            if not rec.record(data.loss(S), infeas, lambda: S):
                break
        elif time_limit is not None and rec.now() >= time_limit:
            break
        if tol is not None and change <= tol * max(float(np.linalg.norm(S)), 1e-300) \
                and infeas <= tol * rec.scale:
            break
    traj = rec.traj
    traj.final = S
    if record and (not traj.checkpoints or traj.checkpoints[-1]["time"] < traj.time[-1]):
        rec.checkpoint(traj.time[-1], traj.objective[-1], traj.infeasibility[-1], S)
    traj.info = dict(iterations=it, step=step)
    return traj


def reference_solution(data, max_iter=5000, tol=1e-9, time_limit=None):
    """A high-accuracy solution (long GFB run): ``(S_star, f_star, iterations)``."""
    traj = run_gfb(data, time_limit=time_limit, max_iter=max_iter, tol=tol, record=False)
    S = traj.final
    return S, data.loss(S), traj.info["iterations"]


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


def summarize(trajectories, f_star, f0, targets=(1e-2, 1e-3), infeas_tol=1e-3, support_times=()):
    """One dict per method: times to targets, final metrics, support at given times."""
    rows = []
    for traj in trajectories:
        t, f, infeas = traj.arrays()
        last = traj.checkpoints[-1] if traj.checkpoints else {}
        row = dict(method=traj.method, iterations=traj.info.get("iterations", len(t)),
                   time=float(t[-1]) if t.size else float("nan"),
                   per_iteration=float(t[-1] / max(len(t), 1)) if t.size else float("nan"),
                   subopt=float((f[-1] - f_star) / (f0 - f_star)) if f.size else float("nan"),
                   infeasibility=float(infeas[-1]) if infeas.size else float("nan"),
                   distance=last.get("distance", float("nan")), recall=last.get("recall", float("nan")),
                   precision=last.get("precision", float("nan")))
        for target in targets:
            row[f"t({target:g})"] = time_to_target(traj, f_star, f0, target, infeas_tol)
        for when in support_times:
            c = _at_time(traj, when)
            row[f"support@{when:g}s"] = (c["recall"], c["precision"]) if c else None
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
    """Objective, infeasibility and support recovery against time (the paper's Fig. 2).

    Returns the matplotlib figure (None when matplotlib is missing); saves it
    when ``path`` is given.
    """
    try:
        import matplotlib

        if path is not None and "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    colors = {"fwmodel": "C0", "GFB": "C1", "CVXPY": "C2"}
    for traj in trajectories:
        t, f, infeas = traj.arrays()
        c = colors.get(traj.method, None)
        # |.|: an infeasible point can lie below f*
        sub = np.maximum(np.abs(f - f_star) / (f0 - f_star), 1e-12)
        axes[0].loglog(np.maximum(t, 1e-3), sub, color=c, label=traj.method)
        axes[1].loglog(np.maximum(t, 1e-3), np.maximum(infeas, 1e-12), color=c, label=traj.method)
        ct = [cp["time"] for cp in traj.checkpoints]
        axes[2].semilogx(np.maximum(ct, 1e-3), [cp["recall"] for cp in traj.checkpoints], color=c,
                         label=f"{traj.method} recall")
        axes[2].semilogx(np.maximum(ct, 1e-3), [cp["precision"] for cp in traj.checkpoints], color=c,
                         linestyle="--", label=f"{traj.method} precision")
    axes[0].axhline(1e-2, color="gray", lw=0.5)
    axes[0].set(xlabel="time (s)", ylabel="|f - f*| / (f(0) - f*)", title="objective")
    axes[1].axhline(1e-3, color="gray", lw=0.5)
    axes[1].set(xlabel="time (s)", ylabel="||a - b|| / ||S*||", title="relative infeasibility")
    axes[2].set(xlabel="time (s)", ylabel="fraction", ylim=(-0.02, 1.02),
                title=f"support (|S_ij| > {SUPPORT_THRESHOLD:g})")
    for ax in axes:
        ax.legend(fontsize=7)
        ax.grid(True, which="major", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=80)
    return fig
