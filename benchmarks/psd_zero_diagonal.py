"""PSD variables with diagonal entries fixed at 0: default ``prob.solve()`` with and without the presolve.

``X >> 0`` with ``fm.diag(X) <= d`` and ``d_0 = 0`` (or ``X[0, 0] == 0``)
leaves a feasible set without interior (row and column 0 of X are 0). The
compiler's presolve (:mod:`fwmodel.compiler.presolve`) solves such a model on
that face. This script solves each model with the presolve ("the change") and
with it switched off ("main": the compile path main takes, unchanged by the
change), interleaved, with the default options, and compares with CVXPY +
Clarabel. The last three ``d_0 = 0`` rows (a Parameter in a constraint's
constant, a norm bound on X, ``fm.TraceNormBall(X, r, psd=True)`` without
``X >> 0``) were left to the general path by main's presolve, so its
column is main's. The ``d_0 = 1e-3`` rows keep an interior: the presolve does not
apply, both columns take the general path (recorded for the iterations).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/psd_zero_diagonal.py

``--cost N``: the cost of the embedding ``X = P Y P'`` at size N (one zero
entry, 100 iterations): the presolved model against the same model written
by hand on the kept indices (same iterates; time per iteration of each,
alternated, best of 2).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/psd_zero_diagonal.py --cost 400

``--small``: the bound ``d_0`` from 1e-1 down to 1e-4 (general path in both columns: the iterations
against the size of the bound's multiplier).
"""
import argparse
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm
import fwmodel.compiler.compile as compile_module

PRESOLVE = compile_module.presolve_psd_zeros


def symmetric(n, seed):
    B = np.random.default_rng(seed).standard_normal((n, n))
    return (B + B.T) / 2


def build(m, form, n, zeros, value, seed):
    """min ||X - C||_F^2 with X PSD, diagonal <= 1 except the entries ``zeros`` (<= value or == value)."""
    C = symmetric(n, seed)
    d = np.ones(n)
    d[zeros] = value
    X = m.Variable((n, n), PSD=True) if (form == "PSD" and m is fm) else m.Variable((n, n), symmetric=True)
    constraints = [] if (form == "PSD" and m is fm) else [X >> 0]
    if form == "ball":  # the PSD trace-norm ball alone (no X >> 0): presolved since the change
        constraints = [fm.TraceNormBall(X, 1.5, psd=True)] if m is fm else [X >> 0, m.trace(X) <= 1.5]
    if form == "equality":
        constraints += [m.diag(X) <= np.ones(n)] + [X[i, i] == value for i in zeros]
    else:
        constraints += [m.diag(X) <= d]
    if form == "trace Parameter":  # t only in the constant: presolved since the change
        constraints += [m.trace(X) <= m.Parameter(nonneg=True, value=1.5)]
    if form == "frobenius":  # a norm bound on X: presolved since the change
        constraints += [m.norm(X, "fro") <= 1.2]
    return m.Problem(m.Minimize(m.sum_squares(X - C)), constraints)


MODELS = [  # (label, form, n, zero entries, their value)
    ("diag(X) <= d, d_0 = 0", "bound", 6, [0], 0.0),
    ("X[0, 0] == 0", "equality", 6, [0], 0.0),
    ("PSD=True, d_0 = 0", "PSD", 6, [0], 0.0),
    ("n = 30, d_i = 0 at 0, 7, 19", "bound", 30, [0, 7, 19], 0.0),
    ("d_0 = 0, trace(X) <= t (Parameter)", "trace Parameter", 4, [0], 0.0),
    ("d_0 = 0, norm(X, 'fro') <= 1.2", "frobenius", 4, [0], 0.0),
    ("TraceNormBall(X, 1.5, psd=True), d_0 = 0", "ball", 6, [0], 0.0),
    ("diag(X) <= d, d_0 = 1e-3", "bound", 6, [0], 1e-3),
    ("X[0, 0] == 1e-3", "equality", 6, [0], 1e-3),
]

#: ``--small``: a positive bound d_0 shrinking toward 0 (general path: the set keeps an interior)
SMALL = [(f"diag(X) <= d, d_0 = {v:g}", "bound", 6, [0], v) for v in (1e-1, 1e-2, 1e-3, 1e-4)]


def run(label, form, n, zeros, value, presolve):
    compile_module.presolve_psd_zeros = PRESOLVE if presolve else (lambda objective, constraints: None)
    try:
        prob = build(fm, form, n, zeros, value, seed=n)
        t = time.perf_counter()
        prob.solve()
        elapsed = time.perf_counter() - t
    finally:
        compile_module.presolve_psd_zeros = PRESOLVE
    return prob.status, prob.stats.iterations, elapsed, prob.value, prob.compile().presolve is not None


def main(models=MODELS):
    print(f"{'model':42s} {'Clarabel':>10s} | {'main: status':>12s} {'iter':>6s} {'time s':>7s} {'rel err':>8s} | "
          f"{'change: status':>14s} {'iter':>6s} {'time s':>7s} {'rel err':>8s} presolved")
    for label, form, n, zeros, value in models:
        ref_prob = build(cp, form, n, zeros, value, seed=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ref = ref_prob.solve(solver=cp.CLARABEL)
        cells = []
        for presolve in (False, True):
            status, iters, elapsed, val, used = run(label, form, n, zeros, value, presolve)
            cells.append(f"{status:>12s} {iters:6d} {elapsed:7.2f} {abs(val - ref) / abs(ref):8.1e}")
        print(f"{label:42s} {ref:10.5f} | {cells[0]} | {cells[1]:>30s} {'yes' if used else 'no'}")


def cost(n, iters=100, repeat=2):
    rng = np.random.default_rng(0)
    B = rng.standard_normal((n, n))
    C = (B + B.T) / 2 / np.sqrt(n)
    d = np.ones(n)
    d[0] = 0.0

    def presolved():
        X = fm.Variable((n, n), symmetric=True)
        return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [X >> 0, fm.diag(X) <= d])

    def by_hand():  # row and column 0 of X are 0: their part of ||X - C||^2 is a constant
        Y = fm.Variable((n - 1, n - 1), symmetric=True)
        constant = float(2 * np.sum(C[0] ** 2) - C[0, 0] ** 2)
        return fm.Problem(fm.Minimize(fm.sum_squares(Y - C[1:, 1:]) + constant), [Y >> 0, fm.diag(Y) <= d[1:]])

    best = {"presolved": np.inf, "by hand": np.inf}
    values = {}
    for _ in range(repeat):
        for label, make in (("presolved", presolved), ("by hand", by_hand)):
            prob = make()
            t = time.perf_counter()
            prob.solve(max_iter=iters)
            best[label] = min(best[label], (time.perf_counter() - t) / prob.stats.iterations)
            values[label] = (prob.stats.iterations, prob.value)
    for label in best:
        print(f"n = {n} {label:9s}: {values[label][0]} iterations, objective {values[label][1]:.12g}, "
              f"{best[label] * 1e3:.1f} ms per iteration")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost", type=int, default=None, help="size N of the embedding's cost run")
    parser.add_argument("--small", action="store_true", help="a positive bound d_0 from 1e-1 down to 1e-4")
    args = parser.parse_args()
    cost(args.cost) if args.cost else main(SMALL if args.small else MODELS)
