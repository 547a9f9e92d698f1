"""Vertex steps on the K-sparse polytope: pairwise under step="auto" (KSparsePolytope.auto_active_set_step).

References: the closed-form projection onto ``{||x||_inf <= c, ||x||_1 <= k c}``
(``sign(y) clip(|y| - theta, 0, c)`` with theta found by bisection) and
CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.ksparse import KSparsePolytope

cp = pytest.importorskip("cvxpy")


def closed_form_projection(y, k, c):
    """Euclidean projection onto the K-sparse polytope: x_i = sign(y_i) clip(|y_i| - theta, 0, c), theta >= 0 the
    smallest with ||x||_1 <= k c (the KKT conditions of the separable problem), by bisection."""
    a = np.abs(y)
    l1 = lambda theta: np.clip(a - theta, 0.0, c).sum()  # noqa: E731 (nonincreasing in theta)
    if l1(0.0) <= k * c:
        return np.sign(y) * np.clip(a, 0.0, c)
    lo, hi = 0.0, float(a.max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if l1(mid) > k * c else (lo, mid)
    return np.sign(y) * np.clip(a - hi, 0.0, c)


def taken(prob):
    return {kind for kind, count in prob.stats.step_counts.items() if count}


def with_bpcg(solve):
    """``solve()`` with BPCG on the K-sparse polytope under step="auto" (the engine's choice for other polytopes)."""
    original = KSparsePolytope.auto_active_set_step
    KSparsePolytope.auto_active_set_step = lambda self: None
    try:
        return solve()
    finally:
        KSparsePolytope.auto_active_set_step = original


def test_projection_without_rows_keeps_the_local_phase():
    """A projection onto the polytope (no rows, isotropic objective): the block hands over to BPCG's local phase
    once its curvature checks pass, and reaches the closed form in about BPCG's iterations (pairwise steps
    alone took up to 5x as many: 148 against 28 at seed 0)."""
    n, k, c = 30, 6, 0.4
    ours, theirs = 0, 0
    for seed in range(3):
        y = np.random.default_rng(seed).standard_normal(n) * 0.5
        expected = closed_form_projection(y, k, c)
        assert np.abs(expected).sum() == pytest.approx(k * c)  # the L1 budget binds: a point inside a face
        counts = []
        for bpcg in (False, True):
            x = fm.Variable(n)
            prob = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [fm.KSparsePolytope(x, k, c)])
            if bpcg:
                with_bpcg(lambda: prob.solve(tol=1e-9, max_iter=20000))
            else:
                prob.solve(tol=1e-9, max_iter=20000)
            assert prob.status == "optimal", (seed, bpcg)
            np.testing.assert_allclose(x.value, expected, atol=1e-6)
            counts.append(prob.stats.iterations)
        ours, theirs = ours + counts[0], theirs + counts[1]
    assert ours <= 1.5 * theirs, (ours, theirs)


def _least_squares(seed, m=30, n=40, k=6, c=0.3):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    truth = np.zeros(n)
    truth[rng.choice(n, 2 * k, replace=False)] = rng.uniform(-2.0, 2.0, 2 * k) * c
    b = A @ truth + 0.1 * rng.standard_normal(m)
    return A, b, k, c


def test_pairwise_steps_take_fewer_iterations_than_bpcg_and_reach_clarabel():
    """Least squares over the polytope, no rows: "auto" (pairwise) against "auto" with BPCG, both at Clarabel's
    value. A vertex moves k entries at once; BPCG's FW steps keep adding such vertices (the set's docstring)."""
    ours, theirs = 0, 0
    for seed in range(4):
        A, b, k, c = _least_squares(seed)
        z = cp.Variable(A.shape[1])
        ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm_inf(z) <= c, cp.norm1(z) <= k * c])
        ref.solve(solver="CLARABEL")
        counts = []
        for bpcg in (False, True):
            x = fm.Variable(A.shape[1])
            prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.KSparsePolytope(x, k, c)])
            # (face_step=False: the vertex steps alone are compared; the face step is tested in test_face_step.py)
            if bpcg:
                with_bpcg(lambda: prob.solve(tol=1e-7, max_iter=50000, face_step=False))
            else:
                prob.solve(tol=1e-7, max_iter=50000, face_step=False)
                assert taken(prob) <= {"pairwise", "drop"}, prob.stats.step_counts
            assert prob.status == "optimal", (seed, bpcg)
            assert prob.value == pytest.approx(ref.value, rel=1e-5, abs=1e-6), (seed, bpcg)
            counts.append(prob.stats.iterations)
        ours, theirs = ours + counts[0], theirs + counts[1]
    assert ours < 0.8 * theirs, (ours, theirs)


def test_projection_with_rows_matches_clarabel():
    """A projection over the polytope with equality and inequality rows (trust fuzz model 1530's shape)."""
    rng = np.random.default_rng(3)
    n, k, c = 25, 8, 0.4
    target = rng.standard_normal(n) * c
    E, G = rng.standard_normal((3, n)), rng.standard_normal((2, n))
    point = closed_form_projection(rng.standard_normal(n) * c, k, c) * 0.5
    h = G @ point + 0.1
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)),
                      [fm.KSparsePolytope(x, k, c), E @ x == E @ point, G @ x <= h])
    prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=50000)
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(z - target)),
                     [cp.norm_inf(z) <= c, cp.norm1(z) <= k * c, E @ z == E @ point, G @ z <= h])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert "pairwise" in taken(prob)
    assert prob.value == pytest.approx(ref.value, rel=1e-5)
    np.testing.assert_allclose(x.value, z.value, atol=2e-3)  # strongly convex: the point too
