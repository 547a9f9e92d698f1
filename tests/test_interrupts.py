"""Ctrl-C at any moment leaves a consistent answer that a warm start can resume.

KeyboardInterrupt is raised at random moments of many solves, by two
triggers: a real-time timer (SIGALRM, whose handler raises it, as Ctrl-C
does) and a profile hook that raises it at a random Python or C call inside
fwmodel's code, which lands inside active-set updates, objective
evaluations, history appends and the result assembly as often as anywhere
else. After each interrupt:

* the solve reports "interrupted" and prob.value is the objective at
  var.value (recomputed here with NumPy);
* the history columns have equal lengths and end at prob.value;
* every copy of x in the saved state lies in its own set;
* a warm re-solve reaches the CVXPY + Clarabel optimum at a point of both sets.
"""
import gc
import inspect
import signal
import sys
import warnings

import cvxpy as cp
import numpy as np
import pytest
import sympy

import fwmodel as fm

N, RADIUS, BOUND = 16, 0.6, 0.1


@pytest.fixture(autouse=True)
def no_foreign_gc_callbacks():
    """Python ignores an exception raised inside a gc callback: a timer interrupt landing in one
    (hypothesis installs one once its tests have run) would be lost, and the solve would not
    stop. The trials run without such callbacks."""
    saved = list(gc.callbacks)
    gc.callbacks.clear()
    try:
        yield
    finally:
        gc.callbacks[:] = saved


@pytest.fixture(scope="module")
def lasso_data():
    rng = np.random.default_rng(3)
    A, b = rng.standard_normal((20, N)), rng.standard_normal(20)
    xc = cp.Variable(N)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)),
                        [cp.norm1(xc) <= RADIUS, cp.abs(xc) <= BOUND]).solve(solver="CLARABEL")
    return A, b, f_star


class Interrupted(Exception):
    """The KeyboardInterrupt escaped the solve (it came before the engine had a point)."""


def _timer_trigger(delay):
    def arm():
        signal.setitimer(signal.ITIMER_REAL, delay)

    def disarm():
        signal.setitimer(signal.ITIMER_REAL, 0)

    return arm, disarm


def _call_count_trigger(calls):
    """Raise KeyboardInterrupt at the ``calls``-th profile event (call, return, C call) inside fwmodel,
    counted from the first history row, History.append in engine/result.py (the iterations, not the setup
    before them). Not at a generator's "return" event: that event also comes when a finished generator
    (``next(c for c in ...)``) is closed while being freed, and CPython drops an exception raised there
    (as from ``__del__``), so the solve would go on as if no interrupt had come; the next event raises it."""
    count = [0]
    started = [False]

    def hook(frame, event, arg):
        if "fwmodel" not in frame.f_code.co_filename:
            return
        if frame.f_code.co_filename.endswith("_shared_setting.py"):
            # a hook raising at a C call's "c_call" event skips the call, which no signal can do (Python
            # runs signal handlers between bytecodes): raised at the lock's release, it would leave the
            # lock held and the next solve waiting for it. The bookkeeping there has its own tests.
            return
        if frame.f_code.co_name == "<genexpr>":
            # an exception raised while Python closes an abandoned generator (any(... for ...) that
            # stopped early) is printed and ignored by Python itself: it never reaches the solver
            return
        started[0] = started[0] or (frame.f_code.co_name == "append" and frame.f_code.co_filename.endswith("result.py"))
        if not started[0]:
            return
        count[0] += 1
        if count[0] >= calls and not (event == "return" and frame.f_code.co_flags & inspect.CO_GENERATOR):
            sys.setprofile(None)
            raise KeyboardInterrupt

    def arm():
        sys.setprofile(hook)

    def disarm():
        sys.setprofile(None)

    return arm, disarm


def _run(solve, trigger):
    arm, disarm = trigger
    try:
        arm()
        try:
            return solve()
        finally:
            disarm()
    except KeyboardInterrupt:
        raise Interrupted from None


def _check_consistent(prob, x, A, b):
    """The answer of the last solve describes one point, and the saved copies lie in their sets."""
    v = x.value
    assert prob.value == pytest.approx(float(np.sum((A @ v - b) ** 2)), rel=1e-12, abs=1e-14)
    columns = prob.history.to_dict()
    assert len({len(col) for col in columns.values()}) == 1, {k: len(c) for k, c in columns.items()}
    assert columns["objective"][-1] == pytest.approx(prob.value, rel=1e-12, abs=1e-14)
    state_x = prob._state.x  # the product-space point a warm start resumes (one copy of x per set)
    for blk in prob.compile().blocks:
        copy = state_x[blk.offset:blk.offset + blk.size].reshape(blk.set.expr.shape)
        assert blk.set.contains(copy, tol=1e-9), blk.name


