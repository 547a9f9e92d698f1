"""Regression tests at the seams between features (Parameters in set data, wrapper sets,
structure declarations, the stopping rule, pickling), each checked against CVXPY or a
closed form."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _cvxpy_solve(objective, constraints):
    prob = cp.Problem(cp.Minimize(objective), constraints)
    prob.solve(solver="CLARABEL")
    return prob


# ---------------------------------------------------------------------------
# An AffinePreimage (a set on a * x + c) whose Parameter data change between
# solves: it must forget whether the old set held the origin (its initial point),
# else a block starts (and, FW steps being convex combinations, may stay) outside.
PREIMAGE_CASES = [
    # (fm constraint builder, cvxpy constraint builder, parameter value at compile, new value)
    ("box", lambda x, h: [fm.Box(2 * x + 1, -h, h), fm.norm1(x) <= 2],
     lambda z, h: [cp.abs(2 * z + 1) <= h, cp.norm1(z) <= 2], 1.0, 0.5),
    ("l1", lambda x, h: [fm.L1Ball(3 * x - 1, h), fm.norm_inf(x) <= 1],
     lambda z, h: [cp.norm1(3 * z - 1) <= h, cp.norm_inf(z) <= 1], 7.0, 2.0),
    ("l2", lambda x, h: [fm.norm(2 * x - 1, 2) <= h, fm.norm1(x) <= 3],
     lambda z, h: [cp.norm(2 * z - 1, 2) <= h, cp.norm1(z) <= 3], 3.0, 1.0),
]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name,fm_cons,cp_cons,first,second", PREIMAGE_CASES, ids=[c[0] for c in PREIMAGE_CASES])
def test_preimage_parameter_change_moves_initial_point(name, fm_cons, cp_cons, first, second, warm):
    rng = np.random.default_rng(1)
    n = 6
    A = rng.normal(size=(8, n))
    target = A @ (rng.normal(size=n) * 2)
    h = fm.Parameter(nonneg=True, value=first)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - target)), fm_cons(x, h))
    prob.solve(tol=1e-7, max_iter=20000)
    h.value = second  # the origin is no longer in the preimage set
    prob.solve(tol=1e-7, max_iter=20000, warm_start=warm)
    z = cp.Variable(n)
    ref = _cvxpy_solve(cp.sum_squares(A @ z - target), cp_cons(z, second))
    assert prob.value == pytest.approx(ref.value, rel=1e-3, abs=1e-4)
    for blk in prob.compile().blocks:
        assert blk.set.contains(x.value.reshape(blk.set.shape), tol=1e-3) or blk.set.expr.shape != x.shape


# ---------------------------------------------------------------------------
# fm.norm(E, 1) and fm.norm(E, "inf") of a matrix: CVXPY means the induced
# norms (largest column / row sum), not the entrywise ones. Compiling them to
# an entrywise L1Ball / LinfBall gave a different, silently wrong answer; they
# are refused. Vectors (and (n, 1) / (1, n) columns and rows, as in CVXPY)
# keep the entrywise sets, and p=2 of a column is its Euclidean norm.
@pytest.mark.parametrize("p", [1, "inf", np.inf, "INF"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 2), (5, 3)])
def test_matrix_induced_norms_refused(p, shape):
    X = fm.Variable(shape)
    with pytest.raises(fm.ModelError, match="induced"):
        fm.norm(X, p) <= 1.0


@pytest.mark.parametrize("p,cvx_p", [(1, 1), ("inf", "inf"), (2, 2)])
@pytest.mark.parametrize("shape", [(4, 1), (1, 4), (4,)])
def test_vector_shaped_norms_match_cvxpy(p, cvx_p, shape):
    c = np.arange(1.0, 5.0).reshape(shape) - 2.2
    x = fm.Variable(shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.norm(x, p) <= 0.7])
    prob.solve(tol=1e-8, max_iter=20000)
    z = cp.Variable(shape)
    ref = _cvxpy_solve(cp.sum_squares(z - c), [cp.norm(z, cvx_p) <= 0.7])
    assert prob.value == pytest.approx(ref.value, rel=1e-4, abs=1e-6)


# The same for a symmetric variable (SymmetricPart wraps the box): bounds that move
# off the origin between solves, cold and warm.
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("lo_first,lo_second", [(-1.0, 0.2), (-0.5, 0.4), (0.3, -0.2)])
def test_symmetric_box_parameter_change(lo_first, lo_second, warm):
    rng = np.random.default_rng(2)
    S0 = rng.normal(size=(4, 4))
    S0 = S0 + S0.T
    lo = fm.Parameter(value=lo_first)
    X = fm.Variable((4, 4), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - S0)), [X >= lo, X <= 1.5, fm.norm(X, "fro") <= 4])
    prob.solve(tol=1e-8, max_iter=20000)
    lo.value = lo_second
    prob.solve(tol=1e-8, max_iter=20000, warm_start=warm)
    Z = cp.Variable((4, 4), symmetric=True)
    ref = _cvxpy_solve(cp.sum_squares(Z - S0), [Z >= lo_second, Z <= 1.5, cp.norm(Z, "fro") <= 4])
    assert prob.value == pytest.approx(ref.value, rel=1e-3, abs=1e-5)
    assert np.array_equal(X.value, X.value.T)
    assert X.value.min() >= lo_second - 1e-3


# ---------------------------------------------------------------------------
# Rows of M built from Parameters are rebuilt only when those Parameters change
# (a warm-started sweep over one Parameter no longer rebuilds every other row):
# each change must still reach M and b, whichever Parameter moved.
def test_parametric_rows_follow_each_parameter_change():
    rng = np.random.default_rng(3)
    n = 6
    c = rng.normal(size=n)
    A = rng.uniform(size=(2, n))
    w0 = np.full(n, 1.0 / n)
    w1 = np.array([0.1, 0.2, 0.2, 0.2, 0.2, 0.1])  # symmetric: linspace(0.5, 1.5) @ w1 == 1 too
    w2 = np.array([0.3, 0.05, 0.1, 0.25, 0.2, 0.1])
    w3 = 2 * w2[::-1]
    a2 = np.linspace(0.5, 1.5, n)
    a = fm.Parameter(n, value=np.ones(n))
    s = fm.Parameter(value=1.0)
    bp = fm.Parameter(2, value=A @ w0)
    r = fm.Parameter(nonneg=True, value=1.0)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x, total=r), A @ x == bp, a @ x == s])
    z = cp.Variable(n)
    steps = [
        dict(),                                  # nothing changed
        dict(bp=A @ w1),                         # only b of the first rows
        dict(a=a2),                              # only the coefficients of the last row
        dict(),
        dict(bp=A @ w2, s=a2 @ w2),              # both right-hand sides
        dict(r=2.0, bp=A @ w3, s=a2 @ w3),       # the set's total with them
    ]
    for warm in (False, True):
        a.value, s.value, bp.value, r.value = np.ones(n), 1.0, A @ w0, 1.0
        for change in steps:
            for name, value in change.items():
                {"a": a, "s": s, "bp": bp, "r": r}[name].value = value
            prob.solve(tol=1e-8, max_iter=50000, warm_start=warm, seed=0)
            ref = _cvxpy_solve(cp.sum_squares(z - c), [z >= 0, cp.sum(z) == r.value, A @ z == bp.value,
                                                      a.value @ z == s.value])
            assert ref.status == "optimal"
            assert prob.value == pytest.approx(ref.value, rel=1e-3, abs=1e-5)
            assert np.allclose(A @ x.value, bp.value, atol=1e-3)
            assert abs(a.value @ x.value - s.value) < 1e-3


# ---------------------------------------------------------------------------
# The preimage of a box under an elementwise affine map is a box: AffinePreimage
# declares it in x's coordinates (interval_bounds, clipping projection), read at
# each solve, so Parameter changes reach the per-coordinate steps.
PREIMAGE_BOXES = [
    # (fm constraint on x from a Parameter h, the interval of x as a function of h)
    ("2x+1 in [-h, h]", lambda x, h: fm.Box(2 * x + 1, -h, h), lambda h: ((-h - 1) / 2, (h - 1) / 2)),
    ("-3x+2 in [0, h]", lambda x, h: fm.Box(-3 * x + 2, 0, h), lambda h: ((2 - h) / 3, 2 / 3)),
    ("|0.5x-1| <= h", lambda x, h: fm.norm_inf(0.5 * x - 1) <= h, lambda h: (2 - 2 * h, 2 + 2 * h)),
]


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name,build,interval", PREIMAGE_BOXES, ids=[c[0] for c in PREIMAGE_BOXES])
def test_preimage_of_a_box_is_a_box_in_x(name, build, interval, warm):
    rng = np.random.default_rng(4)
    n = 8
    A = rng.normal(size=(12, n))
    target = A @ rng.normal(size=n) * 3
    h = fm.Parameter(nonneg=True, value=1.0)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - target)), [build(x, h)])
    blk = prob.compile().blocks[0]
    for hv in (1.0, 0.25, 3.0):
        h.value = hv
        prob.solve(tol=1e-9, max_iter=50000, warm_start=warm, seed=0)
        lo, hi = interval(hv)
        got_lo, got_hi = blk.set.interval_bounds()
        assert np.allclose(got_lo, lo) and np.allclose(got_hi, hi)
        assert np.allclose(blk.set.project_flat(np.full(n, 1e3)), hi)
        assert np.allclose(blk.set.project_flat(np.full(n, -1e3)), lo)
        assert x.value.min() >= lo - 1e-9 and x.value.max() <= hi + 1e-9
        z = cp.Variable(n)
        ref = _cvxpy_solve(cp.sum_squares(A @ z - target), [z >= lo, z <= hi])
        assert prob.value == pytest.approx(ref.value, rel=1e-5, abs=1e-6)


def test_preimage_of_a_ball_declares_no_box():
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.norm(2 * x - 1, 2) <= 1, fm.L1Ball(3 * x + 1, 2)])
    for blk in prob.compile().blocks:
        assert blk.set.interval_bounds() is None
        assert not blk.set.has_cheap_projection
        with pytest.raises(NotImplementedError):
            blk.set.project_flat(np.zeros(4))


# A set on an expression with a Parameter offset (its own block, tied by Parameter rows):
# the rows follow each change of the offset, cold and warm.
@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("name", ["box", "l2", "l1"])
def test_parameter_offset_rows_follow_changes(name, warm):
    c = np.array([3.0, -3.0, 0.2, 1.0])
    fm_set = {"box": lambda e: fm.Box(e, -0.5, 0.5), "l2": lambda e: fm.norm(e, 2) <= 1,
              "l1": lambda e: fm.norm1(e) <= 1}[name]
    cp_set = {"box": lambda e: cp.abs(e) <= 0.5, "l2": lambda e: cp.norm(e, 2) <= 1,
              "l1": lambda e: cp.norm1(e) <= 1}[name]
    p0 = fm.Parameter(4, value=np.zeros(4))
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm_set(2 * x - p0), fm.norm_inf(x) <= 10])
    z = cp.Variable(4)
    for v in (np.zeros(4), np.array([2.0, -1.0, 0.0, 5.0]), np.zeros(4), np.ones(4)):
        p0.value = v
        prob.solve(tol=1e-9, max_iter=50000, warm_start=warm, seed=0)
        ref = _cvxpy_solve(cp.sum_squares(z - c), [cp_set(2 * z - v), cp.norm_inf(z) <= 10])
        assert prob.value == pytest.approx(ref.value, rel=1e-3, abs=1e-4)
