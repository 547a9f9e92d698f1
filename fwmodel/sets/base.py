"""The ConvexSet base class: a compact convex set known through its LMO.

A set constrains one expression (a variable or an affine expression of
variables). It knows nothing about problems: the compiler gives every set a
block of the product space and asks the set only for vertices.

To define your own set, subclass :class:`ConvexSet` and implement
:meth:`ConvexSet.lmo`::

    class GroupL1Ball(fm.ConvexSet):
        is_polytope = False
        def __init__(self, expr, radius=1.0):
            super().__init__(expr)
            self.radius = radius
        def lmo(self, direction):
            ...  # a minimizer of <direction, s> over the set, same shape

The engine checks what it can of the answers: it keeps a copy of each vertex
(an LMO may reuse one output buffer, though ``fm.check_lmo`` flags it), and
a Frank-Wolfe gap below zero beyond rounding, which only an LMO that does not
minimize gives (a sign error), stops the solve with a ModelError naming the
set. ``__init__`` must call ``super().__init__(expr)``.

Optional hooks a subclass may override:

- ``is_polytope`` (class attribute): True when the set is the convex hull of
  finitely many vertices; the engine then uses away/pairwise steps on it.
- ``diameter()``: an upper bound on max ||s - s'||; used for scaling defaults.
- ``lmo_atom(flat_direction)``: return a structured :class:`~fwmodel.sets.atoms.Atom`
  (sparse, rank-one, ...) instead of a dense vertex, to keep active sets small.
- ``contains(point, tol)``: membership test, used by ``fm.check_lmo``.
- ``reset()``: forget warm-start state (e.g. a Lanczos start vector).
- ``lmo_for_solve()``: the LMO one solve calls (default ``lmo_atom``); a
  fresh callable with per-solve warm-start state where the set has one.
- ``project_flat(flat_point)`` with ``has_cheap_projection`` (about the cost
  of the LMO) or ``has_projection`` (any cost): the Euclidean projection,
  for projected-gradient steps (``solve(projection=...)``).
- ``coordinate_bounds()``: the smallest box containing the set (default:
  the LMO along -e_i and +e_i for every entry); closes one-sided bounds.
- ``symmetric_variant()``: the set intersected with symmetric matrices, with
  an LMO that keeps iterates exactly symmetric (None when not available).

Sets are immutable once built: their data (``radius``, ``total``,
``lower``, ``upper``, ...) is read-only, because a compiled problem and its
warm starts depend on it. Data that changes between solves is given as an
``fm.Parameter`` (``fm.L1Ball(x, radius=r)`` with ``r = fm.Parameter(nonneg=True)``);
each solve re-reads it (:meth:`ConvexSet.refresh`), and a warm start
restarts the blocks whose set changed.

Declarations of structure the engine can exploit (a set offers them; no
caller tests the set's type):

- ``simplex_groups()``: ``(index, total)`` or ``(index, totals, origin)``
  when the set is a product of simplices (``index[g]`` the flat entries of
  group g; ``totals`` one per group; ``origin``: each group sums to at most
  its total): a pairwise step in every group at once
  (:class:`~fwmodel.sets.simplex.Simplex`).
- ``interval_bounds()``: flat ``(lower, upper)`` when the set is a box: a
  Frank-Wolfe step in every coordinate (:class:`~fwmodel.sets.box.Box`).
- ``affine_hull()``: the equalities every point meets (:mod:`fwmodel.sets.hulls`):
  constraint rows nearly parallel to them are kept as their part off them
  (:class:`~fwmodel.sets.simplex.Simplex`, :class:`~fwmodel.sets.birkhoff.BirkhoffPolytope`; read through
  an affine map by :class:`~fwmodel.sets.preimage.AffinePreimage`: any hull under one scale, a simplex's
  under an entrywise one).
- ``low_rank_face()``: ``(radius, psd, shape)`` for sets whose faces are
  low-rank matrices: in-face and rank-k steps
  (:class:`~fwmodel.sets.trace_norm.TraceNormBall`); or
  ``(radius, psd, shape, scale, offset)`` for such a ball of ``scale * x +
  offset`` (:class:`~fwmodel.sets.preimage.AffinePreimage`), whose steps
  work on the ball's coordinate (the vertices carry the ball's atom as ``inner``).
- ``has_cheap_projection`` and ``project_flat(point)``: projected-gradient
  steps (option ``projection``); ``has_projection`` (any cost) with an
  optional ``projection_time_estimate()``: measured by ``projection="auto"``.
- ``projects_unread`` (attribute): projected-gradient steps on the block even
  where the objective does not read it (a hinge budget's hidden excess,
  :class:`~fwmodel.sets.simplex.HingeExcessSimplex`).
- ``batch_group_size()``: S when the set is a batch of polytopes over
  consecutive runs of S entries whose joint vertex splits into the groups'
  vertices: BPCG per group (:class:`~fwmodel.sets.alignment.AlignmentPolytope`).
- ``group_count()``: how many independent sets of one kind the set is a
  product of (the groups of a batched Simplex, a batch of alignments);
  above a few, step="auto" takes no active-set steps on the whole block.
- ``is_box`` (attribute): the set is a box (its symmetric part too): on a
  model made only of polytopes, ``projection="auto"`` keeps its vertex steps.
- ``atoms_of_point(flat_point)``: the point as ``(atoms, weights)``, where the
  set knows a cheap decomposition: a warm start then resumes a block that has
  no active set (after projection steps) instead of restarting it
  (:class:`~fwmodel.sets.l1.L1Ball`).
- ``keeps_symmetric``: every point and every LMO vertex is a symmetric
  matrix, so a symmetric variable held by the set needs no symmetry rows.
- ``implies_psd``: the set holds its expression symmetric PSD (a PSD trace
  ball), so a ``PSD=True`` variable needs no trace bound of its own.

Every declaration has a default here (nothing offered); the compiler and
:class:`~fwmodel.problem.Problem` read only these.
"""
from __future__ import annotations

