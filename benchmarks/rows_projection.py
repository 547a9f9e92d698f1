"""Projection steps on models with rows: the default against the previous default.

``projection="auto"`` projects the L1 balls of a model made only of
polytopes from the first iteration, also where the model has rows (an L1
ball and a box on one variable: two tied copies; equality rows; the slacks
of inequality rows); boxes and simplices keep their vertex steps
(``projection_choice.candidates``). And where every block projects through
general rows, lam may still be halved by the dual schedule's balance rule
(kept fixed before; ``ProjectionStep.on_tied_copies``).

"previous" is the default before both changes: vertex (BPCG) steps on
polytope-only models with rows (``projection=False`` gives exactly those)
and lam kept fixed after projection steps on every block (restored here by
patching ``ProjectionStep.on_tied_copies``). CVXPY + Clarabel for
reference (the difference relative to max(|f*|, S_f / 100), as benchmarks/zoo.py);
best of ``--repeat`` runs each.

An L1 ball and a box on the whole x are one set since round 11
(``BoxedL1Ball``, lowering item 7): their rows "two copies" solve the same
model with the box on the slice ``x[:]``, which keeps the two tied copies
that the default solved before.

    python benchmarks/rows_projection.py --repeat 3
"""
import argparse
import inspect
import os
import sys
from contextlib import contextmanager

import numpy as np

import fwmodel as fm
from fwmodel.engine.projection_step import ProjectionStep

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_time  # noqa: E402

try:
    import cvxpy as cp
except ImportError:  # the reference column is then left out
    cp = None


def _data(m, n, seed):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal((m, n)), rng.standard_normal(m)


def l1_box(m, n, radius, cap, seed):
    """Least squares over an L1 ball ∩ a box on the same x (one BoxedL1Ball; ``copies``: two tied copies)."""
    _, A, b = _data(m, n, seed)

    def fw(copies=False):
        x = fm.Variable(n)
        return fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                          [fm.norm1(x) <= radius, fm.Box(x[:] if copies else x, -cap, cap)])

    def cvx():
        z = cp.Variable(n)
        return cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= radius, cp.abs(z) <= cap])

    return f"least squares {m}x{n}, L1 ball {radius:g} ∩ box {cap:g}", fw, cvx, True


def l1_rows(m, n, radius, k, seed, kind="eq", ball="l1"):
    """Least squares in an L1 (or L2) ball with k equality rows E x = e (or inequality rows G x <= h)."""
    rng, A, b = _data(m, n, seed)
    E = rng.standard_normal((k, n))
    x0 = rng.standard_normal(n)
    x0 *= 0.5 * radius / (np.abs(x0).sum() if ball == "l1" else np.linalg.norm(x0))
    e = E @ x0 + (0.1 if kind == "ineq" else 0.0)

    def sets(lib, x):
        if ball == "l1":
            return [lib.norm1(x) <= radius]
        return [lib.norm(x, 2) <= radius]

    def fw():
        x = fm.Variable(n)
        rows = E @ x == e if kind == "eq" else E @ x <= e
        return fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), sets(fm, x) + [rows])

    def cvx():
        z = cp.Variable(n)
        rows = E @ z == e if kind == "eq" else E @ z <= e
        return cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), sets(cp, z) + [rows])

    name = "L1" if ball == "l1" else "L2"
    return (f"least squares {m}x{n}, {name} ball {radius:g}, {k} {'equality' if kind == 'eq' else 'inequality'} rows",
            fw, cvx, ball == "l1")


def logistic_box(m, n, radius, cap, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    y = np.sign(A @ rng.standard_normal(n) + 0.5 * rng.standard_normal(m))

    def fw(copies=False):
        w = fm.Variable(n)
        return fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(y, A @ w)))),
                          [fm.norm1(w) <= radius, fm.Box(w[:] if copies else w, -cap, cap)])

    def cvx():
        z = cp.Variable(n)
        return cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, A @ z)))),
                          [cp.norm1(z) <= radius, cp.abs(z) <= cap])

    return f"logistic regression {m}x{n}, L1 ball {radius:g} ∩ box {cap:g}", fw, cvx, True


