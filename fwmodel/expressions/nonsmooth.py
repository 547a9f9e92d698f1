"""Non-smooth functions, refused with a pointer to the set that expresses them.

FW-AL needs a smooth objective: its Frank-Wolfe steps use the gradient, and
its convergence rate depends on the gradient being Lipschitz. Absolute
values, norms and maxima are not smooth, but the constraint they usually
express is a set with a cheap linear minimization oracle. Each function
here raises :class:`~fwmodel.errors.ModelError` saying which set to use.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .core import as_expression, short_repr


def _refuse(call, advice):
    raise ModelError(
        f"{call} is not smooth, so it cannot appear in an objective; {advice}"
    )


def abs(expr):  # noqa: A001 - mirrors numpy.abs / cvxpy.abs
    """Refused: |x| is not smooth. Bound ||x||_1 with fm.L1Ball, or |x_i| with fm.LinfBall / fm.Box."""
    expr = as_expression(expr)
    _refuse(
        f"abs({short_repr(expr)})",
        "to bound the sum of absolute values use fm.L1Ball(expr, radius); "
        "to bound each |entry| use fm.LinfBall(expr, radius) or fm.Box(expr, lower, upper).",
    )


def norm1(expr):
    """Refused: the l1 norm is not smooth; use fm.L1Ball."""
    expr = as_expression(expr)
    _refuse(f"norm1({short_repr(expr)})", "to bound it, use fm.L1Ball(expr, radius).")


def norm2(expr):
    """Refused: the l2 norm is not smooth; use fm.L2Ball or fm.sum_squares."""
    expr = as_expression(expr)
    _refuse(
        f"norm2({short_repr(expr)})",
        "to bound it, use fm.L2Ball(expr, radius); as a penalty, use fm.sum_squares(expr) (its square, which is smooth).",
    )


def norm_inf(expr):
    """Refused: the max norm is not smooth; use fm.LinfBall or fm.Box."""
    expr = as_expression(expr)
    _refuse(
        f"norm_inf({short_repr(expr)})",
        "to bound it, use fm.LinfBall(expr, radius) or fm.Box(expr, lower, upper).",
    )


def norm(expr, p=2, axis=None):
    """Refused: norms are not smooth; the message names the set for ``p``."""
    expr = as_expression(expr)
    call = f"norm({short_repr(expr)}, {p!r})"
    if p == 1:
        norm1(expr)
    if p in (2, "fro", None):
        norm2(expr)
    if p in (np.inf, "inf", float("inf")):
        norm_inf(expr)
    if p == "nuc":
        _refuse(call, "to bound the nuclear norm, use fm.TraceNormBall(expr, radius).")
    _refuse(call, "fwmodel has no set for this norm; a custom fm.ConvexSet subclass with an LMO can express it.")


def max(expr, axis=None):  # noqa: A001 - mirrors numpy.max / cvxpy.max
    """Refused: the maximum is not smooth; bound entries with fm.Box or fm.LinfBall."""
    expr = as_expression(expr)
    _refuse(
        f"max({short_repr(expr)})",
        "to bound the entries, use fm.Box(expr, lower, upper) or fm.LinfBall(expr, radius); "
        "fm.log_sum_exp is a smooth surrogate of the maximum.",
    )


def min(expr, axis=None):  # noqa: A001 - mirrors numpy.min / cvxpy.min
    """Refused: the minimum is not smooth; bound entries with fm.Box or fm.LinfBall."""
    expr = as_expression(expr)
    _refuse(
        f"min({short_repr(expr)})",
        "to bound the entries, use fm.Box(expr, lower, upper) or fm.LinfBall(expr, radius).",
    )
