"""The equalities every point of a set meets (its affine hull), declared for the engine's rows.

A simplex's points all sum to its total; a Birkhoff polytope's rows and
columns all sum to 1. A constraint row ``<a, s> = beta`` on such a set's
entries reads the same on the set as ``<a - N a, s> = beta - <N a, s0>``,
N the orthogonal projection onto the span of those equalities' rows (the
hull's normal space) and s0 any point of the set: <N a, s> is one number
over the set. Where a row is nearly parallel to the equalities (a budget
``(1 + 1e-4 noise) @ y == b`` on a simplex, a weighted sum close to a row
sum of a Birkhoff polytope), only its small part ``a - N a`` constrains the
set, and the engine keeps that part as the row
(``fwmodel/engine/hull_rows.py``): written as is, the row's residual is
measured in units some 1 / ||a - N a|| larger than the constraint's own.

Each hull offers ``normal_norms2(rows)`` (``||N a||^2`` of each sparse row,
without forming N a) and ``normal_part(rows)`` (N a of dense rows, and
<N a, s> for every s in the set).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: a constraint row whose part off the hulls it reads is below this fraction of its norm is kept as that part
#: (``engine/hull_rows.py``; the threshold of nearly dependent rows, ``engine/row_metric.py`` ILL_CONDITIONED)
NEARLY_PARALLEL = 0.1


def part_off_hulls(A, hulls):
    """Each row's part off the hulls it reads: ``(full, off, near, parts, shift)``.

    ``A``: sparse rows (CSR); ``hulls``: ``[(hull, columns)]``, each hull on a disjoint slice of A's columns.
    ``full`` and ``off`` are ||a|| and ||a - N a|| per row (``off`` is ``full`` for the rows not ``near``, and 0
    where the part is at the rounding of ||a||: a sum of the set written again). ``near``: the rows whose part
    off the hulls is below ``NEARLY_PARALLEL`` of their norm by the sparse difference of squares (cheap, but
    it loses the part below 1e-8 of a); for those the part is summed block by block, dense on the hulls'
    columns, with ``parts`` (each hull's N a on the near rows) and ``shift`` (sum of <N a, s> over the sets).
    The compiler (an inequality's slack units) and the engine (the rows it reduces) read the same numbers."""
    full2 = np.asarray(A.multiply(A).sum(axis=1), dtype=float).ravel()
    normal2 = np.zeros(A.shape[0])
    for hull, cols in hulls:
        normal2 += hull.normal_norms2(A[:, cols])
    full = np.sqrt(full2)
    off = full.copy()
    near = np.flatnonzero((full2 > 0) & (full2 - normal2 < NEARLY_PARALLEL ** 2 * full2))
    parts, shift = [], np.zeros(near.size)
    if near.size:
        rows = A[near]
        in_hull = np.zeros(A.shape[1], dtype=bool)
        off2 = np.zeros(near.size)
        for hull, cols in hulls:
            a = rows[:, cols].toarray()
            part, value = hull.normal_part(a)
            parts.append(part)
            shift += value
            off2 += np.einsum("ij,ij->i", a - part, a - part)
            in_hull[cols] = True
        rest = rows[:, ~in_hull]
        exact = np.sqrt(off2 + np.asarray(rest.multiply(rest).sum(axis=1), dtype=float).ravel())
        rounding = max(cols.stop - cols.start for _, cols in hulls) * np.finfo(float).eps
        off[near] = np.where(exact > rounding * full[near], exact, 0.0)
    return full, off, near, parts, shift


class GroupSums:
    """The sums of disjoint groups of entries fixed: ``sum(s[index[g]]) == totals[g]`` (a simplex's)."""

    def __init__(self, index, totals, size):
        index = np.asarray(index, dtype=np.intp)
        self.groups, self.group_size = index.shape
        self.index = index
        self.totals = np.broadcast_to(np.asarray(totals, dtype=float), (self.groups,))
        # the entries' group indicators (size x groups): rows @ G are the rows' sums over each group
        self.G = sp.csr_matrix((np.ones(index.size), (index.ravel(), np.repeat(np.arange(self.groups),
                                                                                 self.group_size))),
                               shape=(size, self.groups))

    def normal_norms2(self, rows):
        sums = rows @ self.G
        return np.asarray(sums.multiply(sums).sum(axis=1), dtype=float).ravel() / self.group_size

    def normal_part(self, rows):
        means = (rows @ self.G) / self.group_size  # (k, groups): each row's mean over each group
        part = np.zeros_like(rows)
        part[:, self.index] = means[:, :, None]
        return part, means @ self.totals


class RowColumnSums:
    """Every row and every column of an ``n x n`` matrix (flat, C order) sums to 1 (a Birkhoff polytope's)."""

    def __init__(self, n):
        self.n = n

    def _sums(self, rows):
        k = rows.shape[0]
        if sp.issparse(rows):  # row i of the matrix: entries i n .. i n + n - 1; column j: j, j + n, ...
            flat = np.arange(self.n * self.n)
            R = sp.csr_matrix((np.ones(flat.size), (flat, flat // self.n)), shape=(flat.size, self.n))
            C = sp.csr_matrix((np.ones(flat.size), (flat, flat % self.n)), shape=(flat.size, self.n))
            return np.asarray((rows @ R).todense()), np.asarray((rows @ C).todense())
        square = rows.reshape(k, self.n, self.n)
        return square.sum(axis=2), square.sum(axis=1)

    def normal_norms2(self, rows):
        r, c = self._sums(rows)
        total = r.sum(axis=1)
        return (np.einsum("ij,ij->i", r, r) + np.einsum("ij,ij->i", c, c)) / self.n - total ** 2 / self.n ** 2

    def normal_part(self, rows):
        r, c = self._sums(rows)
        total = r.sum(axis=1)
        # N a = r_i / n + c_j / n - total / n^2 (the double centering's complement)
        part = (r[:, :, None] + c[:, None, :]) / self.n - (total / self.n ** 2)[:, None, None]
        # over the set every row and column sums to 1: <N a, s> = (sum r + sum c) / n - total / n
        return part.reshape(rows.shape[0], -1), total / self.n


class PreimageHull:
    """The hull of ``{x : a x + c in S}`` for one scale a (:class:`~fwmodel.sets.preimage.AffinePreimage`):
    S's normals (a similarity keeps them), and ``<N v, x> = (<N v, z> - <N v, c>) / a`` for x = (z - c) / a."""

    def __init__(self, inner, scale, offset):
        self.inner = inner
        self.scale = float(scale)
        self.offset = np.asarray(offset, dtype=float).ravel()

    def normal_norms2(self, rows):
        return self.inner.normal_norms2(rows)

    def normal_part(self, rows):
        part, value = self.inner.normal_part(rows)
        return part, (value - part @ np.broadcast_to(self.offset, (part.shape[1],))) / self.scale


class ScaledGroupSums:
    """The hull of ``{x : a * x + c in S}`` for S's :class:`GroupSums` and an entrywise scale a: each group's
    ``sum(a_g * x_g) == total_g - sum(c_g)``. Its normals are the vectors a_g on their groups (disjoint, so
    orthogonal): ``N v = sum_g (<v_g, a_g> / ||a_g||^2) a_g``, and ``<N v, x>`` is the same number over the set."""

    def __init__(self, inner, scale, offset):
        self.index = inner.index
        self.a = np.asarray(scale, dtype=float).ravel()
        offset = np.broadcast_to(np.asarray(offset, dtype=float).ravel(), self.a.shape)
        size = self.a.size
        groups = np.repeat(np.arange(inner.groups), inner.group_size)
        # rows @ Ga are each row's <v_g, a_g>; the groups' ||a_g||^2 and the right-hand sides of their sums
        self.Ga = sp.csr_matrix((self.a[self.index.ravel()], (self.index.ravel(), groups)), shape=(size, inner.groups))
        self.a2 = np.bincount(groups, weights=self.a[self.index.ravel()] ** 2, minlength=inner.groups)
        self.rhs = inner.totals - np.bincount(groups, weights=offset[self.index.ravel()], minlength=inner.groups)

    def normal_norms2(self, rows):
        dots = rows @ self.Ga
        dots = dots.toarray() if sp.issparse(dots) else np.asarray(dots)
        return (dots ** 2 / self.a2).sum(axis=1)

    def normal_part(self, rows):
        coef = (rows @ self.Ga) / self.a2  # (k, groups)
        part = np.zeros_like(rows)
        part[:, self.index] = coef[:, :, None] * self.a[self.index][None, :, :]
        return part, coef @ self.rhs
