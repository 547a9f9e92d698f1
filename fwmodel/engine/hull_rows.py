"""Constraint rows nearly parallel to a set's own equalities, kept as their part off them.

A simplex's points all sum to its total, a Birkhoff polytope's rows and
columns to 1 (the set's affine hull, :mod:`fwmodel.sets.hulls`). Those sums
live inside the block: the LMO keeps them, and they are no rows of M. A
user's row on the same entries that is nearly one of them, such as an
expected return ``mu @ w == target`` over a simplex of weights where the
assets' returns are nearly equal (``mu = 0.05 + 1e-4 noise``), constrains
the set only through its small part off the hull: on the set,

    <a, s> = <a - N a, s> + <N a, s0>      (N: onto the hull's normals; s0 any point of the set),

so ``<a, s> = beta`` is the row ``a - N a`` with right-hand side
``beta - <N a, s0>``. Written as is, the row's residual is read in the
units of a (norm about sqrt(size)) while the constraint acts in those of
a - N a (1e-4 of them): the penalty and dual step hardly move it, the
feasibility test lets it be off by 1 / ||a - N a|| times its tolerance,
and "optimal" ended up to 7.6 % below f*, or at max_iter (benchmarks/hull_rows.py).

The rows replaced are those of explicit constraint pieces (``SparseRows``)
whose part off the hulls of the blocks they read has a norm below
``NEARLY_PARALLEL`` of the row's (the threshold of nearly dependent rows,
:data:`fwmodel.sets.hulls.NEARLY_PARALLEL`): other rows are left as
written, so the iterates of every other model are unchanged. A row that
lies in the hull's normals to rounding (``fm.sum(w) == 1`` on a simplex
written again) is left too: it is met or violated by every point alike.
Residuals at points of the sets, multipliers and duals are those of the rows
as written (the difference is a constant over the sets), so nothing is
mapped back after the solve.

A row on a variable with several copies (``w`` in a simplex and in an L1
ball) reads them all, part of it on each: its coefficients are first moved
onto the copy in the hull's block (the copies are tied, ``CopyRows``), and
rows that qualify are kept in that form. There the two forms differ by a
multiple of the ties' residual, which the solve drives to 0 with the rest,
and the multipliers still agree at the optimum (the difference is taken up
by the ties'): "optimal" 3.8 % below f* before, 6e-6 now. A simplex on
``2 * y - 0.01`` is a block holding y (an affine preimage), whose hull is
the simplex's read through the map (:class:`fwmodel.sets.hulls.PreimageHull`).
"""
import numpy as np
import scipy.sparse as sp

from ..compiler.consistency import ConsistencyOperator, CopyRows, SparseRows
from ..sets.hulls import part_off_hulls


def reduced_by_hulls(M, b, blocks):
    """(M, b) with the rows nearly parallel to the blocks' hulls kept as their part off them, or the
    same (M, b) where no row is (see the module's notes)."""
    hulls = [blk for blk in blocks if getattr(blk, "hull", None) is not None]
    pieces = getattr(M, "pieces", None)
    if not hulls or not pieces or type(M) is not ConsistencyOperator:
        return M, b
    onto = _copies_onto_hulls(pieces, hulls, M.n)
    new, b_new = [], None
    for p, lo in zip(pieces, M.offsets[:-1]):
        made = _reduced_piece(p, hulls, onto) if isinstance(p, SparseRows) else None
        if made is None:
            new.append(p)
            continue
        piece, shift = made
        new.append(piece)
        if b_new is None:
            b_new = np.array(b, dtype=float, copy=True)
        b_new[lo:lo + p.rows] -= shift
    if b_new is None:
        return M, b
    return ConsistencyOperator(new, M.n), b_new


def _copies_onto_hulls(pieces, hulls, n):
    """For each column of x, the column a row's coefficient is moved to: the copy of the same variable entry
    in a hull's block where the copies are tied (``CopyRows``), else itself (None: no tie reaches a hull).

    The compiler spreads a row over a variable's copies (``w`` in a simplex and in an L1 ball: half of the
    row on each); on the points where the copies agree the row reads the same with all of it on the
    simplex's copy, where its part off the sums shows."""
    in_hull = np.zeros(n, dtype=bool)
    for blk in hulls:
        in_hull[blk.slice] = True
    columns = np.arange(n)
    onto, tied = columns.copy(), False
    for p in pieces:
        if not isinstance(p, CopyRows):
            continue
        copy, first = columns[p.copy], columns[p.first]
        to_copy = in_hull[copy] & ~in_hull[first]
        onto[first[to_copy]] = copy[to_copy]
        to_first = in_hull[first] & ~to_copy
        onto[copy[to_first]] = first[to_first]
        # copies of an entry with no hull between them: onto the first (a hull may hold it)
        neither = ~in_hull[copy] & ~in_hull[first]
        onto[copy[neither]] = first[neither]
        tied = tied or bool(np.any(to_copy) or np.any(to_first))
    if not tied:
        return None
    for _ in range(len(pieces)):  # chains (copy -> first copy -> the hull's copy) to their end
        further = onto[onto]
        if np.array_equal(further, onto):
            break
        onto = further
    return onto


def _reduced_piece(p, hulls, onto=None):
    """(the piece with its nearly parallel rows replaced, the shift of each row's right-hand side), or None.

    ``onto``: :func:`_copies_onto_hulls`' column map: the rows are read with their coefficients moved
    there, and those of them that qualify are replaced in that form."""
    A = p.A
    if onto is not None:
        # (new arrays: sum_duplicates works in place, and the piece's own rows stay as they are)
        A = sp.csr_matrix((A.data.copy(), onto[A.indices], A.indptr.copy()), shape=A.shape)
        A.sum_duplicates()
    _, off, near, parts, shift = part_off_hulls(A, [(blk.hull, blk.slice) for blk in hulls])
    # rows in the normals to rounding (a sum of the set written again) stay as written
    keep = off[near] > 0
    if not np.any(keep):
        return None
    near, shift = near[keep], shift[keep]
    cols = np.concatenate([np.arange(blk.offset, blk.offset + blk.size) for blk in hulls])
    values = np.concatenate([part[keep] for part in parts], axis=1)
    N_a = sp.csr_matrix((values.ravel(), (np.repeat(near, cols.size), np.tile(cols, near.size))), shape=A.shape)
    chosen = np.zeros(p.rows)
    chosen[near] = 1.0
    # the rows chosen in their reduced form, the others as written
    reduced = (sp.diags(1.0 - chosen) @ p.A + sp.diags(chosen) @ (A - N_a)).tocsr()
    reduced.eliminate_zeros()
    full_shift = np.zeros(p.rows)
    full_shift[near] = shift
    return SparseRows(reduced, np.asarray(p.b, dtype=float) - full_shift, label=p.label), full_shift
