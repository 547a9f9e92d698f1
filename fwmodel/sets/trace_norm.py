"""The trace-norm (nuclear-norm) ball and the PSD trace ball, with Lanczos LMOs."""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas

from .._fastest import FasterOf
from .._kernels import max_asymmetry, symmetrize_in_place
from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point, check_flag
from ._thresholds import project_nonnegative_l1
from .atoms import RankOneAtom
from .base import ConvexSet, check_nonnegative, nonnegative_data

#: relative asymmetry below which a direction D is treated as symmetric
_SYM_RTOL = 1e-10
#: entries probed before paying for the randomized symmetry test
_N_PROBES = 16
#: Lanczos vectors kept before an explicit restart from the current Ritz vector
_NCV = 30
#: matrices up to this size fall back to dense LAPACK when Lanczos stalls
_DENSE_FALLBACK = 1500
#: from this side on, matrix-vector products always use the BLAS
_BLAS_MIN_SIDE = 2048
#: LMO eigenvectors kept for the warm-start subspace
_KEEP = 12
#: weight of the other Ritz vectors in the Lanczos start (see TraceNormBall._extreme_eig)
_TILT = 0.05


def _einsum_matvec(A, x):
    return np.einsum("ij,j->i", A, x, optimize=False)


def _blas_matvec(A, x):
    return A @ x


_faster_matvec = FasterOf(_einsum_matvec, _blas_matvec)


def _matvec(A, x):
    """``A @ x`` for a 2-D ``A``: the BLAS on large matrices, otherwise the faster
    of the BLAS and a single-threaded einsum (:class:`fwmodel._fastest.FasterOf`)."""
    if min(A.shape) >= _BLAS_MIN_SIDE:
        return A @ x
    if A.size < 4096:
        return _einsum_matvec(A, x)
    return _faster_matvec(A.size, A, x)


def lanczos_extreme(matvec, v0, which="LM", tol=1e-6, max_matvecs=None, ncv=_NCV, first_product=None, rng=None):
    """One extreme eigenpair of a symmetric operator by restarted Lanczos.

    Lanczos with full reorthogonalization, started from ``v0`` (a warm
    start), stopped at the first step whose Ritz pair ``(theta, u)`` has
    residual ``||A u - theta u|| <= tol * |theta|`` (computed for free from
    the tridiagonal matrix) or whose Ritz value has stalled (relative change
    below ``tol^2``). The tests are made at every step, so a good start costs
    a few products; ARPACK (``eigsh``) builds at least 20 Lanczos vectors per
    call whatever the start. After ``ncv`` steps without convergence Lanczos
    restarts from the current Ritz vector. A residual ``tol`` bounds the
    eigenvalue error by ``(tol * |theta|)^2 / gap``: the Rayleigh quotient
    ``<D, u u^T>`` that the LMO needs is far more accurate than the vector.

    Breakdown. When the Krylov space becomes invariant (``beta_j = 0``)
    before it fills the space, its Ritz values are exact eigenvalues, but
    only of the eigenspaces the start has a component along: a start
    orthogonal to the extreme eigenspace (earlier LMO vectors, on a matrix
    whose extreme eigenvalue is repeated) never sees it. Lanczos then goes on
    from a random vector (drawn from ``rng``) orthogonal to the invariant
    space found, as in Paige's treatment of breakdown (Golub & Van Loan,
    Sec. 10.1): that run reaches every eigenspace of the rest, and once it
    has converged (or broken down in turn: its start had a component along
    every eigenvector) the more extreme of the two answers is returned.
    Only a breakdown changes the course of a run.

    ``which``: "LM" (largest ``|lambda|``), "LA" (largest), "SA" (smallest).
    ``first_product``: ``A @ v0`` when the caller already has it.
    ``rng``: a ``numpy.random.Generator`` for the vector after a breakdown
    (default: seeded with 0, reproducible).
    Returns ``(theta, u, matvecs, converged)``.
    """
    n = v0.size
    ncv = max(1, min(ncv, n))
    if max_matvecs is None:
        max_matvecs = 20 * ncv
    V = np.empty((ncv, n))
    alpha = np.empty(ncv)
    beta = np.empty(ncv)
    v = np.asarray(v0, dtype=float)
    norm = np.linalg.norm(v)
    if not norm > 0 or not np.isfinite(norm):
        v = _random_generator(rng).standard_normal(n)
        norm = np.linalg.norm(v)
        first_product = None
    V[0] = v / norm
    if first_product is not None:
        first_product = first_product / norm
    matvecs = 0
    theta, u = 0.0, V[0].copy()
    # after a breakdown: the invariant space explored (rows, orthonormal) and its extreme Ritz pair
    explored, found = None, None
    scale = 0.0  # the largest |alpha| and beta seen: the operator's size, for the breakdown test
    while True:
        restarted = False
        for j in range(ncv):
            if j == 0 and first_product is not None:
                w = np.array(first_product, dtype=float)
                first_product = None
            else:
                w = np.asarray(matvec(V[j]), dtype=float).ravel()
                matvecs += 1
            if explored is not None:  # the explored space is invariant: only rounding to remove
                w -= _matvec(explored.T, _matvec(explored, w))
            # full reorthogonalization (classical Gram-Schmidt, twice when needed)
            Vj = V[:j + 1]
            h = _matvec(Vj, w)
            w -= _matvec(Vj.T, h)
            before = np.linalg.norm(w)
            h2 = _matvec(Vj, w)
            if np.linalg.norm(h2) > 1e-8 * before:
                w -= _matvec(Vj.T, h2)
                h += h2
            alpha[j] = h[j]
            beta[j] = np.linalg.norm(w)
            if j == 0:
                thetas, S = alpha[:1].copy(), np.ones((1, 1))
            else:  # the small tridiagonal T_j: dense eigh is cheaper than the tridiagonal driver's checks
                T = np.diag(alpha[:j + 1])
                T[np.arange(1, j + 1), np.arange(j)] = beta[:j]  # eigh reads the lower triangle
                thetas, S = np.linalg.eigh(T)
            k = _extreme_index(thetas, which)
            previous, theta = theta, float(thetas[k])
            residual = beta[j] * abs(S[j, k])
            scale = max(scale, abs(alpha[j]), beta[j - 1] if j else 0.0)
            dimension = j + 1 + (0 if explored is None else explored.shape[0])
            invariant = beta[j] <= 1e-12 * max(scale, 1e-300) or dimension == n
            # The Ritz value only moves toward the eigenvalue: once it stalls
            # (relative change below tol^2) its error is about that small, even
            # inside a cluster of eigenvalues, where the vector converges slowly
            # but any vector of the cluster gives the LMO nearly the same value.
            stalled = j > 0 and abs(theta - previous) <= tol * tol * abs(theta)
            if invariant and explored is None and dimension < n:
                # breakdown: go on from a random vector orthogonal to the invariant space found
                found = (theta, _matvec(V[:j + 1].T, S[:, k]))
                explored = V[:j + 1].copy()
                fresh = _random_generator(rng).standard_normal(n)
                for _ in range(2):
                    fresh -= _matvec(explored.T, _matvec(explored, fresh))
                V[0] = fresh / np.linalg.norm(fresh)
                theta = 0.0
                restarted = True
                break
            if residual <= tol * abs(theta) or stalled or invariant or matvecs >= max_matvecs:
                u = _matvec(V[:j + 1].T, S[:, k])
                if found is not None and _extreme_index(np.array([found[0], theta]), which) == 0:
                    theta, u = found
                u /= np.linalg.norm(u)
                return theta, u, matvecs, bool(residual <= tol * abs(theta) or stalled or invariant)
            if j + 1 < ncv:
                V[j + 1] = w / beta[j]
        if restarted:
            continue
        # explicit restart from the current Ritz vector
        u = _matvec(V[:ncv].T, S[:, k])
        V[0] = u / np.linalg.norm(u)


