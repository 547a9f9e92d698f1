"""Per-block step sizes on the augmented Lagrangian, then one safeguarding step.

Each block k proposes a direction d_k (a step object of
:mod:`fwmodel.engine.steps`). Restricted to block k, with the other blocks
fixed, the augmented Lagrangian along d_k is

    phi_k(gamma) = L(x + gamma d_k, y),
    phi_k'(0) = <grad_k L, d_k>,
    phi_k''   = d_k' H_f d_k + lam ||M_k d_k||^2,

(M_k the columns of M of block k): the penalty term is an exact quadratic,
so when f is quadratic (or linear) the block's step is the closed form
gamma_k = min(gamma_max_k, -phi_k'(0) / phi_k''). Every block moves by its
own gamma_k, capped by its own set only (a product step would be capped by
the smallest cap of all blocks, which throttles away and pairwise steps).

The blocks are then moved together (a Jacobi sweep) along
D = sum_k gamma_k d_k, scaled by tau in [0, 1] chosen by a line search on
L(x + tau D, y): the blocks interact through f and M, and tau keeps the
combined move a descent step. (A Gauss-Seidel sweep would move the blocks one
after another with a fresh gradient for each, which costs one gradient
evaluation per block instead of one per iteration.)
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .._kernels import csr_times
from .line_search import bounded_scalar_step, exact_quadratic_step
from .steps import DeferredProposal, LazyDirection, formed
from .vector_ops import dot

#: blocks of at least this many entries take the lean path of the Gauss-Seidel sweep where it applies:
#: the slope from the proposal (the block's gradient of L shares its array with the directions, see
#: fwal._Buffers.shared_direction), f and its gradient followed along the move (a quadratic f), and
#: dual_term moved by one BLAS axpy. Each saves a pass over the block and changes the numbers by
#: rounding; on smaller blocks a pass costs less than the Python around it, and they keep the plain path.
LARGE_BLOCK = 1 << 14


class BlockColumns:
    """M_k d_k for one block's columns of M, and the squared column norms ||M e_i||^2."""

    def __init__(self, M, Mop, blocks):
        self.Mop = Mop
        self.blocks = blocks
        self.n = sum(blk.size for blk in blocks)
        self.m = Mop.shape[0]
        self._M = M
        self._built = False  # the column slices are built on first use (not before the first iterate)
        self.cols = None
        self.col_norms2 = None
        self.products = None  # per block d_k -> M_k d_k where M gives them (engine/row_metric.py's rows)
        self._constant_norms2 = None  # one ||M e_i||^2 per block, where it is the same for all its columns
        # (lo, hi, sign) where a block's columns of M are sign * I on rows lo:hi (a copy of
        # a variable tied to one other copy): M_k d_k is d_k itself, with no sparse
        # matrix built (at d = 1000 the CSR of M and its column slices cost several
        # d x d arrays of memory and 0.5 s); None for a block of another form
        self.signed = [Mop.signed_rows(blk.offset, blk.offset + blk.size) if self.m else None
                       for blk in blocks]
        #: every block's columns are a signed identity (or absent): see BlockLagrangianGradient.applies
        self.all_signed = self.m > 0 and all(sg is not None for sg in self.signed)
        #: (start, stop) of each block's slice -> the block's index
        self.block_of = {(blk.offset, blk.offset + blk.size): k for k, blk in enumerate(blocks)}

    def _build(self):
        self._built = True
        M = self._M
        if self.m and all(sg is not None for sg in self.signed):
            # sign * I columns: every norm of block k is sign^2 (no n-size array: at d = 4000
            # two tied copies would hold 256 MB of ones)
            self._constant_norms2 = [sign * sign for _, _, sign in self.signed]
            return
        if hasattr(M, "block_products") and self.m:  # rows kept as factors (L^{-1} A): no matrix formed
            self.products, self.col_norms2 = M.block_products([blk.slice for blk in self.blocks])
            return
        if not sp.issparse(M) and hasattr(M, "csr"):  # a structured operator that can also give its matrix
            M = M.csr()
        if M is None or self.m == 0:
            self._constant_norms2 = [0.0] * len(self.blocks)
            self.cols = [None] * len(self.blocks)
        elif sp.issparse(M):
            Mc = sp.csc_matrix(M)
            self.cols = [Mc[:, blk.slice].tocsr() for blk in self.blocks]
            self.col_norms2 = np.asarray(Mc.multiply(Mc).sum(axis=0)).ravel()
        elif isinstance(M, np.ndarray):
            self.cols = [np.ascontiguousarray(M[:, blk.slice]) for blk in self.blocks]
            self.col_norms2 = np.einsum("ij,ij->j", M, M)

    def matvec(self, k, d_k):
        if self.m == 0:
            return np.zeros(0)
        signed = self.signed[k]
        if signed is not None:
            lo, hi, sign = signed
            if not sign:  # the block's columns are not in M
                return np.zeros(self.m)
            if (lo, hi) == (0, self.m):  # read-only by convention: d_k itself when sign is +1
                return d_k if sign > 0 else np.negative(d_k)
            out = np.zeros(self.m)
            np.multiply(d_k, sign, out=out[lo:hi])
            return out
        if not self._built:
            self._build()
        if self.products is not None:
            return self.products[k](d_k)
        if self.cols is not None:
            return csr_times(self.cols[k], d_k)  # cols[k] @ d_k without scipy's wrapper
        full = np.zeros(self.n)
        full[self.blocks[k].slice] = d_k
        return self.Mop.matvec(full)

    def norms2(self, k):
        """||M e_i||^2 for the block's entries (zeros when M is an opaque operator); read-only."""
        if not self._built:
            self._build()
        if self._constant_norms2 is not None:
            return np.broadcast_to(np.float64(self._constant_norms2[k]), (self.blocks[k].size,))
        if self.col_norms2 is None:
            return np.zeros(self.blocks[k].size)
        return self.col_norms2[self.blocks[k].slice]


