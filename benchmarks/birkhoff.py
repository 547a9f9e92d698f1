"""Birkhoff projection: fwmodel's defaults against CVXPY, and time per iteration along the run.

min ||X - C||_F^2 over doubly stochastic X, with C = (1 + N(0, 1)) / n (the
projection is interior-heavy: many permutations in its decomposition).
Reports fwmodel's status, iterations and time with ``prob.solve()``
(``max_iter`` raised so the per-iteration windows exist), its assignment LMO
calls and the time spent in them, the time per iteration over iterations
100-200 and 4900-5000 (from ``prob.history``), the times of CVXPY with
Clarabel and SCS, and fwmodel's time over the faster of the two.

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


class LMOTimer:
    """Counts the Birkhoff LMO calls of a solve and the time spent in them."""

    def __init__(self):
        self.calls, self.seconds = 0, 0.0
        self._inner = fm.BirkhoffPolytope.lmo_for_solve

    def __enter__(self):
        timer, inner = self, self._inner

        def lmo_for_solve(self_set):
            lmo = inner(self_set)

            def timed(flat_direction):
                t = time.perf_counter()
                atom = lmo(flat_direction)
                timer.seconds += time.perf_counter() - t
                timer.calls += 1
                return atom

            return timed

        fm.BirkhoffPolytope.lmo_for_solve = lmo_for_solve
        return self

    def __exit__(self, *exc):
        fm.BirkhoffPolytope.lmo_for_solve = self._inner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[30, 200])
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--tol", type=float, default=None,
                    help="tol and feas_tol (tiny values keep the run going, for the per-iteration windows)")
    args = ap.parse_args()
    print("| n | fwmodel status | iterations | fwmodel (s) | LMO calls | in the LMO (s) | ms/it 100-200 | "
          "ms/it 4900-5000 | Clarabel (s) | SCS (s) | fwmodel / faster CVXPY |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        C = (1.0 + rng.standard_normal((n, n))) / n
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
        tols = {} if args.tol is None else dict(tol=args.tol, feas_tol=args.tol)
        with LMOTimer() as lmo:
            t = time.perf_counter()
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
        ratio = f"{t_fw / min(v[0] for v in times.values()):.2f}" if times else "-"
        print(f"| {n} | {prob.status} (f = {prob.value:.6g}) | {prob.stats.iterations} | {t_fw:.3f} | "
              f"{lmo.calls} | {lmo.seconds:.3f} | "
              f"{per_iteration_ms(h, 100, 200):.3f} | {per_iteration_ms(h, 4900, 5000):.3f} | "
              f"{fmt('CLARABEL')} | {fmt('SCS')} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
