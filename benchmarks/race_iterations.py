"""The Fig. 2 race by iteration: time and estimate error of each copy at every FW-AL iteration.

The demo's race (``python -m fwmodel demo``) measures wall-clock time to 1.1x the
statistical floor at checkpoints 5% apart, against GFB on the same machine:
under load both clocks move. This script prints, for fwmodel alone, every
iteration's time (the metrics' own cost excluded) and the estimate error
``||S - Sigma||_F / ||Sigma||_F`` and support F1 of the average of the two
copies, of the L1 ball's copy and of the trace-norm ball's copy
(``prob.point_in``), so the iteration at which a rule enters the band is
exact and the time per iteration can be read separately.

Usage::

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/race_iterations.py --size 4000 --iterations 6
    ... --options "rank_k=False"     # solve options, as Python keyword arguments
    ... --seed 1 --single-products off   # another data draw; float64 Krylov products
"""
from __future__ import annotations

import argparse
import time

from fwmodel.datasets import sparse_low_rank_covariance
from fwmodel.experiments import build_problem, estimate_error, f1_score, support_scores


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--options", default="", help='solve options, e.g. "rank_k=False, projection=False"')
    parser.add_argument("--seed", type=int, default=0, help="seed of the paper's data generator (default 0)")
    parser.add_argument("--single-products", default=None, metavar="D",
                        help="Krylov products of rank-k steps in float32 on blocks of at least D rows, "
                             "or 'off' for float64 products (engine/rank_k.py, SINGLE_PRODUCTS_MIN_DIM)")
    args = parser.parse_args()
    if args.single_products is not None:
        import fwmodel.engine.rank_k as rank_k

        rank_k.SINGLE_PRODUCTS_MIN_DIM = None if args.single_products == "off" else int(args.single_products)
    options = eval(f"dict({args.options})")  # a benchmark's command line, not user input
    data = sparse_low_rank_covariance(args.size, threshold=args.threshold, seed=args.seed)

    def scores(S):
        recall, precision, _ = support_scores(S, data.support)
        return estimate_error(S, data.sigma), f1_score(recall, precision)

    start = time.perf_counter()
    problem, X = build_problem(data)
    l1, trace = problem.constraints
    paused = [0.0]

    def callback(state):
        entered = time.perf_counter()
        t = entered - start - paused[0]
        a, b = state.point_in(l1), state.point_in(trace)
        rows = [scores(0.5 * (a + b)), scores(a), scores(b)]
        print(f"iteration {state.iteration:3d}  {t:7.2f} s  error / F1: average {rows[0][0]:.3f} / {rows[0][1]:.3f}"
              f"  L1 copy {rows[1][0]:.3f} / {rows[1][1]:.3f}  trace copy {rows[2][0]:.3f} / {rows[2][1]:.3f}",
              flush=True)
        paused[0] += time.perf_counter() - entered
        return state.iteration < args.iterations

    problem.solve(callback=callback, **options)
    print("steps (per block):", problem.stats.step_counts)


if __name__ == "__main__":
    main()
