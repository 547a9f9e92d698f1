"""A constraint's rows replaced by orthonormal ones, L^{-1} A (L L' = A A'): the row metric (A A')^{-1}.

One penalty lam and one dual step serve every row of M (Alg. 1 of the paper:
the augmented term lam/2 ||M x - b||^2 and the multiplier step
y += eta (M x - b)). Row equilibration (``stopping.RowPieces``) fixes each
constraint's scale; it cannot fix rows that overlap: the rows
``z - D x = 0`` that tie an L1 ball's copy z to D x (D first differences)
form a chain, whose multipliers at the optimum are running sums along x's
constant pieces, and a step of one row at a time builds them up slowly
(benchmarks/RESULTS.md, "The TV denoiser's tail": every measure falls at
the multipliers' rate, ~0.977 per iteration). The augmented Lagrangian of
rows ``A x = b`` in the metric W = (A A')^{-1} (penalty lam/2 ||A x - b||_W^2,
dual step y += eta W r) is the plain augmented Lagrangian of the rows
``L^{-1} A x = L^{-1} b``: the same feasible set, rows whose Gram matrix is
the identity, multipliers of the model's rows ``L^{-T} y'``.

The new rows are not formed: L^{-1} A is dense below the band (every row
of a chain reaches all earlier ones), so the piece keeps A sparse and L as a
band (:class:`OrthonormalRows`): M x is A x then a banded triangular solve
(LAPACK ``dtbtrs``), M' r the transposed solve then A' r, both O(nnz(A) +
rows x bandwidth); the column norms ||M e_j||^2 = a_j' (A A')^{-1} a_j that
the steps read come from the entries of (A A')^{-1} within the band
(Takahashi's equations). The rows are taken in the order of the narrowest
band: as written, or reverse Cuthill-McKee's.

A piece is orthonormalized where that is cheap and does not move the
feasibility test's units much: a compiler piece of explicit sparse rows
(``SparseRows``: an equality, an inequality with its slack, the tie of a set
on an affine expression; never copy ties, whose Gram matrix is diagonal, nor
marginalization rows, not measured), A A' not diagonal (row scaling's case)
and sparse (each row overlapping a few others, at most ``MAX_GRAM_DENSITY``
of its entries nonzero: a chain, a stencil, a graph's incidence rows; a few
dense rows, all overlapping, were measured mixed: benchmarks/RESULTS.md, "A
row metric for chains of rows"; A A' is not formed where that takes more
than ``MAX_GRAM_WORK`` products), the largest eigenvalue of the Gram matrix
of its rows brought to unit norm at most ``MAX_GRAM`` by Gershgorin's bound
(||r|| <= sqrt(lambda_max) ||L^{-1} r|| for those rows: the stopping rule,
measuring the new rows, is at most that much looser than in the rows at
unit norm), and the factor's band at most ``MAX_BAND_FILL`` times A's
entries and rows (a chain of differences: 2 entries of L per row against
A's 3 and the row, 0.5; the 2-D differences of an image, whose band is
twice the image's width after reordering, 15 at 30 x 30, are left out: there
the metric cost iterations as often as it saved them on small images and
ended at max_iter at 30 x 30 where the plain rows take 6,726 iterations,
benchmarks/RESULTS.md, "The row metric kept as a band"). The choice and the
rows do not depend on the factor each row was written times.

Nearly dependent rows (:class:`RankRevealedRows`): a piece the band does not
take, small enough for a dense QR (``MAX_DENSE_ENTRIES``),
whose rows at unit norm have a smallest singular value below
``ILL_CONDITIONED``. There a combination of the rows, such as a row minus a
copy of it written with 1e-6 of noise, is a constraint at the scale of that
singular value: the feasibility test, in the rows' own units, let it be
violated by 1e-4 / 1e-6 of its units and the solve ended "optimal" up to 23 %
below f*. The rows become an orthonormal basis of their span (pivoted QR of
the rows at unit norm, L = R'), in which every combination is held at its own
scale; rows dependent to rounding become rows of zeros, and where their
right-hand side disagrees with the others' the piece is left as written, for
the solve's certificate to end it "infeasible" (benchmarks/RESULTS.md,
"Nearly dependent rows orthonormalized"). The same holds for rows of
several constraints (``a @ x == 1`` and ``(a + 1e-6 n) @ x == 1`` written
apart): consecutive pieces of explicit rows left as written, each small, are
stacked and tried as one piece.
"""
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import lapack
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._kernels import csr_times
from ..compiler.consistency import ConsistencyOperator, SparseRows

