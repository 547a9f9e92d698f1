"""MAP inference LP on random Potts grids: FW-AL against SciPy's HiGHS.

The local-polytope relaxation of a pairwise MRF on an n x n grid with K
states (node scores N(0, 1), Potts couplings w_e * [x_u == x_v] with w_e
uniform in [-1, 1], so attractive and repulsive edges mix and the LP need not
be tight) is built twice: with ``fm.LocalMarginalPolytope`` for FW-AL and
with scipy.sparse for ``scipy.optimize.linprog(method="highs")``, which
gives the reference optimum f*. Reported per grid:

* build and compile time of the FW-AL model, first and best of three
  (target: < 1 s at 100 x 100, K = 10);
* HiGHS: time to build its sparse LP and to solve it;
* FW-AL, for each configuration: the time and iterations until
  - "bound": the certified lower bound from the duals y_t
    (``LocalMarginalPolytope.lower_bound``, weak duality) is within
    ``--accuracy`` (relative) of f*, and
  - "primal": |f(x_t) - f*| <= accuracy |f*| with relative infeasibility
    ||M x_t - b|| / max(1, ||x_t||) <= accuracy.
  Both are checked every ``--check-every`` iterations by a callback whose
  cost (one M' y product and an LMO per check) is included in the times.
* ``--operators``: the cost of M x and M' r for the marginalization rows as
  applied by the compiler (structured) and as a scipy.sparse CSR matrix.

Configurations: "map" is the engine's steps with ``lam`` from
``fm.factor_graphs.default_penalty`` (0.03 x mean score spread), "engine" the
engine's own defaults (``prob.solve()`` with no options; also what
``fm.map_inference`` uses).

    python benchmarks/map_inference.py                      # 20:5, 50:10, 100:10
    python benchmarks/map_inference.py --sizes 20:5 50:10 --configs map
    python benchmarks/map_inference.py --sizes 100:10 --time-limit 300 --operators
"""
import argparse
import platform
import time

import networkx as nx
import numpy as np
import scipy
import scipy.sparse as sp
from scipy.optimize import linprog

import fwmodel as fm
from fwmodel.factor_graphs import default_penalty
from fwmodel.factor_graphs.map_inference import _duals

from _timing import best_times


def potts_grid(n, K, seed=0):
    G = nx.grid_2d_graph(n, n)
    rng = np.random.default_rng(seed)
    theta_nodes = rng.standard_normal((n * n, K))
    theta_edges = rng.uniform(-1.0, 1.0, G.number_of_edges())[:, None, None] * np.eye(K)
    return G, theta_nodes, theta_edges


def highs_lp(lmp, theta_nodes, theta_edges):
    """The same LP in scipy.sparse form: simplices and marginalization rows."""
    N, E, K = lmp.n_nodes, lmp.n_edges, lmp.n_states
    n_nodes, n_edges = N * K, E * K * K
    n = n_nodes + n_edges
    node_sums = sp.hstack([sp.kron(sp.eye(N), np.ones((1, K))), sp.csr_matrix((N, n_edges))])
    edge_sums = sp.hstack([sp.csr_matrix((E, n_nodes)), sp.kron(sp.eye(E), np.ones((1, K * K)))])
    e, i, j = np.unravel_index(np.arange(n_edges), (E, K, K))
    cols = n_nodes + np.arange(n_edges)
    ones = np.ones(n_edges)
    blocks = []
    for summed_state, endpoint in ((i, lmp.endpoints[:, 0]), (j, lmp.endpoints[:, 1])):
        tables = sp.csr_matrix((ones, (e * K + summed_state, cols)), shape=(E * K, n))
        nodes = sp.csr_matrix((np.ones(E * K), (np.arange(E * K), (endpoint[:, None] * K + np.arange(K)).ravel())),
                              shape=(E * K, n))
        blocks.append(tables - nodes)
    A = sp.vstack([node_sums, edge_sums] + blocks, format="csr")
    b = np.concatenate([np.ones(N + E), np.zeros(2 * E * K)])
    c = -np.concatenate([theta_nodes.ravel(), np.ascontiguousarray(theta_edges).ravel()])
    return c, A, b


