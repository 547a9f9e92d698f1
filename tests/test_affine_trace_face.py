"""A trace-norm ball of an affine expression, ``TraceNormBall(a * X - X0, r)``, gets the low-rank face.

The compiler holds such a set as an :class:`~fwmodel.sets.preimage.AffinePreimage`
on X's entries; it declares the ball's face with the map (``z = a x + c``), so
that in-face and rank-k steps work on ``z``, which is low rank where x is not.
Checked here against CVXPY + Clarabel on small instances, with the steps that
use the face counted; and the symmetric sets' per-solve LMOs (``lmo_for_solve``).
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.inface import LowRankFace
from fwmodel.sets.preimage import AffinePreimage

cp = pytest.importorskip("cvxpy")

D = 12


def data(seed=0, d=D, symmetric=False):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((d, 3)) @ rng.standard_normal((3, d)) + 0.1 * rng.standard_normal((d, d))
    X0 = rng.standard_normal((d, d))
    if symmetric:
        C, X0 = C @ C.T / d, X0 @ X0.T / d
    return C, X0


def clarabel_value(objective, constraints):
    prob = cp.Problem(cp.Minimize(objective), constraints)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


def affine_model(scale, with_l1, seed=0):
    """min ||X - C||^2 s.t. ||scale X - X0||_* <= r (and ||X||_1 <= r1): (fwmodel problem, Clarabel's optimum)."""
    C, X0 = data(seed)
    r = 0.5 * float(np.linalg.svd(scale * C - X0, compute_uv=False).sum())  # binding: half the norm at C
    r1 = 0.5 * float(np.abs(C).sum())
    X = fm.Variable((D, D))
    ball = fm.TraceNormBall(scale * X - X0, r) if scale != 1.0 else fm.TraceNormBall(X - X0, r)
    constraints = [ball] + ([fm.L1Ball(X, r1)] if with_l1 else [])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), constraints)
    Z = cp.Variable((D, D))
    ref = [cp.normNuc(scale * Z - X0) <= r] + ([cp.sum(cp.abs(Z)) <= r1] if with_l1 else [])
    return prob, clarabel_value(cp.sum_squares(Z - C), ref)


@pytest.mark.parametrize("scale", [1.0, 2.0, -0.5])
def test_affine_ball_declares_the_face_with_its_map(scale):
    prob, _ = affine_model(scale, with_l1=False)
    compiled = prob.compile()
    (block,) = compiled.blocks
    assert isinstance(block.set, AffinePreimage)
    face = fm.Problem._engine_blocks(compiled)[0].face
    assert isinstance(face, LowRankFace) and face.affine
    assert face.scale == scale
    _, X0 = data(0)
    np.testing.assert_array_equal(face.offset, -X0.ravel())


def test_entrywise_scale_declares_no_face():
    """z = W * X + c with entries of W that differ: z's rank is not x's kept; no face, and still correct."""
    C, X0 = data(1)
    W = np.where(np.arange(D * D).reshape(D, D) % 2 == 0, 1.0, 2.0)
    X = fm.Variable((D, D))
    ball = fm.TraceNormBall(fm.multiply(W, X) - X0, 5.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball])
    (block,) = prob.compile().blocks
    assert isinstance(block.set, AffinePreimage)
    assert block.set.low_rank_face() is None and not block.set.has_projection
    prob.solve(max_iter=20000)
    Z = cp.Variable((D, D))
    ref = clarabel_value(cp.sum_squares(Z - C), [cp.normNuc(cp.multiply(W, Z) - X0) <= 5.0])
    assert abs(prob.value - ref) <= 1e-3 * abs(ref)


@pytest.mark.parametrize("with_l1", [False, True])
@pytest.mark.parametrize("scale", [1.0, 2.0, -0.5])
@pytest.mark.parametrize("options", [{}, {"projection": False}, {"rank_k": True}],
                         ids=["defaults", "inface", "rank_k"])
def test_affine_ball_matches_clarabel(scale, with_l1, options):
    prob, ref = affine_model(scale, with_l1)
    prob.solve(max_iter=20000, **options)
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)
    ball = prob.constraints[0]
    assert ball.contains(prob.point_in(ball), tol=1e-8)


@pytest.mark.parametrize("options", [{}, {"projection": False}, {"rank_k": True}],
                         ids=["defaults", "inface", "rank_k"])
def test_transposed_rectangular_affine_ball_matches_clarabel(options):
    """||2 X^T - X0||_* <= r on a 12 x 9 variable (the face's shape is the transpose's)."""
    rng = np.random.default_rng(3)
    C = rng.standard_normal((D, 9))
    X0 = rng.standard_normal((9, D))
    r = 0.5 * float(np.linalg.svd(2.0 * C.T - X0, compute_uv=False).sum())
    X = fm.Variable((D, 9))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(2.0 * X.T - X0, r)])
    prob.solve(max_iter=20000, **options)
    Z = cp.Variable((D, 9))
    ref = clarabel_value(cp.sum_squares(Z - C), [cp.normNuc(2.0 * Z.T - X0) <= r])
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)


