"""End to end: a solve whose warm-started trace-norm LMO misses, with and without the check.

min ||X - C||_F^2 over the PSD trace ball (or the nuclear ball) of radius
0.5, n = 160 (the Lanczos path), C = Q diag(c) Q' with c_1 = 1, c_2 = 0.5
(1 + gap), the rest uniform in [-0.3, 0.3]. The first FW step reaches
0.5 q_1 q_1', where the gradient's extreme eigenvector is q_2, orthogonal to
the warm start (q_1), better by the relative ``gap``. Printed per seed:
status, iterations, the reported ``suboptimality_bound``, the true FW gap at
the returned point (``numpy.linalg.eigvalsh``) and f - f* (f* in closed
form: C's eigenvalues projected onto the simplex / L1 ball).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/lanczos_warm_solve.py --tol 1e-7
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402
from fwmodel.sets.trace_norm import _project_nonnegative_l1  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=160)
    p.add_argument("--gap", type=float, default=1e-4)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--seeds", type=int, default=4)
    args = p.parse_args(argv)
    n, r = args.n, 0.5
    print("| psd | seed | status | iterations | bound | true FW gap | f - f* |")
    print("|---|---|---|---|---|---|---|")
    for psd in (True, False):
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
            c = rng.uniform(-0.3, 0.3, n)
            c[0], c[1] = 1.0, 0.5 * (1 + args.gap)
            C = (Q * c) @ Q.T
            C = 0.5 * (C + C.T)
            X = fm.Variable((n, n))
            prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, r, psd=psd)])
            prob.solve(tol=args.tol)
            G = 2.0 * (X.value - C)
            w = np.linalg.eigvalsh(0.5 * (G + G.T))
            fw_gap = float(np.sum(X.value * G)) - r * (min(w[0], 0.0) if psd else -np.abs(w).max())
            proj = _project_nonnegative_l1(np.maximum(c, 0.0), r) if psd else \
                np.sign(c) * _project_nonnegative_l1(np.abs(c), r)
            f_star = float(np.sum((proj - c) ** 2))
            print(f"| {psd} | {seed} | {prob.status} | {prob.stats.iterations} | "
                  f"{prob.stats.suboptimality_bound:.2e} | {fw_gap:.2e} | {prob.value - f_star:.2e} |")


if __name__ == "__main__":
    main()
