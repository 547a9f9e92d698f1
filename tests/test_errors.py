"""Every malformed model or option raises the documented error with a message
that names the offending variable, parameter, set, shape or option."""
import numpy as np
import pytest

import fwmodel as fm


@pytest.fixture
def x():
    return fm.Variable(3, name="x")


@pytest.fixture
def prob(x):
    """A tiny well-posed problem, for option checks."""
    return fm.Problem(fm.Minimize(fm.sum_squares(x - np.array([1.0, 0.0, 0.0]))), [fm.L1Ball(x)])


# ------------------------------------------------------------------ variables
def test_variable_in_no_set_is_named(x):
    y = fm.Variable(2, name="lonely")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x) + fm.sum_squares(y)), [fm.L1Ball(x)])
    with pytest.raises(fm.ModelError, match=r"variable lonely .*not in any bounded set"):
        prob.solve()


def test_variable_only_in_equality_is_named(x):
    """An equality does not bound a variable: it still needs a set."""
    z = fm.Variable(3, name="z")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(z)), [fm.L1Ball(x), z == x])
    with pytest.raises(fm.ModelError, match=r"variable z"):
        prob.solve()


def test_partially_covered_variable_is_named(x):
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x[:2])])
    with pytest.raises(fm.ModelError, match=r"entries of variable x .*first flat index 2"):
        prob.solve()


def test_error_is_a_value_error():
    assert issubclass(fm.ModelError, ValueError)


# ----------------------------------------------------------- non-finite data
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_constant_data(x, bad):
    c = np.array([1.0, bad, 0.0])
    with pytest.raises(ValueError, match="NaN or infinite"):
        fm.sum_squares(x - c)
    with pytest.raises(ValueError, match="NaN or infinite"):
        np.ones((2, 3)) * np.array([[1.0], [bad]]) @ x


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_parameter_value(bad):
    with pytest.raises(ValueError, match=r"Parameter 'p'.*NaN or infinite"):
        fm.Parameter(3, name="p", value=[1.0, bad, 2.0])
    p = fm.Parameter(3, name="p", value=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Parameter 'p'.*NaN or infinite"):
        p.value = [bad, 0.0, 0.0]
    np.testing.assert_array_equal(p.value, [1.0, 2.0, 3.0])  # the old value is kept


def test_parameter_value_of_wrong_shape():
    p = fm.Parameter((2, 2), name="P")
    with pytest.raises(ValueError, match=r"Parameter 'P'.*shape \(3,\), expected \(2, 2\)"):
        p.value = np.ones(3)


def test_parameter_without_value_is_named(x):
    p = fm.Parameter(3, name="target")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - p)), [fm.L1Ball(x)])
    with pytest.raises(fm.ModelError, match="target"):
        prob.solve()


# --------------------------------------------------------- set parameters
@pytest.mark.parametrize("make, name", [
    (lambda e: fm.L1Ball(e, radius=-1.0), "radius"),
    (lambda e: fm.L2Ball(e, radius=-0.5), "radius"),
    (lambda e: fm.LinfBall(e, radius=-2.0), "radius"),
    (lambda e: fm.L1Ball(e, radius=np.nan), "radius"),
    (lambda e: fm.Simplex(e, total=-1.0), "total"),
    (lambda e: fm.KSparsePolytope(e, k=0, radius=1.0), "k"),
    (lambda e: fm.KSparsePolytope(e, k=-3, radius=1.0), "k"),
    (lambda e: fm.KSparsePolytope(e, k=1, radius=-1.0), "radius"),
    (lambda e: fm.Box(e, 1.0, 0.0), "lower"),
    (lambda e: fm.Box(e, [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]), "lower"),
    (lambda e: fm.Box(e, -np.inf, 1.0), "lower"),
    (lambda e: fm.Box(e, 0.0, np.inf), "upper"),
    (lambda e: fm.L1Ball(e, radius="1"), "radius"),
    (lambda e: fm.L2Ball(e, radius=True), "radius"),
    (lambda e: fm.L1Ball(e, radius=1e300), "radius"),
    (lambda e: fm.Simplex(e, total="a"), "total"),
    (lambda e: fm.Simplex(e, equality=None), "equality"),
    (lambda e: fm.KSparsePolytope(e, k=2.5), "k"),
    (lambda e: fm.Box(e, -1e300, 1e300), "lower"),
    (lambda e: fm.Box(e, 0.0, [1.0, 1.0]), "upper"),
])
def test_invalid_set_parameters_name_the_parameter(x, make, name):
    with pytest.raises(fm.ModelError, match=name):
        make(x)


