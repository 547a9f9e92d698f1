"""Inner products and norms for the engine's hot path.

``np.dot`` on long vectors goes to the BLAS, which on small shared machines
may wake several threads for a memory-bound reduction: measured on a 2-core
machine, a 20,000-entry ``np.dot`` took milliseconds instead of
microseconds while other processes were busy. ``np.einsum`` with
``optimize=False`` reduces in a single thread without that cost, but a
single-threaded BLAS is 2-3x faster than it on long vectors. Which one wins
depends on the BLAS threads and the load, so the first inner product of
each size class (powers of two of the length) times both, three times each,
and keeps the faster for the rest of the process.
"""
from __future__ import annotations

import math
import time

import numpy as np

#: below this length the einsum reduction is always used (timing would cost more than it saves)
_TUNE_MIN_SIZE = 1 << 14
_DOT_CHOICE = {}


def _einsum_dot(a, b):
    return float(np.einsum("i,i->", a, b, optimize=False))


def _blas_dot(a, b):
    return float(np.dot(a, b))


def dot(a, b):
    """<a, b> for 1-D float arrays."""
    if a.size < _TUNE_MIN_SIZE:
        return _einsum_dot(a, b)
    key = a.size.bit_length()
    choice = _DOT_CHOICE.get(key)
    if choice is None:
        timings = []
        for fn in (_einsum_dot, _blas_dot):
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                fn(a, b)
                best = min(best, time.perf_counter() - t0)
            timings.append((best, fn))
        choice = min(timings, key=lambda item: item[0])[1]
        _DOT_CHOICE[key] = choice
    return choice(a, b)


def norm(a):
    """||a||_2 for a 1-D float array."""
    return math.sqrt(dot(a, a))
