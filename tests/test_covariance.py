"""The sparse + low-rank covariance problem of the paper's Sec. 5 (eq.
constrained_sparse_low_rank) at small d: fwmodel matches CVXPY + SCS on the
full and the masked variant, the baseline GFB converges to the same point,
and the pieces that make the problem fast at large d (symmetric L1 vertices,
the warm-started Lanczos LMO without d x d temporaries, the projections used
by the baseline, the masked objective) behave as documented."""
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import fwmodel as fm
from fwmodel.datasets import sparse_low_rank_covariance
from fwmodel.experiments import (build_problem, certified_reference, dual_lower_bound, estimate_error, f1_score,
                                 feasible_point, markdown_table, reference_solution, run_fwmodel, run_gfb, summarize,
                                 support_scores, time_to_target)
from fwmodel.sets.trace_norm import lanczos_extreme

try:  # the closed form of the L1 ∩ box projection; tests/ may or may not be a package
    from .test_problem import project_l1_box
except ImportError:
    from test_problem import project_l1_box

cvxpy = pytest.importorskip("cvxpy")


def cvxpy_solution(data):
    X = cvxpy.Variable((data.d, data.d))
    residual = X - data.sigma_hat
    if data.mask is not None:
        residual = cvxpy.multiply(data.mask, residual)
    prob = cvxpy.Problem(cvxpy.Minimize(cvxpy.sum_squares(residual)),
                         [cvxpy.sum(cvxpy.abs(X)) <= data.radius_l1, cvxpy.normNuc(X) <= data.radius_trace])
    prob.solve(solver="SCS", eps=1e-8, max_iters=100000)
    return np.asarray(X.value), prob.value


# ------------------------------------------------------------ end to end
@pytest.mark.parametrize("observed", [1.0, 0.2], ids=["full", "masked"])
def test_fwmodel_matches_cvxpy(observed):
    data = sparse_low_rank_covariance(30, threshold=0.9, observed=observed, seed=1)
    S_cvx, f_cvx = cvxpy_solution(data)
    prob, X = build_problem(data)
    value = prob.solve(max_iter=4000)
    assert abs(value - f_cvx) <= 5e-3 * abs(f_cvx)
    assert prob.value == pytest.approx(data.loss(X.value), rel=1e-9)
    assert prob.stats.feasibility_rel <= 1e-3
    # the L1 copy is symmetric (symmetric vertices), so the estimate is too
    np.testing.assert_allclose(X.value, X.value.T, atol=1e-12)


def test_gfb_matches_cvxpy():
    data = sparse_low_rank_covariance(30, threshold=0.9, observed=0.2, seed=1)
    S_cvx, f_cvx = cvxpy_solution(data)
    S, f, its = reference_solution(data, max_iter=3000, tol=1e-9)
    assert f == pytest.approx(f_cvx, rel=1e-4)
    assert np.linalg.norm(S - S_cvx) <= 1e-2 * np.linalg.norm(S_cvx)


def test_trajectories_and_summary():
    data = sparse_low_rank_covariance(40, threshold=0.8, seed=2)
    S_ref, f_star, _ = reference_solution(data, max_iter=2000, tol=1e-9)
    f0 = data.loss(np.zeros((40, 40)))
    fw = run_fwmodel(data, time_limit=0.5, reference=S_ref)
    # an iteration budget, not a time budget: the check must not depend on machine load
    gfb = run_gfb(data, time_limit=60.0, max_iter=300, reference=S_ref)
    for traj in (fw, gfb):
        t, f, infeas = traj.arrays()
        assert len(t) == len(f) == len(infeas) > 2
        assert np.all(np.diff(t) >= 0)
        assert traj.checkpoints and traj.checkpoints[-1]["recall"] >= 0
        assert traj.final.shape == (40, 40)
    # GFB's final point is the reference's: it reaches 1e-2 almost at once
    assert not np.isnan(time_to_target(gfb, f_star, f0, 1e-2))
    rows = summarize([fw, gfb], f_star, f0, support_times=(0.1,))
    assert [r["method"] for r in rows] == ["fwmodel", "GFB"]
    text = markdown_table(rows, ["method", "iterations", "t(0.01)", "support@0.1s"])
    assert text.count("\n") == 3 and "fwmodel" in text