def portfolio(n=100, seed=0):
    """The zoo's capped portfolio without rows: one capped simplex, projected by the previous default too."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 5))
    S = F @ F.T / 5 + np.diag(rng.uniform(0.1, 0.5, n))
    mu = rng.uniform(0, 0.2, n)

    def fw():
        x = fm.Variable(n)
        return fm.Problem(fm.Minimize(fm.quad_form(x, S) - mu @ x), [fm.Simplex(x, 1.0), fm.Box(x, 0, 0.05)])

    def cvx():
        z = cp.Variable(n)
        return cp.Problem(cp.Minimize(cp.quad_form(z, S) - mu @ z), [z >= 0, cp.sum(z) == 1, z <= 0.05])

    return f"mean-variance portfolio {n}, simplex ∩ box 0.05", fw, cvx, False


@contextmanager
def previous_multiplier_step():
    """lam kept fixed after projection steps on every block, whatever the rows (the previous default)."""
    original = ProjectionStep.on_tied_copies
    ProjectionStep.on_tied_copies = lambda self, lagrangian: True
    try:
        yield
    finally:
        ProjectionStep.on_tied_copies = original


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    models = [l1_box(100, 60, 5.0, 0.3, 0), l1_box(80, 200, 5.0, 0.2, 1), l1_box(300, 100, 3.0, 0.5, 2),
              l1_box(100, 60, 2.0, 0.1, 3), logistic_box(200, 50, 2.0, 0.3, 7),
              l1_rows(100, 60, 5.0, 3, 4), l1_rows(80, 200, 5.0, 10, 5), l1_rows(100, 60, 3.0, 5, 6, kind="ineq"),
              l1_rows(100, 60, 1.0, 3, 8, ball="l2"), l1_rows(80, 200, 1.0, 10, 9, ball="l2"),
              portfolio()]
    print("| model | solve | status | iterations | steps | time (s) | time / default's | diff to Clarabel | Clarabel (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for title, fw, cvx, polytopes in models:
        ref, t_ref = None, None
        if cp is not None:
            def run_cvx():
                prob = cvx()
                prob.solve(solver="CLARABEL")
                return prob.value
            t_ref, ref = best_time(run_cvx, args.repeat)
        rows = []
        # the L1 ball ∩ box models build the two copies too (the box on x[:])
        copies = "copies" in inspect.signature(fw).parameters
        for label in ("default", "previous") + (("two copies",) if copies else ()):
            def run_fw():
                prob = fw(copies=True) if label == "two copies" else fw()
                if label in ("default", "two copies"):
                    prob.solve(max_iter=50000)
                else:
                    with previous_multiplier_step():
                        prob.solve(max_iter=50000, **({"projection": False} if polytopes else {}))
                return prob
            t, prob = best_time(run_fw, args.repeat)
            rows.append((label, t, prob))
        t_default = rows[0][1]
        for label, t, prob in rows:
            steps = ", ".join(f"{k} {v}" for k, v in prob.stats.step_counts.items() if v)
            # scale-free, as benchmarks/zoo.py: relative to max(|f*|, S_f / 100)
            diff = "-" if ref is None else f"{abs(prob.value - ref) / max(abs(ref), prob.stats.objective_scale / 100):.1e}"
            clar = "-" if t_ref is None else f"{t_ref:.4f}"
            ratio = f"{t / t_default:.2f}" if label != "default" else ""
            print(f"| {title} | {label} | {prob.status} | {prob.stats.iterations} | {steps} | {t:.4f} | {ratio} "
                  f"| {diff} | {clar} |", flush=True)


if __name__ == "__main__":
    main()
