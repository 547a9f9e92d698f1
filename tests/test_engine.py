"""The FW-AL engine: step variants, schedules, statuses, warm starts, verbose output."""
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.engine import Block, minimize_fwal
from fwmodel.sets.atoms import SparseAtom


def _simplex_box_problem(n=40, seed=0):
    """min ||x - c||^2 over simplex ∩ [0, 0.06]^n (feasible for n >= 17): strongly convex, two polytopes.

    The box is on the slice ``x[:]``, so the two sets stay two copies tied by rows of M (FW-AL's
    machinery, which these tests exercise); on ``x`` itself the compiler would merge them into one
    CappedSimplex."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(n) * 0.2 + 1.0 / n
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x[:], 0, 0.06)])
    return prob, x, c


def _capped_simplex_projection(c, cap):
    """Closed form: argmin ||x - c|| over {x in [0, cap], sum x = 1}, by bisection on the shift."""
    lo, hi = c.min() - cap - 1.0, c.max() + 1.0
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        if np.clip(c - tau, 0, cap).sum() > 1.0:
            lo = tau
        else:
            hi = tau
    return np.clip(c - 0.5 * (lo + hi), 0, cap)


@pytest.mark.parametrize("step", ["away", "pairwise"])
def test_away_and_pairwise_converge_linearly_where_fw_cannot(step):
    budget = 3000
    prob, x, c = _simplex_box_problem()
    prob.solve(step=step, tol=1e-8, feas_tol=1e-8, max_iter=budget)
    assert prob.status == "optimal"
    # the stopping rule: FW gap and ||Mx - b|| relative to the problem's own scales
    assert prob.stats.fw_gap <= 1e-8 * prob.stats.objective_scale
    assert prob.stats.feasibility <= 1e-8 * prob.stats.feasibility_scale
    expected = _capped_simplex_projection(c, 0.06)
    assert np.allclose(x.value, expected, atol=1e-5)

    # The contrast with plain FW (Alg. 2) on the simplex alone, where nothing but the step kind
    # sets the rate: the projection of c has zeros, so FW zig-zags toward that face (O(1/t)). (On
    # simplex ∩ box plain FW reaches 1e-8 too since the dual step grows on steady progress: it
    # stalled there at ~1.5e-8 for want of dual progress, not because of FW's rate.)
    for kind, sublinear in ((step, False), ("fw", True)):
        z = fm.Variable(c.size, name="z")
        alone = fm.Problem(fm.Minimize(fm.sum_squares(z - c)), [fm.Simplex(z)])
        alone.solve(step=kind, tol=1e-8, feas_tol=1e-8, max_iter=budget)
        assert (alone.status == "max_iter") == sublinear, kind


def test_auto_step_uses_pairwise_steps_on_polytopes_and_fw_elsewhere():
    prob, _, _ = _simplex_box_problem()
    # (with projection="auto" the simplex, whose variable's other copy is a box, takes projection steps)
    prob.solve(tol=1e-7, feas_tol=1e-7, projection=False)
    assert prob.status == "optimal"
    assert prob.stats.step_counts["pairwise"] > 0

    X = fm.Variable((6, 6), name="X")
    C = np.diag(np.arange(6.0))
    mixed = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, 5.0), fm.TraceNormBall(X, 4.0)])
    mixed.solve(max_iter=50, projection=False)
    # one polytope block (pairwise) and one trace-norm block (FW) per iteration
    assert mixed.stats.step_counts["pairwise"] > 0 and mixed.stats.step_counts["fw"] >= 50
    # projection=True: the L1 ball takes projected-gradient steps instead
    mixed.solve(max_iter=50, projection=True)
    assert mixed.stats.step_counts["projection"] > 0 and mixed.stats.step_counts["pairwise"] == 0
    assert mixed.stats.step_counts["fw"] >= 50


def test_auto_projection_rule_weighs_a_projection_against_an_iteration():
    """projection="auto" times each block's projection against the measured time of an iteration."""
    import time

    from fwmodel.engine.fwal import Block
    from fwmodel.engine.projection_step import initial_projection_blocks
    from fwmodel.engine.projection_choice import AutoProjection, candidates, choose

    def slow(seconds):
        def fn(v):
            time.sleep(seconds)
            return np.copy(v)
        return fn

    def never(v):
        raise AssertionError("a projection estimated far too slow must not be timed")

    def block(offset, polytope=False, project=None, cheap=True, estimate=None):
        return Block(offset=offset, size=5, lmo=None, initial_atom=None, is_polytope=polytope, project=project,
                     cheap_projection=cheap, projection_estimate=estimate)

    iteration = 0.004
    budget = 5.0 * iteration
    cheap = block(0, polytope=True, project=np.copy)
    costly = block(5, project=slow(3 * budget), cheap=False)
    quick = block(5, project=np.copy, cheap=False)
    guessed = block(5, project=never, cheap=False, estimate=lambda: 100 * budget)
    over = block(5, project=never, cheap=False, estimate=lambda: 1.2 * budget)  # just over: not timed either
    under = block(5, project=np.copy, cheap=False, estimate=lambda: 0.8 * budget)  # timed, then taken
    x, g = np.zeros(10), np.ones(10)
    assert choose([cheap, costly], [0, 1], iteration, x, g, max_iterations=5.0) == [0]
    assert choose([cheap, quick], [0, 1], iteration, x, g, max_iterations=5.0) == [0, 1]
    assert choose([cheap, guessed], [0, 1], iteration, x, g, max_iterations=5.0) == [0]
    assert choose([cheap, over], [0, 1], iteration, x, g, max_iterations=5.0) == [0]
    assert choose([cheap, under], [0, 1], iteration, x, g, max_iterations=5.0) == [0, 1]
    # on products of polytopes: the blocks with a cheap projection that are not boxes, with or
    # without rows; none for a linear objective or a step kind asked for by name (keep_vertex_steps)
    both_cheap = [cheap, block(5, polytope=True, project=np.copy)]
    assert candidates(both_cheap, rows=3) == [0, 1]
    assert candidates(both_cheap) == [0, 1]
    assert candidates(both_cheap, rows=3, keep_vertex_steps=True) == []
    # a block the objective does not read (an L1 ball of D x, tied by rows) keeps its vertex steps
    assert candidates(both_cheap, rows=3, read_alone=lambda sl: sl.start == 0) == [0]
    assert AutoProjection(both_cheap, rows=3, read_alone=lambda sl: sl.start == 0, projected=[0]).ks == []
    assert candidates(both_cheap, keep_vertex_steps=True) == []
    # a polytope whose projection is not cheap (the Birkhoff polytope's Newton projection) is a candidate
    # too, measured: it does not project from the start
    measured_polytope = [cheap, block(5, polytope=True, project=np.copy, cheap=False)]
    assert candidates(measured_polytope, rows=2) == [0, 1]
    assert initial_projection_blocks(measured_polytope, "auto", rows=2) == [0]
    assert AutoProjection(measured_polytope, rows=2, projected=[0]).ks == [1]
    assert candidates([cheap, block(5, polytope=True)]) == [0]
    box = Block(offset=5, size=5, lmo=None, initial_atom=None, is_polytope=True, project=np.copy,
                intervals=(np.zeros(5), np.ones(5)))
    assert candidates([cheap, box], rows=5) == [0]  # a box keeps its per-coordinate FW steps
    symmetric_box = Block(offset=5, size=5, lmo=None, initial_atom=None, is_polytope=True, project=np.copy,
                          is_box=True)
    assert candidates([symmetric_box, cheap]) == [1]
    assert candidates([cheap, block(5)]) == [0]
    # decisions after the probe iterations, then after 2x, 4x, ... as many, from the time of
    # the iterations since the last one; a block switched once is not timed again
    auto = AutoProjection([cheap, costly], probe=2, max_iterations=5.0)
    decisions = {}
    for t in range(12):
        if auto.due(t):
            decisions[t] = auto.choose(x, g)
        time.sleep(iteration if t < 5 else 10 * iteration)  # iterations get dearer
    # the cheap block at once; the costly one (3 budgets) once an iteration costs 10x more
    assert decisions == {3: [0], 5: [], 9: [1]}
    assert auto.chosen == [0, 1]
    # True: the cheap projections from the start; False: none; "auto": the declared-cheap
    # ones among its candidates (none on a product of polytopes), and those are not timed again
    assert initial_projection_blocks([cheap, quick], True) == [0]
    assert initial_projection_blocks([cheap, quick], False) == []
    assert initial_projection_blocks([cheap, quick], "auto") == [0]
    assert initial_projection_blocks([cheap, block(5, polytope=True, project=np.copy)], "auto", rows=2) == [0, 1]
    assert initial_projection_blocks([cheap, box], "auto", rows=5) == [0]
    assert initial_projection_blocks([cheap, block(5, polytope=True, project=np.copy)], "auto") == [0, 1]
    assert AutoProjection([cheap, quick], projected=[0]).ks == [1]


