"""Single-entry equalities (``x[0] == 1``, a scalar ``x == 1``, ``fm.sum(x) == 1`` on a one-entry x) on
entries nothing else bounds on both sides: bounds lo = hi (a box with equal sides), solved as CVXPY +
Clarabel solves them, with the equality's dual value (compiler.lowering._single_entry_equalities)."""
import numpy as np
import pytest

import fwmodel as fm
from _against_clarabel import TIGHT, cp

CASES = {
    "entry of a vector": (3, lambda m, x: [x[0] == 1, x[1] <= 2, x[2] <= 3]),
    "scaled entry": (3, lambda m, x: [2 * x[0] == 1, x[1] <= 2, x[2] <= 3]),
    "negated entry": (3, lambda m, x: [-x[0] == -1, x[1] <= 2, x[2] <= 3]),
    "one-entry simplex": (1, lambda m, x: [m.sum(x) == 1]),
    "scalar": ((), lambda m, x: [x == 1]),
    "scalar below the target": ((), lambda m, x: [x == 0.1]),
    "a slice": (3, lambda m, x: [x[:2] == np.array([1.0, 0.2]), x[2] <= 3]),
}


@pytest.mark.parametrize("sense", ["Minimize", "Maximize"])
@pytest.mark.parametrize("name", list(CASES))
def test_single_entry_equality_against_clarabel(name, sense):
    shape, build = CASES[name]
    answers = []
    for m in (fm, cp):
        x = m.Variable(shape, nonneg=True)
        constraints = build(m, x)
        f = m.sum_squares(x - 0.3)
        prob = m.Problem(m.Minimize(f) if sense == "Minimize" else m.Maximize(-f), constraints)
        prob.solve(**TIGHT) if m is fm else prob.solve(solver=cp.CLARABEL)
        answers.append((prob.status, prob.value, x.value, constraints[0].dual_value))
    (status, value, x, dual), (ref_status, ref_value, ref_x, ref_dual) = answers
    assert status == ref_status == "optimal"
    assert abs(value - ref_value) <= 1e-6 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(x, ref_x, atol=1e-5)
    assert dual is not None and np.shape(dual) == np.shape(ref_dual)
    np.testing.assert_allclose(dual, ref_dual, rtol=1e-4, atol=1e-5)


def test_parameter_value_across_solves():
    models = {}
    for m in (fm, cp):
        x = m.Variable(3, nonneg=True)
        q = m.Parameter(value=1.0)
        constraints = [x[0] == q, x[1] <= 2, x[2] <= 3]
        models[m] = (m.Problem(m.Minimize(m.sum_squares(x - 0.3)), constraints), x, q, constraints[0])
    for value in [1.0, 0.5, -1.0, 0.2]:  # -1 against x >= 0: infeasible
        got = []
        for m, (prob, x, q, eq) in models.items():
            q.value = value
            prob.solve(**TIGHT) if m is fm else prob.solve(solver=cp.CLARABEL)
            got.append((prob.status, prob.value, eq.dual_value))
        (status, v, dual), (ref_status, ref_v, ref_dual) = got
        assert status == ref_status
        if status == "optimal":
            assert abs(v - ref_v) <= 1e-6 * max(1.0, abs(ref_v))
            assert abs(dual - ref_dual) <= 1e-4 * max(1.0, abs(ref_dual))
        else:
            assert status == "infeasible"
