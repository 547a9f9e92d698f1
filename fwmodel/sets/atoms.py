"""Structured vertices ("atoms") returned by linear minimization oracles.

The engine keeps, for every polytope block, an *active set*: the atoms whose
convex combination is the current iterate (paper eq. active_set_decomposition).
Storing a dense copy of every atom would cost a full block per atom, so an LMO
returns an atom that knows how to take an inner product with a gradient and
how to add itself into a flat vector, in whatever compact form suits it:
a few signed coordinates for an L1 ball vertex, one index per row for a
batched simplex, a rank-one pair for a trace-norm ball vertex.

Every atom works on the *flat* (C-order) vector of its block.
"""
from __future__ import annotations

import hashlib
import itertools

import numpy as np
from scipy.linalg.blas import dger as _dger

_fresh_keys = itertools.count()


class Atom:
    """A vertex of a set in compact form.

    Subclasses implement ``dot``, ``add_to`` and ``to_dense``; ``key`` is a
    hashable identity used to merge repeated atoms in an active set (two atoms
    with equal keys must be the same point).
    """

    key = None
    size = 0

    def dot(self, g):
        """<g, atom> for a flat vector ``g`` of the block's size."""
        raise NotImplementedError

    def add_to(self, x, weight):
        """In place: ``x += weight * atom`` (``x`` flat, the block's size)."""
        raise NotImplementedError

    def to_dense(self):
        out = np.zeros(self.size)
        self.add_to(out, 1.0)
        return out


class DenseAtom(Atom):
    """Any vertex, stored densely; the fallback for user-defined sets."""

    def __init__(self, vector, key=None):
        if np.iscomplexobj(vector):  # (a float copy would warn and drop the imaginary parts)
            from ..errors import ModelError
            raise ModelError("DenseAtom: the vertex is complex; a vertex of a set of real matrices is real")
        self.vector = np.ascontiguousarray(vector, dtype=float).ravel()
        self.size = self.vector.size
        if key is None:
            key = ("dense", hashlib.blake2b(self.vector.tobytes(), digest_size=16).digest())
        self.key = key

    def dot(self, g):
        return float(np.einsum("i,i->", g, self.vector, optimize=False))

    def add_to(self, x, weight):
        if weight == 1.0:
            x += self.vector
        else:
            x += weight * self.vector

    def to_dense(self):
        return self.vector.copy()


class SparseAtom(Atom):
    """A vertex with few nonzeros: ``values`` at flat ``indices``.

    Examples: +-radius at one coordinate (L1 ball), ``total`` at one index per
    group (batched simplex), +-radius at k coordinates (k-sparse polytope).
    Repeated indices are allowed and add up.
    """

    def __init__(self, indices, values, size):
        if np.iscomplexobj(values):  # (a float copy would warn and drop the imaginary parts)
            from ..errors import ModelError
            raise ModelError("SparseAtom: the values are complex; a vertex of a set of real matrices is real")
        self.indices = np.asarray(indices, dtype=np.intp).ravel()
        values = np.array(values, dtype=float)  # a copy: the atom owns its values
        if values.ndim == 0:  # one value for every entry (a permutation's ones): filled, no broadcast view
            values = np.full(self.indices.shape, values)
        elif values.shape != self.indices.shape:  # (an array of the same shape needs no broadcast)
            values = np.broadcast_to(values, self.indices.shape).copy()
        self.values = values
        self.size = int(size)
        self.key = ("sparse", self.indices.tobytes(), self.values.tobytes())

    def dot(self, g):
        return float(np.dot(g[self.indices], self.values))

    def add_to(self, x, weight):
        if self.indices.size == 1:  # one entry (an L1 ball's vertex): the same sum as np.add.at, without its setup
            i = int(self.indices[0])
            x[i] = x[i] + weight * self.values[0]
            return
        np.add.at(x, self.indices, weight * self.values)


class RankOneAtom(Atom):
    """``scale * outer(u, v)`` for a block that is a (batch of one) matrix.

    ``shape`` is the block's matrix shape (m, n); ``u`` has m entries, ``v`` n.
    Rank-one atoms from a continuous LMO essentially never repeat, so each gets
    a fresh key.
    """

    def __init__(self, u, v, scale, shape):
        self.u = np.asarray(u, dtype=float).ravel()
        # a symmetric atom keeps one vector (u is v), which in-face steps test for
        self.v = self.u if v is u else np.asarray(v, dtype=float).ravel()
        self.scale = float(scale)
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape))
        self.key = ("rank1", next(_fresh_keys))

    def dot(self, g):
        G = g.reshape(self.shape)
        return self.scale * float(self.u @ (G @ self.v))

    def add_to(self, x, weight):
        X = x.reshape(self.shape)
        alpha = weight * self.scale
        if X.dtype == np.float64 and X.flags.c_contiguous and X.size:
            # BLAS rank-one update in place: one read-write pass over the block and
            # no block-size temporaries (np.outer and its scaled copy are two).
            # X' is Fortran-ordered, so dger(a, v, u, X') updates X += a u v' in place.
            out = _dger(alpha, self.v, self.u, a=X.T, overwrite_a=1)
            if not np.shares_memory(out, X):  # the wrapper copied after all: write the result back
                X[...] = out.T
            return
        X += alpha * np.outer(self.u, self.v)
