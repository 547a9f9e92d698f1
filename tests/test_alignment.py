"""AlignmentPolytope: the Needleman-Wunsch and DTW LMOs against brute force,
Biopython and plain recursions; bands, batches, atoms, membership."""
import itertools

import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets import alignment
from fwmodel.sets.atoms import SparseAtom
from fwmodel.sets.alignment import (
    AlignmentPolytope,
    band_mask,
    matching_lmo,
    min_path_band,
    path_lmo,
)

try:
    import numba  # noqa: F401

    HAVE_NUMBA = True
except ImportError:
    HAVE_NUMBA = False
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba (optional backend) is not installed")
BIG_BATCH = alignment._VECTOR_TRACEBACK_MIN_BATCH + 6  # takes the vectorized traceback

SIZES = [(n, m) for n in range(1, 5) for m in range(1, 5)]


# ------------------------------------------------------------------ helpers
def all_matchings(n, m):
    """Every non-crossing partial matching of an (n, m) grid, as a (V, n, m) stack."""
    out = []
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.combinations(range(m), k):
                X = np.zeros((n, m))
                X[list(rows), list(cols)] = 1.0
                out.append(X)
    return np.array(out)


def all_paths(n, m):
    """Every monotone right/down/diagonal path from (0, 0) to (n-1, m-1)."""
    out = []

    def walk(i, j, cells):
        if (i, j) == (n - 1, m - 1):
            X = np.zeros((n, m))
            X[tuple(np.array(cells).T)] = 1.0
            out.append(X)
            return
        for di, dj in ((0, 1), (1, 0), (1, 1)):
            if i + di < n and j + dj < m:
                walk(i + di, j + dj, cells + [(i + di, j + dj)])

    walk(0, 0, [(0, 0)])
    return np.array(out)


def vertices(kind, n, m, band=None):
    V = all_matchings(n, m) if kind == "matching" else all_paths(n, m)
    if band is not None:
        inside = band_mask(n, m, band)
        V = V[~np.any(V[:, ~inside] != 0, axis=1)]
    return V


def is_vertex(X, V):
    return bool(np.any(np.all(V == X, axis=(1, 2))))


def dtw_plain(C, band=None):
    """The textbook O(nm) DTW recursion, one cell at a time."""
    n, m = C.shape
    ok = band_mask(n, m, band)
    D = np.full((n, m), np.inf)
    for i in range(n):
        for j in range(m):
            if not ok[i, j]:
                continue
            if i == 0 and j == 0:
                D[i, j] = C[i, j]
                continue
            best = np.inf
            if i > 0:
                best = min(best, D[i - 1, j])
            if j > 0:
                best = min(best, D[i, j - 1])
            if i > 0 and j > 0:
                best = min(best, D[i - 1, j - 1])
            D[i, j] = C[i, j] + best
    return D[-1, -1]


def nw_plain(G, band=None):
    """The textbook O(nm) minimum-cost non-crossing matching, one cell at a time."""
    n, m = G.shape
    ok = band_mask(n, m, band)
    D = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i, j] = min(D[i - 1, j], D[i, j - 1])
            if ok[i - 1, j - 1]:
                D[i, j] = min(D[i, j], D[i - 1, j - 1] + G[i - 1, j - 1])
    return D[n, m]


def lmo_of(kind):
    return matching_lmo if kind == "matching" else path_lmo


def make(shape, **kwargs):
    if not hasattr(fm, "Variable"):
        pytest.skip("fm.Variable is not available yet")
    return AlignmentPolytope(fm.Variable(shape), **kwargs)


# ---------------------------------------------------- LMO vs brute force
@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("n,m", SIZES)
def test_lmo_equals_brute_force(kind, n, m):
    rng = np.random.default_rng(100 * n + m)
    V = vertices(kind, n, m)
    for trial in range(25):
        G = rng.standard_normal((n, m))
        if trial % 5 == 0:
            G = np.round(G)  # many ties
        X, value = lmo_of(kind)(G, return_value=True)
        best = np.min(np.tensordot(V, G, axes=2))
        assert is_vertex(X, V)
        assert value == pytest.approx(best, abs=1e-9)
        assert np.sum(G * X) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("band", [0, 0.5, 1, 1.5, 2.5])
