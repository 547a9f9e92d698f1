"""Compiled, warm-started linear assignment for ``BirkhoffPolytope(..., backend="numba")``.

Imported only when that backend is chosen (it needs the optional numba
package; :mod:`fwmodel.sets.birkhoff` turns a missing numba into a clear
error). The solver is Jonker & Volgenant's shortest augmenting path method
(LAPJV: "A shortest augmenting path algorithm for dense and sparse linear
assignment problems", Computing 38, 1987) with two changes:

* its initialization (column reduction, reduction transfer, augmenting row
  reduction) is replaced by the column potentials ``v`` that the previous
  call ended with: each row takes its column of least reduced cost
  ``D_ij - v_j`` when that column is still free;
* LAPJV's augmenting row reduction then reassigns free rows cheaply (at
  most a few scans of a row per row of D), auction-like;
* each remaining free row is routed first by Dijkstra over a sparse graph,
  the columns within a window ``tau`` of the row's least reduced cost. The
  columns left out of row i have reduced cost above a known ``bound_i``, so
  a path found on the sparse graph is a shortest one in the full graph when
  its length is at most every scanned row's bound (then it is used);
  otherwise the row is routed by LAPJV's dense search.

Throughout, the column potentials ``v`` and the implicit row potentials
``u_i = min_j (D_ij - v_j)`` form a feasible point of the assignment LP's
dual ``max sum(u) + sum(v)`` s.t. ``u_i + v_j <= D_ij``, and every assigned
pair is tight (each assigned row holds a column of least reduced cost).
Augmenting along a shortest path and updating the potentials of the
columns settled before it keeps both properties, so when every row is
assigned the permutation and ``(u, v)`` satisfy complementary slackness:
the permutation minimizes ``<D, P>`` exactly (up to the rounding of the
reduced costs, as in SciPy's solver, which is the same kind of method). The
potentials and the window only decide how much work a call does, never its
answer; the potentials end as optimal duals of this call's matrix, the
start of the next call.

Every kernel compiles with ``cache=True``: the first use on a machine pays
numba's compilation (seconds), later processes load it from disk.
"""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _greedy_tight(cost, v, x, y, free, row_min):  # pragma: no cover - compiled
    """Assign each row to its first column of least reduced cost if that column is still free.

    Returns ``(number of free rows, min(D), max(D), not finite)``; the free
    rows are written to ``free``, each row's least reduced cost to
    ``row_min``. Rows, columns: x, y (-1 = free).
    """
    n = cost.shape[0]
    for j in range(n):
        y[j] = -1
    n_free = 0
    lowest = np.inf
    highest = -np.inf
    poison = 0.0  # 0 * c is nan for an infinite or nan c: one sum tells whether D is finite
    for i in range(n):
        row = cost[i]
        best = np.inf
        best_j = 0
        for j in range(n):
            c = row[j]
            poison += c * 0.0
            lowest = min(lowest, c)
            highest = max(highest, c)
            r = c - v[j]
            if r < best:
                best = r
                best_j = j
        if y[best_j] < 0:
            x[i] = best_j
            y[best_j] = i
        else:
            x[i] = -1
            free[n_free] = i
            n_free += 1
        row_min[i] = best
    return n_free, lowest, highest, poison != 0.0


