"""Groups of rows in units far apart: each group meets its own feasibility test, and the solve
equilibrates them (engine/stopping.py ``RowPieces``; engine/fwal.py ``_row_equilibration``).

Before, one feasibility scale served every row of M: least squares over
``x >= 0``, ``norm1(x) <= 1`` and ``s * (x[0] + x[1]) >= s`` ended "optimal"
with the copies of x apart at s = 1e6 (min x = -0.29, ||x||_1 = 1.9) and with
the row violated at s = 1e-6 (x0 + x1 = 0.21). Every check here is against
CVXPY + Clarabel on the same model written in unit scale.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.stopping import UNITS_APART

RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, 10))
B = RNG.standard_normal(30)


def _clarabel(constraints):
    x = cp.Variable(10)
    cons = constraints(x)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ x - B)), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob, x, cons


def _least_squares(constraints, **options):
    x = fm.Variable(10, name="x")
    cons = constraints(x)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), cons)
    prob.solve(**options)
    return prob, x, cons


@pytest.mark.parametrize("s", [1e-6, 1e-3, 1.0, 1e3, 1e6])
def test_a_row_in_other_units_than_the_tied_copies(s):
    """Copies of x (a nonnegative box and an L1 ball) next to a row in units s: Clarabel's optimum, and a
    point in every set and on the row's side, at every s (s = 1e6 and 1e-6 were silent wrong answers)."""
    ref, xc, _ = _clarabel(lambda x: [x >= 0, cp.norm1(x) <= 1, x[0] + x[1] >= 1])
    prob, x, _ = _least_squares(lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= s])
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    v = x.value
    assert v.min() >= -1e-3 and np.abs(v).sum() <= 1 + 1e-3 and v[0] + v[1] >= 1 - 1e-3
    assert np.linalg.norm(v - xc.value) <= 1e-2


@pytest.mark.parametrize("s", [1e-6, 1.0, 1e6])
def test_the_row_dual_is_in_the_units_it_was_written_in(s):
    """Two balls (tied copies, inactive) and the binding row ``s * (x0 + x1) >= 2 s``: optimal, and the row's
    multiplier is Clarabel's for the row written with s (1/s times the unit row's), although the solve
    rescaled the row (and its slack) by about 1/s. At s = 1e-6 this model ran to max_iter before."""
    def constraints(lib):
        mod = fm if lib is fm else cp
        return lambda x: [mod.norm1(x) <= 5, mod.norm2(x) <= 3, s * (x[0] + x[1]) >= 2 * s]
    ref, _, ref_cons = _clarabel(constraints(cp))
    prob, _, cons = _least_squares(constraints(fm))
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    expected = float(np.ravel(ref_cons[2].dual_value)[0])
    assert expected * s == pytest.approx(18.38, rel=1e-3)  # binding, and unique: the balls are inactive
    assert float(np.ravel(cons[2].dual_value)[0]) == pytest.approx(expected, rel=1e-3)
    for ball in cons[:2]:  # inactive: multipliers ~0 next to the row's
        assert abs(float(np.ravel(ball.dual_value)[0])) <= 1e-4 * 18.38


@pytest.mark.parametrize("s", [1e-6, 1e6])
def test_an_infeasible_row_in_other_units_is_certified(s):
    """x0 + x1 >= 3 on the unit L1 ball, in units s next to the tied copies: "infeasible", as Clarabel says."""
    ref, _, _ = _clarabel(lambda x: [x >= 0, cp.norm1(x) <= 1, x[0] + x[1] >= 3])
    assert ref.status == "infeasible"
    prob, _, _ = _least_squares(lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= 3 * s])
    assert prob.status == "infeasible"


@pytest.mark.parametrize("s1, s2", [(1e3, 1.0), (1.0, 1e3), (1e6, 1e-6), (1e-6, 1.0)])
def test_two_equalities_in_units_far_apart(s1, s2):
    """Two equality rows on an L1 ball, one in units s1 and one in s2: Clarabel's optimum (at s1 = 1000 the
    rows, a thousand times apart, ran to max_iter: one penalty served both)."""
    ref, _, _ = _clarabel(lambda x: [cp.norm1(x) <= 1, x[0] - x[2] == 0.1, x[3] + x[4] == 0.2])
    prob, x, _ = _least_squares(lambda x: [fm.norm1(x) <= 1, s1 * (x[0] - x[2]) == 0.1 * s1,
                                           s2 * (x[3] + x[4]) == 0.2 * s2])
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    v = x.value
    assert abs(v[0] - v[2] - 0.1) <= 1e-3 and abs(v[3] + v[4] - 0.2) <= 1e-3


class _Piece:
    def __init__(self, scalable):
        if scalable:
            self.scaled = lambda factor: self


