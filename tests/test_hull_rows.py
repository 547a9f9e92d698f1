"""Rows nearly parallel to a set's own sums (fwmodel/engine/hull_rows.py, fwmodel/sets/hulls.py).

A user row such as ``(1 + 1e-4 noise) @ y == b`` on a simplex, or a weighted sum close to a
Birkhoff polytope's row sum, constrains the set only through its small part off the set's
sums; written as is it ended "optimal" up to 7.6 % below Clarabel's f*, or at max_iter
(benchmarks/hull_rows.py). The engine keeps such rows as that part.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.sets.hulls import GroupSums, RowColumnSums

from _benchmarks import benchmark

DEFAULT_TOL = 1e-4


@pytest.mark.parametrize("family, eps, seed", [("simplex", 1e-4, 2), ("portfolio", 1e-5, 0), ("birkhoff", 1e-4, 1),
                                               ("capped", 1e-4, 1), ("two_copies", 1e-4, 2), ("simplex", 1e-2, 2),
                                               ("preimage", 1e-4, 2), ("simplex_le", 1e-4, 0), ("simplex_le", 1e-2, 1),
                                               ("priced", 1e-4, 1)])
def test_nearly_parallel_rows_optimal_within_tol_of_clarabel(family, eps, seed):
    prob, row, ref, row_cp = benchmark("hull_rows").FAMILIES[family](seed, eps)
    prob.solve()
    f_star = ref.solve(solver="CLARABEL")
    assert prob.status == "optimal", prob.stats
    assert abs(prob.value - f_star) <= 10 * DEFAULT_TOL * abs(f_star), (prob.value, f_star)
    # the row's dual is Clarabel's (the multiplier of its part off the sums is the row's own; an inequality's
    # slack is in that part's units, compiler/lowering.py ``_slack_units``)
    dual, dual_ref = float(np.ravel(row.dual_value)[0]), float(np.ravel(row_cp.dual_value)[0])
    assert abs(dual - dual_ref) <= 0.05 * abs(dual_ref), (dual, dual_ref)
    # the returned point meets the row as written, to the default feas_tol (1e-4; the data here are of order 1)
    assert row.violation() <= 1e-4, row.violation()


def _brute_force_normals(E):
    """The orthogonal projection onto the span of E's rows."""
    return E.T @ np.linalg.pinv(E @ E.T) @ E


def _assert_matches_projection(hull, E, rows, point):
    """The hull's N a and ||N a||^2 are the projection onto E's rows, and <N a, s> is one number over the set
    (``point`` one of its points)."""
    part, value = hull.normal_part(rows)
    assert np.allclose(part, rows @ _brute_force_normals(E))
    assert np.allclose(hull.normal_norms2(sp.csr_matrix(rows)), np.sum(part ** 2, axis=1))
    assert np.allclose(part @ point, value)


def _group_point(rng, index, totals):
    point = np.zeros(index.size)
    for g in range(index.shape[0]):
        point[index[g]] = totals[g] * rng.dirichlet(np.ones(index.shape[1]))
    return point


def test_group_sums_match_the_projection_onto_their_rows():
    rng = np.random.default_rng(0)
    index = rng.permutation(12).reshape(3, 4)  # groups of entries in any order (a simplex's ``axis``)
    totals = np.array([1.0, 2.0, 0.5])
    E = np.zeros((3, 12))
    for g in range(3):
        E[g, index[g]] = 1.0
    rows = rng.standard_normal((5, 12))
    _assert_matches_projection(GroupSums(index, totals, 12), E, rows, _group_point(rng, index, totals))


def test_scaled_group_sums_match_the_projection_onto_their_rows():
    # the hull of {x : a * x + c in simplices}: each group's sum(a_g * x_g) fixed, normals a_g on their groups
    from fwmodel.sets.hulls import ScaledGroupSums

    rng = np.random.default_rng(2)
    index = rng.permutation(12).reshape(3, 4)
    totals = np.array([1.0, 2.0, 0.5])
    a, c = rng.uniform(0.5, 2.0, 12), rng.standard_normal(12)
    E = np.zeros((3, 12))
    for g in range(3):
        E[g, index[g]] = a[index[g]]
    rows = rng.standard_normal((5, 12))
    z = _group_point(rng, index, totals)
    _assert_matches_projection(ScaledGroupSums(GroupSums(index, totals, 12), a, c), E, rows, (z - c) / a)


