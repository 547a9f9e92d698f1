"""Cost of writing ``constraint.dual_value`` after a solve, on a model whose bounds become a box.

Model: ``min ||X - B||^2`` over a d x d matrix with ``X <= 1``, ``X >= -1``
and ``fm.max(X) <= 0.5`` (three inequalities of d^2 single-entry rows, one
box block). ``write_duals`` gives each bound row its multiplier from the
box's KKT conditions and ``max(X) <= 0.5`` their sum (CVXPY's dual); it
runs once at the end of every solve. Printed: the time of one
``write_duals`` call (best of ``--repeat``, after the solve that formed its
cached layouts), the engine's time per iteration, their ratio, and the dual
value of ``max(X) <= 0.5`` next to its closed form ``sum 2 (B_ij - 0.5)^+``
(X = clip(B, -1, 0.5); the bound X <= 1 is looser and gets 0).

    python benchmarks/dual_values.py --sizes 500 1000 2000 --iters 20 --repeat 3
"""
import argparse
import time

import numpy as np

import fwmodel as fm


def measure(d, iters, repeat):
    B = np.random.default_rng(0).standard_normal((d, d))
    X = fm.Variable((d, d))
    bound = fm.max(X) <= 0.5
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - B)), [X <= 1, X >= -1, bound])
    prob.solve(max_iter=iters, tol=1e-12, feas_tol=1e-12)
    per_iteration = prob.stats.solve_time / max(prob.stats.iterations, 1)
    compiled, state = prob.compile(), prob._state
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        compiled.write_duals(state.x, state.y, state.lam)
        best = min(best, time.perf_counter() - t0)
    return best, per_iteration, prob.stats.iterations, bound.dual_value, float(np.sum(2 * np.maximum(B - 0.5, 0)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| d | write_duals s | engine s/iteration | ratio | iterations | max(X) <= 0.5 dual | closed form |")
    print("|---|---|---|---|---|---|---|")
    for d in args.sizes:
        wd, it, n_it, dual, exact = measure(d, args.iters, args.repeat)
        shown = "None" if dual is None else f"{dual:.6g}"
        print(f"| {d} | {wd:.3f} | {it:.3f} | {wd / it:.2f} | {n_it} | {shown} | {exact:.6g} |")


if __name__ == "__main__":
    main()
