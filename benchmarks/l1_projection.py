"""Projection steps for L1 balls in models without rows: the default against BPCG's vertex steps.

``projection="auto"`` keeps FW-type (BPCG) steps on models made only of
polytopes, except where the model has no rows (no tied copies, no equality
rows), a curved objective and only L1-ball blocks (``projection_choice.candidates``):
those project. This script solves everyday models of that kind with the
defaults and with ``projection=False`` (the vertex steps the default took
before), and CVXPY + Clarabel for reference, best of ``--repeat`` runs each.

    python benchmarks/l1_projection.py --repeat 3
"""
import argparse
import os
import sys

import numpy as np

import fwmodel as fm

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_time  # noqa: E402

try:
    import cvxpy as cp
except ImportError:  # the reference column is then left out
    cp = None


def least_squares(m, n, radius, seed):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)

    def fw():
        x = fm.Variable(n)
        return fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= radius])

    def cvx():
        z = cp.Variable(n)
        return cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= radius]), z

    return f"least squares {m}x{n} in an L1 ball of radius {radius:g}", fw, cvx


def logistic(m, n, radius, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    y = np.sign(A @ rng.standard_normal(n) + 0.5 * rng.standard_normal(m))

    def fw():
        w = fm.Variable(n)
        return fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(y, A @ w)))), [fm.norm1(w) <= radius])

    def cvx():
        z = cp.Variable(n)
        return cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, A @ z)))), [cp.norm1(z) <= radius]), z

    return f"logistic regression {m}x{n} in an L1 ball of radius {radius:g}", fw, cvx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    models = [least_squares(100, 60, 5.0, 0), least_squares(100, 60, 2.0, 1), least_squares(80, 200, 5.0, 2),
              least_squares(80, 200, 1.0, 3), least_squares(300, 100, 3.0, 4), logistic(200, 50, 2.0, 5),
              logistic(500, 100, 5.0, 6)]
    print("| model | options | status | iterations | steps | time (s) | rel. diff to Clarabel | Clarabel (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for title, fw, cvx in models:
        ref, t_ref = None, None
        if cp is not None:
            def run_cvx():
                prob, _ = cvx()
                prob.solve(solver="CLARABEL")
                return prob.value
            t_ref, ref = best_time(run_cvx, args.repeat)
        for label, options in (("defaults", {}), ("projection=False", {"projection": False})):
            def run_fw():
                prob = fw()
                prob.solve(max_iter=50000, **options)
                return prob
            t, prob = best_time(run_fw, args.repeat)
            steps = ", ".join(f"{k} {v}" for k, v in prob.stats.step_counts.items() if v)
            diff = "-" if ref is None else f"{abs(prob.value - ref) / max(abs(ref), 1e-12):.1e}"
            clar = "-" if t_ref is None else f"{t_ref:.4f}"
            print(f"| {title} | {label} | {prob.status} | {prob.stats.iterations} | {steps} | {t:.4f} | {diff} | {clar} |",
                  flush=True)


if __name__ == "__main__":
    main()
