"""The paper's Sec. 5 experiment at scale: FW-AL (fwmodel) against projection splitting.

Problem (Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018, eq.
``constrained_sparse_low_rank``; data from ``fwmodel.datasets``, radii = the
true norms of Sigma)::

    min ||mask * (S - Sigma_hat)||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2

Subcommands (each writes a markdown table to ``$FWMODEL_RESULTS_DIR`` and its
plots to ``$FWMODEL_FIGURES_DIR``, by default temporary folders, so a run never
changes the checkout; to refresh the committed ones, run from the repository
root with ``FWMODEL_RESULTS_DIR=benchmarks/results
FWMODEL_FIGURES_DIR=benchmarks/figures``):

``lmo``      the paper's Fig. 3: one LMO on both sets (an arg-max and a
             Lanczos eigenpair, eq. ``LMO_trance_norm``; cold and warm-started)
             against one projection on both sets (soft-thresholding and a full
             eigendecomposition), d = 500 .. 8000; the projection is timed up
             to ``--project-max`` and fitted as c d^3 beyond.
``compare``  the paper's Fig. 2 and the crossover: fwmodel (defaults) and GFB
             (generalized forward-backward, Raguet et al. 2013, as in Richard
             et al. 2012) and, for small d, CVXPY + SCS, on the paper's problem
             ("full") and the matrix-completion variant ("masked", 20% of the
             entries observed), at several d and sparsity thresholds. f* comes
             from a GFB run stopped at a certified relative gap (a dual bound,
             ``--reference-gap``; cached). Reports the time to 1e-2 and 1e-3
             normalized suboptimality (f - f*) / (f(0) - f*), each with relative
             infeasibility <= 1e-3, and the support recall / precision
             (|S_ij| > 1e-2 against the support of Sigma) at fixed times.
``profile``  cProfile of a fwmodel solve: where an iteration's time goes.
``memory``   peak memory of a fwmodel solve (tracemalloc), in d x d arrays.
``rank``     how much structure the optimum S* has: the rank and the number
             of entries a matrix needs to come within the targets' distance of
             S*. A FW iterate started at 0 has rank <= t in the trace-norm copy
             and <= 2t nonzeros in the L1 copy after t iterations, so these are
             lower bounds on the iterations any rank-one / one-entry-per-step
             method needs (see the function's docstring).

Timing notes: every method is timed on its own clock, measuring excluded; a
busy machine slows everything, so the load average is recorded with each
table. On a shared machine, ``OPENBLAS_NUM_THREADS=1`` avoids the threaded
BLAS spinning against other processes (which slows small products 10x);
GFB's eigendecompositions then use one core, which the tables state.

    python benchmarks/covariance.py lmo --sizes 500 1000 2000 4000 8000
    python benchmarks/covariance.py compare --sizes 200 1000 --seconds 60
    python benchmarks/covariance.py compare --sizes 4000 --thresholds 0.9 --variants full --seconds 300
    python benchmarks/covariance.py profile --size 2000 --iters 30
    python benchmarks/covariance.py memory --size 4000 --iters 10
    python benchmarks/covariance.py rank --sizes 200 1000 2000 4000
    python benchmarks/covariance.py replot
    python benchmarks/covariance.py summary
"""
import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import re
import resource
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402
from fwmodel.datasets import sparse_low_rank_covariance  # noqa: E402
from fwmodel.experiments import (certified_reference, markdown_table, plot_comparison, run_cvxpy, run_fwmodel,  # noqa: E402
                                 run_gfb, summarize, support_scores)
from fwmodel.outputs import figures_dir, results_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES = figures_dir()
RESULTS = results_dir()
CACHE = os.path.join(HERE, ".cache")  # git-ignored


def machine():
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "default"
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, BLAS threads: {threads}, "
            f"load average {load:.1f}, numpy {np.__version__}")


def write(name, text):
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    with open(path, "w") as fh:
        fh.write(text + "\n")
    print(f"\nwritten {path}")


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