def test_auto_projects_a_declared_cheap_set_from_the_first_iteration():
    """projection="auto": the L1 copy (soft-thresholding, declared as cheap as its LMO) projects at
    iteration 0, not after the probe iterations; the trace-norm copy takes FW steps meanwhile."""
    from fwmodel.engine.projection_choice import PROBE_ITERATIONS

    rng = np.random.default_rng(3)
    C = rng.standard_normal((30, 30))
    C = C + C.T
    X = fm.Variable((30, 30))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, 40.0), fm.TraceNormBall(X, 20.0)])
    counts = []
    prob.solve(max_iter=PROBE_ITERATIONS - 1, callback=lambda s: counts.append(s.iteration) or True)
    # one projection step per iteration before the probe ends: the L1 block from the start
    assert prob.stats.step_counts.get("projection", 0) == PROBE_ITERATIONS - 1
    assert prob.stats.step_counts.get("fw", 0) == PROBE_ITERATIONS - 1
    # the L1 copy lies in its ball (checked by the set itself) after the projection steps
    block = prob.compile().blocks[0]
    assert block.set.contains(prob._state.x[block.slice].reshape(30, 30), 1e-9)


def test_auto_projection_choice_survives_a_warm_start():
    """A warm start keeps the blocks "auto" chose, and their point (no restart of an active set)."""
    rng = np.random.default_rng(0)
    C = rng.standard_normal((12, 12))
    X = fm.Variable((12, 12))
    data = fm.Parameter((12, 12), value=C)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - data)), [fm.L1Ball(X, 20.0), fm.TraceNormBall(X, 8.0)])
    prob.solve()
    assert prob.status == "optimal" and prob.stats.step_counts.get("projection", 0) > 0
    first = prob.stats.iterations
    data.value = C + 1e-3 * rng.standard_normal((12, 12))
    prob.solve(warm_start=True)
    assert prob.status == "optimal" and prob.stats.step_counts.get("projection", 0) > 0
    assert prob.stats.iterations < first


def test_projection_steps_reach_the_closed_form_answer():
    """Projection steps on the L1 block, checked against a closed form.

    With a large nuclear radius the trace-norm ball is inactive, so the
    answer is the L1-ball projection of C (soft-thresholding, computed here
    independently of the engine's step).
    """
    X = fm.Variable((6, 6), name="X")
    C = np.diag([3.0, -2.0, 1.0, 0.5, 0.0, 0.0]) + 0.1
    l1 = fm.L1Ball(X, 4.0)
    lo, hi = 0.0, float(np.abs(C).max())  # soft-threshold level by bisection: sum(|C| - tau)_+ = 4
    for _ in range(200):
        tau = 0.5 * (lo + hi)
        lo, hi = (tau, hi) if np.maximum(np.abs(C) - tau, 0).sum() > 4.0 else (lo, tau)
    expected = np.sign(C) * np.maximum(np.abs(C) - tau, 0)
    assert np.abs(np.linalg.eigvalsh(expected)).sum() < 50  # trace ball below inactive
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [l1, fm.TraceNormBall(X, 50.0)])
    prob.solve(projection=True, tol=1e-7, feas_tol=1e-7, max_iter=20000)
    assert prob.status == "optimal"
    assert prob.stats.step_counts["projection"] > 0
    np.testing.assert_allclose(X.value, expected, atol=1e-4)


def test_projection_option_is_checked():
    x = fm.Variable(3)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.L1Ball(x, 1.0)])
    with pytest.raises(ValueError, match="projection"):
        prob.solve(projection="yes")


def test_infeasible_intersection_is_detected():
    x = fm.Variable(10, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Simplex(x), fm.L1Ball(x, radius=0.5)])
    prob.solve(max_iter=5000)
    assert prob.status == "infeasible"
    assert prob.stats.iterations < 5000
    assert "certified" in prob.stats.message


def test_feasible_but_tight_intersection_is_not_called_infeasible():
    # Simplex ∩ L1 ball of radius exactly 1: feasible (the simplex is inside it).
    x = fm.Variable(10, name="x")
    c = np.linspace(-1, 1, 10)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.L1Ball(x, radius=1.0)])
    prob.solve()
    assert prob.status == "optimal"


def test_non_finite_objective_ends_diverged():
    x = fm.Variable(3, name="x")
    # exp(x) overflows everywhere on this box: no finite point exists.
    prob = fm.Problem(fm.Minimize(fm.sum(fm.exp(x))), [fm.Box(x, 800, 1000)])
    with np.errstate(over="ignore", invalid="ignore"):
        prob.solve(max_iter=200)
    assert prob.status == "diverged"


def test_nan_from_callback_ends_diverged_with_a_finite_point():
    rng = np.random.default_rng(1)
    n = 20
    A, b = rng.standard_normal((15, n)), rng.standard_normal(15)

    class Objective:
        is_quadratic = True

        def value(self, x):
            r = A @ x - b
            return float(r @ r)

        def value_and_grad(self, x):
            r = A @ x - b
            return float(r @ r), 2 * A.T @ r

        def curvature(self, x, d):
            q = A @ d
            return 2 * float(q @ q)

    def l1_lmo(g):
        i = int(np.argmax(np.abs(g)))
        return SparseAtom([i], [-np.sign(g[i]) or 1.0], n)

    def corrupt(state):
        if state.iteration == 5:
            state.x[:] = np.nan  # a callback that breaks the iterate

    res = minimize_fwal(Objective(), [Block(0, n, l1_lmo, lambda: l1_lmo(np.ones(n)), True)],
                        callback=corrupt, max_iter=100)
    assert res.status == "diverged"
    assert np.all(np.isfinite(res.x))


def test_callback_false_and_keyboard_interrupt_end_interrupted():
    prob, _, _ = _simplex_box_problem()
    prob.solve(callback=lambda s: s.iteration < 3)
    assert prob.status == "interrupted"
    assert prob.stats.iterations == 3

    def ctrl_c(state):
        if state.iteration == 4:
            raise KeyboardInterrupt

    prob.solve(callback=ctrl_c)
    assert prob.status == "interrupted"


def test_max_iter_and_time_limit_statuses():
    prob, _, _ = _simplex_box_problem()
    prob.solve(max_iter=5, step="fw")
    assert prob.status == "max_iter"
    prob.solve(time_limit=1e-9, step="fw")
    assert prob.status == "time_limit"


