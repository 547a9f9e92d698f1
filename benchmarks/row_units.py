"""Status in other units for the rows than for the variables: infeasible and feasible models.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/row_units.py

Each model puts x in a set (L1 ball, simplex, box, trace-norm ball) and adds
rows: inequalities ``G @ x <= h`` or equalities ``A @ x == b``. The infeasible
cases put the right-hand side 1.5 times beyond what the set allows for each
row (``h_i = -1.5 max_{x in set} -G_i x``); the feasible ones put it through an
interior point, or at the edge of what the set allows (0.999 of it). The same
model is solved with the rows times ``s_rows`` (1e-6, 1, 1e6: the rows alone in
other units), the variable and its set times ``s_x`` (and the right-hand side
with it), and both. CVXPY + Clarabel solves the unit model (s_rows = s_x = 1).
Per line: the status in each of the units, Clarabel's, and for feasible models
the largest row violation relative to the rows' own size (the largest
``|G_i| . |x|`` over the rows, at Clarabel's point in unit units, times s_rows *
s_x).
"""
import argparse
import itertools
import time

import cvxpy as cp
import numpy as np

import fwmodel as fm

UNITS = [(1.0, 1.0), (1e-6, 1.0), (1e6, 1.0), (1.0, 1e-6), (1.0, 1e6), (1e-6, 1e-6), (1e6, 1e-6), (1e-6, 1e6)]


def support(kind, G, n_side):
    """max over the unit set of G_i x, per row (closed forms)."""
    if kind == "l1":
        return np.abs(G).max(axis=1)
    if kind == "simplex":
        return G.max(axis=1)
    if kind == "box":  # Box(x, -0.5, 1)
        return np.maximum(G, 0).sum(axis=1) - 0.5 * np.minimum(G, 0).sum(axis=1)
    if kind == "trace":  # ||X||_* <= 1: max <G_i, X> = spectral norm of G_i
        return np.array([np.linalg.norm(g.reshape(n_side, n_side), 2) for g in G])
    raise ValueError(kind)


def interior(kind, rng, n, n_side):
    if kind == "l1":
        v = rng.standard_normal(n)
        return 0.5 * v / np.abs(v).sum()
    if kind == "simplex":
        v = rng.random(n) + 0.1
        return v / v.sum()
    if kind == "box":
        return rng.uniform(-0.4, 0.9, n)
    v = rng.standard_normal((n_side, n_side))
    return (0.5 * v / np.linalg.norm(v, "nuc")).ravel()


def edge_point(kind, g, rng, n, n_side):
    """A point of the unit set at 1e-3 (relative) from the minimizer of <g, x> over it."""
    if kind == "l1":
        v = np.zeros(n)
        j = int(np.argmax(np.abs(g)))
        v[j] = -np.sign(g[j])
    elif kind == "simplex":
        v = np.zeros(n)
        v[int(np.argmin(g))] = 1.0
    elif kind == "box":
        v = np.where(g > 0, -0.5, 1.0)
    else:
        u, _, vt = np.linalg.svd(g.reshape(n_side, n_side))
        v = -np.outer(u[:, 0], vt[0]).ravel()
    return (1 - 1e-3) * v + 1e-3 * interior(kind, rng, n, n_side)


def make_model(kind, rows, case, seed):
    """``(build, G, description)``: ``build(lib, s_rows, s_x)`` gives (objective, constraints, variable); G the unit rows."""
    rng = np.random.default_rng(seed)
    n_side = 4
    n = n_side * n_side if kind == "trace" else int(rng.integers(10, 31))
    k = int(rng.integers(1, 4))
    G = rng.standard_normal((k, n))
    c = rng.standard_normal(n)
    top = support(kind, G, n_side)      # max G_i x over the set
    bottom = -support(kind, -G, n_side)  # min G_i x over the set
    if case == "infeasible":
        # rows below (<=) or outside (==) what the set allows, by half the row's range
        rhs = bottom - 0.5 * (top - bottom)
    elif case == "edge":
        # through a point of the set near the face where row 0 is smallest: feasible, row 0 at 1e-3 of its range
        rhs = G @ edge_point(kind, G[0], rng, n, n_side)
    else:
        rhs = G @ interior(kind, rng, n, n_side)

    def build(lib, s_rows, s_x):
        mod = fm if lib == "fm" else cp
        if kind == "trace":
            X = fm.Variable((n_side, n_side), name="X") if lib == "fm" else cp.Variable((n_side, n_side))
            cons = [fm.TraceNormBall(X, s_x)] if lib == "fm" else [cp.normNuc(X) <= s_x]
            x = fm.vec(X, order="C") if lib == "fm" else cp.vec(X, order="C")
            var = X
        else:
            x = fm.Variable(n, name="x") if lib == "fm" else cp.Variable(n)
            var = x
            if kind == "l1":
                cons = [mod.norm1(x) <= s_x]
            elif kind == "simplex":
                cons = [x >= 0, mod.sum(x) == s_x]
            else:
                cons = [x >= -0.5 * s_x, x <= s_x]
        Gs = s_rows * G
        if rows == "ineq":
            cons.append(Gs @ x <= s_rows * s_x * rhs)
        else:
            cons.append(Gs @ x == s_rows * s_x * rhs)
        obj = mod.Minimize(mod.sum_squares(x - s_x * c))
        return obj, cons, var

    return build, G, f"{kind:7s} {rows:5s} {case:10s} n={n} k={k} seed={seed}"


