"""Step kinds (fwmodel.engine.steps) and block sweeps against closed forms, brute force and CVXPY."""
import cvxpy as cp
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fwmodel as fm
from fwmodel.engine import Block, minimize_fwal
from fwmodel.engine import ActiveSet
from fwmodel.engine import steps as steps_module
from fwmodel.engine.steps import BlendedPairwiseStep, GroupPairwiseStep, IntervalStep, SimplexGroups
from fwmodel.sets.atoms import SparseAtom


def _project_simplex(c, total=1.0):
    """Closed form: Euclidean projection onto {x >= 0, sum x = total} (sort and threshold)."""
    u = np.sort(c)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, c.size + 1) > 0)[0][-1]
    return np.maximum(c - css[k] / (k + 1), 0.0)


try:  # shared closed form and brute-forced alignment vertices; tests/ may or may not be a package
    from .test_alignment import vertices as alignment_vertices
    from .test_engine import _capped_simplex_projection
except ImportError:
    from test_alignment import vertices as alignment_vertices
    from test_engine import _capped_simplex_projection


@pytest.mark.parametrize("step", ["auto", "away", "pairwise", "fw"])
@pytest.mark.parametrize("sweep", ["gauss-seidel", "jacobi"])
def test_every_step_kind_and_sweep_finds_the_capped_simplex_projection(step, sweep):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(40) * 0.2 + 1.0 / 40
    x = fm.Variable(40)
    # the box on the slice x[:]: two copies tied by rows (on x itself the compiler merges the two sets)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x[:], 0, 0.06)])
    tol = 1e-4 if step == "fw" else 1e-8  # plain FW converges sublinearly here
    prob.solve(step=step, sweep=sweep, tol=tol, feas_tol=tol, max_iter=20000)
    assert prob.status == "optimal"
    assert np.allclose(x.value, _capped_simplex_projection(c, 0.06), atol=3e-3 if step == "fw" else 1e-5)


def test_per_group_pairwise_steps_project_every_row_onto_its_simplex():
    """A single batched Simplex(axis=1): the closed form is the row-wise simplex projection, reached by
    per-group pairwise steps (``projection=False``) and by the defaults, which project the simplices."""
    rng = np.random.default_rng(2)
    C = rng.standard_normal((50, 7))
    X = fm.Variable((50, 7))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1)])
    expected = np.array([_project_simplex(row) for row in C])
    for options, kind in ((dict(projection=False), "pairwise"), ({}, "projection")):
        prob.solve(tol=1e-9, **options)
        assert prob.status == "optimal"
        assert prob.stats.step_counts[kind] > 0 and prob.stats.step_counts["fw"] == 0
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
    # the curvatures c follow a new lam and a new L_f (kept between calls only while both stay the same):
    # lam = 1, L_f = 4 gives c = (5, 6, 4, 5), so x - g / c clipped to the box
    Ctx.lam = 1.0
    step.observe_curvature(8.0, 2.0)
    p = step.propose(x, g, Ctx)
    assert np.allclose(x + p.d, np.clip(x - g / np.array([5.0, 6.0, 4.0, 5.0]), 0.0, 1.0))


