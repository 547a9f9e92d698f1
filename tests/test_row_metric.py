"""Rows replaced by orthonormal ones L^{-1} A (fwmodel/engine/row_metric.py) against CVXPY + Clarabel.

A solve whose rows were orthonormalized must give the model's optimum and
the model's multipliers (``dual_value`` in the units the constraint was
written in), cold and warm-started after a Parameter moved.
"""
import warnings

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.compiler.consistency import ConsistencyOperator, SparseRows
from fwmodel.engine import row_metric

DUAL_RTOL = 1e-2


def _clarabel(prob):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob.solve(solver="CLARABEL")


def _tv_data(seed, n=30):
    rng = np.random.default_rng(seed)
    truth = np.repeat(rng.uniform(0, 1, 5), n // 5)
    y = truth + 0.1 * rng.standard_normal(n)
    D = np.diff(np.eye(n), axis=0)
    return y, D, 0.8 * np.abs(D @ truth).sum()


def _tv_reference(y, D, t):
    z = cp.Variable(y.size)
    tv = cp.norm1(D @ z) <= t
    ref = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [tv, z >= 0, z <= 1])
    _clarabel(ref)
    return ref, z, tv


def _applied(monkeypatch):
    """Records whether RowMetric.of orthonormalized a piece in each solve."""
    seen = []
    of = row_metric.RowMetric.of

    def spy(M):
        made = of(M)
        seen.append(made is not None)
        return made
    monkeypatch.setattr(row_metric.RowMetric, "of", staticmethod(spy))
    return seen


def test_tv_denoiser_value_and_l1_dual(monkeypatch):
    seen = _applied(monkeypatch)
    y, D, t = _tv_data(3)
    x = fm.Variable(y.size)
    ball = fm.norm1(D @ x) <= t  # compiled as fm.L1Ball(D @ x, t): a copy z tied by the rows z - D x = 0
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [ball, fm.Box(x, 0.0, 1.0)])
    prob.solve(tol=1e-7, max_iter=20000)
    ref, z, tv = _tv_reference(y, D, t)
    assert seen == [True]
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(x.value, z.value, atol=1e-3)
    np.testing.assert_allclose(ball.dual_value, tv.dual_value, rtol=DUAL_RTOL)


def test_tv_denoiser_warm_start_after_the_data_moved(monkeypatch):
    seen = _applied(monkeypatch)
    y, D, t = _tv_data(4)
    target = fm.Parameter(y.size, value=y)
    x = fm.Variable(y.size)
    ball = fm.norm1(D @ x) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), [ball, fm.Box(x, 0.0, 1.0)])
    prob.solve(tol=1e-7, max_iter=20000)
    y2 = y + 0.05 * np.random.default_rng(9).standard_normal(y.size)
    target.value = y2
    prob.solve(tol=1e-7, max_iter=20000, warm_start=True)
    ref, z, tv = _tv_reference(y2, D, t)
    assert seen == [True, True]
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(ball.dual_value, tv.dual_value, rtol=DUAL_RTOL)


def test_chain_equality_dual_in_model_units(monkeypatch):
    """Bidiagonal rows written times 7 (A A' tridiagonal): dual_value in the rows as written."""
    seen = _applied(monkeypatch)
    rng = np.random.default_rng(5)
    n = 12
    A = 7.0 * (np.eye(n - 1, n) - np.eye(n - 1, n, k=1) * 0.5)
    b = A @ rng.uniform(0.2, 0.8, n)
    c = rng.standard_normal(n)
    x = fm.Variable(n)
    rows = A @ x == b
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [rows, fm.Box(x, 0.0, 1.0)])
    prob.solve(tol=1e-8, max_iter=50000)
    z = cp.Variable(n)
    rows_c = A @ z == b
    ref = cp.Problem(cp.Minimize(cp.sum_squares(z - c)), [rows_c, z >= 0, z <= 1])
    _clarabel(ref)
    assert seen == [True]
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(rows.dual_value, rows_c.dual_value, rtol=DUAL_RTOL, atol=1e-3)