def _extreme_index(thetas, which):
    """Index of the extreme value: "LM" largest ``|theta|``, "LA" largest, "SA" smallest."""
    if which == "LM":
        return int(np.argmax(np.abs(thetas)))
    if which == "LA":
        return int(np.argmax(thetas))
    return int(np.argmin(thetas))


def _random_generator(rng):
    return rng if rng is not None else np.random.default_rng(0)


class InPlaceRankOneAtom(RankOneAtom):
    """``scale * outer(u, v)`` added in place by BLAS ``dger`` (no d x d temporary).

    The base class forms ``np.outer(u, v)`` and adds it: two passes over the
    block and a temporary of its size. ``dger`` updates the matrix in one
    pass, which is what a large (d = 4000) trace-norm block needs.
    """

    def add_to(self, x, weight):
        alpha = weight * self.scale
        if alpha == 0.0:
            return
        X = x.reshape(self.shape)
        if X.size >= 4096 and X.flags.c_contiguous and X.dtype == np.float64 and np.shares_memory(X, x):
            # X^T is Fortran-ordered: X^T += alpha v u^T is X += alpha u v^T
            blas.dger(alpha, self.v, self.u, a=X.T, overwrite_a=1)
        else:
            X += alpha * np.outer(self.u, self.v)


class LanczosWarmStart:
    """What the trace-norm LMO carries from one call to the next: its last vectors, and its random source.

    ``leading``: the last leading vector (the singular-value path's Lanczos
    start); ``recent``: the last ``_KEEP`` LMO eigenvectors, the subspace of
    the Rayleigh-Ritz warm start (:meth:`TraceNormBall._extreme_eig`);
    ``rng``: the generator of the random vector every start carries (a
    fresh one per call, so that no earlier LMO vector can have taken up its
    part of an extreme eigenspace) and of Lanczos's vector after a breakdown
    (:func:`lanczos_extreme`), seeded per warm start: a solve's draws are the
    same on every run. The
    start changes the LMO's vertex within its tolerance ``lmo_tol``, so the
    vertex depends on the calls before it: each solve gets a fresh one
    (:meth:`TraceNormBall.lmo_for_solve`), and a re-solve, or a solve of
    another problem sharing the set (in another thread too), does not see
    an earlier solve's vectors. Direct calls of ``lmo`` and ``lmo_atom``
    share the set's own, which :meth:`TraceNormBall.reset` forgets.
    """

    def __init__(self):
        self.leading = None
        self.recent = []
        self.rng = np.random.default_rng(0)

    def remember(self, u):
        self.leading = u
        if _KEEP:
            self.recent.append(u)
            del self.recent[:-_KEEP]


#: the Lanczos tolerance whose LMO, from a random start, the FW gap and the certificate trust (the default
#: ``lmo_tol``); a solve's warm-started Lanczos LMO has its gap checked at this one (or a tighter ``lmo_tol``)
#: before it ends (:class:`CheckedLmo`)
VERIFIED_LMO_TOL = 1e-6


