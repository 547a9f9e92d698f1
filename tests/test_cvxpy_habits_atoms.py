"""More CVXPY habits, checked against CVXPY + Clarabel: power, PSD constraints, sum(abs), max/min bounds,
squared norms, quad_over_lin, refused atoms and the duals of norm-ball constraints.

As in test_cvxpy_habits.py, each model is written twice in the same words
(once with ``cp``, once with ``fm``); objectives agree to 2e-3 (relative),
duals to 1e-3 (relative, FW-AL's accuracy at the tight tolerances below).
Refusals are checked for the names their messages must contain.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.expressions.unsupported import REFUSED

cp = pytest.importorskip("cvxpy")

OBJ_RTOL = 2e-3
DUAL_RTOL = 1e-3
TIGHT = dict(tol=1e-8, feas_tol=1e-8, max_iter=50000)


def solve_both(build, solve_options=TIGHT):
    """``build(m)`` -> (problem, things to read) for m in (fm, cp); the two problems' values and things."""
    out = []
    for m in (fm, cp):
        prob, things = build(m)
        if m is fm:
            value = prob.solve(**solve_options)
            assert prob.status == fm.OPTIMAL, prob.stats.message
        else:
            value = prob.solve(solver=cp.CLARABEL)
            assert prob.status == cp.OPTIMAL
        out.append((prob, value, things))
    return out


def assert_close(value, ref, rtol=OBJ_RTOL):
    assert abs(value - ref) <= rtol * max(1.0, abs(ref)), (value, ref)


def set_types(prob):
    return [type(b.set).__name__ for b in prob.compile().blocks]


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((15, 8)), rng.standard_normal(15)


# ---------------------------------------------------------------------- power
@pytest.mark.parametrize("objective", [
    lambda m, x, A, b: m.sum(m.power(A @ x - b, 2)),
    lambda m, x, A, b: m.power(m.norm(A @ x - b, 2), 2),
    lambda m, x, A, b: m.sum(m.power(A @ x - b, 4)) + m.sum(m.power(x, 1)),
    lambda m, x, A, b: m.sum_squares(A @ x - b) + m.sum(m.power(x, 0)),
])
def test_power_matches_cvxpy(data, objective):
    A, b = data

    def build(m):
        x = m.Variable(8)
        return m.Problem(m.Minimize(objective(m, x, A, b)), [m.norm1(x) <= 1.0]), x

    (_, value, _), (_, ref, _) = solve_both(build)
    assert_close(value, ref)


@pytest.mark.parametrize("p, advice", [
    (0.5, "gradient is unbounded at 0"),
    (-1, "gradient is unbounded at 0"),
    (1.5, "fm.huber"),
    (3, "fm.smooth(z**p"),
    (np.inf, "finite"),
])
def test_power_refuses_other_p(p, advice):
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError) as info:
        fm.power(x, p)
    message = str(info.value)
    assert "power(x" in message and repr(p) in message and advice in message


# ------------------------------------------------------------ PSD constraints
RNG = np.random.default_rng(1)
_C = RNG.standard_normal((4, 4))
C = _C + _C.T
B = np.diag([0.1, 0.2, 0.0, 0.1]) + 0.05 * (np.ones((4, 4)) - np.eye(4))


@pytest.mark.parametrize("constraints, set_name", [
    (lambda m, Y: [Y >> 0, m.trace(Y) <= 1], "TraceNormBall"),
    (lambda m, Y: [0 << Y, m.trace(Y) <= 1], "TraceNormBall"),
    (lambda m, Y: [Y << 0, m.trace(Y) >= -1], "AffinePreimage"),
    (lambda m, Y: [0 >> Y, -1 <= m.trace(Y)], "AffinePreimage"),
    (lambda m, Y: [Y >> B, m.trace(Y) <= 2], "AffinePreimage"),
    (lambda m, Y: [B << Y, m.trace(Y - B) <= 1.5], "AffinePreimage"),
])
def test_semidefinite_constraints_are_psd_trace_balls(constraints, set_name):
    def build(m):
        Y = m.Variable((4, 4), symmetric=True)
        return m.Problem(m.Minimize(m.sum_squares(Y - C)), constraints(m, Y)), Y

    (prob, value, Y), (_, ref, _) = solve_both(build)
    assert set_types(prob) == [set_name]
    assert_close(value, ref)
    assert np.allclose(Y.value, Y.value.T)


