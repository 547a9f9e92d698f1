"""Rank-k steps on trace-norm blocks (fwmodel.engine.rank_k) against independent answers.

The block Krylov pairs against a full eigendecomposition / SVD; the rank-k
point against its closed form (top-k singular values of Y from a full SVD,
projected onto the capped simplex) and, when the projection of Y has rank
below k, against the projection onto the whole ball (full SVD); solves with
``rank_k=True`` against the projection of C (a closed form) and against
CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.inface import project_capped_simplex
from fwmodel.engine.rank_k import rank_k_prox, top_eigenpairs, top_singular_triplets


def low_rank_plus_noise(m, n, rank, seed, noise=0.05, symmetric=False):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, rank)) * np.linspace(10.0, 3.0, rank) @ rng.standard_normal((rank, n)) / np.sqrt(n)
    A = A + noise * rng.standard_normal((m, n))
    return 0.5 * (A + A.T) if symmetric else A


@pytest.mark.parametrize("which, k", [("LA", 4), ("LM", 6)])
def test_block_krylov_eigenpairs_match_a_full_eigendecomposition(which, k):
    n = 120
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    spectrum = np.concatenate([[9.0, -8.0, 7.0, -6.0, 5.0, 4.5], rng.uniform(-1.0, 1.0, n - 6)])
    A = (Q * spectrum) @ Q.T
    values, vectors = top_eigenpairs(A, k, which, max_rounds=100, rtol=1e-12)
    w, V = np.linalg.eigh(A)
    order = np.argsort(w if which == "LA" else np.abs(w))[::-1][:k]
    assert np.allclose(np.sort(values), np.sort(w[order]), rtol=1e-6)
    # the same invariant subspace: projector distance
    P_est, P_ref = vectors @ vectors.T, V[:, order] @ V[:, order].T
    assert np.linalg.norm(P_est - P_ref) < 1e-4
    assert np.allclose(vectors.T @ vectors, np.eye(k), atol=1e-10)


def test_block_krylov_singular_triplets_match_a_full_svd():
    A = low_rank_plus_noise(90, 130, 6, seed=2)
    U, s, V = top_singular_triplets(A, 4, max_rounds=100, rtol=1e-12)
    s_ref = np.linalg.svd(A, compute_uv=False)[:4]
    assert np.allclose(s, s_ref, rtol=1e-6)
    assert np.allclose(A @ V, U * s, atol=1e-4 * s_ref[0])
    assert np.allclose(U.T @ U, np.eye(4), atol=1e-10) and np.allclose(V.T @ V, np.eye(4), atol=1e-10)


def closed_form_rank_k(Y, radius, k):
    """argmin over rank <= k, ||V||_* <= r of ||V - Y||_F: the top-k SVD with projected values (full SVD)."""
    U, s, Vt = np.linalg.svd(Y)
    t = project_capped_simplex(s[:k], radius)
    return (U[:, :k] * t) @ Vt[:k]


@pytest.mark.parametrize("radius, k", [(6.0, 3), (60.0, 3), (6.0, 30)])
def test_rank_k_point_matches_its_closed_form(radius, k):
    Y = low_rank_plus_noise(100, 110, 8, seed=3)
    U, s, V = rank_k_prox(Y, radius, k)
    P = (U * s) @ V.T
    assert np.allclose(P, closed_form_rank_k(Y, radius, k), atol=1e-6 * np.abs(Y).max())
    assert s.sum() <= radius * (1 + 1e-12)


@pytest.mark.parametrize("variant", [{}, {"symmetric": True}, {"psd": True}])
def test_rank_k_point_is_the_projection_onto_the_ball_when_its_rank_is_below_k(variant):
    """Fewer than k positive values after thresholding: the rank-k point is the projection (full SVD)."""
    symmetric = bool(variant)
    Y = low_rank_plus_noise(100, 100, 4, seed=4, symmetric=symmetric)
    radius, k = 3.0, 10
    U, s, V = rank_k_prox(Y, radius, k, **variant)
    assert np.count_nonzero(s) < k
    P = (U * s) @ V.T
    X = fm.Variable((100, 100))
    ref = fm.TraceNormBall(X, radius, **variant).project(Y)
    assert np.allclose(P, ref, atol=1e-6 * np.abs(Y).max())


# 80 x 90: the plain step (Y, V - X and s - X in arrays of its own); 150 x 160 (at least LARGE_BLOCK
# entries): the lean one (Y then V - X in one lent array, the FW direction formed at the sweep's turn)
@pytest.mark.parametrize("shape, sweep", [((80, 90), "gauss-seidel"), ((150, 160), "gauss-seidel"),
                                          ((150, 160), "jacobi")])
def test_one_rank_k_step_on_a_quadratic_reaches_the_projection(shape, sweep):
    """min ||X - C||^2 over the ball: its solution is the projection of C (full SVD, a closed form).

    With L the exact curvature, Y = X - G / L = C and one rank-k step lands on the
    projection when its rank is at most k; FW steps alone need many iterations.
    """
    C = low_rank_plus_noise(*shape, 3, seed=5)
    radius = 0.5 * np.linalg.svd(C, compute_uv=False).sum()
    X = fm.Variable(C.shape)
    ball = fm.TraceNormBall(X, radius)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball])
    prob.solve(rank_k=True, tol=1e-9, sweep=sweep)
    assert prob.status == "optimal"
    assert prob.stats.iterations <= 5 and prob.stats.step_counts["rank_k"] >= 1
    P = ball.project(C)
    assert np.allclose(X.value, P, atol=1e-6 * np.abs(C).max())


@pytest.mark.parametrize("psd", [False, True])
def test_masked_least_squares_on_the_ball_matches_cvxpy(psd):
    """Matrix completion on the (PSD) trace ball, no closed form: against CVXPY + Clarabel."""
    cp = pytest.importorskip("cvxpy")
    d = 30
    C = low_rank_plus_noise(d, d, 3, seed=6, symmetric=psd)
    mask = (np.random.default_rng(7).random((d, d)) < 0.5).astype(float)
    if psd:
        mask = np.maximum(mask, mask.T)
    radius = 0.6 * np.linalg.svd(C, compute_uv=False).sum()
    X = fm.Variable((d, d))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(fm.multiply(mask, X - C))), [fm.TraceNormBall(X, radius, psd=psd)])
    prob.solve(rank_k=True, tol=1e-6, max_iter=5000)
    Z = cp.Variable((d, d), PSD=True) if psd else cp.Variable((d, d))
    constraint = cp.trace(Z) <= radius if psd else cp.normNuc(Z) <= radius
    ref = cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(mask, Z - C))), [constraint])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert prob.value <= ref.value + 1e-4 * abs(ref.value) + 1e-8
    assert prob.value >= ref.value - 1e-3 * abs(ref.value)
    if psd:
        assert np.linalg.eigvalsh(0.5 * (X.value + X.value.T)).min() >= -1e-9 * radius
        assert np.trace(X.value) <= radius * (1 + 1e-9)
    else:
        assert np.linalg.svd(X.value, compute_uv=False).sum() <= radius * (1 + 1e-9)


@pytest.mark.parametrize("projection", [True, False])
def test_l1_and_trace_intersection_with_rank_k_matches_cvxpy(projection):
    cp = pytest.importorskip("cvxpy")
    d = 20
    rng = np.random.default_rng(8)
    C = rng.standard_normal((d, 3)) @ rng.standard_normal((3, d))
    support = rng.random((d, d)) < 0.05
    C[support] += 3.0 * rng.standard_normal(int(support.sum()))
    r1, r2 = 0.5 * np.abs(C).sum(), 0.5 * np.linalg.svd(C, compute_uv=False).sum()
    X = fm.Variable((d, d))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)])
    prob.solve(rank_k=True, projection=projection, max_iter=20000)
    Z = cp.Variable((d, d))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(cp.abs(Z)) <= r1, cp.normNuc(Z) <= r2])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert prob.stats.step_counts["rank_k"] > 0


@pytest.mark.parametrize("bad", ["yes", 1, None, "Auto"])
def test_rank_k_option_is_checked_by_name(bad):
    X = fm.Variable((4, 4))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - np.eye(4))), [fm.TraceNormBall(X, 1.0)])
    with pytest.raises(ValueError, match="rank_k"):
        prob.solve(rank_k=bad)


def test_auto_takes_rank_k_steps_on_large_trace_norm_blocks_only():
    """rank_k="auto": a trace-norm block of at least AUTO_MIN_DIM rows and columns gets a cost-capped
    rank-k step; a smaller one keeps the FW step; a block without a low-rank face is untouched."""
    from fwmodel.engine.fwal import Block
    from fwmodel.engine.inface import LowRankFace
    from fwmodel.engine.rank_k import AUTO_COST_CAP, AUTO_MIN_DIM, RankKStep
    from fwmodel.engine.steps import FWStep, make_step

    def block(shape, face=True):
        size = int(np.prod(shape))
        return Block(offset=0, size=size, lmo=None, initial_atom=None,
                     face=LowRankFace(1.0, False, shape) if face else None)

    norms = lambda: np.ones(1)  # noqa: E731
    big = make_step(block((AUTO_MIN_DIM, AUTO_MIN_DIM)), "auto", None, norms, rank_k="auto")
    assert isinstance(big, RankKStep) and big.cost_cap == AUTO_COST_CAP
    assert isinstance(make_step(block((AUTO_MIN_DIM - 1, AUTO_MIN_DIM)), "auto", None, norms, rank_k="auto"), FWStep)
    assert isinstance(make_step(block((AUTO_MIN_DIM, AUTO_MIN_DIM), face=False), "auto", None, norms,
                                rank_k="auto"), FWStep)
    # True keeps the uncapped rank-k steps on every size
    assert make_step(block((10, 10)), "auto", None, norms, rank_k=True).cost_cap is None


def test_auto_cost_cap_shrinks_k_to_what_the_iteration_affords():
    """The next k's counted Krylov cost, predicted linearly in k + OVERSAMPLING from the last step, fits
    the budget: cost_cap iterations, or what the last step's gain pays for, at most AUTO_MAX_COST."""
    from fwmodel.engine.fwal import Block
    from fwmodel.engine.inface import LowRankFace
    from fwmodel.engine.rank_k import AUTO_MAX_COST, DENSE_SVD_COST, INITIAL_RANK, OVERSAMPLING, RankKStep

    n = 2000
    blk = Block(offset=0, size=n * n, lmo=None, initial_atom=None, face=LowRankFace(1.0, False, (n, n)))
    step = RankKStep(blk, blk.face, np.ones(1), cost_cap=1.0)
    step.iteration_cost = 100.0
    # the last step used k = 28 (32 columns) for 50 passes; k = 56 (60 columns) predicts 94 <= 100 -> kept
    step.k = 56
    step._cap_rank(28, 50.0, 1.5, DENSE_SVD_COST)
    assert step.k == 56 and 50.0 / (28 + OVERSAMPLING) * (step.k + OVERSAMPLING) <= 100.0
    # the same request after a step of 100 passes: 60 columns predict 188 -> halved to 28 (100)
    step.k = 56
    step._cap_rank(28, 100.0, 1.5, DENSE_SVD_COST)
    assert step.k == 28
    # a step that gained 3x the FW step's pays up to 2 iterations: 188 fits
    step.k = 56
    step._cap_rank(28, 100.0, 3.0, DENSE_SVD_COST)
    assert step.k == 56
    # ... but never more than AUTO_MAX_COST iterations, whatever the gain
    step.k = 56
    step._cap_rank(28, AUTO_MAX_COST * 100.0, 1e6, DENSE_SVD_COST)
    assert step.k == 28
    # never below the initial rank, and no cap without an iteration's cost
    step.k = 56
    step._cap_rank(28, 1e5, 1.0, DENSE_SVD_COST)
    assert step.k == INITIAL_RANK
    uncapped = RankKStep(blk, blk.face, np.ones(1))
    uncapped.k, uncapped.iteration_cost = 56, 1.0
    uncapped._cap_rank(28, 1e5, 1.0, DENSE_SVD_COST)
    assert uncapped.k == 56
    # a tied copy (consistency rows) keeps the plain budget whatever its gain: the 3x gain that
    # kept k = 56 above does not extend it (188 > 100 -> halved to 28)
    tied = RankKStep(blk, blk.face, np.ones(1), cost_cap=1.0, coupled=True)
    tied.iteration_cost, tied.k = 100.0, 56
    tied._cap_rank(28, 100.0, 3.0, DENSE_SVD_COST)
    assert tied.k == 28
    # ... and the same cost_cap as an untied block: with cost_cap 4, a step of 150 passes (k = 56
    # predicts 281) fits both budgets (400); after a step of 250 passes (k = 56 predicts 469) a 6x
    # gain extends an untied block's budget to 5 iterations (500: kept), not a tied copy's (halved)
    assert 400.0 < 250.0 / (28 + OVERSAMPLING) * (56 + OVERSAMPLING) <= 500.0
    for coupled, cost, expected in ((False, 150.0, 56), (True, 150.0, 56), (False, 250.0, 56), (True, 250.0, 28)):
        capped = RankKStep(blk, blk.face, np.ones(1), cost_cap=4.0, coupled=coupled)
        capped.iteration_cost, capped.k = 100.0, 56
        capped._cap_rank(28, cost, 6.0, DENSE_SVD_COST)
        assert capped.k == expected


