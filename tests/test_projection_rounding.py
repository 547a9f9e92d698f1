"""Sorted-breakpoint projections on points huge next to the set, and the solves that feed them such points.

A projected-gradient target ``x - g / L`` with a tiny curvature L is ~1e12
or more, and the projections onto capped simplices, L1 balls and the
singular values of trace-norm balls rounded their level at the target's
scale: "optimal" at points off the simplex, L1 projections of 0, IndexError
deep in the solver. The projections are checked against an exact reference
(rational arithmetic), closed forms and their invariance under shifts; the
solves against CVXPY + Clarabel.
"""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm
from fwmodel.engine.inface import project_capped_simplex
from fwmodel.engine.line_search import Backtracking
from fwmodel.sets.capped_simplex import CappedSimplex
from fwmodel.sets.trace_norm import _project_nonnegative_l1

cp = pytest.importorskip("cvxpy")
EPS = np.finfo(float).eps


# ------------------------------------------------------------ exact references
def exact_capped_projection(v, lo, hi, total):
    """The projection onto {lo <= x <= hi, sum x = total}, exactly (Fractions), as floats."""
    V = [Fraction(float(t)) for t in v]
    L = [Fraction(float(t)) for t in lo]
    H = [Fraction(float(t)) for t in hi]
    T = Fraction(float(total))

    def s(tau):
        return sum(min(max(a - tau, l), h) for a, l, h in zip(V, L, H))

    points = sorted({a - h for a, h in zip(V, H)} | {a - l for a, l in zip(V, L)})
    # the last breakpoint with s >= total; s is linear between it and the next one
    k = max(i for i, b in enumerate(points) if s(b) >= T) if s(points[0]) >= T else None
    assert k is not None, "caps below the total"
    if k == len(points) - 1:
        tau = points[k]
    else:
        a, b = points[k], points[k + 1]
        sa, sb = s(a), s(b)
        tau = a if sa == sb else a + (sa - T) * (b - a) / (sa - sb)
    return np.array([float(min(max(a - tau, l), h)) for a, l, h in zip(V, L, H)])


def exact_l1_projection(v, radius):
    """The projection onto {||x||_1 <= radius}, exactly (Fractions, Michelot's fixed point), as floats."""
    a = [abs(Fraction(float(t))) for t in v]
    r = Fraction(float(radius))
    if sum(a) <= r:
        return np.array(v, dtype=float)
    tau = (sum(a) - r) / len(a)
    while True:
        above = [t for t in a if t > tau]
        new = (sum(above) - r) / len(above)
        if new == tau:
            break
        tau = new
    return np.array([float(np.sign(t) * max(abs(Fraction(float(t))) - tau, 0)) for t in v])


magnitudes = st.builds(lambda m, e: m * 10.0 ** e, st.floats(-1.0, 1.0), st.integers(-12, 17))
vectors = st.lists(magnitudes, min_size=1, max_size=7).map(np.array)