MAX_GRAM = 10.0
MAX_GRAM_DENSITY = 0.5
#: the Gram matrix A A' is formed only where it costs at most this many products (sum over A's columns of
#: their entries squared): a piece of many dense rows is left as it is without forming it
MAX_GRAM_WORK = 10_000_000
#: the band of the factor L (rows times bandwidth + 1) at most this many times A's entries (and rows): a
#: product with the new rows costs one pass over A and a banded triangular solve, both O(nnz)
MAX_BAND_FILL = 2.0
#: a piece of dense rows is orthonormalized (:func:`rank_revealed_rows`) where its rows at unit norm have a
#: smallest singular value below this: nearly dependent rows, which as written cost 7x the iterations at
#: 0.08, ended max_iter from 0.025 and "optimal" up to 23 % off below 1e-4, while the dense pieces of the
#: trust fuzz's 1,650 models all lie above 0.13 (benchmarks/RESULTS.md, "Nearly dependent rows
#: orthonormalized")
ILL_CONDITIONED = 0.1
#: ... and where a dense QR of it is cheap against the solve: rows times the columns it reads at most this
#: (the smallest singular value from the Gram matrix of the rows where they are at most as many as the
#: columns, at most 447 x 447; more rows than columns are dependent by their count). A cap of 200 rows left
#: 201-260 single-row constraints with a nearly dependent pair among them as written: "optimal" 2e-3 to
#: 9e-3 below f* (benchmarks/dependent_rows.py, ``--many``)
MAX_DENSE_ENTRIES = 200_000
#: a dropped row's right-hand side agrees with the kept rows' to this relative accuracy, else the piece is left
#: as written: data read with 7-8 significant digits (float32, a CSV) differ by 1e-8 on a duplicated row, and
#: at 1e-9 such a row left a nearly dependent pair beside it as written ("optimal" 2.3 % below f*); below the
#: default feas_tol (1e-6) the rows as written are met to tolerance anyway
CONSISTENT_RTOL = 1e-7


class _ColumnNormsOfRows:
    """What the steps read of a piece's columns: ``column_norms2`` (||M e_j||^2 on the columns ``used``)."""

    def diagonal_gain(self, d):
        return float(np.dot(self.column_norms2, d[self.used] ** 2))

    def add_column_norms2(self, bounds, out):
        blocks = np.searchsorted(bounds, self.used, side="right") - 1
        out += np.bincount(blocks, weights=self.column_norms2, minlength=out.size)[:out.size]


