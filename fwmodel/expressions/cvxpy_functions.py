"""CVXPY's everyday affine functions: ``diag``, ``diff``, ``cumsum``, ``mean``, ``vec``, ``bmat``, ``kron``, ...

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
from .affine import hstack, index, inner, matmul, multiply, sum, transpose, vstack
from .affine import _reshape as reshape  # (fwmodel's own reshapes: C order, no warning)
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


VEC_ORDER_MESSAGE = (
    "vec without order=: fwmodel reads the entries column by column (order='F'), as CVXPY 1.x's vec does by default, "
    "which CVXPY says will change to row by row (order='C', NumPy's default); fm.reshape, expr.reshape and "
    "expr.flatten read 'F' without an order too. Pass order='F' or order='C' explicitly (this warning then goes away)")


def vec(expr, order=None):
    """The entries of ``expr`` as a vector, column by column (``order="F"``) or row by row (``order="C"``).

    Without ``order`` it reads F order, CVXPY 1.x's default for ``cp.vec``, and warns (a ``FutureWarning``, as
    CVXPY's own ``vec`` and ``reshape`` do without an order, since CVXPY announced that their default will become
    NumPy's "C"). :func:`fwmodel.reshape` without an order reads "F" and warns the same way: a model that
    relies on either default is ambiguous across versions, so pass ``order`` explicitly.
    """
    expr = as_expression(expr)
    if order is None:
        import warnings

        warnings.warn(VEC_ORDER_MESSAGE, FutureWarning, stacklevel=2)
        order = "F"
    if order not in ("F", "C"):
        raise ModelError(f"vec({short_repr(expr)}): order must be 'F' or 'C', got {order!r}")
    return reshape(expr, (expr.size,), order=order)


def bmat(blocks):
    """A block matrix from a list of rows of blocks, as ``cvxpy.bmat``: the vstack of each row's hstack."""
    if (not isinstance(blocks, (list, tuple)) or not blocks
            or not all(isinstance(row, (list, tuple)) and row for row in blocks)):
        raise ModelError(f"bmat: expects a non-empty list of non-empty lists of blocks (its rows), got {blocks!r}")
    return vstack([hstack(list(row)) for row in blocks])


def vdot(a, b):
    """``sum(a * b)`` over all entries (as ``cvxpy.vdot`` / ``scalar_product`` for real data); one side constant."""
    return inner(a, b)


scalar_product = vdot


def outer(a, b):
    """The outer product ``a[:, None] * b[None, :]`` of two vectors, as ``cvxpy.outer``; one side constant."""
    a, b = as_expression(a), as_expression(b)
    for v in (a, b):
        if v.ndim > 1:
            raise ModelError(f"outer({short_repr(a)}, {short_repr(b)}): expects vectors (or scalars), got shape "
                             f"{v.shape}")
    return multiply(reshape(a, (a.size, 1)), reshape(b, (1, b.size)))


def kron(a, b):
    """The Kronecker product of two matrices, as ``cvxpy.kron`` / ``numpy.kron``; one side constant.

    Written as one sparse matrix applied to the entries of the side with
    variables (p * q * r * s nonzeros for (p, q) and (r, s) matrices).
    """
    a, b = as_expression(a), as_expression(b)
    where = f"kron({short_repr(a)}, {short_repr(b)})"
    if a._has_vars and b._has_vars:
        raise ModelError(f"{where}: one side must be constant (a product of two expressions with variables "
                         "is not affine)")
    if a.ndim != 2 or b.ndim != 2:
        raise ModelError(f"{where}: expects two matrices (2-D), got shapes {a.shape} and {b.shape}")
    (p, q), (r, s_) = a.shape, b.shape
    constant_first = not a._has_vars
    data, expr = (a, b) if constant_first else (b, a)
    if data._has_params:
        raise ModelError(f"{where}: the constant side must be data (a NumPy array or number), not an fm.Parameter")
    D = np.asarray(data.value, dtype=float)
    i, j, k, l_ = np.meshgrid(np.arange(p), np.arange(q), np.arange(r), np.arange(s_), indexing="ij")
    rows = ((i * r + k) * (q * s_) + (j * s_ + l_)).ravel()
    if constant_first:  # kron(A, X)[i r + k, j s + l] = A[i, j] X[k, l]
        cols, vals = (k * s_ + l_).ravel(), np.broadcast_to(D[:, :, None, None], i.shape).ravel()
    else:  # kron(X, B)[i r + k, j s + l] = X[i, j] B[k, l]
        cols, vals = (i * q + j).ravel(), np.broadcast_to(D[None, None, :, :], i.shape).ravel()
    placement = sp.csr_matrix((vals, (rows, cols)), shape=(p * r * q * s_, expr.size))
    return reshape(matmul(placement, reshape(expr, (expr.size,))), (p * r, q * s_))


