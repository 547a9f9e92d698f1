"""A Parameter that makes an explicit set's radius or total negative ends the solve "infeasible".

As for the constraint forms (`fm.norm1(x) <= t`, `x >= 0, fm.sum(x) == t`)
and as in CVXPY: the status names the set and the Parameter; a later valid
value solves again, cold or warm, at CVXPY + Clarabel's optimum. (The sets
raised a ModelError at solve time before.)
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm

C = np.array([0.3, -0.2, 0.5, 0.1])

MODELS = {
    "Simplex": (lambda x, t: [fm.Simplex(x, total=t)], lambda x, t: [x >= 0, cp.sum(x) == t], "Simplex"),
    "Simplex<=": (lambda x, t: [fm.Simplex(x, t, equality=False)], lambda x, t: [x >= 0, cp.sum(x) <= t],
                  "Simplex"),
    "L1Ball": (lambda x, t: [fm.L1Ball(x, t)], lambda x, t: [cp.norm1(x) <= t], "L1Ball"),
    "L2Ball": (lambda x, t: [fm.L2Ball(x, t)], lambda x, t: [cp.norm2(x) <= t], "L2Ball"),
    "capped simplex": (lambda x, t: [fm.Simplex(x, total=t), fm.Box(x, 0, 0.6)],
                       lambda x, t: [x >= 0, x <= 0.6, cp.sum(x) == t], "Simplex"),
    "boxed L1": (lambda x, t: [fm.L1Ball(x, t), fm.Box(x, -0.2, 0.2)],
                 lambda x, t: [cp.norm1(x) <= t, cp.abs(x) <= 0.2], "L1Ball"),
    "TraceNormBall": (lambda x, t: [fm.TraceNormBall(fm.reshape(x, (2, 2), order="C"), t)],
                      lambda x, t: [cp.normNuc(cp.reshape(x, (2, 2), order="C")) <= t], "TraceNormBall"),
}


def _clarabel(build, value):
    x = cp.Variable(4)
    return cp.Problem(cp.Minimize(cp.sum_squares(x - C)), build(x, value)).solve(solver=cp.CLARABEL)


@pytest.mark.parametrize("name", MODELS)
def test_negative_then_valid_values(name):
    build, build_cp, set_name = MODELS[name]
    t = fm.Parameter(value=-1.0, name="t")
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), build(x, t))
    assert prob.solve() == np.inf
    assert prob.status == fm.INFEASIBLE
    assert set_name in prob.stats.message and "t" in prob.stats.message and "-1 < 0" in prob.stats.message
    for value, warm in [(1.0, False), (-2.0, True), (0.5, True)]:
        t.value = value
        result = prob.solve(warm_start=warm, tol=1e-7)
        if value < 0:
            assert prob.status == fm.INFEASIBLE and "-2 < 0" in prob.stats.message
        else:
            assert prob.status == fm.OPTIMAL, prob.stats.message
            assert result == pytest.approx(_clarabel(build_cp, value), rel=1e-4, abs=1e-7)


def test_a_negative_value_that_is_also_too_large_still_raises():
    # only a sign that empties the set is "infeasible"; other bad values stay errors naming them
    t = fm.Parameter(value=1.0, name="t")
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.L1Ball(x, t)])
    prob.solve()
    t.value = -1e300
    with pytest.raises(fm.ModelError, match="magnitude"):
        prob.solve()
