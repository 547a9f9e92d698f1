"""Birkhoff projection: fwmodel's defaults against CVXPY, and time per iteration along the run.

min ||X - C||_F^2 over doubly stochastic X, with C = (1 + N(0, 1)) / n (the
projection is interior-heavy: many permutations in its decomposition).
Reports fwmodel's status, iterations and time with ``prob.solve()``
(``max_iter`` raised so the per-iteration windows exist), the time per
iteration over iterations 100-200 and 4900-5000 (from ``prob.history``), and
the best times of CVXPY with Clarabel and SCS.

    python benchmarks/birkhoff.py --sizes 30 200
    python benchmarks/birkhoff.py --sizes 30 --tol 1e-14 --max-iter 5100 --no-cvxpy   # per-iteration windows
"""
import argparse
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm


def per_iteration_ms(history, a, b):
    it, tm = history["iteration"], history["time"]
    i, j = np.searchsorted(it, a), np.searchsorted(it, b)
    if j >= len(it):
        return float("nan")
    return (tm[j] - tm[i]) / (it[j] - it[i]) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[30, 200])
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--tol", type=float, default=None,
                    help="tol and feas_tol (tiny values keep the run going, for the per-iteration windows)")
    args = ap.parse_args()
    print("| n | fwmodel status | iterations | fwmodel (s) | ms/it 100-200 | ms/it 4900-5000 | Clarabel (s) | SCS (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        C = (1.0 + rng.standard_normal((n, n))) / n
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
        t = time.perf_counter()
        tols = {} if args.tol is None else dict(tol=args.tol, feas_tol=args.tol)
        prob.solve(max_iter=args.max_iter, **tols)
        t_fw = time.perf_counter() - t
        h = prob.history.to_dict()
        times = {}
        if not args.no_cvxpy:
            for solver in ("CLARABEL", "SCS"):
                Z = cp.Variable((n, n), nonneg=True)
                ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.perf_counter()
                    ref.solve(solver=solver)
                    times[solver] = (time.perf_counter() - t, ref.status, ref.value)
        fmt = lambda s: f"{times[s][0]:.3f} ({times[s][1]}, f = {times[s][2]:.6g})" if s in times else "-"  # noqa: E731
        print(f"| {n} | {prob.status} (f = {prob.value:.6g}) | {prob.stats.iterations} | {t_fw:.3f} | "
              f"{per_iteration_ms(h, 100, 200):.3f} | {per_iteration_ms(h, 4900, 5000):.3f} | "
              f"{fmt('CLARABEL')} | {fmt('SCS')} |", flush=True)


if __name__ == "__main__":
    main()
