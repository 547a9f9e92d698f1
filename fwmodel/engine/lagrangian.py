"""What the FW-AL engine works on: the blocks, the operator M, the augmented Lagrangian and its iterate.

Problem (OPT2 of the paper, with a right-hand side b)::

    min_x max_y  L(x, y) = f(x) + <y, Mx - b> + lam/2 ||Mx - b||^2
    s.t.         x = (x^(1), ..., x^(K)),  x^(k) in X_k.

:class:`Block` describes one factor X_k and what its set offers (an LMO,
and optionally a low-rank face, a projection, simplex groups, intervals);
:class:`AugmentedLagrangian` holds the fixed data of L (f, the blocks, M, b);
:class:`Iterate` the moving point (x, y, the residual r = Mx - b, f(x) and
its gradient, the penalty lam), which every step updates in place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp


@dataclass
class Block:
    """One factor X_k of the product space: x[offset:offset+size] lies in it.

    ``lmo(g)`` takes the block's slice of the gradient (flat) and returns an
    Atom minimizing <g, s> over X_k; ``initial_atom()`` gives a starting
    vertex. Away/pairwise steps are used only where ``is_polytope``.
    """

    offset: int
    size: int
    lmo: Callable
    initial_atom: Callable
    is_polytope: bool = False
    name: str = ""
    #: False for a product of many small polytopes (a batched simplex): there the
    #: active set would hold joint vertices, so step="auto" takes FW steps
    active_set_steps: bool = True
    #: optional :class:`~fwmodel.engine.inface.LowRankFace` (trace-norm blocks):
    #: enables in-face corrective steps on this block
    face: object = None
    #: optional Euclidean projection onto X_k (flat -> flat): enables
    #: projected-gradient steps on this block (option ``projection``)
    project: Callable = None
    #: True when ``project`` costs about an LMO (L1, L2 balls, boxes): taken with
    #: projection=True; other projections only when "auto" measures them cheap enough
    cheap_projection: bool = True
    #: True when ``project`` takes ``out=`` and may write the projection over its own input
    #: (no block-size temporary; :class:`~fwmodel.engine.projection_step.ProjectionStep`)
    project_in_place: bool = False
    #: optional (x_k, g_k, w, sign, scale) -> (positions, d, g, w) or None: the direction
    #: ``project(x_k + scale (g_k + sign w)) - x_k`` on its support, found without a block-size array
    #: where it is sparse (``L1Ball.projected_step_sparse``; the tied-copies projection step)
    project_sparse_step: Callable = None
    #: True when projection="auto" projects the block although the objective does not read it
    #: (``ConvexSet.projects_unread``: a hinge budget's hidden excess; ``projection_choice.candidates``)
    projects_unread: bool = False
    #: optional () -> seconds: a guess of ``project``'s cost, so that "auto" does not
    #: time a projection far too slow to be taken
    projection_estimate: Callable = None
    #: True when ``project`` starts from its previous call's state (the Birkhoff polytope's Newton
    #: multipliers): "auto" then times it as a solve calls it, on nearby points in turn
    #: (``projection_choice.choose``), not at one point again, which a warm start answers at once
    projection_warm_starts: bool = False
    #: optional :class:`~fwmodel.engine.steps.SimplexGroups`: the block is a
    #: product of simplices (enables per-group pairwise steps)
    groups: object = None
    #: optional (lower, upper) flat bounds: the block is a box (per-coordinate FW steps)
    intervals: object = None
    #: optional: the equalities every point of X_k meets (``ConvexSet.affine_hull``, :mod:`fwmodel.sets.hulls`):
    #: rows of M nearly parallel to them are kept as their part off them (:mod:`fwmodel.engine.hull_rows`)
    hull: object = None
    #: the set is a box, with or without ``intervals`` (a symmetric box has none): projection="auto" keeps
    #: its vertex steps on a model made only of polytopes (``projection_choice.candidates``)
    is_box: bool = False
    #: optional int S: the block is a batch of polytopes over consecutive runs of S
    #: entries whose joint LMO vertex splits into the groups' vertices (BPCG per group)
    batch_group_size: int = None
    #: optional "pairwise" / "away": the active-set step of ``step="auto"`` on this block (None: BPCG;
    #: ``ConvexSet.auto_active_set_step``)
    auto_step: str = None
    #: optional: where ``lmo`` may miss its minimizer (a trace-norm ball's warm-started Lanczos LMO),
    #: an object with ``exact(g)``, the LMO at a tolerance the certificate trusts, and ``tighten()``,
    #: after which ``lmo`` answers at that tolerance too: the block's FW gap is checked with it
    #: before the solve trusts it (:class:`~fwmodel.engine.stopping.LmoCheck`)
    lmo_check: object = None
    #: True where ``lmo`` is user code (a set written outside fwmodel): before the solve certifies "optimal",
    #: its answer along -g is compared with its answer along g (:func:`certificates.refuse_maximizing_lmo`)
    lmo_sign_check: bool = False
    #: optional flat point -> (atoms, weights) or None: the point as a convex combination of the set's
    #: atoms (``ConvexSet.atoms_of_point``), for a warm start of a block that has no active set
    atoms_of_point: Callable = None

    @property
    def slice(self):
        return slice(self.offset, self.offset + self.size)

    @property
    def trusted_lmo(self):
        """The LMO whose answers may certify (a gap, infeasibility): ``lmo_check.exact`` where ``lmo`` may miss."""
        return self.lmo if self.lmo_check is None else self.lmo_check.exact


class _Operator:
    """M as two fast callables (CSR products, or a user LinearOperator)."""

    def __init__(self, M, n):
        if M is None:
            M = sp.csr_matrix((0, n))
        if sp.issparse(M):
            M = M.tocsr()
            MT = M.T.tocsr()
            self.matvec, self.rmatvec = M.dot, MT.dot
        elif hasattr(M, "matvec") and hasattr(M, "rmatvec"):
            self.matvec, self.rmatvec = M.matvec, M.rmatvec
        else:
            M = np.asarray(M, dtype=float)
            self.matvec, self.rmatvec = M.dot, M.T.dot
        self.shape = M.shape
        if self.shape[1] != n:
            raise ValueError(f"M has {self.shape[1]} columns but the blocks have {n} entries in all")
        # the compiler's operator fuses g + M' r and describes copy columns (see consistency.py)
        self._add_rmatvec = getattr(M, "add_rmatvec", None)
        self.signed_rows = getattr(M, "signed_rows", lambda start, stop: None)
        self.diagonal_gain, self.block_column_norms2 = self._column_gains_of(M)
        # the compiler's groups of rows (stopping.RowPieces tests each against its own scale)
        self.pieces, self.offsets = getattr(M, "pieces", None), getattr(M, "offsets", None)

    @staticmethod
    def _column_gains_of(M):
        """``d -> sum_j d_j^2 ||M e_j||^2`` and ``bounds -> [sum_{j in block k} ||M e_j||^2]``
        (see ``ConsistencyOperator.diagonal_gain``); None, None when M is opaque."""
        if hasattr(M, "diagonal_gain"):
            return M.diagonal_gain, getattr(M, "block_column_norms2", None)
        if sp.issparse(M):
            M = M.tocsr()  # data and indices by column index (a CSC matrix's indices are rows)
            squares = M.data ** 2
            column_norms2 = np.bincount(M.indices, weights=squares, minlength=M.shape[1])
            return lambda d: float(np.dot(squares, d[M.indices] ** 2)), _block_sums(column_norms2)
        if isinstance(M, np.ndarray):
            column_norms2 = np.einsum("ij,ij->j", M, M)
            return lambda d: float(np.dot(column_norms2, d * d)), _block_sums(column_norms2)
        return None, None

    def add_rmatvec(self, r, g, out=None):
        """``g + M' r``, into ``out`` when given (a buffer reused from one iteration to the next)."""
        if self._add_rmatvec is not None:
            return self._add_rmatvec(r, g, out)
        if out is None:
            out = self.rmatvec(r)
            out += g
            return out
        np.add(g, self.rmatvec(r), out=out)
        return out