def test_auto_k_of_a_coupled_copy_stops_growing_at_its_cap():
    """k doubles while the prox keeps every value (rank-k steps, ``_follow_rank``); with rank_k="auto"
    a coupled copy (consistency or equality rows) stops at AUTO_MAX_COUPLED_RANK whatever the cost budget
    admits (at d = 4000 the first rank-128 step of the paper's problem took gamma 0.91 and raised the
    infeasibility 3x); an untied block, and rank_k=True, keep doubling up to the block's rank."""
    from fwmodel.engine.fwal import Block
    from fwmodel.engine.inface import LowRankFace
    from fwmodel.engine.rank_k import AUTO_MAX_COUPLED_RANK, INITIAL_RANK, OVERSAMPLING, RankKStep

    n = 4000
    blk = Block(offset=0, size=n * n, lmo=None, initial_atom=None, face=LowRankFace(1.0, True, (n, n)))

    def ks(step, rounds=8):
        """k after each step whose prox kept all of its k values, from the initial rank."""
        seen = []
        for _ in range(rounds):
            k = step.k
            step._follow_rank(k, k, np.zeros((n, 1)), None)
            seen.append(step.k)
        return seen

    doubling = [INITIAL_RANK * 2 ** i for i in range(1, 9)]  # 8, 16, ..., 1024
    tied = RankKStep(blk, blk.face, np.ones(1), cost_cap=4.0, coupled=True)
    assert ks(tied) == [min(k, AUTO_MAX_COUPLED_RANK) for k in doubling]
    assert max(ks(tied)) == AUTO_MAX_COUPLED_RANK == 64
    # the margin after a prox that kept fewer values than k is capped too; below the cap it is unchanged
    tied._follow_rank(AUTO_MAX_COUPLED_RANK - 1, AUTO_MAX_COUPLED_RANK, np.zeros((n, 1)), None)
    assert tied.k == AUTO_MAX_COUPLED_RANK
    tied._follow_rank(20, AUTO_MAX_COUPLED_RANK, np.zeros((n, 1)), None)
    assert tied.k == 20 + OVERSAMPLING
    untied = RankKStep(blk, blk.face, np.ones(1), cost_cap=4.0, coupled=False)
    assert ks(untied) == doubling
    forced = RankKStep(blk, blk.face, np.ones(1), coupled=True)  # rank_k=True: no cost cap, no rank cap
    assert ks(forced) == doubling


