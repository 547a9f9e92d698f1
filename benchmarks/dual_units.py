"""Dual values in any units: the same model in units s (or shifted by an offset o) against CVXPY + Clarabel on
the model in units 1 (every multiplier scales as s, none moves with o).

    PYTHONPATH=. python benchmarks/dual_units.py

    PYTHONPATH=. python benchmarks/dual_units.py sets

Per model and s: the largest difference of dual / s from Clarabel's unit-model duals, over the largest of
those (``err``), and the largest multiplier / s of a bound on an entry strictly inside [o, o + s] (``cs``:
complementary slackness asks 0).
"""
import numpy as np
import cvxpy as cp

import fwmodel as fm

N = 10
C0 = np.random.default_rng(14).standard_normal(N)
RNG = np.random.default_rng(21)
A, B = RNG.standard_normal((12, N)), RNG.standard_normal(12)


def capped(m, x, s, o):
    return m.sum_squares(x - o - s * C0), [x >= o, x <= o + s, m.sum(x) == N * o + 3 * s]


def boxed_l1(m, x, s, o):
    return m.sum_squares(A @ x - s * B), [m.norm1(x) <= s, m.abs(x) <= 0.3 * s]


def box_rows(m, x, s, o):
    G = np.random.default_rng(3).standard_normal((2, N))
    return m.sum_squares(x - o - s * C0), [x >= o, x <= o + s, G @ (x - o) == 0.01 * s]


def solve(m, build, s, o):
    x = m.Variable(N)
    objective, cons = build(m, x, s, o)
    p = m.Problem(m.Minimize(objective), cons)
    p.solve(**({"solver": "CLARABEL"} if m is cp else {}))
    return p.status, [np.atleast_1d(np.asarray(c.dual_value, dtype=float)) for c in cons], x.value


def main():
    print(f"{'model':10s} {'s':>8s} {'offset':>8s} {'status':8s} {'err':>9s} {'cs':>9s}  first dual / s (Clarabel)")
    for name, build, cases, box in (("capped", capped, [(1, 0), (1e-6, 0), (1e-9, 0), (1e-12, 0), (1e8, 0), (1, 1e8),
                                                         (0.01, 1e6)], True),
                                    ("boxed L1", boxed_l1, [(1, 0), (1e-4, 0), (1e-7, 0), (1e-9, 0), (1e-12, 0)], False),
                                    ("box+rows", box_rows, [(1, 0), (1e-9, 0), (0.05, 1e5), (1, 1e7)], True)):
        _, ref, ref_x = solve(cp, build, 1.0, 0.0)
        scale = max(float(np.max(np.abs(d))) for d in ref)
        for s, o in cases:
            status, duals, x = solve(fm, build, s, o)
            err = max(float(np.max(np.abs(d / s - r))) for d, r in zip(duals, ref)) / scale
            cs = float("nan")
            if box:
                inside = (ref_x > 1e-3) & (ref_x < 1 - 1e-3)
                cs = max(float(np.max(np.abs(duals[0][inside]))), float(np.max(np.abs(duals[1][inside])))) / s
            last = duals[-1] / s
            print(f"{name:10s} {s:8.0e} {o:8.0e} {status:8s} {err:9.2e} {cs:9.2e}  {last[0]:.5g} ({ref[-1][0]:.5g})")


SETS = {  # the sets' membership tests in units s: the solution / s against Clarabel's in units 1
    "box [s, 2s]": lambda m, x, s: (m.sum_squares(x - 0.5 * s), [x >= s, x <= 2 * s]),
    "simplex": lambda m, x, s: (m.sum_squares(x), [x >= 0, m.sum(x) == s]),
    "L2 ball at 3s": lambda m, x, s: (m.sum_squares(x), [m.norm(x - 3 * s, 2) <= s]),
    "L1 ball at 3s": lambda m, x, s: (m.sum_squares(x), [m.norm1(x - 3 * s) <= s]),
    "capped": lambda m, x, s: (m.sum_squares(x), [x >= 0, m.sum(x) == 3 * s, x <= 2 * s, x[0] >= 1.5 * s]),
}


def sets_in_units():
    print(f"{'model':14s} {'s':>6s} {'status':8s} {'max |x/s - ref|':>16s}  x / s")
    for name, build in SETS.items():
        x = cp.Variable(3)
        objective, cons = build(cp, x, 1.0)
        cp.Problem(cp.Minimize(objective), cons).solve(solver="CLARABEL")
        ref = x.value
        for s in (1.0, 1e-9, 1e-11):
            x = fm.Variable(3)
            objective, cons = build(fm, x, s)
            p = fm.Problem(fm.Minimize(objective), cons)
            p.solve()
            err = float(np.max(np.abs(x.value / s - ref)))
            print(f"{name:14s} {s:6.0e} {p.status:8s} {err:16.2e}  {np.round(x.value / s, 4)}")


if __name__ == "__main__":
    import sys
    sets_in_units() if sys.argv[1:] == ["sets"] else main()
