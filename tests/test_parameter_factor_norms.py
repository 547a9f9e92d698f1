"""A norm bound on a Parameter multiple of a variable, ``norm1(p * x) <= r`` (also ``x * p``, ``x / p``, the other
norms and ``abs``), as CVXPY users write it, checked against CVXPY + Clarabel.

The compiler holds it as the ball ``norm1(x) <= r / |p|`` (``r * |p|`` for ``x / p``), re-read at each
solve; the constraint's ``dual_value`` is CVXPY's multiplier of the constraint as written (the ball's times
``1 / |p|``). ``p == 0`` makes it ``0 <= r``: dropped (multiplier 0) where other sets bound x, else the
solve is refused with a message naming the Parameter, the constraint and the variable.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

import re  # noqa: E402
import warnings  # noqa: E402

from _against_clarabel import (DUAL_ATOL, DUAL_RTOL, OBJ_RTOL, X_ATOL, assert_same_answer,  # noqa: E402, I001
                              resolve_both, solve_both)

# CVXPY warns that norm1(p * x) is not DPP (it re-canonicalizes at each solve): irrelevant here
pytestmark = pytest.mark.filterwarnings("ignore:You are solving a parameterized problem that is not DPP")

rng = np.random.default_rng(5)
N = 6
C = rng.standard_normal(N)
A = rng.standard_normal((4, N))

ATOMS = {"l1": ("norm1", 0.8), "l2": ("norm2", 0.6), "linf": ("norm_inf", 0.3), "abs": ("abs", 0.25)}
FORMS = {"p * x": lambda p, x: p * x, "x * p": lambda p, x: x * p, "x / p": lambda p, x: x / p}


def _model(m, atom, form, value, radius_parameter=False, box=False):
    name, r = ATOMS[atom]
    x, p = m.Variable(N, name="x"), m.Parameter(value=value, name="p")
    t = m.Parameter(nonneg=True, value=r) if radius_parameter else r
    constraint = getattr(m, name)(FORMS[form](p, x)) <= t
    constraints = [constraint] + ([x >= -0.4, x <= 0.9] if box else [])
    prob = m.Problem(m.Minimize(m.sum_squares(x - C) + 0.1 * m.sum_squares(A @ x)), constraints)
    return prob, x, p, constraint, t


def _resolve_optimal_both(models, value):
    """Re-solve both models at p = ``value`` (:func:`resolve_both`): both "optimal" with the same value, point
    and multiplier; returns ours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (status, f, x, dual), (ref_status, ref_f, ref_x, ref_dual) = resolve_both(models, value)
    assert status == ref_status == "optimal"
    assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f)), (value, f, ref_f)
    np.testing.assert_allclose(x, ref_x, atol=X_ATOL)
    np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)
    return dual


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("atom", list(ATOMS))
def test_a_ball_on_a_parameter_multiple_matches_clarabel(atom, form):
    """value, point and dual_value agree with CVXPY + Clarabel for a positive and a negative p (|p| counts)."""
    for value in (2.5, -0.4):
        def build(m):
            prob, x, _, constraint, _ = _model(m, atom, form, value)
            return prob, [x], [constraint]

        duals = assert_same_answer(build)
        assert np.max(duals[0]) > 1e-2  # the ball binds: its multiplier is the one compared


@pytest.mark.parametrize("atom", ["l1", "l2", "abs"])
def test_re_solves_follow_the_parameter_and_its_sign_and_zero_drops_the_ball(atom):
    """p changes between solves (2, then -1.5: a sign flip, then 0, then 0.7), with the radius a Parameter too:
    each solve agrees with Clarabel. At p = 0 the constraint is 0 <= r, dropped: x is the box-constrained
    least squares, and its multiplier 0."""
    models = {}
    for m in (fm, cp):
        prob, x, p, constraint, _ = _model(m, atom, "p * x", 2.0, radius_parameter=True, box=True)
        models[m] = (prob, x, p, constraint)
    for value in (2.0, -1.5, 0.0, 0.7):
        dual = _resolve_optimal_both(models, value)
        if value == 0.0:
            assert np.all(np.asarray(dual) == 0.0)


