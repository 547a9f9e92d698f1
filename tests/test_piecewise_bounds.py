"""CVXPY's piecewise atoms as constraints: ``maximum(a, b, ...) <= t``, ``pos(e) <= t``, ``neg(e) <= t``,
``minimum(a, b, ...) >= t``, checked against CVXPY + Clarabel.

Each model is written once for both modules (``m`` is fm or cp); the
objective values, the variables and every constraint's ``dual_value``
(CVXPY's shape, and the sum of the pieces' multipliers per entry) agree to
FW-AL's accuracy at tight tolerances. Also: the 0 of ``pos`` against a data
t (a violated one is "infeasible", as Clarabel says, also when a Parameter
changes between solves), the refused sides and objectives, and ``.value``.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

from _against_clarabel import DUAL_ATOL, DUAL_RTOL, OBJ_RTOL, TIGHT, X_ATOL, assert_same_answer, resolve_both  # noqa: E402, I001

rng = np.random.default_rng(11)
N = 6
C = 2.0 * rng.standard_normal(N)
D = 2.0 * rng.standard_normal(N)
A = rng.standard_normal((8, N))
B = rng.standard_normal(8)
CM = 2.0 * rng.standard_normal((3, 4))
CV = 2.0 * rng.standard_normal(4)


def _least_squares(m, x, target):
    return m.Minimize(m.sum_squares(x - target))


MODELS = {
    # every model has some binding piece (a nonzero multiplier) and some slack one
    "pos(x) <= t": lambda m, x, y: [m.pos(x) <= 0.5],
    "pos(x - 1) <= t, reversed": lambda m, x, y: [0.7 >= m.pos(x - 1)],
    "neg(x) <= t": lambda m, x, y: [m.neg(x) <= 0.3],
    "maximum of two variables": lambda m, x, y: [m.maximum(x, y) <= 0.4],
    "maximum of three, a scalar": lambda m, x, y: [m.maximum(x, 2 * y - 1, -0.5) <= 0.8],
    "maximum with an array of data": lambda m, x, y: [m.maximum(x, A[:N, 0] - 0.5) <= 1.0],
    "maximum with a vector bound": lambda m, x, y: [m.maximum(x, y) <= np.linspace(-0.2, 1.0, N)],
    "minimum of two": lambda m, x, y: [m.minimum(x, y) >= -0.6],
    "minimum of three, reversed": lambda m, x, y: [-0.4 <= m.minimum(x, y + 0.5, 1.0)],
    "pos and neg together": lambda m, x, y: [m.pos(x) <= 0.6, m.neg(y) <= 0.2],
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bounds_match_cvxpy(name):
    def build(m):
        x, y = m.Variable(N), m.Variable(N)
        constraints = MODELS[name](m, x, y)
        boxes = [m.abs(x) <= 2, m.abs(y) <= 2]
        prob = m.Problem(m.Minimize(m.sum_squares(x - C) + m.sum_squares(y - D)), constraints + boxes)
        return prob, [x, y], constraints

    ref_duals = assert_same_answer(build)
    assert any(np.max(np.abs(d)) > 1e-2 for d in ref_duals)  # the bound binds: its multiplier is tested


def test_broadcast_matrix_vector_scalar_matches_cvxpy():
    """maximum(X, v, 0.1) <= T with X (3, 4), v (4,) and T (3, 1): a (3, 4) constraint, one multiplier per entry."""
    T = np.array([[0.5], [1.0], [0.3]])

    def build(m):
        X, v = m.Variable((3, 4)), m.Variable(4)
        k = m.maximum(X, v, 0.1) <= T
        prob = m.Problem(m.Minimize(m.sum_squares(X - CM) + m.sum_squares(v - CV)),
                         [k, m.abs(X) <= 3, m.abs(v) <= 3])
        return prob, [X, v], [k]

    ref_duals = assert_same_answer(build)
    assert np.shape(ref_duals[0]) == (3, 4)


def test_piece_bounded_by_an_affine_expression_of_variables():
    """pos(x - c) <= s with s a variable (a penalty on the largest excess): every piece has variables."""
    def build(m):
        x, s = m.Variable(N), m.Variable()
        k = m.pos(x - 0.5) <= s
        prob = m.Problem(m.Minimize(m.sum_squares(x - C) + 3 * s), [k, m.abs(x) <= 2, s <= 5])
        return prob, [x, s], [k]

    assert_same_answer(build)


def test_parameter_bound_rechecked_at_each_solve():
    """pos(x) <= t with t a Parameter: t's values solve as CVXPY's; a negative t (the 0 piece violated) is
    "infeasible" as Clarabel says, and the next value solves again on the same compiled problem."""
    models = {}
    for m in (fm, cp):
        x, t = m.Variable(N), m.Parameter()
        k = m.pos(x) <= t
        models[m] = (m.Problem(m.Minimize(m.sum_squares(x - C)), [k, m.abs(x) <= 2]), x, t, k)
    for value in (0.5, 0.1, -0.2, 0.8):
        (status, f, x, dual), (ref_status, ref_f, ref_x, ref_dual) = resolve_both(models, value)
        assert status == ref_status
        if value < 0:
            assert status == "infeasible" and f == np.inf and x is None and dual is None
            assert "pos(" in models[fm][0].stats.message and "0.2 above the bound" in models[fm][0].stats.message
            continue
        assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f))
        np.testing.assert_allclose(x, ref_x, atol=X_ATOL)
        np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)


def test_parameter_argument_rechecked_at_each_solve():
    """maximum(x, p) <= 0.5 with p a Parameter: p's piece has no variables, so each solve checks it on p's
    value ("infeasible" where an entry of p passes 0.5, as Clarabel says); x's piece stays a bound."""
    models = {}
    for m in (fm, cp):
        x, p = m.Variable(N), m.Parameter(N)
        k = m.maximum(x, p) <= 0.5
        models[m] = (m.Problem(m.Minimize(m.sum_squares(x - C)), [k, m.abs(x) <= 2]), x, p, k)
    for value in (np.zeros(N), np.eye(N)[2], -np.ones(N)):
        (status, f, x, dual), (ref_status, ref_f, ref_x, ref_dual) = resolve_both(models, value)
        assert status == ref_status
        if status == "infeasible":
            assert "entry 2" in models[fm][0].stats.message
            continue
        assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f))
        np.testing.assert_allclose(x, ref_x, atol=X_ATOL)
        np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)


