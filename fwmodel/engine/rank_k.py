"""Rank-k steps on trace-norm blocks (BlockFW: Allen-Zhu, Hazan, Hu & Li 2017).

A Frank-Wolfe step on the ball ``{||X||_* <= r}`` adds one rank-one atom;
a solution of rank k needs at least k such steps, and usually many more
(the other atoms are only shrunk uniformly). Block Frank-Wolfe replaces the
linear oracle by a rank-k *proximal* oracle: with ``L`` the curvature of the
objective on the block,

    V = argmin_{||V||_* <= r, rank V <= k}  <G, V> + (L/2) ||V - X||_F^2
      = argmin_{||V||_* <= r, rank V <= k}  ||V - Y||_F^2,   Y = X - G / L,

and the step goes along ``V - X`` (feasible for gamma in [0, 1]: V and X are
in the ball). The minimizer is explicit (Allen-Zhu et al. 2017, Lemma 3.1,
a consequence of von Neumann's trace inequality): with the top-k singular
triplets ``(u_i, sigma_i, v_i)`` of Y,

    V = sum_i s_i u_i v_i',   s = projection of (sigma_1..sigma_k) onto {s >= 0, sum s <= r}.

``rank_k="auto"`` (the default) takes these steps on trace-norm blocks of at
least ``AUTO_MIN_DIM`` rows and columns that take FW steps, with k also
capped by cost: the next step's Krylov work, predicted linearly in
k + OVERSAMPLING from the last step's measured time, must stay within
``AUTO_COST_CAP`` times the rest of an iteration (on the paper's covariance
problem the prox rank grows towards d, and an uncapped k reached a dense
eigendecomposition of 14 s per step at d = 4000; benchmarks/RESULTS.md,
"The Fig. 2 race").

On the PSD trace ball ``{X psd, tr X <= r}`` the same holds with the top-k
eigenpairs of sym(Y) (largest eigenvalues, negative ones projected to 0);
on the symmetric nuclear ball with the k eigenvalues of largest magnitude,
their signs kept and magnitudes projected.

When fewer than k of the projected values are positive, the threshold of the
projection lies above sigma_{k+1}, so V is also the projection of Y onto the
whole ball: the step is then an exact projected-gradient step, computed
from k pairs instead of a full SVD. The pairs come from a block Krylov
method (Rayleigh-Ritz on span[Q, A Q] or span[Q, A'A Q]) warm-started from
the previous step's pairs and the LMO vector: consecutive Y differ little,
so one or two rounds of BLAS-3 products suffice.

k adapts to what the step needs and gains: doubled while all k projected
values are positive (the prox wants a higher rank), shrunk to the rank the
prox kept plus a margin otherwise; and the step is compared every iteration
with the plain FW step (whose LMO also gives the block's FW gap for the
stopping rule) on the quadratic model of L(., y) along each direction; the
better one is proposed. When the rank-k step's model decrease per second
(its block Krylov work added to an iteration's time) falls below the FW
step's ``PATIENCE`` times in a row, it pauses for 2, 4, ... iterations
(its products are then saved).
"""
from __future__ import annotations

import time

import numpy as np
from scipy.linalg import blas, lapack

from .inface import project_capped_simplex
from .._kernels import symmetrize_in_place as _symmetrize
from .block_search import LARGE_BLOCK
from .steps import LazyDirection, Proposal, _fw_direction
from .vector_ops import dot

#: the values of the ``rank_k`` solve option
RANK_K_CHOICES = (True, False, "auto")
#: rank_k="auto": rank-k steps on trace-norm blocks with at least this many rows and columns that
#: take FW steps (below, projection="auto" projects the block after a few iterations anyway and a
#: rank-one FW step costs little)
AUTO_MIN_DIM = 1000
#: rank_k="auto": k grows only while the predicted rank-k work of the next step (Krylov cost
#: linear in the block size k + OVERSAMPLING, measured on the last step) costs at most this many
#: times the rest of an iteration; otherwise k shrinks to what fits
AUTO_COST_CAP = 1.0
#: first k, and the extra Krylov vectors kept beyond k (oversampling)
INITIAL_RANK = 4
OVERSAMPLING = 4
#: block Krylov rounds at most per step, and the relative change of the k values that stops them
MAX_ROUNDS = 4
RITZ_RTOL = 1e-4
#: from this fraction of the smaller side on, a dense factorization of Y is cheaper than Krylov
DENSE_FRACTION = 0.3
#: the rank-k step, when it loses to FW this many times in a row, pauses for 2, 4, 8, ... iterations
PATIENCE = 3
MAX_PAUSE = 64


