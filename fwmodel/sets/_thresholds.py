"""Thresholds of the sorted-breakpoint projections, exact to rounding at the result's scale.

The projections onto a simplex, an L1 ball, a capped simplex, and the
singular values' projection of a trace-norm ball all soft-threshold: the
point ``max(a_i - tau, 0)`` (or ``clip(v_i - tau, l_i, u_i)``) whose entries
sum to the radius r. When the input is huge next to r (a projected-gradient
target ``x - g / L`` with a tiny curvature L), ``tau`` is about as large as
the top entries, and both the level (``(sum_S a_i - r) / |S|``) and the
differences ``a_i - tau`` are rounded at the input's scale: projecting
``[1e17, 1, 0]`` onto the L1 ball of radius 2 gave 0 instead of ``[2, 0, 0]``.

The pattern used by every such projection in the package:

1. the plain computation, unchanged (the same numbers on ordinary inputs);
2. a certificate: the result's entries sum to r to rounding *at r's scale*
   (:func:`sum_tolerance`). The active entries share one ``tau``, and each
   difference ``a_i - tau`` with ``a_i`` near ``tau`` is exact (Sterbenz), so
   the sum's residual is ``k`` times the level's error: a small residual
   certifies the level and so the projection (KKT conditions);
3. otherwise the level is found again relative to the largest entry: with
   ``w_i = a_i - max(a) <= 0`` (exact for every entry that can be active,
   ``a_i >= max(a) - r``, once ``max(a) >= 2 r``), ``tau = max(a) + tau'``
   and ``sum_i max(w_i - tau', 0) = r`` is solved for ``tau'`` in ``[-r, 0)``
   with sums of nonpositive numbers only (no cancellation). The level is
   kept as the unevaluated pair ``(max(a), tau')`` and the point is formed
   as ``(a_i - max(a)) - tau'``.

A point with a NaN or infinite entry projects to NaN in every entry: a
defined result, and the solver's check of its iterates sees it (a 0 written
over a NaN would hide a diverging iterate).
"""
from __future__ import annotations

import numpy as np

_EPS = np.finfo(float).eps


def sum_tolerance(total, count):
    """The rounding of a sum of ``count`` nonnegative terms adding up to ``total``: ``count`` units of
    rounding of ``total`` (the bound of recursive summation; each term's own rounding is within it)."""
    return 4.0 * _EPS * abs(float(total)) * max(int(count), 1)


def non_finite(total, values):
    """Whether ``total`` (a sum computed from ``values``) is NaN or infinite because ``values`` holds such an entry
    (not because a sum of finite values overflowed)."""
    return not np.isfinite(total) and not np.all(np.isfinite(values))


def shifted_level(a, radius):
    """The soft-threshold level of ``a >= 0`` for ``radius > 0`` as a pair ``(top, offset)``, ``tau = top + offset``.

    ``sum_i max(a_i - tau, 0) = radius`` (requires ``sum(a) > radius``).
    ``top = max(a)``; only the entries ``a_i > top - radius`` can be above
    the level (the top entry alone exceeds it by at most the radius), and
    their shifts ``w_i = a_i - top`` lie in ``(-radius, 0]``. Michelot's fixed
    point ``offset <- (sum_S w_i - radius) / |S|`` over the shrinking set of
    entries ``w_i > offset`` (Condat 2016) then sums nonpositive numbers only,
    so ``offset`` is exact to rounding at the radius' scale. The top entry
    is never dropped (``offset < 0``), so the loop ends with a nonempty set.
    """
    a = np.asarray(a, dtype=float).ravel()
    top = float(a.max())
    w = a - top
    w = w[w > -radius]  # (not a > top - radius: top - radius rounds to top when top is huge)
    offset = (float(w.sum()) - radius) / w.size
    while True:
        keep = w > offset
        if keep.all():
            return top, offset
        w = w[keep]
        offset = (float(w.sum()) - radius) / w.size


