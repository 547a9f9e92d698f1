"""``X >= 0`` with ``fm.sum(X, axis) <= t``: one "simplex with <=" per group, checked against CVXPY + Clarabel.

CVXPY users bound the rows (or columns) of a nonnegative matrix by budgets
written as inequalities. Each group's set ``{x >= 0, sum x <= t_g}`` is the
convex hull of the simplex and the origin, so the compiler makes the rows a
batched ``Simplex(X, t, axis, equality=False)`` (with ``t`` one number per
group where the bounds differ) instead of slacks on a variable nothing
bounded above (which was refused). The rows' ``dual_value`` comes from the
simplex block's KKT conditions and is CVXPY's (shape and sign).
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets import Simplex

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-8, feas_tol=1e-8, max_iter=100000)
RTOL, ATOL = 1e-3, 1e-4

rng = np.random.default_rng(7)
C = rng.standard_normal((4, 5)) + 0.3
C3 = rng.standard_normal((2, 3, 3)) + 0.3
T_ROWS = np.array([0.5, 1.0, 2.0, 0.05])  # (a total 0 leaves the multipliers not unique)
T_COLS = np.array([0.3, 1.0, 0.2, 3.0, 0.6])


def solve_both(build):
    """The model solved by fwmodel and by CVXPY + Clarabel: ``(value, checked constraints)`` of each."""
    out = []
    for m in (fm, cp):
        objective, constraints, checked = build(m)
        prob = m.Problem(m.Minimize(objective), constraints)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=cp.CLARABEL)
            assert prob.status == cp.OPTIMAL
        out.append((prob.value, checked, prob))
    (value, ours, prob), (ref, theirs, _) = out
    assert abs(value - ref) <= 1e-5 * max(1.0, abs(ref))
    for mine, them in zip(ours, theirs):
        assert mine.dual_value is not None, mine
        assert np.shape(mine.dual_value) == np.shape(them.dual_value) == tuple(mine.shape), mine
        np.testing.assert_allclose(mine.dual_value, them.dual_value, rtol=RTOL, atol=ATOL)
    return prob


def var(m, shape, **kw):
    return m.Variable(shape, **kw)


MODELS = {
    "rows <= 1": lambda m: (lambda X: (m.sum_squares(X - C), [k1 := X >= 0, k := m.sum(X, axis=1) <= 1],
                                       [k, k1]))(var(m, (4, 5))),
    "columns <= 1": lambda m: (lambda X: (m.sum_squares(X - C), [X >= 0, k := m.sum(X, axis=0) <= 1],
                                          [k]))(var(m, (4, 5))),
    "rows <= t, t a vector": lambda m: (lambda X: (m.sum_squares(X - C), [k1 := X >= 0, k := m.sum(X, axis=1) <= T_ROWS],
                                                   [k, k1]))(var(m, (4, 5))),
    "columns, t >= sum (reversed)": lambda m: (lambda X: (m.sum_squares(X - C), [X >= 0, k := T_COLS >= m.sum(X, axis=0)],
                                                          [k]))(var(m, (4, 5))),
    "nonneg=True, 2 sum <= 3": lambda m: (lambda X: (m.sum_squares(X - C), [k := 2 * m.sum(X, axis=1) <= 3],
                                                     [k]))(var(m, (4, 5), nonneg=True)),
    "rows with caps (capped simplices)": lambda m: (lambda X: (m.sum_squares(X - C), [
        X >= 0, k := m.sum(X, axis=1) <= 1, k2 := X <= 0.4], [k, k2]))(var(m, (4, 5))),
    "rows <= t with caps": lambda m: (lambda X: (m.sum_squares(X - C), [
        X >= 0, k := m.sum(X, axis=1) <= T_ROWS, X <= 0.4], [k]))(var(m, (4, 5))),
    "tables of a 3-D array": lambda m: (lambda X: (m.sum_squares(X - C3), [
        X >= 0, k := m.sum(X, axis=(1, 2)) <= 1], [k]))(var(m, (2, 3, 3))),
    "rows == t, t a vector (was refused: one total per simplex)": lambda m: (lambda X: (m.sum_squares(X - C), [
        k1 := X >= 0, k := m.sum(X, axis=1) == T_ROWS], [k, k1]))(var(m, (4, 5))),
    "columns == t, nonneg=True": lambda m: (lambda X: (m.sum_squares(X - C), [
        k := m.sum(X, axis=0) == T_COLS], [k]))(var(m, (4, 5), nonneg=True)),
    "slack budgets, linear + small quadratic": lambda m: (lambda X: (
        m.sum(m.multiply(C, X)) + 0.1 * m.sum_squares(X), [X >= 0, k := m.sum(X, axis=1) <= 2], [k]))(var(m, (4, 5))),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_axis_budgets_match_cvxpy(name):
    solve_both(MODELS[name])


def test_rows_budget_is_a_batched_simplex_without_rows():
    X = fm.Variable((4, 5))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [X >= 0, fm.sum(X, axis=1) <= 1])
    compiled = prob.compile()
    assert compiled.M.shape[0] == 0
    (blk,) = compiled.blocks
    assert isinstance(blk.set, Simplex) and blk.set.axis == 1 and not blk.set.equality


def test_vector_total_is_one_per_group_and_a_parameter_is_reread():
    """A Parameter vector of row totals is re-read at each solve (no recompilation), as CVXPY reads it."""
    t = fm.Parameter(4, nonneg=True, value=T_ROWS)
    tc = cp.Parameter(4, nonneg=True, value=T_ROWS)
    X, Xc = fm.Variable((4, 5)), cp.Variable((4, 5))
    k, kc = fm.sum(X, axis=1) <= t, cp.sum(Xc, axis=1) <= tc
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [X >= 0, k])
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)), [Xc >= 0, kc])
    for value in (T_ROWS, np.array([2.0, 0.1, 0.7, 1.0])):
        t.value, tc.value = value, value
        prob.solve(**TIGHT)
        ref.solve(solver=cp.CLARABEL)
        assert prob.status == fm.OPTIMAL
        assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, ref.value)
        np.testing.assert_allclose(X.value.sum(axis=1), Xc.value.sum(axis=1), atol=1e-4)
        np.testing.assert_allclose(k.dual_value, kc.dual_value, rtol=RTOL, atol=ATOL)


def test_simplex_total_per_group_lmo_and_bounds():
    """fm.Simplex with one total per group: the LMO against brute force over each group's vertices."""
    X = fm.Variable((3, 4))
    t = np.array([1.0, 0.0, 2.5])
    s = Simplex(X, t, axis=1, equality=False)
    lo, hi = s.coordinate_bounds()
    np.testing.assert_array_equal(hi.reshape(3, 4), np.repeat(t[:, None], 4, axis=1))
    for seed in range(5):
        d = np.random.default_rng(seed).standard_normal((3, 4))
        v = s.lmo(d)
        for g in range(3):  # the group's vertices: the origin and t_g e_j
            candidates = [0.0] + [t[g] * d[g, j] for j in range(4)]
            assert abs(float(d[g] @ v[g]) - min(candidates)) <= 1e-12
        assert s.contains(v)
    with pytest.raises(fm.ModelError, match="one per group"):
        Simplex(X, np.ones(4), axis=1)
    with pytest.raises(fm.ModelError, match="nonnegative"):
        Simplex(X, np.array([1.0, -1.0, 1.0]), axis=1)


