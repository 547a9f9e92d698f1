"""Smooth atoms: the nonlinear building blocks of an objective.

Each atom is a small class with declarative pieces:

- ``_forward_aux(vals) -> (value, aux)``: the value, plus intermediate
  results the gradient reuses (for example ``P @ x`` or a softmax);
- ``_backward(adj, vals, out, aux, needs)``: the adjoints of the arguments;
- ``_second(vals, out, aux, tangents)``: the second directional derivative
  along the arguments' tangents, for affine arguments (used for exact line
  searches and curvature estimates);
- ``_curvature_rule``: DCP. ``monotone`` atoms (nondecreasing: exp,
  logistic, log_sum_exp) accept convex arguments; the others need affine
  ones.

Adjoints travel as pairs ``(array, scale)`` meaning ``scale * array``, so
that scalings (2 in ``sum_squares``, weights, signs) never cost a pass over
the data; arrays in adjoints are never modified in place.

Future atoms (for example SymPy-defined ones) follow the same interface and
may take several arguments.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .._kernels import einsum_plain
from ..errors import ModelError
from .affine import DivideExpression, divide, normalize_axes, reduced_shape
from .core import (
    AFFINE,
    CONCAVE,
    CONSTANT,
    CONVEX,
    UNKNOWN,
    Constant,
    Expression,
    Parameter,
    as_expression,
    matrix_definiteness,
    short_repr,
    uniform_value,
)


def _flat_dot(a, b):
    """``sum(a * b)`` over all entries without copies for contiguous arrays."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.flags.c_contiguous and b.flags.c_contiguous:
        # einsum, not np.dot: a threaded BLAS dot on a busy small machine can
        # cost milliseconds for a memory-bound reduction (see engine/vector_ops)
        return float(einsum_plain("i,i->", a.ravel(), b.ravel()))
    if a.shape == b.shape and 0 < a.ndim <= 26:
        letters = "abcdefghijklmnopqrstuvwxyz"[: a.ndim]
        return float(np.einsum(f"{letters},{letters}->", a, b))  # strided views, no copy
    return float(np.vdot(a, b))


class Atom(Expression):
    """Base class of smooth nonlinear atoms."""

    is_atom = True
    #: True for atoms that are quadratic in their (affine) argument.
    quadratic = False
    #: True for atoms nondecreasing in their argument (accept convex arguments).
    monotone = False
    #: Name shown in ``repr``.
    name = "atom"

    #: True for atoms whose value is >= 0 everywhere (squares, exp, logistic,
    #: huber): their sign is known even when their argument's is not.
    nonnegative = False

    def _sign_rule(self, signs):
        return "nonneg" if self.nonnegative else "unknown"

    def _compute_affine(self):
        # An atom of constants is a constant; otherwise it is nonlinear.
        return not self._has_vars

    def _forward(self, vals):
        return self._forward_aux(vals)[0]

    def _forward_aux(self, vals):
        raise NotImplementedError

    def _second(self, vals, out, aux, tangents):
        raise NotImplementedError

    def _curvature_rule(self, curvatures):
        c = curvatures[0]
        if c == CONSTANT:
            return CONSTANT
        if c == AFFINE or (c == CONVEX and self.monotone):
            return CONVEX
        return UNKNOWN

    def _extra_repr(self):
        return ""

    def _repr(self, texts):
        return f"{self.name}({texts[0]}{self._extra_repr()})"


class SumSquaresExpression(Atom):
    """``sum(u ** 2)`` over all entries."""

    name = "sum_squares"
    quadratic = True
    nonnegative = True

    def __init__(self, arg):
        super().__init__([arg], ())

    def _forward_aux(self, vals):
        u = vals[0]
        return np.float64(_flat_dot(u, u)), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        # d/du sum(u^2) = 2u: hand over u itself with the factor in the scale.
        return [(np.asarray(vals[0]), 2.0 * s * uniform_value(G))]

    def _second(self, vals, out, aux, tangents):
        du = tangents[0]
        return 2.0 * _flat_dot(du, du)


