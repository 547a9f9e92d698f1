"""A set on an elementwise invertible affine map of a variable, seen from the variable."""
from __future__ import annotations

import numpy as np

from ._common import InnerData, as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import DenseAtom
from .base import ConvexSet
from .hulls import GroupSums, PreimageHull, ScaledGroupSums


class PreimageAtom(DenseAtom):
    """A vertex ``x = (z - c) / a`` of an :class:`AffinePreimage`, stored densely, with S's vertex ``z``.

    ``inner`` is S's atom (a rank-one atom of a trace-norm ball): the steps
    that work in S's coordinate (in-face and rank-k steps on a low-rank face,
    :class:`~fwmodel.engine.inface.LowRankFace`) read it there.
    """

    def __init__(self, vector, inner, key=None):
        super().__init__(vector, key)
        self.inner = inner


class AffinePreimage(InnerData, ConvexSet):
    """``{x : a * x + c in S}`` for a set S on ``a * x + c`` with every ``a_i != 0``.

    The compiler builds it for ``fm.Box(x + 5, 0, 1)``, ``fm.L1Ball(2 * x, 1)``
    or ``fm.norm(x - x0, 2) <= r`` (entries of one variable, each scaled and
    shifted by constants), so that the set holds the variable itself (a copy
    of its entries) instead of a new expression block tied to it by rows.

    LMO. With ``x = (z - c) / a`` and z in S, ``<d, x> = <d / a, z> - <d / a, c>``,
    so ``x* = (LMO_S(d / a) - c) / a``: one call to S's LMO. Vertices are
    stored densely. ``expr`` is the selection of the variable's entries (in
    the order of S's entries); ``scale`` and ``offset`` are flat arrays in
    that order.

    Structure read through to S where the map keeps it: a box's preimage is
    a box (:meth:`interval_bounds`); with one scale ``a`` for every entry,
    the map is a similarity, so the projection of an S that declares
    ``has_projection`` (a trace-norm ball) gives the preimage's
    (:meth:`project_flat`; the cheap projections of L1 and L2 balls are not
    read through: their preimages keep FW steps, as they always had) and S's
    low-rank face is declared with the map (:meth:`low_rank_face`: the
    iterate minus the offset is low rank).
    """

    def __init__(self, inner, expr, scale, offset):
        super().__init__(expr)
        self.inner = inner
        self._a = np.asarray(scale, dtype=float).ravel()
        self._c = np.asarray(offset, dtype=float).ravel()
        self.is_polytope = inner.is_polytope
        self.is_box = inner.is_box
        # one scale for every entry: x -> a x + c is a similarity (a projection and a face read through)
        self._uniform_scale = float(self._a[0]) if self._a.size and np.all(self._a == self._a[0]) else None
        self.has_projection = bool(getattr(inner, "has_projection", False)) and self._uniform_scale is not None
        # a warm-started projection (the Birkhoff polytope's) is timed as one by projection="auto"
        self.projection_warm_starts = bool(getattr(inner, "projection_warm_starts", False))
        self._declares_face = self.low_rank_face() is not None

    def lmo_atom(self, flat_direction):
        return self._vertex(self.inner.lmo_atom, flat_direction)

    def lmo_for_solve(self):
        """Through S's own :meth:`lmo_for_solve`: S's per-solve warm start (a trace-norm ball's
        Lanczos vectors), not the state of S's direct calls, so a re-solve repeats the first."""
        inner_lmo = self.inner.lmo_for_solve()
        if callable(getattr(inner_lmo, "exact", None)):  # S's LMO may miss (warm-started Lanczos): its check passes through
            return _CheckedPreimageLmo(self, inner_lmo)
        return lambda flat_direction: self._vertex(inner_lmo, flat_direction)

    def _vertex(self, inner_lmo, flat_direction):
        d = as_flat_direction(self, flat_direction)
        return self._preimage_atom(inner_lmo(d / self._a))

    def _preimage_atom(self, z_atom):
        # on a low-rank face the ball's atom is the identity (its key), not a hash of the dense
        # vector (an 8 MB hash per LMO call at d = 1000, 20 ms); a fixed map keeps keys one-to-one
        key = ("preimage", z_atom.key) if self._declares_face and z_atom.key is not None else None
        return PreimageAtom((z_atom.to_dense() - self._c) / self._a, z_atom, key)

    def initial_atom(self):
        """The preimage of S's initial point where S declares a low-rank face (the iterate minus the
        offset starts low rank, as the face's steps need), else the base class's (the origin when
        the preimage holds it)."""
        if not self._declares_face:
            return super().initial_atom()
        return self._preimage_atom(self.inner.initial_atom())

    def low_rank_face(self):
        """S's low-rank face with the map: ``(radius, psd, shape, scale, offset)``, or None.

        Declared when S declares one and every entry has the same scale ``a``:
        then ``z = a x + c`` is low rank where x's block is not (x = (z - c) / a
        with z a combination of S's rank-one atoms), and the engine's in-face
        and rank-k steps work on z (``fwmodel.engine.inface.LowRankFace``). An
        entrywise scale would not keep z's rank; no face is declared then.
        """
        face = self.inner.low_rank_face()
        if face is None or self._uniform_scale is None:
            return None
        radius, psd, shape = face
        return radius, psd, shape, self._uniform_scale, self._c

    def affine_hull(self):
        """S's hull read through the map: where every entry has the same scale the normals are S's
        (:class:`~fwmodel.sets.hulls.PreimageHull`: ``fm.Simplex(2 * x)``); with an entrywise scale a simplex's
        sums become weighted sums (:class:`~fwmodel.sets.hulls.ScaledGroupSums`: ``fm.Simplex(prices * x)``);
        other hulls under an entrywise scale: None."""
        inner = self.inner.affine_hull()
        if inner is None:
            return None
        if self._uniform_scale is not None:
            return PreimageHull(inner, self._uniform_scale, self._c)
        if isinstance(inner, GroupSums):
            return ScaledGroupSums(inner, self._a, self._c)
        return None

    def lmo(self, direction):
        return dense_vertex(self, self.lmo_atom(as_direction(self, direction).ravel()))

    def image_of(self, flat_point):
        """``a * x + c``: the value of S's expression at the variable's entries ``x`` (flat, S's order)."""
        return self._a * np.asarray(flat_point, dtype=float).ravel() + self._c

    def gradient_in_image(self, flat_gradient):
        """``g / a``: a gradient with respect to the variable's entries x, as one with respect to ``a * x + c``."""
        return np.asarray(flat_gradient, dtype=float).ravel() / self._a

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        return self.inner.contains((self._a * x.ravel() + self._c).reshape(tuple(self.inner.shape)), tol)

    def coordinate_bounds(self):
        lo, hi = self.inner.coordinate_bounds()
        first, second = (lo - self._c) / self._a, (hi - self._c) / self._a
        return np.minimum(first, second), np.maximum(first, second)

    def interval_bounds(self):
        """The box in x's coordinates when S is a box (declares ``interval_bounds()``), else None.

        The preimage of a box under an elementwise affine map is a box:
        ``lower <= a x + c <= upper`` is ``x`` between ``(lower - c) / a`` and
        ``(upper - c) / a``. Then the solver takes its per-coordinate steps
        and projections (clipping) in x's coordinates.
        """
        declared = getattr(self.inner, "interval_bounds", None)
        bounds = declared() if declared is not None else None
        if bounds is None:
            return None
        first, second = (bounds[0] - self._c) / self._a, (bounds[1] - self._c) / self._a
        return np.minimum(first, second), np.maximum(first, second)

    @property
    def has_cheap_projection(self):
        return self.interval_bounds() is not None

    def project_flat(self, flat_point):
        """Euclidean projection: a clip when S is a box; with one scale ``a`` and S's projection
        ``P_S``, ``(P_S(a x + c) - c) / a`` (the map is a similarity: distances scale by |a|)."""
        bounds = self.interval_bounds()
        if bounds is not None:
            return np.clip(np.asarray(flat_point, dtype=float).ravel(), *bounds)
        if not self.has_projection:
            raise NotImplementedError(f"{self!r} has no projection (a box's preimage has one, and so has "
                                      "a preimage with one scale of a set declaring has_projection, such as "
                                      "a trace-norm ball)")
        a = self._uniform_scale
        z = self.inner.project_flat(a * np.asarray(flat_point, dtype=float).ravel() + self._c)
        return (z - self._c) / a

    @property
    def projection_time_estimate(self):
        estimate = getattr(self.inner, "projection_time_estimate", None)
        return estimate if self.has_projection else None

    def diameter(self):
        inner = self.inner.diameter()
        return None if inner is None else float(inner / np.abs(self._a).min())

    def __repr__(self):
        return f"{self.inner!r} (on {self.expr!r})"


