"""The FW-AL engine: flat NumPy vectors and callables, no modeling layer.

Usable on its own: give :func:`minimize_fwal` an objective with
``value_and_grad``, a list of :class:`Block` (each with an LMO) and the
consistency operator M, b.

Where things are (paper: Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018):

- ``fwal``: the driver loop of eq. fwal (gradient of L, one proposal per
  block, step sizes, commits, corrective steps, dual step, stopping) and
  the two step interfaces it calls.
- ``lagrangian``: :class:`Block` (a factor X_k and what its set offers), the
  operator M, the augmented Lagrangian's fixed data and its moving iterate.
- ``steps``: the block steps (FW, Alg. 2; away, Alg. 1; pairwise; BPCG with
  a lazy LMO; a pairwise step per simplex group; a FW step per coordinate).
- ``rank_k``: BlockFW rank-k steps on trace-norm blocks (option ``rank_k``).
- ``block_search``: each block's step size on L(., y) (Gauss-Seidel or Jacobi sweeps).
- ``inface``: in-face corrective steps on low-rank blocks (Freund, Grigas &
  Mazumder 2017).
- ``projection_step``: projected-gradient corrective steps (a linearized
  augmented-Lagrangian block step); ``projection_choice``: which blocks
  take them under ``projection="auto"``.
- ``active_set``: atoms and weights of a block's iterate (eq. active_set_decomposition).
- ``line_search``, ``schedules`` (penalty and dual step), ``stopping``
  (scale-free tolerances), ``certificates`` (the infeasibility proof).
- ``options`` (checks), ``warm_start`` (first iterate), ``progress``
  (history, verbose table, best point, callback), ``finish`` (the result,
  also after a KeyboardInterrupt), ``result``, ``verbose``, ``threads``,
  ``vector_ops``.
"""
from .active_set import ActiveSet
from .fwal import minimize_fwal
from .lagrangian import Block, IterationState
from .result import STATUSES, FWALResult, History, SolverState

__all__ = ["minimize_fwal", "Block", "IterationState", "ActiveSet", "FWALResult", "History", "SolverState", "STATUSES"]