def threshold_shifted(a, top, offset):
    """``max((a - top) - offset, 0)``: the soft-thresholding of ``a`` at the level ``top + offset`` (a new array)."""
    out = np.subtract(a, top)
    out -= offset
    np.maximum(out, 0.0, out=out)
    return out


def project_nonnegative_l1(values, radius):
    """Projection of ``values`` onto ``{z >= 0, sum z <= radius}``.

    ``max(values - tau, 0)`` with the level ``tau >= 0`` of Duchi et al.
    (2008), found by sorting; when its entries do not sum to the radius to
    rounding (a point huge next to the radius), the level is found again
    relative to the largest entry (:func:`shifted_level`, module docstring).
    Never raises; a NaN or infinite entry makes every entry NaN.
    """
    values = np.asarray(values, dtype=float)
    z = np.maximum(values, 0.0)
    if non_finite(float(values.sum()), values):
        return np.full(values.shape, np.nan)
    total = float(z.sum())
    if total <= radius:
        return z
    if radius <= 0:  # a ball of radius 0 is the origin
        return np.zeros_like(z)
    mu = np.sort(z.ravel())[::-1]
    cs = np.cumsum(mu) - radius
    active = np.flatnonzero(mu - cs / np.arange(1, mu.size + 1) > 0)
    if active.size:
        rho = int(active[-1])
        out = np.maximum(z - cs[rho] / (rho + 1), 0.0)
        if abs(float(out.sum()) - radius) <= sum_tolerance(radius, rho + 1):
            return out
    return threshold_shifted(z, *shifted_level(mu, radius))


#: group size from which :func:`clipped_sum_levels` finds each group's level by pivots (expected O(n))
#: rather than by sorting all groups' breakpoints at once (vectorized across groups, O(n log n));
#: below it the per-group Python loop costs more than the sort saves
PIVOT_MIN_SIZE = 4096


def clipped_sum_levels(V, lo, hi, target):
    """Per row of V, the smallest ``tau`` with ``sum_i clip(v_i - tau, l_i, u_i) <= target``.

    V: a 2-D array; ``lo``, ``hi``: arrays of its shape, or scalars (the same bound for every entry).

    The sum is nonincreasing and piecewise linear in tau: entry i gives
    ``u_i`` up to ``tau = v_i - u_i``, then ``v_i - tau`` (slope -1), then
    ``l_i`` from ``tau = v_i - l_i`` on. Rows of at least
    :data:`PIVOT_MIN_SIZE` entries are solved one by one by
    :func:`clipped_level_by_pivots` (expected O(n)); smaller rows all at
    once by :func:`sorted_clipped_sum_levels` (O(n log n) per row, one
    vectorized sort). The capped simplex's projection (``v - tau`` clipped to
    its bounds) and the boxed L1 ball's (on ``|y|``, between the floors and
    the caps) both take it; either way the level rounds at the breakpoints'
    scale, so the callers check the result's sum (:func:`sum_tolerance`) and
    fall back to :func:`clipped_projection_exactly`.
    """
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if V.shape[1] < PIVOT_MIN_SIZE:
        return sorted_clipped_sum_levels(V, np.broadcast_to(lo, V.shape), np.broadcast_to(hi, V.shape), target)

    def row(bound, i):  # a row of a 2-D bound, or the scalar bound itself
        return bound[i] if bound.ndim == 2 else float(bound)

    return np.array([clipped_level_by_pivots(V[i], row(lo, i), row(hi, i), target) for i in range(V.shape[0])])


