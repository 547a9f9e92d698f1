"""Models over AlignmentPolytope solved end to end by Problem.solve (FW-AL).

* Linear objectives: one Frank-Wolfe step reaches the dynamic-programming
  optimum (Needleman-Wunsch score, DTW cost), with and without a band.
* Smooth objectives over the matching (or path) polytope intersected with an
  L1 ball, and a batch of alignments (``axis=0``) tied to a consensus block
  by equality constraints: the answer is compared with CVXPY + Clarabel on
  the same problem, the polytope written as the convex hull of its
  enumerated vertices (``x = V^T w``, ``w`` in the simplex) for tiny grids,
  or by the flow formulation below for a larger one.

Why not row and column sums: for non-crossing matchings the polytope is not
``{X >= 0, rows and columns sum to <= 1}`` (that polytope contains crossing
matchings, e.g. the anti-diagonal of a 2x2 grid), so the references use an
exact description.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.alignment import AlignmentPolytope, band_mask, matching_lmo, path_lmo

from test_alignment import vertices

cp = pytest.importorskip("cvxpy")

OBJ_RTOL = 2e-3  # objective against the reference, relative to max(1, |ref|)
POINT_ATOL = 5e-3  # entries against the reference minimizer (the objectives are strongly convex)
MEMBER_TOL = 1e-3  # slack for membership of the returned point (copies agree to ~feas_tol)


# ---------------------------------------------------------------- references
def solve_reference(X, objective, constraints):
    prob = cp.Problem(cp.Minimize(objective), constraints)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL, prob.status
    return prob.value, X.value


def hull_reference(V, targets, radius=None):
    """min sum_t ||X - T_t||^2 over conv(V) (and ||X||_1 <= radius), by CVXPY.

    ``V`` is the (k, n, m) stack of all vertices; ``X = sum_v w_v V_v`` with
    ``w`` in the simplex.
    """
    k = len(V)
    w = cp.Variable(k, nonneg=True)
    x = V.reshape(k, -1).T @ w
    objective = sum(cp.sum_squares(x - T.ravel()) for T in targets)
    constraints = [cp.sum(w) == 1]
    if radius is not None:
        constraints.append(cp.norm1(x) <= radius)
    value, _ = solve_reference(w, objective, constraints)
    return value, (V.reshape(k, -1).T @ w.value).reshape(V.shape[1:])


def matching_flow_polytope(n, m):
    """An exact linear description of the matching polytope, by a flow.

    Non-crossing matchings are the right/down/diagonal paths from (0, 0) to
    (n, m) on the (n + 1) x (m + 1) grid of the Needleman-Wunsch table, the
    diagonal step out of (i, j) matching position i with position j. The
    node-arc incidence matrix of a directed graph is totally unimodular, so
    the unit flows are the convex hull of the paths; their diagonal flows
    (the projection) are the convex hull of the matchings. Returns the (n, m)
    CVXPY expression of the diagonal flows and the flow constraints.
    """
    node = np.arange((n + 1) * (m + 1)).reshape(n + 1, m + 1)
    tails, heads = [], []
    for di, dj in ((1, 1), (0, 1), (1, 0)):  # diagonal first: its n*m flows are X
        tails.append(node[: n + 1 - di, : m + 1 - dj].ravel())
        heads.append(node[di:, dj:].ravel())
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    incidence = np.zeros((node.size, tails.size))
    incidence[tails, np.arange(tails.size)] += 1.0  # leaves the tail
    incidence[heads, np.arange(tails.size)] -= 1.0  # enters the head
    supply = np.zeros(node.size)
    supply[node[0, 0]], supply[node[n, m]] = 1.0, -1.0
    flow = cp.Variable(tails.size, nonneg=True)
    X = cp.reshape(flow[: n * m], (n, m), order="C")
    return X, flow, [incidence @ flow == supply]


def flow_reference(targets, radius=None):
    n, m = targets[0].shape
    X, flow, constraints = matching_flow_polytope(n, m)
    if radius is not None:
        constraints.append(cp.sum(cp.abs(X)) <= radius)
    objective = sum(cp.sum_squares(X - T) for T in targets)
    value, _ = solve_reference(flow, objective, constraints)
    return value, X.value


# ----------------------------------------------------------------- asserts
def assert_objective_close(value, ref):
    assert abs(value - ref) <= OBJ_RTOL * max(1.0, abs(ref)), (value, ref)


def assert_in_polytope(P, X):
    assert P.contains(X, tol=MEMBER_TOL), X


def assert_in_l1_ball(X, radius):
    assert np.abs(X).sum() <= radius * (1 + MEMBER_TOL), (np.abs(X).sum(), radius)


# ------------------------------------------------------- linear objectives
@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("band", [None, 2.5])
def test_linear_objective_equals_dynamic_program(kind, band):
    lmo = matching_lmo if kind == "matching" else path_lmo
    for seed in range(3):
        G = np.random.default_rng(seed).standard_normal((7, 9))
        X = fm.Variable((7, 9), name="X")
        prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(G, X))), [AlignmentPolytope(X, kind=kind, band=band)])
        value = prob.solve()
        vertex, best = lmo(G, band=band, return_value=True)
        assert prob.status == "optimal"
        assert value == pytest.approx(best, abs=1e-9)
        # the optimum is unique for random G: FW-AL returns the DP's vertex
        np.testing.assert_allclose(X.value, vertex, atol=1e-9)


def test_maximized_alignment_score_equals_needleman_wunsch():
    """Score = sum of pair scores over matched pairs + gap * (unmatched positions)."""
    rng = np.random.default_rng(4)
    a, b = "".join(rng.choice(list("ACGT"), 11)), "".join(rng.choice(list("ACGT"), 8))
    match, mismatch, gap = 1.0, -1.0, -1.0
    S = np.where(np.array(list(a))[:, None] == np.array(list(b))[None, :], match, mismatch)
    A = fm.Variable(S.shape, name="A")
    prob = fm.Problem(fm.Maximize(fm.sum(fm.multiply(S - 2 * gap, A)) + gap * (len(a) + len(b))),
                      [AlignmentPolytope(A)])
    score = prob.solve()
    # the textbook Needleman-Wunsch table with linear gaps
    F = gap * np.add.outer(np.arange(len(a) + 1), np.zeros(len(b) + 1)) + gap * np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            F[i, j] = max(F[i - 1, j - 1] + S[i - 1, j - 1], F[i - 1, j] + gap, F[i, j - 1] + gap)
    assert prob.status == "optimal"
    assert score == pytest.approx(F[-1, -1], abs=1e-9)
    assert set(np.unique(A.value)) <= {0.0, 1.0}


# ------------------------------------------------------- smooth objectives
def test_flow_formulation_is_the_matching_polytope():
    """The flow reference agrees with the vertex-hull reference on tiny grids."""
    rng = np.random.default_rng(0)
    for n, m in [(2, 2), (2, 3), (3, 3)]:
        T = 1.5 * rng.random((n, m)) - 0.2
        v_hull, X_hull = hull_reference(vertices("matching", n, m), [T])
        v_flow, X_flow = flow_reference([T])
        assert v_flow == pytest.approx(v_hull, rel=1e-6, abs=1e-7)
        np.testing.assert_allclose(X_flow, X_hull, atol=1e-5)


@pytest.mark.parametrize("kind", ["matching", "path"])
@pytest.mark.parametrize("n,m", [(3, 3), (2, 3), (3, 2)])
def test_soft_alignment_in_l1_ball_matches_vertex_hull_qp(kind, n, m):
    """min ||A - T||^2 over AlignmentPolytope ∩ L1Ball, against CVXPY over conv(vertices)."""
    rng = np.random.default_rng(10 * n + m)
    V = vertices(kind, n, m)
    T = 1.2 * rng.random((n, m))
    # a radius that cuts the projection onto the polytope alone: both sets matter
    _, X_poly = hull_reference(V, [T])
    radius = 0.75 * np.abs(X_poly).sum()
    if kind == "path":
        radius = max(radius, max(n, m) + 0.1)  # a path has at least max(n, m) cells
    ref, X_ref = hull_reference(V, [T], radius)
    assert np.abs(X_ref).sum() == pytest.approx(radius, rel=1e-4)  # the L1 ball is active

    A = fm.Variable((n, m), name="A")
    P = AlignmentPolytope(A, kind=kind)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A - T)), [P, fm.L1Ball(A, radius=radius)])
    value = prob.solve()
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    np.testing.assert_allclose(A.value, X_ref, atol=POINT_ATOL)
    assert_in_polytope(P, A.value)
    assert_in_l1_ball(A.value, radius)
    fractional = (X_ref > 0.05) & (X_ref < 0.95)
    assert fractional.any()  # the answer is a fractional alignment, not a vertex


def test_soft_alignment_matches_flow_qp_on_a_larger_grid():
    n, m = 7, 9
    rng = np.random.default_rng(1)
    truth = matching_lmo(-rng.random((n, m)))  # some alignment
    T = truth + 0.3 * rng.standard_normal((n, m))
    radius = 0.6 * truth.sum()
    ref, X_ref = flow_reference([T], radius)
    A = fm.Variable((n, m), name="A")
    P = AlignmentPolytope(A)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A - T)), [P, fm.L1Ball(A, radius=radius)])
    value = prob.solve()
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    np.testing.assert_allclose(A.value, X_ref, atol=POINT_ATOL)
    assert_in_polytope(P, A.value)
    assert_in_l1_ball(A.value, radius)


def test_batched_alignments_tied_to_a_consensus_block():
    """B alignments (one (B, n, m) block, axis=0) all equal to one consensus C in a box.

    The blocks are linked only by the equality constraints ``A[b] == C``, so
    the answer is the alignment X in conv(vertices) minimizing
    sum_b ||X - T_b||^2.
    """
    B, n, m = 3, 3, 3
    rng = np.random.default_rng(0)
    T = rng.random((B, n, m))
    A = fm.Variable((B, n, m), name="A")
    C = fm.Variable((n, m), name="C")
    P = AlignmentPolytope(A, axis=0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A - T)), [P, fm.Box(C, 0.0, 1.0)] + [A[b] == C for b in range(B)])
    value = prob.solve()
    compiled = prob.compile()
    assert len(compiled.blocks) == 2 and compiled.M.shape[0] == B * n * m

    ref, X_ref = hull_reference(vertices("matching", n, m), list(T))
    assert prob.status == "optimal"
    assert_objective_close(value, ref)
    assert_in_polytope(P, A.value)
    for b in range(B):
        np.testing.assert_allclose(A.value[b], X_ref, atol=POINT_ATOL)
    np.testing.assert_allclose(C.value, X_ref, atol=POINT_ATOL)
    assert np.all(C.value >= -MEMBER_TOL) and np.all(C.value <= 1 + MEMBER_TOL)


def test_banded_soft_alignment_stays_in_band():
    n, m, band = 6, 6, 1.0
    rng = np.random.default_rng(2)
    T = rng.random((n, m))
    A = fm.Variable((n, m), name="A")
    P = AlignmentPolytope(A, band=band)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A - T)), [P, fm.L1Ball(A, radius=3.0)])
    value = prob.solve()
    assert prob.status == "optimal"
    outside = ~band_mask(n, m, band)
    assert np.abs(A.value[outside]).max() <= MEMBER_TOL
    assert_in_polytope(P, A.value)
    assert_in_l1_ball(A.value, 3.0)
    # reference: the flow formulation with the cells outside the band forced to 0
    X, flow, constraints = matching_flow_polytope(n, m)
    constraints += [X[outside] == 0, cp.sum(cp.abs(X)) <= 3.0]
    ref, _ = solve_reference(flow, cp.sum_squares(X - T), constraints)
    assert_objective_close(value, ref)


def test_problems_sharing_an_alignment_polytope_solve_in_two_threads_as_alone():
    """The DP buffers belong to each solve (``AlignmentPolytope.lmo_for_solve``): two problems on the
    same polytope object, solved at once in two threads (the interpreter switching threads every
    microsecond, inside the LMOs), give the iterates of their solves one after the other, bit for bit;
    one answer against the flow QP (CVXPY + Clarabel)."""
    try:  # the two-thread harness; tests/ may or may not be a package
        from .test_trace_resolve import run_at_once
    except ImportError:
        from test_trace_resolve import run_at_once

    n, m = 20, 24
    rng = np.random.default_rng(3)
    targets = [matching_lmo(-rng.random((n, m))) + 0.3 * rng.standard_normal((n, m)) for _ in range(2)]
    A = fm.Variable((n, m), name="A")
    P = AlignmentPolytope(A)
    problems = [fm.Problem(fm.Minimize(fm.sum_squares(A - T)), [P]) for T in targets]
    options = dict(max_iter=150)

    def run(prob):
        prob.solve(**options)
        return prob.point_in(P).copy(), list(prob.history["objective"])

    alone = [run(prob) for prob in problems]
    results = run_at_once([lambda k=k: run(problems[k]) for k in range(2)])
    for k in range(2):
        assert np.array_equal(results[k][0], alone[k][0]) and results[k][1] == alone[k][1]
    ref, X_ref = flow_reference([targets[0]])
    problems[0].solve()
    assert problems[0].status == "optimal"
    assert_objective_close(problems[0].value, ref)
    np.testing.assert_allclose(problems[0].point_in(P), X_ref, atol=POINT_ATOL)
