"""Factor graphs: the local marginal polytope and MAP inference (paper Sec. 2.1).

- :class:`LocalMarginalPolytope` (``fm.LocalMarginalPolytope``): node and
  edge marginals of a networkx graph with their simplices and
  marginalization consistency constraints.
- :func:`map_inference` (``fm.map_inference``): the LP relaxation solved by
  FW-AL, rounded to a labeling, with a certified lower bound.
"""
from .local_polytope import LocalMarginalPolytope, Marginalization
from .map_inference import MAPResult, default_penalty, map_inference, map_objective

__all__ = ["LocalMarginalPolytope", "Marginalization", "MAPResult", "default_penalty", "map_inference", "map_objective"]
