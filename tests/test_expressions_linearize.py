"""linearize(expr, var_offsets, n_total) -> (A, c) with expr.value.ravel() == A @ v + c.

Each affine expression is checked against its own ``.value`` (computed by
NumPy) at random variable values placed at random offsets of a longer
vector, so that offsets and unused entries are exercised too.
"""
import time
import zlib

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fwmodel as fm
from fwmodel.expressions import linearize

RNG = np.random.default_rng(7)
A43 = RNG.standard_normal((4, 3))
B42 = RNG.standard_normal((4, 2))
S54 = sp.random(5, 4, density=0.4, random_state=1, format="csr")
S33 = sp.random(3, 3, density=0.5, random_state=2, format="csc")
C34 = RNG.standard_normal((3, 4))
IDX = np.array([0, 2, 2, 1])


def make_vars():
    return dict(
        x=fm.Variable(4, name="x"),
        y=fm.Variable(4, name="y"),
        X=fm.Variable((3, 4), name="X"),
        T=fm.Variable((2, 3, 4), name="T"),
        s=fm.Variable(name="s"),
    )


AFFINE_CASES = {
    "variable": lambda x, y, X, T, s: X,
    "scalar variable": lambda x, y, X, T, s: s,
    "neg": lambda x, y, X, T, s: -x,
    "add sub": lambda x, y, X, T, s: x - 2 * y + 1,
    "same var twice": lambda x, y, X, T, s: x + x[::-1] - 3 * x,
    "broadcast var": lambda x, y, X, T, s: X + x,
    "broadcast const": lambda x, y, X, T, s: x + np.ones((2, 4)),
    "broadcast scalar var": lambda x, y, X, T, s: s - X,
    "scale vector": lambda x, y, X, T, s: x * np.arange(4.0),
    "scale broadcast": lambda x, y, X, T, s: np.arange(4.0) * X,
    "scale var broadcast": lambda x, y, X, T, s: x * np.ones((3, 1)) * 2,
    "divide": lambda x, y, X, T, s: X / np.arange(1.0, 5.0),
    "index": lambda x, y, X, T, s: X[1, 2],
    "slice": lambda x, y, X, T, s: X[:, 1:3],
    "negative step": lambda x, y, X, T, s: T[:, ::-2, 1:],
    "fancy": lambda x, y, X, T, s: x[np.array([0, 2, 2])],
    "fancy rows": lambda x, y, X, T, s: X[IDX, :],
    "fancy pairs": lambda x, y, X, T, s: X[[0, 1, 2], [3, 3, 0]],
    "mask": lambda x, y, X, T, s: X[C34 > 0],
    "newaxis ellipsis": lambda x, y, X, T, s: T[None, ..., 2],
    "transpose": lambda x, y, X, T, s: X.T,
    "transpose axes": lambda x, y, X, T, s: T.transpose((2, 0, 1)),
    "reshape": lambda x, y, X, T, s: fm.reshape(X, (2, 6), order="C"),
    "reshape F": lambda x, y, X, T, s: fm.reshape(X, (6, 2), order="F"),
    "flatten": lambda x, y, X, T, s: T.flatten(order="C"),
    "flatten F": lambda x, y, X, T, s: T.flatten(order="F"),
    "sum all": lambda x, y, X, T, s: fm.sum(T),
    "sum axis": lambda x, y, X, T, s: fm.sum(T, axis=1),
    "sum axes": lambda x, y, X, T, s: fm.sum(T, axis=(0, 2)),
    "sum keepdims": lambda x, y, X, T, s: T.sum(axis=-1, keepdims=True),
    "sum of a sum": lambda x, y, X, T, s: fm.sum(X + x, axis=0) - fm.sum(T[0], axis=0),
    "matmul const left": lambda x, y, X, T, s: A43 @ X[:, 0] + 0 * x,
    "matmul matrix left": lambda x, y, X, T, s: A43 @ X,
    "matmul vector left": lambda x, y, X, T, s: np.arange(3.0) @ X,
    "matmul const right": lambda x, y, X, T, s: X @ B42,
    "matmul vector right": lambda x, y, X, T, s: X @ np.arange(4.0),
    "vector dot": lambda x, y, X, T, s: x @ np.arange(4.0),
    "vector times matrix": lambda x, y, X, T, s: x @ B42,
    "sparse left": lambda x, y, X, T, s: S54 @ x,
    "sparse left matrix": lambda x, y, X, T, s: S54 @ X.T,
    "sparse right": lambda x, y, X, T, s: X.T @ S33,
    "sparse array left": lambda x, y, X, T, s: sp.csr_array(S54) @ (x - y),
    "chained products": lambda x, y, X, T, s: A43 @ (X @ B42) + 1,
    "trace": lambda x, y, X, T, s: fm.trace(X[:3, :3]),
    "trace of square": lambda x, y, X, T, s: fm.trace(X[:, :3] + 2),
    "vstack": lambda x, y, X, T, s: fm.vstack([x, X, np.ones(4), y]),
    "hstack 1d": lambda x, y, X, T, s: fm.hstack([x, s, np.zeros(2), y]),
    "hstack 2d": lambda x, y, X, T, s: fm.hstack([X, X[:, :1], np.ones((3, 2))]),
    "inner": lambda x, y, X, T, s: fm.inner(C34, X),
    "inner flattening": lambda x, y, X, T, s: fm.inner(np.arange(12.0), X),
    "multiply": lambda x, y, X, T, s: fm.multiply(C34, X),
    "constant only": lambda x, y, X, T, s: fm.Constant(np.arange(3.0)) * 2,
    "factor graph": lambda x, y, X, T, s: fm.sum(T[:, IDX[:3], :], axis=2) - X[IDX[:3]][None, :, 0],
}


