"""A PSD variable with diagonal entries fixed at 0 (``X >> 0`` with ``fm.diag(X) <= d``, ``d_i = 0``, or
``X[i, i] == 0``), checked against CVXPY + Clarabel.

Such a feasible set has no interior (row and column i of X are 0). The
compiler solves it on that face (:mod:`fwmodel.compiler.presolve`): the
default solve ended "max_iter" after 10,000 iterations before.

CVXPY's multipliers of the bounds on the dropped entries are not attained
(Clarabel and SCS return large numbers that differ by orders of magnitude):
those are compared only on the kept entries, where the KKT conditions fix
them; fwmodel reports 0 on the dropped ones.
"""
import warnings

import numpy as np
import pytest

import fwmodel as fm

from _against_clarabel import TIGHT

cp = pytest.importorskip("cvxpy")


def _symmetric(n, seed):
    B = np.random.default_rng(seed).standard_normal((n, n))
    return (B + B.T) / 2


def _clarabel(prob):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return prob.solve(solver=cp.CLARABEL)


def _diagonal_bound(m, n, d, C, declare="symmetric"):
    X = m.Variable((n, n), **{declare: True})
    bound = m.diag(X) <= d
    constraints = [bound] if declare == "PSD" else [psd := X >> 0, bound]
    prob = m.Problem(m.Minimize(m.sum_squares(X - C)), constraints)
    return prob, X, bound, (None if declare == "PSD" else psd)


def _default_solve_against_clarabel(n, d, C, declare="symmetric"):
    """The diagonal-bound model solved with the defaults: "optimal", Clarabel's value and point."""
    prob, X, _, _ = _diagonal_bound(fm, n, d, C, declare)
    prob.solve()
    ref_prob, ref_X, _, _ = _diagonal_bound(cp, n, d, C)
    ref = _clarabel(ref_prob)
    assert prob.status == fm.OPTIMAL
    assert abs(prob.value - ref) <= 1e-3 * abs(ref)
    np.testing.assert_allclose(X.value, ref_X.value, atol=2e-3)
    return prob, X


@pytest.mark.parametrize("declare", ["symmetric", "PSD"])
def test_default_solve_reaches_the_face(declare):
    """The default solve is "optimal" (it ended "max_iter" at 10,000 iterations without the presolve)."""
    n, C = 6, _symmetric(6, 0)
    d = np.ones(n)
    d[0] = 0.0
    prob, X = _default_solve_against_clarabel(n, d, C, declare)
    assert np.all(X.value[0] == 0.0) and np.all(X.value[:, 0] == 0.0)  # exactly on the face


def test_two_zero_diagonal_entries_and_duals():
    """Zeros at 0 and 3: value, point and the multipliers on the kept entries as Clarabel's."""
    n, C = 5, _symmetric(5, 1)
    d = np.ones(n)
    d[[0, 3]] = 0.0
    answers = []
    for m in (fm, cp):
        X = m.Variable((n, n), symmetric=True)
        psd, bound, fix = X >> 0, m.diag(X) <= d, X[1, 2] == 0.1
        prob = m.Problem(m.Minimize(m.sum_squares(X - C)), [psd, bound, fix])
        prob.solve(**TIGHT) if m is fm else _clarabel(prob)
        answers.append((prob.status, prob.value, X.value, bound.dual_value, fix.dual_value, psd.dual_value))
    (status, value, x, nu, eta, Z), (_, ref, ref_x, ref_nu, ref_eta, ref_Z) = answers
    assert status == fm.OPTIMAL
    assert abs(value - ref) <= 1e-5 * abs(ref)
    np.testing.assert_allclose(x, ref_x, atol=1e-4)
    kept = [1, 2, 4]
    np.testing.assert_allclose(nu[kept], ref_nu[kept], atol=1e-3)
    assert np.all(nu[[0, 3]] == 0.0)  # (CVXPY's are not attained: see the module docstring)
    np.testing.assert_allclose(eta, ref_eta, rtol=1e-3)
    np.testing.assert_allclose(Z[np.ix_(kept, kept)], ref_Z[np.ix_(kept, kept)], atol=1e-3)
    assert np.all(Z[[0, 3]] == 0.0) and np.all(Z[:, [0, 3]] == 0.0)


