"""Budgets on selections of a nonnegative variable (``fm.sum(X[0]) == 1``, ``fm.sum(x[:3]) <= t``, a loop over
rows or columns), checked against CVXPY + Clarabel.

CVXPY users write per-row or per-slice budgets as often as ``fm.sum(X, axis=1)``. With ``X >= 0`` each group
``{x >= 0, sum x == t_g}`` (or ``<= t_g``) is a simplex, so the compiler makes them the sets of the axis form:
``Simplex(X, t, axis)`` where the groups are an axis's (the same iterations), else one simplex per group size
on the selected entries. They were refused with "a one-sided bound leaves X ... unbounded above", although
every entry is bounded. Each budget's ``dual_value`` is CVXPY's (from the simplex block's KKT conditions).
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets import Simplex

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-8, feas_tol=1e-8, max_iter=100000)
RTOL, ATOL = 1e-3, 1e-4

rng = np.random.default_rng(15)
C = rng.standard_normal((4, 5)) + 0.3
C23 = rng.standard_normal((2, 3)) + 0.3
X0 = rng.standard_normal(8) + 0.2
T_ROWS = np.array([0.5, 1.0, 2.0, 0.3])


def clarabel(prob):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL)


def solve_both(build):
    """The model solved by fwmodel and by CVXPY + Clarabel; values, and every constraint's dual_value, equal."""
    out = []
    for m in (fm, cp):
        objective, constraints = build(m)
        prob = m.Problem(m.Minimize(objective), constraints)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL, prob.stats.message
        else:
            clarabel(prob)
            assert prob.status == cp.OPTIMAL
        out.append((prob, constraints))
    (prob, ours), (ref, theirs) = out
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, abs(ref.value))
    for mine, them in zip(ours, theirs):
        assert mine.dual_value is not None, mine
        assert np.shape(mine.dual_value) == np.shape(them.dual_value), mine
        np.testing.assert_allclose(mine.dual_value, them.dual_value, rtol=RTOL, atol=ATOL, err_msg=repr(mine))
    return prob


def matrix(shape, target):
    return lambda constraints: lambda m: (lambda X: (m.sum_squares(X - target), constraints(m, X)))(m.Variable(shape))


