"""The L1 ball {x : ||vec(x)||_1 <= radius}, optionally over symmetric matrices."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from ._thresholds import non_finite, shifted_level, sum_tolerance
from .atoms import SparseAtom
from .base import ConvexSet, nonnegative_data

#: entries per chunk in the arg-max scan: the max and the min pass over a
#: chunk read it from cache, so a large direction is read from memory once
_CHUNK = 1 << 17
#: relative difference |D_ij - D_ji| / |D_ij| below which the two are equal
_SYM_RTOL = 1e-12
#: tile size of the symmetric-part scan (symmetric=True, asymmetric direction)
_TILE = 256


def argmax_abs(d):
    """Index of the first entry of largest ``|d_i|`` in a flat array.

    Equal to ``np.argmax(np.abs(d))`` without the temporary ``|d|``: the
    array is scanned in cache-sized chunks with ``max`` and ``min``
    reductions (which NumPy vectorizes better than ``argmax``), and the
    arg-max is taken only inside the winning chunk.
    """
    n = d.size
    if n <= _CHUNK:
        return int(np.abs(d).argmax())
    best, start = -1.0, 0
    for a in range(0, n, _CHUNK):
        c = d[a:a + _CHUNK]
        m = max(float(c.max()), -float(c.min()))
        if m > best or m != m:  # m != m: NaN, reported like np.argmax does
            best, start = m, a
            if m != m:
                return start + int(np.argmax(np.isnan(c)))
    c = d[start:start + _CHUNK]
    i, j = int(np.argmax(c)), int(np.argmin(c))
    if c[i] > -c[j] or (c[i] == -c[j] and i < j):
        return start + i
    return start + j


def _argmax_abs_symmetric_part(D):
    """(i, j), i <= j, maximizing ``|D_ij + D_ji|``, scanning tiles of the upper triangle."""
    n = D.shape[0]
    best, where = -1.0, (0, 0)
    buf = np.empty((_TILE, _TILE))
    for a in range(0, n, _TILE):
        for c in range(a, n, _TILE):
            T = D[a:a + _TILE, c:c + _TILE]
            out = buf[:T.shape[0], :T.shape[1]]
            np.add(T, D[c:c + _TILE, a:a + _TILE].T, out=out)
            if c == a:  # diagonal tile: the lower part repeats the upper part
                out[np.tril_indices(out.shape[0], -1, out.shape[1])] = 0.0
            np.abs(out, out=out)
            k = int(np.argmax(out))
            if out.flat[k] > best:
                best = float(out.flat[k])
                where = (a + k // out.shape[1], c + k % out.shape[1])
    return where


def _sampled_quantile(a, radius, sample, seed, absolute=False):
    """The start q of :func:`_soft_threshold_level`: about 4x the sample's estimate of the entries above the level.

    ``absolute``: the entries are |a_i| (read from the sample only, no |a| temporary).
    """
    n = a.size
    rng = np.random.default_rng(seed)
    probe = a[rng.integers(0, n, sample)]
    probe = np.sort(np.abs(probe) if absolute else probe)[::-1]
    # the sample's own soft-threshold level, radius scaled by the sample fraction
    scaled = radius * sample / n
    css = np.cumsum(probe) - scaled
    active = probe - css / np.arange(1, sample + 1) > 0
    k = int(np.flatnonzero(active)[-1]) + 1 if active.any() else 1
    return probe[min(sample - 1, 4 * k)]  # about 4x the estimated number of nonzeros above q


def _soft_threshold_level(a, radius, sample=4096, seed=0):
    """The level tau >= 0 with sum_i max(a_i - tau, 0) = radius (a >= 0, sum(a) > radius), as a pair
    ``(base, offset)``, tau = base + offset (:func:`_michelot`).

    Michelot's fixed point tau <- (sum_{a_i > tau} a_i - radius) / #{a_i > tau}
    increases to tau from any lower bound and touches only the entries above
    the current level (Condat 2016). For any subset S of the entries,
    (sum_S a_i - radius) / |S| is such a lower bound. Starting from the bound
    of S = {a_i > q}, with q a quantile estimated on a random sample so that
    S holds a few times more entries than the sample's estimate of the answer,
    one pass over a (the comparison with q) replaces the first, full-size
    Michelot passes; if the bound ends below q (S was too small to contain
    every entry above tau) the fixed point continues from it on all entries.
    Measured at 16 million entries (d = 4000, one core): 0.63 s for the
    plain fixed point from (||a||_1 - radius) / n, 0.23 s from the sampled
    start.
    """
    n = a.size
    if n > 8 * sample:
        q = _sampled_quantile(a, radius, sample, seed)
        cand = a[a > q]
        if cand.size:
            tau = (cand.sum() - radius) / cand.size
            if tau >= q:  # every entry above tau is in cand: finish there
                return _level_or_shifted(_michelot(cand, radius, tau), a, radius)
            level = _michelot(a[a > tau], radius, tau) if tau > 0 else _michelot(a, radius, 0.0)
            return _level_or_shifted(level, a, radius)
    return _level_or_shifted(_michelot(a, radius, (a.sum() - radius) / n), a, radius)


def _michelot(cand, radius, tau, all_above=False):
    """Michelot's fixed point from a lower bound ``tau``, over the entries ``cand`` that may lie above the level.

    ``all_above``: every entry of ``cand`` is above ``tau`` (no filtered copy made).
    Returns the level, or None when it is not exact to rounding at the
    radius' scale: the entries above it, less it, do not sum to the radius
    to that rounding (the certificate of :mod:`fwmodel.sets._thresholds`,
    one pass over those entries), or the radius is below the rounding of
    the sums. That happens for an input huge next to the radius; the caller
    then finds the level relative to the largest entry of the whole input
    (:func:`_level_or_shifted`): rounded levels may have dropped some of the
    entries within the radius of it from ``cand``.
    """
    above = cand if all_above else cand[cand > tau]
    if above.size == 0:
        return None
    while True:
        tau_new = (above.sum() - radius) / above.size
        keep = above > tau_new
        if keep.all():
            tau = max(tau_new, 0.0)
            if abs(float(np.subtract(above, tau).sum()) - radius) <= sum_tolerance(radius, above.size):
                return tau
            return None
        if not keep.any():  # the radius is below the rounding of the sums
            return None
        above = above[keep]


def _level_or_shifted(tau, a, radius):
    """The level as a pair ``(base, offset)``, tau = base + offset: ``(tau, 0.0)`` from :func:`_michelot`, or where
    it gave None, found relative to max(a) (:func:`~fwmodel.sets._thresholds.shifted_level`; ``a``: all the entries)."""
    return (tau, 0.0) if tau is not None else shifted_level(a, radius)


def _in_place_ok(point, out, size):
    """``out`` can receive the projection of ``point`` chunk by chunk (flat float64 arrays of the set's size)."""
    return (type(out) is np.ndarray and out.dtype == np.float64 and out.ndim == 1 and out.size == size
            and out.flags.c_contiguous and isinstance(point, np.ndarray) and point.size == size)


def _abs_sum(x):
    """sum_i |x_i| of a flat array, chunk by chunk (no |x| temporary)."""
    return float(sum(np.abs(x[a:a + _CHUNK]).sum() for a in range(0, x.size, _CHUNK)))


def _abs_above(x, level, count=None):
    """The entries |x_i| > level, in order, gathered chunk by chunk (no |x| temporary).

    ``count``: their number when known (one array of that size is filled in
    place, instead of a list of pieces and their concatenation: half the memory).
    """
    if count is None:
        count = _abs_sum_above(x, level)[1]
    out = np.empty(count)
    filled = 0
    for a in range(0, x.size, _CHUNK):
        c = np.abs(x[a:a + _CHUNK])
        c = c[c > level]
        out[filled:filled + c.size] = c
        filled += c.size
    return out


def _project_in_place(x, radius, level_hint=None):
    """x <- the projection of x onto the L1 ball of ``radius``, in place (flat array); returns the
    soft-threshold level (None: x was in the ball).

    The same level as :func:`_soft_threshold_level` on |x| (the same
    candidate sets, in the same order), with |x| read chunk by chunk, and
    the soft-thresholding written chunk by chunk. ``level_hint`` (the level
    of the last projection onto this ball): tried first by
    :func:`_project_from_hint`, two passes over x instead of five or more;
    the numbers are the same either way. A NaN or infinite entry makes every entry NaN.
    """
    n = x.size
    if level_hint is not None and radius > 0 and n > 8 * 4096:
        tau = _project_from_hint(x, radius, HINT_FRACTION * level_hint)
        if tau is not None:
            return tau
    norm1 = _abs_sum(x)
    if non_finite(norm1, x):  # NaN everywhere (fwmodel.sets._thresholds), no level to keep
        x.fill(np.nan)
        return None
    if norm1 <= radius:
        return None
    if radius == 0:
        x.fill(0.0)
        return 0.0
    base, offset = _soft_threshold_level_chunked(x, radius)
    for a in range(0, n, _CHUNK):
        c = x[a:a + _CHUNK]
        m = np.abs(c)
        m -= base
        if offset:  # a level kept as base + offset (an input huge next to the radius)
            m -= offset
        np.maximum(m, 0.0, out=m)
        np.copysign(m, c, out=c)
    return base + offset


#: the warm start of :func:`_project_from_hint` gathers the entries above this fraction of the last
#: level. On the paper's problem at d = 4000 the level moved by at most 7% from one projection step
#: to the next (15 steps), and 1.2-1.4 times the support lay above 0.8 of the level
HINT_FRACTION = 0.8


#: entries per chunk of :func:`_project_from_hint`'s pass (its |x| scratch: half a megabyte)
_HINT_CHUNK = 1 << 16
#: first capacity of the gathered entries (doubled as needed up to ``_gather_budget``)
_HINT_CAPACITY = 1 << 16


def _level_of_candidates(candidates, radius, q):
    """The soft-thresholding level tau from the entries ``candidates`` (the |x_i| > q, in order), or None.

    ``(sum |x_i| - radius) / count`` over any set of entries is at most tau (Condat 2016); where that bound
    is at least q the candidates hold every entry above tau, and Michelot's fixed point on them alone gives
    tau. None where the guess q fails (the bound below q, or NaN / inf entries: the general path decides)
    or the level is not exact at the radius' scale, or 0.
    """
    bound = (candidates.sum() - radius) / candidates.size
    if not (bound >= q and np.isfinite(bound)):
        return None
    tau = _michelot(candidates, radius, bound)
    if tau is None or not tau > 0:
        return None
    return tau


def _project_from_hint(x, radius, q):
    """:func:`_project_in_place` in two passes over x, given a guess ``q > 0`` of a lower bound of the level.

    Pass 1 gathers the entries with |x_i| > q or NaN (their positions and |x_i|;
    at most ``_gather_budget(n)`` of them). For any set S of entries,
    ``(sum_S |x_i| - radius) / |S|`` is at most the level tau (Condat 2016,
    as in :func:`_soft_threshold_level`); when that bound for S = {|x_i| > q}
    is at least q, S holds every entry above tau, Michelot's fixed point on S
    alone gives tau, and tau > 0 shows that x lies outside the ball (no sum
    of |x| needed). Pass 2 writes the signed zeros that soft-thresholding
    leaves below tau (``copysign(0, x)``, one read and one write), then the
    thresholded values at the gathered positions. The fixed point ends on
    the entries above tau in their order, as the other paths do, so the level
    and the point are the same numbers. Returns tau, or None (x untouched)
    when the guess fails: more entries above q than the budget, or the bound
    below q (q was above the level) or NaN (x holds a NaN).
    """
    n = x.size
    budget = _gather_budget(n)
    index_type = np.int32 if n <= np.iinfo(np.int32).max else np.intp
    capacity = min(budget, _HINT_CAPACITY)
    positions, magnitudes = np.empty(capacity, dtype=index_type), np.empty(capacity)
    chunk = min(_HINT_CHUNK, n)
    magnitude, above = np.empty(chunk), np.empty(chunk, dtype=bool)
    filled = 0
    for a in range(0, n, _HINT_CHUNK):
        c = x[a:a + _HINT_CHUNK]
        m, mask = magnitude[:c.size], above[:c.size]
        np.abs(c, out=m)
        # not |x_i| <= q rather than |x_i| > q: a NaN entry is gathered too, so the bound below is
        # NaN and the general path projects (it keeps the NaN; skipping it would write a 0 there)
        np.less_equal(m, q, out=mask)
        np.logical_not(mask, out=mask)
        found = np.flatnonzero(mask)
        if filled + found.size > capacity:
            if filled + found.size > budget:
                return None
            capacity = min(budget, max(2 * capacity, filled + found.size))
            positions, magnitudes = _grown(positions, filled, capacity), _grown(magnitudes, filled, capacity)
        np.add(found, a, out=positions[filled:filled + found.size], casting="unsafe")
        np.take(m, found, out=magnitudes[filled:filled + found.size])
        filled += found.size
    magnitude = above = found = None
    if not filled:
        return None
    positions, candidates = positions[:filled], magnitudes[:filled]
    tau = _level_of_candidates(candidates, radius, q)
    if tau is None:
        return None
    # soft-thresholding of the gathered entries, the same operations as the chunked pass of
    # _project_in_place (|x_i| - tau, max with 0, the sign of x_i)
    candidates -= tau
    np.maximum(candidates, 0.0, out=candidates)
    np.copysign(candidates, x[positions], out=candidates)
    np.copysign(0.0, x, out=x)
    x[positions] = candidates
    return tau


#: the sparse projected step of :func:`_sparse_projected_step` gathers at most this fraction of the
#: entries (the support of x and the entries above the warm start's guess): at d = 4000 on the paper's
#: problem 0.2-0.3 % of them, on a point that soft-thresholding keeps sparse
SPARSE_STEP_FRACTION = 1.0 / 32


def _sparse_projected_step(x, g, w, sign, scale, radius, q):
    """The projected-gradient direction ``d = P(x + scale (g + sign w)) - x`` on its support, in one pass over x.

    The target ``t = x + scale (g + sign w)`` is formed chunk by chunk with
    the operations of the dense path of the engine's projection step (``g +-
    w``, times ``scale``, plus x), and the pass gathers the entries with
    |t_i| > q (or NaN), as :func:`_project_from_hint` does, together with the
    support of x (x_i != 0). Outside them t_i is at most q in absolute value
    and x_i is 0, so once the level tau is found at least q, P(t)_i = 0 and
    d_i = 0: d is supported on the gathered entries, and nothing of size n is
    written. The level is Michelot's fixed point on the same candidates in the
    same order as :func:`_project_from_hint`, so tau and the entries of d are
    the same numbers as the dense path's (signs of zeros aside).

    Returns ``(positions, d, g, w, tau)`` (d, g, w at the positions, in
    order); ``TOO_DENSE`` where more than ``SPARSE_STEP_FRACTION`` of the
    entries would be gathered (a point that is not sparse); None where the
    dense path must decide for another reason: the bound of the candidates
    below q (the guess was above the level), a NaN, a level that is not exact.
    """
    n = x.size
    budget = max(int(n * SPARSE_STEP_FRACTION), 1 << 12)
    index_type = np.int32 if n <= np.iinfo(np.int32).max else np.intp
    capacity = min(budget, _HINT_CAPACITY)
    positions = np.empty(capacity, dtype=index_type)
    gathered = [np.empty(capacity) for _ in range(4)]  # t, x, g, w at the positions
    chunk = min(_HINT_CHUNK, n)
    target, magnitude = np.empty(chunk), np.empty(chunk)
    above, support = np.empty(chunk, dtype=bool), np.empty(chunk, dtype=bool)
    combine = np.add if sign > 0 else np.subtract
    filled = 0
    for a in range(0, n, _HINT_CHUNK):
        b = min(a + _HINT_CHUNK, n)
        t, m, mask, nz = target[:b - a], magnitude[:b - a], above[:b - a], support[:b - a]
        x_c, g_c, w_c = x[a:b], g[a:b], w[a:b]
        combine(g_c, w_c, out=t)  # the dense path's gradient g +- w, then its target (grad * scale + x)
        t *= scale
        t += x_c
        np.abs(t, out=m)
        np.less_equal(m, q, out=mask)  # not |t_i| <= q: a NaN is gathered (and refused below)
        np.logical_not(mask, out=mask)
        np.not_equal(x_c, 0.0, out=nz)  # and the support of x
        np.logical_or(nz, mask, out=nz)
        found = np.flatnonzero(nz)
        if filled + found.size > capacity:
            if filled + found.size > budget:
                return TOO_DENSE
            capacity = min(budget, max(2 * capacity, filled + found.size))
            positions = _grown(positions, filled, capacity)
            gathered = [_grown(v, filled, capacity) for v in gathered]
        np.add(found, a, out=positions[filled:filled + found.size], casting="unsafe")
        for out, source in zip(gathered, (t, x_c, g_c, w_c)):
            np.take(source, found, out=out[filled:filled + found.size])
        filled += found.size
    target = magnitude = above = support = found = None
    positions = positions[:filled]
    t, x_p, g_p, w_p = (v[:filled] for v in gathered)
    magnitudes = np.abs(t)
    candidates = magnitudes[~(magnitudes <= q)]  # the entries |t_i| > q (or NaN), in order
    if not candidates.size:
        return None
    tau = _level_of_candidates(candidates, radius, q)
    if tau is None:
        return None
    # soft-thresholding at the gathered entries (0 at those at most q: tau >= q), then - x
    magnitudes -= tau
    np.maximum(magnitudes, 0.0, out=magnitudes)
    np.copysign(magnitudes, t, out=magnitudes)
    magnitudes -= x_p
    return positions, magnitudes, g_p, w_p, tau


#: :func:`_sparse_projected_step`'s answer for a point with too many entries to gather
TOO_DENSE = "too dense"

#: calls of ``L1Ball.projected_step_sparse`` answered None at once after a point was too dense (its
#: projection steps take the dense path meanwhile); a refused guess of the level is tried again at the
#: next step, the dense path's projection having set a fresh level
SPARSE_RETRY = 10

#: sampled entries of the target for the first sparse projected step's guess of the level
_TARGET_SAMPLE = 1 << 14


def _sampled_target_quantile(x, g, w, sign, scale):
    """The first sparse projected step's guess q of the level: the value of ``|x + scale (g + sign w)|`` that
    about ``n / 64`` entries exceed, read at sampled entries only (no pass over x).

    Any q between the level and the value that ``SPARSE_STEP_FRACTION`` (1/32) of the entries exceed lets
    :func:`_sparse_projected_step` find the direction; half that fraction leaves room for the sample's error
    in the count, and is below the level wherever the projection keeps fewer than about n / 64 entries, however
    heavy the target's tails (a guess from the sample's own soft-thresholding level, as the dense path starts
    from, fell above the level or far below it on Cauchy-distributed targets). Where it is above the level,
    the step refuses it and the dense path's projection sets the level for the next step."""
    positions = np.random.default_rng(0).integers(0, x.size, _TARGET_SAMPLE)
    probe = g[positions] + w[positions] if sign > 0 else g[positions] - w[positions]
    probe *= scale
    probe += x[positions]
    probe = np.abs(probe, out=probe)
    return float(np.partition(probe, probe.size - _TARGET_SAMPLE // 64)[probe.size - _TARGET_SAMPLE // 64])


def _grown(array, filled, capacity):
    """A new array of ``capacity`` entries holding the first ``filled`` of ``array``."""
    out = np.empty(capacity, dtype=array.dtype)
    out[:filled] = array[:filled]
    return out


def _abs_sum_above(x, level):
    """(sum, count) of the entries |x_i| > level, chunk by chunk (nothing stored)."""
    total, count = 0.0, 0
    for a in range(0, x.size, _CHUNK):
        c = np.abs(x[a:a + _CHUNK])
        c = c[c > level]
        total += float(c.sum())
        count += c.size
    return total, count


def _soft_threshold_level_chunked(x, radius, sample=4096, seed=0):
    """:func:`_soft_threshold_level` of |x|, reading |x| chunk by chunk, with bounded scratch memory.

    The same steps, with the candidate set S = {|x_i| > q} never stored:
    its sum and size give Michelot's first level (summed chunk by chunk:
    the same number up to rounding). The fixed point then continues on the
    entries above the current level, gathered into one array only once they
    are at most ``_gather_budget(n)`` (n / 128); while there are more, each
    Michelot step ``tau <- (sum_{|x_i| > tau} |x_i| - radius) / #{|x_i| > tau}``
    is one chunked pass over x that stores nothing (the same sequence of
    levels: the exact fixed point, its sums rounded differently). At
    d = 4000 on the paper's problem the first level left about a tenth of
    the 16 million entries, which, gathered and then compacted by the fixed
    point, held 0.3 of a d x d array at the projection's peak.
    """
    n = x.size
    if n > 8 * sample:
        q = _sampled_quantile(x, radius, sample, seed, absolute=True)
        total, count = _abs_sum_above(x, q)
        if count:
            tau = (total - radius) / count
            if tau > 0:
                total, count = _abs_sum_above(x, tau)  # {|x_i| > tau}: the set the fixed point starts from
                budget = _gather_budget(n)
                while count > budget:  # Michelot's steps, one chunked pass each, until the set is small
                    tau_next = (total - radius) / count
                    total_next, count_next = _abs_sum_above(x, tau_next)
                    if count_next == count:  # no entry left the set: tau_next is the level
                        return max(tau_next, 0.0), 0.0
                    if count_next == 0:  # the radius is below the sums' rounding: see _michelot
                        return _level_at_top_chunked(x, radius)
                    tau, total, count = tau_next, total_next, count_next
                if count:
                    level = _michelot(_abs_above(x, tau, count), radius, tau, all_above=True)
                    return (level, 0.0) if level is not None else _level_at_top_chunked(x, radius)
    return _soft_threshold_level(np.abs(x), radius, sample, seed)  # rare: the whole of |x| is needed


def _gather_budget(n):
    """Entries the chunked soft-threshold search may gather into one array: n / 128 (at least 2^15).

    The fixed point on the gathered entries keeps them, a mask and their
    compacted copy (about 2.1 times the entries): at most ~0.017 of the
    point's size.
    """
    return max(n >> 7, 1 << 15)


def _level_at_top_chunked(x, radius):
    """The level as a pair when the radius is below the rounding of the sums (:func:`_michelot`): found relative
    to max|x| from the entries within the radius of it (gathered chunk by chunk)."""
    top = max(float(np.abs(x[a:a + _CHUNK]).max()) for a in range(0, x.size, _CHUNK))
    near = [c[c - top > -radius] for c in (np.abs(x[a:a + _CHUNK]) for a in range(0, x.size, _CHUNK))]
    return shifted_level(np.concatenate(near), radius)


class L1Ball(ConvexSet):
    """The L1 ball ``{x : sum_i |x_i| <= radius}`` over all entries of ``expr``.

    Its vertices are the ``2 n`` points ``+-radius * e_i``. The LMO minimizes
    ``<d, s>`` by putting all the mass on the coordinate where ``|d_i|`` is
    largest, with the sign opposite to ``d_i``::

        i = argmax_j |d_j|,   s = -radius * sign(d_i) * e_i

    (``-radius * e_i`` when ``d_i = 0``), so ``<d, s> = -radius * ||d||_inf``.
    The vertex is returned as a one- or two-entry :class:`SparseAtom`.

    Symmetric matrices (paper Sec. 5, the LMO of X_1 for eq.
    ``constrained_sparse_low_rank``). For a square matrix and a direction
    ``D`` whose largest entry is matched by its mirror (``D_ij = D_ji``, as
    when ``D`` is symmetric), the symmetric point
    ``-radius * sign(D_ij) * (E_ij + E_ji) / 2`` is also a minimizer (the
    midpoint of two minimizing vertices); returning it keeps a symmetric
    iterate symmetric, so the gradients stay symmetric and the trace-norm LMO
    can use a symmetric eigensolver. ``symmetric`` chooses:

    * ``None`` (default): the symmetric minimizer whenever it is one (the set
      is the plain L1 ball; nothing changes for non-square expressions);
    * ``True``: the set is ``{X = X^T, ||X||_1 <= radius}``, whose vertices
      are ``+-radius (E_ij + E_ji) / 2``; its LMO minimizes over
      ``sym(D) = (D + D^T) / 2``, for any ``D``;
    * ``False``: always the one-entry vertex.

    Cost: one pass over the direction (no temporary of its size), plus, only
    for ``symmetric=True`` and an asymmetric direction, one tiled pass that
    forms ``sym(D)`` a tile at a time.
    """

    is_polytope = True

    @property
    def keeps_symmetric(self):
        return self.symmetric is True

    def __init__(self, expr, radius=1.0, symmetric=None):
        super().__init__(expr)
        self._store_data("radius", radius, nonnegative_data("radius", "L1Ball"))
        if symmetric not in (None, True, False):
            raise ValueError(f"L1Ball: symmetric must be None, True or False, got {symmetric!r}")
        shape = tuple(self.shape)
        self._square = len(shape) == 2 and shape[0] == shape[1]
        if symmetric and not self._square:
            raise ModelError(f"L1Ball(symmetric=True): the expression must be a square matrix, "
                             f"got shape {shape} for {self.expr!r}")
        self.symmetric = symmetric
        #: the level of the last in-place projection (a warm start for the next one: consecutive
        #: projection steps project nearby points; only a hint, the result does not depend on it)
        self._level_hint = None
        #: sparse projected steps still refused without a pass after a point too dense (SPARSE_RETRY)
        self._dense_skip = 0

    def lmo_atom(self, flat_direction):
        d = as_flat_direction(self, flat_direction)
        k = argmax_abs(d)
        if self._square and self.symmetric is not False:
            n = self.shape[0]
            i, j = divmod(k, n)
            a, b = d[k], d[j * n + i]
            total = None  # D_ij + D_ji at the chosen symmetric vertex
            if abs(a - b) <= _SYM_RTOL * abs(a):
                total = a + b  # the mirror ties: the symmetric point also minimizes
            elif self.symmetric:
                i, j = _argmax_abs_symmetric_part(d.reshape(n, n))
                total = d[i * n + j] + d[j * n + i]
            if total is not None:
                value = self.radius if total < 0 else -self.radius
                if i == j:
                    return SparseAtom([i * n + i], [value], self.size)
                i, j = min(i, j), max(i, j)
                return SparseAtom([i * n + j, j * n + i], [0.5 * value, 0.5 * value], self.size)
        # d_k = 0 only when d = 0: any vertex minimizes, take -radius * e_k.
        value = self.radius if d[k] < 0 else -self.radius
        return SparseAtom([k], [value], self.size)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    #: atoms_of_point writes at most this many atoms (one Python object each, ~1 KB: past it a
    #: warm start's restart costs less than the decomposition)
    MAX_POINT_ATOMS = 100_000

    def atoms_of_point(self, flat_point):
        """The point as the LMO's vertices and the origin (:meth:`initial_atom`), with its weights.

        x = sum_k (|x_k| / r) (r sign(x_k) e_k) + (1 - ||x||_1 / r) 0. On a square
        matrix whose LMO returns the symmetric vertices ``+-r (E_ij + E_ji) / 2``
        (``symmetric`` None or True), each mirrored pair x_ij = x_ji (i < j) is
        written with that vertex, weight 2 |x_ij| / r, so that BPCG's steps keep
        a symmetric point symmetric; with ``symmetric=True`` a point that is
        not symmetric gives None. None also at radius 0, for a non-finite
        point, and past ``MAX_POINT_ATOMS`` nonzeros.
        """
        r = float(self.radius)
        x = np.asarray(flat_point, dtype=float).ravel()
        if r <= 0 or not np.all(np.isfinite(x)):
            return None
        nonzero = x != 0
        if int(np.count_nonzero(nonzero)) > self.MAX_POINT_ATOMS:
            return None
        l1 = float(np.abs(x).sum())
        total = max(l1, r)  # a point on the sphere up to rounding: the weights still sum to 1
        atoms, weights = [], []
        single = nonzero.copy()
        if self._square and self.symmetric is not False:
            n = self.shape[0]
            X = x.reshape(n, n)
            i, j = np.nonzero(np.triu(nonzero.reshape(n, n), k=1) & (X == X.T))
            single.reshape(n, n)[i, j] = single.reshape(n, n)[j, i] = False
            if self.symmetric is True and np.any(single.reshape(n, n)[~np.eye(n, dtype=bool)]):
                return None  # an asymmetric point is not in the symmetric ball's hull of symmetric vertices
            for a, b in zip(i.tolist(), j.tolist()):
                value = r if X[a, b] > 0 else -r
                atoms.append(SparseAtom([a * n + b, b * n + a], [0.5 * value, 0.5 * value], self.size))
                weights.append(2.0 * abs(float(X[a, b])) / total)
        for k in np.flatnonzero(single).tolist():
            atoms.append(SparseAtom([k], [r if x[k] > 0 else -r], self.size))
            weights.append(abs(float(x[k])) / total)
        kept = [(atom, w) for atom, w in zip(atoms, weights) if w > 0]  # a subnormal entry's weight underflows
        rest = (total - l1) / total  # exactly 0 on the sphere (no origin atom of rounding weight)
        if rest > 0 or not kept:
            kept.append((self.initial_atom(), rest if kept else 1.0))
        return [atom for atom, _ in kept], [w for _, w in kept]

    def project(self, point):
        """Euclidean projection onto the ball (for splitting baselines and tests).

        Soft-thresholding at the level ``tau`` with ``sum_i max(|x_i| - tau, 0)
        = radius``, found by Michelot's / Condat's fixed point on the shrinking
        set of candidate entries (expected linear time; Condat 2016). With
        ``symmetric=True`` the point is first replaced by its symmetric part
        (the projection onto symmetric matrices, which commutes with this one).
        """
        x = as_direction(self, point)
        if self.symmetric:
            x = 0.5 * (x + x.T)
        a = np.abs(x).ravel()
        r = self.radius
        norm1 = a.sum()
        if non_finite(norm1, a):  # NaN everywhere (fwmodel.sets._thresholds)
            return np.full_like(x, np.nan)
        if norm1 <= r:
            return x.copy()
        if r == 0:
            return np.zeros_like(x)
        base, offset = _soft_threshold_level(a, r)
        out = a.reshape(x.shape)
        out -= base
        if offset:  # a level kept as base + offset (an input huge next to the radius)
            out -= offset
        np.maximum(out, 0.0, out=out)
        return np.copysign(out, x, out=out)

    has_cheap_projection = True
    #: ``project_flat`` accepts ``out`` (the engine's projection steps project in place)
    projects_in_place = True

    def project_flat(self, flat_point, out=None):
        """:meth:`project` on a flat point: soft-thresholding, O(n) expected.

        ``out``: a flat float64 array of the set's size to write the projection
        into; it may be ``flat_point`` itself (then the projection is taken in
        place, in cache-sized chunks, without a point-size temporary: at
        d = 4000 one 128 MB array less at the peak of a projection step). The
        numbers are those of :meth:`project`. In place, the level of the last
        projection is tried first (:func:`_project_from_hint`: two passes over
        the point instead of five or more when consecutive points are close,
        as in the engine's projection steps; the same numbers either way).
        """
        if out is None or self.symmetric or not _in_place_ok(flat_point, out, self.size):
            projected = self.project(np.asarray(flat_point, dtype=float).reshape(tuple(self.shape))).ravel()
            if out is None:
                return projected
            np.copyto(out, projected)
            return out
        if out is not flat_point:
            np.copyto(out, flat_point)
        level = _project_in_place(out, self.radius, self._level_hint)
        self._level_hint = level if level is not None and level > 0 else None
        return out

    def refresh(self):
        """:meth:`ConvexSet.refresh`; each solve also tries the sparse projected step from its first step on
        (a dense point the last solve found is not assumed)."""
        self._dense_skip = 0
        return super().refresh()

    def projected_step_sparse(self, x, g, w, sign, scale):
        """The direction ``P(x + scale (g + sign w)) - x`` of a projected-gradient step, on its support, or None.

        For the engine's projection step on one copy tied by ``sign * I``
        (``engine/projection_step.py``): with g f's gradient on the copy and w
        the rows' y + lam r, ``g + sign w`` is the copy's gradient of the
        augmented Lagrangian and ``scale = -1 / L``. Where the last level is
        known (a warm start) and x and the projection are sparse,
        :func:`_sparse_projected_step` finds the level and d in one pass over
        x, g and w, and returns ``(positions, d, g, w)`` at d's support (the
        same level and entries as projecting in place, then subtracting x).
        None: the caller takes the dense path (a symmetric ball, a small point, a
        guess of the level above it, a dense point: then for the next
        ``SPARSE_RETRY`` calls too, without a pass).
        """
        n = x.size
        if self.symmetric or not sign or n <= 8 * 4096:
            return None
        radius = self.radius
        if not radius > 0:
            return None
        if self._dense_skip > 0:  # the last tries found a dense point: the dense path, without a pass here
            self._dense_skip -= 1
            return None
        warm = self._level_hint is not None
        if warm:
            q = HINT_FRACTION * self._level_hint
        else:  # the first step: a guess below the level from a sample of the target
            q = _sampled_target_quantile(x, g, w, sign, scale)
        found = _sparse_projected_step(x, g, w, sign, scale, radius, q)
        if found is TOO_DENSE:
            # from the last level: the point is dense. From a sampled guess (a heavy-tailed target can put it
            # far below the level): the dense path's projection sets the level, tried from the next step on
            if warm:
                self._dense_skip = SPARSE_RETRY
            return None
        if found is None:
            return None
        self._level_hint = found[4]
        return found[:4]

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        slack = tol * self.radius  # (relative: a floor of 1 let a ball of radius 1e-11 contain points 1e-10 away)
        if self.symmetric and np.max(np.abs(x - x.T), initial=0.0) > slack:
            return False
        return bool(np.abs(x).sum() <= self.radius + slack)

    def contains_origin(self):
        """0 is in every L1 ball (no pass over the entries needed to know it)."""
        return True

    def diameter(self):
        return 2.0 * self.radius

    def coordinate_bounds(self):
        """Every entry lies in [-radius, radius]."""
        return np.full(self.size, -self.radius), np.full(self.size, self.radius)

    def symmetric_variant(self):
        """``L1Ball(symmetric=True)``: vertices ``+-radius (E_ij + E_ji) / 2``."""
        if not self._square:
            return None
        return L1Ball(self.expr, self.data_source("radius"), symmetric=True)

    def __repr__(self):
        extra = "" if self.symmetric is None else f", symmetric={self.symmetric}"
        return f"L1Ball({self.expr!r}, radius={self._datum_text('radius')}{extra})"
