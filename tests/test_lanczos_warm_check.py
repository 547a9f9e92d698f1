"""The warm-started trace-norm LMO at the default ``lmo_tol`` is checked before "optimal" or a bound.

Lanczos warm-started on exact eigenvectors of the direction, while the
direction's new extreme eigenvector is orthogonal to them and above the old
value by a relative gap of 1e-4 or less, converges (zero residual) to the
old eigenpair whatever its tolerance. The FW gap is then understated by about
``radius * gap * sigma_1``. ``CheckedLmo`` (sets/trace_norm.py) offers the
engine's check (``fwmodel.engine.stopping.LmoCheck``) on every Lanczos-sized
ball. References: ``numpy.linalg.eigh`` of the direction and of the target
(the projection onto the ball in closed form: the eigenvalues projected onto
the simplex / L1 ball), and a solve with the check taken out.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.trace_norm import CheckedLmo, LanczosWarmStart, TraceNormBall


def _adversarial_direction(n, gap, seed, psd):
    """The warm start holds 12 exact eigenvectors (values 1.0 .. 0.8) of D; D's top (1 + gap) is new."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    values = rng.uniform(-0.5, 0.5, n)
    values[:12] = np.linspace(1.0, 0.8, 12)
    values[12] = 1.0 + gap
    D = (-1.0 if psd else 1.0) * (Q * values) @ Q.T  # the PSD ball's LMO seeks the most negative value
    warm = LanczosWarmStart()
    for j in range(12):
        warm.remember(Q[:, j])
    warm.leading = Q[:, 0]
    return 0.5 * (D + D.T), warm


def _lmo_minimum(D, radius, psd):
    """min over the ball of <D, S>, from eigh: r min(lambda_min, 0) (PSD), -r max |lambda| (nuclear)."""
    w = np.linalg.eigvalsh(0.5 * (D + D.T))
    return radius * min(w[0], 0.0) if psd else -radius * np.abs(w).max()


@pytest.mark.parametrize("psd", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_the_check_finds_what_the_warm_start_misses_and_tighten_hands_it_on(psd, seed):
    n, gap = 160, 1e-4
    D, warm = _adversarial_direction(n, gap, seed, psd)
    d = D.ravel()
    ball = fm.TraceNormBall(fm.Variable((n, n)), radius=1.0, psd=psd)  # default lmo_tol, Lanczos path (n > 150)
    lmo = ball.lmo_for_solve()
    assert isinstance(lmo, CheckedLmo)
    lmo._warm = warm
    best = _lmo_minimum(D, 1.0, psd)
    missed = lmo(d).dot(d)
    assert missed - best > 0.5 * gap * abs(best)  # the warm start's miss (what the check is for)
    assert lmo.exact(d).dot(d) == pytest.approx(best, rel=1e-9)
    lmo.tighten()  # the vector the check found goes into the warm start: the next call finds it
    assert lmo(d).dot(d) == pytest.approx(best, rel=1e-9)


def _near_tie_target(n, gap, seed):
    """C = Q diag(c) Q' with c_1 = 1, c_2 = 0.5 (1 + gap), the rest in [-0.3, 0.3]: with radius 0.5, one
    FW step reaches 0.5 q_1 q_1', where the gradient's new extreme eigenvector q_2 beats q_1 by ``gap``."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    c = rng.uniform(-0.3, 0.3, n)
    c[0], c[1] = 1.0, 0.5 * (1 + gap)
    C = (Q * c) @ Q.T
    return 0.5 * (C + C.T), c


def _projection_distance(c, radius, psd):
    """min ||X - C||_F^2 over the ball, C = Q diag(c) Q': the eigenvalues projected (sort-based)."""
    from fwmodel.sets.trace_norm import _project_nonnegative_l1

    p = _project_nonnegative_l1(np.maximum(c, 0.0), radius) if psd else \
        np.sign(c) * _project_nonnegative_l1(np.abs(c), radius)
    return float(np.sum((p - c) ** 2))


@pytest.mark.parametrize("psd", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_warm_start_miss_gives_no_false_optimum_or_bound(psd, seed):
    """Without the check the solve stopped "optimal" after one iteration with a bound of 1e-11 .. 1e-9 and a
    FW gap of 5e-5 left (f - f* = 1.25e-9 > bound); with it, the bound is at least the true FW gap and f - f*."""
    n, r, gap = 160, 0.5, 1e-4
    C, c = _near_tie_target(n, gap, seed)
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, r, psd=psd)])
    prob.solve(tol=1e-7)
    bound = prob.stats.suboptimality_bound
    G = 2.0 * (X.value - C)
    fw_gap = float(np.sum(X.value * G)) - _lmo_minimum(G, r, psd)
    f_star = _projection_distance(c, r, psd)
    slack = 1e-12 * f_star
    assert np.isfinite(bound)
    assert fw_gap <= bound + 1e-3 * fw_gap + slack, (fw_gap, bound)  # no constraint: the bound is the FW gap
    assert prob.value - f_star <= bound + slack, (prob.value - f_star, bound)
    if prob.status == "optimal":
        assert fw_gap <= 1e-7 * prob.stats.objective_scale * (1 + 1e-3) + slack


def _without_the_check(self):
    """TraceNormBall.lmo_for_solve as it was with no check at the default tolerance: the plain warm LMO."""
    warm = LanczosWarmStart()
    return lambda flat_direction: self._atom(flat_direction, warm)


@pytest.mark.parametrize("psd", [False, True])
def test_where_the_check_confirms_the_iterates_are_unchanged(psd, monkeypatch):
    """A Gaussian target projected onto the ball with default options: the same iterations, point and value as
    the solve with the check taken out; the check ran (it measured a gap), and the result is within the
    certified bound of the closed form."""
    n, r = 160, 3.0
    A = np.random.default_rng(7).standard_normal((n, n))
    C = 0.5 * (A + A.T) / np.sqrt(n)
    c = np.linalg.eigvalsh(C)

    def solve():
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, r, psd=psd)])
        prob.solve()
        return prob, X.value

    calls = []
    exact = CheckedLmo.exact
    monkeypatch.setattr(CheckedLmo, "exact", lambda self, d: calls.append(1) or exact(self, d))
    checked, x_checked = solve()
    assert len(calls) >= 2  # the setup's call and at least one check
    monkeypatch.setattr(TraceNormBall, "lmo_for_solve", _without_the_check)
    plain, x_plain = solve()
    assert checked.status == plain.status == "optimal"
    assert checked.stats.iterations == plain.stats.iterations
    assert np.array_equal(x_checked, x_plain)
    f_star = _projection_distance(c, r, psd)
    assert checked.value - f_star <= checked.stats.suboptimality_bound + 1e-12 * f_star