class BlockLagrangianGradient:
    """The gradient of L(., y), g + M' w (w = y + lam r), formed one block at a time.

    For blocks whose columns of M are a signed identity (two tied copies,
    :attr:`BlockColumns.signed`) block k's slice is ``g[k] + sign_k w[rows_k]``:
    ``grad[block.slice]`` writes it into one block-size buffer, reused for
    every block (the same numbers as ``ConsistencyOperator.add_rmatvec``).
    An n-size gradient would hold every block at once, although each is read
    by its own step only. A slice read stays valid until the next block's is
    read (its buffer is shared); the last block read is kept, not recomputed.
    """

    def __init__(self, g, dual_term, cols, workspace):
        self.g = g
        self.dual_term = dual_term
        self.signed = cols.signed
        self._block_of = cols.block_of  # made once per solve (this object is made every iteration)
        self._workspace = workspace  # size -> a reused array (the driver's buffers)
        self._current = None  # the block whose slice is in the buffer

    @staticmethod
    def applies(cols):
        """Every block's columns of M are a signed identity (or absent)."""
        return cols.all_signed

    def block_buffer(self, size):
        """The shared buffer, for a caller that writes a block's gradient itself (its content is dropped)."""
        self._current = None
        return self._workspace(size)

    def forget(self):
        """The shared buffer was written by another user (a lazy direction formed in it, see
        ``fwal._Buffers.shared_direction``): the next read forms its block's slice again."""
        self._current = None

    def __getitem__(self, key):
        k = self._block_of.get((key.start, key.stop)) if isinstance(key, slice) and key.step in (None, 1) else None
        if k is None:
            raise IndexError(f"the gradient of L(., y) is formed per block; {key!r} is not a block's slice")
        out = self._workspace(key.stop - key.start)
        if self._current != k:
            signed_block_gradient(self.g[key], self.dual_term, self.signed[k], out)
            self._current = k
        return out


