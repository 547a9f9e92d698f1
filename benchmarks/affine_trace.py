"""A trace-norm ball of an affine expression, ``TraceNormBall(X - X0, r)``, with default options.

Models (min ||X - C||_F^2, C = X0 + rank 3 + N(0, 0.01) noise, X0 Gaussian; r half of ||C - X0||_*,
so the ball binds):

``affine``    s.t. ``TraceNormBall(X - X0, r)``: compiled to an AffinePreimage on X.
``affine2``   s.t. ``TraceNormBall(2 X - X0, r')`` (r' half of ||2 C - X0||_*): a scaled map.
``affl1``     s.t. ``TraceNormBall(X - X0, r)`` and ``L1Ball(X, r1)``, r1 half of ||C||_1 (both bind).
``affnoise``  s.t. ``TraceNormBall(X - X0, r)`` with C = X0 + N(0, 1) (full rank), r = 0.2 ||C - X0||_*:
              the optimum is C's singular values soft-thresholded around X0, of high rank.
``plain``     the ``affine`` model written on Z = X - X0: ``TraceNormBall(Z, r)``, objective
              ||Z + X0 - C||^2; the same optimum, the ball on the variable itself.

Each model is solved by CVXPY (Clarabel, and SCS at default accuracy) in this process, and by
fwmodel's ``prob.solve()`` (defaults, ``max_iter`` as given) in one subprocess per checkout given
with ``--checkouts label=DIR`` (DIR's fwmodel on PYTHONPATH), so that two versions are measured in
one run, one after the other on the same instance. Reported: status, iterations, time (solve
only, compile included), the relative error of the objective against Clarabel's optimum (SCS's
where Clarabel is skipped, ``--clarabel-max``; none above ``--cvxpy-max``), the step counts, and CVXPY's times.

    python benchmarks/affine_trace.py --sizes 40 100 200 --checkouts before=BASE after=.
    python benchmarks/affine_trace.py --sizes 1000 --models affine plain --checkouts before=BASE after=. --max-iter 300
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

MODELS = ("affine", "affine2", "affl1", "affnoise", "plain")


def instance(d, seed=0):
    rng = np.random.default_rng(seed)
    X0 = rng.standard_normal((d, d))
    C = X0 + rng.standard_normal((d, 3)) @ rng.standard_normal((3, d)) + 0.1 * rng.standard_normal((d, d))
    nuclear = lambda A: float(np.linalg.svd(A, compute_uv=False).sum())  # noqa: E731
    noisy = X0 + rng.standard_normal((d, d))
    return dict(C=C, X0=X0, r=0.5 * nuclear(C - X0), r2=0.5 * nuclear(2 * C - X0), r1=0.5 * float(np.abs(C).sum()),
                C_noisy=noisy, r_noisy=0.2 * nuclear(noisy - X0))


def model_data(model, d):
    """(C, X0, r) of a model's ball and objective; the L1 radius and the scaled radius are in ``instance``."""
    data = instance(d)
    if model == "affnoise":
        return data["C_noisy"], data["X0"], data["r_noisy"], data
    return data["C"], data["X0"], data["r"], data


def solve_fwmodel(model, d, max_iter):
    import fwmodel as fm

    C, X0, r, data = model_data(model, d)
    X = fm.Variable((d, d))
    if model == "plain":
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X + X0 - C)), [fm.TraceNormBall(X, r)])
    else:
        ball = fm.TraceNormBall(2 * X - X0, data["r2"]) if model == "affine2" else fm.TraceNormBall(X - X0, r)
        constraints = [ball] + ([fm.L1Ball(X, data["r1"])] if model == "affl1" else [])
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), constraints)
    t = time.perf_counter()
    prob.solve(max_iter=max_iter)
    seconds = time.perf_counter() - t
    return dict(status=prob.status, iterations=prob.stats.iterations, seconds=seconds, value=float(prob.value),
                package=os.path.dirname(os.path.dirname(fm.__file__)), steps={k: v for k, v in (prob.stats.step_counts or {}).items() if v})


def solve_cvxpy(model, d, solver):
    import cvxpy as cp

    C, X0, r, data = model_data(model, d)
    X = cp.Variable((d, d))
    if model == "affine2":
        cons = [cp.normNuc(2 * X - X0) <= data["r2"]]
    else:
        cons = [cp.normNuc(X - X0) <= r]
    if model == "affl1":
        cons.append(cp.sum(cp.abs(X)) <= data["r1"])
    prob = cp.Problem(cp.Minimize(cp.sum_squares(X - C)), cons)
    t = time.perf_counter()
    prob.solve(solver=solver)
    return dict(status=prob.status, seconds=time.perf_counter() - t, value=float(prob.value))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[40, 100])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--checkouts", nargs="+", default=["this=."], help="label=DIR: DIR's fwmodel is measured")
    ap.add_argument("--max-iter", type=int, default=10000)
    ap.add_argument("--clarabel-max", type=int, default=40, help="largest d solved by Clarabel (SCS above)")
    ap.add_argument("--cvxpy-max", type=int, default=200, help="largest d solved by CVXPY (no reference above)")
    ap.add_argument("--one", nargs=2, metavar=("MODEL", "D"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:  # a subprocess: one fwmodel solve with the fwmodel on PYTHONPATH
        print(json.dumps(solve_fwmodel(args.one[0], int(args.one[1]), args.max_iter)))
        return
    print(f"# {platform.node()} python {platform.python_version()}; load {os.getloadavg()[0]:.2f}; "
          f"OMP/OPENBLAS threads {os.environ.get('OMP_NUM_THREADS')}/{os.environ.get('OPENBLAS_NUM_THREADS')}")
    print("| model | d | solver | status | iterations | time (s) | objective | rel. error | steps |")
    print("|---|---|---|---|---|---|---|---|---|")
    here = os.path.dirname(os.path.abspath(__file__))
    for d in args.sizes:
        for model in args.models:
            refs = {}
            cvx_model = "affine" if model == "plain" else model
            if d <= min(args.clarabel_max, args.cvxpy_max):
                refs["Clarabel"] = solve_cvxpy(cvx_model, d, "CLARABEL")
            if d <= args.cvxpy_max:
                refs["SCS"] = solve_cvxpy(cvx_model, d, "SCS")
            best = refs.get("Clarabel", refs.get("SCS", {})).get("value")

            def error(value):
                return "n/a" if best is None else f"{(value - best) / abs(best):.1e}"

            for name, r in refs.items():
                print(f"| {model} | {d} | CVXPY+{name} | {r['status']} | | {r['seconds']:.2f} | {r['value']:.6g} | "
                      f"{error(r['value'])} | |", flush=True)
            for spec in args.checkouts:
                label, path = spec.split("=", 1)
                env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
                out = subprocess.run([sys.executable, os.path.join(here, "affine_trace.py"), "--one", model, str(d),
                                      "--max-iter", str(args.max_iter)], env=env, capture_output=True, text=True,
                                     check=True, cwd=os.path.abspath(path))
                r = json.loads(out.stdout.strip().splitlines()[-1])
                if os.path.realpath(r["package"]) != os.path.realpath(path):
                    raise RuntimeError(f"checkout {label}: imported fwmodel from {r['package']}, not {path}")
                steps = " ".join(f"{k} {v}" for k, v in r["steps"].items())
                print(f"| {model} | {d} | fwmodel ({label}) | {r['status']} | {r['iterations']} | {r['seconds']:.2f} | "
                      f"{r['value']:.10g} | {error(r['value'])} | {steps} |", flush=True)


if __name__ == "__main__":
    main()
