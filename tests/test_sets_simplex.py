"""The (batched) simplex: one vectorized LMO equals a loop of single simplices."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm

try:  # shared helpers; tests/ may or may not be a package
    from .test_sets import check_vertex, directions
except ImportError:
    from test_sets import check_vertex, directions

SETTINGS = settings(max_examples=40, deadline=None)
seeds = st.integers(0, 2**32 - 1)


def simplex_points(rng, shape, axes, total, equality, count=15):
    """Independent samples: a Dirichlet draw per group (shrunk when equality=False)."""
    kept = [a for a in range(len(shape)) if a not in axes]
    perm = kept + list(axes)
    tshape = tuple(shape[a] for a in perm)
    groups = int(np.prod([shape[a] for a in kept], dtype=int))
    size = int(np.prod([shape[a] for a in axes], dtype=int))
    out = []
    for _ in range(count):
        P = rng.dirichlet(np.full(size, 0.5), size=groups) * total
        if not equality:
            P *= rng.uniform(0, 1, (groups, 1))
        out.append(P.reshape(tshape).transpose(np.argsort(perm)))
    return out


CASES = [
    ((5,), None),
    ((3, 4), None),
    ((3, 4), 1),
    ((3, 4), 0),
    ((3, 4), -1),
    ((2, 3, 3), (1, 2)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), -2),
    ((4, 1), 1),
]


@SETTINGS
@given(case=st.sampled_from(CASES), seed=seeds, total=st.sampled_from([1.0, 2.5, 0.0]), equality=st.booleans())
def test_simplex_lmo(case, seed, total, equality):
    shape, axis = case
    rng = np.random.default_rng(seed)
    S = fm.Simplex(fm.Variable(shape), total=total, axis=axis, equality=equality)
    axes = S._summed_axes
    pts = simplex_points(rng, shape, axes, total, equality)
    for D in directions(rng, shape):
        s = check_vertex(S, D, pts, rng)
        # the optimal value, group by group: total * min(min_j d_j, 0 if inequality)
        mins = np.min(D, axis=axes)
        if not equality:
            mins = np.minimum(mins, 0.0)
        assert np.vdot(D, s) == pytest.approx(total * mins.sum(), abs=1e-12)
    atom = S.lmo_atom(rng.standard_normal(S.size))
    assert isinstance(atom, fm.SparseAtom)
    assert atom.indices.size <= S.n_groups
    assert S.is_polytope


@SETTINGS
@given(case=st.sampled_from(CASES[2:]), seed=seeds, equality=st.booleans())
def test_batched_simplex_equals_loop_of_single_simplices(case, seed, equality):
    shape, axis = case
    rng = np.random.default_rng(seed)
    D = rng.integers(-3, 4, size=shape).astype(float)  # ties and zeros
    S = fm.Simplex(fm.Variable(shape), total=2.0, axis=axis, equality=equality)
    batched = S.lmo(D)
    axes = S._summed_axes
    kept = [a for a in range(len(shape)) if a not in axes]
    Dt = np.moveaxis(D, axes, range(len(shape) - len(axes), len(shape)))
    Bt = np.moveaxis(batched, axes, range(len(shape) - len(axes), len(shape)))
    for idx in np.ndindex(*[shape[a] for a in kept]):
        group = Dt[idx]
        single = fm.Simplex(fm.Variable(group.shape), total=2.0, equality=equality)
        np.testing.assert_array_equal(Bt[idx], single.lmo(group))


def test_rows_of_a_matrix():
    D = np.array([[3.0, -1.0, 2.0], [0.5, 0.25, 4.0]])
    S = fm.Simplex(fm.Variable((2, 3)), axis=1)
    np.testing.assert_array_equal(S.lmo(D), [[0, 1, 0], [0, 1, 0]])
    atom = S.lmo_atom(D.ravel())
    np.testing.assert_array_equal(atom.indices, [1, 4])
    np.testing.assert_array_equal(atom.values, [1.0, 1.0])
    assert S.diameter() == pytest.approx(2.0)


def test_edge_tables():
    # axis=(1, 2): each (K, K) table of an (E, K, K) array is one simplex
    D = np.zeros((2, 2, 2))
    D[0, 1, 0] = -1.0
    D[1, 0, 1] = -2.0
    S = fm.Simplex(fm.Variable((2, 2, 2)), axis=(1, 2))
    s = S.lmo(D)
    assert s[0, 1, 0] == 1 and s[1, 0, 1] == 1 and s.sum() == 2
    assert S.n_groups == 2 and S.group_size == 4
    assert S.axis == (1, 2)


def test_inequality_simplex_prefers_origin_for_nonnegative_directions():
    S = fm.Simplex(fm.Variable((2, 3)), axis=1, equality=False)
    D = np.array([[1.0, 0.0, 2.0], [1.0, -1.0, 2.0]])
    np.testing.assert_array_equal(S.lmo(D), [[0, 0, 0], [0, 1, 0]])
    atom = S.lmo_atom(D.ravel())
    np.testing.assert_array_equal(atom.indices, [4])  # no index for the group at 0
    assert S.initial_atom().to_dense().sum() == 0
    assert S.contains(np.zeros((2, 3)))
    assert not fm.Simplex(fm.Variable((2, 3)), axis=1).contains(np.zeros((2, 3)))


def test_contains_rejects_negative_and_wrong_sums():
    S = fm.Simplex(fm.Variable(3), total=2.0)
    assert S.contains([1.0, 1.0, 0.0])
    assert not S.contains([2.5, -0.5, 0.0])
    assert not S.contains([1.0, 0.5, 0.0])


def test_scalar_expression():
    S = fm.Simplex(fm.Variable(()), total=3.0)
    assert S.lmo(np.array(-1.0)) == 3.0
    with pytest.raises(ValueError, match="axis"):
        fm.Simplex(fm.Variable(()), axis=0)


def test_bad_axis():
    x = fm.Variable((2, 3))
    with pytest.raises(ValueError, match="axis"):
        fm.Simplex(x, axis=(1, 1))
    with pytest.raises(ValueError, match="axis"):
        fm.Simplex(x, axis=())
    with pytest.raises(ValueError, match="axis"):
        fm.Simplex(x, axis=-3)
