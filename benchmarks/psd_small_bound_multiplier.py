"""A least-squares multiplier estimate for a small positive bound on a PSD diagonal, against Clarabel's.

min ||X - C||_F^2 over X >> 0, diag(X) <= d with d_0 small (``psd_zero_diagonal.py --small``'s model). After
N default iterations, fit y to the PSD block's KKT condition on the range U of the iterate,
U'(2 (X - C) + Diag(y)) U = 0, over the rows near their bound (the trace ball inactive), and print it next to
the engine's y (the bounds' ``dual_value``) and Clarabel's.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/psd_small_bound_multiplier.py --d0 1e-3
"""
import argparse
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm
from psd_zero_diagonal import build, symmetric


def main(d0, iterations=(20, 50, 100, 200), n=6, rank_tol=1e-3):
    ref = build(cp, "bound", n, [0], d0, seed=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.solve(solver=cp.CLARABEL)
    print(f"d_0 = {d0:g}; Clarabel's y: {np.array2string(ref.constraints[1].dual_value, precision=3)}")
    C = symmetric(n, n)
    d = np.ones(n)
    d[0] = d0
    for N in iterations:
        prob = build(fm, "bound", n, [0], d0, seed=n)
        prob.solve(max_iter=N)
        X = prob.variables()[0].value
        w, V = np.linalg.eigh(X)
        U = V[:, w > rank_tol * w.max()]
        near = np.where(np.diag(X) > d / 2)[0]  # rows near their bound
        A = np.stack([np.outer(U[i], U[i]).ravel() for i in near], 1)
        y = np.zeros(n)
        y[near] = np.linalg.lstsq(A, -(U.T @ (2 * (X - C)) @ U).ravel(), rcond=None)[0]
        print(f"iteration {N:4d}: rank {U.shape[1]}, estimate {np.array2string(y, precision=2)}, "
              f"engine {np.array2string(prob.constraints[1].dual_value, precision=2)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--d0", type=float, default=1e-3)
    main(ap.parse_args().d0)
