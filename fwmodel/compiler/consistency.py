"""Rows of the consistency constraint M x = b, and M as a fast operator.

M is assembled from *pieces*, one per consistency edge of the compiler's
graph. Two kinds:

* :class:`CopyRows`: ``x[copy] - x[first] = 0``, one row per entry, tying a
  copy of some variable entries to their first copy. When both sides are
  contiguous slices (a whole variable copied into two blocks, the common
  case) M x and M' r are a subtraction of two slices: no sparse matrix is
  stored or multiplied.
* :class:`SparseRows`: ``A x = b`` for a general sparse A (affine
  expressions under a set, ``expr == expr`` constraints).
* :class:`MarginalizationRows`: the marginalization consistency of a
  factor graph (``fm.LocalMarginalPolytope``), sum_j mu_e(i, j) = mu_u(i):
  M x is a reshape-and-sum and M' r a broadcast plus a sparse scatter.
  Measured on a 100 x 100 grid with 10 states (1.98 million table
  entries per piece): M x 3.3 ms and M' r 3.9 ms per piece, against 4.0 and
  9.5 ms for the same rows in CSR, and no CSR to build at compile time
  (0.2 s instead of 0.7 s). On small graphs CSR is faster by some tens of
  microseconds per product, which does not matter there.

:class:`ConsistencyOperator` stacks the pieces; ``.csr()`` builds the
scipy.sparse CSR matrix for inspection (lazily: at d = 4000 a CSR copy of
16 million consistency rows would cost several dense arrays of memory).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._kernels import csr_times


def _as_index(positions):
    """A slice when the positions are a contiguous increasing run.

    Slices are kept as given; the counting helpers below read them as
    increasing ranges inside x, so they must have a stop, a start >= 0 and a
    positive step (the compiler only builds such slices).
    """
    if isinstance(positions, slice):
        start = 0 if positions.start is None else positions.start
        step = 1 if positions.step is None else positions.step
        if positions.stop is None or start < 0 or step <= 0:
            raise ValueError(f"consistency rows need increasing positions with a stop, got {positions!r}")
        return positions
    positions = np.asarray(positions, dtype=np.intp)
    if positions.size and positions[-1] - positions[0] == positions.size - 1 and np.all(np.diff(positions) == 1):
        return slice(int(positions[0]), int(positions[-1]) + 1)
    return positions


def _zeros(size):
    """A read-only vector of zeros that takes no memory (a broadcast view of one 0.0).

    The right-hand side of copy and marginalization rows is 0; at d = 4000 an
    actual array of zeros for 16 million copy rows would hold 128 MB.
    """
    return np.broadcast_to(np.zeros(1), (size,))


def _slice_range(index):
    """The positions of a slice (with a stop) as a range: start, stop and step as NumPy reads them."""
    return range(0 if index.start is None else index.start, index.stop, 1 if index.step is None else index.step)


def _positions(index):
    if isinstance(index, slice):
        r = _slice_range(index)
        return np.arange(r.start, r.stop, r.step, dtype=np.intp)
    return index


def _block_of(bounds, positions):
    """The block (``bounds[k] <= position < bounds[k + 1]``) of each position."""
    return np.searchsorted(bounds, positions, side="right") - 1


def _add_counts(index, bounds, out, weight=1.0):
    """``out[k] += weight`` times the number of the index's positions in block k (blocks start at ``bounds``).

    A slice is counted from its range, block by block over the blocks it
    spans (no array of its positions: 128 MB at d = 4000).
    """
    if isinstance(index, slice):
        r = _slice_range(index)
        if len(r) == 0:
            return
        for k in range(int(_block_of(bounds, r[0])), int(_block_of(bounds, r[-1])) + 1):
            inside = r[_first_at_or_after(r, bounds[k]):_first_at_or_after(r, bounds[k + 1])]
            out[k] += weight * len(inside)
    else:
        out += weight * np.bincount(_block_of(bounds, index), minlength=out.size)[:out.size]


def _first_at_or_after(r, position):
    """The index in the increasing range r of its first element >= position (len(r) if none)."""
    return min(len(r), max(0, -(-(int(position) - r.start) // r.step)))


def _count(index):
    """How many positions an index holds (a slice's without forming them: 128 MB at d = 4000)."""
    if isinstance(index, slice):
        return len(_slice_range(index))
    return int(index.size)


class CopyRows:
    """Rows ``x[copy] - x[first] = 0`` (a copy must equal the first copy)."""

    def __init__(self, copy_positions, first_positions, label=""):
        self.copy = _as_index(copy_positions)
        self.first = _as_index(first_positions)
        self.rows = _count(self.copy)
        self.label = label

    @property
    def b(self):
        return _zeros(self.rows)

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

    def diagonal_gain(self, d):
        # every column in the piece has one entry +-1
        return float(np.dot(d[self.copy], d[self.copy]) + np.dot(d[self.first], d[self.first]))

    def add_column_norms2(self, bounds, out):
        # every column in the piece has one entry +-1
        _add_counts(self.copy, bounds, out)
        _add_counts(self.first, bounds, out)

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
        out[:] = csr_times(self.A, x)  # A @ x without scipy's wrapper

    def rmatvec(self, r, out):
        out += csr_times(self.AT, r)

    def diagonal_gain(self, d):
        return float(np.dot(self.A.data ** 2, d[self.A.indices] ** 2))

    def add_column_norms2(self, bounds, out):
        out += np.bincount(_block_of(bounds, self.A.indices), weights=self.A.data ** 2, minlength=out.size)[:out.size]

    def csr(self, n):
        return self.A

    def scaled(self, factor):
        """The same rows times ``factor`` (``factor * A x = factor * b``; an array: row i times
        ``factor[i]``): the engine's row equilibration."""
        if np.ndim(factor):
            factor = np.asarray(factor, dtype=float)
            return SparseRows(sp.diags(factor) @ self.A, self.b * factor, label=self.label)
        return SparseRows(self.A * factor, self.b * factor, label=self.label)

    def row_norms(self):
        """Each row's Euclidean norm."""
        return np.sqrt(np.asarray(self.A.multiply(self.A).sum(axis=1), dtype=float).ravel())


class MarginalizationRows:
    """Rows ``sum_{axis} mu_e - mu_{endpoint(e)} = 0``: marginalization consistency.

    For the edge tables ``mu_e`` (an ``(E, K, K)`` block of x, C order) and
    the node marginals (an ``(N, K)`` block), one row per edge e and state s:

    * ``axis=2``: ``sum_j mu_e[s, j] - mu_u[s]`` with u = ``endpoint[e]``
      (the table's row marginal is the first endpoint's marginal);
    * ``axis=1``: ``sum_i mu_e[i, s] - mu_v[s]`` with v = ``endpoint[e]``
      (the column marginal is the second endpoint's marginal).

    Rows are ordered edge-major (row ``e * K + s``), the order of
    ``fm.sum(edges, axis=axis) == nodes[endpoint]`` flattened in C order, so
    this piece is that equality's rows, computed without a matrix:
    ``M x`` is a reshape and a sum over one axis minus a gather, and
    ``M' r`` adds r broadcast over the summed axis to the edge block and
    scatters ``-r`` into the node block through a sparse (N x E) incidence
    matrix (a node meets several edges, so plain fancy-index assignment
    would lose repeated contributions).
    """

    def __init__(self, edge_offset, node_offset, endpoint, n_nodes, n_states, axis, label=""):
        if axis not in (1, 2):
            raise ValueError(f"MarginalizationRows: axis must be 1 or 2, got {axis!r}")
        self.endpoint = np.ascontiguousarray(endpoint, dtype=np.intp)
        self.n_edges = int(self.endpoint.size)
        self.n_nodes = int(n_nodes)
        self.n_states = K = int(n_states)
        self.axis = axis
        self.edges = slice(int(edge_offset), int(edge_offset) + self.n_edges * K * K)
        self.nodes = slice(int(node_offset), int(node_offset) + self.n_nodes * K)
        self.rows = self.n_edges * K
        self.label = label
        # incidence[u, e] = 1 when endpoint[e] == u: M' r on the node block is -incidence @ R.
        self._incidence = sp.csr_matrix(
            (np.ones(self.n_edges), (self.endpoint, np.arange(self.n_edges))),
            shape=(self.n_nodes, self.n_edges))

    @property
    def b(self):
        return _zeros(self.rows)

    def matvec(self, x, out):
        K = self.n_states
        tables = x[self.edges].reshape(self.n_edges, K, K)
        marginals = out.reshape(self.n_edges, K)
        # einsum: about 3x faster than np.sum over a short axis
        np.einsum("eij->ei" if self.axis == 2 else "eij->ej", tables, out=marginals)
        marginals -= x[self.nodes].reshape(self.n_nodes, K)[self.endpoint]

    def rmatvec(self, r, out):
        K = self.n_states
        R = r.reshape(self.n_edges, K)
        tables = out[self.edges].reshape(self.n_edges, K, K)
        # row (e, s) has coefficient +1 on every entry of table e summed into s
        tables += R[:, :, None] if self.axis == 2 else R[:, None, :]
        out[self.nodes].reshape(self.n_nodes, K)[...] -= csr_times(self._incidence, R)

    def diagonal_gain(self, d):
        # a table entry is in one row of the piece; node u's entries in one row per edge ending at u
        K = self.n_states
        tables = d[self.edges]
        node_rows = d[self.nodes].reshape(self.n_nodes, K)[self.endpoint]
        return float(np.dot(tables, tables) + np.einsum("ij,ij->", node_rows, node_rows))

    def add_column_norms2(self, bounds, out):
        # table entries: one row each; node u's entries: one row per edge ending at u
        _add_counts(self.edges, bounds, out)
        edges_at = np.repeat(np.bincount(self.endpoint, minlength=self.n_nodes).astype(float), self.n_states)
        positions = np.arange(self.nodes.start, self.nodes.stop)
        out += np.bincount(_block_of(bounds, positions), weights=edges_at, minlength=out.size)[:out.size]

    def csr(self, n):
        K, E = self.n_states, self.n_edges
        rows = np.arange(self.rows).reshape(E, K)
        # the table entries summed into row (e, s): C-order positions in the edge block
        entry = np.arange(E * K * K).reshape(E, K, K)
        if self.axis == 1:
            entry = entry.transpose(0, 2, 1)  # entry[e, s, :] = column s of table e
        table_rows = np.broadcast_to(rows[:, :, None], (E, K, K)).ravel()
        table_cols = self.edges.start + entry.ravel()
        node_cols = self.nodes.start + (self.endpoint[:, None] * K + np.arange(K)).ravel()
        data = np.concatenate([np.ones(E * K * K), -np.ones(E * K)])
        return sp.csr_matrix((data, (np.concatenate([table_rows, rows.ravel()]),
                                     np.concatenate([table_cols, node_cols]))), shape=(self.rows, n))


def _contiguous(index):
    """Whether an index is a slice of consecutive positions (no step)."""
    return isinstance(index, slice) and index.step in (None, 1)


#: a run of consecutive :class:`SparseRows` pieces this small (entries each) is multiplied as one stacked
#: matrix: a piece's product costs a few microseconds of calls whatever its size, so 150 constraints written
#: one row at a time (``[A[i] @ x <= b[i] for i in range(m)]``) paid 150 calls per product where one
#: constraint ``A @ x <= b`` pays one. A larger piece is multiplied on its own (no copy of its matrix).
SMALL_PIECE_ENTRIES = 10_000


def _product_runs(pieces, offsets):
    """``[(piece, lo, hi)]`` for the products: runs of small consecutive :class:`SparseRows` stacked into one.

    The pieces themselves stay as the compiler made them (each constraint's rows, read by the stopping
    rule's per-piece scales, the equilibration and the dual values); only ``M x`` and ``M' r`` use the runs.
    """
    runs, run = [], []

    def close():
        if len(run) == 1:
            runs.append(run[0])
        elif run:
            stacked = SparseRows(sp.vstack([p.A for p, _, _ in run], format="csr"),
                                 np.concatenate([p.b for p, _, _ in run]), label="stacked rows")
            runs.append((stacked, run[0][1], run[-1][2]))
        run.clear()

    for p, lo, hi in zip(pieces, offsets[:-1], offsets[1:]):
        if type(p) is SparseRows and p.A.nnz <= SMALL_PIECE_ENTRIES:
            run.append((p, int(lo), int(hi)))
            continue
        close()
        runs.append((p, int(lo), int(hi)))
    close()
    return runs


class ConsistencyOperator:
    """M as the vertical stack of pieces, with ``matvec`` and ``rmatvec``."""

    def __init__(self, pieces, n):
        self.pieces = [p for p in pieces if p.rows > 0]
        self.n = n
        self.offsets = np.cumsum([0] + [p.rows for p in self.pieces])
        self.shape = (int(self.offsets[-1]), n)
        self._csr = None
        self._assign = self._slices_are_disjoint()
        self._runs = None  # the pieces as multiplied (see _product_runs), formed at the first product

    def pieces_changed(self):
        """The pieces' rows were rebuilt in place (new Parameter values): forget what was formed from them."""
        self._csr = None
        self._runs = None

    def _products(self):
        if self._runs is None:
            self._runs = _product_runs(self.pieces, self.offsets)
        return self._runs

    def _slices_are_disjoint(self):
        """Whether M' r can be written slice by slice instead of accumulated.

        True when every piece is a :class:`CopyRows` between two contiguous
        slices and no column appears in two of them (two copies of a
        variable, the usual case; not three, where the first copy is shared).
        Then ``rmatvec`` assigns ``r`` and ``-r`` to the slices: no zero fill
        of the whole vector and no read-modify-write passes.
        """
        spans = []
        for p in self.pieces:
            if not (isinstance(p, CopyRows) and _contiguous(p.copy) and _contiguous(p.first)):
                return False
            spans += [(p.copy.start, p.copy.stop), (p.first.start, p.first.stop)]
        spans.sort()
        return bool(spans) and all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))

    @property
    def b(self):
        """The right-hand side (read-only zeros without memory when every piece's is 0)."""
        if all(isinstance(p, (CopyRows, MarginalizationRows)) for p in self.pieces):
            return _zeros(self.shape[0])
        return np.concatenate([p.b for p in self.pieces])

    def matvec(self, x):
        out = np.empty(self.shape[0])
        for p, lo, hi in self._products():
            p.matvec(x, out[lo:hi])
        return out

    def rmatvec(self, r):
        if self._assign:
            # the disjoint slices hold 2 * rows columns; zero the others, if any
            out = np.empty(self.n) if 2 * self.shape[0] == self.n else np.zeros(self.n)
            for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
                np.copyto(out[p.copy], r[lo:hi])
                np.negative(r[lo:hi], out=out[p.first])
            return out
        out = np.zeros(self.n)
        for p, lo, hi in self._products():
            p.rmatvec(r[lo:hi], out)
        return out

    def diagonal_gain(self, d):
        """``sum_j d_j^2 ||M e_j||^2``: the mean of ``||M (sigma * d)||^2`` over random signs sigma.

        What the rows make of a direction with the entries of ``d`` but no
        particular alignment with them; :func:`fwmodel.engine.schedules.default_penalty`
        compares ``||M d||^2`` with it. No column norms are stored.
        """
        return float(sum(p.diagonal_gain(d) for p in self.pieces))

    def block_column_norms2(self, bounds):
        """``sum_{j in block k} ||M e_j||^2`` for the blocks ``bounds[k]:bounds[k + 1]`` (one pass over the pieces).

        With these, :meth:`diagonal_gain` of a direction that is constant on
        each block is a sum over the blocks, without the direction itself.
        """
        bounds = np.asarray(bounds, dtype=np.intp)
        out = np.zeros(bounds.size - 1)
        for p in self.pieces:
            p.add_column_norms2(bounds, out)
        return out

    def signed_rows(self, start, stop):
        """For the columns ``start:stop`` of x: ``(lo, hi, sign)`` with M[:, start:stop] = sign * I on rows lo:hi.

        Defined when M' r is written slice by slice (two copies of a variable)
        and ``start:stop`` is exactly one copy's slice: then the block's
        columns of M are a signed identity, and the engine computes
        ``M_k d_k``, ``<w, M_k d_k>`` and ``||M_k d_k||`` from ``d_k`` itself,
        without a full-size product or a sparse matrix. ``(0, 0, 0)`` when the
        columns are not in M; None when they are not of this form.
        """
        if not self._assign:
            return None
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            for sl, sign in ((p.copy, 1.0), (p.first, -1.0)):
                if (sl.start, sl.stop) == (start, stop):
                    return int(lo), int(hi), sign
                if sl.start < stop and start < sl.stop:  # overlaps a copy without being it
                    return None
        return 0, 0, 0.0

    def add_rmatvec(self, r, g, out=None):
        """``g + M' r`` in one pass per copy, into ``out`` (reused by the caller) when given.

        With disjoint copies (see :meth:`_slices_are_disjoint`) each slice is
        written once as ``g[copy] + r`` or ``g[first] - r``: no full-size
        ``M' r`` temporary and no second pass to add ``g``.
        """
        if out is None:
            out = np.empty(self.n)
        if not self._assign:
            np.add(g, self.rmatvec(r), out=out)
            return out
        if 2 * self.shape[0] != self.n:  # columns outside every copy: M' r is 0 there
            np.copyto(out, g)
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            np.add(g[p.copy], r[lo:hi], out=out[p.copy])
            np.subtract(g[p.first], r[lo:hi], out=out[p.first])
        return out

    def with_piece_factors(self, factors):
        """M with piece g's rows times ``factors[g]`` (pieces that offer ``scaled``; the others need 1)."""
        pieces = []
        for p, c in zip(self.pieces, factors):
            if c != 1.0:
                if not hasattr(p, "scaled"):
                    raise ValueError(f"the rows {p.label!r} cannot be rescaled")
                p = p.scaled(float(c))
            pieces.append(p)
        return ConsistencyOperator(pieces, self.n)

    def with_row_factors(self, factors):
        """M with row i times ``factors[i]`` (pieces that offer ``scaled``; the others' rows need 1)."""
        pieces = []
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            c = np.asarray(factors[lo:hi], dtype=float)
            if np.any(c != 1.0):
                if not hasattr(p, "scaled"):
                    raise ValueError(f"the rows {p.label!r} cannot be rescaled")
                p = p.scaled(c)
            pieces.append(p)
        return ConsistencyOperator(pieces, self.n)

    def csr(self):
        if self._csr is None:
            if self.pieces:
                self._csr = sp.vstack([p.csr(self.n) for p in self.pieces], format="csr")
            else:
                self._csr = sp.csr_matrix((0, self.n))
        return self._csr
