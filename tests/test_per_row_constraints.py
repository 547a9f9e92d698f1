"""Constraints written one row at a time (``[A[i] @ x <= b[i] for i in range(m)]``, a CVXPY habit).

They are the rows of ``A @ x <= b``: the solve must take the same iterations, give each constraint its own
dual value (CVXPY + Clarabel's), and not pay per constraint in every iteration. The inequalities' slacks
share one variable and one block (compiler/lowering.py, step 5), and small consecutive pieces of M are
multiplied as one stacked matrix (compiler/consistency.py, ``_product_runs``).
"""
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows, SparseRows, _product_runs

cp = pytest.importorskip("cvxpy")


def _data(m=12, n=8, seed=3):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    t = 2 * rng.standard_normal(n)
    b = A @ rng.uniform(-0.5, 0.5, n) + 0.1 * rng.uniform(size=m)
    return A, t, b


def _solve(A, t, b, per_row):
    x = fm.Variable(A.shape[1])
    rows = [A[i] @ x <= b[i] for i in range(A.shape[0])] if per_row else [A @ x <= b]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - t)), [fm.Box(x, -1.0, 1.0)] + rows)
    prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=50000)
    return prob, rows


def test_rows_one_at_a_time_solve_as_one_constraint_with_clarabels_duals():
    A, t, b = _data()
    per, rows = _solve(A, t, b, True)
    one, [together] = _solve(A, t, b, False)
    assert per.status == one.status == "optimal"
    assert per.stats.iterations == one.stats.iterations
    assert per.value == pytest.approx(one.value, rel=1e-12)
    duals = np.array([float(np.ravel(c.dual_value)[0]) for c in rows])
    np.testing.assert_allclose(duals, together.dual_value, atol=1e-9)
    xc = cp.Variable(A.shape[1])
    ref = [xc >= -1, xc <= 1] + [A[i] @ xc <= b[i] for i in range(A.shape[0])]
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(xc - t)), ref).solve(solver=cp.CLARABEL)
    assert per.value == pytest.approx(f_star, rel=1e-5)
    clarabel = np.array([float(c.dual_value) for c in ref[2:]])
    assert np.any(clarabel > 1e-2)  # some rows bind: the comparison reads real multipliers
    np.testing.assert_allclose(duals, clarabel, atol=2e-3 * max(1.0, clarabel.max()))


def test_the_inequalities_slacks_share_one_block():
    A, t, b = _data(m=30)
    x = fm.Variable(A.shape[1])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - t)),
                      [fm.Box(x, -1.0, 1.0)] + [A[i] @ x <= b[i] for i in range(A.shape[0])])
    blocks = prob.compile().blocks
    assert len(blocks) == 2  # the box on x and one box of the 30 slacks (was 31 blocks)
    assert sorted(blk.size for blk in blocks) == [A.shape[1], 30]


def test_parameter_rows_keep_their_own_slack_and_follow_the_parameter():
    """An inequality whose slack bound reads a Parameter keeps its own slack (recomputed at each solve);
    the Parameter-free ones around it share one. Re-solved after the Parameter moves, against Clarabel."""
    A, t, b = _data(m=6)
    h = fm.Parameter(value=float(b[0]))
    x = fm.Variable(A.shape[1])
    rows = [A[0] @ x <= h] + [A[i] @ x <= b[i] for i in range(1, A.shape[0])]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - t)), [fm.Box(x, -1.0, 1.0)] + rows)
    assert len(prob.compile().blocks) == 3
    for value in (float(b[0]), float(b[0]) - 0.5):
        h.value = value
        prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=50000, warm_start=True)
        xc = cp.Variable(A.shape[1])
        ref = [xc >= -1, xc <= 1, A[0] @ xc <= value] + [A[i] @ xc <= b[i] for i in range(1, A.shape[0])]
        f_star = cp.Problem(cp.Minimize(cp.sum_squares(xc - t)), ref).solve(solver=cp.CLARABEL)
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(f_star, rel=1e-5)
        np.testing.assert_allclose([float(np.ravel(c.dual_value)[0]) for c in rows],
                                   [float(c.dual_value) for c in ref[2:]], atol=2e-3)


def test_stacked_products_equal_the_pieces_products():
    """M x and M' r over runs of small pieces stacked (with a large piece and copy rows between runs) equal
    the products of M's matrix."""
    rng = np.random.default_rng(0)
    n = 40
    small = [SparseRows(sp.random(2, n, density=0.3, random_state=k), rng.standard_normal(2)) for k in range(5)]
    large = SparseRows(sp.csr_matrix(rng.standard_normal((300, n))), rng.standard_normal(300))
    pieces = small[:3] + [CopyRows(slice(0, 10), slice(10, 20)), large] + small[3:]
    M = ConsistencyOperator(pieces, n)
    runs = _product_runs(M.pieces, M.offsets)
    # the three small pieces stacked; the copy rows and the large piece (12,000 entries) alone; the last two stacked
    assert len(runs) == 4
    assert [hi - lo for _, lo, hi in runs][0] == 6
    x, r = rng.standard_normal(n), rng.standard_normal(M.shape[0])
    np.testing.assert_allclose(M.matvec(x), M.csr() @ x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(M.rmatvec(r), M.csr().T @ r, rtol=1e-13, atol=1e-13)
    # rows rebuilt in place (a Parameter's new value): the products follow once told
    small[0].A = small[0].A * 3.0
    small[0].AT = small[0].A.T.tocsr()
    M.pieces_changed()
    np.testing.assert_allclose(M.matvec(x), M.csr() @ x, rtol=1e-13, atol=1e-13)
