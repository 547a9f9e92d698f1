"""Alignment polytopes: monotone alignments of two sequences, LMO by dynamic programming.

The FW-AL paper (Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018, Sec. 1 and
2.1) cites alignment constraints as the typical set for which "there exists a
fast and elegant dynamic programming algorithm to compute the LMO, while there
is no known practical algorithm to compute the projection": multiple sequence
alignment and motif discovery are posed over intersections of alignment
polytopes and consensus constraints, each reached only through its LMO.

Two families of vertices, both 0/1 matrices ``X`` of shape ``(n, m)`` that
relate position ``i`` of a first sequence to position ``j`` of a second:

``kind="matching"`` (Needleman-Wunsch)
    ``X[i, j] = 1`` for the matched pairs of a *non-crossing partial
    matching*: if ``(i, j)`` and ``(i', j')`` are both matched and ``i < i'``
    then ``j < j'``. Every global alignment with gaps is such a matching (the
    unmatched positions are the gaps), so with a substitution score ``S`` and
    a linear gap score ``gap`` (per gap position)::

        score(X) = sum_ij S[i, j] X[i, j] + gap * (n + m - 2 sum_ij X[i, j])
                 = gap * (n + m) - <-(S - 2 gap), X>,

    and the best alignment is the LMO in direction ``-(S - 2 gap)``.

``kind="path"`` (dynamic time warping)
    ``X`` is the indicator of a monotone connected path from ``(0, 0)`` to
    ``(n-1, m-1)`` with steps right ``(0, 1)``, down ``(1, 0)`` and diagonal
    ``(1, 1)``; ``<C, X>`` is the DTW cost of the path under the cost matrix C.

``band=w`` (Sakoe-Chiba) keeps only the cells with ``|i*m/n - j| <= w``; the
other cells are 0 in every vertex.

The LMO minimizes ``<G, X>`` over the vertices by a dynamic program over the
``n x m`` grid, vectorized one row at a time (:func:`matching_lmo` and
:func:`path_lmo` derive the row updates) so that the Python loop runs over
rows, not cells. The vertex is returned as a sparse atom holding the ``O(n + m)``
matched or visited cells, which keeps Frank-Wolfe active sets small.

A ``(B, n, m)`` expression with ``axis=0`` is the product of ``B`` alignment
polytopes (one per sequence pair) solved as one block: every row step of the
dynamic program operates on a ``(B, m)`` array.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from ..errors import ModelError
from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import SparseAtom
from .base import ConvexSet

__all__ = ["AlignmentPolytope", "matching_lmo", "path_lmo"]

KINDS = ("matching", "path")

# Above this many cells per alignment, ``contains`` for kind="path" checks
# necessary conditions only instead of solving its flow LP.
_PATH_LP_MAX_CELLS = 10_000

# Batches at least this large trace back all alignments together (one NumPy
# step per cell of the longest path) instead of one Python loop per pair.
_VECTOR_TRACEBACK_MIN_BATCH = 64


# ============================================================== band geometry
def _check_band(band, owner="AlignmentPolytope"):
    """``band`` as a float (``inf`` for no band); a ModelError (a ValueError) when invalid."""
    if band is None:
        return math.inf
    if isinstance(band, (bool, np.bool_)) or not isinstance(band, numbers.Real):
        raise ModelError(f"{owner}: band must be a nonnegative number or None, got {band!r}")
    w = float(band)
    if math.isnan(w) or w < 0:
        raise ModelError(f"{owner}: band must be a nonnegative number or None, got {band!r}")
    return w


def band_mask(n, m, band):
    """Boolean ``(n, m)`` mask of the cells with ``|i*m/n - j| <= band``.

    Evaluated as ``|i*m - j*n| <= band*n`` so that the integer part is exact.
    ``band=None`` (or ``inf``) allows every cell.
    """
    w = _check_band(band, "band_mask")
    if math.isinf(w):
        return np.ones((n, m), dtype=bool)
    offset = np.arange(n, dtype=np.int64)[:, None] * m - np.arange(m, dtype=np.int64)[None, :] * n
    # a few ulps of slack so that a band computed as k/n admits offset k
    return np.abs(offset).astype(float) <= w * n * (1 + 4 * np.finfo(float).eps)


def _band_rows(mask, n=None, m=None):
    """Per row, the first and last allowed column (the band rows are intervals).

    Rows without an allowed cell get ``lo = m``, ``hi = -1``; ``mask=None``
    (no band, shape ``(n, m)``) allows every column.
    """
    if mask is None:
        return np.zeros(n, dtype=np.intp), np.full(n, m - 1, dtype=np.intp)
    n, m = mask.shape
    any_ = mask.any(axis=1)
    lo = np.where(any_, np.argmax(mask, axis=1), m)
    hi = np.where(any_, m - 1 - np.argmax(mask[:, ::-1], axis=1), -1)
    return lo.astype(np.intp), hi.astype(np.intp)


def _path_fits(lo, hi, m):
    """Whether a monotone path from (0, 0) to (n-1, m-1) fits in the band rows.

    The cells reachable in row i are exactly [lo[i], hi[i]] (the left ends
    never decrease, and right steps fill a row interval), so it suffices that
    every row is nonempty, row i+1 starts at most one column right of where
    row i ends (a diagonal step), row 0 starts at 0 and the last row ends at m-1.
    """
    if np.any(lo > hi) or lo[0] != 0 or hi[-1] != m - 1:
        return False
    return bool(np.all(lo[1:] <= hi[:-1] + 1))


def min_path_band(n, m):
    """The smallest band for which kind="path" has a vertex on an (n, m) grid.

    The band only changes at the values ``|i*m - j*n| / n``; a bisection over
    them finds the first that fits.
    """
    offset = np.arange(n, dtype=np.int64)[:, None] * m - np.arange(m, dtype=np.int64)[None, :] * n
    candidates = np.unique(np.abs(offset))  # in units of 1/n
    lo, hi = 0, candidates.size - 1  # the largest candidate allows every cell
    while lo < hi:
        mid = (lo + hi) // 2
        mask = np.abs(offset) <= candidates[mid]
        if _path_fits(*_band_rows(mask), m):
            hi = mid
        else:
            lo = mid + 1
    return float(candidates[lo]) / n


# ================================================================ the solvers
def _as_batch(direction, owner):
    """``direction`` as a float ``(B, n, m)`` array and whether it was 2-D."""
    d = np.asarray(direction, dtype=float)
    if d.ndim == 2:
        single = True
        d = d[None]
    elif d.ndim == 3:
        single = False
    else:
        raise ModelError(f"{owner}: direction must have shape (n, m) or (B, n, m), got {d.shape}")
    if 0 in d.shape:
        raise ModelError(f"{owner}: direction of shape {d.shape if not single else d.shape[1:]} has no entries")
    return d, single


class _Workspace:
    """DP buffers reused across LMO calls on the same shape (FW calls it every step)."""

    def __init__(self):
        self._arrays = {}

    def get(self, name, shape, dtype):
        a = self._arrays.get(name)
        if a is None or a.shape != shape or a.dtype != dtype:
            a = np.empty(shape, dtype=dtype)
            self._arrays[name] = a
        return a


def _solve_matching(cost, mask=None, work=None):
    """Minimum-cost non-crossing partial matchings for a ``(B, n, m)`` cost array.

    ``mask`` (n, m) marks the band (None: every cell). Returns ``(cells,
    values)``: the sorted flat C-order indices of the matched cells in the
    ``(B, n, m)`` array and the ``B`` optimal costs. The recursion is in
    :func:`matching_lmo`.
    """
    B, n, m = cost.shape
    if mask is not None:
        # cells outside the band get score -inf: never matched
        cost = np.where(mask, cost, np.inf)
    work = work if work is not None else _Workspace()
    # one alignment works on 1-D rows (cheaper NumPy calls); a batch on (B, m)
    batch = () if B == 1 else (B,)
    S = work.get("S", (n + 1, *batch, m + 1), np.float64)
    t = work.get("t", (*batch, m), np.float64)
    S[0] = 0.0
    S[..., 0] = 0.0
    Si = S.view(np.int64)
    head = S[:-1, ..., :-1]  # S[i-1, j-1]
    tail = S[..., 1:]  # S[i, j]
    rows = cost[0] if B == 1 else cost.transpose(1, 0, 2)  # row i: (m,) or (B, m), no copy
    subtract, maximum, accumulate = np.subtract, np.maximum, np.maximum.accumulate
    for sp_head, sp_tail, sc_tail, sc_int, g in zip(head, tail, tail[1:], Si[1:], rows):
        subtract(sp_head, g, out=t)
        maximum(sp_tail, t, out=sc_tail)
        accumulate(sc_int, axis=-1, out=sc_int)
    S = S.reshape(n + 1, B, m + 1)
    values = -S[n, :, m].copy()
    if B >= _VECTOR_TRACEBACK_MIN_BATCH:
        cells = _traceback_matching_batch(S, n, m)
    else:
        cells = np.concatenate([_traceback_matching_one(S, b, n, m) for b in range(B)])
    return cells, values


def _traceback_matching_one(S, b, n, m):
    """Matched cells of alignment ``b`` (flat indices into ``(B, n, m)``), ascending."""
    B = S.shape[1]
    W = m + 1
    up = B * W
    flat = memoryview(S.reshape(-1))  # Python floats, much faster than ndarray indexing
    i, j = n, m
    k = (i * B + b) * W + j
    matched = []
    while i and j:
        v = flat[k]
        if v == flat[k - 1]:
            j -= 1
            k -= 1
        elif v == flat[k - up]:
            i -= 1
            k -= up
        else:
            i -= 1
            j -= 1
            k -= up + 1
            matched.append((b * n + i) * m + j)
    matched.reverse()
    return np.array(matched, dtype=np.intp)


def _traceback_matching_batch(S, n, m):
    """All tracebacks at once: one vectorized step per move, over the live paths."""
    B = S.shape[1]
    W = m + 1
    up = B * W
    flat = S.reshape(-1)
    k = (n * B + np.arange(B)) * W + m  # position (n, m) of every alignment
    matched = []
    while k.size:
        v = flat[k]
        left = v == flat[k - 1]
        vert = ~left & (v == flat[k - up])
        diag = ~(left | vert)
        k = k - (left + up * vert + (up + 1) * diag)
        matched.append(k[diag])
        k = k[(k >= up) & (k % W != 0)]  # a path ends on row 0 or column 0
    k = np.concatenate(matched)
    i, rest = np.divmod(k, up)
    b, j = np.divmod(rest, W)
    return np.sort((b * n + i) * m + j).astype(np.intp)


def _solve_path(cost, lo, hi, work=None):
    """Minimum-cost monotone paths (DTW) for a ``(B, n, m)`` cost array.

    ``lo[i]..hi[i]`` are the allowed columns of row ``i`` (the band); the
    caller has checked that a path fits. Returns ``(cells, values)`` like
    :func:`_solve_matching`. The recursion is in :func:`path_lmo`.
    """
    B, n, m = cost.shape
    work = work if work is not None else _Workspace()
    batch = () if B == 1 else (B,)
    left = work.get("left", (n, *batch, m), np.bool_)
    diag = work.get("diag", (n, *batch, m), np.bool_)
    rows = work.get("rows", (2, *batch, m), np.float64)
    rows.fill(np.inf)  # outside its band a row is unreachable
    c = work.get("c", (*batch, m), np.float64)
    q = work.get("q", (*batch, m), np.float64)
    r = work.get("r", (*batch, m), np.float64)
    costs = cost[0] if B == 1 else cost.transpose(1, 0, 2)  # row i: (m,) or (B, m)

    # row 0: only right steps from (0, 0)
    h = hi[0] + 1
    np.add.accumulate(costs[0][..., :h], axis=-1, out=rows[0][..., :h])
    left[0][..., :h] = True
    left[0][..., 0] = False
    diag[0][..., :h] = False
    add, subtract, minimum, less_equal, greater = np.add, np.subtract, np.minimum, np.less_equal, np.greater
    cumsum, cummin = np.add.accumulate, np.minimum.accumulate
    for i in range(1, n):
        a, z = lo[i], hi[i] + 1
        L = z - a
        prev, cur = rows[(i - 1) % 2], rows[i % 2]
        if i >= 2 and lo[i - 2] < a:
            # cur still holds row i-2; clear what row i does not overwrite
            cur[..., lo[i - 2]:a] = np.inf
        cs, qs, rs = c[..., :L], q[..., :L], r[..., :L]
        cumsum(costs[i][..., a:z], axis=-1, out=cs)
        dg = diag[i][..., a:z]
        if a == 0:
            # column 0 can only be entered from above
            qs[..., 0] = prev[..., 0]
            dg[..., 0] = False
            minimum(prev[..., 1:z], prev[..., : z - 1], out=qs[..., 1:])
            less_equal(prev[..., : z - 1], prev[..., 1:z], out=dg[..., 1:])
        else:
            minimum(prev[..., a:z], prev[..., a - 1 : z - 1], out=qs)
            less_equal(prev[..., a - 1 : z - 1], prev[..., a:z], out=dg)
        # qs holds P; Q[k] = P[k] - c[k-1] for k >= 1 (within the band row)
        subtract(qs[..., 1:], cs[..., :-1], out=qs[..., 1:])
        cummin(qs, axis=-1, out=rs)
        greater(qs, rs, out=left[i][..., a:z])
        add(cs, rs, out=cur[..., a:z])
    rows = rows.reshape(2, B, m)
    left = left.reshape(n, B, m)
    diag = diag.reshape(n, B, m)
    values = rows[(n - 1) % 2][:, m - 1].copy()
    if B >= _VECTOR_TRACEBACK_MIN_BATCH:
        cells = _traceback_path_batch(left, diag, n, m)
    else:
        cells = np.concatenate([_traceback_path_one(left, diag, b, n, m) for b in range(B)])
    return cells, values


def _traceback_path_one(left, diag, b, n, m):
    """Visited cells of alignment ``b`` (flat indices into ``(B, n, m)``), ascending."""
    B = left.shape[1]
    up = B * m
    lf = memoryview(left.reshape(-1))
    dg = memoryview(diag.reshape(-1))
    i, j = n - 1, m - 1
    k = (i * B + b) * m + j
    cells = [(b * n + i) * m + j]
    while i or j:
        if lf[k]:
            j -= 1
            k -= 1
        elif dg[k]:
            i -= 1
            j -= 1
            k -= up + 1
        else:
            i -= 1
            k -= up
        cells.append((b * n + i) * m + j)
    cells.reverse()
    return np.array(cells, dtype=np.intp)


def _traceback_path_batch(left, diag, n, m):
    """All tracebacks at once: one vectorized step per move, over the live paths."""
    B = left.shape[1]
    up = B * m
    lf = left.reshape(-1)
    dg = diag.reshape(-1)
    k = ((n - 1) * B + np.arange(B)) * m + (m - 1)  # position (n-1, m-1) of every alignment
    origin = np.arange(B) * m  # position (0, 0)
    visited = [k]
    live = k != origin
    k, origin = k[live], origin[live]
    while k.size:
        is_left = lf[k]
        is_diag = ~is_left & dg[k]
        k = k - (is_left + up * ~(is_left | is_diag) + (up + 1) * is_diag)
        visited.append(k)
        live = k != origin
        k, origin = k[live], origin[live]
    k = np.concatenate(visited)
    i, rest = np.divmod(k, up)
    b, j = np.divmod(rest, m)
    return np.sort((b * n + i) * m + j).astype(np.intp)


# ========================================================= optional numba
# The NumPy row updates cost a few NumPy calls per row, which near n = 1000
# leaves them a few times slower than a compiled cell-by-cell loop. With
# backend="numba" the same recursions (and the same tie rules) run as
# compiled loops; numba is optional and the NumPy path is the default.
_numba_kernels_cache = None


def _numba_kernels():
    global _numba_kernels_cache
    if _numba_kernels_cache is not None:
        return _numba_kernels_cache
    try:
        import numba
    except ImportError:
        raise ModelError("AlignmentPolytope: backend='numba' needs the numba package (pip install numba)") from None

    jit = numba.njit(cache=False, nogil=True)

    @numba.njit(cache=False, nogil=True, fastmath={"reassoc"})
    def total(cost):  # pragma: no cover - compiled
        # reassociation lets the sum vectorize; nan and inf still propagate
        acc = 0.0
        for c in cost.ravel():
            acc += c
        return acc

    @jit
    def matching(cost, lo, hi, D, cells, values):  # pragma: no cover - compiled
        B, n, m = cost.shape
        inf = np.inf
        count = 0
        for b in range(B):
            D[0, :] = 0.0
            for i in range(1, n + 1):
                prev = D[i - 1]
                cur = D[i]
                crow = cost[b, i - 1]
                a, z = lo[i - 1], hi[i - 1]  # cells (i-1, a..z) may be matched
                cur[0] = 0.0
                left = 0.0
                for j in range(1, m + 1):
                    t = prev[j - 1] + crow[j - 1] if a <= j - 1 <= z else inf
                    left = min(left, min(prev[j], t))  # one min on the carried chain
                    cur[j] = left
            values[b] = D[n, m]
            # exact-comparison traceback, ties as in the NumPy path
            i, j = n, m
            start = count
            while i > 0 and j > 0:
                v = D[i, j]
                if v == D[i, j - 1]:
                    j -= 1
                elif v == D[i - 1, j]:
                    i -= 1
                else:
                    i -= 1
                    j -= 1
                    cells[count] = (b * n + i) * m + j
                    count += 1
            cells[start:count] = cells[start:count][::-1].copy()
        return count

    @jit
    def path(cost, lo, hi, D, cells, values):  # pragma: no cover - compiled
        B, n, m = cost.shape
        inf = np.inf
        count = 0
        for b in range(B):
            D[:, :] = inf  # outside the band
            acc = 0.0
            for j in range(hi[0] + 1):
                acc += cost[b, 0, j]
                D[0, j] = acc
            for i in range(1, n):
                prev = D[i - 1]
                cur = D[i]
                crow = cost[b, i]
                j0 = lo[i]
                left = inf
                if j0 == 0:
                    left = prev[0] + crow[0]
                    cur[0] = left
                    j0 = 1
                for j in range(j0, hi[i] + 1):
                    left = min(min(prev[j - 1], prev[j]), left) + crow[j]
                    cur[j] = left
            values[b] = D[n - 1, m - 1]
            # traceback: redo each step's choice from the stored D, with the
            # NumPy path's tie rules (diagonal over up; left only if better)
            i, j = n - 1, m - 1
            start = count
            cells[count] = (b * n + i) * m + j
            count += 1
            while i > 0 or j > 0:
                if i == 0:
                    j -= 1
                elif j == 0:
                    i -= 1
                else:
                    up = D[i - 1, j]
                    dg = D[i - 1, j - 1]
                    if D[i, j - 1] < min(dg, up):
                        j -= 1
                    elif dg <= up:
                        i -= 1
                        j -= 1
                    else:
                        i -= 1
                cells[count] = (b * n + i) * m + j
                count += 1
            cells[start:count] = cells[start:count][::-1].copy()
        return count

    _numba_kernels_cache = (matching, path, total)
    return _numba_kernels_cache


def _solve_numba(cost, kind, lo, hi, work=None):
    matching, path, total = _numba_kernels()
    B, n, m = cost.shape
    work = work if work is not None else _Workspace()
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    # one vectorized sum instead of an isfinite pass; checked only if not finite
    if not math.isfinite(total(cost)) and not np.isfinite(cost).all():
        raise ModelError("AlignmentPolytope: direction has non-finite entries (inf or nan)")
    values = np.empty(B)
    if kind == "matching":
        D = work.get("D", (n + 1, m + 1), np.float64)
        cells = work.get("cells", (B * min(n, m),), np.intp)
        count = matching(cost, lo, hi, D, cells, values)
    else:
        D = work.get("D", (n, m), np.float64)
        cells = work.get("cells", (B * (n + m - 1),), np.intp)
        count = path(cost, lo, hi, D, cells, values)
    return cells[:count].copy(), values


BACKENDS = ("numpy", "numba")


def _check_backend(backend, owner):
    if backend not in BACKENDS:
        raise ModelError(f"{owner}: backend must be 'numpy' or 'numba', got {backend!r}")
    if backend == "numba":
        _numba_kernels()  # fail early when numba is missing
    return backend


def _solve(cost, kind, mask, lo, hi, work=None, backend="numpy"):
    if backend == "numba":
        return _solve_numba(cost, kind, lo, hi, work)
    if not np.isfinite(cost).all():
        raise ModelError("AlignmentPolytope: direction has non-finite entries (inf or nan)")
    if kind == "matching":
        return _solve_matching(cost, mask, work)
    return _solve_path(cost, lo, hi, work)


def _lmo_dense(direction, kind, band, owner, backend="numpy"):
    _check_backend(backend, owner)
    d, single = _as_batch(direction, owner)
    B, n, m = d.shape
    w = _check_band(band, owner)
    mask = None if math.isinf(w) else band_mask(n, m, w)
    lo, hi = _band_rows(mask, n, m)
    if kind == "path" and not _path_fits(lo, hi, m):
        raise ModelError(_narrow_band_message(owner, band, n, m))
    cells, values = _solve(d, kind, mask, lo, hi, backend=backend)
    out = np.zeros(d.size)
    out[cells] = 1.0
    out = out.reshape(d.shape)
    if single:
        return out[0], float(values[0])
    return out, values


def _narrow_band_message(owner, band, n, m):
    return (
        f"{owner}: band={band!r} is too narrow for kind='path' on shape ({n}, {m}): no monotone path "
        f"from (0, 0) to ({n - 1}, {m - 1}) stays in |i*m/n - j| <= band "
        f"(the smallest band that fits is about {min_path_band(n, m):.6g})"
    )


def matching_lmo(direction, band=None, return_value=False, backend="numpy"):
    """The minimum-cost non-crossing partial matching (Needleman-Wunsch) for ``direction``.

    ``direction`` has shape ``(n, m)`` or ``(B, n, m)`` (``B`` independent
    problems); ``band`` as in :class:`AlignmentPolytope`. Returns the 0/1
    vertex of the same shape and, with ``return_value=True``, also the optimal
    value ``<direction, vertex>`` (a float, or an array of ``B``).
    ``backend="numba"`` runs the same recursion as a compiled loop (needs the
    optional numba package).

    Recursion. Written as a maximization of the score ``W = -direction`` over
    prefixes, ``S[i, j]`` = best score matching the first ``i`` positions of
    the first sequence with the first ``j`` of the second::

        S[0, :] = S[:, 0] = 0
        S[i, j] = max(S[i-1, j], S[i, j-1], S[i-1, j-1] + W[i-1, j-1])

    The horizontal move costs nothing, so a whole row is a running maximum::

        E[j]    = max(S[i-1, j], S[i-1, j-1] + W[i-1, j-1])     (E[0] = 0)
        S[i, :] = maximum.accumulate(E)

    three NumPy calls per row (on ``(B, m)`` arrays for a batch). Scores are
    >= 0 (the empty matching scores 0), and nonnegative IEEE doubles order
    like their bit patterns read as int64, so the running maximum runs on the
    int64 view: an integer maximum has no NaN case to check and is about
    twice as fast as the float one. Cells outside the band score ``-inf``.

    Traceback. ``S`` is kept (one float per cell) and every entry is an exact
    copy of one of its three candidates, so the alignment is recovered from
    ``(n, m)`` by exact comparisons: left when ``S[i, j] == S[i, j-1]``, up
    when ``S[i, j] == S[i-1, j]``, else ``(i-1, j-1)`` is matched. Ties prefer
    not matching, so the LMO of a zero direction is the empty matching.
    """
    vertex, value = _lmo_dense(direction, "matching", band, "matching_lmo", backend)
    return (vertex, value) if return_value else vertex


def path_lmo(direction, band=None, return_value=False, backend="numpy"):
    """The minimum-cost monotone path (dynamic time warping) for ``direction``.

    Same conventions as :func:`matching_lmo`; raises a ModelError (a ValueError) when ``band``
    leaves no path from ``(0, 0)`` to ``(n-1, m-1)``.

    Recursion, over cells, with ``C = direction``::

        D[0, 0] = C[0, 0]
        D[i, j] = C[i, j] + min(D[i-1, j], D[i, j-1], D[i-1, j-1])

    Here the horizontal move costs ``C[i, j]``, so a row is not a plain
    running minimum. With ``P[k] = min(D[i-1, k], D[i-1, k-1])`` (the best way
    to enter row i at column k) and ``c`` the running sum of ``C[i, :]``,
    entering at k and walking right to j costs ``P[k] + c[j] - c[k-1]``, so::

        D[i, j] = c[j] + min_{k <= j} (P[k] - c[k-1])          (c[-1] = 0)

    a running minimum of ``Q[k] = P[k] - c[k-1]`` shifted by ``c``: seven
    NumPy calls per row, on the band's columns only (outside the band D is
    ``inf``). Two booleans per cell drive the traceback: ``left`` (the minimum
    was reached at some k < j, i.e. ``Q[j] >`` the running minimum) and
    ``diag`` (row i was entered diagonally, ``D[i-1, j-1] <= D[i-1, j]``; ties
    prefer the diagonal, which gives shorter paths).
    """
    vertex, value = _lmo_dense(direction, "path", band, "path_lmo", backend)
    return (vertex, value) if return_value else vertex


# =============================================================== the atom
class _CellsAtom(SparseAtom):
    """A 0/1 vertex given by its distinct cells (a SparseAtom with values 1)."""

    def __init__(self, indices, size):
        super().__init__(indices, 1.0, size)

    def dot(self, g):
        return float(g[self.indices].sum())

    def add_to(self, x, weight):
        # the cells are distinct, so a fancy-indexed add is safe (and much
        # faster than np.add.at)
        x[self.indices] += weight


# ================================================================ the set
class AlignmentPolytope(ConvexSet):
    """The convex hull of monotone alignments between two sequences.

    ``AlignmentPolytope(expr, kind="matching", band=None, axis=None, backend="numpy")`` for an
    expression of shape ``(n, m)``, or ``(B, n, m)`` with ``axis=0`` for a
    batch of ``B`` independent alignments (one block, one batched LMO).

    kind="matching"
        Vertices: 0/1 matrices of non-crossing partial matchings, the global
        alignments of Needleman and Wunsch; a linear gap cost is a linear term
        (see the module docstring). LMO: ``S[i, j] = max(S[i-1, j], S[i, j-1],
        S[i-1, j-1] - G[i-1, j-1])`` on prefix scores, one running maximum per
        row, traceback from the stored scores.
    kind="path"
        Vertices: 0/1 indicators of monotone connected paths from ``(0, 0)``
        to ``(n-1, m-1)`` with right, down and diagonal steps (dynamic time
        warping). LMO: ``D[i, j] = G[i, j] + min(D[i-1, j], D[i, j-1],
        D[i-1, j-1])``, one shifted running minimum per row.
    band
        ``None`` or a number ``w >= 0``: only cells with ``|i*m/n - j| <= w``
        (a Sakoe-Chiba band) may be 1; the others are 0 in every vertex. For
        kind="path" the band must leave a path from corner to corner.

    backend
        ``"numpy"`` (default): row-vectorized NumPy. ``"numba"``: the same
        recursions and tie rules as compiled loops (about 3x faster for
        matchings and 7x for paths at n = m = 1000, see
        ``benchmarks/alignment.py``); needs the optional numba package.

    The projection onto these polytopes has no practical algorithm, but the
    LMO is an ``O(n m)`` dynamic program (the paper's motivating example for
    LMO-based splitting). Vertices come back as sparse atoms over the matched
    or visited cells (at most ``n + m - 1`` of them).

    Memory: the NumPy matching LMO keeps its score table (8 bytes per cell of
    the batch), the path LMO two booleans per cell; the buffers are reused
    from call to call and released by :meth:`reset`.

    ``contains`` is exact for kind="matching" (see :meth:`contains`); for
    kind="path" it solves a small flow LP up to 10,000 cells per alignment
    and checks necessary conditions beyond.
    """

    is_polytope = True

    def __init__(self, expr, kind="matching", band=None, axis=None, backend="numpy"):
        super().__init__(expr)
        if not isinstance(kind, str) or kind not in KINDS:
            raise ModelError(f"AlignmentPolytope: kind must be 'matching' or 'path', got {kind!r}")
        self.kind = kind
        shape = tuple(self.shape)
        if axis is not None:
            try:
                axis = operator.index(axis)
            except TypeError:
                raise ModelError(f"AlignmentPolytope: axis must be 0 (a batch axis) or None, got {axis!r}") from None
            if len(shape) != 3 or axis not in (0, -3):
                raise ModelError(
                    f"AlignmentPolytope: axis={axis!r} needs an expression of shape (B, n, m) with the batch "
                    f"first (axis=0); {self.expr!r} has shape {shape}"
                )
            axis = 0
        if len(shape) == 3 and axis is None:
            raise ModelError(
                f"AlignmentPolytope: {self.expr!r} has shape {shape}; pass axis=0 to treat it as a batch of "
                f"{shape[0]} alignments of shape {shape[1:]}"
            )
        if len(shape) not in (2, 3):
            raise ModelError(
                f"AlignmentPolytope: the expression must have shape (n, m) (or (B, n, m) with axis=0), "
                f"{self.expr!r} has shape {shape}"
            )
        if 0 in shape:
            raise ModelError(f"AlignmentPolytope: {self.expr!r} has shape {shape}; n and m must be >= 1")
        self.axis = axis
        self._batch_shape = shape if len(shape) == 3 else (1,) + shape
        B, n, m = self._batch_shape
        self.n, self.m, self.batch = n, m, B
        w = _check_band(band)
        self.band = None if band is None else w
        self._mask = None if math.isinf(w) else band_mask(n, m, w)
        self._lo, self._hi = _band_rows(self._mask, n, m)
        if kind == "path" and not _path_fits(self._lo, self._hi, m):
            raise ModelError(_narrow_band_message("AlignmentPolytope", band, n, m))
        self.backend = _check_backend(backend, "AlignmentPolytope")
        self._work = _Workspace()

    def group_count(self):
        """One alignment polytope per pair of the batch."""
        return self.batch

    # -------------------------------------------------------------- the oracle

    def lmo_atom(self, flat_direction):
        return self._atom(flat_direction, self._work)

    def lmo_for_solve(self):
        """:meth:`lmo_atom` with DP buffers of its own: solves sharing the set in several threads
        do not write into each other's buffers (the vertices are the same)."""
        work = _Workspace()
        return lambda flat_direction: self._atom(flat_direction, work)

    def _atom(self, flat_direction, work):
        d = as_flat_direction(self, flat_direction)
        cells, _ = _solve(d.reshape(self._batch_shape), self.kind, self._mask, self._lo, self._hi, work, self.backend)
        return _CellsAtom(cells, self.size)

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def reset(self):
        self._work = _Workspace()  # release the DP buffers

    def batch_group_size(self):
        """For a batch (``axis=0``, B > 1): the entries per alignment, ``n * m``.

        The batch is a product of B alignment polytopes over consecutive runs of
        ``n * m`` entries, and the batched LMO's vertex is the B alignments'
        vertices side by side: the engine keeps one active set and one step
        size per alignment (BPCG per group). None for a single alignment.
        """
        return self.n * self.m if self.batch > 1 else None

    # ---------------------------------------------------------- optional hooks
    def coordinate_bounds(self):
        """Every entry of a 0/1 alignment matrix (and of their hull) lies in [0, 1]."""
        return np.zeros(self.size), np.ones(self.size)

    def diameter(self):
        """Upper bound: ``sqrt(|s| + |s'|)`` for 0/1 vertices, summed over the batch.

        Matchings have at most ``min(n, m)`` cells; two paths have at most
        ``n + m - 1`` cells each and share both corners.
        """
        n, m = self.n, self.m
        if self.kind == "matching":
            per = 2.0 * min(n, m)
        else:
            per = max(0.0, 2.0 * (n + m - 3))
        return float(np.sqrt(per * self.batch))

    def contains(self, point, tol=1e-9):
        """Membership test, with absolute slack ``tol`` per entry.

        Every kind checks: entries in ``[0, 1]`` and zero outside the band.

        kind="matching" (exact): a non-crossing matching is a chain of the
        order ``(i, j) < (i', j')`` iff ``i < i'`` and ``j < j'``, so the
        polytope is the stable-set polytope of its incomparability graph,
        which is perfect; it is therefore described by ``X >= 0`` and
        ``sum_A X <= 1`` for every antichain ``A``. Antichains are the cells
        of staircases (i nondecreasing, j nonincreasing), and the heaviest
        staircase is one more dynamic program.

        kind="path": ``X[0, 0] = X[n-1, m-1] = 1`` and every row and column
        sums to at least 1; then, up to 10,000 cells per alignment, exact
        membership by an LP (a unit flow on the path graph whose throughput at
        each cell is ``X``, scipy's HiGHS); beyond that, necessary conditions only.
        """
        x = as_point(self, point)
        if x is None:
            return False
        x = x.reshape(self._batch_shape)
        if not np.isfinite(x).all() or x.min() < -tol or x.max() > 1 + tol:
            return False
        if self._mask is not None and np.abs(x[:, ~self._mask]).max(initial=0.0) > tol:
            return False
        n, m = self.n, self.m
        if self.kind == "matching":
            heaviest = _heaviest_staircase(np.clip(x, 0.0, None))
            return bool(np.all(heaviest <= 1.0 + tol * (n + m)))
        if np.any(np.abs(x[:, 0, 0] - 1) > tol) or np.any(np.abs(x[:, n - 1, m - 1] - 1) > tol):
            return False
        if np.any(x.sum(axis=2) < 1 - tol * m) or np.any(x.sum(axis=1) < 1 - tol * n):
            return False
        if n * m > _PATH_LP_MAX_CELLS:
            return True
        return _path_flow_feasible(x, self._mask, tol)

    def __repr__(self):
        extra = f", kind={self.kind!r}"
        if self.band is not None:
            extra += f", band={self.band:g}"
        if self.axis is not None:
            extra += f", axis={self.axis}"
        if self.backend != "numpy":
            extra += f", backend={self.backend!r}"
        return f"AlignmentPolytope({self.expr!r}{extra})"