def _clarabel_birkhoff_projection(C):
    """The reference: argmin ||Z - C||^2 over doubly stochastic Z, by CVXPY + Clarabel (solved problem, variable)."""
    n = C.shape[0]
    Z = cp.Variable((n, n), nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    ref.solve(solver=cp.CLARABEL)
    return ref, Z


def _count_calls(monkeypatch, method_name):
    """Count the calls of a BlendedPairwiseStep method (which step kinds a solve used)."""
    calls = []
    method = getattr(BlendedPairwiseStep, method_name)

    def counting(self, *args):
        calls.append(1)
        return method(self, *args)

    monkeypatch.setattr(BlendedPairwiseStep, method_name, counting)
    return calls


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
    ref, Z = _clarabel_birkhoff_projection(C)
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


class _WeightedSquares:
    """f(x) = sum_i h_i (x_i - c_i)^2: isotropic curvature when every h_i is equal."""

    is_quadratic = True

    def __init__(self, c, h):
        self.c, self.h = c, h

    def value(self, x):
        return float(np.sum(self.h * (x - self.c) ** 2))

    def value_and_grad(self, x):
        return self.value(x), 2 * self.h * (x - self.c)

    def curvature(self, x, d):
        return 2.0 * float(np.sum(self.h * d * d))


def _simplex_block(n):
    def lmo(g):
        return SparseAtom([int(np.argmin(g))], 1.0, n)

    return Block(offset=0, size=n, lmo=lmo, initial_atom=lambda: SparseAtom([0], 1.0, n), is_polytope=True)


def _count_local_phases(monkeypatch):
    return _count_calls(monkeypatch, "_local_phase")


def test_bpcg_local_phase_runs_on_isotropic_quadratics_and_finds_the_projection(monkeypatch):
    """||x - c||^2 over a simplex block: the local phase is used and the closed form is reached."""
    n = 40
    c = np.random.default_rng(7).standard_normal(n) * 0.3
    calls = _count_local_phases(monkeypatch)
    res = minimize_fwal(_WeightedSquares(c, np.ones(n)), [_simplex_block(n)], tol=1e-10)
    assert res.status == "optimal"
    assert calls, "the local phase never ran on an isotropic quadratic"
    assert np.allclose(res.x, _project_simplex(c), atol=1e-7)


def test_bpcg_local_phase_is_off_for_other_curvatures_and_the_answer_matches_cvxpy(monkeypatch):
    """A weighted least squares (curvature differs by direction): single local steps, CVXPY's answer."""
    n = 25
    rng = np.random.default_rng(8)
    c, h = rng.standard_normal(n) * 0.3, rng.uniform(0.5, 3.0, n)
    calls = _count_local_phases(monkeypatch)
    res = minimize_fwal(_WeightedSquares(c, h), [_simplex_block(n)], tol=1e-10)
    z = cp.Variable(n, nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.multiply(h, cp.square(z - c)))), [cp.sum(z) == 1])
    ref.solve(solver=cp.CLARABEL)
    assert res.status == "optimal" and not calls
    assert np.allclose(res.x, z.value, atol=1e-5)


def test_bpcg_local_phase_is_the_exact_model_minimizer_over_the_active_atoms(monkeypatch):
    """With every vertex of the simplex active, the local phase solves the projection onto the simplex.

    f(x) = ||x - c||^2 at x = the barycenter: the model in weight space is
    exact, so x + d after enough local steps is the Euclidean projection of c
    (closed form), and the weights stay a convex combination.
    """
    n = 8
    c = np.random.default_rng(9).standard_normal(n) * 0.4
    atoms = [SparseAtom([i], 1.0, n) for i in range(n)]
    block = _simplex_block(n)
    step = BlendedPairwiseStep(block, ActiveSet.from_atoms(atoms, np.ones(n)), coupled=False)
    x = np.full(n, 1.0 / n)
    for d in np.eye(n)[:3] - np.eye(n)[3:6]:  # three directions, same curvature ratio 2
        step.observe_curvature(2.0 * float(d @ d), float(d @ d))
    assert step.model_curvature == 2.0 and step.active.gram is not None
    monkeypatch.setattr(steps_module, "MAX_LOCAL_STEPS", 10_000)
    monkeypatch.setattr(steps_module, "LOCAL_PHASE_WORK", 10_000 * n)
    g = 2 * (x - c)
    p = step._local_phase(n, step.active.dots(g), 1e-13, None)
    assert np.allclose(x + p.d, _project_simplex(c), atol=1e-9)
    step.commit(p, 1.0)
    w = step.active.weights
    assert np.all(w > 0) and abs(w.sum() - 1) <= 1e-12
    assert np.allclose(step.active.dense(n), _project_simplex(c), atol=1e-9)


