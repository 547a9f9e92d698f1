"""What the check of the warm-started trace-norm LMO costs on the paper's covariance problem.

Solves the Sec. 5 covariance problem (``fwmodel.datasets.sparse_low_rank_covariance``,
threshold 0.9, one L1 ball and one trace-norm ball, ``fwmodel.experiments.build_problem``)
with default options and prints status, iterations, objective, wall time, and
the calls and seconds of the check's cold-start LMO (``CheckedLmo.exact`` after
the solve's first LMO call, which the setup's call is; 0 where the checkout has
no such class or the solve never called it) and a hash of the returned point. Run it
with this checkout and with main (``PYTHONPATH``) in one shell loop to compare:

    for i in 1 2; do for tree in MAIN .; do PYTHONPATH=$tree OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/lanczos_check_cost.py --size 1000; done; done
"""
import argparse
import hashlib
import os
import time

import numpy as np

import fwmodel as fm
from fwmodel.datasets import sparse_low_rank_covariance
from fwmodel.experiments import build_problem


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1000)
    p.add_argument("--options", default="", help="solve options, as Python keyword arguments")
    args = p.parse_args(argv)
    spent = {"calls": 0, "seconds": 0.0}
    try:
        from fwmodel.sets.trace_norm import CheckedLmo
        exact = CheckedLmo.exact

        def timed_exact(self, flat_direction):
            if self._warm.leading is None and not self._warm.recent:
                return exact(self, flat_direction)  # the setup's first call: the solve's own LMO call
            t0 = time.perf_counter()
            try:
                return exact(self, flat_direction)
            finally:
                spent["calls"] += 1
                spent["seconds"] += time.perf_counter() - t0

        CheckedLmo.exact = timed_exact
    except ImportError:
        pass
    options = eval(f"dict({args.options})")
    prob, X = build_problem(sparse_low_rank_covariance(args.size, threshold=0.9))
    t0 = time.perf_counter()
    prob.solve(**options)
    wall = time.perf_counter() - t0
    tree = os.path.dirname(os.path.dirname(os.path.abspath(fm.__file__)))
    print(f"{os.path.basename(tree)} d={args.size} {prob.status} it={prob.stats.iterations} f={prob.value!r} "
          f"bound={prob.stats.suboptimality_bound:.3g} wall={wall:.2f}s exact_calls={spent['calls']} "
          f"exact_s={spent['seconds']:.3f} xhash={hashlib.sha1(np.asarray(X.value).tobytes()).hexdigest()[:10]}")


if __name__ == "__main__":
    main()