def sorted_clipped_sum_levels(V, lo, hi, target):
    """:func:`clipped_sum_levels` by sorting, all rows at once.

    Sorting the 2 n breakpoints and summing the slopes gives the sum at
    every breakpoint, and tau on the piece where it crosses ``target``.
    """
    breakpoints = np.concatenate([V - hi, V - lo], axis=1)
    order = np.argsort(breakpoints, axis=1, kind="stable")
    at = np.take_along_axis(breakpoints, order, axis=1)
    turn = np.concatenate([np.full(V.shape, -1.0), np.ones(V.shape)], axis=1)  # slope change at each breakpoint
    slope = np.cumsum(np.take_along_axis(turn, order, axis=1), axis=1)  # the slope just after each breakpoint
    rise = slope[:, :-1] * np.diff(at, axis=1)
    sums = hi.sum(axis=1)[:, None] + np.concatenate([np.zeros((V.shape[0], 1)), np.cumsum(rise, axis=1)], axis=1)
    # the last breakpoint where s >= target, and the linear piece after it
    k = np.maximum((sums >= target).sum(axis=1) - 1, 0)
    rows = np.arange(V.shape[0])
    piece_slope = slope[rows, k]
    return at[rows, k] + np.where(piece_slope < 0, (sums[rows, k] - target) / np.where(piece_slope < 0, -piece_slope, 1.0), 0.0)


#: the smallest random sample from which :func:`clipped_level_by_pivots` picks its two pivots; it takes
#: ``_SAMPLE_GROWTH sqrt(m)`` of m undecided entries where that is more (at n = 1e5: 5.6 ms for a
#: sample of 1024, 3.3 ms for 8 sqrt(n), one core, ``benchmarks/projection_speed.py``'s point)
_PIVOT_SAMPLE = 1024
_SAMPLE_GROWTH = 8
#: undecided entries from which :func:`clipped_level_by_pivots` evaluates the sum at all their breakpoints at once
_FEW = 64