def test_the_radius_parameter_and_the_factor_both_follow():
    """norm2(p * x) <= t with t and p Parameters: the ball's radius t / |p| follows both (closed form: the
    projection of C onto the L2 ball of radius t / |p|, with dual ||C|| |p| / t - 1 ... over |p|, CVXPY's)."""
    p, t, x = fm.Parameter(value=2.0), fm.Parameter(nonneg=True, value=0.5), fm.Variable(N)
    constraint = fm.norm2(p * x) <= t
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [constraint])
    for pv, tv in ((2.0, 0.5), (-4.0, 0.5), (4.0, 1.5)):
        p.value, t.value = pv, tv
        prob.solve(tol=1e-10)
        rho = tv / abs(pv)
        assert rho < np.linalg.norm(C)  # the ball binds
        np.testing.assert_allclose(x.value, C * rho / np.linalg.norm(C), atol=1e-6)
        # KKT of min ||x - C||^2 + lam (|p| ||x|| - t): 2 (x - C) + lam |p| x / ||x|| = 0 at ||x|| = rho
        lam = 2.0 * (np.linalg.norm(C) - rho) / abs(pv)
        assert constraint.dual_value == pytest.approx(lam, rel=1e-5)


def test_a_zero_factor_with_nothing_else_bounding_x_is_refused_at_that_solve():
    """norm1(p * x) <= 1 is the only set on x: at p = 0 it bounds nothing, and the solve is refused naming p,
    the constraint and x; the next solve with p != 0 agrees with Clarabel again."""
    models = {}
    for m in (fm, cp):
        prob, x, p, constraint, _ = _model(m, "l1", "p * x", 3.0)
        models[m] = (prob, x, p, constraint)
    models[fm][0].solve()
    models[fm][2].value = 0.0
    with pytest.raises(fm.ModelError, match=r"norm1\(p \* x\) <= 0.8: p is 0 at this solve.*"
                                            r"bounds nothing.*what holds x"):
        models[fm][0].solve()
    (status, f, x, dual), (ref_status, ref_f, ref_x, ref_dual) = resolve_both(models, -2.0)
    assert status == ref_status == "optimal"
    assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f))
    np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL)


def test_a_negative_radius_is_infeasible_and_a_set_on_a_parameter_multiple_is_still_named():
    """norm1(p * x) <= t with t < 0 at a solve: "infeasible" naming the constraint, as Clarabel says; the set
    fm.L1Ball(p * x, 1) (not a norm bound) is refused with a message that gives the norm bound instead."""
    p, t, x = fm.Parameter(value=2.0), fm.Parameter(value=-1.0), fm.Variable(N, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.norm1(p * x) <= t])
    prob.solve()
    X, P, T = cp.Variable(N), cp.Parameter(value=2.0), cp.Parameter(value=-1.0)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(X - C)), [cp.norm1(P * X) <= T])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.solve(solver=cp.CLARABEL)
    assert prob.status == ref.status == "infeasible"
    assert "norm1(" in prob.stats.message
    with pytest.raises(fm.ModelError, match=r"fm\.norm1\(p \* x\) <= r, which the compiler holds as "
                                            r"fm\.norm1\(x\) <= r / \|p\|"):
        fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.L1Ball(p * x, 1.0)]).solve()


@pytest.mark.parametrize("write", [
    lambda m, p, x: m.normNuc(p * x) <= 1.5,
    lambda m, p, x: m.sum_squares(p * x) <= 0.5,  # the ball norm2(p * x) <= sqrt(0.5), its dual the squared form's
    lambda m, p, x: m.norm(x / p, "fro") <= 0.5,
], ids=["nuc", "sum_squares", "fro"])
def test_matrix_and_squared_forms_match_clarabel(write):
    """normNuc(p * X), sum_squares(p * X) and norm(X / p, "fro") bounded by data: CVXPY's value, point and dual
    (CVXPY gives sum_squares' dual the shape (1,): compared as numbers)."""
    B = np.random.default_rng(1).standard_normal((4, 3))

    def build(m):
        X, p = m.Variable((4, 3)), m.Parameter(value=-2.0)
        constraint = write(m, p, X)
        return m.Problem(m.Minimize(m.sum_squares(X - B)), [constraint]), [X], [constraint]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (value, xs, duals, _), (ref, ref_xs, ref_duals, _) = solve_both(build)
    assert abs(value - ref) <= OBJ_RTOL * max(1.0, abs(ref))
    np.testing.assert_allclose(xs[0], ref_xs[0], atol=X_ATOL)
    assert np.size(duals[0]) == 1 and float(np.ravel(ref_duals[0])[0]) > 1e-2  # the ball binds
    np.testing.assert_allclose(np.ravel(duals[0]), np.ravel(ref_duals[0]), rtol=DUAL_RTOL, atol=DUAL_ATOL)