def test_equilibration_factors():
    """Where pieces are more than UNITS_APART apart, every piece that can be rescaled is brought to the
    reference (the largest piece that cannot, tied copies; else the largest of all); copies stay as written."""
    from fwmodel.engine.stopping import RowPieces
    far = 10 * UNITS_APART
    pieces = RowPieces(np.arange(5), np.array([2.0, 2.0 * far, 2.0 / far, 2.0 * UNITS_APART / 1.01]), None, [])
    factors = pieces.equilibration([_Piece(False), _Piece(True), _Piece(True), _Piece(True)])
    assert factors == pytest.approx([1.0, 1.0 / far, far, 1.01 / UNITS_APART])
    # without copies the largest piece is the reference; nothing far apart: no rescaling at all
    rows_only = RowPieces(np.arange(3), np.array([3.0, 3.0 / far]), None, [])
    assert rows_only.equilibration([_Piece(True), _Piece(True)]) == pytest.approx([1.0, far])
    near = RowPieces(np.arange(3), np.array([3.0, 3.0 / (0.9 * UNITS_APART)]), None, [])
    assert near.equilibration([_Piece(True), _Piece(True)]) is None


def test_warm_start_after_a_rescaled_solve():
    """A Parameter re-solved with warm_start: the multipliers kept from the rescaled solve are in the model's
    units, and the second solve reaches Clarabel's optimum for the new value."""
    s = 1e6
    level = fm.Parameter(value=1.0)
    x = fm.Variable(10, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)),
                      [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= s * level])
    prob.solve()
    assert prob.status == "optimal"
    level.value = 0.8
    prob.solve(warm_start=True)
    ref, _, _ = _clarabel(lambda x: [x >= 0, cp.norm1(x) <= 1, x[0] + x[1] >= 0.8])
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert x.value[0] + x.value[1] >= 0.8 - 1e-3


def test_the_returned_feasibility_is_in_the_models_units():
    """stats.feasibility is ||M x - b|| of the rows as the model wrote them (the solve rescaled the row by
    about 1e-6), recomputed here from the returned product-space point."""
    s = 1e6
    prob, _, _ = _least_squares(lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= s])
    assert prob.status == "optimal"
    operator = prob._compiled.operator
    residual = operator.matvec(np.asarray(prob._state.x)) - np.asarray(operator.b)
    assert prob.stats.feasibility == pytest.approx(float(np.linalg.norm(residual)), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("s", [1e-6, 1e6])
def test_without_the_equilibration_the_pieces_test_still_refuses_a_wrong_optimal(s, monkeypatch):
    """Test (3) per piece on its own (the solve's rescaling turned off): the model whose copies or row were
    violated at "optimal" before now either meets every constraint or says it did not reach its tolerances."""
    import fwmodel.engine.fwal as fwal
    monkeypatch.setattr(fwal, "_row_equilibration", lambda stopping, M: None)
    prob, x, _ = _least_squares(lambda x: [x >= 0, fm.norm1(x) <= 1, s * (x[0] + x[1]) >= s], max_iter=2000)
    v = x.value
    met = v.min() >= -1e-3 and np.abs(v).sum() <= 1 + 1e-3 and v[0] + v[1] >= 1 - 1e-3
    assert prob.status != "optimal" or met
    assert prob.status in ("optimal", "max_iter")


@pytest.mark.parametrize("s", [1e-2, 30.0])
def test_a_row_ten_to_a_hundred_times_from_unit_scale(s):
    """A 3 x 3 matrix in an L1 and an L2 ball with ``s * (X00 + X12) >= 0.6 s``: at s = 1e-2 the row was
    rescaled while its slack kept the row's units (a slack column 60 times the others'): max_iter, where
    Clarabel's optimum is 0.18. The slack is now in the variables' units (lowering.SLACK_UNITS_APART)."""
    D = np.array([[1.0, 0.2, -0.3], [0.0, -0.7, 0.5], [0.3, 0.3, 0.9]])
    X = fm.Variable((3, 3))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - D)),
                      [fm.norm1(X) <= 3, fm.norm2(fm.vec(X, order="F")) <= 1.5, s * (X[0, 0] + X[1, 2]) >= 0.6 * s])
    prob.solve()
    Xc = cp.Variable((3, 3))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - D)),
                     [cp.norm1(cp.vec(Xc, order="C")) <= 3, cp.norm(cp.vec(Xc, order="C"), 2) <= 1.5, Xc[0, 0] + Xc[1, 2] >= 0.6])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)


def test_a_parameter_that_moves_a_rows_units_recompiles_its_slack():
    """The slack's units are compiled from the coefficients' values; a Parameter that moves them a million-fold
    (S = 100 -> 1e-4) left the same Problem at max_iter where a fresh one solves: now it is compiled again."""
    rng = np.random.default_rng(7)
    A2, b2 = rng.standard_normal((20, 8)), rng.standard_normal(20)
    S = fm.Parameter(value=100.0, name="S")
    x = fm.Variable(8)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A2 @ x - b2)),
                      [fm.norm1(x) <= 2, fm.norm2(x) <= 1.2, S * (x[2] + x[3]) >= 0.8 * S])
    xc = cp.Variable(8)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A2 @ xc - b2)),
                     [cp.norm1(xc) <= 2, cp.norm(xc, 2) <= 1.2, xc[2] + xc[3] >= 0.8])
    ref.solve(solver=cp.CLARABEL)
    prob.solve()
    assert prob.status == "optimal"
    for value in (1e-4, 1e6):
        S.value = value
        prob.solve(warm_start=True)
        assert prob.status == "optimal", value
        assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
