"""A budget on a slice (``x[:3] >= 0, fm.sum(x[:3]) == 1``) is a simplex on that slice when the floors >= 0
are on the budget's entries, whatever bounds the other entries have (``fm.abs(x[3:]) <= 1``): solved as
CVXPY + Clarabel solves it, dual values included (compiler.lowering._slice_budget_groups)."""
import numpy as np
import pytest

from _against_clarabel import assert_same_answer

A = np.array([0.3, -0.5, 1.2, 2.0, -0.7, 0.1])
VARIANTS = {
    "slice simplex and a box on the rest": lambda m, x: [x[:3] >= 0, m.sum(x[:3]) == 1, m.abs(x[3:]) <= 1],
    "and a row": lambda m, x: [x[:3] >= 0, m.sum(x[:3]) == 1, m.abs(x[3:]) <= 1, m.sum(x) == 0],
    "and floors across": lambda m, x: [x[:3] >= 0, m.sum(x[:3]) == 1, m.abs(x[3:]) <= 1, x[1:5] >= -0.2],
    "and an inequality row": lambda m, x: [x[:3] >= 0, m.sum(x[:3]) == 1, m.abs(x[3:]) <= 1, x[0] + x[4] <= 0.5],
    "a budget <=": lambda m, x: [x[:3] >= 0, m.sum(x[:3]) <= 1, m.abs(x[3:]) <= 1],
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_slice_budget_next_to_entries_without_floors(name):
    def build(m):
        x = m.Variable(6)
        constraints = VARIANTS[name](m, x)
        return m.Problem(m.Minimize(m.sum_squares(x - A)), constraints), [x], constraints

    assert_same_answer(build)
