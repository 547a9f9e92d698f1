"""The modeling language: variables, parameters, constants, affine operations,
smooth atoms, refused non-smooth functions and equality constraints.

Compiler-facing pieces (not re-exported at the top level):
:func:`linearize` (an affine expression as ``A @ v + c``),
:class:`SmoothFunction` (value, gradient and curvature of an objective on a
flat vector) and :func:`as_expression`.
"""
from .affine import (concatenate, hstack, inner, linearize, matmul, multiply, reshape, sum, trace, transpose,
                     vstack)
from .atoms import exp, huber, log_sum_exp, logistic, power, quad_form, quad_over_lin, square, sum_squares
from .constraints import Equality, Inequality, PSDConstraint
from .cvxpy_functions import (bmat, conv, convolve, cumsum, diag, diff, kron, mean, outer, scalar_product, tv,
                              upper_tri, vdot, vec)
from .core import Constant, Expression, Leaf, Parameter, Variable, as_expression
from .evaluate import SmoothFunction
from .nonsmooth import abs, max, maximum, min, minimum, neg, norm, norm1, norm2, norm_inf, normNuc, pnorm, pos
from .unsupported import *  # noqa: F401,F403 - CVXPY atoms refused with a ModelError
from .unsupported import __all__ as _refused_atoms
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
    "bmat",
    "concatenate",
    "transpose",
    "matmul",
    "vdot",
    "scalar_product",
    "outer",
    "kron",
    "upper_tri",
    "convolve",
    "conv",
    "tv",
    "sum_squares",
    "square",
    "quad_form",
    "power",
    "quad_over_lin",
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
    "pnorm",
    "max",
    "min",
    "maximum",
    "minimum",
    "pos",
    "neg",
    "Equality",
    "Inequality",
    "PSDConstraint",
    *_refused_atoms,
]