def test_negative_trace_norm_radius():
    with pytest.raises(ValueError, match=r"TraceNormBall: radius"):
        fm.TraceNormBall(fm.Variable((3, 3)), radius=-1.0)


# ------------------------------------------------------------- objectives
def test_unsigned_parameter_scaling_a_convex_term_names_the_parameter(x):
    lam = fm.Parameter(name="lam", value=1.0)
    with pytest.raises(fm.ModelError, match=r"sign of parameter lam.*nonneg=True"):
        fm.Minimize(lam * fm.sum_squares(x))


def test_empty_variable_is_named():
    with pytest.raises(fm.ModelError, match=r"Variable 'e' of shape \(3, 0\) has no entries"):
        fm.Variable((3, 0), name="e")


def test_nonconvex_minimize(x):
    with pytest.raises(fm.ModelError, match=r"Minimize.*concave.*convex"):
        fm.Minimize(-fm.sum_squares(x))


def test_nonconcave_maximize(x):
    with pytest.raises(fm.ModelError, match=r"Maximize.*convex.*concave"):
        fm.Maximize(fm.sum_squares(x))


@pytest.mark.parametrize("build", [
    lambda a, b: a @ b,
    lambda a, b: a * b,
    lambda a, b: fm.multiply(a, b),
    lambda a, b: fm.inner(a, b),
])
def test_product_of_two_variables(x, build):
    y = fm.Variable(3, name="y")
    with pytest.raises(fm.ModelError, match=r"both sides depend on variables.*quad_form"):
        build(x, y)


def test_non_scalar_objective(x):
    with pytest.raises(fm.ModelError, match=r"scalar.*shape \(3,\)"):
        fm.Minimize(fm.square(x))
    with pytest.raises(fm.ModelError, match=r"scalar"):
        fm.Maximize(-fm.square(x))


def test_objective_must_be_minimize_or_maximize(x):
    with pytest.raises(fm.ModelError, match=r"fm.Minimize\(...\) or fm.Maximize"):
        fm.Problem(fm.sum_squares(x), [fm.L1Ball(x)])


@pytest.mark.parametrize("build, set_name", [
    (lambda e: fm.abs(e), "fm.L1Ball"),
    (lambda e: abs(e), "fm.L1Ball"),
    (lambda e: fm.norm1(e), "fm.L1Ball"),
    (lambda e: fm.norm(e, 1), "fm.L1Ball"),
    (lambda e: fm.norm(e, 2), "fm.L2Ball"),
    (lambda e: fm.norm2(e), "fm.L2Ball"),
    (lambda e: fm.norm_inf(e), "fm.LinfBall"),
    (lambda e: fm.max(e), "fm.Box"),
    (lambda e: fm.min(e), "fm.Box"),
])
def test_non_smooth_functions_name_the_set(x, build, set_name):
    with pytest.raises(fm.ModelError, match=rf"not smooth.*{set_name}"):
        fm.Minimize(fm.sum(build(x)))


def test_nuclear_norm_names_trace_norm_ball():
    with pytest.raises(fm.ModelError, match=r"fm.TraceNormBall"):
        fm.Minimize(fm.norm(fm.Variable((2, 2)), "nuc"))


