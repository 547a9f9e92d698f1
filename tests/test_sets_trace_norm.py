"""The trace-norm ball and the PSD trace ball: Lanczos LMOs against full
SVD / eigendecompositions, on the dense, symmetric, rectangular and PSD paths."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm

try:  # shared helpers; tests/ may or may not be a package
    from .test_sets import check_vertex
except ImportError:
    from test_sets import check_vertex

seeds = st.integers(0, 2**32 - 1)


def unit_columns(rng, n, k):
    A = rng.standard_normal((n, k))
    return A / np.linalg.norm(A, axis=0)


def nuclear_points(rng, shape, radius, count=15):
    """sum_i w_i a_i b_i^T with unit a_i, b_i and sum w_i <= radius (no SVD needed)."""
    out = []
    for _ in range(count):
        k = int(rng.integers(1, min(shape) + 2))
        w = rng.dirichlet(np.ones(k)) * radius * rng.uniform(0, 1)
        out.append((unit_columns(rng, shape[0], k) * w) @ unit_columns(rng, shape[1], k).T)
    return out


def psd_points(rng, n, radius, count=15):
    out = []
    for _ in range(count):
        W = rng.standard_normal((n, rng.integers(1, n + 1)))
        P = W @ W.T
        out.append(P * (radius * rng.uniform(0, 1) / np.trace(P)))
    return out


def symmetric_with_gap(rng, n, top):
    """A symmetric matrix whose eigenvalue of largest |.| is ``top`` (well separated)."""
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = rng.uniform(-1, 1, n)
    w[0] = top
    return (Q * w) @ Q.T, Q[:, 0]


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 7), n=st.integers(1, 7), seed=seeds, radius=st.sampled_from([0.0, 1.0, 2.5]))
def test_small_dense_path(m, n, seed, radius):
    rng = np.random.default_rng(seed)
    S = fm.TraceNormBall(fm.Variable((m, n)), radius=radius)
    pts = nuclear_points(rng, (m, n), radius)
    for D in [rng.standard_normal((m, n)), np.zeros((m, n))]:
        s = check_vertex(S, D, pts, rng, tol=1e-8)
        sigma = np.linalg.svd(D, compute_uv=False)[0]
        assert np.vdot(D, s) == pytest.approx(-radius * sigma, abs=1e-10)
    if m == n:  # symmetric path, dense
        A = rng.standard_normal((n, n))
        D = A + A.T
        s = check_vertex(S, D, pts, rng, tol=1e-8)
        assert np.vdot(D, s) == pytest.approx(-radius * np.abs(np.linalg.eigvalsh(D)).max(), abs=1e-10)
        np.testing.assert_allclose(s, s.T, atol=1e-12)


@pytest.mark.parametrize("shape", [(60, 90), (120, 70), (80, 80)])
def test_rectangular_lanczos_matches_full_svd(shape):
    rng = np.random.default_rng(sum(shape))
    S = fm.TraceNormBall(fm.Variable(shape), radius=2.0, lmo_tol=1e-10)
    # a clear gap between the first two singular values
    U, _ = np.linalg.qr(rng.standard_normal((shape[0], min(shape))))
    V, _ = np.linalg.qr(rng.standard_normal((shape[1], min(shape))))
    sv = np.sort(rng.uniform(0, 1, min(shape)))[::-1]
    sv[0] = 3.0
    D = (U * sv) @ V.T
    D[0, 1] += 1e-3  # not symmetric, even when square
    s = S.lmo(D)
    Uf, sf, Vtf = np.linalg.svd(D)
    np.testing.assert_allclose(s, -2.0 * np.outer(Uf[:, 0], Vtf[0]), atol=1e-6)
    assert np.vdot(D, s) == pytest.approx(-2.0 * sf[0], rel=1e-9)
    atom = S.lmo_atom(D.ravel())
    assert isinstance(atom, fm.RankOneAtom)
    np.testing.assert_allclose(atom.to_dense(), s.ravel(), atol=1e-6)
    check_vertex(S, D, nuclear_points(rng, shape, 2.0, 3), rng, tol=1e-8, atom_atol=1e-6)


@pytest.mark.parametrize("top", [5.0, -5.0])
def test_symmetric_lanczos_path(top):
    rng = np.random.default_rng(3)
    n = 100
    D, u = symmetric_with_gap(rng, n, top)
    S = fm.TraceNormBall(fm.Variable((n, n)), radius=1.5, lmo_tol=1e-10)
    s = S.lmo(D)
    # minimizer of <D, S> over the nuclear ball: -r sign(lambda) u u^T
    np.testing.assert_allclose(s, -1.5 * np.sign(top) * np.outer(u, u), atol=1e-6)
    assert np.vdot(D, s) == pytest.approx(-1.5 * abs(top), rel=1e-9)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    atom = S.lmo_atom(D.ravel())
    np.testing.assert_allclose(atom.u, atom.v)  # the symmetric path: u u^T
    check_vertex(S, D, nuclear_points(rng, (n, n), 1.5, 3), rng, tol=1e-8, atom_atol=1e-6)


def test_nearly_symmetric_direction_uses_symmetric_part():
    rng = np.random.default_rng(4)
    D, _ = symmetric_with_gap(rng, 70, 4.0)
    D = D + 1e-14 * rng.standard_normal(D.shape)  # rounding-level asymmetry
    S = fm.TraceNormBall(fm.Variable(D.shape))
    assert np.vdot(D, S.lmo(D)) == pytest.approx(-np.linalg.svd(D, compute_uv=False)[0], rel=1e-8)


def test_warm_start_reuse_and_reset():
    rng = np.random.default_rng(5)
    n = 90
    S = fm.TraceNormBall(fm.Variable((n, n + 10)), radius=1.0, lmo_tol=1e-10)
    D = rng.standard_normal((n, n + 10))
    D += 4.0 * np.outer(rng.standard_normal(n), rng.standard_normal(n + 10)) / n
    assert S._warm.leading is None
    s1 = S.lmo(D)
    v0 = S._warm.leading.copy()
    s2 = S.lmo(D)  # warm-started from the previous singular vector
    np.testing.assert_allclose(s2, s1, atol=1e-7)
    # the stored vector is the leading singular vector of the Gram side
    np.testing.assert_allclose(abs(v0 @ np.linalg.svd(D)[0][:, 0]), 1.0, atol=1e-7)
    # a nearby direction, warm-started, still gets the exact vertex
    E = D + 1e-2 * rng.standard_normal(D.shape)
    Uf, _, Vtf = np.linalg.svd(E)
    np.testing.assert_allclose(S.lmo(E), -np.outer(Uf[:, 0], Vtf[0]), atol=1e-6)
    S.reset()
    assert S._warm.leading is None
    np.testing.assert_allclose(S.lmo(D), s1, atol=1e-7)


def test_forced_lanczos_matches_dense_on_small_matrices():
    rng = np.random.default_rng(6)
    for shape in [(8, 8), (5, 9), (9, 5)]:
        D = rng.standard_normal(shape)
        lanczos = fm.TraceNormBall(fm.Variable(shape), dense_threshold=0, lmo_tol=1e-12)
        dense = fm.TraceNormBall(fm.Variable(shape))
        assert np.vdot(D, lanczos.lmo(D)) == pytest.approx(np.vdot(D, dense.lmo(D)), rel=1e-9)
    A = rng.standard_normal((8, 8))
    D = A + A.T
    for psd in (False, True):
        lanczos = fm.TraceNormBall(fm.Variable((8, 8)), psd=psd, dense_threshold=0, lmo_tol=1e-12)
        dense = fm.TraceNormBall(fm.Variable((8, 8)), psd=psd)
        np.testing.assert_allclose(lanczos.lmo(D), dense.lmo(D), atol=1e-8)


@pytest.mark.parametrize("n", [6, 80])
def test_psd_trace_ball(n):
    rng = np.random.default_rng(n)
    r = 2.0
    S = fm.TraceNormBall(fm.Variable((n, n)), radius=r, psd=True, lmo_tol=1e-10)
    assert not S.is_polytope
    pts = psd_points(rng, n, r, 3)
    # symmetric direction with a well-separated most negative eigenvalue
    D, u = symmetric_with_gap(rng, n, -3.0)
    s = check_vertex(S, D, pts, rng, tol=1e-8, atom_atol=1e-6)
    np.testing.assert_allclose(s, r * np.outer(u, u), atol=1e-6)
    # non-symmetric direction: the LMO only sees sym(D)
    A = rng.standard_normal((n, n))
    s = check_vertex(S, A, pts, rng, tol=1e-8, atom_atol=1e-6)
    lam = np.linalg.eigvalsh(0.5 * (A + A.T))[0]
    assert np.vdot(A, s) == pytest.approx(r * min(lam, 0.0), rel=1e-8)
    # positive definite direction: the origin is the minimizer
    W = rng.standard_normal((n, n))
    P = W @ W.T + np.eye(n)
    s = check_vertex(S, P, pts, rng)
    np.testing.assert_array_equal(s, 0.0)
    assert S.contains(S.initial_atom().to_dense().reshape(n, n))


def test_psd_contains():
    S = fm.TraceNormBall(fm.Variable((2, 2)), radius=1.0, psd=True)
    assert S.contains(np.diag([0.5, 0.5]))
    assert not S.contains(np.diag([1.0, -0.1]))  # not PSD
    assert not S.contains(np.diag([0.7, 0.7]))  # trace too large
    assert not S.contains(np.array([[0.3, 0.1], [0.0, 0.3]]))  # not symmetric
    B = fm.TraceNormBall(fm.Variable((2, 2)), radius=1.0)
    assert B.contains(np.diag([1.0, -0.0]))
    assert not B.contains(np.diag([0.6, -0.6]))
    assert B.diameter() == 2.0 and S.diameter() == pytest.approx(np.sqrt(2))