def signed_block_gradient(g_k, dual_term, signed, out):
    """``g_k + sign * w[lo:hi]`` into ``out``: block k's slice of g + M' w when M_k = sign * I on rows lo:hi."""
    lo, hi, sign = signed
    if sign > 0:
        return np.add(g_k, dual_term[lo:hi], out=out)
    if sign < 0:
        return np.subtract(g_k, dual_term[lo:hi], out=out)
    np.copyto(out, g_k)
    return out


def _fresh_block_gradient(g, sl, signed, dual_term, grad, Mop):
    """Block k's slice of g + M' w from the objective's gradient g, in the sweep.

    Into the driver's block buffer when its gradient is per block: that array
    is also the one lazy directions are formed in (engine/steps.py), and no
    lazy direction is alive here (the earlier blocks' are spent, the later
    ones not formed yet; a cheap step forms its own direction). A block
    whose columns are not in M (sign 0) reads f's gradient in place instead:
    the sweep forms its lazy direction after this, in that same buffer.
    """
    if not Mop.shape[0] or (signed is not None and not signed[2]):
        # the block's columns are not in M: its gradient of L is f's, read in place (not copied into
        # the block buffer, which is also the array its lazy direction is formed in on a large block)
        return g[sl]
    if signed is not None:
        size = sl.stop - sl.start
        out = grad.block_buffer(size) if isinstance(grad, BlockLagrangianGradient) else np.empty(size)
        return signed_block_gradient(g[sl], dual_term, signed, out)
    return Mop.add_rmatvec(dual_term, g)[sl]


def block_step_sizes(proposals, steps, blocks, x, grad, dual_term, lam, cols, curvature_fn, backtracking):
    """gamma_k for every block (0 for blocks that do not move) and each block's M_k d_k.

    Also returns the per-block slopes phi_k'(0).
    """
    n = x.size
    gammas, Mds, slopes = {}, {}, {}
    full = np.zeros(n) if curvature_fn is not None else None
    for k, p in enumerate(proposals):
        if p is None:
            continue
        sl = blocks[k].slice
        slope = dot(grad[sl], p.d)
        if not slope < 0:
            continue
        Md = cols.matvec(k, p.d)
        d_norm2 = dot(p.d, p.d)
        c_f = None
        if curvature_fn is not None:
            full[sl] = p.d
            c_f = curvature_fn(x, full)
            full[sl] = 0.0
        observe = getattr(steps[k], "observe_curvature", None)
        if observe is not None:
            observe(c_f, d_norm2)
        if c_f is None:  # no second derivative: the backtracking estimate of the curvature
            c_f = (backtracking.lipschitz or 0.0) * d_norm2
        curv = float(c_f) + lam * dot(Md, Md)
        gammas[k] = exact_quadratic_step(slope, curv, p.gamma_max)
        Mds[k] = Md
        slopes[k] = slope
    return gammas, Mds, slopes


