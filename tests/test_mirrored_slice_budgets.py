"""Budgets on slices or by axis of a variable bounded on one side by bounds that are not floors >= 0
(``x <= 0`` with ``fm.sum(x[:5]) >= -1``, ``X <= 0`` with ``fm.sum(X, axis=0) >= -1``, ``X >= -1`` with row
budgets), checked against CVXPY + Clarabel.

Such a budget is a simplex on ``z = s (x - B) >= 0`` (s = -1 for caps, +1 for floors B), held on x as its
preimage, as a budget on the whole variable already was (``lowering._mirrored_simplex``). They were refused
("not every entry ... has a fixed floor >= 0"); CVXPY solves them. Values, points and every constraint's
``dual_value`` (the budgets' and the bounds') are Clarabel's.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets import Simplex
from fwmodel.sets.preimage import AffinePreimage

from _against_clarabel import TIGHT, assert_same_answer

cp = pytest.importorskip("cvxpy")

rng = np.random.default_rng(19)
C = 2.0 * rng.standard_normal(8)
M = 2.0 * rng.standard_normal((5, 4))


def model(shape, target, constraints, **attributes):
    def build(m):
        x = m.Variable(shape, **attributes)
        own = constraints(m, x)
        return m.Problem(m.Minimize(m.sum_squares(x - target)), own), [x], own
    return build


MODELS = {
    "x <= 0, slices >= -1": model(8, C, lambda m, x: [x <= 0, m.sum(x[:5]) >= -1, m.sum(x[5:]) >= -1]),
    "x <= 0.5, x[:5] >= -1, x[5:] == -1": model(8, C, lambda m, x: [x <= 0.5, m.sum(x[:5]) >= -1,
                                                                     m.sum(x[5:]) == -1]),
    "2 * sum(x[:3]) >= -1 with x <= 0": model(8, C, lambda m, x: [x <= 0, 2 * m.sum(x[:3]) >= -1,
                                                                   m.sum(x[3:]) >= -1]),
    "nonpos=True, slices == -1, -2": model(8, C, lambda m, x: [m.sum(x[:4]) == -1, m.sum(x[4:]) == -2],
                                          nonpos=True),
    "X <= 0, sum(X, axis=0) >= -1": model((5, 4), M, lambda m, X: [X <= 0, m.sum(X, axis=0) >= -1]),
    "X <= 0, sum(X, axis=1) == -1": model((5, 4), M, lambda m, X: [X <= 0, m.sum(X, axis=1) == -1]),
    "X <= 0, row loop == -1": model((5, 4), M, lambda m, X: [X <= 0] + [m.sum(X[i]) == -1 for i in range(5)]),
    "-X >= 0, -sum(X, axis=1) <= 2": model((5, 4), M, lambda m, X: [-X >= 0, -m.sum(X, axis=1) <= 2]),
    "X >= -1, row loop <= 0.5": model((5, 4), M, lambda m, X: [X >= -1] + [m.sum(X[i]) <= 0.5 for i in range(5)]),
    "X >= -1, sum(X, axis=0) <= 0.5": model((5, 4), M, lambda m, X: [X >= -1, m.sum(X, axis=0) <= 0.5]),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_mirrored_slice_and_axis_budgets_match_cvxpy(name):
    assert_same_answer(MODELS[name])


def test_a_mirrored_axis_budget_is_the_nonnegative_models_simplex_seen_from_x():
    """``X <= 0, fm.sum(X, axis=1) == -1`` is ``Z = -X >= 0, fm.sum(Z, axis=1) == 1``: one block (a simplex on
    -X held on X), no rows, and the nonnegative model's point with the target negated (the preimage takes
    plain active-set steps, not the batched simplex's, so the iteration counts may differ: 5 and 2)."""
    X = fm.Variable((5, 4))
    mirrored = fm.Problem(fm.Minimize(fm.sum_squares(X - M)), [X <= 0, fm.sum(X, axis=1) == -1])
    compiled = mirrored.compile()
    (blk,) = compiled.blocks
    assert compiled.M.shape[0] == 0
    assert isinstance(blk.set, AffinePreimage) and isinstance(blk.set.inner, Simplex) and blk.set.inner.axis == 1
    Z = fm.Variable((5, 4))
    plain = fm.Problem(fm.Minimize(fm.sum_squares(Z + M)), [Z >= 0, fm.sum(Z, axis=1) == 1])
    mirrored.solve(**TIGHT)
    plain.solve(**TIGHT)
    assert mirrored.status == plain.status == fm.OPTIMAL
    np.testing.assert_allclose(X.value, -Z.value, atol=1e-7)


def test_a_mirrored_slice_total_out_of_reach_is_infeasible_as_in_cvxpy():
    out = []
    for m in (fm, cp):
        x = m.Variable(8, name="x")
        prob = m.Problem(m.Minimize(m.sum_squares(x - C)), [x <= 0, m.sum(x[:5]) >= 1, m.sum(x[5:]) >= -1])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        out.append(prob)
    assert out[1].status == cp.INFEASIBLE
    assert out[0].status == fm.INFEASIBLE
    assert "does not hold" in out[0].stats.message and "x[:5]" in out[0].stats.message


def test_a_mirrored_slice_total_from_a_parameter_is_reread():
    probs, params, budgets = [], [], []
    for m in (fm, cp):
        x, t = m.Variable(8), m.Parameter()
        own = [m.sum(x[:5]) >= t, m.sum(x[5:]) >= -1]
        probs.append(m.Problem(m.Minimize(m.sum_squares(x - C)), [x <= 0] + own))
        params.append(t)
        budgets.append(own)
    for value, expected in ((-1.0, "optimal"), (0.5, "infeasible"), (-0.3, "optimal")):
        for t in params:
            t.value = value
        probs[0].solve(**TIGHT)
        probs[1].solve(solver=cp.CLARABEL)
        assert probs[1].status == expected
        assert probs[0].status == expected, probs[0].stats.message
        if expected == "optimal":
            assert abs(probs[0].value - probs[1].value) <= 1e-5 * max(1.0, abs(probs[1].value))
            for mine, them in zip(*budgets):
                np.testing.assert_allclose(mine.dual_value, them.dual_value, rtol=2e-3, atol=2e-4)


def test_a_budget_on_the_open_side_is_refused_naming_it():
    """``x <= 0`` with ``fm.sum(x[:3]) <= 1`` does not bound x[:3] below: refused, the row named with why."""
    x = fm.Variable(6, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 0.3)), [x <= 0, fm.sum(x[:3]) <= 1, x[3:] >= -1])
    with pytest.raises(fm.ModelError, match=r"unbounded below"):
        prob.solve()
