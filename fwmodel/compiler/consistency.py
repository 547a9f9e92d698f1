"""Rows of the consistency constraint M x = b, and M as a fast operator.

M is assembled from *pieces*, one per consistency edge of the compiler's
graph. Two kinds:

* :class:`CopyRows`: ``x[copy] - x[first] = 0``, one row per entry, tying a
  copy of some variable entries to their first copy. When both sides are
  contiguous slices (a whole variable copied into two blocks, the common
  case) M x and M' r are a subtraction of two slices: no sparse matrix is
  stored or multiplied.
* :class:`SparseRows`: ``A x = b`` for a general sparse A (affine
  expressions under a set, ``expr == expr`` constraints, factor-graph
  marginalization).

:class:`ConsistencyOperator` stacks the pieces; ``.csr()`` builds the
scipy.sparse CSR matrix for inspection (lazily: at d = 4000 a CSR copy of
16 million consistency rows would cost several dense arrays of memory).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _as_index(positions):
    """A slice when the positions are a contiguous increasing run."""
    if isinstance(positions, slice):
        return positions
    positions = np.asarray(positions, dtype=np.intp)
    if positions.size and positions[-1] - positions[0] == positions.size - 1 and np.all(np.diff(positions) == 1):
        return slice(int(positions[0]), int(positions[-1]) + 1)
    return positions


def _positions(index):
    if isinstance(index, slice):
        return np.arange(index.start, index.stop, dtype=np.intp)
    return index


class CopyRows:
    """Rows ``x[copy] - x[first] = 0`` (a copy must equal the first copy)."""

    def __init__(self, copy_positions, first_positions, label=""):
        self.copy = _as_index(copy_positions)
        self.first = _as_index(first_positions)
        self.rows = int(_positions(self.copy).size)
        self.label = label
        self.b = np.zeros(self.rows)

    def matvec(self, x, out):
        np.subtract(x[self.copy], x[self.first], out=out)

    def rmatvec(self, r, out):
        # out += M_piece' r; index sets within a piece have no repeats.
        if isinstance(self.copy, slice):
            out[self.copy] += r
        else:
            np.add.at(out, self.copy, r)
        if isinstance(self.first, slice):
            out[self.first] -= r
        else:
            np.add.at(out, self.first, -r)

    def csr(self, n):
        rows = np.arange(self.rows)
        data = np.concatenate([np.ones(self.rows), -np.ones(self.rows)])
        cols = np.concatenate([_positions(self.copy), _positions(self.first)])
        return sp.csr_matrix((data, (np.concatenate([rows, rows]), cols)), shape=(self.rows, n))


class SparseRows:
    """Rows ``A x = b`` with A a scipy.sparse matrix."""

    def __init__(self, A, b, label=""):
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.b = np.asarray(b, dtype=float).ravel()
        self.rows = self.A.shape[0]
        self.label = label

    def matvec(self, x, out):
        out[:] = self.A @ x

    def rmatvec(self, r, out):
        out += self.AT @ r

    def csr(self, n):
        return self.A


class ConsistencyOperator:
    """M as the vertical stack of pieces, with ``matvec`` and ``rmatvec``."""

    def __init__(self, pieces, n):
        self.pieces = [p for p in pieces if p.rows > 0]
        self.n = n
        self.offsets = np.cumsum([0] + [p.rows for p in self.pieces])
        self.shape = (int(self.offsets[-1]), n)
        self._csr = None

    @property
    def b(self):
        if not self.pieces:
            return np.zeros(0)
        return np.concatenate([p.b for p in self.pieces])

    def matvec(self, x):
        out = np.empty(self.shape[0])
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            p.matvec(x, out[lo:hi])
        return out

    def rmatvec(self, r):
        out = np.zeros(self.n)
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            p.rmatvec(r[lo:hi], out)
        return out

    def csr(self):
        if self._csr is None:
            if self.pieces:
                self._csr = sp.vstack([p.csr(self.n) for p in self.pieces], format="csr")
            else:
                self._csr = sp.csr_matrix((0, self.n))
        return self._csr
