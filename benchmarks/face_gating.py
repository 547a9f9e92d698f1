"""The face step's "auto" gating against ``face_step=True`` and ``False``, side by side in one process.

Three families of small random models (sizes and data drawn from the seed as below):

* ``ks``: least squares (or, 30 % of seeds, a linear objective) over a K-sparse
  polytope (K = 1..3, n = 20..30) with up to 9 equality rows: the face step pays;
* ``box``: the same objectives over the box [0, 1]^n with equality and
  inequality rows (benchmarks/gap_scale.py's box family): it pays on most;
* ``lp``: degenerate LPs over the simplex with integer rows: the step on the
  simplex's positive entries pays (before it read simplices, its moves on the
  slacks' box were rounding: the sweep left x at that face's minimizer).

Per family: total iterations and seconds of ``prob.solve(face_step=...)`` with
"auto", True and False, options interleaved model by model.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/face_gating.py
"""
import argparse
import time
import warnings

import numpy as np

import fwmodel as fm
from gap_scale import box_model, rows_data, rows_objective  # (benchmarks/: the script's own folder)

OPTIONS = ("auto", True, False)


def _ks_model(seed):
    """The ``ks`` family: benchmarks/gap_scale.py's box-family data (:func:`gap_scale.rows_data`) over a
    K-sparse polytope, with the equality rows through one of its points."""
    rng = np.random.default_rng(seed)
    n, A, bb, E, G, c, lin = rows_data(rng)
    k = int(rng.integers(1, 4))
    xf = np.zeros(n)
    xf[:k] = 0.5
    x = fm.Variable(n)
    obj = rows_objective(fm, x, A, bb, c, lin)
    cons = [fm.KSparsePolytope(x, k, 1.0)] + ([E @ x == E @ xf] if len(E) else [])
    return fm.Problem(fm.Minimize(obj), cons)


def lp_model(seed, L=fm):
    """The ``lp`` family in the modeling language ``L`` (fwmodel or CVXPY): a degenerate LP over the simplex
    with integer rows through a point of it."""
    rng = np.random.default_rng(seed)
    n, me, mi = int(rng.integers(10, 31)), int(rng.integers(1, 8)), int(rng.integers(0, 8))
    c = rng.integers(-2, 3, n).astype(float)
    E, G = rng.integers(-2, 3, (me, n)).astype(float), rng.integers(-2, 3, (mi, n)).astype(float)
    rng.integers(0, 2, n), rng.random(n)  # (draws of an earlier version of the generator, kept for the seeds)
    xf = rng.dirichlet(np.ones(n))
    x = L.Variable(n)
    return L.Problem(L.Minimize(c @ x), [x >= 0, L.sum(x) == 1, E @ x == E @ xf] + ([G @ x <= G @ xf] if mi else []))


FAMILIES = {"ks": _ks_model, "box": lambda s: box_model(s)(fm), "lp": lp_model}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs=2, default=(100, 120), help="seed range [a, b)")
    ap.add_argument("--lp-seeds", type=int, nargs="*", default=[37, 41, 49, 57])
    ap.add_argument("--families", nargs="*", default=list(FAMILIES))
    ap.add_argument("--max-iter", type=int, default=20000)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for family in args.families:
        seeds = args.lp_seeds if family == "lp" else range(*args.seeds)
        total = {o: [0, 0.0, 0] for o in OPTIONS}
        for seed in seeds:
            line = []
            for option in OPTIONS:
                prob = FAMILIES[family](seed)
                prob.compile()
                start = time.perf_counter()
                prob.solve(face_step=option, max_iter=args.max_iter)
                secs = time.perf_counter() - start
                t = total[option]
                t[0] += prob.stats.iterations
                t[1] += secs
                t[2] += prob.status != "optimal"
                line.append(f"{option!s}: {prob.status} {prob.stats.iterations} it {secs:.2f} s")
            if args.verbose:
                print(f"  {family} {seed}: " + ", ".join(line), flush=True)
        print(f"{family:4s} " + " | ".join(f"{o!s:>5s}: {t[0]:6d} it {t[1]:7.2f} s, {t[2]} not optimal"
                                          for o, t in total.items()), flush=True)


if __name__ == "__main__":
    main()
