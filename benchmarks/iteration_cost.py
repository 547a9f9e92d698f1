"""Time per FW-AL iteration on the model zoo's models (fwmodel only, no CVXPY).

For work that cuts the Python cost of one iteration without changing the
iterates: the iteration counts must not move, only the time per iteration.
Each model is built from ``benchmarks/zoo.py``'s builders, solved once to
warm up, then ``--repeat`` times; the best solve time is reported, divided
by the iteration count. To compare two trees, run this alternately with
``PYTHONPATH`` set to each (one process per run), on one BLAS thread:

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/iteration_cost.py
    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/iteration_cost.py --only tv --repeat 10
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import zoo  # noqa: E402

MODELS = {
    "tv": zoo.tv_denoise,
    "portfolio": zoo.capped_portfolio,
    "simplex_eq": zoo.simplex_equalities,
    "birkhoff": zoo.birkhoff,
    "potts": zoo.potts_map,
    "row_stochastic": zoo.row_stochastic,
}


def best_solve(build, repeat):
    """(best solve time in s, status, iterations) over ``repeat`` solves of fresh problems, after one warm-up."""
    build()[0].solve()
    best, prob = float("inf"), None
    for _ in range(repeat):
        prob = build()[0]
        start = time.perf_counter()
        prob.solve()
        best = min(best, time.perf_counter() - start)
    return best, prob.status, prob.stats.iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS), default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import fwmodel

    print(f"fwmodel from {os.path.dirname(os.path.dirname(os.path.abspath(fwmodel.__file__)))}")
    print("| model | status | iterations | best solve (s) | per iteration (us) |")
    print("|---|---|---|---|---|")
    for key in args.only or list(MODELS):
        best, status, iterations = best_solve(MODELS[key], args.repeat)
        print(f"| {key} | {status} | {iterations} | {best:.4f} | {1e6 * best / max(iterations, 1):.1f} |")


if __name__ == "__main__":
    main()
