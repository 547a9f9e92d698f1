"""A set in other units: ``S / c``, the same family with its data divided by a scale ``c > 0``.

The compiler holds a set on an affine expression ``e = A v + c0`` of the
variables as a block of its own, tied to the variables by the rows
``z - A W x = c0`` (:mod:`fwmodel.compiler.compile`). Where the expression is
in other units than the variables (``fm.L1Ball(1e3 * D @ x, 1e3)``: z is 1e3
times D x), the block is held in the variables' units instead: the block's
point is ``z' = z / c`` in ``S / c`` and its rows are ``c z' - A W x = c0``, a
column scaling of M. The model is the same (``z = c z'``); what changes is
what the engine's Euclidean choices see. Its projected-gradient step moves
the projected blocks together with one step size, and its row norms, row
metric, penalty and stopping scales all mix the blocks' coordinates: with
``z`` in units 1e3 times x's, one step size cannot suit both (measured in
``benchmarks/copy_units.py``: max_iter at s = 1e-3 and 1e3, 68 iterations
at s = 1).

``S / c`` is built as a set of S's own family (:func:`in_units`): an L1 ball
of radius r / c, a box of bounds / c, a simplex of total / c, an ellipsoid
``z' P z' <= t / c^2`` (their LMOs,
atoms, projections, groups and faces are the family's own, not a wrapper's
dense vertices), with ``derived_from = S`` and the map back to S's
expression, :meth:`InUnits.image_of` (``c z'``), so that ``prob.point_in(S)``
and the norm bounds' multipliers read the point and the gradient in S's units
(:func:`fwmodel.compiler.compile._held_by_one_block`). Data given by
fm.Parameters stay Parameters (``r / c`` is an expression of them), and a
refresh re-reads S's data too.
"""
from __future__ import annotations

import numpy as np

from .base import ConvexSet
from .box import Box, LinfBall
from .ellipsoid import Ellipsoid
from .ksparse import KSparsePolytope
from .l1 import L1Ball
from .l2 import L2Ball
from .simplex import Simplex
from .trace_norm import TraceNormBall


class InUnits:
    """Mixin of a set ``S / units`` built by :func:`in_units` (``derived_from`` is S)."""

    units = 1.0
    derived_from = None

    def image_of(self, flat_point):
        """``units * z'``: the block's point in S's units (S's expression's value)."""
        return self.units * np.asarray(flat_point, dtype=float).ravel()

    def gradient_in_image(self, flat_gradient):
        """``g / units``: a gradient with respect to z', as one with respect to ``z = units * z'``."""
        return np.asarray(flat_gradient, dtype=float).ravel() / self.units

    def refresh(self):
        # S's own data too: its multipliers and messages read them (write_norm_duals, empty_sets)
        source = self.derived_from.refresh()
        return super().refresh() or source

    def __repr__(self):
        return f"{self.derived_from!r} (in units of {self.units:g})"


_CLASSES = {}


def _in_units_class(cls):
    """``cls`` with the :class:`InUnits` mixin (one class per family, made once; the family's name)."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (InUnits, cls), {"__module__": __name__, "__qualname__": cls.__qualname__})
    return _CLASSES[cls]


def _divided(source, units):
    """A datum (a number, an array or an fm.Parameter expression) divided by ``units``."""
    if isinstance(source, (int, float, np.number, np.ndarray)):
        return np.asarray(source, dtype=float) / units if np.ndim(source) else float(source) / units
    return source / units  # an fm expression of Parameters: stays one (re-read at every refresh)


def _arguments(s, units):
    """``(args, kwargs)`` that build S / units with S's constructor, or None for a family not listed."""
    data = lambda name: _divided(s.data_source(name), units)  # noqa: E731
    kind = type(s)
    if kind is L1Ball:
        return (s.expr, data("radius")), {"symmetric": s.symmetric}
    if kind in (L2Ball, LinfBall):
        return (s.expr, data("radius")), {}
    if kind is Box and s.__dict__.get("_bounds_origin") is None:
        return (s.expr, data("lower"), data("upper")), {}
    if kind is Simplex:
        return (s.expr, data("total")), {"axis": s.axis, "equality": s.equality}
    if kind is KSparsePolytope:
        return (s.expr, s.k, data("radius")), {}
    if kind is Ellipsoid:  # (u z)' P (u z) <= t: z' P z <= t / u^2
        return (s.expr, s.P, _divided(s.data_source("bound"), units * units)), {
            "_eigendecomposition": (s._eigenvalues, s._eigenvectors)}  # (the same P: not factored again)
    if kind is TraceNormBall and not s.psd:  # (a PSD ball's multipliers are read from the ball's own block)
        return (s.expr, data("radius")), {"lmo_tol": s.lmo_tol, "dense_threshold": s.dense_threshold,
                                          "symmetric": s.symmetric}
    return None


def has_units(s: ConvexSet):
    """Whether :func:`in_units` builds ``S / units`` for S's family."""
    return _arguments(s, 1.0) is not None


def in_units(s: ConvexSet, units: float):
    """The set ``S / units`` (``units > 0``) as a set of S's family on S's expression, or None.

    Its points are S's divided by ``units``: ``z' in S / units`` exactly when
    ``units * z' in S``. None for the families not listed in
    :func:`_arguments` (user-defined sets, the polytopes without a scale such
    as the Birkhoff polytope, merged sets, PSD trace balls): the compiler then
    keeps S in its own units.
    """
    if not units > 0 or not np.isfinite(units):
        raise ValueError(f"in_units: units must be a positive finite number, got {units!r}")
    made = _arguments(s, units)
    if made is None:
        return None
    args, kwargs = made
    scaled = _in_units_class(type(s))(*args, **kwargs)
    object.__setattr__(scaled, "units", float(units))
    object.__setattr__(scaled, "derived_from", s)
    return scaled