@pytest.mark.parametrize("affine", [False, True])
def test_warm_start_with_rank_k_steps_keeps_the_point(affine):
    """A rank-k block keeps no face set: a warm start resumes from its point (it used to restart the
    block from its initial vertex when in-face steps would have been chosen for it), then reaches Clarabel's optimum."""
    prob, ref = affine_model(1.0, with_l1=True)
    if not affine:
        C, _ = data(0)
        X = fm.Variable((D, D))
        r = 0.5 * float(np.linalg.svd(C, compute_uv=False).sum())
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, r), fm.L1Ball(X, 0.5 * np.abs(C).sum())])
        Z = cp.Variable((D, D))
        ref = clarabel_value(cp.sum_squares(Z - C), [cp.normNuc(Z) <= r, cp.sum(cp.abs(Z)) <= 0.5 * np.abs(C).sum()])
    prob.solve(projection=False, rank_k=True, max_iter=15)
    X = prob.variables()[0]
    stopped = X.value.copy()
    prob.solve(projection=False, rank_k=True, max_iter=0, warm_start=True)
    np.testing.assert_allclose(X.value, stopped, rtol=0, atol=1e-12 * np.abs(stopped).max())
    prob.solve(projection=False, rank_k=True, warm_start=True, max_iter=20000)
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)


def test_the_face_steps_are_taken():
    """Without projections, the affine ball takes in-face steps (rank-k steps with rank_k=True), as the plain
    ball does, and reaches its optimum in few iterations."""
    prob, ref = affine_model(1.0, with_l1=False)
    prob.solve(projection=False)
    assert prob.stats.step_counts.get("inface", 0) > 0
    assert prob.status == "optimal" and prob.stats.iterations <= 100
    inface_iterations = prob.stats.iterations
    prob.solve(projection=False, rank_k=True)
    assert prob.stats.step_counts.get("rank_k", 0) > 0 and prob.status == "optimal"
    prob.solve(projection=False, inface=False, max_iter=10 * inface_iterations)
    assert "inface" not in prob.stats.step_counts and prob.stats.step_counts["fw"] > 0


def test_warm_start_resumes_from_the_face():
    """The face's atoms (in the ball's coordinate z) come back with a warm start: x is rebuilt from them."""
    prob, ref = affine_model(2.0, with_l1=True)
    prob.solve(projection=False, max_iter=30)
    assert prob.status == "max_iter"
    X = prob.variables()[0]
    stopped = X.value.copy()
    prob.solve(projection=False, max_iter=0, warm_start=True)
    np.testing.assert_allclose(X.value, stopped, rtol=0, atol=1e-10 * np.abs(stopped).max())
    prob.solve(projection=False, warm_start=True, max_iter=20000)
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)


def test_resolve_repeats_bit_for_bit():
    prob, _ = affine_model(1.0, with_l1=True)
    prob.solve(projection=False)
    first = (prob.stats.iterations, prob.variables()[0].value.copy())
    prob.solve(projection=False)
    assert prob.stats.iterations == first[0]
    np.testing.assert_array_equal(prob.variables()[0].value, first[1])


@pytest.mark.parametrize("case", ["psd", "symmetric_ball", "symmetric_variable"])
@pytest.mark.parametrize("options", [{}, {"projection": False}, {"rank_k": True, "projection": False}],
                         ids=["defaults", "inface", "rank_k"])
def test_symmetric_and_psd_affine_balls_match_clarabel(case, options):
    C, X0 = data(2, symmetric=True)
    r = 2.0
    X = fm.Variable((D, D), symmetric=case == "symmetric_variable")
    if case == "psd":
        ball = fm.TraceNormBall(X - X0, r, psd=True)
    else:
        ball = fm.TraceNormBall(X - X0, r, symmetric=case == "symmetric_ball")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball])
    (block,) = prob.compile().blocks
    assert block.set.low_rank_face() is not None
    prob.solve(max_iter=20000, **options)
    Z = cp.Variable((D, D), symmetric=True)
    if case == "psd":
        ref = clarabel_value(cp.sum_squares(Z - C), [Z - X0 >> 0, cp.trace(Z - X0) <= r])
    else:
        ref = clarabel_value(cp.sum_squares(Z - C), [cp.normNuc(Z - X0) <= r])
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)


