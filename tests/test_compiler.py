"""The compiled problem (OPT2): blocks, copies, the consistency matrix M and
vector b, and the graph they are assembled from, checked against matrices
written out by hand for small models."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm


# ------------------------------------------------------------------ fixtures
D = np.array([[1.0, -1.0, 0.0], [0.0, 2.0, 1.0]])
E_OFFSET = np.array([0.5, -0.25])


def tiny_model():
    """x (3,) in three sets (one on a slice), y (2, 2) in one set, a set on an
    affine expression of x and an equality tying y to x."""
    x = fm.Variable(3, name="x")
    y = fm.Variable((2, 2), name="y")
    sets = [fm.L1Ball(x), fm.Box(x, -1, 1), fm.Simplex(x[:2]), fm.L1Ball(y), fm.L2Ball(D @ x + E_OFFSET)]
    eq = fm.sum(y, axis=0) == x[1:]
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x) + fm.sum_squares(y)), sets + [eq])
    return prob, x, y, sets, eq


def expected_layout():
    """The product space of :func:`tiny_model`, by hand.

    x: blocks 0 (offset 0), 1 (offset 3), 2 (offset 6, entries 0 and 1 only);
    y: block 3 (offset 8); the expression block z = D x + e: block 4 (offset 12).
    """
    n = 14
    # W: variables v = (x, vec(y)) as the average of their copies
    W = np.zeros((7, n))
    for i in range(3):
        copies = [i, 3 + i] + ([6 + i] if i < 2 else [])
        W[i, copies] = 1.0 / len(copies)
    for j in range(4):
        W[3 + j, 8 + j] = 1.0
    rows, b = [], []
    # star: every later copy equals the first copy (block 0)
    for i in range(3):
        r = np.zeros(n)
        r[3 + i], r[i] = 1.0, -1.0
        rows.append(r)
        b.append(0.0)
    for i in range(2):
        r = np.zeros(n)
        r[6 + i], r[i] = 1.0, -1.0
        rows.append(r)
        b.append(0.0)
    # expression block: z - D v_x = e
    for k in range(2):
        r = np.zeros(n)
        r[12 + k] = 1.0
        r -= D[k] @ W[:3]
        rows.append(r)
        b.append(E_OFFSET[k])
    # equality: y[0, j] + y[1, j] - x[1 + j] = 0
    for j in range(2):
        a = np.zeros(7)
        a[3 + j] = a[3 + 2 + j] = 1.0
        a[1 + j] = -1.0
        rows.append(a @ W)
        b.append(0.0)
    return n, W, np.array(rows), np.array(b)


# ------------------------------------------------------------------- blocks
def test_blocks_cover_the_product_space_in_order():
    prob, x, y, sets, _ = tiny_model()
    c = prob.compile()
    assert [(blk.offset, blk.size) for blk in c.blocks] == [(0, 3), (3, 3), (6, 2), (8, 4), (12, 2)]
    assert [blk.set for blk in c.blocks] == sets
    assert [blk.kind for blk in c.blocks] == ["copy", "copy", "copy", "copy", "expression"]
    assert [blk.variable for blk in c.blocks[:4]] == [x, x, x, y]
    np.testing.assert_array_equal(c.blocks[2].entries, [0, 1])
    assert c.n == 14
    assert c.blocks[1].slice == slice(3, 6)


def test_compile_returns_the_same_object():
    prob = tiny_model()[0]
    assert prob.compile() is prob.compile()


def test_summary_lists_every_block():
    c = tiny_model()[0].compile()
    text = c.summary()
    assert text.startswith("5 blocks, 14 primal entries, 9 consistency rows, 7 variable entries")
    assert "expression block" in text and text.count("copy of x") == 3


# ------------------------------------------------------------------- M and b
def test_M_and_b_match_a_direct_construction():
    c = tiny_model()[0].compile()
    n, _, M_expected, b_expected = expected_layout()
    assert isinstance(c.M, sp.csr_matrix) or (sp.issparse(c.M) and c.M.format == "csr")
    assert c.M.shape == (9, n)
    np.testing.assert_allclose(c.M.toarray(), M_expected, atol=1e-15)
    np.testing.assert_allclose(c.b, b_expected, atol=1e-15)


def test_operator_matches_csr():
    """The fast operator that the engine uses is the same linear map as M."""
    c = tiny_model()[0].compile()
    rng = np.random.default_rng(0)
    x, r = rng.standard_normal(c.n), rng.standard_normal(c.M.shape[0])
    np.testing.assert_allclose(c.operator.matvec(x), c.M @ x, atol=1e-12)
    np.testing.assert_allclose(c.operator.rmatvec(r), c.M.T @ r, atol=1e-12)


def _layouts():
    """Copy layouts that exercise the operator's special cases."""
    x, y = fm.Variable(4, name="x"), fm.Variable(3, name="y")
    return {
        "two copies": [fm.L1Ball(x), fm.Box(x, -1, 1)],
        "two copies, y single": [fm.L1Ball(x), fm.Box(x, -1, 1), fm.L1Ball(y)],
        "three copies": [fm.L1Ball(x), fm.Box(x, -1, 1), fm.L2Ball(x)],
        "partial copies": [fm.L1Ball(x), fm.Box(x[:2], -1, 1), fm.Box(x[2:], -1, 1)],
        "strided copy": [fm.L1Ball(x), fm.Box(x[::2], -1, 1), fm.Box(x[1::2], -1, 1)],
        "two variables": [fm.L1Ball(x), fm.Box(x, -1, 1), fm.L1Ball(y), fm.Box(y, 0, 1)],
        "expression": [fm.L1Ball(x), fm.Box(2 * x + 1, -1, 1)],
        "partial copy first": [fm.Box(x[:2], -1, 1), fm.L1Ball(x), fm.L2Ball(x)],
        "whole, partial, whole": [fm.L1Ball(x), fm.Box(x[1:3], -1, 1), fm.L2Ball(x)],
    }


