"""Constraints written as a CVXPY user writes them, checked against CVXPY + Clarabel.

Each model is written twice, once with ``cp`` and once with ``fm`` in the
same words; fwmodel's objective must be within 2e-3 (relative) of CVXPY's,
its point must satisfy the constraints to 1e-3, and the compiled problem
must contain the set the construct stands for. Equality duals are compared
with CVXPY's ``dual_value`` to 1e-2 (relative).
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.symmetric import SymmetricPart

cp = pytest.importorskip("cvxpy")

OBJ_RTOL = 2e-3
CON_TOL = 1e-3
DUAL_RTOL = 1e-2
#: tight engine tolerances: these tests compare duals and boundary points
TIGHT = dict(tol=1e-7, feas_tol=1e-7, max_iter=50000)


def reference(objective, constraints):
    prob = cp.Problem(objective, constraints)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return prob.value


def assert_close(value, ref, rtol=OBJ_RTOL):
    assert abs(value - ref) <= rtol * max(1.0, abs(ref)), (value, ref)


def set_types(prob):
    return [type(b.set).__name__ for b in prob.compile().blocks]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((15, 8)), rng.standard_normal(15), rng.standard_normal((4, 5))


# ------------------------------------------------------------ norm constraints
VECTOR_NORMS = [
    # (fwmodel constraint, CVXPY constraint, set, check on the returned point)
    (lambda m, x: m.norm1(x) <= 0.8, "L1Ball", lambda v: np.abs(v).sum() <= 0.8 * (1 + CON_TOL)),
    (lambda m, x: 0.8 >= m.norm1(x), "L1Ball", lambda v: np.abs(v).sum() <= 0.8 * (1 + CON_TOL)),
    (lambda m, x: m.norm(x, 1) <= 0.8, "L1Ball", lambda v: np.abs(v).sum() <= 0.8 * (1 + CON_TOL)),
    (lambda m, x: m.norm(x, 2) <= 0.5, "L2Ball", lambda v: np.linalg.norm(v) <= 0.5 * (1 + CON_TOL)),
    (lambda m, x: m.norm2(x) <= 0.5, "L2Ball", lambda v: np.linalg.norm(v) <= 0.5 * (1 + CON_TOL)),
    (lambda m, x: m.norm(x, "inf") <= 0.2, "LinfBall", lambda v: np.abs(v).max() <= 0.2 * (1 + CON_TOL)),
    (lambda m, x: m.norm_inf(x) <= 0.2, "LinfBall", lambda v: np.abs(v).max() <= 0.2 * (1 + CON_TOL)),
    (lambda m, x: m.abs(x) <= 0.2, "Box", lambda v: np.abs(v).max() <= 0.2 * (1 + CON_TOL)),
]


@pytest.mark.parametrize("constraint, set_name, satisfied", VECTOR_NORMS)
def test_vector_norm_bounds_are_sets(data, constraint, set_name, satisfied):
    A, b, _ = data
    x = fm.Variable(8, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [constraint(fm, x)])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [constraint(cp, xc)])
    assert set_types(prob) == [set_name]
    assert prob.status == fm.OPTIMAL
    assert_close(value, ref)
    assert satisfied(x.value)


MATRIX_NORMS = [
    (lambda m, X: m.normNuc(X) <= 1.5, "TraceNormBall", lambda V: np.linalg.svd(V, compute_uv=False).sum() <= 1.5),
    (lambda m, X: m.norm(X, "nuc") <= 1.5, "TraceNormBall", lambda V: np.linalg.svd(V, compute_uv=False).sum() <= 1.5),
    (lambda m, X: m.norm(X, "fro") <= 1.5, "L2Ball", lambda V: np.linalg.norm(V) <= 1.5),
]


@pytest.mark.parametrize("constraint, set_name, satisfied", MATRIX_NORMS)
def test_matrix_norm_bounds_are_sets(data, constraint, set_name, satisfied):
    _, _, C = data
    X = fm.Variable((4, 5), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [constraint(fm, X)])
    value = prob.solve(**TIGHT)
    Xc = cp.Variable((4, 5))
    ref = reference(cp.Minimize(cp.sum_squares(Xc - C)), [constraint(cp, Xc)])
    assert set_types(prob) == [set_name]
    assert_close(value, ref)
    assert satisfied(X.value / (1 + CON_TOL))


def test_norm_of_an_affine_expression_and_parameter_bound(data):
    A, b, _ = data
    D = np.diff(np.eye(8), axis=0)  # total variation
    t = fm.Parameter(nonneg=True, value=0.6, name="t")
    x = fm.Variable(8, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(D @ x) <= t, fm.norm(x, 2) <= 2.0])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(D @ xc) <= 0.6, cp.norm(xc, 2) <= 2.0])
    assert_close(value, ref)
    assert np.abs(D @ x.value).sum() <= 0.6 * (1 + CON_TOL)


def test_norms_stay_refused_in_objectives():
    x = fm.Variable(3, name="x")
    for build, set_name in ((fm.norm1, "fm.L1Ball"), (fm.norm2, "fm.L2Ball"), (fm.norm_inf, "fm.LinfBall")):
        with pytest.raises(fm.ModelError, match=rf"not smooth.*{set_name}"):
            fm.Minimize(fm.sum_squares(x) + build(x))
    with pytest.raises(fm.ModelError, match=r"fm.TraceNormBall"):
        fm.Minimize(fm.normNuc(fm.Variable((2, 2))))


def test_norm_squared_is_sum_squares(data):
    A, b, _ = data
    x = fm.Variable(8, name="x")
    prob = fm.Problem(fm.Minimize(fm.norm(A @ x - b, 2) ** 2), [fm.norm1(x) <= 1.0])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc) <= 1.0]))


# ---------------------------------------------------------------------- bounds
def test_bounds_merge_into_one_box(data):
    A, b, _ = data
    lo = -0.3 * np.arange(1, 9) / 8
    x = fm.Variable(8, name="x")
    xc = cp.Variable(8)

    def model(m, v):
        return [v >= lo, v <= 0.25, -0.5 <= v, v[:3] <= 0.1, 2 * v[5] + 1 >= 0.6]

    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), model(fm, x))
    value = prob.solve(**TIGHT)
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), model(cp, xc))
    assert set_types(prob) == ["Box"]
    assert_close(value, ref)
    v = x.value
    assert np.all(v >= lo - CON_TOL) and np.all(v <= 0.25 + CON_TOL) and np.all(v[:3] <= 0.1 + CON_TOL)
    assert v[5] >= -0.2 - CON_TOL


@pytest.mark.parametrize("attrs, cvx_attrs, extra", [
    (dict(nonneg=True), dict(nonneg=True), lambda v: [v <= 0.3]),
    (dict(nonpos=True), dict(nonpos=True), lambda v: [v >= -0.3]),
    (dict(bounds=[-0.2, 0.4]), dict(bounds=[-0.2, 0.4]), lambda v: []),
    (dict(nonneg=True), dict(nonneg=True), lambda v: [(fm if isinstance(v, fm.Variable) else cp).norm1(v) <= 0.7]),
])
def test_variable_attributes(data, attrs, cvx_attrs, extra):
    A, b, _ = data
    x = fm.Variable(8, name="x", **attrs)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), extra(x))
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8, **cvx_attrs)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(A @ xc - b)), extra(xc)))
    if attrs.get("nonneg"):
        assert np.all(x.value >= -CON_TOL)
    if attrs.get("nonpos"):
        assert np.all(x.value <= CON_TOL)


@pytest.mark.parametrize("attrs, reason", [
    (dict(integer=True), r"continuous convex"),
    (dict(boolean=True), r"continuous convex"),
    (dict(complex=True), r"real"),
    (dict(pos=True), r"nonneg=True"),
    (dict(nonnegative=True), r"nonneg, nonpos, bounds, symmetric and PSD"),
])
def test_variable_attribute_fwmodel_lacks_is_a_named_model_error(attrs, reason):
    """CVXPY takes these attributes (or, for the misspelling, refuses them); fwmodel refuses each with
    a ModelError naming the variable and the attribute, not a bare TypeError from the signature."""
    name, given = next(iter(attrs.items()))
    if name != "nonnegative":
        cp.Variable(3, **attrs)  # a CVXPY attribute indeed
    with pytest.raises(fm.ModelError, match=rf"'x'.*{name}={given!r}.*{reason}"):
        fm.Variable(3, name="x", **attrs)


def test_capped_simplex_closes_a_one_sided_bound():
    c = np.array([0.9, 0.5, 0.1, -0.2, 0.4])
    x = fm.Variable(5, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), x <= 0.3])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(5)
    ref = reference(cp.Minimize(cp.sum_squares(xc - c)), [xc >= 0, cp.sum(xc) == 1, xc <= 0.3])
    assert set_types(prob) == ["CappedSimplex"]  # the simplex and the box it closes, as one set
    capped = prob.compile().blocks[0].set
    np.testing.assert_allclose(capped.box.lower, 0.0)  # the simplex's lower bound closes the box
    np.testing.assert_allclose(capped.box.upper, 0.3)
    assert_close(value, ref)
    assert x.value.max() <= 0.3 + CON_TOL and abs(x.value.sum() - 1) <= CON_TOL


def test_bound_implied_by_a_set_adds_no_block():
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.Simplex(x), x >= 0, x <= 2])
    assert set_types(prob) == ["Simplex"]


# ------------------------------------------------------- recognized structures
def test_nonneg_with_sum_is_one_simplex_block():
    c = np.array([0.3, -0.1, 0.8, 0.2, 0.5, 0.0])
    x = fm.Variable(6, name="x", nonneg=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.sum(x) == 2.0])
    value = prob.solve(**TIGHT)
    compiled = prob.compile()
    assert set_types(prob) == ["Simplex"] and compiled.M.shape[0] == 0
    assert compiled.blocks[0].set.total == 2.0
    xc = cp.Variable(6, nonneg=True)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(xc - c)), [cp.sum(xc) == 2.0]))


def test_sum_at_most_is_a_simplex_with_inequality():
    c = np.array([0.3, -0.1, 0.8, 0.2])
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [x >= 0, fm.sum(x) <= 0.5])
    value = prob.solve(**TIGHT)
    s = prob.compile().blocks[0].set
    assert set_types(prob) == ["Simplex"] and not s.equality
    xc = cp.Variable(4)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(xc - c)), [xc >= 0, cp.sum(xc) <= 0.5]))


def test_psd_with_trace_is_a_psd_trace_ball():
    rng = np.random.default_rng(3)
    B = rng.standard_normal((5, 5))
    C = B + B.T
    X = fm.Variable((5, 5), name="X", PSD=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.trace(X) <= 2.0])
    value = prob.solve(**TIGHT)
    (blk,) = prob.compile().blocks
    assert isinstance(blk.set, fm.TraceNormBall) and blk.set.psd and blk.set.radius == 2.0
    Xc = cp.Variable((5, 5), PSD=True)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Xc - C)), [cp.trace(Xc) <= 2.0]))
    assert np.array_equal(X.value, X.value.T)
    assert np.linalg.eigvalsh(X.value).min() >= -CON_TOL


def test_symmetric_variable_keeps_iterates_symmetric():
    rng = np.random.default_rng(4)
    C = rng.standard_normal((5, 5))  # not symmetric: the gradients are not either
    S = fm.Variable((5, 5), name="S", symmetric=True)
    asym = []
    prob = fm.Problem(fm.Minimize(fm.sum_squares(S - C)), [fm.normNuc(S) <= 2.0, fm.abs(S) <= 0.4])
    value = prob.solve(callback=lambda st: asym.append(np.abs(st.value(S) - st.value(S).T).max()), **TIGHT)
    blocks = prob.compile().blocks
    assert blocks[0].set.symmetric and isinstance(blocks[1].set, SymmetricPart)
    assert max(asym) == 0.0 and np.array_equal(S.value, S.value.T)
    Sc = cp.Variable((5, 5), symmetric=True)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Sc - C)), [cp.normNuc(Sc) <= 2.0, cp.abs(Sc) <= 0.4]))


SYMMETRIC_POLYTOPES = [
    # (fwmodel set on S, CVXPY constraints on Sc, set the compiler uses)
    (lambda S: fm.BirkhoffPolytope(S), lambda Sc: [Sc >= 0, cp.sum(Sc, axis=0) == 1, cp.sum(Sc, axis=1) == 1],
     "SymmetrizedVertices"),
    (lambda S: fm.Simplex(S, total=2.0, axis=1), lambda Sc: [Sc >= 0, cp.sum(Sc, axis=1) == 2.0],
     "SymmetricStochastic"),
    (lambda S: fm.Simplex(S, total=3.0), lambda Sc: [Sc >= 0, cp.sum(Sc) == 3.0], "SymmetrizedVertices"),
]


@pytest.mark.parametrize("make_set, make_cvx, variant", SYMMETRIC_POLYTOPES)
def test_symmetric_variable_in_a_transpose_closed_polytope_is_exactly_symmetric(make_set, make_cvx, variant):
    """Birkhoff polytope, row simplices, a simplex over all entries: with symmetric=True every vertex is a
    symmetrized LMO vertex ((P + P^T) / 2 for the assignment), so every iterate is exactly symmetric and
    no consistency rows are needed; the optimum matches CVXPY's."""
    rng = np.random.default_rng(7)
    C = rng.uniform(0, 2.0 / 6, (6, 6))  # not symmetric: the gradients are not either
    S = fm.Variable((6, 6), name="S", symmetric=True)
    asym = []
    prob = fm.Problem(fm.Minimize(fm.sum_squares(S - C)), [make_set(S)])
    value = prob.solve(callback=lambda st: asym.append(np.abs(st.value(S) - st.value(S).T).max()), **TIGHT)
    compiled = prob.compile()
    assert prob.status == fm.OPTIMAL and compiled.M.shape[0] == 0
    assert type(compiled.blocks[0].set).__name__ == variant
    assert max(asym) == 0.0 and np.array_equal(S.value, S.value.T) and S.value.min() >= 0.0
    assert compiled.blocks[0].set.contains(S.value, tol=1e-9)
    Sc = cp.Variable((6, 6), symmetric=True)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Sc - C)), make_cvx(Sc)))


