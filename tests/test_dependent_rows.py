"""Nearly dependent and dependent equality rows (fwmodel/engine/row_metric.py, RankRevealedRows) against Clarabel.

One row of ``A @ x == b`` is another plus 1e-6 times noise: the rows combine into a constraint at scale
1e-6 that a feasibility test in the rows' own units barely sees ("optimal" up to 23 % below f* before the
rows were orthonormalized). The reference is Clarabel on an orthonormal basis of the rows' span (the same
feasible set, read at its true scale; Clarabel on the rows as written returns the answer without the
combination once the noise is ~1e-8).
"""
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.compiler.consistency import ConsistencyOperator, SparseRows
from fwmodel.engine import row_metric

from _benchmarks import benchmark

KINDS = ("box", "l1", "simplex")


def _instance(seed, n=30, m=4, delta=1e-6, kind="box", shift=0.0):
    """(A, b, c) of benchmarks/dependent_rows.py's projection models (its generator, imported)."""
    A, b, c, _, _ = benchmark("dependent_rows").instance(seed, n, m, delta, kind, "proj", shift)
    return A, b, c


def _model(lib, A, b, c, kind):
    """(problem, x, rows) of min ||x - c||^2 over the set with rows A x = b (the benchmark's builder, imported)."""
    return benchmark("dependent_rows").build(lib, A, b, c, None, None, kind)


def _span(A, b):
    """Q' x = q: orthonormal rows with the feasible set of A x = b (rows dependent to rounding dropped)."""
    Q, R, order = sla.qr(A.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    k = int(np.count_nonzero(d > max(A.shape) * np.finfo(float).eps * d[0]))
    return Q[:, :k].T, sla.solve_triangular(R[:k, :k], b[order][:k], trans="T")


def _clarabel(A, b, c, kind):
    prob, x, rows = _model("cp", A, b, c, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL")
    return prob, x, rows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("delta", [1e-4, 1e-6, 1e-8])
def test_nearly_dependent_rows_optimal_at_the_optimum(kind, delta):
    A, b, c = _instance(0, delta=delta, kind=kind)
    Q, q = _span(A, b)
    ref, _, _ = _clarabel(Q, q, c, kind)
    prob, x, _ = _model("fm", A, b, c, kind)
    prob.solve()
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value), (prob.value, ref.value)
    # feasible in the rows' span: every combination of the rows met at its own scale
    assert np.linalg.norm(Q @ x.value - q) <= 1e-3 * max(1.0, np.linalg.norm(x.value))


def test_nearly_dependent_rows_duals_against_clarabel():
    """The multipliers are unique (A has full row rank) but large along the combination: A' y, the part of
    the KKT conditions they enter, matches Clarabel's; at delta = 1e-2 (still orthonormalized, Clarabel
    accurate) y itself does."""
    for delta, check_y in ((1e-2, True), (1e-6, False)):
        A, b, c = _instance(1, delta=delta, kind="box")
        ref, _, ref_rows = _clarabel(A, b, c, "box")
        prob, x, rows = _model("fm", A, b, c, "box")
        prob.solve(tol=1e-6, feas_tol=1e-6)
        assert prob.status == "optimal"
        ref_grad = A.T @ ref_rows.dual_value
        np.testing.assert_allclose(A.T @ rows.dual_value, ref_grad, atol=1e-3 * np.linalg.norm(ref_grad))
        if check_y:
            np.testing.assert_allclose(rows.dual_value, ref_rows.dual_value,
                                       atol=1e-2 * np.linalg.norm(ref_rows.dual_value))


@pytest.mark.parametrize("kind", KINDS)
def test_exactly_dependent_consistent_rows(kind):
    A, b, c = _instance(2, delta=0.0, kind=kind)
    ref, _, ref_rows = _clarabel(A, b, c, kind)
    prob, x, rows = _model("fm", A, b, c, kind)
    prob.solve()
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert np.linalg.norm(A @ x.value - b) <= 1e-3 * max(1.0, np.linalg.norm(b))
    # one of the two equal rows has the multiplier 0 (any split between them is valid); A' y is Clarabel's
    y = rows.dual_value
    assert min(abs(y[0]), abs(y[-1])) <= 1e-12 * np.linalg.norm(y)
    ref_grad = A.T @ ref_rows.dual_value
    np.testing.assert_allclose(A.T @ y, ref_grad, atol=2e-2 * np.linalg.norm(ref_grad))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_dependent_inconsistent_rows_infeasible(kind, delta):
    A, b, c = _instance(0, delta=delta, kind=kind, shift=0.1)
    ref, _, _ = _clarabel(A, b, c, kind)
    assert ref.status == "infeasible"
    prob, _, _ = _model("fm", A, b, c, kind)
    prob.solve()
    assert prob.status == "infeasible"


def test_warm_start_after_the_right_hand_side_moved():
    """The multipliers go back to the model's rows and forth again (to_solve_rows) at a warm start."""
    A, b, c = _instance(3, delta=1e-6, kind="box")
    x = fm.Variable(A.shape[1])
    rhs = fm.Parameter(A.shape[0], value=b)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -1.0, 1.0), A @ x == rhs])
    prob.solve()
    rng = np.random.default_rng(4)
    x1 = rng.uniform(-0.5, 0.5, A.shape[1])
    rhs.value = A @ x1
    prob.solve(warm_start=True)
    Q, q = _span(A, A @ x1)
    ref, _, _ = _clarabel(Q, q, c, "box")
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)