def jacobi_step(proposals, steps, blocks, objective, x, r, grad, dual_term, f, lam, cols, curvature_fn, quadratic,
                line_search, backtracking):
    """Move every block by its own step size, scaled by one safeguarding tau; returns {k: effective gamma}.

    Updates ``x`` and the residual ``r = Mx - b`` in place.
    """
    gammas, Mds, slopes = block_step_sizes(proposals, steps, blocks, x, grad, dual_term, lam, cols,
                                           curvature_fn, backtracking)
    moving = [k for k, gm in gammas.items() if gm > 0]
    if not moving:
        return {}
    n, m = x.size, r.size
    D = np.zeros(n)
    MD = np.zeros(m)
    slope = 0.0
    for k in moving:
        gm = gammas[k]
        D[blocks[k].slice] = gm * proposals[k].d
        if m:
            MD += gm * Mds[k]
        slope += gm * slopes[k]
    pen_lin = dot(dual_term, MD) if m else 0.0
    pen_quad = lam * dot(MD, MD) if m else 0.0
    if line_search == "exact" and quadratic and curvature_fn is not None:
        if len(moving) == 1:
            tau = 1.0  # the block's own step is already the exact minimizer along D
        else:
            c = curvature_fn(x, D)
            tau = exact_quadratic_step(slope, float(c) + pen_quad, 1.0) if c is not None else 1.0
    else:
        def phi(tau):
            return objective.value(x + tau * D) + tau * pen_lin + 0.5 * tau * tau * pen_quad

        if line_search == "exact":
            tau, _ = bounded_scalar_step(phi, 1.0)
        else:
            hint = None
            if backtracking.lipschitz is None and curvature_fn is not None:
                c = curvature_fn(x, D)
                hint = None if c is None else float(c) + pen_quad
            tau, _ = backtracking.step(phi, f, slope, dot(D, D), 1.0, hint)
    if tau <= 0:
        return {}
    D *= tau
    x += D
    if m:
        MD *= tau
        r += MD
    return {k: tau * gammas[k] for k in moving}


