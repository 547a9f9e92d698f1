"""A zoo of everyday models: fwmodel's defaults against CVXPY (Clarabel and SCS).

Every model is written twice, once with fwmodel and once with CVXPY, on the
same data. Per model: fwmodel's status and time with ``prob.solve()`` and no
options; the time of CVXPY with Clarabel and with SCS (each solve includes
CVXPY's compilation, as fwmodel's includes its own); the relative objective
difference |f_fw - f_ref| / max(|f_ref|, S / 100) against Clarabel's optimum,
with S the objective's range over the sets from fwmodel's starting point
(``prob.stats.objective_scale``): relative to |f_ref| unless f_ref is within
1 % of the range of 0, with no absolute floor (the same scale as the
stopping rule's test on the multipliers, fwmodel.engine.stopping), and
the plain |f_fw - f_ref| / |f_ref| beside it; and
the ratio fwmodel time / the faster CVXPY solver. Times are the best of
``--repeat`` interleaved runs (the machine may be busy).

    python benchmarks/zoo.py                 # all models
    python benchmarks/zoo.py --only birkhoff tv --repeat 3
"""
import argparse
import math
import os
import sys
import time
import warnings

import cvxpy as cp
import networkx as nx
import numpy as np

import fwmodel as fm

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_times  # noqa: E402


# Each builder returns (fwmodel problem, cvxpy problem).
def birkhoff(n=30, seed=0):
    """Projection of a noisy uniform matrix onto the doubly stochastic matrices."""
    rng = np.random.default_rng(seed)
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    fw = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    Z = cp.Variable((n, n), nonneg=True)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    return fw, cvx


def tv_denoise(n=100, seed=0):
    """Piecewise-constant signal: least squares with ||D x||_1 <= t and a box."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(rng.uniform(0, 1, 5), n // 5)
    y = truth + 0.1 * rng.standard_normal(n)
    D = np.diff(np.eye(n), axis=0)
    t = 0.8 * np.abs(D @ truth).sum()
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [fm.L1Ball(D @ x, t), fm.Box(x, 0.0, 1.0)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [cp.norm1(D @ z) <= t, z >= 0, z <= 1])
    return fw, cvx


def capped_portfolio(n=100, seed=0):
    """Mean-variance portfolio, fully invested, at most 5% per asset."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 5)) * 0.1
    Sigma = F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.quad_form(x, Sigma) - mu @ x), [fm.Simplex(x), fm.Box(x, 0.0, 0.05)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.quad_form(z, Sigma) - mu @ z), [z >= 0, cp.sum(z) == 1, z <= 0.05])
    return fw, cvx


def simplex_equalities(n=100, seed=0):
    """Projection onto the simplex with three more equality rows."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(n) * 0.05 + 1.0 / n
    A = rng.uniform(0, 1, (3, n))
    b = A @ np.full(n, 1.0 / n)
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), A @ x == b])
    z = cp.Variable(n, nonneg=True)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(z - c)), [cp.sum(z) == 1, A @ z == b])
    return fw, cvx


def lasso(m=80, n=200, seed=0):
    """Least squares in an L1 ball (constrained lasso)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    x0 = np.zeros(n)
    x0[rng.choice(n, 10, replace=False)] = rng.standard_normal(10)
    b = A @ x0 + 0.05 * rng.standard_normal(m)
    r = 0.8 * np.abs(x0).sum()
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, r)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= r])
    return fw, cvx


def l2_ridge(m=100, n=50, seed=0):
    """Least squares in a Euclidean ball."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    b = rng.standard_normal(m) * 3
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L2Ball(x, 0.3)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm(z, 2) <= 0.3])
    return fw, cvx


def box_lsq(m=100, n=60, seed=0):
    """Bounded-variable least squares."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    b = A @ rng.uniform(-1, 2, n) + 0.1 * rng.standard_normal(m)
    x = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.Box(x, 0.0, 1.0)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [z >= 0, z <= 1])
    return fw, cvx


def logistic_l1(m=200, n=50, seed=0):
    """Logistic regression in an L1 ball."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    w0 = rng.standard_normal(n) * (rng.random(n) < 0.2)
    yl = np.where(A @ w0 + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    Ay = -yl[:, None] * A
    w = fm.Variable(n)
    fw = fm.Problem(fm.Minimize(fm.sum(fm.logistic(Ay @ w)) / m), [fm.L1Ball(w, 3.0)])
    z = cp.Variable(n)
    cvx = cp.Problem(cp.Minimize(cp.sum(cp.logistic(Ay @ z)) / m), [cp.norm1(z) <= 3.0])
    return fw, cvx


def row_stochastic(n=100, k=20, seed=0):
    """Projection onto row-stochastic matrices capped at 0.2 per entry."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, k)) * 0.3
    X = fm.Variable((n, k))
    fw = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1), fm.Box(X, 0.0, 0.2)])
    Z = cp.Variable((n, k), nonneg=True)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=1) == 1, Z <= 0.2])
    return fw, cvx