# ------------------------------------------------------ general inequalities
def test_linear_inequalities_get_a_bounded_slack(data):
    A, b, _ = data
    rng = np.random.default_rng(5)
    G, h = rng.standard_normal((3, 8)), 0.1 * rng.random(3)
    x = fm.Variable(8, name="x")
    ineq = G @ x <= h
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [ineq, x >= -0.5, x <= 0.5])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8)
    ineq_c = G @ xc <= h
    ref = reference(cp.Minimize(cp.sum_squares(A @ xc - b)), [ineq_c, xc >= -0.5, xc <= 0.5])
    assert_close(value, ref)
    assert np.all(G @ x.value <= h + CON_TOL)
    # the slack's box: s <= h - min over the box of G x = h + 0.5 ||G_i||_1, the slack in the variables'
    # units (the distance to the row's hyperplane, compiler/lowering.py _slack_units): divided by ||G_i||
    slack_box = prob.compile().blocks[-1].set
    np.testing.assert_allclose(slack_box.upper, (h + 0.5 * np.abs(G).sum(axis=1)) / np.linalg.norm(G, axis=1))
    assert prob.variables() == [x]  # the slack is the compiler's, not the model's
    active = ineq_c.dual_value > 1e-3
    np.testing.assert_allclose(ineq.dual_value[active], ineq_c.dual_value[active], rtol=DUAL_RTOL)


