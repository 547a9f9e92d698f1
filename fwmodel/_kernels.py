"""The C kernels behind two NumPy/SciPy calls, without their Python wrappers.

On the small models of everyday use (a few hundred entries) an FW-AL
iteration costs a fraction of a millisecond, and most of it is Python: the
argument checks of ``np.einsum`` and of ``scipy.sparse``'s ``A @ v`` take
longer than the arithmetic. These are the kernels those calls end in, called
directly: the same loops in the same order, so the same numbers.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

try:  # what np.einsum(..., optimize=False) forwards to
    from numpy._core.multiarray import c_einsum as _c_einsum
except ImportError:  # pragma: no cover (older NumPy layouts)
    try:
        from numpy.core.multiarray import c_einsum as _c_einsum
    except ImportError:
        _c_einsum = None

try:  # what scipy.sparse's CSR @ vector and CSR @ (C-order) matrix call
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec, csr_matvecs as _csr_matvecs
except ImportError:  # pragma: no cover (other SciPy layouts)
    _csr_matvec = _csr_matvecs = None


def _einsum_unoptimized(subscripts, *operands):  # pragma: no cover (used only without the C kernel)
    return np.einsum(subscripts, *operands, optimize=False)


#: ``einsum_plain(subscripts, *operands)`` is ``np.einsum(subscripts, *operands, optimize=False)``
#: (the C function itself where NumPy exposes it: no Python frame at all)
einsum_plain = _c_einsum if _c_einsum is not None else _einsum_unoptimized


_CSR_TYPES = (sp.csr_matrix, sp.csr_array)


def csr_times(A, v):
    """``A @ v`` for a scipy.sparse CSR matrix A of float64 and a float64 vector or C-order matrix v (the same numbers).

    Anything else (another format or dtype, another shape) goes to ``A @ v``.
    """
    if _csr_matvec is not None and type(A) in _CSR_TYPES and A.dtype == np.float64 and v.dtype == np.float64:
        rows, cols = A.shape
        if v.shape == (cols,):
            out = np.zeros(rows)
            _csr_matvec(rows, cols, A.indptr, A.indices, A.data, v, out)
            return out
        if v.ndim == 2 and v.shape[0] == cols and v.flags.c_contiguous:
            out = np.zeros((rows, v.shape[1]))
            _csr_matvecs(rows, cols, v.shape[1], A.indptr, A.indices, A.data, v.ravel(), out.ravel())
            return out
    return A @ v


#: the tile of :func:`symmetrize_in_place` and :func:`max_asymmetry` (two 512 x 512 tiles of float64
#: fit a few MB of cache)
SYMMETRIZE_TILE = 128


def symmetrize_in_place(D, tile=SYMMETRIZE_TILE):
    """D <- (D + D') / 2 in place, tile by tile: the transposed reads stay in cache (a whole-matrix
    ``D += D.T`` makes a transposed copy first). Exactly symmetric: both triangles get the same numbers,
    those of ``(D + D.T) * 0.5``."""
    n = D.shape[0]
    for i in range(0, n, tile):
        rows = slice(i, min(i + tile, n))
        for j in range(i, n, tile):
            cols = slice(j, min(j + tile, n))
            S = D[rows, cols] + D[cols, rows].T
            S *= 0.5
            D[rows, cols] = S
            D[cols, rows] = S.T


def max_asymmetry(D, tile=SYMMETRIZE_TILE):
    """``max |D - D'|`` of a square matrix, tile by tile (no matrix-size temporary)."""
    n = D.shape[0]
    worst = 0.0
    for i in range(0, n, tile):
        rows = slice(i, min(i + tile, n))
        for j in range(i, n, tile):
            cols = slice(j, min(j + tile, n))
            T = D[rows, cols] - D[cols, rows].T
            m = float(np.max(np.abs(T), initial=0.0))
            if m != m:  # NaN: reported, as np.max does
                return m
            worst = max(worst, m)
    return worst


def mirror_lower_in_place(D, tile=SYMMETRIZE_TILE):
    """D's strictly upper triangle <- its lower one transposed, in place, tile by tile (the transposed
    reads stay in cache): D becomes exactly symmetric, its lower triangle unchanged. For a matrix of
    which a BLAS routine (``dsyrk``) wrote one triangle."""
    n = D.shape[0]
    for i in range(0, n, tile):
        rows = slice(i, min(i + tile, n))
        for j in range(i + tile, n, tile):
            cols = slice(j, min(j + tile, n))
            D[rows, cols] = D[cols, rows].T
        B = D[rows, rows]
        size = B.shape[0]
        np.copyto(B, B.T.copy(), where=np.triu(np.ones((size, size), dtype=bool), 1))
