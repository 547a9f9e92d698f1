"""Speed of the sorted-breakpoint projections, this checkout against another one, side by side in one process.

The projections (L1 ball: ``project`` and the in-place ``project_flat``;
capped simplex: one group and 1000 groups; the boxed L1 ball with the box
``[-0.5, 0.5]`` and with bounds that differ per entry, some not around 0;
the nonnegative L1 projection of trace-norm eigenvalues) check that their result sums to the radius to
rounding and fall back to an exact path relative to the largest entry
where it does not (``fwmodel/sets/_thresholds.py``). This script times
them on ordinary points (standard normal, the radius a tenth of the L1
norm) at n = 1e3 .. 1e6, interleaving the two versions; ``--before`` is a
checkout of the reference commit (e.g. ``git archive <commit> | tar -x -C DIR``),
loaded under another package name.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/projection_speed.py --before DIR
"""
import argparse
import importlib
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_times  # noqa: E402


def load_as(name, root):
    """The package ``fwmodel`` of the checkout ``root``, imported as ``name``."""
    init = os.path.join(root, "fwmodel", "__init__.py")
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[os.path.dirname(init)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cases(fm, n, rng_seed=0):
    """(label, callable) for one version ``fm`` of the package at size n."""
    rng = np.random.default_rng(rng_seed)
    v = rng.standard_normal(n)
    radius = 0.1 * np.abs(v).sum()
    ball = fm.L1Ball(fm.Variable(n), radius)
    scratch = np.empty(n)
    capped_mod = sys.modules[fm.__name__ + ".sets.capped_simplex"]
    thresholds = sys.modules[fm.__name__ + ".sets.trace_norm"]
    x = fm.Variable(n)
    one = capped_mod.CappedSimplex(fm.Simplex(x, 1.0), fm.Box(x, 0.0, 10.0 / n))
    rows = max(n // 1000, 1)
    X = fm.Variable((rows, n // rows))
    many = capped_mod.CappedSimplex(fm.Simplex(X, 1.0, axis=1), fm.Box(X, 0.0, 10.0 / (n // rows)))
    boxed_mod = sys.modules[fm.__name__ + ".sets.boxed_l1"]
    z = fm.Variable(n)
    boxed = boxed_mod.BoxedL1Ball(fm.L1Ball(z, radius), fm.Box(z, -0.5, 0.5))
    w = fm.Variable(n)
    lower = -rng.uniform(0.0, 1.0, n)
    lower[::10] = 0.01  # a tenth of the entries kept away from 0
    mixed = boxed_mod.BoxedL1Ball(fm.L1Ball(w, radius), fm.Box(w, lower, lower + rng.uniform(0.1, 2.0, n)))

    def in_place():
        np.copyto(scratch, v)
        ball.project_flat(scratch, out=scratch)

    return [("L1Ball.project", lambda: ball.project(v)),
            ("L1Ball.project_flat(out=)", in_place),
            ("CappedSimplex 1 group", lambda: one.project_flat(v)),
            (f"CappedSimplex {rows} groups", lambda: many.project_flat(v)),
            ("BoxedL1Ball box [-0.5, 0.5]", lambda: boxed.project_flat(v)),
            ("BoxedL1Ball bounds per entry", lambda: mixed.project_flat(v)),
            ("trace-norm values (nonnegative L1)", lambda: thresholds._project_nonnegative_l1(np.abs(v), radius))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a checkout of the reference commit")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    after = importlib.import_module("fwmodel")
    before = load_as("fwmodel_before", args.before)
    print(f"{'n':>9}  {'projection':<36} {'before (s)':>11} {'after (s)':>11} {'after/before':>12}")
    for n in args.sizes:
        old, new = cases(before, n), cases(after, n)
        repeat = args.repeat if n < 1_000_000 else max(2, args.repeat // 2)
        for (label, f_old), (_, f_new) in zip(old, new):
            t_old, t_new = best_times([f_old, f_new], repeat)
            print(f"{n:>9}  {label:<36} {t_old:>11.2e} {t_new:>11.2e} {t_new / t_old:>12.2f}", flush=True)


if __name__ == "__main__":
    main()
