"""How far "optimal" lands from Clarabel's optimum, relative to |f*|, where the sets are loose next to f's values.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/gap_scale.py --seeds 40

Test (1) of the stopping rule asks the FW gap for ``tol`` of the objective's range over the sets (S_f,
fwmodel/engine/stopping.py); a loose set (a box much larger than where f's values lie) makes S_f many
times |f*|, and "optimal" could then be far from f* relative to |f*|. Families, each against CVXPY + Clarabel:

- ``box``: random box QPs ``sum_squares(A x - b) + 0.1 c'x`` (or ``c'x``) over ``0 <= x <= 1`` with a few
  equality and inequality rows through a point of the box (n = 20..30), seeds 0..N-1 and 103
  (f* = -0.23 with S_f = 117 there);
- ``hugeb``: ``sum_squares(x - 1e6 x0)`` over ``0 <= x <= U`` with rows whose right-hand sides are ~1e6
  (f* ~ 2e5, f at the starting point ~ 5e12, S_f ~ 1e13..1e16), U = 2e6, 1e7, 1e9, with and without
  inequality rows, in units 1 and 1e-3 (data and variable scaled);
- ``logistic``: ``sum(logistic(100 A x))`` over ``abs(x) <= 1`` (f* ~ 4e-9: negligible next to f's
  values at the points the solve visits, 4.16 at the start).

Prints one line per model and, per family, the number of "optimal" answers further than 1e-3 of |f*| from
Clarabel's value and the total iterations.
"""
import argparse
import time
import warnings

import numpy as np

import fwmodel as fm


def rows_data(rng):
    """The random data of the box family, drawn from ``rng`` in this order (benchmarks/face_gating.py's
    families draw theirs the same way): ``(n, A, bb, E, G, c, lin)``, n = 20..30, the objective
    ``sum_squares(A x - bb) + 0.1 c'x`` or, with ``lin`` (30 %), ``c'x`` with c rounded to integers, and
    up to 9 equality rows ``E`` (30 %: the first repeated) and 9 inequality rows ``G``."""
    n = int(rng.integers(20, 31))
    r = int(rng.integers(1, n + 3)) if rng.random() < 0.5 else 2
    A = rng.standard_normal((r, n))
    bb = rng.standard_normal(r)
    me, mi = int(rng.integers(0, 10)), int(rng.integers(0, 10))
    E, G, c = rng.standard_normal((me, n)), rng.standard_normal((mi, n)), rng.standard_normal(n)
    if rng.random() < 0.3 and me > 1:
        E[1] = E[0]  # a repeated row
    lin = rng.random() < 0.3
    if lin:
        c = np.round(c)
    return n, A, bb, E, G, c, lin


def rows_objective(L, x, A, bb, c, lin):
    """:func:`rows_data`'s objective in the modeling language ``L`` (fwmodel or CVXPY)."""
    return (c @ x) if lin else (L.sum_squares(A @ x - bb) + 0.1 * c @ x)


def box_model(seed):
    """The box family (n = 20..30): least squares plus a linear term, or a linear objective, with rows
    through a point of the box (:func:`rows_data`). Returns ``build(L)``, the problem in ``L`` (fm or cp)."""
    rng = np.random.default_rng(seed)
    n, A, bb, E, G, c, lin = rows_data(rng)
    me, mi = len(E), len(G)
    xf = rng.uniform(0, 1, n)

    def build(L):
        x = L.Variable(n)
        obj = rows_objective(L, x, A, bb, c, lin)
        cons = [x >= 0, x <= 1] + ([E @ x == E @ xf] if me else []) + ([G @ x <= G @ xf + 0.05] if mi else [])
        return L.Problem(L.Minimize(obj), cons)
    return build


def hugeb_model(U, ineq, unit):
    """Rows with right-hand sides ~1e6 and a loose box x <= U; data and variable times ``unit``."""
    rng = np.random.default_rng(1)
    n = 15
    rng.standard_normal((10, n)), rng.standard_normal(10)  # draws kept: the same E, G, x0 as the first repro
    E, G = rng.standard_normal((3, n)), rng.standard_normal((4, n))
    x0 = rng.uniform(0, 1, n)
    e, g = E @ x0, G @ x0 + 0.1

    def build(L):
        x = L.Variable(n)
        cons = [x >= 0, x <= U * unit, E @ x == (1e6 * e + 1e3) * unit] + ([G @ x <= 1e6 * g * unit] if ineq else [])
        return L.Problem(L.Minimize(L.sum_squares(x - 1e6 * unit * x0)), cons)
    return build


def logistic_model():
    rng = np.random.default_rng(3)
    n = 4
    A = rng.standard_normal((6, n))

    def build(L):
        x = L.Variable(n)
        return L.Problem(L.Minimize(L.sum(L.logistic(100 * (A @ x)))), [L.abs(x) <= 1])
    return build


def run(name, build):
    import cvxpy as cp

    pc = build(cp)
    try:
        pc.solve(solver="CLARABEL")
    except Exception as exc:  # noqa: BLE001 - a reference failure skips the model
        print(f"{name}: clarabel failed ({type(exc).__name__})")
        return None
    if pc.status != "optimal":
        print(f"{name}: clarabel {pc.status}")
        return None
    p = build(fm)
    t0 = time.perf_counter()
    v = p.solve()
    t = time.perf_counter() - t0
    fstar = float(pc.value)
    rel = abs(v - fstar) / abs(fstar) if fstar != 0 else abs(v)
    print(f"{name}: {p.status} f={v:.8g} f*={fstar:.8g} rel_fstar={rel:.2g} iterations={p.stats.iterations} "
          f"S_f={p.stats.objective_scale:.3g} bound={p.stats.suboptimality_bound:.3g} t={t:.2f}", flush=True)
    return p.status, rel, p.stats.iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40, help="box models: seeds 0..N-1 (and 103)")
    parser.add_argument("--only", nargs="*", default=["box", "hugeb", "logistic"])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    families = {
        "box": [(f"box {s}", box_model(s)) for s in list(range(args.seeds)) + [103]],
        "hugeb": [(f"hugeb U={U:g} ineq={ineq} unit={unit:g}", hugeb_model(U, ineq, unit))
                  for U in (2e6, 1e7, 1e9) for ineq in (True, False) for unit in (1.0, 1e-3)],
        "logistic": [("logistic", logistic_model())],
    }
    for fam in args.only:
        results = [res for name, build in families[fam] if (res := run(name, build)) is not None]
        off = sum(1 for status, rel, _ in results if status == "optimal" and rel > 1e-3)
        print(f"== {fam}: {len(results)} models, {sum(s == 'optimal' for s, _, _ in results)} optimal, "
              f"{off} optimal off by more than 1e-3 of |f*|, "
              f"{sum(s == 'max_iter' for s, _, _ in results)} max_iter, iterations {sum(i for _, _, i in results)}",
              flush=True)


if __name__ == "__main__":
    main()
