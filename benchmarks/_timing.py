"""Timing helper shared by the benchmark scripts (imported from the scripts' own folder)."""
import time

import numpy as np


def best_times(fns, repeat):
    """Best time of each callable; the runs are interleaved so that a busy
    machine slows all of them alike."""
    for fn in fns:
        fn()  # warm up (allocations, caches, compilation)
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best
