"""Warm re-solves where a Parameter moves the rows of an expression block, against CVXPY + Clarabel.

``norm(multiply(p, x)) <= 0.7`` (p a vector Parameter; ``norm1``, ``norm2``, ``norm_inf`` by seed) is an
expression block z with the rows ``z = p * x``; x in the box [-2, 2] with one equality row ``x[0] + x[1] ==
0.5``. Each seed draws 4 values of p (entries in [-2, 2], about 40 % of them 0, a quarter of the draws all
0) and solves them in turn with ``warm_start=True``. A solve is marked where fwmodel is not "optimal" or its
value is more than 1e-3 (relative) from Clarabel's. The last lines: the marked count and the iterations in all.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/warm_expression_rows.py [--seeds 60]
"""
import argparse
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")


def series(m, seed):
    rng = np.random.default_rng(seed)
    n = 5
    a = 1.5 * rng.standard_normal(n)
    kind = ["norm1", "norm2", "norm_inf"][seed % 3]
    values = []
    for _ in range(4):
        v = rng.uniform(-2, 2, n)
        v[rng.random(n) < 0.4] = 0.0
        if rng.random() < 0.25:
            v[:] = 0.0
        values.append(v)
    p, x = m.Parameter(n), m.Variable(n)
    constraints = [getattr(m, kind)(m.multiply(p, x)) <= 0.7, x <= 2, x >= -2, x[0] + x[1] == 0.5]
    prob = m.Problem(m.Minimize(m.sum_squares(x - a)), constraints)
    out = []
    for v in values:
        p.value = v
        if m is fm:
            prob.solve(warm_start=True)
            out.append((prob.status, prob.value, prob.stats.iterations))
        else:
            prob.solve(solver=cp.CLARABEL)
            out.append((prob.status, prob.value, 0))
    return kind, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=60)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    marked = iterations = solves = 0
    for seed in range(args.seeds):
        kind, ours = series(fm, seed)
        _, ref = series(cp, seed)
        line = []
        for (status, value, its), (_, ref_value, _) in zip(ours, ref):
            solves += 1
            iterations += its
            bad = status != "optimal" or abs(value - ref_value) > 1e-3 * max(1.0, abs(ref_value))
            marked += bad
            line.append(f"{status}/{its}{' MARKED' if bad else ''}")
        print(f"seed {seed:3d} {kind:8s} " + "  ".join(line))
    print(f"marked {marked} of {solves} solves; iterations {iterations}")


if __name__ == "__main__":
    main()
