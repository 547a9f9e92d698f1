"""A model without variables (a constant objective, constraints on data alone): CVXPY's answers, no iteration."""
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


@pytest.mark.parametrize("sense", ["Minimize", "Maximize"])
@pytest.mark.parametrize("value, holds", [(1.0, True), (2.0, False)])
def test_constant_model_against_cvxpy(sense, value, holds):
    answers = []
    for m in (fm, cp):
        q = m.Parameter(value=value)
        prob = m.Problem(getattr(m, sense)(5.0 * q + 1.0), [q == 1])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        answers.append((prob.status, prob.value))
    (status, got), (ref_status, ref) = answers
    assert status == ref_status == ("optimal" if holds else "infeasible")
    if holds:
        assert got == ref
    else:  # (CVXPY's value is None here; fwmodel's infeasible value is +inf for Minimize, -inf for Maximize)
        assert got == (float("inf") if sense == "Minimize" else float("-inf"))


def test_constant_objective_alone():
    prob = fm.Problem(fm.Minimize(5.0))
    ref = cp.Problem(cp.Minimize(5.0))
    assert prob.solve() == ref.solve() == 5.0
    assert prob.status == ref.status == "optimal"
    assert prob.stats.iterations == 0 and "no variables" in prob.stats.message
