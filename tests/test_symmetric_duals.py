"""``dual_value`` of constraints on ``symmetric=True`` variables, against CVXPY + Clarabel.

X[i, j] and X[j, i] are one unknown, so only the sum ``d_ij + d_ji`` of a constraint's multipliers on a pair
is determined (the stationarity condition reads the pair's sum): the tests compare the pair sums
``D + D'`` with CVXPY's, and check that fwmodel's D is the symmetric split (``D == D'``), which is also what
CVXPY returns when Clarabel's answer is symmetric. The objectives' coefficient matrices are not symmetric
where that matters (``<T, X>``: a block whose set keeps X symmetric sees only ``sym(T)``), and symmetric
where the symmetry rows X[i, j] == X[j, i] chose an unequal split.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

N = 4
_rng = np.random.default_rng(0)
T = _rng.standard_normal((N, N))  # not symmetric
TS = 0.5 * (T + T.T)
C = _rng.random((N, N)) * 0.2
C = C + C.T  # symmetric data
B = _rng.random((N, N)) + 0.5
B = B + B.T  # symmetric bounds
U = _rng.random((N, N)) + 0.5  # bounds that are not symmetric
T3 = np.array([[1.0, 2.0, -1.0], [0.0, -3.0, 0.5], [2.0, 1.5, 0.2]])


def _solve(M, build, n):
    X, Y = M.Variable((n, n), symmetric=True), M.Variable((n, n), symmetric=True)
    objective, constraints = build(M, X, Y)
    prob = M.Problem(M.Minimize(objective), constraints)
    if M is cp:
        prob.solve(solver=cp.CLARABEL)
    else:
        prob.solve(tol=1e-7, max_iter=20000)
    return prob, X, constraints


def _compare(build, n=N, rel=1e-4, expect=None):
    """Solve with both; the primal points agree, and so do the duals: pair sums for n x n duals, fwmodel's
    exactly symmetric; scalars and vectors entrywise. ``expect``: the constraints whose fwmodel dual is
    checked (default all)."""
    ref, Xc, cons_c = _solve(cp, build, n)
    prob, Xf, cons_f = _solve(fm, build, n)
    assert ref.status == "optimal" and prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(Xf.value, Xc.value, atol=2e-4)
    for k, (mine, theirs) in enumerate(zip(cons_f, cons_c)):
        if expect is not None and k not in expect:
            continue
        assert mine.dual_value is not None, f"constraint {k}: no dual value"
        d, r = np.asarray(mine.dual_value, dtype=float), np.asarray(theirs.dual_value, dtype=float)
        assert d.shape == r.shape
        tol = rel * max(1.0, float(np.max(np.abs(r), initial=0.0)))
        if d.shape == (n, n):
            np.testing.assert_array_equal(d, d.T)  # the symmetric split
            np.testing.assert_allclose(d + d.T, r + r.T, atol=tol, err_msg=f"constraint {k}: pair sums")
        else:
            np.testing.assert_allclose(d, r, atol=tol, err_msg=f"constraint {k}")
    return prob, cons_f, cons_c, Xf.value


def test_abs_bound_with_a_nonsymmetric_objective_and_an_equality():
    """The reported case: on the pair (0, 2) fwmodel's sum was 2.0 where KKT (T02 + T20 + 2 nu = -1) and
    CVXPY give 1.0, and the inactive pairs (0, 1) and (1, 2) (X = -0.7) had 0.70 and 0.35 instead of 0."""
    prob, cons, _, X = _compare(lambda m, X, Y: (m.sum(m.multiply(T3, X)), [m.abs(X) <= 1, m.sum(X) == 0.5]), n=3)
    np.testing.assert_allclose(X, [[-0.7, -0.7, 1], [-0.7, 1, -0.7], [1, -0.7, 1]], atol=1e-6)
    d, nu = np.asarray(cons[0].dual_value), float(cons[1].dual_value)
    assert nu == pytest.approx(-1.0, abs=1e-6)
    # KKT per pair on the active entries X = 1: T_ij + T_ji + 2 nu + d_ij + d_ji = 0; 0 on the inactive ones
    for i, j in [(0, 2), (1, 1), (2, 2)]:
        assert d[i, j] + d[j, i] == pytest.approx(-(T3[i, j] + T3[j, i] + 2 * nu), abs=1e-6)
    for i, j in [(0, 0), (0, 1), (1, 2)]:  # X = -0.7: inactive
        assert d[i, j] == 0.0 and d[j, i] == 0.0


@pytest.mark.parametrize("name, build", [
    ("abs, linear", lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.abs(X) <= 1])),
    ("abs, quadratic", lambda m, X, Y: (m.sum_squares(X - 2 * TS) + m.sum(m.multiply(T, X)), [m.abs(X) <= 1])),
    ("abs, matrix bound", lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.abs(X) <= 0.5 * B])),
    ("abs and an equality", lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.abs(X) <= 1, m.sum(X) == 0.5])),
])
def test_abs_bounds_on_a_symmetric_variant(name, build):
    """The block's set keeps X symmetric (no symmetry rows), and the objective's gradient T is not symmetric:
    the multipliers were read from T itself (pair sums off by up to 1.3 on main, inactive pairs nonzero)."""
    prob = _compare(build)[0]
    assert "SymmetricPart" in [type(blk.set).__name__ for blk in prob.compile().blocks]


@pytest.mark.parametrize("name, build", [
    ("abs of X - C", lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.abs(X - C) <= 1])),
    ("sum == 1, X >= 0", lambda m, X, Y: (m.sum_squares(X - TS) + m.sum(m.multiply(T, X)), [X >= 0, m.sum(X) == 1])),
    ("sum == 1, 0 <= X <= 0.15", lambda m, X, Y: (m.sum_squares(X - TS) + m.sum(m.multiply(T, X)),
                                                   [X >= 0, X <= 0.15, m.sum(X) == 1])),
    ("rows sum to 1, X >= 0, symmetric objective", lambda m, X, Y: (
        m.sum_squares(X - TS), [X >= 0, m.sum(X, axis=1) == 1, X[0, 0] == 0.3])),
])
def test_bounds_held_with_symmetry_rows(name, build):
    """The set does not keep X symmetric, so rows X[i, j] == X[j, i] do, and their multipliers chose some
    split of each pair (the whole pair's multiplier on one entry: 0.87 and 0 where CVXPY has 0.435 twice);
    the split is equal now, with the same pair sums."""
    prob = _compare(build)[0]
    assert prob.compile().operator.shape[0] > 0  # (the symmetry rows are there)


def test_a_nonsymmetric_cap_binds_on_the_tighter_entry_alone():
    """X <= U with U not symmetric: only min(U_ij, U_ji) binds, and its entry takes the pair's multiplier (as
    CVXPY: its dual is then determined entry by entry, not only in pair sums). The box is held with symmetry
    rows, whose multipliers split the floor X >= -1's pairs unequally (0.63 apart): equal now."""
    _, cons, ref, _ = _compare(lambda m, X, Y: (m.sum(m.multiply(T, X)), [X >= -1, X <= U]), expect={0})
    np.testing.assert_allclose(cons[1].dual_value, ref[1].dual_value, atol=1e-4)
    assert np.abs(np.asarray(cons[1].dual_value) - np.asarray(cons[1].dual_value).T).max() > 0.1