# ------------------------------------------------------------------ Fig. 3
def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def cmd_lmo(args):
    """One LMO on both sets against one projection on both sets (paper Fig. 3)."""
    rows = []
    for d in args.sizes:
        data = sparse_low_rank_covariance(d, threshold=args.threshold, seed=args.seed)
        X = fm.Variable((d, d))
        l1 = fm.L1Ball(X, data.radius_l1)
        trace = fm.TraceNormBall(X, data.radius_trace)
        trace_sym = fm.TraceNormBall(X, data.radius_trace, symmetric=True)
        # the first FW direction (gradient of ||S - Sigma_hat||^2 at 0), then the next one
        D0 = -2.0 * data.sigma_hat
        t_l1, a1 = timed(lambda: l1.lmo_atom(D0.ravel()))
        t_cold, a2 = timed(lambda: trace.lmo_atom(D0.ravel()))
        mv_cold = trace.last_matvecs
        S1 = np.zeros(d * d)
        a1.add_to(S1, 0.05)
        a2.add_to(S1, 0.05)
        D1 = 2.0 * (S1.reshape(d, d) - data.sigma_hat)
        del S1
        t_warm, _ = timed(lambda: trace.lmo_atom(D1.ravel()))
        mv_warm = trace.last_matvecs
        # a random symmetric (Wigner) direction: its top eigenvalues cluster at the
        # semicircle's edge (gaps ~ d^(-2/3)), the hard case for Lanczos; cold start
        W = np.random.default_rng(args.seed).standard_normal((d, d))
        W += W.T
        trace.reset()
        t_wig, _ = timed(lambda: trace.lmo_atom(W.ravel()))
        mv_wig = trace.last_matvecs
        del W
        row = dict(d=d, l1_lmo=t_l1, trace_lmo_cold=t_cold, mv_cold=mv_cold, trace_lmo_warm=t_warm,
                   mv_warm=mv_warm, trace_lmo_wigner=t_wig, mv_wigner=mv_wig, lmo_cold=t_l1 + t_cold,
                   lmo_warm=t_l1 + t_warm, lmo_wigner=t_l1 + t_wig)
        if d <= args.late_max and args.late_iters:
            row.update(_late_direction_lmo(data, args.late_iters))
        if d <= args.project_max:
            t_p1, _ = timed(lambda: l1.project(D1))
            t_p2, _ = timed(lambda: trace_sym.project(D1))
            row.update(l1_proj=t_p1, trace_proj=t_p2, proj=t_p1 + t_p2, proj_fitted=False)
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        del data, D0, D1
    timed_rows = [r for r in rows if "proj" in r]
    if timed_rows:
        # c d^3 through the largest timed projections (the O(d^3) regime)
        big = sorted(timed_rows, key=lambda r: r["d"])[-2:]
        c3 = float(np.mean([r["proj"] / r["d"] ** 3 for r in big]))
        for r in rows:
            if "proj" not in r:
                r.update(proj=c3 * r["d"] ** 3, proj_fitted=True)
    for r in rows:
        r["ratio_cold"] = r["proj"] / r["lmo_cold"]
        r["ratio_warm"] = r["proj"] / r["lmo_warm"]
        r["ratio_wigner"] = r["proj"] / r["lmo_wigner"]
        if "trace_lmo_late_warm" in r:
            r["ratio_late"] = r["proj"] / (r["l1_lmo"] + r["trace_lmo_late_warm"])
        r["proj (s)"] = f"{r['proj']:.3g}" + (" (fit c d^3)" if r["proj_fitted"] else "")
    for r in rows:
        for key in ("trace_lmo_late_warm", "mv_late_warm", "trace_lmo_late_cold", "mv_late_cold", "ratio_late"):
            r.setdefault(key, "-")
    table = markdown_table(rows, ["d", "l1_lmo", "trace_lmo_cold", "mv_cold", "trace_lmo_warm", "mv_warm",
                                  "trace_lmo_late_warm", "mv_late_warm", "trace_lmo_late_cold", "mv_late_cold",
                                  "trace_lmo_wigner", "mv_wigner", "proj (s)", "ratio_cold", "ratio_warm",
                                  "ratio_late", "ratio_wigner"],
                           ["d", "L1 LMO (s)", "trace LMO cold (s)", "Lanczos products", "trace LMO warm (s)",
                            "products", "trace LMO late, warm (s)", "products", "trace LMO late, cold (s)",
                            "products", "trace LMO Wigner (s)", "products", "projections (s)",
                            "proj / LMO (cold)", "proj / LMO (warm)", "proj / LMO (late, warm)",
                            "proj / LMO (Wigner)"])
    text = (f"# LMO vs projection (paper Fig. 3)\n\nCommand: `python benchmarks/covariance.py lmo "
            f"--sizes {' '.join(map(str, args.sizes))} --project-max {args.project_max} "
            f"--late-iters {args.late_iters} --late-max {args.late_max}`\n\n"
            f"Machine: {machine()}\n\n{table}\n\nLMO = L1 arg-max + trace-norm Lanczos eigenpair; projection = "
            "L1 soft-thresholding + full eigendecomposition (numpy.linalg.eigh). Cold: first call on "
            "-2 Sigma_hat; warm: the next FW direction, warm-started; late: the trace-norm block's direction "
            f"after {args.late_iters} FW-AL iterations (FW steps only), warm-started by the solve or cold; "
            "Wigner: a random symmetric Gaussian direction, cold (clustered top eigenvalues).")
    print(text)
    write("covariance_lmo.md", text)
    plt = _plt()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.6))
        ds = [r["d"] for r in rows]
        ax.loglog(ds, [r["lmo_cold"] for r in rows], "o-", label="LMO, both sets (cold)")
        ax.loglog(ds, [r["lmo_warm"] for r in rows], "o-", label="LMO, both sets (warm)")
        ax.loglog(ds, [r["lmo_wigner"] for r in rows], "o-", label="LMO, Wigner direction")
        tp = [r for r in rows if not r["proj_fitted"]]
        ax.loglog([r["d"] for r in tp], [r["proj"] for r in tp], "s-", label="projection, both sets")
        fp = [r for r in rows if r["proj_fitted"]]
        if fp:
            ax.loglog([tp[-1]["d"]] + [r["d"] for r in fp], [tp[-1]["proj"]] + [r["proj"] for r in fp], "s--",
                      color="C2", label="projection (fit c d^3)")
        ax.set(xlabel="d", ylabel="seconds", title="LMO vs projection (d x d)")
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        os.makedirs(FIGURES, exist_ok=True)
        fig.savefig(os.path.join(FIGURES, "covariance_lmo_vs_projection.png"), dpi=80)


