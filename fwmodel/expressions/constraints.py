"""Linear consistency constraints: ``expr1 == expr2`` with affine sides.

The compiler turns each :class:`Equality` into rows of the consistency
matrix ``M`` and vector ``b`` of problem (OPT2) in the FW-AL paper; the dual
variables of those rows are updated by the augmented Lagrangian step.
"""
from __future__ import annotations

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
