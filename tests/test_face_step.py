"""The step on the free coordinates of the current face (fwmodel/engine/face_step.py).

One step against the closed form (the minimizer of the augmented Lagrangian on
the face's affine hull, from its KKT system), the active set's invariants after
it (weights nonnegative, summing to one, reconstructing x), the ratio test, and
whole solves with the step against CVXPY + Clarabel.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.engine.active_set import ActiveSet
from fwmodel.engine import face_step
from fwmodel.engine.face_step import FaceStep
from fwmodel.engine.lagrangian import AugmentedLagrangian, Block, Iterate, _Operator
from fwmodel.engine.steps import BlendedPairwiseStep, IntervalStep
from fwmodel.sets.atoms import SparseAtom
from _benchmarks import benchmark

cp = pytest.importorskip("cvxpy")


class _Quadratic:
    """f(x) = 1/2 x'Qx + c'x (Q may be 0: a linear objective)."""

    def __init__(self, Q, c):
        self.Q, self.c = Q, c
        self.is_quadratic = True
        self.is_linear = not Q.any()

    def value(self, x):
        return 0.5 * x @ self.Q @ x + self.c @ x

    def value_and_grad(self, x):
        return self.value(x), self.Q @ x + self.c


def _setup(seed, n_box=4, n_simplex=5, m=3, linear=False):
    """A box block [0, 1]^n_box with every entry inside, a simplex block (total 1) with atoms e_0..e_3 active
    at positive weights, m rows; returns (lagrangian, iterate, face step, box step, simplex step, Q, c, M, b)."""
    rng = np.random.default_rng(seed)
    n = n_box + n_simplex
    B = rng.standard_normal((n, n))
    Q = np.zeros((n, n)) if linear else B @ B.T / n
    c = rng.standard_normal(n)
    M = rng.standard_normal((m, n))
    b = rng.standard_normal(m)
    box = Block(0, n_box, lmo=None, initial_atom=None, is_polytope=True, intervals=(np.zeros(n_box), np.ones(n_box)))
    simplex = Block(n_box, n_simplex, lmo=None, initial_atom=None, is_polytope=True)
    atoms = [SparseAtom([i], [1.0], n_simplex) for i in range(4)]
    w = rng.uniform(0.5, 1.5, 4)
    w /= w.sum()
    active = ActiveSet.from_atoms(atoms, w)
    x = np.concatenate([rng.uniform(0.3, 0.7, n_box), active.dense(n_simplex)])
    col_norms2 = (M ** 2).sum(0)
    st_box = IntervalStep(box, box.intervals, col_norms2[:n_box])
    st_simplex = BlendedPairwiseStep(simplex, active)
    obj = _Quadratic(Q, c)
    lag = AugmentedLagrangian(obj, [box, simplex], _Operator(sp.csr_matrix(M), n), b, None)
    y = rng.standard_normal(m)
    f, g = obj.value_and_grad(x)
    it = Iterate(x, y, M @ x - b, f, g, 2.0)
    face = FaceStep([box, simplex], [st_box, st_simplex], mode=True)
    return lag, it, face, st_simplex, Q, c, M, b


def _face_minimizer(x, y, lam, Q, c, M, b, n_box, n_simplex):
    """The minimizer of L(., y) over {box entries free, simplex entries 4.. at 0, sum(simplex) = 1} (KKT system)."""
    n = n_box + n_simplex
    free = list(range(n_box)) + [n_box + i for i in range(4)]
    H = Q + lam * M.T @ M
    q = c + M.T @ (y - lam * b)
    Hf = H[np.ix_(free, free)]
    a = np.zeros(len(free))
    a[n_box:] = 1.0
    K = np.block([[Hf, a[:, None]], [a[None, :], np.zeros((1, 1))]])
    rhs = np.concatenate([-q[free], [1.0]])
    sol = np.linalg.solve(K, rhs)
    z = np.zeros(n)
    z[free] = sol[:-1]
    return z


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_one_step_reaches_the_face_minimizer_or_stops_at_its_edge(seed, dense, monkeypatch):
    """The direct solve (small faces) and CG (larger ones; forced here) reach the same closed form."""
    if not dense:
        monkeypatch.setattr(face_step, "FACE_DENSE_DIM", 0)
    lag, it, face, st_simplex, Q, c, M, b = _setup(seed)
    x0 = it.x.copy()
    z = _face_minimizer(x0, it.y, it.lam, Q, c, M, b, 4, 5)
    L = lambda x: Q.dot(x).dot(x) / 2 + c @ x + it.y @ (M @ x - b) + it.lam / 2 * np.sum((M @ x - b) ** 2)
    assert face.take(lag, it) == 1
    x1 = it.x
    # the step moves along z - x0 (the model is exact: CG's direction is the Newton direction on the face)
    d, dz = x1 - x0, z - x0
    gamma = d @ dz / (dz @ dz)
    np.testing.assert_allclose(d, gamma * dz, atol=1e-8 * max(1.0, np.abs(dz).max()))
    inside = np.all(z[:4] >= 0) and np.all(z[:4] <= 1) and np.all(z[4:8] >= 0)
    if inside:  # the face's minimizer is in the face: one step reaches it
        np.testing.assert_allclose(x1, z, atol=1e-8)
    else:  # the ratio test stops at the edge: one coordinate at its bound, and L decreased
        assert gamma < 1.0
        at_bound = np.isclose(x1[:4], 0, atol=1e-12) | np.isclose(x1[:4], 1, atol=1e-12)
        assert at_bound.any() or len(st_simplex.active) < 4
        assert L(x1) < L(x0)
    # x stays in the sets, r and g follow x
    assert np.all(x1[:4] >= 0) and np.all(x1[:4] <= 1)
    np.testing.assert_allclose(it.r, M @ x1 - b, atol=1e-12)
    np.testing.assert_allclose(it.g, Q @ x1 + c, atol=1e-12)
    # active-set invariants: weights nonnegative, summing to one, reconstructing the simplex block
    w = st_simplex.active.weights
    assert np.all(w > 0) and abs(w.sum() - 1) < 1e-14
    np.testing.assert_allclose(st_simplex.active.dense(5), x1[4:], atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_linear_objective_moves_to_the_face_edge_or_its_minimizer(seed):
    """A linear f: the model is lam/2 ||M D u||^2 plus a slope; L decreases and the invariants hold."""
    lag, it, face, st_simplex, Q, c, M, b = _setup(seed, linear=True, m=2)
    x0 = it.x.copy()
    L = lambda x: c @ x + it.y @ (M @ x - b) + it.lam / 2 * np.sum((M @ x - b) ** 2)
    moved = face.take(lag, it)
    assert moved == 1
    assert L(it.x) < L(x0) - 1e-12
    # the face has 8 - 1 = 7 free directions and M sees 2: f's slope along the kernel is followed to an edge
    at_bound = np.isclose(it.x[:4], 0, atol=1e-12) | np.isclose(it.x[:4], 1, atol=1e-12)
    assert at_bound.any() or len(st_simplex.active) < 4
    w = st_simplex.active.weights
    assert np.all(w > 0) and abs(w.sum() - 1) < 1e-14
    np.testing.assert_allclose(st_simplex.active.dense(5), it.x[4:], atol=1e-14)
    np.testing.assert_allclose(it.r, M @ it.x - b, atol=1e-12)


def _hinge_model(m, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 8))
    b = rng.standard_normal(5) * 0.5
    c = rng.standard_normal(8)
    x = m.Variable(8)
    return m.Problem(m.Minimize(c @ x), [x >= 0, x <= 0.35, m.sum(m.pos(A @ x - b)) <= 0.94, x[0] + x[1] <= 0.94])

def _iterations_at_clarabels_value(build, seed, options, rtol):
    """Solve build(fm, seed) with each face_step option: "optimal" within rtol of Clarabel's value; the iterations."""
    ref = build(cp, seed)
    ref.solve(solver=cp.CLARABEL)
    iters = {}
    for option in options:
        prob = build(fm, seed)
        prob.solve(face_step=option)
        assert prob.status == fm.OPTIMAL
        assert abs(prob.value - ref.value) <= rtol * max(1.0, abs(ref.value))
        iters[option] = prob.stats.iterations
    return iters


