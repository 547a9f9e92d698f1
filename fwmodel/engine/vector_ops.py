"""Inner products and norms for the engine's hot path.

``np.dot`` on long vectors goes to the BLAS, which on small shared machines
may wake several threads for a memory-bound reduction (measured: a
20,000-entry ``np.dot`` took milliseconds instead of microseconds while
other processes were busy), while a single-threaded BLAS beats the
single-threaded ``np.einsum`` reduction. Long vectors use whichever timed
faster (:class:`fwmodel._fastest.FasterOf`); short ones always use einsum.
"""
from __future__ import annotations

import math

import numpy as np

from .._fastest import FasterOf
from .._kernels import einsum_plain

#: below this length the einsum reduction is always used (timing would cost more than it saves)
_TUNE_MIN_SIZE = 1 << 14


def _einsum_dot(a, b):
    return float(einsum_plain("i,i->", a, b))


def _blas_dot(a, b):
    return float(np.dot(a, b))


_faster_dot = FasterOf(_einsum_dot, _blas_dot)


def _is_broadcast(a):
    """A read-only view repeating one value (``b = 0`` without memory, consistency.py): the BLAS would copy it."""
    return a.ndim == 1 and a.size > 1 and a.strides[0] == 0


def dot(a, b):
    """<a, b> for 1-D float arrays."""
    if a.size < _TUNE_MIN_SIZE and a.strides[0] and b.strides[0]:
        # the common case first (short, neither a broadcast view): ~15 calls per iteration on small models
        return float(einsum_plain("i,i->", a, b))
    if _is_broadcast(a) or _is_broadcast(b):
        if _is_broadcast(a) and _is_broadcast(b):
            return float(a[0]) * float(b[0]) * a.size
        constant, other = (a, b) if _is_broadcast(a) else (b, a)
        return float(constant[0]) * float(other.sum())
    return _faster_dot(a.size, a, b)  # a short pair has returned above, broadcast or not


def norm(a):
    """||a||_2 for a 1-D float array."""
    if _is_broadcast(a):
        return abs(float(a[0])) * math.sqrt(a.size)
    if a.size < _TUNE_MIN_SIZE:
        return math.sqrt(float(einsum_plain("i,i->", a, a)))
    return math.sqrt(_faster_dot(a.size, a, a))
