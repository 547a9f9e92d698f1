"""The default penalty lam (engine/schedules.py ``default_penalty``) and the row gain it is floored by."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows, MarginalizationRows, SparseRows
from fwmodel.engine.lagrangian import _Operator

cp = pytest.importorskip("cvxpy")


def _sign_average(M, d):
    """Mean of ||M (sigma * d)||^2 over every sign vector sigma (brute force)."""
    values = [np.sum((M @ (np.array(s) * d)) ** 2) for s in itertools.product((-1.0, 1.0), repeat=d.size)]
    return float(np.mean(values))


def test_diagonal_gain_is_the_random_sign_mean_for_every_piece():
    rng = np.random.default_rng(3)
    n = 10
    A = sp.random(3, n, density=0.5, random_state=4, data_rvs=rng.standard_normal)
    # two 2 x 2 edge tables (8 entries) over three 2-state nodes (6 entries)
    marg = MarginalizationRows(edge_offset=0, node_offset=8, endpoint=[0, 2], n_nodes=3, n_states=2, axis=2)
    op = ConsistencyOperator([CopyRows(slice(0, 3), slice(5, 8)), SparseRows(A, np.zeros(3))], n)
    d = rng.standard_normal(n)
    assert op.diagonal_gain(d) == pytest.approx(_sign_average(op.csr().toarray(), d), rel=1e-12)
    op2 = ConsistencyOperator([marg], 14)
    d2 = rng.standard_normal(14)
    M2 = op2.csr().toarray()
    assert op2.diagonal_gain(d2) == pytest.approx(np.sum(M2 ** 2 * d2[None, :] ** 2), rel=1e-12)
    assert op2.diagonal_gain(d2) == pytest.approx(_sign_average(M2, d2), rel=1e-12)
    # the engine's wrapper for a plain sparse matrix, a dense one, and an opaque operator
    dense = rng.standard_normal((2, n))
    for M in (sp.csr_matrix(A), dense):
        Md = M.toarray() if sp.issparse(M) else M
        assert _Operator(M, n).diagonal_gain(d) == pytest.approx(_sign_average(Md, d), rel=1e-12)
    from scipy.sparse.linalg import aslinearoperator
    assert _Operator(aslinearoperator(dense), n).diagonal_gain is None


def _trace_ball_with_a_sum_row(seed, n=30):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, 4)) @ rng.standard_normal((4, n)) + 0.1 * rng.standard_normal((n, n))
    return C, 0.5 * np.linalg.svd(C, compute_uv=False).sum()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trace_ball_with_one_equality_row_reaches_clarabel(seed):
    # The first FW direction, a rank-one u v' of the trace-norm ball, nearly misses
    # the all-ones row of sum(X) == 5 (||M d||^2 was 1e-6 of the row's mean gain for
    # seed 2): lam came out 3e6 and the solve stopped at max_iter at 3554 against
    # Clarabel's 706.9. The floor on ||M d||^2 keeps lam at the problem's scale.
    C, radius = _trace_ball_with_a_sum_row(seed)
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, radius), fm.sum(X) == 5])
    value = prob.solve()
    Y = cp.Variable(C.shape)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Y - C)), [cp.normNuc(Y) <= radius, cp.sum(Y) == 5])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert abs(value - ref.value) <= 1e-3 * abs(ref.value)
    assert abs(X.value.sum() - 5) <= 1e-3 * max(1.0, np.linalg.norm(X.value))


def test_a_stalled_solve_returns_its_last_point_unless_a_seen_one_is_twice_better_by_merit():
    # With a penalty far too stiff (lam given by hand) the solve stalls: its first
    # iterate has a FW gap of 5029, the last 7349 at the same feasibility, but an
    # objective of 3554 against 3291. The returned point was the first one (merit
    # 1.5x better); a snapshot now replaces the last point only when its merit is
    # less than half (engine/progress.py BEST_POINT_FACTOR), as it replaces an
    # earlier snapshot.
    # (a lam given by hand is the penalty of the rows at unit norm, engine/stopping.py row_norm_equilibration:
    # the sum row's norm is sqrt(C.size), so 3.2e6 in the row's units is 3.2e6 * C.size)
    C, radius = _trace_ball_with_a_sum_row(2)
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, radius), fm.sum(X) == 5])
    value = prob.solve(lam=3.2e6 * C.size, max_iter=300)
    history = prob.history.to_dict()
    assert prob.status == "max_iter"
    assert "best point" not in prob.stats.message
    assert value == pytest.approx(history["objective"][-1], rel=1e-9)
    assert value < history["objective"][1] - 100
    assert abs(X.value.sum() - 5) < 1e-4


def test_default_penalty_forms_no_full_size_array_on_tied_copies(monkeypatch):
    # On the paper's problem (two tied copies) the objective's gradient is kept once
    # and shared; <g, d> would form its n-size array (2 d x d arrays: a solve's peak
    # at d = 4000 went from 8 to 10 arrays). The slope is only taken for a linear
    # objective, where the curvature cannot serve.
    import tracemalloc

    import fwmodel.engine.fwal as fwal
    from fwmodel.datasets import sparse_low_rank_covariance
    from fwmodel.experiments import build_problem

    d = 200
    prob, _ = build_problem(sparse_low_rank_covariance(d, threshold=0.9, seed=0))
    original, peaks, kept = fwal.default_penalty, [], []

    def measured(objective, *args, **kwargs):
        # where v lives in the lent gradient's array the objective keeps no v-size array of its own, and
        # its curvature takes one for the call (W d): the same memory, held for the call only
        kept.append(objective._v_array is not None)
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        lam = original(objective, *args, **kwargs)
        peaks.append(tracemalloc.get_traced_memory()[1] - start)
        return lam

    monkeypatch.setattr(fwal, "default_penalty", measured)
    tracemalloc.start()
    try:
        prob.solve(max_iter=2, projection=False, rank_k=False)
    finally:
        tracemalloc.stop()
    assert len(peaks) == 1
    v_size = 0 if kept[0] else 8 * d * d  # one copy's size: v's
    assert peaks[0] < 0.25 * 8 * d * d + v_size


def test_block_column_norms_are_the_dense_sums_for_every_piece():
    """``sum_{j in block k} ||M e_j||^2`` from the pieces (no dense M) against the CSR matrix's columns summed per
    block, for copy rows on slices (contiguous and stepped) and on positions, sparse rows, marginalization rows,
    and the engine's wrapper of a CSR, a CSC and a dense matrix."""
    rng = np.random.default_rng(7)
    n = 30
    A = sp.random(4, n, density=0.4, random_state=5, data_rvs=rng.standard_normal)
    marg = MarginalizationRows(edge_offset=14, node_offset=22, endpoint=[0, 2], n_nodes=4, n_states=2, axis=1)
    pieces = [CopyRows(slice(0, 5), slice(5, 10)), CopyRows(slice(0, 8, 3), np.array([11, 13, 12])),
              SparseRows(A, np.zeros(4)), marg]
    op = ConsistencyOperator(pieces, n)
    column_norms2 = np.asarray(op.csr().multiply(op.csr()).sum(axis=0)).ravel()
    for bounds in ([0, 30], [0, 4, 9, 10, 17, 22, 25, 30], list(range(31))):
        expected = [column_norms2[a:b].sum() for a, b in zip(bounds, bounds[1:])]
        np.testing.assert_allclose(op.block_column_norms2(bounds), expected, rtol=1e-12, atol=1e-12)
        dense = A.toarray()
        for M in (A.tocsr(), A.tocsc(), dense):
            got = _Operator(M, n).block_column_norms2(np.array(bounds))
            np.testing.assert_allclose(got, [np.sum(dense[:, a:b] ** 2) for a, b in zip(bounds, bounds[1:])],
                                       rtol=1e-12, atol=1e-12)
    d = rng.standard_normal(n)
    assert _Operator(A.tocsc(), n).diagonal_gain(d) == pytest.approx(_sign_average(A.toarray()[:, :12], d[:12]) +
                                                                     np.sum(A.toarray()[:, 12:] ** 2 * d[12:] ** 2),
                                                                     rel=1e-12)


