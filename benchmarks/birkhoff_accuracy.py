"""Birkhoff projection at equal accuracy: how many atoms the optimum needs, and what that costs.

min ||X - C||_F^2 over doubly stochastic X, on two kinds of instance:

* ``dense``: C = (1 + N(0, 1)) / n (the instance of ``benchmarks/birkhoff.py``):
  C is nearly doubly stochastic, so the projection X* keeps most entries
  positive, and f* is tiny next to the objective's range;
* ``matching``: C = P + sigma * N(0, 1) * 3 / sqrt(n), P a random permutation
  matrix (a noisy assignment, the usual use of a Birkhoff projection: soft
  matchings, relaxed graph matching): X* is sparse.

For each instance the script reports what the optimum asks of any method
that writes its point as a convex combination of permutation matrices
(Frank-Wolfe and its active-set variants): the support S of Clarabel's X*
(entries above 1e-7) spans a face of dimension |S| - 2n + c (c the connected
components of the support's bipartite graph), and a point in the relative
interior of a face of dimension D is in general a combination of no fewer
than D + 1 vertices (Caratheodory's bound is attained off a set of measure
zero). Then fwmodel at each ``--tols`` with each LMO backend: iterations, LMO
calls, the error |f - f*| / |f*| against Clarabel, the certified bound
``prob.stats.suboptimality_bound`` relative to |f*|, and the time against
the faster of Clarabel and SCS (SCS's own error is printed too). Times are
medians over ``--repeat`` repeats, each solving with every method in turn.

    python benchmarks/birkhoff_accuracy.py --sizes 200 --repeat 3
    python benchmarks/birkhoff_accuracy.py --sizes 200 --instances matching --sigmas 0.1 0.3 1.0
"""
import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

import fwmodel as fm

try:
    from .birkhoff import LMOTimer, cvxpy_projection
except ImportError:
    from birkhoff import LMOTimer, cvxpy_projection


def instance(kind, n, sigma, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "dense":
        return (1.0 + rng.standard_normal((n, n))) / n
    P = np.eye(n)[rng.permutation(n)]
    return P + sigma * rng.standard_normal((n, n)) * 3.0 / np.sqrt(n)


def face_vertices_needed(X, threshold=1e-7):
    """|S| and D + 1 = |S| - 2n + c + 1 for the face spanned by X's support S (see the module docstring)."""
    n = X.shape[0]
    S = sp.csr_matrix(X > threshold)
    graph = sp.bmat([[None, S], [S.T, None]])
    components = connected_components(graph, directed=False)[0]
    return int(S.nnz), int(S.nnz - 2 * n + components + 1)


def fwmodel_solve(C, backend, tol, max_iter):
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X, backend=backend)])
    options = {} if tol is None else dict(tol=tol)
    with LMOTimer() as lmo:
        t = time.perf_counter()
        prob.solve(max_iter=max_iter, **options)
        elapsed = time.perf_counter() - t
    return elapsed, prob, lmo.calls, lmo.seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[200])
    ap.add_argument("--instances", nargs="*", default=["dense", "matching"], choices=["dense", "matching"])
    ap.add_argument("--sigmas", type=float, nargs="*", default=[0.3], help="noise levels of the matching instance")
    ap.add_argument("--tols", type=float, nargs="*", default=[1e-4, 1e-5, 1e-6],
                    help="fwmodel's tol values (1e-4 is the default)")
    ap.add_argument("--backends", nargs="*", default=["scipy", "numba"], choices=fm.BirkhoffPolytope.BACKENDS)
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    if "numba" in args.backends:  # numba's first use (compile or load the cache) is not counted
        fm.BirkhoffPolytope(fm.Variable((3, 3)), backend="numba").lmo_for_solve()(np.eye(3).ravel())

    median = lambda values: float(np.median(values))  # noqa: E731
    for n in args.sizes:
        cases = [("dense", None)] if "dense" in args.instances else []
        cases += [("matching", s) for s in args.sigmas] if "matching" in args.instances else []
        for kind, sigma in cases:
            C = instance(kind, n, sigma)
            runs, cvx = {}, {"CLARABEL": [], "SCS": []}
            for _ in range(args.repeat):
                for solver in cvx:
                    elapsed, _, value, X = cvxpy_projection(C, solver)
                    cvx[solver].append((elapsed, value, X))
                for backend in args.backends:
                    for tol in args.tols:
                        runs.setdefault((backend, tol), []).append(fwmodel_solve(C, backend, tol, args.max_iter))
            _, f_star, X_star = cvx["CLARABEL"][-1]
            support, needed = face_vertices_needed(X_star)
            t_clarabel, t_scs = median([r[0] for r in cvx["CLARABEL"]]), median([r[0] for r in cvx["SCS"]])
            scs_error = abs(cvx["SCS"][-1][1] - f_star) / abs(f_star)
            label = kind if sigma is None else f"{kind}, sigma {sigma:g}"
            print(f"\n### n = {n}, {label}: f* = {f_star:.7g}, |S| = {support} of {n * n} entries, "
                  f"vertices for an exact combination >= {needed}; Clarabel {t_clarabel:.3f} s, "
                  f"SCS {t_scs:.3f} s (error {scs_error:.1e})\n")
            print("| backend | tol | status | iterations | LMO calls | in the LMO (s) | time (s) | "
                  "\\|f - f*\\| / \\|f*\\| | bound / \\|f*\\| | time / faster CVXPY |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            faster = min(t_clarabel, t_scs)
            for (backend, tol), results in runs.items():
                elapsed, prob, calls, in_lmo = results[-1]
                t = median([r[0] for r in results])
                error = abs(prob.value - f_star) / abs(f_star)
                bound = prob.stats.suboptimality_bound / abs(f_star)
                print(f"| {backend} | {tol:g} | {prob.status} | {prob.stats.iterations} | {calls} | "
                      f"{median([r[3] for r in results]):.3f} | {t:.3f} | {error:.1e} | {bound:.1e} | "
                      f"{t / faster:.2f} |", flush=True)


if __name__ == "__main__":
    main()