def test_fwmodel_trajectory_ends_at_the_returned_point():
    """A solve that stops "optimal" returns an iterate its callback never saw: the trajectory (and the
    suboptimality and infeasibility the demo reports) must end at that point, not at the one before it.
    Checked against the loss of the returned matrix and the copies' disagreement computed here."""
    data = sparse_low_rank_covariance(20, threshold=0.8, seed=2)
    S_ref, f_star, _ = reference_solution(data, max_iter=2000, tol=1e-9)
    fw = run_fwmodel(data, time_limit=60.0, reference=S_ref)
    assert fw.info["status"] == "optimal"
    assert len(fw.time) == fw.info["iterations"] + 1  # x_0, ..., x_T: the returned one included
    assert fw.objective[-1] == pytest.approx(data.loss(fw.final), rel=1e-12)
    last = fw.checkpoints[-1]
    assert last["time"] == fw.time[-1] and last["objective"] == fw.objective[-1]
    assert last["error"] == pytest.approx(estimate_error(fw.final, data.sigma), rel=1e-12)
    # the table's time per iteration: the time of the last point over the iterations taken (T steps
    # lead from x_0 to x_T), not over the T + 1 points recorded
    row = summarize([fw], f_star, data.loss(np.zeros((20, 20))))[0]
    assert row["iterations"] == fw.info["iterations"]
    assert row["per_iteration"] == pytest.approx(fw.time[-1] / fw.info["iterations"], rel=1e-12)
    # the same problem solved directly: its copies' disagreement ||x_l1 - x_trace|| over ||S_ref|| is
    # the trajectory's last infeasibility (the solve is deterministic)
    prob, _ = build_problem(data)
    prob.solve()
    l1, trace = prob.constraints
    apart = np.linalg.norm(prob.point_in(l1) - prob.point_in(trace)) / np.linalg.norm(S_ref)
    assert fw.infeasibility[-1] == pytest.approx(apart, rel=1e-6)


def test_support_scores():
    support = np.zeros((4, 4), bool)
    support[0, 0] = support[1, 2] = support[2, 1] = True
    S = np.zeros((4, 4))
    S[0, 0], S[1, 2], S[3, 3] = 1.0, 0.5, 0.02
    S[2, 1] = 0.005  # below the paper's threshold 1e-2
    recall, precision, size = support_scores(S, support)
    assert (recall, precision, size) == (2 / 3, 2 / 3, 3)


def test_masked_objective_value_and_gradient():
    d = 50
    data = sparse_low_rank_covariance(d, observed=0.3, seed=0)
    prob, X = build_problem(data)
    compiled = prob.compile()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(compiled.n)
    f, g = compiled.objective.value_and_grad(x)
    S = compiled.variable_values(x)[X]
    R = data.mask * (S - data.sigma_hat)
    assert f == pytest.approx(np.sum(R ** 2), rel=1e-12)
    # two copies of X: each gets half the gradient 2 mask * (S - Sigma_hat)
    np.testing.assert_allclose(g[:d * d], (data.mask * R).ravel(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g[d * d:], (data.mask * R).ravel(), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------- L1 ball vertices
def test_l1_symmetric_vertex_on_symmetric_direction():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 7))
    D = A + A.T
    D[1, 4] = D[4, 1] = 50.0  # the largest entry, off the diagonal
    S = fm.L1Ball(fm.Variable((7, 7)), radius=2.0)
    s = S.lmo(D)
    np.testing.assert_array_equal(s, s.T)
    assert np.count_nonzero(s) == 2 and np.abs(s).sum() == pytest.approx(2.0)
    assert np.vdot(D, s) == pytest.approx(-2.0 * np.abs(D).max())
    atom = S.lmo_atom(D.ravel())
    assert len(atom.indices) == 2
    # a diagonal maximum gives the one-entry vertex
    D2 = D.copy()
    D2[3, 3] = -100.0
    s2 = S.lmo(D2)
    assert s2[3, 3] == 2.0 and np.count_nonzero(s2) == 1
    # symmetric=False keeps the one-entry vertex; same value
    s3 = fm.L1Ball(fm.Variable((7, 7)), radius=2.0, symmetric=False).lmo(D)
    assert np.count_nonzero(s3) == 1 and np.vdot(D, s3) == pytest.approx(np.vdot(D, s))


def test_l1_asymmetric_direction():
    rng = np.random.default_rng(1)
    D = rng.standard_normal((9, 9))
    # default: the plain L1 ball (an asymmetric maximum gives the one-entry vertex)
    s = fm.L1Ball(fm.Variable((9, 9)), radius=1.5).lmo(D)
    assert np.count_nonzero(s) == 1 and np.vdot(D, s) == pytest.approx(-1.5 * np.abs(D).max())
    # symmetric=True: the symmetric matrices of the ball; brute force over (E_ij + E_ji) / 2
    B = fm.L1Ball(fm.Variable((9, 9)), radius=1.5, symmetric=True)
    s = B.lmo(D)
    np.testing.assert_array_equal(s, s.T)
    sym = 0.5 * (D + D.T)
    assert np.vdot(D, s) == pytest.approx(-1.5 * np.abs(sym).max())
    assert B.contains(s) and not B.contains(np.triu(np.ones((9, 9))) * 0.01)
    with pytest.raises(fm.ModelError, match="square"):
        fm.L1Ball(fm.Variable((3, 4)), symmetric=True)


