"""v taken in the lent gradient's array (SmoothFunction.lent_input, BlockObjective.value_and_grad_shared).

Two tied copies x1, x2 of X and f = sum_squares(X - C): the objective's
gradient is lent (the kept array of X - C), and each fresh evaluation forms
v = (x1 + x2) / 2 in that array, so the objective keeps no v-size array.
Checked against the closed form f = ||v - C||^2, g_k = (v - C) (each copy's
share of 2 (v - C)), over several evaluations at changing points, and against
the same evaluations with v in an array of its own; forms whose forward pass
would read v after writing it are refused.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.expressions.affine import AddExpression
from fwmodel.expressions.evaluate import SmoothFunction


def tied_copies_model(expr_of, n=6, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, n))
    C = C + C.T
    X = fm.Variable((n, n), name="X")
    prob = fm.Problem(fm.Minimize(expr_of(X, C)), [fm.L1Ball(X, 3.0), fm.TraceNormBall(X, 4.0)])
    return prob.compile(), C, rng


def closed_form(xs, C):
    n2 = C.size
    v = 0.5 * (xs[:n2] + xs[n2:])
    R = v - C.ravel()
    return float(R @ R), np.concatenate([R, R])


def value_and_grad_at_random_points(objective, C, rng, rounds):
    """Yield ``xs`` after checking f and grad f at it against the closed form (one random point a round)."""
    for _ in range(rounds):
        xs = rng.standard_normal(2 * C.size)
        f, g = objective.value_and_grad_shared(xs)
        f_ref, g_ref = closed_form(xs, C)
        assert f == pytest.approx(f_ref, rel=1e-13)
        np.testing.assert_allclose(np.concatenate([g[:C.size], g[C.size:]]), g_ref, rtol=1e-13, atol=1e-13)
        yield xs


@pytest.mark.parametrize("form", ["X - C", "C - X"])
def test_v_in_the_lent_array_gives_the_closed_form_and_keeps_no_v_array(form):
    expr_of = (lambda X, C: fm.sum_squares(X - C)) if form == "X - C" else (lambda X, C: fm.sum_squares(C - X))
    c, C, rng = tied_copies_model(expr_of)
    objective = c.objective
    for xs in value_and_grad_at_random_points(objective, C, rng, 4):
        # from the first lent gradient on, v lives in it: no v-size array kept
        assert objective._v_array is None
    # the same numbers, bit for bit, as with v in an array of its own
    c2, _, _ = tied_copies_model(expr_of)
    c2.objective.smooth.lent_input = lambda size: None
    f2, g2 = c2.objective.value_and_grad_shared(xs)
    f1, g1 = c.objective.value_and_grad_shared(xs)
    assert f1 == f2 and np.array_equal(g1[:], g2[:])


def test_a_forward_pass_that_overwrites_v_before_reading_it_is_refused():
    """-C + X written as one node with signs (-1, +1): its forward pass writes -C into its array before
    it reads X, so v may not be taken in that array (lent_input None), and the values stay exact."""
    c, C, rng = tied_copies_model(lambda X, C: fm.sum_squares(AddExpression([fm.Constant(C), X], (-1, 1))))
    objective = c.objective
    for _ in value_and_grad_at_random_points(objective, C, rng, 3):
        assert objective.smooth.lent_last  # lent: the refusal is lent_input's
        assert objective.smooth.lent_input(C.size) is None


def test_a_variable_read_by_two_nodes_is_refused():
    X = fm.Variable((4, 4), name="X")
    C = np.arange(16.0).reshape(4, 4)
    smooth = SmoothFunction(fm.sum_squares(X - C) + fm.sum(X), {X.id: (0, (4, 4))})
    v = np.random.default_rng(1).standard_normal(16)
    f, g = smooth.value_and_grad(v, lend=True)
    assert smooth.lent_input(16) is None
    np.testing.assert_allclose(g, 2 * (v - C.ravel()) + 1.0, rtol=1e-13)


def test_a_caller_that_evaluates_f_at_its_own_points_gets_a_kept_v_array():
    """value() (line searches, in-face steps) keeps a v-size array from then on: the shared evaluations
    then form v in it again, not in the lent array, and every value stays the closed form's."""
    c, C, rng = tied_copies_model(lambda X, C: fm.sum_squares(X - C))
    objective = c.objective
    objective.value_and_grad_shared(rng.standard_normal(2 * C.size))
    assert objective._v_array is None
    for _ in range(3):
        xs = rng.standard_normal(2 * C.size)
        assert objective.value(xs) == pytest.approx(closed_form(xs, C)[0], rel=1e-13)
        f, g = objective.value_and_grad_shared(xs)
        f_ref, g_ref = closed_form(xs, C)
        assert f == pytest.approx(f_ref, rel=1e-13)
        np.testing.assert_allclose(np.concatenate([g[:C.size], g[C.size:]]), g_ref, rtol=1e-13, atol=1e-13)
        assert objective._v_array is not None