# ---- the piece itself -------------------------------------------------------------------------------------


def _piece(A, b):
    made = row_metric.RowMetric.of(ConsistencyOperator([SparseRows(sp.csr_matrix(A), b)], A.shape[1]))
    assert made is not None
    metric, Mn = made
    (piece,) = Mn.pieces
    assert isinstance(piece, row_metric.RankRevealedRows)
    return metric, Mn, piece


@pytest.mark.parametrize("delta", [1e-3, 1e-9, 0.0])
def test_rank_revealed_rows_against_dense(delta):
    rng = np.random.default_rng(5)
    A, _, _ = _instance(5, n=12, m=5, delta=delta)
    A = np.hstack([A, np.zeros((5, 3))])  # columns the rows do not read
    A[1] *= 1e3  # rows in other units: the same span
    x0 = rng.standard_normal(A.shape[1])
    b = A @ x0
    metric, Mn, piece = _piece(A, b)
    m, n = A.shape
    rank = 4 if delta == 0.0 else 5
    assert piece.rank == rank
    Q = Mn.csr().toarray()
    np.testing.assert_allclose(Q @ Q.T, np.diag([1.0] * rank + [0.0] * (m - rank)), atol=1e-12)
    # the same feasible set: A's rows in Q's span, and Q x = c where A x = b
    np.testing.assert_allclose(A @ Q.T @ Q, A, atol=1e-12 * np.linalg.norm(A))
    # (b = A x0 holds to rounding, which the combination at scale delta amplifies by 1 / delta)
    rounding = 1e-12 if delta == 0.0 else 1e-15 / delta
    np.testing.assert_allclose(Mn.matvec(x0) - Mn.b, 0.0, atol=rounding * np.linalg.norm(Mn.b))
    x = rng.standard_normal(n)
    np.testing.assert_allclose(Mn.matvec(x), Q @ x, atol=1e-12)
    r = rng.standard_normal(m)
    np.testing.assert_allclose(Mn.rmatvec(r), Q.T @ r, atol=1e-12)
    norms2 = np.einsum("ij,ij->j", Q, Q)
    sums = np.zeros(2)
    piece.add_column_norms2(np.array([0, 6, n]), sums)
    np.testing.assert_allclose(sums, [norms2[:6].sum(), norms2[6:].sum()], rtol=1e-12)
    d = rng.standard_normal(n)
    assert np.isclose(Mn.diagonal_gain(d), np.dot(norms2, d * d), rtol=1e-12)
    products, col_norms2 = Mn.block_products([slice(0, 6), slice(6, n)])
    np.testing.assert_allclose(col_norms2, norms2, atol=1e-12)
    np.testing.assert_allclose(products[1](x[6:]), Q[:, 6:] @ x[6:], atol=1e-12)
    # multipliers: A' y_model = Q' y_solve; a dropped row's is 0; and back again
    y_solve = rng.standard_normal(m)
    y_solve[rank:] = 0.0
    y_model = metric.to_model_rows(y_solve)
    np.testing.assert_allclose(A.T @ y_model, Q.T @ y_solve, atol=max(1e-8, rounding) * np.linalg.norm(y_solve))
    if rank < m:
        assert np.count_nonzero(y_model == 0.0) == m - rank
    np.testing.assert_allclose(metric.to_solve_rows(y_model.copy()), y_solve,
                               atol=1e-8 * np.linalg.norm(y_solve))
    # any split of the model's multipliers maps to the same solve rows (A' y is what they act through)
    if rank < m:
        split = y_model.copy()
        first, dropped = piece.order[0], piece.order[-1]
        assert np.allclose(A[first] / np.linalg.norm(A[first]), A[dropped] / np.linalg.norm(A[dropped]))
        moved = 0.3 * split[first]
        split[first] -= moved
        split[dropped] += moved * np.linalg.norm(A[first]) / np.linalg.norm(A[dropped]) * np.sign(
            A[first] @ A[dropped])
        np.testing.assert_allclose(metric.to_solve_rows(split), y_solve, atol=1e-8 * np.linalg.norm(y_solve))


