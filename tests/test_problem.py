"""Problem.solve end to end: closed-form and brute-force answers, statuses,
stats, history, callbacks, warm starts, the verbose table and the first
tutorial."""
import itertools
import runpy
from pathlib import Path

import numpy as np
import pytest

import fwmodel as fm

TUTORIALS = Path(__file__).resolve().parent.parent / "tutorials"


# ------------------------------------------------------------ closed forms
def project_simplex(c, total=1.0):
    """Euclidean projection onto {x >= 0, sum x = total}, by the sort-based
    closed form (Held, Wolfe & Crowder 1974; Duchi et al. 2008)."""
    u = np.sort(c)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, c.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(c - css[rho] / (rho + 1), 0.0)


def project_l1_box(c, r, u):
    """Projection onto {||x||_1 <= r} ∩ [-u, u]^n: soft-threshold by theta, clip at u,
    with theta found by bisection (the KKT conditions of the projection)."""

    def x_of(theta):
        return np.sign(c) * np.clip(np.abs(c) - theta, 0.0, u)

    if np.abs(x_of(0.0)).sum() <= r:
        return x_of(0.0)
    lo, hi = 0.0, float(np.abs(c).max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.abs(x_of(mid)).sum() > r else (lo, mid)
    return x_of(hi)


def rel_close(value, reference, rtol=2e-3):
    return abs(value - reference) <= rtol * max(1.0, abs(reference))


@pytest.mark.parametrize("seed", range(3))
def test_simplex_projection_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(12)
    x = fm.Variable(12, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x)])
    value = prob.solve()
    x_star = project_simplex(c)
    assert prob.status == "optimal"
    assert rel_close(value, float(np.sum((x_star - c) ** 2)))
    np.testing.assert_allclose(x.value, x_star, atol=2e-2)
    assert np.all(x.value >= -1e-9) and abs(x.value.sum() - 1.0) <= 1e-3


@pytest.mark.parametrize("seed", range(2))
def test_simplex_with_total_and_axis_matches_closed_form(seed):
    """Rows of a matrix in simplices of total 2: one projection per row."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((4, 5))
    X = fm.Variable((4, 5), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, total=2.0, axis=1)])
    value = prob.solve()
    X_star = np.array([project_simplex(row, 2.0) for row in C])
    assert rel_close(value, float(np.sum((X_star - C) ** 2)))
    np.testing.assert_allclose(X.value.sum(axis=1), 2.0, atol=2e-3)


@pytest.mark.parametrize("seed", range(2))
def test_l1_box_projection_matches_closed_form(seed):
    """Two sets sharing x: the answer is the projection onto their intersection."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal(15)
    x = fm.Variable(15, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.L1Ball(x, radius=2.0), fm.Box(x, -0.4, 0.4)])
    value = prob.solve()
    x_star = project_l1_box(c, 2.0, 0.4)
    assert rel_close(value, float(np.sum((x_star - c) ** 2)))
    assert np.abs(x.value).sum() <= 2.0 * (1 + 1e-3)
    assert np.all(np.abs(x.value) <= 0.4 * (1 + 1e-3))
    np.testing.assert_allclose(x.value, x_star, atol=1e-2)


def test_linear_objective_over_box_matches_brute_force():
    """An LP over a box is solved at a vertex: enumerate all 2^n of them."""
    rng = np.random.default_rng(3)
    n = 6
    A = rng.standard_normal((3, n))
    w = rng.standard_normal(3)
    lo, hi = -rng.uniform(0.5, 1.0, n), rng.uniform(0.5, 1.0, n)
    x = fm.Variable(n, name="x")
    prob = fm.Problem(fm.Minimize(w @ (A @ x) + 1.0), [fm.Box(x, lo, hi)])
    value = prob.solve()
    best = min(float(w @ A @ np.where(bits, hi, lo)) + 1.0 for bits in itertools.product([0, 1], repeat=n))
    assert prob.status == "optimal"
    assert value == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_quadratic_over_ksparse_polytope_matches_brute_force():
    """min ||x - c||^2 over the k-sparse polytope {||x||_1 <= k r, ||x||_inf <= r}
    (k = 1: the L1 ball of radius r), against a grid search in the plane."""
    c = np.array([0.9, -0.3])
    x = fm.Variable(2, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.KSparsePolytope(x, k=1, radius=0.5)])
    value = prob.solve()
    grid = np.linspace(-0.5, 0.5, 1001)
    G = np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2)
    G = G[np.abs(G).sum(axis=1) <= 0.5 + 1e-12]
    best = float(np.min(np.sum((G - c) ** 2, axis=1)))
    assert value == pytest.approx(best, abs=2e-3)


