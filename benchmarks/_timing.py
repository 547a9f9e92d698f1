"""Timing helpers shared by the benchmark scripts (imported from the scripts' own folder), and :func:`bpcg`."""
import time
from contextlib import contextmanager

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


@contextmanager
def bpcg(set_class):
    """Within the block, step="auto" takes BPCG (blended pairwise steps, the engine's default on the other
    polytopes) on the sets of ``set_class`` too, whose ``auto_active_set_step`` names another step kind."""
    original = set_class.auto_active_set_step
    set_class.auto_active_set_step = lambda self: None
    try:
        yield
    finally:
        set_class.auto_active_set_step = original
