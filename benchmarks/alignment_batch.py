"""Batched soft alignments: BPCG per alignment against FW steps and an independent flow-LP reference.

B pairs of random sequences (values uniform in [0, 1]); cost C_b[i, j] =
|a_i - b_j| - 0.3; the model is the quadratically smoothed alignment

    min  sum_b <C_b, X_b> + (mu / 2) ||X_b||^2   over   X in AlignmentPolytope(X, kind, axis=0)

(one block of B alignments, one batched LMO). Compared, same run:

* fwmodel with default options (step="auto": BPCG per alignment, each with
  its own active set and step size; :class:`fwmodel.engine.steps.BatchBPCGStep`),
* fwmodel with step="fw" (what "auto" did on batches before: one FW step for
  the whole batch),
* CVXPY + Clarabel on an independent formulation: every alignment as a unit
  flow through its alignment graph (a DAG; flow polytopes are integral, so
  the cells' flows range exactly over the alignment polytope). For
  kind="matching" the graph is Needleman-Wunsch's edit graph on
  (n + 1) x (m + 1) nodes (right/down moves are gaps, a diagonal move into
  node (i + 1, j + 1) matches cell (i, j)); for kind="path" the nodes are the
  cells and a DTW path moves right, down or diagonally from (0, 0) to
  (n - 1, m - 1).

"rel. diff" is (f_fwmodel - f_Clarabel) / max(1, |f_Clarabel|).

    python benchmarks/alignment_batch.py --pairs 64 --sizes 20:24 --kinds matching path
"""
import argparse
import time
import warnings

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

import fwmodel as fm


def alignment_graph(n, m, kind):
    """(incidence A: nodes x edges, supply b, S: cells x edges with x = S f + offset, offset)."""
    if kind == "matching":
        rows, cols = n + 1, m + 1
        moves = [(0, 1), (1, 0), (1, 1)]
    else:
        rows, cols = n, m
        moves = [(0, 1), (1, 0), (1, 1)]
    node = np.arange(rows * cols).reshape(rows, cols)
    tails, heads, cell_of_edge = [], [], []
    for di, dj in moves:
        t = node[: rows - di, : cols - dj].ravel()
        h = node[di:, dj:].ravel()
        tails.append(t)
        heads.append(h)
        if kind == "matching":  # diagonal edges carry the matched cells, the others none
            ii, jj = np.divmod(t, cols)
            cell_of_edge.append(ii * m + jj if (di, dj) == (1, 1) else np.full(t.size, -1))
        else:  # every edge enters a cell: the cell's visit is its inflow
            hi, hj = np.divmod(h, cols)
            cell_of_edge.append(hi * m + hj)
    tails, heads, cells = np.concatenate(tails), np.concatenate(heads), np.concatenate(cell_of_edge)
    E, N = tails.size, rows * cols
    A = sp.csr_matrix((np.r_[np.ones(E), -np.ones(E)], (np.r_[tails, heads], np.r_[np.arange(E), np.arange(E)])),
                      shape=(N, E))
    b = np.zeros(N)
    b[0], b[N - 1] = 1.0, -1.0
    used = cells >= 0
    S = sp.csr_matrix((np.ones(used.sum()), (cells[used], np.flatnonzero(used))), shape=(n * m, E))
    offset = np.zeros(n * m)
    if kind == "path":
        offset[0] = 1.0  # the first cell is visited by every path (no edge enters it)
    return A, b, S, offset


def reference(C, mu, kind):
    """min sum_b <C_b, X_b> + mu/2 ||X_b||^2 over unit flows (CVXPY + Clarabel); returns (value, X, seconds)."""
    B, n, m = C.shape
    A, b, S, offset = alignment_graph(n, m, kind)
    F = cp.Variable((A.shape[1], B), nonneg=True)
    X = S @ F + np.tile(offset[:, None], (1, B))  # (n m, B)
    Cm = C.reshape(B, n * m).T
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(Cm, X)) + 0.5 * mu * cp.sum_squares(X)),
                      [A @ F == np.tile(b[:, None], (1, B))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        prob.solve(solver=cp.CLARABEL)
        el = time.perf_counter() - t
    return prob.value, np.asarray(X.value).T.reshape(B, n, m), el


def instance(B, n, m, seed):
    rng = np.random.default_rng(seed)
    a, c = rng.random((B, n)), rng.random((B, m))
    return np.abs(a[:, :, None] - c[:, None, :]) - 0.3  # close values attract (negative cost)


def solve(C, mu, kind, **options):
    B, n, m = C.shape
    X = fm.Variable((B, n, m))
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, X)) + 0.5 * mu * fm.sum_squares(X)),
                      [fm.AlignmentPolytope(X, kind=kind, axis=0)])
    t = time.perf_counter()
    prob.solve(**options)
    return prob, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--sizes", nargs="*", default=["20:24"])
    ap.add_argument("--kinds", nargs="*", default=["matching", "path"])
    ap.add_argument("--mu", type=float, default=1.0)
    ap.add_argument("--max-iter", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| pairs x (n x m) | kind | fwmodel step | status | iterations | time (s) | rel. diff | Clarabel (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        n, m = map(int, size.split(":"))
        C = instance(args.pairs, n, m, args.seed)
        for kind in args.kinds:
            f_ref, _, t_ref = reference(C, args.mu, kind)
            for step in ("auto", "fw"):
                prob, el = solve(C, args.mu, kind, step=step, max_iter=args.max_iter)
                diff = (prob.value - f_ref) / max(1.0, abs(f_ref))
                print(f"| {args.pairs} x ({n} x {m}) | {kind} | {step} | {prob.status} | {prob.stats.iterations} | "
                      f"{el:.3f} | {diff:.1e} | {t_ref:.3f} |", flush=True)


if __name__ == "__main__":
    main()
