"""After the check found a warm-start miss: what should ``CheckedLmo.tighten`` do at the default ``lmo_tol``?

The case of benchmarks/lanczos_warm_miss.py (12 warm-start vectors, exact
eigenvectors of D; D's top eigenvector new, orthogonal to them, above by a
relative ``gap``). The check (``CheckedLmo.exact``) runs once, then the
solve's warm LMO is called again on the same D after one of: ``nothing``
(the tolerance only, already the trusted one), ``cold`` (the warm start
forgotten: the next call starts from a random vector), ``inject`` (the
vector the check found added to the warm start: ``CheckedLmo.tighten``).
Printed per size: misses of that next call (against ``numpy.linalg.eigvalsh``),
its Lanczos products and its time.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/lanczos_tighten.py
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout's fwmodel
sys.path.insert(0, HERE)
import fwmodel as fm  # noqa: E402
from fwmodel.sets.trace_norm import CheckedLmo  # noqa: E402
from lanczos_warm_miss import case  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[160, 400, 1000])
    p.add_argument("--gap", type=float, default=1e-4)
    p.add_argument("--seeds", type=int, default=8)
    args = p.parse_args(argv)
    print("| after the check | n | misses of the next call | Lanczos products | ms |")
    print("|---|---|---|---|---|")
    for mode in ("nothing", "cold", "inject"):
        for n in args.sizes:
            misses = products = 0
            seconds = 0.0
            for seed in range(args.seeds):
                D, warm = case(n, args.gap, seed)
                ball = fm.TraceNormBall(fm.Variable((n, n)), radius=1.0)
                lmo = ball.lmo_for_solve()
                assert isinstance(lmo, CheckedLmo)
                lmo._warm = warm
                d = D.ravel()
                lmo.exact(d)
                if mode == "cold":
                    lmo._warm.leading, lmo._warm.recent = None, []
                elif mode == "inject":
                    lmo.tighten()
                t0 = time.perf_counter()
                value = lmo(d).dot(d)
                seconds += time.perf_counter() - t0
                products += ball.last_matvecs
                best = -np.abs(np.linalg.eigvalsh(D)).max()
                misses += (value - best) / abs(best) > 0.5 * args.gap / (1 + args.gap)
            print(f"| {mode} | {n} | {misses}/{args.seeds} | {products / args.seeds:.0f} | "
                  f"{1e3 * seconds / args.seeds:.1f} |")


if __name__ == "__main__":
    main()