@pytest.mark.parametrize("eta", ["adaptive", "theorem3"])
def test_default_and_theorem3_schedules_reach_the_answer(eta):
    prob, x, c = _simplex_box_problem(n=20, seed=3)
    prob.solve(eta=eta, max_iter=5000, tol=1e-5, feas_tol=1e-5)
    assert prob.status == "optimal", prob.stats
    assert np.allclose(x.value, _capped_simplex_projection(c, 0.06), atol=1e-3)


def test_theorem2_and_user_schedules_are_followed():
    """The decreasing 2/(t+2) schedule (Theorem 2) and a callable are applied as given.

    Both make progress on feasibility but, as the paper's analysis allows,
    far more slowly than the adaptive default: they are options, not defaults.
    """
    prob, _, _ = _simplex_box_problem(n=20, seed=3)
    prob.solve(eta="theorem2", max_iter=300)
    h = prob.history
    lam = prob.stats.lam
    # eta_t = lam * 2 / (t + 2) after the first dual step
    assert h["eta"][-1] == pytest.approx(lam * 2.0 / (h["iteration"][-1] - 1 + 2.0), rel=0.05)
    assert h["feasibility_rel"][-1] < 0.5 * h["feasibility_rel"][1]

    prob.solve(eta=lambda t: 0.01, max_iter=50)
    assert np.allclose(prob.history["eta"][1:], 0.01)


def test_warm_start_after_parameter_change_takes_fewer_iterations():
    rng = np.random.default_rng(2)
    n = 30
    A = rng.standard_normal((20, n))
    b = fm.Parameter(20, name="b", value=rng.standard_normal(20))
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, 1.0), fm.Box(x, -0.2, 0.2)])
    prob.solve(tol=1e-6, feas_tol=1e-6)
    b.value = b.value + 0.01 * rng.standard_normal(20)
    prob.solve(tol=1e-6, feas_tol=1e-6)
    cold = prob.stats.iterations
    cold_value = prob.value
    b.value = b.value  # same data: a warm start begins next to the answer
    prob.solve(tol=1e-6, feas_tol=1e-6, warm_start=True)
    assert prob.status == "optimal"
    assert prob.stats.iterations < cold
    assert prob.value == pytest.approx(cold_value, rel=1e-4)


def test_verbose_prints_a_table(capsys):
    prob, _, _ = _simplex_box_problem(n=20)
    prob.solve(verbose=True, print_every=5)
    out = capsys.readouterr().out
    assert "FW gap" in out and "rows of M" in out and "status: optimal" in out
    assert out.count("\n") > 6


def test_verbose_header_states_the_stopping_rule_and_footer_its_targets(capsys):
    prob, _, _ = _simplex_box_problem(n=20)
    prob.solve(verbose=True, tol=1e-6, feas_tol=1e-5)
    out = capsys.readouterr().out
    assert "tol * S_f = 1.0e-06 *" in out and "feas_tol * S_x = 1.0e-05 *" in out
    s = prob.stats
    # the footer gives the targets the solve met, from the scales it reports
    assert f"(tol * S_f = {1e-6 * s.objective_scale:.3e})" in out
    assert f"(feas_tol * S_x = {1e-5 * s.feasibility_scale:.3e})" in out


def test_verbose_rows_come_every_few_seconds_between_scheduled_iterations():
    """Rows follow the iteration schedule (0-10, 20, 30, ...) and, in between, the clock (every 2 s)."""
    import io

    from fwmodel.engine.stopping import StoppingRule
    from fwmodel.engine.verbose import VerbosePrinter

    now = [0.0]
    out = io.StringIO()
    printer = VerbosePrinter(True, None, n=3, m=0, blocks=[], stream=out, clock=lambda: now[0])
    rule = StoppingRule(1e-4, 1e-4, objective_scale=2.0, feasibility_scale=1.0)
    printer.header("auto", "exact", 1.0, rule)
    counts = {"fw": 1, "away": 0, "pairwise": 2, "drop": 0, "projection": 3}
    printed = []
    for t in range(11, 20):  # off the schedule: only the clock can print them
        now[0] += 0.9
        before = out.getvalue().count("\n")
        printer.row(t, 1.0, 1e-3, 0.0, rule, 1.0, 0.5, now[0], counts)
        if out.getvalue().count("\n") > before:
            printed.append(t)
    assert printed == [13, 16, 19]  # 2.7 s, 5.4 s, 8.1 s: the first row after each 2 s
    last = out.getvalue().splitlines()[-1]
    assert last.endswith("fw/away/pair/drop/proj 1/0/2/0/3")
    assert "5.00e-04" in last  # the gap relative to the objective scale: 1e-3 / 2


def test_verbose_counts_projection_steps(capsys):
    x = fm.Variable(20, name="x")
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((15, 20)), rng.standard_normal(15)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.L1Ball(x, 1.0), fm.Box(x, -0.1, 0.1)])
    prob.solve(verbose=True, projection=True, max_iter=30)
    out = capsys.readouterr().out
    counts = prob.stats.step_counts
    assert counts["projection"] > 0
    assert f"steps: fw/away/pair/drop/proj {counts['fw']}/{counts['away']}/{counts['pairwise']}/" \
           f"{counts['drop']}/{counts['projection']}" in out


def test_engine_without_modeling_layer_matches_closed_form():
    """min ||x - c||^2 over two copies (simplex, box) tied by x1 - x2 = 0."""
    n = 12
    rng = np.random.default_rng(4)
    c = rng.standard_normal(n) * 0.3 + 1.0 / n

    class Objective:
        is_quadratic = True

        def value(self, z):
            v = 0.5 * (z[:n] + z[n:]) - c
            return float(v @ v)

        def value_and_grad(self, z):
            v = 0.5 * (z[:n] + z[n:]) - c
            return float(v @ v), np.concatenate([v, v])

        def curvature(self, z, d):
            q = 0.5 * (d[:n] + d[n:])
            return 2 * float(q @ q)

    def simplex_lmo(g):
        return SparseAtom([int(np.argmin(g))], [1.0], n)

    def box_lmo(g):
        idx = np.flatnonzero(g < 0)
        return SparseAtom(idx, np.full(idx.size, 0.2), n)

    M = sp.hstack([sp.eye(n), -sp.eye(n)]).tocsr()
    blocks = [Block(0, n, simplex_lmo, lambda: simplex_lmo(np.zeros(n)), True, "simplex"),
              Block(n, n, box_lmo, lambda: box_lmo(np.zeros(n)), True, "box")]
    res = minimize_fwal(Objective(), blocks, M, None, tol=1e-8, feas_tol=1e-8, max_iter=20000)
    assert res.status == "optimal"
    x = 0.5 * (res.x[:n] + res.x[n:])
    assert np.allclose(x, _capped_simplex_projection(c, 0.2), atol=1e-5)
    assert len(res.history) == res.iterations + 1


def test_invalid_engine_options_are_named():
    prob, _, _ = _simplex_box_problem(n=20)
    with pytest.raises(ValueError, match="step"):
        prob.solve(step="newton")
    with pytest.raises(ValueError, match="line_search"):
        prob.solve(line_search="armijo")
    with pytest.raises(ValueError, match="tol"):
        prob.solve(tol=-1)
    with pytest.raises(ValueError, match="eta"):
        prob.solve(eta="fast")
    with pytest.raises(ValueError, match="lam"):
        prob.solve(lam=0)


@pytest.mark.parametrize("line_search", ["exact", "backtracking"])
def test_line_searches_agree_on_logistic_regression(line_search):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((60, 10))
    y = np.sign(rng.standard_normal(60))
    x = fm.Variable(10, name="w")
    prob = fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(y, A @ x)))), [fm.L1Ball(x, 1.5)])
    prob.solve(line_search=line_search, tol=1e-7)
    assert prob.status == "optimal"
    ref = fm.Problem(fm.Minimize(fm.sum(fm.logistic(-fm.multiply(y, A @ x)))), [fm.L1Ball(x, 1.5)])
    ref.solve(line_search="auto", tol=1e-7)
    assert prob.value == pytest.approx(ref.value, rel=1e-5)