def _orth(A, scale=None):
    """An orthonormal basis of the columns of A (QR; columns below 1e-12 of ``scale``, default the
    largest, dropped as dependent)."""
    Q, R = np.linalg.qr(A)
    diag = np.abs(np.diag(R))
    top = float(diag.max(initial=0.0)) if scale is None else float(scale)
    keep = diag > 1e-12 * max(top, 1e-300)
    return Q[:, keep]


class ShiftedMatrix:
    """``Y = X - G / L`` as an operator: ``Y @ Q = X @ Q - (G @ Q) / L``, no matrix of Y's size formed.

    A rank-k step's prox point is that of Y (module docstring); its block Krylov
    method only multiplies Y by thin blocks, so Y need not exist: two thin
    products (X Q and G Q) replace one, and the d x d array of Y is saved (at
    d = 4000, 128 MB). ``terms`` are the matrices whose products the Krylov
    method carries (its last vectors' products come back with its result).
    """

    def __init__(self, X, G, L):
        self.terms = (X, G)
        self.shape = X.shape
        self._scale = -1.0 / L

    def combine(self, products):
        """Y Q from (X Q, G Q)."""
        XQ, GQ = products
        out = GQ * self._scale
        out += XQ
        return out

    def product_into(self, Q, out):
        """out <- Y Q = X Q - (G Q) / L (column-major ``out``), no other array of its size:
        ``X Q`` by ``out=``, then ``-(G Q) / L`` added by BLAS ``dgemm`` with ``beta = 1``."""
        X, G = self.terms
        np.matmul(X, Q, out=out)
        if G.flags.c_contiguous and out.flags.f_contiguous and G.dtype == np.float64:
            blas.dgemm(self._scale, G.T, Q, beta=1.0, c=out, trans_a=1, overwrite_c=1)
        else:
            out += self._scale * (G @ Q)
        return out

    @property
    def T(self):
        X, G = self.terms
        return ShiftedMatrix(X.T, G.T, -1.0 / self._scale)

    def dense(self):
        """Y itself (a fresh array: the dense branch, a full factorization, needs it)."""
        X, G = self.terms
        Y = np.multiply(G, self._scale)
        Y += X
        return Y


class _Plain:
    """A matrix as a one-term operator (the interface of :class:`ShiftedMatrix`)."""

    def __init__(self, A):
        self.terms = (A,)
        self.shape = A.shape

    @staticmethod
    def combine(products):
        return products[0]

    def product_into(self, Q, out):
        return np.matmul(self.terms[0], Q, out=out)

    @property
    def T(self):
        return _Plain(self.terms[0].T)

    def dense(self):
        return self.terms[0]


def _operator(A):
    return A if isinstance(A, ShiftedMatrix) else _Plain(A)


def _times(op, Q):
    """The products of each of ``op``'s terms with Q."""
    return [T @ Q for T in op.terms]


def _extend(Q, AQ):
    """The orthonormal columns W that extend Q to span[Q, A Q] (block Gram-Schmidt, twice).

    Columns of A Q that lie in span Q (a warm start that already holds an
    eigenvector: the LMO's vector) leave a residual of rounding noise; they
    are dropped before the QR, which would otherwise orthogonalize the other
    columns against that noise and lose one random direction of the subspace.
    """
    W = AQ - Q @ (Q.T @ AQ)
    norms = np.linalg.norm(W, axis=0)
    W = W[:, norms > 1e-10 * max(float(np.linalg.norm(AQ, axis=0).max(initial=0.0)), 1e-300)]
    if W.shape[1]:
        W = _orth(W)
        W = _orth(W - Q @ (Q.T @ W))
    return W


def _pick(values, k, which):
    """Indices of the k extreme values: "LA" largest, "LM" largest magnitude."""
    key = values if which == "LA" else np.abs(values)
    return np.argsort(key)[::-1][:k]


def _start_block(n, b, start, rng):
    """An orthonormal n x b starting block: the ``start`` columns (the previous Ritz vectors; an
    array, or a list of arrays whose columns are taken in order, emptied once they are stacked),
    completed by Gaussian vectors."""
    rng = rng if rng is not None else np.random.default_rng(0)
    parts = [] if start is None else (start if isinstance(start, list) else [start])
    cols = [np.asarray(part, dtype=float).reshape(n, -1) for part in parts]
    have = sum(c.shape[1] for c in cols)
    if have < b:
        cols.append(rng.standard_normal((n, b - have)))
    stacked = np.hstack(cols)
    if isinstance(start, list):  # consumed: the caller's last references to the blocks can go
        start.clear()
    cols = parts = None
    return _orth(stacked)[:, :b]