class OrthonormalRows(_ColumnNormsOfRows):
    """Rows ``L^{-1} A x = L^{-1} b`` (L L' = A A', banded) with A kept sparse: a piece of the solve's M.

    ``A`` holds the model's rows in the band's order (``order[i]``: the model row of row i).
    ``L`` is stored as LAPACK's lower band (``band[d, j] = L[j + d, j]``); a product costs one pass
    over A and one banded triangular solve (``dtbtrs``), O(nnz(A) + rows x bandwidth).
    """

    def __init__(self, A, b, band, order, label=""):
        self.A = sp.csr_matrix(A)
        self.AT = self.A.T.tocsr()
        self.band = np.asarray(band, dtype=float, order="F")
        self.order = order
        self.rows = self.A.shape[0]
        self.label = label
        self.b = self.solve(np.asarray(b, dtype=float).ravel().copy())
        self.used = np.unique(self.A.indices)
        self.column_norms2 = _column_norms2(self.A, self.band)[self.used]  # ||L^{-1} A e_j||^2 on used

    def solve(self, v, transpose=False):
        """L^{-1} v (L^{-T} v with ``transpose``), in place where v is a float64 array."""
        x, info = lapack.dtbtrs(self.band, v, uplo="L", trans="T" if transpose else "N", overwrite_b=1)
        if info != 0:  # pragma: no cover (the factor's diagonal was checked when it was made)
            raise np.linalg.LinAlgError(f"the row metric's factor of {self.label!r} is singular")
        return x

    def to_model_rows(self, v):
        """Multipliers of the solve's rows -> the model's rows of the piece (L^{-T} v, in the model's order)."""
        out = np.empty(self.rows)
        out[self.order] = self.solve(np.array(v, dtype=float), transpose=True)
        return out

    def to_solve_rows(self, y):
        """Multipliers of the model's rows of the piece -> the solve's rows (L' y, y in the model's order)."""
        return self.times_factor_transpose(np.asarray(y, dtype=float)[self.order])

    def times_factor_transpose(self, y):
        """L' y (a warm start's multipliers, see RowMetric.to_solve_rows)."""
        out = self.band[0] * y
        for d in range(1, self.band.shape[0]):
            out[:-d] += self.band[d, :-d] * y[d:]
        return out

    def matvec(self, x, out):
        out[:] = self.solve(csr_times(self.A, x))

    def rmatvec(self, r, out):
        out += csr_times(self.AT, self.solve(np.array(r, dtype=float), transpose=True))

    def csr(self, n):
        """L^{-1} A as a CSR matrix (dense on A's columns: for inspection and tests, not used by the solve)."""
        TA = self.solve(np.asfortranarray(self.A[:, self.used].toarray()))
        rows, cols = np.nonzero(TA)
        return sp.csr_matrix((TA[rows, cols], (rows, self.used[cols])), shape=(self.rows, n))


class RankRevealedRows(_ColumnNormsOfRows):
    """Rows ``Q' x = c`` with orthonormal rows spanning a small dense piece's ``A x = b``: a piece of the solve's M.

    From the pivoted QR of the rows at unit norm, ``A[order]' = Q R`` (R with the row norms folded in, upper
    trapezoidal); the piece's first ``rank`` rows are ``Q' x = R11^{-T} b[order[:rank]]`` (= ``L^{-1} A`` of
    the module's notes with L = R11'), the others, dependent on them to rounding and consistent, rows of
    zeros with right-hand side 0. Q is stored dense on the columns the piece reads (``used``): a product
    costs what A's does where A is dense.

    Multipliers: a dropped row's is 0 in the model's rows. The split of a multiplier among dependent rows is
    not unique (any y with the same A' y serves the KKT conditions); this one keeps the kept rows'.
    """

    def __init__(self, Q, c, R, order, used, rows, label=""):
        self.Q = np.ascontiguousarray(Q, dtype=float)  # (rank, used.size)
        self.rank = self.Q.shape[0]
        self.R = np.asarray(R, dtype=float)  # (rank, rows): A[order] = R' Q' up to rounding
        self.order = order
        self.used = used
        self.rows = rows
        self.label = label
        self.b = np.zeros(rows)
        self.b[:self.rank] = c
        self.column_norms2 = np.einsum("ij,ij->j", self.Q, self.Q)

    def matvec(self, x, out):
        out[:self.rank] = self.Q @ x[self.used]
        out[self.rank:] = 0.0

    def rmatvec(self, r, out):
        out[self.used] += self.Q.T @ r[:self.rank]

    def csr(self, n):
        rows, cols = np.nonzero(self.Q)
        return sp.csr_matrix((self.Q[rows, cols], (rows, self.used[cols])), shape=(self.rows, n))

    def to_model_rows(self, v):
        """Multipliers of the solve's rows -> the model's rows of the piece: R11^{-1} v on the kept rows
        (then A' y = Q v), 0 on the dropped ones."""
        out = np.zeros(self.rows)
        k = self.rank
        out[self.order[:k]] = sla.solve_triangular(self.R[:, :k], np.asarray(v[:k], dtype=float), lower=False)
        return out

    def to_solve_rows(self, y):
        """Multipliers of the model's rows of the piece -> the solve's rows: R y[order] (A' y = Q R y[order]
        up to rounding; a dropped row's share folded into the kept rows'), 0 on the dropped rows."""
        out = np.zeros(self.rows)
        out[:self.rank] = self.R @ np.asarray(y, dtype=float)[self.order]
        return out


