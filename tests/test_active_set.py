"""Active-set invariants under random step sequences (weights >= 0 summing to one, x rebuilt from atoms)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwmodel.engine import ActiveSet
from fwmodel.sets.atoms import Atom, DenseAtom, RankOneAtom, SparseAtom

SIZE = 12
SHAPE = (3, 4)


class _OpaqueAtom(Atom):
    """A user-defined atom kind the active set knows only through dot/add_to."""

    def __init__(self, vector, key):
        self.vector_ = np.asarray(vector, dtype=float)
        self.size = self.vector_.size
        self.key = ("opaque", key)

    def dot(self, g):
        return float(self.vector_ @ g)

    def add_to(self, x, weight):
        x += weight * self.vector_


def _make_atom(kind, seed):
    """A deterministic atom of the given kind; equal (kind, seed) give equal keys and points."""
    rng = np.random.default_rng(seed)
    if kind == "sparse":
        nnz = 1 + seed % 5
        idx = rng.choice(SIZE, size=nnz, replace=False)
        return SparseAtom(idx, rng.choice([-1.0, 1.0, 2.0], size=nnz), SIZE)
    if kind in ("perm", "perm_scaled"):  # one entry in each of 3 segments of 4 (0/1: the Gram counting path)
        return SparseAtom(np.arange(3) * 4 + rng.integers(0, 4, 3), 2.0 if kind == "perm_scaled" else 1.0, SIZE)
    if kind == "origin":
        return SparseAtom(np.zeros(0, dtype=np.intp), np.zeros(0), SIZE)
    if kind == "dense":
        return DenseAtom(rng.standard_normal(SIZE))
    if kind == "rank1":
        atom = RankOneAtom(rng.standard_normal(SHAPE[0]), rng.standard_normal(SHAPE[1]), 1.5, SHAPE)
        atom.key = ("rank1-test", seed)  # repeated seeds must name the same point
        return atom
    return _OpaqueAtom(rng.standard_normal(SIZE), seed)


atom_spec = st.tuples(st.sampled_from(["sparse", "dense", "rank1", "opaque", "origin", "perm", "perm_scaled"]),
                      st.integers(0, 6))


def _steps(atom_spec):
    return st.one_of(
        st.tuples(st.just("fw"), atom_spec, st.floats(0.0, 1.0)),
        st.tuples(st.just("away"), st.integers(0, 50), st.floats(0.0, 1.0)),
        st.tuples(st.just("pairwise"), atom_spec, st.integers(0, 50), st.floats(0.0, 1.0)),
        st.tuples(st.just("local"), st.integers(0, 50), st.integers(0, 50), st.floats(0.0, 1.0)),
        st.tuples(st.just("weights"), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8)),
        st.tuples(st.just("gram")),
        st.tuples(st.just("gram"), st.integers(1, 6)),  # tracked with a cap on the atoms
    )


step = _steps(atom_spec)
# mostly 0/1 atoms of one segment pattern (their Gram columns are counted), now and then another kind
pattern_spec = st.tuples(st.sampled_from(["perm"] * 8 + ["perm_scaled", "sparse"]), st.integers(0, 40))


def _apply(aset, x, move):
    """Take one step on both the active set and the dense iterate x (the reference)."""
    kind = move[0]
    k = len(aset)
    if kind == "fw":
        atom, gamma = _make_atom(*move[1]), move[2]
        x *= 1.0 - gamma
        atom.add_to(x, gamma)
        aset.fw_update(atom, gamma)
    elif kind == "away":
        pos = move[1] % k
        alpha = aset.weight(pos)
        if alpha >= 1.0:
            return
        gamma = move[2] * alpha / (1.0 - alpha)  # the away step's cap (Alg. 1 line 11)
        if gamma > 1e3:  # the dense reference x would lose digits to cancellation
            return
        v = aset.atom(pos)
        x *= 1.0 + gamma
        v.add_to(x, -gamma)
        aset.away_update(pos, gamma)
    elif kind == "pairwise":
        atom, pos = _make_atom(*move[1]), move[2] % k
        gamma = move[3] * aset.weight(pos)
        atom.add_to(x, gamma)
        aset.atom(pos).add_to(x, -gamma)
        aset.pairwise_update(atom, pos, gamma)
    elif kind == "weights":  # new weights for the active atoms (zeros drop their atoms)
        raw = np.resize(np.asarray(move[1]), k)
        if raw.sum() <= 1e-3:
            return
        w = raw / raw.sum()
        x[:] = 0.0
        for atom, wi in zip(aset.atoms, w):
            atom.add_to(x, wi)
        aset.set_weights(w)
    elif kind == "gram":
        tracked = aset.gram is not None
        aset.track_gram(SIZE, *move[1:])
        if not tracked and len(move) > 1:  # storage is allocated for the cap, or the atoms active now if more
            aset.storage_bound_for_test = max(move[1], len(aset))
    else:
        src, dst = move[1] % k, move[2] % k
        if src == dst:
            return
        gamma = move[3] * aset.weight(src)
        aset.atom(dst).add_to(x, gamma)
        aset.atom(src).add_to(x, -gamma)
        aset.move_weight(src, dst, gamma)


def _check_invariants(aset, x):
    w = aset.weights
    assert len(w) == len(aset.atoms) == len(aset) >= 1
    assert np.all(w > 0)
    assert abs(w.sum() - 1.0) <= 1e-12
    assert len({a.key for a in aset.atoms}) == len(aset)  # no atom twice
    assert np.allclose(aset.dense(SIZE), x, atol=1e-9)
    # the vectorized inner products agree with each atom's own dot, in position order
    g = np.random.default_rng(len(aset)).standard_normal(SIZE)
    assert np.allclose(aset.dots(g), [a.dot(g) for a in aset.atoms], atol=1e-12)
    pos, atom, weight, value = aset.away_vertex(g)
    assert atom is aset.atoms[pos] and weight == w[pos]
    assert np.isclose(value, max(a.dot(g) for a in aset.atoms))
    a, a_val, s, s_val = aset.extreme_vertices(g)
    assert np.isclose(a_val, aset.atoms[a].dot(g)) and np.isclose(s_val, min(a.dot(g) for a in aset.atoms))
    if aset.gram is not None:  # the tracked Gram matrix is A A' of the atoms, in position order
        A = np.array([a.to_dense() for a in aset.atoms]).reshape(len(aset), SIZE)
        assert np.allclose(aset.gram, A @ A.T, atol=1e-12)
        # a capped Gram matrix is never stored beyond its cap (it is dropped instead), or beyond the
        # atoms active when it was tracked where they were more (removals do not shrink the storage)
        cap = aset._gram_max
        assert cap is None or aset._gram.shape[0] <= getattr(aset, "storage_bound_for_test", cap)


@settings(max_examples=300, deadline=None)
@given(first=atom_spec, moves=st.lists(step, max_size=40))
def test_active_set_invariants_under_random_steps(first, moves):
    atom = _make_atom(*first)
    aset = ActiveSet(atom)
    x = atom.to_dense()
    for move in moves:
        _apply(aset, x, move)
        _check_invariants(aset, x)
    _check_invariants(aset, x)


@settings(max_examples=300, deadline=None)
@given(first=pattern_spec, moves=st.lists(_steps(pattern_spec), max_size=60))
def test_active_set_invariants_with_counted_gram_columns(first, moves):
    """The same invariants on sets of 0/1 atoms of one pattern, whose Gram columns are counts."""
    atom = _make_atom(*first)
    aset = ActiveSet(atom)
    aset.track_gram(SIZE)
    x = atom.to_dense()
    for move in moves:
        _apply(aset, x, move)
        _check_invariants(aset, x)
    _check_invariants(aset, x)


def test_drop_steps_remove_atoms_and_repeated_vertices_merge():
    a, b = SparseAtom([0], [1.0], 4), SparseAtom([1], [1.0], 4)
    aset = ActiveSet(a)
    aset.fw_update(b, 0.25)
    aset.fw_update(SparseAtom([1], [1.0], 4), 0.5)  # the same vertex again: one weight
    assert len(aset) == 2 and np.isclose(aset.weight_of(b), 0.25 * 0.5 + 0.5)
    pos = aset.atoms.index(a)
    aset.pairwise_update(b, pos, aset.weight(pos))  # a drop step
    assert len(aset) == 1 and aset.weight_of(b) == 1.0
    aset.fw_update(a, 1.0)  # a full FW step leaves the new vertex alone
    assert aset.atoms == [a] and aset.weights.tolist() == [1.0]


def test_inner_products_cost_does_not_grow_with_atoms_added_and_removed():
    """Storage is reused: after many insert/delete cycles the arrays stay at the live size's capacity."""
    n = 50
    aset = ActiveSet(SparseAtom(np.arange(n) * n, 1.0, n * n))
    rng = np.random.default_rng(0)
    for t in range(3000):
        perm = rng.permutation(n)
        aset.fw_update(SparseAtom(np.arange(n) * n + perm, 1.0, n * n), 0.3)
        if len(aset) > 20:  # drop the lightest atoms by pairwise steps onto the heaviest
            while len(aset) > 10:
                w = aset.weights
                aset.move_weight(int(np.argmin(w)), int(np.argmax(w)), float(w.min()))
    store = next(iter(aset._stores.values()))
    assert store.indices.shape[0] <= 64  # capacity follows the largest live size (21), not the 3000 inserts