def _late_direction_lmo(data, iters):
    """The trace-norm LMO on the direction FW-AL meets after ``iters`` iterations (FW steps only).

    The direction is the trace-norm block's part of the augmented Lagrangian's
    gradient, grad f + M' (y + lam r), at the solve's last point. Timed warm
    (the solve's own set, whose Lanczos warm start followed the solve) and
    cold (after ``reset()``). Near the solution the gradient's top eigenvalues
    cluster (one per component of the low-rank part), the hard case.
    """
    from fwmodel.experiments import build_problem

    prob, _ = build_problem(data)
    last = {}
    prob.solve(max_iter=iters, projection=False, tol=1e-12, feas_tol=1e-12,
               callback=lambda st: last.update(x=st.x.copy(), y=st.y.copy(), lam=st.lam))
    compiled = prob.compile()
    op = compiled.operator
    _, g = compiled.objective.value_and_grad(last["x"])
    r = op.matvec(last["x"]) - op.b
    grad = g + op.rmatvec(last["y"] + last["lam"] * r)
    blk = next(b for b in compiled.blocks if isinstance(b.set, fm.TraceNormBall))
    D = np.ascontiguousarray(grad[blk.offset:blk.offset + blk.size])
    trace = blk.set
    t_warm, _ = timed(lambda: trace.lmo_atom(D))
    mv_warm = trace.last_matvecs
    trace.reset()
    t_cold, _ = timed(lambda: trace.lmo_atom(D))
    return dict(trace_lmo_late_warm=t_warm, mv_late_warm=mv_warm, trace_lmo_late_cold=t_cold,
                mv_late_cold=trace.last_matvecs)