def _block_sums(values):
    """``bounds -> [sum(values[bounds[k]:bounds[k + 1]])]``."""
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    return lambda bounds: cumulative[np.asarray(bounds)[1:]] - cumulative[np.asarray(bounds)[:-1]]


class AugmentedLagrangian:
    """The fixed data of L(x, y) (paper OPT2) that the steps read.

    ``objective`` has ``value``, ``value_and_grad`` and optionally
    ``curvature(x, d)`` (d' Hf d, or None) and ``is_quadratic``; ``Mop`` is M
    (an :class:`_Operator`) with ``m`` rows; ``buffers`` the driver's reused
    full-size work arrays.
    """

    def __init__(self, objective, blocks, Mop, b, buffers):
        self.objective = objective
        self.blocks = blocks
        self.Mop = Mop
        self.m = Mop.shape[0]
        self.b = b
        self.quadratic = bool(getattr(objective, "is_quadratic", False))
        self.curvature = getattr(objective, "curvature", None)
        self.buffers = buffers


class Iterate:
    """The point of the solve: x, y, r = Mx - b, f = f(x), g = grad f(x) and the penalty lam.

    Steps move ``x`` and ``r`` in place and refresh ``f`` and ``g``; the dual
    step moves ``y`` (and the schedule may change ``lam``).
    """

    __slots__ = ("x", "y", "r", "f", "g", "lam")

    def __init__(self, x, y, r, f, g, lam):
        self.x, self.y, self.r, self.f, self.g, self.lam = x, y, r, f, g, lam


class IterationState:
    """What a callback sees each iteration (read-only by convention)."""

    __slots__ = ("iteration", "time", "objective", "fw_gap", "feasibility", "feasibility_rel", "lam", "eta", "x", "y")
    # x: the product-space iterate (all blocks), y: the dual variable of M x = b

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
