"""The trace-norm (nuclear-norm) ball and the PSD trace ball, with Lanczos LMOs."""
from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point
from .atoms import RankOneAtom
from .base import ConvexSet, check_nonnegative

#: relative asymmetry max|D - D^T| / max|D| below which D is treated as symmetric
_SYM_RTOL = 1e-10
#: entries probed before paying for the full symmetry test
_N_PROBES = 16


class TraceNormBall(ConvexSet):
    """Nuclear-norm ball ``{X : ||X||_* <= radius}`` of a matrix expression.

    With ``psd=True``: ``{X : X symmetric PSD, trace(X) <= radius}`` (on that
    cone the nuclear norm is the trace).

    LMO (``psd=False``). By duality of the nuclear and spectral norms,
    ``min_{||S||_* <= r} <D, S> = -r * sigma_1(D)``, attained at the rank-one
    matrix ``S = -r * u_1 v_1^T`` built from the leading singular pair of
    ``D``. When ``D`` is symmetric the leading singular pair is an eigenpair:
    with ``lambda`` the eigenvalue of largest ``|lambda|`` and unit
    eigenvector ``u``, ``S = -r * sign(lambda) * u u^T`` gives
    ``<D, S> = -r * |lambda| = -r * sigma_1(D)``, so one symmetric Lanczos run
    replaces the singular value problem.

    LMO (``psd=True``). Every ``S`` in the set is symmetric, so
    ``<D, S> = <sym(D), S>`` with ``sym(D) = (D + D^T) / 2``; the extreme
    points are ``r * u u^T`` for unit ``u`` and the origin, and
    ``<sym(D), r u u^T> = r * u^T sym(D) u`` is minimized by the eigenvector
    of the most negative eigenvalue: ``S = r * u u^T`` if that eigenvalue is
    negative, ``S = 0`` otherwise. This is the LMO of the paper's eq.
    ``LMO_trance_norm`` (Gidel et al., 2018, Sec. 6), computed, as the paper
    suggests, with the Lanczos algorithm.

    Computation. Matrices whose smaller side is at most ``dense_threshold``
    use dense LAPACK (``numpy.linalg.eigh`` / ``svd``). Larger ones use
    ARPACK's Lanczos (``scipy.sparse.linalg.eigsh`` with ``k=1``; for a
    rectangular ``D`` on the Gram operator of its smaller side, exactly as
    ``scipy.sparse.linalg.svds`` does), with relative tolerance ``lmo_tol``
    (an inexact LMO is enough for Frank-Wolfe) and warm-started from the
    previous leading vector: consecutive FW directions differ little, so
    Lanczos restarts near the answer. :meth:`reset` forgets the warm start.
    The vertex is a :class:`RankOneAtom`.

    Parameters
    ----------
    expr : a matrix (2-D) expression; square when ``psd=True``.
    radius : bound on the nuclear norm (on the trace when ``psd=True``), >= 0.
    psd : restrict to symmetric positive semidefinite matrices.
    lmo_tol : relative tolerance of the Lanczos eigenvalue (0: machine precision).
    dense_threshold : use dense LAPACK when the smaller side is at most this.
    """

    is_polytope = False

    def __init__(self, expr, radius=1.0, psd=False, lmo_tol=1e-6, dense_threshold=50):
        super().__init__(expr)
        shape = tuple(self.shape)
        if len(shape) != 2:
            raise ModelError(
                f"TraceNormBall: the expression must be a matrix (2-D), got shape {shape} for {self.expr!r}"
            )
        self.psd = bool(psd)
        if self.psd and shape[0] != shape[1]:
            raise ModelError(
                f"TraceNormBall(psd=True): the expression must be a square matrix, got shape {shape} for {self.expr!r}"
            )
        self.radius = check_nonnegative("radius", radius, "TraceNormBall")
        self.lmo_tol = check_nonnegative("lmo_tol", lmo_tol, "TraceNormBall")
        if isinstance(dense_threshold, bool) or not isinstance(dense_threshold, (int, np.integer)) or dense_threshold < 0:
            raise ValueError(f"TraceNormBall: dense_threshold must be an integer >= 0, got {dense_threshold!r}")
        self.dense_threshold = int(dense_threshold)
        m, n = shape
        # fixed probe positions for the cheap symmetry rejection
        rng = np.random.default_rng(0)
        self._probe_i = rng.integers(0, m, _N_PROBES)
        self._probe_j = rng.integers(0, n, _N_PROBES)
        self._v0 = None

    def reset(self):
        """Forget the Lanczos warm-start vector."""
        self._v0 = None

    # ------------------------------------------------------------ linear algebra
    def _start_vector(self, length):
        """The previous leading vector when it fits, else a fixed random vector."""
        if self._v0 is not None and self._v0.size == length:
            return self._v0
        # deterministic (not ARPACK's own random start) so solves are reproducible
        return np.random.default_rng(0).standard_normal(length)

    def _use_dense(self, dim):
        # ARPACK needs k=1 < dim; dense LAPACK is also faster on small matrices
        return dim <= max(self.dense_threshold, 2)

    def _symmetric_part(self, D):
        """``D`` (or ``sym(D)``) if ``D`` is symmetric up to rounding, else None."""
        m, n = D.shape
        if m != n:
            return None
        a, b = D[self._probe_i, self._probe_j], D[self._probe_j, self._probe_i]
        if np.any(np.abs(a - b) > _SYM_RTOL * np.maximum(np.abs(a), np.abs(b)) + 1e-300):
            return None  # cheap rejection: most non-symmetric D fail here
        scale = float(np.max(np.abs(D)))
        asym = float(np.max(np.abs(D - D.T)))
        if asym == 0.0:
            return D
        if asym <= _SYM_RTOL * scale:
            return 0.5 * (D + D.T)
        return None

    def _extreme_eig(self, S, which):
        """Eigenpair of symmetric ``S``: largest ``|lambda|`` (``"LM"``) or smallest (``"SA"``)."""
        n = S.shape[0]
        if not self._use_dense(n):
            try:
                w, V = eigsh(S, k=1, which=which, v0=self._start_vector(n), tol=self.lmo_tol)
                u = V[:, 0]
                self._v0 = u
                return float(w[0]), u
            except (ArpackNoConvergence, ArpackError):
                pass  # rare; fall through to the exact dense solver
        w, V = np.linalg.eigh(S)
        i = int(np.argmax(np.abs(w))) if which == "LM" else 0
        u = V[:, i]
        self._v0 = u
        return float(w[i]), u

    def _leading_singular(self, D):
        """Leading singular pair ``(u, sigma, v)`` of ``D``."""
        m, n = D.shape
        k = min(m, n)
        if not self._use_dense(k):
            # Lanczos on the Gram matrix of the smaller side (svds' ARPACK path)
            if m >= n:
                gram = LinearOperator((n, n), matvec=lambda x: D.T @ (D @ x), dtype=float)
            else:
                gram = LinearOperator((m, m), matvec=lambda x: D @ (D.T @ x), dtype=float)
            try:
                _, V = eigsh(gram, k=1, which="LA", v0=self._start_vector(k), tol=self.lmo_tol)
            except (ArpackNoConvergence, ArpackError):
                V = None
            if V is not None:
                x = V[:, 0]
                y = D @ x if m >= n else D.T @ x
                sigma = float(np.linalg.norm(y))
                if sigma > 0:
                    self._v0 = x
                    return (y / sigma, sigma, x) if m >= n else (x, sigma, y / sigma)
        U, s, Vt = np.linalg.svd(D, full_matrices=False)
        self._v0 = Vt[0] if m >= n else U[:, 0]
        return U[:, 0], float(s[0]), Vt[0]

    # -------------------------------------------------------------- the oracle
    def _factors(self, D):
        """The LMO vertex as ``(u, v, scale)``: ``S = scale * outer(u, v)``."""
        m, n = D.shape
        r = self.radius
        if not np.any(D):
            # every point minimizes; a fixed vertex (the origin when psd)
            e_m, e_n = np.zeros(m), np.zeros(n)
            e_m[0] = e_n[0] = 1.0
            return e_m, e_n, (0.0 if self.psd else -r)
        S = self._symmetric_part(D)
        if self.psd:
            if S is None:
                S = 0.5 * (D + D.T)
            lam, u = self._extreme_eig(S, "SA")
            return u, u, (r if lam < 0 else 0.0)
        if S is not None:
            lam, u = self._extreme_eig(S, "LM")
            return u, u, (r if lam < 0 else -r)
        u, _, v = self._leading_singular(D)
        return u, v, -r

    def lmo_atom(self, flat_direction):
        D = as_flat_direction(self, flat_direction).reshape(tuple(self.shape))
        u, v, scale = self._factors(D)
        return RankOneAtom(u, v, scale, self.shape)

    def lmo(self, direction):
        D = as_direction(self, direction)
        u, v, scale = self._factors(D)
        return scale * np.outer(u, v)

    # ---------------------------------------------------------- optional hooks
    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        slack = tol * max(1.0, self.radius)
        if self.psd:
            if np.max(np.abs(x - x.T)) > slack:
                return False
            w = np.linalg.eigvalsh(0.5 * (x + x.T))
            return bool(w[0] >= -slack and w.sum() <= self.radius + slack)
        return bool(np.linalg.svd(x, compute_uv=False).sum() <= self.radius + slack)

    def diameter(self):
        # ||X - Y||_F <= ||X||_* + ||Y||_*; on the PSD part <X, Y> >= 0 gives
        # ||X - Y||_F^2 <= ||X||_F^2 + ||Y||_F^2 <= 2 r^2.
        return float((np.sqrt(2.0) if self.psd else 2.0) * self.radius)

    def __repr__(self):
        extra = ", psd=True" if self.psd else ""
        return f"TraceNormBall({self.expr!r}, radius={self.radius:g}{extra})"
