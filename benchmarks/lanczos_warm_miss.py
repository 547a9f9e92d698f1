"""Can the warm-started trace-norm LMO stop on an eigenpair that is not the extreme one?

The adversarial case: the LMO's warm start holds 12 earlier LMO vectors,
each an exact eigenvector of the new direction D (values 1.0 down to 0.8,
the first the last leading vector), while D's top eigenvector is new,
orthogonal to all of them, with the value 1 + gap; the rest of the spectrum
is uniform in [-0.5, 0.5]. The LMO at the default ``lmo_tol`` (1e-6) from
that warm start (``TraceNormBall._atom``, Lanczos path: n > 150) is
compared with ``numpy.linalg.eigh`` and with the check the engine runs for
every Lanczos-sized ball (``CheckedLmo.exact``: Lanczos at 1e-6 from a random
start). Printed per size and gap: the worst relative excess of the LMO's
value ``<D, S>`` over the exact minimum ``-sigma_1(D)`` over the seeds.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/lanczos_warm_miss.py
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402
from fwmodel.sets.trace_norm import CheckedLmo, LanczosWarmStart, TraceNormBall  # noqa: E402


def case(n, gap, seed, psd=False):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    values = rng.uniform(-0.5, 0.5, n)
    values[:12] = np.linspace(1.0, 0.8, 12)  # the warm start's span: exact eigenvectors
    values[12] = 1.0 + gap  # the new top, orthogonal to it
    D = (-1.0 if psd else 1.0) * (Q * values) @ Q.T  # the PSD ball's LMO seeks the most negative value
    D = 0.5 * (D + D.T)
    warm = LanczosWarmStart()
    for j in range(12):
        warm.remember(Q[:, j])
    warm.leading = Q[:, 0]
    return D, warm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[160, 400, 1000])
    p.add_argument("--gaps", type=float, nargs="*", default=[1e-3, 1e-4, 1e-5])
    p.add_argument("--seeds", type=int, default=4)
    args = p.parse_args(argv)
    print("| psd | n | gap | warm start: worst relative excess | misses | random start (CheckedLmo.exact) |")
    print("|---|---|---|---|---|---|")
    for psd in (False, True):
        for n in args.sizes:
            for gap in args.gaps:
                warm_worst = cold_worst = 0.0
                misses = 0
                for seed in range(args.seeds):
                    D, warm = case(n, gap, seed, psd)
                    ball = TraceNormBall(fm.Variable((n, n)), radius=1.0, psd=psd)
                    w = np.linalg.eigvalsh(D)
                    best = min(w[0], 0.0) if psd else -max(w[-1], -w[0])
                    warm_err = (ball._atom(D.ravel(), warm).dot(D.ravel()) - best) / abs(best)
                    cold_err = (CheckedLmo(ball).exact(D.ravel()).dot(D.ravel()) - best) / abs(best)
                    misses += warm_err > 0.5 * gap / (1 + gap)
                    warm_worst, cold_worst = max(warm_worst, warm_err), max(cold_worst, cold_err)
                print(f"| {psd} | {n} | {gap:g} | {warm_worst:.1e} | {misses}/{args.seeds} | {cold_worst:.1e} |")


if __name__ == "__main__":
    main()
