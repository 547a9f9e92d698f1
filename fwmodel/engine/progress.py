"""A solve's bookkeeping: step counts, the history, the verbose table, the best point, the callback.

None of this changes the iterates: the driver reports each iteration's
measurements to :class:`Progress` once, and reads back only whether the
callback asked to stop. A snapshot of a good point (by the stopping rule's
merit: replaced only by a point of less than :data:`BEST_POINT_FACTOR` times
its merit) is what a solve returns when it ends without meeting its
tolerances and the snapshot's merit is below :data:`BEST_POINT_FACTOR` times
the last point's (:func:`fwmodel.engine.finish.finish`); else the last point.
"""
from __future__ import annotations

import math
import time

from .lagrangian import IterationState
from .result import History
from .verbose import VerbosePrinter

#: above this many entries of x and y together no best-point snapshot is kept: it
#: would hold a copy of x and y for the whole solve (3 of the ~15 d x d arrays of the
#: covariance problem's iteration). Trade-off: a solve stopped by max_iter or
#: time_limit there returns its last point, not the best one seen (the iterates of a
#: long solve mostly improve; a diverged solve still reports "diverged").
BEST_POINT_MAX_ENTRIES = 10 ** 6
#: a point replaces the snapshot, and the snapshot replaces the last point at the
#: end, only when its merit is at most this fraction of the other's: the FW gap in
#: the merit is a loose bound, and a point merely somewhat better by it can be worse
#: in objective and feasibility (a stalled trace-norm solve returned its first
#: iterate, objective 3554, over its last, 3291, at the same feasibility)
BEST_POINT_FACTOR = 0.5


class Progress:
    """Step counts, history rows, verbose rows, the best-point snapshot and the user's callback."""

    def __init__(self, start, n, m, blocks, verbose, print_every, callback, corrective_kinds=(), objective_sign=1.0):
        self.start = start
        self.history = History()
        self.printer = VerbosePrinter(verbose, print_every, n=n, m=m, blocks=blocks, objective_sign=objective_sign)
        self.step_counts = {"fw": 0, "away": 0, "pairwise": 0, "drop": 0}
        for kind in corrective_kinds:  # counted from the start when some block takes them
            self.step_counts[kind] = 0
        self.callback = callback
        self.keep_best = n + m <= BEST_POINT_MAX_ENTRIES
        self.best = None  # (merit, x, y, f, gap, bound) snapshot, for returning the best point found

    def elapsed(self):
        return time.perf_counter() - self.start

    def record(self, t, elapsed, it, gap, feas, feas_rel, eta, stopping, merit, bound=math.nan):
        """One iteration's history row, verbose row and best-point snapshot.

        ``bound``: the certified bound on f(x_t) - f* (:func:`fwmodel.engine.stopping.suboptimality_bound`),
        kept with the snapshot so a returned best point reports its own.
        """
        # the columns of HISTORY_KEYS, in order (a tuple: no keyword dict per iteration)
        self.history.append((t, elapsed, it.f, gap, feas, feas_rel, it.lam, eta, sum(self.step_counts.values())))
        self.printer.row(t, it.f, gap, feas, stopping, it.lam, eta, elapsed, self.step_counts)
        if self.keep_best and (self.best is None or merit < BEST_POINT_FACTOR * self.best[0]):
            self.best = (merit, it.x.copy(), it.y.copy(), it.f, gap, bound)

    def callback_stops(self, t, elapsed, it, gap, feas, feas_rel, eta):
        """Call the user's callback with this iteration's state; True when it returned False (stop)."""
        if self.callback is None:
            return False
        state = IterationState(iteration=t, time=elapsed, objective=it.f, fw_gap=gap, feasibility=feas,
                               feasibility_rel=feas_rel, lam=it.lam, eta=eta, x=it.x, y=it.y)
        return self.callback(state) is False