@pytest.mark.parametrize("seed", [15, 60, 65, 95])
def test_hinge_tails_against_clarabel(seed):
    """The slow hinge models of benchmarks/hinge_tails.py: optimal at Clarabel's value, in far fewer iterations
    than without the step (60: 4,353 without it)."""
    iters = _iterations_at_clarabels_value(_hinge_model, seed, ("auto", False), rtol=2e-4)
    assert iters["auto"] < iters[False]


def _clarabel_and_face_step_values(build, tol):
    """The optimal values of ``build(cp)`` by Clarabel and of ``build(fm)`` with the face step at every
    iteration (asserted "optimal")."""
    ref = build(cp)
    ref.solve(solver=cp.CLARABEL)
    prob = build(fm)
    prob.solve(face_step=True, tol=tol)
    assert prob.status == fm.OPTIMAL
    return ref.value, prob.value


@pytest.mark.parametrize("seed", range(3))
def test_quadratic_over_simplex_with_rows_against_clarabel(seed):
    """Least squares over a simplex and a box with equality rows, with the step at every iteration."""
    rng = np.random.default_rng(100 + seed)
    F = rng.standard_normal((30, 12))
    g = rng.standard_normal(30)
    E = rng.standard_normal((3, 12))
    z = rng.dirichlet(np.ones(12))
    h = E @ z

    def build(m):
        x = m.Variable(12)
        u = m.Variable(6)
        cons = [x >= 0, m.sum(x) == 1, E @ x == h, u >= -0.2, u <= 0.2, m.sum(u) + x[0] == 0.1]
        return m.Problem(m.Minimize(m.sum_squares(F @ x - g) + m.sum_squares(u - 0.5)), cons)

    clarabel, ours = _clarabel_and_face_step_values(build, tol=1e-7)
    assert abs(clarabel - ours) <= 1e-5 * max(1.0, abs(clarabel))


