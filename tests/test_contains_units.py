"""Sets' membership tests in any units: their rounding slack is relative to the set's own data (no floor of 1).

With ``tol * max(1, data)`` a set of size 1e-9 "contained" points 1e-9 away, the origin among them: the solve
started at 0, outside the set, and returned it (a simplex of total 1e-9 gave x = 0, sum 0, "optimal"; a box
[1e-10, 2e-10] gave 5e-11). Each model in units s against CVXPY + Clarabel on the model in units 1 (the
solution scales as s).
"""
import numpy as np
import pytest

import fwmodel as fm

from _against_clarabel import solve_on

cp = pytest.importorskip("cvxpy")

MODELS = {
    "box": lambda m, x, s: (m.sum_squares(x - 0.5 * s), [x >= s, x <= 2 * s]),
    "simplex": lambda m, x, s: (m.sum_squares(x), [x >= 0, m.sum(x) == s]),
    "simplex <=": lambda m, x, s: (m.sum_squares(x - 2 * s), [x >= 0, m.sum(x) <= s]),
    "shifted L2 ball": lambda m, x, s: (m.sum_squares(x), [m.norm(x - 3 * s, 2) <= s]),
    "shifted L1 ball": lambda m, x, s: (m.sum_squares(x), [m.norm1(x - 3 * s) <= s]),
    "shifted Linf ball": lambda m, x, s: (m.sum_squares(x), [m.norm_inf(x - 3 * s) <= s]),
    "capped simplex": lambda m, x, s: (m.sum_squares(x), [x >= 0, m.sum(x) == 3 * s, x <= 2 * s, x[0] >= 1.5 * s]),
    "boxed L1 ball": lambda m, x, s: (m.sum_squares(x), [m.norm1(x) <= 3 * s, m.abs(x) <= 2 * s, x >= 0.5 * s]),
    "ellipsoid": lambda m, x, s: (m.sum_squares(x), [m.quad_form(x - 3 * s, np.diag([1.0, 2.0, 3.0])) <= s ** 2]),
}


def _solution(m, name, s):
    _, x, _ = solve_on(m, MODELS[name], 3, s)
    return np.asarray(x.value, dtype=float)


@pytest.mark.parametrize("s", [1.0, 1e-9, 1e-11, 1e-12])
@pytest.mark.parametrize("name", list(MODELS))
def test_solution_in_units(name, s):
    reference = _solution(cp, name, 1.0)
    np.testing.assert_allclose(_solution(fm, name, s) / s, reference, atol=1e-4 * max(1.0, np.abs(reference).max()))


@pytest.mark.parametrize("s", [1e-9, 1e-12])
def test_small_sets_do_not_contain_points_outside_them(s):
    x = fm.Variable(3)
    # points (in each set's own coordinates) a distance of about s outside: 0 for the box and the simplex
    outside = [(fm.Box(x, s, 2 * s), np.zeros(3)), (fm.Simplex(x, s), np.zeros(3)),
               (fm.L2Ball(x, s), np.full(3, 2 * s)), (fm.L1Ball(x, s), np.full(3, s)),
               (fm.LinfBall(x, s), np.full(3, 2 * s))]
    for cset, point in outside:
        assert not cset.contains(point), cset
    inside = np.full(3, s / 3)
    for cset in (fm.Simplex(x, s), fm.Box(x, 0.0, s), fm.L2Ball(x, s), fm.L1Ball(x, s), fm.LinfBall(x, s)):
        assert cset.contains(inside), cset
