"""Rows a few times apart in units: every constraint's rows are brought to unit norm before the solve
(engine/stopping.py ``row_norm_equilibration``), and a warm start carries its multipliers to rows
a Parameter has rescaled (engine/fwal.py ``_carry_multipliers``).

Before, one penalty served rows of any norm: the L1 ball with ``50 * (x0 - x2) == 5`` next to
``x3 + x4 == 0.2`` ran to max_iter (37 iterations in unit scale), and 5x took 185. Values are checked
against CVXPY + Clarabel on the model written in unit scale; iterations against the unit model's own.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm

RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, 10))
B = RNG.standard_normal(30)


def _clarabel(constraints):
    x = cp.Variable(10)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ x - B)), constraints(x))
    prob.solve(solver=cp.CLARABEL)
    return prob


def _solve(constraints, **options):
    x = fm.Variable(10)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), constraints(x))
    prob.solve(**options)
    return prob, x


MODELS = {
    "L1 + two equalities": (
        lambda k: lambda x: [fm.norm1(x) <= 1, k * (x[0] - x[2]) == 0.1 * k, x[3] + x[4] == 0.2],
        lambda x: [cp.norm1(x) <= 1, x[0] - x[2] == 0.1, x[3] + x[4] == 0.2]),
    "simplex + two equalities": (
        lambda k: lambda x: [fm.Simplex(x), k * (x[0] - x[5]) == 0.05 * k, fm.sum(x[:5]) == 0.6],
        lambda x: [x >= 0, cp.sum(x) == 1, x[0] - x[5] == 0.05, cp.sum(x[:5]) == 0.6]),
    "L2 + inequality pair": (
        lambda k: lambda x: [fm.norm2(x) <= 1, k * (x[0] + x[1]) >= 0.8 * k, x[2] - x[3] <= -0.5],
        lambda x: [cp.norm2(x) <= 1, x[0] + x[1] >= 0.8, x[2] - x[3] <= -0.5]),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("ratio", [5.0, 50.0, 0.1])
def test_two_rows_a_few_times_apart_converge_as_in_unit_scale(name, ratio):
    """One row written times ``ratio``: Clarabel's optimum, in at most 1.5x the unit model's iterations (on
    the L1 model, before: 185 at 5x, max_iter at 50x, 455 at 0.1x against 37)."""
    fm_cons, cp_cons = MODELS[name]
    ref = _clarabel(cp_cons)
    unit, _ = _solve(fm_cons(1.0))
    prob, x = _solve(fm_cons(ratio))
    assert prob.status == "optimal" == unit.status
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert prob.stats.iterations <= 1.5 * unit.stats.iterations + 5


def test_the_rows_dual_values_stay_in_the_units_they_were_written_in():
    """The inequality ``k * (x0 + x1) >= 0.8 k`` (binding): its dual value is Clarabel's for the row written
    with k, whatever factor the solve brought the row to unit norm with."""
    x = cp.Variable(10)
    cons = [cp.norm2(x) <= 1, x[0] + x[1] >= 0.8, x[2] - x[3] <= -0.5]
    cp.Problem(cp.Minimize(cp.sum_squares(A @ x - B)), cons).solve(solver=cp.CLARABEL)
    unit_dual = float(np.ravel(cons[1].dual_value)[0])
    assert unit_dual > 1e-3  # binding
    for k in (1.0, 7.0, 0.2):
        xf = fm.Variable(10)
        fcons = [fm.norm2(xf) <= 1, k * (xf[0] + xf[1]) >= 0.8 * k, xf[2] - xf[3] <= -0.5]
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ xf - B)), fcons)
        prob.solve(tol=1e-6, feas_tol=1e-6)
        assert prob.status == "optimal"
        assert float(np.ravel(fcons[1].dual_value)[0]) == pytest.approx(unit_dual / k, rel=1e-2)


def test_row_norm_equilibration_factors():
    """Every row of a scalable piece goes to the norm of the pieces that cannot be rescaled (tied copies,
    +-1: sqrt 2), else to 1, each by its own norm; a row already there (to rounding) keeps its coefficients;
    nothing to move gives None."""
    import scipy.sparse as sp

    from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows, SparseRows
    from fwmodel.engine.stopping import row_norm_equilibration
    rows = SparseRows(sp.csr_matrix(np.array([[30.0, 40.0, 0.0], [0.0, 0.0, 0.1]])), np.array([1.0, 2.0]))
    norms, factors = row_norm_equilibration(ConsistencyOperator([CopyRows([3], [0]), rows], 4), 4)
    assert norms == pytest.approx([np.sqrt(2), 50.0, 0.1])
    assert factors == pytest.approx([1.0, np.sqrt(2) / 50.0, np.sqrt(2) / 0.1])
    # a single group of rows: each row to unit norm
    norms, factors = row_norm_equilibration(ConsistencyOperator([rows], 3), 3)
    assert factors == pytest.approx([1.0 / 50.0, 10.0])
    unit = SparseRows(sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0 + 1e-14]])), np.zeros(2))
    assert row_norm_equilibration(ConsistencyOperator([unit], 2), 2)[1] is None


@pytest.mark.parametrize("shape", ["copies", "two rows", "single row"])
@pytest.mark.parametrize("p0, p1", [(1e-6, 1e6), (1e6, 1e-6)])
def test_a_warm_start_after_a_parameter_moved_a_rows_units(shape, p0, p1):
    """``P * (x0 + x1) == P * 0.5`` solved at P = p0, then warm-started at P = p1 (units 1e12 apart): the
    multipliers kept in the old row's units started the solve 1e12 off (max_iter; a cold solve ~50
    iterations). Carried per unit row, the warm solve reaches Clarabel's optimum in no more iterations
    than a cold solve."""
    P = fm.Parameter(value=p0)
    x = fm.Variable(10)
    if shape == "copies":
        cons = [x >= 0, fm.norm1(x) <= 1, P * (x[0] + x[1]) == P * 0.5]
        ref = _clarabel(lambda v: [v >= 0, cp.norm1(v) <= 1, v[0] + v[1] == 0.5])
    elif shape == "single row":  # M is this one row: rescaled to unit norm too (main kept lam in old units)
        cons = [fm.norm1(x) <= 1, P * (x[0] + x[1]) == P * 0.5]
        ref = _clarabel(lambda v: [cp.norm1(v) <= 1, v[0] + v[1] == 0.5])
    else:
        cons = [fm.norm1(x) <= 1, P * (x[0] + x[1]) == P * 0.5, x[3] - x[4] == 0.1]
        ref = _clarabel(lambda v: [cp.norm1(v) <= 1, v[0] + v[1] == 0.5, v[3] - v[4] == 0.1])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), cons)
    prob.solve()
    assert prob.status == "optimal"
    P.value = p1
    prob.solve(warm_start=True)
    warm = prob.stats.iterations
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert abs(x.value[0] + x.value[1] - 0.5) <= 1e-3
    cold = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B)), cons)
    cold.solve()
    assert cold.status == "optimal"
    assert warm <= cold.stats.iterations
