"""The level of the clipped projections found by pivots (expected O(n)) against independent references.

``clip(v - tau, lo, hi)`` summing to a target is the capped simplex's
projection, and on ``|y|`` the boxed L1 ball's. From 4096 entries on, its
level is found by pivots on the breakpoints
(:func:`fwmodel.sets._thresholds.clipped_level_by_pivots`) instead of by
sorting them. Checked against the exact projection in rational arithmetic
(tiny instances, every branch of the search forced by small sample sizes),
against the sorted breakpoints on random instances with ties and huge or
tiny values, and the projections of both sets at 5000 entries against
CVXPY + Clarabel.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm
from fwmodel.sets._thresholds import (PIVOT_MIN_SIZE, clipped_level_by_pivots, clipped_sum_levels,
                                      sorted_clipped_sum_levels, sum_tolerance)
from fwmodel.sets.boxed_l1 import BoxedL1Ball
from fwmodel.sets.capped_simplex import CappedSimplex
from test_projection_rounding import exact_capped_projection, magnitudes

cp = pytest.importorskip("cvxpy")
EPS = np.finfo(float).eps


# ------------------------------------------------------------ tiny instances against rational arithmetic
# (sample, few): the sampled pivots from 9 undecided entries on, medians, all breakpoints at once
SEARCHES = [(2, 1), (2, 4), (4, 1), (1024, 64)]


@settings(max_examples=200, deadline=None)
@given(st.lists(magnitudes, min_size=1, max_size=12).map(np.array), st.data())
def test_pivot_level_gives_the_exact_projection(v, data):
    n = v.size
    lo = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.0, 0.01, 0.5]), min_size=n, max_size=n)))
    width = data.draw(st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.25, 1.0, 1e6])),
                               min_size=n, max_size=n))
    hi = lo + np.array(width)
    if hi.sum() <= lo.sum():
        return
    total = float(lo.sum() + data.draw(st.floats(0.0, 0.999)) * (hi.sum() - lo.sum()))  # (not above the caps)
    sample, few = data.draw(st.sampled_from(SEARCHES))
    tau = clipped_level_by_pivots(v, lo, hi, total, sample=sample, few=few)
    got = np.clip(v - tau, lo, hi)
    expected = exact_capped_projection(v, lo, hi, total)
    scale = max(total, float(np.max(hi)))
    if np.max(np.abs(got - expected)) > 8 * EPS * scale * n:  # v huge next to the bounds: the level rounded
        assert abs(got.sum() - total) > sum_tolerance(total, n)  # then the callers' check sees it (and fall back)
        old = np.clip(v - sorted_clipped_sum_levels(v[None], lo[None], hi[None], total)[0], lo, hi)
        assert abs(old.sum() - total) > sum_tolerance(total, n)  # as with the sorted breakpoints


@pytest.mark.parametrize("sample, few", SEARCHES)
def test_targets_at_the_ends_give_the_caps_or_the_floors(sample, few):
    """A target equal to the caps' sum puts every entry at its cap, the floors' sum at its floor (closed forms)."""
    rng = np.random.default_rng(5)
    v = np.round(rng.standard_normal(40) * 3)  # ties
    lo = rng.choice([0.0, 0.5], 40)
    hi = lo + rng.choice([0.0, 1.0, 2.0], 40)
    for total, expected in ((hi.sum(), hi), (lo.sum(), lo)):
        tau = clipped_level_by_pivots(v, lo, hi, total, sample=sample, few=few)
        np.testing.assert_array_equal(np.clip(v - tau, lo, hi), expected)


# ------------------------------------------------------------ large random instances against the sorted breakpoints
def _random_instance(rng, kind, n):
    v = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    lo = np.where(rng.random(n) < 0.5, 0.0, rng.random(n))
    hi = lo + rng.random(n) * rng.choice([0.01, 1.0, 100.0])
    if kind == "ties":
        v = np.round(v)
        hi = lo + np.round(3 * rng.random(n))  # some entries with lo == hi
    elif kind == "huge":
        v = v + 1e15 * rng.choice([-1.0, 1.0])
    elif kind == "tiny":
        v, lo, hi = 1e-200 * v, 1e-200 * lo, 1e-200 * hi
    elif kind == "uniform":  # scalar bounds, as the boxed L1 ball passes for a box [-c, c]
        lo, hi = 0.0, 0.7
    total = float(rng.uniform(np.sum(np.broadcast_to(lo, n)), np.sum(np.broadcast_to(hi, n))))
    return v, lo, hi, total


@pytest.mark.parametrize("kind", ["plain", "ties", "huge", "tiny", "uniform"])
@pytest.mark.parametrize("seed", range(4))
def test_pivot_level_matches_the_sorted_breakpoints(kind, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([PIVOT_MIN_SIZE, 5000, 30_000]))
    v, lo, hi, total = _random_instance(rng, kind, n)
    L, H = np.broadcast_to(lo, (1, n)), np.broadcast_to(hi, (1, n))
    rows = [b if np.ndim(b) == 0 else b[None] for b in (lo, hi)]  # scalar bounds or one row
    new = np.clip(v - clipped_sum_levels(v[None], *rows, total)[0], lo, hi)  # the pivots (n >= PIVOT_MIN_SIZE)
    old = np.clip(v - sorted_clipped_sum_levels(v[None], L, H, total)[0], lo, hi)
    tol = sum_tolerance(total, n)
    if abs(old.sum() - total) <= tol:  # the sorted breakpoints' level is certified: both are the projection
        assert abs(new.sum() - total) <= tol
        np.testing.assert_allclose(new, old, rtol=0, atol=2 * tol + 4 * EPS * float(np.max(np.abs(H))))
    if kind != "huge":
        assert abs(new.sum() - total) <= tol  # (a point huge next to its bounds may need the exact fallback)


# ------------------------------------------------------------ the projections at 5000 entries against Clarabel
def _clarabel_projection(y, constraints_of):
    """The projection by Clarabel, its tolerances tightened (at the defaults its answer at 5000 entries was
    off by 1e-4, with a larger distance to y than the exact projection's)."""
    x = cp.Variable(y.size)
    cp.Problem(cp.Minimize(cp.sum_squares(x - y)), constraints_of(x)).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12, max_iter=500)
    return x.value