def test_row_and_column_sums_match_the_projection_onto_their_rows():
    rng = np.random.default_rng(1)
    n = 5
    E = np.vstack([np.kron(np.eye(n)[i], np.ones(n)) for i in range(n)] +
                  [np.kron(np.ones(n), np.eye(n)[j]) for j in range(n)])
    rows = rng.standard_normal((4, n * n))
    point = 0.3 * np.eye(n)[rng.permutation(n)] + 0.7 * np.eye(n)[rng.permutation(n)]
    _assert_matches_projection(RowColumnSums(n), E, rows, point.ravel())


def _simplex_model(rhs_row, n=20, seed=1):
    rng = np.random.default_rng(seed)
    C, d = rng.standard_normal((30, n)), rng.standard_normal(30)
    y = fm.Variable(n)
    return fm.Problem(fm.Minimize(fm.sum_squares(C @ y - d)), [fm.Simplex(y), rhs_row(y, rng)]), C, d


def test_a_sum_of_the_set_written_again_is_left_as_written():
    prob, C, d = _simplex_model(lambda y, rng: fm.sum(y) == 1.0)
    prob.solve()
    assert prob.status == "optimal"
    plain, _, _ = _simplex_model(lambda y, rng: fm.sum(y) >= -1.0)  # an inactive row: the simplex alone
    plain.solve()
    assert abs(prob.value - plain.value) <= 1e-4 * abs(plain.value)


@pytest.mark.parametrize("rhs", [2.0, 1.01])
def test_rows_the_set_cannot_meet_end_infeasible(rhs):
    # the sum written again with another total, and a nearly parallel row beyond the set's reach
    prob, _, _ = _simplex_model(lambda y, rng: (1.0 + (rhs != 2.0) * 1e-4 * rng.standard_normal(20)) @ y == rhs)
    prob.solve()
    assert prob.status == "infeasible", prob.stats


def test_a_parameter_total_moves_the_reduced_row_with_it():
    import cvxpy as cp

    rng = np.random.default_rng(3)
    n = 20
    C, d = rng.standard_normal((30, n)), rng.standard_normal(30)
    a = 1.0 + 1e-4 * rng.standard_normal(n)
    total, beta = fm.Parameter(nonneg=True, value=1.0), fm.Parameter(value=0.0)
    y = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(C @ y - d)), [fm.Simplex(y, total=total), a @ y == beta])
    for t in (1.0, 2.0, 0.5):  # re-solved (warm) after the set's total moved
        total.value, beta.value = t, float(a @ (t * rng.dirichlet(np.ones(n))))
        prob.solve()
        yc = cp.Variable(n)
        f_star = cp.Problem(cp.Minimize(cp.sum_squares(C @ yc - d)),
                            [yc >= 0, cp.sum(yc) == t, a @ yc == beta.value]).solve(solver="CLARABEL")
        assert prob.status == "optimal"
        assert abs(prob.value - f_star) <= 10 * DEFAULT_TOL * abs(f_star), (t, prob.value, f_star)


def test_the_infeasible_message_states_the_distance_in_the_rows_as_written():
    # the certificate runs on the solve's rows (here the row's part off the sum, at unit norm), where the
    # distance 0.0098 read 22; the message restates it along the model's own residual
    import re

    rng = np.random.default_rng(1)
    n = 20
    C, d = rng.standard_normal((30, n)), rng.standard_normal(30)
    a = 1.0 + 1e-4 * rng.standard_normal(n)
    y = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(C @ y - d)), [fm.Simplex(y), a @ y == 1.01])
    prob.solve()
    assert prob.status == "infeasible"
    bound = float(re.search(r"\|\|Mx - b\|\| >= (\S+)", prob.stats.message).group(1))
    distance = 1.01 - a.max()  # the least |a @ y - 1.01| over the simplex, at its best vertex
    assert 0.5 * distance <= bound <= distance * (1 + 1e-6), (bound, distance)


def test_shown_bounds_are_rounded_down():
    from fwmodel.engine.certificates import lower_digits

    for value in (0.01787, 178.7, 0.00983098, 9.999e-5, 22.0, 5e6):
        shown = float(lower_digits(value))
        assert shown <= value and shown >= value * (1 - 1e-2), (value, shown)
