"""BoxedL1Ball: an L1 ball and a box on one variable, merged by the compiler into one set.

The LMO against HiGHS's LP and the projection against Clarabel on random
instances (boxes around 0, boxes off 0, radii that bind or not); the merge
(when it happens and when not), Parameters, warm starts, Maximize, empty
data and the L1 bound's dual against CVXPY + Clarabel.
"""
import numpy as np
import pytest
from scipy.optimize import linprog

import fwmodel as fm
from fwmodel.sets.boxed_l1 import BoxedL1Ball

cp = pytest.importorskip("cvxpy")


def kinds(prob):
    return [type(b.set).__name__ for b in prob.compile().blocks]


def _instance(rng, around_zero=True):
    n = int(rng.integers(2, 12))
    if around_zero:
        lower = -rng.random(n) * rng.choice([0.0, 0.5, 2.0], n)  # some entries nonnegative (lower 0)
        upper = rng.random(n) * rng.choice([0.0, 0.5, 2.0], n)
    else:  # some intervals off 0, on either side
        centre = rng.standard_normal(n) * 0.3
        width = rng.random(n) * 0.6
        lower, upper = centre - width / 2, centre + width / 2
    nearest = np.abs(np.clip(0.0, lower, upper)).sum()
    radius = float(nearest + rng.random() * rng.choice([0.1, 1.0, 10.0]))
    x = fm.Variable(n)
    return BoxedL1Ball(fm.L1Ball(x, radius), fm.Box(x, lower, upper)), lower, upper, radius


def _lp_minimum(d, lower, upper, radius):
    """min <d, s> over ||s||_1 <= r, lower <= s <= upper by HiGHS: variables (s, t), -t <= s <= t, sum t <= r."""
    n = d.size
    eye = np.eye(n)
    A = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, n)), np.ones((1, n))]])
    b = np.concatenate([np.zeros(2 * n), [radius]])
    bounds = list(zip(lower, upper)) + [(0, None)] * n
    res = linprog(np.concatenate([d, np.zeros(n)]), A_ub=A, b_ub=b, bounds=bounds, method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("around_zero", [True, False])
def test_lmo_is_the_linear_programs_minimizer(around_zero):
    rng = np.random.default_rng(0 if around_zero else 1)
    for _ in range(40):
        boxed, lower, upper, radius = _instance(rng, around_zero)
        d = rng.standard_normal(boxed.size)
        if rng.random() < 0.3:
            d[rng.random(boxed.size) < 0.4] = 0.0  # zero entries: none is moved
        vertex = boxed.lmo(d)
        assert boxed.contains(vertex)
        assert np.dot(d, vertex) == pytest.approx(_lp_minimum(d, lower, upper, radius), abs=1e-9)
        # a vertex: at most one entry strictly between its point nearest to 0 and its bound
        nearest = np.clip(0.0, lower, upper)
        partly = (np.abs(vertex - nearest) > 1e-12) & (vertex > lower + 1e-12) & (vertex < upper - 1e-12)
        assert partly.sum() <= 1


def test_lmo_is_the_l1_balls_where_the_box_is_loose_and_the_boxs_where_the_ball_is():
    rng = np.random.default_rng(2)
    x = fm.Variable(30)
    d = rng.standard_normal(30)
    loose_box = BoxedL1Ball(fm.L1Ball(x, 2.0), fm.Box(x, -5.0, 5.0))
    np.testing.assert_array_equal(loose_box.lmo(d), fm.L1Ball(x, 2.0).lmo(d))
    loose_ball = BoxedL1Ball(fm.L1Ball(x, 100.0), fm.Box(x, -1.0, 2.0))
    np.testing.assert_array_equal(loose_ball.lmo(d), fm.Box(x, -1.0, 2.0).lmo(d) * (d != 0))


@pytest.mark.parametrize("around_zero", [True, False])
def test_projection_is_the_nearest_point(around_zero):
    rng = np.random.default_rng(3 if around_zero else 4)
    for _ in range(40):
        boxed, lower, upper, radius = _instance(rng, around_zero)
        y = rng.standard_normal(boxed.size) * rng.choice([0.01, 1.0, 100.0])
        projected = boxed.project_flat(y)
        z = cp.Variable(boxed.size)
        qp = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [cp.norm1(z) <= radius, z >= lower, z <= upper])
        qp.solve(solver="CLARABEL")
        assert boxed.contains(projected)
        # no farther from y than Clarabel's point (accurate, and feasible, to its tolerance only)
        assert np.sum((projected - y) ** 2) <= np.sum((z.value - y) ** 2) + 1e-7 * max(1.0, np.sum(y ** 2))
        np.testing.assert_allclose(projected, z.value, atol=1e-4 * max(1.0, np.abs(y).max()))