def top_eigenpairs(A, k, which="LA", start=None, rng=None, max_rounds=MAX_ROUNDS, rtol=RITZ_RTOL):
    """The k extreme eigenpairs of a symmetric matrix A by a warm-started block Krylov method.

    Each round is a Rayleigh-Ritz step on ``span[Q, A Q]`` (``Q``: the
    current ``k + OVERSAMPLING`` Ritz vectors, first the ``start`` columns
    completed by Gaussian vectors); it stops when the k Ritz values change
    by at most ``rtol`` relative to the largest. ``which``: "LA" (largest)
    or "LM" (largest magnitude). Returns ``(values, vectors)`` (n x k, orthonormal).
    A nearly symmetric A (rounding) is read as its symmetric part: the
    Rayleigh-Ritz matrix ``K' A K`` is symmetrized, and the dense branch
    factorizes ``(A + A') / 2``. A may be a :class:`ShiftedMatrix`.
    """
    values, vectors, _ = _eigenpairs(_operator(A), k, which, start, rng, max_rounds, rtol)
    return values, vectors


def _eigenpairs(op, k, which, start, rng, max_rounds, rtol):
    """:func:`top_eigenpairs` on an operator; also returns the products of its terms with the vectors.

    One product with A per round: ``A K = [A Q, A W]`` with ``A Q`` carried
    from the last round (the Ritz vectors are ``K C``, so their products are
    ``(A K) C``) and W the new orthonormal directions of span[Q, A Q].
    Large blocks (``LARGE_BLOCK`` entries) run the same rounds in
    preallocated arrays (:func:`_eigenpairs_in_buffers`).
    """
    n = op.shape[0]
    b = min(n, k + OVERSAMPLING)
    if b >= DENSE_FRACTION * n:
        M = np.array(op.dense(), dtype=float)  # a copy, symmetrized in place
        _symmetrize(M)
        w, V = np.linalg.eigh(M)
        M = None
        idx = _pick(w, k, which)
        V = V[:, idx]
        return w[idx], V, tuple(_times(op, V))
    if n * op.shape[1] >= LARGE_BLOCK:
        return _eigenpairs_in_buffers(op, k, b, which, start, rng, max_rounds, rtol)
    Q = _start_block(n, b, start, rng)
    PQ = _times(op, Q)
    previous = None
    for _ in range(max_rounds):
        W = _extend(Q, op.combine(PQ))
        K = np.hstack([Q, W])
        PK = [np.hstack([p, pw]) for p, pw in zip(PQ, _times(op, W))]
        H = K.T @ op.combine(PK)
        w, C = np.linalg.eigh(0.5 * (H + H.T))
        idx = _pick(w, b, which)
        Q = K @ C[:, idx]
        PQ = [p @ C[:, idx] for p in PK]
        values = w[idx[:k]]
        scale = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
        if previous is not None and np.max(np.abs(values - previous)) <= rtol * scale:
            break
        previous = values
    return values, Q[:, :k], tuple(p[:, :k] for p in PQ)


def _eigenpairs_in_buffers(op, k, b, which, start, rng, max_rounds, rtol):
    """The rounds of :func:`_eigenpairs` (Krylov branch, block size b) in arrays allocated once.

    The thin blocks are what a rank-k step adds to an iteration's memory
    (Y itself is never formed: :class:`ShiftedMatrix`). Here two arrays of
    2b columns, allocated once per call, hold the basis ``K = [Q, W]`` and
    the operator's product ``A K``: ``A W`` is written in place by the
    BLAS (``X W`` by ``out=``, then ``- (G W) / L`` added by ``dgemm``
    with ``beta = 1``), the QR is LAPACK's in W's own memory, the
    rotations ``Q <- K C`` go a block of rows at a time, and at the end the
    arrays shrink to their first k columns without a copy. The terms'
    products with the k vectors (``X V``, ``G V``: the step's slopes) are
    then two thin products of k columns, instead of carrying ``X K`` and
    ``G K`` through the rounds. About 4 b columns at the peak, where the
    plain rounds held about 16 b (fresh arrays for ``hstack``, each term's
    products, the QR's copies; measured at d = 2000). The same arithmetic
    up to rounding.
    """
    n = op.shape[0]
    Q0 = _start_block(n, b, start, rng)
    # each buffer is owned by its transpose (C order, 2b x n), so that its first columns can be
    # kept at the end without a copy (:func:`_first_columns`)
    owners = [np.empty((2 * b, n))]
    K = owners[0].T
    K[:, :b] = Q0
    Q0 = None  # freed before the product's array exists
    owners.append(np.empty((2 * b, n)))
    AK = owners[1].T
    op.product_into(K[:, :b], AK[:, :b])
    scratch = np.empty((min(n, _ROTATION_ROWS), b), order="F")
    previous = values = None
    for _ in range(max_rounds):
        W = K[:, b:]
        np.copyto(W, AK[:, :b])  # A Q, then the new directions in its place
        w = _extend_in_place(K[:, :b], W)
        m = b + w
        if w:
            op.product_into(K[:, b:m], AK[:, b:m])
        H = K[:, :m].T @ AK[:, :m]
        vals, C = np.linalg.eigh(0.5 * (H + H.T))
        idx = _pick(vals, b, which)
        Cb = np.asfortranarray(C[:, idx])
        _rotate_in_place(K, m, Cb, scratch)  # Q <- K C, A Q <- (A K) C
        _rotate_in_place(AK, m, Cb, scratch)
        values = vals[idx[:k]]
        scale = max(float(np.max(np.abs(values), initial=0.0)), 1e-300)
        if previous is not None and np.max(np.abs(values - previous)) <= rtol * scale:
            break
        previous = values
    W = K = AK = None  # the views: each owner can then shrink to its first k rows
    vectors = _first_columns(owners, k)
    if len(op.terms) == 1:  # the operator's own product is the term's
        return values, vectors, (_first_columns(owners, k),)
    owners = None
    return values, vectors, tuple(_times(op, vectors))