class MetricOperator(ConsistencyOperator):
    """M with some pieces :class:`OrthonormalRows`: also gives each block's columns as a product."""

    def block_products(self, slices):
        """(per block ``d_k -> M_k d_k``, ||M e_j||^2 for every column) without L^{-1} A formed.

        M_k d_k is A's block columns times d_k (a CSR slice, as for the other pieces), then L^{-1} on
        each orthonormalized piece's rows.
        """
        raw = sp.vstack([p.A if isinstance(p, OrthonormalRows) else p.csr(self.n) for p in self.pieces],
                        format="csc")
        norms2, solved = np.zeros(self.n), []
        for p, lo, hi in zip(self.pieces, self.offsets[:-1], self.offsets[1:]):
            if isinstance(p, OrthonormalRows):
                solved.append((int(lo), int(hi), p))
                norms2[p.used] += p.column_norms2
            else:
                rows = p.csr(self.n)
                norms2 += np.asarray(rows.multiply(rows).sum(axis=0), dtype=float).ravel()
        cols = [raw[:, sl].tocsr() for sl in slices]

        def product(k):
            Ak = cols[k]

            def times(d_k):
                v = csr_times(Ak, d_k)
                for lo, hi, p in solved:
                    v[lo:hi] = p.solve(v[lo:hi])
                return v
            return times
        return [product(k) for k in range(len(slices))], norms2


class RowMetric:
    """The rows of the chosen pieces replaced by L^{-1} A; maps multipliers between the two sets of rows."""

    def __init__(self, transforms, M_before, b_before, M_after, b_after):
        self.transforms = transforms  # (lo, hi, OrthonormalRows or RankRevealedRows)
        self.M_before, self.b_before = M_before, b_before
        self.M_after, self.b_after = M_after, b_after

    @staticmethod
    def of(M):
        """(RowMetric, M') where some piece qualifies (see the module's notes), else None."""
        pieces = getattr(M, "pieces", None)
        if not pieces or not hasattr(M, "with_piece_factors"):
            return None
        new, transforms = [], []
        run = []  # consecutive small pieces of explicit rows left as written: (lo, piece, dense rows), the last of new

        def stacked_run():
            """The run's rows as one piece where together they are nearly dependent (a row of one constraint
            close to another's: ``a @ x == 1``, ``(a + 1e-6 n) @ x == 1``), which no piece alone shows."""
            if len(run) > 1:
                made = _stacked_rows([(p, dense) for _, p, dense in run])
                if made is not None:
                    del new[-len(run):]
                    new.append(made)
                    transforms.append((run[0][0], run[0][0] + made.rows, made))
            run.clear()

        for p, lo in zip(pieces, M.offsets[:-1]):
            made = dense = None
            if isinstance(p, SparseRows):
                made = orthonormal_rows(p) if p.rows > 1 else None
                dense = _dense_rows(p.A) if made is None else None
                if dense is not None and p.rows > 1:
                    made = rank_revealed_rows(p, dense)
            if made is None:
                if dense is None:  # (a large piece ends the run: the small ones around it may still be stacked)
                    stacked_run()
                new.append(p)
                if dense is not None:
                    run.append((int(lo), p, dense))
                continue
            stacked_run()
            new.append(made)
            transforms.append((int(lo), int(lo) + p.rows, made))
        stacked_run()
        if not transforms:
            return None
        Mn = MetricOperator(new, M.n)
        bn = np.asarray(Mn.b, dtype=float).reshape(-1)
        return RowMetric(transforms, M, np.asarray(M.b, dtype=float).reshape(-1), Mn, bn), Mn

    def to_model_rows(self, v):
        """Multipliers of the solve's rows -> those of the rows before (L^{-T} v on each orthonormalized piece,
        back in the model's order of rows; 0 on a row dropped as dependent, :class:`RankRevealedRows`)."""
        out = np.array(v, dtype=float, copy=True)
        for lo, hi, p in self.transforms:
            out[lo:hi] = p.to_model_rows(v[lo:hi])
        return out

    def to_solve_rows(self, y):
        """Multipliers of the rows before -> the solve's rows (L' y on each piece): a warm start's y."""
        for lo, hi, p in self.transforms:
            y[lo:hi] = p.to_solve_rows(y[lo:hi])
        return y

    def unscale(self, result):
        """y and the rows' multipliers in the rows before: y + lam r = L^{-T} (y' + lam r') on the pieces."""
        r_before = self.M_before.matvec(result.x) - self.b_before
        r_after = self.M_after.matvec(result.x) - self.b_after
        multipliers = self.to_model_rows(result.y + result.lam * r_after)
        result["row_multipliers"] = multipliers
        result.y = multipliers - result.lam * r_before
        result.state.y = result.y  # a warm start maps it again (to_solve_rows)
        return result