class CheckedLmo:
    """A solve's warm-started Lanczos LMO, with what the engine needs to check its FW gap.

    Lanczos can end on an eigenpair that is not the extreme one: its Ritz
    residual is small because the start lies close to another eigenvector.
    The vertex is then not the minimizer, the block's FW gap ``<x - s, g>``
    comes out below the true one (negative at times, not always), and a
    solve trusting it stops as "optimal" short of the optimum. At a loose
    ``lmo_tol`` this is common (measured at ``lmo_tol=1e-2`` on a 60 x 50
    nuclear-norm projection: 81x ``tol`` from f*, benchmarks/RESULTS.md). At
    the default ``lmo_tol`` it takes a warm start that sits on an exact
    eigenvector while the direction's new top eigenvector is orthogonal to
    the warm-start span and above the old top value by a relative gap of
    about ``1e-4`` or less: Lanczos then converges (zero residual) to the
    old eigenpair, whatever its tolerance, and the gap is understated by up
    to ``radius * gap * sigma_1``, about the default ``tol`` (measured: 15 of
    16 such cases at gap 1e-4, n = 160 to 1000, benchmarks/lanczos_warm_miss.py).
    The engine (:class:`fwmodel.engine.stopping.LmoCheck`) therefore
    re-measures the gap with :meth:`exact` before it stops as optimal or
    reports a bound, and calls :meth:`tighten` when the check finds the gap
    too small.

    Calling it is the LMO at ``lmo_tol``, warm-started as in
    :meth:`TraceNormBall.lmo_for_solve` (the same calls, and vertices, as a
    solve without the check). :meth:`exact`: the LMO at
    :data:`VERIFIED_LMO_TOL` (or ``lmo_tol`` where tighter), Lanczos from a
    fresh random start (drawn from a generator of its own, seeded per solve:
    solves stay reproducible, and the solve's warm start draws the same
    numbers as without the check), not from the solve's warm start, which
    may hold the missed vector; it leaves that warm start as it is. A random
    start has a component along every eigenvector, so Lanczos finds the
    extreme eigenvalue first.
    """

    def __init__(self, ball):
        self._ball = ball
        self._warm = LanczosWarmStart()
        #: the tolerance of the solve's calls: ``lmo_tol``, until :meth:`tighten` (at most the trusted one)
        self.tol = ball.lmo_tol
        #: the tolerance of :meth:`exact`: the trusted one, or ``lmo_tol`` where tighter
        self.exact_tol = min(ball.lmo_tol, VERIFIED_LMO_TOL)
        self._rng = np.random.default_rng(1)
        self._found = None  # the leading vector of the last exact call (what tighten gives the warm start)

    def __call__(self, flat_direction):
        return self.lmo_atom(flat_direction)

    def lmo_atom(self, flat_direction):  # named as the set's method: profiles by function name count it as before
        return self._ball._atom(flat_direction, self._warm, self.tol)

    def exact(self, flat_direction):
        """The LMO's vertex at :attr:`exact_tol`, from a random start.

        Before the solve's first call (the setup's LMO at the reference
        point, :func:`fwmodel.engine.stopping.objective_gap`), at the trusted
        tolerance, this is that call: its warm start holds no vector yet, so
        it starts from a random vector too, and the solve's draws and
        vertices stay those of a solve without the check.
        """
        if self.tol == self.exact_tol and self._warm.leading is None and not self._warm.recent:
            return self(flat_direction)
        cold = LanczosWarmStart()
        cold.rng = self._rng
        cold.remember(self._rng.standard_normal(min(tuple(self._ball.shape))))
        atom = self._ball._atom(flat_direction, cold, self.exact_tol)
        self._found = cold.leading
        return atom

    def tighten(self):
        """The solve's calls missed what :meth:`exact` found: they run at :attr:`exact_tol` from now on, and the
        warm start takes in the vector the check found.

        A looser tolerance has shown it misses at the accuracy now asked. A
        warm start that missed (at any tolerance) holds eigenvectors of the
        direction that are not the extreme one, and its next calls, on a
        direction that differs little, would miss again: with the found
        vector in its span the Rayleigh-Ritz step starts Lanczos there.
        """
        self.tol = min(self.tol, self.exact_tol)
        if self._found is not None:
            self._warm.remember(self._found)
            self._found = None