@pytest.mark.parametrize("others,atom,bound", [
    (lambda m, x: [x >= 0, m.sum(x) == 1], "norm2", 1.5),  # a simplex the compiler recognizes
    (lambda m, x: [m.norm2(x) <= 0.5], "norm_inf", 0.6),  # another ball
    (lambda m, x: [x >= -0.1, x <= 0.3], "norm_inf", 0.6),  # entry bounds
], ids=["simplex", "ball", "bounds"])
def test_a_zero_factor_drops_the_constraint_where_other_sets_hold_x(others, atom, bound):
    """At p = 0 the ball binds nothing where a simplex, another ball or entry bounds hold x: value, point and
    multipliers (0 for the dropped constraint) as Clarabel's, before and after (p = 3, 0, -2.5)."""
    models = {}
    for m in (fm, cp):
        x, p = m.Variable(N, name="x"), m.Parameter(value=3.0, name="p")
        constraint = getattr(m, atom)(p * x) <= bound
        prob = m.Problem(m.Minimize(m.sum_squares(x - C)), [constraint] + others(m, x))
        models[m] = (prob, x, p, constraint)
    for value in (3.0, 0.0, -2.5):
        dual = _resolve_optimal_both(models, value)
        assert (dual == 0.0) if value == 0.0 else (dual > 1e-2), (value, dual)


def test_a_negative_entrywise_bound_is_infeasible():
    """abs(p * x) <= t with a Parameter t that goes negative in one entry: "infeasible", as Clarabel says."""
    x, p, t = fm.Variable(N), fm.Parameter(value=2.0), fm.Parameter(N, value=np.full(N, 0.5))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.abs(p * x) <= t])
    prob.solve()
    assert prob.status == "optimal"
    t.value = np.r_[0.5, -0.1, np.full(N - 2, 0.5)]
    prob.solve()
    X, P, T = cp.Variable(N), cp.Parameter(value=2.0), cp.Parameter(N, value=t.value)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(X - C)), [cp.abs(P * X) <= T])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.solve(solver=cp.CLARABEL)
    assert prob.status == ref.status == "infeasible"
    assert "abs(" in prob.stats.message and "-0.1 < 0" in prob.stats.message


def _resolve_series(build, values, dropped=()):
    """``build(m)`` -> (problem, x, parameters, constraints) for m in (fm, cp); for each tuple of ``values``
    (one per parameter) both are solved again and their value, point and multipliers compared (the
    constraints in ``dropped`` have multiplier 0 where their factor is 0)."""
    models = {m: build(m) for m in (fm, cp)}
    for vals in values:
        answers = []
        for m, (prob, x, params, constraints) in models.items():
            for param, v in zip(params, vals):
                param.value = v
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=50000) if m is fm else prob.solve(solver=cp.CLARABEL)
            answers.append((prob.status, prob.value, x.value, [k.dual_value for k in constraints]))
        (status, f, x, duals), (ref_status, ref_f, ref_x, ref_duals) = answers
        assert status == ref_status == "optimal", vals
        assert abs(f - ref_f) <= OBJ_RTOL * max(1.0, abs(ref_f)), (vals, f, ref_f)
        np.testing.assert_allclose(x, ref_x, atol=X_ATOL, err_msg=str(vals))
        for dual, ref_dual in zip(duals, ref_duals):
            np.testing.assert_allclose(dual, ref_dual, rtol=DUAL_RTOL, atol=DUAL_ATOL, err_msg=str(vals))


