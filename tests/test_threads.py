"""The ``threads`` solve option: BLAS threads limited during a solve, restored after."""
import numpy as np
import pytest

import fwmodel as fm

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_threads():
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


def _problem():
    rng = np.random.default_rng(0)
    c = rng.standard_normal(30)
    x = fm.Variable(30)
    return fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.L1Ball(x, 2.0)]), c


@pytest.mark.parametrize("threads", [1, 2])
def test_blas_threads_are_limited_during_the_solve_and_restored(threads):
    if not _blas_threads():
        pytest.skip("no BLAS library visible to threadpoolctl")
    before = _blas_threads()
    seen = []
    prob, _ = _problem()
    prob.solve(threads=threads, callback=lambda state: seen.append(_blas_threads()))
    assert seen and all(max(s) <= threads for s in seen)
    assert _blas_threads() == before


def test_threads_none_leaves_the_blas_alone():
    if not _blas_threads():
        pytest.skip("no BLAS library visible to threadpoolctl")
    before = _blas_threads()
    seen = []
    prob, _ = _problem()
    prob.solve(threads=None, callback=lambda state: seen.append(_blas_threads()))
    assert seen and all(s == before for s in seen)


def test_threads_option_does_not_change_the_answer():
    prob, c = _problem()
    one = prob.solve(threads=1, tol=1e-8, feas_tol=1e-8)
    two = prob.solve(threads=None, tol=1e-8, feas_tol=1e-8)
    assert one == pytest.approx(two, rel=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two", True])
def test_invalid_threads_are_named(bad):
    prob, _ = _problem()
    with pytest.raises(ValueError, match="threads"):
        prob.solve(threads=bad)