def sum_squares(expr):
    """Sum of the squared entries, ``||vec(expr)||_2^2`` (convex for affine ``expr``)."""
    return SumSquaresExpression(as_expression(expr))


class SquareExpression(Atom):
    """Elementwise ``u ** 2``."""

    name = "square"
    quadratic = True
    nonnegative = True

    def __init__(self, arg):
        arg = as_expression(arg)
        super().__init__([arg], arg.shape)

    def _forward_aux(self, vals):
        return np.square(vals[0]), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        u = np.asarray(vals[0])
        w = uniform_value(G)
        if w is not None:
            return [(u, 2.0 * s * w)]
        return [(np.multiply(G, u), 2.0 * s)]

    def _second(self, vals, out, aux, tangents):
        du = tangents[0]
        return 2.0 * np.square(du)


def square(expr):
    """Elementwise square (convex for affine ``expr``); ``square(norm2(e))`` is ``sum_squares(e)``."""
    from .nonsmooth import NormAtom

    if isinstance(expr, NormAtom) and expr.kind == "l2":
        return sum_squares(expr.args[0])  # ||e||_2^2, smooth although ||e||_2 is not
    return SquareExpression(expr)


def power(expr, p):
    """``expr ** p`` entrywise, as ``cvxpy.power``, for the p whose result is smooth.

    p = 0 is the constant 1, p = 1 is ``expr``, p = 2 is ``fm.square``
    (``power(norm(e, 2), 2)`` is ``fm.sum_squares(e)``), and an even p >= 4
    is ``fm.smooth(z**p, {z: expr})`` (convex, with a gradient Lipschitz on the
    bounded sets FW-AL works in). Other p are refused with a ModelError:
    CVXPY defines them on ``expr >= 0`` only (p > 1 not an even integer) or
    they are concave or unbounded at 0 (p < 1), where the gradient (p < 2:
    the curvature) is unbounded at the boundary of the sets Frank-Wolfe visits.
    """
    expr = as_expression(expr)
    where = f"power({short_repr(expr)}, {p!r})"
    if isinstance(p, Expression):
        raise ModelError(f"{where}: p must be a number, not an expression or an fm.Parameter: whether the power "
                         "is smooth and convex (and which atom it is) depends on p, so p is fixed when the model "
                         "is built; build one problem per exponent")
    if isinstance(p, bool) or not isinstance(p, (numbers.Real, np.floating, np.integer)) or not np.isfinite(p):
        raise ModelError(f"{where}: p must be a finite number, got {p!r}")
    if p == 0:
        return Constant(np.ones(expr.shape))
    if p in (1, 2):
        return expr ** int(p)
    even = float(p).is_integer() and int(p) % 2 == 0 and p > 2  # not p = -2: 1 / z**2 is unbounded at 0
    if even and expr.is_affine():
        import sympy

        z = sympy.Symbol("z")
        return _smooth(z ** int(p), {z: expr})
    if even:
        raise ModelError(f"{where}: an even power of a non-affine expression has no smooth atom here; "
                         "write the power of an affine expression")
    if p > 2:
        advice = ("for entries kept >= 0 by the constraints write fm.smooth(z**p, {z: expr}) with "
                  "z = sympy.Symbol('z', nonnegative=True)")
    elif p > 1:
        advice = "its curvature is unbounded at 0; use fm.square or fm.huber"
    else:
        advice = "its gradient is unbounded at 0; use fm.square, fm.exp or fm.smooth of a formula smooth on the sets"
    raise ModelError(f"{where}: p = {p!r} is not supported (fwmodel takes p = 0, 1, 2 and even p >= 4: "
                     f"FW-AL needs a gradient that is Lipschitz on the sets); {advice}")


def _smooth(formula, mapping):
    from .sympy_atom import smooth

    return smooth(formula, mapping)