# ------------------------------------------------------------ closed forms at huge scales
@pytest.mark.parametrize("scale", [1e3, 1e8, 1e12, 1e15, 1e17, 1e300])
def test_l1_one_dominant_entry_takes_the_whole_radius(scale):
    """|v_1| - |v_2| >= r: the projection is r e_1 (sign kept), at every scale of v_1."""
    ball = fm.L1Ball(fm.Variable(4), 2.0)
    v = np.array([-scale, 1.0, 0.0, -0.5])
    expected = np.array([-2.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ball.project(v), expected)
    np.testing.assert_array_equal(ball.project_flat(v.copy(), out=v.copy()), expected)
    np.testing.assert_array_equal(_project_nonnegative_l1(np.abs(v), 2.0), np.abs(expected))
    np.testing.assert_array_equal(project_capped_simplex(np.abs(v), 2.0), np.abs(expected))


@pytest.mark.parametrize("base", [2.0 ** 20, 2.0 ** 40, 2.0 ** 50])
def test_l1_two_close_huge_entries_split_the_radius(base):
    """v = (t + a, t + b) with t huge, a - b < r: x = ((r + a - b) / 2, (r - a + b) / 2), exactly."""
    a, b, r = 0.75, 0.25, 1.0  # multiples of the spacing of floats at 2^50
    v = np.array([base + a, base + b, 3.0])
    expected = np.array([(r + a - b) / 2, (r - a + b) / 2, 0.0])
    np.testing.assert_array_equal(fm.L1Ball(fm.Variable(3), r).project(v), expected)
    np.testing.assert_array_equal(_project_nonnegative_l1(v, r), expected)


def test_large_in_place_l1_projection_of_a_huge_point():
    """The chunked in-place path (and its warm start from the last level) on a point of 1e15-sized entries."""
    rng = np.random.default_rng(0)
    n = 100_000
    x = rng.standard_normal(n) * 1e15
    x[[5, 7]] = [2.0 ** 56, -(2.0 ** 56 - 16)]  # the two largest, 16 apart
    ball = fm.L1Ball(fm.Variable(n), 20.0)
    expected = np.zeros(n)
    expected[[5, 7]] = [18.0, -2.0]
    for _ in range(2):  # the second projection starts from the first one's level
        out = ball.project_flat(x.copy(), out=x.copy())
        np.testing.assert_array_equal(out, expected)


def test_capped_simplex_reviewer_point():
    """[1e15, 1e15 + 0.3, 0.5, -3] onto {sum = 1, 0 <= x <= 0.6}: 1e15 + 0.3 is 1e15 + 0.25 in floats, so the
    exact projection is [0.4, 0.6, 0, 0] (it summed to 0.975; at 1e16, to 0)."""
    x = fm.Variable(4)
    capped = CappedSimplex(fm.Simplex(x, 1.0), fm.Box(x, 0.0, 0.6))
    for v in ([1e15, 1e15 + 0.3, 0.5, -3.0], [1e16, 1e16 + 0.3, 0.5, -3.0], [1e15, 0.5, 0.3, -3.0],
              [-1e17, 1.0, 0.0, 3.0]):
        got = capped.project_flat(np.array(v))
        np.testing.assert_allclose(got, exact_capped_projection(v, [0] * 4, [0.6] * 4, 1.0), rtol=0, atol=4 * EPS)
        assert abs(got.sum() - 1.0) <= 4 * EPS


# ------------------------------------------------------------ properties against the exact reference
@settings(max_examples=200, deadline=None)
@given(vectors, st.floats(1e-3, 1e3))
def test_l1_projection_matches_exact_reference(v, radius):
    expected = exact_l1_projection(v, radius)
    tol = 8 * EPS * radius * v.size
    ball = fm.L1Ball(fm.Variable(v.size), radius)
    np.testing.assert_allclose(ball.project(v), expected, rtol=0, atol=tol)
    np.testing.assert_allclose(ball.project_flat(v.copy(), out=v.copy()), expected, rtol=0, atol=tol)
    np.testing.assert_allclose(_project_nonnegative_l1(np.abs(v), radius), np.abs(expected), rtol=0, atol=tol)


@settings(max_examples=200, deadline=None)
@given(vectors, st.data())
def test_capped_simplex_projection_matches_exact_reference(v, data):
    n = v.size
    lo = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.01, 0.05]), min_size=n, max_size=n)))
    hi = lo + np.array(data.draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    total = float(lo.sum() + data.draw(st.floats(0.01, 0.99)) * (hi.sum() - lo.sum()))  # inside: the set is not empty
    x = fm.Variable(n)
    capped = CappedSimplex(fm.Simplex(x, total), fm.Box(x, lo, hi))
    got = capped.project_flat(v)
    tol = 8 * EPS * max(total, hi.max()) * n
    np.testing.assert_allclose(got, exact_capped_projection(v, lo, hi, total), rtol=0, atol=tol)
    assert abs(got.sum() - total) <= tol


@settings(max_examples=200, deadline=None)
@given(vectors, st.data())
def test_boxed_l1_projection_matches_exact_reference(v, data):
    """The L1 ball of radius r in the box [-c, c]: |x| is the capped simplex projection of |v| onto
    {0 <= s <= c, sum s = r} where the box alone leaves the L1 norm above r (sign of v kept)."""
    from fwmodel.sets.boxed_l1 import BoxedL1Ball

    n = v.size
    cap = np.array(data.draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n)))
    radius = float(data.draw(st.floats(0.01, 0.99)) * cap.sum())
    x = fm.Variable(n)
    got = BoxedL1Ball(fm.L1Ball(x, radius), fm.Box(x, -cap, cap)).project_flat(v)
    if np.minimum(np.abs(v), cap).sum() <= radius:
        expected = np.clip(v, -cap, cap)
    else:
        expected = np.sign(v) * exact_capped_projection(np.abs(v), np.zeros(n), cap, radius)
    tol = 8 * EPS * max(radius, cap.max()) * n
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)


