"""Pick, once per size class, the faster of two equivalent NumPy routines.

A threaded BLAS call on a small shared machine can be 10x slower than a
single-threaded einsum (measured: a 1000 x 1000 gemv on 2 busy cores), while
a single-threaded BLAS is 2-3x faster than einsum (measured: a 500 x 500
gemv, 0.042 vs 0.14 ms). Which one wins depends on the BLAS threads and the
load, so the first call of each size class (powers of two of the number of
entries) times both, three times each, and the faster serves the rest of
the process. Used by the trace-norm Lanczos products and the engine's inner
products.
"""
from __future__ import annotations

import time


class FasterOf:
    """``FasterOf(a, b)(size, *args)`` calls whichever of ``a`` and ``b`` timed faster for that size class."""

    def __init__(self, first, second):
        self.candidates = (first, second)
        self.choice = {}  # size class -> routine

    def __call__(self, size, *args):
        key = int(size).bit_length()
        fn = self.choice.get(key)
        if fn is None:
            timings = []
            for candidate in self.candidates:
                best = float("inf")
                for _ in range(3):
                    t0 = time.perf_counter()
                    candidate(*args)
                    best = min(best, time.perf_counter() - t0)
                timings.append(best)
            fn = self.candidates[timings.index(min(timings))]
            self.choice[key] = fn
        return fn(*args)
