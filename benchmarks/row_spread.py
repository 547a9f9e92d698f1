"""Rows of one constraint in units far apart, and a constraint alone in M: does the solve depend on them?

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/row_spread.py

Part 1 (rows apart inside one constraint): ``A @ x == b`` (3 rows) and
``G @ x <= h`` (4 rows) next to a set (L1 ball, simplex, box) and a least
squares or linear objective (n = 15). The "spread" model writes every row
times its own factor 10^u, u uniform in [-3, 3] (data matrices with rows in
different units); the "unit" model is the same rows as drawn. Each line:
status, iterations and the objective's relative difference to Clarabel's on
the unit model (the two models have the same solution); marked ``!!`` where
the status differs from Clarabel's or an "optimal" value is more than 1e-3
off.

Part 2 (one group of rows, nothing else in M): ``s * (A @ x) == s * b`` next
to a set, s from 1e-3 to 1e3: iterations per s, then a warm start after a
Parameter moves s from 1e-6 to 1e6 (and back).
"""
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

N, M_EQ, M_IN = 15, 3, 4


def instance(seed, set_name):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M_EQ, N))
    G = rng.standard_normal((M_IN, N))
    if set_name == "L1 ball":
        x0 = rng.standard_normal(N)
        x0 *= 0.5 / np.abs(x0).sum()
    elif set_name == "simplex":
        x0 = rng.dirichlet(np.ones(N))
    else:
        x0 = rng.uniform(-0.5, 0.5, N)
    b = A @ x0
    h = G @ x0 + rng.uniform(0.0, 0.2, M_IN)
    C = rng.standard_normal((20, N))
    d = rng.standard_normal(20)
    c = rng.standard_normal(N)
    spread_eq = 10.0 ** rng.uniform(-3, 3, M_EQ)
    spread_in = 10.0 ** rng.uniform(-3, 3, M_IN)
    return A, b, G, h, C, d, c, spread_eq, spread_in


def fm_set(x, set_name):
    if set_name == "L1 ball":
        return [fm.norm1(x) <= 1]
    if set_name == "simplex":
        return [fm.Simplex(x)]
    return [x >= -1, x <= 1]


def cp_set(x, set_name):
    if set_name == "L1 ball":
        return [cp.norm1(x) <= 1]
    if set_name == "simplex":
        return [x >= 0, cp.sum(x) == 1]
    return [x >= -1, x <= 1]


def part1(seeds):
    bad, totals = 0, {"unit": 0, "spread": 0}
    print(f"{'':2} {'set':8} {'objective':8} {'seed':>4} {'rows':6} {'status':10} {'iters':>6} {'rel diff':>9}")
    for seed in seeds:
        for set_name in ("L1 ball", "simplex", "box"):
            A, b, G, h, C, d, c, se, si = instance(seed, set_name)
            for obj in ("lsq", "linear"):
                xc = cp.Variable(N)
                f_cp = cp.sum_squares(C @ xc - d) if obj == "lsq" else c @ xc
                ref = cp.Problem(cp.Minimize(f_cp), cp_set(xc, set_name) + [A @ xc == b, G @ xc <= h])
                ref.solve(solver=cp.CLARABEL)
                for rows, De, Di in (("unit", np.ones(M_EQ), np.ones(M_IN)), ("spread", se, si)):
                    x = fm.Variable(N)
                    f = fm.sum_squares(C @ x - d) if obj == "lsq" else c @ x
                    prob = fm.Problem(fm.Minimize(f), fm_set(x, set_name)
                                      + [(De[:, None] * A) @ x == De * b, (Di[:, None] * G) @ x <= Di * h])
                    prob.solve()
                    diff = float("nan")
                    if prob.status == "optimal" and ref.status == "optimal":
                        diff = abs(prob.value - ref.value) / max(abs(ref.value), 1e-2)
                    ok = prob.status == ref.status and (prob.status != "optimal" or diff <= 1e-3)
                    bad += not ok
                    totals[rows] += prob.stats.iterations
                    print(f"{'  ' if ok else '!!'} {set_name:8} {obj:8} {seed:4d} {rows:6} {prob.status:10} "
                          f"{prob.stats.iterations:6d} {diff:9.1e}", flush=True)
    print(f"part 1: lines marked !!: {bad}; iterations unit {totals['unit']}, spread {totals['spread']}")


def part2():
    rng = np.random.default_rng(7)
    A = rng.standard_normal((3, N))
    x0 = rng.standard_normal(N)
    x0 *= 0.5 / np.abs(x0).sum()
    b = A @ x0
    C = rng.standard_normal((20, N))
    d = rng.standard_normal(20)
    xc = cp.Variable(N)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(C @ xc - d)), [cp.norm1(xc) <= 1, A @ xc == b])
    ref.solve(solver=cp.CLARABEL)
    its = []
    for s in (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3):
        x = fm.Variable(N)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(C @ x - d)), [fm.norm1(x) <= 1, (s * A) @ x == s * b])
        prob.solve()
        diff = abs(prob.value - ref.value) / abs(ref.value) if prob.status == "optimal" else float("nan")
        its.append(prob.stats.iterations)
        print(f"part 2: s {s:7.0e} {prob.status:10} {prob.stats.iterations:6d} {diff:9.1e}", flush=True)
    print(f"part 2: iterations over s: {its}")
    for p0, p1 in ((1e-6, 1e6), (1e6, 1e-6)):
        P = fm.Parameter(value=p0)
        x = fm.Variable(N)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(C @ x - d)), [fm.norm1(x) <= 1, P * (A @ x) == P * b])
        prob.solve()
        cold = prob.stats.iterations
        P.value = p1
        prob.solve(warm_start=True)
        diff = abs(prob.value - ref.value) / abs(ref.value) if prob.status == "optimal" else float("nan")
        print(f"part 2: warm start {p0:.0e} -> {p1:.0e}: cold {cold}, warm {prob.status} {prob.stats.iterations} "
              f"{diff:9.1e}", flush=True)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    part1(range(3))
    part2()