def gauss_seidel_sweep(proposals, steps, blocks, objective, Mop, x, r, y, grad, f, lam, cols, curvature_fn, quadratic,
                       line_search, backtracking, ctx, dual_term=None, start=None, keep_dual_term=False):
    """Move the blocks one after another, each by its own line search at the point the previous ones left.

    Every block after the first that moved gets a fresh gradient of L(., y)
    for its line search. Its direction from ``proposals`` stays feasible (the
    block itself has not moved yet; a lazy direction is formed now, see
    engine/steps.py); steps whose proposal is cheap (``cheap_proposal``:
    per-group and per-coordinate steps, no LMO call) propose again from the
    fresh gradient, the others keep theirs (a second LMO call per iteration
    would cost, on a trace-norm block, a Lanczos run without its warm start).
    Updates ``x`` and ``r`` in place; returns ({k: gamma}, {k: the proposal taken}).

    ``dual_term`` = y + lam r (the caller's, when it has it) is updated in place
    as r moves, instead of being recomputed per block. Where a block's columns of
    M are a signed identity (:attr:`BlockColumns.signed`, two tied copies) the
    penalty terms come from the direction itself: <w, M_k d> = sign <w[rows], d>,
    ||M_k d||^2 = ||d||^2, and the slope <g_k + sign w[rows], d> is taken as
    <g_k, d> + <w, M_k d>: the block's gradient of L is not formed.

    ``start`` (the driver's :class:`~fwmodel.engine.lagrangian.Iterate`, optional):
    f and its gradient at the sweep's starting point, ``start.f`` and
    ``start.g``, kept current as the blocks move: unchanged by a block that
    f does not read (``objective.reads_block``: an expression block such as
    z = D x); followed along the move where f is quadratic with a Hessian
    that the objective knows (``objective.follow_step``: the gradient moves
    by gamma H W d in one pass, and f by gamma <g_k, d> + gamma^2/2 d' H d,
    paper eq. fwal's line search); otherwise set to None, before a fresh one
    is evaluated (the two never coexist), and the fresh one is kept for the
    next blocks. On return they are f and its gradient at the new x, or g None.

    ``keep_dual_term``: the caller reads ``dual_term`` after the sweep (a projection step
    follows): the last block's move updates it too (one axpy from d instead of the two passes of
    forming y + lam r again; rounding aside the same numbers). ``ctx.dual_term_kept`` is then
    True when every move kept it current (blocks whose columns of M are a signed identity), else False.
    """
    m = r.size
    ctx.dual_term_kept = False
    kept = keep_dual_term and m > 0 and dual_term is not None
    moved, taken = {}, {}
    if dual_term is None:
        dual_term = r * lam
        dual_term += y
    full = None  # one zero-filled buffer for the curvature passes of all blocks
    block_curvature = getattr(objective, "has_block_curvature", lambda sl: False)
    reads_block = getattr(objective, "reads_block", None)
    follow = getattr(objective, "follow_step", None)
    if start is None or reads_block is None:
        start = _NoStart() if start is None else start
        start.g = None
    # the objective's gradient kept once for tied copies, where it offers that (see compiler/objective.py)
    value_and_grad = getattr(objective, "value_and_grad_shared", objective.value_and_grad)
    # the last block that proposes a move: the blocks before it keep dual_term current for it
    last_moving = max((k for k, p in enumerate(proposals) if p is not None), default=-1)
    for k, p in enumerate(proposals):
        if p is None:
            continue
        sl = blocks[k].slice
        signed = cols.signed[k] if m else None
        f_reads = reads_block is None or reads_block(sl)  # f (and its curvature) depends on this block
        sparse = None if sl.stop - sl.start < LARGE_BLOCK else _sparse_direction(
            p, sl, signed, start, bool(moved), objective, line_search == "exact" and quadratic)
        if sparse is not None:  # a few nonzeros (a pairwise step on a large block): O(nonzeros) throughout
            if moved and start.g is None:
                start.f, start.g = value_and_grad(x)
            taken[k] = p
            gamma = _sparse_step(p, *sparse, sl, signed, steps[k], start, follow, x, r, dual_term, lam, bool(moved),
                                 k < last_moving or kept)
            if gamma > 0:
                moved[k] = gamma
            continue
        pen_lin = slope_f = None  # <w, M_k d> and <g_k, d>, computed where needed
        if moved:  # an earlier block moved: the slope from the gradient at this point (and a fresh cheap proposal)
            if start.g is None:
                start.f, start.g = value_and_grad(x)
            f, g = start.f, start.g
            if getattr(steps[k], "cheap_proposal", False):
                grad_k = _fresh_block_gradient(g, sl, signed, dual_term, grad, Mop)
                p = steps[k].propose(x[sl], grad_k, ctx)
                slope = dot(grad_k, p.d)
            elif signed is not None and signed[2] and sl.stop - sl.start >= LARGE_BLOCK:
                # <g_k + sign w[rows], d> as <g_k, d> + <w, M_k d>: the block's gradient of L is not
                # formed (its array is the one the lazy directions share, see engine/steps.py)
                d = formed(p)
                if isinstance(grad, BlockLagrangianGradient):
                    grad.forget()  # d may have been formed in the gradient's buffer
                lo, hi, sign = signed
                pen_lin = sign * dot(dual_term[lo:hi], d)
                slope_f = dot(g[sl], d)
                slope = slope_f + pen_lin
            else:
                grad_k = _fresh_block_gradient(g, sl, signed, dual_term, grad, Mop)
                slope = dot(grad_k, formed(p))
            g = grad_k = None
        else:
            if type(p) is DeferredProposal:  # formed now, from the gradient it would have been formed from
                p = steps[k].propose(x[sl], grad[sl], ctx)
            if p.slope is not None and isinstance(grad, BlockLagrangianGradient) and sl.stop - sl.start >= LARGE_BLOCK:
                # the gradient is the proposal's: its slope from the step's atom products (no
                # pass; the block's gradient array now holds another block's, or a direction)
                slope = p.slope
            else:
                slope = dot(grad[sl], formed(p))
                if not m and start.g is not None and _same_array(grad[sl], start.g[sl]):
                    slope_f = slope  # no rows: grad is f's gradient itself, so <g_k, d> is this very dot
        taken[k] = p
        if not slope < 0:
            continue
        d = formed(p)
        if isinstance(grad, BlockLagrangianGradient):
            grad.forget()  # on a large block d may have been formed in the gradient's buffer
        # ||d||^2 from the step's factors where it knows it (a rank-k step away from cancellation), else a pass
        d_norm2 = p.d_norm2 if p.d_norm2 is not None else dot(d, d)
        Md = None
        if not m:
            pen_lin = pen_quad = 0.0
        elif signed is not None:  # <w, M_k d> (pen_lin) is read only by phi below
            lo, hi, sign = signed
            pen_quad = lam * sign * sign * d_norm2
        else:
            Md = cols.matvec(k, d)
            pen_lin = dot(dual_term, Md)
            pen_quad = lam * dot(Md, Md)
        c_f = None
        if curvature_fn is not None and quadratic and not f_reads:
            # f does not read the block (z = D x): its curvature along d is 0, known without a tangent pass
            c_f = 0.0
        elif curvature_fn is not None and block_curvature(sl):  # from the block alone: no full-size direction
            c_f = objective.curvature_block(x, sl, d, d_norm2=d_norm2)
        elif curvature_fn is not None:
            if full is None:
                full = np.zeros(x.size)
            full[sl] = d
            c_f = curvature_fn(x, full)
        observe = getattr(steps[k], "observe_curvature", None)
        if observe is not None:
            observe(c_f, d_norm2)
        if line_search == "exact" and quadratic and c_f is not None:
            gamma = exact_quadratic_step(slope, float(c_f) + pen_quad, p.gamma_max)
        else:
            if full is None:
                full = np.zeros(x.size)
            full[sl] = d
            if pen_lin is None:
                pen_lin = signed[2] * dot(dual_term[signed[0]:signed[1]], d) if signed[2] else 0.0

            def phi(gm, _full=full):
                return objective.value(x + gm * _full) + gm * pen_lin + 0.5 * gm * gm * pen_quad

            if line_search == "exact":
                gamma, _ = bounded_scalar_step(phi, p.gamma_max)
            else:
                hint = None if c_f is None else float(c_f) + pen_quad
                gamma, _ = backtracking.step(phi, f, slope, d_norm2, p.gamma_max,
                                             hint if backtracking.lipschitz is None else None)
        if full is not None:
            full[sl] = 0.0  # the buffer is zero outside the next block's slice
        if gamma <= 0:
            continue
        f_moves = start.g is not None and f_reads
        follows = f_moves and follow is not None and c_f is not None and d.size >= LARGE_BLOCK
        if follows and slope_f is None:
            slope_f = dot(start.g[sl], d)  # f's slope along d, before x moves
        _move_block(x[sl], d, gamma, Md, signed, r, y, dual_term, lam, k < last_moving or kept)
        kept = kept and signed is not None  # M d moved r without the dual term (_move_block)
        moved[k] = gamma
        if f_moves:  # f and its gradient follow the move, or are evaluated afresh when next needed
            if follows and follow(start.g, sl, d, gamma):
                start.f += gamma * slope_f + 0.5 * gamma * gamma * float(c_f)
            else:
                start.g = None  # released before a fresh one is formed
    ctx.dual_term_kept = kept
    return moved, taken


