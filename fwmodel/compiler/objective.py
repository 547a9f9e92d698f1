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
from scipy.linalg import blas

from .._kernels import einsum_plain
from ..engine.vector_ops import signed_sum_norm2

#: moves of x that :meth:`BlockObjective.follow_step` follows before it asks for a fresh evaluation
#: (each adds a rounding error to the followed gradient; a fresh one starts again from exact values)
FOLLOW_STEPS = 20


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
        self._counts = self._inv_counts = None
        self._full = {var.id: all(e is None for e, _ in self.copies[var.id]) for var in self.variables}
        # when copies fill every block (no expression blocks), W' gv writes every entry of x
        covered = sum(sl.stop - sl.start for copies in self.copies.values() for _, sl in copies)
        self._covers_all = covered == self.n
        # (block slice start, stop) -> (offset in v, size, copy count), for whole copies
        self._whole = {}
        for var in self.variables:
            if self._full[var.id]:
                for _, sl in self.copies[var.id]:
                    self._whole[(sl.start, sl.stop)] = (self.var_layout[var.id][0], var.size,
                                                        len(self.copies[var.id]))
        #: every entry of x is in a whole copy of a variable: W' gv is gv / k on every copy
        #: (:class:`SharedGradient` keeps it once instead of once per copy)
        self.all_whole_copies = self._covers_all and all(self._full.values())

    @property
    def counts(self):
        """How many copies hold each entry of v (built on first use: for whole copies
        the count is per variable, and a v-size array would cost memory for nothing)."""
        if self._counts is None:
            counts = np.zeros(self.n_v)
            for var in self.variables:
                off, _ = self.var_layout[var.id]
                for entries, _sl in self.copies[var.id]:
                    if entries is None:
                        counts[off:off + var.size] += 1
                    else:
                        counts[off + entries] += 1
            self._counts = counts
        return self._counts

    @property
    def inv_counts(self):
        if self._inv_counts is None:
            self._inv_counts = 1.0 / np.maximum(self.counts, 1)
        return self._inv_counts

    def whole_copy(self, block_slice):
        """(offset in v, size, copy count) when ``block_slice`` is a whole copy of one variable, else None."""
        if block_slice.step not in (None, 1):
            return None
        return self._whole.get((block_slice.start, block_slice.stop))

    def shared(self, block_slice):
        """Whether ``block_slice`` holds a copy of a variable that has other copies (tied to them by rows):
        the variable's value is then the average of the copies."""
        return any(len(copies) > 1 and any(sl.start < block_slice.stop and block_slice.start < sl.stop
                                           for _, sl in copies)
                   for copies in self.copies.values())

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