class TraceNormBall(ConvexSet):
    """Nuclear-norm ball ``{X : ||X||_* <= radius}`` of a matrix expression.

    With ``psd=True``: ``{X : X symmetric PSD, trace(X) <= radius}`` (on that
    cone the nuclear norm is the trace). With ``symmetric=True``:
    ``{X : X = X^T, ||X||_* <= radius}``.

    LMO (``psd=False``). By duality of the nuclear and spectral norms,
    ``min_{||S||_* <= r} <D, S> = -r * sigma_1(D)``, attained at the rank-one
    matrix ``S = -r * u_1 v_1^T`` built from the leading singular pair of
    ``D``. When ``D`` is symmetric the leading singular pair is an eigenpair:
    with ``lambda`` the eigenvalue of largest ``|lambda|`` and unit
    eigenvector ``u``, ``S = -r * sign(lambda) * u u^T`` gives
    ``<D, S> = -r * |lambda| = -r * sigma_1(D)``, so one symmetric Lanczos run
    replaces the singular value problem (paper Sec. 5, eq. ``LMO_trance_norm``:
    "the matrix D is always symmetric" in eq. ``constrained_sparse_low_rank``).
    Over symmetric matrices (``symmetric=True``) the same formula applies to
    ``sym(D) = (D + D^T) / 2``.

    LMO (``psd=True``). Every ``S`` in the set is symmetric, so
    ``<D, S> = <sym(D), S>``; the extreme points are ``r * u u^T`` for unit
    ``u`` and the origin, and ``<sym(D), r u u^T> = r * u^T sym(D) u`` is
    minimized by the eigenvector of the most negative eigenvalue:
    ``S = r * u u^T`` if that eigenvalue is negative, ``S = 0`` otherwise.
    This is the LMO of the paper's eq. ``LMO_trance_norm`` (Gidel et al.,
    2018, Sec. 5), computed, as the paper suggests, with the Lanczos
    algorithm.

    Computation. Matrices whose smaller side is at most ``dense_threshold``
    use dense LAPACK (``numpy.linalg.eigh`` / ``svd``). Larger ones use
    :func:`lanczos_extreme`, warm-started by a Rayleigh-Ritz step on the span
    of the last LMO vectors (consecutive FW directions differ little, but
    their top eigenvector moves among a few directions) and stopped as soon
    as the Ritz residual is below ``lmo_tol * |theta|`` or the Ritz value
    stalls (an inexact LMO is enough for Frank-Wolfe, and the eigenvalue
    error is quadratic in that residual). A square direction is
    tested for symmetry by a few probed entries and then by one randomized
    product test (``D w`` against ``D^T w``, Freivalds' trick: one extra
    matrix-vector product instead of forming ``D - D^T``); a symmetric one
    takes the eigenvalue path, an asymmetric one Lanczos on the Gram operator
    of its smaller side, as ``scipy.sparse.linalg.svds`` does. No temporary
    of the matrix's size is formed: ``sym(D)`` is applied as
    ``(D v + D^T v) / 2``. The warm start (:class:`LanczosWarmStart`) is
    per solve (:meth:`lmo_for_solve`): solving a problem twice gives the
    same iterates. Direct calls of :meth:`lmo` and :meth:`lmo_atom` share
    the set's own, which :meth:`reset` forgets. The vertex
    is a :class:`RankOneAtom` that adds itself in place (BLAS ``dger``).

    Parameters
    ----------
    expr : a matrix (2-D) expression; square when ``psd`` or ``symmetric``.
    radius : bound on the nuclear norm (on the trace when ``psd=True``), >= 0.
    psd : restrict to symmetric positive semidefinite matrices.
    symmetric : restrict to symmetric matrices.
    lmo_tol : Lanczos stops when the Ritz residual is at most ``lmo_tol * |theta|``
        (0: machine precision). A looser tolerance than the default 1e-6
        makes the solve's LMO calls cheaper, but Lanczos can then stop at an
        eigenpair that is not the extreme one (measured at 1e-2), whose FW gap
        understates the true one; at any tolerance, so can a warm start
        that sits on an eigenvector the direction's new top one (orthogonal
        to it) has overtaken by a relative 1e-4 or less. The solve therefore
        checks the block's gap with the LMO at 1e-6 (or ``lmo_tol`` where
        tighter) from a random start (:class:`CheckedLmo`) before it stops
        as "optimal" or reports ``prob.stats.suboptimality_bound``, and goes
        on, with this block's LMO at that tolerance and its warm start given
        the vector the check found, where the checked gap is above ``tol``
        (between checks the bound is NaN). Not checked where the LMO is
        dense (``dense_threshold``): exact. A ball of an affine expression
        (``X - X0``) passes the check through its map.
    dense_threshold : use dense LAPACK when the smaller side is at most this.
        Default 150: measured on FW-AL iterations of the covariance problem
        (single-threaded BLAS), a warm-started Lanczos LMO took 6.0 ms at
        d = 100 against 1.1 ms for a full ``eigh``, 6.4 against 4.2 ms at
        d = 200, and 13 against 22 ms at d = 400 (clustered eigenvalues near
        the solution cost Lanczos ~60 products per call).
    """

    is_polytope = False

    @property
    def keeps_symmetric(self):
        return self.symmetric

    @property
    def implies_psd(self):
        return self.psd

    def __init__(self, expr, radius=1.0, psd=False, lmo_tol=1e-6, dense_threshold=150, symmetric=False):
        super().__init__(expr)
        shape = tuple(self.shape)
        if len(shape) != 2:
            raise ModelError(
                f"TraceNormBall: the expression must be a matrix (2-D), got shape {shape} for {self.expr!r}"
            )
        self.psd = check_flag("TraceNormBall", "psd", psd)
        self.symmetric = check_flag("TraceNormBall", "symmetric", symmetric) or self.psd
        if self.symmetric and shape[0] != shape[1]:
            what = "psd=True" if self.psd else "symmetric=True"
            raise ModelError(
                f"TraceNormBall({what}): the expression must be a square matrix, got shape {shape} for {self.expr!r}"
            )
        self._store_data("radius", radius, nonnegative_data("radius", "TraceNormBall"))
        self.lmo_tol = check_nonnegative("lmo_tol", lmo_tol, "TraceNormBall")
        if isinstance(dense_threshold, bool) or not isinstance(dense_threshold, (int, np.integer)) or dense_threshold < 0:
            raise ValueError(f"TraceNormBall: dense_threshold must be an integer >= 0, got {dense_threshold!r}")
        self.dense_threshold = int(dense_threshold)
        m, n = shape
        # fixed probe positions for the cheap symmetry rejection (reproducible solves)
        rng = np.random.default_rng(0)
        self._probe_i = rng.integers(0, m, _N_PROBES)
        self._probe_j = rng.integers(0, n, _N_PROBES)
        self._warm = LanczosWarmStart()  # the warm start of direct lmo / lmo_atom calls (not of solves)
        #: Lanczos matrix-vector products of the last LMO call, and in all (diagnostics: any caller's calls)
        self.last_matvecs = 0
        self.total_matvecs = 0

    def reset(self):
        """Forget the Lanczos warm-start vectors of direct :meth:`lmo` / :meth:`lmo_atom` calls
        (each solve starts afresh anyway: :meth:`lmo_for_solve`)."""
        self._warm = LanczosWarmStart()

    # ------------------------------------------------------------ linear algebra
    @staticmethod
    def _start_vector(warm, length):
        """The previous leading vector, tilted toward a fresh random vector, when it fits; else a random vector.

        The random part gives the start a component along every eigenvector
        (see :meth:`_extreme_eig`); it is drawn anew for every call from the
        warm start's generator (reproducible solves).
        """
        fresh = warm.rng.standard_normal(length)
        if warm.leading is not None and warm.leading.size == length:
            return warm.leading + _TILT * fresh / np.linalg.norm(fresh)
        return fresh

    def _use_dense(self, dim):
        return dim <= max(self.dense_threshold, 2)

    def _basis(self, n, warm):
        """Orthonormal basis Q (n x k) of the last LMO vectors and a random vector w, fresh for this call.

        Returns ``(Q, c, w)`` with ``w = Q @ c``. ``w`` is in the span on
        purpose: it gives the warm start a component along every eigenvector
        (see :meth:`_extreme_eig`), and it is the symmetry test's vector
        (:meth:`_products`). It is drawn anew for every call (from the warm
        start's generator: reproducible solves): a fixed one had its
        component along a repeated extreme eigenvalue's eigenspace taken up
        by the earlier LMO vectors, which then spanned none of it, and the
        LMO missed that eigenvalue.
        """
        if warm.recent and warm.recent[0].size != n:
            warm.recent = []
        w = warm.rng.standard_normal(n)
        Q, R = np.linalg.qr(np.column_stack(warm.recent + [w]))
        keep = np.abs(np.diag(R)) > 1e-10 * np.abs(R).max()
        keep[-1] = True  # w itself: never parallel to the previous vectors in practice
        return Q[:, keep], R[keep, -1], w

    def _products(self, D, warm):
        """Symmetry of square ``D`` and the products the eigensolver reuses.

        Returns ``(symmetric, Q, DQ)``: ``Q`` the warm-start basis (or None)
        and ``DQ`` its product with ``D`` (with ``sym(D)`` when ``D`` is not
        symmetric but the set is). Probed entries reject most asymmetric
        ``D`` for free. Otherwise ``D w`` and ``D^T w`` are compared for a
        fixed Gaussian ``w``: for ``D = S + K`` (K antisymmetric) the
        difference is ``2 K w``, of norm about ``2 ||K||_F`` (Freivalds'
        trick), so an asymmetry above ``_SYM_RTOL`` relative is caught with
        overwhelming probability, for two products instead of a pass that
        forms ``D - D^T``; ``D w`` comes in the same matrix product as ``D Q``
        (one pass over ``D`` for all the vectors).
        """
        n = D.shape[0]
        if self._use_dense(n):
            scale = float(np.max(np.abs(D)))
            return bool(np.max(np.abs(D - D.T)) <= _SYM_RTOL * scale), None, None
        a, b = D[self._probe_i, self._probe_j], D[self._probe_j, self._probe_i]
        # relative to the largest probed entry: rounding leaves absolute errors
        # of that size on tiny entries too, which an entrywise test would reject
        probe_scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
        if np.any(np.abs(a - b) > _SYM_RTOL * probe_scale + 1e-300):
            if not self.symmetric:
                return False, None, None  # the singular-value path
            Q, _, _ = self._basis(n, warm)
            return False, Q, 0.5 * (D @ Q + D.T @ Q)
        Q, c, w = self._basis(n, warm)
        DQ = D @ Q
        Dw = DQ @ c
        diff = float(np.linalg.norm(Dw - _matvec(D.T, w)))
        symmetric = diff <= _SYM_RTOL * max(float(np.linalg.norm(Dw)), 1e-300) or diff == 0.0
        if not symmetric:
            if not self.symmetric:
                return False, None, None
            DQ = 0.5 * (DQ + D.T @ Q)
        return symmetric, Q, DQ

    def _extreme_eig(self, D, which, symmetric, warm, Q=None, DQ=None, tol=None):
        """Eigenpair of ``D`` (``symmetric``) or of ``sym(D)``: largest ``|lambda|`` or smallest.

        Warm start: a Rayleigh-Ritz step on the span ``Q`` of the last LMO
        vectors (and of a fresh random vector), then Lanczos from the best
        Ritz vector. Near the solution the gradient's top eigenvalues cluster
        (one per component of the low-rank solution) and the LMO moves among
        their eigenvectors from one iteration to the next, so a single
        previous vector is a poor start while their span contains the answer.
        The start is tilted (weight ``_TILT``) toward the other Ritz vectors:
        after a FW step along ``u u^T`` the old vector ``u`` is often still an
        eigenvector of the new direction but no longer the extreme one, and
        Lanczos started exactly on an eigenvector would stop there. It also
        holds at least ``_TILT`` of the random vector, drawn anew for each
        call (:meth:`_basis`): the span of earlier LMO vectors can miss part
        of a repeated extreme eigenvalue's eigenspace, which a start without
        a random component would never reach (measured: "optimal" 2-3 % above
        f* with a bound of 1e-15, on a projection onto the PSD trace ball of a
        151 x 151 projector). A Krylov space that becomes invariant before
        converging is continued from a random vector (:func:`lanczos_extreme`).

        ``tol``: Lanczos's tolerance (default ``lmo_tol``).
        """
        n = D.shape[0]
        if self._use_dense(n):
            S = D if symmetric else 0.5 * (D + D.T)
            w, V = np.linalg.eigh(S)
            i = int(np.argmax(np.abs(w))) if which == "LM" else 0
            warm.leading = V[:, i]
            self.last_matvecs = 0
            return float(w[i]), V[:, i]
        if symmetric:
            def matvec(v):
                return _matvec(D, v)
        else:
            def matvec(v):
                out = _matvec(D, v)
                out += _matvec(D.T, v)
                out *= 0.5
                return out

        if Q is None:
            Q, _, _ = self._basis(n, warm)
            DQ = np.column_stack([matvec(q) for q in Q.T])
        H = Q.T @ DQ
        thetas, C = np.linalg.eigh(0.5 * (H + H.T))
        k = int(np.argmax(np.abs(thetas))) if which == "LM" else (int(np.argmax(thetas)) if which == "LA" else 0)
        c = C[:, k].copy()
        if C.shape[1] > 1:
            rest = np.delete(C, k, axis=1).sum(axis=1)
            c += _TILT * rest / np.linalg.norm(rest)
        # at least _TILT of the fresh random direction (Q's last column: _basis's w against the earlier
        # vectors), whatever the Ritz vectors: every eigenvector outside their span is then in the start
        c[-1] += _TILT if c[-1] >= 0 else -_TILT
        theta, u, more, converged = lanczos_extreme(matvec, Q @ c, which=which, tol=self.lmo_tol if tol is None else tol,
                                                    first_product=DQ @ c, rng=warm.rng)
        count = Q.shape[1] + more
        self.last_matvecs = count
        self.total_matvecs += count
        if not converged and n <= _DENSE_FALLBACK:  # rare; the exact dense solver
            S = D if symmetric else 0.5 * (D + D.T)
            w, V = np.linalg.eigh(S)
            i = int(np.argmax(np.abs(w))) if which == "LM" else 0
            theta, u = float(w[i]), V[:, i]
        warm.remember(u)
        return theta, u

    def _leading_singular(self, D, warm, tol=None):
        """Leading singular pair ``(u, sigma, v)`` of ``D`` (``tol``: Lanczos's tolerance, default ``lmo_tol``)."""
        m, n = D.shape
        k = min(m, n)
        if not self._use_dense(k):
            # Lanczos on the Gram matrix of the smaller side (svds' approach)
            if m >= n:
                def gram(x):
                    return _matvec(D.T, _matvec(D, x))
            else:
                def gram(x):
                    return _matvec(D, _matvec(D.T, x))
            v0 = self._start_vector(warm, k)
            _, x, count, converged = lanczos_extreme(gram, v0, which="LA", tol=self.lmo_tol if tol is None else tol,
                                                     rng=warm.rng)
            self.last_matvecs = 2 * count
            self.total_matvecs += 2 * count
            if converged or k > _DENSE_FALLBACK:
                y = _matvec(D, x) if m >= n else _matvec(D.T, x)
                sigma = float(np.linalg.norm(y))
                if sigma > 0:
                    warm.leading = x
                    return (y / sigma, sigma, x) if m >= n else (x, sigma, y / sigma)
        U, s, Vt = np.linalg.svd(D, full_matrices=False)
        warm.leading = Vt[0] if m >= n else U[:, 0]
        return U[:, 0], float(s[0]), Vt[0]

    # -------------------------------------------------------------- the oracle
    def _factors(self, D, warm, tol=None):
        """The LMO vertex as ``(u, v, scale)``: ``S = scale * outer(u, v)``, Lanczos started from ``warm``
        and stopped at ``tol`` (default ``lmo_tol``)."""
        m, n = D.shape
        r = self.radius
        if not np.any(D):
            # every point minimizes; a fixed vertex (the origin when psd)
            e_m, e_n = np.zeros(m), np.zeros(n)
            e_m[0] = e_n[0] = 1.0
            return e_m, e_n, (0.0 if self.psd else -r)
        symmetric, Q, DQ = self._products(D, warm) if m == n else (False, None, None)
        if self.psd:
            lam, u = self._extreme_eig(D, "SA", symmetric, warm, Q, DQ, tol)
            return u, u, (r if lam < 0 else 0.0)
        if symmetric or self.symmetric:
            lam, u = self._extreme_eig(D, "LM", symmetric, warm, Q, DQ, tol)
            return u, u, (r if lam < 0 else -r)
        u, _, v = self._leading_singular(D, warm, tol)
        return u, v, -r

    def _atom(self, flat_direction, warm, tol=None):
        D = as_flat_direction(self, flat_direction).reshape(tuple(self.shape))
        u, v, scale = self._factors(D, warm, tol)
        return InPlaceRankOneAtom(u, v, scale, self.shape)

    def lmo_atom(self, flat_direction):
        return self._atom(flat_direction, self._warm)

    def lmo(self, direction):
        D = as_direction(self, direction)
        u, v, scale = self._factors(D, self._warm)
        return scale * np.outer(u, v)

    def lmo_for_solve(self):
        """:meth:`lmo_atom` with a warm start of its own (:class:`LanczosWarmStart`), fresh for every solve.

        Every solve then starts Lanczos from the same vectors, whatever was
        solved before with this set (a re-solve of the same problem, a
        problem sharing the set, direct calls) or beside it in another thread.
        A ``warm_start=True`` solve starts Lanczos afresh too (its first LMO
        calls take a few more products; the solve's iterations measured the same).

        On a matrix that takes the Lanczos path (warm-started, at any
        ``lmo_tol``) the callable is a :class:`CheckedLmo`, which the engine
        uses to check the FW gap before it trusts it; the dense path
        (``dense_threshold``) is exact and unchecked.
        """
        if not self._use_dense(min(tuple(self.shape))):
            return CheckedLmo(self)
        warm = LanczosWarmStart()

        def lmo_atom(flat_direction):  # named as the method: profiles by function name count it as before
            return self._atom(flat_direction, warm)

        return lmo_atom

    def min_linear(self, flat_direction):
        """``min_{s in set} <d, s>`` from a cold start (the compiler's bounds do not depend on earlier calls)."""
        d = np.asarray(flat_direction, dtype=float).ravel()
        return float(self._atom(d, LanczosWarmStart()).dot(d))

    def project(self, point):
        """Euclidean projection onto the set (for splitting baselines and tests).

        A full SVD (eigendecomposition for the symmetric and PSD sets), then
        the projection of the singular values onto the L1 ball (the simplex
        for ``psd``): O(d^3), against O(d^2) per Lanczos product for the LMO.
        """
        X = as_direction(self, point)
        r = self.radius
        if self.symmetric:
            S = 0.5 * (X + X.T)
            w, V = np.linalg.eigh(S)
            if self.psd:
                w = np.maximum(w, 0.0)
                w = _project_nonnegative_l1(w, r)
            else:
                w = np.sign(w) * _project_nonnegative_l1(np.abs(w), r)
            keep = w != 0  # the projection is usually low rank: skip the zero eigenvalues
            return (V[:, keep] * w[keep]) @ V[:, keep].T
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        s = _project_nonnegative_l1(s, r)
        keep = s != 0
        return (U[:, keep] * s[keep]) @ Vt[keep]

    #: a projection exists but costs a full eigendecomposition (O(d^3)); the
    #: engine weighs it against an iteration (``solve(projection="auto")``)
    has_projection = True

    #: ``project_flat`` takes ``out=`` (the engine's projection steps project in place)
    projects_in_place = True

    def project_flat(self, flat_point, out=None):
        """:meth:`project` on a flat point, for projected-gradient steps.

        A point that is symmetric up to rounding (relative ``_SYM_RTOL``: the
        iterates of a symmetric problem) takes the symmetric path even when the
        set is the plain nuclear ball: the nuclear-ball projection of a
        symmetric matrix keeps its eigenvectors and projects the absolute
        eigenvalues, and ``eigh`` is about 3x cheaper than an SVD.

        ``out``: a flat array to write the projection into, possibly
        ``flat_point`` itself; on the symmetric path the symmetric part and
        then the projection are formed there (at d = 2000, two d x d arrays
        less at the peak of a projection step). From ``_LEAN_MIN_SIZE``
        entries on, the eigendecomposition also overwrites that array
        (LAPACK ``syevr``, which needs O(d) workspace where NumPy's ``eigh``
        copies the matrix and takes 2 d^2 of workspace), and the projection
        ``V diag(w) V'`` is formed there by two symmetric rank-k updates
        (BLAS ``syrk``) on the eigenvectors scaled in place: one d x d array
        (the eigenvectors) beside the point at the peak. The same numbers as
        without ``out`` up to rounding (exactly symmetric either way).
        """
        X = np.asarray(flat_point, dtype=float).reshape(tuple(self.shape))
        symmetric = self.symmetric
        if not symmetric and X.shape[0] == X.shape[1]:
            scale = float(np.max(np.abs(X), initial=0.0))
            symmetric = max_asymmetry(X) <= _SYM_RTOL * scale
        if not symmetric:
            P = self.project(X).ravel()
            if out is None:
                return P
            np.copyto(out, P)
            return out
        if out is None:
            S = X + X.T
            S *= 0.5
        else:  # the symmetric part in out's array (tile by tile when out is the point itself)
            S = out.reshape(X.shape)
            if not np.shares_memory(S, X):
                np.copyto(S, X)
            symmetrize_in_place(S)
        lean = out is not None and S.size >= _LEAN_MIN_SIZE
        # a large point's eigendecomposition overwrites S (the engine's array), no copy of it kept
        w, V = _eigh_overwriting(S) if lean else np.linalg.eigh(S)
        if self.psd:
            w = _project_nonnegative_l1(np.maximum(w, 0.0), self.radius)
        else:
            w = np.sign(w) * _project_nonnegative_l1(np.abs(w), self.radius)
        if lean:
            _low_rank_into(V, w, S)
            return out
        keep = w != 0
        # S is spent: the projection is formed in its array, exactly symmetric (the product leaves
        # rounding-level asymmetry, which projection steps would accumulate in a symmetric problem)
        np.matmul(V[:, keep] * w[keep], V[:, keep].T, out=S)
        symmetrize_in_place(S)
        return S.ravel() if out is None else out

    def projection_time_estimate(self):
        """Seconds one :meth:`project_flat` should take here, from a small timed factorization.

        The projection is one ``eigh`` (symmetric or PSD sets) or one SVD, of
        cost ~ c m n min(m, n); ``c`` is measured once per process on a
        ``_CALIBRATION`` x ``_CALIBRATION`` matrix. The engine uses the
        estimate to avoid timing projections that are far too slow to be
        taken (at d = 4000 one costs ~20 s on one core). Measured on one core:
        ``eigh`` costs 0.37 ns per d^3 at d = 256 and 0.17 at d = 1000-2000,
        so the estimate errs high, by up to ~2x.
        """
        m, n = tuple(self.shape)
        kind = "eigh" if self.symmetric or m == n else "svd"  # square iterates are usually symmetric
        per_unit = _factorization_speed(kind)
        return per_unit * m * n * min(m, n)

    # ---------------------------------------------------------- optional hooks
    def low_rank_face(self):
        """Declares the set's low-rank faces: (radius, psd, matrix shape), or None for a non-matrix expression.

        A solver can then take in-face steps on the face of the current
        low-rank iterate (``fwmodel.engine.inface``).
        """
        if len(self.shape) != 2:
            return None
        return self.radius, self.psd, tuple(self.shape)

    def contains_origin(self):
        """0 is in every trace-norm ball (no SVD needed to know it)."""
        return True

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        slack = tol * self.radius  # (relative, no floor of 1)
        if self.symmetric and np.max(np.abs(x - x.T)) > slack:
            return False
        if self.psd:
            w = np.linalg.eigvalsh(0.5 * (x + x.T))
            return bool(w[0] >= -slack and w.sum() <= self.radius + slack)
        return bool(np.linalg.svd(x, compute_uv=False).sum() <= self.radius + slack)

    def coordinate_bounds(self):
        """|X_ij| <= sigma_1(X) <= radius; PSD: X_ii in [0, r], |X_ij| <= (X_ii + X_jj) / 2 <= r / 2."""
        r = self.radius
        if not self.psd:
            return np.full(self.size, -r), np.full(self.size, r)
        n = self.shape[0]
        upper = np.full((n, n), 0.5 * r)
        np.fill_diagonal(upper, r)
        lower = -upper
        np.fill_diagonal(lower, 0.0)
        return lower.ravel(), upper.ravel()

    def symmetric_variant(self):
        """``symmetric=True``: the LMO takes the eigenpair of ``sym(D)``, a symmetric vertex."""
        shape = tuple(self.shape)
        if shape[0] != shape[1]:
            return None
        return TraceNormBall(self.expr, self.data_source("radius"), psd=self.psd, lmo_tol=self.lmo_tol,
                             dense_threshold=self.dense_threshold, symmetric=True)

    def diameter(self):
        # ||X - Y||_F <= ||X||_* + ||Y||_*; on the PSD part <X, Y> >= 0 gives
        # ||X - Y||_F^2 <= ||X||_F^2 + ||Y||_F^2 <= 2 r^2.
        return float((np.sqrt(2.0) if self.psd else 2.0) * self.radius)

    def __repr__(self):
        extra = ", psd=True" if self.psd else (", symmetric=True" if self.symmetric else "")
        return f"TraceNormBall({self.expr!r}, radius={self._datum_text('radius')}{extra})"


