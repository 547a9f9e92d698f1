"""Properties shared by every built-in set: the LMO returns a point of the set
that minimizes <d, .> over independently sampled points of the set, and its
structured atom agrees with the dense vertex."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm

SETTINGS = settings(max_examples=40, deadline=None)


# --------------------------------------------------------------------- helpers
def directions(rng, shape):
    """A few directions: Gaussian, integer-valued (ties, zeros), all zero."""
    yield rng.standard_normal(shape)
    yield rng.integers(-2, 3, size=shape).astype(float)
    yield np.zeros(shape)


def check_vertex(S, D, points, rng, tol=1e-9, atom_atol=1e-12):
    """The LMO vertex is in S, beats every point, and its atom matches it.

    ``atom_atol``: how far ``lmo_atom`` may land from ``lmo`` (an iterative,
    warm-started LMO solves the second call from a different start).
    """
    s = S.lmo(D)
    assert s.shape == tuple(S.shape)
    assert S.contains(s), f"{S!r}: LMO vertex not in the set"
    atom = S.lmo_atom(D.ravel())
    dense = atom.to_dense()
    np.testing.assert_allclose(dense, s.ravel(), atol=atom_atol)
    g = rng.standard_normal(S.size)
    assert atom.dot(g) == pytest.approx(float(g @ dense), rel=1e-10, abs=1e-10)
    x = np.zeros(S.size)
    atom.add_to(x, 0.5)
    np.testing.assert_allclose(x, 0.5 * dense, atol=1e-12)
    best = float(np.vdot(D, s))
    scale = max(1.0, float(np.abs(D).sum()))
    for p in points:
        assert S.contains(p), f"{S!r}: sampled point not in the set"
        assert best <= float(np.vdot(D, p)) + tol * scale
    return s


def convex_combinations(rng, vertices, count):
    V = np.asarray(vertices)
    W = rng.dirichlet(np.ones(len(V)), size=count)
    return np.tensordot(W, V, axes=1)


shapes = st.sampled_from([(), (1,), (5,), (3, 4), (2, 3, 2)])
seeds = st.integers(0, 2**32 - 1)
radii = st.sampled_from([0.0, 0.5, 1.0, 3.0])


# ---------------------------------------------------------------- the L1 ball
@SETTINGS
@given(shape=shapes, seed=seeds, radius=radii)
def test_l1_ball_lmo(shape, seed, radius):
    rng = np.random.default_rng(seed)
    S = fm.L1Ball(fm.Variable(shape), radius=radius)
    n = S.size
    Z = rng.standard_normal((20, n))
    pts = Z / np.abs(Z).sum(axis=1, keepdims=True) * radius * rng.uniform(0, 1, (20, 1))
    pts = [p.reshape(shape) for p in pts]
    vertices = np.concatenate([np.eye(n), -np.eye(n)]) * radius
    for D in directions(rng, shape):
        s = check_vertex(S, D, pts, rng)
        # brute force over all 2n vertices
        assert np.vdot(D, s) == pytest.approx((vertices @ D.ravel()).min(), abs=1e-12)
    assert isinstance(S.lmo_atom(rng.standard_normal(n)), fm.SparseAtom)
    assert S.is_polytope
    assert S.diameter() == 2 * radius


# ---------------------------------------------------------------- the L2 ball
@SETTINGS
@given(shape=shapes, seed=seeds, radius=radii)
def test_l2_ball_lmo(shape, seed, radius):
    rng = np.random.default_rng(seed)
    S = fm.L2Ball(fm.Variable(shape), radius=radius)
    Z = rng.standard_normal((20, S.size))
    pts = Z / np.linalg.norm(Z, axis=1, keepdims=True) * radius * rng.uniform(0, 1, (20, 1))
    pts = [p.reshape(shape) for p in pts]
    for D in directions(rng, shape):
        s = check_vertex(S, D, pts, rng)
        assert np.vdot(D, s) == pytest.approx(-radius * np.linalg.norm(D), abs=1e-12)
    assert not S.is_polytope


# ------------------------------------------------------- boxes and Linf balls
@SETTINGS
@given(shape=shapes, seed=seeds, radius=radii)
def test_linf_ball_lmo(shape, seed, radius):
    rng = np.random.default_rng(seed)
    S = fm.LinfBall(fm.Variable(shape), radius=radius)
    pts = [rng.uniform(-radius, radius, shape) for _ in range(20)]
    for D in directions(rng, shape):
        s = check_vertex(S, D, pts, rng)
        assert np.vdot(D, s) == pytest.approx(-radius * np.abs(D).sum(), abs=1e-12)
    assert S.is_polytope


@SETTINGS
@given(shape=st.sampled_from([(4,), (2, 3), (3, 1)]), seed=seeds, scalar=st.booleans())
def test_box_lmo_brute_force(shape, seed, scalar):
    rng = np.random.default_rng(seed)
    if scalar:
        lower, upper = -0.5, 2.0
    else:
        lower = rng.standard_normal(shape)
        upper = lower + rng.uniform(0, 2, shape) * rng.integers(0, 2, shape)  # some lower == upper
    S = fm.Box(fm.Variable(shape), lower, upper)
    lo, hi = np.broadcast_to(lower, shape), np.broadcast_to(upper, shape)
    pts = [lo + (hi - lo) * rng.uniform(0, 1, shape) for _ in range(20)]
    corners = [np.where(np.array(bits).reshape(shape), hi, lo) for bits in itertools.product([0, 1], repeat=S.size)]
    for D in directions(rng, shape):
        s = check_vertex(S, D, pts, rng)
        assert np.vdot(D, s) == pytest.approx(min(np.vdot(D, c) for c in corners), abs=1e-12)


def test_box_broadcast_bounds_and_keys():
    x = fm.Variable((3, 4))
    S = fm.Box(x, lower=np.zeros((1, 4)), upper=np.arange(1, 4).reshape(3, 1))
    D = -np.ones((3, 4))
    np.testing.assert_array_equal(S.lmo(D), np.repeat([[1.0], [2.0], [3.0]], 4, axis=1))
    a, b = S.lmo_atom(D.ravel()), S.lmo_atom(2 * D.ravel())
    assert a.key == b.key  # same sign pattern, same vertex, same key
    assert S.lmo_atom(-D.ravel()).key != a.key
    assert S.diameter() == pytest.approx(np.sqrt(4 * (1 + 4 + 9)))
    # coordinates with lower == upper do not split keys of equal vertices
    T = fm.Box(fm.Variable(2), lower=[0.0, 1.0], upper=[1.0, 1.0])
    assert T.lmo_atom(np.array([1.0, 1.0])).key == T.lmo_atom(np.array([1.0, -1.0])).key


# ------------------------------------------------------- the k-sparse polytope
def ksparse_vertices(n, k, radius):
    out = []
    for idx in itertools.combinations(range(n), min(k, n)):
        for signs in itertools.product([-1.0, 1.0], repeat=len(idx)):
            v = np.zeros(n)
            v[list(idx)] = radius * np.array(signs)
            out.append(v)
    return np.array(out)


@SETTINGS
@given(n=st.integers(1, 6), k=st.integers(1, 7), seed=seeds, radius=radii)
def test_ksparse_lmo_brute_force(n, k, seed, radius):
    rng = np.random.default_rng(seed)
    S = fm.KSparsePolytope(fm.Variable(n), k, radius)
    V = ksparse_vertices(n, k, radius)
    # independent samples: clip to the Linf ball, then shrink into the L1 ball
    Z = rng.standard_normal((20, n)) * 2 * radius
    Y = np.clip(Z, -radius, radius)
    l1 = np.abs(Y).sum(axis=1, keepdims=True)
    Y = np.where(l1 > min(k, n) * radius, Y * (min(k, n) * radius / np.maximum(l1, 1e-300)), Y)
    pts = list(Y) + list(convex_combinations(rng, V, 10))
    for D in directions(rng, (n,)):
        s = check_vertex(S, D, pts, rng)
        assert np.vdot(D, s) == pytest.approx((V @ D).min(), abs=1e-12)
        assert np.count_nonzero(s) <= k
    assert isinstance(S.lmo_atom(rng.standard_normal(n)), fm.SparseAtom)


def test_ksparse_matrix_expression():
    rng = np.random.default_rng(0)
    S = fm.KSparsePolytope(fm.Variable((4, 5)), k=3, radius=2.0)
    D = rng.standard_normal((4, 5))
    s = S.lmo(D)
    top = np.sort(np.abs(D).ravel())[-3:]
    assert np.vdot(D, s) == pytest.approx(-2.0 * top.sum())
    assert S.diameter() == pytest.approx(4.0 * np.sqrt(3))


# ------------------------------------------------------- the Birkhoff polytope
def sinkhorn(A, iters=2000):
    for _ in range(iters):
        A = A / A.sum(axis=1, keepdims=True)
        A = A / A.sum(axis=0, keepdims=True)
    return A


PERMS4 = np.array([np.eye(4)[list(p)] for p in itertools.permutations(range(4))])


@SETTINGS
@given(seed=seeds)
def test_birkhoff_lmo_brute_force(seed):
    rng = np.random.default_rng(seed)
    S = fm.BirkhoffPolytope(fm.Variable((4, 4)))
    pts = list(convex_combinations(rng, PERMS4, 15)) + [sinkhorn(rng.uniform(0.1, 1, (4, 4))) for _ in range(3)]
    for D in directions(rng, (4, 4)):
        s = check_vertex(S, D, pts, rng, tol=1e-8)
        assert np.vdot(D, s) == pytest.approx(np.tensordot(PERMS4, D, axes=2).min(), abs=1e-12)
        # a permutation matrix
        np.testing.assert_array_equal(np.sort(s, axis=1)[:, -1], 1.0)
        assert s.sum() == 4
    atom = S.lmo_atom(rng.standard_normal(16))
    assert isinstance(atom, fm.SparseAtom) and atom.indices.size == 4
    assert S.diameter() == pytest.approx(np.sqrt(8))


# ---------------------------------------------- starting vertices and errors
def all_sets():
    x, M = fm.Variable(6), fm.Variable((5, 5))
    return [
        fm.L1Ball(x, 2.0), fm.L2Ball(x), fm.LinfBall(x), fm.Box(x, -1, [0, 1, 2, 3, 4, 5]),
        fm.KSparsePolytope(x, 2, 1.0), fm.Simplex(M, axis=1), fm.Simplex(x, equality=False),
        fm.BirkhoffPolytope(M), fm.TraceNormBall(M, 3.0), fm.TraceNormBall(M, 3.0, psd=True),
    ]


@pytest.mark.parametrize("S", all_sets(), ids=repr)
def test_initial_atom_is_in_the_set(S):
    atom = S.initial_atom()
    assert isinstance(atom, fm.Atom)
    assert S.contains(atom.to_dense().reshape(S.shape))
    assert S.diameter() is not None and S.diameter() >= 0
    assert S.contains(np.zeros(S.size + 1)) is False


@pytest.mark.parametrize("S", all_sets(), ids=repr)
def test_lmo_accepts_flat_direction_and_rejects_wrong_size(S):
    rng = np.random.default_rng(1)
    D = rng.standard_normal(S.shape)
    np.testing.assert_allclose(S.lmo(D.ravel()), S.lmo(D))
    with pytest.raises(ValueError, match="direction"):
        S.lmo(np.zeros(S.size + 1))
    with pytest.raises(ValueError, match="direction"):
        S.lmo_atom(np.zeros(S.size + 1))


BAD = [
    (lambda x: fm.L1Ball(x, radius=-1), "radius"),
    (lambda x: fm.L1Ball(x, radius=np.inf), "radius"),
    (lambda x: fm.L1Ball(x, radius="big"), "radius"),
    (lambda x: fm.L2Ball(x, radius=-0.1), "radius"),
    (lambda x: fm.LinfBall(x, radius=-2), "radius"),
    (lambda x: fm.Box(x, 1.0, 0.0), "lower"),
    (lambda x: fm.Box(x, np.zeros(3), 1.0), "lower"),
    (lambda x: fm.Box(x, 0.0, np.ones((4, 2))), "upper"),
    (lambda x: fm.Box(x, -np.inf, 1.0), "lower"),
    (lambda x: fm.Box(x, 0.0, np.nan), "upper"),
    (lambda x: fm.KSparsePolytope(x, 0, 1.0), "k"),
    (lambda x: fm.KSparsePolytope(x, 1.5, 1.0), "k"),
    (lambda x: fm.KSparsePolytope(x, 2, -1.0), "radius"),
    (lambda x: fm.Simplex(x, total=-1), "total"),
    (lambda x: fm.Simplex(x, axis=2), "axis"),
    (lambda x: fm.Simplex(x, axis=(0, -2)), "axis"),
    (lambda x: fm.Simplex(x, axis=1.5), "axis"),
    (lambda x: fm.BirkhoffPolytope(x), "square"),
    (lambda x: fm.TraceNormBall(x, radius=-1), "radius"),
    (lambda x: fm.TraceNormBall(x, psd=True), "square"),
    (lambda x: fm.TraceNormBall(x, lmo_tol=-1e-3), "lmo_tol"),
    (lambda x: fm.TraceNormBall(x, dense_threshold=-1), "dense_threshold"),
    (lambda x: fm.TraceNormBall(fm.Variable(4)), "2-D"),
    (lambda x: fm.BirkhoffPolytope(fm.Variable((2, 2, 2))), "square"),
]


@pytest.mark.parametrize("make, name", BAD, ids=[f"{i}-{n}" for i, (_, n) in enumerate(BAD)])
def test_bad_parameters_raise_value_error_naming_them(make, name):
    with pytest.raises(ValueError, match=name):
        make(fm.Variable((2, 4)))


def test_shape_errors_are_model_errors():
    with pytest.raises(fm.ModelError, match=r"\(2, 4\)"):
        fm.BirkhoffPolytope(fm.Variable((2, 4)))
    with pytest.raises(fm.ModelError, match="matrix"):
        fm.TraceNormBall(fm.Variable(3))


def test_sets_on_affine_expressions():
    X = fm.Variable((4, 5), name="X")
    S = fm.Simplex(2 * X[:, 1:3] + 1, axis=1)
    assert S.shape == (4, 2) and S.n_groups == 4
    np.testing.assert_array_equal(S.lmo(np.array([[1.0, -1.0]] * 4)), [[0, 1]] * 4)
    T = fm.TraceNormBall(X.T, radius=2.0)
    assert T.shape == (5, 4)
    assert "X" in repr(T)
    with pytest.raises(fm.ModelError, match="affine"):
        fm.L1Ball(fm.sum_squares(X))
