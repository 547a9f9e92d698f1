"""Three user-facing gaps, each against CVXPY + Clarabel (or a closed form).

1. Sets that hold x through Parameters: ``fm.quad_form(x - q, P) <= r`` (q a Parameter center) and
   ``fm.norm1(fm.multiply(p, x) + c) <= r`` (p a vector Parameter), each alone on x, re-solved warm as the
   Parameters move (values and dual values).
2. An empty capped simplex (``0 <= x <= u``, ``sum(x) == 15.1 u``, n = 15: the caps sum below the total) at
   u = 1e-12 .. 1e6: the status must be "infeasible" at every scale.
3. ``fm.smooth(z**1.5 + z)`` on the box [-1, 1]: CVXPY's ``power(x, 1.5)`` implies x >= 0, optimum 0 at 0.

Usage: ``python benchmarks/maps_and_domains.py``
"""
import warnings

import cvxpy as cp
import numpy as np
import sympy as sp

import fwmodel as fm


def quad_form_around_a_center(nonneg=False):
    """``min c'x + ||x - w||^2`` s.t. ``fm.quad_form(x - q, P) <= 2`` (q a Parameter; ``x >= 0`` too with
    ``nonneg``), data from seed 1: ``(prob, x, q, con, centers, reference)``, ``centers`` the four values of q
    the solves take and ``reference(q_value)`` the same model in CVXPY at that q, ``(problem, x, constraint)``,
    unsolved (also tests/test_moving_preimages.py)."""
    rng = np.random.default_rng(1)
    n = 5
    M = rng.standard_normal((n, n))
    P = M @ M.T + np.eye(n)
    c, w = rng.standard_normal(n), rng.standard_normal(n)
    x, q = fm.Variable(n), fm.Parameter(n)
    con = fm.quad_form(x - q, P) <= 2.0
    prob = fm.Problem(fm.Minimize(c @ x + fm.sum_squares(x - w)), [con] + ([x >= 0] if nonneg else []))
    centers = (rng.standard_normal(n) + 3, np.zeros(n), 5 * rng.standard_normal(n) + 6, np.full(n, 10.0))

    def reference(q_value):
        xc = cp.Variable(n)
        cc = cp.quad_form(xc - q_value, P) <= 2.0
        return cp.Problem(cp.Minimize(c @ xc + cp.sum_squares(xc - w)), [cc] + ([xc >= 0] if nonneg else [])), xc, cc

    return prob, x, q, con, centers, reference


def parameter_maps():
    prob, x, q, con, centers, reference = quad_form_around_a_center()
    print("quad_form(x - q, P) <= 2 alone, q moved between warm solves")
    for q_value in centers:
        q.value = q_value
        value = prob.solve(warm_start=True)
        ref, _, cc = reference(q_value)
        ref.solve(solver="CLARABEL")
        print(f"  {prob.status:8s} {prob.stats.iterations:4d} it  f {value:.6f} (Clarabel {ref.value:.6f})  "
              f"dual {float(con.dual_value):.6f} ({float(np.ravel(cc.dual_value)[0]):.6f})")
    rng = np.random.default_rng(2)
    n = 6
    w = 3 * rng.standard_normal(n)
    x, p, cpar = fm.Variable(n), fm.Parameter(n), fm.Parameter(n)
    con = fm.norm1(fm.multiply(p, x) + cpar) <= 1.5
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - w)), [con])
    print("norm1(multiply(p, x) + c) <= 1.5 alone, p and c moved between warm solves")
    for p_value in (rng.uniform(0.5, 2, n), rng.uniform(-3, 3, n), 1e-3 * rng.uniform(1, 2, n), np.zeros(n)):
        c_value = 0.3 * rng.standard_normal(n)
        p.value, cpar.value = p_value, c_value
        xc = cp.Variable(n)
        cc = cp.norm1(cp.multiply(p_value, xc) + c_value) <= 1.5
        ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - w)), [cc])
        ref.solve(solver="CLARABEL")
        try:
            value = prob.solve(warm_start=True)
        except fm.ModelError as err:
            print(f"  ModelError: {str(err)[:150]}... (Clarabel: {ref.status})")
            continue
        print(f"  {prob.status:8s} {prob.stats.iterations:4d} it  f {value:.6f} (Clarabel {ref.value:.6f})  "
              f"dual {float(con.dual_value):.6f} ({float(cc.dual_value):.6f})")


def empty_capped_simplex():
    rng = np.random.default_rng(0)
    n = 15
    A, b = rng.standard_normal((10, n)), rng.standard_normal(10)
    print("0 <= x <= u, sum(x) == 15.1 u (n = 15; empty at every u)")
    for u in (1e-12, 1e-10, 1e-8, 1e-6, 1e-3, 1.0, 1e3, 1e6):
        x = fm.Variable(n)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [x >= 0, x <= u, fm.sum(x) == u * (n + 0.1)])
        prob.solve(max_iter=5000)
        print(f"  u = {u:g}: {prob.status} ({prob.stats.iterations} it)")


def smooth_domain():
    z = sp.Symbol("z")
    n = 4
    for formula, reference, name in ((z ** sp.Rational(3, 2) + z, lambda v: cp.power(v, 1.5) + v, "z**1.5 + z"),
                                     (z ** sp.Rational(3, 2) - z, lambda v: cp.power(v, 1.5) - v, "z**1.5 - z")):
        x = fm.Variable(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prob = fm.Problem(fm.Minimize(fm.sum(fm.smooth(formula, {z: x}))), [x >= -1, x <= 1])
        value = prob.solve(max_iter=2000)
        xc = cp.Variable(n)
        ref = cp.Problem(cp.Minimize(cp.sum(reference(xc))), [xc >= -1, xc <= 1])
        ref.solve(solver="CLARABEL")
        print(f"fm.smooth({name}) on [-1, 1]: {prob.status} {value:.6f} ({prob.stats.iterations} it); "
              f"Clarabel {ref.value:.6f}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    parameter_maps()
    empty_capped_simplex()
    smooth_domain()
