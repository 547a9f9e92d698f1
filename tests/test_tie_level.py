"""Rows at unit norm next to the copies' ties: the rows' level is raised to the ties' width over the sets
(engine/stopping.py ``tie_level``), so one penalty holds them alike."""
import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows, SparseRows
from fwmodel.engine.lagrangian import Block
from fwmodel.sets.atoms import DenseAtom
from fwmodel.engine.stopping import row_norm_equilibration, tie_level


def _box_block(offset, n, lo, hi):
    return Block(offset, n, lambda g: DenseAtom(np.where(g > 0, lo, hi)), lambda: DenseAtom(np.zeros(n)))


def _l1_block(offset, n, r):
    def lmo(g):
        j = int(np.argmax(np.abs(g)))
        v = np.zeros(n)
        v[j] = -r * np.sign(g[j])
        return DenseAtom(v)
    return Block(offset, n, lmo, lambda: DenseAtom(np.zeros(n)))


@pytest.mark.parametrize("r, expect_raise", [(0.1, False), (3.0, True)])
def test_the_level_is_the_ties_width_over_the_unit_rows_width(r, expect_raise):
    """x in a box [-0.2, 0.4]^n tied to its copy in an L1 ball of radius r, and two dense rows on x. A tie's
    width over the sets is 0.6 + 2 r (one coordinate's range in each), a unit row's 0.6 ||a||_1 / ||a||_2
    (closed forms): the level is their ratio (mean over the rows), and the rows' factors are level / ||a||
    where that is above the ties' norm sqrt 2, sqrt 2 / ||a|| (unit norm at the ties' norm) otherwise."""
    n = 6
    rng = np.random.default_rng(3)
    A = rng.standard_normal((2, n))
    rows = SparseRows(sp.csr_matrix(np.hstack([A, np.zeros((2, n))])), np.zeros(2))
    M = ConsistencyOperator([CopyRows(np.arange(n, 2 * n), np.arange(n)), rows], 2 * n)
    blocks = [_box_block(0, n, -0.2, 0.4), _l1_block(n, n, r)]
    norms = np.linalg.norm(A, axis=1)
    expected = (0.6 + 2 * r) / np.mean(0.6 * np.abs(A).sum(axis=1) / norms)
    all_norms = np.concatenate([np.full(n, np.sqrt(2)), norms])
    assert tie_level(M.pieces, M.offsets, all_norms, blocks, 2 * n) == pytest.approx(expected, rel=1e-12)
    _, factors = row_norm_equilibration(M, 2 * n, blocks)
    level = expected if expected > np.sqrt(2) else np.sqrt(2)
    assert (expected > np.sqrt(2)) == expect_raise
    assert factors[n:] == pytest.approx(level / norms, rel=1e-12)
    # without the sets: the ties' norm, as before
    _, plain = row_norm_equilibration(M, 2 * n)
    assert plain[n:] == pytest.approx(np.sqrt(2) / norms, rel=1e-12)


def _budget_model(seed, n=27, m=3):
    """A linear objective over x >= 0, sum(x) <= 1, norm1(x) <= 1 (a copy of x in an L1 ball, tied to x)
    and three dense equality rows through a point of the budget."""
    rng = np.random.default_rng(seed)
    x0 = rng.dirichlet(np.ones(n)) * 0.8
    A = rng.standard_normal((m, n))
    return A, A @ x0, rng.standard_normal(n)


def test_dense_rows_next_to_tied_copies_in_a_budget_solve_against_clarabel():
    """Twelve such models: main (rows at the ties' norm) ended one at max_iter (seed 2) and took 14,929
    iterations in all; with the rows raised to the ties' width 3,488, each "optimal" at Clarabel's value."""
    total = 0
    for seed in range(12):
        A, b, c = _budget_model(seed)
        x = fm.Variable(27)
        prob = fm.Problem(fm.Minimize(c @ x), [x >= 0, fm.sum(x) <= 1, fm.norm1(x) <= 1, A @ x == b])
        prob.solve(max_iter=3000)
        z = cp.Variable(27)
        ref = cp.Problem(cp.Minimize(c @ z), [z >= 0, cp.sum(z) <= 1, cp.norm1(z) <= 1, A @ z == b])
        ref.solve(solver=cp.CLARABEL)
        assert prob.status == "optimal", seed
        assert abs(prob.value - ref.value) <= 1e-3 * max(abs(ref.value), 1e-2), seed
        assert np.abs(A @ x.value - b).max() <= 1e-3
        total += prob.stats.iterations
    assert total <= 5000


def test_a_residual_that_grows_after_the_penalty_was_lowered_does_not_halve_the_dual_step():
    """The balance rule halves lam (the FW gap lags 100x behind feasibility); over the next window the
    residual doubles: the weaker penalty's doing, so theta stays at 1/4 (main halved it to 1/8). A growth
    in a later window, with lam unchanged, is an overshoot and halves theta as before."""
    from fwmodel.engine.schedules import AdaptiveMultiplier
    sched = AdaptiveMultiplier(1.0)
    lam, t = 1.0, 0

    def window(feas, gap):
        nonlocal lam, t
        for _ in range(sched.window):
            sched.step(t, feas=feas, lam=lam, gap=gap, gap_target=1.0, feas_target=1.0)
            lam = sched.penalty(lam)
            t += 1

    window(1.0, 100.0)  # gap ratio 100 > 10 x feasibility ratio 1: lam halved at the window's end
    assert lam == 0.5 and sched.theta == 0.25
    window(2.0, 1.0)  # the residual doubles under the halved penalty
    assert lam == 0.5 and sched.theta == 0.25
    window(4.0, 1.0)  # it doubles again with lam unchanged: a dual overshoot
    assert sched.theta == 0.125