# ------------------------------------------------------------------ Parameters
def test_lasso_path_with_a_parameter_radius(data):
    A, b, _ = data
    r = fm.Parameter(nonneg=True, name="r")
    x = fm.Variable(8, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= r])
    rc = cp.Parameter(nonneg=True)
    xc = cp.Variable(8)
    ref_prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc) <= rc])
    r.value = 1.0
    compiled = prob.compile()
    for radius in (1.0, 0.2, 0.6, 1.5, 0.1):  # shrinking radii leave the old point infeasible
        r.value = rc.value = radius
        value = prob.solve(warm_start=True, **TIGHT)
        assert prob.compile() is compiled
        assert prob.status == fm.OPTIMAL
        assert_close(value, ref_prob.solve(solver=cp.CLARABEL))
        assert np.abs(x.value).sum() <= radius * (1 + CON_TOL)


@pytest.mark.parametrize("make_set, check", [
    (lambda x, p: fm.L2Ball(x, p), lambda v, s: np.linalg.norm(v) <= s * (1 + CON_TOL)),
    (lambda x, p: fm.LinfBall(x, p), lambda v, s: np.abs(v).max() <= s * (1 + CON_TOL)),
    (lambda x, p: fm.Box(x, -p, p), lambda v, s: np.abs(v).max() <= s * (1 + CON_TOL)),
    (lambda x, p: fm.Simplex(x, p), lambda v, s: abs(v.sum() - s) <= CON_TOL and v.min() >= -CON_TOL),
])
def test_set_data_as_parameters_with_warm_starts(make_set, check):
    c = np.array([0.5, -1.0, 2.0, 0.3])
    p = fm.Parameter(nonneg=True, value=1.0, name="p")
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [make_set(x, p)])
    compiled = prob.compile()
    for size in (1.0, 0.3, 2.0):
        p.value = size
        prob.solve(warm_start=True, **TIGHT)
        fresh = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [make_set(x, size)])
        assert prob.compile() is compiled
        assert_close(prob.value, fresh.solve(**TIGHT))
        assert check(x.value, size)