def test_coordinate_bounds_are_attained_by_the_lmo():
    rng = np.random.default_rng(5)
    for around_zero in (True, False):
        boxed, _, _, _ = _instance(rng, around_zero)
        lower, upper = boxed.coordinate_bounds()
        for i in range(boxed.size):
            e = np.zeros(boxed.size)
            e[i] = 1.0
            assert boxed.lmo_atom(e).to_dense()[i] == pytest.approx(lower[i], abs=1e-12)
            assert boxed.lmo_atom(-e).to_dense()[i] == pytest.approx(upper[i], abs=1e-12)


def _regression(m=60, n=40, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, n))
    b = A @ (rng.standard_normal(n) * (rng.random(n) < 0.3)) + 0.1 * rng.standard_normal(m)
    return A, b


def test_explicit_sets_and_cvxpy_constraints_compile_to_one_block_and_match_clarabel():
    A, b = _regression()
    n = A.shape[1]
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 3.0, cp.abs(z) <= 0.4])
    ref.solve(solver="CLARABEL")

    x = fm.Variable(n)
    ball, box = fm.L1Ball(x, 3.0), fm.Box(x, -0.4, 0.4)
    explicit = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [ball, box])
    w, v, u = fm.Variable(n), fm.Variable(n), fm.Variable(n)
    written = [fm.Problem(fm.Minimize(fm.sum_squares(A @ w - b)), [fm.norm1(w) <= 3.0, w <= 0.4, w >= -0.4]),
               fm.Problem(fm.Minimize(fm.sum_squares(A @ v - b)), [fm.norm1(v) <= 3.0, fm.abs(v) <= 0.4]),
               fm.Problem(fm.Minimize(fm.sum_squares(A @ u - b)), [fm.norm1(u) <= 3.0, fm.norm_inf(u) <= 0.4])]
    for prob in [explicit] + written:
        compiled = prob.compile()
        assert [type(blk.set).__name__ for blk in compiled.blocks] == ["BoxedL1Ball"]
        assert compiled.M.shape[0] == 0
        prob.solve(tol=1e-8)
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert np.sum(np.abs(z.value) >= 0.4 - 1e-6) >= 1 and np.abs(z.value).sum() >= 3.0 - 1e-6  # both bind
    np.testing.assert_allclose(x.value, z.value, atol=1e-3)
    # either set given to the problem names the merged block's point
    np.testing.assert_array_equal(explicit.point_in(ball), explicit.point_in(box))


def test_a_nonnegative_l1_budget_is_one_set():
    """norm1(x) <= r with x >= 0 (or nonneg=True): the box [0, r] that the ball closes, merged with it."""
    A, b = _regression(seed=1)
    n = A.shape[1]
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 2.0, z >= 0])
    ref.solve(solver="CLARABEL")
    x, y = fm.Variable(n), fm.Variable(n, nonneg=True)
    for prob in (fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 2.0, x >= 0]),
                 fm.Problem(fm.Minimize(fm.sum_squares(A @ y - b)), [fm.norm1(y) <= 2.0])):
        assert kinds(prob) == ["BoxedL1Ball"]
        prob.solve(tol=1e-8)
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert x.value.min() >= 0.0 and y.value.min() >= 0.0