class SharedGradient:
    """W' gv for variables copied whole, kept once: each copy's slice is a view of one array.

    With star-tied copies (a variable in two sets) the copies' gradients are
    equal: W' spreads gv / k to each of the k copies. Forming that n-vector
    costs k arrays of the variable's size and a pass writing them; this
    object holds ``gv / k`` once (``values``, the objective's reused buffer)
    and answers ``g[block_slice]`` for a whole copy with a view of it.
    Any other use (another slice, arithmetic, ``np.asarray(g)``) reads the
    full vector, formed on demand. Valid until the objective's next gradient
    call (it shares the objective's buffer).
    """

    ndim = 1
    dtype = np.dtype(float)

    def __init__(self, copy_map, values):
        self.copy_map = copy_map
        self.values = values  # gv / k, in the variables' layout (v)
        self.size = copy_map.n
        self.shape = (copy_map.n,)

    def __len__(self):
        return self.size

    def __getitem__(self, key):
        if isinstance(key, slice):
            whole = self.copy_map.whole_copy(key)
            if whole is not None:
                off, size, _ = whole
                return self.values[off:off + size]
            if key.step not in (None, 1):  # a strided sample (the driver's finiteness check): no full vector
                return self._take(np.arange(*key.indices(self.size)))
        return np.asarray(self)[key]

    def _take(self, positions):
        out = np.empty(positions.size)
        for (start, stop), (off, _, _) in self.copy_map._whole.items():
            inside = (positions >= start) & (positions < stop)
            out[inside] = self.values[off + positions[inside] - start]
        return out

    def whole_view(self):
        """The gradient as an array without a copy where one whole copy of one variable is all of x (a view
        of ``values``), else None."""
        whole = self.copy_map._whole.get((0, self.size))
        if whole is None or len(self.copy_map._whole) != 1 or whole[1] != self.size:
            return None
        off = whole[0]
        return self.values[off:off + self.size]

    def __array__(self, dtype=None, copy=None):
        g = np.empty(self.size)
        for (start, stop), (off, size, _) in self.copy_map._whole.items():
            np.copyto(g[start:stop], self.values[off:off + size])
        return g if dtype is None else g.astype(dtype, copy=False)


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
        #: the v-size work array (see :meth:`_work_v`); None once v lives in the lent gradient's array
        self._v_array = np.zeros(copy_map.n_v)  # finite from the start: curvature() may read it first
        self._keeps_v = False  # a caller evaluates f at points of its own: _v_array is kept (see _kept_v)
        self._dv = None  # the tangent of a block direction, made when first needed (see curvature_block)
        self._gv = None  # reused gradient buffer (see _gradient_buffer): no fresh memory per call
        self._lends = None  # whether the expression lends its gradient array (known after the first call)
        self._hessian = None  # h with Hessian of f = h I in v, shown by the last lent gradient (see follow_step)
        self._follows_left = 0  # moves follow_step may still follow before a fresh evaluation
        self._linear = None  # (f(0), constant gradient in x) for affine objectives
        #: affine in x whatever its Parameters' values (a linear cost held in a Parameter too)
        self.is_linear = bool(smooth.expr.is_affine())
        if self.is_linear and not smooth.expr.parameters():
            f0, gv = smooth.value_and_grad(np.zeros(copy_map.n_v))
            g = copy_map.to_blocks(self.sign * gv)
            g.setflags(write=False)  # shared by every call: nobody may change it
            self._linear = (self.sign * f0, g)

    def _work_v(self):
        """The v-size work array: the kept one, or, once v lives in the lent gradient's array
        (:meth:`value_and_grad_shared`), a fresh one for this call (zeros: a point, finite). For
        the curvature along two tied copies' directions (a projection step over both, a few
        iterations in ten at d = 4000): a fresh 128 MB array there costs its page faults, about
        30 ms on this project's machine, against a kept one for the whole solve."""
        return self._v_array if self._v_array is not None else np.zeros(self.copy_map.n_v)

    def _kept_v(self):
        """The v-size work array, kept from now on: :meth:`value` and :meth:`value_and_grad` are called
        over and over where they are called at all (line searches, in-face steps), and a fresh array
        per call would cost its page faults each time."""
        if self._v_array is None:
            self._v_array = np.zeros(self.copy_map.n_v)
        self._keeps_v = True
        return self._v_array

    def value(self, x):
        if self._linear is not None:
            # einsum, not np.dot: a threaded BLAS dot can stall for milliseconds on a busy machine
            return self._linear[0] + float(einsum_plain("i,i->", self._linear[1], x))
        v = self.copy_map.to_variables(x, out=self._kept_v())
        return self.sign * self.smooth.value(v)

    def value_and_grad(self, x):
        if self._linear is not None:
            return self.value(x), self._linear[1]
        v = self.copy_map.to_variables(x, out=self._kept_v())
        # where value_and_grad_shared applies, its gradient lives in self._gv and
        # may still be in use: this call must not overwrite it
        f, gv = self.smooth.value_and_grad(v, out=None if self.copy_map.all_whole_copies else self._gradient_buffer())
        if self.sign != 1.0:
            gv = gv * self.sign
        return self.sign * f, self.copy_map.to_blocks(gv)

    def value_and_grad_shared(self, x):
        """``value_and_grad`` for the engine's loop: the gradient may be a :class:`SharedGradient`.

        When every entry of x lies in a whole copy of a variable, the
        gradient is returned as ``gv / k`` held once instead of an n-vector
        with a copy per block; ``g[block.slice]`` is then a view. It is valid
        until the next call of this method. With one variable, ``sign / k``
        is the seed of the reverse pass, and where the gradient is one of the
        expression's own arrays (``sum_squares(X - C)``: 2 (X - C)) that
        array is lent instead of copied (``SmoothFunction.value_and_grad``,
        ``lend``): for k = 2 copies the numbers are exactly those of
        :meth:`value_and_grad`, 2 (X - C) / 2; otherwise they may differ in
        the last bit (one multiplication by 2 sign / k instead of two).
        """
        if self._linear is not None or not self.copy_map.all_whole_copies:
            return self.value_and_grad(x)
        variables = self.copy_map.variables
        if len(variables) == 1:
            k = len(self.copy_map.copies[variables[0].id])
            # the gradient buffer is made only if lending failed once (then it is used from now on)
            lend = self._lends is not False
            # v in the array the last call lent (its gradient, dead now), where the expression reads
            # v only to write that array (``X - C``: SmoothFunction.lent_input): no v-size array kept
            into = self._lent_input() if lend and not self._keeps_v else None
            v = self.copy_map.to_variables(x, out=into if into is not None else self._work_v())
            f, gv = self.smooth.value_and_grad(v, out=None if lend else self._gradient_buffer(),
                                               scale=self.sign / k, lend=lend)
            if lend and self._lends is None:
                self._lends = bool(self.smooth.lent_last)
            if lend and self.smooth.lent_last and not self._keeps_v and self._lent_input() is not None:
                self._v_array = None  # the next evaluation takes v in the lent array: this one is free
            self._hessian = self.smooth.lent_hessian if lend else None
            self._follows_left = FOLLOW_STEPS if self._hessian is not None else 0
            return self.sign * f, SharedGradient(self.copy_map, gv)
        v = self.copy_map.to_variables(x, out=self._work_v())
        gv = self._gradient_buffer()
        f, gv = self.smooth.value_and_grad(v, out=gv)
        if self.sign != 1.0:
            np.multiply(gv, self.sign, out=gv)
        for var in variables:  # W' gv: each copy's share, gv / k (as in CopyMap.to_blocks)
            off, _ = self.copy_map.var_layout[var.id]
            k = len(self.copy_map.copies[var.id])
            if k != 1:
                seg = gv[off:off + var.size]
                np.multiply(seg, 1.0 / k, out=seg)
        return self.sign * f, SharedGradient(self.copy_map, gv)

    def _lent_input(self):
        lent_input = getattr(self.smooth, "lent_input", None)
        return lent_input(self.copy_map.n_v) if lent_input is not None else None

    def _gradient_buffer(self):
        """The reused v-size gradient array (made on first use: a lent gradient needs none)."""
        if self._gv is None:
            self._gv = np.empty(self.copy_map.n_v)
        return self._gv

    def forget_hessian(self):
        """Before a solve: the Hessian ``h I`` of the last lent gradient may be of other Parameter values
        (the solve's first :meth:`value_and_grad_shared` shows it again)."""
        self._hessian = None
        self._follows_left = 0

    def _identity_hessian_curvature(self, directions):
        """``sign h ||W d||^2`` where f's Hessian is ``h I`` in v (the last lent gradient showed it, see
        :meth:`block_hessian`: one variable, every entry of x in a whole copy of it), ``directions`` the
        copies' parts of d (a copy not listed: 0 there); None where that Hessian is not known."""
        if self._hessian is None:
            return None
        var = self.copy_map.variables[0]
        k = len(self.copy_map.copies[var.id])
        # ||W d||^2 = ||sum of the copies' parts||^2 / k^2, summed in chunks (no v-size array written)
        norm2 = signed_sum_norm2(directions, [1.0] * len(directions))
        return self.sign * self._hessian * (norm2 * (1.0 / k) ** 2)

    def curvature(self, x, d):
        if self._linear is not None:
            return 0.0
        if self._hessian is not None:  # no v-size array written (the default penalty's curvature, at setup)
            return self._identity_hessian_curvature([d[sl] for _, sl in self.copy_map.copies[
                self.copy_map.variables[0].id]])
        if self.is_quadratic:
            # the same curvature at every point: W d is formed in the buffer of v and
            # serves as the point too (no v-size temporary: at d = 4000 this call, made
            # for the first penalty, was at the peak memory of the setup)
            dv = self.copy_map.to_variables(d, out=self._work_v())
            c = self.smooth.curvature(dv, dv)
        else:
            v = self.copy_map.to_variables(x, out=self._work_v())
            c = self.smooth.curvature(v, self.copy_map.to_variables(d))
        return None if c is None else self.sign * c

    def has_block_curvature(self, block_slice):
        """Whether :meth:`curvature_block` applies: the slice is one whole copy of a variable."""
        return self._linear is not None or self.copy_map.whole_copy(block_slice) is not None

    def block_hessian(self, block_slice):
        """c with d' H d = c ||d||^2 for every direction d on the block (H the Hessian of sign f(W x)), or None.

        Known where the last gradient was lent with its Hessian ``h I``
        (:meth:`SmoothFunction._lend`: f = alpha ||a X + c||^2, X the only
        variable) and the block is a whole copy of X, one of k: W d = d / k,
        so c = sign h / k^2.
        """
        if self._hessian is None:
            return None
        whole = self.copy_map.whole_copy(block_slice)
        if whole is None or whole[1] != self.copy_map.n_v:
            return None
        return self.sign * self._hessian * (1.0 / whole[2]) ** 2

    def follow_step(self, g, block_slice, d, gamma, indices=None):
        """Move the gradient ``g`` of the last :meth:`value_and_grad_shared` to x + gamma d (on the block) in place.

        ``indices``: d is sparse, ``d`` its values at these entries of the block (each once).

        f is quadratic with Hessian ``h I`` in the variable (see :meth:`block_hessian`):
        a move of the block by ``gamma d`` moves the kept gradient gv / k by
        ``sign h / k^2 gamma d``, one pass (a BLAS axpy) instead of averaging the
        copies, evaluating the expression and its gradient again. True when
        done; False when the gradient is not of this kind, or after
        ``FOLLOW_STEPS`` moves (then the caller evaluates it afresh: the
        followed gradient differs from a fresh one by rounding, which this keeps
        from building up). f itself moves by ``gamma <g, d> + gamma^2 / 2 d' H d``,
        which the caller knows from its line search.
        """
        c = self.block_hessian(block_slice)
        if c is None or self._follows_left <= 0 or not isinstance(g, SharedGradient):
            return False
        off, size, _ = self.copy_map.whole_copy(block_slice)
        if indices is not None:
            g.values[off + indices] += (c * gamma) * d
        else:
            blas.daxpy(d, g.values[off:off + size], a=c * gamma)  # in place (contiguous float64)
        self._follows_left -= 1
        return True

    def curvature_block(self, x, block_slice, d_block, d_norm2=None):
        """``curvature(x, d)`` for d equal to ``d_block`` on ``block_slice`` and 0 elsewhere.

        Forms W d from the block alone (its variable's segment is d_block
        divided by the copy count, every other entry 0: the same numbers as
        averaging the full-size d), so the engine's line search needs no
        full-size zero-padded direction and no pass over the other blocks.
        ``d_norm2``: ||d_block||^2 when the caller has it; where the Hessian is
        a multiple of the identity (:meth:`block_hessian`) the curvature is
        then that multiple of it, with no pass over the direction.
        """
        if self._linear is not None:
            return 0.0
        if d_norm2 is not None and self._hessian is not None:
            whole = self.copy_map.whole_copy(block_slice)
            if whole is not None and whole[1] == self.copy_map.n_v:
                # the same operations as sign * (2 ||d||^2) / k^2 below for sum_squares (h = 2)
                return self.sign * (self._hessian * d_norm2) * (1.0 / whole[2]) ** 2
        off, size, k = self.copy_map.whole_copy(block_slice)
        if self.is_quadratic:  # the same curvature at every point: any finite point (d_block once v is not kept)
            v = self._v_array
            if v is None:
                v = d_block if d_block.size == self.copy_map.n_v else self._work_v()
        else:
            v = self.copy_map.to_variables(x, out=self._work_v())
        if size == v.size:
            # the block's variable is all of v: W d = d_block / k, and a second
            # derivative scales as the square of the direction, so the curvature
            # along d_block itself times 1/k^2 (no v-size tangent buffer; for
            # k = 2 the same number as along d_block / 2)
            c = self.smooth.curvature(v, d_block)
            return None if c is None else self.sign * c * (1.0 / k) ** 2
        if self._dv is None:
            self._dv = np.empty(self.copy_map.n_v)
        dv = self._dv
        dv[:off].fill(0.0)
        dv[off + size:].fill(0.0)
        np.multiply(d_block, 1.0 / k, out=dv[off:off + size])
        c = self.smooth.curvature(v, dv)
        return None if c is None else self.sign * c

    def curvature_blocks(self, x, parts):
        """``curvature(x, d)`` for d given on whole copies, ``parts = [(block_slice, d_block), ...]``, 0 elsewhere.

        One part is :meth:`curvature_block`. Several (the two tied copies of a
        variable, both moved by one projection step) form W d from the parts
        alone, each variable's segment summed over its copies then divided by
        the copy count (:meth:`CopyMap.to_variables`' operations: for the
        copies of a whole variable the same numbers as along the full-size d),
        in the buffer of v for a quadratic f (as :meth:`curvature`), so no
        n-size direction is needed. Each part must be a whole copy
        (:meth:`has_block_curvature`).
        """
        if len(parts) == 1:
            return self.curvature_block(x, *parts[0])
        if self._linear is not None:
            return 0.0
        if self._hessian is not None:  # parts of whole copies of the one variable: no v-size array written
            return self._identity_hessian_curvature([d_block for _, d_block in parts])
        if self.is_quadratic:
            dv = v = self._work_v()  # the curvature is the same at every point: dv serves as the point
        else:
            v = self.copy_map.to_variables(x, out=self._work_v())
            if self._dv is None:
                self._dv = np.empty(self.copy_map.n_v)
            dv = self._dv
        segments = {}  # offset in v -> (size, copy count, the parts' directions)
        for block_slice, d_block in parts:
            off, size, k = self.copy_map.whole_copy(block_slice)
            segments.setdefault(off, (size, k, []))[2].append(d_block)
        if sum(size for size, _, _ in segments.values()) < dv.size:
            dv.fill(0.0)
        for off, (size, k, directions) in segments.items():
            seg = dv[off:off + size]
            if len(directions) == 1:
                np.multiply(directions[0], 1.0 / k, out=seg)
                continue
            np.add(directions[0], directions[1], out=seg)
            for extra in directions[2:]:
                seg += extra
            seg *= 1.0 / k
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
