"""fwmodel against CVXPY + Clarabel on small random instances.

Each test builds the same model in both languages and checks that fwmodel's
objective is within 2e-3 (relative) of CVXPY's and that fwmodel's point
satisfies the constraints to 1e-3 (relative): ||x||_1 <= r (1 + 1e-3), box
bounds, equality residuals, simplex sums, nuclear norms.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

OBJ_RTOL = 2e-3
CON_RTOL = 1e-3


def reference(objective, constraints):
    """Solve a CVXPY problem with Clarabel and return its optimal value."""
    prob = cp.Problem(objective, constraints)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return prob.value


def assert_objective_close(value, ref):
    assert abs(value - ref) <= OBJ_RTOL * max(1.0, abs(ref)), (value, ref)


def assert_l1(x, radius):
    assert np.abs(x).sum() <= radius * (1 + CON_RTOL)


def assert_box(x, lower, upper):
    scale = max(1.0, np.max(np.abs(lower)), np.max(np.abs(upper)))
    assert np.all(x >= lower - CON_RTOL * scale) and np.all(x <= upper + CON_RTOL * scale)


def assert_simplex(x, total=1.0):
    assert np.all(x >= -CON_RTOL * total)
    assert abs(x.sum() - total) <= CON_RTOL * total


# -------------------------------------------------------------------- models
@pytest.mark.parametrize("seed", range(3))
def test_l1_ball_and_box_least_squares(seed):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((20, 15)), rng.standard_normal(20)
    r, lo, hi = 1.0, -0.2, 0.3
    x = fm.Variable(15, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, radius=r), fm.Box(x, lo, hi)])
    value = prob.solve()
    xc = cp.Variable(15)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc) <= r, xc >= lo, xc <= hi])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_l1(x.value, r)
    assert_box(x.value, lo, hi)


@pytest.mark.parametrize("seed", range(2))
def test_three_sets_sharing_one_variable(seed):
    rng = np.random.default_rng(seed)
    c = 2 * rng.standard_normal(12)
    x = fm.Variable(12, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)),
                      [fm.L1Ball(x, radius=1.5), fm.Box(x, -0.4, 0.4), fm.L2Ball(x, radius=0.8)])
    value = prob.solve()
    assert len(prob.compile().blocks) == 3
    xc = cp.Variable(12)
    ref = reference(cp.Minimize(cp.sum_squares(xc - c)),
                    [cp.norm1(xc) <= 1.5, cp.abs(xc) <= 0.4, cp.norm2(xc) <= 0.8])
    assert_objective_close(value, ref)
    assert_l1(x.value, 1.5)
    assert_box(x.value, -0.4, 0.4)
    assert np.linalg.norm(x.value) <= 0.8 * (1 + CON_RTOL)


@pytest.mark.parametrize("seed", range(3))
def test_simplex_with_linear_equalities(seed):
    rng = np.random.default_rng(seed)
    n = 10
    c = rng.standard_normal(n)
    E = rng.standard_normal((2, n))
    f = E @ rng.dirichlet(np.ones(n))  # feasible right-hand side
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), E @ x == f])
    value = prob.solve()
    xc = cp.Variable(n)
    ref = reference(cp.Minimize(cp.sum_squares(xc - c)), [xc >= 0, cp.sum(xc) == 1, E @ xc == f])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_simplex(x.value)
    assert np.linalg.norm(E @ x.value - f) <= CON_RTOL * max(1.0, np.linalg.norm(f))


@pytest.mark.parametrize("seed", range(3))
def test_l1_constrained_logistic_regression(seed):
    rng = np.random.default_rng(seed)
    m, n = 40, 8
    X = rng.standard_normal((m, n))
    y = np.sign(X @ rng.standard_normal(n) + 0.5 * rng.standard_normal(m))
    w = fm.Variable(n, name="w")
    prob = fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(y, X @ w)))), [fm.L1Ball(w, radius=2.0)])
    value = prob.solve()
    wc = cp.Variable(n)
    ref = reference(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(y, X @ wc)))), [cp.norm1(wc) <= 2.0])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_l1(w.value, 2.0)


def sparse_plus_low_rank(seed, d):
    """A symmetric covariance-like matrix: rank one plus a sparse diagonal."""
    rng = np.random.default_rng(seed)
    u = np.zeros(d)
    u[:3] = rng.standard_normal(3)
    u /= np.linalg.norm(u)
    C = 6 * np.outer(u, u) + np.diag(rng.uniform(0.0, 1.0, d))
    return (C + C.T) / 2


def solve_sparse_low_rank(C, r1, rt):
    d = C.shape[0]
    X = fm.Variable((d, d), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, radius=r1), fm.TraceNormBall(X, radius=rt)])
    value = prob.solve()
    Xc = cp.Variable((d, d))
    ref = reference(cp.Minimize(cp.sum_squares(Xc - C)), [cp.sum(cp.abs(Xc)) <= r1, cp.normNuc(Xc) <= rt])
    return prob, X, value, ref


@pytest.mark.parametrize("seed", range(2))
def test_sparse_plus_low_rank_l1_active(seed):
    """L1Ball ∩ TraceNormBall on a symmetric 10 x 10 matrix, the L1 ball binding."""
    C = sparse_plus_low_rank(seed, 10)
    prob, X, value, ref = solve_sparse_low_rank(C, r1=3.0, rt=5.0)
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_l1(X.value, 3.0)
    assert np.linalg.svd(X.value, compute_uv=False).sum() <= 5.0 * (1 + CON_RTOL)


def test_sparse_plus_low_rank_trace_norm_active():
    """Both balls binding: the solution is on the boundary of the trace-norm ball.

    Plain FW on the trace-norm block ends 3e-3 above the optimum after 1500
    iterations here; the in-face steps (fwmodel.engine.inface) converge.
    """
    C = sparse_plus_low_rank(0, 10)
    d = C.shape[0]
    X = fm.Variable((d, d), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, radius=4.0), fm.TraceNormBall(X, radius=3.0)])
    value = prob.solve(max_iter=1500)
    assert prob.status == "optimal"
    Xc = cp.Variable((d, d))
    ref = reference(cp.Minimize(cp.sum_squares(Xc - C)), [cp.sum(cp.abs(Xc)) <= 4.0, cp.normNuc(Xc) <= 3.0])
    assert_objective_close(value, ref)
    assert_l1(X.value, 4.0)
    assert np.linalg.svd(X.value, compute_uv=False).sum() <= 3.0 * (1 + CON_RTOL)


def test_parameter_resolve_matches_cvxpy_without_recompiling():
    rng = np.random.default_rng(7)
    n = 8
    A = rng.standard_normal((12, n))
    E = rng.standard_normal((2, n))
    b = fm.Parameter(12, name="b", value=rng.standard_normal(12))
    center = fm.Parameter(n, name="center", value=0.1 * rng.standard_normal(n))
    f = fm.Parameter(2, name="f", value=E @ rng.dirichlet(np.ones(n)))
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                      [fm.Simplex(x), fm.L1Ball(x - center, radius=1.5), E @ x == f])

    def check():
        value = prob.solve()
        xc = cp.Variable(n)
        ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b.value)),
                        [xc >= 0, cp.sum(xc) == 1, cp.norm1(xc - center.value) <= 1.5, E @ xc == f.value])
        assert prob.status == "optimal"
        assert_objective_close(value, ref)
        assert_simplex(x.value)
        assert_l1(x.value - center.value, 1.5)
        assert np.linalg.norm(E @ x.value - f.value) <= CON_RTOL * max(1.0, np.linalg.norm(f.value))
        return value

    compiled = prob.compile()
    first = check()
    b.value = rng.standard_normal(12)
    center.value = 0.1 * rng.standard_normal(n)
    f.value = E @ rng.dirichlet(np.ones(n))
    second = check()
    assert prob.compile() is compiled
    assert abs(first - second) > 1e-3  # the new data changed the answer


@pytest.mark.parametrize("seed", range(2))
def test_maximize_concave_objective(seed):
    rng = np.random.default_rng(seed)
    A, c = rng.standard_normal((6, 10)), rng.standard_normal(10)
    x = fm.Variable(10, name="x")
    prob = fm.Problem(fm.Maximize(c @ x - fm.log_sum_exp(A @ x) - fm.sum_squares(x)),
                      [fm.L1Ball(x, radius=1.0), fm.Box(x, -0.25, 0.25)])
    value = prob.solve()
    xc = cp.Variable(10)
    ref = reference(cp.Maximize(c @ xc - cp.log_sum_exp(A @ xc) - cp.sum_squares(xc)),
                    [cp.norm1(xc) <= 1.0, xc >= -0.25, xc <= 0.25])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_l1(x.value, 1.0)
    assert_box(x.value, -0.25, 0.25)
    at_value = float(c @ x.value - np.log(np.sum(np.exp(A @ x.value))) - x.value @ x.value)
    assert value == pytest.approx(at_value, rel=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_set_on_an_affine_expression(seed):
    """fm.L1Ball(D @ x) gets an expression block tied to x by rows of M."""
    rng = np.random.default_rng(seed)
    n = 8
    A, b = rng.standard_normal((12, n)), rng.standard_normal(12)
    D = np.eye(n) + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n)
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(D @ x, radius=1.0), fm.Box(x, -0.5, 0.5)])
    value = prob.solve()
    assert [blk.kind for blk in prob.compile().blocks] == ["expression", "copy"]
    xc = cp.Variable(n)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(D @ xc) <= 1.0, xc >= -0.5, xc <= 0.5])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_l1(D @ x.value, 1.0)
    assert_box(x.value, -0.5, 0.5)


@pytest.mark.parametrize("seed", range(3))
def test_sets_on_slices(seed):
    rng = np.random.default_rng(seed)
    n = 8
    A, b = rng.standard_normal((10, n)), rng.standard_normal(10)
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.Simplex(x[:3]), fm.Box(x[3:], -0.5, 0.5)])
    value = prob.solve()
    assert prob.compile().M.shape[0] == 0  # disjoint slices: no copies to tie
    xc = cp.Variable(n)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)),
                    [xc[:3] >= 0, cp.sum(xc[:3]) == 1, xc[3:] >= -0.5, xc[3:] <= 0.5])
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_simplex(x.value[:3])
    assert_box(x.value[3:], -0.5, 0.5)


def test_overlapping_slices():
    """x[:5] in an L1 ball and x[3:] in a box: entries 3, 4 have two copies."""
    rng = np.random.default_rng(11)
    n = 8
    A, b = rng.standard_normal((10, n)), rng.standard_normal(10)
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                      [fm.L1Ball(x[:5], radius=0.8), fm.Box(x[3:], -0.3, 0.3)])
    value = prob.solve()
    assert prob.compile().M.shape[0] == 2
    xc = cp.Variable(n)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc[:5]) <= 0.8, xc[3:] >= -0.3, xc[3:] <= 0.3])
    assert_objective_close(value, ref)
    assert_l1(x.value[:5], 0.8)
    assert_box(x.value[3:], -0.3, 0.3)