def test_parameter_bounds_in_inequalities_and_variables():
    c = np.array([0.5, -1.0, 2.0, 0.3])
    hi = fm.Parameter(4, name="hi")
    lo = fm.Parameter(name="lo")
    x = fm.Variable(4, name="x", bounds=[lo, None])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [x <= hi])
    for lo_v, hi_v in ((-0.5, np.ones(4)), (0.0, np.full(4, 0.2))):
        lo.value, hi.value = lo_v, hi_v
        prob.solve(warm_start=True, **TIGHT)
        np.testing.assert_allclose(x.value, np.clip(c, lo_v, hi_v), atol=CON_TOL)


@pytest.mark.parametrize("build", [
    lambda m, x, p: [x >= p, x <= 2],  # bounds that cross
    lambda m, x, p: [x >= p, m.norm1(x) <= 1] if m is fm else [x >= p, cp.norm1(x) <= 1],  # a bound past a set
])
def test_contradictory_bounds_are_infeasible_as_in_cvxpy(build):
    """Crossing bounds (constants or Parameters) end "infeasible", as in CVXPY, never with an error."""
    c = np.array([0.5, -1.0, 2.0])
    for p_value in (3.0, -0.5, 3.0):  # infeasible, feasible again, infeasible with a Parameter
        x, xc = fm.Variable(3, name="x"), cp.Variable(3)
        p = fm.Parameter(name="p", value=p_value)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), build(fm, x, p))
        ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - c)), build(cp, xc, p_value))
        ref.solve(solver=cp.CLARABEL)
        prob.solve(**TIGHT)
        if ref.status == cp.INFEASIBLE:
            assert prob.status == fm.INFEASIBLE and prob.value == np.inf
            assert "the bounds on x" in prob.stats.message and "lower 3 > upper" in prob.stats.message
            assert x.value is None
        else:
            assert prob.status == fm.OPTIMAL
            assert_close(prob.value, ref.value)
        constant = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), build(fm, x, p_value))
        constant.solve(**TIGHT)
        assert constant.status == prob.status


