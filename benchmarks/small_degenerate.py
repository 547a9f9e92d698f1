"""Small degenerate models at default options against CVXPY + Clarabel: iterations, time and error.

Three families, each a few variables, that Clarabel solves in well under 0.1 s:

1. an L1 ball, a halfspace near its best vertex (a thin feasible sliver) and an L2 ball that contains the
   L1 ball (R = 1: redundant), or only the optimal region (R = 0.99999), or nothing (the bare model);
2. feasible sets that are a single point: ``X >> 0, trace(X) <= 0.2, X[0, 0] == 0.2`` (and variants), and
   ``sum_squares(x - 1) <= 0.04, x[0] == 1.2`` (a ball tangent to a hyperplane);
3. a small positive bound on a PSD diagonal: ``X >> 0, diag(X) <= d`` with d_0 = 0.1 .. 1e-4 pulled
   toward 0 by the objective (``psd_zero_diagonal.py --small``'s model).

Error: ``|f - f*| / max(1, |f*|)`` against Clarabel's f* (for the tangent ball, whose Clarabel answer is
"optimal_inaccurate", against the value at the only feasible point).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/small_degenerate.py
    PYTHONPATH=. ... python benchmarks/small_degenerate.py --compare <checkout of another version>

``--compare`` solves each fwmodel model again in a subprocess importing fwmodel from the given directory
(another version of the code), interleaved with this one, and prints both side by side.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))


def _l1_halfspace(m, R):
    rng = np.random.default_rng(30)
    n = 10
    A, b, c0 = rng.standard_normal((8, n)), rng.standard_normal(8), rng.standard_normal(n)
    x = m.Variable(n)
    cons = [m.norm1(x) <= 1, c0 @ x >= np.abs(c0).max() - 1e-4] + ([m.norm(x, 2) <= R] if R else [])
    return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), cons)


def _psd_point(m, case):
    S = np.random.default_rng(19).standard_normal((5, 5))
    S = S + S.T
    X = m.Variable((5, 5), PSD=True)
    cons = {"eq": [m.trace(X) <= 0.2, X[0, 0] == 0.2],
            "ge": [m.trace(X) <= 0.2, X[0, 0] >= 0.2],
            "two": [m.trace(X) <= 0.5, X[0, 0] >= 0.2, X[2, 2] == 0.3]}[case]
    return m.Problem(m.Minimize(m.sum_squares(X - S)), cons)


def _tangent(m, _):
    c = np.random.default_rng(3).standard_normal(5)
    x = m.Variable(5)
    return m.Problem(m.Minimize(c @ x + m.sum_squares(x)), [m.sum_squares(x - 1) <= 0.04, x[0] == 1.2])


def _tangent_value():
    c = np.random.default_rng(3).standard_normal(5)
    point = np.array([1.2, 1, 1, 1, 1])
    return float(c @ point + point @ point)


def _psd_small(m, d0):
    sys.path.insert(0, HERE)
    from psd_zero_diagonal import build
    return build(m, "bound", 6, [0], d0, seed=6)


MODELS = [  # (label, builder, argument)
    ("L1 + halfspace (bare)", _l1_halfspace, None),
    ("L1 + halfspace + L2 R=1 (contains L1)", _l1_halfspace, 1.0),
    ("L1 + halfspace + L2 R=0.99999", _l1_halfspace, 0.99999),
    ("PSD trace<=0.2, X00==0.2", _psd_point, "eq"),
    ("PSD trace<=0.2, X00>=0.2", _psd_point, "ge"),
    ("PSD trace<=0.5, X00>=0.2, X22==0.3", _psd_point, "two"),
    ("ball tangent to x0 == 1.2", _tangent, None),
    ("PSD diag <= d, d0=0.1", _psd_small, 0.1),
    ("PSD diag <= d, d0=1e-2", _psd_small, 1e-2),
    ("PSD diag <= d, d0=1e-3", _psd_small, 1e-3),
    ("PSD diag <= d, d0=1e-4", _psd_small, 1e-4),
]


def solve_fm(k):
    import fwmodel as fm
    label, builder, arg = MODELS[k]
    prob = builder(fm, arg)
    t = time.perf_counter()
    prob.solve()
    return dict(status=prob.status, iterations=prob.stats.iterations, time=time.perf_counter() - t,
                value=prob.value)


def solve_ref(k):
    import cvxpy as cp
    label, builder, arg = MODELS[k]
    prob = builder(cp, arg)
    t = time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    value = prob.value if builder is not _tangent else _tangent_value()
    return dict(status=prob.status, time=time.perf_counter() - t, value=value)


def _other(directory, k):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(directory))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(k)], env=env, cwd=directory,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cell(r, ref):
    err = abs(r["value"] - ref["value"]) / max(1.0, abs(ref["value"])) if np.isfinite(ref["value"]) else np.nan
    return f"{r['status']:>9s} {r['iterations']:6d} {r['time']:6.2f} {err:8.1e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", help="a directory holding another version of fwmodel (solved side by side)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(solve_fm(args.one)))
        return
    head = f"{'model':40s} {'Clarabel':>22s} | {'status':>9s} {'iters':>6s} {'time':>6s} {'error':>8s}"
    print(head + (" | other version" if args.compare else ""))
    for k, (label, _, _) in enumerate(MODELS):
        ref = solve_ref(k)
        other = _other(args.compare, k) if args.compare else None
        mine = solve_fm(k)
        line = f"{label:40s} {ref['status'][:8]:>8s} {ref['value']:8.5g} {ref['time']:4.2f} | {_cell(mine, ref)}"
        if other is not None:
            line += f" | {_cell(other, ref)}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