def test_l1_argmax_large_matches_numpy():
    from fwmodel.sets.l1 import argmax_abs

    rng = np.random.default_rng(2)
    d = rng.standard_normal(3 * (1 << 17) + 11)
    assert argmax_abs(d) == int(np.argmax(np.abs(d)))
    d[-7] = -50.0
    assert argmax_abs(d) == d.size - 7
    d[5] = -50.0
    d[-1] = 50.0  # tie: the first one, as numpy
    assert argmax_abs(d) == 5


# ------------------------------------------------------------ projections
def test_l1_projection():
    rng = np.random.default_rng(3)
    S = fm.L1Ball(fm.Variable((12, 12)), radius=3.0)
    for _ in range(5):
        x = 2 * rng.standard_normal((12, 12))
        p = S.project(x)
        assert np.abs(p).sum() == pytest.approx(3.0)
        # optimality: <x - p, v - p> <= 0 at every vertex v
        for k in range(144):
            for sign in (1, -1):
                v = np.zeros(144)
                v[k] = sign * 3.0
                assert np.vdot(x.ravel() - p.ravel(), v - p.ravel()) <= 1e-9
    small = np.full((12, 12), 1e-3)
    np.testing.assert_array_equal(S.project(small), small)


@pytest.mark.parametrize("kind", ["gaussian", "heavy tail", "ties", "sparse signal"])
@pytest.mark.parametrize("fraction", [1e-4, 0.05, 0.6, 0.999])
def test_l1_projection_level_on_large_inputs_matches_sorting(kind, fraction):
    """The sampled start of the soft-threshold search (inputs above 32,768 entries) against the sort-based closed form."""
    rng = np.random.default_rng(7)
    n = 50_000
    a = {"gaussian": lambda: np.abs(rng.standard_normal(n)),
         "heavy tail": lambda: np.abs(rng.standard_cauchy(n)),
         "ties": lambda: np.ones(n),
         "sparse signal": lambda: np.where(rng.random(n) < 1e-3, 10.0, 1e-3 * rng.random(n))}[kind]()
    radius = fraction * float(a.sum())
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - radius
    rho = np.flatnonzero(u - css / np.arange(1, n + 1) > 0)[-1]
    expected = np.sign(a) * np.maximum(a - css[rho] / (rho + 1), 0)
    p = fm.L1Ball(fm.Variable(n), radius=radius).project(a)
    np.testing.assert_allclose(p, expected, rtol=1e-9, atol=1e-9 * a.max())
    assert np.abs(p).sum() == pytest.approx(radius, rel=1e-9)


@pytest.mark.parametrize("kind", ["gaussian", "ties", "sparse signal", "inside"])
@pytest.mark.parametrize("n", [5_000, 300_000])
def test_l1_projection_in_place_matches_sorting(kind, n):
    """project_flat(x, out=x) (chunked, no |x| temporary; 300,000 entries span several chunks)
    against the sort-based closed form, signs included; the input array receives the result."""
    rng = np.random.default_rng(11)
    signs = rng.choice([-1.0, 1.0], n)
    a = {"gaussian": lambda: np.abs(rng.standard_normal(n)),
         "ties": lambda: np.ones(n),
         "sparse signal": lambda: np.where(rng.random(n) < 1e-3, 10.0, 1e-3 * rng.random(n)),
         "inside": lambda: np.full(n, 1e-9)}[kind]()
    radius = 0.3 * float(a.sum()) if kind != "inside" else 1.0
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - radius
    above = np.flatnonzero(u - css / np.arange(1, n + 1) > 0)
    level = css[above[-1]] / (above[-1] + 1) if kind != "inside" else 0.0
    expected = signs * np.maximum(a - level, 0)
    x = signs * a
    ball = fm.L1Ball(fm.Variable(n), radius=radius)
    out = ball.project_flat(x, out=x)
    assert out is x
    np.testing.assert_allclose(x, expected, rtol=1e-9, atol=1e-9 * a.max())
    into = np.empty(n)
    np.testing.assert_array_equal(ball.project_flat(signs * a, out=into), x)  # into another array: the same numbers


def _sorted_l1_projection(x, radius):
    """The sort-based closed form (Duchi et al. 2008) of the projection onto the L1 ball."""
    a = np.abs(x)
    if a.sum() <= radius:
        return x.copy()
    if radius == 0:
        return np.zeros_like(x)
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - radius
    rho = np.flatnonzero(u - css / np.arange(1, a.size + 1) > 0)[-1]
    return np.sign(x) * np.maximum(a - css[rho] / (rho + 1), 0.0)


