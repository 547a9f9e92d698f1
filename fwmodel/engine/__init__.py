"""The FW-AL engine: flat NumPy vectors and callables, no modeling layer.

Usable on its own: give :func:`minimize_fwal` an objective with
``value_and_grad``, a list of :class:`Block` (each with an LMO) and the
consistency operator M, b.
"""
from .active_set import ActiveSet
from .fwal import minimize_fwal
from .lagrangian import Block, IterationState
from .result import STATUSES, FWALResult, History, SolverState

__all__ = ["minimize_fwal", "Block", "IterationState", "ActiveSet", "FWALResult", "History", "SolverState", "STATUSES"]