def test_a_dropped_ball_follows_the_parameters_of_the_sets_that_hold_x():
    """norm1(p * x) <= 1 dropped at p = 0, x held by norm2(x) <= rho: rho growing with p still 0 moves the
    dropped ball's loose radius too (it was read from the old rho and clipped x: "optimal" 54.0 against
    Clarabel's 5.05)."""
    target = np.full(N, 5.0)

    def build(m):
        x, p, rho = m.Variable(N, name="x"), m.Parameter(name="p"), m.Parameter(nonneg=True, name="rho")
        c1, c2 = m.norm1(p * x) <= 1, m.norm2(x) <= rho
        return m.Problem(m.Minimize(m.sum_squares(x - target)), [c1, c2]), x, [p, rho], [c1, c2]

    _resolve_series(build, [(1.0, 1.0), (0.0, 1.0), (0.0, 10.0), (0.5, 10.0)])


def test_a_dropped_ball_follows_another_parameter_factor():
    """norm_inf(q * x) <= 0.5 dropped at q = 0, held by norm1(p * x) <= 1 (radius 1 / |p|): p from 2 to 0.5
    frees x up to the new L1 radius (it stayed clipped at the old one: 2.27 against Clarabel's 0.86)."""
    target = np.array([0.2, -0.1, 0.3, 2.5, -0.7, 0.05])

    def build(m):
        x, p, q = m.Variable(N, name="x"), m.Parameter(name="p"), m.Parameter(name="q")
        c1, c2 = m.norm1(p * x) <= 1, m.norm_inf(x * q) <= 0.5
        return m.Problem(m.Minimize(m.sum_squares(x - target)), [c1, c2]), x, [p, q], [c1, c2]

    _resolve_series(build, [(2.0, 0.0), (0.5, 0.0), (-4.0, 0.0)])


def test_two_factors_at_zero_after_other_values_are_refused_as_at_a_cold_solve():
    """Both balls on x dropped (p = q = 0) after solves where one held x: refused with the cold solve's
    message (it said "optimal" with x held in a box that no constraint makes); a later solve agrees with
    Clarabel again."""
    target = np.array([1.5, -2.0, 0.3, 2.5, -0.7, 0.4])

    def build(m):
        x, p, q = m.Variable(N, name="x"), m.Parameter(name="p"), m.Parameter(name="q")
        c1, c2 = m.norm1(p * x) <= 1, m.norm_inf(x * q) <= 0.5
        return m.Problem(m.Minimize(m.sum_squares(x - target)), [c1, c2]), x, [p, q], [c1, c2]

    prob, x, (p, q), _ = build(fm)
    for pv, qv in [(1.0, 1.0), (0.0, 2.0), (2.0, 0.0)]:
        p.value, q.value = pv, qv
        prob.solve()
        assert prob.status == "optimal"
    p.value, q.value = 0.0, 0.0
    with pytest.raises(fm.ModelError, match=r"p is 0 at this solve.*what holds x \(x is in no other bounded set\)"):
        prob.solve()
    cold_x, cold_p, cold_q = fm.Variable(N, name="x"), fm.Parameter(value=0.0, name="p"), fm.Parameter(value=0.0, name="q")
    cold = fm.Problem(fm.Minimize(fm.sum_squares(cold_x - target)),
                      [fm.norm1(cold_p * cold_x) <= 1, fm.norm_inf(cold_x * cold_q) <= 0.5])
    with pytest.raises(fm.ModelError, match=r"p is 0 at this solve.*what holds x \(x is in no other bounded set\)"):
        cold.solve()
    _resolve_series(build, [(0.0, 2.0), (1.0, 1.0)])


def test_a_zero_factor_at_the_first_solve_is_dropped_where_bounds_hold_x():
    """p = 0 at the first solve, with x >= -1, x <= 1: dropped, as after a solve at p = 1 (it was refused,
    "no other set", since the ball was built before the sets that hold x were known)."""
    target = np.array([0.2, -0.1, 0.3, 2.5, -0.7, -3.0])

    def build(m):
        x, p = m.Variable(N, name="x"), m.Parameter(name="p")
        c = m.norm1(p * x) <= 1
        return m.Problem(m.Minimize(m.sum_squares(x - target)), [c, x >= -1, x <= 1]), x, [p], [c]

    _resolve_series(build, [(0.0,), (1.0,), (0.0,)])