def test_which_pieces_are_orthonormalized():
    chain = ConsistencyOperator([SparseRows(sp.csr_matrix(np.eye(8, 9) - np.eye(8, 9, k=1)), np.ones(8))], 9)
    metric, M = row_metric.RowMetric.of(chain)
    A = M.csr()
    np.testing.assert_allclose((A @ A.T).toarray(), np.eye(8), atol=1e-12)  # orthonormal rows
    # the same feasible set: the new rows hold exactly where the old ones do
    x = np.linalg.lstsq(chain.csr().toarray(), np.ones(8), rcond=None)[0]
    np.testing.assert_allclose(A @ x - M.b, 0.0, atol=1e-12)
    # multipliers map back and forth: T' L' y = y
    y = np.arange(8.0)
    np.testing.assert_allclose(metric.to_model_rows(metric.to_solve_rows(y.copy())), y, atol=1e-12)
    # A A' diagonal (row scaling's case), 20 nearly parallel rows (Gram bound about 20 > MAX_GRAM); three rows that
    # all overlap (Gram dense): left as they are
    diagonal = ConsistencyOperator([SparseRows(sp.eye(4, 5, format="csr"), np.zeros(4))], 5)
    assert row_metric.RowMetric.of(diagonal) is None
    dense = ConsistencyOperator([SparseRows(sp.csr_matrix(np.ones((20, 40)) + np.eye(20, 40)), np.zeros(20))], 40)
    assert row_metric.RowMetric.of(dense) is None
    few = ConsistencyOperator([SparseRows(sp.csr_matrix(np.eye(3, 40) + 0.1), np.zeros(3))], 40)  # Gram dense
    assert row_metric.RowMetric.of(few) is None


# ---- the rows kept sparse: L^{-1} A applied as A then a banded triangular solve -----------------------------


def _random_chain(rng, m, n_extra=0, width=1):
    """m rows, row i on columns i..i+width with random weights (a chain: A A' banded), plus a copy column each."""
    n = m + width + n_extra
    A = np.zeros((m, n))
    for i in range(m):
        A[i, i:i + width + 1] = rng.uniform(0.5, 2.0, width + 1) * rng.choice([-1.0, 1.0], width + 1)
    return np.hstack([np.diag(rng.uniform(0.5, 2.0, m)), A])  # z_i - (chain x)_i: the tie of a set's copy


def _grid_rows(k):
    """2-D differences of a k x k image (horizontal then vertical), tied to a copy: [I, -D]."""
    Dk = np.diff(np.eye(k), axis=0)
    D = np.vstack([np.kron(np.eye(k), Dk), np.kron(Dk, np.eye(k))])
    return np.hstack([np.eye(D.shape[0]), -D])


def _metric_piece(A, b):
    M = ConsistencyOperator([SparseRows(sp.csr_matrix(A), b)], A.shape[1])
    made = row_metric.RowMetric.of(M)
    assert made is not None
    metric, Mn = made
    (piece,) = Mn.pieces
    assert isinstance(piece, row_metric.OrthonormalRows)
    return metric, Mn, piece


def _check_against_dense(A, b, rng):
    """The piece's products against closed forms that do not depend on the factor or the order of the rows:
    Q' Q = A^+ A (the projector on A's row space) and Q' (Q x - b') = A^+ (A x - b) for any Q with orthonormal
    rows and the same feasible set; then each product against the dense Q the piece stands for."""
    metric, Mn, piece = _metric_piece(A, b)
    m, n = A.shape
    Q = Mn.csr().toarray()
    np.testing.assert_allclose(Q @ Q.T, np.eye(m), atol=1e-10)
    pinv = np.linalg.pinv(A)
    np.testing.assert_allclose(Q.T @ Q, pinv @ A, atol=1e-10)
    x = rng.standard_normal(n)
    np.testing.assert_allclose(Q.T @ (Q @ x - Mn.b), pinv @ (A @ x - b), atol=1e-10)
    np.testing.assert_allclose(Mn.matvec(x), Q @ x, atol=1e-12)
    r = rng.standard_normal(m)
    np.testing.assert_allclose(Mn.rmatvec(r), Q.T @ r, atol=1e-12)
    # ||M e_j||^2 (Takahashi's band of (A A')^{-1}) and the per-block products of BlockColumns
    norms2 = np.einsum("ij,ij->j", Q, Q)
    np.testing.assert_allclose(np.diag(pinv @ A), norms2, atol=1e-12)
    bounds = np.array([0, m, n])
    sums = np.zeros(2)
    piece.add_column_norms2(bounds, sums)
    np.testing.assert_allclose(sums, [norms2[:m].sum(), norms2[m:].sum()], rtol=1e-12)
    d = rng.standard_normal(n)
    assert np.isclose(Mn.diagonal_gain(d), np.dot(norms2, d * d), rtol=1e-12)
    products, col_norms2 = Mn.block_products([slice(0, m), slice(m, n)])
    np.testing.assert_allclose(col_norms2, norms2, atol=1e-12)
    np.testing.assert_allclose(products[0](x[:m]), Q[:, :m] @ x[:m], atol=1e-12)
    np.testing.assert_allclose(products[1](x[m:]), Q[:, m:] @ x[m:], atol=1e-12)
    # multipliers: y + lam r in the model's rows is Q's A^{-T}-image: A' y_model = Q' y_solve
    y_solve = rng.standard_normal(m)
    y_model = metric.to_model_rows(y_solve)
    np.testing.assert_allclose(A.T @ y_model, Q.T @ y_solve, atol=1e-10)
    np.testing.assert_allclose(metric.to_solve_rows(y_model.copy()), y_solve, atol=1e-10)
    return piece