def test_one_kind_inner_products_in_position_order_after_removals():
    """With one atom kind the store's rows are the positions (no scatter): checked against each atom's own
    dot after random FW, pairwise and drop steps, and against the mixed-kind path once a dense atom joins."""
    n = 30
    rng = np.random.default_rng(3)
    aset = ActiveSet(SparseAtom([0], [1.0], n))
    g = rng.standard_normal(n)
    for t in range(200):
        vertex = SparseAtom([int(rng.integers(n))], [1.0], n)
        if rng.random() < 0.6 or len(aset) < 2:
            aset.fw_update(vertex, float(rng.uniform(0.05, 0.5)))
        else:  # a pairwise step, a drop step half of the time
            pos = int(rng.integers(len(aset)))
            full = rng.random() < 0.5
            aset.pairwise_update(vertex, pos, aset.weight(pos) * (1.0 if full else 0.5))
        (store,) = aset._stores.values()
        assert store.slots[:store.count].tolist() == list(range(len(aset)))
        assert aset.dots(g).tolist() == [a.dot(g) for a in aset.atoms]
    aset.fw_update(DenseAtom(rng.standard_normal(n)), 0.3)  # a second kind: the scatter path
    assert np.allclose(aset.dots(g), [a.dot(g) for a in aset.atoms], atol=1e-12)


