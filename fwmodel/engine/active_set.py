"""Active sets: the iterate of a polytope block as a convex combination of atoms.

Paper eq. (active_set_decomposition): x_t = sum_v alpha_v v over the active
set S_t. Away-step and pairwise Frank-Wolfe (Alg. 1) and blended pairwise
steps need, at every step, the inner product of the gradient with every
active atom: the largest gives the *away vertex*, the smallest the *local FW
vertex*, and the away vertex's weight bounds the step.

Storage does not grow in cost with the iteration count: the atoms live in
preallocated arrays that double when full (amortized O(1) insert), a removed
atom's slot is filled by the last one (O(1) delete, "swap-remove"), and the
inner products with every atom are one vectorized NumPy expression per atom
kind, whatever the mix of kinds:

* sparse atoms (``indices``, ``values``; one-hot, permutation, L1 vertices):
  rows of a padded index matrix and a value matrix, ``(g[I] * V).sum(1)``;
* dense atoms (``vector``): rows of a matrix, ``A @ g``;
* rank-one atoms (``u``, ``v``, ``scale``, ``shape``): ``scale * u' G v`` for
  all atoms at once from stacked ``U`` and ``V``;
* anything else: the atom's own ``dot`` (a Python loop; user-defined atoms).

Atoms are identified by ``key`` so that a vertex returned twice by the LMO
gets one weight.

On request (:meth:`ActiveSet.track_gram`) the set also keeps the Gram matrix
``<a_i, a_j>`` of its atoms, in the same positions: one column is computed
when an atom enters (its inner products with the others, one vectorized
pass; for permutation matrices a count of the rows where they agree, see
:class:`_UnitSegments`) and a removal swaps a row and a column, so a step
that works in weight space (several local pairwise steps on a quadratic model, see
:class:`fwmodel.engine.steps.BlendedPairwiseStep`) costs O(k) per local step
instead of a pass over the atoms.
"""
from __future__ import annotations

import numpy as np

from .._kernels import einsum_plain

# Weights below this are treated as zero and their atoms dropped; it only
# absorbs rounding in the weight updates (a drop step sets the weight to 0).
_DROP_TOL = 1e-13


