"""Which steps a solve takes where projection="auto" could switch blocks, and what a looser tol costs.

* A quadratic objective measured nearly linear over the sets (a linear term plus a least-squares
  term of tiny or zero weight) keeps the vertex steps of a linear objective on an L1 ball with rows
  (engine/projection_choice.py ``nearly_linear``): with projected-gradient steps it crawled for
  thousands of iterations.
* A step kind asked for by name (``step="away"``, ...) is taken on every block; "auto" switches none
  to projections.
* The penalty's balance rule compares the FW gap and feasibility in the same units (feas_tol / tol):
  a looser tol takes no more iterations than a tighter one.

Every answer is compared with CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.schedules import AdaptiveMultiplier

cp = pytest.importorskip("cvxpy")


def _data(seed=20, n=8, rows=12):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, n)), rng.standard_normal(rows), np.linspace(-1, 1, n)


def _clarabel_near_linear(A, b, c, w, total):
    x = cp.Variable(A.shape[1])
    return cp.Problem(cp.Minimize(w * cp.sum_squares(A @ x - b) + c @ x),
                      [cp.norm1(x) <= 2, cp.sum(x) == total]).solve(solver=cp.CLARABEL)


def _close(value, ref, rel=1e-3):
    assert abs(value - ref) <= rel * max(1.0, abs(ref)), (value, ref)


@pytest.mark.parametrize("w", [0.0, 1e-6])
def test_a_nearly_linear_quadratic_on_an_l1_ball_with_a_row_keeps_vertex_steps(w):
    A, b, c = _data()
    x = fm.Variable(A.shape[1])
    prob = fm.Problem(fm.Minimize(w * fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= 2, fm.sum(x) == 0.5])
    value = prob.solve()
    assert prob.status == "optimal"
    _close(value, _clarabel_near_linear(A, b, c, w, 0.5))
    assert not prob.stats.step_counts.get("projection")
    # the same model written as a linear objective: the same steps, the same count (7,022 before)
    y = fm.Variable(A.shape[1])
    lin = fm.Problem(fm.Minimize(c @ y), [fm.norm1(y) <= 2, fm.sum(y) == 0.5])
    lin.solve()
    assert prob.stats.iterations <= 2 * lin.stats.iterations


def test_a_weight_parameter_set_to_zero_keeps_vertex_steps():
    A, b, c = _data()
    lam = fm.Parameter(nonneg=True, value=0.0)
    x = fm.Variable(A.shape[1])
    prob = fm.Problem(fm.Minimize(lam * fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= 2, fm.sum(x) == 0.5])
    value = prob.solve()
    assert prob.status == "optimal"
    _close(value, _clarabel_near_linear(A, b, c, 0.0, 0.5))
    assert prob.stats.iterations < 500  # 7,022 with projection steps


@pytest.mark.parametrize("seed", range(4))
def test_random_nearly_linear_models_match_clarabel_in_few_iterations(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 20))
    A, b, c = rng.standard_normal((n + 3, n)), rng.standard_normal(n + 3), rng.standard_normal(n)
    total = float(rng.uniform(-1, 1))
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(1e-6 * fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= 2, fm.sum(x) == total])
    value = prob.solve()
    assert prob.status == "optimal"
    _close(value, _clarabel_near_linear(A, b, c, 1e-6, total))
    assert prob.stats.iterations < 200  # 244-1,778 with projection steps


def test_a_curved_least_squares_still_projects():
    """The measured test leaves a curved objective's choice as it was: its L1 ball projects."""
    A, b, c = _data()
    x = fm.Variable(A.shape[1])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b) + c @ x), [fm.norm1(x) <= 2, fm.sum(x) == 0.5])
    value = prob.solve()
    assert prob.status == "optimal"
    _close(value, _clarabel_near_linear(A, b, c, 1.0, 0.5))
    assert prob.stats.step_counts.get("projection", 0) > 0


def _two_balls(seed=28, n=10):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((15, n)), rng.standard_normal(15)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                      [fm.norm1(x) <= 1.5, fm.norm2(x) <= 0.8, fm.sum(x) == 0.3])
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)),
                     [cp.norm1(xc) <= 1.5, cp.norm2(xc) <= 0.8, cp.sum(xc) == 0.3]).solve(solver=cp.CLARABEL)
    return prob, ref


@pytest.mark.parametrize("step", ["away", "pairwise"])
def test_a_step_kind_asked_for_by_name_is_taken(step):
    prob, ref = _two_balls()
    value = prob.solve(step=step)
    assert prob.status == "optimal"
    _close(value, ref)
    counts = prob.stats.step_counts
    assert not counts.get("projection")
    assert counts[step] > 0


def test_step_fw_by_name_takes_fw_steps_only():
    prob, _ = _two_balls()
    prob.solve(step="fw", max_iter=50)
    counts = prob.stats.step_counts
    assert not counts.get("projection") and counts["away"] == counts["pairwise"] == 0 and counts["fw"] > 0


def test_projection_true_with_a_named_step_still_projects():
    """projection=True is asked for too: the cheap blocks project, the named step moves the others."""
    prob, ref = _two_balls()
    value = prob.solve(step="away", projection=True)
    _close(value, ref)
    assert prob.stats.step_counts.get("projection", 0) > 0


def test_a_looser_tol_takes_no_more_iterations():
    iterations, values = [], []
    for tol in (1e-1, 1e-2, 1e-3):
        prob, ref = _two_balls()
        values.append(prob.solve(tol=tol))
        assert prob.status == "optimal"
        iterations.append(prob.stats.iterations)
        _close(values[-1], ref, rel=max(tol, 1e-3))
    assert iterations[0] <= iterations[1] <= iterations[2], iterations  # 958, 234, 173 before


def test_balance_rule_compares_feasibility_in_the_gap_units():
    """_balance with feas_units = feas_tol / tol: the same decisions as with both targets at one tol."""
    # feasibility 1000x its own target, the gap 2x its own; feas_tol = 1e-4, tol = 0.1: in the gap's units
    # feasibility is at 1 (not behind), so the penalty is not doubled
    sched = AdaptiveMultiplier(lam=1.0)
    sched._balance(2.0, 1000.0, 0.0, feas_units=1e-3)
    assert sched._pending_lam is None
    # the same ratios at one tol: feasibility 500x behind the gap -> doubled
    sched = AdaptiveMultiplier(lam=1.0)
    sched._balance(2.0, 1000.0, 0.0, feas_units=1.0)
    assert sched._pending_lam == pytest.approx(2.0)
    # feasibility 50x behind the gap in common units and 10x past its own target -> doubled
    sched = AdaptiveMultiplier(lam=1.0)
    sched._balance(0.1, 500.0, 0.0, feas_units=1e-2)
    assert sched._pending_lam == pytest.approx(2.0)
    # the gap 100x behind feasibility in common units -> halved
    sched = AdaptiveMultiplier(lam=1.0)
    sched._balance(100.0, 50.0, 0.0, feas_units=1e-2)
    assert sched._pending_lam == pytest.approx(0.5)
