"""One rank-k prox step's Krylov work: Y = X - G / L formed (a d x d array) against the operator (none).

A rank-k step (fwmodel/engine/rank_k.py) needs the top-k eigenpairs of
Y = X - G / L. Its lean path never forms Y: the block Krylov products are
X Q - (G Q) / L (``ShiftedMatrix``), two thin products instead of one, and
no d x d array. This times ``rank_k_prox`` both ways on the same X, G and
warm start (the paper's covariance matrix, X = 0.9 C, G = 2 (X - C) + a
small diagonal), best of ``--repeat``, both variants interleaved:

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/krylov_prox.py --size 2000
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
from fwmodel.datasets import sparse_low_rank_covariance  # noqa: E402
from fwmodel.engine.rank_k import ShiftedMatrix, rank_k_prox  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=2000)
    p.add_argument("--ranks", type=int, nargs="+", default=[4, 16, 64, 128])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    d = args.size
    data = sparse_low_rank_covariance(d, seed=0)
    C, radius = data.sigma_hat, data.radius_trace
    X = 0.9 * C
    G = 2.0 * (X - C) + 0.01 * np.eye(d)
    L = 4.0
    Y = np.empty((d, d))
    print("| k | Y formed + Krylov (ms) | operator (ms) | ratio | top value, formed | operator |")
    print("|---|---|---|---|---|---|")
    for k in args.ranks:
        start = rank_k_prox(X - 1.01 * G / L, radius, k, symmetric=True, rng=np.random.default_rng(1))[2]
        best = {"formed": np.inf, "operator": np.inf}
        top = {}
        for _ in range(args.repeat):
            for variant in ("formed", "operator"):
                t0 = time.perf_counter()
                if variant == "formed":
                    np.multiply(G, -1.0 / L, out=Y)
                    Y += X
                    s = rank_k_prox(Y, radius, k, symmetric=True, start=start, rng=np.random.default_rng(2))[1]
                else:
                    s = rank_k_prox(ShiftedMatrix(X, G, L), radius, k, symmetric=True, start=start,
                                    rng=np.random.default_rng(2), products=True)[1]
                best[variant] = min(best[variant], time.perf_counter() - t0)
                top[variant] = s[0]
        print(f"| {k} | {best['formed'] * 1e3:.1f} | {best['operator'] * 1e3:.1f} | "
              f"{best['operator'] / best['formed']:.2f} | {top['formed']:.9g} | {top['operator']:.9g} |", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n(d = {d}, load average {load:.1f})")


if __name__ == "__main__":
    main()
