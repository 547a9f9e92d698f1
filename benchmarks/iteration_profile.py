"""Where an FW-AL iteration's time goes on the paper's covariance problem: cProfile on CPU time.

The covariance problem of ``trace_defaults.py`` (L1 ball ∩ trace-norm ball on
Sigma_hat, both radii binding) solved with the defaults for a fixed number of
iterations under ``cProfile`` timed by this process's CPU clock (steadier than
the wall clock on a shared machine); prints the step counts, the objective and
the functions by own time and by cumulative time.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/iteration_profile.py --size 4000 --iters 15
    ... --single-products 2000   # Krylov products of rank-k steps in float32 (engine/rank_k.py)
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fwmodel as fm  # noqa: E402
from trace_defaults import cov_data  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=4000)
    p.add_argument("--iters", type=int, default=15)
    p.add_argument("--top", type=int, default=40, help="rows of each listing")
    p.add_argument("--single-products", default=None, metavar="D",
                   help="Krylov products of rank-k steps in float32 on blocks of at least D rows, or 'off' (float64)")
    args = p.parse_args(argv)
    if args.single_products is not None:
        import fwmodel.engine.rank_k as rank_k

        rank_k.SINGLE_PRODUCTS_MIN_DIM = None if args.single_products == "off" else int(args.single_products)
    C, r1, r2 = cov_data(args.size)
    X = fm.Variable((args.size, args.size), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)])
    prob.compile()
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    prob.solve(max_iter=args.iters, tol=1e-12, feas_tol=1e-12)
    profile.disable()
    print("iterations", prob.stats.iterations, "steps", dict(prob.stats.step_counts), "objective", repr(prob.value))
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