@pytest.mark.parametrize("write", [
    lambda m, x: m.pos(x) <= -0.1,
    lambda m, x: m.maximum(x, np.arange(N) / 10.0) <= 0.3,
    lambda m, x: m.minimum(x, 0.2) >= 0.5,
    lambda m, x: m.maximum(x, np.array([[0.0], [0.6]])) <= 0.5,  # broadcast: the (2, 1) piece's row 1
])
def test_violated_data_piece_is_infeasible_as_clarabel(write):
    for m in (fm, cp):
        x = m.Variable(N)
        prob = m.Problem(m.Minimize(m.sum_squares(x - C)), [write(m, x), m.abs(x) <= 2])
        prob.solve(**TIGHT) if m is fm else prob.solve(solver=cp.CLARABEL)
        assert prob.status == "infeasible"
        if m is fm:
            assert prob.value == np.inf and "no variables" in prob.stats.message


def test_satisfied_data_piece_adds_no_row():
    """The 0 of pos(x) <= 0.5 holds on data: no row; the model compiles as x <= 0.5 does (same blocks, rows)."""
    x = fm.Variable(N, name="x")
    k = fm.pos(x) <= 0.5
    assert k.expr.shape == (1, N) and len(k.data_pieces) == 1
    compiled = [fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [bound, fm.abs(x) <= 2]).compile()
                for bound in (k, x <= 0.5)]
    assert compiled[0].summary() == compiled[1].summary()
    assert compiled[0].operator.shape == compiled[1].operator.shape


@pytest.mark.parametrize("write, words", [
    (lambda x: fm.maximum(x, 0) >= 1, "not convex"),
    (lambda x: 1 <= fm.pos(x), "not convex"),
    (lambda x: fm.minimum(x, 0) <= 1, "not convex"),
    (lambda x: fm.neg(x) >= 0.5, "not convex"),
    (lambda x: fm.maximum(x, 0) <= fm.minimum(x, 1), "not with each other"),
    (lambda x: fm.maximum(x, 0) <= fm.max(x), "not with each other"),
    (lambda x: fm.maximum(x, 0) <= np.ones(3), "does not broadcast"),
    (lambda x: fm.maximum(x, np.ones(3)), "do not broadcast"),
    (lambda x: fm.maximum(x), "at least two arguments"),
    (lambda x: fm.maximum(fm.square(x), 1), "must be affine"),
    (lambda x: fm.maximum(1.0, 2.0) <= 3.0, "no variables"),
    (lambda x: 1 <= fm.Parameter(value=2.0) * fm.minimum(x, 0), r"minimum\(x, 0\) >= t"),
])
def test_refused_forms_say_why(write, words):
    x = fm.Variable(4, name="x")
    with pytest.raises(fm.ModelError, match=words):
        write(x)


@pytest.mark.parametrize("atom, advice", [
    (lambda x: fm.pos(x - 1), ["pos(x - 1) <= t (x - 1 <= t and 0 <= t", "fm.logistic(k * e) / k"]),
    (lambda x: fm.neg(x), ["neg(x) <= t (x >= -t and 0 <= t", "fm.logistic(-k * e) / k"]),
    (lambda x: fm.maximum(x, 0, 2 * x), ["maximum(x, 0, 2 * x) <= t (each argument <= t", "fm.log_sum_exp"]),
    (lambda x: -fm.minimum(x, 1), ["minimum(x, 1) >= t (each argument >= t"]),
])
def test_objective_refused_with_what_to_write(atom, advice):
    """Not smooth: refused in objectives as before, the message now naming the constraint that is accepted."""
    x = fm.Variable(4, name="x")
    with pytest.raises(fm.ModelError) as info:
        fm.Problem(fm.Minimize(fm.sum(atom(x))), [fm.abs(x) <= 1]).solve()
    assert "not smooth" in str(info.value)
    for words in advice:
        assert words in str(info.value)


def test_value_is_numpys():
    x, X = fm.Variable(5), fm.Variable((3, 5))
    x.value, X.value = rng.standard_normal(5), rng.standard_normal((3, 5))
    w = rng.standard_normal(5)
    np.testing.assert_array_equal(fm.pos(x).value, np.maximum(x.value, 0))
    np.testing.assert_array_equal(fm.neg(x).value, np.maximum(-x.value, 0))
    np.testing.assert_array_equal(fm.maximum(X, x, 0.2).value, np.maximum(np.maximum(X.value, x.value), 0.2))
    np.testing.assert_array_equal(fm.minimum(x, w).value, np.minimum(x.value, w))
    np.testing.assert_array_equal(fm.maximum(fm.maximum(x, w), 0).value, np.maximum(np.maximum(x.value, w), 0))
    assert fm.maximum(X, x, 0.2).shape == cp.maximum(cp.Variable((3, 5)), cp.Variable(5), 0.2).shape
    assert fm.pos(x).curvature == "convex" and fm.minimum(x, w).curvature == "concave"
