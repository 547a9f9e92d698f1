"""Page size of the arrays a solve allocates (NumPy's transparent huge pages).

On Linux, NumPy asks the kernel for transparent huge pages
(``madvise(MADV_HUGEPAGE)``) on every array of at least 4 MB. A huge page is
faulted in as one zeroed 2 MB piece, and the first write to a fresh array
waits until the kernel has such a piece of memory at hand: on a fragmented
machine it compacts memory for it, and in a virtual machine the host backs
fresh guest memory in that fault too. Measured on the project's machine (a
virtual machine, benchmarks/RESULTS.md, "The setup at d = 4000: page
faults"): the first touch of a fresh 128 MB array took 0.18-0.39 s with
huge pages against 0.06 s with 4 KB pages, and a FW-AL solve at d = 4000
touches about 9 such arrays before its second iterate (the 8 of its loop,
benchmarks/memory_peaks.py): its first iterate came 1-2 s later with huge
pages (1.2-1.5 s against 2.1-3.4 s). The price of 4 KB pages is more TLB misses on every later pass over the
arrays (here a BLAS axpy or dot over 128 MB took 1.2-1.4x as long; matrix
products are not slower).

A solve therefore allocates its arrays with NumPy's huge-page request
switched off (:func:`plain_pages`: the compile step's arrays, the setup's
and the loop's) and switches it back to what it was when the solve returns.
Pages that the process already holds are reused either way; the numbers of
the solve do not depend on the page size. NumPy's setting is global: other
threads of the process allocate without huge pages too while a solve runs,
and solves running at once in several threads (or nested) share one switch,
put back by the last of them to end.

The switch is NumPy's ``_set_madvise_hugepage`` (documented in NumPy's
"global state" page, also settable by the ``NUMPY_MADVISE_HUGEPAGE``
environment variable); where it is missing (another platform or NumPy
version), :func:`plain_pages` does nothing.
"""
from __future__ import annotations

import contextlib
import functools

from .._shared_setting import SharedSetting, call_holding

#: allocate a solve's arrays without NumPy's huge-page request (see the module docstring)
PLAIN_PAGES = True


def _hugepage_switch():
    """NumPy's ``_set_madvise_hugepage(enabled) -> previous``, or None where this NumPy has none."""
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            found = __import__(module, fromlist=["_set_madvise_hugepage"])
        except ImportError:
            continue
        switch = getattr(found, "_set_madvise_hugepage", None)
        if switch is not None:
            return switch
    return None


_SWITCH = _hugepage_switch()


#: NumPy's huge-page request, held off by the solves now running (every thread); the first saves the setting
#: it found and the last to end puts it back (a setting saved per solve was put back under a solve still
#: running, or left off for good: fwmodel/_shared_setting.py)
_PLAIN = SharedSetting(lambda off: _SWITCH(False), _SWITCH, combine=any)


@contextlib.contextmanager
def plain_pages(enabled=None):
    """Within the block, NumPy allocates without asking for huge pages; the previous setting is restored after.

    ``enabled``: whether to switch (default :data:`PLAIN_PAGES`). Blocks may
    nest and may run in several threads at once: the setting is restored when
    the last of them ends.
    """
    if enabled is None:
        enabled = PLAIN_PAGES
    if not enabled or _SWITCH is None:
        yield
        return
    with _PLAIN.hold():
        yield


def with_plain_pages(solver):
    """Decorate a solver so that it runs under :func:`plain_pages`.

    As for the BLAS threads (:func:`fwmodel.engine.threads.with_blas_threads`),
    a Ctrl-C that lands while the setting is restored, after the solve
    finished, does not lose the result: the restore is finished and the
    result returned.
    """

    @functools.wraps(solver)
    def wrapper(*args, **kwargs):
        if not PLAIN_PAGES or _SWITCH is None:
            return solver(*args, **kwargs)
        return call_holding([(_PLAIN, True)], solver, *args, **kwargs)

    return wrapper