@pytest.mark.parametrize("attributes, constraints", [
    (dict(symmetric=True), lambda m, Y: [Y >> 0, m.trace(Y) == 1]),
    (dict(PSD=True), lambda m, Y: [m.trace(Y) == 1]),
    (dict(symmetric=True), lambda m, Y: [Y >> 0, -m.trace(Y) == -1, Y[0, 1] == 0.2]),
    (dict(symmetric=True), lambda m, Y: [Y << 0, m.trace(Y) == -1]),
    (dict(symmetric=True), lambda m, Y: [Y >> 0.1 * np.eye(4), 2 == m.trace(Y)]),
])
def test_trace_equalities_bound_semidefinite_matrices(attributes, constraints):
    def build(m):
        Y = m.Variable((4, 4), **attributes)
        return m.Problem(m.Minimize(m.sum_squares(Y - C)), constraints(m, Y)), Y

    (prob, value, Y), (_, ref, Yc) = solve_both(build)
    assert_close(value, ref)
    assert abs(np.trace(Y.value) - np.trace(Yc.value)) <= 1e-6
    assert len(prob.compile().blocks) == 1


def test_trace_equality_with_a_parameter_is_reread_at_each_solve():
    t = fm.Parameter(nonneg=True, value=1.0, name="t")
    Y = fm.Variable((4, 4), symmetric=True, name="Y")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(Y - C)), [Y >> 0, fm.trace(Y) == t])
    for total in (1.0, 2.0):
        t.value = total
        value = prob.solve(**TIGHT)
        Yc = cp.Variable((4, 4), symmetric=True)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(Yc - C)), [Yc >> 0, cp.trace(Yc) == total]).solve(
            solver=cp.CLARABEL)
        assert_close(value, ref)
        assert abs(np.trace(Y.value) - total) <= 1e-6


def test_semidefinite_on_a_psd_variable_and_with_other_constraints():
    def build(m):
        Y = m.Variable((4, 4), PSD=True)
        return m.Problem(m.Minimize(m.sum_squares(Y - C)), [Y >> 0, m.trace(Y) <= 1.5, Y[0, 1] == 0.1]), Y

    (prob, value, Y), (_, ref, _) = solve_both(build)
    assert_close(value, ref)
    assert np.linalg.eigvalsh(Y.value).min() >= -1e-6


def test_semidefinite_refusals():
    Y = fm.Variable((3, 3), name="Y")
    with pytest.raises(fm.ModelError, match=r"Y >> 0.*not declared symmetric.*symmetric part.*symmetric=True"):
        Y >> 0
    with pytest.raises(fm.ModelError, match=r"square matrix.*\(3, 2\)"):
        fm.Variable((3, 2), name="R") >> 0
    S = fm.Variable((3, 3), symmetric=True, name="S")
    with pytest.raises(fm.ModelError, match=r"S >> 0.*not bounded.*fm.trace\(S\) <= t"):
        fm.Problem(fm.Minimize(fm.sum_squares(S)), [S >> 0]).solve()
    with pytest.raises(fm.ModelError, match=r"S << 0.*bounded set.*fm.trace\(-S\) <= r"):
        fm.Problem(fm.Minimize(fm.sum_squares(S)), [S << 0]).solve()
    with pytest.raises(fm.ModelError, match=r"not symmetric"):
        S >> np.triu(np.ones((3, 3)))
    with pytest.raises(fm.ModelError, match=r"one symmetric variable"):
        S >> fm.Variable((3, 3), symmetric=True)


# --------------------------------------------------- sum(abs), max and min bounds
TOL = 1e-4


