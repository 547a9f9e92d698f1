"""Markowitz portfolios with a risk bound under plain ``prob.solve()`` defaults: iterations and the first penalty.

    max mu' w  s.t.  w' Sigma w <= level,  sum(w) == 1,  w >= 0

(CVXPY's portfolio example; Sigma = 0.01 F F' + diag(U(0.01, 0.05)) with
``--factors`` Gaussian factors, mu ~ U(0, 0.1)). The objective is linear, so
the default penalty comes from the slope along the first Frank-Wolfe
direction (``engine.schedules.default_penalty``) and the dual schedule's
rules move it from there. For each size, data seed and risk level: status
and iterations with the defaults, the penalty the solve started from, and,
for comparison, the iterations with the penalty fixed by hand at
``--lams`` (``prob.solve(lam=...)``; the schedule's rules still move it).

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/portfolio_risk.py
    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/portfolio_risk.py --sizes 100 --seeds 0 --levels 0.005 --lams
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402


def portfolio(n, seed, level, factors=3):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, factors))
    sigma = 0.01 * F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    w = fm.Variable(n)
    return fm.Problem(fm.Maximize(mu @ w), [fm.quad_form(w, sigma) <= level, fm.sum(w) == 1, w >= 0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100, 300])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    parser.add_argument("--levels", type=float, nargs="+", default=[0.005, 0.02])
    parser.add_argument("--lams", type=float, nargs="*", default=[1.0, 4.0, 16.0])
    args = parser.parse_args(argv)
    header = "| n | seed | level | status | iterations | first lam | " + " | ".join(f"lam = {lam:g}" for lam in args.lams)
    print(header + " |\n|" + "---|" * (6 + len(args.lams)))
    total = 0
    for n in args.sizes:
        for seed in args.seeds:
            for level in args.levels:
                prob = portfolio(n, seed, level)
                prob.solve()
                total += prob.stats.iterations
                by_hand = []
                for lam in args.lams:
                    fixed = portfolio(n, seed, level)
                    fixed.solve(lam=lam)
                    by_hand.append(f"{fixed.stats.iterations}")
                print(f"| {n} | {seed} | {level:g} | {prob.status} | {prob.stats.iterations} | "
                      f"{prob.history['lam'][0]:.3g} | " + " | ".join(by_hand) + " |", flush=True)
    print(f"\ntotal iterations with the defaults: {total}")


if __name__ == "__main__":
    main()
