"""Feasible sets that are a single point (no Slater point): a PSD trace bound that the diagonal lower
bounds fill (presolve._zero_diagonal), and an L2 ball that equalities on single entries leave without room
(lowering._points_of_tangent_balls). Against CVXPY + Clarabel and the point itself (closed form)."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

S = (lambda a: a + a.T)(np.random.default_rng(19).standard_normal((5, 5)))

PSD_CASES = {
    # trace(X) <= 0.2 and X[0, 0] == 0.2: X = 0.2 e0 e0' (10,000 iterations and "max_iter" before)
    "equality": lambda m, X: [m.trace(X) <= 0.2, X[0, 0] == 0.2],
    "trace equality": lambda m, X: [m.trace(X) == 0.2, X[0, 0] == 0.2],
    "lower bound": lambda m, X: [m.trace(X) <= 0.2, X[0, 0] >= 0.2],
    "two entries": lambda m, X: [m.trace(X) <= 0.5, X[0, 0] >= 0.2, X[2, 2] == 0.3],
    "scaled trace": lambda m, X: [2 * m.trace(X) <= 0.4, X[1, 1] >= 0.2],
}


@pytest.mark.parametrize("case", sorted(PSD_CASES))
def test_psd_trace_filled_by_diagonal_bounds(case):
    answers = []
    for m in (fm, cp):
        X = m.Variable((5, 5), PSD=True)
        prob = m.Problem(m.Minimize(m.sum_squares(X - S)), PSD_CASES[case](m, X))
        if m is fm:
            prob.solve()
            assert prob.status == fm.OPTIMAL, prob.stats.message
            assert prob.stats.iterations <= 200
        else:
            prob.solve(solver=cp.CLARABEL)
        answers.append((prob.value, X.value))
    (value, X), (ref, ref_X) = answers
    assert abs(value - ref) <= 1e-4 * abs(ref)
    np.testing.assert_allclose(X, ref_X, atol=1e-4)
    # the only feasible diagonal: the bounds' values, 0 elsewhere (so X is 0 off those rows and columns)
    diagonal = np.diag(ref_X)
    assert np.all(np.abs(X[np.ix_(diagonal < 1e-6, diagonal < 1e-6)]) <= 1e-6)


def test_psd_trace_below_the_bounds_is_infeasible():
    X = fm.Variable((5, 5), PSD=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - S)), [fm.trace(X) <= 0.2, X[0, 0] == 0.3])
    prob.solve()
    Xr = cp.Variable((5, 5), PSD=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xr - S)), [cp.trace(Xr) <= 0.2, Xr[0, 0] == 0.3])
    ref.solve(solver=cp.CLARABEL)
    assert ref.status == cp.INFEASIBLE and prob.status == fm.INFEASIBLE


def test_psd_trace_with_room_left_is_unchanged():
    # the bounds sum below the trace bound: an interior, nothing fixed; Clarabel's answer
    answers = []
    for m in (fm, cp):
        X = m.Variable((5, 5), PSD=True)
        prob = m.Problem(m.Minimize(m.sum_squares(X - S)), [m.trace(X) <= 0.2, X[0, 0] >= 0.1])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        answers.append((prob.value, X.value))
    assert abs(answers[0][0] - answers[1][0]) <= 1e-4 * abs(answers[1][0])
    assert np.abs(np.diag(answers[1][1])[1:]).max() > 1e-3  # (the other entries are free and used)


C = np.random.default_rng(3).standard_normal(5)


def _tangent(m, x, level, entry):
    return [m.sum_squares(x - 1) <= level, x[0] == entry]


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e3])
def test_ball_tangent_to_a_hyperplane_is_its_point(scale):
    # ||x - 1||^2 <= (0.2 s)^2 with x[0] == 1 + 0.2 s: the single point (1 + 0.2 s, 1, ..., 1) (before:
    # 10,000 iterations and "max_iter"; Clarabel: "optimal_inaccurate")
    x = fm.Variable(5)
    prob = fm.Problem(fm.Minimize(C @ x + fm.sum_squares(x)), _tangent(fm, x, (0.2 * scale) ** 2, 1 + 0.2 * scale))
    prob.solve()
    point = np.ones(5)
    point[0] = 1 + 0.2 * scale
    assert prob.status == fm.OPTIMAL and prob.stats.iterations <= 50
    np.testing.assert_allclose(x.value, point, atol=1e-9 * max(1.0, scale))
    assert abs(prob.value - (C @ point + point @ point)) <= 1e-9 * abs(prob.value)
    if scale > 1.0:
        return  # (Clarabel fails there: "Solver 'CLARABEL' failed"; the point above is the answer)
    xr = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(C @ xr + cp.sum_squares(xr)), _tangent(cp, xr, (0.2 * scale) ** 2, 1 + 0.2 * scale))
    ref.solve(solver=cp.CLARABEL)
    assert ref.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    assert abs(prob.value - ref.value) <= 1e-3 * max(1.0, abs(ref.value))


@pytest.mark.parametrize("entry,status", [(1.1, "optimal"), (1.3, "infeasible")])
def test_ball_crossing_or_missing_the_hyperplane(entry, status):
    # room left (an interior: Clarabel's answer) or none (infeasible, as Clarabel says)
    x = fm.Variable(5)
    prob = fm.Problem(fm.Minimize(C @ x + fm.sum_squares(x)), _tangent(fm, x, 0.04, entry))
    prob.solve()
    xr = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(C @ xr + cp.sum_squares(xr)), _tangent(cp, xr, 0.04, entry))
    ref.solve(solver=cp.CLARABEL)
    assert ref.status == status and prob.status == status
    if status == "optimal":
        assert abs(prob.value - ref.value) <= 1e-3 * max(1.0, abs(ref.value))
