"""CVXPY attributes that everyday code reads: ``objective.value``, a constraint's ``size`` and ``args``,
``Problem.is_dpp()``, ``Problem.size_metrics``, ``Variable.is_nonneg()`` / ``is_nonpos()``; each against
CVXPY's answer on the same model."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _both(build):
    return [build(m) for m in (fm, cp)]


def test_objective_value_and_constraint_size_and_args():
    answers = []
    for m in (fm, cp):
        x = m.Variable(3)
        cons = [x >= -0.2, m.norm1(x) <= 1, m.sum(x) == 0.5, m.max(x) <= 0.4]
        for sense in (m.Minimize(m.sum_squares(x - 1)), m.Maximize(-m.sum_squares(x - 1))):
            prob = m.Problem(sense, cons)
            prob.solve(**({"solver": "CLARABEL"} if m is cp else {"tol": 1e-8, "feas_tol": 1e-8}))
            answers.append((m, prob.objective.value, prob.value, x.value))
        # sizes, and args: [smaller side, larger side] (x >= -0.2 is -0.2 <= x)
        sizes = [c.size for c in cons]
        args = [[np.shape(a.value) if a.value is not None else a.shape for a in c.args] for c in cons]
        answers.append((sizes, args, [float(np.asarray(cons[0].args[0].value)), cons[0].args[1] is x]))
    fm_min, fm_max, fm_meta, cp_min, cp_max, cp_meta = answers
    for ours, theirs in ((fm_min, cp_min), (fm_max, cp_max)):
        assert ours[1] == pytest.approx(theirs[1], abs=1e-5)
        assert ours[1] == pytest.approx(ours[2], rel=1e-12)  # objective.value is prob.value after a solve
    assert fm_max[1] == pytest.approx(-fm_min[1], abs=1e-6)  # Maximize: the expression's value, not its negative
    assert fm_meta == cp_meta


def test_objective_value_before_a_solve_is_none():
    x = fm.Variable(2)
    assert fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.norm1(x) <= 1]).objective.value is None
    x.value = np.array([1.0, 2.0])
    assert fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.norm1(x) <= 1]).objective.value == 5.0


def test_psd_constraint_size_and_args():
    got = []
    for m in (fm, cp):
        X = m.Variable((2, 2), symmetric=True)
        c = X >> np.eye(2)
        X.value = np.array([[3.0, 1.0], [1.0, 2.0]])
        got.append((c.size, len(c.args), np.asarray(c.args[0].value).tolist()))
    assert got[0] == got[1]


def _dpp_models(m):
    p = m.Parameter(nonneg=True, value=2.0)
    q = m.Parameter(nonneg=True, value=3.0)
    x = m.Variable(3)
    return {
        "p*x": m.sum_squares(p * x - 1),
        "p*q*x": m.sum_squares(p * q * x - 1),
        "x/p": m.sum_squares(x / p - 1),
        "sum_squares/p": m.sum_squares(x - 1) / p,
        "p*sum_squares": p * m.sum_squares(x - 1),
        "(p*q)*sum_squares": (p * q) * m.sum_squares(x - 1),
        "no parameter": m.sum_squares(x - 1),
    }, x, p


@pytest.mark.parametrize("name", list(_dpp_models(fm)[0]))
def test_is_dpp_as_cvxpy(name):
    answers = []
    for m in (fm, cp):
        objectives, x, p = _dpp_models(m)
        answers.append(m.Problem(m.Minimize(objectives[name]), [m.norm1(x) <= p]).is_dpp())
    assert answers[0] == answers[1], (name, answers)


def test_is_dpp_of_a_model_that_does_not_compile_is_false():
    x = fm.Variable(2)  # (nothing bounds x above: FW-AL has no set for it, compile raises a ModelError)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [x >= 0])
    assert prob.is_dcp() is False and prob.is_dpp() is False


def test_size_metrics_as_cvxpy():
    metrics = []
    for m in (fm, cp):
        x = m.Variable(3, nonneg=True)
        Y = m.Variable((2, 2), symmetric=True)
        cons = [x >= 0.1, Y == np.eye(2), m.norm1(x) <= 3, Y >> 0, m.sum(x) <= 5, m.trace(Y) <= 4]
        sm = m.Problem(m.Minimize(m.sum_squares(x) + m.sum_squares(Y)), cons).size_metrics
        metrics.append((sm.num_scalar_variables, sm.num_scalar_eq_constr, sm.num_scalar_leq_constr))
    assert metrics[0] == metrics[1]


def test_is_nonneg_is_nonpos_as_cvxpy():
    got = []
    for m in (fm, cp):
        leaves = [m.Variable(2), m.Variable(2, nonneg=True), m.Variable(2, nonpos=True),
                  m.Variable(2, bounds=[0, 1]), m.Parameter(nonneg=True), m.Parameter(nonpos=True), m.Parameter(),
                  m.Constant(np.array([0.0, 1.0])), m.Constant(np.array([-1.0, 0.0])), m.Constant(np.array([-1.0, 1.0]))]
        got.append([(bool(v.is_nonneg()), bool(v.is_nonpos())) for v in leaves])
    assert got[0] == got[1]
