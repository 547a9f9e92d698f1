"""CVXPY's everyday affine functions: ``diag``, ``diff``, ``cumsum``, ``mean``, ``vec``.

A model written for CVXPY uses them as it is (``fm.norm1(fm.diff(x)) <= t`` is
the total-variation constraint, ``fm.diag(X) == 0`` fixes a diagonal). Each is
written with the expressions of :mod:`fwmodel.expressions.affine` (indexing,
sums, reshapes, products with sparse constants), so the compiler sees nothing
new; the signatures and results follow CVXPY's (and NumPy's, where CVXPY
follows NumPy).
"""
from __future__ import annotations

import operator

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .affine import index, matmul, multiply, reshape, sum, transpose
from .core import as_expression, short_repr


def _int_option(value, name, where):
    try:
        return operator.index(value)
    except TypeError:
        raise ModelError(f"{where}: {name} must be an int, got {value!r}") from None


def _axis(axis, ndim, where):
    axis = _int_option(axis, "axis", where)
    if not -ndim <= axis < ndim:
        raise ModelError(f"{where}: axis {axis} is out of range for an expression with {ndim} dimension(s)")
    return axis % ndim


def diag(expr, k=0):
    """The k-th diagonal of a square matrix, or the square matrix with a vector on its k-th diagonal.

    As ``cvxpy.diag``: a 2-D square ``expr`` gives the 1-D vector of its
    entries ``expr[i, i + k]``; a vector (1-D, a column (n, 1) or a row
    (1, n), as CVXPY reads them) of length n, or a scalar, gives the
    (n + |k|) x (n + |k|) matrix with ``expr`` on its k-th diagonal and
    zeros elsewhere.
    """
    expr = as_expression(expr)
    where = f"diag({short_repr(expr)})"
    k = _int_option(k, "k", where)
    if expr.ndim == 2 and 1 not in expr.shape:
        n, m = expr.shape
        if n != m:
            raise ModelError(f"{where}: a matrix argument must be square, got shape {expr.shape}")
        if abs(k) >= n:
            raise ModelError(f"{where}: offset k = {k} is outside a {n} x {n} matrix")
        rows = np.arange(max(0, -k), min(n, n - k))
        return index(expr, (rows, rows + k))
    if expr.ndim > 2:
        raise ModelError(f"{where}: expects a vector or a square matrix, got shape {expr.shape}")
    vector = reshape(expr, (expr.size,))
    n = vector.size
    size = n + abs(k)
    positions = np.arange(n)
    flat = (positions + max(0, -k)) * size + positions + max(0, k)  # C-order entries of the k-th diagonal
    placement = sp.csr_matrix((np.ones(n), (flat, positions)), shape=(size * size, n))
    return reshape(matmul(placement, vector), (size, size))


def diff(expr, k=1, axis=0):
    """k-th order differences along ``axis`` (``x[1:] - x[:-1]``, applied k times), as ``cvxpy.diff`` / ``numpy.diff``."""
    expr = as_expression(expr)
    where = f"diff({short_repr(expr)})"
    if expr.ndim == 0:
        raise ModelError(f"{where}: a scalar has no differences")
    k = _int_option(k, "k", where)
    axis = _axis(axis, expr.ndim, where)
    if k < 0:
        raise ModelError(f"{where}: order k must be >= 0, got {k}")
    if k >= expr.shape[axis]:
        raise ModelError(f"{where}: order k = {k} needs more than {expr.shape[axis]} entries along axis {axis}")
    for _ in range(k):
        head = [slice(None)] * expr.ndim
        tail = [slice(None)] * expr.ndim
        head[axis], tail[axis] = slice(1, None), slice(None, -1)
        expr = index(expr, tuple(head)) - index(expr, tuple(tail))
    return expr


def cumsum(expr, axis=0):
    """Cumulative sums along ``axis``, as ``cvxpy.cumsum``; ``axis=None`` sums the C-order flattening (NumPy)."""
    expr = as_expression(expr)
    where = f"cumsum({short_repr(expr)})"
    if axis is None or expr.ndim == 0:
        expr, axis = reshape(expr, (expr.size,)), 0
    axis = _axis(axis, expr.ndim, where)
    n = expr.shape[axis]
    rows, cols = np.tril_indices(n)  # the lower-triangular ones, built sparse (no dense n x n array)
    lower = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    # the axis moved first, the rest flattened: one product with the lower-triangular ones
    order = (axis,) + tuple(i for i in range(expr.ndim) if i != axis)
    moved = transpose(expr, order) if axis != 0 else expr
    rest = moved.shape[1:]
    summed = reshape(matmul(lower, reshape(moved, (n, int(np.prod(rest, dtype=int))))), moved.shape)
    return transpose(summed, tuple(np.argsort(order))) if axis != 0 else summed


def mean(expr, axis=None, keepdims=False):
    """Mean of the entries over ``axis`` (None: all), as ``cvxpy.mean`` / ``numpy.mean``."""
    expr = as_expression(expr)
    total = sum(expr, axis=axis, keepdims=keepdims)
    count = expr.size // max(total.size, 1) if expr.size else 0
    if count == 0:
        raise ModelError(f"mean({short_repr(expr)}): the mean of no entries is undefined")
    return multiply(1.0 / count, total)


def vec(expr, order="F"):
    """The entries of ``expr`` as a vector, column by column (``order="F"``, CVXPY's default) or row by row ("C")."""
    expr = as_expression(expr)
    if order not in ("F", "C"):
        raise ModelError(f"vec({short_repr(expr)}): order must be 'F' or 'C', got {order!r}")
    return reshape(expr, (expr.size,), order=order)