@numba.njit(cache=True, nogil=True)
def _augmenting_row_reduction(cost, v, x, y, free, n_free, row_min, max_steps):  # pragma: no cover - compiled
    """LAPJV's augmenting row reduction: free rows take a column cheaply, auction-like; returns the rows left free.

    Each free row i finds its least and second least reduced costs ``u1 <=
    u2`` (columns j1, j2). Lowering ``v_j1`` by ``u2 - u1`` makes j1 and j2
    tie for row i, so row i takes j1 (or j2 on a tie where j1 is held) and
    the row that held it becomes free; it is processed next when ``v`` moved
    (Jonker & Volgenant 1987, procedure AUGMENTING ROW REDUCTION). Lowering
    a potential only raises the other rows' reduced costs on that column,
    so the implicit row potentials stay dual feasible and every assigned
    row keeps a column of least reduced cost; the free rows left are routed
    by shortest augmenting paths as before. At most ``max_steps`` rows are
    scanned (a bound on the work where near-ties make a row bounce).
    Each scanned row's ``row_min`` is set to its least reduced cost.
    """
    n = cost.shape[0]
    steps = 0
    k = 0
    left = 0  # free rows kept, written to free[:left] behind the read position k
    while k < n_free:
        i = free[k]
        k += 1
        row = cost[i]
        u1 = row[0] - v[0]
        j1 = 0
        u2 = np.inf
        j2 = -1
        for j in range(1, n):
            h = row[j] - v[j]
            if h < u2:
                if h >= u1:
                    u2 = h
                    j2 = j
                else:
                    u2 = u1
                    u1 = h
                    j2 = j1
                    j1 = j
        steps += 1
        owner = y[j1]
        lowered = u1 < u2
        if lowered:
            v[j1] -= u2 - u1
            row_min[i] = u2
        else:
            row_min[i] = u1
            if owner >= 0:  # a tie with a held column: take the other one
                j1 = j2
                owner = y[j1]
        x[i] = j1
        y[j1] = i
        if owner >= 0:
            x[owner] = -1
            if lowered and steps < max_steps:
                k -= 1  # the row just freed is scanned next (its slot is free[k])
                free[k] = owner
            else:
                free[left] = owner
                left += 1
    return left, steps


@numba.njit(cache=True, nogil=True)
def _column_minima(cost, v):  # pragma: no cover - compiled
    """The cold start: ``v_j = min_i D_ij`` (with ``u = 0``, a dual feasible pair)."""
    n = cost.shape[0]
    for j in range(n):
        v[j] = cost[0, j]
    for i in range(1, n):
        row = cost[i]
        for j in range(n):
            if row[j] < v[j]:
                v[j] = row[j]


@numba.njit(cache=True, nogil=True)
def _shortest_path(cost, start, v, y, d, pred, columns):  # pragma: no cover - compiled
    """Dijkstra from free row ``start`` on the reduced costs; updates v and returns the free column reached.

    ``columns`` is split into READY (``[:ready]``, settled), SCAN (``[lo:hi]``,
    at the current least distance) and TODO (``[hi:]``), as in LAPJV. Returns
    the column and the path's length in reduced costs.
    """
    n = cost.shape[0]
    row = cost[start]
    start_min = np.inf
    for j in range(n):
        columns[j] = j
        pred[j] = start
        d[j] = row[j] - v[j]
        start_min = min(start_min, d[j])
    lo = 0
    hi = 0
    ready = 0
    final = -1
    while final < 0:
        if lo == hi:
            # settle every TODO column at the least distance
            ready = lo
            hi = lo + 1
            least = d[columns[lo]]
            for k in range(hi, n):
                j = columns[k]
                if d[j] <= least:
                    if d[j] < least:
                        hi = lo
                        least = d[j]
                    columns[k] = columns[hi]
                    columns[hi] = j
                    hi += 1
            for k in range(lo, hi):
                if y[columns[k]] < 0:
                    final = columns[k]
            if final >= 0:
                break
        # scan the rows assigned to SCAN columns
        while lo != hi and final < 0:
            j = columns[lo]
            lo += 1
            i = y[j]
            least = d[j]
            r = cost[i]
            h = r[j] - v[j] - least
            for k in range(hi, n):
                jj = columns[k]
                reduced = r[jj] - v[jj] - h
                if reduced < d[jj]:
                    d[jj] = reduced
                    pred[jj] = i
                    if reduced == least:
                        if y[jj] < 0:
                            final = jj
                            lo -= 1  # keep columns[lo] at the least distance for the update below
                            break
                        columns[k] = columns[hi]
                        columns[hi] = jj
                        hi += 1
    least = d[columns[lo]]
    for k in range(ready):
        j = columns[k]
        v[j] += d[j] - least
    return final, d[final] - start_min