def _grow_rows(array, rows):
    """A copy of ``array`` with room for ``rows`` rows (the old rows kept)."""
    out = np.zeros((rows,) + array.shape[1:], dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


class _Store:
    """Atoms of one kind, as rows of preallocated arrays; ``slots[row]`` is the row's position."""

    def __init__(self):
        self.count = 0
        self.slots = np.zeros(8, dtype=np.intp)

    def _reserve(self):
        if self.count == self.slots.shape[0]:
            self.slots = _grow_rows(self.slots, 2 * self.count)
            self.grow(2 * self.count)

    def append(self, atom, slot):
        self._reserve()
        row = self.count
        self.write(row, atom)
        self.slots[row] = slot
        self.count += 1
        return row

    def remove(self, row):
        """Swap-remove ``row``; returns the slot whose row moved into it (or None)."""
        last = self.count - 1
        moved = None
        if row != last:
            self.copy_row(last, row)
            self.slots[row] = self.slots[last]
            moved = int(self.slots[row])
        self.clear_row(last)
        self.count -= 1
        return moved

    def clear_row(self, row):
        pass

    def start_counting(self, size):
        """Keep what :meth:`shared_entries` needs from now on (``size``: the block size)."""

    def stop_counting(self):
        """Stop keeping it."""

    def shared_entries(self, atom):
        """<atom, a_j> for every stored atom without a gather, where the store can count them; else None."""
        return None


class _SparseStore(_Store):
    """Sparse atoms: padded (row, width) index and value matrices (padding: index 0, value 0)."""

    def __init__(self, first):
        super().__init__()
        width = max(1, first.indices.size)
        self.indices = np.zeros((8, width), dtype=np.intp)
        self.values = np.zeros((8, width))
        # the stored atoms' offsets in their 0/1 segment pattern (permutation matrices), kept
        # while the active set keeps its Gram matrix and every stored atom has the pattern
        self.pattern = None

    @staticmethod
    def accepts(atom):
        return hasattr(atom, "indices") and hasattr(atom, "values")

    def grow(self, rows):
        self.indices = _grow_rows(self.indices, rows)
        self.values = _grow_rows(self.values, rows)
        if self.pattern is not None:
            self.pattern.grow(rows)

    def write(self, row, atom):
        if self.pattern is not None:
            offsets = self.pattern.offsets_of(atom)
            if offsets is None:  # an atom of another kind: no more counting in this store
                self.pattern = None
            else:
                self.pattern.offsets[:, row] = offsets
        nnz = atom.indices.size
        if nnz > self.indices.shape[1]:  # a wider atom: widen once, to at least double
            width = max(nnz, 2 * self.indices.shape[1])
            for name in ("indices", "values"):
                old = getattr(self, name)
                new = np.zeros((old.shape[0], width), dtype=old.dtype)
                new[:, : old.shape[1]] = old
                setattr(self, name, new)
        self.indices[row, :nnz] = atom.indices
        self.values[row, :nnz] = atom.values
        self.indices[row, nnz:] = 0
        self.values[row, nnz:] = 0.0

    def copy_row(self, src, dst):
        self.indices[dst] = self.indices[src]
        self.values[dst] = self.values[src]
        if self.pattern is not None:
            self.pattern.offsets[:, dst] = self.pattern.offsets[:, src]

    def clear_row(self, row):
        self.values[row] = 0.0

    def start_counting(self, size):
        self.pattern = _UnitSegments.of_rows(self.indices, self.values, self.count, size)

    def stop_counting(self):
        self.pattern = None

    def shared_entries(self, atom):
        """<atom, a_j> for every stored atom a_j by counting shared entries (see :class:`_UnitSegments`), or None.

        None unless the stored atoms and ``atom`` all have one 0/1 segment pattern. The
        counts come as integers (exact; assigning them to a float array converts them).
        """
        if self.pattern is None:
            return None
        offsets = self.pattern.offsets_of(atom)
        return None if offsets is None else self.pattern.agreements(offsets, self.count)

    def dots(self, g):
        k = self.count
        # take with mode="clip" gathers the same entries as g[indices] (every index is
        # in range) without the bounds check: ~25 % less time at 300 atoms of 200 entries;
        # the method and einsum's C kernel are called without NumPy's Python wrappers
        # (the same loops: this runs every iteration on a few hundred entries)
        gathered = g.take(self.indices[:k], mode="clip")
        if self.pattern is not None:  # 0/1 atoms without padding: the sums alone (half the reduction's time)
            return einsum_plain("ij->i", gathered)
        return einsum_plain("ij,ij->i", gathered, self.values[:k])


class _UnitSegments:
    """Atoms of value 1 at one entry in each of ``width`` consecutive segments of ``segment`` entries.

    A permutation matrix, flat in C order, is one (a 1 in every row, row
    after row; ``segment`` = n). Entry l of such an atom lies in segment l,
    so two atoms of one pattern share the entry of segment l exactly when
    their offsets within segment l agree, and their inner product is the
    number of segments where the offsets agree. Counted on small integers
    (a comparison and a sum), that is the same number as the inner product
    summed in floating point (a sum of ones: an integer, exact) at a
    fraction of the cost of gathering one atom's entries for every other
    atom. This is how a new atom's Gram column is filled in
    (:meth:`ActiveSet.track_gram`).

    ``offsets`` holds the stored atoms' offsets, one *column* per store row:
    the counts then add whole contiguous rows of the comparison.
    """

    def __init__(self, width, segment, capacity):
        self.width, self.segment = width, segment
        self.starts = np.arange(0, width * segment, segment)  # the first entry of every segment
        self.offsets = np.zeros((width, capacity), dtype=np.min_scalar_type(segment - 1))
        self._matches = np.zeros((width, capacity), dtype=bool)
        # the counts (at most width) in the smallest unsigned type that holds them: uint8 up to
        # 255 segments, where the sum adds contiguous rows without a cast (half the time of uint16)
        self._count_dtype = np.min_scalar_type(width)
        self._last = (None, None)  # the last atom checked and its offsets (it is usually written next)

    @classmethod
    def of_rows(cls, indices, values, count, size):
        """The pattern of a sparse store's first ``count`` rows (``size``: the block size), with their
        offsets, or None when they have none (a value other than 1, padding, entries out of order)."""
        capacity, width = indices.shape
        if size <= 0 or size % width:
            return None
        pattern = cls(width, size // width, capacity)
        if count:
            shifted = indices[:count] - pattern.starts
            if shifted.min() < 0 or shifted.max() >= pattern.segment or not (values[:count] == 1.0).all():
                return None
            pattern.offsets[:, :count] = shifted.T
        return pattern

    def offsets_of(self, atom):
        """The offsets of ``atom``'s entries within their segments, or None when it does not have this pattern."""
        last, offsets = self._last
        if atom is last:
            return offsets
        indices, values = getattr(atom, "indices", None), getattr(atom, "values", None)
        offsets = None
        if (isinstance(indices, np.ndarray) and isinstance(values, np.ndarray) and indices.shape == values.shape
                == (self.width,) and int(getattr(atom, "size", 0)) == self.width * self.segment):
            shifted = indices - self.starts
            if shifted.min() >= 0 and shifted.max() < self.segment and (values == 1.0).all():
                offsets = shifted.astype(self.offsets.dtype)
        self._last = (atom, offsets)
        return offsets

    def grow(self, rows):
        grown = np.zeros((self.width, rows), dtype=self.offsets.dtype)
        grown[:, : self.offsets.shape[1]] = self.offsets
        self.offsets, self._matches = grown, np.zeros(grown.shape, dtype=bool)

    def agreements(self, offsets, k):
        """For each of the first ``k`` stored atoms, the number of segments where its offset equals
        ``offsets``'s (integers)."""
        matches = np.equal(self.offsets[:, :k], offsets[:, None], out=self._matches[:, :k])
        return np.add.reduce(matches.view(np.uint8), axis=0, dtype=self._count_dtype)


class _DenseStore(_Store):
    """Dense atoms: rows of a matrix."""

    def __init__(self, first):
        super().__init__()
        self.rows = np.zeros((8, first.vector.size))

    @staticmethod
    def accepts(atom):
        return hasattr(atom, "vector")

    def grow(self, rows):
        self.rows = _grow_rows(self.rows, rows)

    def write(self, row, atom):
        self.rows[row] = atom.vector

    def copy_row(self, src, dst):
        self.rows[dst] = self.rows[src]

    def dots(self, g):
        return self.rows[: self.count] @ g


class _RankOneStore(_Store):
    """Rank-one atoms ``scale * u v'``: stacked U (rows u), V (rows v) and scales."""

    def __init__(self, first):
        super().__init__()
        self.shape = tuple(first.shape)
        self.U = np.zeros((8, self.shape[0]))
        self.V = np.zeros((8, self.shape[1]))
        self.scale = np.zeros(8)

    @staticmethod
    def accepts(atom):
        return all(hasattr(atom, name) for name in ("u", "v", "scale", "shape"))

    def grow(self, rows):
        self.U = _grow_rows(self.U, rows)
        self.V = _grow_rows(self.V, rows)
        self.scale = _grow_rows(self.scale, rows)

    def write(self, row, atom):
        self.U[row] = atom.u
        self.V[row] = atom.v
        self.scale[row] = atom.scale

    def copy_row(self, src, dst):
        self.U[dst] = self.U[src]
        self.V[dst] = self.V[src]
        self.scale[dst] = self.scale[src]

    def dots(self, g):
        k = self.count
        GV = g.reshape(self.shape) @ self.V[:k].T  # (m, k): G v_j in column j
        return self.scale[:k] * np.einsum("ij,ji->i", self.U[:k], GV, optimize=False)


class _ObjectStore(_Store):
    """Atoms of any other kind: their own ``dot``, one call each."""

    def __init__(self, first):
        super().__init__()
        self.atoms = [None] * 8

    @staticmethod
    def accepts(atom):
        return True

    def grow(self, rows):
        self.atoms.extend([None] * (rows - len(self.atoms)))

    def write(self, row, atom):
        self.atoms[row] = atom

    def copy_row(self, src, dst):
        self.atoms[dst] = self.atoms[src]

    def clear_row(self, row):
        self.atoms[row] = None

    def dots(self, g):
        return np.array([a.dot(g) for a in self.atoms[: self.count]], dtype=float)


_STORE_KINDS = (_SparseStore, _RankOneStore, _DenseStore, _ObjectStore)


class ActiveSet:
    """Atoms with positive weights summing to one, for one block.

    Positions ``0 .. len(self) - 1`` index the active atoms; a position stays
    valid until the next update (a removal moves the last atom into the freed
    position).
    """

    def __init__(self, atom=None):
        self._atoms = []  # position -> atom
        self._w = np.zeros(8)  # position -> weight
        self._store_of = []  # position -> (store, row)
        self._stores = {}  # store class -> store
        self._index = {}  # atom key -> position
        self._gram = None  # position x position inner products <a_i, a_j>, when tracked
        self._gram_size = 0  # the block size (atoms are expanded to dense vectors of this size)
        self._gram_scratch = None  # a zero vector of that size, for the new atoms' Gram columns
        self._gram_max = None  # the Gram matrix is dropped past this many atoms (None: no cap)
        if atom is not None:
            self._append(atom, 1.0)

    @classmethod
    def from_atoms(cls, atoms, weights):
        """An active set with the given atoms and weights (renormalized to sum to one)."""
        out = cls()
        for atom, w in zip(atoms, weights):
            out._add(atom, float(w))
        out._w[: len(out)] /= out._w[: len(out)].sum()
        return out

    def __len__(self):
        return len(self._atoms)

    @property
    def atoms(self):
        """The active atoms (a list, in position order)."""
        return list(self._atoms)

    @property
    def weights(self):
        """Their weights (a copy, in position order)."""
        return self._w[: len(self)].copy()

    def atom(self, position):
        return self._atoms[position]

    def weight(self, position):
        return float(self._w[position])

    def weight_of(self, atom):
        i = self._index.get(atom.key)
        return 0.0 if i is None else float(self._w[i])

    def track_gram(self, size, max_atoms=None):
        """Keep the Gram matrix of the atoms (``size``: the length of an atom as a vector) from now on.

        ``max_atoms``: the Gram matrix is dropped (:meth:`stop_gram`) rather
        than grown past this many atoms (its storage is allocated up to it,
        not to the next power of two); with more atoms than that already
        active, nothing is tracked (a k x k matrix dropped at the next add).
        """
        if self._gram is not None or (max_atoms is not None and len(self) > max_atoms):
            return
        self._gram_size = int(size)
        self._gram_max = max_atoms
        k = len(self)
        cap = self._w.shape[0] if max_atoms is None else min(self._w.shape[0], max(int(max_atoms), k))
        self._gram = np.zeros((cap, cap))
        for i, atom in enumerate(self._atoms):
            v = np.zeros(self._gram_size)
            atom.add_to(v, 1.0)
            self._gram[i, :k] = self.dots(v)
        for store in self._stores.values():  # the next columns by counting, where the atoms allow it
            store.start_counting(self._gram_size)

    def entries_per_atom(self):
        """The entries an inner product <g, a_i> reads per atom: a sparse store's padded width, else the block size."""
        widths = [store.indices.shape[1] if hasattr(store, "indices") else self._gram_size
                  for store in self._stores.values()]
        return max(widths) if widths else 0

    def stop_gram(self):
        """Stop keeping the Gram matrix (and free it)."""
        self._gram, self._gram_size, self._gram_scratch = None, 0, None
        for store in self._stores.values():
            store.stop_counting()

    @property
    def gram(self):
        """The Gram matrix ``<a_i, a_j>`` of the active atoms (a view; None unless tracked)."""
        if self._gram is None:
            return None
        k = len(self)
        return self._gram[:k, :k]

    def position_of(self, atom):
        """The position of ``atom`` (by key) when it is active, else None."""
        return self._index.get(atom.key)

    # ----------------------------------------------------------- queries
    def dots(self, g):
        """<g, a> for every active atom a, in position order (one NumPy pass per atom kind)."""
        if len(self._stores) == 1:
            # one kind of atom: positions and the store's rows are swap-removed together, so
            # row i holds position i (store.slots[:k] is 0..k-1) and no scatter is needed
            (store,) = self._stores.values()
            return store.dots(g)
        out = np.empty(len(self))
        for store in self._stores.values():
            if store.count:
                out[store.slots[: store.count]] = store.dots(g)
        return out

    def away_vertex(self, g):
        """(position, atom, weight, <g, atom>) of the active atom maximizing <g, a>."""
        d = self.dots(g)
        i = int(np.argmax(d))
        return i, self._atoms[i], float(self._w[i]), float(d[i])

    def extreme_vertices(self, g):
        """Positions and inner products of the away vertex (max <g, a>) and the local FW vertex (min).

        One pass over the atoms for both, as blended pairwise steps need.
        """
        d = self.dots(g)
        a, s = int(np.argmax(d)), int(np.argmin(d))
        return a, float(d[a]), s, float(d[s])

    def add_unit_atoms(self, x, positions, weights):
        """x += sum_i weights[i] a_{positions[i]}, atom after atom, where the atoms are 0/1 atoms of one
        segment pattern (:class:`_UnitSegments`; kept while the Gram matrix is); returns False (and leaves
        x alone) otherwise.

        One ``np.add.at`` over the stored index rows: the same entries, added in the
        same order, as each atom's ``add_to`` in turn (a weight times 1 is the weight),
        without collecting the atoms' own arrays.
        """
        if len(self._stores) != 1:
            return False
        (store,) = self._stores.values()
        if getattr(store, "pattern", None) is None:
            return False
        np.add.at(x, store.indices[positions].ravel(), np.repeat(weights, store.indices.shape[1]))
        return True

    def dense(self, size):
        """The iterate rebuilt from its atoms (to remove rounding drift)."""
        x = np.zeros(size)
        for i, a in enumerate(self._atoms):
            a.add_to(x, float(self._w[i]))
        return x

    # ----------------------------------------------------------- updates
    def fw_update(self, atom, gamma):
        """x <- (1 - gamma) x + gamma s."""
        if gamma >= 1.0:  # a full step: s alone
            self._clear()
            self._append(atom, 1.0)
            return
        self._w[: len(self)] *= 1.0 - gamma
        self._add(atom, gamma)
        self._drop_small()

    def away_update(self, position, gamma):
        """x <- (1 + gamma) x - gamma v, v the atom at ``position``."""
        self._w[: len(self)] *= 1.0 + gamma
        self._w[position] -= gamma
        self._drop_small(position)
        self._w[: len(self)] /= self._w[: len(self)].sum()  # rounding grows with gamma (up to alpha/(1-alpha))

    def pairwise_update(self, atom, position, gamma):
        """x <- x + gamma (s - v): weight ``gamma`` moves from v (at ``position``) to s."""
        self._w[position] -= gamma
        self._add(atom, gamma)
        self._drop_small(self._index.get(atom.key), position)

    def set_weights(self, weights):
        """Replace the weights of the active atoms (position order; nonnegative, summing to one).

        Atoms whose new weight is (rounding) zero are dropped.
        """
        k = len(self)
        w = np.asarray(weights, dtype=float)
        if w.shape != (k,):
            raise ValueError(f"set_weights: expected {k} weights, got shape {w.shape}")
        self._w[:k] = np.maximum(w, 0.0)
        self._drop_small()
        k = len(self)
        self._w[:k] /= self._w[:k].sum()

    def move_weight(self, source, target, gamma):
        """x <- x + gamma (a_target - a_source), both atoms active (a local pairwise step)."""
        self._w[source] -= gamma
        self._w[target] += gamma
        self._drop_small(source, target)

    # ----------------------------------------------------------- internals
    def _reserve(self, pos):
        """Room for an atom at position ``pos`` (= len(self)): storage doubles when full."""
        if pos == self._w.shape[0]:
            self._w = _grow_rows(self._w, 2 * pos)
        if self._gram is not None and pos == self._gram.shape[0]:
            limit = self._gram_max
            if limit is not None and pos >= limit:  # past the cap: the Gram matrix goes
                self.stop_gram()
                return
            size = 2 * pos if limit is None else min(2 * pos, int(limit))
            grown = np.zeros((size, size))
            grown[:pos, :pos] = self._gram[:pos, :pos]
            self._gram = grown

    def _append(self, atom, weight):
        pos = len(self._atoms)
        self._reserve(pos)
        if self._gram is not None:
            self._gram_column(pos, atom)
        store_cls = _store_kind(atom)
        store = self._stores.get(store_cls)
        if store is None:
            store = self._stores[store_cls] = store_cls(atom)
            if self._gram is not None:
                store.start_counting(self._gram_size)
        row = store.append(atom, pos)
        self._atoms.append(atom)
        self._store_of.append((store, row))
        self._w[pos] = weight
        self._index[atom.key] = pos

    def _add(self, atom, weight):
        i = self._index.get(atom.key)
        if i is None:
            self._append(atom, weight)
        else:
            self._w[i] += weight

    def _gram_column(self, pos, atom):
        """Fill row and column ``pos`` of the Gram matrix (the atoms before ``pos`` are in the stores).

        The atom is expanded into a zero vector kept for the solve; a sparse atom's
        entries are zeroed again afterwards (O(nnz)) instead of a fresh block-size
        array per new atom (its page faults cost more than the inner products).
        """
        col = self._shared_entry_counts(atom) if pos else None
        if col is not None:  # 0/1 atoms of one pattern: counts, <atom, atom> = its number of entries
            self._gram[pos, :pos] = col
            self._gram[:pos, pos] = col
            self._gram[pos, pos] = float(atom.indices.size)
            return
        v = self._gram_scratch
        if v is None or v.size != self._gram_size:
            v = self._gram_scratch = np.zeros(self._gram_size)
        atom.add_to(v, 1.0)
        col = self.dots(v)[:pos] if pos else np.zeros(0)
        self._gram[pos, :pos] = col
        self._gram[:pos, pos] = col
        self._gram[pos, pos] = atom.dot(v)
        indices = getattr(atom, "indices", None)
        if isinstance(indices, np.ndarray):
            v[indices] = 0.0
        else:
            v.fill(0.0)

    def _shared_entry_counts(self, atom):
        """The new atom's Gram column by counting shared entries (:meth:`_SparseStore.shared_entries`), or None.

        Only for a set whose atoms all sit in one store (its rows are then the positions).
        """
        if len(self._stores) != 1:
            return None
        (store,) = self._stores.values()
        return store.shared_entries(atom)

    def _remove(self, pos):
        """Swap-remove the atom at ``pos``: the last atom takes its position."""
        store, row = self._store_of[pos]
        moved_slot = store.remove(row)
        if moved_slot is not None:  # the store's last row now sits in ``row``
            self._store_of[moved_slot] = (store, row)
        del self._index[self._atoms[pos].key]
        last = len(self._atoms) - 1
        if pos != last:
            atom = self._atoms[last]
            self._atoms[pos] = atom
            self._w[pos] = self._w[last]
            self._store_of[pos] = self._store_of[last]
            st, r = self._store_of[pos]
            st.slots[r] = pos
            self._index[atom.key] = pos
            if self._gram is not None:  # the last atom's row and column move to pos
                G = self._gram
                G[pos, :last + 1] = G[last, :last + 1]
                G[:last + 1, pos] = G[:last + 1, last]
                G[pos, pos] = G[last, last]
        self._atoms.pop()
        self._store_of.pop()
        self._w[last] = 0.0

    def _clear(self):
        self._atoms, self._store_of, self._stores, self._index = [], [], {}, {}
        self._w[:] = 0.0
        if self._gram is not None:
            self._gram[:] = 0.0

    def _drop_small(self, *candidates):
        """Remove atoms whose weight fell to (rounding) zero; renormalize.

        With ``candidates`` only those positions can have reached zero (the
        others were unchanged or scaled up); without them every weight is
        checked (one vectorized minimum).
        """
        k = len(self)
        w = self._w[:k]
        if candidates:
            low = sorted({p for p in candidates if p is not None and w[p] <= _DROP_TOL}, reverse=True)
        else:
            if w.min() > _DROP_TOL:
                return
            low = sorted(np.flatnonzero(w <= _DROP_TOL).tolist(), reverse=True)
        if not low:
            return
        if len(low) == k:  # cannot happen with valid steps; keep the heaviest atom
            low.remove(int(np.argmax(w)))
        for pos in low:  # highest first: a swap-remove never moves a pending position
            self._remove(pos)
        k = len(self)
        self._w[:k] /= self._w[:k].sum()


def _store_kind(atom):
    """The first store kind that accepts ``atom`` (every atom fits the last, dense, kind).

    A plain loop, not ``next(generator)``: an exception raised while Python
    closes a finished generator is dropped silently, so a Ctrl-C landing there
    would be lost.
    """
    for kind in _STORE_KINDS:
        if kind.accepts(atom):
            return kind
    raise TypeError(f"no active-set storage accepts {type(atom).__name__}")
