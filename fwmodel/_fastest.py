"""Pick, once per size class, the faster of two equivalent NumPy routines.

A threaded BLAS call on a small shared machine can be 10x slower than a
single-threaded einsum (measured: a 1000 x 1000 gemv on 2 busy cores), while
a single-threaded BLAS is 2-3x faster than einsum (measured: a 500 x 500
gemv, 0.042 vs 0.14 ms). Which one wins depends on the BLAS threads and the
load, so the first call of each size class (powers of two of the number of
entries) times both, three times each, and the faster serves the rest of
the process. Used by the trace-norm Lanczos products and the engine's inner
products.

While a solve holds the BLAS to one thread (the ``threads=1`` default,
:mod:`fwmodel.engine.threads`), the BLAS routine is used without timing:
single-threaded it is the faster one, and a choice made by a clock would
make the rounding, hence the iterates, differ from one process to the next
(einsum and the BLAS sum in different orders).
"""
from __future__ import annotations

import time

from ._shared_setting import SharedSetting

#: whether some block of :func:`single_threaded_blas` is running (in any thread); a list read by FasterOf
_single_threaded_blas = [False]


def _set_flag(on):
    previous, _single_threaded_blas[0] = _single_threaded_blas[0], on
    return previous


def _put_flag_back(previous):
    _single_threaded_blas[0] = previous


#: the flag is counted over the blocks running, not saved and restored by each: with two solves in two
#: threads, A starting, B starting, A ending then B, a saved flag stayed on for the rest of the process
_FLAG = SharedSetting(_set_flag, _put_flag_back, combine=any)


def single_threaded_blas():
    """Within this block :class:`FasterOf` calls its BLAS routine (the second) without timing."""
    return _FLAG.hold(True)


class FasterOf:
    """``FasterOf(einsum_routine, blas_routine)(size, *args)`` calls whichever timed faster for that size class.

    Inside :func:`single_threaded_blas` it always calls ``blas_routine``.
    """

    def __init__(self, first, second):
        self.candidates = (first, second)
        self.choice = {}  # size class -> routine

    def __call__(self, size, *args):
        if _single_threaded_blas[0]:
            return self.candidates[1](*args)
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