# --------------------------------------------------------- Fig. 2 / crossover
def cached_reference(data, key, iters, gap):
    """GFB until the certified relative gap is at most ``gap`` (or ``iters`` iterations); cached."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"certified_ref_{key}_gap{gap:g}.npz")
    if os.path.exists(path):
        z = np.load(path)
        return z["S"], float(z["f"]), int(z["iterations"])
    ref = certified_reference(data, gap_tol=gap, max_iter=iters)
    print(f"  reference: {ref.iterations} GFB iterations, {ref.seconds:.1f} s, certified relative gap "
          f"{ref.rel_gap:.1e} ({'reached' if ref.certified else 'NOT reached'}: target {gap:g})", flush=True)
    np.savez(path, S=ref.S, f=ref.f_star, iterations=ref.iterations)
    return ref.S, ref.f_star, ref.iterations


class Progress:
    def __init__(self, every=5.0):
        self.every = every
        self.last = {}

    def __call__(self, method, t, it, f, infeas):
        if t - self.last.get(method, -1e9) >= self.every:
            self.last[method] = t
            print(f"    {method:8s} t={t:7.1f}s it={it:6d} f={f:.6g} infeas={infeas:.2e}", flush=True)


def _instances(args):
    """(variant, threshold, d, data, key) for every configuration the arguments name (seeded data)."""
    for variant in args.variants:
        for threshold in args.thresholds:
            for d in args.sizes:
                observed = args.observed if variant == "masked" else 1.0
                data = sparse_low_rank_covariance(d, threshold=threshold, observed=observed, seed=args.seed)
                yield variant, threshold, d, data, f"d{d}_t{threshold:g}_o{observed:g}_s{args.seed}"


def cmd_compare(args):
    os.makedirs(FIGURES, exist_ok=True)
    all_rows, cross = [], []
    for variant, threshold, d, data, key in _instances(args):
        print(f"\n== {variant} d={d} threshold={threshold}: {int(data.support.sum())} nonzeros in Sigma",
              flush=True)
        S_ref, f_star, ref_its = cached_reference(data, key, args.reference_iters, args.reference_gap)
        f0 = data.loss(np.zeros((d, d)))
        progress = Progress(max(2.0, args.seconds / 10))
        trajs = [run_fwmodel(data, time_limit=args.seconds, reference=S_ref, progress=progress),
                 run_gfb(data, time_limit=args.seconds, reference=S_ref, progress=progress)]
        cvx = None
        if d <= args.cvxpy_max:
            S_c, f_c, t_c = run_cvxpy(data)
            cvx = dict(method="CVXPY+SCS", time=t_c, subopt=(f_c - f_star) / (f0 - f_star),
                       distance=float(np.linalg.norm(S_c - S_ref) / np.linalg.norm(S_ref)))
            cvx["recall"], cvx["precision"], _ = support_scores(S_c, data.support)
        times = [t for t in (1.0, 10.0, 60.0, 300.0) if t <= args.seconds]
        rows = summarize(trajs, f_star, f0, support_times=times)
        for r in rows:
            r.update(variant=variant, d=d, threshold=threshold, nnz=int(data.support.sum()))
        if cvx is not None:
            cvx.update(variant=variant, d=d, threshold=threshold, nnz=int(data.support.sum()),
                       iterations=None)
            rows.append(cvx)
        all_rows.extend(rows)
        fw, gfb = rows[0], rows[1]
        cross.append(dict(variant=variant, threshold=threshold, d=d, fw=fw["t(0.01)"], gfb=gfb["t(0.01)"],
                          fw_iters=fw["iterations"], fw_per_it=fw["per_iteration"], gfb_per_it=gfb["per_iteration"],
                          winner=_winner(fw["t(0.01)"], gfb["t(0.01)"]), reference_iters=ref_its))
        print(markdown_table(rows, _COLUMNS, _HEADERS), flush=True)
        plot_comparison(trajs, f_star, f0, path=os.path.join(FIGURES, f"covariance_{variant}_{key}.png"),
                        title=f"{variant}, d={d}, threshold {threshold}")
        with open(os.path.join(CACHE, f"traj_{variant}_{key}.json"), "w") as fh:
            json.dump({t.method: dict(time=t.time, objective=t.objective, infeasibility=t.infeasibility,
                                      checkpoints=t.checkpoints, info=_jsonable(t.info)) for t in trajs}
                      | dict(f_star=f_star, f0=f0), fh)
    text = (f"# fwmodel vs GFB on eq. constrained_sparse_low_rank\n\nCommand: `python benchmarks/covariance.py compare "
            f"--sizes {' '.join(map(str, args.sizes))} --thresholds {' '.join(map(str, args.thresholds))} "
            f"--variants {' '.join(args.variants)} --seconds {args.seconds:g}`\n\nMachine: {machine()}\n\n"
            + markdown_table(all_rows, ["variant", "threshold", "d", "nnz"] + _COLUMNS,
                             ["variant", "threshold", "d", "nnz(Sigma)"] + _HEADERS)
            + "\n\nTime to 1e-2 normalized suboptimality with relative infeasibility <= 1e-3:\n\n"
            + markdown_table(cross, ["variant", "threshold", "d", "fw", "gfb", "winner", "fw_iters", "fw_per_it",
                                     "gfb_per_it", "reference_iters"],
                             ["variant", "threshold", "d", "fwmodel (s)", "GFB (s)", "faster", "fwmodel iterations",
                              "s / fwmodel iteration", "s / GFB iteration", "GFB iterations for f*"]))
    print("\n" + text)
    write(args.name, text)


def cmd_replot(args):
    """Redraw the compare figures from the cached trajectories (no solving)."""
    from fwmodel.experiments import Trajectory

    for name in sorted(os.listdir(CACHE)):
        if not (name.startswith("traj_") and name.endswith(".json")):
            continue
        with open(os.path.join(CACHE, name)) as fh:
            saved = json.load(fh)
        trajs = []
        for method in ("fwmodel", "GFB"):
            if method in saved:
                t = saved[method]
                trajs.append(Trajectory(method, t["time"], t["objective"], t["infeasibility"], t["checkpoints"]))
        stem = name[len("traj_"):-len(".json")]
        variant, rest = stem.split("_", 1)
        d, threshold = rest.split("_")[0][1:], rest.split("_")[1][1:]
        path = os.path.join(FIGURES, f"covariance_{stem}.png")
        plot_comparison(trajs, saved["f_star"], saved["f0"], path=path,
                        title=f"{variant}, d={d}, threshold {threshold}")
        print("redrawn", os.path.relpath(path))


def cmd_summary(args):
    """One crossover table from every cached compare run (all sizes together)."""
    from fwmodel.experiments import Trajectory

    rows = []
    for name in os.listdir(CACHE):
        if not (name.startswith("traj_") and name.endswith(".json")):
            continue
        with open(os.path.join(CACHE, name)) as fh:
            saved = json.load(fh)
        variant, rest = name[len("traj_"):-len(".json")].split("_", 1)
        parts = rest.split("_")
        d, threshold = int(parts[0][1:]), float(parts[1][1:])
        trajs = [Trajectory(m, saved[m]["time"], saved[m]["objective"], saved[m]["infeasibility"],
                            saved[m]["checkpoints"], info=saved[m].get("info", {})) for m in ("fwmodel", "GFB")]
        out = summarize(trajs, saved["f_star"], saved["f0"], support_times=(1.0, 10.0, 60.0))
        fw, gfb = out
        loose = [_time_to(tr, saved, LOOSE_TARGET[0], LOOSE_TARGET[1]) for tr in trajs]
        rows.append(dict(variant=variant, threshold=threshold, d=d, fw=fw["t(0.01)"], gfb=gfb["t(0.01)"],
                         fw_loose=loose[0], gfb_loose=loose[1],
                         winner=_winner(fw["t(0.01)"], gfb["t(0.01)"]), budget=fw["time"],
                         fw_iters=fw["iterations"], fw_sub=fw["subopt"], fw_inf=fw["infeasibility"],
                         gfb_iters=_iterations_to(trajs[1], saved, 1e-2), ratio=gfb["per_iteration"] / fw["per_iteration"],
                         fw_s10=fw["support@10s"], gfb_s10=gfb["support@10s"],
                         fw_s60=fw["support@60s"], gfb_s60=gfb["support@60s"]))
    rows.sort(key=lambda r: (r["variant"], -r["threshold"], r["d"]))
    table = markdown_table(rows, ["variant", "threshold", "d", "budget", "fw", "gfb", "winner", "fw_loose", "gfb_loose",
                                  "gfb_iters", "fw_iters",
                                  "fw_sub", "fw_inf", "ratio", "fw_s10", "gfb_s10", "fw_s60", "gfb_s60"],
                           ["variant", "threshold", "d", "budget (s)", "fwmodel t(1e-2) (s)", "GFB t(1e-2) (s)",
                            "faster", "fwmodel t(loose) (s)", "GFB t(loose) (s)",
                            "GFB iterations to 1e-2", "fwmodel iterations in budget",
                            "fwmodel final subopt", "fwmodel final infeas", "time per GFB / per fwmodel iteration",
                            "fwmodel supp @10s", "GFB supp @10s", "fwmodel supp @60s", "GFB supp @60s"])
    text = ("# Crossover summary (all cached compare runs)\n\nCommand: `python benchmarks/covariance.py summary` "
            "(after the `compare` runs listed in covariance_compare_*.md)\n\n"
            "t(1e-2): first time with (f - f*) / (f(0) - f*) <= 1e-2 and relative infeasibility <= 1e-3 "
            "('-': not reached within the budget). t(loose): first time with |f - f*| / (f(0) - f*) <= "
            f"{LOOSE_TARGET[0]:g} and relative infeasibility <= {LOOSE_TARGET[1]:g}. supp: recall/precision of |S_ij| > 1e-2 against the "
            "support of Sigma.\n\n" + table)
    print(text)
    write("covariance_summary.md", text)


#: a loose target (normalized suboptimality, relative infeasibility) for the summary
LOOSE_TARGET = (5e-2, 0.2)


def _time_to(traj, saved, target, infeas_tol):
    """First time with |f - f*| / (f0 - f*) <= target and infeasibility <= infeas_tol (nan if never)."""
    t, f, infeas = traj.arrays()
    ok = np.flatnonzero((np.abs(f - saved["f_star"]) / (saved["f0"] - saved["f_star"]) <= target)
                        & (infeas <= infeas_tol))
    return float(t[ok[0]]) if ok.size else float("nan")


def _iterations_to(traj, saved, target, infeas_tol=1e-3):
    t, f, infeas = traj.arrays()
    ok = np.flatnonzero(((f - saved["f_star"]) / (saved["f0"] - saved["f_star"]) <= target) & (infeas <= infeas_tol))
    return int(ok[0]) + 1 if ok.size else None


def _winner(a, b):
    if np.isnan(a) and np.isnan(b):
        return "neither"
    if np.isnan(a):
        return "GFB"
    if np.isnan(b):
        return "fwmodel"
    return "fwmodel" if a < b else "GFB"


def _jsonable(info):
    return {k: (v if isinstance(v, (int, float, str, dict, type(None))) else str(v)) for k, v in info.items()}


_COLUMNS = ["method", "iterations", "time", "per_iteration", "subopt", "infeasibility", "distance", "t(0.01)",
            "t(0.001)", "recall", "precision", "support@1s", "support@10s", "support@60s", "support@300s"]
_HEADERS = ["method", "iterations", "time (s)", "s / iteration", "final subopt", "final infeas", "dist to S*",
            "t(1e-2)", "t(1e-3)", "recall", "precision", "supp @1s", "supp @10s", "supp @60s", "supp @300s"]


# ------------------------------------------------------------- profile/memory
def _problem(args):
    data = sparse_low_rank_covariance(args.size, threshold=args.threshold,
                                      observed=args.observed if args.variant == "masked" else 1.0, seed=args.seed)
    from fwmodel.experiments import build_problem

    prob, X = build_problem(data)
    return data, prob, X


def cmd_profile(args):
    data, prob, X = _problem(args)
    prob.compile()
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    prob.solve(max_iter=args.iters)
    pr.disable()
    total = time.perf_counter() - t
    out = io.StringIO()
    st = pstats.Stats(pr, stream=out).sort_stats("tottime")
    st.print_stats(25)
    print(out.getvalue())
    listing = _relative_paths(out.getvalue())
    # where an iteration's time goes: cumulative times of the entry points
    # (the LMOs and the objective are called from the engine; the rest of the
    # engine's time is its own vector arithmetic: gradient assembly, direction,
    # line search, updates, in-face steps)
    def cum(path_part, func):
        return sum(ct for (fn, _l, f), (_cc, _nc, _tt, ct, _c) in st.stats.items()
                   if path_part in fn.replace("\\", "/") and f == func)

    parts = {
        "L1 LMO (L1Ball.lmo_atom)": cum("/sets/l1.py", "lmo_atom"),
        "trace-norm LMO (TraceNormBall.lmo_atom: symmetry test, Rayleigh-Ritz, Lanczos)": cum("/sets/trace_norm.py",
                                                                                              "lmo_atom"),
        "rank-one atom updates (in place, dger)": cum("/sets/trace_norm.py", "add_to"),
        "objective value / gradient / curvature (compiler + expressions)": (
            cum("/compiler/objective.py", "value_and_grad") + cum("/compiler/objective.py", "value")
            + cum("/compiler/objective.py", "curvature")),
        "consistency products M x, M' y": cum("/compiler/consistency.py", "matvec") + cum("/compiler/consistency.py",
                                                                                          "rmatvec"),
    }
    engine_total = cum("/engine/fwal.py", "minimize_fwal")
    parts["engine's own vector work (the rest of minimize_fwal)"] = engine_total - sum(parts.values())
    lines = [f"{g}: {v:.2f} s ({100 * v / total:.0f}%)" for g, v in parts.items()]
    text = (f"# Profile of a fwmodel solve\n\nCommand: `python benchmarks/covariance.py profile --size {args.size} "
            f"--iters {args.iters} --variant {args.variant}`\n\nMachine: {machine()}\n\n{args.iters} iterations in "
            f"{total:.2f} s ({total / max(args.iters, 1):.3f} s / iteration)\n\nWhere the time goes:\n\n"
            + "\n".join(f"- {x}" for x in lines) + "\n\nTop functions (own time):\n\n```\n"
            + "\n".join(listing.splitlines()[:45]) + "\n```")
    write(f"covariance_profile_d{args.size}_{args.variant}.md", text)


def _relative_paths(text):
    """Profile listings name files relative to the repository or to site-packages (no machine paths)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__))) + os.sep
    text = text.replace(root, "")
    return re.sub(r"\S*site-packages" + re.escape(os.sep), "", text)