#: side of the matrix on which a dense factorization is timed (projection cost estimates)
_CALIBRATION = 256
_speed = {}


def _factorization_speed(kind):
    """Seconds per m n min(m, n) of ``eigh`` or ``svd``, timed (best of 3) on a small random matrix.

    Once per process and BLAS thread count (a solve sets the count, option ``threads``).
    """
    from ..engine.threads import current_blas_threads  # sets -> engine helper: BLAS threads only

    key = (kind, current_blas_threads())
    if key not in _speed:
        import time

        A = np.random.default_rng(0).standard_normal((_CALIBRATION, _CALIBRATION))
        A = A + A.T
        fn = np.linalg.eigh if kind == "eigh" else np.linalg.svd
        best = np.inf
        for _ in range(3):
            t0 = time.perf_counter()
            fn(A)
            best = min(best, time.perf_counter() - t0)
        _speed[key] = best / _CALIBRATION ** 3
    return _speed[key]


#: from this many entries on, project_flat(out=) factors and rebuilds the point in place (smaller
#: points keep NumPy's eigh and its numbers: the small solves' iterates are unchanged)
_LEAN_MIN_SIZE = 1 << 14


def _eigh_overwriting(S):
    """Eigenvalues and eigenvectors of an exactly symmetric C-ordered S, S's memory used by LAPACK.

    S' is S, column-major: LAPACK's ``syevr`` (MRRR) works in it with O(d)
    workspace; the eigenvectors come in a new column-major array.
    """
    from scipy.linalg import eigh

    return eigh(S.T, overwrite_a=True, check_finite=False, driver="evr")


