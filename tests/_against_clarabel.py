"""Solve a model written both ways (fwmodel and CVXPY + Clarabel) and compare the answers: value, point,
constraint shapes and dual values (the piecewise and hinge bounds' tests)."""
import numpy as np

import fwmodel as fm

cp = __import__("pytest").importorskip("cvxpy")

TIGHT = dict(tol=1e-8, feas_tol=1e-8, max_iter=50000)
OBJ_RTOL, X_ATOL, DUAL_RTOL, DUAL_ATOL = 2e-4, 2e-4, 2e-3, 2e-4


def solve_on(m, build, shape, *args):
    """``x = m.Variable(shape)`` and ``build(m, x, *args)`` -> (objective, constraints), minimized by fwmodel at
    ``TIGHT`` (asserted "optimal") or by CVXPY + Clarabel (m is cp): ``(problem, x, constraints)``."""
    x = m.Variable(shape)
    objective, constraints = build(m, x, *args)
    prob = m.Problem(m.Minimize(objective), constraints)
    if m is fm:
        prob.solve(**TIGHT)
        assert prob.status == fm.OPTIMAL, prob.stats.message
    else:
        prob.solve(solver=cp.CLARABEL)
    return prob, x, constraints


def solve_both(build):
    """``build(m)`` -> (problem, variables, constraints) for m in (fm, cp): both solved, and their answers."""
    answers = []
    for m in (fm, cp):
        prob, variables, constraints = build(m)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL, prob.stats.message
        else:
            prob.solve(solver=cp.CLARABEL)
            assert prob.status == cp.OPTIMAL
        answers.append((prob.value, [v.value for v in variables], [k.dual_value for k in constraints],
                        [k.shape for k in constraints]))
    return answers


def assert_same_answer(build):
    (value, xs, duals, shapes), (ref, ref_xs, ref_duals, ref_shapes) = solve_both(build)
    assert abs(value - ref) <= OBJ_RTOL * max(1.0, abs(ref)), (value, ref)
    for x, ref_x in zip(xs, ref_xs):
        np.testing.assert_allclose(x, ref_x, atol=X_ATOL)
    assert shapes == ref_shapes
    for dual, ref_dual in zip(duals, ref_duals):
        assert dual is not None
        assert np.shape(dual) == np.shape(ref_dual)
        np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)
    return ref_duals


def resolve_both(models, value):
    """``models``: {fm: (problem, x, parameter, constraint), cp: (...)}. Set the parameter to ``value``, solve
    both, and return each side's ``(status, value, x.value, constraint.dual_value)``, fwmodel's first."""
    answers = []
    for m, (prob, x, parameter, constraint) in models.items():
        parameter.value = value
        prob.solve(**TIGHT) if m is fm else prob.solve(solver=cp.CLARABEL)
        answers.append((prob.status, prob.value, x.value, constraint.dual_value))
    return answers