def test_inface_steps_make_trace_norm_intersections_converge():
    """Trace-norm ball ∩ an inactive L1 ball: in-face steps converge to the closed form.

    The answer does not depend on the inactive L1 ball, so it is the
    projection of C onto the trace-norm ball: soft-thresholding of the
    eigenvalues of the symmetric C to total radius (closed form).
    """
    rng = np.random.default_rng(0)
    d = 10
    u = np.zeros(d)
    u[:4] = rng.standard_normal(4)
    u /= np.linalg.norm(u)
    N = rng.standard_normal((d, d))
    C = 6 * np.outer(u, u) + 0.05 * (N + N.T)
    lam, P = np.linalg.eigh(C)
    from fwmodel.engine.inface import project_capped_simplex

    # the nuclear-ball projection of a symmetric matrix acts on |eigenvalues|
    mags = project_capped_simplex(np.abs(lam), 2.0)
    X_star = (P * (np.sign(lam) * mags)) @ P.T
    assert np.abs(X_star).sum() < 10  # the L1 ball below is inactive
    f_star = float(np.sum((X_star - C) ** 2))

    def solve(**options):
        X = fm.Variable((d, d), name="X")
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 2.0), fm.L1Ball(X, 10.0)])
        options.setdefault("projection", False)  # FW and in-face steps on the trace-norm block
        prob.solve(max_iter=3000, **options)
        return prob, X

    prob, X = solve()
    assert prob.status == "optimal"
    assert prob.stats.step_counts["inface"] > 0
    assert prob.value == pytest.approx(f_star, rel=1e-3)
    assert np.allclose(X.value, X_star, atol=2e-2)
    # FW steps alone on both blocks get there too now that each block has its own
    # step size (a shared step was capped by the zig-zagging trace-norm block)
    plain, _ = solve(inface=False, projection=False, step="fw")
    assert plain.status == "optimal" and plain.value == pytest.approx(f_star, rel=1e-3)


def test_inface_steps_keep_symmetric_problems_symmetric():
    """Symmetric data: the LMOs return symmetric atoms, so the in-face step must too.

    A face step over U C V' with U != V moves off the symmetric matrices;
    once the iterate is asymmetric the LMOs lose their symmetric fast paths
    (the L1 ball returns one-entry vertices) and the asymmetry grows. The
    Lanczos path (dense_threshold=0) also tests the symmetry probe on
    gradients with entries of very different sizes.
    """
    from fwmodel.datasets import sparse_low_rank_covariance

    data = sparse_low_rank_covariance(60, seed=1)
    X = fm.Variable((60, 60), name="S")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - data.sigma_hat)),
                      [fm.L1Ball(X, data.radius_l1),
                       fm.TraceNormBall(X, data.radius_trace, dense_threshold=0)])
    prob.solve(max_iter=400, projection=False)  # FW and in-face steps on the trace-norm block
    assert prob.stats.step_counts["inface"] > 0
    S = X.value
    assert np.linalg.norm(S - S.T) <= 1e-12 * np.linalg.norm(S)


