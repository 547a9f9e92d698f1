"""Default penalty with few equality rows: a trace-norm ball and sum(X) == 5, against Clarabel.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/penalty_rows.py --seeds 0 1 2 3 4 5

For each seed: C = rank-4 matrix + 0.1 noise (n x n), radius half of ||C||_*,
minimize ||X - C||_F^2 over the trace-norm ball with sum(X) == 5, solved with
plain ``prob.solve()`` and with CVXPY + Clarabel. Prints fwmodel's status,
iterations, lam, time and its value's relative difference from Clarabel's.
"""
import argparse
import time

import cvxpy as cp
import numpy as np

import fwmodel as fm


def model(seed, n):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, 4)) @ rng.standard_normal((4, n)) + 0.1 * rng.standard_normal((n, n))
    return C, 0.5 * np.linalg.svd(C, compute_uv=False).sum()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    print("| seed | fwmodel status | iterations | lam | fwmodel (s) | Clarabel (s) | rel. diff |")
    print("|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        C, radius = model(seed, args.n)
        X = fm.Variable(C.shape)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, radius), fm.sum(X) == 5])
        t0 = time.perf_counter()
        value = prob.solve()
        t_fw = time.perf_counter() - t0
        Y = cp.Variable(C.shape)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(Y - C)), [cp.normNuc(Y) <= radius, cp.sum(Y) == 5])
        t0 = time.perf_counter()
        ref.solve(solver="CLARABEL")
        t_cl = time.perf_counter() - t0
        lam = prob.stats.lam
        print(f"| {seed} | {prob.status} | {prob.stats.iterations} | {lam:.3g} | {t_fw:.2f} | {t_cl:.2f} | "
              f"{abs(value - ref.value) / abs(ref.value):.1e} |", flush=True)


if __name__ == "__main__":
    main()