def test_band_rows_against_dense_on_random_chains():
    rng = np.random.default_rng(11)
    for m, width in ((6, 1), (7, 1), (40, 1), (60, 2), (120, 3)):
        A = _random_chain(rng, m, width=width)
        piece = _check_against_dense(A, rng.standard_normal(m), rng)
        assert piece.band.shape[0] - 1 == width  # the rows as written: their band is already the narrowest
        np.testing.assert_array_equal(piece.order, np.arange(m))


def test_band_rows_in_reverse_cuthill_mckee_order(monkeypatch):
    """2-D differences (horizontal rows, then vertical): reordered to a band of ~2k, products unchanged."""
    monkeypatch.setattr(row_metric, "MAX_BAND_FILL", np.inf)  # 2-D rows are left alone by default
    rng = np.random.default_rng(12)
    A = _grid_rows(6)
    piece = _check_against_dense(A, rng.standard_normal(A.shape[0]), rng)
    assert piece.band.shape[0] - 1 <= 2 * 6 < A.shape[0] // 2
    assert not np.array_equal(piece.order, np.arange(A.shape[0]))


def test_which_rows_keep_a_band():
    """A chain of 2,000 rows is orthonormalized (no row limit); 2-D differences, whose factor's band holds
    more than MAX_BAND_FILL times A's entries, are not."""
    m = 2000
    D = sp.diags([-np.ones(m), np.ones(m)], [0, 1], shape=(m, m + 1))
    A = sp.hstack([sp.eye(m), -D]).tocsr()
    made = row_metric.RowMetric.of(ConsistencyOperator([SparseRows(A, np.zeros(m))], A.shape[1]))
    assert made is not None and made[1].pieces[0].band.shape == (2, m)
    grid = sp.csr_matrix(_grid_rows(20))
    assert row_metric.RowMetric.of(ConsistencyOperator([SparseRows(grid, np.zeros(grid.shape[0]))], grid.shape[1])) \
        is None


def _tv_2d_data(k, seed):
    rng = np.random.default_rng(seed)
    truth = np.kron(rng.uniform(0, 1, (2, 2)), np.ones((k // 2, k // 2))).ravel()
    y = truth + 0.1 * rng.standard_normal(k * k)
    Dk = sp.diags([-np.ones(k - 1), np.ones(k - 1)], [0, 1], shape=(k - 1, k))
    D = sp.vstack([sp.kron(sp.eye(k), Dk), sp.kron(Dk, sp.eye(k))], format="csr")
    return y, D, 0.8 * np.abs(D @ truth).sum()


def _tv_solve_and_check(monkeypatch, y, D, t, applied, **opts):
    seen = _applied(monkeypatch)
    x = fm.Variable(y.size)
    ball = fm.L1Ball(D @ x, t)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [ball, fm.Box(x, 0.0, 1.0)])
    prob.solve(**opts)
    z = cp.Variable(y.size)
    tv = cp.norm1(D @ z) <= t
    ref = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [tv, z >= 0, z <= 1])
    _clarabel(ref)
    assert seen == [applied]
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-4 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(x.value, z.value, atol=2e-2)
    return prob, ref


def test_long_chain_tv_against_clarabel(monkeypatch):
    """The TV denoiser at n = 600 (599 rows, above the former limit of 500): orthonormalized, optimal."""
    rng = np.random.default_rng(1)
    n = 600
    truth = np.repeat(rng.uniform(0, 1, 6), n // 6)
    y = truth + 0.1 * rng.standard_normal(n)
    D = sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")
    _tv_solve_and_check(monkeypatch, y, D, 0.8 * np.abs(D @ truth).sum(), True)


def test_2d_tv_against_clarabel(monkeypatch):
    """A 12 x 12 image, rows of horizontal and vertical differences: the rows left as they are (band too wide)."""
    _tv_solve_and_check(monkeypatch, *_tv_2d_data(12, 7), False)


def test_2d_tv_with_the_metric_forced_against_clarabel(monkeypatch):
    """The same model at 8 x 8 with the metric forced (rows reordered by reverse Cuthill-McKee): the optimum
    and the ball's multiplier in the model's rows."""
    monkeypatch.setattr(row_metric, "MAX_BAND_FILL", np.inf)
    y, D, t = _tv_2d_data(8, 8)
    seen = _applied(monkeypatch)
    x = fm.Variable(y.size)
    ball = fm.norm1(D @ x) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [ball, fm.Box(x, 0.0, 1.0)])
    prob.solve(tol=1e-7, max_iter=50000)
    z = cp.Variable(y.size)
    tv = cp.norm1(D @ z) <= t
    ref = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [tv, z >= 0, z <= 1])
    _clarabel(ref)
    assert seen == [True]
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, abs(ref.value))
    np.testing.assert_allclose(ball.dual_value, tv.dual_value, rtol=DUAL_RTOL)


