"""Multipliers of inequality rows that the solution leaves slack, in the units the rows are written in.

Model: ``min c'x + 0.5 ||x||^2`` over ``|x| <= 1`` with ``s * (G @ x) <= s * h`` (3 rows, n = 6, seeds
0-5; h = (-0.3, 5, 0.2): the second row is always slack, the others bind for some seeds) for s = 1, 1e-6,
1e6, at the default tolerances. Printed per units: the largest |dual_value| of the rows that Clarabel's
unit-scale solution leaves slack by more than 1e-2 (complementary slackness says 0), and the largest
relative difference of the binding rows' ``dual_value * s`` from Clarabel's unit-scale multiplier. A row's
multiplier of the model written times s is lambda / s; Clarabel's absolute tolerances make it solve the
model in 1e-6 units loosely, so the reference is the unit-scale model's.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/inactive_row_duals.py
"""
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")

N = 6


def solve(m, seed, units, **options):
    rng = np.random.default_rng(seed)
    c, G, h = rng.standard_normal(N), rng.standard_normal((3, N)), np.array([-0.3, 5.0, 0.2])
    x = m.Variable(N)
    rows = units * (G @ x) <= units * h
    prob = m.Problem(m.Minimize(c @ x + 0.5 * m.sum_squares(x)), [rows, m.abs(x) <= 1])
    prob.solve(**options)
    return prob, np.asarray(rows.dual_value, dtype=float), h - G @ x.value


def main():
    warnings.simplefilter("ignore")
    print("| units | inactive rows | largest inactive |dual| | binding rows | largest binding rel. diff |")
    print("|---|---|---|---|---|")
    for units in (1.0, 1e-6, 1e6):
        worst_inactive, worst_binding, n_inactive, n_binding = 0.0, 0.0, 0, 0
        for seed in range(6):
            _, dual, _ = solve(fm, seed, units)
            _, ref, slack = solve(cp, seed, 1.0, solver=cp.CLARABEL)
            inactive = slack > 1e-2
            n_inactive += int(inactive.sum())
            n_binding += int((~inactive).sum())
            if inactive.any():
                worst_inactive = max(worst_inactive, float(np.max(np.abs(dual[inactive]))))
            big = ~inactive & (ref > 1e-3)
            if big.any():
                worst_binding = max(worst_binding, float(np.max(np.abs(dual[big] * units - ref[big]) / ref[big])))
        print(f"| {units:g} | {n_inactive} | {worst_inactive:.3g} | {n_binding} | {worst_binding:.2g} |")


if __name__ == "__main__":
    main()
