"""Constraints written with comparison operators: ``==``, ``<=``, ``>=``.

An :class:`Equality` ``expr1 == expr2`` with affine sides becomes rows of the
consistency matrix ``M`` and vector ``b`` of problem (OPT2) in the FW-AL
paper; the dual variables of those rows are updated by the augmented
Lagrangian step, and after a solve ``constraint.dual_value`` holds them.
An :class:`Inequality` is compiled to sets (norm balls, boxes, simplices,
bounded slacks; see :mod:`fwmodel.compiler.lowering`).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .affine import add, multiply, negate
from .core import Constant, as_expression, short_repr


class _Satisfaction:
    """CVXPY's ``constraint.value()`` and ``constraint.violation()``, from the subclass's ``residual`` (the
    amount by which the constraint fails at the current values: 0 where it holds; None while a value is
    missing)."""

    def violation(self):
        """The residual at the current values (CVXPY's ``violation()``); a ModelError naming the constraint
        while a variable or Parameter has no value."""
        residual = self.residual
        if residual is None:
            raise ModelError(f"the constraint {short_repr(self)} has no value: a variable or Parameter in it has "
                             "no value (solve first, or set the values)")
        return residual

    def value(self, tolerance=1e-8):
        """True when the constraint holds at the current values up to ``tolerance`` (every entry of the
        residual ``<= tolerance``), as CVXPY's ``constraint.value()``."""
        return bool(np.all(np.asarray(self.violation(), dtype=float) <= tolerance))


class Equality(_Satisfaction):
    """The constraint ``lhs == rhs`` (entrywise, with NumPy broadcasting).

    Attributes
    ----------
    lhs, rhs : Expression
        The two sides, both affine.
    expr : Expression
        ``lhs - rhs``; the constraint is ``expr == 0``.
    shape : tuple
        Shape of ``expr`` (the broadcast shape of the sides).
    """

    def __init__(self, lhs, rhs):
        lhs, rhs = as_expression(lhs), as_expression(rhs)
        for side in (lhs, rhs):
            if not side.is_affine():
                raise ModelError(
                    f"{short_repr(lhs)} == {short_repr(rhs)}: both sides of an equality constraint "
                    f"must be affine, but {short_repr(side)} is {side.curvature}"
                )
        self.lhs = lhs
        self.rhs = rhs
        #: the multipliers after a solve (CVXPY's sign convention), shape of the constraint
        self.dual_value = None
        try:
            self.expr = add(lhs, rhs, sign=-1)
        except ModelError:
            raise ModelError(
                f"{short_repr(lhs)} == {short_repr(rhs)}: the sides' shapes {lhs.shape} and {rhs.shape} "
                "do not broadcast"
            ) from None

    @property
    def shape(self):
        return self.expr.shape

    @property
    def size(self):
        return self.expr.size

    @property
    def args(self):
        """``[lhs, rhs]``, as CVXPY's ``Equality.args``."""
        return [self.lhs, self.rhs]

    def variables(self):
        """The distinct variables of both sides, in order of first appearance."""
        return self.expr.variables()

    def parameters(self):
        """The distinct parameters of both sides, in order of first appearance."""
        return self.expr.parameters()

    @property
    def residual(self):
        """``|lhs - rhs|`` at the current values (None while a value is missing), as CVXPY's."""
        value = self.expr.value
        return None if value is None else np.abs(value)

    def __repr__(self):
        return f"{self.lhs!r} == {self.rhs!r}"

    def __bool__(self):
        raise ModelError(
            f"the constraint {short_repr(self)} has no truth value: '==' between expressions builds an "
            "fm.Equality for Problem(constraints=[...]); compare expressions with 'is' instead"
        )


class Inequality(_Satisfaction):
    """The constraint ``lhs <= rhs`` (entrywise, with NumPy broadcasting).

    Built by ``<=``, ``>=``, ``<`` and ``>`` between expressions (strict and
    non-strict comparisons are the same closed constraint, as in CVXPY). An
    inequality is not an FW-AL primitive: the compiler turns it into sets
    (see :mod:`fwmodel.compiler.lowering`). Two kinds are accepted here:

    * ``kind == "norm"``: a norm atom (``fm.norm1(e)``, ``fm.abs(e)``, ...) on
      the smaller side and data (a number, array or fm.Parameter expression)
      on the other: a norm ball (or a box for ``abs``). ``norm`` is the atom
      and ``bound`` the data.
      ``fm.sum_squares(e) <= t`` is the ball ``fm.norm2(e) <= sqrt(t)``, and
      ``fm.quad_form(e, P) <= t`` (P constant, PSD, ``P = L L'``) the ball
      ``fm.norm2(L' e) <= sqrt(t)`` (``squared`` is True; ``dual_value`` is
      then the ball's multiplier over ``2 sqrt(t)``, CVXPY's of the form written).
    * ``kind == "affine"``: both sides affine; ``expr = lhs - rhs <= 0``.
      Elementwise bounds become boxes, other rows get a bounded slack.

    After a solve, ``dual_value`` holds CVXPY's multiplier (>= 0): of a norm
    bound, from its ball's block (``compile.write_norm_duals``; entrywise for
    ``abs``); of affine rows, from their slack rows, and of single-entry
    bounds, from the box (or boxed L1 ball) that holds them
    (``compile.write_inequality_duals``); None where some entry's multiplier
    is shared with a set the compiler derived (a simplex's budget, a bound
    a set made redundant, a capped simplex or a symmetric box).

    ``fm.max(e) <= t`` and ``t <= fm.min(e)`` are rewritten to the affine
    ``e <= t`` and ``t <= e`` (entrywise, exactly; ``lhs`` and ``rhs`` keep
    what the user wrote, ``expr`` is the rewritten difference). Their
    ``shape`` and ``dual_value`` are CVXPY's, of the constraint as written:
    ``()`` and one multiplier (the sum of the entries') for ``max(e) <= t``,
    one per slice with ``axis``. Likewise ``fm.maximum(a, b) <= t`` (also
    ``fm.pos``, ``fm.neg``) and ``t <= fm.minimum(a, b)`` are every argument
    ``<= t`` (``>= t``): ``expr`` stacks the pieces along a new first axis,
    ``shape`` is the broadcast shape of the atom and t, and ``dual_value``
    the sum of the pieces' multipliers per entry, as CVXPY's. An argument
    without variables next to a data t (the 0 of ``pos``) is no row: it is
    checked on the data at each solve (``data_pieces``).

    A nonzero number times one of these atoms, with affine terms beside it
    (``2 * fm.pos(x) + d <= t``, ``-fm.minimum(a, b) <= t``), is divided
    through (``pos(x) <= (t - d) / 2``, ``minimum(a, b) >= -t``); ``scale``
    is ``|alpha|`` and ``dual_value`` the rewritten constraint's multiplier
    over it, CVXPY's of the form written. ``kind == "hinge"``:
    ``fm.sum(fm.pos(e)) <= t`` (also ``neg``, ``maximum(e, c)``, ``sum(minimum(e,
    c)) >= t``, ``axis``, scaled) with t data, lowered through the internal
    constraints of ``hinge`` (:class:`HingeBudget`); ``dual_value`` is its
    budget's multiplier (over ``scale``).

    Anything else (a norm above something, a norm compared with a variable,
    a smooth convex function bounded by a constant) is refused with a
    ModelError that says what can be written instead.
    """

    def __init__(self, lhs, rhs, op="<="):
        from .nonsmooth import NormAtom, find_norm_atom

        lhs, rhs = as_expression(lhs), as_expression(rhs)
        self.lhs, self.rhs, self.op = lhs, rhs, op
        self.dual_value = None
        # the constraint as the user wrote it, for messages
        text = (f"{short_repr(lhs)} {op} {short_repr(rhs)}" if op in ("<=", "<")
                else f"{short_repr(rhs)} {op} {short_repr(lhs)}")
        self._text = text
        from .nonsmooth import EntryExtremumAtom, PiecewiseAtom

        #: ``|alpha|`` of a scaled bound ``alpha * maximum(a, b) + d <= t`` rewritten ``maximum(a, b) <= (t - d) /
        #: alpha`` (1 else): CVXPY's multiplier of the constraint as written is the rewritten one's over it
        self.scale = 1.0
        #: the parts of a hinge budget ``fm.sum(fm.pos(e)) <= t`` (:class:`HingeBudget`), else None
        self.hinge = None
        scaled = _scaled_sides(lhs, rhs, text)
        if scaled is not None:
            lhs, rhs, self.scale = scaled
        if _is_hinge(lhs) or _is_hinge(rhs):
            self.hinge = HingeBudget(lhs, rhs, text)
            self.kind = "hinge"
            self.expr = None
            self.data_pieces = []
            self.extremum = self.piecewise = None
            self.squared, self.ellipsoid = False, None
            return

        #: the ``fm.max(e)`` / ``fm.min(e)`` of ``max(e) <= t`` / ``t <= min(e)``, rewritten entrywise (else None)
        self.extremum = next((side for side in (lhs, rhs) if isinstance(side, EntryExtremumAtom)), None)
        #: the ``fm.maximum(a, b)`` / ``fm.minimum(a, b)`` of ``maximum(a, b) <= t`` / ``t <= minimum(a, b)``,
        #: rewritten as its pieces stacked along ``expr``'s first axis (else None)
        self.piecewise = next((side for side in (lhs, rhs) if isinstance(side, PiecewiseAtom)), None)
        #: ``(argument, piece - t)`` (``t - piece`` for minimum) of the pieces without variables next to a data t
        #: (the 0 of ``pos(x) <= t``): true or false on data alone, so checked at each solve (:meth:`violated_data`)
        self.data_pieces = []
        if self.piecewise is not None:
            lhs, rhs, self.data_pieces = _piecewise_sides(lhs, rhs, text)
        lhs, rhs = _entrywise_sides(lhs, rhs, text)
        #: ``(p, divides)`` of ``p * fm.sum_squares(e) <= t`` (also ``quad_form``, ``/ p``), held as ``sum_squares(e)
        #: <= t / p``: CVXPY's multiplier of the form written is the rewritten one's over p (times p for ``/ p``;
        #: ``compile.write_norm_duals``)
        self.data_factor = None
        lhs, rhs, self.data_factor = _parameter_times_atom(lhs, rhs, text)
        #: ``fm.sum_squares(e) <= t`` (or ``fm.quad_form(e, P) <= t``) written as the ball ``norm2(...) <= sqrt(t)``:
        #: its dual_value is the ball's multiplier over ``2 sqrt(t)`` (``compile.write_norm_duals``)
        self.squared = False
        #: ``(e, P)`` of ``fm.quad_form(e, P) <= t`` with P positive definite: held by ``fm.Ellipsoid(e, P, t)``
        self.ellipsoid = None
        squared = _squared_norm_bound(lhs, rhs, text)
        if squared is not None:
            self.ellipsoid = None if squared[2] is None else (squared[2][0], squared[2][1], rhs, squared[2][2])
            lhs, rhs = squared[:2]
            self.squared = True
        if isinstance(rhs, NormAtom):
            raise ModelError(
                f"{text}: a lower bound on {rhs.call} is not convex (the outside of a ball); "
                f"only an upper bound {rhs.call} <= t is a set ({rhs.set_name})"
            )
        if find_norm_atom(rhs) is not None and not isinstance(lhs, NormAtom):
            # a norm inside an expression on the larger side (-norm1(x) >= -2 is -2 <= -norm1(x)): not a
            # lower bound on the norm itself, but not in the form that makes a set either
            raise ModelError(_misplaced_atom(text, find_norm_atom(rhs)))
        if isinstance(lhs, NormAtom):
            if rhs._has_vars:
                raise ModelError(
                    f"{text}: the bound of {lhs.call} must be data (a number, an array or an fm.Parameter), "
                    f"not an expression of variables: FW-AL needs a set with a fixed radius "
                    f"({lhs.set_name}); make the radius an fm.Parameter to vary it between solves"
                )
            try:
                np.broadcast_shapes(rhs.shape, lhs.shape)
            except ValueError:
                raise ModelError(f"{text}: the bound of shape {rhs.shape} does not broadcast to {lhs.shape}") from None
            if lhs.kind != "abs" and rhs.size != 1:
                raise ModelError(f"{text}: the bound of a norm must be a scalar, got shape {rhs.shape}")
            self.kind = "norm"
            self.norm, self.bound = lhs, rhs
            self.expr = None
            return
        inner = find_norm_atom(lhs)
        if inner is not None:
            raise ModelError(_misplaced_atom(text, inner))
        for side in (lhs, rhs):
            if not side.is_affine():
                raise ModelError(
                    f"{text}: both sides of an inequality must be affine (or a norm bounded by data), but "
                    f"{short_repr(side)} is {side.curvature}. A smooth function bounded by a constant is not a "
                    "set with a linear minimization oracle (fm.sum_squares(e) <= t and fm.quad_form(e, P) <= t "
                    "are: Euclidean balls, written alone on the smaller side); move it into the objective as a "
                    "penalty"
                )
        try:
            self.expr = add(lhs, rhs, sign=-1)
        except ModelError:
            raise ModelError(f"{text}: the sides' shapes {lhs.shape} and {rhs.shape} do not broadcast") from None
        if not self.expr._has_vars:
            raise ModelError(f"{text}: the inequality has no variables (a comparison of data is not a constraint)")
        self.kind = "affine"

    @property
    def shape(self):
        """The constraint's shape as CVXPY gives it: ``()`` for ``fm.max(x) <= t``, the sides' broadcast shape else
        (for ``fm.maximum(a, b) <= t``, that of ``maximum(a, b)`` and t: ``expr`` stacks the pieces on it)."""
        if self.kind == "hinge":
            return self.hinge.shape
        if self.kind == "norm":
            return self.norm.shape
        if self.piecewise is not None:
            return self.expr.shape[1:]
        return self.extremum.shape if self.extremum is not None else self.expr.shape

    @property
    def size(self):
        """The number of entries of :attr:`shape` (CVXPY's ``constraint.size``: 1 for ``fm.norm1(x) <= t``)."""
        return int(np.prod(self.shape, dtype=int))

    @property
    def args(self):
        """``[smaller side, larger side]`` as written (``x >= 0`` gives ``[0, x]``), CVXPY's ``Inequality.args``."""
        return [self.lhs, self.rhs]

    def dual_from_entries(self, per_entry):
        """``dual_value`` (CVXPY's shape and meaning) from the multipliers of the entries of ``expr <= 0``.

        For ``fm.max(e) <= t`` (``t <= fm.min(e)``), rewritten as ``e <= t``
        entrywise, CVXPY's multiplier of the constraint as written is the sum
        of the entries' multipliers over the reduced axes: the maximum's
        subgradient is a convex combination of the entries', so the KKT
        term ``lambda * d max(e)`` is ``sum_i lambda_i * d e_i`` with
        ``lambda = sum_i lambda_i``. A scalar for a scalar constraint.

        For ``fm.maximum(a, b) <= t`` (``t <= fm.minimum(a, b)``), rewritten
        as every piece ``<= t``, the same argument gives each entry the sum
        of its pieces' multipliers. A piece without variables
        (``data_pieces``) that holds strictly has multiplier 0 and adds
        nothing (where it holds with equality, the split between it and the
        others is not unique, in CVXPY too).
        """
        per_entry = np.asarray(per_entry, dtype=float)
        atom = self.extremum
        if atom is not None:
            per_entry = np.sum(per_entry.reshape(atom.args[0].shape), axis=atom.axes).reshape(self.shape)
        if self.piecewise is not None:
            per_entry = np.sum(per_entry.reshape(self.expr.shape), axis=0)
        if self.scale != 1.0:  # alpha * maximum(a, b) + d <= t: the multiplier of maximum(a, b) <= (t - d) / alpha
            per_entry = per_entry / self.scale
        return float(per_entry.reshape(())) if self.shape == () else per_entry.reshape(self.shape)

    def violated_data(self):
        """A message where a piece without variables (``data_pieces``) fails for the current data, else None.

        Such a piece holds or not whatever the solver does: CVXPY drops a
        true one and calls the problem infeasible for a false one, so the
        compiler asks at each solve (a Parameter t may change between them),
        with the tolerance of the other rows without variables (1e-9).
        """
        for argument, check in self.data_pieces:
            value = check.value
            if value is None:
                name = next(p.name for p in check.parameters() if p.value is None)
                raise ModelError(f"parameter {name} has no value: set {name}.value before solving")
            value = np.asarray(value, dtype=float).ravel()
            bad = np.flatnonzero(value > 1e-9 * np.maximum(1.0, np.abs(value)))
            if bad.size:
                where = "" if check.shape == () else f" at entry {int(bad[0])}"
                side = "above" if self.piecewise.kind == "maximum" else "below"
                return (f"the constraint {self._text} does not hold for the current data: its argument "
                        f"{short_repr(argument)} (no variables) is {value[bad[0]]:.6g} {side} the bound{where}")
        return None

    @property
    def residual(self):
        """``max(lhs - rhs, 0)`` at the current values, the sides as written (None while a value is missing),
        as CVXPY's."""
        lhs, rhs = self.lhs.value, self.rhs.value
        if lhs is None or rhs is None:
            return None
        return np.maximum(np.asarray(lhs, dtype=float) - np.asarray(rhs, dtype=float), 0.0)

    def variables(self):
        """The distinct variables of both sides, in order of first appearance."""
        if self.kind == "hinge":
            return self.hinge.atom.variables()
        return self.norm.variables() if self.kind == "norm" else self.expr.variables()

    def parameters(self):
        """The distinct parameters of both sides, in order of first appearance."""
        seen, out = set(), []
        for side in (self.lhs, self.rhs):
            for p in side.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        return out

    def __repr__(self):
        return f"{self.lhs!r} <= {self.rhs!r}"

    def __bool__(self):
        raise ModelError(
            f"the constraint {self._text} has no truth value: '<=' between expressions builds an "
            "fm.Inequality for Problem(constraints=[...])"
        )


class _SquareRoot:
    """``sqrt(t)`` of data ``t`` with Parameters: the radius of ``fm.sum_squares(e) <= t``, re-read at each solve.

    Duck-types the part of a Parameter expression that a set's data reads
    (``value``, ``parameters()``, ``size``); a negative t gives NaN, which the
    ball's radius check refuses naming the Parameters.
    """

    _has_vars = False
    _has_params = True
    is_leaf = True
    shape, size = (), 1

    def __init__(self, data):
        self.data = data

    @property
    def value(self):
        value = self.data.value
        if value is None:
            return None
        value = float(np.asarray(value, dtype=float).reshape(()))
        return np.sqrt(value) if value >= 0 else value  # (a negative value stays negative: refused by name)

    def parameters(self):
        return self.data.parameters()

    def __repr__(self):
        return f"sqrt({short_repr(self.data)})"


def _squared_norm_bound(lhs, rhs, text):
    """``(norm2(e), sqrt(t), None)`` for ``fm.sum_squares(e) <= t``, ``(norm2(L' e), sqrt(t), (e, P))`` for
    ``fm.quad_form(e, P) <= t`` (``P = L L'`` constant, PSD; the last item None unless P is positive
    definite): the same set, a Euclidean ball (CVXPY users write the ball squared). None for other sides."""
    from .affine import SumExpression
    from .atoms import QuadFormExpression, SquareExpression, SumSquaresExpression
    from .core import Constant
    from .nonsmooth import norm2

    if isinstance(lhs, SumExpression) and lhs.size == 1 and isinstance(lhs.args[0], SquareExpression):
        lhs = SumSquaresExpression(lhs.args[0].args[0])  # fm.sum(fm.square(e)): all of e's squares
    elif isinstance(lhs, SquareExpression) and lhs.size == 1:
        lhs = SumSquaresExpression(lhs.args[0])  # the square of a scalar
    if not isinstance(lhs, (SumSquaresExpression, QuadFormExpression)) or not lhs.args[0].is_affine():
        return None
    if rhs._has_vars or rhs.size != 1:
        return None  # (refused below, with the general message)
    e = lhs.args[0]
    ellipsoid = None
    if isinstance(lhs, QuadFormExpression):
        P = lhs.args[1]
        if P._has_params:
            raise ModelError(f"{text}: a quadratic form bounded by data is an ellipsoid, which fwmodel holds as "
                             "the ball norm2(L' e) <= sqrt(t) with P = L L'; P must then be constant (not an "
                             "fm.Parameter), or write fm.norm(L.T @ e, 2) <= r yourself")
        P = P.value
        P = P.toarray() if hasattr(P, "toarray") else np.asarray(P, dtype=float)
        P = P.reshape(e.size, e.size)
        w, Q = np.linalg.eigh(0.5 * (P + P.T))
        # directions kept down to eigh's own rounding (a few eps n of the largest eigenvalue): a positive definite
        # P with eigenvalues 1e-6 .. 1e6 lost its smallest direction at a cut of 1e-12 and the model was refused
        # as "not in any bounded set" (Clarabel solves it)
        keep = w > 64 * np.finfo(float).eps * P.shape[0] * max(float(w[-1]), 0.0)
        if not np.any(keep):
            raise ModelError(f"{text}: P is zero, so the constraint does not involve {short_repr(e)} (it holds for "
                             "every point when the bound is >= 0); leave it out")
        if np.all(keep) and float(w[0]) > 1e-10 * float(w[-1]):
            # positive definite: the compiler holds e in fm.Ellipsoid(e, P, t) (it bounds e itself)
            ellipsoid = (e, P, (w, Q))  # (its eigendecomposition, formed once: the ellipsoid reads it)
        factor = np.sqrt(w[keep])[:, None] * Q[:, keep].T  # L' with P = L L'
        e = Constant(factor) @ (e if e.ndim == 1 else e.flatten(order="C"))
    if rhs._has_params:
        bound = _SquareRoot(rhs)
    else:
        t = float(np.asarray(rhs.value, dtype=float).reshape(()))
        if t < 0:
            raise ModelError(f"{text}: the bound is negative, so no point satisfies it")
        bound = Constant(np.sqrt(t))
    return norm2(e), bound, ellipsoid


def _parameter_times_atom(lhs, rhs, text):
    """``(lhs, rhs, p)``: ``p * norm(e) <= t`` (also ``norm(e) * p``, ``norm(e) / p``, ``abs``) as ``norm(p * e) <= t``
    (``norm(e / p)``), and ``p * fm.sum_squares(e) <= t`` (also ``quad_form(e, P)``, ``/ p``) as ``sum_squares(e) <= t
    / p`` (``t * p``) with ``p`` returned, where p is a scalar fm.Parameter expression of declared sign nonneg
    (CVXPY's DCP rule: a convex atom times a Parameter is convex only then). The same set for every p > 0; at p = 0
    the norm's form is ``0 <= t`` (the compiler drops it, ``lowering.ParameterFactor``), the smooth one's bound
    ``t / 0`` a ModelError naming p. ``(p, divides)`` is returned for the smooth forms (None for the others), whose
    multiplier the compiler scales back. Other sides come back as they are."""
    from .affine import DivideExpression, MultiplyExpression
    from .atoms import QuadFormExpression, SumSquaresExpression
    from .core import constant_sign
    from .nonsmooth import EntryExtremumAtom, NormAtom, PiecewiseAtom

    def convex_atom(e):  # a norm (not CVXPY's piecewise atoms nor max / min, which NormAtom also bases) or a square
        return (isinstance(e, (NormAtom, SumSquaresExpression, QuadFormExpression))
                and not isinstance(e, (PiecewiseAtom, EntryExtremumAtom)))

    if not isinstance(lhs, MultiplyExpression) or rhs._has_vars:
        return lhs, rhs, None
    a, b = lhs.args
    divides = isinstance(lhs, DivideExpression)
    atom, f = (a, b) if divides or convex_atom(a) else (b, a)
    if not convex_atom(atom) or f._has_vars or not f._has_params or f.size != 1:
        return lhs, rhs, None
    if constant_sign(f) not in ("nonneg",):
        raise ModelError(f"{text}: {short_repr(f)} times a convex function is convex only where it is >= 0: declare "
                         f"its Parameter nonneg=True (as CVXPY requires), or, for a norm, write the factor inside it: "
                         "norm(p * e) <= t, which holds for either sign of p")
    if isinstance(atom, NormAtom):
        inner = atom.args[0]
        return NormAtom(inner / f if divides else f * inner, atom.kind, atom.call), rhs, None
    return atom, _ScaledBound(rhs, f, divides, text), (f, divides)


class _ScaledBound:
    """``t / p`` (``t * p``) of ``p * fm.sum_squares(e) <= t`` (``/ p``), re-read at each solve: data (duck-types the
    part of a Parameter expression that the bound's readers use). At p = 0 the constraint reads ``0 <= t``, which
    holds or not on data alone; a ball cannot be dropped there (its radius would be infinite), so that solve is
    a ModelError naming the constraint and what to write instead."""

    _has_vars = False
    _has_params = True
    is_leaf = True
    shape, size, ndim = (), 1, 0

    def __init__(self, bound, factor, divides, text):
        self.bound, self.factor, self.divides, self.text = as_expression(bound), factor, divides, text

    @property
    def value(self):
        t, q = self.bound.value, self.factor.value
        if t is None or q is None:
            return None
        t, q = float(np.asarray(t, dtype=float).reshape(())), float(np.asarray(q, dtype=float).reshape(()))
        if self.divides:
            return t * q
        if q == 0.0:
            names = ", ".join(p.name for p in self.factor.parameters())
            raise ModelError(
                f"{self.text}: {names} is 0 at this solve, so the constraint reads 0 <= t, true or false on data "
                f"alone; fwmodel holds it as a ball of radius sqrt(t / {short_repr(self.factor)}), which p = 0 leaves "
                "unbounded. Keep the Parameter > 0, or leave the constraint out for this value (a norm bound, "
                "norm(p * e) <= t, is dropped at p = 0)")
        return t / q

    def parameters(self):
        from ..sets.base import distinct_parameters

        return distinct_parameters([self.bound, self.factor])

    def __repr__(self):
        return f"{short_repr(self.bound)} {'*' if self.divides else '/'} {short_repr(self.factor)}"


def _misplaced_atom(text, inner):
    """The message for a norm or piecewise atom inside a side in a form that is no set."""
    from .nonsmooth import EntryExtremumAtom, PiecewiseAtom, bound_text

    if isinstance(inner, (PiecewiseAtom, EntryExtremumAtom)):
        return (f"{text}: {inner.call} can be bounded as {bound_text(inner)} (t data or affine), also times a "
                "nonzero number with affine terms beside it (2 * pos(e) + d <= t is pos(e) <= (t - d) / 2) and, for "
                "CVXPY's piecewise atoms, summed (fm.sum(fm.pos(e)) <= t, t data); not multiplied by a Parameter, "
                "by a vector or by an expression, nor added to another such atom")
    return (f"{text}: {inner.call} can only be compared directly with data, as in {bound_text(inner)} "
            f"(a set, {inner.set_name}); move the other terms into t")


def _is_hinge(side):
    """True for ``fm.sum(P)`` (over every axis or some) of a :class:`~fwmodel.expressions.nonsmooth.PiecewiseAtom`
    P: ``fm.sum(fm.pos(e))``, ``fm.sum(fm.maximum(e, c))``, a hinge budget's side (:class:`HingeBudget`)."""
    from .affine import SumExpression
    from .nonsmooth import PiecewiseAtom

    return isinstance(side, SumExpression) and isinstance(side.args[0], PiecewiseAtom)


def _affine_in_atom(side):
    """``(alpha, core, d)`` with ``side == alpha * core + d``, or None.

    ``core`` is a piecewise atom (``maximum``, ``minimum``, ``pos``, ``neg``),
    an entry extremum (``max``, ``min``) or a hinge sum (:func:`_is_hinge`);
    ``alpha`` a nonzero number (products and quotients by numbers, negations,
    ``fm.sum(alpha * pos(e))``); ``d`` the other terms of a sum, affine (None
    for none). Any other use of the atom (a Parameter factor, two atoms):
    None, and the constraint is refused as before.
    """
    from .affine import AddExpression, DivideExpression, MultiplyExpression, NegExpression, SumExpression
    from .nonsmooth import EntryExtremumAtom, PiecewiseAtom, find_norm_atom

    if isinstance(side, (PiecewiseAtom, EntryExtremumAtom)) or _is_hinge(side):
        return 1.0, side, None
    if isinstance(side, SumExpression):  # sum(alpha * pos(e)) is alpha * sum(pos(e))
        inner = _affine_in_atom(side.args[0])
        if inner is None or inner[2] is not None or not isinstance(inner[1], PiecewiseAtom):
            return None
        return inner[0], SumExpression(inner[1], side.axes, side.keepdims), None
    if isinstance(side, NegExpression):
        inner = _affine_in_atom(side.args[0])
        return None if inner is None else (-inner[0], inner[1], None if inner[2] is None else negate(inner[2]))
    if isinstance(side, MultiplyExpression):
        holds = [find_norm_atom(a) is not None for a in side.args]
        if holds.count(True) != 1 or (isinstance(side, DivideExpression) and holds[1]):
            return None
        k = side.args[holds.index(False)]
        if k._has_vars or k._has_params or k.size != 1:
            return None  # (a Parameter's sign could change between solves; a vector scales entries unevenly)
        factor = float(np.asarray(k.value, dtype=float).reshape(()))
        if isinstance(side, DivideExpression):
            factor = 1.0 / factor if factor != 0 else np.inf
        inner = _affine_in_atom(side.args[holds.index(True)])
        if inner is None or factor == 0 or not np.isfinite(factor):
            return None
        alpha, core, d = inner
        return factor * alpha, core, None if d is None else multiply(factor, d)
    if isinstance(side, AddExpression):
        holding = [i for i, a in enumerate(side.args) if find_norm_atom(a) is not None]
        if len(holding) != 1:
            return None
        i = holding[0]
        inner = _affine_in_atom(side.args[i])
        if inner is None:
            return None
        alpha, core, d = inner
        rest = Constant(0.0)
        for j, (a, sign) in enumerate(zip(side.args, side.signs)):
            if j != i:
                rest = add(rest, a, sign=sign)
        sign = side.signs[i]
        return sign * alpha, core, rest if d is None else add(rest, d, sign=sign)
    return None


def _scaled_sides(lhs, rhs, text):
    """``(lhs, rhs, |alpha|)`` of ``alpha * P + d <= t`` (or ``t <= alpha * P + d``) divided through by alpha,
    P a piecewise atom, an extremum or a hinge sum: ``P <= (t - d) / alpha`` for ``alpha > 0``, ``(t - d) /
    alpha <= P`` for ``alpha < 0`` (the same set, exactly). None when neither side is such a form (or P is
    already alone). The rewritten constraint is then checked as written (a convex P on the smaller side, a
    concave one on the larger). CVXPY's multiplier of the constraint as written is the rewritten one's over
    ``|alpha|`` (its KKT term ``lambda * alpha * dP`` is the rewritten ``lambda' * dP``)."""
    from .nonsmooth import EntryExtremumAtom, PiecewiseAtom, find_norm_atom

    for upper, side, other in ((True, lhs, rhs), (False, rhs, lhs)):
        if isinstance(side, (PiecewiseAtom, EntryExtremumAtom)) or _is_hinge(side):
            return None  # (alone: as written)
        if not isinstance(find_norm_atom(side), (PiecewiseAtom, EntryExtremumAtom)):
            continue
        if find_norm_atom(other) is not None:
            return None
        found = _affine_in_atom(side)
        if found is None:
            return None
        alpha, core, d = found
        bound = other if d is None else add(other, d, sign=-1)
        if alpha != 1.0:
            bound = multiply(1.0 / alpha, bound)
        return (core, bound, abs(alpha)) if (alpha > 0) == upper else (bound, core, abs(alpha))
    return None


class HingeBudget:
    """``fm.sum(fm.pos(e)) <= t``: the hinge (shortfall) budget, lowered with an auxiliary variable.

    ``fm.sum(fm.maximum(p_1, ..., p_k, c)) <= t`` (pieces ``p_j`` affine, ``c``
    their one argument without variables: the 0 of ``pos(e)`` and ``neg(e)``)
    is exactly ``{exists s >= 0: p_j - c <= s for every j, sum(s) <= t -
    sum(c)}``: at a point of the set, ``s = maximum(p, c) - c`` is feasible,
    and any feasible s is at least that (CVXPY's own reduction of ``pos``).
    The auxiliary ``s`` (``aux``, nonneg, hidden from ``prob.variables()``)
    with its total is a simplex with an inequality total (the compiler's
    ``Simplex(s, t, equality=False)``, the convex hull of a simplex and the
    origin: a bounded set whose LMO is a vertex; without ``axis`` its
    projected variant ``HingeExcessSimplex``), and the rows ``p_j - c - s
    <= 0`` are general inequalities (their slacks bounded by the LMOs).
    ``axis`` (``fm.sum(fm.pos(E), axis=1) <= t``) gives one budget per slice:
    a batched simplex. ``fm.sum(fm.minimum(p, c)) >= t`` is the same with the
    pieces and t negated. t is data (a number, an array of the sum's shape, an
    fm.Parameter); a negative t holds for no point ("infeasible", as in CVXPY).

    ``constraints`` are the internal inequalities the compiler lowers in the
    constraint's place; ``budget`` (``sum(s) <= t - sum(c)``) has the
    multiplier of the constraint as written (the rows' multipliers at the
    optimum are each at most it, equal where ``s_i > 0``: the KKT conditions
    in s), which CVXPY reports too; :meth:`multiplier` reads it from the rows.
    """

    def __init__(self, lhs, rhs, text):
        from .affine import sum as fm_sum
        from .core import Variable

        upper = _is_hinge(lhs)
        total, bound = (lhs, rhs) if upper else (rhs, lhs)
        atom = total.args[0]
        if _is_hinge(bound):
            raise ModelError(f"{text}: compare {short_repr(lhs)} and {short_repr(rhs)} with data, not with each "
                             "other")
        if (atom.kind == "maximum") != upper:
            good = "fm.sum(fm.maximum(...)) <= t" if atom.kind == "maximum" else "fm.sum(fm.minimum(...)) >= t"
            raise ModelError(f"{text}: bounds {short_repr(total)} from the wrong side, a set that is not convex; "
                             f"only {good} is a constraint")
        if bound._has_vars:
            raise ModelError(f"{text}: the bound of {short_repr(total)} must be data (a number, an array or an "
                             "fm.Parameter), not an expression of variables: it is the total of a simplex that "
                             "the compiler builds; make it an fm.Parameter to vary it between solves")
        try:
            shape = np.broadcast_shapes(bound.shape, total.shape)
        except ValueError:
            shape = None
        if shape != total.shape:
            raise ModelError(f"{text}: the bound of shape {bound.shape} does not broadcast to the shape "
                             f"{total.shape} of {short_repr(total)}")
        if not isinstance(total.axes, tuple) or (total.keepdims and total.ndim != atom.ndim):
            raise ModelError(f"{text}: this sum's axes are not supported")  # (not reached: SumExpression's own)
        pieces = [a if a.shape == atom.shape else a + np.zeros(atom.shape) for a in atom.args]
        if atom.kind == "minimum":  # sum(minimum(p, c)) >= t is sum(maximum(-p, -c)) <= -t
            pieces, bound = [negate(p) for p in pieces], negate(bound)
        variable = [p for p in pieces if p._has_vars]
        data = [p for p in pieces if not p._has_vars]
        if not variable:
            raise ModelError(f"{text}: the inequality has no variables (a comparison of data is not a constraint)")
        if not data:
            raise ModelError(f"{text}: fwmodel bounds a sum of {atom.kind}s that has an argument without variables "
                             f"(the 0 of pos(e) and neg(e), the c of {atom.kind}(e, c)): its excess over that "
                             f"argument is nonnegative, a simplex's variable. Here every argument of {atom.call} "
                             "has variables; bound each piece's entries instead (maximum(a, b) <= u with a "
                             "variable u, and fm.sum(u) <= t)")
        data_count = len(data)
        if len(data) > 1:
            if any(p._has_params for p in data):
                raise ModelError(f"{text}: {atom.call} has several arguments without variables, with Parameters: "
                                 "write their elementwise maximum as one argument")
            data = [Constant(np.maximum.reduce([np.asarray(p.value, dtype=float) for p in data]))]
        c = data[0]
        zero = not c._has_params and not np.any(np.asarray(c.value, dtype=float))
        self.atom, self.total, self.shape = atom, total, shape
        #: the excess of the maximum over c, entrywise (CVXPY's variable of ``pos``), hidden from the user
        # its name says what it is (a budget's messages name it): pos(e), maximum(e, c) - c, c - minimum(e, c)
        given = [a for a in atom.args if not a._has_vars]
        given = short_repr(given[0] if data_count == 1 else (c if atom.kind == "maximum" else negate(c)), 40)
        if atom.kind == "maximum":
            name = atom.call if zero else f"{atom.call} - {given}"
        else:
            name = f"{given} - {atom.call}"
        self.aux = Variable(atom.shape, nonneg=True, name=name)
        self.aux.is_slack = True
        self.aux.hinge_excess = True  # its budget becomes a projected set (sets.simplex.HingeExcessSimplex)
        self.rows = [Inequality(p if zero else add(p, c, sign=-1), self.aux) for p in variable]
        budget_total = bound if zero else add(bound, fm_sum(c, axis=total.axes, keepdims=total.keepdims), sign=-1)
        self.budget = Inequality(fm_sum(self.aux, axis=total.axes, keepdims=total.keepdims), budget_total)
        self.constraints = self.rows + [self.budget]
        for q in self.constraints:
            q._text = text  # (messages about the rows and the budget name the constraint as written)


    def multiplier(self):
        """The budget's multiplier (CVXPY's of the constraint as written), from its rows' (after a solve).

        The KKT conditions in s (``-y_i + nu - mu_i = 0``, ``mu_i >= 0`` zero
        where ``s_i > 0``) make every row's multiplier ``y_i`` at most the
        budget's ``nu``, equal where ``s_i > 0``: ``nu`` is the largest of its
        rows' (per budget along ``axis``), pinned by the stationarity in the
        user's variables. The budget's own value, read from the simplex
        block's KKT conditions, is not: where the compiler holds s in a box
        too (a Parameter t bounds every entry by t), an entry at that cap
        (all of t on one row) shares its pull with the cap's row, and the
        block's gradient there gave the kink row's 0.60355 for the binding
        row's 0.60738 (Clarabel's) on ``tests/test_hinge_budgets.py``'s
        Parameter model. Where ``nu`` is not unique (t = 0, no ``s_i > 0``),
        this is the smallest one. 0 where the budget's own value is (its sum
        of s below t: complementary slackness, not the rows' ~1e-8 of
        noise); the budget's own value where a row has none.
        """
        duals = [row.dual_value for row in self.rows]
        if not duals or any(d is None for d in duals):
            return self.budget.dual_value
        rows = np.max([np.broadcast_to(np.asarray(d, dtype=float), self.atom.shape) for d in duals], axis=0)
        nu = np.max(rows, axis=self.total.axes, keepdims=self.total.keepdims) if rows.ndim else rows
        own = self.budget.dual_value
        if own is not None:  # complementary slackness: 0 where the block's conditions found s's sum below t
            nu = np.where(np.asarray(own, dtype=float).reshape(np.shape(nu)) == 0.0, 0.0, nu)
        return float(nu) if np.ndim(nu) == 0 else nu


def _piecewise_sides(lhs, rhs, text):
    """``(pieces, t, data)`` for ``maximum(a, b) <= t``, ``(t, pieces, data)`` for ``t <= minimum(a, b)``.

    ``pieces`` stacks the arguments, broadcast with t to the constraint's
    shape S, along a new first axis (shape ``(k,) + S``; t broadcasts along
    it), so that one Inequality keeps one affine ``expr``: every piece
    ``<= t`` (``>= t``) entrywise, exactly the maximum's (minimum's) bound.
    Next to a data t, a piece without variables (the 0 of ``pos``) is true
    or false on data alone: it leaves the stack for ``data``, ``(argument,
    piece - t)`` (``t - piece``), checked at each solve
    (:meth:`Inequality.violated_data`). ``maximum(...) >= t`` and
    ``minimum(...) <= t`` (some piece beyond t) are unions of half-spaces,
    not convex sets: refused.
    """
    from .affine import _reshape as reshape, concatenate
    from .nonsmooth import EntryExtremumAtom, PiecewiseAtom

    for atom, wrong in ((lhs, "minimum"), (rhs, "maximum")):
        if isinstance(atom, PiecewiseAtom) and atom.kind == wrong:
            word = "at most" if wrong == "minimum" else "at least"
            good = "maximum(a, b) <= t" if wrong == "maximum" else "minimum(a, b) >= t"
            raise ModelError(f"{text}: says that some argument of {atom.call} is {word} the bound (entrywise), a "
                             f"union of half-spaces that is not convex; only {good} (every argument bounded) is a "
                             "constraint")
    if all(isinstance(side, (PiecewiseAtom, EntryExtremumAtom)) for side in (lhs, rhs)):
        raise ModelError(f"{text}: compare {short_repr(lhs)} and {short_repr(rhs)} with data or an affine "
                         "expression, not with each other (write e <= t and t <= f with a variable t)")
    upper = isinstance(lhs, PiecewiseAtom)
    atom, bound = (lhs, rhs) if upper else (rhs, lhs)
    pieces, shape = atom.pieces(bound, text)
    fixed = [not (p._has_vars or bound._has_vars) for p in pieces]
    if all(fixed):
        raise ModelError(f"{text}: the inequality has no variables (a comparison of data is not a constraint)")
    stacked = concatenate([reshape(p, (1,) + shape) for p, f in zip(pieces, fixed) if not f], axis=0)
    data = [(a, add(p, bound, sign=-1) if upper else add(bound, p, sign=-1))
            for a, p, f in zip(atom.args, pieces, fixed) if f]
    return (stacked, bound, data) if upper else (bound, stacked, data)


def _entrywise_sides(lhs, rhs, text):
    """The affine sides of ``max(e) <= t`` (``e``, t) and ``t <= min(e)`` (t, ``e``); other sides as given.

    ``max(e) >= t`` and ``min(e) <= t`` (some entry beyond t) are unions of
    half-spaces, not convex sets: refused.
    """
    from .nonsmooth import EntryExtremumAtom

    low = isinstance(lhs, EntryExtremumAtom)
    high = isinstance(rhs, EntryExtremumAtom)
    for atom, wrong in ((lhs, "min"), (rhs, "max")):
        if isinstance(atom, EntryExtremumAtom) and atom.kind == wrong:
            word = "some entry is at most" if wrong == "min" else "some entry is at least"
            raise ModelError(f"{text}: says that {word} the bound, a union of half-spaces that is not convex; "
                             f"only max(e) <= t and min(e) >= t (every entry bounded) are constraints")
    if low and high:
        raise ModelError(f"{text}: compare {lhs.call} and {rhs.call} with data or an affine expression, not with "
                         "each other (write e <= t and t <= f with a variable t)")
    if low:
        return lhs.entrywise(rhs)
    if high:
        entries, bound = rhs.entrywise(lhs)
        return bound, entries
    return lhs, rhs


class PSDConstraint(_Satisfaction):
    """``lhs >> rhs`` (or ``rhs << lhs``): ``lhs - rhs`` positive semidefinite, CVXPY's PSD constraint.

    CVXPY's ``X >> 0`` needs a square ``X`` and constrains its symmetric part
    ``(X + X.T) / 2``. FW-AL needs a bounded set, so fwmodel takes the
    constraint on ``E = a * Y + C``: a ``symmetric=True`` (or ``PSD=True``)
    variable Y, a nonzero number a and a symmetric constant C (``Y >> 0``,
    ``Y << 0``, ``Y >> B``), bounded by a trace constraint on E (``fm.trace(Y)
    <= r`` for ``Y >> 0``, ``fm.trace(Y) >= -r`` for ``Y << 0``). The compiler
    makes it the PSD trace ball ``fm.TraceNormBall(E, r, psd=True)``
    (:mod:`fwmodel.compiler.lowering`, item 4).

    After a solve, ``dual_value`` is CVXPY's: the PSD matrix Z with
    ``<Z, E> = 0``, from the ball's KKT conditions ``Z = G + mu I`` (G the
    symmetrized gradient of the augmented Lagrangian in E, mu the trace
    bound's multiplier, which is also the trace constraint's ``dual_value``;
    :func:`fwmodel.compiler.compile.write_psd_duals`). Z is as accurate as
    the solve (its smallest eigenvalue about 0, possibly -tol). None where
    the trace bound is one the compiler derived from bounds on the diagonal
    and it is active (those bounds share the multiplier), or where E is
    held by several sets.
    """

    def __init__(self, lhs, rhs, op):
        from .affine import linearize

        lhs, rhs = as_expression(lhs), as_expression(rhs)
        self.lhs, self.rhs, self.op = lhs, rhs, op
        self.dual_value = None
        self._text = f"{short_repr(lhs)} {op} {short_repr(rhs)}"
        text = self._text
        expr = add(lhs, rhs, sign=-1) if op == ">>" else add(rhs, lhs, sign=-1)
        if expr.ndim != 2 or expr.shape[0] != expr.shape[1]:
            raise ModelError(f"{text}: a semidefinite constraint needs a square matrix, got shape {expr.shape}")
        if not expr.is_affine():
            raise ModelError(f"{text}: both sides must be affine, but the difference is {expr.curvature}")
        variables = expr.variables()
        if len(variables) != 1 or expr.parameters():
            raise ModelError(f"{text}: fwmodel takes a semidefinite constraint on a * Y + C for one symmetric "
                             "variable Y, a number a and a constant symmetric C (Y >> 0, Y << 0, Y >> B)"
                             + (", not one with Parameters" if expr.parameters() else
                                f", got {len(variables)} variables"))
        var = variables[0]
        if not (var.symmetric or var.PSD):
            raise ModelError(
                f"{text}: {var.name} is not declared symmetric. As in CVXPY, {op} constrains only the symmetric "
                f"part ({var.name} + {var.name}.T) / 2, which would leave {var.name} - {var.name}.T unbounded "
                f"for FW-AL; declare fm.Variable({var.shape}, symmetric=True) (or PSD=True)")
        A, c = linearize(expr, {var.id: 0}, var.size)
        A = A.tocsr()
        n = var.shape[0]
        scale = A.data[0] if A.nnz else 0.0
        if (A.nnz != var.size or not np.array_equal(A.indices, np.arange(var.size))
                or np.any(np.diff(A.indptr) != 1) or not np.all(A.data == scale) or scale == 0):
            raise ModelError(f"{text}: fwmodel takes a semidefinite constraint on a * {var.name} + C (a number a, "
                             f"a constant C), not on another affine expression of {var.name}")
        offset = np.asarray(c, dtype=float).reshape(n, n)
        if not np.allclose(offset, offset.T, rtol=0, atol=1e-12 * max(1.0, float(np.abs(offset).max(initial=0)))):
            raise ModelError(f"{text}: the constant part is not symmetric, so the constraint (on the symmetric "
                             "part, as in CVXPY) would not be the set fwmodel builds; symmetrize it")
        self.expr, self.variable, self.scale, self.offset = expr, var, float(scale), offset

    @property
    def shape(self):
        return self.expr.shape

    @property
    def size(self):
        return self.expr.size

    @property
    def args(self):
        """``[lhs - rhs]`` for ``lhs >> rhs`` (``[rhs - lhs]`` for ``<<``): CVXPY's ``PSD`` constraint's args."""
        return [self.expr]

    @property
    def residual(self):
        """How far ``lhs - rhs`` (``rhs - lhs`` for ``<<``) is from PSD at the current values: minus the
        smallest eigenvalue of its symmetric part, or 0 (None while a value is missing), as CVXPY's."""
        lhs, rhs = self.lhs.value, self.rhs.value
        if lhs is None or rhs is None:
            return None
        diff = np.asarray(lhs, dtype=float) - np.asarray(rhs, dtype=float)
        diff = diff if self.op == ">>" else -diff
        return max(0.0, -float(np.linalg.eigvalsh((diff + diff.T) / 2.0).min()))

    def variables(self):
        return [self.variable]

    def parameters(self):
        return []

    def on_the_variable(self):
        """True for ``Y >> 0`` itself (E is Y): the variable is then PSD, as with ``PSD=True``."""
        return self.scale == 1.0 and not np.any(self.offset)

    def __repr__(self):
        return self._text

    def __bool__(self):
        raise ModelError(f"the constraint {self._text} has no truth value: '{self.op}' between expressions builds "
                         "an fm.PSDConstraint for Problem(constraints=[...])")