def test_trace_norm_symmetry_probe_ignores_rounding_on_small_entries():
    """A symmetric direction with tiny entries and rounding-level asymmetry takes the symmetric path."""
    rng = np.random.default_rng(2)
    n = 80
    A = rng.standard_normal((n, n))
    D = A + A.T
    D[:, : n // 2] *= 1e-9  # entries of very different sizes ...
    D[: n // 2, :] *= 1e-9
    D = 0.5 * (D + D.T)
    D += 1e-16 * np.abs(D).max() * rng.standard_normal((n, n))  # ... and rounding-level asymmetry
    ball = fm.TraceNormBall(fm.Variable((n, n)), 1.0, dense_threshold=0)
    atom = ball.lmo_atom(D.ravel())
    assert np.array_equal(atom.u, atom.v)


def test_small_nuclear_projection_satisfies_the_projection_inequality():
    """P = proj(C) iff <C - P, Z - P> <= 0 for every Z in the ball (checked on samples)."""
    from fwmodel.engine.inface import project_small_nuclear

    rng = np.random.default_rng(3)
    for psd in (False, True):
        C = rng.standard_normal((5, 5)) * 2
        if psd:
            C = C + C.T
        P = project_small_nuclear(C, 1.5, psd)
        sig = np.linalg.eigvalsh(P) if psd else np.linalg.svd(P, compute_uv=False)
        assert sig.sum() <= 1.5 + 1e-9 and (not psd or sig.min() >= -1e-9)
        for _ in range(200):
            if psd:
                v = rng.standard_normal((5, 3))
                Z = v @ v.T
                Z *= rng.uniform(0, 1.5) / np.trace(Z)
            else:
                Z = rng.standard_normal((5, 5))
                Z *= rng.uniform(0, 1.5) / np.linalg.svd(Z, compute_uv=False).sum()
            assert np.sum((C - P) * (Z - P)) <= 1e-9


def test_projection_steps_on_a_non_quadratic_objective_converge():
    """Backtracking projection steps (own Lipschitz estimate) next to FW steps on a simplex."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((40, 30))
    c = rng.standard_normal(30) * 0.1

    def solve(projection):
        x = fm.Variable(30, name="x")
        prob = fm.Problem(fm.Minimize(fm.sum(fm.logistic(A @ x)) + 5 * fm.sum_squares(x - c)),
                          [fm.L1Ball(x, 0.8), fm.Simplex(x, equality=False)])
        prob.solve(projection=projection, tol=1e-7, feas_tol=1e-7, max_iter=20000)
        return prob, x

    plain, _ = solve(False)
    projected, _ = solve(True)
    assert plain.status == "optimal" and projected.status == "optimal"
    assert projected.stats.step_counts["projection"] > 0
    assert projected.value == pytest.approx(plain.value, rel=1e-6)


def test_degenerate_radii_do_not_crash():
    # an L1 radius below the rounding of the entries' sum: a finite projection
    p = fm.L1Ball(fm.Variable(2), radius=1e-17).project(np.array([1.0, 1.0]))
    assert np.all(np.isfinite(p)) and np.abs(p).sum() <= 1e-16
    # a trace-norm ball of radius 0 with in-face steps (the face projection of a zero radius)
    X = fm.Variable((6, 6), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - np.eye(6))), [fm.TraceNormBall(X, 0.0), fm.L1Ball(X, 1.0)])
    prob.solve(max_iter=200)
    assert prob.status in ("optimal", "max_iter")
    assert np.all(np.isfinite(X.value))


def test_a_solve_without_a_seed_is_reproducible():
    # The start minimizes the linear objective over both sets, so the default
    # penalty draws a random direction: seed=None must draw the same one each time.
    runs = []
    for _ in range(3):
        x = fm.Variable(5)
        prob = fm.Problem(fm.Minimize(fm.sum(x)), [fm.Simplex(x), fm.Box(x[:], 0, 1)])  # two copies, tied
        prob.solve()
        runs.append((prob.status, prob.stats.iterations, prob.stats.lam, prob.value))
    assert runs[0][0] == "optimal" and abs(runs[0][3] - 1.0) <= 1e-3
    assert runs[1] == runs[0] and runs[2] == runs[0]


def _assert_same_iterates_on_the_matrix_path(solve, prob, x_value):
    """``solve()`` again on the generic sparse-matrix path (M's columns not read as signed identities,
    g + M' r formed whole, f's gradient not shared): the same histories and point as ``prob``, ``x_value``."""
    from fwmodel.compiler.consistency import ConsistencyOperator
    from fwmodel.compiler.objective import BlockObjective

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ConsistencyOperator, "signed_rows", lambda self, start, stop: None)
        mp.setattr(ConsistencyOperator, "add_rmatvec",
                   lambda self, r, g, out=None: np.add(g, self.rmatvec(r), out=out))
        mp.setattr(BlockObjective, "value_and_grad_shared", lambda self, x: self.value_and_grad(x))
        generic, x_generic = solve()
    for key in ("objective", "fw_gap", "feasibility"):
        np.testing.assert_allclose(prob.history[key], generic.history[key], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(x_value, x_generic, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("lean", [False, True])
def test_tied_copy_projection_steps_match_the_matrix_path(lean, monkeypatch):
    """Projection steps on the L1 copy of two tied copies (``projection=True``): the tied-copies step
    (block-size arrays) against the general one (an n-size direction, M d, a fresh gradient), 60
    iterations. ``lean``: the path of large blocks forced on this small problem: the curvature from
    ||d||^2, x and r moved by axpys, f and its gradient followed along the move instead of evaluated
    afresh (rounding aside, the same iterates; fewer gradient evaluations)."""
    from fwmodel.compiler.objective import BlockObjective
    from fwmodel.engine import block_search, fwal, projection_step

    if lean:
        for module in (block_search, fwal, projection_step):
            monkeypatch.setattr(module, "LARGE_BLOCK", 1)
    rng = np.random.default_rng(9)
    C = rng.standard_normal((12, 12))
    evaluations = [0]
    original = BlockObjective.value_and_grad_shared

    def counted(self, x):
        evaluations[0] += 1
        return original(self, x)

    def solve():
        X = fm.Variable((12, 12), name="X")
        sets = [fm.L1Ball(X, 0.3 * np.abs(C).sum()), fm.TraceNormBall(X, 0.3 * np.linalg.norm(C, "nuc"))]
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), sets)
        prob.solve(max_iter=60, tol=1e-12, feas_tol=1e-12, projection=True, inface=False)
        return prob, X.value

    monkeypatch.setattr(BlockObjective, "value_and_grad_shared", counted)
    tied, x_tied = solve()
    assert tied.stats.step_counts["projection"] >= 50
    if lean:  # the sweep's FW step and the projection step follow f; a fresh evaluation every FOLLOW_STEPS
        assert evaluations[0] <= 20
    else:
        assert evaluations[0] >= 60
    _assert_same_iterates_on_the_matrix_path(solve, tied, x_tied)


@pytest.mark.parametrize("two_variables,lean", [(False, False), (True, False), (False, True), (True, True)])
def test_copy_structured_steps_match_the_matrix_path(two_variables, lean, monkeypatch):
    """Two tied copies: the steps computed from M's structure (signed identity columns, fused g + M' r,
    the gradient of L per block, the objective's gradient kept once and lent by the expression) give the
    same iterates as the generic sparse-matrix path with full-size gradients. With two variables the
    shared gradient is scaled per variable (no lent array). ``lean``: the path of large blocks
    (block_search.LARGE_BLOCK) on this small problem: slopes from the proposals' atoms, the block's
    gradient of L sharing its array with the lazy directions, f and its gradient followed along each
    move (rounding aside, the same iterates)."""
    from fwmodel.engine import block_search, fwal

    if lean:
        monkeypatch.setattr(block_search, "LARGE_BLOCK", 1)
        monkeypatch.setattr(fwal, "LARGE_BLOCK", 1)

    rng = np.random.default_rng(7)
    C = rng.standard_normal((12, 12))
    D = rng.standard_normal(5)

    def solve():
        X = fm.Variable((12, 12), name="X")
        objective = fm.sum_squares(X - C)
        sets = [fm.L1Ball(X, 0.5 * np.abs(C).sum()), fm.TraceNormBall(X, 0.5 * np.linalg.norm(C, "nuc"))]
        if two_variables:
            z = fm.Variable(5, name="z")
            objective = objective + fm.sum_squares(z - D)
            sets += [fm.L1Ball(z, 1.0), fm.Box(z, -0.4, 0.4)]
        prob = fm.Problem(fm.Minimize(objective), sets)
        prob.solve(max_iter=60, tol=1e-12, feas_tol=1e-12, projection=False, inface=False)
        return prob, X.value

    lean, x_lean = solve()
    _assert_same_iterates_on_the_matrix_path(solve, lean, x_lean)


def test_signed_identity_columns_match_the_matrix():
    """Block columns of two tied copies (and of a block outside M) agree with M's CSR; g + M' r too."""
    from fwmodel.compiler.consistency import ConsistencyOperator, CopyRows
    from fwmodel.engine.block_search import BlockColumns
    from fwmodel.engine.fwal import Block, _Operator

    op = ConsistencyOperator([CopyRows(np.arange(4, 8), np.arange(0, 4))], 10)
    blocks = [Block(0, 4, None, None), Block(4, 4, None, None), Block(8, 2, None, None)]
    cols = BlockColumns(op, _Operator(op, 10), blocks)
    assert cols.signed == [(0, 4, -1.0), (0, 4, 1.0), (0, 0, 0.0)]
    M = op.csr().toarray()
    rng = np.random.default_rng(0)
    for k, blk in enumerate(blocks):
        d = rng.standard_normal(blk.size)
        np.testing.assert_array_equal(cols.matvec(k, d), M[:, blk.slice] @ d)
        np.testing.assert_array_equal(cols.norms2(k), (M[:, blk.slice] ** 2).sum(axis=0))
    r, g = rng.standard_normal(4), rng.standard_normal(10)
    np.testing.assert_allclose(op.add_rmatvec(r, g), g + M.T @ r, rtol=0, atol=1e-15)


def _tied_copies_problem(d=9, seed=3):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((d, d))
    X = fm.Variable((d, d), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)),
                      [fm.L1Ball(X, 0.5 * np.abs(C).sum()), fm.TraceNormBall(X, 0.5 * np.linalg.norm(C, "nuc"))])
    return prob, C


def test_shared_gradient_matches_the_spread_gradient():
    """The gradient kept once for tied copies (SharedGradient) reads as W' gv: every block slice, a strided
    sample and the full vector equal value_and_grad's n-vector, and the closed form 2 (X - C) / 2 per copy."""
    from fwmodel.compiler.objective import SharedGradient

    prob, C = _tied_copies_problem()
    compiled = prob.compile()
    objective = compiled.objective
    x = np.random.default_rng(0).standard_normal(compiled.n)
    f_full, g_full = objective.value_and_grad(x)
    f_shared, g_shared = objective.value_and_grad_shared(x)
    assert isinstance(g_shared, SharedGradient) and isinstance(g_full, np.ndarray)
    assert f_shared == f_full
    d2 = C.size
    closed_form = (x[:d2] + x[d2:]) / 2 - C.ravel()  # grad of ||V - C||^2 is 2 (V - C), split in two
    for blk in compiled.blocks:
        np.testing.assert_array_equal(g_shared[blk.slice], g_full[blk.slice])
        np.testing.assert_allclose(g_shared[blk.slice], closed_form, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(g_shared), g_full)
    np.testing.assert_array_equal(g_shared[::7], g_full[::7])
    np.testing.assert_array_equal(g_shared[3:20], g_full[3:20])
    # a later plain gradient call does not overwrite the shared one (a warm start calls both)
    objective.value_and_grad(np.zeros(compiled.n))
    np.testing.assert_array_equal(np.asarray(g_shared), g_full)


def test_lagrangian_gradient_without_rows_is_a_view_of_the_shared_gradient():
    """One variable in one set, no consistency rows: the gradient of L(., y) is f's gradient itself, a view
    (no copy) equal to value_and_grad's n-vector and to the closed form 2 (X - C); tied copies get a copy."""
    from fwmodel.engine.fwal import _Buffers, _Operator

    rng = np.random.default_rng(3)
    C = rng.random((6, 6))
    X = fm.Variable((6, 6))
    compiled = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)]).compile()
    x = rng.random(compiled.n)
    _, g_full = compiled.objective.value_and_grad(x)
    _, g = compiled.objective.value_and_grad_shared(x)
    grad = _Buffers().lagrangian_grad(_Operator(None, compiled.n), g, np.zeros(0))
    assert isinstance(grad, np.ndarray) and np.shares_memory(grad, g.values)
    np.testing.assert_array_equal(grad, g_full)
    np.testing.assert_allclose(grad, 2 * (x - C.ravel()), rtol=1e-12, atol=1e-14)
    prob, _ = _tied_copies_problem()  # two copies of X: no single whole view
    compiled = prob.compile()
    _, g = compiled.objective.value_and_grad_shared(np.ones(compiled.n))
    assert g.whole_view() is None