class _SharedDirection:
    """The driver's shared direction array (fwal._Buffers.shared_direction), lent to a lean rank-k step."""

    def __init__(self, size):
        self.array = np.empty(size)

    def shared_direction(self, block):
        return self.array


def _lean_rank_k_case(adjust_gradient=None):
    """The lean rank-k step tests' instance: X (150 x 150, PSD of rank 3), a symmetric G (reshaped by
    ``adjust_gradient(X, G, L)`` where given), L = 1.5, a trace-norm block of radius 3, and G's symmetric
    LMO vertex (the step then takes symmetric eigenpairs)."""
    from types import SimpleNamespace

    from fwmodel.engine.fwal import Block
    from fwmodel.engine.inface import LowRankFace

    n, L = 150, 1.5
    rng = np.random.default_rng(12)
    B = rng.standard_normal((n, 3))
    X = B @ B.T / n
    A = rng.standard_normal((n, n))
    G = -(A + A.T) / 4
    if adjust_gradient is not None:
        G = adjust_gradient(X, G, L)
    blk = Block(offset=0, size=n * n, lmo=None, initial_atom=None, face=LowRankFace(3.0, False, (n, n)))
    u = np.linalg.eigh(G)[1][:, 0]
    return X, G, L, blk, SimpleNamespace(u=u, v=u)