def test_a_parameter_that_empties_a_box_gives_infeasible_then_recovers():
    c = np.array([0.5, -1.0, 2.0])
    lo = fm.Parameter(name="lo", value=0.0)
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, lo, 1.0)])
    for lo_value in (0.0, 1.5, 0.2):
        lo.value = lo_value
        prob.solve(warm_start=True, **TIGHT)
        if lo_value > 1.0:
            assert prob.status == fm.INFEASIBLE and "lower must be <= upper" in prob.stats.message
        else:
            assert prob.status == fm.OPTIMAL
            np.testing.assert_allclose(x.value, np.clip(c, lo_value, 1.0), atol=CON_TOL)
    with pytest.raises(fm.ModelError, match="lower must be <= upper"):  # constants: a malformed set
        fm.Box(x, 1.5, 1.0)


@pytest.mark.parametrize("wrapped", ["symmetric", "affine"])
def test_a_parameter_that_empties_a_wrapped_box_gives_infeasible(wrapped):
    """A box seen through a wrapper (the symmetric variant of a symmetric variable, the preimage of
    2 x + 1) reports its emptiness too: "infeasible", then optimal again with valid bounds."""
    lo = fm.Parameter(name="lo", value=0.0)
    if wrapped == "symmetric":
        x = fm.Variable((2, 2), name="X", symmetric=True)
        constraints, optimum = [x >= lo, x <= 1.0], 16.0  # every entry at 1, the target 3
    else:
        x = fm.Variable(3, name="x")
        constraints, optimum = [fm.Box(2 * x + 1, lo, 1.0)], 27.0  # x = 0
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 3)), constraints)
    for lo_value in (0.0, 2.0, 0.0):
        lo.value = lo_value
        prob.solve(warm_start=True, **TIGHT)
        if lo_value > 1.0:
            assert prob.status == fm.INFEASIBLE and prob.value == np.inf
        else:
            assert prob.status == fm.OPTIMAL and prob.value == pytest.approx(optimum, rel=1e-6)