class MovingPreimage(AffinePreimage):
    """``{x : a * x + c in S}`` with the offset ``c`` computed from Parameters, re-read at each solve.

    The compiler builds it for ``norm(p * x + c) <= t`` (p a scalar Parameter expression, c a constant or a
    Parameter expression, x a variable or an elementwise map ``a * x + c0`` of one): with p != 0 that is the
    ball ``norm(x + c / p) <= t / |p|``, whose center ``-c / p`` moves with p and c as its radius does
    (``lowering.ParameterFactor``). ``offset`` duck-types a Parameter expression (``value``,
    ``parameters()``): its value, broadcast to the entries, is ``c`` at each :meth:`refresh`. The data
    version counts the inner set's changes and the offset's, so a warm start restarts the block when either
    moved (as for a radius), and the LMO, bounds, membership and projection of :class:`AffinePreimage` read
    the current offset.
    """

    def __init__(self, inner, expr, scale, offset):
        self._offset_source = offset
        self._moves = 0
        super().__init__(inner, expr, scale, np.zeros(np.size(scale)))
        self._read_offset()

    def _read_offset(self):
        """Read the offset's current value; True when it moved (None while a Parameter has no value)."""
        value = self._offset_source.value
        if value is None:
            return False
        new = np.array(np.broadcast_to(np.asarray(value, dtype=float).ravel() if np.size(value) == self._a.size
                                       else np.asarray(value, dtype=float), (self._a.size,)), dtype=float)
        if np.array_equal(new, self._c):
            return False
        self._c = new
        self._moves += 1
        return True

    def refresh(self):
        changed = self.inner.refresh()
        moved = self._read_offset()
        if changed or moved:
            object.__setattr__(self, "_contains_origin", None)
        return changed or moved

    def parameters(self):
        from .base import distinct_parameters

        return distinct_parameters([self.inner, self._offset_source])

    @property
    def data_version(self):
        return self.inner.data_version + self._moves