def run_highs(lmp, theta_nodes, theta_edges):
    t0 = time.perf_counter()
    c, A, b = highs_lp(lmp, theta_nodes, theta_edges)
    t1 = time.perf_counter()
    res = linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    t2 = time.perf_counter()
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed: {res.message}")
    return res.fun, t1 - t0, t2 - t1


def run_fwal(lmp, theta_nodes, theta_edges, f_star, config, accuracy, check_every, time_limit, max_iter):
    prob = fm.Problem(fm.Minimize(-lmp.score(theta_nodes, theta_edges)), lmp)
    prob.compile()
    options = dict(max_iter=max_iter, time_limit=time_limit)
    if config == "map":
        options.update(lam=default_penalty(theta_nodes, theta_edges))
    hits = {}
    scale = abs(f_star)

    def callback(state):
        if state.iteration % check_every:
            return None
        if "primal" not in hits and abs(state.objective - f_star) <= accuracy * scale \
                and state.feasibility_rel <= accuracy:
            hits["primal"] = (state.time, state.iteration)
        if "bound" not in hits:
            bound = lmp.lower_bound(prob, theta_nodes, theta_edges, duals=_duals(state))
            if f_star - bound <= accuracy * scale:
                hits["bound"] = (state.time, state.iteration)
        return len(hits) < 2  # stop once both are reached

    prob.solve(callback=callback, **options)
    stats = prob.stats
    final_error = abs(prob.value - f_star) / scale
    bound = lmp.lower_bound(prob, theta_nodes, theta_edges)
    # the solver may stop ("optimal") between two checks: count the returned point too
    if "primal" not in hits and final_error <= accuracy and stats.feasibility_rel <= accuracy:
        hits["primal"] = (stats.solve_time, stats.iterations)
    if "bound" not in hits and f_star - bound <= accuracy * scale:
        hits["bound"] = (stats.solve_time, stats.iterations)
    return dict(hits=hits, iterations=stats.iterations, solve_time=stats.solve_time, status=prob.status,
                lam=stats.lam, final_error=final_error, final_feas=stats.feasibility_rel,
                final_bound_error=(f_star - bound) / scale, per_iter=stats.solve_time / max(1, stats.iterations))


def operator_times(compiled, repeat=5):
    """Best time of M x and M' r: the compiler's structured pieces against CSR."""
    op = compiled.operator
    M = compiled.M
    MT = M.T.tocsr()
    rng = np.random.default_rng(0)
    x = rng.random(compiled.n)
    r = rng.standard_normal(M.shape[0])
    fns = [lambda: op.matvec(x), lambda: op.rmatvec(r), lambda: M @ x, lambda: MT @ r]
    return best_times(fns, repeat)