@pytest.mark.parametrize("constraint, set_name, satisfied", [
    (lambda m, x, c: m.sum(m.abs(x)) <= 0.7, "L1Ball", lambda v, c: np.abs(v).sum() <= 0.7 + TOL),
    (lambda m, x, c: 0.7 >= m.sum(m.abs(x)), "L1Ball", lambda v, c: np.abs(v).sum() <= 0.7 + TOL),
    (lambda m, x, c: m.sum(m.abs(2 * x + c)) <= 3.0, "AffinePreimage", lambda v, c: np.abs(2 * v + c).sum() <= 3 + TOL),
    (lambda m, x, c: m.max(m.abs(x)) <= 0.15, "LinfBall", lambda v, c: np.abs(v).max() <= 0.15 + TOL),
    (lambda m, x, c: m.max(x) <= 0.1, "Box", lambda v, c: v.max() <= 0.1 + TOL),
    (lambda m, x, c: m.min(x) >= -0.1, "Box", lambda v, c: v.min() >= -0.1 - TOL),
    (lambda m, x, c: -0.1 <= m.min(x), "Box", lambda v, c: v.min() >= -0.1 - TOL),
    (lambda m, x, c: m.max(x + c) <= 0.3, "Box", lambda v, c: (v + c).max() <= 0.3 + TOL),
])
def test_entrywise_and_l1_rewrites(data, constraint, set_name, satisfied):
    A, b = data
    c = np.linspace(-0.2, 0.2, 8)

    def build(m):
        x = m.Variable(8)
        return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), [constraint(m, x, c), m.norm_inf(x) <= 1.0]), x

    (prob, value, x), (_, ref, _) = solve_both(build)
    assert_close(value, ref)
    assert satisfied(x.value, c)
    # the sets as built, and those merged into one (an L1 ball and norm_inf's box: a BoxedL1Ball)
    merged = [type(s).__name__ for blk in prob.compile().blocks for s in getattr(blk.set, "merged_from", ())]
    assert set_name in set_types(prob) + merged


def test_affine_norm1_of_sum_abs(data):
    A, b = data
    G = np.random.default_rng(5).standard_normal((5, 8))
    g = np.linspace(-1, 1, 5)

    def build(m):
        x = m.Variable(8)
        return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), [m.sum(m.abs(G @ x + g)) <= 1.0,
                                                               m.norm(x, 2) <= 2.0]), x

    (_, value, x), (_, ref, _) = solve_both(build)
    assert_close(value, ref)
    assert np.abs(G @ x.value + g).sum() <= 1.0 + 1e-3


def test_max_along_an_axis_and_with_a_variable_bound():
    rng = np.random.default_rng(7)
    C = rng.standard_normal((3, 4))
    t_row = np.array([0.1, -0.2, 0.3])

    def build(m):
        X, s = m.Variable((3, 4)), m.Variable()
        constraints = [m.max(X, axis=1) <= t_row, m.min(X, axis=0) >= -0.5, m.max(X[0]) <= s, s >= -1, s <= 0.05]
        return m.Problem(m.Minimize(m.sum_squares(X - C) + m.square(s - 1)), constraints), X

    (_, value, X), (_, ref, _) = solve_both(build)
    assert_close(value, ref)
    assert np.all(X.value.max(axis=1) <= t_row + 1e-4)


def test_max_and_min_refusals():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match=r"max\(x\) >= 1.*not convex"):
        fm.max(x) >= 1
    with pytest.raises(fm.ModelError, match=r"min\(x\) <= 1.*not convex"):
        fm.min(x) <= 1
    with pytest.raises(fm.ModelError, match=r"max\(x\).*not smooth.*fm.Box.*log_sum_exp"):
        fm.Minimize(fm.max(x))
    with pytest.raises(fm.ModelError, match=r"min\(x\).*not smooth"):
        fm.Maximize(fm.min(x))
    with pytest.raises(fm.ModelError, match=r"max\(square\(x\)\).*must be affine"):
        fm.max(fm.square(x))
    assert fm.max(x).curvature == "convex" and fm.min(x).curvature == "concave"
    x.value = np.array([1.0, -2.0, 3.0])
    assert fm.max(x).value == 3.0 and fm.min(x).value == -2.0 and fm.sum(fm.abs(x)).value == 6.0