@pytest.mark.parametrize("psd", [False, True])
def test_preimage_projection_matches_clarabel(psd):
    """With one scale a, P(x) = (P_S(a x + c) - c) / a: the projection of the preimage, checked by CVXPY."""
    C, X0 = data(3, d=8, symmetric=psd)
    X = fm.Variable((8, 8))
    (preimage,) = fm.Problem(fm.Minimize(fm.sum_squares(X)),
                             [fm.TraceNormBall(-2.0 * X + X0, 1.5, psd=psd)]).compile().blocks
    S = preimage.set
    assert S.has_projection
    P = S.project_flat(C.ravel()).reshape(8, 8)
    Z = cp.Variable((8, 8), symmetric=psd)
    cons = [-2.0 * Z + X0 >> 0, cp.trace(-2.0 * Z + X0) <= 1.5] if psd else [cp.normNuc(-2.0 * Z + X0) <= 1.5]
    ref = clarabel_value(cp.sum_squares(Z - C), cons)
    assert np.sum((P - C) ** 2) == pytest.approx(ref, rel=1e-6)
    assert S.contains(P, tol=1e-9)


# ------------------------------------------------------------ symmetric sets' per-solve LMOs
@pytest.mark.parametrize("kind", ["birkhoff", "stochastic"])
def test_symmetric_polytopes_take_the_per_solve_assignment_solver(kind):
    """``SymmetricPart.lmo_for_solve`` passes the inner set's per-solve LMO through (the Birkhoff polytope's
    warm-started assignment solver): called once per solve, a re-solve repeats bit for bit, and the
    result matches Clarabel."""
    rng = np.random.default_rng(4)
    n = 9
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n), symmetric=True)
    total = 1.0 if kind == "birkhoff" else 2.0
    S = fm.BirkhoffPolytope(X) if kind == "birkhoff" else fm.Simplex(X, total=total, axis=1)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [S])
    (block,) = prob.compile().blocks
    from fwmodel.sets import birkhoff

    made = []
    real = birkhoff.WarmStartedAssignment

    class Counting(real):
        def __init__(self, n):
            made.append(n)
            super().__init__(n)

    birkhoff.WarmStartedAssignment = Counting
    try:
        prob.solve()
        assert made == [n]
        first = (prob.stats.iterations, X.value.copy())
        prob.solve()
        assert made == [n, n]  # a fresh solver for each solve
    finally:
        birkhoff.WarmStartedAssignment = real
    assert prob.stats.iterations == first[0]
    np.testing.assert_array_equal(X.value, first[1])
    # its vertices minimize as the stateless LMO does
    lmo = block.set.lmo_for_solve()
    for _ in range(10):
        d = rng.standard_normal(n * n)
        assert lmo(d).dot(d) == pytest.approx(block.set.lmo_atom(d).dot(d), rel=1e-12, abs=1e-12)
    Z = cp.Variable((n, n), symmetric=True)
    cons = [Z >= 0, cp.sum(Z, axis=1) == total] + ([cp.sum(Z, axis=0) == 1] if kind == "birkhoff" else [])
    ref = clarabel_value(cp.sum_squares(Z - C), cons)
    assert prob.status == "optimal"
    assert abs(prob.value - ref) <= 1e-4 * abs(ref)
    np.testing.assert_array_equal(X.value, X.value.T)


def test_a_symmetric_part_that_overrides_only_lmo_atom_keeps_its_own_lmo_in_solves():
    """A SymmetricPart subclass with its own lmo_atom (and no _vertex) must not get the inner set's LMO
    through lmo_for_solve: here a box LMO that returns only the vertex of the lower bounds would be wrong."""
    from fwmodel.sets.symmetric import SymmetricPart

    calls = []

    class CountingSymmetricBox(SymmetricPart):
        def lmo_atom(self, flat_direction):
            calls.append(1)
            return SymmetricPart.lmo_atom(self, flat_direction)

    n = 4
    X = fm.Variable((n, n))
    part = CountingSymmetricBox(fm.Box(X, -1.0, 1.0))
    lmo = part.lmo_for_solve()
    d = np.random.default_rng(0).standard_normal(n * n)
    atom = lmo(d)
    assert calls == [1]  # its own lmo_atom ran
    D = d.reshape(n, n)
    expected = -np.sign(0.5 * (D + D.T)).ravel()  # the symmetric box's vertex along -sym(D)
    vertex = np.zeros(n * n)
    atom.add_to(vertex, 1.0)
    np.testing.assert_array_equal(vertex, expected)


def test_a_symmetric_stochastic_subclass_that_overrides_only_lmo_atom_keeps_it_in_solves():
    from fwmodel.sets.birkhoff import SymmetricStochastic

    calls = []

    class Counting(SymmetricStochastic):
        def lmo_atom(self, flat_direction):
            calls.append(1)
            return SymmetricStochastic.lmo_atom(self, flat_direction)

    n = 5
    X = fm.Variable((n, n))
    part = Counting(fm.Simplex(X, total=1.0, axis=1))
    d = np.random.default_rng(1).standard_normal(n * n)
    assert part.lmo_for_solve()(d).dot(d) == pytest.approx(SymmetricStochastic.lmo_atom(part, d).dot(d))
    assert calls == [1]
