"""The solve's page policy (engine/pages.py) and the reuse of the setup's arrays in the loop (engine/fwal.py)."""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine import fwal, pages

pytestmark = pytest.mark.skipif(pages._SWITCH is None, reason="this NumPy has no huge-page switch")


def _hugepage_setting():
    """NumPy's current huge-page request (read by setting it and putting it back)."""
    previous = pages._SWITCH(True)
    pages._SWITCH(previous)
    return previous


def _holds():
    """What the page switch's shared setting holds: the blocks counted, the request in force, the lock, and
    the other threads alive (a solve still running in one holds the switch too)."""
    import threading

    return dict(blocks=pages._PLAIN.blocks_running, in_force=pages._PLAIN._in_force,
                locked=pages._PLAIN._lock.locked(),
                threads=[t.name for t in threading.enumerate() if t is not threading.current_thread()])


def _tied_copies_problem(C):
    X = fm.Variable(C.shape, name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)),
                      [fm.L1Ball(X, 0.5 * np.abs(C).sum()), fm.TraceNormBall(X, 0.5 * np.linalg.norm(C, "nuc"))])
    return prob, X


@pytest.mark.parametrize("before", [True, False])
def test_solve_allocates_without_huge_pages_and_restores_the_setting(before):
    C = np.random.default_rng(0).standard_normal((8, 8))
    prob, _ = _tied_copies_problem(C)
    seen = []
    held_before = _holds()  # a block left counted by an earlier solve keeps the switch from being applied
    previous = pages._SWITCH(before)
    try:
        prob.solve(max_iter=5, callback=lambda state: seen.append(_hugepage_setting()))
        after = _hugepage_setting()
    finally:
        pages._SWITCH(previous)
    described = f"seen={seen} before={before} after={after} held before={held_before} held after={_holds()}"
    assert seen and not any(seen), described  # off during the solve
    assert after is before, described


def test_the_setting_is_restored_when_the_solve_raises():
    C = np.random.default_rng(1).standard_normal((6, 6))
    prob, _ = _tied_copies_problem(C)
    previous = pages._SWITCH(True)
    try:
        def stop(state):
            raise RuntimeError("from the callback")

        with pytest.raises(RuntimeError, match="from the callback"):
            prob.solve(max_iter=5, callback=stop)
        assert _hugepage_setting() is True
    finally:
        pages._SWITCH(previous)


def test_plain_pages_off_leaves_numpy_alone(monkeypatch):
    monkeypatch.setattr(pages, "PLAIN_PAGES", False)
    C = np.random.default_rng(2).standard_normal((6, 6))
    prob, _ = _tied_copies_problem(C)
    previous = pages._SWITCH(True)
    try:
        seen = []
        prob.solve(max_iter=3, callback=lambda state: seen.append(_hugepage_setting()))
        assert seen and all(seen)
    finally:
        pages._SWITCH(previous)


def test_reused_setup_arrays_give_the_same_iterates(monkeypatch):
    """Two tied copies: the loop's dual term and per-block gradient live in the setup's vertex array and y in
    M s_ref's; the iterates are the same, bit for bit, as with fresh arrays, and the solution is CVXPY's."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    C = rng.standard_normal((10, 10))
    taken = []
    original = fwal._Buffers.take_spare

    def spy(self, array, m):
        taken.append(array is not None)
        return original(self, array, m)

    def solve():
        prob, X = _tied_copies_problem(C)
        prob.solve()
        return prob, X.value.copy()

    monkeypatch.setattr(fwal._Buffers, "take_spare", spy)
    prob, reused = solve()
    assert taken == [True]
    y = prob._state.y
    assert y.base is None  # y is an array of its own (the result keeps no larger array alive)

    monkeypatch.setattr(fwal._Buffers, "take_spare", lambda self, array, m: None)
    _, fresh = solve()
    np.testing.assert_array_equal(reused, fresh)

    assert prob.status == "optimal"
    Z = cp.Variable(C.shape)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)),
                           [cp.sum(cp.abs(Z)) <= 0.5 * np.abs(C).sum(),
                            cp.normNuc(Z) <= 0.5 * np.linalg.norm(C, "nuc")]).solve(solver=cp.CLARABEL)
    assert abs(prob.value - reference) <= 1e-3 * abs(reference)


def test_take_spare_splits_the_array_into_the_dual_term_and_the_block_gradient():
    buffers = fwal._Buffers()
    spare = np.empty(24)
    buffers.take_spare(spare, 8)
    r, y = np.arange(8.0), np.ones(8)
    w = buffers.dual_term(r, y, 2.0)
    np.testing.assert_array_equal(w, 2.0 * r + y)
    assert np.shares_memory(w, spare[:8])
    assert np.shares_memory(buffers.block_gradient(16), spare[8:])
    assert not np.shares_memory(buffers.block_gradient(5), spare)  # another size: an array of its own
    for m in (7, 0, 24):  # off a 64-byte boundary, or nothing left for a block: not used
        other = fwal._Buffers()
        other.take_spare(np.empty(24), m)
        assert other._dual is None and other._spare_block is None


@pytest.mark.parametrize("before", [True, False])
def test_solves_in_two_threads_restore_the_setting_when_the_last_ends(before):
    """Solve A starts, solve B starts in another thread, A ends, then B: huge pages stay off until B ends and
    are then what they were before A (saving the setting per solve left them off after both)."""
    import threading

    C = np.random.default_rng(4).standard_normal((6, 6))
    a_started, b_started, a_ended = threading.Event(), threading.Event(), threading.Event()
    seen_by_b_after_a = []

    def callback_a(state):
        if not a_started.is_set():
            a_started.set()
            assert b_started.wait(30)

    def callback_b(state):
        if not b_started.is_set():
            b_started.set()
            assert a_ended.wait(30)
            seen_by_b_after_a.append(_hugepage_setting())

    def solve_b():
        assert a_started.wait(30)
        _tied_copies_problem(C)[0].solve(max_iter=3, callback=callback_b)

    previous = pages._SWITCH(before)
    try:
        thread_b = threading.Thread(target=solve_b)
        thread_b.start()
        _tied_copies_problem(C)[0].solve(max_iter=3, callback=callback_a)
        a_ended.set()
        thread_b.join(60)
        assert not thread_b.is_alive()
        after = _hugepage_setting()
    finally:
        pages._SWITCH(previous)
    assert seen_by_b_after_a == [False]  # A's end did not switch huge pages back on under B
    assert after is before
    assert pages._PLAIN.blocks_running == 0
    from fwmodel import _fastest
    assert _fastest._single_threaded_blas[0] is False  # the solves' one-BLAS-thread flag is counted alike