@pytest.mark.parametrize("kind", ["matching", "path"])
def test_batch_bpcg_solves_every_alignment_of_a_batch_against_the_vertex_hull_qp(kind):
    """12 soft alignments (one batched AlignmentPolytope) against CVXPY over the convex hull of brute-forced vertices."""
    B, n, m, mu = 12, 3, 3, 0.7
    rng = np.random.default_rng(11)
    C = rng.standard_normal((B, n, m))
    X = fm.Variable((B, n, m))
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, X)) + 0.5 * mu * fm.sum_squares(X)),
                      [fm.AlignmentPolytope(X, kind=kind, axis=0)])
    prob.solve(tol=1e-9, feas_tol=1e-9, max_iter=20000)
    assert prob.status == "optimal"
    V = alignment_vertices(kind, n, m).reshape(-1, n * m)  # brute-forced vertices (test_alignment)
    lam = cp.Variable((B, V.shape[0]), nonneg=True)
    Xr = lam @ V
    ref = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C.reshape(B, -1), Xr)) + 0.5 * mu * cp.sum_squares(Xr)),
                     [cp.sum(lam, axis=1) == 1])
    ref.solve(solver=cp.CLARABEL)
    assert prob.value == pytest.approx(ref.value, rel=1e-6, abs=1e-7)
    assert np.allclose(X.value.reshape(B, -1), Xr.value, atol=1e-3)


def test_batch_bpcg_is_the_default_step_for_batches_and_keeps_one_active_set_per_group(monkeypatch):
    proposals = []
    propose = steps_module.BatchBPCGStep.propose

    def recording(self, *args):
        p = propose(self, *args)
        proposals.append((self, p))
        return p

    monkeypatch.setattr(steps_module.BatchBPCGStep, "propose", recording)
    B, n, m = 10, 4, 5
    C = np.random.default_rng(12).standard_normal((B, n, m))
    X = fm.Variable((B, n, m))
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, X)) + 0.5 * fm.sum_squares(X)),
                      [fm.AlignmentPolytope(X, axis=0)])
    prob.solve(tol=1e-8)
    assert prob.status == "optimal" and proposals
    step = proposals[-1][0]
    sets = step.sets
    w = np.where(sets.alive, sets.weight, 0.0)
    assert np.all(w >= 0) and np.allclose(w.sum(axis=1), 1.0)
    assert np.allclose(sets.dense(), X.value.ravel(), atol=1e-9)
    # groups move by different amounts in one iteration (one step size per alignment)
    amounts = proposals[len(proposals) // 2][1].data[3]
    assert np.unique(np.round(amounts[amounts > 0], 12)).size > 1


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), moves=st.integers(1, 25))
def test_batched_active_sets_stay_convex_combinations_under_random_steps(seed, moves):
    """Random FW and local steps per group: weights >= 0 summing to one per group, x rebuilt from the atoms."""
    rng = np.random.default_rng(seed)
    B, S, nnz = 5, 9, 3

    def random_vertex():
        idx = np.concatenate([g * S + np.sort(rng.choice(S, size=nnz, replace=False)) for g in range(B)])
        return SparseAtom(idx, 1.0, B * S)

    first = random_vertex()
    x = first.to_dense()
    sets = steps_module.BatchedActiveSets(B, S, *steps_module._split_vertex(first, B, S))
    pool = [random_vertex() for _ in range(3)]  # repeated vertices must merge
    for _ in range(moves):
        s_idx, s_val = steps_module._split_vertex(pool[rng.integers(len(pool))], B, S)
        w = np.where(sets.alive, sets.weight, 0.0)
        alive = [np.flatnonzero(sets.alive[g]) for g in range(B)]
        local = rng.random(B) < 0.5
        a = np.array([rng.choice(al) for al in alive])
        lo = np.array([rng.choice(al) for al in alive])
        local &= a != lo
        amount = np.where(local, w[np.arange(B), a], 1.0) * rng.choice([0.0, 0.3, 1.0], size=B)
        X = x.reshape(B, S)  # the reference: the same moves on the dense iterate
        for g in range(B):
            if amount[g] <= 0:
                continue
            if local[g]:
                for slot, sign in ((lo[g], 1.0), (a[g], -1.0)):
                    np.add.at(x, sets.idx[g, slot], sign * amount[g] * sets.val[g, slot])
            else:
                s_dense = np.zeros(B * S)
                np.add.at(s_dense, s_idx[g], s_val[g])
                X[g] += amount[g] * (s_dense.reshape(B, S)[g] - X[g])
        sets.update(local, a, lo, amount, s_idx, s_val)
        w = np.where(sets.alive, sets.weight, 0.0)
        assert np.all(w >= 0) and np.allclose(w.sum(axis=1), 1.0, atol=1e-12)
        assert np.all(sets.weight[sets.alive] > 0)
        assert np.allclose(sets.dense(), x, atol=1e-9)


