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
