"""Re-solves of trace-norm models repeat the first solve bit for bit.

The trace-norm LMO warm-starts Lanczos from its last vectors, and its vertex
depends on that start within ``lmo_tol``. The start belongs to the solve
(``TraceNormBall.lmo_for_solve``), not to the set: solving a problem again,
solving another problem that shares the set in between (or at the same time
in another thread), or calling the set's LMO directly, leaves a solve's
iterates unchanged. ``dense_threshold=0`` puts these small matrices on the
Lanczos path (the dense path has no warm start). Answers are checked against
the closed-form projection and against CVXPY + SCS.
"""
import sys
import threading

import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm


def run_at_once(calls):
    """Run each of ``calls`` in its own thread, the interpreter switching threads every microsecond
    (so the threads interleave inside the LMOs); returns their results in order, and re-raises an
    exception of any thread (one in a thread would otherwise pass unseen)."""
    results, errors = [None] * len(calls), []

    def run(k):
        try:
            results[k] = calls[k]()
        except Exception as error:
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]
    return results

D = 40


def low_rank_plus_sparse(seed, shape=(D, D), symmetric=True):
    """Rank 3 + sparse + noise; symmetric when asked (the eigenvalue path), else the singular-value path."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((shape[0], 3)) @ rng.standard_normal((3, shape[1]))
    C += 3.0 * rng.standard_normal(shape) * (rng.random(shape) < 0.05) + 0.1 * rng.standard_normal(shape)
    return 0.5 * (C + C.T) if symmetric else C


def nuclear_norm(C):
    return float(np.linalg.svd(C, compute_uv=False).sum())


def trace_ball(X, radius, **kwargs):
    return fm.TraceNormBall(X, radius, dense_threshold=0, **kwargs)


def closest_in_trace_ball(C, radius, **kwargs):
    """``min ||X - C||^2`` over a trace-norm ball; returns the problem, its variable and the set."""
    X = fm.Variable(C.shape)
    ball = trace_ball(X, radius, **kwargs)
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball]), X, ball


def same_solve(prob, X, **options):
    """The returned X, objective history and iteration count of one solve."""
    prob.solve(**options)
    return X.value.copy(), list(prob.history["objective"]), prob.stats.iterations


def assert_identical(first, second):
    x1, history1, iterations1 = first
    x2, history2, iterations2 = second
    assert np.array_equal(x1, x2)
    assert history1 == history2 and iterations1 == iterations2


OPTIONS = dict(max_iter=300)


@pytest.mark.parametrize("kwargs, symmetric", [
    (dict(), True),  # eigenvalue path, largest |lambda|
    (dict(psd=True), True),  # PSD trace ball: smallest eigenvalue
    (dict(), False),  # singular-value path (Lanczos on the Gram matrix)
])
def test_trace_ball_alone_resolves_bit_for_bit(kwargs, symmetric):
    C = low_rank_plus_sparse(0, (D, D) if symmetric else (D, D + 7), symmetric=symmetric)
    radius = 0.3 * nuclear_norm(C)
    prob, X, ball = closest_in_trace_ball(C, radius, **kwargs)
    first = same_solve(prob, X, **OPTIONS)
    assert ball.total_matvecs > 0  # the Lanczos path was taken
    assert_identical(first, same_solve(prob, X, **OPTIONS))
    # direct LMO calls on the set in between (they keep a warm start of their own) change nothing
    rng = np.random.default_rng(1)
    for _ in range(3):
        ball.lmo_atom(rng.standard_normal(ball.size))
    assert_identical(first, same_solve(prob, X, **OPTIONS))
    # the answer: the Euclidean projection of C (closed form, by a full decomposition)
    expected = ball.project(C)
    assert np.linalg.norm(first[0] - expected) <= 1e-3 * np.linalg.norm(expected)


def l1_and_trace(C, l1_set, trace_set_of, X):
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [l1_set, trace_set_of])


def test_l1_and_trace_tied_copies_resolve_and_share_sets_between_problems():
    """L1 ball ∩ trace-norm ball (two tied copies of X): A twice, then B on the same set objects, then A
    again, then A warm-started from its own state: A's cold solves are identical, and the warm solve
    equals a warm solve that follows A directly. The answer against CVXPY + SCS (Clarabel gives the
    same optimum to 1e-9 relative here, in 30x SCS's time)."""
    C_a, C_b = low_rank_plus_sparse(2), low_rank_plus_sparse(3)
    r1, r2 = 0.5 * float(np.abs(C_a).sum()), 0.5 * nuclear_norm(C_a)
    X = fm.Variable((D, D))
    shared = [fm.L1Ball(X, r1), trace_ball(X, r2)]
    A = fm.Problem(fm.Minimize(fm.sum_squares(X - C_a)), shared)
    B = fm.Problem(fm.Minimize(fm.sum_squares(X - C_b)), shared)
    options = dict(max_iter=400)
    first = same_solve(A, X, **options)
    assert_identical(first, same_solve(A, X, **options))
    warm_after_a = same_solve(A, X, warm_start=True, max_iter=20)
    same_solve(A, X, **options)  # A's state again
    same_solve(B, X, **options)
    assert_identical(first, same_solve(A, X, **options))
    assert_identical(warm_after_a, same_solve(A, X, warm_start=True, max_iter=20))

    Y = cp.Variable((D, D))
    reference = cp.Problem(cp.Minimize(cp.sum_squares(Y - C_a)), [cp.sum(cp.abs(Y)) <= r1, cp.normNuc(Y) <= r2])
    reference.solve(solver="SCS", eps=1e-8)
    A.solve(tol=1e-6, feas_tol=1e-6, max_iter=20000)
    assert A.status == "optimal"
    assert A.value == pytest.approx(reference.value, rel=1e-5)
    np.testing.assert_allclose(X.value, Y.value, atol=1e-3 * np.abs(Y.value).max())


def test_trace_models_sharing_sets_solve_in_two_threads_as_alone():
    """Two problems on the same L1 and trace-norm set objects, solved at once in two threads (the
    interpreter switching threads every microsecond), give the iterates of their fresh solves one after
    the other, bit for bit; each answer against CVXPY + SCS."""
    targets = [low_rank_plus_sparse(4), low_rank_plus_sparse(5)]
    r1, r2 = 0.5 * float(np.abs(targets[0]).sum()), 0.5 * nuclear_norm(targets[0])
    options = dict(max_iter=150)

    def solved(prob, trace_set):
        prob.solve(**options)
        return prob.point_in(trace_set).copy(), list(prob.history["objective"]), prob.stats.iterations

    def fresh(C):
        X = fm.Variable((D, D))
        trace_set = trace_ball(X, r2)
        return solved(l1_and_trace(C, fm.L1Ball(X, r1), trace_set, X), trace_set)

    references = [fresh(C) for C in targets]
    X = fm.Variable((D, D))
    shared = [fm.L1Ball(X, r1), trace_ball(X, r2)]
    problems = [l1_and_trace(C, *shared, X) for C in targets]
    results = run_at_once([lambda k=k: solved(problems[k], shared[1]) for k in range(2)])
    for k, (C, reference) in enumerate(zip(targets, references)):
        assert_identical(results[k], reference)
        assert problems[k].status == "optimal"
        Y = cp.Variable((D, D))
        cp.Problem(cp.Minimize(cp.sum_squares(Y - C)), [cp.sum(cp.abs(Y)) <= r1, cp.normNuc(Y) <= r2]).solve(
            solver="SCS", eps=1e-8)
        np.testing.assert_allclose(results[k][0], Y.value, atol=1e-2 * np.abs(Y.value).max())


def test_trace_ball_of_an_affine_expression_resolves_bit_for_bit():
    """``TraceNormBall(X - X0)`` is compiled to a set on X (an affine preimage): its solves use the inner
    ball's per-solve warm start too. Answer: X0 + the projection of C - X0 (closed form)."""
    C = low_rank_plus_sparse(6)
    X0 = 0.1 * low_rank_plus_sparse(7)
    radius = 0.3 * nuclear_norm(C - X0)
    X = fm.Variable((D, D))
    ball = trace_ball(X - X0, radius)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [ball])
    options = dict(max_iter=600)  # plain FW steps here (the preimage declares no low-rank face): O(1/t)
    first = same_solve(prob, X, **options)
    assert ball.total_matvecs > 0
    assert_identical(first, same_solve(prob, X, **options))
    expected = X0 + ball.project(C - X0)
    assert np.linalg.norm(first[0] - expected) <= 1e-2 * np.linalg.norm(expected)


