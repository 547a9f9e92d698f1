"""Euclidean balls written squared and ellipsoids (``fm.quad_form(e, P) <= t``), against CVXPY + Clarabel.

Three tables:
1. Markowitz's risk bound ``max mu'w s.t. w' Sigma w <= risk, sum(w) == 1, w >= 0`` written as CVXPY users
   write it (the compiler holds it as a ball on ``L' w``, ``Sigma = L L'``), and with the set
   ``fm.Ellipsoid(w, Sigma, risk)`` on w itself: iterations, time, value and the risk bound's multiplier.
2. ``fm.quad_form(x, P) <= t`` with nothing else on x (an ellipsoid; it was refused as "not in any bounded
   set"): linear, least-squares and shifted models, P of condition number 10..1000.
3. ``X >> 0, fm.diag(X) <= 1`` with a linear objective: the largest error of the bounds' ``dual_value``.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/squared_balls.py
"""
import time
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")


def clarabel(prob):
    t0 = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    return time.perf_counter() - t0


def portfolio_table(sizes):
    print("| n | form | status | iterations | time (s) | value | risk multiplier |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        rng = np.random.default_rng(n)
        F = rng.standard_normal((n, 5))
        sigma = 0.01 * F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
        mu = rng.uniform(0.0, 0.1, n)
        risk = 0.005
        for form in ("quad_form (ball on L'w)", "fm.Ellipsoid(w, Sigma, risk)", "Clarabel"):
            m = cp if form == "Clarabel" else fm
            w = m.Variable(n)
            bound = fm.Ellipsoid(w, sigma, risk) if form.startswith("fm.") else m.quad_form(w, sigma) <= risk
            prob = m.Problem(m.Maximize(mu @ w), [bound, m.sum(w) == 1, w >= 0])
            if m is fm:
                t0 = time.perf_counter()
                prob.solve()
                elapsed, iterations = time.perf_counter() - t0, prob.stats.iterations
            else:
                elapsed, iterations = clarabel(prob), "-"
            dual = getattr(bound, "dual_value", None)
            dual = "-" if dual is None else f"{float(np.ravel(dual)[0]):.5f}"
            print(f"| {n} | {form} | {prob.status} | {iterations} | {elapsed:.3f} | {prob.value:.7f} | {dual} |")


def alone_table():
    print("\n| n | cond(P) | model | fwmodel status | iterations | time (s) | relative error | multiplier | "
          "Clarabel's | Clarabel (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, cond in ((10, 10.0), (30, 100.0), (100, 1000.0)):
        rng = np.random.default_rng(n)
        Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
        P = Q @ np.diag(np.geomspace(1.0, cond, n)) @ Q.T
        c, x0 = rng.standard_normal(n), rng.standard_normal(n)
        for model in ("min c'x", "min ||x - 3 x0||^2", "shifted: quad_form(x - x0, P) <= 2"):
            out = []
            for m in (fm, cp):
                x = m.Variable(n)
                objective = m.Minimize(c @ x) if model == "min c'x" else m.Minimize(m.sum_squares(x - 3 * x0))
                bound = m.quad_form(x - x0, P) <= 2 if model.startswith("shifted") else m.quad_form(x, P) <= 1
                prob = m.Problem(objective, [bound])
                if m is fm:
                    t0 = time.perf_counter()
                    prob.solve()
                    out.append((prob.status, prob.stats.iterations, time.perf_counter() - t0, prob.value,
                                bound.dual_value))
                else:
                    out.append((prob.status, None, clarabel(prob), prob.value, float(np.ravel(bound.dual_value)[0])))
            (status, its, t_fm, v_fm, d_fm), (_, _, t_cl, v_cl, d_cl) = out
            error = abs(v_fm - v_cl) / max(1.0, abs(v_cl))
            print(f"| {n} | {cond:g} | {model} | {status} | {its} | {t_fm:.3f} | {error:.1e} | {d_fm:.5f} | "
                  f"{d_cl:.5f} | {t_cl:.3f} |")


def diagonal_table(seeds):
    print("\n| seed | n | diagonal entries at 1 | largest error of diag(X) <= 1's dual_value | X >> 0's dual |")
    print("|---|---|---|---|---|")
    for seed in seeds:
        rng = np.random.default_rng(seed)
        n = 6
        C = rng.standard_normal((n, n))
        C = (C + C.T) / 2
        duals = []
        for m in (fm, cp):
            X = m.Variable((n, n), symmetric=True)
            psd, bound = X >> 0, m.diag(X) <= 1
            prob = m.Problem(m.Maximize(m.trace(C @ X)), [psd, bound])
            prob.solve(tol=1e-8) if m is fm else clarabel(prob)
            duals.append((bound.dual_value, psd.dual_value, np.diag(X.value)))
        (nu, Z, diagonal), (nu_ref, Z_ref, _) = duals
        z_error = "None" if Z is None else f"error {np.abs(Z - Z_ref).max():.1e}"
        print(f"| {seed} | {n} | {int(np.sum(diagonal > 1 - 1e-6))} | {np.abs(nu - nu_ref).max():.1e} | {z_error} |")


def main():
    warnings.simplefilter("ignore")
    portfolio_table((20, 100, 300))
    alone_table()
    diagonal_table(range(4))


if __name__ == "__main__":
    main()