def _low_rank_into(V, w, S):
    """S <- V diag(w) V' (S symmetric, C-ordered; V column-major, overwritten), zero weights skipped.

    V's columns are scaled by sqrt|w|; BLAS ``syrk`` adds ``A A'`` for the
    columns of positive weight and subtracts it for the negative ones, into
    one triangle of S, which is then mirrored: exactly symmetric, half the
    products of a general matrix product. The weights come from eigenvalues
    in ascending order, so the negative ones are a leading and the positive
    ones a trailing block of columns (no array beside V and S); other
    orders take a copy of each group.
    """
    np.multiply(V, np.sqrt(np.abs(w)), out=V)
    C = S.T  # column-major view: syrk's output (S is symmetric, so S' = S)
    first = True
    for sign, group in ((1.0, np.flatnonzero(w > 0)), (-1.0, np.flatnonzero(w < 0))):
        if group.size == 0:
            continue
        if group[-1] - group[0] + 1 == group.size:  # a contiguous block of columns: a view
            A = V[:, group[0]:group[-1] + 1]
        else:
            A = np.asfortranarray(V[:, group])
        blas.dsyrk(sign, A, beta=0.0 if first else 1.0, c=C, lower=0, overwrite_c=1)
        first = False
    if first:  # the projection is 0
        S.fill(0.0)
        return S
    _mirror_lower_to_upper(S)
    return S


def _mirror_lower_to_upper(S, tile=256):
    """S's upper triangle <- its lower triangle, tile by tile (``syrk`` on S' fills S's lower one)."""
    n = S.shape[0]
    for i in range(0, n, tile):
        rows = slice(i, min(i + tile, n))
        T = S[rows, rows]
        upper = np.triu_indices(T.shape[0], 1)
        T[upper] = T.T[upper]
        for j in range(i + tile, n, tile):
            cols = slice(j, min(j + tile, n))
            S[rows, cols] = S[cols, rows].T


def _project_nonnegative_l1(s, r):
    """Projection of a nonnegative vector onto ``{t >= 0, sum t <= r}`` (sort-based, Duchi et al. 2008; exact to
    rounding at r's scale for any finite input: :func:`fwmodel.sets._thresholds.project_nonnegative_l1`)."""
    return project_nonnegative_l1(s, r)
