"""Valid models that were refused: a Parameter coefficient of a bound that changes sign, a ball on
``p * (x - q)`` with both Parameters next to a budget, and simplices on an affine image ``s * (x - B) >= 0``.

``p * x <= h`` with an unsigned p bounds x above for p > 0 and below for p < 0: affine for either sign, as
CVXPY takes it; the bound is read on its side at each solve (was a ModelError at the first sign change).
``x <= 0, fm.sum(x) == -1``, ``-x >= 0, -fm.sum(x) <= 1`` and ``2 * x + 1 >= 0, fm.sum(2 * x + 1) == 3`` are
simplices on ``-x`` and ``x + 0.5`` (was "a bound on one side only"). Values, points and every constraint's
dual value are checked against CVXPY + Clarabel, across warm re-solves of one Problem after the Parameters
move.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.errors import ModelError

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-9, feas_tol=1e-9, max_iter=50000, warm_start=True)


def _data(seed, n=8, m=10):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, n)), rng.standard_normal(m)


def _compare(build, values, seed, dual_atol=2e-4):
    """``build(m, x, param)`` -> constraints, for m in (fm, cp); the Parameter set to each of ``values`` in
    turn (one fwmodel Problem, warm re-solves), each answer against Clarabel's."""
    A, b = _data(seed)
    n = A.shape[1]
    problems = {}
    for m in (fm, cp):
        x, param = m.Variable(n), m.Parameter(np.shape(values[0]))
        constraints = build(m, x, param)
        problems[m] = (m.Problem(m.Minimize(m.sum_squares(A @ x - b)), constraints), x, param, constraints)
    for value in values:
        answers = []
        for m, (prob, x, param, constraints) in problems.items():
            param.value = value
            prob.solve(**TIGHT) if m is fm else prob.solve(solver="CLARABEL")
            answers.append((prob.status, prob.value, x.value, [c.dual_value for c in constraints]))
        (status, got, x, duals), (ref_status, ref, ref_x, ref_duals) = answers
        assert ref_status == "optimal" and status == "optimal", (value, status)
        assert got == pytest.approx(ref, rel=1e-6, abs=1e-7), value
        np.testing.assert_allclose(x, ref_x, atol=1e-4)
        for dual, ref_dual in zip(duals, ref_duals):
            assert dual is not None
            np.testing.assert_allclose(dual, ref_dual, rtol=2e-3, atol=dual_atol)


def test_scalar_parameter_coefficient_changes_sign():
    # p * x <= 0.3 inside the box |x| <= 1: x <= 0.3 / p for p > 0, x >= 0.3 / p for p < 0
    _compare(lambda m, x, p: [p * x <= 0.3, m.norm_inf(x) <= 1], [1.0, -1.0, 0.5, -2.0, 1.0], seed=2)


def test_scalar_parameter_sign_change_with_one_sided_bounds():
    # x >= -1 and x <= 1 as rows: the flipped bound tightens the lower side
    _compare(lambda m, x, p: [p * x <= 0.3, x >= -1, x <= 1], [1.0, -1.0, 2.0, -0.5], seed=2)


def test_vector_parameter_coefficients_of_mixed_sign():
    rng = np.random.default_rng(5)
    n = 8
    values = [np.abs(rng.standard_normal(n)), rng.standard_normal(n),
              np.where(np.arange(n) % 3 == 0, 0.0, rng.standard_normal(n)), -np.abs(rng.standard_normal(n))]
    _compare(lambda m, x, s: [m.multiply(s, x) <= 0.2, m.norm_inf(x) <= 1], values, seed=2)


def test_sign_change_that_opens_a_side_names_the_constraint():
    x, p = fm.Variable(3), fm.Parameter(value=1.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 2)), [p * x <= 0.3, x >= -1])
    prob.solve()
    assert prob.status == "optimal"
    np.testing.assert_allclose(x.value, 0.3, atol=1e-6)  # (closed form: the projection of 2 on [-1, 0.3])
    p.value = -1.0
    with pytest.raises(ModelError, match=r"other sign makes the constraint .* <= 0\.3 bound it below.*unbounded|"
                                         r"unbounded above: a Parameter value of the other sign"):
        prob.solve(warm_start=True)
    p.value = 2.0  # the same Problem solves again once the sign is back
    prob.solve(warm_start=True)
    np.testing.assert_allclose(x.value, 0.15, atol=1e-6)