import functools

import math

import numpy as np

from ..errors import ModelError
from .atoms import Atom, DenseAtom, RankOneAtom, SparseAtom

#: attributes that hold a set's data: read-only once the set is built
DATA_FIELDS = frozenset({"expr", "radius", "total", "lower", "upper", "psd", "symmetric", "k", "axis",
                         "equality", "kind", "band", "lmo_tol", "dense_threshold"})


class ReadOnlySetError(ModelError, AttributeError):
    """Raised when a set's data attribute is assigned after the set is built."""


class UnbuiltSetError(ModelError, AttributeError):
    """Raised when a set is used whose ``__init__`` never called ``ConvexSet.__init__`` (no ``expr``)."""


def distinct_parameters(holders):
    """The fm.Parameters of ``holders`` (anything with ``parameters()``), each once, in first-seen order."""
    seen, out = set(), []
    for holder in holders:
        for p in holder.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


#: a product of more groups than this (``group_count``) keeps no joint active set in the engine: pairwise
#: steps there move every group along one stored joint vertex, measured slower than per-group steps
JOINT_GROUPS_LIMIT = 8


def _defined_outside(cls, name):
    """True when the class that gives ``cls`` its method ``name`` is not one of fwmodel's."""
    for k in cls.__mro__:
        if name in k.__dict__:
            return not (getattr(k, "__module__", "") or "").startswith("fwmodel.")
    return False