def test_banded_lmo_equals_banded_brute_force(kind, band):
    rng = np.random.default_rng(7)
    for n, m in SIZES:
        V = vertices(kind, n, m, band)
        if kind == "path" and len(V) == 0:
            with pytest.raises(ValueError, match="band"):
                path_lmo(np.zeros((n, m)), band=band)
            continue
        outside = ~band_mask(n, m, band)
        for _ in range(10):
            G = rng.standard_normal((n, m))
            X, value = lmo_of(kind)(G, band=band, return_value=True)
            assert not X[outside].any()
            assert is_vertex(X, V)
            assert value == pytest.approx(np.min(np.tensordot(V, G, axes=2)), abs=1e-9)


def test_band_geometry():
    # |i*m/n - j| <= w, row by row
    M = band_mask(4, 8, 1)
    assert [list(np.flatnonzero(r)) for r in M] == [[0, 1], [1, 2, 3], [3, 4, 5], [5, 6, 7]]
    assert band_mask(3, 3, 0).tolist() == np.eye(3, dtype=bool).tolist()
    assert band_mask(3, 5, None).all()
    for n, m in [(3, 7), (7, 3), (5, 5), (1, 6), (6, 1), (10, 13)]:
        w = min_path_band(n, m)
        path_lmo(np.zeros((n, m)), band=w)  # the smallest band fits...
        if w > 0:
            with pytest.raises(ValueError, match="too narrow"):
                path_lmo(np.zeros((n, m)), band=w * (1 - 1e-6))  # ...and nothing less


# ------------------------------------------------ Needleman-Wunsch = Biopython
@pytest.mark.parametrize("match,mismatch,gap", [(1, -1, -1), (2, -1, -0.5), (1.5, -0.25, -2), (1, 0, 0), (0.5, -1, 0.3)])
def test_matching_gives_biopython_global_score(match, mismatch, gap):
    Align = pytest.importorskip("Bio.Align")
    aligner = Align.PairwiseAligner(
        mode="global", match_score=match, mismatch_score=mismatch, open_gap_score=gap, extend_gap_score=gap
    )
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (1, 5), (6, 1), (5, 8), (12, 9), (25, 25), (40, 31)]:
        a = "".join(rng.choice(list("ACGT"), n))
        b = "".join(rng.choice(list("ACGT"), m))
        S = np.where(np.array(list(a))[:, None] == np.array(list(b))[None, :], match, mismatch)
        # score = sum of pair scores + gap * (n + m - 2 #pairs) = gap (n + m) - <-(S - 2 gap), X>
        X, value = matching_lmo(-(S - 2 * gap), return_value=True)
        ours = gap * (n + m) - value
        assert ours == pytest.approx(aligner.score(a, b), abs=1e-9)
        assert np.sum(S * X) + gap * (n + m - 2 * X.sum()) == pytest.approx(ours, abs=1e-9)


# ------------------------------------------------------ DTW = plain recursion
@pytest.mark.parametrize("n,m", [(1, 1), (1, 9), (9, 1), (2, 2), (13, 17), (30, 20), (45, 45)])
def test_path_value_equals_plain_dtw(n, m):
    rng = np.random.default_rng(n * m)
    for band in [None, 0.5 + min_path_band(n, m), 3.0 + min_path_band(n, m)]:
        for scale in [1.0, 100.0]:
            C = scale * rng.random((n, m))  # DTW costs are usually >= 0...
            for G in (C, C - scale * 0.5):  # ...but any sign works
                X, value = path_lmo(G, band=band, return_value=True)
                assert value == pytest.approx(dtw_plain(G, band), rel=1e-12, abs=1e-9)
                assert np.sum(G * X) == pytest.approx(value, rel=1e-12, abs=1e-9)
                assert X[0, 0] == 1 and X[-1, -1] == 1


@pytest.mark.parametrize("n,m", [(13, 17), (30, 20), (1, 9)])
def test_matching_value_equals_plain_nw(n, m):
    rng = np.random.default_rng(n + m)
    for band in [None, 0, 1.5, 4]:
        G = rng.standard_normal((n, m))
        X, value = matching_lmo(G, band=band, return_value=True)
        assert value == pytest.approx(nw_plain(G, band), abs=1e-9)
        assert np.sum(G * X) == pytest.approx(value, abs=1e-9)
        # a valid non-crossing matching
        r, c = np.nonzero(X)
        assert np.all(np.diff(r) > 0) and np.all(np.diff(c) > 0)