rows, vector = matrix((4, 5), C), matrix((8,), X0)
MODELS = {
    "the review's model: X[0], X[1] == 1": matrix((2, 3), C23)(
        lambda m, X: [X >= 0, m.sum(X[0]) == 1, m.sum(X[1]) == 1]),
    "x[:3] == 1, x[3:] <= 1": vector(lambda m, x: [x >= 0, m.sum(x[:3]) == 1, x[3:] <= 1]),
    "X[1:] by axis == 1 and X[0] == 1": rows(lambda m, X: [X >= 0, m.sum(X[1:], axis=1) == 1, m.sum(X[0]) == 1]),
    "two slices cover x: == 1, == 2": vector(lambda m, x: [x >= 0, m.sum(x[:4]) == 1, m.sum(x[4:]) == 2]),
    "slices of unequal sizes: == 1, == 2": vector(lambda m, x: [x >= 0, m.sum(x[:3]) == 1, m.sum(x[3:]) == 2]),
    "x[:3] == 1, x[3:] <= 1.5 (a simplex and a simplex with <=)": vector(
        lambda m, x: [x >= 0, m.sum(x[:3]) == 1, m.sum(x[3:]) <= 1.5]),
    "index arrays: x[[4, 1]] == 1, x[[0, 2, 3, 5, 6, 7]] <= 0.5": vector(
        lambda m, x: [x >= 0, m.sum(x[[4, 1]]) == 1, m.sum(x[[0, 2, 3, 5, 6, 7]]) <= 0.5]),
    "row loop == 1": rows(lambda m, X: [X >= 0] + [m.sum(X[i]) == 1 for i in range(4)]),
    "row loop == t_i": rows(lambda m, X: [X >= 0] + [m.sum(X[i]) == T_ROWS[i] for i in range(4)]),
    "row loop <= t_i": rows(lambda m, X: [X >= 0] + [m.sum(X[i]) <= T_ROWS[i] for i in range(4)]),
    "column loop == 1": rows(lambda m, X: [X >= 0] + [m.sum(X[:, j]) == 1 for j in range(5)]),
    "column loop <= 1, t >= sum written reversed": rows(lambda m, X: [X >= 0] + [1 >= m.sum(X[:, j])
                                                                                  for j in range(5)]),
    "row loop, 2 * sum == 3, nonneg by a bound": rows(lambda m, X: [X >= 0] + [2 * m.sum(X[i]) == 3
                                                                               for i in range(4)]),
    "row halves: X[i, :2] == 1, X[i, 2:] <= 1": rows(
        lambda m, X: [X >= 0] + [m.sum(X[i, :2]) == 1 for i in range(4)] + [m.sum(X[i, 2:]) <= 1 for i in range(4)]),
    "a floor above 0 next to slice budgets": vector(
        lambda m, x: [x >= 0, x[0] >= 0.2, m.sum(x[:3]) == 1, m.sum(x[3:]) <= 2]),
    "a cap on entries the budgets hold (stays a row)": vector(
        lambda m, x: [x >= 0, m.sum(x[:4]) == 1, m.sum(x[4:]) == 1, m.sum(x[:2]) <= 0.3]),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_slice_budgets_match_cvxpy(name):
    solve_both(MODELS[name])


AXIS_FORMS = {  # slices written per group, and the same budgets by axis: the same sets, the same iterations
    "rows ==": (lambda m, X: [X >= 0] + [m.sum(X[i]) == 1 for i in range(4)],
                lambda m, X: [X >= 0, m.sum(X, axis=1) == 1]),
    "rows == t_i": (lambda m, X: [X >= 0] + [m.sum(X[i]) == T_ROWS[i] for i in range(4)],
                    lambda m, X: [X >= 0, m.sum(X, axis=1) == T_ROWS]),
    "rows <=": (lambda m, X: [X >= 0] + [m.sum(X[i]) <= 1 for i in range(4)],
                lambda m, X: [X >= 0, m.sum(X, axis=1) <= 1]),
    "columns ==": (lambda m, X: [X >= 0] + [m.sum(X[:, j]) == 0.8 for j in range(5)],
                   lambda m, X: [X >= 0, m.sum(X, axis=0) == 0.8]),
    "columns <=": (lambda m, X: [X >= 0] + [m.sum(X[:, j]) <= 0.5 for j in range(5)],
                   lambda m, X: [X >= 0, m.sum(X, axis=0) <= 0.5]),
    "X[0] and X[1:] by axis": (lambda m, X: [X >= 0, m.sum(X[0]) == 1, m.sum(X[1:], axis=1) == 1],
                               lambda m, X: [X >= 0, m.sum(X, axis=1) == 1]),
    "rows with caps (a capped simplex)": (lambda m, X: [X >= 0, X <= 0.4] + [m.sum(X[i]) == 1 for i in range(4)],
                                          lambda m, X: [X >= 0, X <= 0.4, m.sum(X, axis=1) == 1]),
    "rows and columns (two simplices)": (
        lambda m, X: [X >= 0] + [m.sum(X[i]) == 1.25 for i in range(4)] + [m.sum(X[:, j]) == 1 for j in range(5)],
        lambda m, X: [X >= 0, m.sum(X, axis=1) == 1.25, m.sum(X, axis=0) == 1]),
}
UNIQUE_DUALS = {name for name in AXIS_FORMS if "columns" not in name or "rows" not in name}


@pytest.mark.parametrize("name", list(AXIS_FORMS))
def test_slices_are_the_axis_forms_sets(name):
    """The budgets written per row or column compile to the axis form's sets and rows and take its iterations
    (the same point); both at CVXPY's optimum, each budget's dual_value CVXPY's (where it is unique: rows and
    columns together leave a shift, see the next test)."""
    solved = []
    for form in AXIS_FORMS[name]:
        X = fm.Variable((4, 5), name="X")
        constraints = form(fm, X)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), constraints)
        compiled = prob.compile()
        prob.solve(**TIGHT)
        assert prob.status == fm.OPTIMAL
        solved.append((prob, compiled, X.value))
        if len(solved) == 1:
            sliced = constraints
    (prob, compiled, value), (axis_prob, axis_compiled, axis_value) = solved
    assert [repr(b.set) for b in compiled.blocks] == [repr(b.set) for b in axis_compiled.blocks]
    assert compiled.M.shape == axis_compiled.M.shape
    assert prob.stats.iterations == axis_prob.stats.iterations
    np.testing.assert_allclose(value, axis_value, rtol=0, atol=1e-12)
    Xc = cp.Variable((4, 5))
    ref_constraints = AXIS_FORMS[name][0](cp, Xc)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)), ref_constraints)
    clarabel(ref)
    assert abs(prob.value - ref.value) <= 1e-5 * max(1.0, ref.value)
    if name in UNIQUE_DUALS:
        for mine, them in zip(sliced, ref_constraints):
            assert np.shape(mine.dual_value) == np.shape(them.dual_value), mine
            np.testing.assert_allclose(mine.dual_value, them.dual_value, rtol=RTOL, atol=ATOL, err_msg=repr(mine))


