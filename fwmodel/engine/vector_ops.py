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


#: entries per chunk of :func:`signed_sum_norm2` (its scratch: a quarter of a megabyte)
_NORM_CHUNK = 1 << 15


def signed_sum_norm2(directions, signs, norm2=None):
    """``||sum_k sign_k d_k||^2`` for equal-size arrays ``directions`` (signs +-1), summed chunk by chunk: no
    array of their size is written (at d = 4000 a fresh 128 MB one costs its page faults), and each chunk's
    sum is formed before it is squared (exact differences, no cancellation). One direction: ``sign^2 ||d||^2``
    (``norm2`` where the caller has ||d||^2)."""
    if len(directions) == 1:
        first = directions[0]
        return signs[0] * signs[0] * (dot(first, first) if norm2 is None else norm2)
    size = directions[0].size
    chunk = np.empty(min(size, _NORM_CHUNK))
    total = 0.0
    for start in range(0, size, _NORM_CHUNK):
        stop = min(start + _NORM_CHUNK, size)
        part = chunk[:stop - start]
        np.multiply(directions[0][start:stop], signs[0], out=part)
        for d, sign in zip(directions[1:], signs[1:]):
            if sign > 0:
                part += d[start:stop]
            else:
                part -= d[start:stop]
        total += dot(part, part)
    return total
