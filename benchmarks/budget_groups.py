"""Budgets over many groups against CVXPY + Clarabel: iterations, time, value and the budgets' dual_value.

``X >= 0`` with ``fm.sum(X, axis) <= t`` (or ``== t`` with a total per group)
is a batched ``Simplex``; beyond ``JOINT_GROUPS_LIMIT`` (8) groups the engine
keeps no joint active set, so these blocks need a step per group.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/budget_groups.py
"""
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

CASES = [
    ((3, 20), 0, 1.0, "<=", False),
    ((3, 20), 0, 1.0, "<=", True),  # with a redundant X <= 1
    ((3, 4), 0, 1.0, "<=", False),  # 4 groups: a joint active set
    ((40, 4), 1, np.linspace(0.5, 2, 40), "==", False),
    ((40, 4), 1, np.linspace(0.5, 2, 40), "<=", False),
    ((3, 4, 5), 0, 1.0, "<=", False),
    ((3, 4, 5), 2, 1.0, "<=", False),
    ((30, 6), 1, 0.7, "<=", False),
    ((6, 30), 0, 1.5, "<=", False),
]


def run(shape, axis, total, sense, box, seed=1):
    target = np.random.default_rng(seed).standard_normal(shape)
    out = {}
    for m in (fm, cp):
        X = m.Variable(shape)
        sums = m.sum(X, axis=axis)
        budget = sums <= total if sense == "<=" else sums == total
        prob = m.Problem(m.Minimize(m.sum_squares(X - target)), [X >= 0, budget] + ([X <= 1] if box else []))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        out[m.__name__] = (prob, time.perf_counter() - t0, np.asarray(budget.dual_value, dtype=float))
    (p, t_fm, y_fm), (q, t_cp, y_cp) = out["fwmodel"], out["cvxpy"]
    err = float(np.max(np.abs(y_fm - y_cp)))
    name = f"{shape} axis={axis} {sense} {'t per group' if np.ndim(total) else 't'}{' + X <= 1' if box else ''}"
    print(f"| {name} | {p.status} | {p.stats.iterations} | {t_fm:.3f} | {t_cp:.3f} | "
          f"{abs(p.value - q.value) / abs(q.value):.1e} | {err:.1e} | {np.max(np.abs(y_cp)):.2f} |")


if __name__ == "__main__":
    print("| model | status | iterations | fwmodel (s) | Clarabel (s) | rel. value diff | dual max error | largest dual |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        run(*case)