# ---------------------------------------------------------------- Gram columns by counting shared entries
def _permutation_atom(n, rng, value=1.0, shuffle_entries=False):
    """A permutation matrix of order n as a flat sparse atom (entry l in row l, unless shuffled)."""
    indices = np.arange(n) * n + rng.permutation(n)
    if shuffle_entries:  # the same point, its entries listed out of row order
        indices = indices[rng.permutation(n)]
    return SparseAtom(indices, value, n * n)


def _dense_gram(atoms, size):
    A = np.array([a.to_dense() for a in atoms]).reshape(len(atoms), size)
    return A @ A.T


def test_gram_of_permutations_is_the_count_of_agreeing_rows_exactly():
    """Permutation atoms take the counting path; their Gram matrix equals the dense inner products exactly,
    through FW, pairwise and drop steps (swap-removes move the stored offsets with their rows)."""
    n = 7
    rng = np.random.default_rng(5)
    aset = ActiveSet(_permutation_atom(n, rng))
    aset.track_gram(n * n)
    (store,) = aset._stores.values()
    assert store.pattern is not None and store.pattern.offsets.dtype == np.uint8
    for t in range(300):
        if rng.random() < 0.6 or len(aset) < 2:
            aset.fw_update(_permutation_atom(n, rng), float(rng.uniform(0.01, 0.3)))
        else:
            pos = int(rng.integers(len(aset)))
            target = _permutation_atom(n, rng)
            aset.pairwise_update(target, pos, aset.weight(pos) * (1.0 if rng.random() < 0.5 else 0.5))
        assert store.pattern is not None  # every atom kept the pattern: the counting path ran
        assert np.array_equal(aset.gram, _dense_gram(aset.atoms, n * n))
    assert len(aset) > 20