def fmt_hit(result, key):
    hit = result["hits"].get(key)
    return f"{hit[0]:.2f} s ({hit[1]} it)" if hit else "not reached"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["20:5", "50:10", "100:10"],
                        help="grids as side:states (default: 20:5 50:10 100:10)")
    parser.add_argument("--configs", default="map,engine", help="comma-separated: map, engine")
    parser.add_argument("--accuracy", type=float, default=1e-3)
    parser.add_argument("--check-every", type=int, default=10)
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per FW-AL run")
    parser.add_argument("--max-iter", type=int, default=100000)
    parser.add_argument("--no-highs", action="store_true", help="skip HiGHS (then f* is FW-AL's best bound)")
    parser.add_argument("--operators", action="store_true", help="also time M x and M' r")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    print(f"# MAP inference LP on random Potts grids (python {platform.python_version()}, numpy {np.__version__}, "
          f"scipy {scipy.__version__}, {platform.machine()})")
    print(f"# accuracy {args.accuracy:g} relative, checked every {args.check_every} iterations; "
          f"time limit {args.time_limit:g} s per FW-AL run")
    rows, op_rows = [], []
    for spec in args.sizes:
        n, K = (int(v) for v in spec.split(":"))
        G, theta_nodes, theta_edges = potts_grid(n, K, args.seed)
        # build (graph -> polytope) and compile, three times: the first pays for fresh memory
        build_times, compile_times = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            lmp = fm.LocalMarginalPolytope(G, K)
            t1 = time.perf_counter()
            compiled = fm.Problem(fm.Minimize(-lmp.score(theta_nodes, theta_edges)), lmp).compile()
            t2 = time.perf_counter()
            build_times.append(t1 - t0)
            compile_times.append(t2 - t1)
        n_vars, n_rows = compiled.n, compiled.operator.shape[0]
        compile_text = f"{compile_times[0]:.2f} s ({min(compile_times):.2f} s)"
        print(f"\n{n}x{n}, K={K}: {lmp.n_nodes} nodes, {lmp.n_edges} edges, {n_vars} LP variables, "
              f"{n_rows} marginalization rows; build {build_times[0]:.3f} s, compile {compile_text} "
              "(first run, best of 3 in parentheses)", flush=True)
        if args.operators:
            times = operator_times(compiled)
            op_rows.append((spec, times))
            print(f"  M x: structured {1e3 * times[0]:.2f} ms, CSR {1e3 * times[2]:.2f} ms; "
                  f"M' r: structured {1e3 * times[1]:.2f} ms, CSR {1e3 * times[3]:.2f} ms", flush=True)
        if args.no_highs:
            f_star, highs_build, highs_time = None, None, None
        else:
            f_star, highs_build, highs_time = run_highs(lmp, theta_nodes, theta_edges)
            print(f"  HiGHS: f* = {f_star:.6f}, LP built in {highs_build:.2f} s, solved in {highs_time:.2f} s",
                  flush=True)
        for config in configs:
            if f_star is None:
                continue
            res = run_fwal(lmp, theta_nodes, theta_edges, f_star, config, args.accuracy, args.check_every,
                           args.time_limit, args.max_iter)
            print(f"  FW-AL [{config}] lam={res['lam']:.3g}: bound {fmt_hit(res, 'bound')}, primal "
                  f"{fmt_hit(res, 'primal')}; stopped {res['status']} after {res['iterations']} it "
                  f"({res['solve_time']:.1f} s, {1e3 * res['per_iter']:.1f} ms/it): objective error "
                  f"{res['final_error']:.1e}, infeasibility {res['final_feas']:.1e}, bound error "
                  f"{res['final_bound_error']:.1e}", flush=True)
            rows.append((spec, lmp, n_vars, compile_text, highs_time, config, res))
    if rows:
        print(f"\n| grid | K | LP variables | compile first (best) | HiGHS | FW-AL config | ms/it | bound within "
              f"{args.accuracy:g} | primal within {args.accuracy:g} |")
        print("|---|---|---|---|---|---|---|---|---|")
        for spec, lmp, n_vars, compile_time, highs_time, config, res in rows:
            n, K = spec.split(":")
            print(f"| {n}x{n} | {K} | {n_vars:,} | {compile_time} | {highs_time:.2f} s | {config} | "
                  f"{1e3 * res['per_iter']:.1f} | {fmt_hit(res, 'bound')} | {fmt_hit(res, 'primal')} |")
    if op_rows:
        print("\n| grid | M x structured | M x CSR | M' r structured | M' r CSR |")
        print("|---|---|---|---|---|")
        for spec, t in op_rows:
            n, K = spec.split(":")
            print(f"| {n}x{n}, K={K} | {1e3 * t[0]:.2f} ms | {1e3 * t[2]:.2f} ms | {1e3 * t[1]:.2f} ms | "
                  f"{1e3 * t[3]:.2f} ms |")


if __name__ == "__main__":
    main()