def upper_tri(expr):
    """The strictly upper-triangular entries of a square matrix, row by row, as ``cvxpy.upper_tri``.

    Shape ``(k,)``, ``k = n (n - 1) / 2``: the vector CVXPY documents
    (``upper_tri(A).value == np.array([11, 12, 13, 16, 17, 21])`` in its
    docstring) and its ``.value`` returns. CVXPY 1.9's expression reports the
    shape ``(k, 1)`` while its value is ``(k,)``; with that shape
    ``cp.upper_tri(X) == v`` for a vector ``v`` of k entries broadcasts to k x k
    equalities. Here it is the k equalities it reads as (a column is
    ``fm.reshape(fm.upper_tri(X), (k, 1), order="F")``).
    """
    expr = as_expression(expr)
    if expr.ndim != 2 or expr.shape[0] != expr.shape[1]:
        raise ModelError(f"upper_tri({short_repr(expr)}): expects a square matrix, got shape {expr.shape}")
    rows, cols = np.triu_indices(expr.shape[0], 1)
    return index(expr, (rows, cols))


def convolve(a, b):
    """The full 1-D convolution of two vectors (length n + m - 1), as ``cvxpy.convolve`` / ``numpy.convolve``.

    One side constant; written as a sparse Toeplitz matrix applied to the
    other. ``fm.conv`` is the same (CVXPY's older name).
    """
    a, b = as_expression(a), as_expression(b)
    where = f"convolve({short_repr(a)}, {short_repr(b)})"
    if a._has_vars and b._has_vars:
        raise ModelError(f"{where}: one side must be constant (a product of two expressions with variables "
                         "is not affine)")
    if a.ndim > 1 or b.ndim > 1:
        raise ModelError(f"{where}: expects vectors (1-D), got shapes {a.shape} and {b.shape}")
    kernel, expr = (a, b) if not a._has_vars else (b, a)
    if kernel._has_params:
        raise ModelError(f"{where}: the constant side must be data (a NumPy array or number), not an fm.Parameter")
    h = np.atleast_1d(np.asarray(kernel.value, dtype=float))
    n = expr.size
    k, j = np.meshgrid(np.arange(h.size), np.arange(n), indexing="ij")  # out[j + k] += h[k] x[j]
    toeplitz = sp.csr_matrix((np.broadcast_to(h[:, None], k.shape).ravel(), ((j + k).ravel(), j.ravel())),
                             shape=(n + h.size - 1, n))
    return matmul(toeplitz, reshape(expr, (n,)))


conv = convolve


def tv(expr):
    """Total variation of a vector, ``sum |x[i+1] - x[i]|``, as ``cvxpy.tv``: ``fm.tv(x) <= t`` is an L1 ball on
    ``fm.diff(x)``; refused in objectives (not smooth), and for a matrix (CVXPY's isotropic TV has no set)."""
    from .nonsmooth import NormAtom, _call

    expr = as_expression(expr)
    if expr.ndim == 2 and 1 not in expr.shape or expr.ndim > 2:
        raise ModelError(f"tv({short_repr(expr)}) (CVXPY's cp.tv) of a matrix is the isotropic total variation, "
                         "a sum of Euclidean norms of differences, which has no set with a linear minimization "
                         "oracle here; for the anisotropic one bound fm.norm1(fm.diff(X, axis=0)) and "
                         "fm.norm1(fm.diff(X, axis=1)) separately")
    vector = reshape(expr, (expr.size,))
    return NormAtom(diff(vector), "l1", _call("tv", expr))