#: rows per block of the in-place rotations Q <- K C of :func:`_eigenpairs_in_buffers`
_ROTATION_ROWS = 512


def _rotate_in_place(A, m, C, scratch):
    """A[:, :b] <- A[:, :m] C (C: m x b), a block of rows at a time through ``scratch`` (rows x b)."""
    b = C.shape[1]
    rows = scratch.shape[0]
    for r in range(0, A.shape[0], rows):
        block = scratch[:min(rows, A.shape[0] - r)]
        np.matmul(A[r:r + rows, :m], C, out=block)
        A[r:r + rows, :b] = block


def _first_columns(owners, k):
    """The first k columns (n x k, column-major) of the matrix whose transpose is ``owners[0]``,
    removed from the list; the owner's memory shrinks to them (its first k rows: no copy)."""
    owner = owners.pop(0)
    try:
        owner.resize((k, owner.shape[1]), refcheck=True)
    except ValueError:  # a view still refers to it: copy
        return np.array(owner[:k].T, order="F")
    return owner.T


def _extend_in_place(Q, W):
    """:func:`_extend` in place: W (column-major, holding A Q) receives the orthonormal columns that
    extend Q to span[Q, A Q], packed to the left; returns their number.

    The same steps: the projection ``W - Q (Q' W)`` (BLAS ``dgemm`` with
    ``beta = 1``, no temporary of W's size), the columns left with rounding
    noise dropped, then QR (LAPACK's ``geqrf`` / ``orgqr`` in W's own
    memory) and the projection and QR once more.
    """
    top = float(np.sqrt(_column_norms2(W).max(initial=0.0)))
    blas.dgemm(-1.0, Q, Q.T @ W, beta=1.0, c=W, overwrite_c=1)
    w = _pack_columns(W, np.sqrt(_column_norms2(W)) > 1e-10 * max(top, 1e-300))
    if w:
        w = _orth_in_place(W[:, :w])
    if w:
        blas.dgemm(-1.0, Q, Q.T @ W[:, :w], beta=1.0, c=W[:, :w], overwrite_c=1)
        w = _orth_in_place(W[:, :w])
    return w


def _column_norms2(A):
    """Squared norms of A's columns (``np.linalg.norm(A, axis=0)`` squares A into a temporary)."""
    return np.einsum("ij,ij->j", A, A)


def _orth_in_place(A):
    """:func:`_orth` in A's own (column-major) memory: the orthonormal basis packed to the left; returns
    its number of columns (those whose R diagonal is at least 1e-12 of the largest)."""
    qr, tau, _, info = lapack.dgeqrf(A, overwrite_a=1)
    if info != 0 or not np.shares_memory(qr, A):  # LAPACK copied: not expected for a column-major float64 block
        raise RuntimeError("rank-k Krylov: in-place QR failed")
    diag = np.abs(np.diag(qr))
    keep = diag > 1e-12 * max(float(diag.max(initial=0.0)), 1e-300)
    q, _, info = lapack.dorgqr(qr, tau, overwrite_a=1)
    if info != 0 or not np.shares_memory(q, A):
        raise RuntimeError("rank-k Krylov: in-place QR failed")
    return _pack_columns(A, keep)


def _pack_columns(A, keep):
    """Moves the columns ``keep`` of A to its left, in order; returns their number."""
    kept = np.flatnonzero(keep)
    for j, c in enumerate(kept):
        if c != j:
            A[:, j] = A[:, c]
    return kept.size


