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