def random_layout(variables, rng, gap=3):
    """Place the variables in shuffled order with gaps; return offsets and v."""
    offsets = {}
    position = gap
    for var in rng.permutation(np.array(variables, dtype=object)):
        offsets[var.id] = position
        position += var.size + gap
    v = rng.standard_normal(position)
    for var in variables:
        var.value = v[offsets[var.id] : offsets[var.id] + var.size].reshape(var.shape)
    return offsets, v


@pytest.mark.parametrize("name", list(AFFINE_CASES))
def test_linearize_matches_value(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    variables = make_vars()
    expr = AFFINE_CASES[name](**variables)
    assert expr.is_affine()
    for _ in range(3):
        offsets, v = random_layout(list(variables.values()), rng)
        A, c = linearize(expr, offsets, v.size)
        assert isinstance(A, sp.csr_matrix)
        assert A.shape == (expr.size, v.size)
        assert c.shape == (expr.size,) and c.dtype == float
        np.testing.assert_allclose(A @ v + c, np.ravel(expr.value), rtol=1e-12, atol=1e-12)


def test_linearize_equality_constraints():
    X = fm.Variable((3, 4))
    x = fm.Variable(4)
    con = fm.sum(X, axis=0) == x
    offsets, v = random_layout([X, x], np.random.default_rng(0))
    A, c = linearize(con.expr, offsets, v.size)
    np.testing.assert_allclose(A @ v + c, con.expr.value)


def test_linearize_reads_parameter_values():
    x = fm.Variable(3)
    p = fm.Parameter(value=2.0)
    q = fm.Parameter(3, value=np.array([1.0, 2.0, 3.0]))
    P = fm.Parameter((3, 3), value=np.ones((3, 3)))
    expr = p * x + q - P @ x / p
    offsets, v = random_layout([x], np.random.default_rng(1))
    for values in ((2.0, [1.0, 2.0, 3.0]), (-0.5, [0.0, 1.0, 0.0])):
        p.value, q.value = values
        A, c = linearize(expr, offsets, v.size)
        np.testing.assert_allclose(A @ v + c, expr.value)
    unset = fm.Parameter(name="unset")
    with pytest.raises(fm.ModelError, match="unset"):
        linearize(unset * x, offsets, v.size)


def test_linearize_errors():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match="not affine"):
        linearize(fm.sum_squares(x), {x.id: 0}, 3)
    with pytest.raises(fm.ModelError, match="'x'.*var_offsets"):
        linearize(x + 1, {}, 3)
    with pytest.raises(fm.ModelError, match="does not fit"):
        linearize(x + 1, {x.id: 2}, 3)


def test_linearize_cancellation_leaves_no_explicit_zeros():
    x = fm.Variable(3)
    A, c = linearize(x - x + 0 * x[::-1], {x.id: 0}, 3)
    assert A.nnz == 0
    np.testing.assert_array_equal(c, 0.0)


def test_linearize_huge_sparse_stays_sparse():
    n = 10**6
    S = sp.diags(np.arange(1.0, n + 1), format="csr")
    x = fm.Variable(n)
    A, c = linearize(S @ x - 1, {x.id: 0}, n)
    assert A.nnz == n
    np.testing.assert_allclose(A.diagonal(), np.arange(1.0, n + 1))


keys = st.tuples(
    st.one_of(st.integers(-2, 1), st.slices(2), st.just(Ellipsis), st.none()),
    st.one_of(st.integers(-3, 2), st.slices(3), st.lists(st.integers(-3, 2), min_size=1, max_size=4)),
    st.one_of(st.slices(4), st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=4)),
)


@settings(max_examples=60, deadline=None)
@given(key=keys, seed=st.integers(0, 2**32 - 1))
def test_linearize_random_indexing(key, seed):
    T = fm.Variable((2, 3, 4))
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((2, 3, 4))
    key = tuple(np.array(k) if isinstance(k, list) else k for k in key)
    try:
        expected = data[key]
    except IndexError:
        with pytest.raises(IndexError):
            T[key]
        return
    expr = T[key] * 2 - 1
    assert expr.shape == expected.shape
    T.value = data
    np.testing.assert_allclose(expr.value, 2 * expected - 1)
    A, c = linearize(expr, {T.id: 1}, 26)
    v = np.concatenate([[0.0], data.ravel(), [0.0]])
    np.testing.assert_allclose(A @ v + c, (2 * expected - 1).ravel())


def test_linearize_grid_factor_graph_is_fast():
    """A 100 x 100 grid with 10 states: about 2 million edge-marginal entries."""
    graph = nx.grid_2d_graph(100, 100)
    K = 10
    row = {node: i for i, node in enumerate(graph.nodes())}
    ends = np.array([(row[u], row[w]) for u, w in graph.edges()])
    nodes = fm.Variable((len(row), K))
    edges = fm.Variable((len(ends), K, K))
    constraints = [
        fm.sum(edges, axis=2) == nodes[ends[:, 0]],
        fm.sum(edges, axis=1) == nodes[ends[:, 1], :],
    ]
    offsets = {nodes.id: 0, edges.id: nodes.size}
    n = nodes.size + edges.size
    start = time.perf_counter()
    results = [linearize(con.expr, offsets, n) for con in constraints]
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0, f"linearize took {elapsed:.2f} s"  # about 0.3 s on a laptop
    rng = np.random.default_rng(0)
    v = rng.random(n)
    nodes.value = v[: nodes.size].reshape(nodes.shape)
    edges.value = v[nodes.size :].reshape(edges.shape)
    for con, (A, c) in zip(constraints, results):
        assert A.shape == (con.size, n) and A.nnz == con.size * (K + 1)
        np.testing.assert_allclose(A @ v + c, con.expr.value.ravel())
