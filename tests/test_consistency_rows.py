"""Copy rows of the consistency operator (fwmodel/compiler/consistency.py) with stepped slices, against NumPy's
own indexing (brute force: np.arange(n)[index])."""
import itertools

import numpy as np
import pytest

from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows, _count, _positions

N = 23


def _slices():
    for start, stop, step in itertools.product([0, 1, 4], [4, 9, 23], [None, 1, 2, 3, 7]):
        yield slice(start, stop, step)
    yield slice(5, 5)  # empty
    yield slice(9, 4)  # empty, stop before start
    yield slice(None, 11, 3)  # no start


@pytest.mark.parametrize("index", list(_slices()), ids=str)
def test_count_and_positions_of_a_slice_are_numpys(index):
    expected = np.arange(N)[index]
    assert _count(index) == expected.size
    np.testing.assert_array_equal(_positions(index), expected)


@pytest.mark.parametrize("index", [np.array([3, 1, 7]), np.array([], dtype=np.intp)], ids=["positions", "none"])
def test_count_of_positions(index):
    assert _count(index) == index.size


def test_copy_rows_on_stepped_slices_agree_with_their_matrix():
    """x[0:12:2] copied to x[1:13:2] (even and odd entries): 6 rows; M x, M' r and the CSR matrix built from the
    positions agree with the same rows written out with NumPy."""
    rng = np.random.default_rng(0)
    copy, first = slice(1, 13, 2), slice(0, 12, 2)
    piece = CopyRows(copy, first)
    assert piece.rows == 6
    op = ConsistencyOperator([piece], 14)
    x, r = rng.standard_normal(14), rng.standard_normal(6)
    expected_rows = np.zeros((6, 14))
    expected_rows[np.arange(6), np.arange(14)[copy]] = 1.0
    expected_rows[np.arange(6), np.arange(14)[first]] = -1.0
    np.testing.assert_allclose(op.csr().toarray(), expected_rows)
    np.testing.assert_allclose(op.matvec(x), expected_rows @ x)
    np.testing.assert_allclose(op.rmatvec(r), expected_rows.T @ r)


def test_copy_rows_on_stepped_slices_are_not_taken_for_contiguous_copies():
    """Copies on stepped slices are accumulated like index arrays (the slice-by-slice M' r and signed_rows are for
    contiguous copies): the same M' r as the dense rows, and no signed identity claimed for a block."""
    copy, first = slice(0, 12, 3), slice(12, 16)
    op = ConsistencyOperator([CopyRows(copy, first)], 16)
    assert op.signed_rows(0, 12) is None
    r = np.arange(1.0, 5.0)
    expected = np.zeros(16)
    expected[np.arange(16)[copy]] += r
    expected[np.arange(16)[first]] -= r
    np.testing.assert_allclose(op.rmatvec(r), expected)


@pytest.mark.parametrize("index", [slice(None, None), slice(-3, 5), slice(8, 0, -2), slice(0, 6, 0)])
def test_copy_rows_refuse_slices_that_are_not_increasing_runs_inside_x(index):
    with pytest.raises(ValueError, match="increasing positions"):
        CopyRows(index, slice(0, 4))
