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
k + OVERSAMPLING from the last step's counted work (see "Costs" below),
must stay within ``AUTO_COST_CAP`` times the rest of an iteration,
or, on a block without equality rows or ties to other copies, more where the
last step's gain pays for more, never above ``AUTO_MAX_COST`` (on the paper's covariance
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
better one is proposed. When the rank-k step's model decrease per unit of
cost (its block Krylov work added to an iteration's) falls below the FW
step's ``PATIENCE`` times in a row, it pauses for 2, 4, ... iterations
(its products are then saved).

Costs. Every decision above is taken from operation counts, never from the
clock, so that a solve takes the same steps on every run (timed decisions
flipped on noise: the same 1000 x 1100 least squares over the ball took 7
to 308 iterations from run to run). The unit is one pass over an array of
the block's size (m n entries); the counts are exact and the prices fixed:

* a rank-k step: the columns of its block products with the block's
  matrices, counted (``BLOCK_COLUMN_COST`` each: BLAS-3), or its dense
  factorization (``DENSE_EIGH_COST`` / ``DENSE_SVD_COST`` times the smaller
  side), plus forming V - X (its kept rank in columns, and a pass or more);
* the rest of an iteration: the block's LMO at a fixed ``LMO_MATVECS``
  Lanczos products (``MATVEC_COST`` each; not the products it counted: see
  ``LMO_MATVECS``), plus ``ITERATION_PASSES`` passes over the whole product
  space (gradient, directions, line search).

The gains (model decreases of L(., y)) are deterministic already; the
threshold tests compare them per unit of counted cost, with a relative
margin (``PAYS_MARGIN``) so that a near tie neither resets nor adds to the
losses.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas, lapack

from .inface import project_capped_simplex
from .._kernels import mirror_lower_in_place as _mirror_lower, symmetrize_in_place as _symmetrize
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
#: linear in the block size k + OVERSAMPLING, counted on the last step) costs at most
#: max(AUTO_COST_CAP, gain_rank / gain_fw - 1) times the rest of an iteration (the second term:
#: the most a step with the last step's gain may cost and still gain more per unit of cost than FW
#: steps), and never more than AUTO_MAX_COST times; otherwise k shrinks to what fits. 4: the
#: second rank-k step, which adds to the first one's subspace, can gain about as much as a FW step
#: (1.1x on benchmarks/rank_k_repeat.py) while the later ones gain 8-60x; with 1 or 2, k fell back
#: to 4 there and the solve stalled on FW steps
#: A coupled block (a copy tied to other copies, or under the model's equality rows) has the same
#: budget but no gain extension (see :meth:`RankKStep._cap_rank`). On the paper's problem at
#: d = 4000 the budget of 4 lets k reach 64 (2 kept it at 32): the average of the two copies then
#: holds a support F1 of 0.63-0.66 from iteration 25 on instead of 0.53-0.61, at 1.4-1.5x the time
#: per iteration (the LMO's Lanczos runs grow too: 2.6-2.8x the two LMOs) and a peak of 8.08 d x d
#: arrays instead of 8.04 (benchmarks/RESULTS.md, "Support F1 and the rank-k budget (round 10)";
#: k capped at 48 gave 0.58-0.63)
AUTO_COST_CAP = 4.0
AUTO_MAX_COST = 64.0
#: the cost model (module docstring, "Costs"), in passes over an array of the block's size.
#: Measured single-threaded at d = 1000-2000 (benchmarks/RESULTS.md, "Rank-k steps by counted
#: cost"): a column of a thin block product 0.1-0.4 pass, a Lanczos matvec 0.4-0.7, a dense
#: eigendecomposition 0.25 d (0.9 d at d = 1000, where a pass runs from cache), an SVD 0.55 d (2 d)
BLOCK_COLUMN_COST = 0.25
MATVEC_COST = 1.0
DENSE_EIGH_COST = 0.25
DENSE_SVD_COST = 0.6
#: passes over the product space in an iteration outside the LMOs and the rank-k work
ITERATION_PASSES = 10.0
#: the price of the block's LMO, in Lanczos matvecs: fixed, not counted. Priced by the products
#: each call counted (10 to 576 per call on the paper's problem at d = 1000, 130 on average), the
#: budgets below let k reach 64 by iteration 7 at d = 4000, and past iteration 30 an iteration took 3.5-8x
#: longer and the estimate error rose from 0.339 to 0.345 (benchmarks/RESULTS.md, "Pricing the LMO
#: by its counted products (round 9)"); the budgets were tuned at this price
LMO_MATVECS = 30
#: the pays test's relative margin: within it, a rank-k step neither resets nor adds to the losses
PAYS_MARGIN = 0.1
#: first k, and the extra Krylov vectors kept beyond k (oversampling)
INITIAL_RANK = 4
OVERSAMPLING = 4
#: Gaussian columns at least in a Krylov start (:func:`_start_block`): as many as a step whose k is
#: unchanged gets anyway (its start, the last k vectors and the LMO's vector, leaves
#: OVERSAMPLING - 1 of its k + OVERSAMPLING columns to them), so only a step whose k shrinks by
#: more than that has a start that differs
FRESH_COLUMNS = OVERSAMPLING - 1
#: block Krylov rounds at most per step, and the relative change of the k values that stops them
MAX_ROUNDS = 4
RITZ_RTOL = 1e-4
#: from this fraction of the smaller side on, a dense factorization of Y is cheaper than Krylov
DENSE_FRACTION = 0.3
#: the rank-k step, when it loses to FW this many times in a row, pauses for 2, 4, 8, ... iterations
PATIENCE = 3
MAX_PAUSE = 64
# <G, V> read as L (<X, V> - <Y, V>) (Y = X - G / L formed over G) is known to about
# SLOPE_ROUNDING * eps * L ||X|| ||V||: Y's entries are rounded to eps |X_ij|. A rank-k slope within
# SLOPE_TRUST of that bound is not trusted, and the step falls back to the FW direction
SLOPE_ROUNDING = 16.0
SLOPE_TRUST = 1e3
# ||V - X||^2 = ||s||^2 - 2 <X, V> + ||X||^2 from the factors is rounded to about eps (||s||^2 + ||X||^2)
# times a small factor; the sweep's line search takes it instead of a pass over V - X only where it is
# at least NORM_TRUST of that sum (a relative rounding of 1e-9 or less)
NORM_TRUST = 1e-6


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


class SingleProducts:
    """A symmetric matrix held in float32 (:func:`single_in_place`), whose block Krylov products are
    taken by ``sgemm``: the operator of a large symmetric rank-k step's Krylov rounds.

    A lean rank-k step's Krylov products with ``Y`` are five d x (k + OVERSAMPLING) products per
    step at d = 4000 (the start and ``MAX_ROUNDS`` rounds), each bound by its flops and by reading
    Y: the largest cost of an iteration after the two LMOs. On a float32 copy (half the bytes to
    read, twice the flops per cycle) each takes about half the time (d = 4000, 36 columns: 0.024 s
    against 0.045 s, single-threaded). The products are rounded to about eps32 ||Y||_F (a Rayleigh
    quotient u' Y u of the result's vectors, from float32 products against float64 ones, differed by
    1e-8 to 3.5e-8 of ||Y||_F on the paper's problem at d = 2000, that is 0.1-0.3 eps32), far below
    what the rounds leave anyway (they stop at ``RITZ_RTOL`` = 1e-4 or at ``MAX_ROUNDS``); the Ritz
    vectors stay orthonormal in float64 (QR and Rayleigh-Ritz are float64), so the rank-k point is
    in the ball as before. The step's slope reads the carried products (``Y V``), so its rounding
    bound is float32's (:meth:`RankKStep._lean_rank_k_direction`).

    ``rounding``: the relative size below which a column of ``A Q - Q Q' A Q`` is taken as
    rounding noise (:func:`_extend_in_place`): float32's, with a margin (a column of float32 noise
    above float64's threshold would be orthogonalized into the basis as a direction).
    """

    rounding = 1e-5

    def __init__(self, A32):
        self.terms = (A32,)
        self.shape = A32.shape
        self._scratch = {}

    @staticmethod
    def combine(products):
        return products[0]

    def product_into(self, Q, out):
        """out <- A Q by ``sgemm`` (Q rounded to float32), widened to float64."""
        cols = Q.shape[1]
        if cols not in self._scratch:
            self._scratch = {cols: (np.empty((Q.shape[0], cols), dtype=np.float32, order="F"),
                                    np.empty((self.shape[0], cols), dtype=np.float32, order="F"))}
        q32, p32 = self._scratch[cols]
        np.copyto(q32, Q, casting="same_kind")
        np.matmul(self.terms[0], q32, out=p32)
        np.copyto(out, p32)
        return out

    @property
    def T(self):
        return self  # symmetric

    def dense(self):
        return self.terms[0].astype(np.float64)


#: entries per chunk of :func:`single_in_place` (the chunk's float64 norm read from cache)
_SINGLE_CHUNK = 1 << 15


def single_in_place(A):
    """A (float64, C-contiguous, square) rounded to float32 in its own memory (the first half of its
    bytes), chunk by chunk; returns (the float32 matrix, ||A||_F^2 of the float64 entries).

    A's float64 content is gone. Entry i is written at byte 4 i after entries up to 2 i were read:
    from the second chunk on, a chunk's writes land on entries already read; the first chunk, whose
    writes overlap its own reads, goes through a temporary. No new array of A's size: a fresh one
    cost its page faults at every step (0.06 s for 64 MB at d = 4000, as much as its products saved).
    """
    flat = A.reshape(-1)
    n = flat.size
    single = flat.view(np.float32)[:n]
    total = 0.0
    for start in range(0, n, _SINGLE_CHUNK):
        stop = min(start + _SINGLE_CHUNK, n)
        part = flat[start:stop]
        total += float(np.dot(part, part))
        if start == 0:
            single[start:stop] = part.astype(np.float32)
        else:
            np.copyto(single[start:stop], part, casting="same_kind")
    return single.reshape(A.shape), total


#: a lean rank-k step on a symmetric block (eigenpairs) of at least this many rows takes its Krylov
#: products in single precision (:class:`SingleProducts`); None: never (the default). Measured on
#: the paper's problem at d = 4000 (benchmarks/RESULTS.md, "Krylov products in single precision"):
#: 0.04-0.23 s less per loop iteration outside the LMOs (three runs), but the iterates part from the
#: float64 ones within a few steps (objective 0.9 % apart at iteration 15), and the Fig. 2 race's average lost
#: support F1 from iteration 24 on (0.619 against 0.651 at iteration 29). Over four data draws
#: (seeds 0-3, "Krylov products in float32 over four data draws"): the trace-norm copy's estimate
#: fell back once (error +0.01, its F1 to about 0.3, recovered over about 7 iterations) in all four
#: float32 races against two of the four float64 ones, and the average's F1 over iterations 24-40
#: was 0.015 lower on the mean (-0.031 .. +0.010): off, the float64 products stay the default
SINGLE_PRODUCTS_MIN_DIM = None
#: the rounding of the slope read from float32 products, in units of eps32 ||Y||_F per unit of
#: sum(s) (measured 0.1-0.3; see :class:`SingleProducts`), and the least multiple of it that a slope
#: must reach to be trusted (its relative rounding then about 1e-3 or less; the step size follows
#: it, a 1e-3 error changes the step's decrease by 1e-6 of itself). Below, the FW direction.
SINGLE_SLOPE_ROUNDING = 1.0
SINGLE_SLOPE_TRUST = 100.0


def _operator(A):
    return A if isinstance(A, (ShiftedMatrix, SingleProducts)) else _Plain(A)


class KrylovWork:
    """What a rank-k prox computed, counted: columns of block products with the operator's terms,
    and the side of a dense factorization (``dense``: "eigh" or "svd"), for the cost model."""

    def __init__(self):
        self.columns = 0
        self.dense = None
        self.dense_dim = 0

    def cost(self):
        """In passes over an array of the operator's size (module docstring, "Costs")."""
        per_dim = {"eigh": DENSE_EIGH_COST, "svd": DENSE_SVD_COST}.get(self.dense, 0.0)
        return BLOCK_COLUMN_COST * self.columns + per_dim * self.dense_dim


def _times(op, Q, work=None):
    """The products of each of ``op``'s terms with Q (counted in ``work``)."""
    if work is not None:
        work.columns += Q.shape[1] * len(op.terms)
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
    """Indices of the k extreme values: "LA" largest, "SA" smallest, "LM" largest magnitude."""
    key = values if which == "LA" else -values if which == "SA" else np.abs(values)
    return np.argsort(key)[::-1][:k]


def _start_block(n, b, start, rng):
    """An orthonormal n x b starting block: the ``start`` columns (the previous Ritz vectors; an
    array, or a list of arrays whose columns are taken in order, emptied once they are stacked),
    completed by Gaussian vectors (drawn from ``rng``: seeded per solve, reproducible).

    At least ``FRESH_COLUMNS`` columns are Gaussian (all, if b is smaller), whatever the start.
    The previous vectors alone can span an invariant subspace of the new matrix (or nearly one),
    and Rayleigh-Ritz on ``span[Q, A Q]`` then never leaves it: with a start of b old vectors on
    a 200 x 200 matrix whose three top eigenvectors were new, the block Krylov method returned
    1.0, 0.97, ... instead of 2.0, 1.9, 1.8 (tests/test_rank_k.py). A Gaussian column has a
    component along every eigenvector; after four rounds, one found 1.92, 1.08, 1.0 (the rank-k
    point 80 % off), two 1.99, 1.88, 1.0 (50 %), three 1.999, 1.900, 1.793 (7 %). Where the
    start has more columns than that leaves room for, its first ones are kept (the previous
    vectors come by decreasing value).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    parts = [] if start is None else (start if isinstance(start, list) else [start])
    cols = [np.asarray(part, dtype=float).reshape(n, -1) for part in parts]
    have = sum(c.shape[1] for c in cols)
    if isinstance(start, list):  # consumed: the caller's last references to the blocks can go
        start.clear()
    parts = None
    fresh = min(FRESH_COLUMNS, b)
    if have <= b - fresh:
        cols.append(rng.standard_normal((n, b - have)))
        stacked = np.hstack(cols)
        cols = None
        return _orth(stacked)[:, :b]
    stacked = np.hstack(cols)[:, :b - fresh]
    cols = None
    Q = _orth(np.hstack([stacked, rng.standard_normal((n, fresh))]))
    while Q.shape[1] < b:  # a dependent start column was dropped: Gaussian columns fill its place
        Q = _orth(np.hstack([Q, rng.standard_normal((n, b - Q.shape[1]))]))
    return Q[:, :b]


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


def _eigenpairs(op, k, which, start, rng, max_rounds, rtol, work=None):
    """:func:`top_eigenpairs` on an operator; also returns the products of its terms with the vectors.

    Block Krylov with Rayleigh-Ritz (the rank-k oracle's top-k pairs in
    BlockFW, Allen-Zhu, Hazan, Hu & Li 2017; block Krylov iterations as in
    Musco & Musco 2015), ``b = k + OVERSAMPLING`` vectors. Each round:

    1. extend the Ritz vectors Q by the new orthonormal directions W of
       span[Q, A Q] (:func:`_extend_in_place`), K = [Q, W];
    2. one product with A, of W only: ``A K = [A Q, A W]`` with ``A Q``
       carried from the last round (the Ritz vectors are ``K C``, so their
       products are ``(A K) C``);
    3. Rayleigh-Ritz: the eigenpairs (w, C) of ``sym(K' A K)``, the b extreme
       ones kept; ``Q <- K C``, ``A Q <- (A K) C``;
    4. stop once the k values change by at most ``rtol`` of the largest.

    From ``DENSE_FRACTION`` of n on, a dense eigendecomposition is cheaper
    and replaces the rounds.

    Memory: the thin blocks are what a rank-k step adds to an iteration's
    (Y itself is never formed: :class:`ShiftedMatrix`). Two arrays of 2b
    columns, allocated once per call, hold K and ``A K``: ``A W`` is written
    in place (``product_into``), the QR is LAPACK's in W's own memory, the
    rotations go a block of rows at a time, and at the end the arrays shrink
    to their first k columns without a copy. About 4 b columns at the peak
    (a version with fresh arrays per round held about 16 b). The terms'
    products with the k vectors (``X V``, ``G V``: the step's slopes) are two
    thin products of k columns at the end; a one-term operator's is ``A K``'s
    first k columns.
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
        if work is not None:
            work.dense, work.dense_dim = "eigh", n
        return w[idx], V, tuple(_times(op, V, work))
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
    if work is not None:  # counted as in :func:`_times`: each term's product with each column
        work.columns += b * len(op.terms)
    scratch = np.empty((min(n, _ROTATION_ROWS), b), order="F")
    previous = values = None
    for _ in range(max_rounds):
        W = K[:, b:]
        np.copyto(W, AK[:, :b])  # A Q, then the new directions in its place
        w = _extend_in_place(K[:, :b], W, getattr(op, "rounding", 1e-10))
        m = b + w
        if w:
            op.product_into(K[:, b:m], AK[:, b:m])
            if work is not None:
                work.columns += w * len(op.terms)
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
    return values, vectors, tuple(_times(op, vectors, work))


#: rows per block of the in-place rotations Q <- K C of :func:`_eigenpairs`
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


def _extend_in_place(Q, W, rounding=1e-10):
    """:func:`_extend` in place: W (column-major, holding A Q) receives the orthonormal columns that
    extend Q to span[Q, A Q], packed to the left; returns their number.

    The same steps: the projection ``W - Q (Q' W)`` (BLAS ``dgemm`` with
    ``beta = 1``, no temporary of W's size), the columns left with rounding
    noise dropped, then QR (LAPACK's ``geqrf`` / ``orgqr`` in W's own
    memory) and the projection and QR once more.
    """
    top = float(np.sqrt(_column_norms2(W).max(initial=0.0)))
    blas.dgemm(-1.0, Q, Q.T @ W, beta=1.0, c=W, overwrite_c=1)
    w = _pack_columns(W, np.sqrt(_column_norms2(W)) > rounding * max(top, 1e-300))
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


def _singular_triplets(op, k, start, rng, max_rounds, rtol, work=None):
    """:func:`top_singular_triplets` on an operator; also returns its terms' products with V.

    Two products per round: ``A' (A Q)`` and ``A W`` (``A Q`` carried from the last round as ``(A K) C``).
    """
    m, n = op.shape
    b = min(m, n, k + OVERSAMPLING)
    if b >= DENSE_FRACTION * min(m, n):
        U, s, Vt = np.linalg.svd(op.dense(), full_matrices=False)
        V = Vt[:k].T
        if work is not None:
            work.dense, work.dense_dim = "svd", min(m, n)
        return U[:, :k], s[:k], V, tuple(_times(op, V, work))
    opT = op.T
    Q = _start_block(n, b, start, rng)
    PQ = _times(op, Q, work)
    previous = None
    for _ in range(max_rounds):
        W = _extend(Q, opT.combine(_times(opT, op.combine(PQ), work)))
        K = np.hstack([Q, W])
        PK = [np.hstack([p, pw]) for p, pw in zip(PQ, _times(op, W, work))]
        P, s, Wt = np.linalg.svd(op.combine(PK), full_matrices=False)
        C = Wt[:b].T
        U, Q = P[:, :b], K @ C
        PQ = [p @ C for p in PK]
        values = s[:k]
        if previous is not None and np.max(np.abs(values - previous)) <= rtol * max(float(s[0]), 1e-300):
            break
        previous = values
    return U[:, :k], s[:k], Q[:, :k], tuple(p[:, :k] for p in PQ)


def rank_k_prox(Y, radius, k, psd=False, symmetric=False, start=None, rng=None, products=False, work=None,
                scale=1.0):
    """The nearest point to Y of rank at most k in the trace-norm ball (Allen-Zhu et al. 2017, Lemma 3.1).

    ``psd``: over the PSD trace ball (Y's symmetric part is used);
    ``symmetric``: over symmetric matrices of the nuclear ball. Returns
    ``(U, s, V)``: the point is ``U diag(s) V'``, with ``s >= 0`` (signs of
    a symmetric point folded into V = U * sign), and the k-th and later
    values of s zero when the result is the projection onto the whole ball.
    Y may be a :class:`ShiftedMatrix`; ``products``: also return the
    products of its terms with V (for Y = X - G / L: ``(X V, G V)``);
    ``work``: a :class:`KrylovWork` that counts the products and factorizations.
    ``scale`` (nonzero): the point is that of ``scale * Y`` (``Y`` given unscaled: a lean step forms
    ``G - L X = -L (X - G / L)`` in one BLAS axpy over G); the values and the products are scaled.
    """
    op = _operator(Y)
    if psd or symmetric:
        # the eigenpairs of sym(Y) read from Y itself (its Rayleigh-Ritz matrices are symmetrized):
        # no d x d pass to test or form the symmetric part
        which = ("LA" if scale > 0 else "SA") if psd else "LM"
        values, U, PU = _eigenpairs(op, k, which, start, rng, MAX_ROUNDS, RITZ_RTOL, work)
        if scale != 1.0:
            values = values * scale
            for p in PU:
                p *= scale
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
        U, sigma, V, PV = _singular_triplets(op, k, start, rng, MAX_ROUNDS, RITZ_RTOL, work)
        if scale != 1.0:  # scale Y = (scale U) sigma V' = (sign U) (|scale| sigma) V'
            sigma = sigma * abs(scale)
            if scale < 0:
                U = -U
            PV = tuple(p * scale for p in PV)
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


def _overwritable_gradient(g_k, lend, block):
    """Whether a proposal may overwrite ``g_k``: it is the array the block's lazy directions are formed in
    (``lend.shared_direction``, the driver's per-block gradient of L on a large block), so the sweep
    reads the proposal's slope, never g_k, and writes the taken direction over it (engine/steps.py)."""
    shared = getattr(lend, "shared_direction", None)
    if shared is None or type(g_k) is not np.ndarray or not g_k.flags.c_contiguous:
        return False
    array = shared(block)
    return array.size == g_k.size and array.ctypes.data == g_k.ctypes.data


def _low_rank_minus(x_k, U, s, V, symmetric, out):
    """``out`` <- U S V' - X (flat; S = diag(s); ``x_k`` None: U S V' alone): a lean rank-k step's
    direction, formed at the sweep's turn.

    ``symmetric`` (V = U up to the signs of its columns, :func:`rank_k_prox`): the symmetric matrix
    ``sum_i s_i sign_i u_i u_i'`` by BLAS ``dsyrk`` on ``W = U sqrt(s)`` (one triangle: half the
    flops of the product U S V'), mirrored (:func:`~fwmodel._kernels.mirror_lower_in_place`):
    exactly symmetric, as rounding must not build up an asymmetry of X, without the
    symmetrization pass that ``(D + D') / 2`` needed after the full product (at d = 4000 the
    product, its symmetrization and ``- X`` took 0.10 s, these 0.06 s; the same matrix up to
    rounding).
    """
    n = U.shape[0]
    D = out.reshape(n, V.shape[0])
    if not symmetric or n != V.shape[0] or D.dtype != np.float64 or not D.flags.c_contiguous:
        np.matmul(U * s, V.T, out=D)
        if symmetric:  # exactly symmetric: rounding must not build up an asymmetry
            _symmetrize(D)
    else:
        # the signs of V's columns against U's (V = U * signs exactly: each product is +-||u_i||^2)
        negative = np.einsum("ij,ij->j", U, V) < 0 if V is not U else np.zeros(s.size, dtype=bool)
        lower = D.T  # column-major: its upper triangle is D's lower one
        beta = 0.0
        for part, alpha in ((~negative, 1.0), (negative, -1.0)):
            part = part & (s > 0)
            if not part.any():
                continue
            W = np.asfortranarray(U[:, part] * np.sqrt(s[part]))
            C = blas.dsyrk(alpha, W, beta=beta, c=lower, lower=0, overwrite_c=1)
            if not np.shares_memory(C, lower):  # not expected for a column-major float64 array
                raise RuntimeError("rank-k direction: in-place dsyrk failed")
            beta = 1.0
        if beta == 0.0:  # no value: the zero matrix
            D.fill(0.0)
        else:
            _mirror_lower(D)
    if x_k is not None:
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

    A face over an affine map (the ball of ``z = a x + c``, ``face.affine``)
    takes the prox in z: with ``G_z = G / a`` and ``L_z = L / a^2``,
    ``Y_z = Z - G_z / L_z = a Y + c``, and the step ``V - Z`` moves x by
    ``(V - c) / a - X``. Such a block keeps its own arrays (no lean step).
    """

    replaces_inface = True  # the driver takes no in-face steps on this block
    #: a lean proposal reads ||x_k||^2 (``ctx.point_norm2``: the driver measures it once for both)
    reads_point_norm2 = True

    def __init__(self, block, face, col_norms2, initial_rank=INITIAL_RANK, max_rank=None, cost_cap=None,
                 coupled=False):
        self.block = block
        self.active = None
        self.radius, self.psd, self.shape = face.radius, face.psd, tuple(face.shape)
        self.face = face
        norms2 = np.asarray(col_norms2, dtype=float)
        self.penalty_scale = float(norms2.mean()) if norms2.size else 0.0
        self.curvature_f = None  # L_f, unknown until the driver measured one direction
        self.k = int(initial_rank)
        self.max_rank = int(max_rank) if max_rank is not None else min(self.shape)
        #: None, or the least budget for the rank-k work against the rest of an iteration (rank_k="auto")
        self.cost_cap = cost_cap
        #: the problem's M has rows (consistency rows tying copies, or the model's equality rows):
        #: the dual must follow the block's steps; see :meth:`_cap_rank`
        self.coupled = coupled
        # Y and the rank-k direction's arrays where the step keeps its own (not :meth:`_lean`), reused
        # (a fresh d x d array costs its page faults)
        self._D = None
        self.start = None  # the last step's vectors: the Krylov warm start
        self.losses = 0
        self.pause = 0  # iterations left without trying the rank-k step
        self.pause_length = 1
        self.rng = np.random.default_rng(0)
        self._Y = None
        #: the cost of an iteration outside the rank-k work, in passes over the block (a running mean;
        #: module docstring, "Costs")
        self.iteration_cost = None
        #: the last rank-k step's counted work (Krylov products, dense factorization, forming V - X)
        self.last_work = None
        self.last_rank_cost = 0.0
        self._symmetric = self.psd  # whether the last prox was over symmetric matrices (eigenpairs)
        #: what the last proposals did, for benchmarks: k and the prox rank of the last rank-k step
        self.last_rank = 0
        self.rank_k_steps = 0
        self.last_values2 = 0.0  # ||s||^2 of the last lean rank-k point (its ||V||^2)

    def _curvature(self, lam):
        if self.curvature_f is None:
            return None
        L = lam * self.penalty_scale + self.curvature_f
        return L if L > 0 and np.isfinite(L) else None

    def _observe_iteration_cost(self, ctx):
        """The cost of this iteration outside the rank-k work (module docstring, "Costs"): the LMO at its
        fixed price ``LMO_MATVECS`` and ``ITERATION_PASSES`` passes over the product space."""
        lmo = MATVEC_COST * LMO_MATVECS  # a fixed price (see LMO_MATVECS)
        size = max(int(np.prod(self.shape)), 1)
        space = getattr(ctx, "space_size", None) or size
        cost = lmo + ITERATION_PASSES * space / size
        self.iteration_cost = cost if self.iteration_cost is None else 0.5 * (self.iteration_cost + cost)

    def propose(self, x_k, g_k, ctx):
        s = self.block.lmo(g_k)
        self._observe_iteration_cost(ctx)
        xg = dot(x_k, g_k)
        gap = xg - s.dot(g_k)
        lend = getattr(ctx, "directions", None)
        lean = self._lean(ctx)
        if lean:  # the FW direction formed at the sweep's turn (if taken), ||s - x||^2 from the atom
            fw = Proposal(LazyDirection(_fw_direction, (x_k, s), lend, self.block), 1.0, "fw", gap, s, slope=-gap)
            # ||X||^2: the driver's where it measured it for ||x|| at this point (the same dot)
            point_norm2 = getattr(ctx, "point_norm2", None)
            xx = point_norm2(self.block, x_k) if point_norm2 is not None else dot(x_k, x_k)
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
        k_used = min(self.k, self.max_rank)
        work = KrylovWork()
        if lean:
            over_gradient = _overwritable_gradient(g_k, lend, self.block)
            d_rank, slope_rank, rank_norm2 = self._lean_rank_k_direction(x_k, g_k, L, s, xg, xx, lend, work)
            if slope_rank is None:  # the slope drowned in Y's rounding (||G|| / L tiny against ||X||)
                self.last_work = work
                return fw
            # V - X formed at the sweep's turn: its product counted below, one pass for - X; and two
            # passes for Y where it is formed over G
            formation = 3.0 if over_gradient else 1.0
        else:
            if self._Y is None:
                self._Y, self._D = np.empty(self.shape), np.empty(self.shape)
            d_rank = self._rank_k_direction(x_k, g_k, L, s, self._Y, self._D, work)
            slope_rank, rank_norm2 = dot(g_k, d_rank), dot(d_rank, d_rank)
            formation = 4.0  # Y formed (two passes), V - X (one), its slope and norm (two dots: one more)
        work.columns += self.last_rank  # U S V' formed: one column per kept rank
        self.last_work = work
        rank_cost = work.cost() + formation
        self.last_rank_cost = rank_cost
        gain_rank = _model_decrease(slope_rank, L * rank_norm2)
        gain_fw = _model_decrease(-gap, L * fw_norm2)
        dense_cost = work.cost() - BLOCK_COLUMN_COST * work.columns
        dense_price = DENSE_EIGH_COST if work.dense == "eigh" or self.psd or self._symmetric else DENSE_SVD_COST
        self._cap_rank(k_used, rank_cost - dense_cost, gain_rank / gain_fw if gain_fw > 0 else np.inf, dense_price)
        # the rank-k work pays when it gains more per unit of counted cost than FW steps do; within
        # PAYS_MARGIN of a tie it neither resets nor adds to the losses
        c_fw = self.iteration_cost
        per_cost_rank, per_cost_fw = gain_rank * c_fw, gain_fw * (c_fw + rank_cost)
        if per_cost_rank > (1.0 + PAYS_MARGIN) * per_cost_fw:
            self.losses = 0
            self.pause_length = 1
        elif per_cost_rank < (1.0 - PAYS_MARGIN) * per_cost_fw:
            self.losses += 1
            if self.losses >= PATIENCE:  # back off: the Krylov products are not paying
                self.pause_length = min(2 * self.pause_length, MAX_PAUSE)
                self.pause = self.pause_length
                self.losses = 0
        if gain_rank > gain_fw:  # already computed: take the better of the two
            self.rank_k_steps += 1
            # ||V - X||^2 from the factors for the sweep's line search where it does not cancel
            # (NORM_TRUST): one pass over the direction less
            trusted = lean and rank_norm2 > NORM_TRUST * (float(self.last_values2) + xx)
            return Proposal(d_rank, 1.0, "rank_k", gap, slope=slope_rank if lean else None,
                            d_norm2=rank_norm2 if trusted else None)
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
                and self.block.size >= LARGE_BLOCK and not self.face.affine)

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

    def _cap_rank(self, k_used, krylov_cost, gain_ratio, dense_price):
        """rank_k="auto": halve k (not below ``INITIAL_RANK``) until its predicted rank-k cost fits the budget.

        ``krylov_cost``: the last step's counted cost (k = ``k_used``) without a dense factorization;
        the prediction is linear in the block width k + OVERSAMPLING, and from ``DENSE_FRACTION`` of
        the smaller side on the dense factorization (``dense_price`` per row of the smaller side)
        and k columns of products. The budget, in iterations (``iteration_cost``): ``cost_cap``, or, on
        a block that is not coupled, more where the last step gained ``gain_ratio`` times the FW
        step's (a step of that gain still gains more per unit of cost as long as it costs at most
        gain_ratio - 1 iterations), at most ``AUTO_MAX_COST``.
        """
        if self.cost_cap is None or not self.iteration_cost:
            return
        n = min(self.shape)
        per_column = krylov_cost / max(min(n, k_used + OVERSAMPLING), 1)
        # A tied copy's gain is a model decrease of L(., y) with the other copies and y fixed; the
        # iteration realizes only part of it (the other copies and the dual must follow; the same
        # holds for a block under the model's equality rows), so only a block of a problem without
        # rows in M may buy a costlier step with its gain (at d = 4000 on the paper's problem the
        # extension let k reach a dense eigendecomposition, 20 iterations' worth, every iteration)
        extension = 0.0 if self.coupled else gain_ratio - 1.0
        budget = min(max(self.cost_cap, extension), AUTO_MAX_COST) * self.iteration_cost

        def predicted(k):
            b = min(n, k + OVERSAMPLING)
            if b >= DENSE_FRACTION * n:  # the factorization, then the terms' products with k vectors and U S V'
                return dense_price * n + 3 * BLOCK_COLUMN_COST * k
            return per_column * b

        while self.k > INITIAL_RANK and predicted(self.k) > budget:
            self.k = max(INITIAL_RANK, self.k // 2)

    def _rank_k_direction(self, x_k, g_k, L, fw_atom, Y, D, work=None):
        """V - X (flat) for the rank-k point V of Y = X - G / L, formed in ``D``; Y formed in ``Y``."""
        shape = self.shape
        X = x_k.reshape(shape)
        Y, D = Y.reshape(shape), D.reshape(shape)
        np.multiply(g_k.reshape(shape), -1.0 / L, out=Y)
        Y += X
        face = self.face
        if face.affine:  # the prox point of the ball's coordinate: Y_z = a Y + c (class docstring)
            Y *= face.scale
            if face.offset is not None:
                Y += face.offset.reshape(shape)
        k, symmetric = self._prox_rank_and_symmetry(fw_atom)
        U, s, V = rank_k_prox(Y, self.radius, k, psd=self.psd, symmetric=symmetric,
                              start=self._start_vectors(fw_atom), rng=self.rng, work=work)
        kept = self._follow_rank(int(np.count_nonzero(s > 0)), k, U, V)
        Y = None
        Uk, sk, Vk = U[:, :kept], s[:kept], V[:, :kept]
        if not face.affine:
            return _low_rank_minus(x_k, Uk, sk, Vk, symmetric, D.ravel())
        # x's step (V - c) / a - X: V - c formed as _low_rank_minus does V - X
        d = _low_rank_minus(face.offset, Uk, sk, Vk, symmetric, D.ravel())
        d /= face.scale
        d -= x_k
        return d

    def _lean_rank_k_direction(self, x_k, g_k, L, fw_atom, xg, xx, lend, work=None):
        """(V - X as a lazy direction, its slope <G, V - X>, ||V - X||^2) without a block-size array.

        V = U S V' (orthonormal U, V): <G, V> = sum_i s_i u_i' G v_i and ||V||^2 = ||s||^2, with
        G v_i and X v_i the products the Krylov method carried (``xg`` = <X, G>, ``xx`` = ||X||^2).

        Where G lives in the array the block's lazy directions are formed in (the driver's per-block
        gradient of L, :func:`_overwritable_gradient`), Y = X - G / L is formed over G (as
        G - L X = -L Y, one axpy; the prox reads it with ``scale = -1 / L``): the Krylov
        products then take one matrix instead of two (:class:`ShiftedMatrix`), and
        <G, V> = L (<X, V> - <Y, V>) from Y V, which the Krylov method carries, and X V.
        That difference cancels where ||G|| / L is small against ||X||: the slope's relative
        rounding grows as eps (L ||X|| / ||G||)^2 (measured on a 150 x 150 instance at
        ||G|| / (L ||X||) = 2e-3 / 2e-5 / 2e-7: 3e-10 / 6e-6 / 4e-2 here, 3e-14 / 5e-12 / 6e-11
        with the two products).
        On the paper's covariance problem (d = 300, rank_k=True) the ratio was 0.8-0.9 at its steps.
        Where the slope is not above SLOPE_TRUST times its rounding bound, (None, None, None) is
        returned and the caller takes the FW direction (G is gone: the slope cannot be redone).
        """
        X, G = x_k.reshape(self.shape), g_k.reshape(self.shape)
        k, symmetric = self._prox_rank_and_symmetry(fw_atom)
        start = self._start_vectors(fw_atom)
        self.start = None  # the list is emptied once stacked: the last vectors are not kept through the rounds
        over_gradient = _overwritable_gradient(g_k, lend, self.block)
        scale = 1.0
        yy = None  # ||G - L X||_F^2 where the Krylov products are taken in float32
        if over_gradient:
            # Y = X - G / L as -1/L times G - L X, formed over G by one BLAS axpy (one pass; G is not
            # read after this proposal, its array receives the direction); the prox takes the scale
            if G.dtype == np.float64 and G.flags.c_contiguous and X.flags.c_contiguous:
                blas.daxpy(X.ravel(), G.ravel(), a=-L)
                scale = -1.0 / L
            else:
                G *= -1.0 / L
                G += X
            operator = G
            n = min(self.shape)
            if ((symmetric or self.psd) and scale != 1.0 and SINGLE_PRODUCTS_MIN_DIM is not None
                    and n >= SINGLE_PRODUCTS_MIN_DIM
                    and G.flags.c_contiguous and min(n, k + OVERSAMPLING) < DENSE_FRACTION * n):
                # the Krylov products in float32, in G's own memory (SingleProducts); ||G - L X||_F for
                # the slope's rounding bound
                single, yy = single_in_place(G)
                operator = SingleProducts(single)
                single = None
        else:
            operator = ShiftedMatrix(X, G, L)
        G = None
        U, s, V, products = rank_k_prox(operator, self.radius, k, psd=self.psd, symmetric=symmetric,
                                        start=start, rng=self.rng, products=True, work=work, scale=scale)
        operator = None
        kept = self._follow_rank(int(np.count_nonzero(s > 0)), k, U, V)
        Uk, sk, Vk = U[:, :kept], s[:kept], V[:, :kept]
        if over_gradient:
            XV = X @ Vk
            if work is not None:
                work.columns += kept
            xs = float(sk @ np.einsum("ij,ij->j", Uk, XV))  # <X, V>
            ys = float(sk @ np.einsum("ij,ij->j", Uk, products[0][:, :kept]))  # <Y, V>
            gs = L * (xs - ys)  # <G, V>, G = L (X - Y)
            rounding = SLOPE_ROUNDING * np.finfo(float).eps * L * np.sqrt(xx * float(sk @ sk))
            if not abs(gs - xg) > SLOPE_TRUST * rounding:
                return None, None, None
            if yy is not None:  # <Y, V> from float32 products: about eps32 ||Y||_F sum(s), ||L Y||_F^2 = yy
                rounding = SINGLE_SLOPE_ROUNDING * float(np.finfo(np.float32).eps) * np.sqrt(yy) * float(np.sum(sk))
                if not abs(gs - xg) > SINGLE_SLOPE_TRUST * rounding:
                    return None, None, None
        else:
            XV, GV = products
            xs = float(sk @ np.einsum("ij,ij->j", Uk, XV[:, :kept]))  # <X, V>
            gs = float(sk @ np.einsum("ij,ij->j", Uk, GV[:, :kept]))  # <G, V>
        self.last_values2 = float(sk @ sk)
        norm2 = max(self.last_values2 - 2.0 * xs + xx, 0.0)
        d = LazyDirection(_low_rank_minus, (x_k, Uk, sk, Vk, symmetric), lend, self.block)
        return d, gs - xg, norm2

    def _prox_rank_and_symmetry(self, fw_atom):
        """k for this step, and whether V is taken symmetric: a symmetric LMO vertex (u is v) means a
        symmetric gradient, or a set of symmetric matrices (sym(Y)'s eigenpairs)."""
        fw_atom = self.face.atom_on_face(fw_atom)
        symmetric = self.psd or (getattr(fw_atom, "u", None) is not None and fw_atom.u is fw_atom.v)
        self._symmetric = symmetric
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
        v = getattr(self.face.atom_on_face(fw_atom), "v", None)
        if v is not None and np.ndim(v) == 1:
            cols.append(np.asarray(v, dtype=float)[:, None])
        return cols or None

    def commit(self, p, gamma):
        pass

    def observe_curvature(self, c_f, d_norm2):
        """Record the objective's curvature per unit squared step along the block's last direction."""
        if d_norm2 > 0 and c_f is not None and np.isfinite(c_f):
            self.curvature_f = max(float(c_f), 0.0) / d_norm2
