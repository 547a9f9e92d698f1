"""Constraints written one row at a time against the same rows written as one constraint.

A CVXPY habit is to build constraints in a loop, ``[A[i] @ x <= b[i] for i in range(m)]``. Each of those
is a constraint of its own, with its own dual value, but the rows are the same as ``A @ x <= b``: a solve
should take the same iterations and about the same time. Families (each at the sizes given):

* ``ineq``: min ||x - t||^2 over a box with m dense inequality rows;
* ``eq``: the same with m equality rows (fewer than the columns);
* ``two_sided``: ``lo[i] <= A[i] @ x <= hi[i]`` (two constraints per row) over a box;
* ``sectors``: a long-only portfolio (simplex) with one cap per sector, ``fm.sum(w[s]) <= cap``, and a
  minimum expected return.

Prints per model: fwmodel's status, iterations and seconds for both writings, the per-row solve's
(f - f*) / |f*| against CVXPY + Clarabel, and CVXPY's own seconds on the per-row writing (the faster of
Clarabel and SCS; compile included on both sides).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/per_row_constraints.py
"""
import argparse
import time

import numpy as np

import fwmodel as fm


def data(family, m, n, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    t = 2 * rng.standard_normal(n)
    inside = rng.uniform(-0.5, 0.5, n)
    if family == "ineq":
        return A, t, A @ inside + 0.1 * rng.uniform(size=m)
    if family == "eq":
        return A, t, A @ inside
    if family == "two_sided":
        mid = A @ inside
        return A, t, (mid - 0.2 - rng.uniform(size=m), mid + 0.2 + rng.uniform(size=m))
    if family == "sectors":
        sector = rng.integers(0, m, size=n)
        mu = 0.05 + 0.02 * rng.standard_normal(n)
        F = rng.standard_normal((n, 5)) / np.sqrt(n)
        return (sector, mu), F, 1.5 / m
    raise ValueError(family)


def build(lib, family, m, n, seed, per_row):
    """(problem, variable) in fwmodel (lib = fm) or CVXPY (lib = cp): the model written per row or as one."""
    A, t, b = data(family, m, n, seed)
    is_fm = lib is fm
    if family == "sectors":
        (sector, mu), F, cap = A, t, b
        w = lib.Variable(n)
        objective = lib.Minimize(lib.sum_squares(F.T @ w) + 1e-3 * lib.sum_squares(w))
        target = float(np.quantile(mu, 0.6))
        members = [np.flatnonzero(sector == s) for s in range(m) if np.any(sector == s)]
        if per_row:
            caps = [lib.sum(w[idx]) <= cap for idx in members]
        else:
            S = np.zeros((len(members), n))
            for i, idx in enumerate(members):
                S[i, idx] = 1.0
            caps = [S @ w <= cap]
        held = [fm.Simplex(w)] if is_fm else [w >= 0, lib.sum(w) == 1]
        return lib.Problem(objective, held + caps + [mu @ w >= target]), w
    x = lib.Variable(n)
    box = [fm.Box(x, -1.0, 1.0)] if is_fm else [x >= -1, x <= 1]
    if family == "two_sided":
        lo, hi = b
        rows = ([A[i] @ x >= lo[i] for i in range(m)] + [A[i] @ x <= hi[i] for i in range(m)] if per_row
                else [A @ x >= lo, A @ x <= hi])
    elif family == "eq":
        rows = [A[i] @ x == b[i] for i in range(m)] if per_row else [A @ x == b]
    else:
        rows = [A[i] @ x <= b[i] for i in range(m)] if per_row else [A @ x <= b]
    return lib.Problem(lib.Minimize(lib.sum_squares(x - t)), box + rows), x


def timed(solve):
    start = time.perf_counter()
    solve()
    return time.perf_counter() - start


def main():
    import cvxpy as cp

    ap = argparse.ArgumentParser()
    ap.add_argument("--families", nargs="+", default=["ineq", "eq", "two_sided", "sectors"])
    ap.add_argument("--rows", type=int, nargs="+", default=[40, 150])
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seeds", type=int, default=2)
    args = ap.parse_args()
    print("| family | m | seed | per row: status / its / s | one constraint: its / s | per row (f - f*) / \\|f*\\| "
          "| CVXPY per row: s (solver) |")
    print("|---|---|---|---|---|---|---|")
    for family in args.families:
        for m in args.rows:
            n = args.n if family != "sectors" else 4 * m
            if family == "eq" and m >= n:
                continue
            for seed in range(args.seeds):
                prob, _ = build(fm, family, m, n, seed, True)
                t_row = timed(prob.solve)
                one, _ = build(fm, family, m, n, seed, False)
                t_one = timed(one.solve)
                best = None
                for solver in ("CLARABEL", "SCS"):
                    ref, _ = build(cp, family, m, n, seed, True)
                    t_ref = timed(lambda: ref.solve(solver=solver))
                    if solver == "CLARABEL":
                        f_star = ref.value
                    if best is None or t_ref < best[0]:
                        best = (t_ref, solver)
                error = (prob.value - f_star) / max(abs(f_star), 1e-12)
                print(f"| {family} | {m} | {seed} | {prob.status} / {prob.stats.iterations} / {t_row:.2f} "
                      f"| {one.stats.iterations} / {t_one:.2f} | {error:.1e} | {best[0]:.2f} ({best[1]}) |",
                      flush=True)


if __name__ == "__main__":
    main()