def user_written(s, _depth=0):
    """True when the set's LMO is user code: a subclass of fm.ConvexSet written outside fwmodel that gives
    its own ``lmo``, ``lmo_atom`` or ``lmo_for_solve``, or a set the compiler wraps around one (``inner``,
    ``derived_from``). The engine checks such LMOs' answers (:func:`checked_user_lmo`) and, before it
    certifies "optimal", that they minimize (``engine.certificates.refuse_maximizing_lmo``); built-in
    sets are trusted, at no cost."""
    if any(_defined_outside(type(s), name) for name in ("lmo", "lmo_atom", "lmo_for_solve")):
        return True
    if _depth < 8:
        for attr in ("inner", "derived_from"):
            inner = getattr(s, attr, None)
            if isinstance(inner, ConvexSet) and inner is not s and user_written(inner, _depth + 1):
                return True
    return False


def check_atom(s, atom, size, flat_direction):
    """Raise a ModelError naming the set ``s`` where a user LMO's atom is not a vertex the engine can use:
    not an Atom, of another size, with entries outside the block, NaN or infinite for a finite direction."""
    name = type(s).__name__
    if not isinstance(atom, Atom):
        raise ModelError(f"{name}.lmo_atom returned {type(atom).__name__}, not an fm Atom (fm.SparseAtom, "
                         "fm.DenseAtom, ...): return an atom, or give lmo() a dense vertex instead")
    if int(atom.size) != size:
        raise ModelError(f"{name}.lmo_atom returned an atom of size {atom.size}, expected {size} (the set's "
                         "expression's number of entries)")
    if isinstance(atom, SparseAtom):
        idx = atom.indices
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
            bad = int(idx[(idx < 0) | (idx >= size)][0])
            raise ModelError(f"{name}.lmo_atom returned a SparseAtom with index {bad} outside the set's "
                             f"{size} entries (flat indices 0 to {size - 1})")
        values = [atom.values]
    elif isinstance(atom, DenseAtom):
        values = [atom.vector]
    elif isinstance(atom, RankOneAtom):
        values = [atom.u, atom.v, np.asarray([atom.scale])]
    else:
        return
    if not all(np.isfinite(v).all() for v in values) and np.isfinite(flat_direction).all():
        raise ModelError(f"{name}.lmo_atom returned NaN or infinite entries for a finite direction: a vertex "
                         "of a bounded set is finite")


def checked_user_lmo(s, lmo):
    """``lmo`` (flat direction -> Atom) whose answers :func:`check_atom` checks, where it is user code
    (:func:`user_written`); ``lmo`` itself for built-in sets, and for an LMO that carries its own check
    (``exact``, an inexact LMO the certificate re-measures)."""
    if not user_written(s) or callable(getattr(lmo, "exact", None)):
        return lmo
    size = int(s.size)

    def checked(flat_direction):
        atom = lmo(flat_direction)
        check_atom(s, atom, size, flat_direction)
        return atom

    return checked


