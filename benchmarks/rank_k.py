"""Rank-k steps (``solve(rank_k=True)``, BlockFW) against FW steps on trace-norm blocks, side by side.

Subcommands:

``models``  the models of benchmarks/trace_defaults.py (min ||X - C||_F^2 over
            L1 ball ∩ trace-norm ball, both binding: ``lrs`` low rank + sparse,
            ``cov`` the paper's covariance problem, the model of tutorial 02)
            under three configurations of the other options, each without and
            with ``rank_k=True``: the defaults (projection="auto"),
            ``projection=False`` (FW-type steps on both copies) and
            ``projection=True`` (the L1 copy projected, the trace-norm copy by
            FW or rank-k steps: what "auto" does where a trace-norm projection
            costs more than 5 iterations, d above about 2000 on one core).
            Reports status, time, iterations, and the time and iterations to
            a relative objective error and relative infeasibility both at most
            1e-2 and 1e-3, against a reference optimum (fwmodel defaults with
            tol = feas_tol = 1e-6, which take projection steps on both copies;
            its status and accuracy are printed).
``ball``    least squares on the trace-norm ball alone (no M): ``proj``
            min ||X - C||^2 (the solution is the projection of C, a closed
            form by full SVD) and ``mask`` min ||P_Omega(X - C)||^2 (matrix
            completion; reference CVXPY + Clarabel at small d, else the best
            objective of the runs), by FW steps (defaults, which take in-face
            steps up to d = 500, and projection=False), rank-k steps
            (projection=False, rank_k=True), and the defaults with rank_k=True.

    python benchmarks/rank_k.py models --models lrs:60 cov:50 lrs:200 cov:200 --time-limit 30
    python benchmarks/rank_k.py models --models cov:500 cov:1000 --configs defaults projection=True --time-limit 60
    python benchmarks/rank_k.py ball --models proj:100 mask:60 proj:1000 mask:1000 --time-limit 30
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fwmodel as fm  # noqa: E402
from trace_defaults import MODELS, fwmodel_problem, machine, parse_model  # noqa: E402

CONFIGS = {"defaults": {}, "projection=False": {"projection": False}, "projection=True": {"projection": True}}
TARGETS = (1e-2, 1e-3)


def time_to_target(history, f_star, target):
    """(seconds, iteration) of the first row with relative objective error and infeasibility <= target."""
    err = np.abs(np.asarray(history["objective"]) - f_star) / abs(f_star)
    infeas = np.asarray(history["feasibility_rel"])
    hit = np.flatnonzero((err <= target) & (infeas <= target))
    if hit.size == 0:
        return None
    i = int(hit[0])
    return float(history["time"][i]), int(history["iteration"][i])


def solve(prob, **options):
    t0 = time.perf_counter()
    prob.solve(**options)
    elapsed = time.perf_counter() - t0
    return dict(status=prob.status, time=elapsed, iterations=prob.stats.iterations, objective=prob.value,
                infeas=prob.stats.feasibility_rel, steps=prob.stats.step_counts, history=prob.history)


def fmt_target(hit):
    return "-" if hit is None else f"{hit[0]:.2f} s / {hit[1]}"


def table_row(model, d, label, r, f_star):
    rel = (r["objective"] - f_star) / abs(f_star)
    hits = [fmt_target(time_to_target(r["history"], f_star, t)) for t in TARGETS]
    steps = r["steps"]
    counts = ", ".join(f"{k} {v}" for k, v in steps.items() if v and k in ("fw", "pairwise", "projection", "inface",
                                                                            "rank_k"))
    return (f"| {model} | {d} | {label} | {r['status']} | {r['time']:.2f} | {r['iterations']} | {rel:.1e} | "
            f"{r['infeas']:.1e} | {hits[0]} | {hits[1]} | {counts} |")


HEADER = ["| model | d | options | status | time (s) | iterations | (f - f*) / f* | rel. infeas. | "
          "to 1e-2 (time / it.) | to 1e-3 (time / it.) | steps |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]


def cmd_models(args):
    rows = list(HEADER)
    for spec in args.models:
        kind, d = parse_model(spec)
        C, r1, r2 = MODELS[kind](d)
        prob, _ = fwmodel_problem(C, r1, r2)
        ref = solve(prob, tol=1e-6, feas_tol=1e-6, max_iter=20000, time_limit=5 * args.time_limit)
        f_star = ref["objective"]
        print(f"{spec}: reference {ref['status']} f* = {f_star:.8g} ({ref['iterations']} it., {ref['time']:.1f} s, "
              f"rel. infeas. {ref['infeas']:.1e})", flush=True)
        for config in args.configs:
            for rank_k in (False, True):
                options = dict(CONFIGS[config], rank_k=rank_k, time_limit=args.time_limit, max_iter=10 ** 6)
                prob, _ = fwmodel_problem(C, r1, r2)
                r = solve(prob, **options)
                label = config + (", rank_k=True" if rank_k else "")
                rows.append(table_row(kind, d, label, r, f_star))
                print(rows[-1], flush=True)
    print("\n".join(rows) + f"\n\n({machine()}; time limit {args.time_limit:g} s)")


def ball_problem(kind, d, seed=0):
    """``proj``: min ||X - C||^2 over the ball; ``mask``: the same on half of the entries. Radius: half of ||C||_*."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((d, 5)) @ rng.standard_normal((5, d)) / np.sqrt(d) * 10.0
    C += 0.1 * rng.standard_normal((d, d))
    radius = 0.5 * float(np.linalg.svd(C, compute_uv=False).sum())
    X = fm.Variable((d, d), name="X")
    if kind == "proj":
        loss = fm.sum_squares(X - C)
        mask = None
    else:
        mask = (rng.random((d, d)) < 0.5).astype(float)
        loss = fm.sum_squares(fm.multiply(mask, X - C))
    ball = fm.TraceNormBall(X, radius)
    return fm.Problem(fm.Minimize(loss), [ball]), ball, C, mask, radius