def _check_warm_resolve(prob, x, f_star):
    prob.solve(warm_start=True)
    assert prob.status == "optimal", prob.stats
    assert prob.value == pytest.approx(f_star, rel=1e-3)
    assert np.abs(x.value).sum() <= RADIUS * (1 + 1e-3)
    assert np.abs(x.value).max() <= BOUND * (1 + 1e-3)


def test_random_interrupts_leave_a_consistent_resumable_answer(lasso_data):
    A, b, f_star = lasso_data
    rng = np.random.default_rng(0)
    x = fm.Variable(N, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, RADIUS), fm.Box(x, -BOUND, BOUND)])
    prob.solve()
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt))
    caught = escaped = finished = 0
    try:
        # the merged L1 ball and box (BoxedL1Ball) reaches rounding level ("optimal") within milliseconds: on a
        # fast machine a late trigger often comes after the solve ended, so run trials until 80 were caught
        for trial in range(400):
            if caught >= 80:
                break
            if trial % 2:
                trigger = _timer_trigger(float(rng.uniform(1e-3, 6e-3)))
            else:
                trigger = _call_count_trigger(int(rng.integers(1, 3000)))
            options = dict(warm_start=bool(rng.integers(2)), step=["auto", "away", "pairwise"][trial % 3],
                           tol=1e-15, feas_tol=1e-15, max_iter=10 ** 6)  # runs until interrupted
            try:
                _run(lambda: prob.solve(**options), trigger)
            except Interrupted:
                escaped += 1  # before the engine had a point: the previous answer must still be consistent
            else:
                if prob.status == "optimal":  # converged to rounding level before the interrupt came
                    finished += 1
                else:
                    assert prob.status == "interrupted", prob.stats
                    caught += 1
                    # the point rebuilt after the interrupt keeps a valid certificate
                    assert prob.value - f_star <= prob.stats.suboptimality_bound + 1e-7 * abs(f_star)
            _check_consistent(prob, x, A, b)
            _check_warm_resolve(prob, x, f_star)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.setprofile(None)
    print("interrupt trials:", dict(caught=caught, escaped=escaped, finished=finished))
    assert caught >= 80, (caught, escaped, finished)


@pytest.mark.parametrize("projection", [False, True])
def test_interrupts_in_trace_norm_and_projection_steps(projection):
    """L1 ∩ trace-norm ball: in-face active sets, and (projection=True) projected-gradient steps on the L1 copy."""
    C = np.diag(np.arange(6.0))
    C[0, 1] = 2.0
    Xc = cp.Variable((6, 6))
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)),
                        [cp.norm1(cp.vec(Xc, order="F")) <= 5.0, cp.normNuc(Xc) <= 4.0]).solve(solver="CLARABEL")
    X = fm.Variable((6, 6), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, 5.0), fm.TraceNormBall(X, 4.0)])
    prob.solve(projection=projection)
    rng = np.random.default_rng(1)
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt))
    caught = 0
    try:
        # an interrupt during the setup escapes (no point yet): on a loaded machine the
        # timer lands there more often, so run trials until 14 were caught (40 at most)
        for trial in range(40):
            if caught >= 14:
                break
            trigger = _timer_trigger(float(rng.uniform(1e-3, 5e-3))) if trial % 2 else \
                _call_count_trigger(int(rng.integers(1, 3000)))
            try:
                _run(lambda: prob.solve(warm_start=bool(rng.integers(2)), projection=projection, tol=1e-12,
                                        feas_tol=1e-12, max_iter=10 ** 6), trigger)
            except Interrupted:
                pass
            else:
                # a solve may reach machine precision ("optimal") before a late trigger fires
                assert prob.status == "interrupted", prob.stats
                caught += prob.status == "interrupted"
            assert prob.value == pytest.approx(float(np.sum((X.value - C) ** 2)), rel=1e-12)
            columns = prob.history.to_dict()
            assert len({len(col) for col in columns.values()}) == 1
            for blk in prob.compile().blocks:
                copy = prob._state.x[blk.offset:blk.offset + blk.size].reshape(blk.set.expr.shape)
                assert blk.set.contains(copy, tol=1e-9), blk.name
            prob.solve(warm_start=True, projection=projection)
            assert prob.status == "optimal", prob.stats
            assert prob.value == pytest.approx(f_star, rel=1e-3)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.setprofile(None)
    assert caught >= 10


