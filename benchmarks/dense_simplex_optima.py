"""Dense optima over simplices: minimum-variance portfolios, every weight positive at the optimum.

min ||F' w||^2 + rho ||w||^2 over long-only weights (``fm.Simplex(w)``), F a factor model (n assets, 5
factors) and rho a ridge: the optimum spreads over all n assets. Per-group pairwise steps move one pair of
weights per iteration, so they approach such an optimum slowly; the face step
(:mod:`fwmodel.engine.face_step`) moves every positive weight at once. Variants: ``plain``; ``return``
with a minimum expected return ``mu @ w >= q``; ``sectors`` with also one cap per sector
(``fm.sum(w[s]) <= 1.5 / sectors``, 40 sectors).

Prints per model fwmodel's status, iterations and seconds with default options, (f - f*) / |f*| against
CVXPY + Clarabel, and the faster CVXPY solver's seconds (Clarabel or SCS; compile included on both sides).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/dense_simplex_optima.py
"""
import argparse
import time

import numpy as np

import fwmodel as fm


def build(lib, n, variant, seed, rho=1e-3, sectors=40):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 5)) / np.sqrt(n)
    mu = 0.05 + 0.02 * rng.standard_normal(n)
    w = lib.Variable(n)
    cons = [fm.Simplex(w)] if lib is fm else [w >= 0, lib.sum(w) == 1]
    if variant in ("return", "sectors"):
        cons.append(mu @ w >= float(np.quantile(mu, 0.6)))
    if variant == "sectors":
        sector = rng.integers(0, sectors, size=n)
        cons += [lib.sum(w[np.flatnonzero(sector == s)]) <= 1.5 / sectors
                 for s in range(sectors) if np.any(sector == s)]
    return lib.Problem(lib.Minimize(lib.sum_squares(F.T @ w) + rho * lib.sum_squares(w)), cons)


def main():
    import cvxpy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 160, 300])
    ap.add_argument("--variants", nargs="+", default=["plain", "return", "sectors"])
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()
    print("| variant | n | seed | status | iterations | face steps | s | (f - f*) / \\|f*\\| | CVXPY s (solver) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for variant in args.variants:
        for n in args.sizes:
            for seed in range(args.seeds):
                prob = build(fm, n, variant, seed)
                start = time.perf_counter()
                prob.solve()
                seconds = time.perf_counter() - start
                best = None
                for solver in ("CLARABEL", "SCS"):
                    ref = build(cp, n, variant, seed)
                    start = time.perf_counter()
                    ref.solve(solver=solver)
                    took = time.perf_counter() - start
                    if solver == "CLARABEL":
                        f_star = ref.value
                    if best is None or took < best[0]:
                        best = (took, solver)
                face = prob.stats.step_counts.get("face", 0)
                print(f"| {variant} | {n} | {seed} | {prob.status} | {prob.stats.iterations} | {face} | {seconds:.2f} "
                      f"| {(prob.value - f_star) / abs(f_star):.1e} | {best[0]:.2f} ({best[1]}) |", flush=True)


if __name__ == "__main__":
    main()
