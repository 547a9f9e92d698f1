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
  setting is restored afterwards (``threadpoolctl``). The limit is process-
  wide: solves running at once in several threads share it (the smallest
  limit asked for is in force) and the last of them to end restores it;
* ``None``: the BLAS is left as configured (for instance by
  ``OPENBLAS_NUM_THREADS``).

When ``threadpoolctl`` is not installed the option has no effect.
"""
from __future__ import annotations

import contextlib
import functools
import numbers

from .. import _fastest
from .._shared_setting import SharedSetting, call_holding

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


def _let_other_threads_set_the_blas():
    """Give up this thread's claim on OpenBLAS's thread count (threadpoolctl >= 3.6).

    threadpoolctl lets the thread that last set OpenBLAS's count be the only
    one to set it while that thread lives (outside its own ``with`` blocks).
    The shared limit below is set by the first solve to start and put back
    by the last to end, which may run in another thread: without giving the
    claim up, that thread's restore was ignored and the BLAS kept one thread.
    """
    try:
        from threadpoolctl import OpenBLASController
        OpenBLASController.clear_controlling_thread()  # only clears a claim held by this thread
    except (ImportError, AttributeError):  # an older threadpoolctl: no claims
        pass


def _limit_blas(threads):
    """Limit the BLAS libraries to ``threads`` threads; returns the limiter that can put the previous counts back."""
    limiter = _threadpools().limit(limits=threads, user_api="blas")
    _let_other_threads_set_the_blas()
    return limiter


def _put_blas_back(limiter):
    limiter.restore_original_limits()
    _let_other_threads_set_the_blas()


#: the BLAS thread limit held by the solves now running (every thread): the smallest limit asked for is in
#: force, the first solve saves the counts it found and the last to end puts them back (saved per solve, A
#: starting, B starting, A ending put the BLAS back under B, and B's end left A's limit for good)
_BLAS_LIMIT = SharedSetting(_limit_blas, _put_blas_back, combine=min)


def _held_during_a_solve(threads):
    """The (shared setting, request) pairs a solve with option ``threads`` holds."""
    threads = check_threads(threads)
    if threads is None or _threadpools() is None:
        return []
    held = [(_BLAS_LIMIT, threads)]
    if threads == 1:  # one BLAS thread: FasterOf picks the BLAS without a clock (same iterates in every run)
        held.append((_fastest._FLAG, True))
    return held


@contextlib.contextmanager
def blas_threads(threads):
    """A context manager limiting the BLAS to ``threads`` threads (None: no change).

    Blocks may nest and run in several threads at once: the smallest limit
    among those running is in force, and the last to end restores the BLAS.
    """
    with contextlib.ExitStack() as stack:
        for setting, request in _held_during_a_solve(threads):
            stack.enter_context(setting.hold(request))
        yield


def with_blas_threads(solver):
    """Decorate a solver so that it accepts ``threads=`` and runs under :func:`blas_threads`.

    The previous thread counts are restored when the solver returns; a Ctrl-C
    that lands during that restore (after the solve finished) does not lose
    the result: the restore is finished and the result returned.
    """

    @functools.wraps(solver)
    def wrapper(*args, threads=DEFAULT_THREADS, **kwargs):
        return call_holding(_held_during_a_solve(threads), solver, *args, **kwargs)

    return wrapper