# ------------------------------------------------------- squared norms, quad_over_lin
@pytest.mark.parametrize("objective", [
    lambda m, e: m.square(m.norm2(e)),
    lambda m, e: m.norm2(e) ** 2,
    lambda m, e: m.power(m.norm(e, 2), 2),
    lambda m, e: m.quad_over_lin(e, 2.5),
    lambda m, e: m.sum_squares(e) + m.quad_over_lin(e[:3], 4.0),
])
def test_squared_norms_and_quad_over_lin(data, objective):
    A, b = data

    def build(m):
        x = m.Variable(8)
        return m.Problem(m.Minimize(objective(m, A @ x - b)), [m.norm1(x) <= 1.0]), x

    (_, value, _), (_, ref, _) = solve_both(build)
    assert_close(value, ref)


def test_quad_over_lin_with_a_parameter_and_refusals(data):
    A, b = data
    y = fm.Parameter(nonneg=True, value=2.0, name="y")
    x = fm.Variable(8, name="x")
    prob = fm.Problem(fm.Minimize(fm.quad_over_lin(A @ x - b, y)), [fm.norm1(x) <= 1.0])
    value = prob.solve(**TIGHT)
    xc = cp.Variable(8)
    ref = cp.Problem(cp.Minimize(cp.quad_over_lin(A @ xc - b, 2.0)), [cp.norm1(xc) <= 1.0]).solve(solver=cp.CLARABEL)
    assert_close(value, ref)
    with pytest.raises(fm.ModelError, match=r"quad_over_lin\(x, t\).*y must be data.*unbounded"):
        fm.quad_over_lin(x, fm.Variable(name="t"))
    with pytest.raises(fm.ModelError, match=r"quad_over_lin.*positive"):
        fm.quad_over_lin(x, -1.0)
    with pytest.raises(fm.ModelError, match=r"quad_over_lin.*scalar"):
        fm.quad_over_lin(x, np.ones(2))


def test_pnorm_is_the_entrywise_norm(data):
    A, b = data

    def build(m):
        X = m.Variable((2, 4))
        constraints = [m.pnorm(X, 2) <= 0.5, m.pnorm(X, 1) <= 0.9, m.pnorm(X, "inf") <= 0.3]
        return m.Problem(m.Minimize(m.sum_squares(A @ m.reshape(X, (8,), order="C") - b)), constraints), X

    (prob, value, _), (_, ref, _) = solve_both(build)
    assert_close(value, ref)
    assert sorted(set_types(prob)) == ["L1Ball", "L2Ball", "LinfBall"]
    with pytest.raises(fm.ModelError, match=r"pnorm\(x, 3\).*no set"):
        fm.pnorm(fm.Variable(3, name="x"), 3)


# ------------------------------------------------------------- refused atoms
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_cvxpy_atoms_say_why(name):
    assert hasattr(cp, name), f"{name} is not a CVXPY atom"
    x = fm.Variable(4, name="x")
    with pytest.raises(fm.ModelError) as info:
        getattr(fm, name)(x)
    message = str(info.value)
    assert f"{name}(x" in message and f"cp.{name}" in message
    assert "not smooth" in message or "gradient is unbounded" in message or "no set" in message \
        or "neither convex" in message or "no atom" in message


@pytest.mark.parametrize("name, advice", [
    ("sigma_max", "spectral-norm ball"),
    ("sqrt", "fm.norm(e, 2) <= t"),
    ("log", "fm.smooth"),
    ("lambda_max", "no set"),
])
def test_refused_atoms_name_the_alternative(name, advice):
    with pytest.raises(fm.ModelError) as info:
        getattr(fm, name)(fm.Variable(4, name="x"))
    assert advice in str(info.value)


@pytest.mark.parametrize("spelling", ["tv", "norm1 of diff"])
def test_tv_is_cvxpy_tv(data, spelling):
    A, b = data

    def build(m):
        x = m.Variable(8)
        bound = m.tv(x) <= 0.5 if m is cp or spelling == "tv" else m.norm1(m.diff(x)) <= 0.5
        return m.Problem(m.Minimize(m.sum_squares(A @ x - b)), [bound, m.norm_inf(x) <= 1.0]), x

    (_, value, _), (_, ref, _) = solve_both(build)
    assert_close(value, ref)