def _bandwidth(G, order):
    """The largest |i - j| over the nonzeros of G with rows and columns taken in ``order``."""
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    C = G.tocoo()
    return int(np.max(np.abs(where[C.row] - where[C.col]))) if C.nnz else 0


def orthonormal_rows(p):
    """The piece's rows as :class:`OrthonormalRows`, or None where they do not qualify (the module's notes)."""
    A = p.A
    m = p.rows
    counts = np.bincount(A.indices, minlength=A.shape[1]).astype(float)
    if float(np.dot(counts, counts)) > MAX_GRAM_WORK:
        return None
    G = (A @ p.AT).tocsr()
    G.eliminate_zeros()
    diag = G.diagonal()
    if np.any(diag <= 0) or G.nnz == m:  # a zero row, or A A' diagonal (row scaling's case)
        return None
    if G.nnz > MAX_GRAM_DENSITY * m * m:  # rows that all overlap: not a chain
        return None
    # Gershgorin's bound on the largest eigenvalue of the Gram matrix of the rows at unit norm (the same
    # whatever each row was written times; L^{-1} A is too)
    C = G.tocoo()
    scale = 1.0 / np.sqrt(diag)
    if np.max(np.bincount(C.row, weights=np.abs(C.data) * scale[C.row] * scale[C.col], minlength=m)) > MAX_GRAM:
        return None
    # the rows in the order of the narrowest band: as written, or reverse Cuthill-McKee's
    order = np.arange(m)
    kd = _bandwidth(G, order)
    if kd > 1:
        rcm = np.asarray(reverse_cuthill_mckee(G, symmetric_mode=True), dtype=np.intp)
        kd_rcm = _bandwidth(G, rcm)
        if kd_rcm < kd:
            order, kd = rcm, kd_rcm
    if m * (kd + 1) > MAX_BAND_FILL * (A.nnz + m):
        return None
    Gp = G[order][:, order].tocoo()
    lower = Gp.row >= Gp.col
    band = np.zeros((kd + 1, m))
    band[Gp.row[lower] - Gp.col[lower], Gp.col[lower]] = Gp.data[lower]
    try:
        band = sla.cholesky_banded(band, lower=True, check_finite=False)
    except np.linalg.LinAlgError:  # dependent rows: left as they are
        return None
    d = np.abs(band[0])
    if d.min() <= 1e-6 * d.max():
        return None
    return OrthonormalRows(A[order], p.b[order], band, order, label=p.label)


