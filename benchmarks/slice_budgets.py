"""Budgets written per slice (``fm.sum(X[i]) == 1`` in a loop) against the same budgets by ``axis``.

One line per model: the sets the slice form compiles to, its status, iterations and objective, then the axis
form's iterations and objective, and Clarabel's objective for the slice form (CVXPY). The two forms should
compile to the same sets and take the same iterations; "refused" with the start of the message where
fwmodel does not take the slice form.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/slice_budgets.py
"""
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")

SHAPE = (30, 20)
C = np.random.default_rng(2026).standard_normal(SHAPE)
T = np.linspace(0.5, 2.0, SHAPE[0])
n, k = SHAPE

MODELS = {  # name: (slice form, axis form), each (m, X) -> constraints
    "rows == 1": (lambda m, X: [X >= 0] + [m.sum(X[i]) == 1 for i in range(n)],
                  lambda m, X: [X >= 0, m.sum(X, axis=1) == 1]),
    "rows <= t_i": (lambda m, X: [X >= 0] + [m.sum(X[i]) <= T[i] for i in range(n)],
                    lambda m, X: [X >= 0, m.sum(X, axis=1) <= T]),
    "columns == 1.5": (lambda m, X: [X >= 0] + [m.sum(X[:, j]) == 1.5 for j in range(k)],
                       lambda m, X: [X >= 0, m.sum(X, axis=0) == 1.5]),
    "X[0] and X[1:] by axis == 1": (lambda m, X: [X >= 0, m.sum(X[0]) == 1, m.sum(X[1:], axis=1) == 1],
                                    lambda m, X: [X >= 0, m.sum(X, axis=1) == 1]),
    "rows == 1 with caps X <= 0.2": (lambda m, X: [X >= 0, X <= 0.2] + [m.sum(X[i]) == 1 for i in range(n)],
                                     lambda m, X: [X >= 0, X <= 0.2, m.sum(X, axis=1) == 1]),
    "rows == 1 and columns == 1.5": (
        lambda m, X: [X >= 0] + [m.sum(X[i]) == 1 for i in range(n)] + [m.sum(X[:, j]) == 1.5 for j in range(k)],
        lambda m, X: [X >= 0, m.sum(X, axis=1) == 1, m.sum(X, axis=0) == 1.5]),
}


def main():
    warnings.simplefilter("ignore")
    print(f"{'model':32s} {'slice form: sets':40s} {'status':>8s} {'iter':>5s} {'objective':>14s} "
          f"{'axis iter':>9s} {'axis objective':>14s} {'Clarabel':>12s}")
    for name, (sliced, by_axis) in MODELS.items():
        X = fm.Variable(SHAPE, name="X")
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), sliced(fm, X))
        try:
            sets = ", ".join(type(b.set).__name__ for b in prob.compile().blocks)
            prob.solve()
        except fm.ModelError as err:
            print(f"{name:32s} refused: {str(err)[:90]}")
            continue
        Xa = fm.Variable(SHAPE, name="X")
        axis = fm.Problem(fm.Minimize(fm.sum_squares(Xa - C)), by_axis(fm, Xa))
        axis.solve()
        Xc = cp.Variable(SHAPE)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)), sliced(cp, Xc))
        ref.solve(solver=cp.CLARABEL)
        print(f"{name:32s} {sets:40s} {prob.status:>8s} {prob.stats.iterations:5d} {prob.value:14.8g} "
              f"{axis.stats.iterations:9d} {axis.value:14.8g} {ref.value:12.8g}")


if __name__ == "__main__":
    main()
