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
    """

    def __init__(self, every=1):
        self.every = max(1, int(every))
        self._columns = {key: [] for key in HISTORY_KEYS}

    def append(self, **row):
        for key in HISTORY_KEYS:
            self._columns[key].append(row[key])

    def __getitem__(self, key):
        if key not in self._columns:
            raise KeyError(f"history has no column {key!r}; columns are {', '.join(HISTORY_KEYS)}")
        return np.asarray(self._columns[key])

    def __contains__(self, key):
        return key in self._columns

    def keys(self):
        return list(HISTORY_KEYS)

    def __len__(self):
        return len(self._columns["iteration"])

    def to_dict(self):
        return {key: np.asarray(values) for key, values in self._columns.items()}

    def __repr__(self):
        return f"History({len(self)} rows: {', '.join(HISTORY_KEYS)})"


class SolverState:
    """Everything a warm start reuses: primal blocks, duals, active sets, penalty."""

    def __init__(self, x, y, active_sets, lam, eta, lipschitz):
        self.x = x
        self.y = y
        self.active_sets = active_sets
        self.lam = lam
        self.eta = eta
        self.lipschitz = lipschitz


class FWALResult(dict):
    """Result of :func:`minimize_fwal`, in the style of scipy's OptimizeResult.

    Keys are also attributes: x, y, status, message, objective, fw_gap,
    feasibility, feasibility_rel, iterations, solve_time, lam, eta, history,
    state, step_counts.
    """

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        keys = ("status", "objective", "fw_gap", "feasibility_rel", "iterations", "solve_time")
        return "FWALResult(" + ", ".join(f"{k}={self.get(k)!r}" for k in keys) + ")"
