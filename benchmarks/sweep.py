"""Jacobi vs Gauss-Seidel sweeps over the blocks (the engine's ``sweep`` option).

Per model and sweep: status, iterations and time with default options
otherwise (best of ``--repeat`` runs, interleaved). Jacobi moves every block
by its own step size, then scales the combined move by one line search;
Gauss-Seidel moves the blocks one after another, with a fresh gradient and
LMO call for each block after the first.

    python benchmarks/sweep.py
"""
import argparse
import time

import networkx as nx
import numpy as np

import fwmodel as fm


def simplex_box(n=200, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(n) * 0.2 + 1.0 / n
    x = fm.Variable(n)
    # boxes on slices (x[:], X[:]): two copies tied by rows, whose sweeps this file compares
    # (on the variable itself the compiler merges the two sets into one CappedSimplex)
    return fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x[:], 0, 0.02)])


def rows_capped(seed=0):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((200, 30)) * 0.3
    X = fm.Variable((200, 30))
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1), fm.Box(X[:], 0, 0.2)])


def l1_box_lsq(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((80, 100))
    b = A @ (rng.standard_normal(100) * (rng.random(100) < 0.1)) + 0.1 * rng.standard_normal(80)
    x = fm.Variable(100)
    # the box on the slice x[:]: two copies tied by rows (on x itself the compiler merges them into a BoxedL1Ball)
    return fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, 3.0), fm.Box(x[:], -0.5, 0.5)])


def potts(n=15, K=4, seed=0):
    G = nx.grid_2d_graph(n, n)
    rng = np.random.default_rng(seed)
    tn = rng.standard_normal((n * n, K))
    te = rng.uniform(-1.0, 1.0, G.number_of_edges())[:, None, None] * np.eye(K)
    lmp = fm.LocalMarginalPolytope(G, K)
    obj = fm.sum(fm.multiply(tn, lmp.nodes)) + fm.sum(fm.multiply(te, lmp.edges))
    return fm.Problem(fm.Minimize(obj), lmp.constraints)


MODELS = {"simplex ∩ box (n=200)": simplex_box, "row simplices ∩ box (200x30)": rows_capped,
          "L1 ∩ box least squares": l1_box_lsq, "Potts MAP LP 15x15, K=4": potts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=10000)
    args = ap.parse_args()
    print("| model | sweep | status | iterations | time (s) |")
    print("|---|---|---|---|---|")
    for name, build in MODELS.items():
        best = {}
        for _ in range(args.repeat):
            for sweep in ("jacobi", "gauss-seidel"):
                prob = build()
                t = time.perf_counter()
                prob.solve(sweep=sweep, max_iter=args.max_iter)
                el = time.perf_counter() - t
                if sweep not in best or el < best[sweep][2]:
                    best[sweep] = (prob.status, prob.stats.iterations, el)
        for sweep, (status, its, el) in best.items():
            print(f"| {name} | {sweep} | {status} | {its} | {el:.3f} |")


if __name__ == "__main__":
    main()