def test_logistic_regression_and_maximize_match_clarabel():
    rng = np.random.default_rng(6)
    m, n = 120, 30
    F = rng.standard_normal((m, n))
    labels = np.sign(F @ rng.standard_normal(n) + 0.5 * rng.standard_normal(m))
    w = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(labels, F @ w)))),
                      [fm.norm1(w) <= 2.0, fm.abs(w) <= 0.3])
    assert kinds(prob) == ["BoxedL1Ball"]
    prob.solve(tol=1e-8)
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-cp.multiply(labels, F @ z)))),
                     [cp.norm1(z) <= 2.0, cp.abs(z) <= 0.3])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)

    c = rng.standard_normal(n)
    x = fm.Variable(n)
    concave = fm.Problem(fm.Maximize(c @ x - fm.sum_squares(x)), [fm.L1Ball(x, 1.5), fm.Box(x, -0.2, 0.5)])
    assert kinds(concave) == ["BoxedL1Ball"]
    concave.solve(tol=1e-8)
    ref = cp.Problem(cp.Maximize(c @ z - cp.sum_squares(z)), [cp.norm1(z) <= 1.5, z >= -0.2, z <= 0.5])
    ref.solve(solver="CLARABEL")
    assert concave.status == "optimal"
    assert concave.value == pytest.approx(ref.value, rel=1e-6)
    linear = fm.Problem(fm.Maximize(c @ x), [fm.L1Ball(x, 1.5), fm.Box(x, -0.2, 0.5)])  # an LMO call
    linear.solve()
    ref = cp.Problem(cp.Maximize(c @ z), [cp.norm1(z) <= 1.5, z >= -0.2, z <= 0.5])
    ref.solve(solver="CLARABEL")
    assert linear.status == "optimal"
    assert linear.value == pytest.approx(ref.value, rel=1e-6)


def test_parameters_in_the_radius_and_the_bounds_are_reread_at_each_solve():
    A, b = _regression(seed=2)
    n = A.shape[1]
    radius, cap = fm.Parameter(nonneg=True, value=3.0), fm.Parameter(nonneg=True, value=0.4)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= radius, fm.abs(x) <= cap])
    assert kinds(prob) == ["BoxedL1Ball"]
    for r, c in ((3.0, 0.4), (1.0, 0.4), (1.0, 0.05), (6.0, 0.3), (0.0, 0.3)):
        radius.value, cap.value = r, c
        prob.solve(warm_start=True, tol=1e-8)
        z = cp.Variable(n)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= r, cp.abs(z) <= c])
        ref.solve(solver="CLARABEL")
        assert prob.status == "optimal", (r, c)
        assert prob.value == pytest.approx(ref.value, rel=1e-6, abs=1e-9), (r, c)
        assert np.abs(x.value).max() <= c + 1e-9 and np.abs(x.value).sum() <= r + 1e-9


def test_a_warm_start_after_new_data_matches_clarabel():
    A, b = _regression(seed=3)
    n = A.shape[1]
    target = fm.Parameter(b.size, value=b)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - target)), [fm.norm1(x) <= 2.5, fm.Box(x, -0.3, 0.5)])
    assert kinds(prob) == ["BoxedL1Ball"]
    prob.solve(tol=1e-8)
    rng = np.random.default_rng(0)
    for options in ({}, {"projection": False}):  # resumed by projection steps, and by vertex steps from a point
        moved = b + 0.1 * rng.standard_normal(b.size)
        target.value = moved
        prob.solve(warm_start=True, tol=1e-8, **options)
        z = cp.Variable(n)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - moved)), [cp.norm1(z) <= 2.5, z >= -0.3, z <= 0.5])
        ref.solve(solver="CLARABEL")
        assert prob.status == "optimal", options
        assert prob.value == pytest.approx(ref.value, rel=1e-6), options


