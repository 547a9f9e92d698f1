"""A trace-norm ball with a loose ``lmo_tol``: "optimal" and the certified bound still hold.

Lanczos stopped at ``lmo_tol=1e-2`` can end on an eigenpair that is not the
extreme one, and its FW gap then understates the true one. The engine
re-measures those blocks' gaps with the LMO at the trusted tolerance before
it stops as optimal or reports a bound (``fwmodel.engine.stopping.LmoCheck``).
References: the closed-form projection onto the nuclear-norm ball (soft-
thresholded singular values), CVXPY + Clarabel, dense SVD / eigh.
``dense_threshold=2`` sends these small matrices to the Lanczos path.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.trace_norm import VERIFIED_LMO_TOL, CheckedLmo

LOOSE = dict(lmo_tol=1e-2, dense_threshold=2)


def _project_onto_nuclear_ball(C, radius):
    """Closed form: soft-threshold the singular values so they sum to at most ``radius``."""
    U, s, Vt = np.linalg.svd(C, full_matrices=False)
    if s.sum() > radius:
        u = np.sort(s)[::-1]
        css = np.cumsum(u) - radius
        rho = np.nonzero(u - css / np.arange(1, u.size + 1) > 0)[0][-1]
        s = np.maximum(s - css[rho] / (rho + 1), 0.0)
    return (U * s) @ Vt


def _assert_optimal_and_certified(prob, f_star, slack):
    """Status optimal, within ``tol`` of f* in the stopping rule's own units (tol * objective_scale),
    and a certified (finite) bound that holds: f - f* <= bound, up to ``slack``."""
    stats = prob.stats
    error = prob.value - f_star
    assert prob.status == "optimal"
    assert error <= 1e-4 * stats.objective_scale + slack, (error, stats.objective_scale)
    assert np.isfinite(stats.suboptimality_bound)
    assert error <= stats.suboptimality_bound + slack, (error, stats.suboptimality_bound)


@pytest.mark.parametrize("seed", range(8))
def test_loose_lanczos_stops_within_tol_of_the_closed_form(seed):
    """Projection of a 60 x 50 Gaussian matrix onto the nuclear ball of radius 5 (the model on which
    lmo_tol=1e-2 stopped "optimal" 81x tol from f*, with a bound of 4e-3 against an error of 0.25)."""
    C = np.random.default_rng(seed).standard_normal((60, 50))
    f_star = float(np.sum((_project_onto_nuclear_ball(C, 5.0) - C) ** 2))
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 5.0, **LOOSE)])
    prob.solve()
    _assert_optimal_and_certified(prob, f_star, 1e-9 * f_star)


def _nuclear_model(lib, C, radius, l1_radius=None, **options):
    X = (fm if lib == "fm" else cp).Variable(C.shape)
    if lib == "fm":
        constraints = [fm.TraceNormBall(X, radius, **options)]
        if l1_radius is not None:
            constraints.append(fm.L1Ball(X, l1_radius))
        return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), constraints)
    constraints = [cp.normNuc(X) <= radius]
    if l1_radius is not None:
        constraints.append(cp.sum(cp.abs(X)) <= l1_radius)
    return cp.Problem(cp.Minimize(cp.sum_squares(X - C)), constraints)


@pytest.mark.parametrize("seed, with_l1", [(0, False), (1, False), (2, False), (3, False), (0, True), (1, True)])
def test_loose_lanczos_against_clarabel(seed, with_l1):
    """30 x 24: the nuclear ball alone (before the check: "optimal" 40-90x tol from Clarabel's
    optimum, bounds below the error), and intersected with a binding L1 ball (tied copies; before
    the check the bound was not certified, NaN)."""
    C = np.random.default_rng(seed).standard_normal((30, 24))
    radius = 0.1 * float(np.linalg.svd(C, compute_uv=False).sum())
    l1_radius = 1.2 * radius if with_l1 else None
    reference = _nuclear_model("cp", C, radius, l1_radius)
    f_star = reference.solve(solver="CLARABEL")
    prob = _nuclear_model("fm", C, radius, l1_radius, **LOOSE)
    prob.solve()
    _assert_optimal_and_certified(prob, f_star, 1e-6 * abs(f_star))  # Clarabel's own accuracy


@pytest.mark.parametrize("max_iter", [1, 2, 3])
def test_loose_lanczos_bound_holds_at_max_iter(max_iter):
    """A solve that ends at max_iter reports a bound checked at the trusted tolerance: it holds."""
    C = np.random.default_rng(4).standard_normal((60, 50))
    f_star = float(np.sum((_project_onto_nuclear_ball(C, 5.0) - C) ** 2))
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 5.0, **LOOSE)])
    prob.solve(max_iter=max_iter)
    bound = prob.stats.suboptimality_bound
    assert np.isfinite(bound) and prob.value - f_star <= bound + 1e-9 * f_star


@pytest.mark.parametrize("shape, kwargs", [((40, 30), {}), ((40, 40), {}), ((40, 40), dict(symmetric=True)),
                                           ((40, 40), dict(psd=True))])
def test_checked_lmo_exact_matches_dense_factorization(shape, kwargs):
    """``CheckedLmo.exact``: <D, S> equals the dense LMO value (-r sigma_1, or r min(lambda_min, 0) for psd)."""
    ball = fm.TraceNormBall(fm.Variable(shape), radius=2.0, **LOOSE, **kwargs)
    lmo = ball.lmo_for_solve()
    assert isinstance(lmo, CheckedLmo)
    for seed in range(5):
        D = np.random.default_rng(seed).standard_normal(shape)
        if kwargs:
            D = D + D.T
        if kwargs.get("psd"):
            expected = 2.0 * min(np.linalg.eigvalsh(D)[0], 0.0)
        elif kwargs.get("symmetric"):
            expected = -2.0 * np.abs(np.linalg.eigvalsh(D)).max()
        else:
            expected = -2.0 * np.linalg.svd(D, compute_uv=False)[0]
        value = lmo.exact(D.ravel()).dot(D.ravel())
        assert value == pytest.approx(expected, rel=1e-9)


def test_checked_lmo_tighten_moves_the_solve_calls_to_the_trusted_tolerance():
    lmo = fm.TraceNormBall(fm.Variable((40, 30)), **LOOSE).lmo_for_solve()
    assert lmo.tol == 1e-2
    lmo.tighten()
    assert lmo.tol == VERIFIED_LMO_TOL


@pytest.mark.parametrize("kwargs", [{}, dict(lmo_tol=VERIFIED_LMO_TOL, dense_threshold=2), dict(lmo_tol=1e-2)])
def test_no_check_where_the_lmo_is_trusted(kwargs):
    """The default tolerance (or tighter), or a matrix on the dense path: the plain LMO, no check."""
    lmo = fm.TraceNormBall(fm.Variable((40, 30)), **kwargs).lmo_for_solve()
    assert not isinstance(lmo, CheckedLmo) and not hasattr(lmo, "exact")


@pytest.mark.parametrize("stop_at", [1, 2])
def test_loose_lanczos_bound_holds_when_the_callback_stops(stop_at):
    """Another ending than "optimal" or max_iter (a callback's stop): the last gap is checked too."""
    C = np.random.default_rng(5).standard_normal((60, 50))
    f_star = float(np.sum((_project_onto_nuclear_ball(C, 5.0) - C) ** 2))
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 5.0, **LOOSE)])
    prob.solve(callback=lambda state: state.iteration < stop_at, verbose=True)
    assert prob.status == "interrupted"
    bound = prob.stats.suboptimality_bound
    assert np.isfinite(bound) and prob.value - f_star <= bound + 1e-9 * f_star


@pytest.mark.parametrize("seed", [0, 1])
def test_loose_lanczos_on_an_affine_expression(seed):
    """TraceNormBall(X - X0) at lmo_tol=1e-2: the projection of C onto X0 + the nuclear ball, in closed form."""
    rng = np.random.default_rng(seed)
    C, X0 = rng.standard_normal((60, 50)), rng.standard_normal((60, 50))
    f_star = float(np.sum((_project_onto_nuclear_ball(C - X0, 5.0) - (C - X0)) ** 2))
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X - X0, 5.0, **LOOSE)])
    prob.solve()
    _assert_optimal_and_certified(prob, f_star, 1e-9 * f_star)
