"""Hinge budgets and scaled piecewise bounds, checked against CVXPY + Clarabel.

``fm.sum(fm.pos(e)) <= t`` (also ``neg``, ``maximum(e, c)``, ``minimum(e, c) >=
t``, along an axis) is lowered with a hidden ``s >= 0`` in the simplex ``sum(s)
<= t`` and rows ``e - s <= 0``; ``alpha * P + d <= t`` (P a piecewise atom or an
extremum, alpha a nonzero number) is divided through. Each model is written once
for both modules (``m`` is fm or cp): the objective values, the variables and
the constraints' ``dual_value`` (CVXPY's multiplier of the constraint as written,
so scaled by 1 / |alpha|) agree to FW-AL's accuracy at tight tolerances. Also:
a Parameter t re-solved over values (0, and a negative one that is "infeasible"
as Clarabel says), the hidden variable, and the refused forms.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

from _against_clarabel import DUAL_ATOL, DUAL_RTOL, OBJ_RTOL, TIGHT, X_ATOL, assert_same_answer, resolve_both  # noqa: E402, I001

rng = np.random.default_rng(23)
M, N = 10, 5
A = rng.standard_normal((M, N))
B = rng.standard_normal(M)
X0 = rng.uniform(-2.0, 2.0, N)
Y0 = rng.uniform(-2.0, 2.0, N)
CV = 0.5 * rng.standard_normal(M)
X0M = rng.uniform(-2.0, 2.0, (3, 4))
DM = 0.3 * rng.standard_normal((3, 4))
BP = np.abs(B) + 0.5


HINGES = {
    # the image e = A x - b (CVXPY users' hinge / shortfall budgets); every one binds unless named "slack"
    "sum(pos(A x - b)) <= t": lambda m, x, y: [m.sum(m.pos(A @ x - b_)) <= 3.0],
    "sum(pos(A x - b)) <= t, slack": lambda m, x, y: [m.sum(m.pos(A @ x - b_)) <= 1e3],
    "t >= sum(pos(A x - b)), reversed": lambda m, x, y: [5.0 >= m.sum(m.pos(A @ x - b_))],
    "sum(neg(A x - b)) <= t": lambda m, x, y: [m.sum(m.neg(A @ x - b_)) <= 2.0],
    "sum(maximum(A x - b, c)) <= t": lambda m, x, y: [m.sum(m.maximum(A @ x - b_, CV)) <= 1.0],
    "sum(minimum(A x - b, c)) >= t": lambda m, x, y: [m.sum(m.minimum(A @ x - b_, CV)) >= -7.0],
    "sum(maximum(x - 0.5, -2 x - 1, 0)) <= t, two pieces": lambda m, x, y: [
        m.sum(m.maximum(x - 0.5, -2 * x - 1, 0)) <= 0.8],
    "sum(pos(x - y)) <= t, two variables": lambda m, x, y: [m.sum(m.pos(x - y)) <= 0.5],
    "two hinges": lambda m, x, y: [m.sum(m.pos(A @ x - b_)) <= 4.0, m.sum(m.neg(x + y)) <= 0.3],
    # scaled: alpha * sum(...) + d with its multiplier over |alpha|
    "2 * sum(pos(A x - b)) + 1 <= t": lambda m, x, y: [2 * m.sum(m.pos(A @ x - b_)) + 1 <= 7.0],
    "sum(3 * pos(A x - b)) <= t": lambda m, x, y: [m.sum(3 * m.pos(A @ x - b_)) <= 9.0],
    "-sum(minimum(A x - b, 0)) / 2 <= t": lambda m, x, y: [-m.sum(m.minimum(A @ x - b_, 0)) / 2 <= 1.0],
}
b_ = B

SCALED = {
    "2 * pos(x) <= t": lambda m, x, y: [2 * m.pos(x) <= 1.0],
    "pos(x - 0.2) / 3 + 0.1 <= t": lambda m, x, y: [m.pos(x - 0.2) / 3 + 0.1 <= 0.3],
    "-minimum(x, 0.5) <= t": lambda m, x, y: [-m.minimum(x, 0.5) <= 0.3],
    "t >= 2 * pos(x - 0.2), reversed": lambda m, x, y: [1.0 >= 2 * m.pos(x - 0.2)],
    "-2 * neg(x) >= -t": lambda m, x, y: [-2 * m.neg(x) >= -1.0],
    "0.5 * maximum(x, y) + 0.1 <= vector t": lambda m, x, y: [
        0.5 * m.maximum(x, y) + 0.1 <= np.linspace(-0.1, 0.6, N)],
    "2 * pos(x) + y <= t, variables beside the atom": lambda m, x, y: [2 * m.pos(x) + y <= 1.0],
    "3 * max(x) <= t": lambda m, x, y: [3 * m.max(x) <= 1.0],
    "-max(x) >= -t": lambda m, x, y: [-m.max(x) >= -0.5],
    "-2 * min(x) <= t": lambda m, x, y: [-2 * m.min(x) <= 1.0],
}


def _vector_model(constraints_of):
    def build(m):
        x, y = m.Variable(N), m.Variable(N)
        constraints = constraints_of(m, x, y)
        boxes = [m.abs(x) <= 3, m.abs(y) <= 3]
        prob = m.Problem(m.Minimize(m.sum_squares(x - X0) + m.sum_squares(y - Y0)), constraints + boxes)
        return prob, [x, y], constraints
    return build


@pytest.mark.parametrize("name", sorted(HINGES))
def test_hinge_budgets_match_cvxpy(name):
    ref_duals = assert_same_answer(_vector_model(HINGES[name]))
    binding = max(float(np.max(np.abs(d))) for d in ref_duals)
    assert (binding < 1e-6) if "slack" in name else (binding > 1e-2)


@pytest.mark.parametrize("name", sorted(SCALED))
def test_scaled_bounds_match_cvxpy(name):
    ref_duals = assert_same_answer(_vector_model(SCALED[name]))
    assert any(np.max(np.abs(d)) > 1e-2 for d in ref_duals)  # the bound binds: its multiplier is tested


def test_hinge_along_an_axis_is_one_budget_per_row():
    """fm.sum(fm.pos(X - D), axis=1) <= t: a budget per row of X (a batched simplex), t a vector; a (3,)
    constraint with one multiplier per row, as CVXPY's."""
    t = np.array([0.5, 1.0, 0.2])

    def build(m):
        X = m.Variable((3, 4))
        k = m.sum(m.pos(X - DM), axis=1) <= t
        prob = m.Problem(m.Minimize(m.sum_squares(X - X0M)), [k, m.abs(X) <= 5])
        return prob, [X], [k]

    ref_duals = assert_same_answer(build)
    assert np.shape(ref_duals[0]) == (3,) and np.min(ref_duals[0]) > 1e-2


