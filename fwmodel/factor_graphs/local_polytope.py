"""The local marginal polytope of a pairwise factor graph.

MAP inference in a pairwise Markov random field over a graph G = (V, E) with
K states per node,

    maximize_x  sum_v theta_v(x_v) + sum_{(u,v) in E} theta_uv(x_u, x_v),

has the classical linear programming relaxation over the *local marginal
polytope*: a node marginal mu_v in the simplex of R^K for every node, an edge
marginal mu_uv in the simplex of R^{K x K} for every edge, tied by the
marginalization consistency constraints

    sum_j mu_uv(i, j) = mu_u(i),    sum_i mu_uv(i, j) = mu_v(j).

This is problem (OPT) of the FW-AL paper in its motivating form: a product of
simple sets (the simplices, whose LMO is an argmin per row) related by a
linear consistency constraint -- the marginalization consistency that gives
the paper's "linear consistency constraint" its name (Sec. 2 and 2.1; GDMM,
Huang et al. 2017, is FW-AL with a linear objective on this problem). The
compiler stacks the marginalization rows into M of eq. (form_M), and FW-AL
runs on (OPT2) with one Frank-Wolfe step over the product of simplices and a
dual step on the marginalization rows per iteration. On a tree the
relaxation is exact (its optimum is the indicator of a MAP labeling); on a
graph with cycles it is an upper bound on the MAP score.

:class:`LocalMarginalPolytope` builds the variables and the constraints:
two batched :class:`~fwmodel.sets.Simplex` sets (one block each, not one
per node) and two :class:`Marginalization` equalities, whose rows the
compiler applies without a matrix (:class:`~fwmodel.compiler.MarginalizationRows`).
"""
from __future__ import annotations

import operator

import networkx as nx
import numpy as np

from ..compiler.consistency import MarginalizationRows
from ..errors import ModelError
from ..expressions import Equality, Variable, inner
from ..expressions import sum as fm_sum
from ..sets import Simplex


class Marginalization(Equality):
    """``fm.sum(edges, axis=axis) == nodes[endpoint]``: marginalization consistency.

    ``axis=2`` sums each edge table over the second endpoint's states and
    ties the result to the first endpoint's marginal (``endpoint`` holds the
    node row of each edge's first endpoint); ``axis=1`` sums over the first
    endpoint's states and ties it to the second endpoint's marginal.

    It is an ordinary :class:`~fwmodel.Equality` (``lhs``, ``rhs``,
    ``expr``, ``residual`` work as usual, and a compiler that knows nothing
    about it gets the right rows by linearizing it). When both variables are
    held whole by one block each, :meth:`consistency_piece` gives the
    compiler the same rows as a structured operator, which costs no sparse
    matrix to build and is faster to apply on large graphs.
    """

    role = "marginalization"

    def __init__(self, edges, nodes, endpoint, axis):
        if axis not in (1, 2):
            raise ModelError(f"Marginalization: axis must be 1 (column marginals) or 2 (row marginals), got {axis!r}")
        self.endpoint = np.ascontiguousarray(endpoint, dtype=np.intp)
        self.edge_variable = edges
        self.node_variable = nodes
        self.axis = axis
        super().__init__(fm_sum(edges, axis=axis), nodes[self.endpoint])

    def consistency_piece(self, whole_copy):
        """The rows as a :class:`MarginalizationRows`, or None to fall back to linearizing.

        ``whole_copy(var)`` is the compiler's answer to "where in x does the
        single block holding all of ``var`` start": a slice, or None when the
        variable is copied into several sets (its value is then an average of
        copies, which the generic rows handle).
        """
        edge_slice = whole_copy(self.edge_variable)
        node_slice = whole_copy(self.node_variable)
        if edge_slice is None or node_slice is None:
            return None
        n_nodes, n_states = self.node_variable.shape
        which = "first" if self.axis == 2 else "second"
        return MarginalizationRows(edge_slice.start, node_slice.start, self.endpoint, n_nodes, n_states,
                                   self.axis, label=f"marginalization: sum({self.edge_variable.name}, "
                                                    f"axis={self.axis}) == {self.node_variable.name}[{which} endpoint]")

    def __repr__(self):
        which = "u" if self.axis == 2 else "v"
        return (f"Marginalization(sum({self.edge_variable.name}, axis={self.axis}) == "
                f"{self.node_variable.name}[{which}], {self.endpoint.size} edges)")


