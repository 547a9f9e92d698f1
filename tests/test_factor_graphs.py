"""Factor graphs: the local marginal polytope, its rows of M, and MAP inference.

References computed independently here: brute-force MAP by enumerating all
labelings, the local-polytope LP built with scipy.sparse and solved by
HiGHS, and the marginalization matrix written entry by entry.
"""
import itertools
import os
import runpy

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import fwmodel as fm
from fwmodel.compiler import MarginalizationRows, SparseRows
from fwmodel.expressions import Equality

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def random_potentials(lmp, seed, coupling=1.0):
    rng = np.random.default_rng(seed)
    K = lmp.n_states
    return rng.standard_normal((lmp.n_nodes, K)), coupling * rng.standard_normal((lmp.n_edges, K, K))


def brute_force_map(lmp, theta_nodes, theta_edges):
    """(min energy, all minimizing labelings) by enumerating every labeling."""
    K, N = lmp.n_states, lmp.n_nodes
    labels = np.array(list(itertools.product(range(K), repeat=N)))  # (K^N, N)
    u, v = lmp.endpoints[:, 0], lmp.endpoints[:, 1]
    score = theta_nodes[np.arange(N), labels].sum(axis=1)
    score += theta_edges[np.arange(lmp.n_edges), labels[:, u], labels[:, v]].sum(axis=1)
    energy = -score
    best = energy.min()
    return best, labels[np.isclose(energy, best, rtol=0, atol=1e-12)]