def test_maximize_concave_objective():
    """Maximize -||x - c||^2 over the simplex: the negative squared distance."""
    c = np.array([0.5, 0.9, -0.2, 0.1])
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Maximize(-fm.sum_squares(x - c) + 3.0), [fm.Simplex(x)])
    value = prob.solve()
    x_star = project_simplex(c)
    assert prob.status == "optimal"
    assert value == pytest.approx(3.0 - float(np.sum((x_star - c) ** 2)), abs=2e-3)
    assert value == pytest.approx(3.0 - float(np.sum((x.value - c) ** 2)), rel=1e-12)


def test_scalar_and_matrix_variables_get_values_of_their_shape():
    s = fm.Variable(name="s")
    X = fm.Variable((2, 3), name="X")
    prob = fm.Problem(fm.Minimize(fm.square(s - 2.0) + fm.sum_squares(X)),
                      [fm.Box(s, -1, 1), fm.L1Ball(X)])
    prob.solve()
    assert np.shape(s.value) == () and X.value.shape == (2, 3)
    assert float(s.value) == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------------------------ stats
@pytest.fixture
def lasso():
    """A small least-squares problem over L1Ball ∩ Box (two copies of x)."""
    rng = np.random.default_rng(0)
    A, b = rng.standard_normal((15, 10)), rng.standard_normal(15)
    x = fm.Variable(10, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)),
                      [fm.L1Ball(x, radius=1.0), fm.Box(x, -0.3, 0.3)])
    return prob, x, A, b


def test_stats_fields(lasso):
    prob, x, A, b = lasso
    value = prob.solve()
    s = prob.stats
    assert prob.status == "optimal" and value == prob.value
    assert value == pytest.approx(float(np.sum((A @ x.value - b) ** 2)), rel=1e-12)
    assert isinstance(s.iterations, int) and s.iterations > 0
    assert s.solve_time > 0 and s.compile_time > 0
    for name in ("fw_gap", "feasibility", "feasibility_rel", "lam", "eta"):
        assert np.isfinite(getattr(s, name)), name
    assert s.feasibility >= 0 and s.lam > 0 and s.eta >= 0
    # the documented stopping rule (default tol = feas_tol = 1e-4), relative to the reported scales
    assert s.objective_scale > 0 and s.feasibility_scale > 0
    assert s.fw_gap <= 1e-4 * s.objective_scale and s.feasibility <= 1e-4 * s.feasibility_scale
    # relative feasibility: ||Mx - b|| / max(1, ||x||, ||b||) <= ||Mx - b||
    assert s.feasibility_rel <= s.feasibility + 1e-15


def test_history_columns(lasso):
    prob, x, A, b = lasso
    prob.solve()
    h = prob.history.to_dict()
    keys = ("iteration", "time", "objective", "fw_gap", "feasibility", "feasibility_rel")
    assert set(keys) <= set(h)
    lengths = {len(h[k]) for k in h}
    assert len(lengths) == 1 and lengths.pop() >= 2
    for k in keys:
        assert isinstance(h[k], np.ndarray)
        np.testing.assert_array_equal(prob.history[k], h[k])
    assert h["iteration"][0] == 0 and h["iteration"][-1] == prob.stats.iterations
    assert np.all(np.diff(h["iteration"]) >= 0) and np.all(np.diff(h["time"]) >= 0)
    assert h["time"][-1] <= prob.stats.solve_time
    assert h["objective"][-1] == pytest.approx(float(np.sum((A @ x.value - b) ** 2)), rel=1e-10)
    assert h["feasibility_rel"][-1] == pytest.approx(prob.stats.feasibility_rel)