def _check_graph(graph):
    if not isinstance(graph, nx.Graph):
        raise ModelError(f"LocalMarginalPolytope: graph must be a networkx graph, got {type(graph).__name__}")
    if graph.is_directed():
        raise ModelError(
            "LocalMarginalPolytope: the graph is directed, but a pairwise Markov random field is undirected "
            "(a pair u -> v and v -> u would be two copies of one factor); pass graph.to_undirected() -- "
            "the edge tables are then indexed [state of u, state of v] in the order of graph.edges()")
    if graph.is_multigraph():
        raise ModelError(
            "LocalMarginalPolytope: multigraphs are not supported: parallel edges are one pairwise factor; "
            "add their potentials into one table and pass nx.Graph(graph)")
    if graph.number_of_nodes() == 0:
        raise ModelError("LocalMarginalPolytope: the graph has no nodes")
    if graph.number_of_edges() == 0:
        raise ModelError(
            "LocalMarginalPolytope: the graph has no edges: without pairwise factors MAP inference decouples "
            "(each node takes the argmax of its own potential) and there is nothing to relax")
    loops = list(nx.selfloop_edges(graph))
    if loops:
        raise ModelError(
            f"LocalMarginalPolytope: the graph has {len(loops)} self-loop(s), e.g. at node {loops[0][0]!r}; a factor "
            "on a single node is a node potential (fold it into theta_nodes) -- remove them with "
            "graph.remove_edges_from(nx.selfloop_edges(graph))")


def _check_states(n_states):
    if isinstance(n_states, (bool, np.bool_)):
        raise ModelError(f"LocalMarginalPolytope: n_states must be an integer >= 2, got {n_states!r}")
    try:
        k = operator.index(n_states)
    except TypeError:
        raise ModelError(f"LocalMarginalPolytope: n_states must be an integer >= 2, got {n_states!r}") from None
    if k < 2:
        raise ModelError(f"LocalMarginalPolytope: n_states must be at least 2 (with a single state there is "
                         f"nothing to infer), got {k}")
    return int(k)