class ScaledPreimage(AffinePreimage):
    """``{x : a * x + c in S}`` with both the scale ``a`` and the offset ``c`` computed from Parameters at each solve.

    The compiler builds it for a norm bound whose argument is an elementwise map of one variable with a vector
    Parameter factor, ``fm.norm1(fm.multiply(p, x) + c) <= t`` (also ``norm2``, ``norm_inf``, ``abs``; c data or a
    Parameter expression), where no other set holds x: S is the ball on ``p * x + c`` itself (its multiplier
    is CVXPY's), and ``source()`` returns the current ``(a, c)`` (flat, in S's order), or None while a Parameter
    has no value. The LMO is :class:`AffinePreimage`'s, ``x* = (LMO_S(d / a) - c) / a``, exact for every
    ``a`` without a zero entry. An entry with ``a_i = 0`` at a solve leaves ``x_i`` unbounded in the set (the
    constraint no longer involves it): :meth:`refresh` raises the ModelError that ``zero_message(indices)``
    words (naming the constraint, the Parameter and what to write instead). No projection or low-rank face
    is read through (the scale may differ per entry and per solve). ``parameters`` are the map's (p, and
    those of c).
    """

    def __init__(self, inner, expr, source, parameters, zero_message):
        self._source, self._zero_message = source, zero_message
        self._map_parameters = list(parameters)  # (the map's: p, and those of c)
        self._moves = 0
        scale, offset = self._read()
        super().__init__(inner, expr, scale, offset)
        self._uniform_scale = None
        self.has_projection = False
        self._declares_face = False

    def _read(self):
        from ..errors import ModelError

        scale, offset = self._source()
        scale, offset = np.asarray(scale, dtype=float).ravel(), np.asarray(offset, dtype=float).ravel()
        zero = np.flatnonzero(scale == 0)
        if zero.size:
            raise ModelError(self._zero_message(zero))
        return scale, offset

    def low_rank_face(self):
        return None

    def refresh(self):
        changed = self.inner.refresh()
        scale, offset = self._read()
        moved = not (np.array_equal(scale, self._a) and np.array_equal(offset, self._c))
        if moved:
            self._a, self._c = scale, offset
            self._moves += 1
        if changed or moved:
            object.__setattr__(self, "_contains_origin", None)
        return changed or moved

    def parameters(self):
        from .base import distinct_parameters

        class _Map:
            parameters = staticmethod(lambda: self._map_parameters)

        return distinct_parameters([self.inner, _Map])

    @property
    def data_version(self):
        return self.inner.data_version + self._moves


class _CheckedPreimageLmo:
    """S's LMO with its check (``exact``, ``tighten``: a trace-norm ball's warm-started Lanczos LMO, see
    :class:`~fwmodel.sets.trace_norm.CheckedLmo`) seen through the map ``a * x + c``."""

    def __init__(self, preimage, inner_lmo):
        self._preimage, self._inner = preimage, inner_lmo

    def __call__(self, flat_direction):
        return self._preimage._vertex(self._inner, flat_direction)

    def exact(self, flat_direction):
        return self._preimage._vertex(self._inner.exact, flat_direction)

    def tighten(self):
        self._inner.tighten()
