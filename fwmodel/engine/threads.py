"""BLAS threads during a solve (the ``threads`` option).

FW-AL's iteration is a sequence of small, memory-bound NumPy calls: matrix-
vector products in the Lanczos LMO, inner products, vector updates. A
multi-threaded BLAS wakes its thread pool for every one of them, and on a
machine whose cores are shared with other processes the threads wait for
each other: measured on a 2-core machine, whole solves of the trace-norm
models were 3-9x slower with the BLAS's default two threads than with one
(benchmarks/RESULTS.md, "BLAS threads"). Large dense factorizations (the
eigendecomposition of a trace-norm projection) gain from threads only on
idle cores.

``threads`` (a solve option, default :data:`DEFAULT_THREADS`):

* a positive integer: the BLAS libraries loaded in the process use at most
  that many threads for the duration of the solve, and their previous
  setting is restored afterwards (``threadpoolctl``);
* ``None``: the BLAS is left as configured (for instance by
  ``OPENBLAS_NUM_THREADS``).

When ``threadpoolctl`` is not installed the option has no effect.
"""
from __future__ import annotations

import contextlib
import functools
import numbers

from .._fastest import single_threaded_blas

#: BLAS threads of a solve unless the ``threads`` option says otherwise
DEFAULT_THREADS = 1


def check_threads(threads):
    """Validate the ``threads`` option (None or a positive integer)."""
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"option threads must be a positive integer or None, got {threads!r}")
    return int(threads)


_controller = []


def _threadpools():
    """threadpoolctl's view of the loaded thread pools, built once (scanning the libraries takes ~1 ms), or None."""
    if not _controller:
        try:
            from threadpoolctl import ThreadpoolController
            _controller.append(ThreadpoolController())
        except Exception:  # not installed, or no readable library: the BLAS stays as configured
            _controller.append(None)
    return _controller[0]


def current_blas_threads():
    """The largest thread count among the loaded BLAS libraries (None when unknown)."""
    pools = _threadpools()
    if pools is None:
        return None
    return max((lib["num_threads"] for lib in pools.info() if lib["user_api"] == "blas"), default=None)


def blas_threads(threads):
    """A context manager limiting the BLAS to ``threads`` threads (None: no change)."""
    threads = check_threads(threads)
    pools = _threadpools() if threads is not None else None
    if pools is None:
        return contextlib.nullcontext()
    limit = pools.limit(limits=threads, user_api="blas")
    if threads != 1:
        return limit
    stack = contextlib.ExitStack()  # one BLAS thread: FasterOf picks the BLAS without a clock (same iterates in every run)
    stack.enter_context(limit)
    stack.enter_context(single_threaded_blas())
    return stack


def with_blas_threads(solver):
    """Decorate a solver so that it accepts ``threads=`` and runs under :func:`blas_threads`.

    The previous thread counts are restored when the solver returns; a Ctrl-C
    that lands during that restore (after the solve finished) does not lose
    the result: the restore is finished and the result returned.
    """

    @functools.wraps(solver)
    def wrapper(*args, threads=DEFAULT_THREADS, **kwargs):
        limiter = blas_threads(threads)
        limiter.__enter__()
        try:
            result = solver(*args, **kwargs)
        except BaseException:
            limiter.__exit__(None, None, None)
            raise
        try:
            limiter.__exit__(None, None, None)
        except KeyboardInterrupt:
            limiter.__exit__(None, None, None)
        return result

    return wrapper