def test_rows_and_columns_both_bounded_give_valid_multipliers():
    """Doubly substochastic: two simplices on X (two copies). The optimum has an entry alone in its row and
    column (1 there), so the multipliers are not unique (row + column is): checked by KKT, value by CVXPY."""
    X, Xc = fm.Variable((4, 5)), cp.Variable((4, 5))
    k, k2 = fm.sum(X, axis=1) <= 1, fm.sum(X, axis=0) <= 1
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - 2 * C)), [X >= 0, k, k2])
    prob.solve(**TIGHT)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - 2 * C)), [Xc >= 0, cp.sum(Xc, axis=1) <= 1,
                                                                cp.sum(Xc, axis=0) <= 1])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL and abs(prob.value - ref.value) <= 1e-5 * ref.value
    nu, mu = k.dual_value, k2.dual_value
    assert nu.shape == (4,) and mu.shape == (5,) and nu.min() >= 0 and mu.min() >= 0
    # stationarity: 2 (X - 2C) + nu_i + mu_j = floor multiplier >= 0, zero where X_ij > 0
    floor = 2 * (X.value - 2 * C) + nu[:, None] + mu[None, :]
    assert floor.min() >= -1e-5
    assert np.abs(floor[X.value > 1e-5]).max() <= 1e-4
    # complementary slackness: a multiplier only on a budget that binds
    assert np.all(nu * (1 - X.value.sum(axis=1)) <= 1e-5) and np.all(mu * (1 - X.value.sum(axis=0)) <= 1e-5)