def test_capped_simplex_huge_ties_with_other_caps_share_their_level():
    """Two entries with the same huge v and caps 1.0 / 0.40625 (found by hypothesis): the breakpoints round at
    v's scale, and the crossing piece took one as capped (0.398 / 0.406, the right sum); both are 0.402."""
    v = np.array([-1e15, 0.0, -1e15, 0.0, 0.0])
    lo, hi = np.zeros(5), np.array([1.0, 0.5, 0.40625, 0.25, 0.25])
    total = 0.75 * hi.sum()
    x = fm.Variable(5)
    got = CappedSimplex(fm.Simplex(x, total), fm.Box(x, lo, hi)).project_flat(v)
    np.testing.assert_allclose(got, exact_capped_projection(v, lo, hi, total), rtol=0, atol=8 * EPS * total * 5)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=7).map(np.array), st.integers(2, 17), st.booleans())
def test_sum_constrained_projections_are_shift_invariant(v, exponent, negative):
    """proj(v + c 1) = proj(v) for a set with a fixed sum (the capped simplex), for c up to 1e17: ``v + c``
    rounds; the invariance holds exactly for the rounded point and its exact shift back. The L1 ball's
    projection of the shifted point (in its positive orthant) against the exact one."""
    c = (-1.0 if negative else 1.0) * 10.0 ** exponent
    shifted = v + c
    back = shifted - c  # exact (Sterbenz) for c large next to v; v itself otherwise
    n = v.size
    x = fm.Variable(n)
    capped = CappedSimplex(fm.Simplex(x, 1.0), fm.Box(x, 0.0, 0.5))
    np.testing.assert_allclose(capped.project_flat(shifted), capped.project_flat(back), rtol=0, atol=16 * EPS * n)
    if not negative:  # the L1 ball's projection of the shifted point, against the exact one
        np.testing.assert_allclose(_project_nonnegative_l1(shifted, 1.0), exact_l1_projection(shifted, 1.0),
                                   rtol=0, atol=16 * EPS * n)