@pytest.mark.parametrize("layout", [k for k in _layouts() if k != "expression"])
def test_copy_rows_vanish_exactly_on_consistent_copies(layout):
    """M x = 0 when every copy holds its variable's values, and each row is (a copy) - (the first copy)."""
    sets = _layouts()[layout]
    variables = {v.id: v for s in sets for v in s.expr.variables()}
    c = fm.Problem(fm.Minimize(sum(fm.sum_squares(v) for v in variables.values())), sets).compile()
    rng = np.random.default_rng(1)
    values = {vid: rng.standard_normal(v.size) for vid, v in variables.items()}
    x = np.zeros(c.n)
    for blk in c.blocks:
        v = values[blk.variable.id]
        x[blk.slice] = v if blk.entries is None else v[blk.entries]
    np.testing.assert_array_equal(c.operator.matvec(x), 0.0)
    M = c.M.toarray()
    assert M.shape[0] == c.n - sum(v.size for v in variables.values())  # one row per extra copy entry
    for row in M:
        assert sorted(row[row != 0]) == [-1.0, 1.0] and np.flatnonzero(row == -1.0) < np.flatnonzero(row == 1.0)


@pytest.mark.parametrize("layout", list(_layouts()))
def test_operator_matches_csr_on_copy_layouts(layout):
    sets = _layouts()[layout]
    variables = {v.id: v for s in sets for v in s.expr.variables()}
    objective = sum(fm.sum_squares(v) for v in variables.values())
    c = fm.Problem(fm.Minimize(objective), sets).compile()
    rng = np.random.default_rng(0)
    x, r = rng.standard_normal(c.n), rng.standard_normal(c.M.shape[0])
    np.testing.assert_allclose(c.operator.matvec(x), c.M @ x, atol=1e-12)
    np.testing.assert_allclose(c.operator.rmatvec(r), c.M.T @ r, atol=1e-12)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_star_pattern_spectrum(K):
    """K copies tied in a star: rows x_k - x_1, so the nonzero eigenvalues of
    M'M lie in [1, K] (a chain's would decay like 1/K^2)."""
    x = fm.Variable(4, name="x")
    # sets none of which contains another (nested balls would be dropped: lowering._without_nested_balls)
    sets = [fm.L1Ball(x, 1.0), fm.L2Ball(x, 0.9), fm.LinfBall(x, 0.8), fm.Ellipsoid(x, np.diag([1.0, 2, 3, 4])),
            fm.Ellipsoid(x, np.diag([4.0, 3, 2, 1]))][:K]
    c = fm.Problem(fm.Minimize(fm.sum_squares(x)), sets).compile()
    M = c.M.toarray()
    assert M.shape == (4 * (K - 1), 4 * K)
    # every row: +1 on a later copy, -1 on the same entry of the first copy
    for row in M:
        (plus,), (minus,) = np.flatnonzero(row == 1.0), np.flatnonzero(row == -1.0)
        assert minus < 4 and plus % 4 == minus and np.count_nonzero(row) == 2
    eig = np.linalg.eigvalsh(M.T @ M)
    nonzero = eig[eig > 1e-9]
    assert nonzero.min() >= 1 - 1e-9 and nonzero.max() <= K + 1e-9