def test_warm_start_checks_the_state_it_is_given(lasso_data):
    """A warm state whose active sets are broken (weights off the simplex) or describe another point
    is repaired at the start of the solve: the answer is the CVXPY optimum at a point of both sets."""
    from fwmodel.engine import ActiveSet

    A, b, f_star = lasso_data
    x = fm.Variable(N, name="x")
    # the box on the slice x[:]: two copies with an active set each (on x the sets merge into one BoxedL1Ball)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, RADIUS), fm.Box(x[:], -BOUND, BOUND)])
    prob.solve(tol=1e-3, step="pairwise")  # the box keeps an active set under "pairwise"

    class HalfUpdated:
        """What an update cut short can leave: weights that no longer sum to one."""

        def __init__(self, aset):
            self.atoms = list(aset.atoms)
            self.weights = [0.7 * w for w in aset.weights]

        def __len__(self):
            return len(self.atoms)

    blocks = prob.compile().blocks
    state = prob._state  # what a warm start resumes (private: this test breaks it on purpose)
    polytope_keys = [k for k in state.active_sets if not isinstance(k, tuple)]
    assert len(polytope_keys) == 2
    broken, elsewhere = polytope_keys
    state.active_sets[broken] = HalfUpdated(state.active_sets[broken])
    # a sound active set for another point of the set (its first vertex alone) than x[block]
    first_atom = list(state.active_sets[elsewhere].atoms)[0]
    state.active_sets[elsewhere] = ActiveSet(first_atom)
    prob.solve(warm_start=True, step="pairwise")
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(f_star, rel=1e-3)
    assert np.abs(x.value).sum() <= RADIUS * (1 + 1e-3) and np.abs(x.value).max() <= BOUND * (1 + 1e-3)
    for blk in blocks:
        copy = prob._state.x[blk.offset:blk.offset + blk.size].reshape(blk.set.expr.shape)
        assert blk.set.contains(copy, tol=1e-9), blk.name


def _interrupt_at_an_errstate_exit(nth):
    """Raise KeyboardInterrupt as the ``nth`` ``np.errstate`` block of the solve is left, before it
    restores NumPy's floating-point error state (its ``__exit__``'s first line)."""
    seen = [0]

    def hook(frame, event, arg):
        if event == "call" and frame.f_code is np.errstate.__exit__.__code__:
            seen[0] += 1
            if seen[0] >= nth:
                sys.setprofile(None)
                raise KeyboardInterrupt

    return (lambda: sys.setprofile(hook)), (lambda: sys.setprofile(None))


@pytest.mark.parametrize("nth", [1, 3, 40, 400])
def test_an_interrupt_inside_an_errstate_block_leaves_the_callers_numpy_state(nth):
    """NumPy's error state lives in a context variable that np.errstate sets and resets: an interrupt
    between the two (in NumPy's own blocks too, np.linalg.svd holds one) left the block's state in
    force after the solve, so the caller's later, unrelated NumPy code ran with it (an invalid value
    raised "SVD did not converge"). The solve runs in a copy of the caller's context."""
    u = sympy.Symbol("u")
    z = fm.Variable(3, name="z")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SymPy cannot prove u**1.5 convex on the whole line)
        power = fm.smooth(u ** sympy.Rational(3, 2) + u, {u: z})  # each evaluation holds an np.errstate
    prob = fm.Problem(fm.Minimize(fm.sum(power) + fm.sum_squares(z - np.array([0.9, -0.2, 0.7]))),
                      [z >= 0, z <= 1, fm.sum(z) <= 1.1, z[0] - z[2] == 0.1])
    with np.errstate(over="warn", invalid="warn", divide="warn", under="ignore"):
        before = np.geterr(), np.geterrcall()
        try:
            _run(lambda: prob.solve(tol=1e-12, max_iter=10 ** 5), _interrupt_at_an_errstate_exit(nth))
        except Interrupted:
            pass  # before the first iterate: the interrupt propagates (as documented)
        else:
            assert prob.status == "interrupted", prob.stats
        assert (np.geterr(), np.geterrcall()) == before
