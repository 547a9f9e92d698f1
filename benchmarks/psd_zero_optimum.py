"""PSD models whose optimum is at or near X = 0, default ``prob.solve()`` against CVXPY + Clarabel.

Part 1 (``stopping``): min trace(G X) with G = b b' PSD of rank one over X >> 0, trace(X) <= 0.5 and one
more row; X = 0 minimizes f over the PSD ball (the smallest eigenvalue of G is 0). Status and iterations
per option set (max_iter=3000), the objective against Clarabel's.

Part 2 (``duals``): min ||X - T||^2 over X >> 0, trace(X) <= 1 and bounds on entries that a box holds
(the box also takes the sides the PSD ball implies, diag(X) >= 0). The largest entry of |Z - Z_ref|
(Z the dual value of X >> 0, Z_ref Clarabel's), the smallest eigenvalue of Z, |mu - mu_ref| of the trace.

Run it on two checkouts to compare (PYTHONPATH selects which code runs):

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/psd_zero_optimum.py
"""
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

OPTIONS = [{}, {"inface": True, "projection": False, "rank_k": False}, {"inface": False, "projection": False}]


def rank_one_cost():
    """The fuzz model's G (seed 122): b the first row of a random symmetric matrix."""
    rng = np.random.default_rng(122)
    n = int(rng.integers(2, 5))
    B = rng.standard_normal((n, n))
    B = B + B.T
    return np.outer(B[0], B[0])


ROWS = {  # the row next to X >> 0, trace(X) <= 0.5
    "sum(X) <= 0.2, X00 >= 0": lambda m, X: [m.sum(X) <= 0.2, X[0, 0] >= 0.0],
    "sum(X) >= 0.1": lambda m, X: [m.sum(X) >= 0.1],
    "X[0, 1] >= 0.05": lambda m, X: [X[0, 1] >= 0.05],
    "diag(X) >= 0.01": lambda m, X: [m.diag(X) >= 0.01],
}


def stopping():
    G = rank_one_cost()
    n = G.shape[0]
    print(f"{'rows':26s} {'scale':>6s} {'Clarabel':>10s} | " + " | ".join(
        f"{'opts ' + str(k)}: status iter f - f_ref" for k in range(len(OPTIONS))))
    for label, rows in ROWS.items():
        for scale in (1.0, 1e6):
            def build(m):
                X = m.Variable((n, n), symmetric=True)
                return m.Problem(m.Minimize(m.trace(scale * G @ X)), [X >> 0, m.trace(X) <= 0.5] + rows(m, X))
            ref = build(cp)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref.solve(solver=cp.CLARABEL)
            cells = []
            for options in OPTIONS:
                prob = build(fm)
                value = prob.solve(max_iter=3000, **options)
                cells.append(f"{prob.status:>8s} {prob.stats.iterations:5d} {value - ref.value:9.1e}")
            print(f"{label:26s} {scale:6.0e} {ref.value:10.2e} | " + " | ".join(cells))
    print("options:", "; ".join(f"{k}: {o or 'defaults'}" for k, o in enumerate(OPTIONS)))


def duals():
    n = 4
    rng = np.random.default_rng(0)
    C = rng.standard_normal((n, n))
    C = C + C.T
    Cp = C @ C.T + 0.1 * np.eye(n)
    cases = [
        ("-Cp, diag(X) <= 0.3", -Cp, lambda m, X: [m.diag(X) <= 0.3]),
        ("-Cp, X[0, 0] <= 0.3", -Cp, lambda m, X: [X[0, 0] <= 0.3]),
        ("-Cp, X <= 0.5", -Cp, lambda m, X: [X <= 0.5]),
        ("-Cp, diag(X) >= -1", -Cp, lambda m, X: [m.diag(X) >= -1.0]),
    ]
    print(f"{'T, bounds':24s} {'status':>8s} {'|Z - Z_ref|':>12s} {'min eig Z':>10s} {'|mu - mu_ref|':>13s} "
          f"{'|Z_ref|':>8s}")
    for label, T, rows in cases:
        out = []
        for m in (fm, cp):
            X = m.Variable((n, n), symmetric=True)
            constraints = [X >> 0, m.trace(X) <= 1] + rows(m, X)
            prob = m.Problem(m.Minimize(m.sum_squares(X - T)), constraints)
            prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
            out.append((prob.status, constraints[0].dual_value, constraints[1].dual_value))
        (status, Z, mu), (_, Z_ref, mu_ref) = out
        if Z is None:
            print(f"{label:24s} {status:>8s} {'None':>12s}")
            continue
        print(f"{label:24s} {status:>8s} {np.abs(Z - Z_ref).max():12.2e} {np.linalg.eigvalsh(Z).min():10.2e} "
              f"{abs(mu - mu_ref):13.2e} {np.abs(Z_ref).max():8.3g}")


if __name__ == "__main__":
    stopping()
    print()
    duals()