@pytest.mark.parametrize("sense", ["min", "max"])
@pytest.mark.parametrize("max_iter", [3, 60, 120, 200])
def test_history_ends_at_the_returned_point(sense, max_iter):
    """history["objective"][-1] is the objective at var.value, also when the
    solve stops early and returns an earlier, better point."""
    rng = np.random.default_rng(1)
    C = rng.standard_normal((5, 5))
    C = C + C.T
    X = fm.Variable((5, 5), name="X")
    f = fm.sum_squares(X - C)
    objective = fm.Minimize(f) if sense == "min" else fm.Maximize(-f)
    prob = fm.Problem(objective, [fm.TraceNormBall(X, radius=2.0), fm.L1Ball(X, radius=4.0)])
    value = prob.solve(max_iter=max_iter)
    at_value = float(np.sum((X.value - C) ** 2)) * (1 if sense == "min" else -1)
    assert value == pytest.approx(at_value, rel=1e-10)
    assert prob.history["objective"][-1] == pytest.approx(at_value, rel=1e-10)
    assert prob.history["feasibility_rel"][-1] == pytest.approx(prob.stats.feasibility_rel)
    assert prob.status in ("optimal", "max_iter")


def test_maximize_history_has_the_model_sign():
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Maximize(-fm.sum_squares(x - np.array([1.0, 2.0, 3.0]))), [fm.Simplex(x)])
    prob.solve()
    assert np.all(prob.history["objective"] <= 0)
    assert prob.history["objective"][-1] == pytest.approx(prob.value)


# --------------------------------------------------------------- callback
def test_callback_sees_state_and_can_stop(lasso):
    prob, x, _, _ = lasso
    seen = []

    def callback(state):
        seen.append((state.iteration, state.objective, state.fw_gap, state.feasibility_rel,
                     state.value(x).shape))
        return state.iteration < 4

    prob.solve(callback=callback)
    assert prob.status == "interrupted"
    assert [s[0] for s in seen] == [0, 1, 2, 3, 4]
    assert all(s[4] == (10,) for s in seen)
    assert prob.stats.iterations == 4
    np.testing.assert_allclose([s[1] for s in seen], prob.history["objective"][:5])


def test_callback_returning_none_does_not_stop(lasso):
    prob, _, _, _ = lasso
    calls = []
    prob.solve(callback=lambda state: calls.append(state.iteration))
    assert prob.status == "optimal" and len(calls) == prob.stats.iterations


# -------------------------------------------------------------- statuses
def test_max_iter_status(lasso):
    prob, _, _, _ = lasso
    prob.solve(max_iter=5)
    assert prob.status == "max_iter" and prob.stats.iterations == 5


def test_time_limit_status(lasso):
    prob, _, _, _ = lasso
    prob.solve(time_limit=1e-9, tol=1e-12, feas_tol=1e-12)
    assert prob.status == "time_limit"


def test_infeasible_status():
    """Two disjoint boxes: the copies can never agree."""
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.Box(x, 0.0, 1.0), fm.Box(x, 2.0, 3.0)])
    prob.solve(max_iter=2000)
    assert prob.status == "infeasible"