@pytest.mark.parametrize("make", [
    lambda x, c: fm.KSparsePolytope(x, 3, c),
    lambda x, c: fm.L1Ball(x, c),
    lambda x, c: fm.LinfBall(x, c),
    lambda x, c: fm.Box(x, -c, c),
    lambda x, c: fm.Simplex(x, c),
], ids=["ksparse", "l1", "linf", "box", "simplex"])
def test_a_set_on_a_parameter_without_a_value_when_built_solves_once_it_has_one(make):
    """A set whose datum is a Parameter given its value only after the problem is built, next to a general
    row: the solve agrees with Clarabel (it crashed in the slack bound, which read the set's datum before
    the set had read its Parameter); with no value at all, the message names the Parameter."""
    n = 8
    r = np.random.default_rng(7)
    M, y = r.standard_normal((6, n)), r.standard_normal(6)
    x, c = fm.Variable(n), fm.Parameter(nonneg=True, name="c")
    row = fm.sum(x[:3]) <= 0.1
    prob = fm.Problem(fm.Minimize(fm.sum_squares(M @ x - y)), [make(x, c), row])
    with pytest.raises(fm.ModelError, match=r"parameter c has no value: set c.value before solving"):
        prob.solve()
    c.value = 0.5
    prob.solve(tol=1e-8, feas_tol=1e-8, max_iter=50000)
    assert prob.status == "optimal"
    X = cp.Variable(n)
    ref_set = {fm.KSparsePolytope: [cp.norm_inf(X) <= 0.5, cp.norm1(X) <= 1.5], fm.L1Ball: [cp.norm1(X) <= 0.5],
               fm.LinfBall: [cp.norm_inf(X) <= 0.5], fm.Box: [cp.abs(X) <= 0.5],
               fm.Simplex: [X >= 0, cp.sum(X) == 0.5]}[type(prob.constraints[0])]
    ref_row = cp.sum(X[:3]) <= 0.1
    ref = cp.Problem(cp.Minimize(cp.sum_squares(M @ X - y)), ref_set + [ref_row])
    ref.solve(solver=cp.CLARABEL)
    assert abs(prob.value - ref.value) <= OBJ_RTOL * max(1.0, abs(ref.value)), (prob.value, ref.value)
    np.testing.assert_allclose(x.value, X.value, atol=X_ATOL)
    np.testing.assert_allclose(row.dual_value, ref_row.dual_value, rtol=DUAL_RTOL, atol=DUAL_ATOL)


CENTERED = {"p * x + c": lambda p, x, c: p * x + c, "c - p * x": lambda p, x, c: c - p * x,
            "-(p * (2 * x) + c)": lambda p, x, c: -(p * (2 * x) + c), "x / p + c": lambda p, x, c: x / p + c}


@pytest.mark.parametrize("form", list(CENTERED))
@pytest.mark.parametrize("atom", list(ATOMS))
def test_a_parameter_multiple_plus_a_constant_alone_holds_x_as_a_moving_ball(atom, form):
    """norm(p * x + c) <= t is the ball norm(x + c / p) <= t / |p|, whose center moves with p (c a Parameter
    too): with nothing else holding x it was refused; it now holds x, and value, point and multiplier agree with
    Clarabel across re-solves (p > 0, a sign flip, c moved with p)."""
    name, r = ATOMS[atom]
    c0 = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2])

    def build(m):
        x, p, c = m.Variable(N, name="x"), m.Parameter(name="p"), m.Parameter(N, name="c")
        constraint = getattr(m, name)(CENTERED[form](p, x, c)) <= r
        return m.Problem(m.Minimize(m.sum_squares(x - 2 * C) + 0.1 * m.sum_squares(A @ x)), [constraint]), x, \
            [p, c], [constraint]

    _resolve_series(build, [(1.0, c0), (2.5, c0), (-0.5, 3 * c0), (1.5, -c0)])