def test_no_rows_for_a_single_copy():
    x = fm.Variable(3)
    c = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Simplex(x)]).compile()
    assert c.M.shape == (0, 3) and c.b.shape == (0,)


def test_parameter_rows_are_refreshed_without_recompiling():
    x = fm.Variable(3, name="x")
    P = fm.Parameter((1, 3), name="P", value=[[1.0, 1.0, 1.0]])
    q = fm.Parameter(1, name="q", value=[0.5])
    p = fm.Parameter(3, name="p", value=[0.1, 0.2, 0.3])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)),
                      [fm.Box(x, -1, 1), fm.L1Ball(x - p, radius=2.0), P @ x == q])
    c = prob.compile()
    # copy block 0 (offset 0), expression block z = x - p (offset 3): rows z - x = -p, then P x = q
    np.testing.assert_allclose(c.b, [-0.1, -0.2, -0.3, 0.5])
    P.value, q.value, p.value = [[1.0, 0.0, -1.0]], [0.25], [0.0, -1.0, 0.5]
    prob.solve(max_iter=2)
    assert prob.compile() is c
    np.testing.assert_allclose(c.b, [0.0, 1.0, -0.5, 0.25])
    np.testing.assert_allclose(c.M.toarray()[3], [1.0, 0.0, -1.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------- copies and values
def test_variable_values_are_averages_of_copies():
    prob, x, y, _, _ = tiny_model()
    c = prob.compile()
    n, W, _, _ = expected_layout()
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(n)
    values = c.variable_values(xs)
    np.testing.assert_allclose(values[x], W[:3] @ xs)
    np.testing.assert_allclose(values[y], (W[3:] @ xs).reshape(2, 2))
    # x[0] and x[1] have three copies, x[2] two
    np.testing.assert_allclose(values[x][0], (xs[0] + xs[3] + xs[6]) / 3)
    np.testing.assert_allclose(values[x][2], (xs[2] + xs[5]) / 2)


def test_objective_gradient_is_shared_among_copies():
    """f(W x) has gradient W' grad f(W x): each copy gets its share."""
    prob, _, _, _, _ = tiny_model()
    c = prob.compile()
    n, W, _, _ = expected_layout()
    xs = np.random.default_rng(2).standard_normal(n)
    v = W @ xs
    f, g = c.objective.value_and_grad(xs)
    assert f == pytest.approx(float(v @ v))
    np.testing.assert_allclose(g, W.T @ (2 * v), atol=1e-12)


def test_var_value_after_solve_is_feasible_average():
    x = fm.Variable(4, name="x")
    c = np.array([0.9, -0.4, 0.2, 0.05])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.L1Ball(x, radius=1.0), fm.Box(x, -0.3, 0.3)])
    prob.solve()
    assert x.value.shape == (4,)
    assert np.abs(x.value).sum() <= 1.0 + 1e-3
    assert np.all(np.abs(x.value) <= 0.3 + 1e-3)


