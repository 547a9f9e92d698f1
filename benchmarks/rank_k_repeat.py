"""Run-to-run repeatability of rank_k="auto" (the default) on least squares over a trace-norm ball.

min ||X - C||_F^2 over {||X||_* <= r}, X of shape m x n (default 1000 x 1100,
the smallest sizes at which rank_k="auto" takes rank-k steps are 1000 rows and
columns), C = rank 5 + N(0, 0.01) noise, r half of ||C||_*: the solution is the
projection of C onto the ball (a closed form by full SVD). The same model is
solved ``--repeat`` times in one process with the default options; each run
prints its status, iterations, time, relative objective error against the
closed form and step counts. rank_k="auto" should take the same steps every run.

    python benchmarks/rank_k_repeat.py --shape 1000 1100 --repeat 5 --time-limit 60
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402


def ball_model(m, n, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((m, 5)) @ rng.standard_normal((5, n)) / np.sqrt(n) * 10.0
    C += 0.1 * rng.standard_normal((m, n))
    radius = 0.5 * float(np.linalg.svd(C, compute_uv=False).sum())
    return C, radius


def problem(C, radius):
    X = fm.Variable(C.shape, name="X")
    ball = fm.TraceNormBall(X, radius)
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball]), ball


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", type=int, nargs=2, default=[1000, 1100])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--rank-k", choices=["auto", "on", "off"], default="auto")
    args = p.parse_args(argv)
    C, radius = ball_model(*args.shape)
    prob, ball = problem(C, radius)
    f_star = float(np.sum((ball.project(C) - C) ** 2))
    options = {} if args.rank_k == "auto" else {"rank_k": args.rank_k == "on"}
    print(f"shape {tuple(args.shape)}, f* = {f_star:.10g} (projection of C), options {options or 'defaults'}")
    print("| run | status | iterations | time (s) | (f - f*) / f* | steps |")
    print("|---|---|---|---|---|---|")
    for run in range(args.repeat):
        prob, _ = problem(C, radius)
        t0 = time.perf_counter()
        prob.solve(time_limit=args.time_limit, **options)
        elapsed = time.perf_counter() - t0
        steps = ", ".join(f"{k} {v}" for k, v in prob.stats.step_counts.items() if v)
        print(f"| {run + 1} | {prob.status} | {prob.stats.iterations} | {elapsed:.2f} | "
              f"{(prob.value - f_star) / f_star:.1e} | {steps} |", flush=True)
    print(f"(load average {os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
