"""The objective as the engine sees it: a function of the product-space vector x.

A variable with several copies takes the average of its copies, v = W x, and
the objective is f(W x), so its gradient is W' grad f(W x): each copy gets
its share of the variable's gradient. At a feasible point all copies agree
and f(W x) is the objective of the model; the value reported for a
variable (``var.value``) is exactly this average.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._kernels import einsum_plain


class CopyMap:
    """v = W x and x-gradients = W' v-gradients, without forming W.

    Copies of a whole variable (the usual case) are slices of x, so the
    average is a sum of slices; partial copies (a set on ``x[:3]``) scatter
    through index arrays.
    """

    def __init__(self, variables, var_layout, n_v, n):
        self.variables = variables
        self.var_layout = var_layout
        self.n_v, self.n = n_v, n
        self.copies = {var.id: [] for var in variables}  # var.id -> [(entries or None, block slice)]

    def add_copy(self, var, entries, block_slice):
        self.copies[var.id].append((entries, block_slice))

    def finalize(self):
        self.counts = np.zeros(self.n_v)
        self._full = {}
        for var in self.variables:
            off, _ = self.var_layout[var.id]
            copies = self.copies[var.id]
            for entries, _sl in copies:
                if entries is None:
                    self.counts[off:off + var.size] += 1
                else:
                    self.counts[off + entries] += 1
            self._full[var.id] = all(e is None for e, _ in copies)
        self.inv_counts = 1.0 / np.maximum(self.counts, 1)
        # when copies fill every block (no expression blocks), W' gv writes every entry of x
        covered = sum(sl.stop - sl.start for copies in self.copies.values() for _, sl in copies)
        self._covers_all = covered == self.n

    def whole_copy(self, block_slice):
        """(offset in v, size, copy count) when ``block_slice`` is a whole copy of one variable, else None."""
        key = (block_slice.start, block_slice.stop)
        for var in self.variables:
            if not self._full[var.id]:
                continue
            copies = self.copies[var.id]
            # a plain loop, not any(generator): an interrupt raised while a generator
            # is closed early is swallowed by Python ("Exception ignored"), and Ctrl-C must stop a solve
            for _, sl in copies:
                if (sl.start, sl.stop) == key:
                    return self.var_layout[var.id][0], var.size, len(copies)
        return None

    def to_variables(self, x, out=None):
        """v = W x (each variable entry the average of its copies)."""
        v = np.empty(self.n_v) if out is None else out
        for var in self.variables:
            off, _ = self.var_layout[var.id]
            seg = v[off:off + var.size]
            copies = self.copies[var.id]
            if self._full[var.id]:
                if len(copies) == 1:
                    np.copyto(seg, x[copies[0][1]])
                    continue
                # first two copies in one pass (no copy of the first one)
                np.add(x[copies[0][1]], x[copies[1][1]], out=seg)
                for _, sl in copies[2:]:
                    seg += x[sl]
                seg *= 1.0 / len(copies)
            else:
                seg.fill(0.0)
                for entries, sl in copies:
                    if entries is None:
                        seg += x[sl]
                    else:
                        seg[entries] += x[sl]
                seg *= self.inv_counts[off:off + var.size]
        return v

    def to_blocks(self, gv, out=None):
        """W' gv: each copy gets its entries' gradient divided by their copy count."""
        if out is None:
            g = np.empty(self.n) if self._covers_all else np.zeros(self.n)
        else:
            g = out
            if not self._covers_all:
                g.fill(0.0)
        for var in self.variables:
            off, _ = self.var_layout[var.id]
            seg = gv[off:off + var.size]
            copies = self.copies[var.id]
            if self._full[var.id]:
                k = len(copies)
                for _, sl in copies:
                    if k == 1:
                        g[sl] = seg
                    else:
                        np.multiply(seg, 1.0 / k, out=g[sl])
            else:
                scaled = seg * self.inv_counts[off:off + var.size]
                for entries, sl in copies:
                    g[sl] = scaled if entries is None else scaled[entries]
        return g

    def matrix(self):
        """W as a scipy.sparse CSR matrix (n_v x n)."""
        rows, cols, vals = [], [], []
        for var in self.variables:
            off, _ = self.var_layout[var.id]
            for entries, sl in self.copies[var.id]:
                ent = np.arange(var.size) if entries is None else entries
                slots = off + ent
                rows.append(slots)
                cols.append(np.arange(sl.start, sl.stop))
                vals.append(self.inv_counts[slots])
        if not rows:
            return sp.csr_matrix((self.n_v, self.n))
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(self.n_v, self.n))


class BlockObjective:
    """sign * f(W x) with value, gradient and curvature for the engine.

    An affine objective without parameters (a linear program, such as MAP
    inference over ``fm.LocalMarginalPolytope``) has a constant gradient c:
    it is computed once, and then f(x) = f(0) + <c, x> and the curvature is 0,
    with no pass over the expression per call.
    """

    def __init__(self, smooth, sign, copy_map):
        self.smooth = smooth
        self.sign = float(sign)
        self.copy_map = copy_map
        self.is_quadratic = bool(smooth.is_quadratic)
        self._v = np.zeros(copy_map.n_v)  # finite from the start: curvature() may read it first
        self._dv = np.empty(copy_map.n_v)
        self._gv = np.empty(copy_map.n_v)  # reused gradient buffer: no fresh memory per call
        self._linear = None  # (f(0), constant gradient in x) for affine objectives
        if smooth.expr.is_affine() and not smooth.expr.parameters():
            f0, gv = smooth.value_and_grad(np.zeros(copy_map.n_v))
            g = copy_map.to_blocks(self.sign * gv)
            g.setflags(write=False)  # shared by every call: nobody may change it
            self._linear = (self.sign * f0, g)

    def value(self, x):
        if self._linear is not None:
            # einsum, not np.dot: a threaded BLAS dot can stall for milliseconds on a busy machine
            return self._linear[0] + float(einsum_plain("i,i->", self._linear[1], x))
        v = self.copy_map.to_variables(x, out=self._v)
        return self.sign * self.smooth.value(v)

    def value_and_grad(self, x):
        if self._linear is not None:
            return self.value(x), self._linear[1]
        v = self.copy_map.to_variables(x, out=self._v)
        f, gv = self.smooth.value_and_grad(v, out=self._gv)
        if self.sign != 1.0:
            gv = gv * self.sign
        return self.sign * f, self.copy_map.to_blocks(gv)

    def curvature(self, x, d):
        if self._linear is not None:
            return 0.0
        # A quadratic has the same curvature everywhere: evaluate it at the
        # last point (no pass to average x's copies again).
        v = self._v if self.is_quadratic else self.copy_map.to_variables(x, out=self._v)
        dv = self.copy_map.to_variables(d, out=self._dv)
        c = self.smooth.curvature(v, dv)
        return None if c is None else self.sign * c

    def has_block_curvature(self, block_slice):
        """Whether :meth:`curvature_block` applies: the slice is one whole copy of a variable."""
        return self._linear is not None or self.copy_map.whole_copy(block_slice) is not None

    def curvature_block(self, x, block_slice, d_block):
        """``curvature(x, d)`` for d equal to ``d_block`` on ``block_slice`` and 0 elsewhere.

        Forms W d from the block alone (its variable's segment is d_block
        divided by the copy count, every other entry 0: the same numbers as
        averaging the full-size d), so the engine's line search needs no
        full-size zero-padded direction and no pass over the other blocks.
        """
        if self._linear is not None:
            return 0.0
        off, size, k = self.copy_map.whole_copy(block_slice)
        v = self._v if self.is_quadratic else self.copy_map.to_variables(x, out=self._v)
        dv = self._dv
        dv[:off].fill(0.0)
        dv[off + size:].fill(0.0)
        np.multiply(d_block, 1.0 / k, out=dv[off:off + size])
        c = self.smooth.curvature(v, dv)
        return None if c is None else self.sign * c

    def reads_block(self, block_slice):
        """Whether f reads any entry of the block: False for an expression block (z = D x in ``L1Ball(D @ x)``).

        A block that f does not read moves without changing f or its
        gradient; the engine's Gauss-Seidel sweep then reuses them instead of
        evaluating f again (:func:`fwmodel.engine.block_search.gauss_seidel_sweep`).
        """
        key = (block_slice.start, block_slice.stop)
        cache = self.__dict__.setdefault("_reads_block", {})
        if key not in cache:
            cache[key] = any(sl.start < key[1] and key[0] < sl.stop
                             for copies in self.copy_map.copies.values() for _, sl in copies)
        return cache[key]

    def objective_at(self, x):
        """The model's objective (without the Maximize sign flip) at x."""
        return self.sign * self.value(x)