def highs_local_polytope(graph, theta_nodes, theta_edges):
    """The LP min -<theta, mu> over the local polytope, built from the graph and solved by HiGHS."""
    nodes = list(graph.nodes())
    edges = list(graph.edges())
    index = {v: i for i, v in enumerate(nodes)}
    N, E, K = len(nodes), len(edges), theta_nodes.shape[1]
    n_mu = N * K + E * K * K

    def node_col(v, i):
        return index[v] * K + i

    def edge_col(e, i, j):
        return N * K + (e * K + i) * K + j

    rows, cols, vals, rhs = [], [], [], []

    def add_row(entries, value):
        r = len(rhs)
        for c, a in entries:
            rows.append(r)
            cols.append(c)
            vals.append(a)
        rhs.append(value)

    for v in nodes:
        add_row([(node_col(v, i), 1.0) for i in range(K)], 1.0)
    for e, (u, v) in enumerate(edges):
        add_row([(edge_col(e, i, j), 1.0) for i in range(K) for j in range(K)], 1.0)
        for i in range(K):
            add_row([(edge_col(e, i, j), 1.0) for j in range(K)] + [(node_col(u, i), -1.0)], 0.0)
        for j in range(K):
            add_row([(edge_col(e, i, j), 1.0) for i in range(K)] + [(node_col(v, j), -1.0)], 0.0)
    A = sp.csr_matrix((vals, (rows, cols)), shape=(len(rhs), n_mu))
    c = -np.concatenate([theta_nodes.ravel(), theta_edges.ravel()])
    res = linprog(c, A_eq=A, b_eq=np.array(rhs), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


# ---------------------------------------------------------------- the polytope
def test_attributes_and_any_hashable_nodes():
    G = nx.Graph()
    G.add_edges_from([("a", (1, 2)), ((1, 2), 3.5), (3.5, "a"), ("a", frozenset({0}))])
    lmp = fm.LocalMarginalPolytope(G, 3)
    assert lmp.nodes.shape == (4, 3) and lmp.edges.shape == (4, 3, 3)
    assert lmp.node_list == list(G.nodes()) and lmp.edge_list == list(G.edges())
    assert [lmp.node_index[v] for v in G.nodes()] == [0, 1, 2, 3]
    for e, (u, v) in enumerate(G.edges()):
        assert lmp.edge_index[(u, v)] == e
        assert tuple(lmp.endpoints[e]) == (lmp.node_index[u], lmp.node_index[v])
    simplices = [c for c in lmp.constraints if isinstance(c, fm.Simplex)]
    assert len(simplices) == 2  # batched: one set per family, not one per node or edge
    assert simplices[0].axis == 1 and simplices[1].axis == (1, 2)
    assert sum(isinstance(c, Equality) for c in lmp.constraints) == 2


def direct_marginalization_matrix(graph, K, node_offset, edge_offset, n):
    """The rows sum_j mu_e(i, j) - mu_u(i), then sum_i mu_e(i, j) - mu_v(j), entry by entry."""
    nodes = list(graph.nodes())
    edges = list(graph.edges())
    index = {v: i for i, v in enumerate(nodes)}
    M = np.zeros((2 * len(edges) * K, n))
    row = 0
    for e, (u, _) in enumerate(edges):
        for i in range(K):
            for j in range(K):
                M[row, edge_offset + (e * K + i) * K + j] = 1.0
            M[row, node_offset + index[u] * K + i] = -1.0
            row += 1
    for e, (_, v) in enumerate(edges):
        for j in range(K):
            for i in range(K):
                M[row, edge_offset + (e * K + i) * K + j] = 1.0
            M[row, node_offset + index[v] * K + j] = -1.0
            row += 1
    return M


@pytest.mark.parametrize("as_object", [True, False])
def test_compiled_M_equals_direct_construction(as_object):
    G = nx.Graph([("x", "y"), ("y", "z"), ("z", "x"), ("z", "w")])
    K = 3
    lmp = fm.LocalMarginalPolytope(G, K)
    tn, te = random_potentials(lmp, 0)
    constraints = [lmp] if as_object else lmp.constraints
    compiled = fm.Problem(fm.Minimize(-lmp.score(tn, te)), constraints).compile()
    node_block, edge_block = compiled.blocks
    assert node_block.variable is lmp.nodes and edge_block.variable is lmp.edges
    expected = direct_marginalization_matrix(G, K, node_block.offset, edge_block.offset, compiled.n)
    np.testing.assert_array_equal(compiled.M.toarray(), expected)
    np.testing.assert_array_equal(compiled.b, np.zeros(expected.shape[0]))
    # the rows are applied as a structured operator that agrees with the matrix
    assert all(isinstance(p, MarginalizationRows) for p in compiled.operator.pieces)
    rng = np.random.default_rng(1)
    x, r = rng.standard_normal(compiled.n), rng.standard_normal(expected.shape[0])
    np.testing.assert_allclose(compiled.operator.matvec(x), expected @ x, atol=1e-12)
    np.testing.assert_allclose(compiled.operator.rmatvec(r), expected.T @ r, atol=1e-12)
    # the compiler's graph shows the marginalization constraints
    roles = [d.get("role") for _, d in compiled.graph.nodes(data=True) if d.get("kind") == "equality"]
    assert roles == ["marginalization", "marginalization"]
    tied = {v for u, v, d in compiled.graph.edges(data=True) if d.get("role") == "marginalization"} | \
           {u for u, v, d in compiled.graph.edges(data=True) if d.get("role") == "marginalization"}
    assert ("variable", lmp.nodes.id) in tied and ("variable", lmp.edges.id) in tied


def test_generic_rows_agree_with_structured_rows():
    """The same equalities linearized by the generic path give the same M."""
    G = nx.grid_2d_graph(2, 3)
    lmp = fm.LocalMarginalPolytope(G, 2)
    plain = [lmp.node_simplex, lmp.edge_simplex] + [Equality(c.lhs, c.rhs) for c in lmp.constraints[2:]]
    objective = fm.Minimize(-lmp.score(*random_potentials(lmp, 2)))
    structured = fm.Problem(objective, lmp).compile()
    generic = fm.Problem(objective, plain).compile()
    assert all(isinstance(p, SparseRows) for p in generic.operator.pieces)
    assert (structured.M != generic.M).nnz == 0


def test_variable_shared_with_another_set_falls_back_to_generic_rows():
    G = nx.path_graph(4)
    lmp = fm.LocalMarginalPolytope(G, 2)
    tn, te = random_potentials(lmp, 3)
    prob = fm.Problem(fm.Minimize(-lmp.score(tn, te)), [lmp, fm.Box(lmp.nodes, 0.0, 1.0)])
    compiled = prob.compile()
    kinds = {type(p).__name__ for p in compiled.operator.pieces}
    assert "MarginalizationRows" not in kinds and "SparseRows" in kinds
    prob.solve(step="fw", lam=0.05, max_iter=5000)
    best, _ = brute_force_map(lmp, tn, te)
    assert prob.value == pytest.approx(best, abs=2e-3 * abs(best))


def test_capped_node_marginals_solve_the_capped_lp():
    G = nx.path_graph(4)
    lmp = fm.LocalMarginalPolytope(G, 3)
    tn, te = random_potentials(lmp, 5)
    prob = fm.Problem(fm.Minimize(-lmp.score(tn, te)), [lmp, fm.Box(lmp.nodes, 0.0, 0.6)])
    # (the node simplices and the box stay two copies: the marginalization rows touch the nodes)
    assert [type(b.set).__name__ for b in prob.compile().blocks] == ["Simplex", "Simplex", "Box"]
    prob.solve(tol=1e-6, feas_tol=1e-6)
    # the same LP with the caps, by HiGHS
    cp = pytest.importorskip("cvxpy")
    nodes, edges = cp.Variable(lmp.nodes.shape), cp.Variable(lmp.edges.shape)
    ref = cp.Problem(cp.Minimize(-(cp.sum(cp.multiply(tn, nodes)) + cp.sum(cp.multiply(te, edges)))),
                     [nodes >= 0, nodes <= 0.6, cp.sum(nodes, axis=1) == 1, edges >= 0,
                      cp.sum(edges, axis=(1, 2)) == 1,
                      cp.sum(edges, axis=2) == nodes[lmp.endpoints[:, 0]],
                      cp.sum(edges, axis=1) == nodes[lmp.endpoints[:, 1]]])
    ref.solve(solver="HIGHS", canon_backend="SCIPY")  # (3-D edges: SciPy canonicalizes them)
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, abs=1e-3 * max(1.0, abs(ref.value)))
    # nodes.value is the simplices' copy, tied to the box's copy within feas_tol (the rows next to the ties are
    # held at the ties' width over the sets, engine/stopping.py tie_level: 2.3e-7 above the cap, main 1e-9)
    assert lmp.nodes.value.max() <= 0.6 + 1e-6


