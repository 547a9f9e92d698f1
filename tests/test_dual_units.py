"""Dual values do not depend on the model's units: the same model in units s (or shifted by an offset) has
its multipliers times s (unchanged by the offset), against CVXPY + Clarabel on the model in units 1.

The dual writers read which entries are at a bound (and whether a ball or a budget binds) from the solve's
point; those tests were once relative to an absolute 1 or to the bounds' offsets, so that in a box of width
1e-9 (or of width 1 at an offset of 1e8) every entry counted as at a bound: the equality's multiplier came
out with the wrong sign and entries strictly inside their bounds got multipliers (complementary slackness
violated), under status "optimal" and an exact point.

Model in units s: ``min ||x - s c||^2`` over constraints whose data are s times the unit model's. With
``x = s u`` the objective is ``s^2`` times the unit one, every constraint ``s`` times its unit form, so each
multiplier is ``s`` times the unit model's. An offset ``x = o + w u`` leaves the multipliers of the model
in units w unchanged (the constraints' rows are the same, shifted).
"""
import numpy as np
import pytest

import fwmodel as fm

from _against_clarabel import solve_on

cp = pytest.importorskip("cvxpy")

N = 10
C0 = np.random.default_rng(14).standard_normal(N)
RNG21 = np.random.default_rng(21)
A21, B21 = RNG21.standard_normal((12, N)), RNG21.standard_normal(12)


def _duals(m, build, s, offset=0.0):
    prob, x, constraints = solve_on(m, build, N, s, offset)
    if m is cp:
        assert prob.status == cp.OPTIMAL
    duals = [c.dual_value for c in constraints]
    assert all(d is not None for d in duals)
    return [np.atleast_1d(np.asarray(d, dtype=float)) for d in duals], x.value


def _capped(m, x, s, offset):
    # x in [o, o + s], sum(x) == n o + 3 s: a capped simplex (shifted by o)
    return (m.sum_squares(x - offset - s * C0),
            [x >= offset, x <= offset + s, m.sum(x) == N * offset + 3 * s])


def _boxed_l1(m, x, s, offset):
    # norm1(x) <= s with abs(x) <= 0.3 s: one boxed L1 ball
    return m.sum_squares(A21 @ x - s * B21), [m.norm1(x) <= s, m.abs(x) <= 0.3 * s]


def _box_with_rows(m, x, s, offset):
    # x in [o, o + s] with two general rows: a box (its multipliers per entry) and slack rows
    A = np.random.default_rng(3).standard_normal((2, N))
    return (m.sum_squares(x - offset - s * C0),
            [x >= offset, x <= offset + s, A @ (x - offset) == 0.01 * s])


def _assert_scaled(build, s, offset=0.0, unit_box=False):
    ref, ref_x = _duals(cp, build, 1.0)
    got, x = _duals(fm, build, s, offset)
    np.testing.assert_allclose((x - offset) / s, ref_x, atol=2e-4)  # (the point is right: the duals were not)
    scale = max(float(np.max(np.abs(d))) for d in ref)
    for d, r in zip(got, ref):
        # each multiplier over s is the unit model's (to the solve's accuracy, 2e-4 of the largest)
        np.testing.assert_allclose(d / s, r, rtol=0, atol=2e-4 * scale)
    if unit_box:  # constraints 0 and 1 are x >= o, x <= o + s: complementary slackness, exactly
        inside = (ref_x > 1e-3) & (ref_x < 1 - 1e-3)  # strictly inside [0, 1] in the unit model
        assert inside.any()
        assert np.all(got[0][inside] == 0.0) and np.all(got[1][inside] == 0.0), (got[0], got[1], ref_x)


@pytest.mark.parametrize("s", [1.0, 1e-6, 1e-9, 1e-10, 1e-12, 1e4, 1e8])
def test_capped_simplex_duals_in_units(s):
    _assert_scaled(_capped, s, unit_box=True)


@pytest.mark.parametrize("offset, width", [(1e8, 1.0), (1e6, 0.01), (1e5, 0.05), (1e3, 1e-3)])
def test_capped_simplex_duals_at_an_offset(offset, width):
    _assert_scaled(_capped, width, offset, unit_box=True)


@pytest.mark.parametrize("s", [1.0, 1e-4, 1e-7, 1e-9, 1e-12, 1e4, 1e8])
def test_boxed_l1_duals_in_units(s):
    _assert_scaled(_boxed_l1, s)


@pytest.mark.parametrize("offset, width", [(0.0, 1e-9), (0.0, 1e6), (1e5, 0.05), (1e7, 1.0)])
def test_box_duals_in_units_and_at_an_offset(offset, width):
    _assert_scaled(_box_with_rows, width, offset, unit_box=True)


T53 = {  # several constraint kinds, each in units s (the review's comparison of s = 1 against s = 1e-7)
    "l1+lower": lambda m, x, s: [m.norm1(x) <= s, x >= -0.2 * s],
    "simplex+ineq": lambda m, x, s: [x >= 0, m.sum(x) == s, G5[:2] @ x <= 0.1 * s],
    "capped+ineq": lambda m, x, s: [x >= 0, m.sum(x) <= s, x <= 0.3 * s, x[0] >= 0.1 * s],
    "box+row": lambda m, x, s: [x >= -0.3 * s, x <= 0.3 * s, x[0] + x[1] == 0.1 * s],
    "max/min": lambda m, x, s: [m.max(x) <= 0.3 * s, m.min(x) >= -0.3 * s, m.sum(x) == 0.5 * s],
}
RNG5 = np.random.default_rng(5)
A5, B5, G5 = RNG5.standard_normal((8, N)), RNG5.standard_normal(8), RNG5.standard_normal((3, N))


# (the simplex with general rows ends max_iter below s = 1e-8, a solve in those units, not its duals)
KINDS_IN_UNITS = [(name, s) for name in T53 for s in ([1e-7, 1e-8] if name == "simplex+ineq" else [1e-7, 1e-11])]


@pytest.mark.parametrize("name, s", KINDS_IN_UNITS)
def test_constraint_kinds_duals_in_units(name, s):
    def build(m, x, s, offset):
        return m.sum_squares(A5 @ x - s * B5), T53[name](m, x, s)

    _assert_scaled(build, s)