def test_scaled_ball_around_a_parameter_center_with_a_budget():
    rng = np.random.default_rng(24)
    A, b = rng.standard_normal((10, 8)), rng.standard_normal(10)
    n = 8
    problems = {}
    for m in (fm, cp):
        x, p, q = m.Variable(n), m.Parameter(nonneg=True), m.Parameter(n)
        constraints = [m.norm_inf(p * (x - q)) <= 1, m.sum(x) == 1]
        problems[m] = (m.Problem(m.Minimize(m.sum_squares(A @ x - b)), constraints), x, p, q, constraints)
    r = np.random.default_rng(3)
    for p_value, q_value in [(2.0, np.zeros(n)), (1.0, 0.1 * r.standard_normal(n)), (4.0, 0.2 * r.standard_normal(n)),
                             (0.5, np.full(n, 0.125)), (2.0, np.zeros(n))]:
        answers = []
        for m, (prob, x, p, q, constraints) in problems.items():
            p.value, q.value = p_value, q_value
            prob.solve(**TIGHT) if m is fm else prob.solve(solver="CLARABEL")
            answers.append((prob.status, prob.value, x.value, [c.dual_value for c in constraints]))
        (status, got, x, duals), (ref_status, ref, ref_x, ref_duals) = answers
        assert status == ref_status == "optimal"
        assert got == pytest.approx(ref, rel=1e-6, abs=1e-7)
        np.testing.assert_allclose(x, ref_x, atol=1e-4)
        for dual, ref_dual in zip(duals, ref_duals):
            np.testing.assert_allclose(dual, ref_dual, rtol=2e-3, atol=2e-4)


MIRRORED = {
    "nonpos variable, sum == -t": lambda m, x, t: [x <= 0, m.sum(x) == -t],
    "-x >= 0, -sum(x) <= t": lambda m, x, t: [-x >= 0, -m.sum(x) <= t],
    "2x + 1 >= 0, sum(2x + 1) == 3t": lambda m, x, t: [2 * x + 1 >= 0, m.sum(2 * x + 1) == 3 * t],
    "x <= 2, 3 sum(x) >= t": lambda m, x, t: [x <= 2, 3 * m.sum(x) >= t],
    "x <= caps, sum(x) == 2t": lambda m, x, t: [x <= np.linspace(0, 1, 8), m.sum(x) == 2 * t],
}


@pytest.mark.parametrize("name", sorted(MIRRORED))
def test_simplex_on_an_affine_image(name):
    _compare(MIRRORED[name], [1.0, 0.3, 1.7], seed=16)


def test_nonpos_variable_attribute_with_a_budget():
    A, b = _data(16)
    x = fm.Variable(8, nonpos=True)
    budget = fm.sum(x) == -1
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [budget])
    prob.solve(tol=1e-9, feas_tol=1e-9)
    xc = cp.Variable(8, nonpos=True)
    ref_budget = cp.sum(xc) == -1
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [ref_budget])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(x.value, xc.value, atol=1e-4)
    assert budget.dual_value == pytest.approx(ref_budget.dual_value, rel=2e-3, abs=2e-4)


def test_mirrored_simplex_with_a_total_of_the_wrong_sign_is_infeasible():
    # x <= 0 with sum(x) == t > 0 holds for no x (CVXPY: infeasible); t < 0 again solves
    A, b = _data(16)
    x, t = fm.Variable(8), fm.Parameter(value=1.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [x <= 0, fm.sum(x) == t])
    prob.solve()
    xc = cp.Variable(8)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [xc <= 0, cp.sum(xc) == 1.0])
    ref.solve(solver="CLARABEL")
    assert ref.status == "infeasible"
    assert prob.status == "infeasible"
    t.value = -1.0
    prob.solve(tol=1e-9, feas_tol=1e-9, warm_start=True)
    assert prob.status == "optimal"
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [xc <= 0, cp.sum(xc) == -1.0])
    ref.solve(solver="CLARABEL")
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
