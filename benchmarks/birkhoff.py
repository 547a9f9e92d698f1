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
    python benchmarks/birkhoff.py --sizes 200 --repeat 5   # medians of 5 interleaved repeats (a busy machine)
    python benchmarks/birkhoff.py --sizes 30 100 200 --repeat 3 --backends scipy numba   # both LMO backends
    python benchmarks/birkhoff.py --sizes 200 --repeat 3 --tol 1e-5 --backends numba --clock cpu   # CPU time

With ``--backends`` each repeat solves with fwmodel once per backend of
``BirkhoffPolytope`` (one row per backend); the numba backend's first use
(importing numba, compiling or loading its cached kernels) is timed before
the solves and reported apart.

With ``--repeat R`` the times are medians over R repeats, each repeat
solving with fwmodel, Clarabel and SCS in turn, and the last column is the
median over the repeats of fwmodel's time over the faster CVXPY solver of
the same repeat.
"""
import argparse
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

#: the clock of every timing below: wall time, or with ``--clock cpu`` this process's CPU time
#: (less sensitive to other jobs on a busy machine; every solver here runs on one thread)
CLOCK = time.perf_counter


def per_iteration_ms(history, a, b):
    it, tm = history["iteration"], history["time"]
    i, j = np.searchsorted(it, a), np.searchsorted(it, b)
    if j >= len(it):
        return float("nan")
    return (tm[j] - tm[i]) / (it[j] - it[i]) * 1e3


def cvxpy_projection(C, solver):
    """The same projection with CVXPY and ``solver``: (seconds, status, optimal value, X*)."""
    n = C.shape[0]
    Z = cp.Variable((n, n), nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = CLOCK()
        prob.solve(solver=solver)
        return CLOCK() - t, prob.status, prob.value, Z.value


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
                t = CLOCK()
                atom = lmo(flat_direction)
                timer.seconds += CLOCK() - t
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
    ap.add_argument("--repeat", type=int, default=1,
                    help="solve each size this many times (fwmodel, Clarabel, SCS in turn); report the median "
                         "times and the median of the per-repeat ratios")
    ap.add_argument("--backends", nargs="*", default=["scipy"], choices=fm.BirkhoffPolytope.BACKENDS,
                    help="BirkhoffPolytope backends to solve with, each in turn within a repeat")
    ap.add_argument("--tol", type=float, default=None,
                    help="tol and feas_tol (tiny values keep the run going, for the per-iteration windows)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time solves by wall time or by this process's CPU time (time.process_time)")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    if "numba" in args.backends or "auto" in args.backends:
        t = time.perf_counter()
        fm.BirkhoffPolytope(fm.Variable((3, 3)), backend="numba").lmo_for_solve()(np.eye(3).ravel())
        print(f"numba backend, first use (import numba, compile or load the cached kernels): "
              f"{time.perf_counter() - t:.3f} s, not counted below\n")
    print("| n | backend | fwmodel status | iterations | fwmodel (s) | LMO calls | in the LMO (s) | ms/it 100-200 | "
          "ms/it 4900-5000 | Clarabel (s) | SCS (s) | fwmodel / faster CVXPY |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        C = (1.0 + rng.standard_normal((n, n))) / n
        tols = {} if args.tol is None else dict(tol=args.tol, feas_tol=args.tol)
        runs = {backend: dict(t=[], lmo=[], ratios=[]) for backend in args.backends}
        times = {}
        for _ in range(args.repeat):  # each backend, Clarabel, SCS, then again: each repeat sees the same load
            this_repeat = {}
            for backend in args.backends:
                X = fm.Variable((n, n))
                prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X, backend=backend)])
                with LMOTimer() as lmo:
                    t = CLOCK()
                    prob.solve(max_iter=args.max_iter, **tols)
                    this_repeat[backend] = CLOCK() - t
                run = runs[backend]
                run["t"].append(this_repeat[backend])
                run["lmo"].append(lmo.seconds)
                run.update(prob=prob, calls=lmo.calls)
            if args.no_cvxpy:
                continue
            faster = np.inf
            for solver in ("CLARABEL", "SCS"):
                elapsed, status, value, _ = cvxpy_projection(C, solver)
                times.setdefault(solver, []).append((elapsed, status, value))
                faster = min(faster, elapsed)
            for backend in args.backends:
                runs[backend]["ratios"].append(this_repeat[backend] / faster)
        median = lambda values: float(np.median(values))  # noqa: E731
        fmt = lambda s: (f"{median([v[0] for v in times[s]]):.3f} ({times[s][-1][1]}, f = {times[s][-1][2]:.6g})"  # noqa: E731
                         if s in times else "-")
        for backend in args.backends:
            run = runs[backend]
            prob = run["prob"]
            h = prob.history.to_dict()
            ratio = f"{median(run['ratios']):.2f}" if run["ratios"] else "-"
            print(f"| {n} | {backend} | {prob.status} (f = {prob.value:.6g}) | {prob.stats.iterations} | "
                  f"{median(run['t']):.3f} | {run['calls']} | {median(run['lmo']):.3f} | "
                  f"{per_iteration_ms(h, 100, 200):.3f} | {per_iteration_ms(h, 4900, 5000):.3f} | "
                  f"{fmt('CLARABEL')} | {fmt('SCS')} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