class ConvexSet:
    """A compact convex set over the values of ``expr``, given by its LMO.

    A subclass needs only :meth:`lmo`. Optional hooks: ``is_polytope``
    (enables away/pairwise steps), :meth:`diameter`, :meth:`contains`,
    :meth:`lmo_atom` (a structured vertex instead of a dense one) and
    :meth:`reset` (forget warm-start state); see the module docstring.
    ``fm.check_lmo(MySet, shape=...)`` tests an implementation.
    """

    #: True when the set is a polytope (finitely many vertices).
    is_polytope = False
    #: True for a box (and sets that are one, such as its symmetric part): on a model made only of
    #: polytopes, solve(projection="auto") keeps a box's vertex steps (``engine.projection_choice``)
    is_box = False
    #: True when :meth:`project_flat` is about as cheap as the LMO (one or a
    #: few passes over the entries): the engine may then take projected-gradient
    #: steps on the set's block (``solve(projection=...)``).
    has_cheap_projection = False
    #: True when :meth:`project_flat` takes ``out=`` (a flat array, possibly the
    #: point itself) and writes the projection there without a point-size temporary
    projects_in_place = False
    #: True when the engine may take projected-gradient steps on the set's block although the objective
    #: does not read it (a hinge budget's hidden excess, :class:`~fwmodel.sets.simplex.HingeExcessSimplex`);
    #: elsewhere such a block keeps its vertex steps on a model made only of polytopes (``engine.projection_choice``)
    projects_unread = False
    #: True when :meth:`project_flat` exists, cheap or not (a trace-norm ball's
    #: needs a full eigendecomposition): with ``solve(projection="auto")`` the
    #: engine then measures the projection against an iteration and takes
    #: projected-gradient steps on the block when they cost little more.
    has_projection = False
    #: None, or why the set's current data leave it empty (a box whose bounds,
    #: from Parameters or from the user's constraints, cross): the solve then
    #: ends with status "infeasible" and this message
    empty_reason = None
    #: optional () -> seconds: a guess of :meth:`project_flat`'s cost (``projection="auto"``)
    projection_time_estimate = None
    #: True when :meth:`project_flat` starts from its previous call's state (cheaper on a point near the
    #: last one): ``projection="auto"`` then times it on a sequence of nearby points, as a solve calls it
    projection_warm_starts = False
    #: True when every point of the set, and every vertex its LMO returns, is a symmetric matrix
    keeps_symmetric = False
    #: True when the set holds its expression symmetric positive semidefinite
    implies_psd = False

    def simplex_groups(self):
        """``(index, total)`` or ``(index, totals, origin)`` when the set is a product of simplices (``index[g]``:
        the flat entries of group g; see the module's notes), else None."""
        return None

    def interval_bounds(self):
        """Flat ``(lower, upper)`` when the set is a box (a product of intervals), else None."""
        return None

    def affine_hull(self):
        """The equalities every point of the set meets, as a :mod:`fwmodel.sets.hulls` object (a simplex's
        group sums, a Birkhoff polytope's row and column sums), else None: the engine keeps a constraint row
        nearly parallel to them as its part off them (``fwmodel/engine/hull_rows.py``)."""
        return None

    def low_rank_face(self):
        """``(radius, psd, shape)`` when the set's faces are low-rank matrices (in-face steps), else None
        (``(radius, psd, shape, scale, offset)`` for a ball of ``scale * x + offset``, module docstring)."""
        return None

    def batch_group_size(self):
        """S when the set is a batch of polytopes over consecutive runs of S entries (BPCG per group), else None."""
        return None

    def auto_active_set_step(self):
        """The active-set step that ``step="auto"`` takes on the set's block where it keeps an active set:
        None for blended pairwise (BPCG), "pairwise" (pairwise steps, BPCG's local phase where it runs:
        ``engine.steps.BlendedPairwiseStep`` with ``pairwise_steps``) or "away"."""
        return None

    def group_count(self):
        """How many independent sets of one kind this set is a product of (1: one set)."""
        return 1

    def project_flat(self, flat_point):
        """Euclidean projection of a flat point onto the set (where ``has_projection`` or ``has_cheap_projection``)."""
        raise NotImplementedError(f"{type(self).__name__} has no cheap Euclidean projection")

    def __init_subclass__(cls, **kwargs):
        # Wrap every subclass __init__ so that data fields can be assigned while
        # the set is being built (at any depth of super().__init__ calls) and
        # are read-only afterwards.
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        @functools.wraps(init)
        def building(self, *args, **kw):
            depth = self.__dict__.get("_building", 0)
            object.__setattr__(self, "_building", depth + 1)
            try:
                init(self, *args, **kw)
            finally:
                object.__setattr__(self, "_building", depth)

        cls.__init__ = building

    def __getattr__(self, name):
        # reached only where ordinary lookup failed: a subclass whose __init__ skipped
        # super().__init__(expr) has no expr (nor shape, size), which the compiler reads first
        if "expr" not in self.__dict__ and not name.startswith("__"):
            cls = type(self).__name__
            raise UnbuiltSetError(
                f"{cls} was not built: its __init__ never called super().__init__(expr), so the set has no "
                f"constrained expression (looking up {name!r}); call super().__init__(expr) first in "
                f"{cls}.__init__"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in DATA_FIELDS and name in self.__dict__ and not self.__dict__.get("_building", 0):
            raise ReadOnlySetError(
                f"{type(self).__name__}.{name} is read-only: a set is immutable once built (a compiled problem "
                f"and its warm starts depend on it). To change {name} between solves, build the set with an "
                f"fm.Parameter (r = fm.Parameter(nonneg=True, value=...); {type(self).__name__}(expr, ..., r)) "
                "and set r.value; or build a new set and a new Problem"
            )
        object.__setattr__(self, name, value)

    # ------------------------------------------------------- data and Parameters
    def _store_data(self, name, value, check):
        """Store data field ``name`` from a number/array or an fm.Parameter expression.

        ``check(value) -> stored value`` validates. A Parameter (or an
        expression of Parameters) is remembered and re-read by
        :meth:`refresh`; while it has no value the field is None.
        """
        from ..expressions import Expression

        # an fm expression, or data the compiler computes from Parameters (duck-typed)
        if isinstance(value, Expression) or (hasattr(value, "_has_params") and hasattr(value, "parameters")):
            if value._has_vars:
                raise ModelError(f"{type(self).__name__}: {name} must be data (a number or an fm.Parameter), "
                                 f"got an expression of variables, {value!r}")
            if value._has_params:
                self.__dict__.setdefault("_sources", {})[name] = (value, check)
                current = value.value
                object.__setattr__(self, name, None if current is None else self._checked(name, value, check))
                return
            value = value.value
        object.__setattr__(self, name, check(value))

    def _checked(self, name, source, check):
        value = source.value
        try:
            return check(value)
        except ValueError as err:
            names = ", ".join(p.name for p in source.parameters())
            # a radius or total that a Parameter made negative leaves the set empty: the solve ends
            # "infeasible" naming it, as for `norm1(x) <= t` and as in CVXPY (the magnitude is kept,
            # so that the set stays well formed for the compiler until the value is valid again)
            magnitude = self._negative_only(check, value)
            if magnitude is None:
                raise ModelError(f"{err} (from parameter {names}); give it a valid value") from None
            low = float(np.min(value))
            self.__dict__.setdefault("_negative_data", {})[name] = (
                f"{type(self).__name__}({self.expr!r}) holds no point with the current values of {names}: its {name} is {low:g} < 0")
            return magnitude

    @staticmethod
    def _negative_only(check, value):
        """``check`` of |value| where only value's sign failed ``check``, else None."""
        try:
            if not np.any(np.asarray(value, dtype=float) < 0):
                return None
            return check(np.abs(value) if np.ndim(value) else abs(value))
        except (ValueError, TypeError):
            return None

    def data_source(self, name):
        """The fm.Parameter expression behind data field ``name``, else its stored value."""
        sources = self.__dict__.get("_sources", {})
        return sources[name][0] if name in sources else getattr(self, name)

    def _datum_text(self, name):
        """Data field ``name`` as a repr shows it: its number, or, while the fm.Parameter behind it has no
        value yet, that Parameter's expression (a set can be printed, and its problem compiled, before then)."""
        value = getattr(self, name)
        if value is None:
            return repr(self.data_source(name))
        return f"{value:g}"

    def parameters(self):
        """The fm.Parameters the set's data depends on (not those of its expression)."""
        return distinct_parameters(source for source, _ in self.__dict__.get("_sources", {}).values())

    @property
    def data_version(self):
        """A counter that :meth:`refresh` increases whenever the set's data changes."""
        return self.__dict__.get("_version", 0)

    def refresh(self):
        """Re-read the Parameters behind the set's data; True when something changed.

        Called by each solve before iterating. A Parameter without a value is
        a ModelError naming it.
        """
        changed = False
        previous_negative = self.__dict__.pop("_negative_data", None)
        for name, (source, check) in self.__dict__.get("_sources", {}).items():
            if source.value is None:
                names = ", ".join(p.name for p in source.parameters() if p.value is None)
                raise ModelError(f"parameter {names} has no value: set {names}.value before solving "
                                 f"({type(self).__name__}.{name} depends on it)")
            new = self._checked(name, source, check)
            old = self.__dict__.get(name)
            if old is None or np.shape(old) != np.shape(new) or not np.array_equal(old, new):
                object.__setattr__(self, name, new)
                changed = True
        negative = self.__dict__.get("_negative_data")
        changed = changed or bool(negative) != bool(previous_negative)
        if changed:
            object.__setattr__(self, "_version", self.data_version + 1)
            object.__setattr__(self, "_contains_origin", None)
            self._data_changed()
        if negative:
            object.__setattr__(self, "empty_reason", "; ".join(negative.values()))
        elif previous_negative and self.__dict__.get("empty_reason") == "; ".join(previous_negative.values()):
            object.__setattr__(self, "empty_reason", None)  # (a set whose _data_changed does not set its own)
        return changed

    def _data_changed(self):
        """Hook: recompute what derives from the data fields (after init and refresh)."""

    def __init__(self, expr):
        from ..expressions import as_expression  # sets -> expressions only

        self.expr = as_expression(expr)
        if self.expr.size == 0:
            raise ModelError(f"{type(self).__name__}: the constrained expression {self.expr!r} has no entries (shape {self.expr.shape})")
        if not self.expr.is_affine():
            raise ModelError(
                f"{type(self).__name__}: the constrained expression must be affine in the variables, got {self.expr!r}"
            )

    # ------------------------------------------------------------------ shape
    @property
    def shape(self):
        """Shape of the constrained expression (and of every vertex)."""
        return self.expr.shape

    @property
    def size(self):
        return math.prod(self.shape)  # not np.prod: read on every LMO call, and a Python int is exact

    # -------------------------------------------------------------- the oracle
    def lmo(self, direction):
        """Return a vertex ``s`` minimizing ``<direction, s>`` over the set.

        ``direction`` and the result have the expression's shape.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement lmo(direction)")

    def lmo_atom(self, flat_direction):
        """Engine entry point: the LMO on a flat direction, as an Atom.

        The default calls :meth:`lmo` and stores a copy of the vertex densely: the engine keeps
        vertices (active sets, the last FW vertex), and an LMO that returns one reused buffer (or a
        view of its own data, or of the direction) would change them at its next call. Measured: a
        box whose LMO wrote into one buffer ran least squares to max_iter at 12.609 (Clarabel:
        10.889). Built-in sets give their vertices as atoms of their own and never come here.
        """
        direction = flat_direction.reshape(self.shape)
        raw = self.lmo(direction)
        if np.iscomplexobj(raw):  # (np.array(..., dtype=float) would warn and drop the imaginary parts)
            raise ModelError(f"{type(self).__name__}.lmo returned complex entries: a vertex of a set of real "
                             "matrices is real")
        vertex = np.array(raw, dtype=float)  # a copy (see above)
        if vertex.shape != tuple(self.shape):
            if vertex.size == self.size:
                vertex = vertex.reshape(self.shape)
            else:
                raise ModelError(
                    f"{type(self).__name__}.lmo returned shape {vertex.shape}, expected {tuple(self.shape)}"
                )
        if not np.isfinite(vertex).all() and np.isfinite(direction).all():
            raise ModelError(
                f"{type(self).__name__}.lmo returned NaN or infinite entries for a finite direction: "
                "a vertex of a bounded set is finite"
            )
        return DenseAtom(vertex.ravel())

    def atoms_of_point(self, flat_point):
        """``(atoms, weights)``: the point as a convex combination of the set's atoms, where the set
        knows one cheaply, else None (the default).

        A warm start uses it for a block that has a point but no active set
        (the last solve moved it by projection steps): BPCG then resumes from
        the point instead of restarting the block from :meth:`initial_atom`.
        """
        return None

    def initial_atom(self):
        """The point the iterates start from.

        The origin when the set contains it (norm balls, boxes around 0, the
        empty alignment): starting there keeps the first iterates small, as
        splitting methods do, instead of at a vertex of possibly huge norm.
        Otherwise the LMO of a zero direction (some vertex).
        """
        if self.contains_origin():
            return SparseAtom(np.zeros(0, dtype=np.intp), np.zeros(0), self.size)
        return checked_user_lmo(self, self.lmo_atom)(np.zeros(self.size))

    def contains_origin(self):
        """True when 0 is in the set (by ``contains``, asked once; False when unknown).

        Sets whose membership test is expensive (a trace-norm ball needs an
        SVD) override this with the answer they know.
        """
        cached = getattr(self, "_contains_origin", None)
        if cached is None:
            try:
                cached = bool(self.contains(np.zeros(self.shape)))
            except Exception:  # a user's contains() that cannot take 0: do not guess
                cached = False
            self._contains_origin = cached
        return cached

    # ---------------------------------------------------------- optional hooks
    def diameter(self):
        """An upper bound on the set's diameter, or None when unknown."""
        return None

    def contains(self, point, tol=1e-9):
        """Membership test (with relative tolerance); None when not implemented."""
        return None

    def reset(self):
        """Forget any warm-start state."""

    def lmo_for_solve(self):
        """The LMO one solve calls, with :meth:`lmo_atom`'s signature and vertices (default: ``lmo_atom``).

        A set whose LMO can reuse work from one call to the next within a
        solve (the assignment problem's dual potentials on the Birkhoff
        polytope, the trace-norm ball's Lanczos vectors) or needs buffers
        returns a fresh callable holding that state, so every solve starts
        from the same state: its iterates do not depend on earlier solves, nor
        on solves sharing the set in other threads.
        """
        return checked_user_lmo(self, self.lmo_atom)

    def coordinate_bounds(self):
        """``(lower, upper)``: flat arrays bounding every entry over the set.

        The default asks the LMO along ``+e_i`` and ``-e_i`` for every entry
        i (``2 * size`` calls); built-in sets override it with closed forms.
        """
        lower, upper = np.empty(self.size), np.empty(self.size)
        e = np.zeros(self.size)
        for i in range(self.size):
            e[i] = 1.0
            lower[i] = self.lmo_atom(e).dot(e)
            e[i] = -1.0
            upper[i] = -self.lmo_atom(e).dot(e)
            e[i] = 0.0
        return lower, upper

    def min_linear(self, flat_direction):
        """``min_{s in set} <d, s>`` for a flat direction d (one LMO call)."""
        d = np.asarray(flat_direction, dtype=float).ravel()
        return float(self.lmo_atom(d).dot(d))

    def symmetric_variant(self):
        """This set restricted to symmetric matrices, with an LMO whose vertices are
        symmetric (so iterates stay exactly symmetric); None when not available."""
        return None

    def __repr__(self):
        if "expr" not in self.__dict__:  # printable in the error that says so (see __getattr__)
            return f"{type(self).__name__}(<not built: no super().__init__(expr)>)"
        return f"{type(self).__name__}({self.expr!r})"


def nonnegative_data(name, owner):
    """The check of a nonnegative scalar datum ``name`` of set ``owner`` (picklable, for ``_store_data``)."""
    return functools.partial(check_nonnegative, name, owner=owner)


def check_nonnegative(name, value, owner, strict=False):
    """Validate a scalar set parameter (a radius, a total); ModelError naming it.

    See :func:`fwmodel.sets._common.check_number` for what is refused.
    """
    from ._common import check_number

    return check_number(owner, name, value, sign="positive" if strict else "nonneg")