def quad_over_lin(expr, y):
    """``sum_squares(expr) / y`` for a constant (or Parameter) scalar ``y > 0``, as ``cvxpy.quad_over_lin``.

    A ``y`` with variables is refused: ``x**2 / y`` has a gradient unbounded
    as y approaches 0, so it is not smooth on the sets FW-AL visits. A ``y``
    that depends on an fm.Parameter is declared ``nonneg=True`` (the
    objective's convexity rests on its sign) and must be positive (CVXPY's
    domain, y > 0) at each solve: a value 0 raises a ModelError naming the
    atom and the parameter when the solve starts (also with warm_start=True).
    """
    expr, y = as_expression(expr), as_expression(y)
    where = f"quad_over_lin({short_repr(expr)}, {short_repr(y)})"
    if y._has_vars:
        raise ModelError(f"{where}: y must be data (a positive number or a Parameter): with a variable y the "
                         "function's gradient is unbounded as y approaches 0 (not smooth for FW-AL); "
                         "fix y, or make it an fm.Parameter(nonneg=True) and vary it between solves")
    if y.size != 1:
        raise ModelError(f"{where}: y must be a scalar, got shape {y.shape}")
    if not y._has_params and not float(np.asarray(y.value).reshape(())) > 0:
        raise ModelError(f"{where}: y must be positive, got {float(np.asarray(y.value).reshape(())):g}")
    if y._has_params:  # the same division, with y > 0 checked at each solve
        return QuadOverLinExpression(sum_squares(expr), y)
    return divide(sum_squares(expr), y)


class QuadOverLinExpression(DivideExpression):
    """``quad_over_lin(x, y) = sum_squares(x) / y`` for a Parameter y: a division whose domain is y > 0."""

    def _check_parameter_domain(self):
        """Called by each solve (:mod:`fwmodel.expressions.domains`): y's current value must be positive."""
        from .domains import data_value, describe_parameters

        y = self.args[1]
        value = data_value(y)
        if value is not None and not float(value.reshape(())) > 0:
            raise ModelError(
                f"{short_repr(self)}: quad_over_lin needs a positive denominator (CVXPY's domain is y > 0), "
                f"but y = {short_repr(y)} is {float(value.reshape(())):g} at this solve ({describe_parameters(y)}); "
                "give the parameters values for which y > 0")

    def _repr(self, texts):
        return f"quad_over_lin({short_repr(self.args[0].args[0])}, {texts[1]})"


class QuadFormExpression(Atom):
    """``x^T P x`` for a constant symmetric matrix ``P`` (dense, sparse or a Parameter)."""

    name = "quad_form"
    quadratic = True
    _keeps_sparse = True

    def __init__(self, x, P):
        x, P = as_expression(x), as_expression(P)
        if P._has_vars:
            raise ModelError(
                f"quad_form({short_repr(x)}, {short_repr(P)}): the matrix P must be constant "
                "(a NumPy array, a sparse matrix or a Parameter)"
            )
        n = x.size
        if P.shape == () and n == 1:
            P = Constant(np.reshape(P.value, (1, 1))) if isinstance(P, Constant) else P
        if P.shape != (n, n):
            raise ModelError(
                f"quad_form({short_repr(x)}, P): P must have shape ({n}, {n}) to match x of shape "
                f"{x.shape}, got {P.shape}"
            )
        super().__init__([x, P], ())
        # Check fixed data once; an expression of Parameters counts as PSD only
        # when it is a Parameter declared psd=True (see _curvature_rule).
        self._definiteness = None
        if isinstance(P, Constant):
            self._definiteness = _check_quad_matrix(x, P._data)
        elif not P._has_params:
            self._definiteness = _check_quad_matrix(x, P.value)

    def _forward_aux(self, vals):
        u, P = vals
        flat = np.reshape(u, -1)
        Pu = np.asarray(P @ flat).ravel()
        return np.float64(flat @ Pu), Pu

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        # d/dx x^T P x = 2 P x for symmetric P (P @ x was kept from the forward pass).
        return [(aux.reshape(self.args[0].shape), 2.0 * s * uniform_value(G)), None]

    def _second(self, vals, out, aux, tangents):
        du = np.reshape(tangents[0], -1)
        P = vals[1]
        return 2.0 * float(du @ np.asarray(P @ du).ravel())

    def _curvature_rule(self, curvatures):
        c = curvatures[0]
        if c == CONSTANT:
            return CONSTANT
        if c != AFFINE:
            return UNKNOWN
        kind = self._definiteness
        if kind is None:  # a Parameter (or an expression of parameters)
            # Its value may change after the model is built: only a declared
            # psd=True holds for every value (as in CVXPY), not the current one.
            P = self.args[1]
            kind = "psd" if isinstance(P, Parameter) and P.psd else "unknown"
        if kind in ("psd", "unchecked"):
            return CONVEX
        if kind == "nsd":
            return CONCAVE
        return UNKNOWN

    def _repr(self, texts):
        return f"quad_form({texts[0]}, {texts[1]})"


