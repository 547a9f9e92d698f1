"""Bound rows ``multiply(s, x) <= h`` / ``p * x <= h`` whose Parameter makes a coefficient 0 at a solve.

A zero coefficient makes that entry's row ``0 <= h``: vacuous when it holds, "infeasible" naming the
constraint when it does not (CVXPY's answers). The row keeps its entry and side for the next solve, when
the Parameter may be nonzero again (compiler.lowering.EntryBounds). Compared with CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from _against_clarabel import TIGHT, cp, resolve_both

A = np.array([1.0, -2.0, 0.5])


def _models(rhs, scalar=False):
    models = {}
    for m in (fm, cp):
        x = m.Variable(3)
        s = m.Parameter(nonneg=True) if scalar else m.Parameter(3, nonneg=True)
        bound = (s * x <= rhs) if scalar else (m.multiply(s, x) <= rhs)
        prob = m.Problem(m.Minimize(m.sum_squares(x - A)), [m.norm_inf(x) <= 1, bound])
        models[m] = (prob, x, s, bound)
    return models


def _same(ours, ref):
    status, value, x, dual = ours
    ref_status, ref_value, ref_x, ref_dual = ref
    assert status == ref_status == "optimal"
    assert abs(value - ref_value) <= 2e-4 * max(1.0, abs(ref_value))
    np.testing.assert_allclose(x, ref_x, atol=2e-4)
    np.testing.assert_allclose(dual, ref_dual, atol=2e-3)


@pytest.mark.parametrize("values", [
    [np.ones(3), np.array([1.0, 0.0, 1.0]), np.zeros(3), np.array([2.0, 2.0, 2.0])],  # zero at a re-solve
    [np.array([1.0, 0.0, 1.0]), np.array([1.0, 2.0, 1.0]), np.zeros(3)],  # zero at the first solve
])
def test_entry_of_a_vector_parameter_at_zero(values):
    models = _models(0.5)
    for value in values:
        _same(*resolve_both(models, value))


def test_scalar_parameter_at_zero():
    models = _models(0.5, scalar=True)
    for value in [1.0, 0.0, 2.0]:
        _same(*resolve_both(models, value))


def test_false_row_at_zero_is_infeasible_naming_the_constraint():
    models = _models(-0.5)
    (status, _, _, _), (ref_status, _, _, _) = resolve_both(models, np.array([1.0, 0.0, 1.0]))
    assert status == ref_status == "infeasible"
    prob = models[fm][0]
    assert "does not hold at entry 1" in prob.stats.message and "<= -0.5" in prob.stats.message
    _same(*resolve_both(models, np.array([1.0, 2.0, 1.0])))  # nonzero again: the bound is back


def test_entry_left_unbounded_by_a_zero_coefficient_is_a_clear_error():
    # x >= 0 and s * x <= 1 bound x only while s > 0 (CVXPY: "unbounded" at s[1] = 0; FW-AL needs a bounded set)
    x = fm.Variable(3)
    s = fm.Parameter(3, nonneg=True, value=np.ones(3))
    prob = fm.Problem(fm.Minimize(-fm.sum(x)), [x >= 0, fm.multiply(s, x) <= 1])
    prob.solve(**TIGHT)
    assert prob.status == fm.OPTIMAL and abs(prob.value + 3.0) < 1e-6  # closed form: x = 1 / s
    s.value = np.array([1.0, 0.0, 1.0])
    with pytest.raises(fm.ModelError, match=r"flat entry 1\) is unbounded above: the constraint .* <= 1"):
        prob.solve()