@pytest.mark.parametrize("signs", ["positive", "mixed"])
def test_lean_rank_k_step_with_y_formed_over_the_gradient(signs):
    """Where G lies in the array the block's lazy directions are formed in, the lean rank-k step forms
    G - L X = -L Y over it (Y = X - G / L; one Krylov product per column instead of two) and reads <G, V> as
    L (<X, V> - <Y, V>). Its direction, slope and ||V - X||^2 against those of the two-product operator
    on the same X, G, L, and both against the dense <G, V - X> and ||V - X||^2 of the formed direction."""
    from fwmodel.engine.rank_k import RankKStep

    # Y = X - G / L near a PSD matrix where the signs are "positive": no negative kept value
    X, G, L, blk, atom = _lean_rank_k_case((lambda X, G, L: G - 2.0 * X) if signs == "positive" else None)
    x, g = X.ravel().copy(), G.ravel().copy()
    xg, xx = float(x @ g), float(x @ x)

    results = []
    for over_gradient in (False, True):
        lender = _SharedDirection(x.size)
        step = RankKStep(blk, blk.face, np.ones(1))
        step.k = 8
        if over_gradient:
            lender.array[:] = g
            g_k = lender.array
        else:
            g_k = g.copy()
        d, slope, norm2 = step._lean_rank_k_direction(x, g_k, L, atom, xg, xx, lender)
        if over_gradient:  # the array holds G - L X = -L Y (Y = X - G / L, formed by one axpy) now
            np.testing.assert_allclose(lender.array, g - L * x, rtol=1e-12, atol=1e-14 * L)
        else:
            assert np.array_equal(g_k, g)
        D = d.form().copy()
        assert np.array_equal(x, X.ravel())
        np.testing.assert_allclose(slope, g @ D, rtol=1e-9)
        np.testing.assert_allclose(norm2, D @ D, rtol=1e-9)
        results.append((D, slope, norm2))
    (D0, s0, n0), (D1, s1, n1) = results
    np.testing.assert_allclose(D1, D0, rtol=0, atol=1e-10 * np.abs(D0).max())
    np.testing.assert_allclose([s1, n1], [s0, n0], rtol=1e-10)