def test_symmetric_variable_in_a_box_with_parameter_bounds():
    """Scalar Parameter bounds (even without values when the Box is built) keep the symmetric LMO; an
    array Parameter bound could turn asymmetric after compiling, so X = X^T is kept by rows instead."""
    C = np.arange(9.0).reshape(3, 3) / 9
    lo, hi = fm.Parameter(name="lo"), fm.Parameter(name="hi")
    X = fm.Variable((3, 3), symmetric=True, name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Box(X, lo, hi)])
    lo.value, hi.value = 0.1, 0.5
    prob.solve(**TIGHT)
    assert isinstance(prob.compile().blocks[0].set, SymmetricPart) and np.array_equal(X.value, X.value.T)
    np.testing.assert_allclose(X.value, np.clip((C + C.T) / 2, 0.1, 0.5), atol=CON_TOL)
    H = fm.Parameter((3, 3), name="H", value=np.full((3, 3), 0.5))
    Y = fm.Variable((3, 3), symmetric=True, name="Y")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(Y - C)), [fm.Box(Y, 0.0, H)])
    H.value = np.triu(np.full((3, 3), 0.8)) + 0.1  # asymmetric bounds: Y <= min(H, H^T) in effect
    prob.solve(**TIGHT)
    assert prob.compile().M.shape[0] == 3  # one row per pair i < j
    np.testing.assert_allclose(Y.value, np.clip((C + C.T) / 2, 0.0, np.minimum(H.value, H.value.T)), atol=CON_TOL)


def test_sets_are_immutable():
    x = fm.Variable(3, name="x")
    ball = fm.L2Ball(x, 1.0)
    with pytest.raises(fm.ModelError, match=r"read-only.*fm.Parameter"):
        ball.radius = 0.5
    with pytest.raises(AttributeError):
        fm.Simplex(x).total = 2.0
    assert ball.radius == 1.0


# ------------------------------------------------------------------- results
def test_equality_duals_match_cvxpy():
    rng = np.random.default_rng(6)
    c, E = rng.standard_normal(6), rng.standard_normal((2, 6))
    f = E @ np.full(6, 1 / 6)
    x = fm.Variable(6, name="x", nonneg=True)
    total, rows = fm.sum(x) == 1, E @ x == f
    fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [total, rows]).solve(**TIGHT)
    xc = cp.Variable(6, nonneg=True)
    total_c, rows_c = cp.sum(xc) == 1, E @ xc == f
    reference(cp.Minimize(cp.sum_squares(xc - c)), [total_c, rows_c])
    np.testing.assert_allclose(total.dual_value, total_c.dual_value, rtol=DUAL_RTOL)  # absorbed in a simplex
    np.testing.assert_allclose(rows.dual_value, rows_c.dual_value, rtol=DUAL_RTOL)


def test_equality_duals_of_a_maximization():
    c = np.array([1.0, 2.0, 3.0])
    x = fm.Variable(3, name="x", bounds=[-5, 5])
    eq = fm.sum(x) == 1
    fm.Problem(fm.Maximize(-fm.sum_squares(x - c)), [eq]).solve(**TIGHT)
    xc = cp.Variable(3)
    eq_c = cp.sum(xc) == 1
    reference(cp.Maximize(-cp.sum_squares(xc - c)), [eq_c, xc >= -5, xc <= 5])
    np.testing.assert_allclose(eq.dual_value, eq_c.dual_value, rtol=DUAL_RTOL)