def test_projection_onto_a_hinge_budget():
    """The projection of a point onto {sum(pos(x - c)) <= t}: a closed form (the entries of x0 above c move
    down by tau, not below c; tau from sum(pos(x0 - c - tau)) = t, by bisection) and the multiplier 2 tau
    (the KKT conditions x = x0 - mu g / 2, g in the subdifferential of pos)."""
    c, t = 0.1, 0.7
    x0 = np.array([1.2, -0.3, 0.4, 0.9, 0.05, 2.0])
    lo, hi = 0.0, float(np.max(x0 - c))
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        lo, hi = (tau, hi) if np.sum(np.maximum(x0 - c - tau, 0.0)) > t else (lo, tau)
    expected = np.where(x0 > c, np.maximum(c, x0 - tau), x0)
    x = fm.Variable(6)
    k = fm.sum(fm.pos(x - c)) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - x0)), [k, fm.abs(x) <= 3])
    prob.solve(**TIGHT)
    assert prob.status == fm.OPTIMAL
    np.testing.assert_allclose(x.value, expected, atol=X_ATOL)
    np.testing.assert_allclose(k.dual_value, 2 * tau, rtol=DUAL_RTOL)


def test_parameter_budget_resolved_over_values():
    """t a Parameter: each value solves as CVXPY's on the same compiled problem; t = 0 forces e <= 0 (its
    multiplier is not unique there: values and points only); a negative t is "infeasible", as Clarabel says."""
    models = {}
    for m in (fm, cp):
        x, t = m.Variable(N), m.Parameter()
        k = m.sum(m.pos(A @ x - BP)) <= t  # (x = 0 meets A x <= BP: t = 0 is feasible)
        models[m] = (m.Problem(m.Minimize(m.sum_squares(x - X0)), [k, m.abs(x) <= 3]), x, t, k)
    compiled = None
    for value in (2.0, 0.5, 0.0, -1.0, 3.0):
        (status, f, x, dual), (ref_status, ref_f, ref_x, ref_dual) = resolve_both(models, value)
        assert status == ref_status
        compiled = compiled or models[fm][0].compile()
        if value < 0:
            assert status == "infeasible" and f == np.inf and x is None and dual is None
            assert "sum(pos(" in models[fm][0].stats.message and "-1 < 0" in models[fm][0].stats.message
            continue
        assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f))
        np.testing.assert_allclose(x, ref_x, atol=X_ATOL)
        if value > 0:
            np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)
        else:  # any multiplier at least the rows' largest is one: CVXPY's is such a one, and so is ours
            assert dual is not None and 0.0 < dual <= ref_dual * (1 + DUAL_RTOL)
    assert models[fm][0].compile() is compiled