@pytest.mark.parametrize("budget", [0, 1000, None])
@pytest.mark.parametrize("kind", ["gaussian", "ties at the level", "zeros", "inside", "radius 0", "one spike"])
def test_l1_projection_in_place_with_bounded_scratch(monkeypatch, kind, budget):
    """The chunked search's Michelot steps over the whole point (the gathered set bounded by
    ``_gather_budget``: 0 never gathers, None the default) against the sort-based closed form."""
    from fwmodel.sets import l1 as l1_module

    if budget is not None:
        monkeypatch.setattr(l1_module, "_gather_budget", lambda n: budget)
    rng = np.random.default_rng(23)
    n = 200_000
    radius = 0.2 * n
    if kind == "gaussian":
        x = rng.standard_normal(n)
    elif kind == "ties at the level":  # many entries exactly at the level (2.0 - 1.0) and above it
        x = rng.choice([1.0, 2.0, -2.0, 3.0], n)
        radius = float(np.abs(x).sum()) - 1.0 * np.count_nonzero(np.abs(x) > 1.0)  # level exactly 1
    elif kind == "zeros":  # most entries 0, a few of each sign
        x = np.where(rng.random(n) < 0.02, rng.standard_normal(n), 0.0)
        radius = 0.5 * float(np.abs(x).sum())
    elif kind == "inside":
        x = rng.standard_normal(n)
        radius = float(np.abs(x).sum()) * (1 + 1e-12)
    elif kind == "radius 0":
        x, radius = rng.standard_normal(n), 0.0
    else:  # the whole radius on one entry: the level is just below the spike
        x = 1e-3 * rng.standard_normal(n)
        x[n // 2] = -50.0
        radius = 10.0
    expected = _sorted_l1_projection(x, radius)
    ball = fm.L1Ball(fm.Variable(n), radius=radius)
    y = x.copy()
    assert ball.project_flat(y, out=y) is y
    np.testing.assert_allclose(y, expected, rtol=1e-9, atol=1e-9 * np.abs(x).max())
    assert np.abs(y).sum() <= radius * (1 + 1e-9) + 1e-12
    np.testing.assert_allclose(ball.project(x), expected, rtol=1e-9, atol=1e-9 * np.abs(x).max())


@pytest.mark.parametrize("hint", ["level", "below", "far below", "above", "tiny budget", "growing capacity"])
@pytest.mark.parametrize("kind", ["gaussian", "ties at the level", "zeros", "sparse signal", "one spike"])
def test_l1_projection_warm_started_by_the_last_level(monkeypatch, kind, hint):
    """An L1 ball's in-place projection tries the last projection's level first (two passes over the
    point). Against the sort-based closed form, and bit for bit against the projection without a hint,
    whether the hint holds (gathers the entries above the level) or fails (more entries above the guess
    than the budget, or a guess above the level: the general path then runs)."""
    from fwmodel.sets import l1 as l1_module

    rng = np.random.default_rng(31)
    n = 200_000
    if kind == "gaussian":
        x, radius = rng.standard_normal(n), 0.002 * n
    elif kind == "ties at the level":
        x = rng.choice([1.0, 2.0, -2.0, 3.0, -0.5], n, p=[0.1, 0.002, 0.002, 0.001, 0.895])
        radius = float(np.sum(np.abs(x[np.abs(x) > 1.0]) - 1.0))  # the level is 1.0: a tenth of the entries on it
    elif kind == "zeros":
        x = np.where(rng.random(n) < 0.02, rng.standard_normal(n), 0.0)
        radius = 0.05 * float(np.abs(x).sum())
    elif kind == "sparse signal":
        x = np.where(rng.random(n) < 1e-3, -10.0, 1e-3 * rng.standard_normal(n))
        radius = 0.3 * float(np.abs(x).sum())
    else:
        x = 1e-3 * rng.standard_normal(n)
        x[n // 3] = -50.0
        radius = 10.0
    expected = _sorted_l1_projection(x, radius)
    plain = fm.L1Ball(fm.Variable(n), radius=radius)
    reference = x.copy()
    plain.project_flat(reference, out=reference)
    level = plain._level_hint
    assert level is not None and level > 0
    ball = fm.L1Ball(fm.Variable(n), radius=radius)
    ball._level_hint = {"level": level, "below": 0.9 * level, "far below": 1e-6 * level, "above": 3.0 * level,
                        "tiny budget": level, "growing capacity": level}[hint]
    if hint == "tiny budget":
        monkeypatch.setattr(l1_module, "_gather_budget", lambda n: 0)
    if hint == "growing capacity":  # the gathered arrays start at 16 entries and double as needed
        monkeypatch.setattr(l1_module, "_HINT_CAPACITY", 16)
    calls = []
    original = l1_module._project_from_hint
    monkeypatch.setattr(l1_module, "_project_from_hint", lambda *a: calls.append(original(*a)) or calls[-1])
    y = x.copy()
    assert ball.project_flat(y, out=y) is y
    assert len(calls) == 1
    if hint in ("level", "below", "growing capacity"):
        assert calls[0] is not None  # the warm start held: two passes
    elif hint in ("above", "tiny budget"):
        assert calls[0] is None  # it failed, x untouched, and the general path projected
    np.testing.assert_allclose(y, expected, rtol=1e-9, atol=1e-9 * np.abs(x).max())
    assert y.tobytes() == reference.tobytes()  # the same numbers, signs of zeros included
    assert ball._level_hint == level


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_l1_projection_warm_start_keeps_a_non_finite_entry(bad):
    """A NaN or infinite entry in the point: the warm-started projection gives the numbers of the
    projection without a hint, bit for bit, and a NaN stays in the result (the warm start must not
    write a 0 over it, which would hide a diverging iterate)."""
    rng = np.random.default_rng(8)
    n = 100_000
    x = rng.standard_normal(n)
    x[77] = bad
    radius = 0.002 * n
    plain = fm.L1Ball(fm.Variable(n), radius=radius)
    reference = x.copy()
    with np.errstate(invalid="ignore"):
        plain.project_flat(reference, out=reference)
    warm = fm.L1Ball(fm.Variable(n), radius=radius)
    z = rng.standard_normal(n)
    warm.project_flat(z, out=z)  # a finite point first: its level is the hint
    assert warm._level_hint is not None
    y = x.copy()
    with np.errstate(invalid="ignore"):
        warm.project_flat(y, out=y)
    assert np.isnan(y).any()
    assert y.tobytes() == reference.tobytes()


def test_l1_level_hint_kept_on_a_shared_set_never_changes_a_solve(monkeypatch):
    """The L1 ball keeps its last projection level (``_level_hint``) on the set object, across solves,
    Parameters and problems. Projection steps on an L1 + box model at n = 40,000 (the warm start's
    size): a Parameter re-solve (the hint left by the other data) gives, bit for bit, the iterates of a
    fresh problem; two problems sharing the same set objects, solved at once in two threads, give
    those of their fresh sequential solves; every answer against the closed form."""
    import threading

    from fwmodel.sets import l1 as l1_module

    warm_starts = []
    original = l1_module._project_from_hint
    monkeypatch.setattr(l1_module, "_project_from_hint", lambda *a: warm_starts.append(original(*a)) or warm_starts[-1])
    n, radius, bound = 40_000, 2000.0, 0.8
    rng = np.random.default_rng(2)
    targets = [rng.standard_normal(n), 1.5 * rng.standard_normal(n)]
    options = dict(max_iter=300, tol=1e-9, feas_tol=1e-9, projection=True)

    def fresh(target):
        x = fm.Variable(n)
        l1 = fm.L1Ball(x, radius)
        # the box on the slice x[:]: two copies, the L1 ball's own (on x the two sets merge into a BoxedL1Ball)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), [l1, fm.Box(x[:], -bound, bound)])
        prob.solve(**options)
        return prob.point_in(l1), list(prob.history["objective"])

    references = [fresh(target) for target in targets]
    # the warm start held (a guess may fail, 1 of 106 here: the general path projects then, same numbers)
    assert sum(tau is not None for tau in warm_starts) > 20
    for (point, _), target in zip(references, targets):
        expected = project_l1_box(target, radius, bound)
        np.testing.assert_allclose(point, expected, atol=1e-2 * np.linalg.norm(expected) / np.sqrt(n))
        assert np.linalg.norm(point - expected) <= 1e-4 * np.linalg.norm(expected)

    # a Parameter re-solve: the hint is the other target's level
    x = fm.Variable(n)
    c = fm.Parameter(n, value=targets[0])
    l1 = fm.L1Ball(x, radius)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [l1, fm.Box(x[:], -bound, bound)])
    prob.solve(**options)
    c.value = targets[1]
    prob.solve(**options)
    assert prob.point_in(l1).tobytes() == references[1][0].tobytes()
    assert list(prob.history["objective"]) == references[1][1]

    # the same set objects in two problems, solved at once in two threads
    x = fm.Variable(n)
    shared = [fm.L1Ball(x, radius), fm.Box(x[:], -bound, bound)]
    problems = [fm.Problem(fm.Minimize(fm.sum_squares(x - target)), shared) for target in targets]
    errors = []

    def solve(prob):
        try:
            prob.solve(**options)
        except Exception as error:  # reported below: an exception in a thread would pass unseen
            errors.append(error)

    threads = [threading.Thread(target=solve, args=(prob,)) for prob in problems]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for prob, (point, history) in zip(problems, references):
        assert prob.point_in(shared[0]).tobytes() == point.tobytes()
        assert list(prob.history["objective"]) == history


def test_trace_projection_matches_cvxpy():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((10, 10))
    X0 = A + A.T
    for kwargs in (dict(), dict(symmetric=True)):
        S = fm.TraceNormBall(fm.Variable((10, 10)), radius=4.0, **kwargs)
        p = S.project(X0)
        Y = cvxpy.Variable((10, 10))
        cvxpy.Problem(cvxpy.Minimize(cvxpy.sum_squares(Y - X0)), [cvxpy.normNuc(Y) <= 4.0]).solve(solver="SCS", eps=1e-9)
        np.testing.assert_allclose(p, Y.value, atol=1e-4)
        assert np.linalg.svd(p, compute_uv=False).sum() == pytest.approx(4.0)
    P = fm.TraceNormBall(fm.Variable((10, 10)), radius=4.0, psd=True).project(X0)
    w = np.linalg.eigvalsh(P)
    assert w.min() >= -1e-10 and w.sum() == pytest.approx(4.0)


# ------------------------------------------------- the Lanczos trace LMO
def clustered(rng, n, top):
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = rng.uniform(-0.3, 0.3, n)
    w[:len(top)] = top
    return (Q * w) @ Q.T, w


def test_lanczos_on_a_cluster():
    rng = np.random.default_rng(5)
    A, w = clustered(rng, 300, [-1.1, -1.09, -1.08, 1.0])
    for which, expected in (("LM", -1.1), ("SA", -1.1), ("LA", 1.0)):
        theta, u, count, converged = lanczos_extreme(lambda v: A @ v, rng.standard_normal(300), which, tol=1e-10)
        assert converged and theta == pytest.approx(expected, rel=1e-9)
        assert np.linalg.norm(A @ u - theta * u) <= 1e-8
    # a loose tolerance stops early and still gives the eigenvalue to ~tol^2
    theta, u, count_loose, _ = lanczos_extreme(lambda v: A @ v, rng.standard_normal(300), "LM", tol=1e-2)
    assert count_loose < count and abs(theta + 1.1) <= 1e-3


def test_trace_lmo_warm_start_subspace():
    rng = np.random.default_rng(6)
    n = 400
    A, _ = clustered(rng, n, [3.0, 2.9, 2.8, 2.7])
    S = fm.TraceNormBall(fm.Variable((n, n)), radius=1.0, lmo_tol=1e-8)
    S.lmo_atom(A.ravel())
    # the next directions, as after FW steps: the top eigenvector changes while
    # the previous one stays an eigenvector (a start on it must not stop there)
    Q = np.linalg.eigh(A)[1][:, ::-1][:, :4]
    for k in range(1, 4):
        B = A + 0.5 * np.outer(Q[:, k], Q[:, k])
        atom = S.lmo_atom(B.ravel())
        assert abs(atom.u @ Q[:, k]) == pytest.approx(1.0, abs=1e-6)
        assert atom.scale == -1.0
    S.reset()
    assert S._warm.leading is None and S._warm.recent == []


def test_trace_lmo_has_no_dense_temporaries():
    n = 600
    rng = np.random.default_rng(7)
    A = rng.standard_normal((n, n))
    sym = A + A.T
    for D, kwargs in ((sym, {}), (A, dict(symmetric=True)), (A, {}), (A, dict(psd=True))):
        S = fm.TraceNormBall(fm.Variable((n, n)), radius=1.0, **kwargs)
        flat = np.ascontiguousarray(D).ravel()
        S.lmo_atom(flat)  # warm up
        tracemalloc.start()
        atom = S.lmo_atom(flat)
        x = np.zeros(n * n)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        atom.add_to(x, 0.5)
        _, peak_add = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak_add - before < 0.1 * 8 * n * n, kwargs
        np.testing.assert_allclose(x.reshape(n, n), 0.5 * atom.scale * np.outer(atom.u, atom.v), atol=1e-12)
        tracemalloc.start()
        S.lmo_atom(flat)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 0.25 * 8 * n * n, (kwargs, peak)
    L = fm.L1Ball(fm.Variable((n, n)), radius=1.0)
    tracemalloc.start()
    L.lmo_atom(sym.ravel())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.25 * 8 * n * n


def test_trace_lmo_symmetric_option():
    rng = np.random.default_rng(8)
    n = 120
    A = rng.standard_normal((n, n))
    S = fm.TraceNormBall(fm.Variable((n, n)), radius=2.0, symmetric=True, lmo_tol=1e-10)
    s = S.lmo(A)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    w = np.linalg.eigvalsh(0.5 * (A + A.T))
    assert np.vdot(A, s) == pytest.approx(-2.0 * np.abs(w).max(), rel=1e-8)
    assert S.contains(s) and not S.contains(np.triu(np.ones((n, n))) * 1e-3)
    with pytest.raises(fm.ModelError, match="square"):
        fm.TraceNormBall(fm.Variable((3, 4)), symmetric=True)


# ---------------------------------------------------------------- the demo
def test_demo_command(tmp_path):
    out = tmp_path / "demo.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    res = subprocess.run([sys.executable, "-m", "fwmodel", "demo", "--size", "40", "--seconds", "0.5",
                          "--output", str(out)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert "| fwmodel |" in res.stdout and "| GFB |" in res.stdout
    assert "fwmodel" in res.stdout and "iteration" in res.stdout
    pytest.importorskip("matplotlib")
    assert out.exists() and out.stat().st_size > 1000
    assert "Verdict: " in res.stdout and "certified" in res.stdout
    verdict = [line for line in res.stdout.splitlines() if line.startswith("Verdict: ")]
    assert len(verdict) == 1 and "first" in verdict[0]
    # the Fig. 2 race: GFB reaches 1.1x its own lowest error (the floor) by definition
    assert "statistical floor:" in res.stdout and "1.1x the statistical floor" in verdict[0]
    gfb_row = next(line for line in res.stdout.splitlines() if line.startswith("| GFB |"))
    assert gfb_row.split("|")[4].strip() not in ("", "-", "nan")


def test_demo_without_reference_writes_plot_to_figures_dir(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", FWMODEL_FIGURES_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "fwmodel", "demo", "--size", "20", "--seconds", "0.2",
                          "--no-reference"], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert "subopt" not in res.stdout and "Verdict: " in res.stdout
    pytest.importorskip("matplotlib")
    assert (tmp_path / "fwmodel_demo_d20.png").exists()


@pytest.mark.parametrize("argv, option, message", [
    (["--size", "0"], "--size", "at least 5"),
    (["--size", "4"], "--size", "at least 5"),
    (["--size", "ten"], "--size", "integer"),
    (["--size", "2.5"], "--size", "integer"),
    (["--seconds", "-1"], "--seconds", "must lie in"),
    (["--seconds", "0"], "--seconds", "must lie in"),
    (["--seconds", "nan"], "--seconds", "must lie in"),
    (["--seconds", "inf"], "--seconds", "must lie in"),
    (["--threshold", "1"], "--threshold", "must lie in"),
    (["--threshold", "-0.1"], "--threshold", "must lie in"),
    (["--observed", "0"], "--observed", "must lie in"),
    (["--observed", "1.5"], "--observed", "must lie in"),
    (["--reference-gap", "0"], "--reference-gap", "must lie in"),
    (["--seed", "-3"], "--seed", "at least 0"),
    (["--output", "no/such/folder/plot.png"], "--output", "does not exist"),
])
def test_demo_rejects_bad_arguments(argv, option, message, capsys):
    from fwmodel.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["demo", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert option in err and message in err, err
    assert "Traceback" not in err


def test_demo_verdict_names_no_winner_between_equal_checkpoint_times():
    """Two methods whose first checkpoint within the target is the same one are reported together,
    not one of them "first" by the sort order of their names; a strictly earlier one still wins."""
    from fwmodel.__main__ import verdict

    def rows(fw, gfb):
        return [dict(method="fwmodel", **{"t(error)": fw, "t(f1)": fw}), dict(method="GFB", **{"t(error)": gfb,
                                                                                             "t(f1)": gfb})]

    tie = verdict(rows(0.02, 0.02), 0.5, 0.3, with_reference=False)
    assert "GFB and fwmodel reached estimate error <= 0.5 first, at the same checkpoint (0.02 s)" in tie
    win = verdict(rows(0.03, 0.02), 0.5, 0.3, with_reference=False)
    assert "GFB reached estimate error <= 0.5 first (0.02 s; fwmodel 0.03 s)" in win


def test_demo_help_describes_the_run(capsys):
    from fwmodel.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["demo", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for words in ("--size", "--seconds", "--no-reference", "Run time", "certified", "F1"):
        assert words in text


# ------------------------------------------------- the certified reference
@pytest.mark.parametrize("observed", [1.0, 0.2], ids=["full", "masked"])
def test_certified_reference_brackets_clarabel(observed):
    data = sparse_low_rank_covariance(30, threshold=0.9, observed=observed, seed=1)
    X = cvxpy.Variable((30, 30))
    residual = X - data.sigma_hat
    if data.mask is not None:
        residual = cvxpy.multiply(data.mask, residual)
    prob = cvxpy.Problem(cvxpy.Minimize(cvxpy.sum_squares(residual)),
                         [cvxpy.sum(cvxpy.abs(X)) <= data.radius_l1, cvxpy.normNuc(X) <= data.radius_trace])
    prob.solve(solver="CLARABEL")
    f_cvx = prob.value
    ref = certified_reference(data, gap_tol=1e-6)
    assert ref.certified and ref.rel_gap <= 1e-6
    slack = 1e-7 * f_cvx  # Clarabel's own accuracy
    assert ref.f_lower - slack <= f_cvx <= ref.f_upper + slack
    # the reference point is feasible, and f_upper is its objective
    assert np.abs(ref.S).sum() <= data.radius_l1 * (1 + 1e-12)
    assert np.abs(np.linalg.eigvalsh(ref.S)).sum() <= data.radius_trace * (1 + 1e-12)
    assert ref.f_upper == pytest.approx(data.loss(ref.S), rel=1e-12)
    if observed == 1.0:  # f is 2-strongly convex: ||S - S*|| <= sqrt(gap)
        assert np.linalg.norm(ref.S - X.value) <= ref.distance_bound * np.linalg.norm(ref.S) + 1e-4


@pytest.mark.parametrize("observed", [1.0, 0.3], ids=["full", "masked"])
def test_dual_lower_bound_is_a_lower_bound_for_any_multiplier(observed):
    data = sparse_low_rank_covariance(20, threshold=0.8, observed=observed, seed=3)
    S_cvx, f_cvx = cvxpy_solution(data)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.1, 1.0, 10.0):
        Y = scale * rng.standard_normal((20, 20))
        assert dual_lower_bound(data, Y) <= f_cvx * (1 + 1e-6)
    # at an optimal multiplier the bound is tight: GFB's reference reaches it
    ref = certified_reference(data, gap_tol=1e-5)
    assert ref.f_lower == pytest.approx(f_cvx, rel=1e-4)


def test_feasible_point_scales_into_both_balls():
    data = sparse_low_rank_covariance(15, seed=4)
    point, value = feasible_point(data, 10 * data.sigma_hat)
    assert np.abs(point).sum() <= data.radius_l1 * (1 + 1e-12)
    assert np.abs(np.linalg.eigvalsh(point)).sum() <= data.radius_trace * (1 + 1e-12)
    assert value == pytest.approx(data.loss(point))
    inside = 0.01 * data.sigma  # already in both balls: unchanged
    np.testing.assert_array_equal(feasible_point(data, inside)[0], inside)


def test_certified_reference_rejects_bad_options():
    data = sparse_low_rank_covariance(10, seed=0)
    with pytest.raises(ValueError, match="gap_tol"):
        certified_reference(data, gap_tol=0)
    with pytest.raises(ValueError, match="gap_tol"):
        certified_reference(data, gap_tol="1e-4")
    with pytest.raises(ValueError, match="check_every"):
        certified_reference(data, check_every=0)
    with pytest.raises(ValueError, match="max_iter"):
        certified_reference(data, max_iter=0)


def test_estimate_error_and_f1():
    sigma = np.diag([1.0, 2.0, 0.0])
    assert estimate_error(sigma, sigma) == 0.0
    assert estimate_error(np.zeros((3, 3)), sigma) == pytest.approx(1.0)
    assert f1_score(1.0, 0.5) == pytest.approx(2 / 3)
    assert f1_score(0.0, 0.0) == 0.0


def test_demo_ctrl_c_exits_quietly(monkeypatch, capsys):
    import fwmodel.__main__ as cli

    def interrupted(args, stream=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "demo", interrupted)
    assert cli.main(["demo", "--size", "10", "--output", ""]) == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize("rank_k_flag, expected", [("auto", False), ("off", False), ("on", True)])
def test_demo_fw_only_run_is_the_papers_rank_one_algorithm(monkeypatch, rank_k_flag, expected):
    """--fw-only races projection=False with rank-one FW steps (rank_k=False) unless --rank-k is given."""
    import io

    import fwmodel.experiments as experiments
    from fwmodel.__main__ import _race, build_parser

    calls = []
    monkeypatch.setattr(experiments, "run_fwmodel", lambda data, **kw: calls.append(kw) or kw.get("name", "fwmodel"))
    monkeypatch.setattr(experiments, "run_gfb", lambda data, **kw: "GFB")
    monkeypatch.setattr("fwmodel.__main__._steps", lambda traj: "")
    args = build_parser().parse_args(["demo", "--size", "20", "--fw-only", "--rank-k", rank_k_flag])
    _race(None, args, None, io.StringIO())
    fw_only = [kw for kw in calls if kw.get("name") == experiments.FW_ONLY]
    assert len(fw_only) == 1 and fw_only[0]["projection"] is False and fw_only[0]["rank_k"] is expected