# ------------------------------------------------------------ MAP inference
TREES = [
    ("balanced_tree", lambda: nx.balanced_tree(2, 2), 3),   # 7 nodes
    ("path", lambda: nx.path_graph(8), 3),
    ("star", lambda: nx.star_graph(5), 2),
    ("tuple nodes", lambda: nx.relabel_nodes(nx.balanced_tree(3, 2), lambda i: ("n", i)), 2),  # 13 nodes
]


@pytest.mark.parametrize("name,make,K", TREES, ids=[t[0] for t in TREES])
def test_tree_lp_is_exact_and_decodes_to_map(name, make, K):
    G = make()
    lmp = fm.LocalMarginalPolytope(G, K)
    tn, te = random_potentials(lmp, 10 + K)
    best, argmins = brute_force_map(lmp, tn, te)
    # the LP itself: value equals the brute-force MAP energy on a tree
    prob = fm.Problem(fm.Minimize(-lmp.score(tn, te)), lmp)
    prob.solve(step="fw", lam=fm.factor_graphs.default_penalty(tn, te), max_iter=5000)
    assert prob.value == pytest.approx(best, abs=1e-3 * max(1.0, abs(best)))
    labels = lmp.decode()
    assert lmp.energy(labels, tn, te) == pytest.approx(best, abs=1e-9)
    assert any(np.array_equal(labels, a) for a in argmins)
    bound = lmp.lower_bound(prob, tn, te)
    assert bound <= best + 1e-9 and bound == pytest.approx(best, abs=1e-3 * max(1.0, abs(best)))
    # the convenience function: a certified MAP labeling
    res = fm.map_inference(G, tn, te)
    assert res.status in ("certified", "optimal")
    assert res.energy == pytest.approx(best, abs=1e-9)
    assert any(np.array_equal(res.labels, a) for a in argmins)
    assert res.lower_bound <= best + 1e-9 and res.gap <= 1e-4 * max(1.0, abs(best)) + 1e-12
    assert res.labeling == {v: int(res.labels[i]) for i, v in enumerate(lmp.node_list)}


def test_maximize_form_and_lower_bound_sign():
    """fm.Maximize(score) is the same LP; the bound is on the energy (= -score) side."""
    G = nx.balanced_tree(2, 2)
    lmp = fm.LocalMarginalPolytope(G, 3)
    tn, te = random_potentials(lmp, 8)
    best, _ = brute_force_map(lmp, tn, te)
    prob = fm.Problem(fm.Maximize(lmp.score(tn, te)), lmp.constraints)
    value = prob.solve(step="fw", lam=fm.factor_graphs.default_penalty(tn, te))
    assert value == pytest.approx(-best, abs=1e-3)
    bound = lmp.lower_bound(prob, tn, te)
    assert bound <= best + 1e-9 and bound == pytest.approx(best, abs=1e-3)