def _dense_rows(A):
    """(A on the columns it reads, as a dense array; those columns), or None beyond
    ``MAX_DENSE_ENTRIES``."""
    m = A.shape[0]
    if m > MAX_DENSE_ENTRIES:  # (before the sort of A's columns: a large piece is left at once)
        return None
    used, where = np.unique(A.indices, return_inverse=True)
    if m * used.size > MAX_DENSE_ENTRIES:
        return None
    dense = np.zeros((m, used.size))
    np.add.at(dense, (np.repeat(np.arange(m), np.diff(A.indptr)), where.ravel()), A.data)
    return dense, used


def rank_revealed_rows(p, dense=None):
    """A small piece of nearly dependent rows as :class:`RankRevealedRows`, or None where it does not qualify.

    Qualifies: at most ``MAX_DENSE_ENTRIES`` rows x columns read, no zero row,
    and the rows at unit norm with a smallest singular value below ``ILL_CONDITIONED`` (well-conditioned rows
    are left as written: orthonormalizing them changes the iterates for no gain in accuracy). Rows whose
    R_kk (pivoted QR of the rows at unit norm) is at most max(rows, columns) eps |R_00| are dependent to
    rounding (numpy's ``matrix_rank`` rule): dropped where their right-hand side agrees with the kept rows'
    to ``CONSISTENT_RTOL``, else the piece is left as written (no point meets its rows: the solve's
    certificate ends it "infeasible", ``certificates.InfeasibilityCheck``). ``dense``: :func:`_dense_rows`
    of the piece, where already made.
    """
    dense = _dense_rows(p.A) if dense is None else dense
    if dense is None:
        return None
    return _rank_revealed(dense[0], dense[1], np.asarray(p.b, dtype=float), p.label)


def _stacked_rows(run):
    """:func:`rank_revealed_rows` of consecutive pieces' rows stacked (``run``: (piece, its dense rows))."""
    used = np.unique(np.concatenate([u for _, (_, u) in run]))
    if sum(p.rows for p, _ in run) * used.size > MAX_DENSE_ENTRIES:
        return None
    dense = np.zeros((sum(p.rows for p, _ in run), used.size))
    top = 0
    for p, (rows, cols) in run:
        dense[top:top + p.rows, np.searchsorted(used, cols)] = rows
        top += p.rows
    b = np.concatenate([np.asarray(p.b, dtype=float) for p, _ in run])
    return _rank_revealed(dense, used, b, "; ".join(p.label for p, _ in run))


def _rank_revealed(dense, used, b, label):
    """:func:`rank_revealed_rows` of the rows ``dense`` on the columns ``used``, right-hand side ``b``."""
    m = dense.shape[0]
    norms = np.sqrt(np.einsum("ij,ij->i", dense, dense))
    if not (np.all(norms > 0) and np.all(np.isfinite(norms)) and np.all(np.isfinite(b))):
        return None
    unit = dense / norms[:, None]
    # the smallest singular value from the Gram matrix's eigenvalue (5x cheaper than the QR at 200 x 1000,
    # 2.3 ms against 12 ms, and accurate to rounding far above the threshold): the QR only where it qualifies
    # (more rows than columns: dependent by their count, no Gram matrix to form)
    if m <= used.size and np.linalg.eigvalsh(unit @ unit.T)[0] >= ILL_CONDITIONED ** 2:
        return None
    Q, R, order = sla.qr(unit.T, mode="economic", pivoting=True, check_finite=False)
    diag = np.abs(np.diag(R))
    rank = int(np.count_nonzero(diag > max(m, used.size) * np.finfo(float).eps * diag[0]))
    # the kept rows' right-hand side in the new rows, and the dropped rows' checked against it
    unit_b = b[order] / norms[order]
    c = sla.solve_triangular(R[:rank, :rank], unit_b[:rank], trans="T", lower=False, check_finite=False)
    implied = R[:rank, rank:].T @ c
    if np.any(np.abs(unit_b[rank:] - implied) > CONSISTENT_RTOL * np.maximum(np.abs(unit_b[rank:]),
                                                                              np.linalg.norm(c))):
        return None
    return RankRevealedRows(Q[:, :rank].T, c, R[:rank] * norms[order], order, used, m, label=label)