# ---------------------------------------------------------------- batches
@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("B", [1, 5, BIG_BATCH])
@pytest.mark.parametrize("band", [None, 2.0])
def test_batched_lmo_equals_loop(kind, B, band):
    rng = np.random.default_rng(B)
    for n, m in [(7, 9), (9, 7), (1, 4), (4, 1)]:
        if kind == "path" and band is not None and band < min_path_band(n, m):
            continue
        G = rng.standard_normal((B, n, m))
        G[0] = 0.0  # ties everywhere
        X, values = lmo_of(kind)(G, band=band, return_value=True)
        for b in range(B):
            Xb, vb = lmo_of(kind)(G[b], band=band, return_value=True)
            np.testing.assert_array_equal(X[b], Xb)
            assert values[b] == pytest.approx(vb, abs=1e-12)


def test_zero_direction_ties():
    # no gain from matching: the empty matching; DTW: ties prefer diagonal
    # steps, so the path is one of the shortest (max(n, m) cells)
    assert not matching_lmo(np.zeros((4, 6))).any()
    for shape in [(3, 5), (5, 3), (4, 4)]:
        X = path_lmo(np.zeros(shape))
        assert X.sum() == max(shape) and is_vertex(X, all_paths(*shape))


def test_invalid_directions():
    with pytest.raises(ValueError, match="non-finite"):
        matching_lmo(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="non-finite"):
        path_lmo(np.array([[0.0, -np.inf]]))
    with pytest.raises(ValueError, match="shape"):
        matching_lmo(np.zeros(5))
    with pytest.raises(ValueError, match="entries"):
        path_lmo(np.zeros((0, 3)))


# ---------------------------------------------------------------- the set
@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("shape,axis,band", [((6, 8), None, None), ((6, 8), None, 2), ((3, 5, 4), 0, None), ((BIG_BATCH, 4, 5), 0, 1)])
def test_set_lmo_atom_matches_lmo(kind, shape, axis, band):
    P = make(shape, kind=kind, band=band, axis=axis)
    assert P.is_polytope
    rng = np.random.default_rng(0)
    n, m = shape[-2:]
    for _ in range(5):
        G = rng.standard_normal(shape)
        atom = P.lmo_atom(G.ravel())
        vertex = P.lmo(G)
        assert isinstance(atom, SparseAtom)
        assert vertex.shape == shape
        np.testing.assert_array_equal(atom.to_dense().reshape(shape), vertex)
        np.testing.assert_array_equal(vertex, lmo_of(kind)(G, band=band))
        assert atom.indices.size <= vertex.size // (n * m) * (n + m - 1)
        assert atom.dot(G.ravel()) == pytest.approx(np.sum(G * vertex))
        x = np.full(G.size, 0.5)
        atom.add_to(x, 2.0)
        np.testing.assert_allclose(x, 0.5 + 2.0 * vertex.ravel())
        assert P.contains(vertex)
    # repeated LMO calls reuse buffers and give equal atoms (same key)
    G = rng.standard_normal(shape)
    assert P.lmo_atom(G.ravel()).key == P.lmo_atom(G.ravel()).key
    first = P.initial_atom().to_dense().reshape(shape)
    assert P.contains(first)
    if kind == "matching":
        assert not first.any()