def test_constant_negative_budget_is_infeasible_as_clarabel():
    for m in (fm, cp):
        x = m.Variable(N)
        prob = m.Problem(m.Minimize(m.sum_squares(x - X0)), [m.sum(m.pos(x)) <= -0.5, m.abs(x) <= 3])
        prob.solve(**TIGHT) if m is fm else prob.solve(solver=cp.CLARABEL)
        assert prob.status == "infeasible"
        if m is fm:
            assert prob.value == np.inf and "-0.5 < 0" in prob.stats.message


def test_auxiliary_variable_is_hidden():
    """The hinge's s is the compiler's: not in prob.variables(), and a user variable with its name is kept
    apart (variables are told apart by identity)."""
    x = fm.Variable(N, name="x")
    twin = fm.Variable(N, name="pos(x - 1)")
    k = fm.sum(fm.pos(x - 1)) <= 0.5
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 2 * X0) + fm.sum_squares(twin - Y0)),
                      [k, fm.abs(x) <= 3, fm.abs(twin) <= 3])
    prob.solve(**TIGHT)
    assert prob.status == fm.OPTIMAL
    assert prob.variables() == [x, twin]
    assert k.variables() == [x]
    np.testing.assert_allclose(twin.value, Y0, atol=X_ATOL)
    assert np.sum(np.maximum(x.value - 1, 0)) <= 0.5 + 1e-6