def top_singular_triplets(A, k, start=None, rng=None, max_rounds=MAX_ROUNDS, rtol=RITZ_RTOL):
    """The k largest singular triplets of A (m x n) by a warm-started block Krylov method.

    Rayleigh-Ritz for singular values on the right subspace
    ``span[Q, A' A Q]``: the SVD of ``A K`` (m x 2b) gives the Ritz triplets.
    ``start``: right vectors (n x j) to start from. Returns ``(U, s, V)``
    with U (m x k) and V (n x k) orthonormal. A may be a :class:`ShiftedMatrix`.
    """
    U, s, V, _ = _singular_triplets(_operator(A), k, start, rng, max_rounds, rtol)
    return U, s, V


def _singular_triplets(op, k, start, rng, max_rounds, rtol):
    """:func:`top_singular_triplets` on an operator; also returns its terms' products with V.

    Two products per round: ``A' (A Q)`` and ``A W`` (``A Q`` carried from the last round as ``(A K) C``).
    """
    m, n = op.shape
    b = min(m, n, k + OVERSAMPLING)
    if b >= DENSE_FRACTION * min(m, n):
        U, s, Vt = np.linalg.svd(op.dense(), full_matrices=False)
        V = Vt[:k].T
        return U[:, :k], s[:k], V, tuple(_times(op, V))
    opT = op.T
    Q = _start_block(n, b, start, rng)
    PQ = _times(op, Q)
    previous = None
    for _ in range(max_rounds):
        W = _extend(Q, opT.combine(_times(opT, op.combine(PQ))))
        K = np.hstack([Q, W])
        PK = [np.hstack([p, pw]) for p, pw in zip(PQ, _times(op, W))]
        P, s, Wt = np.linalg.svd(op.combine(PK), full_matrices=False)
        C = Wt[:b].T
        U, Q = P[:, :b], K @ C
        PQ = [p @ C for p in PK]
        values = s[:k]
        if previous is not None and np.max(np.abs(values - previous)) <= rtol * max(float(s[0]), 1e-300):
            break
        previous = values
    return U[:, :k], s[:k], Q[:, :k], tuple(p[:, :k] for p in PQ)


def rank_k_prox(Y, radius, k, psd=False, symmetric=False, start=None, rng=None, products=False):
    """The nearest point to Y of rank at most k in the trace-norm ball (Allen-Zhu et al. 2017, Lemma 3.1).

    ``psd``: over the PSD trace ball (Y's symmetric part is used);
    ``symmetric``: over symmetric matrices of the nuclear ball. Returns
    ``(U, s, V)``: the point is ``U diag(s) V'``, with ``s >= 0`` (signs of
    a symmetric point folded into V = U * sign), and the k-th and later
    values of s zero when the result is the projection onto the whole ball.
    Y may be a :class:`ShiftedMatrix`; ``products``: also return the
    products of its terms with V (for Y = X - G / L: ``(X V, G V)``).
    """
    op = _operator(Y)
    if psd or symmetric:
        # the eigenpairs of sym(Y) read from Y itself (its Rayleigh-Ritz matrices are symmetrized):
        # no d x d pass to test or form the symmetric part
        values, U, PU = _eigenpairs(op, k, "LA" if psd else "LM", start, rng, MAX_ROUNDS, RITZ_RTOL)
        if psd:
            s, V, PV = project_capped_simplex(values, radius), U, PU
        else:
            s = project_capped_simplex(np.abs(values), radius)
            if np.all(values >= 0):  # V = U (no second copy: the usual case near a PSD iterate)
                V, PV = U, PU
            else:
                signs = np.where(values < 0, -1.0, 1.0)
                V, PV = U * signs, PU
                for p in PV:  # the products with U, signed in place: those with V (no second copy)
                    p *= signs
    else:
        U, sigma, V, PV = _singular_triplets(op, k, start, rng, MAX_ROUNDS, RITZ_RTOL)
        s = project_capped_simplex(sigma, radius)
    return (U, s, V, PV) if products else (U, s, V)


def _model_decrease(slope, curvature):
    """Decrease of the model slope * g + curvature g^2 / 2 over g in [0, 1] (positive is better)."""
    if not slope < 0:
        return 0.0
    if curvature <= 0 or -slope >= curvature:
        return -slope - 0.5 * max(curvature, 0.0)
    return 0.5 * slope * slope / curvature


def _fw_norm2(x_k, atom, xx):
    """||s - x||^2 = ||s||^2 - 2 <s, x> + ||x||^2 (``xx``) without forming s - x (a rank-one atom's
    ||s||^2 from its vectors; any other atom is formed densely)."""
    u, v = getattr(atom, "u", None), getattr(atom, "v", None)
    if u is None or v is None:
        d = atom.to_dense() - x_k
        return dot(d, d)
    s_norm2 = atom.scale * atom.scale * dot(u, u) * dot(v, v)
    return max(s_norm2 - 2.0 * atom.dot(x_k) + xx, 0.0)