@pytest.mark.parametrize("atom", list(ATOMS))
def test_a_zero_factor_plus_a_constant_reads_the_constant_against_the_bound(atom):
    """At p = 0, norm(p * x + c) <= t reads norm(c) <= t: next to a box on x it is dropped where that holds
    (multiplier 0) and the solve is "infeasible", naming the constraint, where it does not, as Clarabel says;
    p != 0 again agrees with Clarabel."""
    name, r = ATOMS[atom]
    small, large = np.full(N, 0.01), np.full(N, 0.6)  # norm(c) below, then above every t of ATOMS

    def build(m):
        x, p, c = m.Variable(N, name="x"), m.Parameter(name="p"), m.Parameter(N, name="c")
        constraint = getattr(m, name)(p * x + c) <= r
        prob = m.Problem(m.Minimize(m.sum_squares(x - 2 * C)), [constraint, x >= -1, x <= 1])
        return prob, x, [p, c], [constraint]

    _resolve_series(build, [(2.0, small), (0.0, small)])
    models = {m: build(m) for m in (fm, cp)}
    for m, (prob, _, (p, c), _) in models.items():
        p.value, c.value = 0.0, large
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        assert prob.status == "infeasible", m
    assert re.search(r"p \* x \+ c\) <= .*holds for no point.*p is 0, so it reads norm\(c\) <= t",
                     models[fm][0].stats.message)
    p, c = models[fm][2]
    p.value, c.value = -1.5, large
    models[fm][0].solve()
    assert models[fm][0].status == "optimal"


def test_a_zero_factor_plus_a_constant_with_nothing_else_holding_x_is_refused():
    """Alone, norm1(p * x + c) <= t at p = 0 (norm(c) <= t) bounds nothing, as norm1(p * x) <= t there: the
    solve is refused naming p, the constraint, what it reads and x."""
    x, p = fm.Variable(N, name="x"), fm.Parameter(value=0.0, name="p")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.norm1(p * x + 0.01) <= 1])
    with pytest.raises(fm.ModelError, match=r"norm1\(p \* x \+ 0.01\) <= 1: p is 0 at this solve, so the "
                                            r"constraint reads norm\(c\) <= t.*what holds x"):
        prob.solve()



@pytest.mark.parametrize("atom", list(ATOMS))
@pytest.mark.parametrize("shift, one_sided", [("p * (x - 1)", False), ("p * (2 * x - 1)", True)])
def test_a_factor_of_a_shifted_argument_gets_clarabels_multiplier(atom, shift, one_sided):
    """norm(p * (x - 1)) <= r (the factor of an argument that is shifted and scaled) is the ball
    norm(x - 1) <= r / |p| held as its preimage on x, next to the bound box whose sides its implied bounds close
    (x <= 2 alone: the box's lower side is the ball's, active where C pulls x down). Its dual_value agrees with
    Clarabel across re-solves (a sign flip, p = 0 where the box holds x, back): it was None."""
    target = np.array([-3.0, -2.0, 0.5, 1.2, -1.0, 2.0])
    scale = 2.0 if one_sided else 1.0
    name, r = ATOMS[atom]
    models = {}
    for m in (fm, cp):
        x, p = m.Variable(N, name="x"), m.Parameter(value=1.0, name="p")
        constraint = getattr(m, name)(p * (scale * x - 1.0)) <= r
        bounds = [x <= 2] if one_sided else [x <= 2, x >= -2]
        prob = m.Problem(m.Minimize(m.sum_squares(x - target) + 0.1 * m.sum_squares(A @ x)), [constraint] + bounds)
        models[m] = (prob, x, p, constraint)
    for value in ((1.0, -2.0, 0.5) if one_sided else (1.0, -2.0, 0.0, 0.5)):
        dual = _resolve_optimal_both(models, value)
        if value == 0.0:
            assert np.all(np.asarray(dual) == 0.0)
        else:
            assert np.max(dual) > 1e-2  # the ball binds: its multiplier is the one compared


CENTER_FORMS = {"norm2(x - q) <= 0.6": lambda m, x, q: m.norm2(x - q) <= 0.6,
                "norm1(q - x) <= 0.8": lambda m, x, q: m.norm1(q - x) <= 0.8,
                "abs(x - q) <= 0.25": lambda m, x, q: m.abs(x - q) <= 0.25,
                "sum_squares(x - q) <= 0.36": lambda m, x, q: m.sum_squares(x - q) <= 0.36,
                "norm_inf(2 * x - q + 1) <= 0.3": lambda m, x, q: m.norm_inf(2 * x - q + 1) <= 0.3}