def test_power_other_than_two(x):
    with pytest.raises(fm.ModelError, match=r"\*\* 3"):
        fm.sum(x ** 3)


# ------------------------------------------------------------ constraints
@pytest.mark.parametrize("build", [
    lambda e: e <= 1,
    lambda e: e >= 0,
    lambda e: 1 >= e,
    lambda e: np.ones(3) <= e,
])
def test_one_sided_bounds_on_unbounded_variables_name_the_sets(x, build):
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [build(x)])
    with pytest.raises(fm.ModelError, match=r"unbounded.*fm\.Box\(x, lo, hi\).*fm\.Simplex\(x\)"):
        prob.solve()


def test_not_equal_is_refused(x):
    with pytest.raises(fm.ModelError, match="not equal"):
        x != np.zeros(3)


@pytest.mark.parametrize("bad", [True, False, np.bool_(True)])
def test_bool_constraint(x, bad):
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), bad])
    with pytest.raises(fm.ModelError, match=r"constraint #1 is the Python bool"):
        prob.solve()


@pytest.mark.parametrize("bad", ["x <= 1", 3.0, None])
def test_constraint_that_is_not_a_set_or_equality(x, bad):
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), bad])
    with pytest.raises(fm.ModelError, match=r"constraint #1 .*neither a set"):
        prob.solve()


def test_equality_truth_value_is_refused(x):
    with pytest.raises(fm.ModelError, match="no truth value"):
        if x == np.zeros(3):
            pass


@pytest.mark.parametrize("lhs_shape, rhs_shape", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3), (2,))])
def test_shape_mismatch_in_equality(lhs_shape, rhs_shape):
    a = fm.Variable(lhs_shape, name="a")
    with pytest.raises(fm.ModelError, match=r"shapes .* do not broadcast"):
        a == fm.Variable(rhs_shape, name="b")
    with pytest.raises(fm.ModelError, match=r"do not broadcast"):
        a == np.zeros(rhs_shape)


def test_equality_with_non_affine_side(x):
    with pytest.raises(fm.ModelError, match=r"must be affine"):
        fm.sum_squares(x) == 1.0


def test_set_on_non_affine_expression(x):
    with pytest.raises(fm.ModelError, match=r"L1Ball.*affine"):
        fm.L1Ball(fm.square(x))


def test_trace_norm_ball_needs_a_matrix(x):
    with pytest.raises(fm.ModelError, match=r"TraceNormBall.*2-D.*\(3,\)"):
        fm.TraceNormBall(x)


def test_matmul_shape_mismatch(x):
    with pytest.raises(fm.ModelError, match=r"shapes \(2, 4\) and \(3,\) are not aligned"):
        np.ones((2, 4)) @ x


# ------------------------------------------------------------- solve options
def test_unknown_option_is_named(prob):
    with pytest.raises(ValueError, match=r"unknown solve option.*'max_iters'; the iteration limit is max_iter"):
        prob.solve(max_iters=10)


def test_cvxpy_solve_options_say_what_to_write_instead(prob):
    with pytest.raises(ValueError, match=r"'eps', 'solver'; the accuracy is tol .*; fwmodel has one method"):
        prob.solve(solver="SCS", eps=1e-6)


def test_engine_refuses_unknown_and_mistyped_options_by_name():
    from fwmodel.engine import Block, minimize_fwal
    from fwmodel.sets.atoms import SparseAtom

    class Objective:
        def value_and_grad(self, z):
            return float(z @ z), 2 * z

        def value(self, z):
            return float(z @ z)

    lmo = lambda g: SparseAtom([int(np.argmin(g))], [1.0], 3)  # noqa: E731 (the simplex in R^3)
    blocks = [Block(0, 3, lmo, lambda: lmo(np.zeros(3)), True)]
    with pytest.raises(ValueError, match="max_iters"):
        minimize_fwal(Objective(), blocks, max_iters=5)
    with pytest.raises(ValueError, match="seed"):
        minimize_fwal(Objective(), blocks, seed="abc")
    with pytest.raises(ValueError, match="infeasibility_check_every"):
        minimize_fwal(Objective(), blocks, infeasibility_check_every=True)
    res = minimize_fwal(Objective(), blocks, seed=np.random.default_rng(0))  # a Generator is a valid seed
    assert res.status == "optimal" and np.allclose(res.x, 1 / 3, atol=1e-2)