def test_abs_bound_read_from_a_parameter():
    """A Parameter matrix bound may lose its symmetry at the next solve, so the compiler keeps symmetry rows;
    the multipliers of the bound are split equally on each pair whose bounds are equal."""
    P = fm.Parameter((N, N), value=B)
    _compare(lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.abs(X) <= (P if m is fm else B)]))


P_B = fm.Parameter((N, N), value=B)  # (a Parameter: the compiler keeps symmetry rows)


@pytest.mark.parametrize("name, build", [
    ("X + Y <= 0.5 (slack rows)", lambda m, X, Y: (
        m.sum(m.multiply(T, X)) + m.sum_squares(Y - T),
        [X + Y <= 0.5, m.abs(X) <= (P_B if m is fm else B), m.abs(Y) <= (P_B if m is fm else B)])),
    ("X + Y == C (rows of M)", lambda m, X, Y: (
        m.sum(m.multiply(T, X)) + m.sum_squares(Y - T), [X + Y == C, m.abs(X) <= (P_B if m is fm else B),
                                                         m.abs(Y) <= 1])),
])
def test_rows_on_symmetric_variables_held_with_symmetry_rows(name, build):
    """General rows (with slacks, or equalities) on variables held with symmetry rows: the rows' multipliers
    were an unequal split of each pair (0.37 apart for the slack rows, 0.86 for the equality)."""
    _compare(build)