def _low_rank_minus(x_k, US, V, symmetric, out):
    """``out`` <- U S V' - X (flat; ``US`` = U diag(s)): a lean rank-k step's direction, formed at the sweep's turn."""
    D = out.reshape(US.shape[0], V.shape[0])
    np.matmul(US, V.T, out=D)
    if symmetric:  # exactly symmetric: rounding must not build up an asymmetry
        _symmetrize(D)
    D -= x_k.reshape(D.shape)
    return out


class RankKStep:
    """A step object (see :mod:`fwmodel.engine.steps`) taking BlockFW rank-k steps on a trace-norm block.

    Each proposal calls the block's LMO (the FW gap, and the FW direction),
    forms ``Y = X - G / L`` with ``L = lam * mean ||M e_i||^2 + L_f`` (the
    curvature of L(., y) on the block per unit squared step: the penalty's
    from M's columns, the objective's measured along the last direction),
    computes the rank-k point V (:func:`rank_k_prox`) and proposes
    ``V - X`` when its model decrease beats the FW step's.

    The objective's curvature is measured along the first FW direction
    when the driver offers ``ctx.block_curvature`` (so the first proposal
    can be a rank-k step), else taken from the first line search (the first
    proposal is then a FW step); an objective that gives no curvature
    ``d' H d`` (``curvature`` absent or None) keeps FW steps throughout, as
    does a block with ``L = 0``. ``face``: the
    block's :class:`~fwmodel.engine.inface.LowRankFace` (radius, psd, shape).
    """

    replaces_inface = True  # the driver takes no in-face steps on this block

    def __init__(self, block, face, col_norms2, initial_rank=INITIAL_RANK, max_rank=None, cost_cap=None):
        self.block = block
        self.active = None
        self.radius, self.psd, self.shape = face.radius, face.psd, tuple(face.shape)
        norms2 = np.asarray(col_norms2, dtype=float)
        self.penalty_scale = float(norms2.mean()) if norms2.size else 0.0
        self.curvature_f = None  # L_f, unknown until the driver measured one direction
        self.k = int(initial_rank)
        self.max_rank = int(max_rank) if max_rank is not None else min(self.shape)
        #: None, or the most the rank-k work may cost against the rest of an iteration (rank_k="auto")
        self.cost_cap = cost_cap
        # Y and the rank-k direction's arrays where the step keeps its own (not :meth:`_lean`), reused
        # (a fresh d x d array costs its page faults)
        self._D = None
        self.start = None  # the last step's vectors: the Krylov warm start
        self.losses = 0
        self.pause = 0  # iterations left without trying the rank-k step
        self.pause_length = 1
        self.rng = np.random.default_rng(0)
        self._Y = None
        self.iteration_time = None  # seconds of an iteration outside the rank-k work (a running mean)
        self._last_start = None
        self._last_rank_time = 0.0
        # a lean step forms V - X at the sweep's turn, after its proposal: that time (rank-k work,
        # proportional to the kept rank) is added to the step's at the next proposal, and k's cost
        # cap is applied then (``_cap_after``: the k the step used), with the same information
        self._formation_time = 0.0  # seconds spent forming V - X since the last proposal
        self._formation_per_rank = 0.0  # the last formation's seconds per kept rank (the estimate of the next)
        self._cap_after = None
        #: what the last proposals did, for benchmarks: k and the prox rank of the last rank-k step
        self.last_rank = 0
        self.rank_k_steps = 0

    def _curvature(self, lam):
        if self.curvature_f is None:
            return None
        L = lam * self.penalty_scale + self.curvature_f
        return L if L > 0 and np.isfinite(L) else None

    def propose(self, x_k, g_k, ctx):
        now = time.perf_counter()
        self._last_rank_time += self._formation_time
        if self._cap_after is not None:  # a lean step's cap, now that its whole rank-k work is known
            self._cap_rank(self._cap_after)
        if self._last_start is not None:  # an iteration without the rank-k work: the FW step's cost
            spent = max(now - self._last_start - self._last_rank_time, 1e-9)
            self.iteration_time = spent if self.iteration_time is None else 0.5 * (self.iteration_time + spent)
        self._last_start, self._last_rank_time, self._formation_time, self._cap_after = now, 0.0, 0.0, None
        s = self.block.lmo(g_k)
        xg = dot(x_k, g_k)
        gap = xg - s.dot(g_k)
        lend = getattr(ctx, "directions", None)
        lean = self._lean(ctx)
        if lean:  # the FW direction formed at the sweep's turn (if taken), ||s - x||^2 from the atom
            fw = Proposal(LazyDirection(_fw_direction, (x_k, s), lend, self.block), 1.0, "fw", gap, s, slope=-gap)
            xx = dot(x_k, x_k)
            fw_norm2 = _fw_norm2(x_k, s, xx)
        else:
            d_fw = _fw_direction(x_k, s, out=lend.direction(self.block) if lend is not None else None)
            fw = Proposal(d_fw, 1.0, "fw", gap, s)
            fw_norm2 = dot(d_fw, d_fw)
        if self.curvature_f is None and gap > 0:
            # the objective's curvature along the FW direction, before any line search: the
            # first step can then be a rank-k step already
            self._first_curvature(ctx, None if lean else d_fw, x_k, s)
        L = self._curvature(ctx.lam)
        if L is None or gap <= 0:
            return fw
        if self.pause > 0:
            self.pause -= 1
            return fw
        t0 = time.perf_counter()
        k_used = min(self.k, self.max_rank)
        if lean:
            d_rank, slope_rank, rank_norm2 = self._lean_rank_k_direction(x_k, g_k, L, s, xg, xx, lend)
        else:
            if self._Y is None:
                self._Y, self._D = np.empty(self.shape), np.empty(self.shape)
            d_rank = self._rank_k_direction(x_k, g_k, L, s, self._Y, self._D)
            slope_rank, rank_norm2 = dot(g_k, d_rank), dot(d_rank, d_rank)
        self._last_rank_time = time.perf_counter() - t0
        if lean:  # V - X is formed later: its time estimated from the last formation's, capped at the next proposal
            self._cap_after = k_used
            rank_time = self._last_rank_time + self._formation_per_rank * self.last_rank
        else:
            self._cap_rank(k_used)
            rank_time = self._last_rank_time
        gain_rank = _model_decrease(slope_rank, L * rank_norm2)
        gain_fw = _model_decrease(-gap, L * fw_norm2)
        # the rank-k work pays when it gains more per second than FW steps do
        t_fw = self.iteration_time if self.iteration_time is not None else rank_time
        pays = gain_rank * t_fw > gain_fw * (t_fw + rank_time)
        if pays:
            self.losses = 0
            self.pause_length = 1
        else:
            self.losses += 1
            if self.losses >= PATIENCE:  # back off: the Krylov products are not paying
                self.pause_length = min(2 * self.pause_length, MAX_PAUSE)
                self.pause = self.pause_length
                self.losses = 0
        if gain_rank > gain_fw:  # already computed: take the better of the two
            self.rank_k_steps += 1
            return Proposal(d_rank, 1.0, "rank_k", gap, slope=slope_rank if lean else None)
        return fw

    def _lean(self, ctx):
        """True where the step keeps no block-size array of its own.

        Where the driver forms directions at the sweep's turn (``ctx.lazy_directions``,
        a Gauss-Seidel sweep) and the block is large (``LARGE_BLOCK`` entries), Y = X - G/L
        is never formed (its Krylov products are X Q - (G Q) / L, :class:`ShiftedMatrix`),
        and both directions, s - X and V - X, are formed only if taken, at the sweep's turn,
        in the driver's shared direction array (:class:`~fwmodel.engine.steps.LazyDirection`);
        their slopes and norms come from the atoms' factors. At d = 4000 that saves three
        128 MB arrays (Y, V - X, s - X). Elsewhere (Jacobi sweeps, whose directions coexist;
        small blocks) the three are kept.
        """
        return (getattr(ctx, "directions", None) is not None and getattr(ctx, "lazy_directions", False)
                and self.block.size >= LARGE_BLOCK)

    def _first_curvature(self, ctx, d_fw, x_k, atom):
        """The objective's curvature per unit squared step on the block, before the first line search:
        along d_fw (formed), from the block's Hessian c I where the objective knows it
        (``ctx.block_hessian``: no direction formed), else along a FW direction formed for it."""
        measure = getattr(ctx, "block_curvature", None)
        if d_fw is None:
            hessian = getattr(ctx, "block_hessian", None)
            c = hessian(self.block) if hessian is not None else None
            if c is not None:
                self.observe_curvature(c, 1.0)
                return
            if measure is None:
                return
            d_fw = _fw_direction(x_k, atom)  # a temporary, once per solve
        if measure is not None:
            self.observe_curvature(measure(self.block, d_fw), dot(d_fw, d_fw))
    def _cap_rank(self, k_used):
        """rank_k="auto": the next k so that its predicted Krylov work fits ``cost_cap`` iterations."""
        if self.cost_cap is None or self.iteration_time is None:
            return
        n = min(self.shape)
        per_column = self._last_rank_time / max(min(n, k_used + OVERSAMPLING), 1)
        budget = self.cost_cap * self.iteration_time

        def predicted(k):
            b = min(n, k + OVERSAMPLING)
            return per_column * (n if b >= DENSE_FRACTION * n else b)  # dense: at least a full-width block

        while self.k > INITIAL_RANK and predicted(self.k) > budget:
            self.k = max(INITIAL_RANK, self.k // 2)

    def _rank_k_direction(self, x_k, g_k, L, fw_atom, Y, D):
        """V - X (flat) for the rank-k point V of Y = X - G / L, formed in ``D``; Y formed in ``Y``."""
        shape = self.shape
        X = x_k.reshape(shape)
        Y, D = Y.reshape(shape), D.reshape(shape)
        np.multiply(g_k.reshape(shape), -1.0 / L, out=Y)
        Y += X
        k, symmetric = self._prox_rank_and_symmetry(fw_atom)
        U, s, V = rank_k_prox(Y, self.radius, k, psd=self.psd, symmetric=symmetric,
                              start=self._start_vectors(fw_atom), rng=self.rng)
        kept = self._follow_rank(int(np.count_nonzero(s > 0)), k, U, V)
        Y = None
        return _low_rank_minus(x_k, U[:, :kept] * s[:kept], V[:, :kept], symmetric, D.ravel())

    def _lean_rank_k_direction(self, x_k, g_k, L, fw_atom, xg, xx, lend):
        """(V - X as a lazy direction, its slope <G, V - X>, ||V - X||^2) without a block-size array.

        V = U S V' (orthonormal U, V): <G, V> = sum_i s_i u_i' G v_i and ||V||^2 = ||s||^2, with
        G v_i and X v_i the products the Krylov method carried (``xg`` = <X, G>, ``xx`` = ||X||^2).
        """
        X, G = x_k.reshape(self.shape), g_k.reshape(self.shape)
        k, symmetric = self._prox_rank_and_symmetry(fw_atom)
        start = self._start_vectors(fw_atom)
        self.start = None  # the list is emptied once stacked: the last vectors are not kept through the rounds
        U, s, V, (XV, GV) = rank_k_prox(ShiftedMatrix(X, G, L), self.radius, k, psd=self.psd, symmetric=symmetric,
                                        start=start, rng=self.rng, products=True)
        kept = self._follow_rank(int(np.count_nonzero(s > 0)), k, U, V)
        Uk, sk = U[:, :kept], s[:kept]
        xs = float(sk @ np.einsum("ij,ij->j", Uk, XV[:, :kept]))  # <X, V>
        gs = float(sk @ np.einsum("ij,ij->j", Uk, GV[:, :kept]))  # <G, V>
        norm2 = max(float(sk @ sk) - 2.0 * xs + xx, 0.0)
        d = LazyDirection(self._form_low_rank_minus, (x_k, Uk * sk, V[:, :kept], symmetric), lend, self.block)
        return d, gs - xg, norm2

    def _form_low_rank_minus(self, x_k, US, V, symmetric, out):
        """:func:`_low_rank_minus`, timed: rank-k work (see ``_formation_time``)."""
        t0 = time.perf_counter()
        _low_rank_minus(x_k, US, V, symmetric, out)
        elapsed = time.perf_counter() - t0
        self._formation_time += elapsed
        self._formation_per_rank = elapsed / max(US.shape[1], 1)
        return out

    def _prox_rank_and_symmetry(self, fw_atom):
        """k for this step, and whether V is taken symmetric: a symmetric LMO vertex (u is v) means a
        symmetric gradient, or a set of symmetric matrices (sym(Y)'s eigenpairs)."""
        symmetric = self.psd or (getattr(fw_atom, "u", None) is not None and fw_atom.u is fw_atom.v)
        return min(self.k, self.max_rank), symmetric

    def _follow_rank(self, kept, k, U, V):
        """k follows the rank the prox wants (doubled while every value is kept, else a margin);
        the vectors are the next warm start. Returns ``kept``."""
        self.last_rank = kept
        if kept >= k:
            self.k = min(2 * k, self.max_rank)
        else:
            self.k = max(INITIAL_RANK, min(self.max_rank, kept + OVERSAMPLING))
        self.start = V if V is not None else U
        return kept

    def _start_vectors(self, fw_atom):
        """The Krylov warm start: the last step's vectors and the LMO's vector, as a list of blocks
        (not stacked here: a stacked copy would stay alive through the Krylov rounds)."""
        cols = []
        if self.start is not None:
            cols.append(self.start)
        v = getattr(fw_atom, "v", None)
        if v is not None and np.ndim(v) == 1:
            cols.append(np.asarray(v, dtype=float)[:, None])
        return cols or None

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        """Record the objective's curvature per unit squared step along the block's last direction."""
        if d_norm2 > 0 and c_f is not None and np.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2
