"""A process-wide setting switched for the duration of a block, shared by blocks that overlap.

A solve switches three process-wide settings while it runs and puts them back
afterwards: NumPy's huge-page request (:mod:`fwmodel.engine.pages`), the BLAS
thread limit (:mod:`fwmodel.engine.threads`) and the one-BLAS-thread flag of
:mod:`fwmodel._fastest`. Solves may nest, and may run in several threads at
once. Saving the setting per solve and restoring it at its end goes wrong
there: with A starting, B starting, A ending, then B, A's restore switches
the setting back under B, and B's end restores the value B found, A's, for
the rest of the process. :class:`SharedSetting` counts the blocks instead:
the first to start saves what it found, the last to end puts it back.

Interrupts. The blocks it holds and the state of the setting change together
or not at all for a Ctrl-C:

* the bookkeeping runs with Ctrl-C deferred (main thread, Python's default
  SIGINT handler in place): a Ctrl-C that arrives meanwhile is raised when
  the bookkeeping is done;
* each block is known by a token, and :meth:`SharedSetting.exit` of a token
  that never entered, or already left, does nothing; :meth:`release` runs it
  again when an interrupt (any ``KeyboardInterrupt``, from SIGINT or from
  another handler) lands in it. :func:`call_holding` (what the solves use)
  holds settings around a call this way, with no gap where an interrupt
  leaves a block counted or the setting switched (tests/test_shared_setting.py
  makes one arrive after each bytecode instruction in turn).

A KeyboardInterrupt raised by another signal's handler (not deferred) that
lands between a setting's switch and the store of what the switch found
leaves the setting switched for the process, with no block counted; the
next solve saves and restores that state. Nothing short of deferring every
signal closes that window in Python.
"""
from __future__ import annotations

import contextvars
import functools
import signal
import threading


class _DeferredCtrlC:
    """Within the block a Ctrl-C is recorded, not raised; it is raised on leaving the block.

    Only in the main thread (where Python runs signal handlers) and only while
    Python's own SIGINT handler is in place; elsewhere a no-op.

    Another signal's Python handler may raise (a timeout written with
    ``signal.alarm``) at any point, also while this handler is swapped in or
    out. Left installed, it would swallow every later Ctrl-C of the process
    (found under load: a SIGALRM handler raising KeyboardInterrupt landed
    there and a later Ctrl-C was never raised), so both swaps are guarded.
    """

    __slots__ = ("previous", "received")

    def __enter__(self):
        self.previous = None
        self.received = False
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            try:
                self.previous = signal.signal(signal.SIGINT, self._record)
                return self
            except BaseException:  # raised with _record installed: the block does not run, put it back
                if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                    _restore_sigint(signal.default_int_handler)
                raise
        return self

    def _record(self, signum, frame):
        self.received = True

    def __exit__(self, *exc):
        if self.previous is not None:
            raised = _restore_sigint(self.previous)
            if raised is not None:
                raise raised
            if self.received and exc[0] is None:
                raise KeyboardInterrupt
        return False


def _restore_sigint(handler):
    """Installs ``handler`` for SIGINT, however often another signal's handler raises meanwhile
    (``signal.signal`` runs the pending handlers before it swaps); returns the first exception raised."""
    raised = None
    while True:
        try:
            signal.signal(signal.SIGINT, handler)
            return raised
        except BaseException as exc:  # any exception of a pending handler: re-raised by the caller
            raised = raised if raised is not None else exc