def test_gram_columns_by_counting_equal_the_gathered_inner_products_bit_for_bit(monkeypatch):
    """The same steps on two active sets, one with the counting path switched off: identical Gram matrices,
    so the steps that read them take the same decisions."""
    import fwmodel.engine.active_set as active_set_module

    n = 12
    rng = np.random.default_rng(11)
    atoms = [_permutation_atom(n, rng) for _ in range(60)]
    plans = [(int(rng.integers(60)), float(rng.uniform(0.02, 0.4))) for _ in range(150)]

    def run():
        aset = ActiveSet(atoms[0])
        aset.track_gram(n * n)
        grams = []
        for i, gamma in plans:
            aset.fw_update(atoms[i], gamma)
            w = aset.weights
            if len(aset) > 3 and w.min() < 0.01:
                aset.move_weight(int(np.argmin(w)), int(np.argmax(w)), float(w.min()))
            grams.append(aset.gram.copy())
        return aset, grams

    counted, grams_counted = run()
    assert next(iter(counted._stores.values())).pattern is not None
    monkeypatch.setattr(active_set_module._UnitSegments, "of_rows", classmethod(lambda cls, *args: None))
    gathered, grams_gathered = run()
    assert next(iter(gathered._stores.values())).pattern is None
    for a, b in zip(grams_counted, grams_gathered):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("intruder", ["scaled", "shuffled", "other_order", "dense", "one_hot"])
def test_gram_stays_exact_when_an_atom_of_another_kind_joins_permutations(intruder):
    """A 0/1 pattern broken by a new atom (another value, entries out of row order, another size of segment,
    a dense atom, a one-hot vertex): the set falls back to gathered inner products; Gram = dense A A'."""
    n = 6
    rng = np.random.default_rng(2)
    aset = ActiveSet(_permutation_atom(n, rng))
    aset.track_gram(n * n)
    for _ in range(8):
        aset.fw_update(_permutation_atom(n, rng), 0.2)
    if intruder == "scaled":
        atom = _permutation_atom(n, rng, value=2.0)
    elif intruder == "shuffled":
        atom = _permutation_atom(n, rng, shuffle_entries=True)
    elif intruder == "other_order":  # 3 entries in segments of 12: a 0/1 atom of another pattern
        atom = SparseAtom(np.arange(3) * 12 + rng.integers(0, 12, 3), 1.0, n * n)
    elif intruder == "dense":
        atom = DenseAtom(rng.standard_normal(n * n))
    else:
        atom = SparseAtom([int(rng.integers(n * n))], 1.0, n * n)
    aset.fw_update(atom, 0.3)
    assert np.allclose(aset.gram, _dense_gram(aset.atoms, n * n), atol=1e-12)
    for _ in range(5):  # permutations again after the intruder
        aset.fw_update(_permutation_atom(n, rng), 0.2)
    assert np.allclose(aset.gram, _dense_gram(aset.atoms, n * n), atol=1e-12)
    assert np.allclose(aset.dots(np.arange(n * n, dtype=float)), [a.dot(np.arange(n * n, dtype=float))
                                                                  for a in aset.atoms], atol=1e-9)


def test_gram_of_batched_simplex_vertices_counts_shared_groups():
    """One-hot vertices of a batch of simplices (one 1 in each group of S entries) share the counting path."""
    groups, S = 5, 4
    rng = np.random.default_rng(8)
    vertex = lambda: SparseAtom(np.arange(groups) * S + rng.integers(0, S, groups), 1.0, groups * S)  # noqa: E731
    aset = ActiveSet(vertex())
    aset.track_gram(groups * S)
    for _ in range(40):
        aset.fw_update(vertex(), 0.25)
    assert next(iter(aset._stores.values())).pattern is not None
    assert np.array_equal(aset.gram, _dense_gram(aset.atoms, groups * S))


@pytest.mark.parametrize("n", [255, 256, 300])
def test_gram_counts_of_large_permutations_do_not_overflow(n):
    """Counts of up to n agreeing rows (offsets and counts in wider integer types past 255) stay exact:
    the atom with itself (n agreements) and near-copies of it."""
    rng = np.random.default_rng(n)
    base = rng.permutation(n)
    atoms = []
    for t in range(6):  # the same permutation with t pairs of rows swapped: n - 2t agreements with the first
        cols = base.copy()
        for i in range(t):
            cols[[2 * i, 2 * i + 1]] = cols[[2 * i + 1, 2 * i]]
        atoms.append(SparseAtom(np.arange(n) * n + cols, 1.0, n * n))
    aset = ActiveSet(atoms[0])
    aset.track_gram(n * n)
    for atom in atoms[1:]:
        aset.fw_update(atom, 0.2)
    assert next(iter(aset._stores.values())).pattern is not None
    assert np.array_equal(aset.gram, _dense_gram(aset.atoms, n * n))
    assert aset.gram[0].tolist() == [float(n - 2 * t) for t in range(6)]