# ====================================================== membership helpers
def _heaviest_staircase(x):
    """Max over staircases (i nondecreasing, j nonincreasing) of the sum of ``x >= 0``.

    Flipping the columns turns a staircase into a right/down lattice path, so
    ``F[i, j] = y[i, j] + max(F[i-1, j], F[i, j-1])`` with ``y = x[:, :, ::-1]``;
    per row, ``F[i, j] = c[j] + max_{k <= j}(F[i-1, k] - c[k-1])`` with ``c``
    the running sum of ``y[i, :]`` (the same trick as the DTW recursion).
    """
    y = x[:, :, ::-1]
    B, n, m = y.shape
    F = np.add.accumulate(y[:, 0, :], axis=-1)
    for i in range(1, n):
        c = np.add.accumulate(y[:, i, :], axis=-1)
        q = F.copy()
        q[:, 1:] -= c[:, :-1]
        F = c + np.maximum.accumulate(q, axis=-1)
    return F[:, -1]


def _path_flow_feasible(x, mask, tol):
    """Whether each ``x[b]`` (n, m) is a convex combination of monotone paths (one LP).

    A convex combination of paths is a unit flow from (0, 0) to (n-1, m-1) on
    the right/down/diagonal grid graph whose throughput at each cell v is
    x[v]; conversely such a flow decomposes into paths (the graph is acyclic).
    The LP minimizes the total violation of those equations over flows >= 0;
    the batch is one block-diagonal LP.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, identity, kron

    B, n, m = x.shape
    if n * m == 1:
        return True  # the single cell (already checked to be 1)
    allowed = np.ones((n, m), dtype=bool) if mask is None else mask
    idx = -np.ones((n, m), dtype=np.int64)
    cells = np.flatnonzero(allowed.ravel())
    idx.ravel()[cells] = np.arange(cells.size)
    src, dst = [], []
    for di, dj in ((0, 1), (1, 0), (1, 1)):
        a = idx[: n - di, : m - dj]
        z = idx[di:, dj:]
        ok = (a >= 0) & (z >= 0)
        src.append(a[ok])
        dst.append(z[ok])
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    E, V = src.size, cells.size
    # rows v: outflow(v) = x[v] (v != end); rows V + v: inflow(v) = x[v] (v != start)
    rows = np.concatenate([src, V + dst])
    cols = np.concatenate([np.arange(E), np.arange(E)])
    A = coo_matrix((np.ones(2 * E), (rows, cols)), shape=(2 * V, E)).tocsr()
    keep = np.ones(2 * V, dtype=bool)
    keep[idx[n - 1, m - 1]] = False
    keep[V + idx[0, 0]] = False
    A = A[keep]
    K = A.shape[0]
    xv = x.reshape(B, n * m)[:, cells]
    b = np.concatenate([xv, xv], axis=1)[:, keep].ravel()
    A = kron(identity(B), hstack([A, identity(K), -identity(K)])).tocsr()
    c = np.tile(np.concatenate([np.zeros(E), np.ones(2 * K)]), B)
    res = linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    if res.status != 0:
        return False
    violation = (res.x.reshape(B, E + 2 * K)[:, E:]).sum(axis=1)
    return bool(np.all(violation <= tol * max(1, n + m)))