def test_bpcg_local_phase_stops_above_the_gram_size_limit(monkeypatch):
    """Past GRAM_MAX_ATOMS atoms the step drops its Gram matrix and takes single local steps (same answer)."""
    n = 40
    c = np.random.default_rng(13).standard_normal(n) * 0.3
    monkeypatch.setattr(steps_module, "GRAM_MAX_ATOMS", 8)
    calls = _count_local_phases(monkeypatch)
    # (face_step=False: the BPCG step alone; "auto"'s face step, engaged from its first paying step, would
    # solve the projection on the face before the set grows past the limit)
    res = minimize_fwal(_WeightedSquares(c, np.ones(n)), [_simplex_block(n)], tol=1e-10, face_step=False)
    assert res.status == "optimal"
    assert np.allclose(res.x, _project_simplex(c), atol=1e-7)
    assert res.state.active_sets[0].gram is None and len(res.state.active_sets[0]) > 8
    assert calls  # the phase ran while the set was small


@pytest.mark.parametrize("kind", ["fw", "pairwise", "away", "bpcg"])
def test_lazy_directions_are_the_eager_ones_and_the_proposal_slope_is_the_directional_derivative(kind):
    """A Gauss-Seidel sweep forms a block's direction at its turn (LazyDirection, in an array shared by
    all lazy directions): the same numbers as the direction formed at the proposal. A proposal's slope,
    from its atoms' products, is <g, d> (brute force on the formed direction)."""
    from fwmodel.engine.fwal import _Buffers, _StepContext
    from fwmodel.engine.steps import formed

    rng = np.random.default_rng(5)
    ball = fm.L1Ball(fm.Variable(30), 2.0)
    block = Block(0, 30, ball.lmo_atom, ball.initial_atom, is_polytope=True)
    atoms = [ball.lmo_atom(rng.standard_normal(30)) for _ in range(4)]

    def step():  # a step whose active set holds four vertices of the ball
        aset = ActiveSet(atoms[0])
        for atom, gamma in zip(atoms[1:], (0.4, 0.3, 0.2)):
            aset.fw_update(atom, gamma)
        return {"fw": lambda: steps_module.FWStep(block), "pairwise": lambda: steps_module.PairwiseStep(block, aset),
                "away": lambda: steps_module.AwayStep(block, aset),
                "bpcg": lambda: BlendedPairwiseStep(block, aset)}[kind]()

    x = step().active.dense(30) if kind != "fw" else 0.5 * atoms[1].to_dense()
    for trial in range(6):
        g = rng.standard_normal(30)
        eager_ctx, lazy_ctx = _StepContext(1.0, _Buffers()), _StepContext(1.0, _Buffers(), lazy_directions=True)
        eager_ctx.lazy_allowed = lazy_ctx.lazy_allowed = trial % 2 == 1  # BPCG: local steps too
        eager, lazy = step().propose(x, g, eager_ctx), step().propose(x, g, lazy_ctx)
        assert lazy.kind == eager.kind
        d = formed(lazy)
        if lazy.kind != "away":  # away directions are formed in their own array
            assert d is lazy_ctx.directions.shared_direction(block)
        np.testing.assert_array_equal(d, eager.d)
        np.testing.assert_allclose(eager.slope, np.dot(g, eager.d), rtol=1e-12, atol=1e-12)