def test_trace_norm_projection_of_a_huge_matrix():
    """The nuclear-ball projection of t * A with t = 1e20: r times A's top singular pair (a rank-one closed form)."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((5, 7))
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    ball = fm.TraceNormBall(fm.Variable((5, 7)), 2.0)
    np.testing.assert_allclose(ball.project(1e20 * A), 2.0 * np.outer(U[:, 0], Vt[0]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_points_project_to_nan(bad):
    """A NaN or infinite entry: NaN in every entry (defined, and seen by the solver's check of its iterates),
    never an exception from inside the threshold search."""
    v = np.array([1.0, bad, 0.5])
    x = fm.Variable(3)
    assert np.isnan(fm.L1Ball(x, 1.0).project(v)).all()
    assert np.isnan(fm.L1Ball(x, 1.0).project_flat(v.copy(), out=v.copy())).all()
    assert np.isnan(CappedSimplex(fm.Simplex(x, 1.0), fm.Box(x, 0.0, 0.6)).project_flat(v)).all()
    assert np.isnan(project_capped_simplex(v, 1.0)).all()
    assert np.isnan(_project_nonnegative_l1(np.abs(v), 1.0)).all()


def test_backtracking_probe_on_a_linear_direction_steps_to_the_end():
    """A direction along which phi is linear to rounding: the estimate is the one whose step is gamma_max,
    not the probe's rounding (1.7e-33, later divided by)."""
    phi0 = 3.0
    slope = -0.5

    def phi(gamma):
        return phi0 + slope * gamma  # exactly linear

    search = Backtracking()
    gamma, _ = search.step(phi, phi0, slope, d_norm2=2.0, gamma_max=1.0)
    assert gamma == 1.0
    assert search.lipschitz == pytest.approx(0.9 * abs(slope) / 2.0)  # shrunk once from |slope| / ||d||^2


# ------------------------------------------------------------ the solves that fed these points
def _clarabel(problem):
    problem.solve(solver=cp.CLARABEL)
    return problem.value


@pytest.mark.parametrize("weight", [1e-10, 1e-12, 1e-14])
def test_nearly_linear_capped_simplex_is_optimal_on_the_simplex(weight):
    rng = np.random.default_rng(1719)
    n = 10
    a, c = rng.standard_normal(n), rng.standard_normal(n)
    cap, lo = rng.uniform(1.5, 3, n) / n, rng.uniform(0, 0.5, n) / n
    x = fm.Variable(n)
    p = fm.Problem(fm.Minimize(weight * fm.sum_squares(a @ x) + c @ x), [fm.Simplex(x, 1.0), fm.Box(x, lo, cap)])
    p.solve()
    z = cp.Variable(n)
    ref = _clarabel(cp.Problem(cp.Minimize(weight * cp.sum_squares(a @ z) + c @ z), [z >= lo, z <= cap, cp.sum(z) == 1]))
    assert p.status == "optimal"
    assert abs(x.value.sum() - 1.0) <= 1e-12
    assert np.all(x.value >= lo - 1e-12) and np.all(x.value <= cap + 1e-12)
    assert abs(p.value - ref) <= 1e-3 * abs(ref)


@pytest.mark.parametrize("gamma", [1e-11, 1e-12])
def test_nearly_linear_portfolio_is_optimal_and_fully_invested(gamma):
    rng = np.random.default_rng(0)
    n = 20
    F = rng.standard_normal((n, 3)) * 0.01
    Sigma = F @ F.T + np.diag(rng.uniform(1e-5, 4e-5, n))
    mu = rng.uniform(0.01, 0.1, n)
    w = fm.Variable(n)
    p = fm.Problem(fm.Minimize(gamma * fm.quad_form(w, Sigma) - mu @ w), [w >= 0, fm.sum(w) == 1, w <= 0.1])
    p.solve()
    z = cp.Variable(n)
    ref = _clarabel(cp.Problem(cp.Minimize(gamma * cp.quad_form(z, Sigma) - mu @ z), [z >= 0, cp.sum(z) == 1, z <= 0.1]))
    assert p.status == "optimal"
    assert abs(w.value.sum() - 1.0) <= 1e-12 and w.value.max() <= 0.1 + 1e-12
    assert abs(p.value - ref) <= 1e-6


@pytest.mark.parametrize("seed", [46, 1, 2, 3])
def test_symmetric_trace_ball_with_trace_equality_and_linear_objective(seed):
    """In-face steps with a curvature of rounding (a trace row along a face direction): IndexError on main."""
    rng = np.random.default_rng(seed)
    n = 9
    G = rng.standard_normal((n, n))
    C = (G + G.T) / 2
    X = fm.Variable((n, n))
    p = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, X))), [fm.TraceNormBall(X, 2.0, symmetric=True), fm.trace(X) == 0.5])
    p.solve()
    Z = cp.Variable((n, n), symmetric=True)
    ref = _clarabel(cp.Problem(cp.Minimize(cp.sum(cp.multiply(C, Z))), [cp.normNuc(Z) <= 2.0, cp.trace(Z) == 0.5]))
    assert p.status == "optimal"
    assert abs(p.value - ref) <= 1e-4 * max(1.0, abs(ref))


@pytest.mark.parametrize("shape, symmetric", [((5, 7), False), ((5, 5), True)])
def test_trace_ball_box_log_sum_exp_does_not_crash(shape, symmetric):
    """A first direction along which log-sum-exp is exactly linear (all ones): the backtracking probe's estimate
    of 1.7e-33 made the projection step's target ~3e32 and the projection raise IndexError on main."""
    X = fm.Variable(shape)
    p = fm.Problem(fm.Minimize(fm.log_sum_exp(fm.vec(X, order="F"))),
                   [fm.TraceNormBall(X, 2.0, symmetric=symmetric), X <= 0.2, X >= -0.2])
    p.solve()
    Z = cp.Variable(shape, symmetric=symmetric)
    ref = _clarabel(cp.Problem(cp.Minimize(cp.log_sum_exp(cp.vec(Z, order="F"))),
                               [cp.normNuc(Z) <= 2.0, Z <= 0.2, Z >= -0.2]))
    # and it is solved: the default penalty takes the curvature of rounding (1.7e-33) along that direction
    # as 0 and balances the slope instead (a lam of 1.7e-33 ended at max_iter with the box violated)
    assert p.status == "optimal"
    assert abs(p.value - ref) <= 1e-4 * max(1.0, abs(ref))