def test_bad_option_named():
    x = fm.Variable(3)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [x >= 0, x <= 1])
    with pytest.raises(ValueError, match="face_step"):
        prob.solve(face_step="yes")


@pytest.mark.parametrize("seed", range(2))
def test_box_without_rows_against_clarabel(seed):
    """No rows (m = 0): the model is f's alone; least squares over a box at every iteration's face step."""
    rng = np.random.default_rng(200 + seed)
    F = rng.standard_normal((20, 9))
    g = 3 * rng.standard_normal(20)

    def build(m):
        x = m.Variable(9)
        return m.Problem(m.Minimize(m.sum_squares(F @ x - g)), [x >= -0.5, x <= 0.5])

    clarabel, ours = _clarabel_and_face_step_values(build, tol=1e-8)
    assert abs(clarabel - ours) <= 1e-6 * max(1.0, abs(clarabel))


# ---- the "auto" gating (benchmarks/face_gating.py; RESULTS.md, "The face step's 'auto' gating")

def _ks_model(m, seed):
    """Least squares over a K-sparse polytope (K = 2) with equality rows: the first draws of
    benchmarks/face_gating.py's ``ks`` family (A, b, E, c), its CVXPY form written out."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 31))
    r = int(rng.integers(1, n + 3)) if rng.random() < 0.5 else 2
    A, bb = rng.standard_normal((r, n)), rng.standard_normal(r)
    me = int(rng.integers(0, 10))
    rng.integers(0, 10)
    E = rng.standard_normal((me, n))
    rng.standard_normal((0, n))
    c = rng.standard_normal(n)
    k = 2
    xf = np.zeros(n)
    xf[:k] = 0.5
    x = m.Variable(n)
    cons = [fm.KSparsePolytope(x, k, 1.0)] if m is fm else [m.norm_inf(x) <= 1, m.norm1(x) <= k]
    return m.Problem(m.Minimize(m.sum_squares(A @ x - bb) + 0.1 * c @ x), cons + ([E @ x == E @ xf] if me else []))


@pytest.mark.parametrize("seed", [103, 104])
def test_auto_engages_where_the_step_pays_against_clarabel(seed):
    """K-sparse least squares with rows: "auto" within 1.5x of the step at every iteration (before the gating
    engaged: 599 against 31 and 1,580 against 100 iterations; the patience restarted at every face change),
    at Clarabel's value."""
    iters = _iterations_at_clarabels_value(_ks_model, seed, ("auto", True), rtol=1e-3)
    assert iters["auto"] <= 1.5 * iters[True]


def _degenerate_lp(m, seed):
    """benchmarks/face_gating.py's ``lp`` family (its generator): an LP over the simplex with integer rows."""
    return benchmark("face_gating").lp_model(seed, m)