def run(kinds, rows_kinds, cases, seeds, max_iter):
    lines = []
    for kind, rows, case, seed in itertools.product(kinds, rows_kinds, cases, seeds):
        build, G, desc = make_model(kind, rows, case, seed)
        obj, cons, var = build("cp", 1.0, 1.0)
        pc = cp.Problem(obj, cons)
        try:
            pc.solve(solver=cp.CLARABEL)
            ref = pc.status
        except cp.SolverError:
            ref = "error"
        out = []
        for s_rows, s_x in UNITS:
            obj, cons, var = build("fm", s_rows, s_x)
            prob = fm.Problem(obj, cons)
            t0 = time.perf_counter()
            prob.solve(max_iter=max_iter)
            dt = time.perf_counter() - t0
            worst = ""
            if prob.status == "optimal":
                # the rows' violation relative to their own size, evaluated in unit units
                x = np.asarray(var.value, dtype=float).ravel() / s_x
                obj_c, cons_c, var_c = build("cp", 1.0, 1.0)
                var_c.value = x.reshape(var_c.shape)
                row_con = cons_c[-1]
                # |G_i x - h_i| (or its positive part) over the size of the row's terms |G_i| . |x|
                viol = np.abs(np.asarray(row_con.violation(), dtype=float)).ravel()
                worst = f"{float(np.max(viol / (np.abs(G) @ np.abs(x)))):.1e}"
            out.append((s_rows, s_x, prob.status, prob.stats.iterations, worst, dt))
        lines.append((desc, ref, out))
        stat = " ".join(f"{st[:7]:7s}{it:>6d}{('/' + w) if w else ''}" for _, _, st, it, w, _ in out)
        print(f"{desc:42s} clarabel={ref:10s} {stat}", flush=True)
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="*", default=["l1", "simplex", "box", "trace"])
    ap.add_argument("--rows", nargs="*", default=["ineq", "eq"])
    ap.add_argument("--cases", nargs="*", default=["infeasible", "edge", "interior"])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=10000)
    args = ap.parse_args()
    print("units (s_rows, s_x):", " ".join(f"({a:g},{b:g})" for a, b in UNITS))
    lines = run(args.kinds, args.rows, args.cases, range(args.seeds), args.max_iter)
    print("\nper units: status as Clarabel's (infeasible / optimal), iterations in all, "
          "largest row violation over the rows' size")
    for j, (s_rows, s_x) in enumerate(UNITS):
        same = sum(out[j][2] == ref for _, ref, out in lines)
        inf = sum(ref == "infeasible" for _, ref, _ in lines)
        inf_same = sum(ref == "infeasible" and out[j][2] == "infeasible" for _, ref, out in lines)
        opt_same = sum(ref == "optimal" and out[j][2] == "optimal" for _, ref, out in lines)
        iters = sum(out[j][3] for _, _, out in lines)
        worst = max((float(out[j][4]) for _, _, out in lines if out[j][4]), default=0.0)
        print(f"  rows x {s_rows:<6g} x x {s_x:<6g}: {same}/{len(lines)} as Clarabel "
              f"({inf_same}/{inf} infeasible, {opt_same}/{len(lines) - inf} optimal), "
              f"{iters} iterations, violation <= {worst:.1e}")


if __name__ == "__main__":
    main()
