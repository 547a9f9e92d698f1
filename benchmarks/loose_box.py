"""A loose box around the solution: does the answer depend on a redundant bound?

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/loose_box.py

CVXPY users bound variables with "big-M" boxes (``abs(y) <= B``) that are far
from active. Each model below has a solution of norm about 1-3, a box of
half-width B = 10 .. 1e6 around it and rows (``A @ y == b``, ``G @ y <= h``, or
the rows tying two copies of y held in a box and an L2 ball): for every B the
same optimum, which CVXPY + Clarabel gives (on the unit model). Each model is also solved in
other units (y and its bound times u, the rows' right sides and the
objective's data times u, u = 1e-6, 1e6): the same relative answer is
expected. Per line: fwmodel's status, iterations, the value's relative
difference to Clarabel's (relative to |f*|), ||Ay - b|| over max(||b||,
||y*||) for the rows; marked ``!!`` when the status is not "optimal", the
value is more than 1e-4 off relative to |f*| (the default ``tol``) or the
rows' violation is above 10x the default ``feas_tol``. The loose box made
the rows' test relative to B sqrt(n) (the box's corner): at B = 1e6 the
equality model ended "optimal" with ||Ay - b|| = 1.3e-2 and its value 3.4e-3
below Clarabel's.
"""
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

warnings.filterwarnings("ignore")
BOUNDS = [10.0, 1e3, 1e4, 1e6]
UNITS = [1e-6, 1.0, 1e6]


def eq_rows(m, y, B, u):
    rng = np.random.default_rng(13)
    n = 5
    a, A, b = rng.standard_normal(n), rng.standard_normal((3, n)), rng.standard_normal(3)
    return m.sum_squares(y - u * a), [m.abs(y) <= u * B, A @ y == u * b], (A, u * b)


def ineq_rows(m, y, B, u):
    rng = np.random.default_rng(5)
    n = 8
    a, G = rng.standard_normal(n), rng.standard_normal((4, n))
    h = G @ (0.2 * rng.standard_normal(n)) - 0.5
    return m.sum_squares(y - u * a), [m.abs(y) <= u * B, G @ y <= u * h], None


def copies(m, y, B, u):
    rng = np.random.default_rng(7)
    n = 6
    a = 2.0 * rng.standard_normal(n)
    return m.sum_squares(y - u * a), [m.abs(y) <= u * B, m.norm(y, 2) <= u * 1.5], None


MODELS = {"eq": (eq_rows, 5), "ineq": (ineq_rows, 8), "copies": (copies, 6)}


def main():
    marked = 0
    for name, (build, n) in MODELS.items():
        yc = cp.Variable(n)
        obj, cons, rows = build(cp, yc, BOUNDS[0], 1.0)
        ref_1 = cp.Problem(cp.Minimize(obj), cons).solve(solver=cp.CLARABEL)
        for u in UNITS:
            # Clarabel on the unit model, in units u (f scales by u^2, y by u): its absolute tolerances
            # do not follow the units
            ref, y_ref = u * u * ref_1, u * yc.value
            for B in BOUNDS:
                y = fm.Variable(n)
                obj, cons, rows = build(fm, y, B, u)
                prob = fm.Problem(fm.Minimize(obj), cons)
                value = prob.solve()
                err = abs(value - ref) / abs(ref)
                viol = 0.0
                if rows is not None:
                    A, b = rows
                    viol = np.linalg.norm(A @ y.value - b) / max(np.linalg.norm(b), np.linalg.norm(y_ref))
                bad = prob.status != "optimal" or err > 1e-4 or viol > 1e-3
                marked += bad
                print(f"{name:7s} u={u:<6g} B={B:<6g} {prob.status:8s} {prob.stats.iterations:5d} it  "
                      f"rel. error {err:.1e}  rows {viol:.1e}  S_x/u {prob.stats.feasibility_scale / u:.3g}"
                      + ("  !!" if bad else ""))
    print(f"lines marked !!: {marked}")


if __name__ == "__main__":
    main()
