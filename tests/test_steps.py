"""Step kinds (fwmodel.engine.steps) and block sweeps against closed forms, brute force and CVXPY."""
import cvxpy as cp
import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

import fwmodel as fm
from fwmodel.engine import Block, minimize_fwal
from fwmodel.engine.steps import GroupPairwiseStep, IntervalStep, SimplexGroups
from fwmodel.sets.atoms import SparseAtom


def _project_simplex(c, total=1.0):
    """Closed form: Euclidean projection onto {x >= 0, sum x = total} (sort and threshold)."""
    u = np.sort(c)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, c.size + 1) > 0)[0][-1]
    return np.maximum(c - css[k] / (k + 1), 0.0)


try:  # shared closed form; tests/ may or may not be a package
    from .test_engine import _capped_simplex_projection
except ImportError:
    from test_engine import _capped_simplex_projection


@pytest.mark.parametrize("step", ["auto", "away", "pairwise", "fw"])
@pytest.mark.parametrize("sweep", ["gauss-seidel", "jacobi"])
def test_every_step_kind_and_sweep_finds_the_capped_simplex_projection(step, sweep):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(40) * 0.2 + 1.0 / 40
    x = fm.Variable(40)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x, 0, 0.06)])
    tol = 1e-4 if step == "fw" else 1e-8  # plain FW converges sublinearly here
    prob.solve(step=step, sweep=sweep, tol=tol, feas_tol=tol, max_iter=20000)
    assert prob.status == "optimal"
    assert np.allclose(x.value, _capped_simplex_projection(c, 0.06), atol=3e-3 if step == "fw" else 1e-5)


def test_per_group_pairwise_steps_project_every_row_onto_its_simplex():
    """A single batched Simplex(axis=1): the closed form is the row-wise simplex projection."""
    rng = np.random.default_rng(2)
    C = rng.standard_normal((50, 7))
    X = fm.Variable((50, 7))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1)])
    prob.solve(tol=1e-9)
    assert prob.status == "optimal"
    assert prob.stats.step_counts["pairwise"] > 0 and prob.stats.step_counts["fw"] == 0
    expected = np.array([_project_simplex(row) for row in C])
    assert np.allclose(X.value, expected, atol=1e-6)


def test_group_pairwise_proposals_stay_in_every_simplex():
    rng = np.random.default_rng(3)
    G, S = 30, 5
    index = rng.permutation(G * S).reshape(G, S)  # groups need not be contiguous
    x = np.zeros(G * S)
    for g in range(G):
        x[index[g]] = rng.dirichlet(np.ones(S) * 0.3)
    block = Block(offset=0, size=G * S, lmo=None, initial_atom=None, groups=SimplexGroups(index, 1.0))
    step = GroupPairwiseStep(block, block.groups, rng.uniform(0, 2, G * S))

    class Ctx:
        lam = 0.7

    for gamma in (0.0, 0.5, 1.0):
        p = step.propose(x, rng.standard_normal(G * S), Ctx)
        y = x + gamma * p.d
        assert y.min() >= -1e-15
        assert np.allclose(y[index].sum(axis=1), 1.0)
    g = rng.standard_normal(G * S)
    p = step.propose(x, g, Ctx)
    # the reported gap is the FW gap <x - s, g> with s the LMO's vertex
    s_val = np.min(g[index], axis=1).sum()
    assert p.gap == pytest.approx(x @ g - s_val)