X0 = np.random.default_rng(2026).standard_normal(8)
FLOORS = {
    "x >= 0, sum(x) <= 1, x[0] >= 0.2": lambda m, x: [k1 := x >= 0, k := m.sum(x) <= 1, k2 := x[0] >= 0.2],
    "x >= 0, sum(x) == 1, x[0] >= 0.2": lambda m, x: [k1 := x >= 0, k := m.sum(x) == 1, k2 := x[0] >= 0.2],
    "x >= 0.05, sum(x) == 1": lambda m, x: [k1 := x >= 0.05, k := m.sum(x) == 1],
    "x >= 0.05, sum(x) == 1, x <= 0.4": lambda m, x: [x >= 0.05, k := m.sum(x) == 1, k2 := x <= 0.4],
}


@pytest.mark.parametrize("name", list(FLOORS))
def test_floors_above_zero_next_to_a_budget(name):
    """A budget on x >= lo with lo >= 0 (not all 0) was left a row with a slack, and x unbounded above was
    refused; the simplex holds x >= 0 and the budget, a box the floors above 0 (a capped simplex where it is
    the only other set). Values and every dual_value as CVXPY's."""
    def build(m):
        x = m.Variable(8)
        constraints = FLOORS[name](m, x)
        return m.sum_squares(x - X0), constraints, constraints

    solve_both(build)


def test_doubly_stochastic_by_constraints_floor_duals_add_up_over_both_simplices():
    """X >= 0 with rows == 1 and columns == 1: two simplices hold X >= 0, each a share of the floor's
    multiplier; X >= 0's dual_value is their sum (it was one block's share: 0.67 where CVXPY has 2.11).
    The rows' and columns' multipliers are CVXPY's up to the shift (r + s, c - s) that leaves them a
    solution (the rows and the columns both sum to n)."""
    M4 = np.random.default_rng(2026).standard_normal((4, 4))
    out = []
    for m in (fm, cp):
        X = m.Variable((4, 4))
        k, r, c = X >= 0, m.sum(X, axis=1) == 1, m.sum(X, axis=0) == 1
        prob = m.Problem(m.Minimize(m.sum_squares(X - M4)), [k, r, c])
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL
        else:
            prob.solve(solver=cp.CLARABEL)
        out.append((prob.value, k.dual_value, r.dual_value, c.dual_value))
    (value, k, r, c), (ref, k_ref, r_ref, c_ref) = out
    assert abs(value - ref) <= 1e-6 * max(1.0, ref)
    np.testing.assert_allclose(k, k_ref, rtol=RTOL, atol=ATOL)
    shift = r - r_ref
    np.testing.assert_allclose(shift, shift.mean(), atol=1e-4)
    np.testing.assert_allclose(c - c_ref, -shift.mean(), atol=1e-4)


def test_a_simplex_and_a_box_under_a_row_share_the_floor_multiplier():
    """x >= 0, sum(x) == 1, x <= 0.3 with a general row: the simplex and the box stay two copies, both at
    the floor 0; x >= 0's multiplier is the sum of their shares (CVXPY)."""
    def build(m):
        x = m.Variable(8)
        constraints = [k := x >= 0, e := m.sum(x) == 1, x <= 0.3, x[0] + x[1] <= 0.4]
        return m.sum_squares(x - X0), constraints, [k, e]

    solve_both(build)


# Beyond JOINT_GROUPS_LIMIT (8) groups the engine keeps no joint active set; a budget `<= t`
# (the origin a vertex too) or with a total per group had no per-group steps then and fell to plain
# FW: 1,996 iterations on the (3, 20) model below, 2,215-4,654 on the others, with the budgets'
# dual_value zero where an iterate sat a little inside a binding total (Clarabel: up to 3.7).
MANY_GROUPS = [
    ((3, 20), 0, 1.0, "<="),
    ((6, 30), 0, 1.5, "<="),
    ((40, 4), 1, np.linspace(0.5, 2.0, 40), "<="),
    ((40, 4), 1, np.linspace(0.5, 2.0, 40), "=="),
    ((3, 4, 5), 2, 1.0, "<="),
]


