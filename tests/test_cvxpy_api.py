"""CVXPY's API that users read after a solve: ``constraint.value()``, ``violation()``, ``residual``,
``Problem.parameters()``, ``is_dcp()``, ``solver_stats``, ``x.name()``, ``fm.Parameter(..., PSD=True)``;
and AlignmentPolytope's argument checks as fm.ModelError. Compared with CVXPY on the same values."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _constraints(m, x, X):
    return [x == np.array([1.0, 0.5]), x <= 0.7, x >= np.array([2.0, -1.0]), m.norm1(x) <= 1.0,
            m.norm(x, 2) <= 3.0, X >> 0, X << np.eye(2)]


@pytest.mark.parametrize("point, matrix", [
    (np.array([2.0, 0.0]), np.array([[1.0, 0.0], [0.0, -2.0]])),
    (np.array([1.0, 0.5]), np.array([[0.5, 0.1], [0.1, 0.5]])),
])
def test_constraint_residual_violation_value_as_cvxpy(point, matrix):
    answers = []
    for m in (fm, cp):
        x, X = m.Variable(2), m.Variable((2, 2), symmetric=True)
        constraints = _constraints(m, x, X)
        x.value, X.value = point, matrix
        answers.append([(np.asarray(c.residual, dtype=float), np.asarray(c.violation(), dtype=float), c.value(),
                         c.value(tolerance=10.0)) for c in constraints])
    for (res, vio, holds, loose), (ref_res, ref_vio, ref_holds, ref_loose) in zip(*answers):
        np.testing.assert_allclose(res, ref_res, atol=1e-12)
        np.testing.assert_allclose(vio, ref_vio, atol=1e-12)
        assert holds == ref_holds and loose == ref_loose


def test_constraint_without_values():
    x = fm.Variable(2, name="x")
    c = x <= 1
    assert c.residual is None
    with pytest.raises(fm.ModelError, match="x <= 1: .*no value|no value"):
        c.value()


def test_problem_parameters_is_dcp_solver_stats_and_names():
    answers = []
    for m in (fm, cp):
        x = m.Variable(2, name="x")
        p = m.Parameter(2, name="p", value=np.array([1.0, 2.0]))
        q = m.Parameter(name="q", nonneg=True, value=1.0)
        prob = m.Problem(m.Minimize(m.sum_squares(x - p)), [m.norm1(x) <= q, x >= -1])
        assert prob.is_dcp()
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        stats = prob.solver_stats
        assert stats.num_iters >= 1 and stats.solve_time >= 0.0 and isinstance(stats.solver_name, str)
        answers.append(([par.name() for par in prob.parameters()], x.name(), prob.value))
    (names, x_name, value), (ref_names, ref_x_name, ref_value) = answers
    assert sorted(names) == sorted(ref_names) and x_name == ref_x_name == "x"
    assert abs(value - ref_value) <= 1e-3 * max(1.0, abs(ref_value))


def test_name_stays_a_string():
    x = fm.Variable(3, name="weights")
    assert x.name == "weights" and isinstance(x.name, str) and f"{x.name}[0]" == "weights[0]"
    assert x.name() == "weights" and fm.Parameter(name="lam").name() == "lam"


def test_parameter_psd_spellings_in_quad_form_against_clarabel():
    P0 = np.diag([2.0, 0.0, 1.0])
    ref_x = cp.Variable(3)
    P = cp.Parameter((3, 3), PSD=True, value=P0)
    ref = cp.Problem(cp.Minimize(cp.quad_form(ref_x, P) - ref_x[0] + 0.5 * ref_x[2]), [cp.norm1(ref_x) <= 1])
    ref.solve(solver=cp.CLARABEL)
    for flag in ({"PSD": True}, {"psd": True}):
        x = fm.Variable(3)
        Q = fm.Parameter((3, 3), value=P0, **flag)
        assert Q.psd and Q.PSD
        prob = fm.Problem(fm.Minimize(fm.quad_form(x, Q) - x[0] + 0.5 * x[2]), [fm.norm1(x) <= 1])
        prob.solve(tol=1e-8, feas_tol=1e-8)
        assert abs(prob.value - ref.value) <= 1e-5
    assert fm.Variable((2, 2), psd=True).PSD  # the other spelling on Variable
    with pytest.raises(fm.ModelError, match="disagree"):
        fm.Parameter((2, 2), PSD=True, psd=False)
    with pytest.raises(TypeError, match="takes no keyword sign"):  # (also a ModelError)
        fm.Parameter(2, sign=1)
    with pytest.raises(ValueError, match="not symmetric positive semidefinite"):
        fm.Parameter((2, 2), PSD=True, value=-np.eye(2))


@pytest.mark.parametrize("kw, words", [(dict(kind="path", band=0.5), "too narrow"),
                                       (dict(kind="matching", band=-1), "band must be"),
                                       (dict(kind="foo"), "kind must be")])
def test_alignment_argument_checks_are_model_errors(kw, words):
    with pytest.raises(fm.ModelError, match=words):
        fm.AlignmentPolytope(fm.Variable((3, 4)), **kw)
