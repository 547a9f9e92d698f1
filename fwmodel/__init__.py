"""fwmodel: a CVXPY-style modeling language compiled to FW-AL.

FW-AL is the Frank-Wolfe Augmented Lagrangian method of Gidel, Pedregosa and
Lacoste-Julien (AISTATS 2018): Frank-Wolfe steps over a product of sets, each
known only through its linear minimization oracle, plus dual ascent on the
linear consistency constraints that tie the blocks together.
"""
from .errors import ModelError
from .expressions import *  # noqa: F401,F403
from .expressions import __all__ as _expressions_all
from .sets import *  # noqa: F401,F403
from .sets import __all__ as _sets_all
from .problem import Maximize, Minimize, Problem
from .status import DIVERGED, INFEASIBLE, INTERRUPTED, MAX_ITER, OPTIMAL, TIME_LIMIT
from .factor_graphs import LocalMarginalPolytope, MAPResult, map_inference

__version__ = "0.1.0"
__all__ = ["ModelError", "Problem", "Minimize", "Maximize", *_expressions_all, *_sets_all,
           "LocalMarginalPolytope", "MAPResult", "map_inference",
           "OPTIMAL", "INFEASIBLE", "MAX_ITER", "TIME_LIMIT", "DIVERGED", "INTERRUPTED"]