def test_equality_and_trace_ball_on_a_psd_variable():
    """``X[0, 0] == 0`` on a PSD=True variable in ``fm.TraceNormBall(X, r, psd=True)`` (linear objective)."""
    n, S = 5, _symmetric(5, 2)
    answers = []
    for m in (fm, cp):
        X = m.Variable((n, n), PSD=True)
        zero = X[0, 0] == 0
        if m is fm:
            constraints = [fm.TraceNormBall(X, 3.0, psd=True), zero]
        else:
            constraints = [cp.trace(X) <= 3.0, zero]
        prob = m.Problem(m.Minimize(m.trace(S @ X) + m.sum_squares(X)), constraints)
        prob.solve(**TIGHT) if m is fm else _clarabel(prob)
        answers.append((prob.status, prob.value, X.value))
    (status, value, x), (_, ref, ref_x) = answers
    assert status == fm.OPTIMAL
    assert abs(value - ref) <= 1e-5 * max(1.0, abs(ref))
    np.testing.assert_allclose(x, ref_x, atol=1e-4)


def test_maxcut_with_a_zero_diagonal_entry():
    """``diag(X) == d`` with ``d_0 = 0`` (a MaxCut-like SDP): the equality's multipliers on the kept rows."""
    n, S = 6, _symmetric(6, 3)
    d = np.linspace(0.5, 2.0, n)
    d[0] = 0.0
    answers = []
    for m in (fm, cp):
        X = m.Variable((n, n), symmetric=True)
        e = m.diag(X) == d
        prob = m.Problem(m.Minimize(m.trace(S @ X)), [X >> 0, e])
        prob.solve(tol=1e-7, feas_tol=1e-7) if m is fm else _clarabel(prob)
        answers.append((prob.status, prob.value, e.dual_value))
    (status, value, nu), (_, ref, ref_nu) = answers
    assert status == fm.OPTIMAL
    assert abs(value - ref) <= 1e-5 * max(1.0, abs(ref))
    np.testing.assert_allclose(nu[1:], ref_nu[1:], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("extra", ["off_diagonal", "negative_bound", "floor"])
def test_infeasible_like_cvxpy(extra):
    """An entry of a dropped row forced nonzero: "infeasible", as CVXPY + Clarabel say, without iterating."""
    n, C = 4, _symmetric(4, 4)
    statuses = []
    for m in (fm, cp):
        X = m.Variable((n, n), symmetric=True)
        constraints = [X >> 0, m.diag(X) <= 1.0]
        constraints += {"off_diagonal": [X[0, 0] == 0, X[0, 1] == 0.5],
                        "negative_bound": [X[2, 2] <= -1.0],
                        "floor": [X[1, 1] <= 0, X[1, 1] >= 0.5]}[extra]
        prob = m.Problem(m.Minimize(m.sum_squares(X - C)), constraints)
        if m is fm:
            prob.solve()
            assert prob.stats.iterations == 0 and X.value is None
        else:
            _clarabel(prob)
        statuses.append(prob.status)
    assert statuses == [fm.INFEASIBLE, cp.INFEASIBLE]


def test_parameter_resolve():
    """The objective's data a Parameter: re-solves (cold and warm) follow Clarabel's."""
    n = 5
    d = np.ones(n)
    d[2] = 0.0
    models = {}
    for m in (fm, cp):
        C = m.Parameter((n, n))
        X = m.Variable((n, n), symmetric=True)
        bound = m.diag(X) <= d
        models[m] = (m.Problem(m.Minimize(m.sum_squares(X - C)), [X >> 0, bound]), X, C, bound)
    for seed, warm in ((5, False), (6, True), (7, True)):
        C = _symmetric(n, seed)
        answers = []
        for m, (prob, X, param, bound) in models.items():
            param.value = C
            prob.solve(warm_start=warm, **TIGHT) if m is fm else _clarabel(prob)
            answers.append((prob.status, prob.value, X.value, bound.dual_value))
        (status, value, x, nu), (_, ref, ref_x, ref_nu) = answers
        assert status == fm.OPTIMAL
        assert abs(value - ref) <= 1e-5 * abs(ref)
        np.testing.assert_allclose(x, ref_x, atol=1e-4)
        kept = [0, 1, 3, 4]
        np.testing.assert_allclose(nu[kept], ref_nu[kept], atol=1e-3)


def test_parameter_bound_takes_the_general_path():
    """A Parameter bound on a diagonal entry is not presolved (its value could make the entry free)."""
    n = 4
    p = fm.Parameter(nonneg=True, value=0.5)
    X = fm.Variable((n, n), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - _symmetric(n, 8))), [X >> 0, fm.diag(X) <= 1.0, X[0, 0] <= p])
    assert prob.compile().presolve is None