@pytest.mark.parametrize("name, build", [
    ("box, active and inactive", lambda m, X, Y: (m.sum(m.multiply(T, X)), [X >= -1, X <= 0.5, m.sum(X) == 0.5])),
    ("box, quadratic", lambda m, X, Y: (m.sum_squares(X - 2 * TS) + m.sum(m.multiply(T, X)), [X >= 0, X <= 0.8])),
    ("X >= 0 under a Frobenius ball", lambda m, X, Y: (m.sum(m.multiply(T, X)), [X >= 0, m.norm(X, "fro") <= 1])),
    ("2 X <= 1", lambda m, X, Y: (m.sum(m.multiply(T, X)), [2 * X <= 1, X >= -1])),
    ("max(X) <= 0.4", lambda m, X, Y: (m.sum(m.multiply(T, X)), [m.max(X) <= 0.4, X >= -1])),
    ("X >> 0, trace(X) <= 1", lambda m, X, Y: (m.sum(m.multiply(T, X)), [X >> 0, m.trace(X) <= 1])),
    ("X >> 0, diag(X) <= 1", lambda m, X, Y: (m.sum(m.multiply(T, X)), [X >> 0, m.diag(X) <= 1])),
])
def test_duals_that_read_the_symmetric_part_already(name, build):
    """Bounds held by a symmetric box, balls, and PSD duals (Z = sym(G) + mu I) agree with CVXPY as before."""
    _compare(build, rel=2e-4)


def test_a_ball_on_a_symmetric_variable_gets_its_multiplier_back_from_the_box():
    """norm1(X) <= 1 with X <= 0.3: the box [-1, 0.3] takes the ball's lower side, which binds at X00 = -1.
    The box was held as its symmetric variant, which the ball's writer did not look for, so the ball's block
    alone gave 0.49 where KKT (and CVXPY) give 0.98."""
    E = np.zeros((3, 3))
    E[0, 0], E[1, 2] = 1.0, 0.1

    def build(m, X, Y):
        ball = cp.sum(cp.abs(X)) if m is cp else fm.norm1(X)  # (the entrywise L1 norm)
        return m.sum(m.multiply(E, X)) + 0.01 * m.sum_squares(X), [X <= 0.3, ball <= 1]

    _, cons, _, X = _compare(build, n=3, rel=1e-5)
    assert X[0, 0] == pytest.approx(-1.0, abs=1e-6)
    assert cons[1].dual_value == pytest.approx(0.98, abs=1e-5)  # KKT at (0, 0): 1 + 0.02 X00 - mu = 0


def test_a_bound_the_compiler_shares_on_a_symmetric_variable_is_none_or_right():
    """X[0, 1] >= 0.3 next to abs(X) <= 1: the entry's box takes its upper side 1 from the abs bound, where
    X[0, 1] = 1 binds; the box's share of that multiplier is the abs constraint's too. It was a number 0.066 off
    on that pair; None now, as for a variable that is not symmetric."""
    ref, _, cons_c = _solve(cp, lambda m, X, Y: (m.sum(m.multiply(T, X)), [X[0, 1] >= 0.3, m.abs(X) <= 1]), N)
    prob, Xf, cons = _solve(fm, lambda m, X, Y: (m.sum(m.multiply(T, X)), [X[0, 1] >= 0.3, m.abs(X) <= 1]), N)
    assert prob.value == pytest.approx(ref.value, rel=1e-6) and Xf.value[0, 1] == pytest.approx(1.0)
    d = cons[1].dual_value
    if d is not None:
        r = np.asarray(cons_c[1].dual_value)
        np.testing.assert_allclose(d + d.T, r + r.T, atol=1e-4)