def potts_map(n=10, K=3, seed=0):
    """MAP LP (local polytope relaxation) of a small Potts grid."""
    G = nx.grid_2d_graph(n, n)
    rng = np.random.default_rng(seed)
    tn = rng.standard_normal((n * n, K))
    te = rng.uniform(-1.0, 1.0, G.number_of_edges())[:, None, None] * np.eye(K)
    lmp = fm.LocalMarginalPolytope(G, K)
    fw = fm.Problem(fm.Minimize(fm.sum(fm.multiply(tn, lmp.nodes)) + fm.sum(fm.multiply(te, lmp.edges))),
                    lmp.constraints)
    N, E = n * n, G.number_of_edges()
    mu = cp.Variable((N, K), nonneg=True)
    nu = cp.Variable((E, K * K), nonneg=True)
    cons = [cp.sum(mu, axis=1) == 1, cp.sum(nu, axis=1) == 1]
    edges = list(G.edges())
    U = np.array([lmp.node_index[u] for u, _ in edges])
    V = np.array([lmp.node_index[v] for _, v in edges])
    order = np.array([lmp.edge_index[e] if e in lmp.edge_index else lmp.edge_index[(e[1], e[0])] for e in edges])
    rows_i = np.kron(np.eye(K), np.ones((1, K)))  # sum over j of nu[e, i*K + j]
    rows_j = np.kron(np.ones((1, K)), np.eye(K))  # sum over i
    cons += [nu[order] @ rows_i.T == mu[U], nu[order] @ rows_j.T == mu[V]]
    obj = cp.sum(cp.multiply(tn, mu)) + cp.sum(cp.multiply(te.reshape(E, K * K), nu))
    return fw, cp.Problem(cp.Minimize(obj), cons)


def trace_norm_denoise(n=20, seed=0):
    """Low-rank matrix denoising in a nuclear-norm ball."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((n, 2)) @ rng.standard_normal((2, n))
    Y = L + 0.3 * rng.standard_normal((n, n))
    r = 0.7 * np.linalg.svd(L, compute_uv=False).sum()
    X = fm.Variable((n, n))
    fw = fm.Problem(fm.Minimize(fm.sum_squares(X - Y)), [fm.TraceNormBall(X, r)])
    Z = cp.Variable((n, n))
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(Z - Y)), [cp.normNuc(Z) <= r])
    return fw, cvx


MODELS = {
    "birkhoff": ("Birkhoff projection (30x30)", birkhoff),
    "tv": ("TV-constrained denoiser (n=100, ||Dx||_1 <= t, box)", tv_denoise),
    "portfolio": ("capped portfolio (simplex ∩ box(0, 0.05), n=100)", capped_portfolio),
    "simplex_eq": ("simplex + 3 equality rows (n=100)", simplex_equalities),
    "lasso": ("least squares in an L1 ball (80x200)", lasso),
    "ridge": ("least squares in an L2 ball (100x50)", l2_ridge),
    "box_lsq": ("bounded least squares (100x60)", box_lsq),
    "logistic": ("logistic regression in an L1 ball (200x50)", logistic_l1),
    "rows": ("row-stochastic projection, capped (100x20)", row_stochastic),
    "potts": ("Potts MAP LP (10x10 grid, K=3)", potts_map),
    "trace": ("nuclear-norm ball denoising (20x20)", trace_norm_denoise),
}


def run(key, repeat):
    title, build = MODELS[key]
    fw, cvx = build()
    fw.solve()
    status, f_fw, its, scale = fw.status, fw.value, fw.stats.iterations, fw.stats.objective_scale
    ref = {}
    for solver in ("CLARABEL", "SCS"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cvx.solve(solver=solver)
            ref[solver] = cvx.value if cvx.status == "optimal" else None
        except cp.error.SolverError:
            ref[solver] = None
    f_ref = ref["CLARABEL"] if ref["CLARABEL"] is not None else ref["SCS"]
    fns = [lambda: build()[0].solve()]
    names = [s for s in ("CLARABEL", "SCS") if ref[s] is not None]

    def cvx_solve(solver):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build()[1].solve(solver=solver)

    fns += [lambda s=s: cvx_solve(s) for s in names]
    times = best_times(fns, repeat)
    t_fw = times[0]
    t_cvx = dict(zip(names, times[1:]))
    faster = min(t_cvx.values())
    err = abs(f_fw - f_ref) / max(abs(f_ref), 0.01 * scale)
    # what a CVXPY user reads first: the difference relative to |f*| itself (large where f* is small
    # against the objective's range over the sets, as in a projection onto a set C nearly meets)
    err_fstar = abs(f_fw - f_ref) / abs(f_ref) if f_ref != 0 else math.inf
    return dict(title=title, status=status, its=its, err=err, err_fstar=err_fstar, t_fw=t_fw, t_cl=t_cvx.get("CLARABEL"),
                t_scs=t_cvx.get("SCS"), ratio=t_fw / faster)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=list(MODELS))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print("| model | fwmodel status | iterations | rel. objective diff | diff / abs(f*) | fwmodel (s) | Clarabel (s) | "
          "SCS (s) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for key in args.only:
        row = run(key, args.repeat)
        ratios.append(row["ratio"])
        fmt = lambda t: "failed" if t is None else f"{t:.3f}"  # noqa: E731
        print(f"| {row['title']} | {row['status']} | {row['its']} | {row['err']:.1e} | {row['err_fstar']:.1e} | "
              f"{row['t_fw']:.3f} | "
              f"{fmt(row['t_cl'])} | {fmt(row['t_scs'])} | {row['ratio']:.2f} |", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric mean of fwmodel time / faster CVXPY solver: {geo:.2f} "
          f"(max {max(ratios):.2f}) over {len(ratios)} models")


if __name__ == "__main__":
    main()
