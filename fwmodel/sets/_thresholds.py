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


def clipped_sum_levels(V, lo, hi, target):
    """Per row of V, the smallest ``tau`` with ``sum_i clip(v_i - tau, l_i, u_i) <= target`` (2-D arrays).

    The sum is nonincreasing and piecewise linear in tau: entry i gives
    ``u_i`` up to ``tau = v_i - u_i``, then ``v_i - tau`` (slope -1), then
    ``l_i`` from ``tau = v_i - l_i`` on. Sorting the 2 n breakpoints and
    summing the slopes gives the sum at every breakpoint, and tau on the
    piece where it crosses ``target``. O(n log n) per row. The capped
    simplex's projection (``v - tau`` clipped to its bounds) and the boxed L1
    ball's (on ``|y|``, between the floors and the caps) both take it; the
    cumulated slopes round at the breakpoints' scale, so the callers check
    the result's sum (:func:`sum_tolerance`) and fall back to
    :func:`clipped_projection_exactly`.
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