@pytest.mark.parametrize("ratio", [1e-2, 1e-4, 1e-7])
def test_lean_rank_k_slope_over_the_gradient_is_refused_where_rounding_could_swamp_it(ratio):
    """<G, V> = L (<X, V> - <Y, V>) cancels where ||G|| / (L ||X||) is tiny. Either the step returns a
    slope that agrees with the dense <G, V - X> of the two-product path, or it returns none (the caller
    then takes the FW direction); at 1e-7 the over-gradient slope was 4e-2 off, and must be refused."""
    from fwmodel.engine.rank_k import RankKStep

    X, G, L, blk, atom = _lean_rank_k_case(lambda X, G, L: G * (ratio * L * np.linalg.norm(X) / np.linalg.norm(G)))
    x, g = X.ravel().copy(), G.ravel().copy()

    two_products = RankKStep(blk, blk.face, np.ones(1))
    two_products.k = 8
    d, reference, _ = two_products._lean_rank_k_direction(x, g.copy(), L, atom, float(x @ g), float(x @ x),
                                                          _SharedDirection(x.size))
    np.testing.assert_allclose(reference, g @ d.form(), rtol=1e-6)
    lender = _SharedDirection(x.size)
    lender.array[:] = g
    over = RankKStep(blk, blk.face, np.ones(1))
    over.k = 8
    _, slope, _ = over._lean_rank_k_direction(x, lender.array, L, atom, float(x @ g), float(x @ x), lender)
    if ratio >= 1e-2:
        assert slope is not None
    if ratio <= 1e-7:
        assert slope is None
    if slope is not None:
        np.testing.assert_allclose(slope, reference, rtol=1e-3)