def test_block_curvature_matches_the_full_direction():
    """curvature_block along one copy (computed from d itself, scaled by 1/k^2) equals the curvature along
    the zero-padded direction, and the closed form 2 ||d / 2||^2 of ||(x1 + x2)/2 - C||^2."""
    prob, C = _tied_copies_problem()
    compiled = prob.compile()
    objective = compiled.objective
    rng = np.random.default_rng(1)
    x = rng.standard_normal(compiled.n)
    objective.value_and_grad_shared(x)
    for blk in compiled.blocks:
        d_block = rng.standard_normal(blk.size)
        full = np.zeros(compiled.n)
        full[blk.slice] = d_block
        c_block = objective.curvature_block(x, blk.slice, d_block)
        # (the full direction's curvature is summed in chunks: f's Hessian 2 I is known, no v-size array)
        assert c_block == pytest.approx(objective.curvature(x, full), rel=1e-13)
        assert c_block == pytest.approx(2 * np.sum((d_block / 2) ** 2), rel=1e-12)
    # along both copies at once: 2 ||(d_1 + d_2) / 2||^2, with the copies' directions nearly cancelling too
    d = rng.standard_normal(compiled.n)
    first, second = (blk.slice for blk in compiled.blocks)
    d[second] = -d[first] + 1e-9 * rng.standard_normal(d[first].size)
    expected = 2 * np.sum(((d[first] + d[second]) / 2) ** 2)
    assert objective.curvature(x, d) == pytest.approx(expected, rel=1e-12)
    parts = [(blk.slice, d[blk.slice]) for blk in compiled.blocks]
    assert objective.curvature_blocks(x, parts) == pytest.approx(expected, rel=1e-12)


def test_block_lagrangian_gradient_matches_the_full_one():
    """g + M' w formed one block at a time into a shared buffer equals the n-vector g + M' w (CSR of M)."""
    from fwmodel.engine.block_search import BlockColumns, BlockLagrangianGradient
    from fwmodel.engine.fwal import Block, _Buffers, _Operator

    prob, C = _tied_copies_problem()
    compiled = prob.compile()
    op = compiled.operator
    n = compiled.n
    blocks = [Block(blk.offset, blk.size, None, None) for blk in compiled.blocks]
    Mop = _Operator(op, n)
    cols = BlockColumns(op, Mop, blocks)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(n), rng.standard_normal(op.shape[0])
    _, g = compiled.objective.value_and_grad_shared(x)
    expected = np.asarray(g) + op.csr().T @ w
    grad = _Buffers().lagrangian_grad(Mop, g, w, cols)
    assert isinstance(grad, BlockLagrangianGradient)
    for blk in blocks + blocks[::-1]:  # any order: the buffer is refilled when another block is read
        np.testing.assert_allclose(grad[blk.slice], expected[blk.slice], rtol=0, atol=1e-14)
    with pytest.raises(IndexError, match="per block"):
        grad[0:5]


def test_block_curvature_of_two_copies_matches_the_full_direction():
    """curvature_blocks along both tied copies (W d formed from the two parts) equals the curvature along
    the full-size direction, and the closed form 2 ||(d1 + d2) / 2||^2 of ||(x1 + x2)/2 - C||^2."""
    prob, C = _tied_copies_problem()
    compiled = prob.compile()
    objective = compiled.objective
    rng = np.random.default_rng(4)
    x = rng.standard_normal(compiled.n)
    objective.value_and_grad_shared(x)
    first, second = compiled.blocks
    d1, d2 = rng.standard_normal(first.size), rng.standard_normal(second.size)
    full = np.concatenate([d1, d2]) if first.offset == 0 else np.concatenate([d2, d1])
    c = objective.curvature_blocks(x, [(second.slice, d2), (first.slice, d1)])
    assert c == objective.curvature(x, full)
    assert c == pytest.approx(2 * np.sum(((d1 + d2) / 2) ** 2), rel=1e-12)
    assert objective.curvature_blocks(x, [(first.slice, d1)]) == objective.curvature_block(x, first.slice, d1)


def test_combination_norm_in_chunks_matches_the_formed_combination(monkeypatch):
    """||d1 - d2||^2 of the tied-copies projection step, summed in chunks of rows, against the formed difference."""
    from fwmodel.engine import vector_ops

    monkeypatch.setattr(vector_ops, "_NORM_CHUNK", 7)
    rng = np.random.default_rng(5)
    d1, d2 = rng.standard_normal(50), rng.standard_normal(50)
    for signs, expected in (((1.0, -1.0), d1 - d2), ((-1.0, 1.0), d2 - d1), ((1.0, 1.0), d1 + d2)):
        got = vector_ops.signed_sum_norm2([d1, d2], list(signs), None)
        assert got == pytest.approx(float(expected @ expected), rel=1e-13)
    assert vector_ops.signed_sum_norm2([d1], [-1.0], 3.5) == 3.5


def _project_every_copy(monkeypatch):
    """projection="auto" with its cost thresholds lifted: both tied copies take projection steps."""
    import functools

    from fwmodel.engine import projection_choice

    monkeypatch.setattr(projection_choice, "ESTIMATE_MARGIN", float("inf"))
    init = projection_choice.AutoProjection.__init__
    monkeypatch.setattr(projection_choice.AutoProjection, "__init__",
                        functools.partialmethod(init, max_iterations=float("inf")))


@pytest.mark.parametrize("large", [False, True])
def test_both_tied_copies_projected_match_the_general_step_and_clarabel(large, monkeypatch):
    """Both copies of L1 ∩ trace-norm projected: the tied-copies step (directions per copy, ||M d||^2 from
    the copies, f's curvature from the two parts) gives the iterates of the general projection step (an
    n-size direction, M d formed) up to rounding, and the answer of CVXPY + Clarabel. ``large``: the slope
    of large blocks (<g_k, d_k> + sign <w, d_k>, no gradient kept beside d_k) on this small problem."""
    cp = pytest.importorskip("cvxpy")
    from fwmodel.engine import projection_step
    from fwmodel.engine.projection_step import ProjectionStep

    _project_every_copy(monkeypatch)
    if large:
        monkeypatch.setattr(projection_step, "LARGE_BLOCK", 1)
    copies_seen = []
    tied = ProjectionStep._take_tied_copies

    def spy(self, lagrangian, it, rows, copies):
        copies_seen.append(len(copies))
        return tied(self, lagrangian, it, rows, copies)

    monkeypatch.setattr(ProjectionStep, "_take_tied_copies", spy)

    def solve(**options):
        prob, C = _tied_copies_problem(d=12, seed=6)
        prob.solve(projection="auto", rank_k=False, tol=1e-7, feas_tol=1e-7, **options)
        return prob, C

    prob, C = solve(max_iter=40)
    assert prob.stats.step_counts["projection"] > 0 and 2 in copies_seen
    monkeypatch.setattr(ProjectionStep, "_tied_copies", lambda self, lagrangian: None)
    # the same dual schedule (lam kept fixed after tied copies' steps): only the step's arithmetic differs
    monkeypatch.setattr(ProjectionStep, "on_tied_copies", lambda self, lagrangian: True)
    general, _ = solve(max_iter=40)
    for key in ("objective", "fw_gap", "feasibility"):
        np.testing.assert_allclose(prob.history[key], general.history[key], rtol=1e-8, atol=1e-12)
    monkeypatch.undo()
    _project_every_copy(monkeypatch)
    prob, C = solve(max_iter=20000)
    d = C.shape[0]
    Z = cp.Variable((d, d))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)),
                     [cp.sum(cp.abs(Z)) <= 0.5 * np.abs(C).sum(), cp.normNuc(Z) <= 0.5 * np.linalg.norm(C, "nuc")])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    assert abs(prob.value - ref.value) <= 1e-4 * abs(ref.value)


