"""Vertex steps on the K-sparse polytope: pairwise (the set's choice under ``step="auto"``) against BPCG and away steps.

``fm.KSparsePolytope(x, k, c)`` (``||x||_inf <= c``, ``||x||_1 <= k c``) has
no projection, so every solve moves its block by vertex steps. The models:
least squares, logistic regression and projections over the polytope, with
and without equality rows, a linear objective with rows, the polytope next
to a second set on the same x (two tied copies), and the K-sparse models of
``benchmarks/trust_fuzz.py`` that took the most iterations (by number, as
``--only`` there). Each is solved with the default options three ways:
``step="auto"`` as it is (pairwise on this set,
``KSparsePolytope.auto_active_set_step``), "auto" with BPCG restored (the
engine's default for other polytopes, by patching that method), and
``step="away"`` (paper Alg. 1). Iterations, best time of ``--repeat``, and
the difference to Clarabel's value relative to max(|f*|, S_f / 100), as
benchmarks/zoo.py.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/ksparse_steps.py --repeat 1
"""
import argparse
import os
import sys

import numpy as np

import fwmodel as fm
from fwmodel.sets.ksparse import KSparsePolytope

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_time, bpcg  # noqa: E402

try:
    import cvxpy as cp
except ImportError:  # the reference column is then left out
    cp = None


def regression(m, n, k, c, seed, rows=0, objective="ls", second=None):
    """(title, fwmodel builder, CVXPY builder or None): an objective over KSparsePolytope(x, k, c), ``rows``
    equality rows through a point of the polytope, ``second``: "l2" for an L2 ball on x too (two copies)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    truth = np.zeros(n)
    truth[rng.choice(n, 2 * k, replace=False)] = rng.uniform(-2.0, 2.0, 2 * k) * c
    b = A @ truth + 0.1 * rng.standard_normal(m)
    E = rng.standard_normal((rows, n))
    point = 0.3 * np.clip(truth, -c, c)  # in the polytope (|point| <= 0.3 c, ||point||_1 <= 0.6 k c)
    target = rng.standard_normal(n) * c
    cost = rng.standard_normal(n)
    radius2 = 0.8 * c * np.sqrt(k)

    def objective_of(lib, v):
        if objective == "ls":
            return lib.Minimize(lib.sum_squares(A @ v - b))
        if objective == "logistic":
            labels = np.sign(b)
            return lib.Minimize(lib.sum(lib.logistic(-lib.multiply(labels, A @ v))))
        if objective == "proj":
            return lib.Minimize(lib.sum_squares(v - target))
        return lib.Minimize(cost @ v)  # "linear"

    def fw():
        x = fm.Variable(n)
        cons = [fm.KSparsePolytope(x, k, c)]
        if rows:
            cons.append(E @ x == E @ point)
        if second == "l2":
            cons.append(fm.norm(x, 2) <= radius2)
        return fm.Problem(objective_of(fm, x), cons)

    def cvx():
        z = cp.Variable(n)
        cons = [cp.norm_inf(z) <= c, cp.norm1(z) <= k * c]
        if rows:
            cons.append(E @ z == E @ point)
        if second == "l2":
            cons.append(cp.norm(z, 2) <= radius2)
        return cp.Problem(objective_of(cp, z), cons)

    shape = f"{m}x{n}" if objective in ("ls", "logistic") else f"n = {n}"
    extra = (f", {rows} rows" if rows else "") + (", L2 ball copy" if second else "")
    return f"{objective} {shape}, k = {k}, c = {c}{extra} (seed {seed})", fw, cvx


def fuzz_model(index):
    """(title, fwmodel builder, None): model ``index`` of benchmarks/trust_fuzz.py (its own cross-check is there)."""
    import trust_fuzz

    model = trust_fuzz.make_model(index, 20261126)

    def fw():
        obj, cons, _ = model.build("fm", model.s, model.s_obj)
        return fm.Problem(obj, cons)

    return f"trust_fuzz [{index}]: {model.desc}", fw, None


def models():
    out = [regression(100, 60, 5, 0.3, 0), regression(80, 200, 10, 0.2, 1), regression(300, 100, 3, 0.5, 2),
           regression(200, 50, 4, 0.3, 5, objective="logistic"), regression(0, 60, 8, 0.4, 7, objective="proj"),
           regression(100, 60, 5, 0.3, 3, rows=3), regression(80, 200, 10, 0.2, 4, rows=5),
           regression(200, 50, 4, 0.3, 6, rows=2, objective="logistic"),
           regression(0, 25, 8, 0.4, 8, rows=3, objective="proj"),
           regression(0, 40, 5, 0.5, 9, rows=4, objective="linear"),
           regression(100, 60, 5, 0.3, 10, second="l2")]
    out += [fuzz_model(i) for i in (122, 1530, 380, 196, 387, 359)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print("| model | pairwise (auto): iterations, time | BPCG: iterations, time | away: iterations, time "
          "| diff to Clarabel: pairwise / BPCG / away |")
    print("|---|---|---|---|---|")
    totals = np.zeros(3, dtype=int)
    for title, fw, cvx in models():
        ref = None
        if cp is not None and cvx is not None:
            prob = cvx()
            prob.solve(solver="CLARABEL")
            ref = prob.value
        cells, diffs = [], []
        for j, label in enumerate(("pairwise", "bpcg", "away")):
            def run():
                prob = fw()
                if label == "bpcg":
                    with bpcg(KSparsePolytope):
                        prob.solve()
                elif label == "away":
                    prob.solve(step="away")
                else:
                    prob.solve()
                return prob
            t, prob = best_time(run, args.repeat)
            status = "" if prob.status == "optimal" else f" ({prob.status})"
            cells.append(f"{prob.stats.iterations}, {t:.3f} s{status}")
            totals[j] += prob.stats.iterations
            diffs.append("-" if ref is None else
                         f"{abs(prob.value - ref) / max(abs(ref), prob.stats.objective_scale / 100):.1e}")
        print(f"| {title} | {cells[0]} | {cells[1]} | {cells[2]} | {' / '.join(diffs)} |", flush=True)
    print(f"| total iterations | {totals[0]} | {totals[1]} | {totals[2]} | |")


if __name__ == "__main__":
    main()