def _band_inverse(band):
    """The entries of Z = (L L')^{-1} within L's band: ``zb[d, j] = Z[j + d, j]`` (Takahashi's equations).

    From L' Z = L^{-1} (lower triangular, diagonal 1 / L_ii): for j >= i,
    Z_ij = (delta_ij / L_ii - sum_{k > i} L_ki Z_kj) / L_ii, from the last row up; the entries read lie in
    the band: the window Z[i+1:i+kd+1, i+1:i+kd+1] of the row before. O(rows x bandwidth^2).
    """
    kd1, m = band.shape
    kd = kd1 - 1
    zb = np.zeros((kd1, m))
    if kd == 0:
        zb[0] = 1.0 / (band[0] * band[0])
        return zb
    diag, below = band[0].tolist(), band[1:].T  # below[i, d - 1] = L[i + d, i]
    if kd == 1:  # a chain: Z_{i,i+1} = -L_{i+1,i} Z_{i+1,i+1} / L_ii, one scalar recurrence
        sub = band[1].tolist()
        zdiag, zoff = [0.0] * m, [0.0] * m
        z_next = 1.0 / (diag[m - 1] * diag[m - 1])
        zdiag[m - 1] = z_next
        for i in range(m - 2, -1, -1):
            lii, l = diag[i], sub[i]
            off = -l * z_next / lii
            z_next = (1.0 / lii - l * off) / lii
            zoff[i], zdiag[i] = off, z_next
        zb[0], zb[1] = zdiag, zoff
        return zb
    window, spare = np.zeros((kd, kd)), np.zeros((kd, kd))  # Z[i+1:i+kd+1, i+1:i+kd+1], then row i's
    zb[0, m - 1] = window[0, 0] = 1.0 / (diag[m - 1] * diag[m - 1])
    for i in range(m - 2, -1, -1):
        w = min(kd, m - 1 - i)
        lii, l = diag[i], below[i, :w]
        row = np.dot(l, window[:w, :w])
        row *= -1.0 / lii
        zii = (1.0 / lii - np.dot(l, row)) / lii
        zb[0, i] = zii
        zb[1:w + 1, i] = row
        spare[0, 0] = zii
        spare[0, 1:w + 1 if w < kd else kd] = row[:kd - 1]
        spare[1:w + 1 if w < kd else kd, 0] = row[:kd - 1]
        spare[1:, 1:] = window[:kd - 1, :kd - 1]
        window, spare = spare, window
    return zb


def _column_norms2(A, band):
    """||L^{-1} A e_j||^2 = a_j' (A A')^{-1} a_j for every column: entries of (A A')^{-1} on pairs of rows
    that share a column only, all within the band (:func:`_band_inverse`)."""
    zb = _band_inverse(band)
    Ac = sp.csc_matrix(A)
    counts = np.diff(Ac.indptr)
    col_of = np.repeat(np.arange(Ac.shape[1]), counts)
    first = np.repeat(np.arange(Ac.nnz), counts[col_of])  # entry e paired with each entry of its column
    start = Ac.indptr[col_of[first]]
    group = np.repeat(np.cumsum(counts[col_of]) - counts[col_of], counts[col_of])
    second = start + np.arange(first.size) - group
    ri, rk = Ac.indices[first], Ac.indices[second]
    z = zb[np.abs(ri - rk), np.minimum(ri, rk)]
    return np.bincount(col_of[first], weights=Ac.data[first] * Ac.data[second] * z, minlength=Ac.shape[1])