def test_tiny_nonzero_bound_takes_the_general_path():
    """``d_0 = 1e-3`` keeps an interior: no presolve, and the default solve matches Clarabel (about 750
    iterations: ``benchmarks/psd_zero_diagonal.py``)."""
    n, C = 6, _symmetric(6, 0)
    d = np.ones(n)
    d[0] = 1e-3
    prob, X = _default_solve_against_clarabel(n, d, C)
    assert prob.compile().presolve is None


def test_parameter_in_the_constant_is_presolved():
    """``fm.trace(X) <= t`` with t a Parameter (only in the constant): presolved, "optimal" and Clarabel's value,
    point and multiplier at each t (it ended "max_iter" at 10,000 iterations, 1.5e-3 off, without the presolve)."""
    n, C = 4, _symmetric(4, 0)
    d = np.array([0.0, 1.0, 1.0, 1.0])
    models = {}
    for m in (fm, cp):
        t = m.Parameter(nonneg=True)
        X = m.Variable((n, n), symmetric=True)
        budget = m.trace(X) <= t
        models[m] = (m.Problem(m.Minimize(m.sum_squares(X - C)), [X >> 0, m.diag(X) <= d, budget]), X, t, budget)
    for value in (1.5, 0.7, 2.5):
        answers = []
        for m, (prob, X, t, budget) in models.items():
            t.value = value
            prob.solve(**TIGHT) if m is fm else _clarabel(prob)
            answers.append((prob.status, prob.value, X.value, budget.dual_value))
        (status, val, x, lam), (_, ref, ref_x, ref_lam) = answers
        assert models[fm][0].compile().presolve is not None
        assert status == fm.OPTIMAL
        assert abs(val - ref) <= 1e-5 * abs(ref)
        np.testing.assert_allclose(x, ref_x, atol=1e-4)
        np.testing.assert_allclose(lam, ref_lam, rtol=1e-3, atol=1e-5)


def _data_rows_model(m, n, C, d):
    X = m.Variable((n, n), symmetric=True)
    q, p, s = m.Parameter(n), m.Parameter(), m.Parameter()
    rows = X[0, :] + X[1, :] <= q  # entry 0 reads X[0, 0] + X[1, 0]: no variables on the face, 0 <= q_0
    floor = X[0, 0] >= p  # no variables on the face: 0 >= p
    fix = X[0, 1] + X[2, 3] == s  # X[2, 3] == s on the face
    prob = m.Problem(m.Minimize(m.sum_squares(X - C)), [X >> 0, m.diag(X) <= d, rows, floor, fix])
    return prob, X, (q, p, s), rows, fix


@pytest.mark.parametrize("warm", [False, True])
def test_parameter_entries_without_variables_resolve(warm):
    """Parameters in constants of entries that the face leaves without variables: checked at each solve, so
    re-solves go "infeasible" (without iterating) and back to "optimal" as Clarabel's do."""
    n, C = 4, _symmetric(4, 9)
    d = np.array([0.0, 1.0, 1.0, 1.0])
    models = {m: _data_rows_model(m, n, C, d) for m in (fm, cp)}
    sequence = [  # (q, p, s): feasible, q_0 < 0, p > 0, feasible again with other values
        (np.array([0.5, 0.4, 0.3, 1.0]), 0.0, 0.1),
        (np.array([-0.5, 0.4, 0.3, 1.0]), 0.0, 0.1),
        (np.array([0.5, 0.4, 0.3, 1.0]), 0.2, 0.1),
        (np.array([0.0, 0.3, -0.1, 1.0]), -1.0, 0.2),
    ]
    for q_value, p_value, s_value in sequence:
        answers = []
        for m, (prob, X, params, rows, fix) in models.items():
            for param, value in zip(params, (q_value, p_value, s_value)):
                param.value = value
            prob.solve(warm_start=warm, **TIGHT) if m is fm else _clarabel(prob)
            answers.append((prob.status, prob.value, X.value, rows.dual_value, fix.dual_value))
        (status, val, x, lam, eta), (ref_status, ref, ref_x, ref_lam, ref_eta) = answers
        assert models[fm][0].compile().presolve is not None
        if ref_status == cp.INFEASIBLE:
            assert status == fm.INFEASIBLE and models[fm][0].stats.iterations == 0
            continue
        assert status == fm.OPTIMAL
        assert abs(val - ref) <= 1e-5 * abs(ref)
        np.testing.assert_allclose(x, ref_x, atol=5e-4)  # (Clarabel's X[0, 3] is 1.3e-4 on this face: its tolerance)
        # Multipliers: Clarabel's on this model (no interior) are 0.6 % off on rows' entry 1; those of the model
        # written by hand on the face (Y = X[1:, 1:], an interior; CVXPY + Clarabel) are the reference
        face_lam, face_eta = _face_multipliers(C, q_value, s_value)
        np.testing.assert_allclose(lam[1:], face_lam, atol=1e-4)
        assert lam[0] == 0.0  # entry 0 has no variables on the face
        np.testing.assert_allclose(eta, face_eta, rtol=1e-4)