def clipped_level_by_pivots(v, lo, hi, target, sample=_PIVOT_SAMPLE, few=_FEW, seed=0):
    """:func:`clipped_sum_levels` for one row, in expected O(n): a bracket narrowed by pivots.

    ``v``: a 1-D array; ``lo`` (finite), ``hi``: arrays of its shape or scalars.
    ``s(t) = sum_i clip(v_i - t, l_i, u_i)``. The level lies in a bracket
    ``(t_lo, t_hi]`` with ``s(t_lo) > target >= s(t_hi)`` (at first the whole
    line). On the bracket an entry whose breakpoints ``v_i - u_i <= v_i - l_i``
    both lie outside it is linear: at its cap (``v_i - u_i >= t_hi``), at its
    floor (``v_i - l_i <= t_lo``), or free (``v_i - t``, the breakpoints on
    either side). Those are dropped, kept only as their sum at a point
    ``ref`` of the bracket (their bounds, and ``v_i - ref``) and the count
    of free ones (the slope); the undecided entries (a breakpoint inside the
    bracket) are kept. Each round evaluates ``s`` at pivots inside the
    bracket, on the undecided entries only, and narrows it (the breakpoint
    search of Kiwiel 2008 for the continuous quadratic knapsack):

    * many undecided entries (m > 4 ``sample``): two pivots around the
      level that a random sample of ``k = max(sample, 8 sqrt(m))`` of them
      estimates (their sum scaled, found by bisection on the sample's
      breakpoints), about ``2 sqrt(2 k)`` of the sample's breakpoints on
      either side: the bracket keeps a few percent of the breakpoints, and a
      round costs a few passes over the undecided entries (Floyd and
      Rivest's selection, 1975);
    * fewer: the median of their breakpoints inside the bracket;
    * at most ``few``: ``s`` at all their breakpoints inside the bracket at
      once (a small matrix), the bracket then between two consecutive ones.

    Every pivot is a breakpoint strictly inside the bracket, so each round
    leaves fewer; with none left ``s(t) = base - #free (t - ref)`` on the
    bracket (``ref`` the last pivot, one of its ends) and ``tau = ref +
    (base - target) / #free``, clamped to the bracket: relative to a
    breakpoint, as with the sorted breakpoints (``t_hi`` itself where
    ``s(t_hi)`` is the target). Without a free entry ``s`` is constant
    inside the bracket and the level is ``t_hi``: where the caps sum to at
    most ``target``, the smallest breakpoint (the whole box at its caps);
    where ``s`` jumps across the target at ``t_hi`` (breakpoints ``v_i - u_i``
    and ``v_i - l_i`` rounded to one number at v's scale), that number; where
    the floors sum to more than ``target`` (no level), the largest
    breakpoint, as with the sorted breakpoints. The sample's seed is fixed:
    the same point gives the same numbers. The level rounds at the
    breakpoints' scale; the callers check it (module docstring).
    """
    v = np.asarray(v, dtype=float)
    lo, hi = (b if b.ndim else float(b) for b in (np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)))
    t_lo, t_hi = -np.inf, np.inf
    ref, base, free_count = 0.0, 0.0, 0  # the dropped entries: their sum at ref, and how many are free
    at_hi = None  # s(t_hi)
    rng = None
    work = np.empty(v.size)
    while v.size:
        enter, leave = v - hi, v - lo  # free from v_i - u_i on, at the floor from v_i - l_i on
        c = work[:v.size]
        if v.size > 4 * sample:
            rng = rng or np.random.default_rng(seed)
            pivots = _sampled_pivots(v, lo, hi, enter, leave, target, (t_lo, t_hi), (ref, base, free_count),
                                     rng.integers(0, v.size, max(sample, int(_SAMPLE_GROWTH * np.sqrt(v.size)))))
        else:
            inside = np.concatenate([enter[(enter > t_lo) & (enter < t_hi)], leave[(leave > t_lo) & (leave < t_hi)]])
            if v.size <= few:  # every breakpoint left at once: the bracket between two consecutive ones
                t_lo, t_hi, last, total, c, at_hi = _last_piece(v, lo, hi, np.unique(inside), target, (t_lo, t_hi),
                                                                (ref, base, free_count), at_hi)
                pivots = []
            else:
                pivots = [float(np.partition(inside, inside.size // 2)[inside.size // 2])]
        for p in pivots:
            if t_lo < p < t_hi:
                np.subtract(v, p, out=c)
                np.maximum(c, lo, out=c)
                np.minimum(c, hi, out=c)
                total = base - free_count * (p - ref) + float(c.sum())
                if total > target:
                    t_lo = p
                else:
                    t_hi, at_hi = p, total
                last = p  # c holds the clipped entries at the last pivot, an end of the new bracket
        # the entries linear on the bracket: their sum at the last pivot, by their bounds (not c: at v's scale,
        # v_i - u_i can round to t_hi where v_i - t_hi < u_i, an entry clipped below its cap there)
        at_floor, at_cap = leave <= t_lo, enter >= t_hi
        free = (enter <= t_lo) & (leave >= t_hi)
        count = int(np.count_nonzero(free))
        base = (base - free_count * (last - ref) + _masked_sum(lo, at_floor) + _masked_sum(hi, at_cap)
                + (_masked_sum(c, free) if count else 0.0))
        free_count, ref = free_count + count, last
        undecided = np.flatnonzero(~(at_floor | at_cap | free))
        v = v[undecided]
        lo, hi = (b[undecided] if np.ndim(b) else b for b in (lo, hi))
    if free_count:
        if at_hi == target:  # the level is the bracket's end (not ref + the piece's rise, rounded)
            return t_hi
        return min(max(ref + (base - target) / free_count, t_lo), t_hi)
    return t_hi if np.isfinite(t_hi) else t_lo


def _masked_sum(bound, mask):
    """The sum of ``bound`` over ``mask`` (a scalar bound: times the count). Not ``np.dot(bound, mask)``:
    a BLAS call, 18 ms at n = 1e5 with OpenBLAS's threads on a loaded machine against 0.1 ms."""
    if np.ndim(bound):
        return float(np.compress(mask, bound).sum())
    count = int(np.count_nonzero(mask))
    return float(bound) * count if count else 0.0


def _last_piece(v, lo, hi, points, target, bracket, linear, at_hi):
    """The bracket narrowed to two consecutive ``points`` (sorted breakpoints inside it), with ``s`` evaluated at
    all of them at once: ``(t_lo, t_hi, end, s(end), clipped entries at end, s(t_hi))``, ``end`` an end of the
    new bracket; ``at_hi``: s at the old bracket's upper end."""
    ref, base, free_count = linear
    t_lo, t_hi = bracket
    clipped = np.clip(v[None, :] - points[:, None], lo, hi)
    totals = base - free_count * (points - ref) + clipped.sum(axis=1)
    j = int(np.count_nonzero(totals > target)) - 1  # s is nonincreasing: the last point above the target
    if j >= 0:
        t_lo = float(points[j])
    if j + 1 < points.size:
        t_hi, at_hi = float(points[j + 1]), float(totals[j + 1])
    end = j if j >= 0 else 0
    return t_lo, t_hi, float(points[end]), float(totals[end]), clipped[end], at_hi


def _sampled_pivots(v, lo, hi, enter, leave, target, bracket, linear, picks):
    """Two pivots inside ``bracket`` that likely enclose the level, from the sample ``picks`` of the undecided entries.

    The sample's sum, scaled by ``v.size / picks.size``, plus the dropped entries' ``linear`` part
    ``(ref, base, free_count)`` estimates ``s``; bisection on the sample's sorted breakpoints inside the
    bracket finds where the estimate crosses ``target``, and the pivots lie about ``2 sqrt(m)`` of those
    breakpoints (m of them) on either side (the sample's extremes where fewer are left).
    """
    ref, base, free_count = linear
    t_lo, t_hi = bracket
    vs, ls, hs = (b[picks] if np.ndim(b) else b for b in (v, lo, hi))
    points = np.concatenate([enter[picks], leave[picks]])
    points = np.unique(points[(points > t_lo) & (points < t_hi)])
    scale = v.size / picks.size

    def estimate(t):
        return base - free_count * (t - ref) + scale * float(np.clip(vs - t, ls, hs).sum())

    low, high = -1, points.size  # estimate > target at low (-1: t_lo), <= target at high
    while high - low > 1:
        mid = (low + high) // 2
        if estimate(points[mid]) > target:
            low = mid
        else:
            high = mid
    width = int(2 * np.sqrt(points.size)) + 1
    return [float(points[i]) for i in sorted({max(low - width + 1, 0), min(high + width - 1, points.size - 1)})]


def clipped_projection(V, lo, hi, target, equality=True, checked=True):
    """Per row of V, ``clip(v - tau, l, u)`` summing to ``target`` (at most ``target`` with ``equality=False``:
    tau = 0 where the clipped row already sums to at most it): the level by :func:`clipped_sum_levels`, the sum
    checked at the target's scale (:func:`sum_tolerance`), and the rows that rounded off projected again by
    :func:`clipped_projection_exactly`. ``lo``, ``hi``: arrays of V's shape or scalars; ``checked``: a boolean
    per row (or True), False where the bounds cannot reach the target (no projection: the piecewise answer is
    kept). The capped simplex's projection, and the simplex's (caps of its total)."""
    tau = clipped_sum_levels(V, lo, hi, target)
    on_sum = np.ones(V.shape[0], dtype=bool)  # the rows whose projection sums to the target
    if not equality:
        on_sum = np.clip(V, lo, hi).sum(axis=1) > target
        tau = np.where(on_sum, tau, 0.0)
    X = np.clip(V - tau[:, None], lo, hi)
    wrong = on_sum & checked & (np.abs(X.sum(axis=1) - target) > sum_tolerance(target, V.shape[1]))
    if np.any(wrong):
        lo, hi = np.broadcast_to(lo, V.shape), np.broadcast_to(hi, V.shape)
        X[wrong] = clipped_projection_exactly(V[wrong], lo[wrong], hi[wrong], target)
    return X


def clipped_projection_exactly(V, lo, hi, target):
    """Per row, ``clip(v - tau, l, u)`` summing to ``target``, exact to rounding at the bounds' scale.

    The fallback of the capped simplex's projection (and of the boxed L1 ball's, on ``|y|``) where the
    cumulated slopes were too rounded. :func:`_on_crossing_piece` finds the level ``tau`` relative to a
    breakpoint; the breakpoints ``v_i - u_i`` themselves round at the point's scale (at 1e16,
    ``1e16 - 0.6`` is ``1e16``), so every row is solved once more with the point shifted by that first
    estimate of ``tau`` (the problem is invariant under ``v -> v - c 1`` with ``tau -> tau - c``, and
    ``v_i - c`` is exact for the entries near c, the only ones not at a bound). A right sum does not
    certify the pieces: two entries with one v = -1e15 but caps 1.0 and 0.40625 (breakpoints rounded to
    0.125) were split 0.398 / 0.406, one taken as capped, where both are 0.402 (found by hypothesis).
    """
    X, level = _on_crossing_piece(V, lo, hi, target)
    again = np.isfinite(level)
    if np.any(again):
        X[again] = _on_crossing_piece(V[again] - level[again, None], lo[again], hi[again], target)[0]
    return X


def _on_crossing_piece(V, lo, hi, target):
    """``clip(v - tau, l, u)`` per row with ``sum = target``, tau found on its piece, and an estimate of tau per row.

    The piece where ``s(tau) = sum clip(v - tau, l, u)`` crosses ``target``
    is found by bisection on the sorted breakpoints, ``s`` evaluated directly
    (the differences ``v_i - b`` of the entries near b are exact, the others
    are clipped). On that piece each entry is at its cap, at its floor, or
    free, and ``tau`` is written ``c + tau'`` with ``c`` the piece's first
    breakpoint: ``tau' = (sum_free (v_i - c) + sum_caps + sum_floors - target) / #free``,
    a free entry is ``(v_i - c) - tau'``: every term at the bounds' scale.
    The estimate of tau: ``c + tau'``, or without a free entry the end of
    the piece where ``s`` jumps across the target (a cluster of breakpoints
    that rounded to one number).
    """
    groups, size = V.shape
    rows = np.arange(groups)
    breakpoints = np.concatenate([V - hi, V - lo], axis=1)
    order = np.argsort(breakpoints, axis=1, kind="stable")
    at = np.take_along_axis(breakpoints, order, axis=1)

    def s(b):
        return np.clip(V - b[:, None], lo, hi).sum(axis=1)

    # invariant: s >= target at position low (-1: tau = -inf), s < target at position high (2n: tau = +inf)
    low, high = np.full(groups, -1), np.full(groups, 2 * size)
    while np.any(high - low > 1):
        mid = (low + high) // 2
        above = s(at[rows, np.clip(mid, 0, 2 * size - 1)]) >= target
        low, high = np.where(above, mid, low), np.where(above, high, mid)
    k = low[:, None]
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(2 * size), order.shape), axis=1)
    at_cap = rank[:, :size] > k  # v_i - u_i after the piece's start: u_i on the piece
    at_floor = rank[:, size:] <= k  # v_i - l_i at or before it: l_i
    free = ~(at_cap | at_floor)
    c = at[rows, np.maximum(low, 0)]
    shifted = V - c[:, None]
    count = free.sum(axis=1)
    fixed = np.where(at_cap, hi, 0.0).sum(axis=1) + np.where(at_floor, lo, 0.0).sum(axis=1)
    offset = (np.where(free, shifted, 0.0).sum(axis=1) + fixed - target) / np.maximum(count, 1)
    X = np.where(at_cap, hi, np.where(at_floor, lo, np.clip(shifted - offset[:, None], lo, hi)))
    piece_end = at[rows, np.minimum(low + 1, 2 * size - 1)]
    level = np.where(count > 0, c + offset, np.where(fixed > target, piece_end, c))
    return X, level