@numba.njit(cache=True, nogil=True)
def _candidates(cost, v, tau, row_min, count, members, bound, scratch):  # pragma: no cover - compiled
    """Each row's columns of reduced cost within ``tau`` of its least, for the sparse augmenting paths.

    Row i keeps ``count[i]`` columns ``members[i, :count[i]]``; every other
    column has ``D_ij - v_j > bound[i] = row_min[i] + tau``, and since the
    potentials only decrease during a call, that stays a lower bound on
    their reduced costs. A row with more such columns than ``members`` has
    room for is dense (``count[i] = -1``, ``bound[i] = inf``): its paths scan
    every column. ``scratch``: n integers.
    """
    n = cost.shape[0]
    cap = members.shape[1]
    for i in range(n):
        row = cost[i]
        limit = row_min[i] + tau
        k = 0
        for j in range(n):  # branch-free: every column is written, the count moves on the kept ones
            scratch[k] = j
            k += row[j] - v[j] <= limit
        if k > cap:
            count[i] = -1
            bound[i] = np.inf
        else:
            members[i, :k] = scratch[:k]
            count[i] = k
            bound[i] = limit


@numba.njit(cache=True, nogil=True, inline="always")
def _sift_up(keys, items, where, k):  # pragma: no cover - compiled
    key = keys[k]
    item = items[k]
    while k > 0:
        parent = (k - 1) >> 1
        if keys[parent] <= key:
            break
        keys[k] = keys[parent]
        items[k] = items[parent]
        where[items[k]] = k
        k = parent
    keys[k] = key
    items[k] = item
    where[item] = k


@numba.njit(cache=True, nogil=True, inline="always")
def _heap_set(keys, items, where, size, key, item):  # pragma: no cover - compiled
    """Inserts column ``item`` at ``key``, or lowers its key; returns the new size (a binary heap indexed by ``where``)."""
    k = where[item]
    if k < 0:
        k = size
        size += 1
        items[k] = item
    keys[k] = key
    _sift_up(keys, items, where, k)
    return size


@numba.njit(cache=True, nogil=True, inline="always")
def _heap_pop(keys, items, where, size):  # pragma: no cover - compiled
    """Removes the root (read it from items[0] first); returns the new size."""
    where[items[0]] = -1
    size -= 1
    if size == 0:
        return 0
    key = keys[size]
    item = items[size]
    k = 0
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[child] >= key:
            break
        keys[k] = keys[child]
        items[k] = items[child]
        where[items[k]] = k
        k = child
    keys[k] = key
    items[k] = item
    where[item] = k
    return size


@numba.njit(cache=True, nogil=True)
def _sparse_path(cost, start, v, y, count, members, bound, dist, settled, pred, touched, keys, items, where):  # pragma: no cover - compiled
    """Dijkstra from free row ``start`` over the candidate columns only; -1 when that is not provably shortest.

    Returns ``(final column or -1, its distance)``.
    A path leaving row i by a non-candidate column is at least ``bound_i - h_i``
    long (``h_i`` the offset of row i's distances), so when the free column is
    reached at a distance ``L <= min over the scanned rows of (bound_i - h_i)``
    the path is a shortest one in the full graph and the potentials of the
    settled columns take the same update as in the dense search. Otherwise
    (the search stops as soon as the next column to settle is farther than
    that bound) nothing is changed and the caller runs the dense search.
    """
    n = cost.shape[0]
    n_touched = 0
    size = 0
    guard = np.inf
    final = -1
    length = 0.0
    i = start
    h = 0.0
    best_free = np.inf  # the nearest free column reached so far
    while True:
        # scan row i (reached with offset h): candidate columns, or all of them for a dense row
        row = cost[i]
        guard = min(guard, bound[i] - h)
        k_count = count[i]
        k_total = n if k_count < 0 else k_count
        candidates = members[i]
        for k in range(k_total):
            j = k if k_count < 0 else candidates[k]
            if settled[j]:
                continue
            nd = row[j] - v[j] - h
            if nd < dist[j] and nd <= guard and nd <= best_free:  # farther columns cannot end a provable path
                if y[j] < 0:
                    best_free = nd
                if dist[j] == np.inf:
                    touched[n_touched] = j
                    n_touched += 1
                dist[j] = nd
                pred[j] = i
                size = _heap_set(keys, items, where, size, nd, j)
        # settle the nearest column not settled yet
        if size == 0:
            break  # the candidate graph reaches no free column
        j = items[0]
        if keys[0] > guard:
            break  # a path through a column left out could be shorter: not provable here
        size = _heap_pop(keys, items, where, size)
        settled[j] = True
        if y[j] < 0:
            final = j
            length = dist[j]
            break
        i = y[j]
        h = cost[i, j] - v[j] - dist[j]
    ok = final >= 0 and length <= guard
    for k in range(n_touched):
        j = touched[k]
        if ok and settled[j]:
            v[j] += dist[j] - length
        dist[j] = np.inf
        settled[j] = False
        where[j] = -1
    return (final if ok else -1), length


