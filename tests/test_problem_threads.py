"""One Problem solved from several threads: the solves run one after another.

The compiled model, the warm-start state and the answer's attributes belong to
the Problem; solves interleaving on them returned a mixture ("optimal" 2.5e-3
off the optimum). Separate Problems still solve in parallel threads.
"""
import copy
import pickle
import threading
import time

import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.errors import ModelError


@pytest.fixture(scope="module")
def lasso():
    rng = np.random.default_rng(15)
    A, b = rng.standard_normal((60, 30)), rng.standard_normal(60)
    xc = cp.Variable(30)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [cp.norm1(xc) <= 1]).solve(solver="CLARABEL")
    return A, b, f_star


def _problem(A, b):
    x = fm.Variable(A.shape[1], name="x")
    return x, fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 1])


def test_solves_of_one_problem_from_three_threads_each_reach_the_optimum(lasso):
    A, b, f_star = lasso
    x, prob = _problem(A, b)
    answers = []

    def slow_iterations(state):  # gives the other threads the interpreter at every iteration
        time.sleep(2e-4)

    def work(warm):
        value = prob.solve(callback=slow_iterations, warm_start=warm)
        answers.append((value, prob.status))

    threads = [threading.Thread(target=work, args=(k == 2,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 3
    for value, status in answers:
        assert status == "optimal"
        assert value == pytest.approx(f_star, rel=1e-5)
    assert prob.value == pytest.approx(float(np.sum((A @ x.value - b) ** 2)), rel=1e-12)


def test_a_solve_of_the_same_problem_from_its_callback_is_refused(lasso):
    A, b, f_star = lasso
    x, prob = _problem(A, b)
    raised = []

    def callback(state):
        try:
            prob.solve()
        except ModelError as err:
            raised.append(str(err))
        return False

    prob.solve(callback=callback)
    assert raised and "same problem" in raised[0]
    # a copy is another problem: it solves from inside the callback
    inner = []
    prob.solve(callback=lambda state: inner.append(copy.deepcopy(prob).solve()) or False)
    assert inner[0] == pytest.approx(f_star, rel=1e-5)
    assert prob.solve() == pytest.approx(f_star, rel=1e-5)  # and the problem is free again


def test_a_pickled_problem_gets_its_own_lock_and_solves(lasso):
    A, b, f_star = lasso
    x, prob = _problem(A, b)
    prob.solve()
    again = pickle.loads(pickle.dumps(prob))
    assert again._solve_lock is not prob._solve_lock
    assert again.solve(warm_start=True) == pytest.approx(f_star, rel=1e-5)
