"""Soft alignment: least squares over AlignmentPolytope ∩ L1Ball with default options.

T = (an alignment) + 0.3 N(0, 1), radius = 0.6 x the alignment's length, as in
tests/test_alignment_solve.py at a larger size. Reports status, iterations,
time, and the time per iteration over iterations 100-200 and the last 100.

    python benchmarks/alignment_l1.py --sizes 30:36
"""
import argparse
import time

import numpy as np

import fwmodel as fm
from fwmodel.sets.alignment import AlignmentPolytope, matching_lmo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="*", default=["30:36"])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print("| n x m | status | iterations | time (s) | ms/it 100-200 | ms/it last 100 | step counts |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        n, m = map(int, size.split(":"))
        rng = np.random.default_rng(args.seed)
        truth = matching_lmo(-rng.random((n, m)))
        T = truth + 0.3 * rng.standard_normal((n, m))
        A = fm.Variable((n, m))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A - T)),
                          [AlignmentPolytope(A), fm.L1Ball(A, radius=0.6 * truth.sum())])
        t = time.perf_counter()
        prob.solve()
        el = time.perf_counter() - t
        h = prob.history.to_dict()
        it, tm = h["iteration"], h["time"]

        def window(a, b):
            i, j = np.searchsorted(it, a), np.searchsorted(it, b)
            return (tm[j] - tm[i]) / (it[j] - it[i]) * 1e3 if j < len(it) and it[j] > it[i] else float("nan")

        last = it[-1]
        print(f"| {n} x {m} | {prob.status} | {prob.stats.iterations} | {el:.2f} | {window(100, 200):.2f} | "
              f"{window(max(0, last - 100), last):.2f} | {prob.stats.step_counts} |", flush=True)


if __name__ == "__main__":
    main()