def test_which_dense_pieces_are_orthonormalized():
    def of(A, b):
        return row_metric.RowMetric.of(ConsistencyOperator([SparseRows(sp.csr_matrix(A), b)], A.shape[1]))

    rng = np.random.default_rng(6)
    A = rng.standard_normal((4, 30))
    assert of(A, A @ rng.standard_normal(30)) is None  # well-conditioned rows: left as written
    A[-1] = A[0] + 1e-6 * rng.standard_normal(30)
    assert of(A, A @ rng.standard_normal(30)) is not None  # nearly dependent: orthonormalized
    A[-1] = 2.0 * A[0]
    b = A @ rng.standard_normal(30)
    assert of(A, b) is not None  # dependent, consistent: the duplicate dropped
    b[-1] += 1e-3 * abs(b[-1])
    assert of(A, b) is None  # dependent, inconsistent: left as written, for the certificate
    big = np.tile(A, (1, 2000))  # nearly dependent but too large for a dense QR at every solve
    assert big.size > row_metric.MAX_DENSE_ENTRIES and of(big, big @ np.ones(big.shape[1])) is None
    # more rows than columns: dependent whatever their values
    C = rng.standard_normal((6, 4))
    made = of(C, C @ rng.standard_normal(4))
    assert made is not None and made[1].pieces[0].rank == 4


def test_nearly_dependent_rows_of_two_constraints():
    """A row of one constraint close to another constraint's: no piece alone is nearly dependent, the two
    stacked are; each constraint's dual value is its own rows' multipliers."""
    A, b, c = _instance(1, delta=1e-6, kind="box")
    Q, q = _span(A, b)
    ref, _, _ = _clarabel(Q, q, c, "box")
    _, _, ref_rows = _clarabel(A, b, c, "box")
    x = fm.Variable(A.shape[1])
    first, last = A[:-1] @ x == b[:-1], A[-1:] @ x == b[-1:]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -1.0, 1.0), first, last])
    prob.solve(tol=1e-6, feas_tol=1e-6)
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert np.linalg.norm(Q @ x.value - q) <= 1e-3 * max(1.0, np.linalg.norm(x.value))
    y = np.concatenate([first.dual_value, last.dual_value])
    ref_grad = A.T @ ref_rows.dual_value
    np.testing.assert_allclose(A.T @ y, ref_grad, atol=1e-3 * np.linalg.norm(ref_grad))


def test_a_duplicated_row_read_with_eight_digits_keeps_the_pair_beside_it_orthonormalized():
    """Rows [a0, a0, a2, a2 + 1e-6 n] in one constraint, the duplicate's right-hand side off by 1e-8 relative (data
    read with 8 significant digits): with the rounding tolerance at 1e-9 the whole piece was left as written and
    ended "optimal" 2.3 % below f*; written as two constraints it was right."""
    n = 30
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, n))
    A[1] = A[0]
    A[3] = A[2] + 1e-6 * rng.standard_normal(n)
    c = 2 * rng.standard_normal(n)
    x0 = rng.uniform(-0.5, 0.5, n)
    b = A @ x0
    b[1] = b[0] * (1 + 1e-8) + 1e-8
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -1, 1), A @ x == b])
    prob.solve()
    # the same feasible set written well conditioned: rows 0, 2 and the combination (a3 - a2) / 1e-6
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - c)),
                     [xc >= -1, xc <= 1, A[0] @ xc == b[0], A[2] @ xc == b[2],
                      ((A[3] - A[2]) / 1e-6) @ xc == (b[3] - b[2]) / 1e-6]).solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref), (prob.value, ref)


@pytest.mark.parametrize("rows", [201, 260])
def test_more_than_two_hundred_single_row_constraints_with_a_nearly_dependent_pair(rows):
    # one constraint per row, stacked into one piece: a cap of 200 rows left them as written, "optimal"
    # 2e-3 .. 9e-3 below f* (benchmarks/dependent_rows.py --many)
    prob, f_star = benchmark("dependent_rows").many_single_rows(0, rows)
    prob.solve()
    assert prob.status == "optimal", prob.stats
    assert abs(prob.value - f_star) <= 1e-3 * abs(f_star), (prob.value, f_star)


def test_more_rows_than_columns_are_dependent_by_their_count():
    # 30 consistent rows on 20 columns: no Gram matrix of the rows is formed, the QR keeps a basis of 20
    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 20))
    b = A @ rng.uniform(-0.5, 0.5, 20)
    made = row_metric.rank_revealed_rows(SparseRows(sp.csr_matrix(A), b))
    assert made is not None
    x = rng.standard_normal(20)
    out = np.empty(made.rows)
    made.matvec(x, out)
    # the kept rows are an orthonormal basis of A's row space, all of R^20 here (dropped rows read 0)
    assert np.isclose(np.linalg.norm(out), np.linalg.norm(x))