def _face_multipliers(C, q, s):
    Y = cp.Variable((3, 3), symmetric=True)
    rows, fix = Y[0, :] <= q[1:], Y[1, 2] == s
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Y - C[1:, 1:])), [Y >> 0, cp.diag(Y) <= 1, rows, fix])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return rows.dual_value, fix.dual_value


def test_parameter_multiplying_a_dropped_entry_takes_the_general_path():
    """``p * X[0, 0]``: a Parameter coefficient on a dropped entry leaves the model to the general path."""
    n = 4
    p = fm.Parameter(value=0.5)
    X = fm.Variable((n, n), symmetric=True)
    d = np.array([0.0, 1.0, 1.0, 1.0])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - _symmetric(n, 8))),
                      [X >> 0, fm.diag(X) <= d, p * X[0, 0] + X[1, 1] <= 0.5])
    assert prob.compile().presolve is None


@pytest.mark.parametrize("extra", ["frobenius", "max_of_a_row", "maximum_of_entries"])
def test_norm_and_rewritten_bounds_on_x_are_presolved(extra):
    """A norm bound and the entrywise rewritings of ``fm.max``/``fm.maximum`` on X: the substitution
    ``X = P Y P'`` inside them is exact, so the model is presolved ("optimal" in tens of iterations; the general
    path crawls as before the presolve) and matches Clarabel, multipliers included (0 for the maximum's, whose
    pieces are inactive: X[0, 1] = 0 and X[2, 3] = -0.03)."""
    n, C = 4, _symmetric(4, 0)
    answers = []
    for m in (fm, cp):
        X = m.Variable((n, n), symmetric=True)
        c = {"frobenius": lambda: m.norm(X, "fro") <= 1.2,
             "max_of_a_row": lambda: m.max(X[1]) <= 0.3,
             "maximum_of_entries": lambda: m.maximum(X[0, 1], X[2, 3]) <= 0.1}[extra]()
        prob = m.Problem(m.Minimize(m.sum_squares(X - C)), [X >> 0, X[0, 0] <= 0, m.diag(X) <= 1, c])
        prob.solve(**TIGHT) if m is fm else _clarabel(prob)
        if m is fm:
            assert prob.compile().presolve is not None
        answers.append((prob.status, prob.value, X.value, c.dual_value))
    (status, val, x, lam), (_, ref, ref_x, ref_lam) = answers
    assert status == fm.OPTIMAL
    assert abs(val - ref) <= 1e-5 * abs(ref)
    np.testing.assert_allclose(x, ref_x, atol=5e-4)
    np.testing.assert_allclose(lam, ref_lam, rtol=1e-3, atol=1e-4)


def test_norm_bound_with_a_parameter_takes_the_general_path():
    """A norm bound with a Parameter on X is left to the general path (its rows without variables could
    read the Parameter, which the lowering does not check at each solve)."""
    n = 4
    r = fm.Parameter(nonneg=True, value=1.2)
    X = fm.Variable((n, n), symmetric=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - _symmetric(n, 0))),
                      [X >> 0, X[0, 0] <= 0, fm.diag(X) <= 1, fm.norm(X, "fro") <= r])
    assert prob.compile().presolve is None