def test_status_constants_and_infeasible_problems():
    assert (fm.OPTIMAL, fm.INFEASIBLE, fm.MAX_ITER, fm.TIME_LIMIT, fm.DIVERGED, fm.INTERRUPTED) == (
        "optimal", "infeasible", "max_iter", "time_limit", "diverged", "interrupted")
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Simplex(x), x >= 0.5])  # 4 * 0.5 > 1
    prob.solve(max_iter=2000)  # no exception for a non-optimal status
    assert prob.status in (fm.INFEASIBLE, fm.MAX_ITER) and prob.status != fm.OPTIMAL
    assert x.value is not None and x.value.shape == (4,)  # the best point found


# -------------------------------------------------------------------- errors
def test_lower_bound_on_a_norm_is_non_convex():
    x, t = fm.Variable(3, name="x"), fm.Parameter(value=1.0, name="t")
    with pytest.raises(fm.ModelError, match=r"norm1\(x\) >= t.*not convex.*norm1\(x\) <= t"):
        fm.norm1(x) >= t


def test_norm_without_a_set():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match=r"no set for this norm.*fm.ConvexSet"):
        fm.norm(x, 3) <= 1.0


def test_one_sided_bound_on_an_unbounded_variable():
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [x <= 0.5])
    with pytest.raises(fm.ModelError, match=r"unbounded below.*x >= .*fm.Box\(x, lo, hi\).*fm.L1Ball"):
        prob.solve()


def test_inequality_on_an_unbounded_variable():
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [np.ones((2, 3)) @ x <= 1.0])
    with pytest.raises(fm.ModelError, match=r"x is not in any bounded set.*fm.Box\(x, lo, hi\)"):
        prob.solve()


def test_set_on_an_expression_states_the_rule():
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x[:2] + x[1:], 0, 1)])
    with pytest.raises(fm.ModelError, match=r"bounds an expression of x, not x itself"):
        prob.solve()


@pytest.mark.parametrize("constraint", [
    lambda m, x: [m.norm(x - np.array([0.5, 0.5, 0.5]), 2) <= 1.0],  # a trust region around x0
    lambda m, x: [m.norm1(2 * x) <= 1.0],
    lambda m, x: [m.abs(3 - x) <= 1.0],
    lambda m, x: [-x[::-1] <= 0.2, m.norm_inf(x + 1) <= 2.0],
])
def test_sets_on_elementwise_affine_maps_hold_the_variable(constraint):
    c = np.array([1.0, -2.0, 3.0])
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), constraint(fm, x))
    value = prob.solve(**TIGHT)
    assert all(b.kind == "copy" for b in prob.compile().blocks)
    xc = cp.Variable(3)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(xc - c)), constraint(cp, xc)))


def test_psd_variable_needs_a_bound():
    X = fm.Variable((3, 3), name="X", PSD=True)
    with pytest.raises(fm.ModelError, match=r"PSD=True but nothing bounds it.*fm.trace\(X\) <= t"):
        fm.Problem(fm.Minimize(fm.sum_squares(X)), []).solve()


def test_norm_bound_must_be_data():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match=r"must be data.*fm.Parameter"):
        fm.norm1(x) <= x[0]


def test_variable_attribute_checks():
    with pytest.raises(fm.ModelError, match=r"nonneg=True and nonpos=True"):
        fm.Variable(3, nonneg=True, nonpos=True)
    with pytest.raises(fm.ModelError, match=r"symmetric=True needs a square matrix"):
        fm.Variable((2, 3), symmetric=True)
    with pytest.raises(fm.ModelError, match=r"bounds must be a pair"):
        fm.Variable(3, bounds=1.0)
    with pytest.raises(fm.ModelError, match=r"does not broadcast"):
        fm.Variable(3, bounds=[np.zeros(2), None])