def _reference_local_steps(L, w, q, G, target, steps):
    """BPCG's local steps as first written (a masked copy of q per step, fresh temporaries), for comparison."""
    target = max(target, steps_module.LOCAL_GAP_ROUNDING * float(np.abs(q).max()))
    for _ in range(steps):
        q_active = np.where(w > 0, q, -np.inf)
        a, s = int(q_active.argmax()), int(q.argmin())
        local_gap = float(q_active[a]) - float(q[s])
        if a == s or not local_gap > target:
            break
        curv = L * (float(G[a, a]) + float(G[s, s]) - 2.0 * float(G[a, s]))
        w_a = float(w[a])
        if curv <= 0 or local_gap >= curv * w_a:
            amount, w[a] = w_a, 0.0
        else:
            amount = local_gap / curv
            w[a] = w_a - amount
        w[s] += amount
        q += (L * amount) * (G[s] - G[a])


@pytest.mark.parametrize("seed", range(12))
def test_local_steps_equal_the_masked_reference_bit_for_bit(seed):
    """The local steps skip the masked copy of q while every weight is positive and form their update in
    place: the same weights and model gradient, bit for bit, as the first-written loop, with drop steps,
    atoms that regain weight, and starting weights with zeros."""
    rng = np.random.default_rng(seed)
    n, k = 6, int(rng.integers(3, 30))
    atoms = [SparseAtom(np.arange(n) * n + rng.permutation(n), 1.0, n * n) for _ in range(k)]
    A = np.array([a.to_dense() for a in atoms])
    w = rng.dirichlet(np.full(k, 0.3))
    if seed % 3 == 0:  # zeros among the starting weights
        w[rng.choice(k, size=k // 3, replace=False)] = 0.0
        w /= w.sum()
    step = BlendedPairwiseStep(_simplex_block(n * n), ActiveSet.from_atoms(atoms, np.ones(k)), coupled=False)
    step.model_curvature = 2.0
    g = 2 * (A.T @ w - rng.random(n * n))
    q = A @ g
    G = A @ A.T
    w_new, q_new = w.copy(), q.copy()
    step._local_steps(w_new, q_new, G, 0.0)
    w_ref, q_ref = w.copy(), q.copy()
    work = max(steps_module.LOCAL_PHASE_WORK, steps_module.LOCAL_PHASE_SHARE * k * step.active.entries_per_atom())
    _reference_local_steps(2.0, w_ref, q_ref, G, 0.0, min(steps_module.MAX_LOCAL_STEPS, max(2, int(work // k))))
    assert w_new.tobytes() == w_ref.tobytes() and q_new.tobytes() == q_ref.tobytes()
    assert not np.array_equal(w_new, w)  # the steps moved


def test_local_phase_move_from_stored_rows_equals_the_atoms_own_sums():
    """A local phase's move formed from the store's index rows (permutation atoms) is the sum of the atoms'
    own add_to, in the same order: the same array bit for bit, and the dense A' dw."""
    n, k = 7, 15
    rng = np.random.default_rng(3)
    atoms = [SparseAtom(np.arange(n) * n + rng.permutation(n), 1.0, n * n) for _ in range(k)]
    aset = ActiveSet.from_atoms(atoms, rng.random(k) + 0.1)
    aset.track_gram(n * n)
    dw = np.where(rng.random(len(aset)) < 0.5, rng.standard_normal(len(aset)), 0.0)
    moved = dw.nonzero()[0]
    d = np.zeros(n * n)
    assert aset.add_unit_atoms(d, moved, dw[moved])
    ref = np.zeros(n * n)
    for i in moved:
        aset.atom(int(i)).add_to(ref, float(dw[i]))
    assert d.tobytes() == ref.tobytes()
    assert np.allclose(d, np.array([a.to_dense() for a in aset.atoms]).T @ dw, atol=1e-12)
    aset.stop_gram()  # no pattern kept: the caller sums the atoms itself
    assert not aset.add_unit_atoms(np.zeros(n * n), moved, dw[moved])
