"""Where the time of a Birkhoff projection goes: the assignment LMO against the rest, and the rest in parts.

min ||X - C||_F^2 over doubly stochastic X, C = (1 + N(0, 1)) / n (rng seed
0), solved with ``prob.solve(tol, max_iter=20000)`` (the BPCG tail of
benchmarks/birkhoff.py at equal accuracy). Timers (``time.perf_counter``
around the calls, about a microsecond each) split the solve into

* LMO: the assignment calls, with the warm start's reduction around them;
* dots(g): the inner products of the gradient with every active atom, once per iteration;
* Gram columns: a new atom's inner products with the active atoms (local phases need them);
* local phases: BPCG's local steps in weight space and their move;
* sweep: the driver's line search and move of the block;
* other: everything else (the FW direction, the driver's bookkeeping, stopping tests).

Each repeat solves once per backend; the table gives medians. To compare two
trees, run it with ``PYTHONPATH`` set to each, alternately, on one BLAS thread:

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/birkhoff_split.py --repeat 3
"""
import argparse
import time

import numpy as np

import fwmodel as fm
from fwmodel.engine import active_set, fwal, steps


def _timed(owner, name, totals, label):
    """Replace ``owner.name`` by a wrapper adding its time to ``totals[label]``; returns the original."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - start

    setattr(owner, name, wrapper)
    return original


def split_solve(n, backend, tol, totals):
    """Solve once; ``totals`` receives the parts (seconds); returns (total seconds, problem)."""
    rng = np.random.default_rng(0)
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X, backend=backend)])
    start = time.perf_counter()
    prob.solve(tol=tol, feas_tol=tol, max_iter=20000)
    return time.perf_counter() - start, prob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", nargs="*", default=["scipy", "numba"], choices=("scipy", "numba"))
    args = ap.parse_args()
    if "numba" in args.backends:  # import numba and load (or compile) its kernels before timing
        fm.BirkhoffPolytope(fm.Variable((3, 3)), backend="numba").lmo_for_solve()(np.eye(3).ravel())

    labels = ("LMO", "dots(g)", "Gram columns", "local phases", "sweep")
    totals = dict.fromkeys(labels, 0.0)
    _timed(active_set.ActiveSet, "_gram_column", totals, "Gram columns")
    _timed(steps.BlendedPairwiseStep, "_local", totals, "local phases")
    _timed(fwal, "gauss_seidel_sweep", totals, "sweep")
    dots = active_set.ActiveSet.dots

    def timed_dots(self, g):  # the gradient's products only (the Gram columns' own calls are counted there)
        start = time.perf_counter()
        out = dots(self, g)
        if g is not self._gram_scratch:
            totals["dots(g)"] += time.perf_counter() - start
        return out

    active_set.ActiveSet.dots = timed_dots
    lmo_for_solve = fm.BirkhoffPolytope.lmo_for_solve

    def timed_lmo_for_solve(self):
        lmo = lmo_for_solve(self)

        def timed(flat_direction):
            start = time.perf_counter()
            try:
                return lmo(flat_direction)
            finally:
                totals["LMO"] += time.perf_counter() - start

        return timed

    fm.BirkhoffPolytope.lmo_for_solve = timed_lmo_for_solve

    rows = {backend: [] for backend in args.backends}
    for _ in range(args.repeat):
        for backend in args.backends:
            for label in labels:
                totals[label] = 0.0
            total, prob = split_solve(args.n, backend, args.tol, totals)
            parts = dict(totals)
            parts["other"] = total - sum(parts.values())
            rows[backend].append((total, parts, prob))
    print(f"n = {args.n}, tol = {args.tol:g}, medians of {args.repeat} solves (s)\n")
    print("| backend | iterations | total | LMO | rest | dots(g) | Gram columns | local phases | sweep | other |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for backend, runs in rows.items():
        prob = runs[-1][2]
        med = lambda values: float(np.median(values))  # noqa: E731
        total = med([r[0] for r in runs])
        part = {label: med([r[1][label] for r in runs]) for label in runs[0][1]}
        rest = med([r[0] - r[1]["LMO"] for r in runs])
        print(f"| {backend} | {prob.stats.iterations} | {total:.3f} | {part['LMO']:.3f} | {rest:.3f} | "
              + " | ".join(f"{part[label]:.3f}" for label in ("dots(g)", "Gram columns", "local phases", "sweep",
                                                               "other")) + " |")


if __name__ == "__main__":
    main()