def test_set_validation():
    if not hasattr(fm, "Variable"):
        pytest.skip("fm.Variable is not available yet")
    x = fm.Variable((4, 5))
    with pytest.raises(ValueError, match="kind"):
        AlignmentPolytope(x, kind="banana")
    with pytest.raises(ValueError, match="kind"):
        AlignmentPolytope(x, kind=None)
    for bad in [-1, "2", float("nan"), True, [1]]:
        with pytest.raises(ValueError, match="band"):
            AlignmentPolytope(x, band=bad)
    with pytest.raises(ValueError, match="too narrow"):
        AlignmentPolytope(fm.Variable((3, 7)), kind="path", band=1)
    AlignmentPolytope(fm.Variable((3, 7)), kind="matching", band=0)  # any band suits matchings
    AlignmentPolytope(x, band=float("inf"))
    for shape in [(5,), (2, 3, 4, 5)]:
        with pytest.raises(ValueError, match="shape"):
            AlignmentPolytope(fm.Variable(shape))
    with pytest.raises(ValueError, match="axis=0"):
        AlignmentPolytope(fm.Variable((2, 3, 4)))
    with pytest.raises(ValueError, match="axis"):
        AlignmentPolytope(fm.Variable((2, 3, 4)), axis=1)
    with pytest.raises(ValueError, match="axis"):
        AlignmentPolytope(x, axis=0)
    with pytest.raises(ValueError):
        AlignmentPolytope(fm.Variable((0, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        AlignmentPolytope(x).lmo(np.full((4, 5), np.nan))
    assert "kind='path'" in repr(AlignmentPolytope(x, kind="path", band=2))


# --------------------------------------------------- optional numba backend
@needs_numba
@pytest.mark.parametrize("kind", ["matching", "path"])
def test_numba_backend_equals_numpy(kind):
    rng = np.random.default_rng(5)
    f = lmo_of(kind)
    for trial in range(60):
        B, n, m = rng.integers(1, 4), rng.integers(1, 12), rng.integers(1, 12)
        G = rng.standard_normal((B, n, m))
        if trial % 3 == 0:
            G = np.round(G)  # ties: both backends break them the same way
        band = None if trial % 2 else float(rng.uniform(0, 4))
        if kind == "path" and band is not None and band < min_path_band(n, m):
            band = None
        X, v = f(G, band=band, return_value=True)
        Xn, vn = f(G, band=band, return_value=True, backend="numba")
        np.testing.assert_array_equal(Xn, X)
        np.testing.assert_allclose(vn, v, rtol=1e-12, atol=1e-12)
    P = make((BIG_BATCH, 5, 6), kind=kind, axis=0, backend="numba")
    G = rng.standard_normal(P.shape)
    np.testing.assert_array_equal(P.lmo(G), f(G))
    with pytest.raises(ValueError, match="non-finite"):
        f(np.array([[1.0, np.nan]]), backend="numba")


def test_backend_validation():
    with pytest.raises(ValueError, match="backend"):
        matching_lmo(np.zeros((2, 2)), backend="cuda")
    with pytest.raises(ValueError, match="backend"):
        make((2, 2), backend="fortran")
    if not HAVE_NUMBA:
        with pytest.raises(ValueError, match="numba"):
            make((2, 2), backend="numba")


# ------------------------------------------------------------- membership
def _in_hull(V, x):
    """Exact convex-hull membership by an LP over the listed vertices."""
    from scipy.optimize import linprog

    A = np.vstack([V.reshape(len(V), -1).T, np.ones(len(V))])
    b = np.concatenate([x.ravel(), [1.0]])
    res = linprog(np.zeros(len(V)), A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    return res.status == 0


@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("band", [None, 1])
def test_contains_is_exact_on_small_grids(kind, band):
    rng = np.random.default_rng(11)
    for n, m in [(2, 2), (2, 3), (3, 3), (3, 4)]:
        if kind == "path" and band is not None and band < min_path_band(n, m):
            continue
        P = make((n, m), kind=kind, band=band)
        V = vertices(kind, n, m, band)
        for trial in range(15):
            w = rng.dirichlet(np.full(len(V), 0.3))
            x = np.tensordot(w, V, axes=1)
            assert P.contains(x)
            # push toward a random point: in or out, the LP over vertices decides
            y = x + rng.uniform(0.05, 0.6) * (rng.random((n, m)) - x)
            if band is not None:
                y[~band_mask(n, m, band)] = 0.0
            if kind == "path":
                y[0, 0] = y[-1, -1] = 1.0
            assert P.contains(y) == _in_hull(V, y), (n, m, y)
        assert not P.contains(np.full((n, m), -0.1))
        assert not P.contains(np.zeros((n + 1, m)))


def test_contains_matching_crossings():
    P = make((2, 2))
    assert P.contains(np.array([[0.0, 0.5], [0.5, 0.0]]))  # half of each crossing pair
    assert not P.contains(np.array([[0.0, 0.6], [0.6, 0.0]]))  # they cross: sum <= 1
    assert P.contains(np.eye(2))
    assert not P.contains(np.array([[1.0, 0.0], [0.0, 1.0]]) * 1.01)


def test_diameter_bounds_vertex_distances():
    for kind in ["matching", "path"]:
        for n, m in [(1, 1), (1, 3), (2, 2), (3, 4), (4, 4)]:
            V = vertices(kind, n, m).reshape(-1, n * m)
            far = np.sqrt(np.max(((V[:, None] - V[None]) ** 2).sum(-1)))
            assert make((n, m), kind=kind).diameter() >= far - 1e-12
        assert make((3, 4, 4), kind=kind, axis=0).diameter() == pytest.approx(np.sqrt(3) * make((4, 4), kind=kind).diameter())
