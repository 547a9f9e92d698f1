"""Nearly linear objectives on an L1 ball with rows, named step kinds, and a looser tol.

Three groups of solves, each against CVXPY + Clarabel (the error column: |f - f*| / max(1, |f*|)):

* ``near``: ``w * sum_squares(A x - b) + c' x`` with ``norm1(x) <= 2`` and ``sum(x) == s``, n = 8,
  for w from 0 to 1 (a quadratic of tiny or zero weight is measured nearly linear and keeps vertex
  steps; a curved one keeps its projection steps), then eight random instances at w = 1e-6
  (n = 5..19);
* ``steps``: least squares in an L1 ball and an L2 ball with one row, under each ``step`` (max_iter 2,000);
* ``tol``: the same model at tol = 0.1 .. 1e-4.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/near_linear.py [near|steps|tol ...]
"""
import sys
import time

import cvxpy as cp
import numpy as np

import fwmodel as fm


def _row(label, prob, value, ref, seconds):
    err = abs(value - ref) / max(1.0, abs(ref))
    counts = {k: v for k, v in prob.stats.step_counts.items() if v}
    print(f"{label:<34} {prob.status:<9} it={prob.stats.iterations:>5}  t={seconds:6.2f}s  err={err:.1e}  {counts}",
          flush=True)


def _near(A, b, c, w, total, label):
    n = A.shape[1]
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(w * fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= 2, fm.sum(x) == total])
    t0 = time.perf_counter()
    value = prob.solve(time_limit=60)
    seconds = time.perf_counter() - t0
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(w * cp.sum_squares(A @ xc - b) + c @ xc),
                     [cp.norm1(xc) <= 2, cp.sum(xc) == total]).solve(solver=cp.CLARABEL)
    _row(label, prob, value, ref, seconds)
    return prob.stats.iterations, seconds


def near():
    rng = np.random.default_rng(20)
    n = 8
    A, b, c = rng.standard_normal((12, n)), rng.standard_normal(12), np.linspace(-1, 1, n)
    its = secs = 0
    for w in (0.0, 1e-6, 1e-4, 1e-2, 1e-1, 1.0):
        for total in (0.5, 0.0):
            i, s = _near(A, b, c, w, total, f"near w={w:g} s={total:g}")
            its, secs = its + i, secs + s
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(5, 20))
        A, b, c = rng.standard_normal((n + 3, n)), rng.standard_normal(n + 3), rng.standard_normal(n)
        i, s = _near(A, b, c, 1e-6, float(rng.uniform(-1, 1)), f"near random seed={seed} n={n}")
        its, secs = its + i, secs + s
    print(f"near total: {its} iterations, {secs:.2f} s")


def _two_balls():
    rng = np.random.default_rng(28)
    n = 10
    A, b = rng.standard_normal((15, n)), rng.standard_normal(15)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 1.5, fm.norm2(x) <= 0.8, fm.sum(x) == 0.3])
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)),
                     [cp.norm1(xc) <= 1.5, cp.norm2(xc) <= 0.8, cp.sum(xc) == 0.3]).solve(solver=cp.CLARABEL)
    return prob, ref


def steps():
    for opts in (dict(), dict(step="fw"), dict(step="away"), dict(step="pairwise"), dict(step="away", projection=True)):
        prob, ref = _two_balls()
        t0 = time.perf_counter()
        value = prob.solve(max_iter=2000, **opts)
        _row(f"steps {opts}", prob, value, ref, time.perf_counter() - t0)


def tol():
    for t in (1e-1, 1e-2, 1e-3, 1e-4):
        prob, ref = _two_balls()
        t0 = time.perf_counter()
        value = prob.solve(tol=t)
        _row(f"tol={t:g}", prob, value, ref, time.perf_counter() - t0)


if __name__ == "__main__":
    for name in sys.argv[1:] or ("near", "steps", "tol"):
        {"near": near, "steps": steps, "tol": tol}[name]()
