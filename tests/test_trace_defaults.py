"""L1 ball ∩ trace-norm ball with both balls binding: the defaults reach "optimal".

The models of benchmarks/trace_defaults.py at small sizes, against CVXPY +
Clarabel: with FW steps alone these solves used to end at max_iter (the
solution's trace-norm copy has high rank and its L1 copy many entries, while
a FW step adds one atom); projection="auto" now takes projection steps on
both copies where a projection costs a few iterations
(fwmodel.engine.projection_choice).
"""
import numpy as np
import pytest

import fwmodel as fm
from _benchmarks import benchmark

cp = pytest.importorskip("cvxpy")


# the benchmark's generators: rank 3 + sparse + noise (not symmetric), radii half of C's norms; the paper's
# covariance problem, radii the true norms
lrs_data, cov_data = benchmark("trace_defaults").lrs_data, benchmark("trace_defaults").cov_data


def reference(C, r1, r2):
    X = cp.Variable(C.shape)
    l1, nuc = cp.sum(cp.abs(X)) <= r1, cp.normNuc(X) <= r2
    prob = cp.Problem(cp.Minimize(cp.sum_squares(X - C)), [l1, nuc])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, float(l1.dual_value), float(nuc.dual_value)


@pytest.mark.parametrize("make, d, seed", [(lrs_data, 20, 0), (lrs_data, 24, 1), (cov_data, 24, 0), (cov_data, 20, 2)])
def test_defaults_reach_optimal_with_both_balls_binding(make, d, seed):
    C, r1, r2 = make(d, seed)
    f_star, dual_l1, dual_nuc = reference(C, r1, r2)
    assert dual_l1 > 1e-3 and dual_nuc > 1e-3  # both constraints bind
    X = fm.Variable((d, d), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)])
    value = prob.solve()
    assert prob.status == "optimal"
    assert abs(value - f_star) <= 1e-3 * abs(f_star)
    assert np.abs(X.value).sum() <= r1 * (1 + 1e-3)
    assert np.linalg.svd(X.value, compute_uv=False).sum() <= r2 * (1 + 1e-3)


def test_trace_norm_projection_of_a_symmetric_point_takes_the_eigenvalue_path():
    """project_flat of a symmetric point (eigh) equals the SVD-based projection, also PSD and symmetric sets."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((12, 12))
    S = A + A.T
    for kwargs in ({}, {"symmetric": True}, {"psd": True}):
        ball = fm.TraceNormBall(fm.Variable((12, 12)), radius=3.0, **kwargs)
        P = ball.project_flat(S.ravel()).reshape(12, 12)
        assert np.allclose(P, ball.project(S), atol=1e-10)
        Xc = cp.Variable((12, 12), PSD=True) if kwargs.get("psd") else cp.Variable((12, 12))
        cons = [cp.trace(Xc) <= 3.0] if kwargs.get("psd") else [cp.normNuc(Xc) <= 3.0]
        cp.Problem(cp.Minimize(cp.sum_squares(Xc - S)), cons).solve(solver=cp.CLARABEL)
        assert np.allclose(P, Xc.value, atol=1e-4)
    # an asymmetric point on the plain ball: the SVD path
    ball = fm.TraceNormBall(fm.Variable((12, 12)), radius=3.0)
    P = ball.project_flat(A.ravel()).reshape(12, 12)
    assert np.linalg.svd(P, compute_uv=False).sum() == pytest.approx(3.0)
    assert np.allclose(P, ball.project(A))


@pytest.mark.parametrize("n", [12, 700])  # 700: several tiles of the in-place passes, and the in-place eigh
def test_trace_norm_projection_in_place_gives_the_same_numbers(n):
    """project_flat(x, out=x) (the symmetric part and the projection formed in x's own array, tile by
    tile; from 2^14 entries on, also the eigendecomposition and the rebuilt V diag(w) V') against the
    full-SVD projection, and the plain call's numbers (exactly below 2^14 entries, to rounding above,
    exactly symmetric); an asymmetric point (the SVD path) is written into out as well."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    ball = fm.TraceNormBall(fm.Variable((n, n)), radius=3.0)
    for point, symmetric in (((A + A.T).ravel(), True), (A.ravel(), False)):
        fresh = ball.project_flat(point.copy())
        x = point.copy()
        assert ball.project_flat(x, out=x) is x
        if n * n < (1 << 14) or not symmetric:
            np.testing.assert_array_equal(x, fresh)
        else:
            np.testing.assert_allclose(x, fresh, rtol=0, atol=1e-12 * np.abs(fresh).max())
            np.testing.assert_array_equal(x.reshape(n, n), x.reshape(n, n).T)
        U, s, Vt = np.linalg.svd(point.reshape(n, n))
        u = np.sort(s)[::-1]
        css = np.cumsum(u) - 3.0
        rho = np.flatnonzero(u - css / np.arange(1, n + 1) > 0)[-1]
        reference = (U * np.maximum(s - css[rho] / (rho + 1), 0.0)) @ Vt
        assert np.allclose(x.reshape(n, n), reference, atol=1e-9)


@pytest.mark.parametrize("variant", ["nuclear", "psd", "symmetric"])
@pytest.mark.parametrize("radius", [0.0, 2.0, 40.0, 1e6])
def test_trace_norm_projection_in_place_on_large_points(variant, radius):
    """The in-place path (syevr on the point's array, V diag(w) V' by syrk; 200 x 200 = 40,000 entries)
    against the closed form from a full eigendecomposition: weights of both signs, none (radius 0),
    the point already inside (1e6), and the PSD set (negative eigenvalues dropped)."""
    n = 200
    rng = np.random.default_rng(5)
    A = rng.standard_normal((n, n))
    A = A + A.T
    kwargs = {"psd": True} if variant == "psd" else ({"symmetric": True} if variant == "symmetric" else {})
    ball = fm.TraceNormBall(fm.Variable((n, n)), radius=radius, **kwargs)
    w, V = np.linalg.eigh(A)
    mags = np.maximum(w, 0.0) if variant == "psd" else np.abs(w)
    if mags.sum() > radius:
        u = np.sort(mags)[::-1]
        css = np.cumsum(u) - radius
        rho = np.flatnonzero(u - css / np.arange(1, n + 1) > 0)
        level = css[rho[-1]] / (rho[-1] + 1) if rho.size else np.inf
        mags = np.maximum(mags - level, 0.0)
    reference = (V * (mags if variant == "psd" else np.sign(w) * mags)) @ V.T
    x = A.ravel().copy()
    assert ball.project_flat(x, out=x) is x
    X = x.reshape(n, n)
    np.testing.assert_allclose(X, reference, rtol=0, atol=1e-10 * max(np.abs(A).max(), 1.0))
    np.testing.assert_array_equal(X, X.T)


def test_projection_estimate_grows_like_a_dense_factorization():
    small = fm.TraceNormBall(fm.Variable((100, 100)), 1.0).projection_time_estimate()
    large = fm.TraceNormBall(fm.Variable((200, 200)), 1.0).projection_time_estimate()
    assert small > 0 and large == pytest.approx(8 * small)