def test_solve_lmo_has_its_own_warm_start():
    """Each ``lmo_for_solve()`` starts from the set's fresh state: two of them, fed the same directions,
    give the same vertices bit for bit, whatever the set's direct calls did; every vertex against eigh."""
    rng = np.random.default_rng(8)
    ball = fm.TraceNormBall(fm.Variable((60, 60)), 2.0, dense_threshold=0)
    directions = []
    G = rng.standard_normal((60, 60))
    for _ in range(5):
        G = G + 0.2 * rng.standard_normal((60, 60))
        directions.append((G + G.T).ravel())
    first = ball.lmo_for_solve()
    vertices = [first(d) for d in directions]
    for d in directions[::-1]:
        ball.lmo_atom(d)
    second = ball.lmo_for_solve()
    for d, vertex in zip(directions, vertices):
        again = second(d)
        assert np.array_equal(again.u, vertex.u) and again.scale == vertex.scale
        top = np.abs(np.linalg.eigvalsh(d.reshape(60, 60))).max()
        assert vertex.dot(d) == pytest.approx(-2.0 * top, rel=1e-9)
    # min_linear (the compiler's bounds) starts cold too: the first vertex's value, bit for bit
    assert ball.min_linear(directions[0]) == vertices[0].dot(directions[0])