def test_smoothed_objective_on_a_tree_still_decodes_to_map():
    G = nx.balanced_tree(2, 2)
    lmp = fm.LocalMarginalPolytope(G, 3)
    tn, te = random_potentials(lmp, 5)
    best, argmins = brute_force_map(lmp, tn, te)
    # a strongly convex objective: pairwise steps converge linearly (paper Thm. 3), plain FW does not
    # (step="auto" takes FW steps on batched simplices, the faster choice for the plain LP)
    res = fm.map_inference(lmp, tn, te, smoothing=0.05, gap_tol=0, step="pairwise", max_iter=3000)
    assert res.problem.status == "optimal"
    assert any(np.array_equal(res.labels, a) for a in argmins)
    assert res.lower_bound <= best + 1e-9  # a valid LP bound from the smoothed problem's duals


@pytest.mark.parametrize("n,K,coupling,seed,tight", [
    (3, 3, 1.0, 0, True), (4, 2, 2.0, 2, True),
    (4, 3, 1.5, 1, False),  # frustrated: the LP optimum is fractional, rounding loses 3%
])
def test_grid_lp_value_matches_highs(n, K, coupling, seed, tight):
    G = nx.grid_2d_graph(n, n)
    lmp = fm.LocalMarginalPolytope(G, K)
    tn, te = random_potentials(lmp, seed, coupling)  # mixed-sign couplings
    reference = highs_local_polytope(G, tn, te)
    prob = fm.Problem(fm.Minimize(-lmp.score(tn, te)), lmp)
    prob.solve(lam=fm.factor_graphs.default_penalty(tn, te), max_iter=1500)
    assert prob.value == pytest.approx(reference, rel=1e-3)
    assert prob.stats.feasibility_rel <= 1e-3
    bound = lmp.lower_bound(prob, tn, te)
    assert bound <= reference + 1e-9 * abs(reference)  # certified: never above the LP optimum
    # within the solve's tolerance: its stopping rule promises the gap below tol * S_f (the objective's
    # range, prob.stats.objective_scale), with tol = 1e-4 by default; 1e-4 of |f*| was at that edge
    # (4 x 4, K = 3: a gap of 1.0003e-4 |f*|, 0.61 of tol * S_f, after the penalty schedule's changes)
    assert reference - bound <= 1e-4 * prob.stats.objective_scale
    energy = lmp.energy(lmp.decode(), tn, te)
    assert energy >= reference - 1e-9 * abs(reference)  # an integral labeling cannot beat the LP
    assert (energy == pytest.approx(reference, rel=1e-6)) == tight


@pytest.mark.parametrize("unit", [1e-4, 1.0, 1e4])
@pytest.mark.parametrize("seed", [7, 8, 9])
def test_certified_labels_are_map_in_any_units(unit, seed):
    """"certified" means MAP up to gap_tol relative to the energy's own scale: on a frustrated 5-cycle
    the certified labels' energy matches brute force over every labeling in units of 1e-4 too (an
    absolute floor of 1 certified labels 3.6 % above the MAP energy there)."""
    rng = np.random.default_rng(500 + seed)
    G, K = nx.cycle_graph(5), 3
    tn, te = rng.standard_normal((5, K)), 0.5 * rng.standard_normal((5, K, K))
    edges = list(G.edges())

    def energy(labels):
        return -(sum(tn[v, labels[v]] for v in range(5)) + sum(te[k, labels[u], labels[v]]
                                                                for k, (u, v) in enumerate(edges)))
    best = min(energy(labels) for labels in itertools.product(range(K), repeat=5))
    res = fm.map_inference(G, unit * tn, unit * te)
    # the energy's spread over all labelings is at most this (the certificate's unit)
    spread = unit * (np.sum(np.ptp(tn, axis=1)) + np.sum(np.ptp(te.reshape(5, -1), axis=1)))
    assert res.gap >= -1e-12 * spread
    if res.status == "certified":
        assert res.energy - unit * best <= 1e-4 * max(abs(res.energy), spread / 100) * (1 + 1e-9)
    assert res.lower_bound <= unit * best + 1e-9 * spread