def test_symmetric_row_sums_written_as_constraints_keep_their_duals():
    """``X >= 0, sum(X, axis=1) == 1`` with symmetric X: the simplex that replaces the equality keeps the
    symmetry rows, so the equality's dual_value (recovered per row) matches CVXPY's."""
    C = np.random.default_rng(0).uniform(0, 0.3, (5, 5))
    X = fm.Variable((5, 5), name="X", symmetric=True, nonneg=True)
    rows = fm.sum(X, axis=1) == 1
    value = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [rows]).solve(**TIGHT)
    Xc = cp.Variable((5, 5), symmetric=True)
    rows_c = cp.sum(Xc, axis=1) == 1
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Xc - C)), [Xc >= 0, rows_c]))
    np.testing.assert_allclose(rows.dual_value, rows_c.dual_value, rtol=DUAL_RTOL, atol=1e-4)


def test_symmetric_variable_in_a_set_without_a_symmetric_lmo():
    """A capped simplex (sum <= 1) declares no symmetric LMO: the rows X[i, j] == X[j, i] are added instead."""
    C = np.array([[0.5, 0.9, 0.0], [0.1, 0.2, 0.0], [0.0, 0.3, 0.1]])
    X = fm.Variable((3, 3), name="X", symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, equality=False)])
    value = prob.solve(**TIGHT)
    assert prob.compile().M.shape[0] == 3  # one row per pair i < j
    Xc = cp.Variable((3, 3), symmetric=True)
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Xc - C)), [Xc >= 0, cp.sum(Xc) <= 1]))
    assert np.abs(X.value - X.value.T).max() <= CON_TOL


@pytest.mark.parametrize("axis", [0, 1])
def test_nonneg_with_sums_along_an_axis_is_a_batched_simplex(axis):
    C = np.random.default_rng(7).standard_normal((4, 5))
    X = fm.Variable((4, 5), name="X", nonneg=True)
    sums = fm.sum(X, axis=axis) == 1
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [sums])
    value = prob.solve(**TIGHT)
    (blk,) = prob.compile().blocks
    assert isinstance(blk.set, fm.Simplex) and blk.set.axis == axis and prob.compile().M.shape[0] == 0
    Xc = cp.Variable((4, 5), nonneg=True)
    sums_c = cp.sum(Xc, axis=axis) == 1
    assert_close(value, reference(cp.Minimize(cp.sum_squares(Xc - C)), [sums_c]))
    np.testing.assert_allclose(sums.dual_value, sums_c.dual_value, rtol=DUAL_RTOL, atol=1e-4)


def test_sets_with_parameter_data_pickle():
    import pickle

    r = fm.Parameter(nonneg=True, value=0.5, name="r")
    x = fm.Variable(3, name="x")
    for s in (fm.L1Ball(x, r), fm.Box(x, -r, r), fm.Simplex(x, r)):
        copy = pickle.loads(pickle.dumps(s))
        assert copy.parameters()[0].value == 0.5 and not copy.refresh()


def test_strict_inequalities_are_refused_as_in_cvxpy():
    """CVXPY raises on ``x < 1``; reading it as ``x <= 1`` would answer another question silently."""
    x = fm.Variable(2, name="x")
    for make, closed in ((lambda: x < 1, "<="), (lambda: x > 0, ">="), (lambda: 1 > x, "<="),
                         (lambda: np.ones(2) < x, ">=")):
        with pytest.raises(fm.ModelError, match=f"strict inequalities are not allowed.*write {closed}"):
            make()
    # whatever stands on the left (NumPy scalars and 0-d arrays, Parameters, expressions) the
    # message names the expression and the closed form; Python's max compares with < / > too
    p = fm.Parameter(value=1.0, name="p")
    for make, named, closed in ((lambda: np.float64(1) < x, "x >", ">="), (lambda: np.array(1.0) > x, "x <", "<="),
                                (lambda: p < x, "p <", "<="), (lambda: fm.sum(x) > p, "sum(x) >", ">="),
                                (lambda: max(x, 0), "x <", "<=")):
        with pytest.raises(fm.ModelError) as info:
            make()
        message = str(info.value)
        assert message.startswith(named) and f"write {closed} instead" in message
        assert "max, min and sorted" in message
    # the closed form still works: the nearest point to (2, 2) with -1 <= x <= 1 is (1, 1)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 2)), [x <= 1, x >= -1])
    prob.solve()
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, [1.0, 1.0], atol=1e-3)