@pytest.mark.parametrize("option, value, pattern", [
    ("step", "foo", r"step='foo'"),
    ("line_search", "newton", r"line_search='newton'"),
    ("tol", -1, r"tol must be a positive number"),
    ("tol", 0.0, r"tol"),
    ("tol", np.nan, r"tol"),
    ("tol", "1e-3", r"tol"),
    ("feas_tol", 0, r"feas_tol"),
    ("max_iter", -1, r"max_iter"),
    ("max_iter", 2.5, r"max_iter"),
    ("lam", -1.0, r"lam"),
    ("lam", np.inf, r"lam"),
    ("eta", -1.0, r"eta"),
    ("eta", "bogus", r"eta='bogus'"),
    ("time_limit", -1, r"time_limit"),
    ("time_limit", np.nan, r"time_limit"),
    ("callback", 3, r"callback"),
    ("print_every", 0, r"print_every"),
    # booleans where numbers are expected, strings where booleans are, bad seeds
    ("max_iter", True, r"max_iter"),
    ("tol", True, r"tol"),
    ("lam", True, r"lam"),
    ("eta", False, r"eta"),
    ("time_limit", True, r"time_limit"),
    ("print_every", True, r"print_every"),
    ("verbose", "no", r"verbose"),
    ("verbose", 2, r"verbose"),
    ("warm_start", "yes", r"warm_start"),
    ("inface", 1, r"inface"),
    ("projection", "yes", r"projection"),
    ("seed", "abc", r"seed"),
    ("seed", 1.5, r"seed"),
    ("seed", -1, r"seed"),
])
def test_invalid_option_values(prob, option, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        prob.solve(**{option: value})


def test_contradictory_parameter_signs_and_rectangular_trace_are_refused():
    with pytest.raises(fm.ModelError, match="nonneg=True and nonpos=True"):
        fm.Parameter(3, name="w", nonneg=True, nonpos=True)
    X = fm.Variable((2, 3), name="X")
    with pytest.raises(fm.ModelError, match=r"square matrix, got shape \(2, 3\)"):
        fm.trace(X)
    assert fm.trace(fm.Variable((3, 3))).shape == ()


def test_a_set_on_a_parameter_multiple_names_the_norm_bound():
    """``fm.L1Ball(p * x, 1)`` does not hold x (p may be 0 at a solve); the message says to write the norm bound
    ``fm.norm1(p * x) <= 1``, which the compiler holds as the ball of radius 1 / |p| on x and solves at the
    closed form (the projection onto the L1 ball of radius 1 / p)."""
    p, x = fm.Parameter(nonneg=True, value=2.0), fm.Variable(5, name="x")
    c = np.array([0.5, 0.2, 0.1, -0.3, 0.7])
    with pytest.raises(fm.ModelError, match=r"write it as a norm bound, fm\.norm1\(p \* x\) <= r"):
        fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.L1Ball(p * x, 1.0)]).solve()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.norm1(p * x) <= 1])
    prob.solve(tol=1e-9)
    # the L1 ball of radius 0.5: the level theta with sum(max(|c| - theta, 0)) = 0.5 takes the two largest
    # |c| (0.7, 0.5): theta = (1.2 - 0.5) / 2 = 0.35 (above the third, 0.3): x = (0.15, 0, 0, 0, 0.35)
    np.testing.assert_allclose(x.value, [0.15, 0.0, 0.0, 0.0, 0.35], atol=1e-6)
