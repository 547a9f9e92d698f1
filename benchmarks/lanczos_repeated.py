"""The trace-norm LMO's Lanczos on repeated extreme eigenvalues: accuracy of the solves, and the LMO's cost.

``accuracy``: projections onto the PSD trace ball, the symmetric and the plain
nuclear ball (radius 3) of matrices whose spectrum has a repeated extreme
eigenvalue (a projector of rank n/2, +-1 halves, the identity, three tied
top eigenvalues among uniform ones), diagonal or rotated, exact or perturbed
by 1e-10 / 1e-6, at n = 151 .. 200 (above ``dense_threshold``: the Lanczos
path). f* in closed form (the projection of the eigenvalues / singular
values). A solve counts as wrong when it says "optimal" more than ``tol``
(relative to ``prob.stats.objective_scale``) above f*, or when its
``suboptimality_bound`` is below f - f* by more than 1e-6 of that scale
(the slack of benchmarks/trust_fuzz.py).

``cost``: Lanczos products per LMO call and the LMO's share of the time on
the covariance problem of benchmarks/trace_defaults.py (``cov:d``, the
paper's problem, and ``lrs:d``), FW steps only (``projection=False``, so
that every iteration calls the Lanczos LMO) for a fixed number of iterations.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/lanczos_repeated.py accuracy
    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/lanczos_repeated.py cost --models cov:500 lrs:500
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fwmodel as fm  # noqa: E402
from fwmodel.sets.trace_norm import TraceNormBall  # noqa: E402
import trace_defaults  # noqa: E402


def _project_l1(a, r):
    """Projection of a nonnegative vector onto {t >= 0, sum t <= r}."""
    if a.sum() <= r:
        return a
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - r
    k = np.flatnonzero(u - css / np.arange(1, a.size + 1) > 0)[-1]
    return np.maximum(a - css[k] / (k + 1), 0.0)


def spectrum(kind, n, rng):
    if kind == "projector":
        return np.array([1.0] * (n // 2) + [0.0] * (n - n // 2))
    if kind == "plus-minus":
        return np.array([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    if kind == "identity":
        return np.ones(n)
    w = rng.uniform(-0.3, 0.3, n)  # "tied3"
    w[:3] = 1.0
    return w


def f_star(w, ball, r):
    """min ||X - C||^2 over the ball, C with eigenvalues w: the eigenvalues (singular values) projected."""
    if ball == "psd":
        target = np.maximum(w, 0.0)
        return float(np.sum((_project_l1(target, r) - w) ** 2))
    a = np.abs(w)
    return float(np.sum((a - _project_l1(a, r)) ** 2))


def cmd_accuracy(args):
    options = {"defaults": {}, "rank_k=True": dict(rank_k=True), "inface=False": dict(inface=False),
               "projection=False": dict(projection=False)}
    counts = {}
    for n in args.sizes:
        rotation, _ = np.linalg.qr(np.random.default_rng(n).standard_normal((n, n)))
        for kind in ("projector", "plus-minus", "identity", "tied3"):
            for eps in (0.0, 1e-10, 1e-6):
                for rotated in (False, True):
                    rng = np.random.default_rng([n, int(eps * 1e12), int(rotated), len(kind)])
                    w = spectrum(kind, n, rng) + eps * rng.standard_normal(n)
                    C = (rotation * w) @ rotation.T if rotated else np.diag(w)
                    C = 0.5 * (C + C.T)
                    for ball in ("psd", "symmetric", "nuclear"):
                        fs = f_star(w, ball, 3.0)
                        for label, opts in options.items():
                            X = fm.Variable((n, n))
                            ball_set = fm.TraceNormBall(X, 3.0, psd=ball == "psd", symmetric=ball == "symmetric")
                            prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball_set])
                            prob.solve(**opts)
                            scale = prob.stats.objective_scale
                            error = (prob.value - fs) / scale
                            bound = prob.stats.suboptimality_bound
                            wrong = prob.status == "optimal" and error > 1e-4 * 1.0001
                            broken = np.isfinite(bound) and bound / scale - error < -1e-6
                            c = counts.setdefault(label, dict(solves=0, wrong=0, broken=0, nan=0, worst=0.0))
                            c["solves"] += 1
                            c["wrong"] += wrong
                            c["broken"] += broken
                            c["nan"] += not np.isfinite(bound)
                            c["worst"] = max(c["worst"], error)
                            if wrong or broken:
                                print(f"  n={n} {kind} eps={eps:g} rotated={rotated} {ball} {label}: {prob.status} "
                                      f"f={prob.value:.8g} f*={fs:.8g} bound={bound:.3g} (f-f*)/scale={error:.2e}")
    print("| options | solves | optimal but > tol from f* | bound below f - f* | NaN bound | worst (f - f*) / scale |")
    print("|---|---|---|---|---|---|")
    for label, c in counts.items():
        print(f"| {label} | {c['solves']} | {c['wrong']} | {c['broken']} | {c['nan']} | {c['worst']:.2g} |")


def cmd_cost(args):
    calls = {"n": 0, "time": 0.0}
    original = TraceNormBall._factors

    def timed(self, D, warm, tol=None):
        t0 = time.perf_counter()
        out = original(self, D, warm, tol)
        calls["time"] += time.perf_counter() - t0
        calls["n"] += 1
        return out

    TraceNormBall._factors = timed
    print("| model | iterations | LMO calls | Lanczos products / call | LMO time (s) | solve time (s) | objective |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.models:
        kind, d = trace_defaults.parse_model(spec)
        C, r1, r2 = trace_defaults.MODELS[kind](d)
        prob, X = trace_defaults.fwmodel_problem(C, r1, r2)
        ball = [c for c in prob.constraints if isinstance(c, TraceNormBall)][0]
        calls.update(n=0, time=0.0)
        ball.total_matvecs = 0
        t0 = time.perf_counter()
        prob.solve(projection=False, max_iter=args.iters, rank_k=False)
        elapsed = time.perf_counter() - t0
        print(f"| {spec} | {prob.stats.iterations} | {calls['n']} | {ball.total_matvecs / max(calls['n'], 1):.1f} "
              f"| {calls['time']:.3f} | {elapsed:.3f} | {prob.value:.10g} |")
    TraceNormBall._factors = original


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("accuracy")
    q.add_argument("--sizes", type=int, nargs="+", default=[151, 173, 200])
    q.set_defaults(fn=cmd_accuracy)
    q = sub.add_parser("cost")
    q.add_argument("--models", nargs="+", default=["cov:500", "lrs:500"])
    q.add_argument("--iters", type=int, default=100)
    q.set_defaults(fn=cmd_cost)
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}")
    args.fn(args)


if __name__ == "__main__":
    main()