@pytest.mark.parametrize("eps", [1e-4, 1e-6, 1e-8])
@pytest.mark.parametrize("kind", ["simplex", "l1"])
def test_a_nearly_linear_objective_with_rows_reaches_clarabel(kind, eps):
    """c' x + eps ||x||^2 with 3 equality rows: "optimal" at Clarabel's optimum. Its curvature's penalty was
    eps times the slope's, and at eps = 1e-8 the rows, held by almost none, ended at max_iter (f 0.6 % below
    the optimum on the simplex, 29 % on the L1 ball)."""
    rng = np.random.default_rng(3)
    n = 20
    c, G = rng.standard_normal(n), rng.standard_normal((3, n))
    h = G @ rng.dirichlet(np.ones(n))
    x = fm.Variable(n)
    sets = [fm.Simplex(x)] if kind == "simplex" else [fm.norm1(x) <= 1]
    prob = fm.Problem(fm.Minimize(c @ x + eps * fm.sum_squares(x)), sets + [G @ x == h])
    prob.solve()
    xc = cp.Variable(n)
    ref_sets = [xc >= 0, cp.sum(xc) == 1] if kind == "simplex" else [cp.norm1(xc) <= 1]
    ref = cp.Problem(cp.Minimize(c @ xc + eps * cp.sum_squares(xc)), ref_sets + [G @ xc == h])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert np.linalg.norm(G @ x.value - h) <= 1e-3 * np.linalg.norm(h)