def test_the_first_evaluation_writes_v_where_it_lends_its_gradient():
    """Before any gradient is lent, lent_input is the array X - C will be computed in: the first evaluation
    forms v there (no v-size array made for that one call), and lends that same array as its gradient."""
    c, C, rng = tied_copies_model(lambda X, C: fm.sum_squares(X - C))
    objective = c.objective
    first = objective.smooth.lent_input(C.size)
    assert first is not None
    xs = rng.standard_normal(2 * C.size)
    f, g = objective.value_and_grad_shared(xs)
    f_ref, g_ref = closed_form(xs, C)
    assert f == pytest.approx(f_ref, rel=1e-13)
    np.testing.assert_allclose(np.concatenate([g[:C.size], g[C.size:]]), g_ref, rtol=1e-13, atol=1e-13)
    assert np.shares_memory(g.values, first)
    assert objective._v_array is None


def test_an_in_place_reader_that_lends_nothing_keeps_its_own_v_array():
    """log_sum_exp(X - C) reads X in X - C alone but lends no gradient: its evaluations stay exact (against
    the closed form) and the objective keeps a v-size array of its own for them."""
    c, C, rng = tied_copies_model(lambda X, C: fm.log_sum_exp(X - C))
    objective = c.objective
    for _ in range(3):
        xs = rng.standard_normal(2 * C.size)
        f, g = objective.value_and_grad_shared(xs)
        assert not objective.smooth.lent_last
        R = 0.5 * (xs[:C.size] + xs[C.size:]) - C.ravel()
        top = R.max()
        f_ref = top + np.log(np.exp(R - top).sum())
        soft = np.exp(R - f_ref)
        assert f == pytest.approx(f_ref, rel=1e-13)
        np.testing.assert_allclose(np.concatenate([g[:C.size], g[C.size:]]), 0.5 * np.concatenate([soft, soft]),
                                   rtol=1e-12, atol=1e-15)
        assert objective._v_array is not None


def test_the_hessian_of_a_parameter_multiple_is_read_again_after_the_parameter_moves():
    """sum_squares(p X - C): the lent gradient shows f's Hessian 2 p^2 I, and the curvature along a direction is
    read from it (no v-size array); once p moves, a new solve's setup forgets it (refresh_parameters) and the
    curvature is f's at the new p: 2 p^2 ||W d||^2."""
    p = fm.Parameter(value=2.0)
    c, C, rng = tied_copies_model(lambda X, C: fm.sum_squares(p * X - C))
    objective = c.objective
    xs, d = rng.standard_normal(2 * C.size), rng.standard_normal(2 * C.size)
    Wd = 0.5 * (d[:C.size] + d[C.size:])
    objective.value_and_grad_shared(xs)
    assert objective.curvature(xs, d) == pytest.approx(2 * 4.0 * Wd @ Wd, rel=1e-12)
    p.value = 3.0
    c.refresh_parameters()
    assert objective.curvature(xs, d) == pytest.approx(2 * 9.0 * Wd @ Wd, rel=1e-12)
    objective.value_and_grad_shared(xs)
    assert objective.curvature(xs, d) == pytest.approx(2 * 9.0 * Wd @ Wd, rel=1e-12)