class LocalMarginalPolytope:
    """Node and edge marginals of a pairwise factor graph, with their constraints.

    Parameters
    ----------
    graph : networkx.Graph
        Undirected, no self-loops, not a multigraph, at least one edge. Nodes
        may be any hashable objects (``grid_2d_graph`` tuples, strings, ...).
    n_states : int
        Number of states K >= 2 of every node.
    name : str, optional
        Prefix of the variables' names (default: "nodes" and "edges").

    Attributes
    ----------
    nodes : Variable, shape (N, K)
        ``nodes[node_index[v], i]`` is mu_v(i).
    edges : Variable, shape (E, K, K)
        ``edges[edge_index[(u, v)], i, j]`` is mu_uv(i, j): rows are the
        states of u, columns those of v, for ``(u, v)`` as ``graph.edges()``
        lists it (the orientation used by ``edge_index``).
    node_index, edge_index : dict
        networkx node -> row of ``nodes``; networkx edge (u, v) -> row of
        ``edges``. Only the listed orientation of each edge is a key.
    node_list, edge_list : list
        The nodes and edges in row order (inverse of the two indices).
    endpoints : ndarray of int, shape (E, 2)
        Rows in ``nodes`` of each edge's two endpoints.
    constraints : list
        ``[fm.Simplex(nodes, axis=1), fm.Simplex(edges, axis=(1, 2)),
        row marginals, column marginals]``: each node and each edge marginal
        is a probability vector (one batched simplex block each), and the
        :class:`Marginalization` equalities
        ``fm.sum(edges, axis=2) == nodes[endpoints[:, 0]]`` and
        ``fm.sum(edges, axis=1) == nodes[endpoints[:, 1]]`` become the
        consistency rows of M.

    Pass either ``lmp`` or ``lmp.constraints`` in a Problem's constraint list.

    Examples
    --------
    >>> G = nx.grid_2d_graph(3, 3)
    >>> lmp = fm.LocalMarginalPolytope(G, 2)
    >>> prob = fm.Problem(fm.Maximize(lmp.score(theta_nodes, theta_edges)), lmp)
    >>> prob.solve()
    >>> labels = lmp.decode()                      # argmax of the node marginals
    >>> lmp.energy(labels, theta_nodes, theta_edges)  # >= -prob.value (up to accuracy)
    """

    def __init__(self, graph, n_states, name=None):
        _check_graph(graph)
        self.n_states = _check_states(n_states)
        self.graph = graph
        self.node_list = list(graph.nodes())
        self.edge_list = list(graph.edges())
        self.node_index = {v: i for i, v in enumerate(self.node_list)}
        self.edge_index = {e: i for i, e in enumerate(self.edge_list)}
        index = self.node_index
        # One pass over the edge list, in C (fromiter); everything after is vectorized.
        flat = np.fromiter((index[w] for e in self.edge_list for w in e[:2]), dtype=np.intp,
                           count=2 * len(self.edge_list))
        self.endpoints = flat.reshape(-1, 2)
        self.endpoints.setflags(write=False)
        K, N, E = self.n_states, len(self.node_list), len(self.edge_list)
        prefix = "" if name is None else f"{name}_"
        self.nodes = Variable((N, K), name=f"{prefix}nodes")
        self.edges = Variable((E, K, K), name=f"{prefix}edges")
        self.node_simplex = Simplex(self.nodes, axis=1)
        self.edge_simplex = Simplex(self.edges, axis=(1, 2))
        self.row_marginals = Marginalization(self.edges, self.nodes, self.endpoints[:, 0], axis=2)
        self.col_marginals = Marginalization(self.edges, self.nodes, self.endpoints[:, 1], axis=1)
        self.constraints = [self.node_simplex, self.edge_simplex, self.row_marginals, self.col_marginals]

    # ----------------------------------------------------------------- sizes
    @property
    def n_nodes(self):
        return len(self.node_list)

    @property
    def n_edges(self):
        return len(self.edge_list)

    # ------------------------------------------------------------ potentials
    def potentials(self, theta_nodes, theta_edges):
        """Validated float arrays ``(theta_nodes (N, K), theta_edges (E, K, K))``.

        ``theta_nodes`` has a row per node in ``node_list`` order;
        ``theta_edges`` a table per edge in ``edge_list`` order, or a single
        (K, K) table shared by every edge (a Potts model: ``w * np.eye(K)``).
        Either may be None (no potential of that kind).
        """
        K, N, E = self.n_states, self.n_nodes, self.n_edges
        tn = np.zeros((N, K)) if theta_nodes is None else np.asarray(theta_nodes, dtype=float)
        te = np.zeros((K, K)) if theta_edges is None else np.asarray(theta_edges, dtype=float)
        if tn.shape != (N, K):
            raise ModelError(f"theta_nodes has shape {tn.shape}, expected ({N}, {K}): a row of {K} scores per "
                             "node, in the order of lmp.node_list")
        if te.shape == (K, K):
            te = np.broadcast_to(te, (E, K, K))
        elif te.shape != (E, K, K):
            raise ModelError(f"theta_edges has shape {te.shape}, expected ({E}, {K}, {K}) (a table per edge, "
                             f"in the order of lmp.edge_list) or ({K}, {K}) (one table for every edge)")
        if not (np.all(np.isfinite(tn)) and np.all(np.isfinite(te))):
            raise ModelError("theta_nodes and theta_edges must be finite")
        return tn, te

    def score(self, theta_nodes, theta_edges):
        """The linear score ``<theta_nodes, nodes> + <theta_edges, edges>`` (an expression).

        At the indicator point of a labeling it is that labeling's score
        ``sum_v theta_v(x_v) + sum_uv theta_uv(x_u, x_v)``. MAP inference's LP
        relaxation is ``fm.Maximize(lmp.score(...))`` over ``lmp``, or
        equivalently ``fm.Minimize(-lmp.score(...))``, whose value is a lower
        bound on the energy of every labeling.
        """
        tn, te = self.potentials(theta_nodes, theta_edges)
        return inner(tn, self.nodes) + inner(np.ascontiguousarray(te), self.edges)

    # ------------------------------------------------------------- labelings
    def decode(self, node_marginals=None):
        """Round marginals to a labeling: the argmax of each node's marginal.

        ``node_marginals`` is an (N, K) array (default: ``lmp.nodes.value``
        after a solve). Returns an int array of N labels in ``node_list``
        order; on a tree, at the LP optimum, this is a MAP labeling (when
        the MAP labeling is unique).
        """
        if node_marginals is None:
            node_marginals = self.nodes.value
            if node_marginals is None:
                raise ModelError("decode: lmp.nodes has no value yet; solve a problem over lmp first "
                                 "or pass the node marginals")
        mu = np.asarray(node_marginals, dtype=float)
        if mu.shape != (self.n_nodes, self.n_states):
            raise ModelError(f"decode: node marginals have shape {mu.shape}, expected "
                             f"({self.n_nodes}, {self.n_states})")
        return np.argmax(mu, axis=1)

    def _labels(self, labels):
        if isinstance(labels, dict):
            missing = [v for v in self.node_list if v not in labels]
            if missing:
                raise ModelError(f"the labeling has no label for node {missing[0]!r}")
            labels = [labels[v] for v in self.node_list]
        x = np.asarray(labels)
        if x.shape != (self.n_nodes,) or not np.issubdtype(x.dtype, np.integer):
            raise ModelError(f"labels must be {self.n_nodes} integers (one per node, in lmp.node_list order) "
                             f"or a dict node -> label, got an array of shape {x.shape} and dtype {x.dtype}")
        if x.size and (x.min() < 0 or x.max() >= self.n_states):
            raise ModelError(f"labels must lie in 0..{self.n_states - 1}")
        return x.astype(np.intp)

    def labeling(self, labels):
        """``{networkx node: label}`` from an array of labels in ``node_list`` order."""
        x = self._labels(labels)
        return {v: int(x[i]) for i, v in enumerate(self.node_list)}

    def energy(self, labels, theta_nodes, theta_edges):
        """Energy of a labeling: ``-(sum_v theta_v(x_v) + sum_uv theta_uv(x_u, x_v))``.

        The sign matches ``fm.Minimize(-lmp.score(...))``: the optimal value
        of that LP is a lower bound on the energy of every labeling, and a
        labeling whose energy equals it is a MAP labeling. ``labels``: an
        int array in ``node_list`` order or a dict node -> label.
        """
        x = self._labels(labels)
        tn, te = self.potentials(theta_nodes, theta_edges)
        u, v = self.endpoints[:, 0], self.endpoints[:, 1]
        total = tn[np.arange(self.n_nodes), x].sum() + te[np.arange(self.n_edges), x[u], x[v]].sum()
        return float(-total)

    def indicator(self, labels):
        """The vertex of the polytope for a labeling: one-hot ``(nodes, edges)`` arrays."""
        x = self._labels(labels)
        K = self.n_states
        mu_n = np.zeros((self.n_nodes, K))
        mu_n[np.arange(self.n_nodes), x] = 1.0
        mu_e = np.zeros((self.n_edges, K, K))
        mu_e[np.arange(self.n_edges), x[self.endpoints[:, 0]], x[self.endpoints[:, 1]]] = 1.0
        return mu_n, mu_e

    # ----------------------------------------------------------- certificate
    def lower_bound(self, problem, theta_nodes, theta_edges, duals=None):
        """A certified lower bound on ``min -<theta, mu>`` from dual variables.

        For a problem whose constraints are this polytope (and nothing that
        cuts it further) the bound is on the LP relaxation, hence on the
        energy of every labeling; with more constraints it bounds that
        problem's minimum of ``-<theta, mu>``.

        For any dual vector y of the consistency rows, weak duality gives
        (the dual function of paper eq. def_dual_function, without the
        penalty term)

            min_{mu in X, M mu = b} <c, mu>  >=  min_{s in X} <c + M' y, s> - <y, b>,

        and the right side is one LMO call per block. Here c is the linear
        part -theta (a smoothing term of the objective is ignored, so the
        bound is on the plain LP), X the problem's product of sets and y
        ``duals`` (default: the duals of the problem's last solve). The
        bound is exact at optimal duals; ``lmp.energy(labels, ...)`` minus
        it bounds how far ``labels`` can be from a MAP labeling.
        """
        compiled = problem.compile()
        if duals is None:
            duals = problem.duals
            if duals is None:
                raise ModelError("lower_bound: the problem has not been solved yet (no dual variables)")
        y = np.asarray(duals, dtype=float).ravel()
        if y.shape != (compiled.operator.shape[0],):
            raise ModelError(f"lower_bound: duals have {y.size} entries, but the problem has "
                             f"{compiled.operator.shape[0]} consistency rows")
        tn, te = self.potentials(theta_nodes, theta_edges)
        c_v = np.zeros(compiled.copy_map.n_v)
        for var, theta in ((self.nodes, tn), (self.edges, te)):
            if var.id not in compiled.var_layout:
                raise ModelError(f"lower_bound: the problem does not use {var.name}; pass the problem built on "
                                 "this polytope")
            off, _ = compiled.var_layout[var.id]
            c_v[off:off + var.size] = -theta.ravel()
        z = compiled.copy_map.to_blocks(c_v)  # W' c: split among copies, as the objective's gradient is
        bound = 0.0
        if y.size:
            z += compiled.operator.rmatvec(y)
            bound -= float(np.dot(y, compiled.b))
        for blk in compiled.blocks:
            zk = z[blk.slice]
            bound += blk.set.lmo_atom(zk).dot(zk)
        return bound

    def __repr__(self):
        return f"LocalMarginalPolytope({self.n_nodes} nodes, {self.n_edges} edges, {self.n_states} states)"