# ---------------------------------------------------- parameters and warm start
def test_parameter_change_warm_start_fewer_iterations():
    """After a small change of a Parameter, a warm start reuses the compiled
    problem and needs fewer iterations than a cold solve of the new data."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((20, 12))
    p = fm.Parameter(20, name="p", value=rng.standard_normal(20))
    x = fm.Variable(12, name="x")
    sets = lambda v: [fm.L1Ball(v, radius=1.0), fm.Box(v, -0.3, 0.3)]  # noqa: E731
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - p)), sets(x))
    prob.solve()
    compiled = prob.compile()
    prob.solve(warm_start=True)  # from the optimum of the same data: stops at once
    assert prob.status == "optimal" and prob.stats.iterations <= 2

    p.value = p.value + 0.01 * rng.standard_normal(20)
    prob.solve(warm_start=True)
    assert prob.compile() is compiled
    assert prob.status == "optimal"

    x_cold = fm.Variable(12, name="x_cold")
    cold = fm.Problem(fm.Minimize(fm.sum_squares(A @ x_cold - p.value)), sets(x_cold))
    cold.solve()
    assert rel_close(prob.value, cold.value, 1e-3)
    assert prob.stats.iterations < cold.stats.iterations


# ---------------------------------------------------------------- verbose
def test_verbose_prints_a_table(lasso, capsys):
    prob, _, _, _ = lasso
    prob.solve(verbose=True)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any("iter" in line and "objective" in line for line in lines)
    assert "status: optimal" in out
    rows = [line for line in lines if line.strip() and line.split()[0].isdigit()]
    assert len(rows) >= 3
    assert int(rows[0].split()[0]) == 0
    assert float(rows[0].split()[1]) == pytest.approx(prob.history["objective"][0], rel=1e-5)


def test_verbose_shows_a_maximize_in_the_users_sign(capsys):
    """The engine minimizes -f for a Maximize; the table, like prob.value and the history, shows f."""
    y = fm.Variable(3)
    prob = fm.Problem(fm.Maximize(-fm.sum_squares(y - 2) + 100), [fm.norm1(y) <= 1, fm.sum(y) == 0.5])
    value = prob.solve(verbose=True)
    cp = pytest.importorskip("cvxpy")
    yc = cp.Variable(3)
    ref = cp.Problem(cp.Maximize(-cp.sum_squares(yc - 2) + 100), [cp.norm1(yc) <= 1, cp.sum(yc) == 0.5])
    assert value == pytest.approx(ref.solve(solver=cp.CLARABEL), rel=1e-5)
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    by_iteration = dict(zip(prob.history["iteration"], prob.history["objective"]))
    for row in rows:  # (the history ends at the returned point: its last row may repeat an iteration)
        assert float(row.split()[1]) == pytest.approx(by_iteration[int(row.split()[0])], rel=1e-5)
    summary = next(line for line in out.splitlines() if line.startswith("objective "))
    assert float(summary.split()[1]) == pytest.approx(value, rel=1e-7)
    assert "certified: optimum - objective <=" in out


def test_silent_by_default(lasso, capsys):
    prob, _, _, _ = lasso
    prob.solve()
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------- tutorial
def test_first_tutorial_small(monkeypatch, capsys):
    monkeypatch.setenv("FWMODEL_TUTORIAL_SIZE", "small")
    namespace = runpy.run_path(str(TUTORIALS / "01_first_model.py"), run_name="__main__")
    results = namespace["RESULTS"]
    assert results["size"] == "small"
    assert results["status"] == "optimal"
    assert results["rel_error"] <= 2e-3
    assert results["objective"] == pytest.approx(results["reference_objective"], rel=2e-3)
    assert results["l1_norm"] <= results["radius"] * (1 + 1e-3)
    assert results["max_abs"] <= results["bound"] * (1 + 1e-3)
    assert results["n_blocks"] == 2
    n = results["M_shape"][0]
    assert results["M_shape"] == (n, 2 * n)
    assert "closed form" in capsys.readouterr().out


def test_tutorial_defaults_to_full_size():
    text = (TUTORIALS / "01_first_model.py").read_text()
    assert 'os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")' in text
    assert text.count("# %%") >= 5


# ----------------------------------------------------------- point_in: the copy held in a set
def test_point_in_gives_each_sets_copy_inside_that_set():
    """prob.point_in(s): the copy in set s, in s by the set's own membership test; X.value their average."""
    rng = np.random.default_rng(7)
    C = rng.standard_normal((15, 15))
    C = C + C.T
    X = fm.Variable((15, 15))
    l1, trace = fm.L1Ball(X, 25.0), fm.TraceNormBall(X, 12.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [l1, trace])
    assert prob.point_in(l1) is None  # before a solve
    seen = []

    def callback(state):
        seen.append((state.point_in(l1), state.point_in(trace), state.value(X)))
        return len(seen) < 6

    prob.solve(callback=callback)
    for a, b, avg in seen:
        assert l1.contains(a, 1e-9) and trace.contains(b, 1e-9)
        np.testing.assert_allclose(avg, 0.5 * (a + b), rtol=0, atol=1e-12)
    prob.solve(max_iter=300)
    a, b = prob.point_in(l1), prob.point_in(trace)
    assert a.shape == b.shape == (15, 15)
    assert l1.contains(a, 1e-9) and trace.contains(b, 1e-9)
    # independent checks of the two norms (not the sets' own code)
    assert np.abs(a).sum() <= 25.0 * (1 + 1e-9)
    assert np.linalg.svd(b, compute_uv=False).sum() <= 12.0 * (1 + 1e-9)
    np.testing.assert_allclose(X.value, 0.5 * (a + b), rtol=0, atol=1e-12)
    # the copies are returned, not views of the solver's state
    a[:] = 0.0
    assert np.abs(prob.point_in(l1)).sum() > 0


