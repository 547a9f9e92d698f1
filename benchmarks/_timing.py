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


def best_time(solve, repeat):
    """(best time, last result) of ``repeat`` calls of ``solve`` (no warm-up: the first call counts too)."""
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = solve()
        best = min(best, time.perf_counter() - t)
    return best, out
