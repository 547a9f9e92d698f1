"""The modeling language: variables, parameters, constants, affine operations,
smooth atoms, refused non-smooth functions and equality constraints.

Compiler-facing pieces (not re-exported at the top level):
:func:`linearize` (an affine expression as ``A @ v + c``),
:class:`SmoothFunction` (value, gradient and curvature of an objective on a
flat vector) and :func:`as_expression`.
"""
from .affine import concatenate, hstack, inner, linearize, multiply, reshape, sum, trace, transpose, vstack
from .atoms import exp, huber, log_sum_exp, logistic, quad_form, square, sum_squares
from .constraints import Equality, Inequality
from .cvxpy_functions import cumsum, diag, diff, mean, vec
from .core import Constant, Expression, Leaf, Parameter, Variable, as_expression
from .evaluate import SmoothFunction
from .nonsmooth import abs, max, min, norm, norm1, norm2, norm_inf, normNuc
from .sympy_atom import smooth

__all__ = [
    "Variable",
    "Parameter",
    "Constant",
    "Expression",
    "sum",
    "multiply",
    "trace",
    "reshape",
    "vstack",
    "hstack",
    "diag",
    "diff",
    "cumsum",
    "mean",
    "vec",
    "sum_squares",
    "square",
    "quad_form",
    "logistic",
    "log_sum_exp",
    "huber",
    "exp",
    "inner",
    "smooth",
    "abs",
    "norm",
    "norm1",
    "norm2",
    "norm_inf",
    "normNuc",
    "max",
    "min",
    "Equality",
    "Inequality",
]
