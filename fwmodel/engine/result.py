"""What a solve returns: the result, the trajectory, the state for warm starts."""
from __future__ import annotations

import numpy as np

#: Statuses a solve can end with.
STATUSES = ("optimal", "max_iter", "time_limit", "infeasible", "diverged", "interrupted")

HISTORY_KEYS = ("iteration", "time", "objective", "fw_gap", "feasibility", "feasibility_rel", "lam", "eta", "step")


class History:
    """The trajectory of a solve, one row per recorded iteration.

    Read a column as ``history["objective"]`` (a NumPy array) or all of them
    with ``history.to_dict()`` (a dict of equal-length NumPy arrays).

    Rows are stored whole: :meth:`append` builds the row first and adds it
    with one list append, so an interrupt (KeyboardInterrupt) can never leave
    the columns with unequal lengths.
    """

    def __init__(self, every=1):
        self.every = max(1, int(every))
        self._rows = []

    def append(self, row=None, **columns):
        """Add one row: a tuple in the order of ``HISTORY_KEYS`` (the driver's per-iteration call:
        no keyword dict), or the columns by name."""
        self._rows.append(tuple(row) if row is not None else tuple(columns[key] for key in HISTORY_KEYS))

    def map_column(self, key, fn):
        """Replace column ``key`` by ``fn`` of each of its values (all rows swapped at once)."""
        i = HISTORY_KEYS.index(key)
        self._rows = [r[:i] + (fn(r[i]),) + r[i + 1:] for r in self._rows]

    def copy(self):
        out = History(self.every)
        out._rows = list(self._rows)
        return out

    def __getitem__(self, key):
        if key not in HISTORY_KEYS:
            raise KeyError(f"history has no column {key!r}; columns are {', '.join(HISTORY_KEYS)}")
        i = HISTORY_KEYS.index(key)
        return np.asarray([r[i] for r in self._rows])

    def __contains__(self, key):
        return key in HISTORY_KEYS

    def keys(self):
        return list(HISTORY_KEYS)

    def __len__(self):
        return len(self._rows)

    def to_dict(self):
        rows = list(self._rows)
        return {key: np.asarray([r[i] for r in rows]) for i, key in enumerate(HISTORY_KEYS)}

    def __repr__(self):
        return f"History({len(self)} rows: {', '.join(HISTORY_KEYS)})"


class SolverState:
    """Everything a warm start reuses: primal blocks, duals, active sets, penalty."""

    def __init__(self, x, y, active_sets, lam, eta, lipschitz, row_norms=None):
        self.x = x
        self.y = y
        self.active_sets = active_sets
        self.lam = lam
        self.eta = eta
        self.lipschitz = lipschitz
        # each row's norm when y was taken (stopping.row_norm_equilibration): a warm start carries y to rows
        # a Parameter has rescaled since (y times the old norm over the new, its multiplier per unit row)
        self.row_norms = row_norms
        # (objective scale, the cold start's penalty lam_0), both measured at the cold starting point of the
        # solve that left this state: the units its y, lam and eta are in (warm_start.in_new_units)
        self.reference_scales = None
        # the certified bound's looseness the solve ended with (stopping.StoppingRule.looseness): a warm start's
        # test (1b) takes at most this factor
        self.looseness = None


class FWALResult(dict):
    """Result of :func:`minimize_fwal`, in the style of scipy's OptimizeResult.

    Keys are also attributes: x, y, status, message, objective, fw_gap,
    suboptimality_bound (the certified bound on objective - f*, see
    :func:`fwmodel.engine.stopping.suboptimality_bound`),
    feasibility, feasibility_rel, iterations, solve_time, lam, eta, history,
    state, step_counts, and the stopping rule's tol, feas_tol,
    objective_scale and feasibility_scale (see :mod:`fwmodel.engine.stopping`).
    """

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        keys = ("status", "objective", "fw_gap", "feasibility_rel", "iterations", "solve_time")
        return "FWALResult(" + ", ".join(f"{k}={self.get(k)!r}" for k in keys) + ")"
