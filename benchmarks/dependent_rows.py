"""Nearly dependent equality rows: one row of ``A @ x == b`` equal to another plus ``delta`` times noise.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/dependent_rows.py
    PYTHONPATH=. ... python benchmarks/dependent_rows.py --deltas 1e-6 --seeds 1 --verbose   # one line per model
    PYTHONPATH=. ... python benchmarks/dependent_rows.py --many 150 201 260 400   # single-row constraints

Models: ``min ||x - c||^2`` or ``min ||F x - g||^2`` over a box, an L1 ball or a simplex in R^n (n = 20 or 40),
with ``m`` dense Gaussian rows (m = 3 or 5), the last one the first plus ``delta`` times Gaussian noise
(``delta = 0``: the same row twice), ``b = A x0`` for a point x0 of the set. The rows combine into
``(a_m - a_1)' x = (a_m - a_1)' x0``, a constraint at scale ``delta`` that a feasibility test in the rows' own
units barely sees.

Reference: Clarabel on the same model with the rows replaced by an orthonormal basis of their span (QR of
A', the right-hand side alike; for delta = 0 the duplicate dropped), the same feasible set in rows that
Clarabel's tolerances read at their true scale (Clarabel on the rows as written returns the
delta = 0 answer from delta ~ 1e-8 on).

"before": the dense pieces left as written (``row_metric._rank_revealed`` off); "after": the default
(rows orthonormalized where their smallest singular value at unit norm is below
``row_metric.ILL_CONDITIONED``); "forced": every dense piece orthonormalized (threshold infinite), to see
what it does to well-conditioned rows. Each table row aggregates the seeds x sets x objectives of one
delta: the median smallest singular value of the rows at unit norm, then per variant the number
"optimal", the number "optimal" but off the reference by more than 1e-3 relative (``off``), the
largest relative error among the "optimal" ones, and the iterations in all.
"""
import argparse
import warnings

import cvxpy as cp
import numpy as np
import scipy.linalg as sla

import fwmodel as fm
from fwmodel.engine import row_metric

warnings.filterwarnings("ignore")