def test_counting_starts_with_the_gram_matrix_and_stops_with_it():
    """Offsets are kept only while the Gram matrix is: none before track_gram, built from the stored rows
    then (their Gram entries as dense A A'), dropped by stop_gram, and rebuilt after a full FW step."""
    n = 5
    rng = np.random.default_rng(4)
    aset = ActiveSet(_permutation_atom(n, rng))
    for _ in range(6):
        aset.fw_update(_permutation_atom(n, rng), 0.3)
    store = next(iter(aset._stores.values()))
    assert store.pattern is None
    aset.track_gram(n * n)
    assert store.pattern is not None
    for _ in range(6):
        aset.fw_update(_permutation_atom(n, rng), 0.3)
    assert np.array_equal(aset.gram, _dense_gram(aset.atoms, n * n))
    aset.fw_update(_permutation_atom(n, rng), 1.0)  # a full step: a fresh store, counting again
    aset.fw_update(_permutation_atom(n, rng), 0.5)
    assert next(iter(aset._stores.values())).pattern is not None
    assert np.array_equal(aset.gram, _dense_gram(aset.atoms, n * n))
    aset.stop_gram()
    assert next(iter(aset._stores.values())).pattern is None and aset.gram is None


def test_capped_gram_matrix_is_dropped_not_grown_past_its_cap():
    """track_gram(size, max_atoms): storage up to the cap, exact up to it, then no Gram matrix at all."""
    aset = ActiveSet(_make_atom("sparse", 0))
    aset.track_gram(SIZE, max_atoms=5)
    x = aset.dense(SIZE)
    seed = 1
    while len(aset) < 5:
        atom = _make_atom("sparse", seed)
        seed += 1
        if aset.position_of(atom) is not None:
            continue
        x = 0.5 * x
        atom.add_to(x, 0.5)
        aset.fw_update(atom, 0.5)
        _check_invariants(aset, x)
        assert aset.gram is not None and aset._gram.shape[0] <= 5
    rng = np.random.default_rng(0)
    while aset.position_of(atom := SparseAtom(rng.choice(SIZE, 3, replace=False), np.ones(3), SIZE)) is not None:
        pass
    x = 0.5 * x
    atom.add_to(x, 0.5)
    aset.fw_update(atom, 0.5)  # the sixth atom: past the cap
    assert aset.gram is None
    _check_invariants(aset, x)


def test_entries_per_atom_is_the_sparse_stores_width():
    """What one inner product <g, a_i> reads per atom: the padded width of the sparse store."""
    aset = ActiveSet(SparseAtom(np.array([0, 3]), np.array([1.0, 2.0]), SIZE))
    assert aset.entries_per_atom() == 2
    aset.fw_update(SparseAtom(np.array([1, 4, 5, 7, 9]), np.ones(5), SIZE), 0.5)
    assert aset.entries_per_atom() == aset._stores[next(iter(aset._stores))].indices.shape[1] >= 5



def test_gram_matrix_is_not_tracked_when_the_set_is_already_past_the_cap():
    """No k x k matrix built only to be dropped at the next add: past the cap nothing is tracked."""
    aset = ActiveSet(_make_atom("sparse", 0))
    seed = 1
    while len(aset) < 6:
        atom = _make_atom("sparse", seed)
        seed += 1
        if aset.position_of(atom) is None:
            aset.fw_update(atom, 0.5)
    aset.track_gram(SIZE, max_atoms=5)
    assert aset.gram is None
    aset.track_gram(SIZE, max_atoms=6)  # at the cap: tracked, and exact
    A = np.array([a.to_dense() for a in aset.atoms]).reshape(len(aset), SIZE)
    assert np.allclose(aset.gram, A @ A.T, atol=1e-12)