@pytest.mark.parametrize("shape, axis, total, sense", MANY_GROUPS)
def test_many_groups_take_per_group_pairwise_steps_and_give_cvxpy_duals(shape, axis, total, sense):
    """The defaults project the simplices (a projection model: one step); ``projection=False`` moves them by
    per-group pairwise steps. Both give CVXPY's value and budget duals."""
    target = np.random.default_rng(1).standard_normal(shape)

    def model(m):
        X = m.Variable(shape)
        sums = m.sum(X, axis=axis)
        budget = sums <= total if sense == "<=" else sums == total
        return m.Problem(m.Minimize(m.sum_squares(X - target)), [X >= 0, budget]), budget

    ref, ref_budget = model(cp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CVXPY's note on 3-D expressions
        ref.solve(solver=cp.CLARABEL)
    y_cp = np.asarray(ref_budget.dual_value, dtype=float)
    for options, kind in (({}, "projection"), (dict(projection=False), "pairwise")):
        prob, budget = model(fm)
        prob.solve(**options)
        assert prob.status == fm.OPTIMAL
        assert prob.stats.iterations <= 100
        assert prob.stats.step_counts.get(kind, 0) > 0
        assert prob.value == pytest.approx(ref.value, rel=1e-4, abs=1e-6)
        y_fm = np.asarray(budget.dual_value, dtype=float)
        assert y_fm.shape == y_cp.shape
        np.testing.assert_allclose(y_fm, y_cp, atol=1e-2 * max(1.0, np.max(np.abs(y_cp))))


def test_the_origin_as_an_entry_of_every_group_against_brute_force():
    # The per-group step with the origin as a vertex: the projection of a point onto
    # {x >= 0, sum x <= t} per column, in closed form: clip at 0 if that is inside, else the simplex projection.
    target = np.random.default_rng(3).standard_normal((4, 12)) + 0.2
    t = 0.8

    def project(v):
        w = np.maximum(v, 0.0)
        if w.sum() <= t:
            return w
        u = np.sort(v)[::-1]
        css = np.cumsum(u) - t
        k = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
        return np.maximum(v - css[k] / (k + 1), 0.0)

    expected = np.column_stack([project(target[:, j]) for j in range(target.shape[1])])
    X = fm.Variable(target.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - target)), [fm.Simplex(X, t, axis=0, equality=False)])
    prob.solve(tol=1e-9)
    assert prob.status == fm.OPTIMAL
    np.testing.assert_allclose(X.value, expected, atol=1e-4)


@pytest.mark.parametrize("form", ["sum(x) <= t", "sum(x) == t", "sum(X, axis=0) <= t", "sum(X, axis=0) == t",
                                  "sum(X, axis=0) <= t per group"])
def test_a_negative_budget_total_makes_the_problem_infeasible_as_in_cvxpy(form):
    # x >= 0 with a total below 0 holds for no x: CVXPY (Clarabel) says infeasible; this raised
    # "Simplex: total must be nonnegative", naming a set the model never wrote.
    out = []
    for m in (fm, cp):
        if form.startswith("sum(x)"):
            x = m.Variable(5)
            lhs, total = m.sum(x), -1.0
        else:
            x = m.Variable((3, 12))
            lhs = m.sum(x, axis=0)
            total = np.r_[np.ones(11), -1.0] if form.endswith("per group") else -1.0
        budget = lhs <= total if "<=" in form else lhs == total
        prob = m.Problem(m.Minimize(m.sum_squares(x - 1.0)), [x >= 0, budget])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        out.append(prob)
    assert out[1].status == cp.INFEASIBLE
    assert out[0].status == fm.INFEASIBLE
    assert "does not hold" in out[0].stats.message and "total is -1 < 0" in out[0].stats.message


@pytest.mark.parametrize("form", ["sum(x) <= t", "sum(x) == t", "sum(X, axis=0) <= t per group",
                                  "sum(X, axis=0) == t per group"])
