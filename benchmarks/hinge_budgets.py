"""Hinge budgets ``sum(pos(A @ x - b)) <= t``: fwmodel's iterations and time against CVXPY + Clarabel.

fwmodel lowers the budget with a hidden ``s >= 0`` in the simplex ``sum(s) <= t``
and the rows ``A x - b - s <= 0`` (each with a slack bounded by the LMOs). Per
model: ``prob.solve()`` at its defaults and at ``tol=feas_tol=1e-7``
(iterations, solve time), Clarabel's solve time (CVXPY's compile excluded: its
``solver_stats.solve_time``), and the relative objective gap to Clarabel's.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/hinge_budgets.py
"""
import time
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")


def models():
    """(name, build(m) -> (objective, constraints)) with m either cvxpy or fwmodel."""
    for m_rows, n in ((50, 20), (200, 50), (1000, 100)):
        rng = np.random.default_rng(m_rows)
        A = rng.standard_normal((m_rows, n))
        b = rng.standard_normal(m_rows)
        F = rng.standard_normal((2 * n, n))
        g = F @ rng.uniform(-1, 1, n) + rng.standard_normal(2 * n)
        x_free = np.linalg.lstsq(F, g, rcond=None)[0]
        hinge_free = float(np.maximum(A @ np.clip(x_free, -1, 1) - b, 0).sum())
        for label, t in (("binding", 0.3 * hinge_free), ("slack", 10 * hinge_free + 1)):
            yield (f"least squares {2 * n}x{n}, hinge {m_rows} rows, {label}",
                   lambda m, A=A, b=b, F=F, g=g, t=t, n=n: (lambda x: (
                       m.Minimize(m.sum_squares(F @ x - g)), [m.sum(m.pos(A @ x - b)) <= t, m.abs(x) <= 1]))(
                       m.Variable(n)))
        x0 = rng.uniform(-2, 2, n)
        floor = b - 2.0  # (x = 0 meets A x >= floor: a feasible budget)
        t = 0.3 * float(np.maximum(floor - A @ x0, 0).sum())
        yield (f"projection, shortfall {m_rows} rows, binding",
               lambda m, A=A, floor=floor, x0=x0, n=n, t=t: (lambda x: (
                   m.Minimize(m.sum_squares(x - x0)), [m.sum(m.neg(A @ x - floor)) <= t, m.abs(x) <= 3]))(
                   m.Variable(n)))


def main():
    warnings.simplefilter("ignore")
    print(f"{'model':52s} {'defaults: it':>12s} {'s':>7s} {'gap':>8s} | {'1e-7: it':>9s} {'s':>7s} {'gap':>8s} "
          f"| {'Clarabel s':>10s} {'dual (ours, theirs)':>22s}")
    for name, build in models():
        objective, constraints = build(cp)
        ref = cp.Problem(objective, constraints)
        ref.solve(solver=cp.CLARABEL)
        clarabel_time = ref.solver_stats.solve_time
        row = [f"{name:52s}"]
        for options in ({}, dict(tol=1e-7, feas_tol=1e-7, max_iter=50000)):
            objective, ours = build(fm)
            prob = fm.Problem(objective, ours)
            prob.compile()
            start = time.perf_counter()
            prob.solve(**options)
            elapsed = time.perf_counter() - start
            gap = abs(prob.value - ref.value) / max(1.0, abs(ref.value))
            status = "" if prob.status == "optimal" else f" {prob.status}"
            row.append(f"{prob.stats.iterations:>12d} {elapsed:7.3f} {gap:8.1e}{status} |")
        row.append(f"{clarabel_time:10.4f} {ours[0].dual_value:10.4g} {constraints[0].dual_value:10.4g}")
        print(" ".join(row))


if __name__ == "__main__":
    main()