def _same_array(a, b):
    """Whether two arrays are views of the same memory with the same layout (so every entry is equal)."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.base is b.base and a.shape == b.shape
            and a.strides == b.strides and a.ctypes.data == b.ctypes.data)


def _sparse_direction(p, sl, signed, start, fresh, objective, exact_quadratic):
    """(indices, values, c) when block k's step can be taken in O(nonzeros) by :func:`_sparse_step`, else None.

    That is: a large block (``LARGE_BLOCK`` entries) with a lazy direction of
    a few nonzeros (:meth:`~fwmodel.engine.steps.LazyDirection.sparse`), on
    two tied copies (``signed``), an exact line search on a quadratic f whose
    block Hessian is ``c I`` (``objective.block_hessian``), and f's gradient at
    hand (``start.g``; evaluated by the caller when ``fresh``).
    """
    if sl.stop - sl.start < LARGE_BLOCK or type(p) is DeferredProposal or type(p.d) is not LazyDirection \
            or signed is None or not signed[2] or not exact_quadratic or (start.g is None and not fresh) \
            or (p.slope is None and not fresh):
        return None
    block_hessian = getattr(objective, "block_hessian", None)
    c = block_hessian(sl) if block_hessian is not None else None
    sparse = p.d.sparse() if c is not None else None
    return None if sparse is None else (*sparse, c)


def _sparse_step(p, indices, values, c, sl, signed, step, start, follow, x, r, dual_term, lam, fresh, read_later):
    """Block k's line search and move along a direction with a few nonzeros (values at ``indices``), all O(nonzeros).

    The same quantities as the dense path: the slope (the proposal's, or
    <g_k, d> + <w, M_k d> at a point earlier blocks moved, ``fresh``), ||d||^2,
    the curvature c ||d||^2 + lam ||d||^2 and the exact step (paper eq. fwal,
    the step size of block k); x, r, dual_term (when a later block reads it)
    and f's gradient (``follow``) move on the nonzeros only. A pairwise step of
    BPCG on an L1 copy moves two entries: at d = 4000 the dense path made
    seven passes over 16 million entries for them. Returns gamma (0: no move).
    """
    lo, hi, sign = signed
    slope_f = dot(start.g[sl][indices], values)
    w_rows = dual_term[lo:hi]
    slope = slope_f + sign * dot(w_rows[indices], values) if fresh else p.slope
    if not slope < 0:
        return 0.0
    d_norm2 = dot(values, values)
    c_f = c * d_norm2
    observe = getattr(step, "observe_curvature", None)
    if observe is not None:
        observe(c_f, d_norm2)
    gamma = exact_quadratic_step(slope, c_f + lam * sign * sign * d_norm2, p.gamma_max)
    if gamma <= 0:
        return 0.0
    move = gamma * values
    x_k, r_rows = x[sl], r[lo:hi]
    x_k[indices] += move
    r_rows[indices] += sign * move
    if read_later:
        w_rows[indices] += (sign * lam) * move
    if follow is not None and follow(start.g, sl, values, gamma, indices=indices):
        start.f += gamma * slope_f + 0.5 * gamma * gamma * c_f
    else:
        start.g = None
    return gamma


class _NoStart:
    """Where the caller keeps no f and gradient at the sweep's start (the sweep then evaluates them)."""

    f = g = None