def test_a_budget_total_a_parameter_makes_negative_is_infeasible_then_solves_again(form):
    # The same as above with the total a Parameter: its value is read at each solve, so a negative one
    # makes that solve "infeasible" as in CVXPY (this raised "Simplex: total must be nonnegative"), and the
    # next value >= 0 solves again, to CVXPY's optimum.
    probs, totals = [], []
    for m in (fm, cp):
        if form.startswith("sum(x)"):
            x = m.Variable(5)
            lhs, t = m.sum(x), m.Parameter()
        else:
            x = m.Variable((3, 4))
            lhs, t = m.sum(x, axis=0), m.Parameter(4)
        budget = lhs <= t if "<=" in form else lhs == t
        probs.append(m.Problem(m.Minimize(m.sum_squares(x - 1.0)), [x >= 0, budget]))
        totals.append(t)
    good = 2.0 if form.startswith("sum(x)") else np.array([0.5, 1.0, 2.0, 0.0])
    bad = -1.0 if form.startswith("sum(x)") else np.array([0.5, -1.0, 2.0, 0.0])
    for value, expected in ((good, "optimal"), (bad, "infeasible"), (good, "optimal")):
        for t in totals:
            t.value = value
        probs[0].solve(tol=1e-8)
        probs[1].solve(solver=cp.CLARABEL)
        assert probs[1].status == expected
        assert probs[0].status == expected, probs[0].stats.message
        if expected == "infeasible":
            assert "total is -1 < 0" in probs[0].stats.message and totals[0].name in probs[0].stats.message
        else:
            assert abs(probs[0].value - probs[1].value) <= 1e-5 * max(1.0, abs(probs[1].value))


def test_a_total_below_zero_by_rounding_is_zero_and_a_negative_group_is_named():
    # -1e-12 is 0 written with rounding (CVXPY solves it: x = 0); a clearly negative group is named
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [x >= 0, fm.sum(x) <= -1e-12])
    prob.solve()
    assert prob.status == fm.OPTIMAL
    np.testing.assert_allclose(x.value, 0.0, atol=1e-9)
    X = fm.Variable((3, 4))
    t = fm.Parameter(4, value=np.array([1.0, 1.0, -0.5, 1.0]), name="t")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - 1.0)), [X >= 0, fm.sum(X, axis=0) <= t])
    prob.solve()
    assert prob.status == fm.INFEASIBLE
    assert "in group 2" in prob.stats.message and "t" in prob.stats.message


def test_moves_to_and_from_the_origin_take_the_models_whole_step():
    # A budget far from binding: the optimum is the target itself (closed form). A move to or from
    # the origin changes one coordinate, so its curvature counts the objective's once; counted twice
    # (as for a pair), each move went half way: 589 iterations here at tol=1e-6 (388 with the defaults).
    target = np.random.default_rng(11).uniform(0.5, 1.0, (9, 30))
    X = fm.Variable(target.shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - target)), [X >= 0, fm.sum(X, axis=1) <= 100.0])
    prob.solve(tol=1e-6)
    assert prob.status == fm.OPTIMAL
    assert prob.stats.iterations <= 300
    np.testing.assert_allclose(X.value, target, atol=1e-3)


def test_slack_budgets_have_zero_multipliers_as_in_cvxpy():
    # Every row sum ends near 0.66 < 1: complementary slackness gives 0 (Clarabel: 0); the stationarity
    # estimate alone gave up to 0.048 from the solve's residual gradient.
    rng_ = np.random.default_rng(0)
    U, _, Vt = np.linalg.svd(rng_.standard_normal((25, 20)), full_matrices=False)
    W = U @ np.diag(np.logspace(0, 2, 20)) @ Vt
    B = rng_.standard_normal((25, 4))
    duals = []
    for m in (fm, cp):
        X = m.Variable((20, 4))
        budget = m.sum(X, axis=1) <= 1.0
        prob = m.Problem(m.Minimize(m.sum_squares(W @ X - B)), [X >= 0, budget])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        duals.append(np.asarray(budget.dual_value, dtype=float))
    assert np.max(np.abs(duals[1])) < 1e-6  # slack in Clarabel's answer too
    np.testing.assert_allclose(duals[0], duals[1], atol=1e-6)