# ------------------------------------------------------------------- graph
def test_graph_nodes_and_edges():
    prob, x, y, sets, eq = tiny_model()
    g = prob.compile().graph
    assert isinstance(g, nx.Graph)
    kinds = nx.get_node_attributes(g, "kind")
    assert sorted(k for k in kinds.values()) == sorted(["variable"] * 2 + ["set"] * 5 + ["block"] * 5 + ["equality"])
    assert g.nodes[("variable", x.id)]["variable"] is x
    assert g.nodes[("equality", 0)]["constraint"] is eq
    assert [g.nodes[("set", k)]["set"] for k in range(5)] == sets
    edge_kind = {frozenset((u, v)): d["kind"] for u, v, d in g.edges(data=True)}
    for k in range(5):
        assert edge_kind[frozenset((("block", k), ("set", k)))] == "in set"
    for k in range(3):
        assert edge_kind[frozenset((("variable", x.id), ("block", k)))] == "copy"
    assert edge_kind[frozenset((("variable", y.id), ("block", 3)))] == "copy"
    # star: blocks 1 and 2 tied to block 0, not to each other
    assert edge_kind[frozenset((("block", 1), ("block", 0)))] == "consistency"
    assert edge_kind[frozenset((("block", 2), ("block", 0)))] == "consistency"
    assert not g.has_edge(("block", 1), ("block", 2))
    # the expression block and the equality are tied to the variables they use
    assert edge_kind[frozenset((("block", 4), ("variable", x.id)))] == "consistency"
    assert edge_kind[frozenset((("equality", 0), ("variable", x.id)))] == "consistency"
    assert edge_kind[frozenset((("equality", 0), ("variable", y.id)))] == "consistency"


def test_M_is_the_stack_of_the_graph_pieces():
    """Walking the consistency edges gives exactly the rows of M."""
    c = tiny_model()[0].compile()
    pieces = {}
    for _, _, d in c.graph.edges(data=True):
        if d["kind"] == "consistency":
            pieces[id(d["piece"])] = d["piece"]
            assert d["rows"] == d["piece"].rows
    assert sum(p.rows for p in pieces.values()) == c.M.shape[0]
    stacked = sp.vstack([p.csr(c.n) for p in pieces.values()]).toarray()
    # same rows, in any order
    key = lambda A: sorted(map(tuple, np.round(A, 12)))  # noqa: E731
    assert key(stacked) == key(c.M.toarray())


def test_nested_constraint_lists_are_flattened():
    x = fm.Variable(2, name="x")
    ball, box = fm.L1Ball(x), fm.Box(x, -1, 1)
    c = fm.Problem(fm.Minimize(fm.sum_squares(x)), [[ball], (box,)]).compile()
    assert len(c.blocks) == 1 and c.blocks[0].set.merged_from == (ball, box)  # both read (and merged: 7)


def test_slice_and_transpose_become_copies():
    X = fm.Variable((2, 3), name="X")
    c = fm.Problem(fm.Minimize(fm.sum_squares(X)),
                   [fm.Box(X, -1, 1), fm.L1Ball(X[:, 1:]), fm.TraceNormBall(X.T)]).compile()
    assert [blk.kind for blk in c.blocks] == ["copy", "copy", "copy"]
    np.testing.assert_array_equal(c.blocks[1].entries, [1, 2, 4, 5])
    np.testing.assert_array_equal(c.blocks[2].entries, [0, 3, 1, 4, 2, 5])
    # every copy row ties an entry to the same entry of the Box copy
    M = c.M.toarray()
    assert M.shape == (4 + 6, 6 + 4 + 6)
    for row in M:
        (plus,), (minus,) = np.flatnonzero(row == 1.0), np.flatnonzero(row == -1.0)
        assert minus < 6
        blk = next(b for b in c.blocks if b.offset <= plus < b.offset + b.size)
        assert blk.entries[plus - blk.offset] == minus