class SharedSetting:
    """A process-wide setting held by blocks that may nest or overlap in several threads.

    ``apply(request)`` puts the setting into the state ``request`` asks for
    and returns what ``restore`` needs to put back the state it found;
    ``combine(requests)`` (default: the smallest) is the request in force
    while several blocks with different requests run. The first block to
    enter saves the state found, every enter and exit applies the combined
    request of the blocks then running, and the last to exit restores.
    """

    def __init__(self, apply, restore, combine=min):
        self._apply = apply
        self._restore = restore
        self._combine = combine
        self._lock = threading.Lock()
        self._requests = {}  # token -> request, one per block now running
        self._in_force = None  # the request applied, None while the saved state is in place
        self._saved = None  # what restore needs, while a request is in force

    @property
    def blocks_running(self):
        """How many blocks hold the setting now (all threads)."""
        return len(self._requests)

    def enter(self, token, request=True):
        """A block known by ``token`` starts and asks for ``request``."""
        with _DeferredCtrlC(), self._lock:
            self._requests[token] = request
            self._apply_combined()

    def exit(self, token):
        """The block ``token`` ends; nothing when it never entered or already left."""
        with _DeferredCtrlC(), self._lock:
            self._requests.pop(token, None)
            self._apply_combined()

    def release(self, token):
        """:meth:`exit`, finished even when a KeyboardInterrupt lands in it; returns that interrupt (or None)."""
        interrupted = None
        while True:
            try:
                self.exit(token)
                return interrupted
            except KeyboardInterrupt as interrupt:
                interrupted = interrupt

    def _apply_combined(self):
        # the saved state is taken from the first apply only: a later apply (another combined request) finds the
        # state this object set, not the one to put back
        if self._requests:
            wanted = self._combine(self._requests.values())
            if self._in_force is None:
                self._saved = self._apply(wanted)
                self._in_force = wanted
            elif wanted != self._in_force:
                self._apply(wanted)
                self._in_force = wanted
        elif self._in_force is not None:
            self._restore(self._saved)
            self._in_force = None
            self._saved = None

    def hold(self, request=True):
        """A context manager: the setting as ``request`` asks within the block (shared with the blocks running).

        A Ctrl-C at the very start of the block's ``__exit__`` (before its
        first line runs) leaves the block counted; :func:`call_holding` has
        no such gap and is what the solves use.
        """
        return _Held(self, request)


class _Held:
    __slots__ = ("setting", "request", "token")

    def __init__(self, setting, request):
        self.setting, self.request, self.token = setting, request, object()

    def __enter__(self):
        try:
            self.setting.enter(self.token, self.request)
        except BaseException:  # a Ctrl-C raised as enter finished: the block does not run, so it leaves
            self.setting.release(self.token)
            raise
        return self

    def __exit__(self, *exc):
        interrupted = self.setting.release(self.token)
        if interrupted is not None and exc[0] is None:
            raise interrupted
        return False


def call_holding(held, function, *args, **kwargs):
    """``function(*args, **kwargs)`` while holding each ``(setting, request)`` of ``held``.

    The settings are released when the function returns or raises, also when
    a KeyboardInterrupt lands anywhere in here (it then comes out after the
    release). A KeyboardInterrupt that lands while they are released, after
    the function returned, does not lose its result: the release is finished
    and the result returned.
    """
    tokens = [(setting, object()) for setting, _ in held]
    held_left = len(tokens)  # the tokens not yet released, the last entered first (counted before the try)
    try:
        for (setting, token), (_, request) in zip(tokens, held):
            setting.enter(token, request)
        result = function(*args, **kwargs)
    finally:
        # Python runs a signal's handler where a call returns and where a loop jumps back. The release, its
        # loop included, lies within the try: an interrupt landing anywhere in it (as a release returns,
        # between two settings) starts the rest of the release again. A loop over reversed(tokens) around
        # the try lost the settings not yet released to an interrupt landing as reversed() returned or at
        # the loop's jump back: the huge-page switch stayed held for the rest of the process.
        while held_left:
            try:
                while held_left:
                    setting, token = tokens[held_left - 1]
                    setting.release(token)  # a token already released: nothing
                    held_left -= 1
            except KeyboardInterrupt:
                pass
    return result


def in_own_context(function):
    """Decorate a solver so that it runs in a copy of its caller's ``contextvars`` context.

    NumPy keeps its floating-point error state (``np.errstate``) in a context
    variable. A KeyboardInterrupt that lands inside an ``np.errstate`` block,
    one of ours or one of NumPy's own (``np.linalg.svd`` holds one), between
    its enter and its reset, leaves that block's state in force: after such a
    Ctrl-C, overflow warnings were silenced, or an invalid value raised "SVD did
    not converge" in the caller's later, unrelated code. In a copy of the
    context the solve sees the caller's settings, and whatever it leaves set
    goes away with the copy.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return contextvars.copy_context().run(function, *args, **kwargs)

    return wrapper