def test_row_loop_is_one_batched_simplex_without_rows():
    X = fm.Variable((2, 3))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - 0.3)), [X >= 0, fm.sum(X[0]) == 1, fm.sum(X[1]) == 1])
    compiled = prob.compile()
    assert compiled.M.shape[0] == 0
    (blk,) = compiled.blocks
    assert isinstance(blk.set, Simplex) and blk.set.axis == 1 and blk.set.equality and blk.set.total == 1.0
    prob.solve(**TIGHT)
    np.testing.assert_allclose(X.value, 1 / 3, atol=1e-6)  # (the projection of 0.3 onto each row's simplex)


def test_slices_of_a_vector_are_one_copy_of_their_entries():
    """Two budgets of equal size covering x: one simplex on x's entries as a (2, 4) selection (no rows); budgets
    of two sizes: a simplex each, still one copy of every entry."""
    x = fm.Variable(8)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - X0)), [x >= 0, fm.sum(x[4:]) == 2, fm.sum(x[:4]) == 1])
    compiled = prob.compile()
    (blk,) = compiled.blocks
    assert isinstance(blk.set, Simplex) and blk.set.shape == (2, 4) and compiled.M.shape[0] == 0
    x = fm.Variable(8)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - X0)), [x >= 0, fm.sum(x[:3]) == 1, fm.sum(x[3:]) == 2])
    compiled = prob.compile()
    assert sorted(b.set.size for b in compiled.blocks) == [3, 5] and compiled.M.shape[0] == 0


def test_rows_and_columns_by_loops_give_valid_multipliers():
    """Doubly stochastic by loops: the two families are two simplices, as by axis. The rows' and columns'
    multipliers are CVXPY's up to the shift (r + s, c - s) that leaves them a solution; X >= 0's is CVXPY's."""
    M4 = np.random.default_rng(2026).standard_normal((4, 4))
    out = []
    for m in (fm, cp):
        X = m.Variable((4, 4))
        floor = X >= 0
        r = [m.sum(X[i]) == 1 for i in range(4)]
        c = [m.sum(X[:, j]) == 1 for j in range(4)]
        prob = m.Problem(m.Minimize(m.sum_squares(X - M4)), [floor] + r + c)
        if m is fm:
            prob.solve(**TIGHT)
            assert prob.status == fm.OPTIMAL
        else:
            clarabel(prob)
        out.append((prob.value, floor.dual_value, np.array([k.dual_value for k in r]),
                    np.array([k.dual_value for k in c])))
    (value, k, r, c), (ref, k_ref, r_ref, c_ref) = out
    assert abs(value - ref) <= 1e-6 * max(1.0, ref)
    np.testing.assert_allclose(k, k_ref, rtol=RTOL, atol=ATOL)
    shift = np.mean(r - r_ref)
    np.testing.assert_allclose(r - shift, r_ref, atol=1e-3)
    np.testing.assert_allclose(c + shift, c_ref, atol=1e-3)


@pytest.mark.parametrize("form", ["==", "<="])
def test_a_negative_slice_total_makes_the_problem_infeasible_as_in_cvxpy(form):
    out = []
    for m in (fm, cp):
        X = m.Variable((3, 4), name="X")
        totals = [1.0, -1.0, 2.0]
        budgets = [(m.sum(X[i]) == t) if form == "==" else (m.sum(X[i]) <= t) for i, t in enumerate(totals)]
        prob = m.Problem(m.Minimize(m.sum_squares(X - 1.0)), [X >= 0] + budgets)
        prob.solve() if m is fm else clarabel(prob)
        out.append(prob)
    assert out[1].status == cp.INFEASIBLE
    assert out[0].status == fm.INFEASIBLE
    assert "does not hold" in out[0].stats.message and "total is -1 < 0" in out[0].stats.message
    assert "X[1]" in out[0].stats.message  # the budget named


@pytest.mark.parametrize("form", ["== t[i]", "<= t[i]", "== t (one scalar)", "x[:3] == t, x[3:] <= 2 t"])
def test_parameter_totals_are_reread_negative_is_infeasible_then_solves_again(form):
    probs, params, budgets = [], [], []
    for m in (fm, cp):
        if form.startswith("x"):
            x, t = m.Variable(8), m.Parameter()
            own = [m.sum(x[:3]) == t, m.sum(x[3:]) <= 2 * t]
            target = X0
        else:
            x = m.Variable((4, 5))
            t = m.Parameter(4) if "[i]" in form else m.Parameter()
            total = (lambda i: t[i]) if "[i]" in form else (lambda i: t)
            own = [(m.sum(x[i]) == total(i)) if "==" in form else (m.sum(x[i]) <= total(i)) for i in range(4)]
            target = C
        probs.append(m.Problem(m.Minimize(m.sum_squares(x - target)), [x >= 0] + own))
        params.append(t)
        budgets.append(own)
    vector = "[i]" in form
    good = [T_ROWS, np.array([2.0, 0.1, 0.7, 1.0])] if vector else [1.0, 0.4]
    bad = np.array([0.5, -1.0, 2.0, 0.3]) if vector else -1.0
    for value, expected in ((good[0], "optimal"), (bad, "infeasible"), (good[1], "optimal")):
        for t in params:
            t.value = value
        probs[0].solve(**TIGHT)
        clarabel(probs[1])
        assert probs[1].status == expected
        assert probs[0].status == expected, probs[0].stats.message
        if expected == "infeasible":
            assert "total is -1 < 0" in probs[0].stats.message and params[0].name in probs[0].stats.message
            continue
        assert abs(probs[0].value - probs[1].value) <= 1e-5 * max(1.0, abs(probs[1].value))
        for mine, them in zip(*budgets):
            np.testing.assert_allclose(mine.dual_value, them.dual_value, rtol=RTOL, atol=ATOL)