def ball_reference(kind, d, ball, C, mask, radius):
    if kind == "proj":  # the projection of C: a closed form (full SVD)
        P = ball.project(C)
        return float(np.sum((P - C) ** 2)), "projection of C (SVD)"
    if d <= 80:
        import cvxpy as cp

        Z = cp.Variable((d, d))
        prob = cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(mask, Z - C))), [cp.normNuc(Z) <= radius])
        prob.solve(solver="CLARABEL")
        return float(prob.value), "CVXPY + Clarabel"
    return None, "best objective of the runs"


def cmd_ball(args):
    rows = list(HEADER)
    configs = [("defaults", {}), ("defaults, rank_k=True", {"rank_k": True}),
               ("projection=False", {"projection": False}),
               ("projection=False, rank_k=True", {"projection": False, "rank_k": True})]
    for spec in args.models:
        kind, d = parse_model(spec)
        prob, ball, C, mask, radius = ball_problem(kind, d)
        f_star, source = ball_reference(kind, d, ball, C, mask, radius)
        runs = []
        for label, options in configs:
            prob, *_ = ball_problem(kind, d)
            runs.append((label, solve(prob, tol=1e-7, time_limit=args.time_limit, max_iter=10 ** 6, **options)))
        if f_star is None:
            f_star = min(r["objective"] for _, r in runs)
        print(f"{spec}: f* = {f_star:.10g} ({source})", flush=True)
        for label, r in runs:
            rows.append(table_row(kind, d, label, r, f_star))
            print(rows[-1], flush=True)
    print("\n".join(rows) + f"\n\n({machine()}; time limit {args.time_limit:g} s, tol 1e-7)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("models")
    q.add_argument("--models", nargs="+", default=["lrs:60", "cov:50", "lrs:200", "cov:200"])
    q.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    q.add_argument("--time-limit", type=float, default=30.0)
    q.set_defaults(fn=cmd_models)
    q = sub.add_parser("ball")
    q.add_argument("--models", nargs="+", default=["proj:100", "mask:60"])
    q.add_argument("--time-limit", type=float, default=30.0)
    q.set_defaults(fn=cmd_ball)
    args = p.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
