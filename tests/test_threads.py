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


def test_one_blas_thread_picks_the_blas_routine_without_a_clock():
    """With threads=1 the einsum-or-BLAS choice is fixed (same rounding, same iterates in every process)."""
    from fwmodel import _fastest

    calls = []
    chooser = _fastest.FasterOf(lambda: calls.append("einsum"), lambda: calls.append("blas"))
    with _fastest.single_threaded_blas():
        chooser(1 << 20)
    assert calls == ["blas"] and chooser.choice == {}  # no timing runs, nothing cached
    seen = []
    prob, _ = _problem()
    prob.solve(threads=1, callback=lambda state: seen.append(_fastest._single_threaded_blas[0]))
    assert seen and all(seen)
    assert _fastest._single_threaded_blas[0] is False  # restored after the solve
    seen.clear()
    prob.solve(threads=2, callback=lambda state: seen.append(_fastest._single_threaded_blas[0]))
    assert seen and not any(seen)


def test_iterates_are_the_same_in_two_processes():
    """A model with long vectors (where einsum and BLAS could both serve) gives bit-identical histories."""
    import subprocess
    import sys

    script = (
        "import numpy as np, fwmodel as fm\n"
        "rng = np.random.default_rng(3); C = rng.standard_normal((150, 150))\n"
        "X = fm.Variable((150, 150))\n"
        "p = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, 40.0), fm.TraceNormBall(X, 30.0)])\n"
        "p.solve(max_iter=60, projection=False)\n"
        "print(repr(p.history['objective'].tolist()))\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) > 100