def test_auto_rank_k_on_tied_copies_is_capped_without_the_gain_extension():
    """make_step passes ``coupled`` on: a trace-norm copy tied to another set gets the plain cost cap."""
    from fwmodel.engine.fwal import Block
    from fwmodel.engine.inface import LowRankFace
    from fwmodel.engine.rank_k import AUTO_MIN_DIM
    from fwmodel.engine.steps import make_step

    n = AUTO_MIN_DIM
    blk = Block(offset=0, size=n * n, lmo=None, initial_atom=None, face=LowRankFace(1.0, False, (n, n)))
    assert make_step(blk, "auto", None, lambda: np.ones(1), coupled=True, rank_k="auto").coupled is True
    assert make_step(blk, "auto", None, lambda: np.ones(1), coupled=False, rank_k="auto").coupled is False


def test_block_krylov_reads_a_nearly_symmetric_matrix_as_its_symmetric_part():
    """rank_k_prox passes Y = X - G / L as it is (no d x d symmetrization): the pairs are those of sym(Y)."""
    n = 150
    rng = np.random.default_rng(4)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    S = (Q * np.concatenate([[9.0, 7.0, 5.0, 4.0], rng.uniform(-1.0, 1.0, n - 4)])) @ Q.T
    E = 1e-9 * rng.standard_normal((n, n))
    A = S + (E - E.T)  # symmetric part S, a rounding-size antisymmetric part
    w, V = np.linalg.eigh(0.5 * (A + A.T))
    for k in (3, 120):  # the Krylov and the dense branch
        values, vectors = top_eigenpairs(A, k, "LA", max_rounds=100, rtol=1e-13)
        assert np.allclose(np.sort(values)[::-1][:3], w[::-1][:3], rtol=1e-8)
        top = vectors[:, np.argsort(values)[::-1][:3]]
        assert np.linalg.norm(top @ top.T - V[:, -3:] @ V[:, -3:].T) < 1e-6


@pytest.mark.parametrize("n, tile", [(7, 512), (513, 256), (300, 64)])
def test_tiled_symmetrization_gives_exactly_the_symmetric_part(n, tile):
    from fwmodel.engine.rank_k import _symmetrize

    A = np.random.default_rng(n).standard_normal((n, n))
    expected = 0.5 * (A + A.T)
    _symmetrize(A, tile=tile)
    assert np.array_equal(A, expected) and np.array_equal(A, A.T)


def test_the_first_step_is_already_a_rank_k_step():
    """The objective's curvature is measured along the first FW direction (ctx.block_curvature), so
    the very first step is a rank-k step: min ||X - C||^2 over the ball lands on the projection of C
    (closed form by full SVD: the singular values projected onto the capped simplex) after one step."""
    C = low_rank_plus_noise(60, 70, 2, seed=8, noise=0.0)
    sigma = np.linalg.svd(C, compute_uv=False)
    radius = 0.5 * sigma.sum()
    X = fm.Variable(C.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, radius)])
    prob.solve(rank_k=True, max_iter=1)
    assert prob.stats.step_counts["rank_k"] == 1 and prob.stats.step_counts["fw"] == 0
    U, s, Vt = np.linalg.svd(C, full_matrices=False)
    P = (U * project_capped_simplex(s, radius)) @ Vt
    assert np.allclose(X.value, P, atol=1e-6 * np.abs(C).max())