def test_bounded_entries_are_not_called_unbounded():
    """Where a budget bounds an entry but stays a row, the message names it and the reason, not 'unbounded';
    an entry that nothing bounds still gets the one-sided-bound message."""
    x = fm.Variable(6, name="x")
    weighted = fm.Problem(fm.Minimize(fm.sum_squares(x - 0.3)),
                          [x >= 0, np.array([1.0, 2.0, 3.0]) @ x[:3] == 1, x[3:] <= 1])
    with pytest.raises(fm.ModelError) as info:
        weighted.solve()
    text = str(info.value)
    assert "unbounded" not in text and "bounds it above (to at most 1)" in text and "not all equal" in text
    # (x >= -1 with a cap on x[2] too: not one side only, so not a mirrored simplex; the other two entries
    # are >= -1, so x_0 <= 3)
    below = fm.Problem(fm.Minimize(fm.sum_squares(x - 0.3)),
                       [x >= -1, x[2] <= 5, fm.sum(x[:3]) == 1, x[3:] <= 1])
    with pytest.raises(fm.ModelError) as info:
        below.solve()
    text = str(info.value)
    assert "unbounded" not in text and "at most 3" in text and "floor >= 0" in text
    loose = fm.Problem(fm.Minimize(fm.sum_squares(x - 0.3)), [x >= 0, fm.sum(x[:3]) == 1])
    with pytest.raises(fm.ModelError, match=r"leaves x \(flat entry 3 and 2 more\) unbounded above"):
        loose.solve()
    at_least = fm.Problem(fm.Minimize(fm.sum_squares(x - 0.3)), [x >= 0, fm.sum(x[:3]) >= 1, x[3:] <= 1])
    with pytest.raises(fm.ModelError, match=r"leaves x \(flat entry 0 and 2 more\) unbounded above"):
        at_least.solve()


@pytest.mark.parametrize("form", ["p * sum(x) == 1", "p * sum(x) <= 1", "sum(x) / p == 1", "p * sum(X, axis=1) == 1"])
def test_a_budget_whose_coefficients_read_a_parameter_follows_the_parameter(form):
    """A budget whose coefficients a Parameter multiplies became a simplex with the coefficient of the first solve:
    at p = 2 and 0.5 the solve ended "optimal" at p = 1's point (0.153 against Clarabel's 0.385 and 0.153 / 0.09).
    Such a budget now stays a row, which follows p; next to a box the model solves at Clarabel's value at every p,
    and without one it is refused, naming the row and why."""
    c = np.array([0.5, 0.2, 0.1, -0.3, 0.7, 0.4])

    def build(m, x, p):
        X = x if form.startswith("p * sum(X") else None
        budget = {"p * sum(x) == 1": lambda: p * m.sum(x) == 1, "p * sum(x) <= 1": lambda: p * m.sum(x) <= 1,
                  "sum(x) / p == 1": lambda: m.sum(x) / p == 1,
                  "p * sum(X, axis=1) == 1": lambda: p * m.sum(X, axis=1) == 1}[form]()
        return [x >= 0, budget]

    shape = (2, 3) if "X" in form else (6,)
    target = c.reshape(shape)
    p, x = fm.Parameter(nonneg=True, value=1.0), fm.Variable(shape)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), build(fm, x, p) + [x <= 1])
    for value in (1.0, 2.0, 0.5):
        p.value = value
        prob.solve(tol=1e-8)
        z = cp.Variable(shape)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(z - target)), build(cp, z, value) + [z <= 1])
        ref.solve(solver=cp.CLARABEL)
        assert prob.status == "optimal" and prob.value == pytest.approx(ref.value, rel=1e-5, abs=1e-7)
    alone = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), build(fm, x, p))
    with pytest.raises(fm.ModelError, match="stays a row because its coefficients read a Parameter"):
        alone.solve()