def test_interval_steps_solve_bounded_least_squares():
    """Box-constrained least squares against CVXPY + Clarabel."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((60, 30))
    b = A @ rng.uniform(-1, 2, 30)
    x = fm.Variable(30)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.Box(x, 0.0, 1.0)])
    prob.solve(tol=1e-8)
    z = cp.Variable(30)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [z >= 0, z <= 1])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert np.allclose(x.value, z.value, atol=1e-4)


def test_interval_step_is_the_clipped_newton_step_per_coordinate():
    lo, hi = np.zeros(4), np.ones(4)
    block = Block(offset=0, size=4, lmo=None, initial_atom=None, intervals=(lo, hi))
    step = IntervalStep(block, (lo, hi), np.array([1.0, 2.0, 0.0, 1.0]))

    class Ctx:
        lam = 2.0

    x = np.array([0.5, 0.5, 0.5, 0.9])
    g = np.array([1.0, -8.0, 3.0, -1.0])
    p = step.propose(x, g, Ctx)
    # c = lam * ||M e_i||^2 = (2, 4, 0, 2): x - g / c clipped; no curvature: the FW vertex
    assert np.allclose(x + p.d, [0.0, 1.0, 0.0, 1.0])
    assert p.gap == pytest.approx(float((x - np.array([0, 1, 0, 1])) @ g))


def test_lazy_bpcg_reuses_active_atoms_and_matches_cvxpy_on_birkhoff():
    """BPCG calls the assignment LMO on a fraction of the iterations and finds CVXPY's projection."""
    n = 6
    rng = np.random.default_rng(5)
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    calls = []
    lmo = fm.BirkhoffPolytope.lmo_atom

    def counting(self, direction):
        calls.append(1)
        return lmo(self, direction)

    fm.BirkhoffPolytope.lmo_atom = counting
    try:
        prob.solve(tol=1e-9)
    finally:
        fm.BirkhoffPolytope.lmo_atom = lmo
    Z = cp.Variable((n, n), nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6, abs=1e-9)
    assert np.allclose(X.value, Z.value, atol=1e-4)
    assert len(calls) < 0.8 * prob.stats.iterations  # lazy: most iterations reuse active atoms


def test_bpcg_engine_level_local_steps_keep_the_active_set_small():
    """On a simplex given as a plain polytope block, BPCG's local steps never add atoms."""
    n = 30
    rng = np.random.default_rng(6)
    c = rng.standard_normal(n)

    class Objective:
        is_quadratic = True

        def value(self, x):
            return float(np.sum((x - c) ** 2))

        def value_and_grad(self, x):
            return self.value(x), 2 * (x - c)

        def curvature(self, x, d):
            return 2.0 * float(d @ d)

    def lmo(g):
        return SparseAtom([int(np.argmin(g))], 1.0, n)

    block = Block(offset=0, size=n, lmo=lmo, initial_atom=lambda: SparseAtom([0], 1.0, n), is_polytope=True)
    res = minimize_fwal(Objective(), [block], tol=1e-10)
    assert res.status == "optimal"
    assert np.allclose(res.x, _project_simplex(c), atol=1e-7)
    assert len(res.state.active_sets[0]) == np.count_nonzero(_project_simplex(c) > 1e-9)


def _potts_lp(n=4, K=3, seed=0):
    G = nx.grid_2d_graph(n, n)
    rng = np.random.default_rng(seed)
    tn = rng.standard_normal((n * n, K))
    te = rng.uniform(-1.0, 1.0, G.number_of_edges())[:, None, None] * np.eye(K)
    lmp = fm.LocalMarginalPolytope(G, K)
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(tn, lmp.nodes)) + fm.sum(fm.multiply(te, lmp.edges))),
                      lmp.constraints)
    # the same LP for HiGHS: marginals as one vector, rows from the compiled consistency matrix
    compiled = prob.compile()
    return prob, compiled, lmp, tn, te