def test_copy_rows_right_hand_side_takes_no_memory():
    """Copy rows have b = 0: a read-only broadcast view (no m-size array), equal to zeros of M's rows."""
    prob, C = _tied_copies_problem()
    compiled = prob.compile()
    b = compiled.b
    assert b.shape == (compiled.operator.shape[0],) and not np.any(b)
    assert b.strides == (0,) and not b.flags.writeable


def test_inner_products_of_broadcast_views_need_no_copy():
    """b = 0 is a read-only broadcast view (no memory); dot/norm on it must not copy it into a full array."""
    import tracemalloc

    from fwmodel.engine.vector_ops import dot, norm

    n = 1 << 20
    zero = np.broadcast_to(np.array(0.0), (n,))
    twos = np.broadcast_to(np.array(2.0), (n,))
    v = np.random.default_rng(0).standard_normal(n)
    tracemalloc.start()
    try:
        values = (norm(zero), norm(twos), dot(twos, v), dot(v, twos), dot(twos, twos))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n  # far below one n-vector of float64 (8 n bytes)
    expected = (0.0, 2.0 * np.sqrt(n), 2.0 * v.sum(), 2.0 * v.sum(), 4.0 * n)
    np.testing.assert_allclose(values, expected, rtol=1e-12)


def test_l1_least_squares_without_rows_takes_projection_steps_and_matches_clarabel():
    """projection="auto" on a model made only of an L1 ball, no rows, a curved objective: projection
    steps from the start (projection_choice.candidates); a step kind asked for by name, a linear
    objective or a tied copy keeps the vertex steps. Every answer against CVXPY + Clarabel."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(2)
    A, b, c = rng.standard_normal((80, 200)), rng.standard_normal(80), rng.standard_normal(200)
    z = cp.Variable(200)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= 5.0]).solve(solver="CLARABEL")
    x = fm.Variable(200)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 5.0])
    prob.solve()
    assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-4 * abs(ref)
    assert prob.stats.step_counts["projection"] == prob.stats.iterations
    prob.solve(step="pairwise")
    assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-4 * abs(ref)
    assert prob.stats.step_counts.get("projection", 0) == 0 and prob.stats.step_counts["pairwise"] > 0
    # a linear objective: its optimum is a vertex, one LMO call away
    linear = fm.Problem(fm.Minimize(c @ x), [fm.norm1(x) <= 5.0])
    linear.solve()
    assert linear.status == "optimal" and linear.value == pytest.approx(-5.0 * np.abs(c).max(), rel=1e-9)
    assert linear.stats.step_counts.get("projection", 0) == 0
    # ... also with its cost in a Parameter (re-solved with new costs: the reason for a Parameter)
    cost = fm.Parameter(200, value=c)
    held = fm.Problem(fm.Minimize(cost @ x), [fm.norm1(x) <= 5.0])
    for value in (c, -c[::-1]):
        cost.value = value
        held.solve()
        assert held.status == "optimal" and held.value == pytest.approx(-5.0 * np.abs(value).max(), rel=1e-9)
        assert held.stats.step_counts.get("projection", 0) == 0
    # a symmetric box is a box (no intervals declared): its vertex steps are kept
    S = fm.Variable((6, 6), symmetric=True)
    W = rng.uniform(0.5, 2.0, (6, 6))
    W, T = W + W.T, rng.standard_normal((6, 6))
    boxed = fm.Problem(fm.Minimize(fm.sum(fm.multiply(W, fm.square(S - T)))), [fm.Box(S, -0.5, 0.5)])
    boxed.solve()
    assert boxed.stats.step_counts.get("projection", 0) == 0
    # the minimizer in closed form: separable per symmetric pair (a weighted mean of T_ij, T_ji), clipped
    expected = np.clip((W * T + (W * T).T) / (W + W.T), -0.5, 0.5)
    f_star = float(np.sum(W * (expected - T) ** 2))
    assert boxed.status == "optimal"
    assert -1e-9 <= boxed.value - f_star <= 1e-4 * boxed.stats.objective_scale


def test_l1_balls_with_rows_take_projection_steps_and_match_clarabel():
    """projection="auto" on polytope models with rows (projection_choice.candidates): an L1 ball's
    block projects beside equality rows and beside the slacks of inequality rows (a box: FW steps);
    a plain simplex projects too; an L1 ball tied to a box on the same variable (one of two copies), a
    simplex and a box on one variable under rows (two copies), an L1 ball of D x (a block the objective
    does not read) and a linear objective keep vertex steps throughout. With every block projected through general rows lam may still be
    halved by the balance rule (``ProjectionStep.on_tied_copies`` is False). Every answer against CVXPY + Clarabel."""
    cp = pytest.importorskip("cvxpy")
    from fwmodel.engine.projection_step import ProjectionStep

    rng = np.random.default_rng(11)
    m, n = 60, 40
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)
    E = rng.standard_normal((3, n))
    G = rng.standard_normal((4, n))
    x0 = rng.standard_normal(n)
    x0 *= 1.0 / np.abs(x0).sum()
    e, h = E @ x0, G @ x0 + 0.1
    e_mean = E @ np.full(n, 1.0 / n)  # rows through the simplex's center (inside the 0.05 cap)
    D = np.diff(np.eye(n), axis=0)
    x, z = fm.Variable(n), cp.Variable(n)
    multiplier_steps = []
    original = ProjectionStep.on_tied_copies
    ProjectionStep_spy = lambda self, lagrangian: multiplier_steps.append(original(self, lagrangian)) or multiplier_steps[-1]
    cases = [  # (fwmodel constraints, CVXPY constraints, whether the L1 block projects, every block does)
        # an L1 ball and a box on x[:]: two tied copies, whose average is x's value (the L1 copy keeps vertex
        # steps; on x itself the two sets merge into one BoxedL1Ball)
        ([fm.norm1(x) <= 3.0, fm.Box(x[:], -0.15, 0.15)], [cp.norm1(z) <= 3.0, cp.abs(z) <= 0.15], False, False),
        ([fm.norm1(x) <= 3.0, E @ x == e], [cp.norm1(z) <= 3.0, E @ z == e], True, True),
        ([fm.norm1(x) <= 3.0, G @ x <= h], [cp.norm1(z) <= 3.0, G @ z <= h], True, False),
        # a simplex and a box on x under rows: two copies; the simplex projects (its variable's other copy is
        # a box: fwal._read_alone), the box keeps its coordinate steps (78 iterations; 85 with pairwise steps)
        ([fm.Simplex(x, 1.0), fm.Box(x, 0.0, 0.05), E @ x == e_mean],
         [z >= 0, cp.sum(z) == 1, z <= 0.05, E @ z == e_mean], True, False),
        # a plain simplex under rows projects, as an L1 ball (the face step then solves its support's face)
        ([fm.Simplex(x, 1.0), E @ x == e_mean], [z >= 0, cp.sum(z) == 1, E @ z == e_mean], True, True),
        # an L1 ball of D x: a block of the expression, tied to x by rows, that the objective does not read
        ([fm.L1Ball(D @ x, 1.0), fm.Box(x, -0.3, 0.3)], [cp.norm1(D @ z) <= 1.0, cp.abs(z) <= 0.3], False, False),
    ]
    for constraints, reference, projects, every_block in cases:
        multiplier_steps.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ProjectionStep, "on_tied_copies", ProjectionStep_spy)
            prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), constraints)
            prob.solve()
        ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), reference).solve(solver="CLARABEL")
        assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-3 * abs(ref)
        assert (prob.stats.step_counts.get("projection", 0) == prob.stats.iterations) == projects
        if not projects:
            assert prob.stats.step_counts.get("projection", 0) == 0
        # asked only where every block projects (the equality rows' model): lam not kept fixed through rows
        assert multiplier_steps == ([False] if every_block else [])
        # a step kind named keeps the vertex steps, with the same answer
        prob.solve(step="pairwise")
        assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-3 * abs(ref)
        assert prob.stats.step_counts.get("projection", 0) == 0
    # a linear objective keeps vertex steps (its optimum is a vertex), beside equality rows too
    c = rng.standard_normal(n)
    linear = fm.Problem(fm.Minimize(c @ x), [fm.norm1(x) <= 3.0, E @ x == e])
    linear.solve()
    ref = cp.Problem(cp.Minimize(c @ z), [cp.norm1(z) <= 3.0, E @ z == e]).solve(solver="CLARABEL")
    assert linear.status == "optimal" and abs(linear.value - ref) <= 1e-3 * abs(ref)
    assert linear.stats.step_counts.get("projection", 0) == 0


def test_a_warm_start_with_vertex_steps_after_projection_steps_resumes_from_the_point():
    """A lasso's default solve projects (no active set); a warm start with projection=False rebuilds
    the L1 ball's active set from the point (its signed unit vectors and the origin) instead of
    restarting the block, and ends at Clarabel's optimum."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(7)
    A, b0 = rng.standard_normal((60, 40)), rng.standard_normal(60)
    b = fm.Parameter(60, value=b0)  # the objective's data: a new value keeps the block's point
    x = fm.Variable(40)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [fm.norm1(x) <= 3.0])
    prob.solve()
    assert prob.stats.step_counts["projection"] == prob.stats.iterations
    point = x.value.copy()
    prob.solve(projection=False, warm_start=True, max_iter=0)
    np.testing.assert_allclose(x.value, point, rtol=0, atol=1e-12)  # the point kept, as atoms
    b1 = b0 + 0.05 * rng.standard_normal(60)
    b.value = b1
    prob.solve(projection=False, warm_start=True)
    warm_iterations = prob.stats.iterations
    z = cp.Variable(40)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b1)), [cp.norm1(z) <= 3.0]).solve(solver="CLARABEL")
    assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-4 * abs(ref)
    cold = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b1)), [fm.norm1(x) <= 3.0])
    cold.solve(projection=False)
    assert warm_iterations < cold.stats.iterations


