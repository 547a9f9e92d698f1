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
from .affine import add
from .core import as_expression, short_repr


class Equality:
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

    def variables(self):
        """The distinct variables of both sides, in order of first appearance."""
        return self.expr.variables()

    def parameters(self):
        """The distinct parameters of both sides, in order of first appearance."""
        return self.expr.parameters()

    @property
    def residual(self):
        """``lhs - rhs`` at the current values (None while a value is missing)."""
        return self.expr.value

    def __repr__(self):
        return f"{self.lhs!r} == {self.rhs!r}"

    def __bool__(self):
        raise ModelError(
            f"the constraint {short_repr(self)} has no truth value: '==' between expressions builds an "
            "fm.Equality for Problem(constraints=[...]); compare expressions with 'is' instead"
        )


class Inequality:
    """The constraint ``lhs <= rhs`` (entrywise, with NumPy broadcasting).

    Built by ``<=``, ``>=``, ``<`` and ``>`` between expressions (strict and
    non-strict comparisons are the same closed constraint, as in CVXPY). An
    inequality is not an FW-AL primitive: the compiler turns it into sets
    (see :mod:`fwmodel.compiler.lowering`). Two kinds are accepted here:

    * ``kind == "norm"``: a norm atom (``fm.norm1(e)``, ``fm.abs(e)``, ...) on
      the smaller side and data (a number, array or fm.Parameter expression)
      on the other: a norm ball (or a box for ``abs``). ``norm`` is the atom
      and ``bound`` the data.
    * ``kind == "affine"``: both sides affine; ``expr = lhs - rhs <= 0``.
      Elementwise bounds become boxes, other rows get a bounded slack.

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
        if isinstance(rhs, NormAtom) or (find_norm_atom(rhs) is not None and not isinstance(lhs, NormAtom)):
            atom = rhs if isinstance(rhs, NormAtom) else find_norm_atom(rhs)
            raise ModelError(
                f"{text}: a lower bound on {atom.call} is not convex (the outside of a ball); "
                f"only an upper bound {atom.call} <= t is a set ({atom.set_name})"
            )
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
            raise ModelError(
                f"{text}: {inner.call} can only be compared directly with data, as in {inner.call} <= t "
                f"(a set, {inner.set_name}); move the other terms into t"
            )
        for side in (lhs, rhs):
            if not side.is_affine():
                raise ModelError(
                    f"{text}: both sides of an inequality must be affine (or a norm bounded by data), but "
                    f"{short_repr(side)} is {side.curvature}. A smooth function bounded by a constant is not a "
                    "set with a linear minimization oracle; write it with a norm (fm.norm(e, 2) <= r for "
                    "fm.sum_squares(e) <= r ** 2) or move it into the objective as a penalty"
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
        return self.norm.shape if self.kind == "norm" else self.expr.shape

    def variables(self):
        """The distinct variables of both sides, in order of first appearance."""
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
