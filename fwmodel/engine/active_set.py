"""Active sets: the iterate of a polytope block as a convex combination of atoms.

Paper eq. (active_set_decomposition): x_t = sum_v alpha_v v over the active
set S_t. Away-step and pairwise Frank-Wolfe (Alg. 1) need, at every step, the
active atom with the largest inner product with the gradient (the *away
vertex*) and its weight alpha_v, which bounds the away step.
"""
from __future__ import annotations

import numpy as np

# Weights below this are treated as zero and their atoms dropped; it only
# absorbs rounding in the weight updates (a drop step sets the weight to 0).
_DROP_TOL = 1e-13


class ActiveSet:
    """Atoms with positive weights summing to one, for one block."""

    def __init__(self, atom):
        self.atoms = [atom]
        self.weights = [1.0]
        self._index = {atom.key: 0}
        self._packed = None  # cached concatenation of sparse atoms for dots()

    def __len__(self):
        return len(self.atoms)

    # ----------------------------------------------------------- queries
    def dots(self, g):
        """<g, a> for every active atom a, as an array."""
        packed = self._pack()
        if packed is None:
            return np.array([a.dot(g) for a in self.atoms])
        if packed[0] == "dense":
            return np.einsum("ij,j->i", packed[1], g, optimize=False)
        _, indices, values, starts, nonempty = packed
        if nonempty is None:
            return np.add.reduceat(g[indices] * values, starts)
        out = np.zeros(len(self.atoms))  # the origin atom has no entries: <g, 0> = 0
        if indices.size:
            out[nonempty] = np.add.reduceat(g[indices] * values, starts)
        return out

    def away_vertex(self, g):
        """(position, atom, weight) of the active atom maximizing <g, a>."""
        d = self.dots(g)
        i = int(np.argmax(d))
        return i, self.atoms[i], self.weights[i], float(d[i])

    def weight_of(self, atom):
        i = self._index.get(atom.key)
        return 0.0 if i is None else self.weights[i]

    # ----------------------------------------------------------- updates
    def fw_update(self, atom, gamma):
        """x <- (1 - gamma) x + gamma s."""
        self._scale(1.0 - gamma)
        self._add(atom, gamma)
        self._drop_small()

    def away_update(self, position, gamma):
        """x <- (1 + gamma) x - gamma v, v the atom at ``position``."""
        self._scale(1.0 + gamma)
        self.weights[position] -= gamma
        self._drop_small()

    def pairwise_update(self, atom, position, gamma):
        """x <- x + gamma (s - v): weight moves from v to s."""
        self.weights[position] -= gamma
        self._add(atom, gamma)
        self._drop_small()

    def dense(self, size):
        """The iterate rebuilt from its atoms (to remove rounding drift)."""
        x = np.zeros(size)
        for a, w in zip(self.atoms, self.weights):
            a.add_to(x, w)
        return x

    # ----------------------------------------------------------- internals
    def _scale(self, factor):
        self.weights = [w * factor for w in self.weights]

    def _add(self, atom, weight):
        i = self._index.get(atom.key)
        if i is None:
            self._index[atom.key] = len(self.atoms)
            self.atoms.append(atom)
            self.weights.append(weight)
            self._packed = None
        else:
            self.weights[i] += weight

    def _drop_small(self):
        if min(self.weights) > _DROP_TOL:
            return
        keep = [i for i, w in enumerate(self.weights) if w > _DROP_TOL]
        if not keep:  # cannot happen with valid steps; keep the heaviest atom
            keep = [int(np.argmax(self.weights))]
        self.atoms = [self.atoms[i] for i in keep]
        self.weights = [self.weights[i] for i in keep]
        total = sum(self.weights)
        self.weights = [w / total for w in self.weights]
        self._index = {a.key: i for i, a in enumerate(self.atoms)}
        self._packed = None

    def _stack_rows(self):
        """The dense atoms as rows of a matrix, grown in place when atoms are appended.

        Rebuilding the stack after every FW step would copy every atom each
        iteration; appending into spare capacity copies only the new one.
        """
        k, size = len(self.atoms), self.atoms[0].size
        buf = getattr(self, "_rows", None)
        keys = getattr(self, "_row_keys", [])
        if buf is None or buf.shape[1] != size or keys != [a.key for a in self.atoms[:len(keys)]] \
                or len(keys) > k:
            buf, keys = np.empty((max(8, 2 * k), size)), []
        if k > buf.shape[0]:
            grown = np.empty((2 * k, size))
            grown[:len(keys)] = buf[:len(keys)]
            buf = grown
        for i in range(len(keys), k):
            buf[i] = self.atoms[i].vector
            keys.append(self.atoms[i].key)
        self._rows, self._row_keys = buf, keys
        return buf[:k]

    def _pack(self):
        """Stack the atoms so all inner products are one NumPy call.

        Sparse atoms are concatenated (indices, values, segment starts);
        dense atoms are stacked as rows of a matrix while that stays small.
        """
        if self._packed is None:
            if all(hasattr(a, "vector") for a in self.atoms):
                if len(self.atoms) * self.atoms[0].size > 5_000_000:
                    return None
                self._packed = ("dense", self._stack_rows())
                return self._packed
            if not all(hasattr(a, "indices") for a in self.atoms):
                return None
            lengths = np.array([a.indices.size for a in self.atoms])
            nonempty = None
            if np.any(lengths == 0):
                nonempty = np.flatnonzero(lengths)
                lengths = lengths[nonempty]
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if lengths.size else np.zeros(0, dtype=np.intp)
            self._packed = (
                "sparse",
                np.concatenate([a.indices for a in self.atoms]),
                np.concatenate([a.values for a in self.atoms]),
                starts,
                nonempty,
            )
        return self._packed