def instance(seed, n, m, delta, kind, objective, shift=0.0):
    """(A, b, c, F, g): m dense Gaussian rows, the last the first plus ``delta`` noise (0: the same row), b = A x0
    for x0 in the set, the last entry of b moved by ``shift`` (an inconsistent model where the rows are
    dependent); F, g of the least-squares objective (None for the projection)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    A[-1] = A[0] + delta * rng.standard_normal(n)
    if kind == "box":
        x0 = rng.uniform(-0.5, 0.5, n)
    elif kind == "l1":
        x0 = rng.standard_normal(n)
        x0 *= 0.5 / np.abs(x0).sum()
    else:
        x0 = rng.dirichlet(np.ones(n))
    b = A @ x0
    b[-1] += shift
    c = 2.0 * rng.standard_normal(n)
    F = rng.standard_normal((2 * n, n)) if objective == "lsq" else None
    g = F @ c if objective == "lsq" else None
    return A, b, c, F, g


def build(lib, A, b, c, F, g, kind):
    mod = fm if lib == "fm" else cp
    n = A.shape[1]
    x = mod.Variable(n)
    if kind == "box":
        sets = [fm.Box(x, -1.0, 1.0)] if lib == "fm" else [x >= -1, x <= 1]
    elif kind == "l1":
        sets = [fm.L1Ball(x, 1.0)] if lib == "fm" else [cp.norm1(x) <= 1]
    else:
        sets = [fm.Simplex(x, 1.0)] if lib == "fm" else [x >= 0, cp.sum(x) == 1]
    rows = A @ x == b
    f = mod.sum_squares(x - c) if F is None else mod.sum_squares(F @ x - g)
    return mod.Problem(mod.Minimize(f), sets + [rows]), x, rows


def orthonormal_span(A, b):
    """Rows Q' x = c with the feasible set of A x = b (pivoted QR of A'; rows dependent to rounding dropped)."""
    Q, R, order = sla.qr(A.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    k = int(np.count_nonzero(d > max(A.shape) * np.finfo(float).eps * d[0]))
    return Q[:, :k].T, sla.solve_triangular(R[:k, :k], b[order][:k], trans="T")


def smallest_singular(A):
    unit = A / np.linalg.norm(A, axis=1, keepdims=True)
    return float(np.linalg.svd(unit, compute_uv=False)[-1])


def reference(A, b, c, F, g, kind):
    Q, q = orthonormal_span(A, b)
    prob, _, _ = build("cp", Q, q, c, F, g, kind)
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def fm_solve(A, b, c, F, g, kind, variant):
    saved = row_metric._rank_revealed, row_metric.ILL_CONDITIONED
    try:
        if variant == "before":
            row_metric._rank_revealed = lambda *args: None
        elif variant == "forced":
            row_metric.ILL_CONDITIONED = np.inf
        prob, x, rows = build("fm", A, b, c, F, g, kind)
        prob.solve()
    finally:
        row_metric._rank_revealed, row_metric.ILL_CONDITIONED = saved
    return prob.status, prob.value, prob.stats.iterations


def many_single_rows(seed, m, n=300, delta=1e-6):
    """(fwmodel problem, f*): min ||x - c||^2 over a box with m dense rows written as m single-row constraints
    (``A[i] @ x == b[i]``), the last the first plus ``delta`` noise; f* from Clarabel on the orthonormal span."""
    A, b, c, _, _ = instance(seed, n, m, delta, "box", "proj")
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -1.0, 1.0)] + [A[i] @ x == b[i] for i in range(m)])
    return prob, reference(A, b, c, None, None, "box")


def main_many(rows, seeds):
    print(r"| rows | seed | status | iterations | (f - f*) / \|f*\| |")
    print("|---|---|---|---|---|")
    for m in rows:
        for seed in range(seeds):
            prob, f_star = many_single_rows(seed, m)
            prob.solve()
            error = (prob.value - f_star) / abs(f_star)
            print(f"| {m} | {seed} | {prob.status} | {prob.stats.iterations} | {error:.1e} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--many", type=int, nargs="*", help="rows: single-row constraints on 300 variables instead")
    ap.add_argument("--deltas", type=float, nargs="+",
                    default=[1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 1e-4, 1e-6, 1e-8, 0.0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--variants", nargs="+", default=["before", "after", "forced"])
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.many:
        return main_many(args.many, args.seeds)
    header = "| delta | sigma_min (median) | " + " | ".join(
        f"{v}: optimal / off / max err / iterations" for v in args.variants) + " |"
    print(header)
    print("|" + "---|" * (2 + len(args.variants)))
    for delta in args.deltas:
        sigmas, stats = [], {v: [0, 0, 0.0, 0, 0] for v in args.variants}
        for seed in range(args.seeds):
            for n, m in ((20, 3), (40, 5)):
                for kind in ("box", "l1", "simplex"):
                    for objective in ("proj", "lsq"):
                        A, b, c, F, g = instance(seed, n, m, delta, kind, objective)
                        sigmas.append(smallest_singular(A))
                        ref = reference(A, b, c, F, g, kind)
                        line = []
                        for v in args.variants:
                            status, value, its = fm_solve(A, b, c, F, g, kind, v)
                            err = abs(value - ref) / max(abs(ref), 1e-12)
                            s = stats[v]
                            s[4] += 1
                            s[3] += its
                            if status == "optimal":
                                s[0] += 1
                                s[1] += err > 1e-3
                                s[2] = max(s[2], err)
                            line.append(f"{v} {status} {its} {err:.1e}")
                        if args.verbose:
                            print(f"  delta={delta:g} seed={seed} n={n} m={m} {kind} {objective} "
                                  f"sigma={sigmas[-1]:.1e} ref={ref:.6g} " + "; ".join(line))
        cells = [f"{s[0]}/{s[4]} / {s[1]} / {s[2]:.1e} / {s[3]:,}" for s in stats.values()]
        print(f"| {delta:g} | {np.median(sigmas):.1e} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