@pytest.mark.parametrize("bounds", ["symmetric", "per entry"])
def test_boxed_l1_projection_of_5000_entries_matches_clarabel(bounds):
    rng = np.random.default_rng(11)
    n = 5000
    y = rng.standard_normal(n) * 2
    if bounds == "symmetric":
        lower, upper = np.full(n, -0.5), np.full(n, 0.5)
    else:
        lower = -rng.uniform(0.0, 1.0, n)
        lower[::7] = rng.uniform(0.01, 0.1, n)[::7]  # entries kept away from 0 (floors above 0)
        upper = lower + rng.uniform(0.1, 2.0, n)
    radius = 0.2 * np.abs(np.clip(y, lower, upper)).sum()
    x = fm.Variable(n)
    got = BoxedL1Ball(fm.L1Ball(x, radius), fm.Box(x, lower, upper)).project_flat(y)
    ref = _clarabel_projection(y, lambda z: [cp.norm1(z) <= radius, z >= lower, z <= upper])
    assert abs(np.abs(got).sum() - radius) <= sum_tolerance(radius, n)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    assert np.all(got >= lower) and np.all(got <= upper)


@pytest.mark.parametrize("equality", [True, False])
def test_capped_simplex_projection_of_5000_entries_matches_clarabel(equality):
    rng = np.random.default_rng(12)
    n = 5000
    y = rng.standard_normal(n) * 0.01
    lower, upper = rng.choice([0.0, 1e-5], n), rng.uniform(1e-4, 1e-3, n)
    x = fm.Variable(n)
    got = CappedSimplex(fm.Simplex(x, 1.0, equality=equality), fm.Box(x, lower, upper)).project_flat(y)
    ref = _clarabel_projection(y, lambda z: [(cp.sum(z) == 1.0) if equality else (cp.sum(z) <= 1.0),
                                             z >= lower, z <= upper])
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-7)
    assert abs(got.sum() - 1.0) <= sum_tolerance(1.0, n)


# ------------------------------------------------------------ huge points at 5000 entries
def test_huge_point_of_5000_entries_projects_as_the_l1_ball_where_the_box_is_loose():
    """Caps far above the radius: the boxed L1 ball's projection is the L1 ball's (an independent routine),
    for a point at 1e16 (the level then rounds at the point's scale, and the exact fallback takes over)."""
    rng = np.random.default_rng(13)
    n = 5000
    y = rng.standard_normal(n)
    y[:3] = [1e16, -1e16 + 2.0, 1e16 - 4.0]
    x = fm.Variable(n)
    got = BoxedL1Ball(fm.L1Ball(x, 3.0), fm.Box(x, -1e18, 1e18)).project_flat(y)
    np.testing.assert_allclose(got, fm.L1Ball(fm.Variable(n), 3.0).project(y), rtol=0, atol=64 * EPS * 3.0)


@pytest.mark.parametrize("shift", [1e6, 1e12, -1e15])
def test_capped_simplex_of_5000_entries_is_shift_invariant(shift):
    """proj(v + c 1) = proj(v) on a set with a fixed sum: the pivots' level at the shifted point's scale,
    certified or redone exactly (the shift back is exact for c large next to v)."""
    rng = np.random.default_rng(14)
    n = 5000
    v = rng.standard_normal(n)
    x = fm.Variable(n)
    capped = CappedSimplex(fm.Simplex(x, 1.0), fm.Box(x, 0.0, 1e-3))
    shifted = v + shift
    np.testing.assert_allclose(capped.project_flat(shifted), capped.project_flat(shifted - shift), rtol=0,
                               atol=64 * EPS * n * 1e-3)