def test_a_box_off_zero_is_merged_and_matches_clarabel():
    """x >= 0.1 on some entries: the set starts them from 0.1, the rest of the L1 budget above."""
    A, b = _regression(seed=4)
    n = A.shape[1]
    lower = np.where(np.arange(n) % 3 == 0, 0.1, -0.5)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 3.0, x >= lower, x <= 0.5])
    assert kinds(prob) == ["BoxedL1Ball"]
    prob.solve(tol=1e-8)
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 3.0, z >= lower, z <= 0.5])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-6)
    assert x.value.min() >= -0.5 - 1e-9 and np.all(x.value[lower > 0] >= 0.1 - 1e-9)


def test_sets_that_are_not_merged():
    x = fm.Variable(5, name="x")
    c = np.linspace(-1, 1, 5)
    objective = fm.Minimize(fm.sum_squares(x - c))
    # a box on a slice, two boxes, another set, a row on x: two copies tied by rows (FW-AL's machinery)
    assert kinds(fm.Problem(objective, [fm.L1Ball(x, 1.0), fm.Box(x[:], -0.3, 0.3)])) == ["L1Ball", "Box"]
    assert kinds(fm.Problem(objective, [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3), fm.Box(x, -1, 0.4)])) == \
        ["L1Ball", "Box", "Box"]
    # (an L2 ball that does not contain the L1 ball: one that does is dropped, lowering._without_nested_balls)
    assert kinds(fm.Problem(objective, [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3), fm.L2Ball(x, 0.9)])) == \
        ["L1Ball", "Box", "L2Ball"]
    assert "BoxedL1Ball" not in kinds(fm.Problem(objective, [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3),
                                                             fm.sum(x) == 0.2]))
    # a symmetric variable keeps the symmetric variants of its sets; so does a ball of symmetric matrices
    S, X = fm.Variable((3, 3), symmetric=True), fm.Variable((3, 3))
    assert "BoxedL1Ball" not in kinds(fm.Problem(fm.Minimize(fm.sum_squares(S)), [fm.L1Ball(S, 1.0),
                                                                                  fm.Box(S, -0.3, 0.3)]))
    assert "BoxedL1Ball" not in kinds(fm.Problem(fm.Minimize(fm.sum_squares(X)), [fm.L1Ball(X, 1.0, symmetric=True),
                                                                                  fm.Box(X, -0.3, 0.3)]))
    # an empty intersection (entries >= 0.5 cost 2.5 of a radius 1): the best point found, "infeasible"
    empty = fm.Problem(objective, [fm.L1Ball(x, 1.0), fm.Box(x, 0.5, 0.9)])
    assert kinds(empty) == ["L1Ball", "Box"]
    empty.solve(max_iter=2000)
    assert empty.status in (fm.INFEASIBLE, fm.MAX_ITER) and x.value is not None


def test_the_two_copies_and_the_merged_set_agree():
    """The same model with the box on the slice x[:] (two tied copies) and on x (one set), against Clarabel."""
    A, b = _regression(m=50, n=30, seed=5)
    z = cp.Variable(30)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 2.0, z >= -0.1, z <= 0.2])
    ref.solve(solver="CLARABEL")
    for on_slice in (True, False):
        x = fm.Variable(30)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                          [fm.L1Ball(x, 2.0), fm.Box(x[:] if on_slice else x, -0.1, 0.2)])
        assert kinds(prob) == (["L1Ball", "Box"] if on_slice else ["BoxedL1Ball"])
        prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=20000)
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, rel=1e-5)


def test_data_that_empty_the_set_end_the_solve_infeasible_with_the_reason():
    x = fm.Variable(4)
    floor = fm.Parameter(nonneg=True, value=0.1)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.norm1(x) <= 1.0, x >= floor, x <= 2.0])
    assert kinds(prob) == ["BoxedL1Ball"]
    prob.solve(tol=1e-8)
    assert prob.status == "optimal" and prob.value == pytest.approx(4 * 0.75 ** 2, rel=1e-6)
    floor.value = 0.3  # four entries of at least 0.3: an L1 norm of 1.2 > 1
    prob.solve()
    assert prob.status == fm.INFEASIBLE
    assert "L1 norm of 1.2" in prob.stats.message


