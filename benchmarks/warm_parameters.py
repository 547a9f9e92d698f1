"""Warm starts after a Parameter change against cold starts of the same data.

Three small models, each solved once, then a Parameter changed and the new
data solved twice: ``warm_start=True`` from the first solve's state, and cold
(a fresh copy of the model). Each line: the model, the change, the warm and
cold statuses and iteration counts, and the warm value's relative distance to
the cold one (both at their own ``tol``).

Models (data seeded):
  lsl1       w * sum_squares(A x - b) + c' x, norm1(x) <= r, sum(x) == s (16 x 12)
  portfolio  w * quad_form(x, Sigma) - mu' x, x >= 0, sum(x) == r, F x <= h (20 assets, 2 rows)
  boxqp      w * (x' Q x / 2) + q' x, -r <= x <= r, E x == h (15 x 15, 3 rows)
Changes: the weight w from 1 by ratios 1e-4 .. 1e4 (and the extremes 1e4 -> 1e-4,
1e-4 -> 1e4), the linear coefficients moved by 1 %, 10 %, 100 % of their norm,
the radius r (set size) times 1.1 .. 100 and 0.1, the right-hand sides moved by
1 %, 10 %, 100 %.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/warm_parameters.py
    (--duals-apart K, --scale-apart K: the thresholds to try; --models lsl1,boxqp)
"""
import argparse
import time

import numpy as np

import fwmodel as fm

WEIGHT_RATIOS = (1e-4, 1e-2, 0.1, 1 / 3, 1 / 1.2, 1.2, 3.0, 10.0, 1e2, 1e4)
WEIGHT_PAIRS = ((1e4, 1e-4), (1e2, 1e-2), (1e-4, 1e4))
RADIUS_RATIOS = (1.1, 1.5, 3.0, 10.0, 100.0, 0.5)
MOVES = (0.01, 0.1, 1.0)


def lsl1(seed=26):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((16, 12)), rng.standard_normal(16)
    w = fm.Parameter(nonneg=True, value=1.0)
    c = fm.Parameter(12, value=rng.standard_normal(12))
    r = fm.Parameter(nonneg=True, value=1.0)
    s = fm.Parameter(value=0.2)
    x = fm.Variable(12)
    prob = fm.Problem(fm.Minimize(w * fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= r, fm.sum(x) == s])
    return prob, dict(weight=w, linear=c, radius=r, rhs=s), rng


def portfolio(seed=5):
    rng = np.random.default_rng(seed)
    n = 20
    G = rng.standard_normal((n, n)) / np.sqrt(n)
    Sigma = G @ G.T + 0.05 * np.eye(n)
    F = rng.standard_normal((2, n))
    w = fm.Parameter(nonneg=True, value=1.0)
    mu = fm.Parameter(n, value=0.1 * rng.standard_normal(n))
    r = fm.Parameter(nonneg=True, value=1.0)
    h = fm.Parameter(2, value=F @ np.full(n, 1.0 / n) + 0.05)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(w * fm.quad_form(x, Sigma) - mu @ x), [x >= 0, fm.sum(x) == r, F @ x <= h])
    return prob, dict(weight=w, linear=mu, radius=r, rhs=h), rng


def boxqp(seed=7):
    rng = np.random.default_rng(seed)
    n = 15
    G = rng.standard_normal((n, n))
    Q = G @ G.T / n + 0.1 * np.eye(n)
    E = rng.standard_normal((3, n))
    w = fm.Parameter(nonneg=True, value=1.0)
    q = fm.Parameter(n, value=rng.standard_normal(n))
    r = fm.Parameter(nonneg=True, value=1.0)
    h = fm.Parameter(3, value=E @ rng.uniform(-0.5, 0.5, n))
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(w * (0.5 * fm.quad_form(x, Q)) + q @ x), [x >= -r, x <= r, E @ x == h])
    return prob, dict(weight=w, linear=q, radius=r, rhs=h), rng


MODELS = dict(lsl1=lsl1, portfolio=portfolio, boxqp=boxqp)


def changes():
    """(label, the Parameter's name, its value before (None: as built), a function of (value, rng) giving the new one)."""
    out = [(f"weight 1 -> {k:g}", "weight", None, lambda v, rng, k=k: k) for k in WEIGHT_RATIOS]
    out += [(f"weight {a:g} -> {b:g}", "weight", a, lambda v, rng, b=b: b) for a, b in WEIGHT_PAIRS]
    out += [(f"linear moved {m:g}", "linear", None,
             lambda v, rng, m=m: v + m * np.linalg.norm(v) * _unit(rng.standard_normal(v.shape))) for m in MOVES]
    out += [(f"radius x {k:g}", "radius", None, lambda v, rng, k=k: v * k) for k in RADIUS_RATIOS]
    out += [(f"rhs moved {m:g}", "rhs", None,
             lambda v, rng, m=m: v + m * max(np.linalg.norm(v), 0.1) * _unit(rng.standard_normal(np.shape(v))))
            for m in MOVES]
    return out


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def run_case(model, name, before, new_value, max_iter):
    """(warm status, warm iterations, cold status, cold iterations, |warm - cold| / max(1, |cold|), warm seconds)."""
    prob, params, rng = MODELS[model]()
    p = params[name]
    if before is not None:
        p.value = before
    prob.solve(max_iter=max_iter)
    p.value = new_value(np.asarray(p.value, dtype=float) if np.ndim(p.value) else float(p.value), rng)
    value = p.value
    start = time.perf_counter()
    prob.solve(warm_start=True, max_iter=max_iter)
    seconds = time.perf_counter() - start
    warm = (prob.status, prob.stats.iterations, prob.value)
    cold_prob, cold_params, _ = MODELS[model]()
    if before is not None:
        cold_params[name].value = before
    cold_params[name].value = value
    cold_prob.solve(max_iter=max_iter)
    cold = (cold_prob.status, cold_prob.stats.iterations, cold_prob.value)
    return warm[0], warm[1], cold[0], cold[1], abs(warm[2] - cold[2]) / max(1.0, abs(cold[2])), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--max-iter", type=int, default=10000)
    parser.add_argument("--duals-apart", type=float, default=None, help="warm_start.DUALS_APART to try")
    parser.add_argument("--scale-apart", type=float, default=None, help="compile.WARM_SCALE_APART to try")
    args = parser.parse_args()
    if args.duals_apart is not None:
        from fwmodel.engine import warm_start
        warm_start.DUALS_APART = args.duals_apart
    if args.scale_apart is not None:
        from fwmodel.compiler import compile as compile_module
        compile_module.WARM_SCALE_APART = args.scale_apart
    print(f"{'model':10s} {'change':24s} {'warm':>16s} {'cold':>16s} {'warm/cold':>9s} {'value off':>9s}")
    total_warm = total_cold = 0
    for model in args.models.split(","):
        for label, name, before, new_value in changes():
            ws, wi, cs, ci, off, _ = run_case(model, name, before, new_value, args.max_iter)
            total_warm += wi
            total_cold += ci
            mark = "" if ws == "optimal" and wi <= 3 * ci + 50 else "  <-- slow or not optimal"
            print(f"{model:10s} {label:24s} {ws:>9s} {wi:6d} {cs:>9s} {ci:6d} {wi / max(ci, 1):9.2f} {off:9.1e}{mark}",
                  flush=True)
    print(f"total iterations: warm {total_warm}, cold {total_cold}")


if __name__ == "__main__":
    main()
