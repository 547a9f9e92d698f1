"""Boxes {lower <= x <= upper} and the L-infinity ball {||vec(x)||_inf <= radius}."""
from __future__ import annotations

import functools

import numpy as np

from ..errors import EmptySetError, ModelError
from ._common import as_direction, as_flat_direction, as_point, check_number_array
from .atoms import DenseAtom
from .base import ConvexSet, nonnegative_data


def _bound(name, value, shape):
    """A finite bound: a float when given as a number, else an array of ``shape``.

    Validated by :func:`~fwmodel.sets._common.check_number_array` (numbers
    only, finite, at most ``MAX_DATA_MAGNITUDE`` in magnitude, broadcasting
    to the expression's shape).
    """
    return check_number_array("Box", name, value, shape)


def box_of_bounds(expr, lower, upper, origin):
    """The Box the compiler builds from bounds the user wrote as constraints (``x >= lo``, ``x <= hi``).

    Contradictory bounds do not raise: they make the solve end "infeasible",
    naming ``origin`` (the constrained variable).
    """
    box = Box.__new__(Box)
    object.__setattr__(box, "_bounds_origin", origin)
    box.__init__(expr, lower, upper)
    return box


class Box(ConvexSet):
    """The box ``{x : lower <= x <= upper}`` (elementwise).

    ``lower`` and ``upper`` are numbers or arrays that broadcast to the
    expression's shape, finite, with ``lower <= upper``.

    The LMO is separable: ``<d, s> = sum_i d_i s_i`` is minimized coordinate
    by coordinate, taking ``s_i = upper_i`` where ``d_i < 0`` and
    ``s_i = lower_i`` elsewhere (``d_i = 0``: either bound minimizes; the
    lower one is taken so that equal directions give equal vertices).
    The vertex is dense, but keyed by its bit pattern (which bound each
    coordinate takes) instead of a hash of the values.
    """

    is_polytope = True
    #: a box (``projection_choice.candidates``: its per-coordinate FW steps are kept on polytope-only models)
    is_box = True

    def __init__(self, expr, lower, upper):
        super().__init__(expr)
        shape = tuple(self.shape)
        self._store_data("lower", lower, functools.partial(_bound, "lower", shape=shape))
        self._store_data("upper", upper, functools.partial(_bound, "upper", shape=shape))
        self._data_changed()

    def _data_changed(self):
        if self.lower is None or self.upper is None:  # a Parameter without a value yet
            return
        # flat views for the oracle (floats stay floats: np.where is then cheapest)
        self._lo = self.lower if isinstance(self.lower, float) else self.lower.ravel()
        self._hi = self.upper if isinstance(self.upper, float) else self.upper.ravel()
        gap = np.asarray(self._hi) - np.asarray(self._lo)
        object.__setattr__(self, "empty_reason", None)
        if np.any(gap < 0):
            first = int(np.flatnonzero(np.broadcast_to(gap < 0, (self.size,)))[0])
            lo = float(np.broadcast_to(self._lo, (self.size,))[first])
            hi = float(np.broadcast_to(self._hi, (self.size,))[first])
            origin = self.__dict__.get("_bounds_origin")
            if origin is not None:  # built by the compiler from the user's bounds
                reason = (f"the bounds on {origin} (with those its other sets imply) contradict each other: "
                          f"lower {lo:.6g} > upper {hi:.6g} at flat entry {first}")
            else:
                reason = (f"{type(self).__name__}: lower must be <= upper in every entry, but lower {lo:.6g} > "
                          f"upper {hi:.6g} at flat index {first} (for {self.expr!r})")
            if origin is None and not self.__dict__.get("_sources"):
                raise EmptySetError(reason)  # constant data given to the set itself: a malformed set
            # data from Parameters or from constraints: the model is infeasible for
            # these values, which the solve reports as its status (as CVXPY does)
            object.__setattr__(self, "empty_reason", reason)
            self._free = None
            return
        # Coordinates with lower == upper take the same value either way; mask
        # them out of the key so that equal vertices get equal keys.
        self._free = None if np.all(gap > 0) else np.broadcast_to(gap > 0, (self.size,)).copy()

    def coordinate_bounds(self):
        """The box itself."""
        return (np.broadcast_to(self._lo, (self.size,)).astype(float),
                np.broadcast_to(self._hi, (self.size,)).astype(float))

    def symmetric_variant(self):
        """With bounds equal to their transposes, the vertex along a symmetrized direction is symmetric."""
        from .symmetric import SymmetricPart

        shape = tuple(self.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            return None
        sources = self.__dict__.get("_sources", {})
        for name in ("lower", "upper"):
            if name in sources:
                # a Parameter's value can change after compiling: only a scalar bound stays
                # symmetric whatever its value (else the consistency rows keep X = X^T)
                if getattr(sources[name][0], "size", 1) != 1:
                    return None
                continue
            bound = getattr(self, name)
            if not isinstance(bound, float):
                B = np.broadcast_to(np.asarray(bound, dtype=float), shape)
                if not np.array_equal(B, B.T):
                    return None
        return SymmetricPart(self)

    def _vertex(self, upper_mask):
        return np.where(upper_mask, self._hi, self._lo)

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        take_upper = d < 0
        vertex = self._vertex(take_upper)
        bits = take_upper if self._free is None else (take_upper & self._free)
        return DenseAtom(vertex, key=("box", np.packbits(bits).tobytes()))

    def lmo(self, direction):
        d = as_direction(self, direction)
        return self._vertex(d.ravel() < 0).reshape(tuple(self.shape))

    def interval_bounds(self):
        """Flat lower and upper bounds: declares the set a product of intervals.

        A solver can then move every coordinate by its own Frank-Wolfe step
        instead of along one dense vertex of the box.
        """
        return (np.broadcast_to(np.asarray(self._lo, dtype=float), (self.size,)),
                np.broadcast_to(np.asarray(self._hi, dtype=float), (self.size,)))

    has_cheap_projection = True

    def project_flat(self, flat_point):
        """Euclidean projection: clip every entry to its bounds."""
        return np.clip(np.asarray(flat_point, dtype=float).ravel(), self._lo, self._hi)

    def contains_origin(self):
        """Exactly ``lower <= 0 <= upper`` in every entry (not :meth:`contains` at 0, whose slack has a floor
        of 1: a box of floors 1e-11 held the origin by it, and the engine started the block outside the set)."""
        if self.lower is None or self.upper is None or self.empty_reason is not None:
            return super().contains_origin()
        return bool(np.all(np.asarray(self._lo) <= 0) and np.all(np.asarray(self._hi) >= 0))

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        x = x.ravel()
        # rounding relative to the bounds' own size (no floor of 1: a box [1e-10, 2e-10] then "contained" 0, the
        # solve started there and returned 5e-11, outside the box, as "optimal")
        scale = max(float(np.max(np.abs(self._lo))), float(np.max(np.abs(self._hi))))
        slack = tol * scale
        return bool(np.all(x >= np.asarray(self._lo) - slack) and np.all(x <= np.asarray(self._hi) + slack))

    def diameter(self):
        gap = np.broadcast_to(np.asarray(self._hi) - np.asarray(self._lo), (self.size,))
        return float(np.linalg.norm(gap))

    def __repr__(self):
        def show(name):
            b = getattr(self, name)
            if b is None:  # an fm.Parameter without a value yet
                return self._datum_text(name)
            return f"{b:g}" if isinstance(b, float) else f"<array {tuple(self.shape)}>"

        return f"Box({self.expr!r}, lower={show('lower')}, upper={show('upper')})"


class LinfBall(Box):
    """The L-infinity ball ``{x : max_i |x_i| <= radius}``: the box ``[-radius, radius]^n``.

    LMO: ``s = -radius * sign(d)`` coordinatewise (``-radius`` where
    ``d_i = 0``), so ``<d, s> = -radius * ||d||_1``.
    """

    def __init__(self, expr, radius=1.0):
        ConvexSet.__init__(self, expr)
        self._store_data("radius", radius, nonnegative_data("radius", "LinfBall"))
        self._data_changed()

    def _data_changed(self):
        if self.radius is None:  # a Parameter without a value yet
            return
        object.__setattr__(self, "lower", -self.radius)
        object.__setattr__(self, "upper", self.radius)
        super()._data_changed()

    def __repr__(self):
        return f"LinfBall({self.expr!r}, radius={self._datum_text('radius')})"