def _check_quad_matrix(x, P):
    kind = matrix_definiteness(P)
    if kind == "asymmetric":
        raise ModelError(f"quad_form({short_repr(x)}, P): P must be symmetric")
    if kind == "indefinite":
        eig = np.linalg.eigvalsh(P.toarray() if sp.issparse(P) else P)
        raise ModelError(
            f"quad_form({short_repr(x)}, P): P must be positive semidefinite "
            f"(its eigenvalues range from {eig[0]:.3g} to {eig[-1]:.3g}); the objective must be convex"
        )
    return kind


def quad_form(x, P):
    """``x^T P x`` for a constant symmetric positive semidefinite ``P``.

    ``P`` may be a NumPy array, a scipy.sparse matrix (kept sparse) or a
    Parameter (declare ``psd=True`` to keep convexity independent of its
    value). Symmetry and semidefiniteness of a constant ``P`` are checked
    (eigenvalues for up to 1000 x 1000; larger matrices are assumed PSD).
    A negative semidefinite ``P`` gives a concave expression.
    """
    return QuadFormExpression(x, P)


class LogisticExpression(Atom):
    """Elementwise ``log(1 + exp(u))``, computed without overflow."""

    name = "logistic"
    monotone = True
    nonnegative = True

    def __init__(self, arg):
        arg = as_expression(arg)
        super().__init__([arg], arg.shape)

    def _forward_aux(self, vals):
        return np.logaddexp(0.0, vals[0]), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        sig = expit(vals[0])  # the derivative, the logistic sigmoid
        w = uniform_value(G)
        if w is not None:
            return [(sig, s * w)]
        return [(np.multiply(G, sig, out=sig), s)]

    def _second(self, vals, out, aux, tangents):
        sig = expit(vals[0])
        return sig * (1.0 - sig) * np.square(tangents[0])


def logistic(expr):
    """Elementwise ``log(1 + exp(expr))``, numerically stable (convex, nondecreasing)."""
    return LogisticExpression(expr)