def _old_span_and_new_top(n, width, seed, new=(2.0, 1.9, 1.8)):
    """A symmetric n x n matrix whose eigenvectors Q[:, :width] (the "old" vectors, values 1 .. 0.5)
    span an invariant subspace, while its top eigenvectors (values ``new``) are orthogonal to them."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    values = rng.uniform(-0.3, 0.3, n)
    values[:width] = np.linspace(1.0, 0.5, width)
    values[width:width + len(new)] = new
    return Q, values


@pytest.mark.parametrize("extra", [0, 4])
def test_block_krylov_started_from_old_vectors_finds_new_top_eigenvectors(extra):
    """A warm start of b (or more) old vectors spanning an invariant subspace: without a Gaussian column
    in the start, Rayleigh-Ritz on span[Q, A Q] never leaves that subspace and returns its values."""
    from fwmodel.engine.rank_k import OVERSAMPLING
    n, k = 200, 8
    b = k + OVERSAMPLING
    Q, values = _old_span_and_new_top(n, b + extra, seed=3)
    A = (Q * values) @ Q.T
    A = 0.5 * (A + A.T)
    got, vectors = top_eigenpairs(A, k, "LA", start=Q[:, :b + extra], rng=np.random.default_rng(0),
                                  max_rounds=100, rtol=1e-12)
    w = np.linalg.eigvalsh(A)[::-1][:k]
    assert np.allclose(np.sort(got)[::-1], w, rtol=1e-8)
    # the engine's rounds (four at most) already find the three new values
    got4, _ = top_eigenpairs(A, k, "LA", start=Q[:, :b + extra], rng=np.random.default_rng(0))
    assert np.allclose(np.sort(got4)[::-1][:3], w[:3], rtol=1e-2)


def test_block_krylov_singular_triplets_started_from_old_vectors_find_new_top_triplets():
    from fwmodel.engine.rank_k import OVERSAMPLING
    m, n, k = 150, 120, 6
    b = k + OVERSAMPLING
    rng = np.random.default_rng(4)
    U, _ = np.linalg.qr(rng.standard_normal((m, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = rng.uniform(0.0, 0.3, n)
    s[:b] = np.linspace(1.0, 0.5, b)  # the old right vectors V[:, :b]
    s[b:b + 2] = (2.0, 1.8)  # the new top, orthogonal to them
    A = (U * s) @ V.T
    _, got, _ = top_singular_triplets(A, k, start=V[:, :b], rng=np.random.default_rng(0), max_rounds=100,
                                      rtol=1e-12)
    assert np.allclose(got, np.linalg.svd(A, compute_uv=False)[:k], rtol=1e-8)


def test_rank_k_point_from_a_start_of_old_vectors_is_the_closed_form():
    """The PSD rank-k point of Y (eigenpairs path) with the warm start of the previous step's vectors,
    where Y's top eigenvectors are new: against the closed form from a full eigendecomposition."""
    from fwmodel.engine.rank_k import OVERSAMPLING
    n, k, radius = 160, 6, 3.0
    Q, values = _old_span_and_new_top(n, k + OVERSAMPLING, seed=5)
    Y = (Q * values) @ Q.T
    Y = 0.5 * (Y + Y.T)
    U, s, V = rank_k_prox(Y, radius, k, psd=True, start=[Q[:, :k + OVERSAMPLING]], rng=np.random.default_rng(0))
    w, E = np.linalg.eigh(Y)
    top = np.argsort(w)[::-1][:k]
    t = project_capped_simplex(np.maximum(w[top], 0.0), radius)
    ref = (E[:, top] * t) @ E[:, top].T
    got = (U * s) @ V.T
    # four Krylov rounds: the point within 20 % of its size (7 %; without Gaussian columns in the start,
    # the point of the old span, off by 1.2 times its size)
    assert np.linalg.norm(got - ref) <= 0.2 * np.linalg.norm(ref)
