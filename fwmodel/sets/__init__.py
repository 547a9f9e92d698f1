"""Constraint sets, one family per file; each knows its LMO and nothing else."""
from .alignment import AlignmentPolytope
from .atoms import Atom, DenseAtom, RankOneAtom, SparseAtom
from .base import ConvexSet
from .birkhoff import BirkhoffPolytope
from .box import Box, LinfBall
from .check import check_lmo
from .ellipsoid import Ellipsoid
from .ksparse import KSparsePolytope
from .l1 import L1Ball
from .l2 import L2Ball
from .simplex import Simplex
from .trace_norm import TraceNormBall

__all__ = [
    "ConvexSet",
    "L1Ball",
    "Simplex",
    "TraceNormBall",
    "Box",
    "L2Ball",
    "Ellipsoid",
    "LinfBall",
    "KSparsePolytope",
    "BirkhoffPolytope",
    "AlignmentPolytope",
    "check_lmo",
    "Atom",
    "DenseAtom",
    "SparseAtom",
    "RankOneAtom",
]
