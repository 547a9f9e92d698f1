"""rank_k="auto" takes the same steps on every run (fwmodel.engine.rank_k, "Costs").

Its decisions (k's cap, the pause when rank-k steps stop paying) come from
counted operations, not from the clock: the same model solved twice, in one
process or in two, has the same iterations and the same history. rank_k="auto"
acts on trace-norm blocks of at least ``rank_k.AUTO_MIN_DIM`` rows and columns
(1000); these tests lower that threshold (a module constant read when the steps
are made) so that a model of a few dozen rows exercises the same code in a
second. ``projection=False`` keeps the blocks on FW / rank-k steps:
``projection="auto"`` chooses from measured times by design (issue 14), and
at this size it would project the block after a few iterations. The answers
are checked against the projection of C (a closed form) and CVXPY + Clarabel.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fwmodel as fm
import fwmodel.engine.rank_k as rank_k_module

SMALL_AUTO_MIN_DIM = 30


def ball_model(m, n, seed=0, mask=False):
    """min ||X - C||^2 (or on a random half of the entries) over the trace-norm ball of half C's norm."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((m, 5)) @ rng.standard_normal((5, n)) / np.sqrt(n) * 10.0
    C += 0.1 * rng.standard_normal((m, n))
    radius = 0.5 * float(np.linalg.svd(C, compute_uv=False).sum())
    X = fm.Variable((m, n), name="X")
    W = (rng.random((m, n)) < 0.5).astype(float) if mask else None
    loss = fm.sum_squares(fm.multiply(W, X - C)) if mask else fm.sum_squares(X - C)
    ball = fm.TraceNormBall(X, radius)
    return fm.Problem(fm.Minimize(loss), [ball]), X, ball, C, W, radius


def run(prob, **options):
    prob.solve(projection=False, **options)
    history = {k: np.asarray(prob.history[k]).tolist() for k in prob.history.keys() if k != "time"}
    return prob.status, prob.stats.iterations, dict(prob.stats.step_counts), history


@pytest.fixture
def small_auto(monkeypatch):
    monkeypatch.setattr(rank_k_module, "AUTO_MIN_DIM", SMALL_AUTO_MIN_DIM)


def test_auto_rank_k_repeats_on_the_ball_and_finds_the_projection(small_auto):
    first = run(ball_model(50, 60)[0], tol=1e-7)
    prob, X, ball, C, _, _ = ball_model(50, 60)
    second = run(prob, tol=1e-7)
    assert first == second
    assert first[2]["rank_k"] > 0  # "auto" took rank-k steps at this size
    f_star = float(np.sum((ball.project(C) - C) ** 2))  # the solution is the projection of C
    assert prob.status == "optimal"
    assert abs(prob.value - f_star) <= 1e-5 * f_star


def test_auto_rank_k_repeats_on_matrix_completion_and_matches_clarabel(small_auto):
    cp = pytest.importorskip("cvxpy")
    first = run(ball_model(30, 34, seed=1, mask=True)[0], max_iter=300)
    prob, X, _, C, W, radius = ball_model(30, 34, seed=1, mask=True)
    second = run(prob, max_iter=300)
    assert first == second
    assert first[2]["rank_k"] > 0
    Z = cp.Variable(C.shape)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(W, Z - C))), [cp.normNuc(Z) <= radius])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-3 * abs(ref.value)



@pytest.mark.parametrize("psd", [False, True])
def test_auto_rank_k_with_an_equality_row_repeats_and_matches_clarabel(small_auto, psd):
    """A single trace-norm block with a Parameter-dependent equality row: M has rows, so the block
    is ``coupled`` (the plain cost cap; the dual must follow its steps); same steps every run, and
    the answer of CVXPY + Clarabel."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    n = 32
    C = rng.standard_normal((n, 4)) @ rng.standard_normal((4, n)) + 0.1 * rng.standard_normal((n, n))
    if psd:
        C = 0.5 * (C + C.T)
    radius = 0.5 * (float(np.trace(C)) if psd else float(np.linalg.svd(C, compute_uv=False).sum()))
    radius = abs(radius)
    total = 5.0

    def model():
        X = fm.Variable((n, n), name="X")
        level = fm.Parameter(value=total, name="level")
        return fm.Problem(fm.Minimize(fm.sum_squares(X - C)),
                          [fm.TraceNormBall(X, radius, psd=psd), fm.sum(X) == level])

    first = run(model(), tol=1e-6, feas_tol=1e-6, max_iter=5000)
    prob = model()
    second = run(prob, tol=1e-6, feas_tol=1e-6, max_iter=5000)
    assert first == second
    assert first[2]["rank_k"] > 0
    if psd:
        Z = cp.Variable((n, n), PSD=True)
        ball = [cp.trace(Z) <= radius]
    else:
        Z = cp.Variable((n, n))
        ball = [cp.normNuc(Z) <= radius]
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), ball + [cp.sum(Z) == total])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-5 * abs(ref.value)


SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
import numpy as np
import fwmodel.engine.rank_k as rank_k_module
rank_k_module.AUTO_MIN_DIM = {dim}
sys.path.insert(0, {tests!r})
from test_rank_k_determinism import ball_model, run
print(json.dumps(run(ball_model(30, 34, seed=1, mask=True)[0], max_iter=300)))
"""


def test_auto_rank_k_repeats_in_another_process(small_auto):
    """A second interpreter (another hash seed, another heap) takes the same steps."""
    here = os.path.dirname(os.path.abspath(__file__))
    script = SCRIPT.format(root=os.path.dirname(here), tests=here, dim=SMALL_AUTO_MIN_DIM)
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                         check=True).stdout
    other = json.loads(out.strip().splitlines()[-1])
    status, iterations, steps, history = run(ball_model(30, 34, seed=1, mask=True)[0], max_iter=300)
    assert other == [status, iterations, steps, history]