@pytest.mark.parametrize("form", list(CENTER_FORMS))
def test_a_parameter_center_alone_holds_x(form):
    """norm(x - q) <= t with q a vector Parameter (a ball whose center is a Parameter, no factor) holds x as
    the ball around q read at each solve: alone it was refused ("not in any bounded set"); value, point and
    multiplier agree with Clarabel as q moves."""
    def build(m):
        x, q = m.Variable(N, name="x"), m.Parameter(N, name="q")
        constraint = CENTER_FORMS[form](m, x, q)
        return m.Problem(m.Minimize(m.sum_squares(x - 2 * C)), [constraint]), x, [q], [constraint]

    _resolve_series(build, [(np.zeros(N),), (C / 3,), (-C,), (np.ones(N),)])


SCALED_FORMS = {"p * norm1(x) <= 1": lambda m, x, p: p * m.norm1(x) <= 1,
                "norm2(x) * p <= 1": lambda m, x, p: m.norm2(x) * p <= 1,
                "norm_inf(x - 1) / p <= 0.5": lambda m, x, p: m.norm_inf(x - 1) / p <= 0.5,
                "p * abs(x) <= 0.5": lambda m, x, p: p * m.abs(x) <= 0.5,
                "p * sum_squares(x) <= 1": lambda m, x, p: p * m.sum_squares(x) <= 1,
                "sum_squares(x - 0.3) / p <= 1": lambda m, x, p: m.sum_squares(x - 0.3) / p <= 1,
                "p * quad_form(x, Q) <= 1": lambda m, x, p: p * m.quad_form(x, A.T @ A + 0.1 * np.eye(N)) <= 1}


@pytest.mark.parametrize("form", list(SCALED_FORMS))
def test_a_nonneg_parameter_times_a_norm_or_a_squared_form_matches_clarabel(form):
    """p * norm(e) <= t (p a nonneg Parameter, as CVXPY's DCP rules allow) is norm(p * e) <= t; p *
    sum_squares(e) <= t (also quad_form, / p) is sum_squares(e) <= t / p, its multiplier scaled back by p. Both
    were refused when the model was built ("can only be compared directly with data", "must be affine"); value,
    point and multiplier agree with Clarabel across re-solves."""
    def build(m):
        x, p = m.Variable(N, name="x"), m.Parameter(nonneg=True, name="p")
        constraint = SCALED_FORMS[form](m, x, p)
        return m.Problem(m.Minimize(m.sum_squares(x - 2 * C)), [constraint]), x, [p], [constraint]

    _resolve_series(build, [(1.0,), (2.0,), (0.5,), (3.0,)])


def test_a_parameter_times_a_convex_atom_needs_its_sign_and_a_squared_form_refuses_p_zero():
    """p * norm1(x) with p of unknown sign is not convex for p < 0 (CVXPY refuses it too): a ModelError when
    built, naming nonneg=True and the norm(p * x) form. p * norm2(x) <= 1 at p = 0 is dropped next to a box (as
    Clarabel: multiplier 0); p * sum_squares(x) <= 1 at p = 0 is a ModelError naming the constraint and p."""
    x = fm.Variable(N, name="x")
    with pytest.raises(fm.ModelError, match=r"p \* norm1\(x\) <= 1: p times a convex function is convex only where "
                                            r"it is >= 0: declare its Parameter nonneg=True.*norm\(p \* e\) <= t"):
        fm.Parameter(name="p") * fm.norm1(x) <= 1

    def build(m):
        x, p = m.Variable(N, name="x"), m.Parameter(nonneg=True, name="p")
        constraint = p * m.norm2(x) <= 1
        return m.Problem(m.Minimize(m.sum_squares(x - 2 * C)), [constraint, m.abs(x) <= 1]), x, [p], [constraint]

    _resolve_series(build, [(2.0,), (0.0,), (0.5,)])
    p = fm.Parameter(nonneg=True, value=0.0, name="p")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [p * fm.sum_squares(x) <= 1, fm.abs(x) <= 1])
    with pytest.raises(fm.ModelError, match=r"p \* sum_squares\(x\) <= 1: p is 0 at this solve, so the constraint "
                                            r"reads 0 <= t"):
        prob.solve()