@pytest.mark.parametrize("write, words", [
    (lambda x, y: fm.sum(fm.pos(x)) <= fm.sum(y), "must be data"),
    (lambda x, y: fm.sum(fm.pos(x)) + fm.sum(y) <= 1, "must be data"),
    (lambda x, y: fm.sum(fm.pos(np.ones(3))) <= 1, "no variables"),
    (lambda x, y: fm.sum(fm.pos(x)) >= 1, "wrong side"),
    (lambda x, y: fm.sum(fm.minimum(x, 0)) <= 1, "wrong side"),
    (lambda x, y: fm.sum(fm.maximum(x, y)) <= 1, "argument without variables"),
    (lambda x, y: fm.sum(fm.pos(x)) <= np.ones(2), "does not broadcast"),
    (lambda x, y: fm.sum(fm.pos(x), axis=0) <= np.ones(4), "does not broadcast"),
    (lambda x, y: fm.sum(fm.maximum(x, fm.Parameter(4, value=np.ones(4)), 0)) <= 1, "several arguments"),
    (lambda x, y: fm.Parameter(value=2.0) * fm.pos(x) <= 1, "not multiplied by a Parameter"),
    (lambda x, y: np.arange(1.0, 5.0) * fm.pos(x) <= 1, "by a vector"),
    (lambda x, y: 2 * fm.pos(x) + fm.pos(y) <= 1, "another such atom"),
    (lambda x, y: -2 * fm.pos(x) <= 1, "not convex"),
    (lambda x, y: 1 <= -3 * fm.minimum(x, 0), "not convex"),
    (lambda x, y: 2 * fm.sum(fm.pos(x)) >= 1, "wrong side"),
])
def test_refused_forms_say_why(write, words):
    x, y = fm.Variable(4, name="x"), fm.Variable(4, name="y")
    with pytest.raises(fm.ModelError, match=words):
        write(x, y)


def test_objective_names_the_hinge_budget():
    x = fm.Variable(4, name="x")
    with pytest.raises(fm.ModelError, match=r"fm.sum\(pos\(x\)\) <= t"):
        fm.Problem(fm.Minimize(fm.sum(fm.pos(x))), [fm.abs(x) <= 1])


def test_many_binding_hinge_rows_end_optimal_with_defaults():
    """sum(pos(A x - b)) <= t over 1,000 rows, binding (least squares 200 x 100 in a box; the model of
    benchmarks/hinge_budgets.py): plain ``prob.solve()`` is "optimal" within 1e-3 of Clarabel, its multiplier
    Clarabel's, in far fewer iterations than the 8,700 its hidden excess took with vertex steps (one entry
    pair per iteration; 433 of the 1,000 rows positive at the optimum): the excess now moves by projections."""
    rng = np.random.default_rng(1000)
    m_rows, n = 1000, 100
    A_, b = rng.standard_normal((m_rows, n)), rng.standard_normal(m_rows)
    F = rng.standard_normal((2 * n, n))
    g = F @ rng.uniform(-1, 1, n) + rng.standard_normal(2 * n)
    x_free = np.linalg.lstsq(F, g, rcond=None)[0]
    t = 0.3 * float(np.maximum(A_ @ np.clip(x_free, -1, 1) - b, 0).sum())
    answers = {}
    for m in (fm, cp):
        x = m.Variable(n)
        k = m.sum(m.pos(A_ @ x - b)) <= t
        prob = m.Problem(m.Minimize(m.sum_squares(F @ x - g)), [k, m.abs(x) <= 1])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        answers[m] = (prob, k)
    (prob, k), (ref, ref_k) = answers[fm], answers[cp]
    assert prob.status == fm.OPTIMAL
    assert abs(prob.value - ref.value) <= 1e-3 * max(1.0, abs(ref.value))
    assert prob.stats.iterations <= 1000, prob.stats.iterations
    assert prob.stats.step_counts.get("projection", 0) > 0
    np.testing.assert_allclose(k.dual_value, ref_k.dual_value, rtol=2e-3)


def test_hinge_excess_projection_against_clarabel():
    """The hidden excess's set {s >= 0, sum(s) <= t} projects points inside, on the budget and far outside as
    CVXPY + Clarabel's projection does."""
    from fwmodel.sets.simplex import HingeExcessSimplex

    r = np.random.default_rng(5)
    for scale, t in ((0.1, 2.0), (1.0, 2.0), (30.0, 0.5), (1.0, 1e-6)):
        v = scale * r.standard_normal(40)
        got = HingeExcessSimplex(fm.Variable(40), t).project_flat(v)
        z = cp.Variable(40)
        cp.Problem(cp.Minimize(cp.sum_squares(z - v)), [z >= 0, cp.sum(z) <= t]).solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(got, z.value, atol=1e-6 * max(1.0, scale))
        assert np.all(got >= 0) and got.sum() <= t * (1 + 1e-12)
