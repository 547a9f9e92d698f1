"""Trust in the modeling layer: what the model says is what gets solved.

- set data (radii, bounds, totals, k, flags) is validated by one helper and
  refused by name when it is not a sensible number; bounds and radii large
  enough to overflow FW-AL's squared distances are refused with the limit;
- a Problem is immutable (read-only objective, constraints a copy);
- variables without entries are refused by name;
- an unsigned Parameter has no sign: scaling a convex term by it is refused,
  declared signs carry through Parameter expressions, Parameter values are
  read-only and re-checked at each solve;
- a constraint on data alone is evaluated at every solve: dropped when true,
  "infeasible" (naming it) when false;
- problems with SymPy atoms, sets and Parameters pickle, and the copies solve
  to the same answer.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets._common import MAX_DATA_MAGNITUDE


# ------------------------------------------------------------ set data
def _x():
    return fm.Variable(3, name="x")


BAD_SET_DATA = [
    # (builder, set name, argument name, words of the message)
    (lambda x: fm.L1Ball(x, "1"), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, True), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, None), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, np.array([1.0, 2.0])), "L1Ball", "radius", "real number"),
    (lambda x: fm.L2Ball(x, np.nan), "L2Ball", "radius", "NaN"),
    (lambda x: fm.L2Ball(x, -0.5), "L2Ball", "radius", "nonnegative"),
    (lambda x: fm.LinfBall(x, np.inf), "LinfBall", "radius", "finite"),
    (lambda x: fm.LinfBall(x, 1e300), "LinfBall", "radius", "limit"),
    (lambda x: fm.L1Ball(x, 2e100), "L1Ball", "radius", "limit"),
    (lambda x: fm.KSparsePolytope(x, 2.5), "KSparsePolytope", "k", "integer"),
    (lambda x: fm.KSparsePolytope(x, True), "KSparsePolytope", "k", "integer"),
    (lambda x: fm.KSparsePolytope(x, 0), "KSparsePolytope", "k", ">= 1"),
    (lambda x: fm.KSparsePolytope(x, 2, radius=-1), "KSparsePolytope", "radius", "nonnegative"),
    (lambda x: fm.Simplex(x, total="a"), "Simplex", "total", "real number"),
    (lambda x: fm.Simplex(x, total=-1.0), "Simplex", "total", "nonnegative"),
    (lambda x: fm.Simplex(x, total=1e200), "Simplex", "total", "limit"),
    (lambda x: fm.Simplex(x, equality="no"), "Simplex", "equality", "True or False"),
    (lambda x: fm.Box(x, 1, 0), "Box", "lower", "upper"),
    (lambda x: fm.Box(x, [0, 2, 0], 1), "Box", "lower", "flat index 1"),
    (lambda x: fm.Box(x, [0, 0], 1), "Box", "lower", "broadcast"),
    (lambda x: fm.Box(x, 0, np.ones((2, 3))), "Box", "upper", "broadcast"),
    (lambda x: fm.Box(x, "0", 1), "Box", "lower", "real number"),
    (lambda x: fm.Box(x, [True, False, True], 2), "Box", "lower", "booleans"),
    (lambda x: fm.Box(x, 0, [1, np.inf, 1]), "Box", "upper", "NaN or infinite"),
    (lambda x: fm.Box(x, -1e300, 1e300), "Box", "lower", "limit"),
    (lambda x: fm.Box(x, 0, [1, 1, 1e101]), "Box", "upper", "limit"),
    (lambda x: fm.Box(x, 0, 1j), "Box", "upper", "real number"),
    (lambda x: fm.TraceNormBall(fm.Variable((2, 2)), radius=np.inf), "TraceNormBall", "radius", "finite"),
    (lambda x: fm.TraceNormBall(fm.Variable((2, 2)), psd="yes"), "TraceNormBall", "psd", "True or False"),
]


@pytest.mark.parametrize("build, owner, name, words", BAD_SET_DATA)
def test_bad_set_data_is_refused_by_name(build, owner, name, words):
    with pytest.raises(fm.ModelError) as info:
        build(_x())
    message = str(info.value)
    assert owner in message and name in message and words in message


def test_sensible_set_data_is_accepted_as_plain_numbers():
    x = _x()
    assert fm.L1Ball(x, np.float32(2.0)).radius == 2.0
    assert fm.L1Ball(x, np.array([3.0])).radius == 3.0  # a one-entry array is a number
    assert fm.KSparsePolytope(x, np.int64(2)).k == 2
    assert fm.KSparsePolytope(x, 2.0).k == 2  # an integral float is an integer
    box = fm.Box(x, np.array(0.0), [1, 2, 3])
    assert box.lower == 0.0 and np.array_equal(box.upper, [1.0, 2.0, 3.0])
    limit = fm.LinfBall(x, MAX_DATA_MAGNITUDE)
    assert limit.radius == MAX_DATA_MAGNITUDE


def test_bounds_at_the_limit_solve_to_the_closed_form():
    # Box(x, -1e100, 1e100) holds the unconstrained minimizer of ||x - c||^2: x = c
    c = np.array([1.0, -2.0, 3.0])
    for bound in (1e6, 1e50, MAX_DATA_MAGNITUDE):
        x = _x()
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -bound, bound)])
        prob.solve(tol=1e-10)  # tol is relative to the objective's range over the box (about bound^2)
        assert prob.status == "optimal"
        # the stopping rule is relative to the objective's range over the box (huge here):
        # the guarantee is f(x) - f* <= tol * objective_scale, and the point is finite and close to c
        assert prob.value <= 1e-4 * prob.stats.objective_scale
        np.testing.assert_allclose(x.value, c, atol=1e-3)
    # a linear objective goes to the corner: min sum(x) over [-b, b]^3 is -3 b
    x = _x()
    prob = fm.Problem(fm.Minimize(fm.sum(x)), [fm.Box(x, -MAX_DATA_MAGNITUDE, MAX_DATA_MAGNITUDE)])
    assert prob.solve() == pytest.approx(-3 * MAX_DATA_MAGNITUDE, rel=1e-12)


@pytest.mark.parametrize("factor, words", [(1e155, r"exceeds 1e\+100"), (1e120, r"exceeds 1e\+100"),
                                            (1e-200, "below 1e-100"), (1e-120, "below 1e-100")])
@pytest.mark.parametrize("sense", ["==", ">=", "<="])
def test_rows_beyond_the_data_limit_are_refused_by_name(factor, sense, words):
    # Rows at 1e155 used to overflow their squared norm to inf: the row was scaled by 0
    # (dropped) and the solve said "optimal" with the constraint violated; rows at 1e-200
    # underflowed to a norm of 0 and were dropped the same way. Both are refused, naming them.
    x = fm.Variable(4, name="x")
    lhs, rhs = factor * (x[0] + x[1]), factor * 0.3
    row = {"==": lhs == rhs, ">=": lhs >= rhs, "<=": lhs <= rhs}[sense]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.Simplex(x), row, x[2] - x[3] == 0.1])
    with pytest.raises(fm.ModelError, match=words) as err:
        prob.solve()
    assert "x[0] + x[1]" in str(err.value)


def test_rows_made_too_large_by_a_parameter_are_refused_at_solve():
    x = fm.Variable(4, name="x")
    P = fm.Parameter(value=1.0, name="P")
    row = P * (P * (x[0] + x[1])) == 0.3
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.Simplex(x), row, x[2] - x[3] == 0.1])
    prob.solve()
    # closed form: x0 + x1 = 0.3, x2 - x3 = 0.1, sum x = 1: x = (0.15, 0.15, 0.4, 0.3) minimizes the distance to 1
    np.testing.assert_allclose(x.value, [0.15, 0.15, 0.4, 0.3], atol=2e-3)
    P.value = 1e90  # each value within the limit, their product (1e180) beyond it
    with pytest.raises(fm.ModelError, match="exceeds 1e\\+100"):
        prob.solve()


def test_rows_within_the_data_limit_solve_in_any_units():
    # the same model as above written times 1e-90 and 1e90 (inside the limit): the closed form
    for factor in (1e-90, 1e90):
        x = fm.Variable(4, name="x")
        rows = [factor * (x[0] + x[1]) == factor * 0.3, factor * (x[2] - x[3]) == factor * 0.1]
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.Simplex(x)] + rows)
        prob.solve()
        assert prob.status == "optimal"
        np.testing.assert_allclose(x.value, [0.15, 0.15, 0.4, 0.3], atol=2e-3)


# ------------------------------------------------------------ immutable problems
def _projection_problem(c, constraints_of):
    """min ||x - c||^2 over the given constraints (a projection: closed forms below)."""
    x = fm.Variable(c.shape, name="x")
    return x, fm.Problem(fm.Minimize(fm.sum_squares(x - c)), constraints_of(x))


def test_objective_is_read_only():
    c = np.array([0.5, 2.0, -3.0])
    x, prob = _projection_problem(c, lambda x: [fm.Box(x, -1, 1)])
    prob.solve()
    with pytest.raises(AttributeError, match="read-only"):
        prob.objective = fm.Minimize(fm.sum_squares(x + c))
    with pytest.raises(AttributeError):
        prob.objective.expr = fm.sum_squares(x + c)
    # the problem is unchanged: still the projection of c onto the box
    prob.solve()
    np.testing.assert_allclose(x.value, np.clip(c, -1, 1), atol=1e-6)


def test_constraints_is_a_copy_that_does_not_change_the_problem():
    c = np.array([0.5, 2.0, -3.0])
    given = []
    x, prob = _projection_problem(c, lambda x: given + [fm.Box(x, -1, 1)])
    prob.solve()
    listed = prob.constraints
    assert isinstance(listed, list) and len(listed) == 1
    listed.append(x == 0)  # mutating the copy ...
    prob.constraints.append(x == 0)
    given.append(x == 0)  # ... or the caller's list
    with pytest.raises(AttributeError, match="read-only"):
        prob.constraints = [x == 0]
    assert len(prob.constraints) == 1
    prob.solve()
    np.testing.assert_allclose(x.value, np.clip(c, -1, 1), atol=1e-6)
    # a new problem with the extra constraint gives the new answer
    moved = fm.Problem(prob.objective, prob.constraints + [fm.sum(x) == 0])
    moved.solve()
    # projection of c onto {box, sum = 0}: clip(c - t) with t such that the sum vanishes
    t = 0.5  # clip([0, 1.5, -3.5]) = [0, 1, -1]
    np.testing.assert_allclose(x.value, np.clip(c - t, -1, 1), atol=1e-3)


def test_nested_constraint_lists_are_frozen_at_construction():
    c = np.array([0.5, 2.0, -3.0])
    inner = []
    x, prob = _projection_problem(c, lambda x: [fm.Box(x, -1, 1), inner])
    inner.append(x == 0)  # added after the problem was built: not part of it
    prob.solve()
    np.testing.assert_allclose(x.value, np.clip(c, -1, 1), atol=1e-6)


# ------------------------------------------------------------ empty variables
@pytest.mark.parametrize("shape", [0, (0,), (3, 0), (0, 2, 2)])
def test_variable_without_entries_is_refused_by_name(shape):
    with pytest.raises(fm.ModelError, match=r"Variable 'z'.*no entries"):
        fm.Variable(shape, name="z")


# ------------------------------------------------------------ Parameter signs
def _convex_terms(x):
    return fm.sum_squares(x - 1.0)


UNSIGNED_COEFFICIENTS = [
    lambda lam: lam,
    lambda lam: 2 * lam,
    lambda lam: lam / 3,
    lambda lam: -lam,
    lambda lam: lam + 1,  # the sign of lam + 1 is unknown for an unsigned lam
]


@pytest.mark.parametrize("coefficient", UNSIGNED_COEFFICIENTS)
@pytest.mark.parametrize("value", [1.0, -1.0])
def test_unsigned_parameter_times_convex_term_is_refused_whatever_its_value(coefficient, value):
    x = fm.Variable(3, name="x")
    lam = fm.Parameter(name="lam", value=value)
    objective = coefficient(lam) * _convex_terms(x)
    assert objective.curvature == "unknown"
    for sense in (fm.Minimize, fm.Maximize):
        with pytest.raises(fm.ModelError, match=r"parameter lam.*nonneg=True or nonpos=True"):
            sense(objective)


def test_declared_signs_carry_through_parameter_expressions():
    x = fm.Variable(3, name="x")
    w = fm.Parameter(3, name="w", nonneg=True, value=np.ones(3))
    v = fm.Parameter(name="v", nonpos=True, value=-2.0)
    convex = [2 * w[0], w[1] / 4, fm.sum(w), w.T[2], -v, v * v, fm.square(v), w[0] + fm.sum(w)]
    concave = [v, -w[0], 3 * v, v / 2, v - w[0]]
    unknown = [w[0] - 1, w[0] + v, w[0] - w[1]]
    for coefficient in convex:
        assert (coefficient * _convex_terms(x)).curvature == "convex", coefficient
    for coefficient in concave:
        assert (coefficient * _convex_terms(x)).curvature == "concave", coefficient
    for coefficient in unknown:
        assert (coefficient * _convex_terms(x)).curvature == "unknown", coefficient
    assert (w @ fm.square(x)).curvature == "convex"  # a nonneg weighting of convex entries
    # fixed data is still judged by its value
    assert (np.array([1.0, 2.0, 0.0]) @ fm.square(x)).curvature == "convex"
    assert (np.array([1.0, -2.0, 0.0]) @ fm.square(x)).curvature == "unknown"


def test_quad_form_with_a_parameter_needs_psd_declared():
    x = fm.Variable(2, name="x")
    P = fm.Parameter((2, 2), name="P", value=np.eye(2))
    with pytest.raises(fm.ModelError, match=r"parameter P.*psd=True"):
        fm.Minimize(fm.quad_form(x, P))
    Q = fm.Parameter((2, 2), name="Q", psd=True, value=np.diag([2.0, 1.0]))
    c = np.array([1.0, 1.0])
    prob = fm.Problem(fm.Minimize(fm.quad_form(x, Q) - 2 * c @ x), [fm.Box(x, -5, 5)])
    prob.solve(tol=1e-8)
    np.testing.assert_allclose(x.value, np.linalg.solve(Q.value, c), atol=1e-4)  # Q x = c
    Q.value = np.diag([1.0, 4.0])
    prob.solve(tol=1e-8)
    np.testing.assert_allclose(x.value, np.linalg.solve(Q.value, c), atol=1e-4)


def test_signed_parameter_re_solves_with_each_value():
    # min lam ||x - c||^2 + sum(x) over [-2, 2]^3: x = clip(c - 1 / (2 lam))
    c = np.array([0.5, -1.0, 1.5])
    x = fm.Variable(3, name="x")
    lam = fm.Parameter(name="lam", nonneg=True, value=1.0)
    prob = fm.Problem(fm.Minimize(lam * fm.sum_squares(x - c) + fm.sum(x)), [fm.Box(x, -2, 2)])
    for value in (1.0, 0.25, 4.0):
        lam.value = value
        prob.solve(tol=1e-8)
        np.testing.assert_allclose(x.value, np.clip(c - 1 / (2 * value), -2, 2), atol=1e-4)
    with pytest.raises(ValueError, match=r"lam.*nonneg"):
        lam.value = -1.0  # the sign that made the problem convex is enforced


def test_parameter_value_is_read_only_and_declared_signs_are_rechecked_at_solve():
    x = fm.Variable(3, name="x")
    w = fm.Parameter(3, name="w", nonneg=True, value=np.ones(3))
    prob = fm.Problem(fm.Minimize(w @ fm.square(x - 1)), [fm.Box(x, -2, 2)])
    prob.solve()
    with pytest.raises(ValueError, match="read-only"):
        w.value[:] = -1
    np.testing.assert_array_equal(w.value, np.ones(3))
    # forcing the array writable and editing it is caught by the next solve
    forced = w.value
    forced.setflags(write=True)
    forced[1] = -1.0
    with pytest.raises(fm.ModelError, match=r"Parameter 'w'.*nonneg"):
        prob.solve()
    w.value = [1.0, 2.0, 3.0]  # assigning a new value is the way to change it
    prob.solve()
    np.testing.assert_allclose(x.value, np.ones(3), atol=1e-5)


# ------------------------------------------------------------ constraints on data alone
def _solve_with(extra, sense=fm.Minimize):
    """min/max ||x - c||^2 over a box plus the ``extra`` constraints (closed form: the clipped c)."""
    c = np.array([0.5, 2.0, -3.0])
    x = fm.Variable(3, name="x")
    objective = fm.sum_squares(x - c) if sense is fm.Minimize else -fm.sum_squares(x - c)
    prob = fm.Problem(sense(objective), [fm.Box(x, -1, 1)] + extra)
    prob.solve()
    return prob, x, np.clip(c, -1, 1)


def _false_data_constraints():
    P = fm.Parameter(name="P", value=5.0)
    Q = fm.Parameter(2, name="Q", value=[1.0, 0.0])
    return [
        (fm.L1Ball(np.ones(3), 0.5), "L1Ball"),
        (fm.L2Ball(np.array([3.0, 4.0]), 4.9), "L2Ball"),
        (fm.Simplex(np.array([0.2, 0.7])), "Simplex"),
        (fm.Box(P, 0, 1), "Box(P"),
        (P == 0, "P == 0"),
        (Q == np.zeros(2), "Q == "),
        (fm.Constant(2.0) == 3.0, "2 == 3"),
    ]


@pytest.mark.parametrize("index", range(7))
@pytest.mark.parametrize("sense", [fm.Minimize, fm.Maximize])
def test_false_constraint_on_data_makes_the_problem_infeasible(index, sense):
    constraint, name = _false_data_constraints()[index]
    prob, x, _ = _solve_with([constraint], sense)
    assert prob.status == "infeasible"
    assert prob.value == (np.inf if sense is fm.Minimize else -np.inf)
    assert x.value is None
    assert name in prob.stats.message and "does not hold" in prob.stats.message
    assert prob.stats.iterations == 0 and len(prob.history) == 0


def test_true_constraint_on_data_is_dropped():
    P = fm.Parameter(name="P", value=0.5)
    true_ones = [fm.L1Ball(np.full(3, 0.1), 0.5), fm.Box(P, 0, 1), P == 0.5, fm.Simplex(np.array([0.3, 0.7])),
                 fm.Constant(np.ones(2)) == 1.0, fm.LinfBall(np.array([1.0, -1.0]), 1.0)]
    prob, x, expected = _solve_with(true_ones)
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, expected, atol=1e-6)
    assert len(prob.compile().blocks) == 1  # only the box on x has a block
    assert prob.compile().M.shape[0] == 0


@pytest.mark.parametrize("write", ["G @ x <= h", "-G @ x >= -h"])
def test_entries_of_an_inequality_without_variables_are_true_or_false_on_data(write):
    # A zero row of G (as CVXPY reads G @ x <= h): dropped when 0 <= h_i holds, with multiplier 0;
    # "infeasible", naming the entry, when it does not. It was refused ("its coefficients cancel").
    G = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]])

    def solve(h):
        x = fm.Variable(3, name="x")
        row = G @ x <= h if write == "G @ x <= h" else -G @ x >= -h
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.Simplex(x), row])
        prob.solve(tol=1e-7)
        return prob, x, row

    for h1 in (1.0, 0.0):
        prob, x, row = solve(np.array([0.5, h1, 0.8]))
        assert prob.status == "optimal"
        # closed form: the simplex point nearest to 1 with x0 + x1 <= 0.5 (x2 <= 0.5 + ... not binding):
        # x = (0.25, 0.25, 0.5), value 2 * 0.75^2 + 0.25 = 1.375; multiplier of the first row 0.5 (KKT)
        np.testing.assert_allclose(x.value, [0.25, 0.25, 0.5], atol=1e-3)
        assert prob.value == pytest.approx(1.375, abs=1e-3)
        np.testing.assert_allclose(row.dual_value, [0.5, 0.0, 0.0], atol=2e-3)
    prob, x, _ = solve(np.array([0.5, -1.0, 0.8]))
    assert prob.status == "infeasible"
    assert "entry 1" in prob.stats.message and "does not hold" in prob.stats.message
    assert x.value is None


def test_an_inequality_whose_parameter_cancels_an_entry_solves_as_cvxpy():
    # P[0] = 0 makes entry 0 of the row 0 <= 0.5: true, no bound at this solve (was refused); CVXPY + Clarabel
    cp = pytest.importorskip("cvxpy")
    answers = []
    for m in (fm, cp):
        x = m.Variable(3, name="x")
        P = m.Parameter(2, name="P", value=[0.0, 1.0])
        row = m.multiply(P, x[:2]) <= 0.5
        sets = [fm.Simplex(x)] if m is fm else [x >= 0, cp.sum(x) == 1]
        prob = m.Problem(m.Minimize(m.sum_squares(x - np.array([2.0, 1.0, 0.0]))), sets + [row])
        prob.solve(tol=1e-8, feas_tol=1e-8) if m is fm else prob.solve(solver=cp.CLARABEL)
        answers.append((prob.status, prob.value, x.value, row.dual_value))
    (status, value, x, dual), (ref_status, ref_value, ref_x, ref_dual) = answers
    assert status == ref_status == "optimal"
    assert abs(value - ref_value) <= 1e-5 * max(1.0, ref_value)
    np.testing.assert_allclose(x, ref_x, atol=1e-4)
    np.testing.assert_allclose(dual, ref_dual, atol=1e-3)


def test_a_parameter_that_zeroes_a_bounds_coefficient_leaves_a_row_without_variables():
    # P * x[0] <= -0.3 is a bound on x[0]; P = 0 leaves the row 0 <= -0.3, false: "infeasible" naming the
    # constraint, as CVXPY (was a ModelError; before that, "a Parameter changed the sign of a coefficient")
    x = fm.Variable(3, name="x")
    P = fm.Parameter(name="P", value=1.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x, -1, 1), P * x[0] <= -0.3])
    prob.solve()
    np.testing.assert_allclose(x.value, [-0.3, 0.0, 0.0], atol=1e-3)  # closed form: the bound's point
    P.value = 0.0
    prob.solve()
    assert prob.status == fm.INFEASIBLE
    assert "P * x[0] <= -0.3" in prob.stats.message and "coefficient 0" in prob.stats.message
    P.value = 2.0  # nonzero again: the bound x[0] <= -0.15 is back
    prob.solve()
    assert prob.status == fm.OPTIMAL
    np.testing.assert_allclose(x.value, [-0.15, 0.0, 0.0], atol=1e-3)


def test_parameter_dependent_data_constraint_is_re_evaluated_at_each_solve():
    c = np.array([0.5, 2.0, -3.0])
    x = fm.Variable(3, name="x")
    P = fm.Parameter(name="P", value=0.5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -1, 1), fm.Box(P, 0, 1), P * 2 == 1])
    prob.solve()
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, np.clip(c, -1, 1), atol=1e-6)
    P.value = 5.0  # both constraints on P are now false: both named
    prob.solve()
    assert prob.status == "infeasible" and prob.value == np.inf
    assert "Box(P" in prob.stats.message and "P * 2 == 1" in prob.stats.message
    P.value = 0.5  # and true again
    prob.solve()
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, np.clip(c, -1, 1), atol=1e-6)


def test_data_constraint_with_a_parameter_without_value_is_named():
    x = fm.Variable(3, name="x")
    P = fm.Parameter(name="P")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x, -1, 1), fm.Box(P, 0, 1)])
    with pytest.raises(fm.ModelError, match="parameter P has no value"):
        prob.solve()


SETS_WITH_PARAMETER_DATA = [
    (lambda x, q: fm.L1Ball(x, q), "L1Ball.radius"),
    (lambda x, q: fm.L2Ball(x, q), "L2Ball.radius"),
    (lambda x, q: fm.LinfBall(x, q), "LinfBall.radius"),
    (lambda x, q: fm.KSparsePolytope(x, 2, q), "KSparsePolytope.radius"),
    (lambda x, q: fm.Simplex(x, 2 * q), "Simplex.total"),
    (lambda x, q: fm.TraceNormBall(fm.reshape(x, (2, 2), order="C"), q), "TraceNormBall.radius"),
    (lambda x, q: fm.Box(x, -q, q), "Box.lower"),
]


@pytest.mark.parametrize("build, field", SETS_WITH_PARAMETER_DATA)
def test_set_whose_parameter_has_no_value_yet_prints_and_is_named_at_solve(build, field):
    # printing the set (as compiling does) used to format None with :g and raise a TypeError
    x, q = fm.Variable(4, name="x"), fm.Parameter(nonneg=True, name="q")
    ball = build(x, q)
    assert "q" in repr(ball)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [ball])
    with pytest.raises(fm.ModelError, match=f"parameter q has no value.*{field}"):
        prob.solve()
    q.value = 0.25  # then the same problem solves: x = 1 clipped to the set
    prob.solve()
    assert prob.status == "optimal"
    assert np.all(x.value <= 1.0 + 1e-6)


def test_user_set_on_data_whose_membership_test_cannot_tell_is_refused():
    class Undecided(fm.ConvexSet):
        def lmo(self, direction):
            return np.zeros(self.shape)

        def contains(self, point, tol=1e-9):
            return None

    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x, -1, 1), Undecided(np.ones(2))])
    with pytest.raises(fm.ModelError, match=r"Undecided.contains returned None"):
        prob.solve()


def test_user_set_on_data_without_membership_test_is_refused():
    class Opaque(fm.ConvexSet):
        def lmo(self, direction):
            return np.zeros(self.shape)

    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x, -1, 1), Opaque(np.ones(2))])
    with pytest.raises(fm.ModelError, match=r"Opaque.*no variables.*contains"):
        prob.solve()


# ------------------------------------------------------------ pickling
def _cosh_model():
    """min sum cosh(A x - y) over a box that cuts off the unconstrained minimizer (a SymPy atom)."""
    import sympy as sp

    z = sp.Symbol("z")
    A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0], [1.0, 0.0, 1.0], [2.0, 1.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0, 2.0])
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum(fm.smooth(sp.cosh(z), {z: A @ x - y}))), [fm.Box(x, -0.3, 0.3)])
    return prob, x, (A, y)


def test_problem_with_a_sympy_atom_pickles_and_the_copy_solves_alike():
    import pickle

    from scipy.optimize import minimize

    prob, x, (A, y) = _cosh_model()
    blob_before = pickle.dumps(prob)  # before a solve, too
    value = prob.solve(tol=1e-8)
    loaded = pickle.loads(pickle.dumps(prob))
    (x_loaded,) = loaded.variables()
    assert x_loaded is not x and x_loaded.name == "x"
    np.testing.assert_array_equal(x_loaded.value, x.value)  # the results travel with it
    assert loaded.value == value and loaded.status == prob.status
    assert loaded.solve(tol=1e-8) == pytest.approx(value, rel=1e-9)
    np.testing.assert_allclose(x_loaded.value, x.value, atol=1e-9)
    fresh = pickle.loads(blob_before)
    assert fresh.solve(tol=1e-8) == pytest.approx(value, rel=1e-9)
    # the answer itself, independently: L-BFGS-B on the same function and box
    ref = minimize(lambda v: np.sum(np.cosh(A @ v - y)), np.zeros(3), jac=lambda v: A.T @ np.sinh(A @ v - y),
                   bounds=[(-0.3, 0.3)] * 3, method="L-BFGS-B", options=dict(ftol=1e-14, gtol=1e-12))
    assert value == pytest.approx(ref.fun, rel=1e-6)
    np.testing.assert_allclose(x.value, ref.x, atol=1e-3)


def test_sympy_atom_round_trip_keeps_value_and_gradient():
    import pickle

    import sympy as sp

    z = sp.Symbol("z")
    x = fm.Variable(4, name="x")
    atom = fm.sum(fm.smooth(sp.sqrt(1 + z**2) - 1, {z: 2 * x - 1}))
    copy = pickle.loads(pickle.dumps(atom))
    point = np.array([-1.0, 0.0, 0.5, 2.0])
    x.value = point
    (x_copy,) = copy.variables()
    x_copy.value = point
    expected = np.sum(np.sqrt(1 + (2 * point - 1) ** 2) - 1)
    assert copy.value == pytest.approx(expected, rel=1e-12) and atom.value == pytest.approx(expected, rel=1e-12)
    from fwmodel.expressions import SmoothFunction

    layout = {x_copy.id: (0, x_copy.shape)}
    _, grad = SmoothFunction(copy, layout).value_and_grad(point)
    u = 2 * point - 1
    np.testing.assert_allclose(grad, 2 * u / np.sqrt(1 + u**2), rtol=1e-12)  # chain rule by hand
    assert copy.args[0].convexity == "convex"


def test_whole_problem_with_sets_and_parameters_pickles_after_a_solve():
    import pickle

    x = fm.Variable(4, name="x")
    X = fm.Variable((3, 3), name="X")
    b = fm.Parameter(name="b", value=0.5)
    w = fm.Parameter(4, name="w", nonneg=True, value=np.ones(4))
    D = np.diff(np.eye(4), axis=0)
    prob = fm.Problem(fm.Minimize(w @ fm.square(x - 1) + fm.sum_squares(X - np.eye(3))),
                      [fm.Box(x, -1, 1), fm.L1Ball(D @ x, 1.0), fm.sum(x) == b, fm.TraceNormBall(X, 1.0),
                       fm.L1Ball(b * x, 3.0), fm.Box(b, 0, 1)])
    value = prob.solve()
    loaded = pickle.loads(pickle.dumps(prob))
    assert loaded.value == value and loaded.history["objective"][-1] == prob.history["objective"][-1]
    assert loaded.solve() == pytest.approx(value, rel=1e-12)
    # the copy has its own Parameters: changing one changes only the copy
    w_loaded = next(p for p in loaded._parameters() if p.name == "w")
    with pytest.raises(ValueError, match="read-only"):
        w_loaded.value[0] = -1.0  # still read-only after the round trip
    b_loaded = next(p for p in loaded._parameters() if p.name == "b")
    b_loaded.value = 5.0  # now fm.Box(b, 0, 1) is false in the copy only
    loaded.solve()
    assert loaded.status == "infeasible" and "Box(b" in loaded.stats.message
    prob.solve()
    assert prob.status == "optimal" and prob.value == pytest.approx(value, rel=1e-12)


def test_parameter_sign_rules_are_sound_by_sampling():
    """Whatever sign the rules claim for an expression of Parameters holds for sampled values.

    Random expressions over a nonneg, a nonpos and an unsigned Parameter (and
    constants of both signs); each claimed sign is checked by brute force at
    values that respect the declarations.
    """
    from fwmodel.expressions.core import constant_sign

    rng = np.random.default_rng(0)
    p = fm.Parameter(2, name="p", nonneg=True)
    q = fm.Parameter(2, name="q", nonpos=True)
    r = fm.Parameter(2, name="r")
    leaves = [p, q, r, fm.Constant(np.array([2.0, 3.0])), fm.Constant(np.array([-1.0, -0.5]))]
    unary = [lambda a: -a, lambda a: a[::-1], lambda a: fm.sum(a) * np.ones(2), lambda a: fm.square(a),
             lambda a: fm.exp(a), lambda a: a.T]
    binary = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / (fm.square(b) + 1),
              lambda a, b: fm.vstack([a, b])[0], lambda a, b: np.ones((2, 2)) @ a + b]
    claims = {"nonneg": 0, "nonpos": 0, "unknown": 0}
    for _ in range(150):
        expr = leaves[rng.integers(len(leaves))]
        for _ in range(rng.integers(1, 4)):
            if rng.random() < 0.4:
                expr = unary[rng.integers(len(unary))](expr)
            else:
                other = leaves[rng.integers(len(leaves))]
                expr = binary[rng.integers(len(binary))](expr, other) if rng.random() < 0.5 else \
                    binary[rng.integers(len(binary))](other, expr)
        claim = constant_sign(expr)
        claims[claim if claim in claims else "unknown"] += 1
        for _ in range(20):
            p.value = rng.exponential(size=2)
            q.value = -rng.exponential(size=2)
            r.value = rng.standard_normal(2)
            value = np.asarray(expr.value)
            if claim == "nonneg":
                assert np.all(value >= 0), expr
            elif claim == "nonpos":
                assert np.all(value <= 0), expr
            elif claim == "zero":
                assert np.all(value == 0), expr
    assert claims["nonneg"] > 10 and claims["nonpos"] > 10 and claims["unknown"] > 10  # all rules exercised


def test_parameter_signature_follows_the_public_contract():
    # fm.Parameter(shape=(), name=None, value=None, nonneg=False, nonpos=False): positional as documented
    p = fm.Parameter((), "p", 2.0, True)
    assert p.name == "p"
    with pytest.raises(ValueError, match="'p'.*nonneg"):
        p.value = -1.0
    q = fm.Parameter(2, "q", [-1.0, -2.0], False, True)
    assert np.array_equal(q.value, [-1.0, -2.0])
    with pytest.raises(ValueError, match="'q'.*nonpos"):
        q.value = [1.0, 0.0]
