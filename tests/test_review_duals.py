"""Dual values CVXPY gives that fwmodel left None: ``normNuc(X) <= t`` whose implied bounds close a box of
one-sided entry bounds, and ``trace(X) <= t`` on a 1x1 PSD matrix (a PSD trace ball). Against Clarabel."""
import numpy as np
import pytest

from _against_clarabel import assert_same_answer

NUC_EXTRAS = {
    "floors on the diagonal": (-np.eye(3), lambda m, X: [X[0, 0] >= 0.5, X[1, 1] >= 0.4]),
    "a floor, the ball's bound active": (5.0 * np.diag([1.0, 0.0, 0.0]), lambda m, X: [X[0, 0] >= 0.0]),
    "a floor off the diagonal": (np.ones((3, 3)), lambda m, X: [X[0, 1] >= 0.2]),
}


@pytest.mark.parametrize("name", list(NUC_EXTRAS))
def test_nuclear_norm_ball_next_to_one_sided_bounds(name):
    target, extra = NUC_EXTRAS[name]

    def build(m):
        X = m.Variable((3, 3))
        constraints = [m.normNuc(X) <= 1] + extra(m, X)
        return m.Problem(m.Minimize(m.sum_squares(X - target)), constraints), [X], constraints

    assert_same_answer(build)


@pytest.mark.parametrize("declared", ["PSD=True", ">> 0"])
@pytest.mark.parametrize("target", [3.0, 1.0])
def test_trace_bound_of_a_1x1_psd_matrix(declared, target):
    def build(m):
        if declared == "PSD=True":
            X = m.Variable((1, 1), PSD=True)
            constraints = [m.trace(X) <= 2]
        else:
            X = m.Variable((1, 1), symmetric=True)
            constraints = [m.trace(X) <= 2, X >> 0]
        return m.Problem(m.Minimize(m.sum_squares(X - target)), constraints), [X], constraints

    assert_same_answer(build)
