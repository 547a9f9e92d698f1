"""The trace-norm LMO's Lanczos on repeated extreme eigenvalues.

A warm start built from earlier LMO vectors and one fixed random vector
could lie wholly outside a repeated extreme eigenspace: the Krylov space was
then invariant without it, Lanczos reported the wrong eigenvalue as
converged, and the solve ended "optimal" 2-3 % above f* with a bound of
1e-15. Lanczos now continues from a random vector after a breakdown, and
every warm start carries a random vector drawn anew for the call.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.trace_norm import lanczos_extreme
from _benchmarks import benchmark


def _f_star(w, psd, r=3.0):
    """The closed form (benchmarks/lanczos_repeated.py's ``f_star``): the eigenvalues (psd) or their
    magnitudes projected onto {t >= 0, sum t <= r}."""
    return benchmark("lanczos_repeated").f_star(w, "psd" if psd else "trace", r)


def _rotated(w, seed):
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((w.size, w.size)))
    A = (Q * w) @ Q.T
    return 0.5 * (A + A.T), Q


# ------------------------------------------------ lanczos_extreme: adversarial starts
@pytest.mark.parametrize("which", ["SA", "LA", "LM"])
def test_start_on_an_eigenvector_of_another_eigenvalue(which):
    """The start is an eigenvector (the Krylov space is invariant at once): the answer is still eigh's."""
    n = 120
    w = np.concatenate([np.full(5, -2.0), np.full(50, -0.5), np.zeros(50), np.full(15, 1.5)])
    A, Q = _rotated(w, 1)
    start = Q[:, 10]  # eigenvalue -0.5
    theta, u, _, converged = lanczos_extreme(lambda v: A @ v, start, which, tol=1e-8)
    exact = np.linalg.eigvalsh(A)
    expected = {"SA": exact[0], "LA": exact[-1], "LM": exact[np.argmax(np.abs(exact))]}[which]
    assert converged
    assert theta == pytest.approx(expected, abs=1e-10)
    assert np.linalg.norm(A @ u - theta * u) <= 1e-7


def test_start_orthogonal_to_a_repeated_extreme_eigenspace():
    """A start in the span of two non-extreme eigenspaces breaks down after two products;
    the smallest eigenvalue (multiplicity 7) is found anyway."""
    n = 90
    w = np.concatenate([np.full(7, -3.0), np.full(40, 1.0), np.full(43, 0.25)])
    A, Q = _rotated(w, 2)
    start = Q[:, 7] + Q[:, 60]  # eigenvalues 1.0 and 0.25, nothing along -3
    theta, u, _, converged = lanczos_extreme(lambda v: A @ v, start, "SA", tol=1e-8)
    assert converged and theta == pytest.approx(np.linalg.eigvalsh(A)[0], abs=1e-10)
    assert np.linalg.norm(Q[:, :7].T @ u) == pytest.approx(1.0, abs=1e-8)  # u lies in the eigenspace of -3


def test_low_rank_matrix_from_its_range():
    """A rank-3 matrix, started in its range: the Krylov space is its range (breakdown), and the
    zero eigenvalues beyond it are the smallest (SA) only when the range's are positive."""
    rng = np.random.default_rng(3)
    U = np.linalg.qr(rng.standard_normal((80, 3)))[0]
    A = (U * np.array([2.0, 1.0, 0.5])) @ U.T
    theta, _, count, converged = lanczos_extreme(lambda v: A @ v, U @ np.ones(3), "SA", tol=1e-8)
    assert converged and theta == pytest.approx(0.0, abs=1e-12)
    assert count <= 10  # the random run after the breakdown stops at once (the rest is A's null space)
    theta, _, _, converged = lanczos_extreme(lambda v: A @ v, U @ np.ones(3), "LA", tol=1e-8)
    assert converged and theta == pytest.approx(2.0, abs=1e-10)


def test_random_start_is_unchanged_when_nothing_breaks_down():
    """Without a breakdown the run is the same (same products, same answer) whatever ``rng``."""
    rng = np.random.default_rng(4)
    A, _ = _rotated(rng.uniform(-1, 1, 150), 4)
    v0 = rng.standard_normal(150)
    a = lanczos_extreme(lambda v: A @ v, v0, "LM", tol=1e-8, rng=np.random.default_rng(0))
    b = lanczos_extreme(lambda v: A @ v, v0, "LM", tol=1e-8, rng=np.random.default_rng(99))
    assert a[0] == b[0] and a[2] == b[2] and np.array_equal(a[1], b[1])


# ------------------------------------------------ solves above the dense threshold
def _solve(C, psd=False, symmetric=False, **set_options):
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)),
                      [fm.TraceNormBall(X, 3.0, psd=psd, symmetric=symmetric, **set_options)])
    prob.solve()
    return prob


