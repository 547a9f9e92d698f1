"""Parameter values outside an atom's domain: a clear ModelError when the solve starts.

``quad_over_lin(x, y)`` needs y > 0 (CVXPY's domain) and ``x / q`` needs
q != 0; with y or q an fm.Parameter the model is valid, so the check runs at
each solve (also a warm start), naming the atom and the parameter, instead of
handing NaN or infinite data to the engine (which ended "diverged", or
"optimal" with a constraint whose coefficients were infinite). Where the value
is valid again, the solve matches CVXPY + Clarabel.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-7, feas_tol=1e-7, max_iter=50000)
C = np.array([1.0, 2.0, 3.0])


def clarabel_value(objective, constraints):
    prob = cp.Problem(objective, constraints)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


def test_quad_over_lin_parameter_zero_is_a_clear_error_at_solve_time():
    x = fm.Variable(3, name="x")
    y = fm.Parameter(name="y", value=0.0, nonneg=True)  # a valid model: y changes before the solve
    prob = fm.Problem(fm.Minimize(fm.quad_over_lin(x - C, y)), [fm.norm1(x) <= 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division-by-zero warning from the data either
        with pytest.raises(fm.ModelError, match=r"quad_over_lin\(x - .*, y\).*positive denominator.*y > 0.*"
                                                r"parameter y = 0"):
            prob.solve()
    y.value = 2.0
    value = prob.solve(**TIGHT)
    xc = cp.Variable(3)
    ref = clarabel_value(cp.Minimize(cp.quad_over_lin(xc - C, 2.0)), [cp.norm1(xc) <= 2])
    assert prob.status == fm.OPTIMAL
    assert abs(value - ref) <= 1e-4 * max(1.0, abs(ref))
    y.value = 0.0  # becomes 0 before a warm start: the same error, the last answer kept
    with pytest.raises(fm.ModelError, match=r"quad_over_lin.*parameter y = 0"):
        prob.solve(warm_start=True)
    assert prob.status == fm.OPTIMAL and abs(prob.value - ref) <= 1e-4 * max(1.0, abs(ref))


def test_quad_over_lin_of_a_parameter_expression_names_its_parameters():
    x = fm.Variable(3, name="x")
    a = fm.Parameter(name="a", value=1.0, nonneg=True)
    b = fm.Parameter(name="b", value=0.0, nonneg=True)
    prob = fm.Problem(fm.Minimize(fm.quad_over_lin(x - C, a * b)), [fm.norm1(x) <= 2])
    with pytest.raises(fm.ModelError, match=r"y = a \* b is 0 .*parameters a = 1, b = 0"):
        prob.solve()
    b.value = 0.5
    value = prob.solve(**TIGHT)
    xc = cp.Variable(3)
    ref = clarabel_value(cp.Minimize(cp.quad_over_lin(xc - C, 0.5)), [cp.norm1(xc) <= 2])
    assert abs(value - ref) <= 1e-4 * max(1.0, abs(ref))


@pytest.mark.parametrize("build", [
    lambda m, x, q: (m.sum_squares(x - C) / q, [m.norm1(x) <= 2]),        # objective
    lambda m, x, q: (m.sum_squares(x - C), [x / q <= 1, m.norm1(x) <= 2]),  # an inequality's rows
    lambda m, x, q: (m.sum_squares(x - C), [m.sum(x) / q == 1, m.norm1(x) <= 2]),  # an equality's rows
    lambda m, x, q: (m.sum_squares(x - 1 / q), [m.norm1(x) <= 2]),          # data inside the objective
])
def test_division_by_a_parameter_that_is_zero_is_a_clear_error(build):
    x = fm.Variable(3, name="x")
    q = fm.Parameter(name="q", value=0.0, nonneg=True)
    objective, constraints = build(fm, x, q)
    prob = fm.Problem(fm.Minimize(objective), constraints)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(fm.ModelError, match=r"division by zero: the divisor q is 0 at this solve "
                                                r"\(parameter q = 0\)"):
            prob.solve()
    q.value = 2.0  # a valid value: the same problem as CVXPY's
    value = prob.solve(**TIGHT)
    xc = cp.Variable(3)
    objective_c, constraints_c = build(cp, xc, 2.0)
    ref = clarabel_value(cp.Minimize(objective_c), constraints_c)
    assert prob.status == fm.OPTIMAL
    assert abs(value - ref) <= 1e-4 * max(1.0, abs(ref)), (value, ref)


def test_division_by_a_parameter_array_counts_the_zero_entries():
    x = fm.Variable(3, name="x")
    q = fm.Parameter(3, name="q", value=np.array([1.0, 0.0, 2.0]))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [x / q <= 1, fm.norm1(x) <= 2])
    with pytest.raises(fm.ModelError, match=r"x / q: division by zero.*is 0 in 1 of its 3 entries.*q \(shape \(3,\)\)"):
        prob.solve()


def test_parameter_exponents_and_norm_orders_are_refused_with_the_reason():
    x = fm.Variable(3, name="x")
    p = fm.Parameter(name="p", value=2.0, nonneg=True)
    with pytest.raises(fm.ModelError, match=r"power\(x, p\): p must be a number.*Parameter"):
        fm.power(x, p)
    for build, call in ((fm.pnorm, "pnorm"), (fm.norm, "norm")):
        with pytest.raises(fm.ModelError, match=rf"{call}\(x, p\): p must be a number.*Parameter"):
            build(x, p)
    with pytest.raises(fm.ModelError, match=r"huber\(x, M=p\): M must be a positive number; a Parameter"):
        fm.huber(x, p)
    for reduce in (fm.sum, fm.log_sum_exp):
        with pytest.raises(fm.ModelError, match="axis must be an int or a tuple of ints"):
            reduce(x, axis=p)


def test_negative_even_powers_are_refused_and_positive_ones_are_power():
    x = fm.Variable(2, name="x")
    for p in (-2, -4):
        with pytest.raises(fm.ModelError, match=rf"p = {p} is not supported"):
            fm.power(x, p)
    with pytest.raises(fm.ModelError, match=r"x \*\* -2: only powers 1 and 2"):
        x ** -2
    x.value = np.array([1.5, -2.0])
    np.testing.assert_allclose((x ** 4).value, x.value ** 4)  # CVXPY's x ** 4 is power(x, 4)
    np.testing.assert_allclose((x ** 0).value, np.ones(2))


def test_a_tiny_parameter_divisor_is_a_clear_error_and_a_valid_value_solves():
    """x / q with q.value = 1e-300: the coefficient 1/q = 1e300 is beyond the data limit (1e100); the solve
    ended "diverged" with NumPy overflow warnings. Now a ModelError naming q, without warnings; the same
    model then solves at CVXPY's value once q is valid."""
    x = fm.Variable(3, name="x")
    q = fm.Parameter(name="q", value=1e-300, nonneg=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x / q - C)), [fm.norm1(x) <= 2])
    for tiny in (1e-300, 1e-150):
        q.value = tiny
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(fm.ModelError, match=rf"x / q: the divisor q is {tiny:g} at this solve \(parameter "
                                                    rf"q = {tiny:g}\).*exceeds 1e100"):
                prob.solve()
    q.value = 0.5
    value = prob.solve(**TIGHT)
    xc = cp.Variable(3)
    ref = clarabel_value(cp.Minimize(cp.sum_squares(xc / 0.5 - C)), [cp.norm1(xc) <= 2])
    assert prob.status == fm.OPTIMAL and abs(value - ref) <= 1e-4 * max(1.0, abs(ref))
    qv = fm.Parameter(3, name="qv", value=np.array([1.0, 1e-300, 2.0]))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [x / qv <= 1, fm.norm1(x) <= 2])
    with pytest.raises(fm.ModelError, match=r"x / qv: the divisor qv is 1e-300 in 1 of its 3 entries \(first at flat "
                                            r"index 1\)"):
        prob.solve()
    with pytest.raises(fm.ModelError, match=r"x / 1e-300: the divisor is 1e-300"):
        x / 1e-300


def test_parameter_data_beyond_the_data_limit_is_a_clear_error():
    x = fm.Variable(3, name="x")
    p = fm.Parameter(name="p", value=1e200)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(p * x - C)), [fm.norm1(x) <= 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(fm.ModelError, match=r"p: its value reaches 1e\+200 in magnitude with parameter p = 1e\+200"):
            prob.solve()
    p.value = 2.0
    prob.solve(**TIGHT)
    xc = cp.Variable(3)
    ref = clarabel_value(cp.Minimize(cp.sum_squares(2.0 * xc - C)), [cp.norm1(xc) <= 2])
    assert prob.status == fm.OPTIMAL and abs(prob.value - ref) <= 1e-4 * max(1.0, abs(ref))
