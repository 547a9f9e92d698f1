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

A piece is orthonormalized where that is cheap and does not move the
feasibility test's units much: a compiler piece of explicit sparse rows
(``SparseRows``: an equality, an inequality with its slack, the tie of a set
on an affine expression; never copy ties, whose Gram matrix is diagonal, nor
marginalization rows, not measured), at most ``MAX_ROWS`` rows, L^{-1} A
(dense on A's columns) at most ``MAX_FILL`` entries, A A' not diagonal (row
scaling's case) and sparse (each row overlapping a few others, at most
``MAX_GRAM_DENSITY`` of its entries nonzero: a chain, a stencil, a graph's
incidence rows; a few dense rows, all overlapping, were measured mixed:
benchmarks/RESULTS.md, "A row metric for chains of rows"), and the largest
eigenvalue of the Gram matrix of its rows brought to unit norm at most
``MAX_GRAM`` by Gershgorin's bound (||r|| <= sqrt(lambda_max) ||L^{-1} r||
for those rows: the stopping rule, measuring the new rows, is at most that
much looser than in the rows at unit norm). The choice and L^{-1} A do not
depend on the factor each row was written times.
"""
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

MAX_ROWS = 500
MAX_FILL = 250_000
MAX_GRAM = 10.0
MAX_GRAM_DENSITY = 0.5


class RowMetric:
    """The rows of the chosen pieces replaced by L^{-1} A; maps multipliers between the two sets of rows."""

    def __init__(self, transforms, M_before, b_before, M_after, b_after):
        self.transforms = transforms  # (lo, hi, L, T = L^{-1})
        self.M_before, self.b_before = M_before, b_before
        self.M_after, self.b_after = M_after, b_after

    @staticmethod
    def of(M):
        """(RowMetric, M') where some piece qualifies (see the module's notes), else None."""
        pieces = getattr(M, "pieces", None)
        if not pieces or not hasattr(M, "with_piece_factors"):
            return None
        from ..compiler.consistency import ConsistencyOperator, SparseRows
        new, transforms = [], []
        for p, lo in zip(pieces, M.offsets[:-1]):
            made = _orthonormal(p) if isinstance(p, SparseRows) and 1 < p.rows <= MAX_ROWS else None
            if made is None:
                new.append(p)
                continue
            A, L, T = made
            new.append(SparseRows(A, T @ p.b, label=p.label))
            transforms.append((int(lo), int(lo) + p.rows, L, T))
        if not transforms:
            return None
        Mn = ConsistencyOperator(new, M.n)
        bn = np.asarray(Mn.b, dtype=float).reshape(-1)
        return RowMetric(transforms, M, np.asarray(M.b, dtype=float).reshape(-1), Mn, bn), Mn

    def to_model_rows(self, v):
        """Multipliers of the solve's rows -> those of the rows before (T' v on each orthonormalized piece)."""
        out = np.array(v, dtype=float, copy=True)
        for lo, hi, _, T in self.transforms:
            out[lo:hi] = T.T @ v[lo:hi]
        return out

    def to_solve_rows(self, y):
        """Multipliers of the rows before -> the solve's rows (L' y on each piece): a warm start's y."""
        for lo, hi, L, _ in self.transforms:
            y[lo:hi] = L.T @ y[lo:hi]
        return y

    def unscale(self, result):
        """y and the rows' multipliers in the rows before: y + lam r = T' (y' + lam r') on the pieces."""
        r_before = self.M_before.matvec(result.x) - self.b_before
        r_after = self.M_after.matvec(result.x) - self.b_after
        multipliers = self.to_model_rows(result.y + result.lam * r_after)
        result["row_multipliers"] = multipliers
        result.y = multipliers - result.lam * r_before
        result.state.y = result.y  # a warm start maps it again (to_solve_rows)
        return result


def _orthonormal(p):
    """(L^{-1} A as CSR, L, L^{-1}) for the piece's rows A, or None where it does not qualify."""
    A = p.A
    used = np.unique(A.indices)
    if p.rows * used.size > MAX_FILL:
        return None
    G = (A @ p.AT).toarray()
    diag = np.diag(G).copy()
    if np.any(diag <= 0) or not np.any(G - np.diag(diag)):
        return None
    if np.count_nonzero(G) > MAX_GRAM_DENSITY * p.rows * p.rows:  # rows that all overlap: not a chain
        return None
    # Gershgorin's bound on the largest eigenvalue of the Gram matrix of the rows at unit norm (the same
    # whatever each row was written times; L^{-1} A is too)
    scale = 1.0 / np.sqrt(diag)
    if np.max((np.abs(G) * scale[:, None] * scale[None, :]).sum(axis=1)) > MAX_GRAM:
        return None
    try:
        L = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:  # dependent rows: left as they are
        return None
    d = np.abs(np.diag(L))
    if d.min() <= 1e-6 * d.max():
        return None
    T = sla.solve_triangular(L, np.eye(p.rows), lower=True)
    TA = T @ A[:, used].toarray()
    rows, cols = np.nonzero(TA)
    return sp.csr_matrix((TA[rows, cols], (rows, used[cols])), shape=A.shape), L, T