class LogSumExpExpression(Atom):
    """``log(sum(exp(u)))`` over ``axes``, shifted by the maximum for stability."""

    name = "log_sum_exp"
    monotone = True

    def __init__(self, arg, axes, keepdims=False):
        arg = as_expression(arg)
        self.axes = tuple(axes)
        self.keepdims = bool(keepdims)
        self._kept_shape = reduced_shape(arg.shape, self.axes, True)
        super().__init__([arg], reduced_shape(arg.shape, self.axes, self.keepdims))

    def _forward_aux(self, vals):
        u = np.asarray(vals[0])
        top = np.max(u, axis=self.axes, keepdims=True)
        p = np.exp(u - top)
        total = np.sum(p, axis=self.axes, keepdims=True)
        p /= total  # the softmax: the gradient, kept for the backward pass
        out = top + np.log(total)
        return np.reshape(out, self._shape), p

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        w = uniform_value(G)
        if w is not None:
            return [(aux, s * w)]
        return [(np.multiply(np.reshape(G, self._kept_shape), aux), s)]

    def _second(self, vals, out, aux, tangents):
        du = tangents[0]
        p = aux
        mean = np.sum(p * du, axis=self.axes, keepdims=True)
        var = np.sum(p * np.square(du - mean), axis=self.axes, keepdims=True)
        return np.reshape(var, self._shape)

    def _extra_repr(self):
        extra = ""
        if self.axes != tuple(range(self.args[0].ndim)):
            extra = f", axis={self.axes[0] if len(self.axes) == 1 else self.axes}"
        return extra + (", keepdims=True" if self.keepdims else "")


def log_sum_exp(expr, axis=None, keepdims=False):
    """``log(sum(exp(expr)))`` over ``axis`` (None: all entries), numerically stable."""
    expr = as_expression(expr)
    if expr.size == 0:
        raise ModelError(f"log_sum_exp({short_repr(expr)}): the expression has no entries")
    axes = normalize_axes(axis, expr.ndim, f"log_sum_exp({short_repr(expr)})")
    return LogSumExpExpression(expr, axes, keepdims)


class HuberExpression(Atom):
    """Elementwise Huber function: ``u**2`` for ``|u| <= M``, ``2M|u| - M**2`` beyond."""

    name = "huber"
    nonnegative = True

    def __init__(self, arg, M):
        arg = as_expression(arg)
        super().__init__([arg], arg.shape)
        self.M = M

    def _forward_aux(self, vals):
        u = vals[0]
        a = np.abs(u)
        M = self.M
        return np.where(a <= M, np.square(u), 2.0 * M * a - M * M), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        slope = np.clip(vals[0], -self.M, self.M)  # half the derivative
        w = uniform_value(G)
        if w is not None:
            return [(slope, 2.0 * s * w)]
        return [(np.multiply(G, slope, out=slope), 2.0 * s)]

    def _second(self, vals, out, aux, tangents):
        du = tangents[0]
        return np.where(np.abs(vals[0]) <= self.M, 2.0 * np.square(du), 0.0)

    def _extra_repr(self):
        return "" if self.M == 1.0 else f", M={self.M:g}"


def huber(expr, M=1.0):
    """Elementwise Huber function with threshold ``M > 0`` (CVXPY's definition):
    ``x**2`` where ``|x| <= M`` and ``2*M*|x| - M**2`` elsewhere."""
    if isinstance(M, Expression):
        raise ModelError(f"huber({short_repr(as_expression(expr))}, M={short_repr(M)}): M must be a positive "
                         "number; a Parameter (or expression) M is not supported (CVXPY takes one): build one "
                         "problem per threshold")
    if not isinstance(M, (numbers.Real, np.floating, np.integer)) or isinstance(M, bool):
        raise ModelError(f"huber: M must be a positive number, got {M!r}")
    M = float(M)
    if not np.isfinite(M) or M <= 0:
        raise ModelError(f"huber: M must be a positive number, got {M!r}")
    return HuberExpression(expr, M)


class ExpExpression(Atom):
    """Elementwise ``exp(u)``."""

    name = "exp"
    monotone = True
    nonnegative = True

    def __init__(self, arg):
        arg = as_expression(arg)
        super().__init__([arg], arg.shape)

    def _forward_aux(self, vals):
        return np.exp(vals[0]), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        out = np.asarray(out)
        w = uniform_value(G)
        if w is not None:
            return [(out, s * w)]
        return [(np.multiply(G, out), s)]

    def _second(self, vals, out, aux, tangents):
        return out * np.square(tangents[0])


def exp(expr):
    """Elementwise exponential (convex, nondecreasing)."""
    return ExpExpression(expr)