def test_tv_is_refused_in_objectives_and_for_matrices():
    x = fm.Variable(4, name="x")
    with pytest.raises(fm.ModelError, match=r"tv\(x\) is not smooth.*fm.L1Ball"):
        fm.Minimize(fm.tv(x))
    with pytest.raises(fm.ModelError, match=r"isotropic total variation.*fm.norm1\(fm.diff\(X, axis=0\)\)"):
        fm.tv(fm.Variable((3, 3), name="X"))


# ---------------------------------------------------------- norm-ball duals
def _dual_case(A, b, constraint, extra=lambda m, x: [], maximize=False):
    def build(m):
        x = m.Variable(8)
        ball = constraint(m, x)
        objective = m.Maximize(-m.sum_squares(A @ x - b)) if maximize else m.Minimize(m.sum_squares(A @ x - b))
        return m.Problem(objective, [ball] + extra(m, x)), ball

    (_, _, ball), (_, _, ref_ball) = solve_both(build)
    return ball.dual_value, ref_ball.dual_value


@pytest.mark.parametrize("constraint, extra, maximize", [
    (lambda m, x: m.norm1(x) <= 0.5, None, False),
    (lambda m, x: m.norm1(x) <= 0.5, None, True),
    (lambda m, x: m.norm(x, 2) <= 0.5, None, False),
    (lambda m, x: m.norm_inf(x) <= 0.1, None, False),
    (lambda m, x: m.norm(x, "inf") <= 0.1, None, True),
    (lambda m, x: m.sum(m.abs(x)) <= 0.5, None, False),
    (lambda m, x: m.norm1(x - 1) <= 0.5, None, False),
    (lambda m, x: m.norm1(x) <= 0.8, lambda m, x: [m.sum(x) == 0.2], False),
    (lambda m, x: m.norm1(x) <= 0.8, lambda m, x: [x[:4] - x[4:] <= 0.05], False),
    (lambda m, x: m.norm(np.diff(np.eye(8), axis=0) @ x, 2) <= 0.3, lambda m, x: [m.norm_inf(x) <= 1], False),
])
def test_norm_ball_duals_match_cvxpy(data, constraint, extra, maximize):
    A, b = data
    dual, ref = _dual_case(A, b, constraint, extra or (lambda m, x: []), maximize)
    assert ref > 1e-3  # the ball is active
    assert abs(dual - ref) <= DUAL_RTOL * ref, (dual, ref)


def test_inactive_ball_has_zero_dual(data):
    A, b = data
    dual, ref = _dual_case(A, b, lambda m, x: m.norm1(x) <= 50.0)
    assert abs(ref) < 1e-6 and abs(dual) < 1e-5


def test_abs_and_nuclear_norm_duals(data):
    A, b = data
    dual, ref = _dual_case(A, b, lambda m, x: m.abs(x) <= 0.1)
    assert dual.shape == ref.shape == (8,)
    assert np.allclose(dual, ref, rtol=DUAL_RTOL, atol=1e-5 * np.abs(ref).max())
    C = np.random.default_rng(2).standard_normal((4, 5))

    def build(m):
        X = m.Variable((4, 5))
        ball = m.normNuc(X) <= 1.0
        return m.Problem(m.Minimize(m.sum_squares(X - C)), [ball]), ball

    (_, _, ball), (_, _, ref_ball) = solve_both(build)
    assert abs(ball.dual_value - ref_ball.dual_value) <= DUAL_RTOL * ref_ball.dual_value


def test_user_sets_are_not_constraints_with_duals(data):
    A, b = data
    x = fm.Variable(8, name="x")
    ball = fm.L1Ball(x, 0.5)
    fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [ball]).solve()
    assert not hasattr(ball, "dual_value")


@pytest.mark.parametrize("write", [lambda x: -fm.norm1(x) >= -2])
def test_a_negated_atom_on_the_larger_side_is_not_called_a_lower_bound(write):
    """``-norm1(x) >= -2`` is an upper bound on norm1(x) written with a sign: refused (not in the form that
    makes a set) with the form to write, not with "a lower bound ... is not convex", which was wrong.
    (``-max(x) >= -0.5`` is divided through: ``max(x) <= 0.5``, tests/test_hinge_budgets.py.)"""
    x = fm.Variable(4)
    with pytest.raises(fm.ModelError, match="can only be compared directly with data"):
        write(x)