def _move_block(x_k, d, gamma, Md, signed, r, y, dual_term, lam, read_later):
    """x_k += gamma d, r += gamma M_k d, and dual_term = y + lam r where it moved when a later block reads it.

    A large block (``LARGE_BLOCK`` entries) moves by BLAS axpys from d itself,
    one pass per vector (d is not changed; on two tied copies, ``signed``:
    M_k = sign I on rows lo:hi, r and dual_term move by +-gamma d and
    +-lam gamma d, rounding aside the same as recomputing y + lam r there).
    A smaller block forms gamma d once in d's own array (its direction is
    not read after the move) and moves x and r with the same roundings as
    x += gamma * d and r += gamma * M_k d.
    """
    large = d.size >= LARGE_BLOCK
    if large:
        blas.daxpy(d, x_k, a=gamma)
    else:
        d *= gamma
        x_k += d
    if signed is not None:
        lo, hi, sign = signed
        if not sign:
            return
        if large:
            blas.daxpy(d, r[lo:hi], a=sign * gamma)
            if read_later:
                blas.daxpy(d, dual_term[lo:hi], a=sign * lam * gamma)
            return
        rows = r[lo:hi]
        if sign > 0:
            rows += d
        else:
            rows -= d
        if read_later:
            np.multiply(r[lo:hi], lam, out=dual_term[lo:hi])
            dual_term[lo:hi] += y[lo:hi]
        return
    if Md is not None:
        Md *= gamma
        r += Md
        if read_later:
            np.multiply(r, lam, out=dual_term)
            dual_term += y