def cmd_memory(args):
    data, prob, X = _problem(args)
    d = args.size
    unit = 8.0 * d * d
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t = time.perf_counter()
    prob.solve(max_iter=args.iters)
    elapsed = time.perf_counter() - t
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1024.0 if sys.platform != "darwin" else 1.0
    text = (f"# Peak memory of a fwmodel solve\n\nCommand: `python benchmarks/covariance.py memory --size {d} "
            f"--iters {args.iters} --variant {args.variant}`\n\nMachine: {machine()}\n\n"
            f"- d = {d}: one d x d array = {unit / 2**20:.0f} MiB\n"
            f"- peak traced allocation during the solve (compile + {args.iters} iterations, {elapsed:.1f} s): "
            f"{peak / 2**20:.0f} MiB = {peak / unit:.1f} d x d arrays (data Sigma_hat, Sigma, mask excluded: "
            f"allocated before)\n"
            f"- process peak RSS: {rss * scale / 2**20:.0f} MiB = {rss * scale / unit:.1f} d x d arrays "
            f"(before the solve: {base_rss * scale / 2**20:.0f} MiB)\n")
    print(text)
    write(f"covariance_memory_d{d}_{args.variant}.md", text)


def _tail_count(sorted_desc, budget):
    """Smallest k with sqrt(sum_{i >= k} a_i^2) <= budget (a sorted decreasing)."""
    tail = np.sqrt(np.cumsum((sorted_desc ** 2)[::-1])[::-1])  # tail[k] = ||a[k:]||
    ok = np.flatnonzero(np.append(tail, 0.0) <= budget)
    return int(ok[0])