def test_the_face_step_on_a_degenerate_lp_over_the_simplex():
    """A degenerate LP over the simplex with integer rows: the face step moves the simplex's positive entries
    together (its group part, with the slacks' free entries); "auto" reaches Clarabel's value in fewer
    iterations than without it (203 against 1,011 when the step first read simplices; before, it read only the
    slacks' box there, whose moves were rounding, and "auto" matched ``face_step=False`` bit for bit). Moves at
    rounding level are still not taken: test_a_step_at_the_face_minimizer_leaves_x_bit_for_bit."""
    ref = _degenerate_lp(cp, 49)
    ref.solve(solver=cp.CLARABEL)
    out = {}
    for option in ("auto", False):
        prob = _degenerate_lp(fm, 49)
        prob.solve(face_step=option)
        assert prob.status == fm.OPTIMAL
        assert abs(prob.value - ref.value) <= 1e-3 * max(1.0, abs(ref.value))
        out[option] = prob.stats.iterations
    assert out["auto"] < out[False] / 2


@pytest.mark.parametrize("seed", range(3))
def test_a_step_at_the_face_minimizer_leaves_x_bit_for_bit(seed):
    """x at the minimizer of L(., y) on the face (c chosen so that grad L vanishes on the face's coordinates,
    checked against the closed form): the step's move is rounding; x, r, the gradient and the active set stay
    exactly as they were, and under "auto" the next step waits (a step that did not pay)."""
    lag, it, face, st_simplex, Q, c, M, b = _setup(seed)
    grad_L = Q @ it.x + c + M.T @ (it.y + it.lam * it.r)
    c[:8] -= grad_L[:8]  # (in place: the objective holds c) box entries and active atoms 0..3
    it.f, it.g = lag.objective.value_and_grad(it.x)
    z = _face_minimizer(it.x, it.y, it.lam, Q, c, M, b, 4, 5)
    np.testing.assert_allclose(z, np.concatenate([it.x[:8], [0.0]]), atol=1e-12)
    x0, r0, g0, w0 = it.x.copy(), it.r.copy(), it.g.copy(), st_simplex.active.weights.copy()
    assert face.take(lag, it) == 0
    np.testing.assert_array_equal(it.x, x0)
    np.testing.assert_array_equal(it.r, r0)
    np.testing.assert_array_equal(it.g, g0)
    np.testing.assert_array_equal(st_simplex.active.weights, w0)
    auto = FaceStep(lag.blocks, face.steps, mode="auto")
    for _ in range(face_step.FACE_CHECK_EVERY - 1):
        assert auto.take(lag, it) == 0  # (not yet due: the first trial is at iteration FACE_CHECK_EVERY)
    auto.observe(it, 1.0)
    assert auto.take(lag, it) == 0 and auto._skip == 1 and auto._backoff == 1
    np.testing.assert_array_equal(it.x, x0)


def test_stall_guard_against_cycling_closed_form():
    """The guard's logic against its closed form: engaged, a merit that reaches no new best for FACE_STALL
    iterations disengages the step and makes it wait 2^s iterations (s = periods of FACE_STALL iterations
    without a new best, capped at 2^FACE_MAX_BACKOFF); a step that pays while stalled waits the same and does not
    engage; a new best merit ends it."""
    lag, it, face, st_simplex, Q, c, M, b = _setup(0)
    auto = FaceStep(lag.blocks, face.steps, mode="auto")
    stall, cap = face_step.FACE_STALL, face_step.FACE_MAX_BACKOFF
    auto.observe(it, 1.0)  # the best merit so far
    auto._engaged = True  # (as after a step that paid)
    for s in range(1, cap + 3):
        for t in range(stall):
            auto._skip = 0  # (no step in between: the guard alone)
            auto.observe(it, 1.0)
        assert auto._stalls == s and not auto._engaged
        assert auto._skip == 2 ** min(s, cap)
        # a step that pays while stalled: waits 2^s, stays disengaged
        auto._skip, auto._L_start = 0, 3.0
        auto._weigh(2.0, 1.0)
        assert auto._skip == 2 ** min(s, cap) and not auto._engaged
    auto._skip = 0
    auto.observe(it, 0.5)  # a new best merit: the stalls are over
    assert auto._stalls == 0
    auto._L_start = 3.0
    auto._weigh(2.0, 1.0)  # and a step that pays engages again
    assert auto._engaged and auto._skip == 0
    # without engagement and without a stall, a merit that does not improve counts nothing
    for t in range(3 * stall):
        auto._engaged = False
        auto.observe(it, 0.5)
    assert auto._stalls == 0