@numba.njit(cache=True, nogil=True)
def solve_warm(cost, v, x, y, free, d, pred, columns, warm, spread_limit,
               tau, row_min, count, members, bound, dist, settled, pred_sparse, touched, keys, items, where,
               stats, arr_steps):  # pragma: no cover - compiled
    """Assign every row of ``cost`` (n x n, finite) to a column at least total cost; x[i] = column of row i.

    ``v``: column potentials, the previous call's when ``warm`` (replaced by
    the column minima when they are not finite, or their spread exceeds
    ``spread_limit`` times the spread of ``cost``, or their size
    ``spread_limit`` times the size of ``cost``, where their rounding would
    show), updated to this call's optimal ones. Each free row is routed by
    the sparse search over the columns within ``tau`` of its least reduced
    cost (``tau = inf``: no sparse search), and by the dense LAPJV search
    where that search cannot prove its path shortest; before them, the
    augmenting row reduction scans at most ``arr_steps`` rows.
    ``stats`` receives (free rows after the greedy pass, sparse paths, dense
    paths, longest path, rows scanned by the row reduction). Returns -1 when
    ``cost`` has an infinite or nan entry (nothing solved), else 0.
    """
    n = cost.shape[0]
    if not warm:
        _column_minima(cost, v)
    n_free, lowest, highest, not_finite = _greedy_tight(cost, v, x, y, free, row_min)
    if not_finite:
        return -1
    if warm:
        v_low = np.inf
        v_high = -np.inf
        for j in range(n):
            v_low = min(v_low, v[j])
            v_high = max(v_high, v[j])
        # the spread, and the size: potentials spread little but far from 0 (made on a gradient of size
        # 1e17) would bury a direction of size 1e-17 in the rounding of cost - v
        size = max(abs(lowest), abs(highest))
        if not (v_high - v_low <= spread_limit * (highest - lowest)
                and max(abs(v_low), abs(v_high)) <= spread_limit * size):
            _column_minima(cost, v)
            n_free, lowest, highest, not_finite = _greedy_tight(cost, v, x, y, free, row_min)
    stats[0] = n_free  # free rows after the greedy pass
    stats[4] = 0
    if n_free > 0 and arr_steps > 0:
        n_free, stats[4] = _augmenting_row_reduction(cost, v, x, y, free, n_free, row_min, arr_steps)
    sparse = n_free > 0 and tau < np.inf
    if sparse:
        _candidates(cost, v, tau, row_min, count, members, bound, columns)
    stats[1] = 0
    stats[2] = 0
    stats[3] = 0.0
    for k in range(n_free):
        start = free[k]
        j = -1
        path = pred
        if sparse:
            j, length = _sparse_path(cost, start, v, y, count, members, bound, dist, settled, pred_sparse,
                                                touched, keys, items, where)
            if j >= 0:
                stats[1] += 1
                stats[3] = max(stats[3], length - row_min[start])
                path = pred_sparse
        if j < 0:
            j, length = _shortest_path(cost, start, v, y, d, pred, columns)
            stats[2] += 1
            stats[3] = max(stats[3], length)
            path = pred
        # flip the path: each row on it takes the column after it
        i = -1
        steps = 0
        while i != start:
            i = path[j]
            y[j] = i
            previous = x[i]
            x[i] = j
            j = previous
            steps += 1
            if steps > n:  # pragma: no cover - cannot happen on finite costs
                return -2
    return 0