def test_vertex_steps_reach_the_answer_too():
    A, b = _regression(m=40, n=25, seed=6)
    z = cp.Variable(25)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 2.0, cp.abs(z) <= 0.25])
    ref.solve(solver="CLARABEL")
    for step in ("fw", "pairwise", "auto"):
        x = fm.Variable(25)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 2.0, fm.abs(x) <= 0.25])
        assert kinds(prob) == ["BoxedL1Ball"]
        tol = 1e-4 if step == "fw" else 1e-7
        prob.solve(projection=False, step=step, tol=tol, max_iter=50000)
        assert prob.status == "optimal", step
        assert prob.value == pytest.approx(ref.value, rel=10 * tol), step
        if step == "auto":  # pairwise steps on this set (BoxedL1Ball.auto_active_set_step), not BPCG's FW steps;
            # the face step (engine/face_step.py) may finish on the settled face
            taken = {kind for kind, count in prob.stats.step_counts.items() if count}
            assert "pairwise" in taken and taken <= {"pairwise", "drop", "face"}, prob.stats.step_counts


@pytest.mark.parametrize("sense", ["min", "max"])
def test_duals_of_the_merged_constraints_match_clarabel(sense):
    """The merged set has no rows: norm1(x) <= r and the bounds get their multipliers from its KKT conditions."""
    A, b = _regression(m=40, n=12, seed=7)
    n = A.shape[1]
    lower = np.where(np.arange(n) % 2 == 0, -0.15, -0.3)

    def forms(lib, v):
        return [[lib.norm1(v) <= 1.0, v <= 0.2, v >= lower],
                [lib.norm1(v) <= 1.0, lib.abs(v) <= 0.2],
                [lib.norm1(v) <= 1.0, lib.norm_inf(v) <= 0.2],
                [lib.norm1(v) <= 0.5, v >= 0]]

    x, z = fm.Variable(n), cp.Variable(n)
    for form, (fw_constraints, cvx_constraints) in enumerate(zip(forms(fm, x), forms(cp, z))):
        if sense == "min":
            prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), fw_constraints)
            ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), cvx_constraints)
        else:
            prob = fm.Problem(fm.Maximize(-fm.sum_squares(A @ x - b)), fw_constraints)
            ref = cp.Problem(cp.Maximize(-cp.sum_squares(A @ z - b)), cvx_constraints)
        assert kinds(prob) == ["BoxedL1Ball"]
        prob.solve(tol=1e-9)
        ref.solve(solver="CLARABEL")
        assert prob.status == "optimal"
        tol = 1e-4 * max(1.0, abs(ref.value))
        mu = fw_constraints[0].dual_value
        assert cvx_constraints[0].dual_value > 1e-2  # the L1 bound binds
        assert mu == pytest.approx(cvx_constraints[0].dual_value, abs=tol)
        # and some bound too (else the box's multipliers are only zeros)
        assert any(np.max(np.atleast_1d(c.dual_value)) > 1e-2 for c in cvx_constraints[1:])
        # off 0 the bounds' multipliers are unique; at 0 on a bound 0 (x >= 0) they share the pull with the
        # L1 ball's subgradient s in [-1, 1]: any value >= 0 with |g_i - below_i| <= mu is one
        off = np.abs(z.value) > 1e-5
        for fw_c, cvx_c in zip(fw_constraints[1:], cvx_constraints[1:]):
            if np.ndim(cvx_c.dual_value) == 0:
                assert fw_c.dual_value == pytest.approx(cvx_c.dual_value, abs=tol)
                continue
            assert np.all(fw_c.dual_value >= 0)
            np.testing.assert_allclose(fw_c.dual_value[off], cvx_c.dual_value[off], atol=tol)
        g = 2 * A.T @ (A @ x.value - b)  # the gradient of the minimized objective (-f for Maximize(f))
        if form == 3:  # x >= 0: g + mu s - below = 0 with s in [-1, 1] at 0
            below = fw_constraints[1].dual_value
            assert (~off).sum() >= 1 and np.all(np.abs(g[~off] - below[~off]) <= mu + tol)


