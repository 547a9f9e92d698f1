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

try:  # what scipy.sparse's CSR @ vector calls
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:  # pragma: no cover (other SciPy layouts)
    _csr_matvec = None


def einsum_plain(subscripts, *operands):
    """``np.einsum(subscripts, *operands, optimize=False)``."""
    if _c_einsum is None:  # pragma: no cover
        return np.einsum(subscripts, *operands, optimize=False)
    return _c_einsum(subscripts, *operands)


_CSR_TYPES = (sp.csr_matrix, sp.csr_array)


def csr_times(A, v):
    """``A @ v`` for a scipy.sparse CSR matrix A of float64 and a float64 vector v (the same numbers).

    Anything else (another format or dtype, a vector of another shape) goes to ``A @ v``.
    """
    if (_csr_matvec is not None and type(A) in _CSR_TYPES and A.dtype == np.float64
            and v.dtype == np.float64 and v.shape == (A.shape[1],)):
        out = np.zeros(A.shape[0])
        _csr_matvec(A.shape[0], A.shape[1], A.indptr, A.indices, A.data, v, out)
        return out
    return A @ v
