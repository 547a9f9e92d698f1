"""The adaptive dual schedule's extrapolation of a geometric approach of y (schedules.AdaptiveMultiplier,
"Geometric approaches of y"): on two models whose multipliers approach their limit by a steady ratio close
to 1, fewer iterations at default options, and Clarabel's answer."""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.schedules import AdaptiveMultiplier
from _benchmarks import benchmark

cp = pytest.importorskip("cvxpy")
build = benchmark("psd_zero_diagonal").build


def _l1_halfspace_l2(m):
    # an L1 ball, a halfspace near its best vertex and an L2 ball around the L1 ball's optimal region only
    # (it cuts the L1 ball's vertices: ||e_k||_2 = 1 > 0.99999, so it is a set of its own)
    rng = np.random.default_rng(30)
    n = 10
    A, b, c0 = rng.standard_normal((8, n)), rng.standard_normal(8), rng.standard_normal(n)
    x = m.Variable(n)
    cons = [m.norm1(x) <= 1, c0 @ x >= np.abs(c0).max() - 1e-4, m.norm(x, 2) <= 0.99999]
    return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), cons)


@pytest.mark.parametrize("model,fraction", [
    # 9,566 iterations without the extrapolation; with it 3,000-4,000 on one machine, 7,824 on another
    # (the same iterates without it: the windows' displacements differ in their last digits, and the
    # approach is extrapolated at other windows)
    (_l1_halfspace_l2, 0.9),
    (lambda m: build(m, "bound", 6, [0], 1e-4, seed=6), 0.75),  # 3,454 without, at most 2,500 with
], ids=["l1-halfspace-l2", "psd-small-bound"])
def test_geometric_dual_approach_is_extrapolated(model, fraction, monkeypatch):
    prob, ref = model(fm), model(cp)
    prob.solve()
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL
    assert abs(prob.value - ref.value) <= 2e-4 * abs(ref.value)
    # the same solve without the extrapolation, in this run
    monkeypatch.setattr(AdaptiveMultiplier, "_extrapolate", lambda self, y: None)
    plain = model(fm)
    plain.solve()
    assert prob.stats.iterations <= fraction * plain.stats.iterations, (prob.stats.iterations,
                                                                         plain.stats.iterations)


def test_extrapolation_reaches_the_limit_of_a_geometric_series():
    # y_t = y* - D q^t / (1 - q) per window (windows of 20 dual steps, lam held): after four windows the
    # rule moves y to y* (the series' sum, closed form)
    sched = AdaptiveMultiplier(1.0)
    y_star = np.array([3.0, -1.0, 2.0])
    D = np.array([1.0, -0.5, 0.25])
    q = 0.99
    y = y_star - D / (1 - q)
    for t in range(20 * 6):
        sched._steps = t  # (only the window's end matters to the rule)
        if t % 20 == 0:
            k = t // 20
            y = y_star - D * q ** k / (1 - q)
            sched._center_oscillation(y)
            sched._extrapolate(y)
            if sched.extrapolations:
                break
    assert sched.extrapolations == 1
    np.testing.assert_allclose(y, y_star, rtol=1e-9, atol=1e-9)


def test_no_extrapolation_of_a_turning_or_irregular_course():
    # the same displacements turning by 90 degrees, or shrinking by uneven ratios: y is left alone
    for moves in ([np.array([1.0, 0.0]) * 0.9 ** k if k % 2 else np.array([0.0, 1.0]) * 0.9 ** k for k in range(8)],
                  [np.array([1.0, 0.0]) * r for r in (1.0, 0.9, 0.85, 0.7, 0.65, 0.5, 0.45, 0.3)]):
        sched = AdaptiveMultiplier(1.0)
        y = np.zeros(2)
        for k, move in enumerate(moves):
            sched._steps = 20 * k
            sched._center_oscillation(y)
            sched._extrapolate(y)
            y = y + move
        assert sched.extrapolations == 0