def cmd_rank(args):
    """Structure of the optimum: lower bounds on FW-type iteration counts.

    For a point S with f(S) - f* <= eps (f0 - f*), strong convexity of f
    (full variant: f = ||S - Sigma_hat||^2, modulus 2) and the optimality of
    S* over the feasible set give ||S - S*||_F^2 <= (f(S) - f*) / 1, so S
    lies within r_f = sqrt(eps (f0 - f*)) of S*. The two copies must also be
    within 1e-3 * ||S*||_F of each other. A trace-norm copy of rank k is at
    least ||tail_k(eig(S*))|| from S*, an L1 copy with p nonzeros at least
    ||tail_p(|S*_ij|)||; FW from the origin adds one rank-one atom (one
    symmetric entry pair) per iteration. The table reports the smallest k
    and p whose tails fit in the two radii.
    """
    rows = []
    for variant, threshold, d, data, key in _instances(args):
        S, f_star, _ = cached_reference(data, key, args.reference_iters, args.reference_gap)
        S = 0.5 * (S + S.T)
        f0 = data.loss(np.zeros((d, d)))
        scale = float(np.linalg.norm(S))
        eig = np.sort(np.abs(np.linalg.eigvalsh(S)))[::-1]
        ent = np.sort(np.abs(S).ravel())[::-1]
        row = dict(variant=variant, threshold=threshold, d=d, nnz=int(data.support.sum()))
        for name, radius in (("1e-2 subopt", math.sqrt(1e-2 * (f0 - f_star))), ("1e-3 infeas", 1e-3 * scale)):
            row[f"rank {name}"] = _tail_count(eig, radius)
            row[f"entries {name}"] = _tail_count(ent, radius)
        rows.append(row)
        print(row, flush=True)
    cols = list(rows[0])
    text = ("# Structure of the optimum: rank and entries needed to reach the targets\n\nCommand: "
            f"`python benchmarks/covariance.py rank --sizes {' '.join(map(str, args.sizes))} --thresholds "
            f"{' '.join(map(str, args.thresholds))} --variants {' '.join(args.variants)}`\n\n"
            "rank / entries: the smallest rank k (number of entries p) of a matrix within the target's radius of "
            "S* (radius sqrt(eps (f0 - f*)) for 1e-2 normalized suboptimality, 1e-3 ||S*||_F for 1e-3 relative "
            "infeasibility). A FW iterate needs at least k iterations in the trace-norm copy and p / 2 in the "
            "L1 copy.\n\n" + markdown_table(rows, cols, cols))
    print(text)
    write(args.name if args.name else "covariance_rank.md", text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("lmo", help="LMO vs projection time (paper Fig. 3)")
    q.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000])
    q.add_argument("--project-max", type=int, default=4000, help="largest d whose projection is timed")
    q.add_argument("--late-iters", type=int, default=30, help="FW-AL iterations before the 'late' direction")
    q.add_argument("--late-max", type=int, default=2000, help="largest d with a 'late' direction")
    q.add_argument("--threshold", type=float, default=0.9)
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(fn=cmd_lmo)
    q = sub.add_parser("compare", help="fwmodel vs GFB (vs CVXPY) against time (paper Fig. 2, crossover)")
    q.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    q.add_argument("--thresholds", type=float, nargs="+", default=[0.9, 0.5])
    q.add_argument("--variants", nargs="+", default=["full", "masked"], choices=["full", "masked"])
    q.add_argument("--observed", type=float, default=0.2, help="observed fraction in the masked variant")
    q.add_argument("--seconds", type=float, default=60.0, help="time budget of each method")
    q.add_argument("--reference-iters", type=int, default=2000, help="at most this many GFB iterations for f* (cached)")
    q.add_argument("--reference-gap", type=float, default=1e-4,
                   help="certified relative gap at which the reference run stops (default 1e-4)")
    q.add_argument("--cvxpy-max", type=int, default=200, help="largest d solved with CVXPY + SCS")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--name", default="covariance_compare.md", help="file name of the markdown table")
    q.set_defaults(fn=cmd_compare)
    q = sub.add_parser("replot", help="redraw the compare figures from the cached trajectories")
    q.set_defaults(fn=cmd_replot)
    q = sub.add_parser("summary", help="one crossover table from the cached compare runs")
    q.set_defaults(fn=cmd_summary)
    q = sub.add_parser("rank", help="rank and entries of the optimum needed to reach the targets")
    q.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 2000])
    q.add_argument("--thresholds", type=float, nargs="+", default=[0.9])
    q.add_argument("--variants", nargs="+", default=["full"], choices=["full", "masked"])
    q.add_argument("--observed", type=float, default=0.2)
    q.add_argument("--reference-iters", type=int, default=2000)
    q.add_argument("--reference-gap", type=float, default=1e-4)
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--name", default=None)
    q.set_defaults(fn=cmd_rank)
    for name, fn in (("profile", cmd_profile), ("memory", cmd_memory)):
        q = sub.add_parser(name)
        q.add_argument("--size", type=int, default=2000)
        q.add_argument("--iters", type=int, default=30)
        q.add_argument("--threshold", type=float, default=0.9)
        q.add_argument("--variant", default="full", choices=["full", "masked"])
        q.add_argument("--observed", type=float, default=0.2)
        q.add_argument("--seed", type=int, default=0)
        q.set_defaults(fn=fn)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
