"""A known false "optimal": an objective steep at the cold start's vertex (open; measured, not fixed).

min 1e-3 sum(exp(k x)) + ||x - c||^2 over a Birkhoff polytope (8 x 8), a
simplex {x >= 0, sum x = 8} (64 entries) and the box [0, 1]^64, against
CVXPY + Clarabel. Test (1) of the stopping rule (fwmodel/engine/stopping.py)
holds the FW gap to ``tol`` times S_f, the FW gap at the cold start; the cold
start is a vertex, where exp(k) makes S_f astronomical (2e21 at k = 50), and
where |f| is below 1e-5 S_f test (1b) asks nothing of the certified bound.
The solve then ends "optimal" far above f*; ``prob.stats.suboptimality_bound``
stays honest (above f - f*), so the bound shows it, the status does not.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/steep_start.py
"""
import warnings

import numpy as np

import fwmodel as fm


def models(k, rng_seed=1):
    """(name, fwmodel problem builder, cvxpy problem builder) for the steepness k."""
    import cvxpy as cp

    rng = np.random.default_rng(rng_seed)
    n = 8
    C = rng.standard_normal((n, n))
    c = rng.standard_normal(n * n)

    def birkhoff_fm():
        X = fm.Variable((n, n))
        return fm.Problem(fm.Minimize(1e-3 * fm.sum(fm.exp(k * X)) + fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])

    def birkhoff_cp():
        Y = cp.Variable((n, n), nonneg=True)
        return cp.Problem(cp.Minimize(1e-3 * cp.sum(cp.exp(k * Y)) + cp.sum_squares(Y - C)),
                          [cp.sum(Y, 0) == 1, cp.sum(Y, 1) == 1])

    def vector_fm(kind):
        def build():
            x = fm.Variable(n * n)
            sets = [fm.Simplex(x, 8.0)] if kind == "simplex" else [x >= 0, x <= 1]
            return fm.Problem(fm.Minimize(1e-3 * fm.sum(fm.exp(k * x)) + fm.sum_squares(x - c)), sets)
        return build

    def vector_cp(kind):
        def build():
            y = cp.Variable(n * n)
            cons = [y >= 0, cp.sum(y) == 8] if kind == "simplex" else [y >= 0, y <= 1]
            return cp.Problem(cp.Minimize(1e-3 * cp.sum(cp.exp(k * y)) + cp.sum_squares(y - c)), cons)
        return build

    return [("birkhoff 8x8", birkhoff_fm, birkhoff_cp),
            ("simplex 64", vector_fm("simplex"), vector_cp("simplex")),
            ("box 64", vector_fm("box"), vector_cp("box"))]


def main():
    warnings.simplefilter("ignore")
    print("| model | k | status | iterations | f | Clarabel f* | (f - f*) / f* | certified bound | S_f |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in (10.0, 20.0, 50.0):
        for name, build_fm, build_cp in models(k):
            q = build_cp()
            q.solve(solver="CLARABEL")
            p = build_fm()
            p.solve(time_limit=30)
            rel = (p.value - q.value) / abs(q.value)
            print(f"| {name} | {k:g} | {p.status} | {p.stats.iterations} | {p.value:.6g} | {q.value:.6g} | "
                  f"{rel:.1e} | {p.stats.suboptimality_bound:.2e} | {p.stats.objective_scale:.2e} |")


if __name__ == "__main__":
    main()
