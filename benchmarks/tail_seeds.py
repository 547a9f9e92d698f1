"""Iteration counts of the zoo's models with rows over several data seeds.

For each model and data seed: fwmodel's status and iterations with plain
``prob.solve()`` and the relative objective difference against CVXPY +
Clarabel in the zoo's measure (|f - f_ref| / max(|f_ref|, S / 100), S =
``prob.stats.objective_scale``). Counts only (no timings): the iteration
counts are deterministic, so two trees compare exactly.

    python benchmarks/tail_seeds.py                       # tv, portfolio, simplex_eq, birkhoff, rows, potts; seeds 0-5
    python benchmarks/tail_seeds.py --only tv --seeds 0 1 2
"""
import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from zoo import MODELS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=["tv", "portfolio", "simplex_eq", "birkhoff", "rows", "potts"])
    ap.add_argument("--seeds", nargs="*", type=int, default=list(range(6)))
    args = ap.parse_args()
    print("| model | seed | status | iterations | rel. objective diff |")
    print("|---|---|---|---|---|")
    for key in args.only:
        title, build = MODELS[key]
        total = 0
        for seed in args.seeds:
            fw, cvx = build(seed=seed)
            fw.solve()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cvx.solve(solver="CLARABEL")
            err = abs(fw.value - cvx.value) / max(abs(cvx.value), 0.01 * fw.stats.objective_scale)
            total += fw.stats.iterations
            print(f"| {key} | {seed} | {fw.status} | {fw.stats.iterations} | {err:.1e} |", flush=True)
        print(f"| {key} | total | | {total} | |", flush=True)


if __name__ == "__main__":
    main()