def _assert_optimal_and_certified(prob, f_star):
    scale = prob.stats.objective_scale
    assert prob.status == "optimal"
    assert prob.value - f_star <= 1e-4 * scale
    bound = prob.stats.suboptimality_bound
    assert np.isfinite(bound) and prob.value - f_star <= bound + 1e-6 * scale, (prob.value - f_star, bound)


@pytest.mark.parametrize("psd,symmetric", [(True, False), (False, True), (False, False)])
def test_projector_151_matches_the_dense_path(psd, symmetric):
    """The reviewer's case: 71.25 "optimal" with a bound of 4e-16; f* = 69.12 (the dense path's value)."""
    n = 151
    w = np.array([1.0] * (n // 2) + [0.0] * (n - n // 2))
    prob = _solve(np.diag(w), psd, symmetric)
    dense = _solve(np.diag(w), psd, symmetric, dense_threshold=200)
    assert dense.value == pytest.approx(_f_star(w, psd), rel=1e-9)
    _assert_optimal_and_certified(prob, _f_star(w, psd))


@pytest.mark.parametrize("shape", [(160, 200), (200, 160)])
def test_rectangular_nuclear_ball(shape):
    C = np.zeros(shape)
    k = min(shape) // 2
    C[np.arange(k), np.arange(k)] = 1.0
    prob = _solve(C)
    _assert_optimal_and_certified(prob, _f_star(np.linalg.svd(C, compute_uv=False), psd=False))


@pytest.mark.parametrize("eps,rotated", [(0.0, True), (1e-10, False), (1e-10, True), (1e-6, True)])
def test_perturbed_and_rotated_projector(eps, rotated):
    n = 170
    rng = np.random.default_rng(int(eps * 1e12) + rotated)
    w = np.array([1.0] * (n // 2) + [0.0] * (n - n // 2)) + eps * rng.standard_normal(n)
    C = _rotated(w, 5)[0] if rotated else np.diag(w)
    _assert_optimal_and_certified(_solve(C, psd=True), _f_star(w, psd=True))


@pytest.mark.parametrize("psd,symmetric", [(True, False), (False, True), (False, False)])
def test_three_tied_eigenvalues(psd, symmetric):
    n = 160
    w = np.random.default_rng(6).uniform(-0.3, 0.3, n)
    w[:3] = 1.0
    C, _ = _rotated(w, 6)
    _assert_optimal_and_certified(_solve(C, psd, symmetric), _f_star(w, psd))


@pytest.mark.parametrize("options", [dict(rank_k=True), dict(rank_k=False), dict(inface=False),
                                     dict(projection=False)])
def test_projector_under_solver_options(options):
    n = 160
    w = np.array([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - np.diag(w))), [fm.TraceNormBall(X, 3.0, psd=True)])
    prob.solve(**options)
    _assert_optimal_and_certified(prob, _f_star(w, psd=True))


def test_forced_lanczos_against_clarabel():
    """The PSD trace ball at n = 31 with the Lanczos path forced (dense_threshold=2), against
    CVXPY + Clarabel (it gave 11.25 against 9.6 before)."""
    n = 31
    C = np.diag([1.0] * (n // 2) + [0.0] * (n - n // 2))
    prob = _solve(C, psd=True, dense_threshold=2)
    Z = cp.Variable((n, n), PSD=True)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.trace(Z) <= 3.0])
    reference.solve(solver="CLARABEL")
    _assert_optimal_and_certified(prob, reference.value - 1e-6)
    assert prob.value == pytest.approx(reference.value, rel=1e-5)


@pytest.mark.parametrize("symmetric", [True, False])
def test_forced_lanczos_nuclear_small(symmetric):
    """The symmetric and plain nuclear balls at n = 31, Lanczos forced, against the closed form."""
    n = 31
    w = np.array([1.0] * (n // 2) + [0.0] * (n - n // 2))
    _assert_optimal_and_certified(_solve(np.diag(w), symmetric=symmetric, dense_threshold=2), _f_star(w, psd=False))


def test_solves_stay_reproducible():
    """The random vectors are drawn from a generator seeded per solve: a re-solve repeats the iterates."""
    n = 170
    w = np.array([1.0] * (n // 2) + [0.0] * (n - n // 2))
    C, _ = _rotated(w, 7)
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 3.0, psd=True)])
    prob.solve(projection=False, max_iter=30)
    first, value = X.value.copy(), prob.value
    prob.solve(projection=False, max_iter=30)
    assert prob.value == value and np.array_equal(X.value, first)