def test_score_energy_and_indicator_agree():
    G = nx.cycle_graph(5)
    lmp = fm.LocalMarginalPolytope(G, 3)
    tn, te = random_potentials(lmp, 7)
    labels = np.array([0, 2, 1, 1, 0])
    mu_n, mu_e = lmp.indicator(labels)
    lmp.nodes.value, lmp.edges.value = mu_n, mu_e
    assert float(lmp.score(tn, te).value) == pytest.approx(-lmp.energy(labels, tn, te))
    assert lmp.energy(lmp.labeling(labels), tn, te) == lmp.energy(labels, tn, te)
    np.testing.assert_array_equal(lmp.decode(), labels)
    for c in lmp.constraints[2:]:  # an integral labeling is consistent
        np.testing.assert_array_equal(c.residual, 0.0)
    # a shared (K, K) table is broadcast to every edge
    potts = 0.7 * np.eye(3)
    assert lmp.energy(labels, tn, potts) == lmp.energy(labels, tn, np.broadcast_to(potts, (5, 3, 3)))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("graph,n_states,match", [
    (nx.path_graph(3), 1, "at least 2"),
    (nx.path_graph(3), 0, "at least 2"),
    (nx.path_graph(3), 2.5, "integer"),
    (nx.path_graph(3), True, "integer"),
    (nx.Graph(), 2, "no nodes"),
    (nx.empty_graph(4), 2, "no edges"),
    (nx.Graph([(0, 1), (1, 1)]), 2, "self-loop"),
    (nx.DiGraph([(0, 1), (1, 2)]), 2, "directed"),
    (nx.MultiGraph([(0, 1), (0, 1)]), 2, "multigraph"),
    ([(0, 1)], 2, "networkx graph"),
])
def test_malformed_input_is_a_clear_model_error(graph, n_states, match):
    with pytest.raises(fm.ModelError, match=match):
        fm.LocalMarginalPolytope(graph, n_states)


def test_bad_potentials_and_labels():
    lmp = fm.LocalMarginalPolytope(nx.path_graph(3), 2)
    with pytest.raises(fm.ModelError, match=r"theta_nodes has shape \(2, 2\)"):
        lmp.score(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(fm.ModelError, match="theta_edges has shape"):
        lmp.score(np.zeros((3, 2)), np.zeros((3, 2, 2)))
    with pytest.raises(fm.ModelError, match="labels must lie in"):
        lmp.energy(np.array([0, 1, 2]), np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(fm.ModelError, match="no label for node"):
        lmp.energy({0: 1, 1: 0}, np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(fm.ModelError, match="no value yet"):
        lmp.decode()


# ----------------------------------------------------------------- tutorial
def test_tutorial_03_runs_small_and_reports_certified_results(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FWMODEL_TUTORIAL_SIZE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    path = os.path.join(ROOT, "tutorials", "03_map_inference.py")
    namespace = runpy.run_path(path, run_name="tutorial_test")  # not __main__: no figure file
    out = capsys.readouterr().out
    results = namespace["RESULTS"]
    assert results["size"] == "small"
    image, tree = results["image"], results["tree"]
    assert image["decoded_errors"] < image["noisy_errors"] / 2  # the Potts prior removes most noise
    assert image["lower_bound"] <= image["energy"] and image["gap"] <= 1e-3 * abs(image["energy"])
    assert tree["same_labels"] and tree["energy"] == pytest.approx(tree["exact_energy"], abs=1e-9)
    assert tree["gap"] <= 1e-4 * max(1.0, abs(tree["energy"]))
    assert "pixels wrong" in out and "marginalization rows of M" in out
    assert list(tmp_path.iterdir()) == []


def test_tutorial_03_defaults_to_full_size():
    with open(os.path.join(ROOT, "tutorials", "03_map_inference.py")) as f:
        text = f.read()
    assert 'os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")' in text
    assert text.count("# %%") >= 8


@pytest.mark.parametrize("kwargs, name", [
    (dict(gap_tol=-1), "gap_tol"), (dict(gap_tol=float("nan")), "gap_tol"), (dict(gap_tol="0.1"), "gap_tol"),
    (dict(smoothing=-0.5), "smoothing"), (dict(check_every=-1), "check_every"), (dict(check_every=2.5), "check_every"),
    (dict(check_every=True), "check_every"),
])
def test_map_inference_refuses_bad_options(kwargs, name):
    graph = nx.path_graph(3)
    with pytest.raises(fm.ModelError, match=name):
        fm.map_inference(graph, np.zeros((3, 2)), np.eye(2), **kwargs)