def test_band_inverse_against_the_inverse():
    """Takahashi's band of (L L')^{-1} (the column norms' source) against numpy's inverse, bandwidths 0-11."""
    rng = np.random.default_rng(13)
    for m, kd in ((5, 0), (7, 1), (30, 2), (40, 3), (25, 5), (12, 11)):
        B = sum(np.diag(rng.uniform(-1, 1, m - d), -d) for d in range(kd + 1))
        G = B @ B.T + np.eye(m)
        L = np.linalg.cholesky(G)
        band = np.zeros((kd + 1, m))
        for d in range(kd + 1):
            band[d, :m - d] = np.diag(L, -d)
        Z, zb = np.linalg.inv(G), row_metric._band_inverse(band)
        for d in range(kd + 1):
            np.testing.assert_allclose(zb[d, :m - d], np.diag(Z, -d), rtol=1e-12, atol=1e-14)


def test_block_products_next_to_a_piece_left_alone():
    """A chain orthonormalized next to a single row left as written: each block's M_k d_k and the column
    norms against the dense stack [L^{-1} A; c']."""
    rng = np.random.default_rng(14)
    A = _random_chain(rng, 30)
    n = A.shape[1]
    c = rng.standard_normal(n)
    M = ConsistencyOperator([SparseRows(sp.csr_matrix(A), np.zeros(30)), SparseRows(sp.csr_matrix(c), [1.0])], n)
    metric, Mn = row_metric.RowMetric.of(M)
    assert isinstance(Mn.pieces[0], row_metric.OrthonormalRows) and isinstance(Mn.pieces[1], SparseRows)
    L = np.linalg.cholesky(A @ A.T)
    dense = np.vstack([np.linalg.solve(L, A), c])
    cut = 17
    products, norms2 = Mn.block_products([slice(0, cut), slice(cut, n)])
    np.testing.assert_allclose(norms2, np.einsum("ij,ij->j", dense, dense), rtol=1e-12)
    d = rng.standard_normal(n)
    np.testing.assert_allclose(products[0](d[:cut]), dense[:, :cut] @ d[:cut], atol=1e-12)
    np.testing.assert_allclose(products[1](d[cut:]), dense[:, cut:] @ d[cut:], atol=1e-12)
    np.testing.assert_allclose(Mn.matvec(d), dense @ d, atol=1e-12)


def test_a_penalty_cycle_closes_in(monkeypatch):
    """The TV denoiser at n = 600 with 6 pieces, data seed 6 (``benchmarks/tv_scale.py``'s ``tv_1d``): the
    drift rule (lam x4) and the balance rule (lam / 2) took turns, lam cycled between 1e3 and 4e4 and the
    solve ran to max_iter (10,000); each reversal now halves the moves in log scale: optimal."""
    rng = np.random.default_rng(6)
    n = 600
    truth = np.repeat(rng.uniform(0, 1, 6), -(-n // 6))[:n]
    y = truth + 0.1 * rng.standard_normal(n)
    D = sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")
    prob, _ = _tv_solve_and_check(monkeypatch, y, D, 0.8 * np.abs(D @ truth).sum(), True)
    assert prob.stats.iterations <= 3000


def test_reversals_of_the_penalty_shrink_its_moves():
    """Pending moves that alternate in direction: x4, / 2, x4, / 2 ... give lam moves of x4, / 1.41, x1.41,
    / 1.19 ... (halved in log scale at each reversal); moves in one direction keep their size."""
    from fwmodel.engine.schedules import AdaptiveMultiplier

    schedule = AdaptiveMultiplier(1.0)
    ratios = []
    for factor in (4.0, 0.5, 4.0, 0.5, 4.0):
        before = schedule.lam
        schedule._pending_lam = factor * before
        schedule.penalty(before)
        ratios.append(schedule.lam / before)
    np.testing.assert_allclose(ratios, [4.0, 0.5 ** 0.5, 4.0 ** 0.25, 0.5 ** 0.125, 4.0 ** 0.0625])
    schedule = AdaptiveMultiplier(1.0)
    for _ in range(3):  # one direction: full size
        before = schedule.lam
        schedule._pending_lam = 4.0 * before
        schedule.penalty(before)
        assert abs(schedule.lam - 4.0 * before) <= 1e-12 * schedule.lam
