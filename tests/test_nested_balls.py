"""A norm ball that contains another norm ball on the same variable is dropped by the compiler
(``lowering._without_nested_balls``): answers and dual values against CVXPY + Clarabel, and the iteration
count of a model where the redundant ball's copy slowed the solve."""
import itertools
import math

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

from _against_clarabel import assert_same_answer, solve_both  # noqa: E402

NORMS = {"l1": (lambda m, x: m.norm1(x)), "l2": (lambda m, x: m.norm(x, 2)), "linf": (lambda m, x: m.norm(x, "inf"))}


def _halfspace_model(m, with_l2):
    """Least squares in an L1 ball with a halfspace near its best vertex (a thin feasible sliver), and the
    L2 ball that ||x||_1 <= 1 makes redundant."""
    rng = np.random.default_rng(30)
    n = 10
    A, b, c0 = rng.standard_normal((8, n)), rng.standard_normal(8), rng.standard_normal(n)
    x = m.Variable(n)
    cons = [m.norm1(x) <= 1, c0 @ x >= np.abs(c0).max() - 1e-4] + ([m.norm(x, 2) <= 1] if with_l2 else [])
    return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), cons), [x], cons


def test_redundant_l2_ball_next_to_l1_ball_and_halfspace():
    # the same answer and multipliers as Clarabel (the L2 ball's is 0), at default options as fast as without
    # the redundant ball (with its copy: 9,566 iterations at default options, 639 without)
    assert_same_answer(lambda m: _halfspace_model(m, True))
    prob, _, _ = _halfspace_model(fm, True)
    prob.solve()
    bare, _, _ = _halfspace_model(fm, False)
    bare.solve()
    ref, _, _ = _halfspace_model(cp, True)
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL and abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
    assert prob.stats.iterations <= 1.2 * bare.stats.iterations + 20, (prob.stats.iterations, bare.stats.iterations)


ORDER = {"l1": 1, "l2": 2, "linf": np.inf}
DUAL = {"l1": "linf", "linf": "l1"}


def _vertices(kind, n):
    """The extreme points of the unit L1 ball (+-e_i) or Linf ball (sign vectors)."""
    if kind == "l1":
        return np.vstack([np.eye(n), -np.eye(n)])
    return np.array(list(itertools.product((-1.0, 1.0), repeat=n)))


def _containment_factor(inner, outer, n):
    """max ||x||_outer over the unit inner ball, by brute force: a convex function peaks at an extreme
    point (enumerated for L1 and Linf); over the L2 ball, max ||x||_q = max ||y||_2 over the unit ball of
    q's dual norm (Cauchy-Schwarz), whose extreme points are enumerated instead."""
    if inner != "l2":
        return max(np.linalg.norm(v, ORDER[outer]) for v in _vertices(inner, n))
    return max(np.linalg.norm(v, 2) for v in _vertices(DUAL[outer], n))


@pytest.mark.parametrize("inner,outer", [(a, b) for a, b in itertools.product(NORMS, NORMS) if a != b])
@pytest.mark.parametrize("slack", [1.0 + 1e-6, 1.5, 1.0 - 2e-2])
def test_nested_pair_against_clarabel(inner, outer, slack):
    # the outer ball just contains the inner one (dropped; at the point where both are active the
    # multipliers are not unique: values and points compared), contains it with room (dropped, its dual 0 as
    # Clarabel's), or cuts it by 2 % (kept: it binds): the objective pulls toward the inner ball's extreme
    # point that the outer ball's cut removes
    n = 4
    factor = _containment_factor(inner, outer, n)
    target = {"l1": np.eye(n)[0], "l2": np.ones(n) / math.sqrt(n), "linf": np.ones(n)}[inner] * 3.0
    target = target + np.linspace(0.0, 0.01, n)  # no ties between the extreme points

    def build(m):
        x = m.Variable(n)
        cons = [NORMS[inner](m, x) <= 1.0, NORMS[outer](m, x) <= factor * slack]
        return m.Problem(m.Minimize(m.sum_squares(x - target)), cons), [x], cons

    if slack == 1.0 + 1e-6:
        (value, xs, _, _), (ref, ref_xs, _, _) = solve_both(build)
        assert abs(value - ref) <= 2e-4 * max(1.0, abs(ref))
        np.testing.assert_allclose(xs[0], ref_xs[0], atol=2e-4)
    else:
        assert_same_answer(build)
    prob, _, cons = build(fm)
    prob.solve()
    dropped = prob._compiled.lowered.redundant_balls
    assert (id(prob._compiled.lowered.norm_sets[1][1]) in dropped) == (slack > 1.0)


def test_dropped_set_objects_give_their_point():
    # sets given as objects: the larger one dropped; point_in of either is x's value
    x = fm.Variable(5)
    small, large = fm.L1Ball(x, 1.0), fm.LinfBall(x, 1.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - np.arange(5.0))), [large, small])
    prob.solve()
    xr = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xr - np.arange(5.0))), [cp.norm1(xr) <= 1, cp.norm_inf(xr) <= 1])
    ref.solve(solver=cp.CLARABEL)
    assert abs(prob.value - ref.value) <= 1e-4 * abs(ref.value)
    np.testing.assert_allclose(prob.point_in(large), prob.point_in(small))
    np.testing.assert_allclose(prob.point_in(small), xr.value, atol=1e-3)


def test_balls_with_parameters_are_kept():
    # a Parameter radius may change between solves: no ball is dropped, the re-solve follows the new radius
    x = fm.Variable(3)
    r = fm.Parameter(nonneg=True, value=2.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - np.array([3.0, 0.1, 0.0]))), [fm.norm1(x) <= 1, fm.norm(x, 2) <= r])
    prob.solve()
    assert not prob._compiled.lowered.redundant_balls
    r.value = 0.5
    prob.solve()
    xr = cp.Variable(3)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xr - np.array([3.0, 0.1, 0.0]))), [cp.norm1(xr) <= 1, cp.norm(xr, 2) <= 0.5])
    ref.solve(solver=cp.CLARABEL)
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)