def test_l1_ball_writes_a_point_as_its_lmo_vertices():
    """atoms_of_point: nonnegative weights summing to one that rebuild the point; mirrored pairs of a
    square matrix as the LMO's symmetric vertices (a symmetric point stays symmetric under BPCG's
    steps); None where no cheap exact decomposition is written."""
    from fwmodel.engine.active_set import ActiveSet

    rng = np.random.default_rng(0)
    X = fm.Variable((6, 6))
    S = rng.standard_normal((6, 6))
    S = 0.9 * 3.0 * (S + S.T) / np.abs(S + S.T).sum()
    A = 0.8 * 3.0 * rng.standard_normal((6, 6))
    A *= 0.8 * 3.0 / np.abs(A).sum()

    def rebuilt(ball, point):
        atoms, weights = ball.atoms_of_point(point.ravel())
        assert min(weights) > 0 and sum(weights) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(ActiveSet.from_atoms(atoms, weights).dense(point.size), point.ravel(),
                                   rtol=0, atol=1e-15)
        return atoms

    pairs = [a for a in rebuilt(fm.L1Ball(X, 3.0), S) if a.indices.size == 2]
    assert len(pairs) == 15  # every off-diagonal pair of the symmetric point, as the LMO writes it
    # the same atoms (keys) as the LMO returns: its vertex along -S is one of them
    assert fm.L1Ball(X, 3.0).lmo_atom(-S.ravel()).key in {a.key for a in rebuilt(fm.L1Ball(X, 3.0), S)}
    rebuilt(fm.L1Ball(X, 3.0), A)
    rebuilt(fm.L1Ball(X, 3.0, symmetric=False), S)
    assert fm.L1Ball(X, 3.0, symmetric=True).atoms_of_point(A.ravel()) is None  # not in the symmetric ball
    v = fm.Variable(10)
    assert fm.L1Ball(v, 3.0).atoms_of_point(np.full(10, np.nan)) is None
    assert fm.L1Ball(v, 0.0).atoms_of_point(np.zeros(10)) is None
    atoms, weights = fm.L1Ball(v, 3.0).atoms_of_point(np.zeros(10))
    assert weights == [1.0] and atoms[0].key == fm.L1Ball(v, 3.0).initial_atom().key


def test_a_symmetric_point_stays_symmetric_after_a_warm_start_with_vertex_steps():
    """Weighted least squares over an L1 ball of a square matrix with symmetric data: the iterates are
    symmetric (the LMO's symmetric vertices); a warm start with vertex steps after a projected solve
    keeps them so, and reaches Clarabel's optimum."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    n = 12
    W = rng.uniform(0.5, 2.0, (n, n))
    W = W + W.T
    M0 = rng.standard_normal((n, n))
    M0 = M0 + M0.T
    target = fm.Parameter((n, n), value=M0)
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(W, fm.square(X - target)))), [fm.L1Ball(X, 12.0)])
    prob.solve()
    M1 = M0 + 0.1 * (lambda E: E + E.T)(rng.standard_normal((n, n)))
    target.value = M1
    for step in ("auto", "pairwise"):
        prob.solve(projection=False, step=step, warm_start=True)
        assert np.array_equal(X.value, X.value.T)
        Z = cp.Variable((n, n))
        ref = cp.Problem(cp.Minimize(cp.sum(cp.multiply(W, cp.square(Z - M1)))),
                         [cp.sum(cp.abs(Z)) <= 12.0]).solve(solver="CLARABEL")
        assert prob.status == "optimal" and abs(prob.value - ref) <= 1e-4 * max(abs(ref), prob.stats.objective_scale)


def test_backtracking_ignores_an_infinite_curvature_hint():
    """A hint of +inf (a Hessian infinite at the point, z**1.5 at z = 0) is no Lipschitz estimate: taken as
    one, the step was 0. The search then probes instead, as without a hint: the step of phi(g) = g^2 - g
    (minimizer 1/2, closed form) is accepted by the sufficient-decrease test and decreases phi."""
    from fwmodel.engine.line_search import Backtracking
    def phi(g):
        return g * g - g
    gamma, value = Backtracking().step(phi, 0.0, -1.0, 1.0, 1.0, curvature_hint=float("inf"))
    gamma_none, _ = Backtracking().step(phi, 0.0, -1.0, 1.0, 1.0, curvature_hint=None)
    assert gamma > 0 and value < 0
    assert gamma == gamma_none