def test_point_in_names_a_set_that_is_not_the_problems():
    X = fm.Variable((4, 4))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X)), [fm.L1Ball(X, 1.0), fm.TraceNormBall(X, 1.0)])
    with pytest.raises(ValueError, match="point_in"):
        prob.point_in(fm.L1Ball(fm.Variable((4, 4)), 1.0))


def test_point_in_a_set_on_a_shifted_or_scaled_variable_is_the_expressions_value():
    """L2Ball(x - x0, r) and L1Ball(2 x + 1, r) are held as copies of x (AffinePreimage):
    point_in returns the point of the user's set, a * x + c, inside it.
    Reference: the projection of c onto {||x - x0|| <= r} in closed form."""
    rng = np.random.default_rng(3)
    x0, c = rng.standard_normal(5), 5.0 + rng.standard_normal(5)
    x = fm.Variable(5)
    ball = fm.L2Ball(x - x0, 0.5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [ball])
    assert prob.point_in(ball) is None
    prob.solve(tol=1e-8)
    expected = x0 + 0.5 * (c - x0) / np.linalg.norm(c - x0)  # projection of c onto the ball
    np.testing.assert_allclose(prob.point_in(ball), expected - x0, atol=1e-4)
    assert np.linalg.norm(prob.point_in(ball)) <= 0.5 * (1 + 1e-9)

    y = fm.Variable((2, 3))
    l1 = fm.L1Ball(2 * y + 1, 1.0)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(y - 1.0)), [l1])
    prob.solve()
    point = prob.point_in(l1)
    assert point.shape == (2, 3)
    np.testing.assert_allclose(point, 2 * y.value + 1, atol=1e-12)  # one set: its copy is the value
    assert np.abs(point).sum() <= 1.0 + 1e-9


@pytest.mark.parametrize("make", [lambda X: fm.L2Ball(X, 1.0), lambda X: fm.Box(X, -0.2, 0.2),
                                  lambda X: fm.Simplex(X), lambda X: fm.BirkhoffPolytope(X),
                                  lambda X: fm.TraceNormBall(X, 1.0)])
def test_point_in_a_set_on_a_symmetric_variable(make):
    """symmetric=True replaces the set by its symmetric variant; point_in still finds the user's set."""
    rng = np.random.default_rng(0)
    C = rng.standard_normal((3, 3))
    X = fm.Variable((3, 3), symmetric=True)
    s = make(X)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - (C + C.T))), [s])
    prob.solve(max_iter=50)
    np.testing.assert_allclose(prob.point_in(s), X.value, atol=1e-12)  # one set: its copy is the value


def test_point_in_refuses_another_set_of_the_same_type_on_the_same_expression():
    """A ball of another radius on the same variable is not the problem's ball: no point of it."""
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 3.0)), [fm.L1Ball(x, 1.0), fm.L2Ball(x, 2.0)])
    prob.solve(max_iter=20)
    with pytest.raises(ValueError, match="point_in"):
        prob.point_in(fm.L1Ball(x, 5.0))
