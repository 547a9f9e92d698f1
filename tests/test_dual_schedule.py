"""The default dual step (engine/schedules.py ``AdaptiveMultiplier``): its memory of overshoots.

The rule is driven with feasibility sequences whose every window's outcome is
known, and its theta compared with what the documented rule gives by hand; the
models it was measured on are solved with defaults and compared with Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.schedules import AdaptiveMultiplier

cp = pytest.importorskip("cvxpy")


def _run_windows(schedule, factors, start=1.0):
    """Feed ``schedule`` one window of constant feasibility per factor (each window's value the
    previous one's times the factor; the FW gap large, so no stall or penalty rule fires) and
    return theta after each window."""
    thetas, feas = [], start
    for factor in factors:
        feas *= factor
        for _ in range(schedule.window):
            schedule.step(0, feas=feas, lam=schedule.lam, gap=1e9)
        thetas.append(schedule.theta)
    return thetas


def test_an_overshoot_at_a_raised_and_held_theta_caps_later_growth():
    sched = AdaptiveMultiplier(lam=2.0)
    # window 1 sets the reference; 2, 3 shrink by half (grow 1.5x each: 0.25 -> 0.375 -> 0.5625);
    # 4 holds (no change: theta held for a whole window); 5 grows (halve: 0.28125, and the
    # ceiling 0.6 * 0.5625 = 0.3375); 6-9 shrink by half: growth stops at the ceiling
    thetas = _run_windows(sched, [1.0, 0.5, 0.5, 1.0, 2.0, 0.5, 0.5, 0.5, 0.5])
    assert thetas[:5] == pytest.approx([0.25, 0.375, 0.5625, 0.5625, 0.28125])
    assert sched.ceiling == pytest.approx(0.6 * 0.5625)
    assert thetas[5:] == pytest.approx([0.3375] * 4)
    assert sched.current == pytest.approx(0.3375 * 2.0)
    # held at the ceiling, an overshoot lowers it again
    _run_windows(sched, [2.0], start=1.0)
    assert sched.ceiling == pytest.approx(0.6 * 0.3375)


def test_an_overshoot_at_the_start_or_right_after_a_raise_sets_no_ceiling():
    """Early on feasibility grows while x moves to the sets, and a window that straddles a raise
    measures the change: neither says the dual step is too long."""
    sched = AdaptiveMultiplier(lam=1.0)
    thetas = _run_windows(sched, [1.0, 2.0] + [0.5] * 6)
    assert thetas[1] == pytest.approx(0.125)
    assert sched.ceiling == 1.0
    assert thetas[-1] == 1.0  # grows back to the full multiplier step
    sched = AdaptiveMultiplier(lam=1.0)
    thetas = _run_windows(sched, [1.0, 0.5, 2.0] + [0.5] * 5)  # raised to 0.375, overshoot next window
    assert thetas[:3] == pytest.approx([0.25, 0.375, 0.1875])
    assert sched.ceiling == 1.0
    assert thetas[-1] == 1.0


def test_the_stall_rule_raises_lam_once_theta_is_at_the_ceiling():
    sched = AdaptiveMultiplier(lam=1.0)
    _run_windows(sched, [1.0, 0.5, 0.5, 1.0, 2.0])  # ceiling 0.3375, theta 0.28125, feasibility 0.5
    # stalled windows (ratio 1) with the primal step converged (gap <= lam ||r||^2): theta
    # doubles up to the ceiling, then lam doubles
    for expected_theta, expected_lam in [(0.3375, 1.0), (0.3375, 2.0)]:
        for _ in range(sched.window):
            sched.step(0, feas=0.5, lam=sched.lam, gap=0.0)  # the last window's value: ratio 1
        sched.penalty(sched.lam)
        assert (sched.theta, sched.lam) == pytest.approx((expected_theta, expected_lam))


def test_projections_lift_the_ceiling():
    sched = AdaptiveMultiplier(lam=1.0)
    _run_windows(sched, [1.0, 0.5, 0.5, 1.0, 2.0])
    assert sched.ceiling < 1.0
    sched.primal_steps_are_projections()
    assert sched.ceiling == 1.0 and sched.theta == 1.0
    _run_windows(sched, [0.5, 0.5])
    assert sched.theta == 1.0  # a good window never lowers theta


def _drive_dual(schedule, residuals, windows):
    """Run ``windows`` windows of the dual update y += eta_t r_t as the engine does, with r_t =
    ``residuals(t)`` and a large FW gap (no stall rule); return lam after each window."""
    y = np.zeros_like(residuals(0))
    lams, t = [], 0
    for _ in range(windows):
        for _ in range(schedule.window):
            r = residuals(t)
            eta = schedule.step(t, feas=float(np.linalg.norm(r)), lam=schedule.lam, gap=1e9, y=y, r=r)
            y += eta * r
            schedule.penalty(schedule.lam)
            t += 1
        lams.append(schedule.lam)
    return lams


@pytest.mark.parametrize("m", [2, 10_001])
def test_a_steady_dual_drift_raises_lam(m):
    """The same residual step after step (x has converged for each y, and y walks toward a far
    multiplier): y's displacement over a window equals its path length (coherence 1). The first
    window sets the reference, the next ``drift_windows`` (5) are coherent without halving the
    feasibility: lam x 4 at the end of window 6, again at window 11. With more rows than
    ``drift_sample`` the rule watches every k-th entry, and keeps no copy of the whole y."""
    residual = np.random.default_rng(3).standard_normal(m)
    sched = AdaptiveMultiplier(lam=1.0)
    lams = _drive_dual(sched, lambda t: residual, 11)
    assert lams == [1.0] * 5 + [4.0] * 5 + [16.0]
    assert sched._y_ref.size <= AdaptiveMultiplier.drift_sample


@pytest.mark.parametrize("shrink, raised", [(0.7, True), (0.05, False)])
def test_a_coherent_drift_too_slow_for_the_target_raises_lam(shrink, raised):
    """The residual keeps its direction (coherence 1) and shrinks by ``shrink`` per window, far above
    its target (1e-9). At 0.7 it halves across the 5 windows (0.17 of the first), so the old test
    (not halved) never fired, yet at that pace it would take 50 more windows: the pace test
    (feas * (feas / first) > target) raises lam x 4 at the end of window 6. At 0.05 the same pace
    reaches the target within 5 more windows: lam is kept."""
    direction = np.array([0.6, 0.8])
    sched = AdaptiveMultiplier(lam=1.0)
    y = np.zeros(2)
    lams = []
    for t in range(6 * sched.window):
        r = direction * shrink ** (t // sched.window)
        eta = sched.step(t, feas=float(np.linalg.norm(r)), lam=sched.lam, gap=1e9, y=y, r=r, feas_target=1e-9)
        y += eta * r
        sched.penalty(sched.lam)
        if (t + 1) % sched.window == 0:
            lams.append(sched.lam)
    assert lams == [1.0] * 5 + [4.0 if raised else 1.0]


def test_drift_path_counts_each_steps_own_residual():
    """y's path length sums eta_t ||r_t|| with each step's own ||r_t||, also at the window's last
    step, where the rule compares the window's best feasibility (not this step's)."""
    sched = AdaptiveMultiplier(lam=1.0)
    y = np.zeros(2)
    direction = np.array([0.6, 0.8])
    for t in range(2 * sched.window):
        r = direction * (1.0 + (t + 1) % 3)  # norms 2, 3, 1, ...: the window's best is 1, the last step's 2
        eta = sched.step(t, feas=float(np.linalg.norm(r)), lam=sched.lam, gap=1e9, y=y, r=r)
        y += eta * r
    # the second window just ended: its path restarted with the last step alone
    assert sched._drift_path == pytest.approx(eta * float(np.linalg.norm(r)), rel=1e-12)
    assert float(np.linalg.norm(r)) > 1.0  # not the window's best


def test_a_residual_that_turns_or_shrinks_does_not_raise_lam():
    """FW's own pace: the residual changes direction from step to step (zigzag between vertices),
    so y's displacement is a small part of its path; or the residual keeps its direction but
    halves every window (the dual step makes progress). Neither raises lam."""
    zigzag = [np.array([1.0, 0.2]), np.array([-1.0, 0.1])]
    sched = AdaptiveMultiplier(lam=1.0)
    assert _drive_dual(sched, lambda t: zigzag[t % 2], 20) == [1.0] * 20
    sched = AdaptiveMultiplier(lam=1.0)
    shrinking = lambda t: np.array([0.3, -0.4]) * 0.5 ** (t // sched.window)  # noqa: E731
    assert _drive_dual(sched, shrinking, 20) == [1.0] * 20


def _capped_portfolio(seed, n=60):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 4)) * 0.1
    Sigma = F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    cap = 2.5 / n
    x = fm.Variable(n)
    # the box on the slice x[:]: two copies tied by rows, whose dual step this file tests
    fw = fm.Problem(fm.Minimize(fm.quad_form(x, Sigma) - mu @ x), [fm.Simplex(x), fm.Box(x[:], 0.0, cap)])
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.quad_form(z, Sigma) - mu @ z), [z >= 0, cp.sum(z) == 1, z <= cap])
    ref.solve(solver="CLARABEL")
    return fw, x, ref, z


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_capped_portfolio_with_defaults_matches_clarabel(seed):
    """Simplex ∩ box: two copies tied by rows, the model whose dual step overshot again and again."""
    fw, x, ref, z = _capped_portfolio(seed)
    fw.solve()
    assert fw.status == "optimal", fw.stats
    scale = fw.stats.objective_scale
    assert abs(fw.value - ref.value) <= 1e-3 * max(abs(ref.value), 0.01 * scale)
    assert np.abs(x.value - z.value).max() < 1e-2


def _drive_oscillation(sched, center, amplitude, period, steps):
    """Feed ``sched`` y_t = center + amplitude cos(2 pi t / period) (y is the schedule's to move: where it
    moves y, the oscillation goes on around the same center from the moved point, at that amplitude);
    returns the moves as (step, largest entry of |y - center| before, after)."""
    y, moves, phase = center + amplitude, [], 0
    for t in range(steps):
        before = y.copy()
        sched.step(t, feas=1.0, lam=sched.lam, gap=1e9, y=y, r=np.ones_like(y))
        if not np.array_equal(y, before):
            moves.append((t, np.abs(before - center).max(), np.abs(y - center).max()))
            amplitude, phase = y - center, t + 1
        y = center + amplitude * np.cos(2 * np.pi * (t + 1 - phase) / period)
    return moves


def test_y_oscillating_around_a_point_is_moved_toward_it():
    """A slow oscillation (period 10 windows): each turn that closes a half-period moves y to its mean
    over that half-period, close to the center (off by the window it takes to see the turn): the
    oscillation shrinks at every move, to a tenth of its amplitude within 30 windows."""
    sched = AdaptiveMultiplier(lam=1.0)
    center, amplitude = np.array([2.0, -1.0, 0.5]), np.array([1.0, 0.5, -0.3])
    moves = _drive_oscillation(sched, center, amplitude, period=10 * sched.window, steps=30 * sched.window)
    assert len(moves) >= 2
    # no move before a full half-period (the first turn at t = 5 windows only starts one)
    assert moves[0][0] >= 10 * sched.window - 1
    assert all(after <= 0.5 * before for _, before, after in moves)
    assert moves[-1][2] < 0.1 * np.abs(amplitude).max()


def test_y_on_a_steady_course_or_a_fast_zigzag_is_not_moved():
    """A monotone approach never turns back; a zigzag turns back every window (half-periods shorter
    than ``oscillation_windows``): neither is moved."""
    for path in (lambda t: np.array([1.0, 2.0]) * (1 - 0.99 ** t),
                 lambda t: np.array([1.0, -1.0]) * (-1) ** (t // AdaptiveMultiplier.window)):
        sched = AdaptiveMultiplier(lam=1.0)
        # (the oscillation rule alone: the geometric approach is the extrapolation's to move, to its limit,
        # tests/test_dual_extrapolation.py)
        sched.extrapolation_q = (0.5, 0.5)
        for t in range(40 * sched.window):
            y = path(t)
            expected = y.copy()
            sched.step(t, feas=1.0, lam=sched.lam, gap=1e9, y=y, r=np.ones(2))
            assert np.array_equal(y, expected), t


def test_y_turning_back_while_lam_moves_is_not_moved():
    """The same slow oscillation while the penalty doubles every 2 windows (the start's moves of lam): y's
    course answers the new penalty, and is left alone."""
    sched = AdaptiveMultiplier(lam=1.0)
    center, amplitude, period = np.array([2.0, -1.0]), np.array([1.0, 0.5]), 10 * sched.window
    for t in range(30 * sched.window):
        y = center + amplitude * np.cos(2 * np.pi * t / period)
        expected = y.copy()
        sched.step(t, feas=1.0, lam=2.0 ** (t // (2 * sched.window)), gap=1e9, y=y, r=np.ones(2))
        assert np.array_equal(y, expected), t


def _hinge_tail_model(m, seed):
    """A 5 x 8 hinge budget with a redundant row (benchmarks/hinge_tails.py); at data seed 60 the optimum
    puts a hinge row at its kink and two entries of x inside the box."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 8))
    b = rng.standard_normal(5) * 0.5
    c = rng.standard_normal(8)
    x = m.Variable(8)
    return m.Problem(m.Minimize(c @ x), [x >= 0, x <= 0.35, m.sum(m.pos(A @ x - b)) <= 0.94,
                                         x[0] + x[1] <= 0.94]), x


@pytest.mark.parametrize("seed, limit", [(60, 5000), (95, 2000)])
def test_hinge_budget_whose_multipliers_oscillated_matches_clarabel(seed, limit):
    """Seed 60 ended at max_iter (10,000 iterations) with y circling its optimum, seed 95 took 3,302;
    with y moved to the center of its oscillations: "optimal" in 4,353 and 993 (benchmarks/RESULTS.md,
    "Oscillations of the multipliers on hinge budgets")."""
    fw, x = _hinge_tail_model(fm, seed)
    ref, z = _hinge_tail_model(cp, seed)
    ref.solve(solver=cp.CLARABEL)
    fw.solve()
    assert fw.status == "optimal", fw.stats
    assert fw.stats.iterations < limit
    assert abs(fw.value - ref.value) <= 1e-3 * max(abs(ref.value), 0.01 * fw.stats.objective_scale)
    assert np.abs(x.value - z.value).max() < 1e-2