@pytest.mark.parametrize("sweep", ["gauss-seidel", "jacobi"])
def test_map_lp_with_default_options_matches_highs(sweep):
    prob, compiled, lmp, tn, te = _potts_lp()
    prob.solve(sweep=sweep)
    assert prob.status == "optimal"
    N, E, K = lmp.n_nodes, lmp.n_edges, lmp.n_states
    # HiGHS on the LP: variables (nodes, edges), simplex rows and marginalization rows
    c = np.concatenate([tn.ravel(), te.ravel()])
    rows = []
    for i in range(N):
        r = np.zeros(c.size)
        r[i * K:(i + 1) * K] = 1
        rows.append(r)
    for e in range(E):
        r = np.zeros(c.size)
        r[N * K + e * K * K:N * K + (e + 1) * K * K] = 1
        rows.append(r)
    edges = list(lmp.edge_index.items())
    for (u, v), e in edges:
        base = N * K + e * K * K
        for i in range(K):
            r = np.zeros(c.size)
            r[base + i * K:base + (i + 1) * K] = 1
            r[lmp.node_index[u] * K + i] -= 1
            rows.append(r)
            r = np.zeros(c.size)
            r[base + i:base + K * K:K] = 1
            r[lmp.node_index[v] * K + i] -= 1
            rows.append(r)
    A = np.array(rows)
    b_eq = np.concatenate([np.ones(N + E), np.zeros(A.shape[0] - N - E)])
    ref = linprog(c, A_eq=A, b_eq=b_eq, bounds=(0, None), method="highs")
    assert ref.status == 0
    assert prob.value == pytest.approx(ref.fun, rel=1e-3)
    nodes = lmp.nodes.value
    assert np.all(nodes >= -1e-9) and np.allclose(nodes.sum(axis=1), 1.0)


def test_block_step_sizes_minimize_the_augmented_lagrangian_along_each_block():
    """gamma_k is the exact minimizer of L(x + gamma d_k, y) on [0, gamma_max] (brute-force scan)."""
    from types import SimpleNamespace

    import scipy.sparse as sp

    from fwmodel.engine.block_search import BlockColumns, block_step_sizes, jacobi_step
    from fwmodel.engine.fwal import _Operator
    from fwmodel.engine.line_search import Backtracking
    from fwmodel.engine.steps import Proposal

    rng = np.random.default_rng(7)
    n1, n2, m = 5, 4, 3
    n = n1 + n2
    Q = rng.standard_normal((n, n))
    H = Q @ Q.T  # f(x) = x'Hx/2 + c'x
    c = rng.standard_normal(n)
    M = sp.csr_matrix(rng.standard_normal((m, n)))
    b = rng.standard_normal(m)
    lam = 0.8
    x = rng.random(n)
    y = rng.standard_normal(m)

    def L(z):
        r = M @ z - b
        return 0.5 * z @ H @ z + c @ z + y @ r + 0.5 * lam * r @ r

    objective = SimpleNamespace(is_quadratic=True, value=lambda z: 0.5 * z @ H @ z + c @ z,
                                curvature=lambda z, d: float(d @ H @ d))
    blocks = [Block(offset=0, size=n1, lmo=None, initial_atom=None),
              Block(offset=n1, size=n2, lmo=None, initial_atom=None)]
    r = M @ x - b
    dual_term = y + lam * r
    grad = H @ x + c + M.T @ dual_term
    proposals = [Proposal(-grad[:n1], 0.7, "fw"), Proposal(-grad[n1:], 5.0, "fw")]
    cols = BlockColumns(M, _Operator(M, n), blocks)
    steps = [SimpleNamespace(), SimpleNamespace()]
    gammas, _, _ = block_step_sizes(proposals, steps, blocks, x, grad, dual_term, lam, cols,
                                    objective.curvature, Backtracking())
    for k, blk in enumerate(blocks):
        d = np.zeros(n)
        d[blk.slice] = proposals[k].d
        grid = np.linspace(0, proposals[k].gamma_max, 20001)
        best = grid[np.argmin([L(x + g * d) for g in grid])]
        assert gammas[k] == pytest.approx(best, abs=2 * proposals[k].gamma_max / 20000)
    # the combined (Jacobi) move decreases L
    before = L(x)
    z, rz = x.copy(), r.copy()
    jacobi_step(proposals, steps, blocks, objective, z, rz, grad, dual_term, 0.0, lam, cols, objective.curvature,
                True, "exact", Backtracking())
    assert np.allclose(rz, M @ z - b)
    assert L(z) < before
