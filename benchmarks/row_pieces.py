"""Groups of rows in units far apart, against CVXPY + Clarabel on the unit model.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/row_pieces.py

Least squares ``||A x - b||^2`` (A 30 x 10) over sets and rows, with one or
two constraints multiplied by s (and s2): the same model in other units.
Each line: fwmodel's status, iterations and time with ``prob.solve()``
defaults, its objective's relative difference to Clarabel's optimum (on
the unit model), the worst violation of the unit model's constraints by the
returned x (relative to the model's size, 1), and for the model with a
binding row of unique multiplier its ``dual_value`` against Clarabel's.
A line is marked ``!!`` when the status differs from Clarabel's, the value
is off by more than 1e-3, or an "optimal" point violates a constraint by
more than 1e-3 (a silent wrong answer).
"""
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

warnings.filterwarnings("ignore")
RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, 10))
B = RNG.standard_normal(30)


def models(s, s2):
    """(name, fwmodel constraints, CVXPY constraints on the unit model, index of a row with a unique dual)."""
    yield ("nonneg + L1 + row", lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= s],
           lambda x: [x >= 0, cp.norm1(x) <= 1, x[0] + x[1] >= 1], None)
    yield ("L1 + L2 + binding row", lambda x: [fm.norm1(x) <= 5, fm.norm2(x) <= 3, s * (x[0] + x[1]) >= 2 * s],
           lambda x: [cp.norm1(x) <= 5, cp.norm2(x) <= 3, x[0] + x[1] >= 2], 2)
    yield ("infeasible row", lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= 3 * s],
           lambda x: [x >= 0, cp.norm1(x) <= 1, x[0] + x[1] >= 3], None)
    yield ("L1 + two equalities", lambda x: [fm.norm1(x) <= 1, s * (x[0] - x[2]) == 0.1 * s,
                                             s2 * (x[3] + x[4]) == 0.2 * s2],
           lambda x: [cp.norm1(x) <= 1, x[0] - x[2] == 0.1, x[3] + x[4] == 0.2], None)
    yield ("simplex + cap + rows", lambda x: [fm.Simplex(x), x <= 0.3, s * (x[0] - x[5]) <= 0,
                                              s2 * fm.sum(x[:5]) == 0.6 * s2],
           lambda x: [x >= 0, cp.sum(x) == 1, x <= 0.3, x[0] - x[5] <= 0, cp.sum(x[:5]) == 0.6], None)


def violation(cons_unit, value):
    """The worst violation of the unit model's constraints (CVXPY's own evaluation) at x = value."""
    x = cp.Variable(10)
    x.value = value
    return max(float(np.max(np.atleast_1d(c.violation()))) for c in cons_unit(x))


def main():
    bad = 0
    print(f"{'':2} {'model':24} {'s':>7} {'s2':>7} {'status':10} {'iters':>6} {'time':>7} {'rel diff':>9} "
          f"{'violation':>9}  dual (fwmodel / Clarabel)")
    for s in [1e-6, 1e-3, 1.0, 1e2, 1e3, 1e6]:
        for s2 in [1.0, 1e-6, 1e6]:
            for name, fm_cons, cp_cons, dual_row in models(s, s2):
                if s2 != 1.0 and "two" not in name and "rows" not in name:
                    continue
                x = fm.Variable(10)
                cons = fm_cons(x)
                prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), cons)
                start = time.perf_counter()
                prob.solve()
                elapsed = time.perf_counter() - start
                xc = cp.Variable(10)
                ref_cons = cp_cons(xc)
                ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - B)), ref_cons)
                ref.solve(solver=cp.CLARABEL)
                diff = viol = float("nan")
                if prob.status == "optimal" and ref.status == "optimal":
                    diff = abs(prob.value - ref.value) / abs(ref.value)
                    viol = violation(cp_cons, x.value)
                ok = (prob.status == ref.status and (prob.status != "optimal" or (diff <= 1e-3 and viol <= 1e-3)))
                dual = ""
                if dual_row is not None and prob.status == "optimal":
                    ours = float(np.ravel(cons[dual_row].dual_value)[0])
                    theirs = float(np.ravel(ref_cons[dual_row].dual_value)[0]) / s  # the row written times s
                    dual = f"{ours:.6g} / {theirs:.6g}"
                    ok = ok and abs(ours - theirs) <= 1e-3 * abs(theirs)
                bad += not ok
                print(f"{'  ' if ok else '!!'} {name:24} {s:7.0e} {s2:7.0e} {prob.status:10} "
                      f"{prob.stats.iterations:6d} {elapsed:7.2f} {diff:9.1e} {viol:9.1e}  {dual}")
    print(f"lines marked !!: {bad}")


if __name__ == "__main__":
    main()