def test_the_l1_dual_obeys_the_kkt_signs_when_no_entry_is_free():
    """Every entry at a bound or at 0: mu is any value in the interval that the KKT conditions allow."""
    checked = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n, k = 8, 3
        c = rng.standard_normal(n) * 0.1
        c[:k] = 2.0 + rng.random(k)  # k entries pushed past their caps
        x = fm.Variable(n)
        ball = fm.norm1(x) <= 0.3 * k
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [ball, fm.abs(x) <= 0.3])
        assert kinds(prob) == ["BoxedL1Ball"]
        prob.solve(tol=1e-9)
        g = 2 * (x.value - c)
        capped, zero = np.abs(x.value) > 0.3 - 1e-7, np.abs(x.value) < 1e-7
        assert capped.sum() == k and zero.sum() == n - k
        checked += 1
        # at a cap |x_i| cannot grow: mu <= -g_i sign(x_i); at 0: mu >= |g_i|
        assert np.max(np.abs(g[zero])) - 1e-6 <= ball.dual_value <= np.min(-g[capped] * np.sign(x.value[capped])) + 1e-6
    assert checked == 6


@pytest.mark.parametrize("top", [8.0, 2.0 ** 30, 2.0 ** 45, 2.0 ** 51])
def test_projection_of_a_huge_point_is_exact(top):
    """A projected-gradient target x - g / L with a tiny L is huge: the level must be found at the result's
    scale (the plain breakpoint sums cancelled: [1e15, 1e15 + 0.3, ...] gave an L1 norm of 0.975, 1e16 gave 0).
    The closed forms: two top entries 0.5 apart under caps of 0.6 and radius 1 take 0.4 and 0.6; one
    dominant entry under a cap of 2 takes the whole radius."""
    x = fm.Variable(4)
    capped = BoxedL1Ball(fm.L1Ball(x, 1.0), fm.Box(x, -0.6, 0.6))
    np.testing.assert_allclose(capped.project_flat(np.array([top, top + 0.5, 0.5, -3.0])), [0.4, 0.6, 0, 0],
                               atol=1e-15)
    loose = BoxedL1Ball(fm.L1Ball(x, 1.0), fm.Box(x, -2.0, 2.0))
    for scale in (top, 1e17, 1e300):
        np.testing.assert_array_equal(loose.project_flat(np.array([scale, 1.0, 0.5, -3.0])), [1.0, 0, 0, 0])
    off_zero = BoxedL1Ball(fm.L1Ball(x, 1.0), fm.Box(x, 0.1, 2.0))  # floors 0.1: the top entry takes 0.7
    np.testing.assert_allclose(off_zero.project_flat(np.array([1e17, 1.0, -0.5, -3.0])), [0.7, 0.1, 0.1, 0.1],
                               atol=1e-15)
    assert np.all(np.isnan(loose.project_flat(np.array([np.nan, 1.0, 0.0, 0.0]))))


@pytest.mark.parametrize("weight", [1e-10, 1e-14])
def test_a_nearly_linear_objective_ends_in_the_set_at_clarabels_value(weight):
    """A tiny curvature makes every projection step's target huge (as for the capped simplex)."""
    rng = np.random.default_rng(1719)
    n = 10
    a, c = rng.standard_normal(n), rng.standard_normal(n)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(weight * fm.sum_squares(a @ x) + c @ x), [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3)])
    prob.solve()
    assert kinds(prob) == ["BoxedL1Ball"]
    z = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(weight * cp.square(a @ z) + c @ z), [cp.norm1(z) <= 1, cp.abs(z) <= 0.3])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert np.abs(x.value).sum() <= 1.0 + 1e-12 and np.abs(x.value).max() <= 0.3 + 1e-12
    assert abs(prob.value - ref.value) <= 1e-4 * max(1.0, abs(ref.value))
