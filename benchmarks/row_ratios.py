"""Two rows a few times apart in units: does the solve's convergence depend on the ratio?

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/row_ratios.py

Least squares ``||A x - b||^2`` (A 30 x 10) over a set and two rows, the
first written times ``ratio`` (``ratio * (a' x) == ratio * c``), the second
in unit scale: the same model in other units. Four models (an L1 ball that
projects through its rows, a simplex with rows, a box with rows, an L2 ball
with an inequality pair) at ratios 1, 2, 3, 5, 7, 10, 30, 50, 100, 1e3 and their
inverses. Each line: fwmodel's status and iterations with ``prob.solve()``
defaults, and the relative difference of its objective to Clarabel's
optimum of the unit model. A line is marked ``!!`` when the status differs
from Clarabel's or an "optimal" value is more than 1e-3 off. The summary
gives, per model, the iterations in unit scale and the fewest and most over
the ratios.
"""
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

warnings.filterwarnings("ignore")
RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, 10))
B = RNG.standard_normal(30)
RATIOS = [1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 30.0, 50.0, 100.0, 1e3]


def models(k):
    """(name, fwmodel constraints with the first row times k, CVXPY constraints of the unit model)."""
    yield ("L1 + two equalities", lambda x: [fm.norm1(x) <= 1, k * (x[0] - x[2]) == 0.1 * k, x[3] + x[4] == 0.2],
           lambda x: [cp.norm1(x) <= 1, x[0] - x[2] == 0.1, x[3] + x[4] == 0.2])
    yield ("simplex + two equalities", lambda x: [fm.Simplex(x), k * (x[0] - x[5]) == 0.05 * k, fm.sum(x[:5]) == 0.6],
           lambda x: [x >= 0, cp.sum(x) == 1, x[0] - x[5] == 0.05, cp.sum(x[:5]) == 0.6])
    yield ("box + two equalities", lambda x: [x >= -0.5, x <= 0.5, k * (x[0] + x[1]) == 0.3 * k,
                                              x[2] - x[3] + x[4] == 0.1],
           lambda x: [x >= -0.5, x <= 0.5, x[0] + x[1] == 0.3, x[2] - x[3] + x[4] == 0.1])
    yield ("L2 + inequality pair", lambda x: [fm.norm2(x) <= 1, k * (x[0] + x[1]) >= 0.8 * k, x[2] - x[3] <= -0.5],
           lambda x: [cp.norm2(x) <= 1, x[0] + x[1] >= 0.8, x[2] - x[3] <= -0.5])


def main():
    bad = 0
    runs = {}
    print(f"{'':2} {'model':26} {'ratio':>7} {'status':10} {'iters':>6} {'rel diff':>9}")
    for ratio in RATIOS + [1.0 / r for r in RATIOS[1:]]:
        for name, fm_cons, cp_cons in models(ratio):
            x = fm.Variable(10)
            prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), fm_cons(x))
            prob.solve()
            xc = cp.Variable(10)
            ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - B)), cp_cons(xc))
            ref.solve(solver=cp.CLARABEL)
            diff = float("nan")
            if prob.status == "optimal" and ref.status == "optimal":
                diff = abs(prob.value - ref.value) / abs(ref.value)
            ok = prob.status == ref.status and (prob.status != "optimal" or diff <= 1e-3)
            bad += not ok
            runs.setdefault(name, {})[ratio] = prob.stats.iterations
            print(f"{'  ' if ok else '!!'} {name:26} {ratio:7.3g} {prob.status:10} {prob.stats.iterations:6d} "
                  f"{diff:9.1e}")
    print(f"lines marked !!: {bad}")
    for name, its in runs.items():
        print(f"{name:26} unit {its[1.0]:6d}  fewest {min(its.values()):6d}  most {max(its.values()):6d}  "
              f"total {sum(its.values()):7d}")


if __name__ == "__main__":
    main()
