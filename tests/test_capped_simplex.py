"""CappedSimplex: a Simplex and a Box on one variable, merged by the compiler into one set.

The LMO and the projection against Clarabel on random instances; the merge
(when it happens and when not), duals, Parameters and empty data against
CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.capped_simplex import CappedSimplex

cp = pytest.importorskip("cvxpy")


def _instance(rng, equality):
    groups, size = int(rng.integers(1, 4)), int(rng.integers(2, 9))
    lower = np.where(rng.random((groups, size)) < 0.5, 0.0, rng.random((groups, size)) * 0.1)
    upper = lower + rng.random((groups, size)) * 0.5
    total = float(lower.sum(axis=1).max() + 0.3 * rng.random())
    if equality and np.any(upper.sum(axis=1) < total):
        upper = upper + (total - upper.sum(axis=1).min()) / size + 0.01
    X = fm.Variable((groups, size))
    capped = CappedSimplex(fm.Simplex(X, total, axis=1, equality=equality), fm.Box(X, lower, upper))
    Z = cp.Variable((groups, size))
    sums = cp.sum(Z, axis=1)
    constraints = [Z >= lower, Z <= upper, (sums == total) if equality else (sums <= total)]
    return capped, Z, constraints


@pytest.mark.parametrize("equality", [True, False])
def test_lmo_is_the_linear_programs_minimizer(equality):
    rng = np.random.default_rng(0 if equality else 1)
    for _ in range(25):
        capped, Z, constraints = _instance(rng, equality)
        d = rng.standard_normal(capped.shape)
        vertex = capped.lmo(d)
        lp = cp.Problem(cp.Minimize(cp.sum(cp.multiply(d, Z))), constraints)
        lp.solve(solver="CLARABEL")
        assert capped.contains(vertex)
        assert np.sum(d * vertex) == pytest.approx(lp.value, abs=1e-7)
        # at most one entry strictly between its bounds per group (a vertex of the polytope)
        lo, hi = capped.entry_bounds()
        strictly_inside = (vertex.ravel() > lo + 1e-12) & (vertex.ravel() < hi - 1e-12)
        assert strictly_inside.reshape(capped.shape).sum(axis=1).max() <= 1


@pytest.mark.parametrize("equality", [True, False])
def test_projection_is_the_nearest_point(equality):
    rng = np.random.default_rng(2 if equality else 3)
    for _ in range(25):
        capped, Z, constraints = _instance(rng, equality)
        y = rng.standard_normal(capped.shape) * rng.choice([0.01, 1.0, 100.0])
        projected = capped.project_flat(y.ravel()).reshape(capped.shape)
        qp = cp.Problem(cp.Minimize(cp.sum_squares(Z - y)), constraints)
        qp.solve(solver="CLARABEL")
        assert capped.contains(projected)
        # no farther from y than Clarabel's point (which is accurate to its tolerance only)
        assert np.sum((projected - y) ** 2) <= np.sum((Z.value - y) ** 2) + 1e-8 * max(1.0, np.sum(y ** 2))
        np.testing.assert_allclose(projected, Z.value, atol=1e-4 * max(1.0, np.abs(y).max()))


def test_coordinate_bounds_are_attained_by_the_lmo():
    rng = np.random.default_rng(4)
    for equality in (True, False):
        capped, _, _ = _instance(rng, equality)
        lower, upper = capped.coordinate_bounds()
        for i in range(capped.size):
            e = np.zeros(capped.size)
            e[i] = 1.0
            assert capped.lmo_atom(e).to_dense()[i] == pytest.approx(lower[i], abs=1e-12)
            assert capped.lmo_atom(-e).to_dense()[i] == pytest.approx(upper[i], abs=1e-12)


def _portfolio(n=40, seed=0, cap=0.08):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 4)) * 0.1
    Sigma = F @ F.T + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    return Sigma, mu, cap


def test_explicit_sets_and_cvxpy_constraints_compile_to_one_block_and_match_clarabel():
    Sigma, mu, cap = _portfolio()
    n = mu.size
    z = cp.Variable(n)
    budget = cp.sum(z) == 1
    ref = cp.Problem(cp.Minimize(cp.quad_form(z, Sigma) - mu @ z), [z >= 0, budget, z <= cap])
    ref.solve(solver="CLARABEL")

    x = fm.Variable(n)
    simplex, box = fm.Simplex(x), fm.Box(x, 0.0, cap)
    explicit = fm.Problem(fm.Minimize(fm.quad_form(x, Sigma) - mu @ x), [simplex, box])
    w = fm.Variable(n)
    fm_budget = fm.sum(w) == 1
    written = fm.Problem(fm.Minimize(fm.quad_form(w, Sigma) - mu @ w), [w >= 0, fm_budget, w <= cap])
    for prob in (explicit, written):
        compiled = prob.compile()
        assert [type(b.set).__name__ for b in compiled.blocks] == ["CappedSimplex"]
        assert compiled.M.shape[0] == 0
        prob.solve(tol=1e-7)
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, abs=1e-6)
    np.testing.assert_allclose(x.value, z.value, atol=1e-3)
    # either set given to the problem names the merged block's point
    np.testing.assert_array_equal(explicit.point_in(simplex), explicit.point_in(box))
    # the budget's multiplier, with entries at the cap (their own multipliers)
    assert np.sum(z.value >= cap - 1e-6) >= 1
    assert fm_budget.dual_value == pytest.approx(budget.dual_value, rel=1e-3, abs=1e-6)


def test_a_parameter_cap_is_reread_at_each_solve():
    Sigma, mu, _ = _portfolio(seed=1)
    n = mu.size
    cap = fm.Parameter(nonneg=True, value=0.1)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.quad_form(x, Sigma) - mu @ x), [fm.Simplex(x), fm.Box(x, 0.0, cap)])
    assert [type(b.set).__name__ for b in prob.compile().blocks] == ["CappedSimplex"]
    for value in (0.1, 0.05, 0.3):
        cap.value = value
        prob.solve(warm_start=True, tol=1e-7)
        z = cp.Variable(n)
        ref = cp.Problem(cp.Minimize(cp.quad_form(z, Sigma) - mu @ z), [z >= 0, cp.sum(z) == 1, z <= value])
        ref.solve(solver="CLARABEL")
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, abs=1e-6)
        assert x.value.max() <= value + 1e-9
    cap.value = 0.01  # 40 assets at most 1% each: no portfolio
    prob.solve()
    assert prob.status == fm.INFEASIBLE
    assert "upper bounds sum to 0.4" in prob.stats.message  # why, from the data alone


def test_sets_that_are_not_merged():
    x = fm.Variable(5, name="x")
    c = np.linspace(0, 1, 5)
    kinds = lambda prob: [type(b.set).__name__ for b in prob.compile().blocks]  # noqa: E731
    # a box on a slice, two boxes, an empty intersection: two copies tied by rows (FW-AL's machinery)
    assert kinds(fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x[:], 0, 0.3)])) == \
        ["Simplex", "Box"]
    assert kinds(fm.Problem(fm.Minimize(fm.sum_squares(x - c)),
                            [fm.Simplex(x), fm.Box(x, 0, 0.3), fm.Box(x, -1, 0.4)])) == ["Simplex", "Box", "Box"]
    empty = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x, 0, 0.1)])
    assert kinds(empty) == ["Simplex", "Box"]
    empty.solve(max_iter=2000)
    assert empty.status in (fm.INFEASIBLE, fm.MAX_ITER) and x.value is not None  # the best point found
    # a symmetric variable keeps the symmetric variants of its sets
    S = fm.Variable((3, 3), symmetric=True)
    assert "CappedSimplex" not in kinds(fm.Problem(fm.Minimize(fm.sum_squares(S)), [fm.Simplex(S), fm.Box(S, 0, 0.3)]))


def test_row_stochastic_with_caps_matches_clarabel():
    rng = np.random.default_rng(5)
    C = rng.standard_normal((12, 6)) * 0.3
    X = fm.Variable((12, 6))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1), fm.Box(X, 0.05, 0.4)])
    assert [type(b.set).__name__ for b in prob.compile().blocks] == ["CappedSimplex"]
    prob.solve(tol=1e-7)
    Z = cp.Variable((12, 6))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=1) == 1, Z >= 0.05, Z <= 0.4])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, abs=1e-6 * max(1.0, abs(ref.value)))
    for step in ("fw", "pairwise"):  # vertex steps too (BPCG per row otherwise)
        prob.solve(projection=False, step=step, tol=1e-5, max_iter=20000)
        assert prob.status == "optimal", step
        assert prob.value == pytest.approx(ref.value, abs=1e-4 * max(1.0, abs(ref.value)))


def test_parameters_in_both_the_total_and_the_caps():
    """Two Parameters, one per wrapped set: listed once each, by identity (== between them builds a constraint)."""
    total, cap = fm.Parameter(nonneg=True, value=1.0), fm.Parameter(nonneg=True, value=0.4)
    x = fm.Variable(5)
    c = np.array([0.1, 0.2, 0.5, 0.9, 1.2])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x, total), fm.Box(x, 0.0, cap)])
    assert [type(b.set).__name__ for b in prob.compile().blocks] == ["CappedSimplex"]
    for t, u in ((1.0, 0.4), (1.5, 0.5)):
        total.value, cap.value = t, u
        prob.solve(warm_start=True, tol=1e-8)
        z = cp.Variable(5)
        ref = cp.Problem(cp.Minimize(cp.sum_squares(z - c)), [z >= 0, cp.sum(z) == t, z <= u])
        ref.solve(solver="CLARABEL")
        assert prob.status == "optimal"
        assert prob.value == pytest.approx(ref.value, abs=1e-6)


def test_the_budget_dual_obeys_the_kkt_signs_when_every_entry_is_at_a_bound():
    """k entries at their caps, the others at their floors: the budget's multiplier is any nu with
    -g_i <= nu on the floors and nu <= -g_i on the caps; the value returned must lie in that interval
    (entries a rounding away from a bound used to weigh in and push it out)."""
    checked = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        n, k = 8, 3
        low, high = 0.1 / n, 0.1 / n + 0.3
        total = k * high + (n - k) * low
        c = rng.standard_normal(n)
        c[np.argsort(-c)[:k]] += 3.0  # k entries pushed to their caps
        w = rng.random(n) + 0.5
        for options in ({}, {"projection": False}):
            x = fm.Variable(n)
            budget = fm.sum(x) == total
            prob = fm.Problem(fm.Minimize(fm.sum_squares(fm.multiply(w, x - c))),
                              [x >= 0, budget, fm.Box(x, low, high)])
            prob.solve(tol=1e-8, **options)
            g = 2 * w ** 2 * (x.value - c)
            at_floor, at_cap = x.value < low + 1e-7, x.value > high - 1e-7
            if at_floor.sum() + at_cap.sum() < n:
                continue
            checked += 1
            assert np.max(-g[at_floor]) - 1e-6 <= budget.dual_value <= np.min(-g[at_cap]) + 1e-6
    assert checked >= 8


def test_tight_tolerances_are_reached_with_projection_steps():
    """Near the optimum the projection step's slope cancels to its last bits; the step uses the projection's
    bound <grad, d> <= -L ||d||^2 instead of stopping for good (capped portfolios at tol=1e-9 ran to max_iter)."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(6, 30))
        F = rng.standard_normal((n, 3))
        Sigma = F @ F.T / n + np.diag(rng.uniform(0.01, 0.1, n))
        mu = rng.random(n) * 0.2
        cap = float(rng.uniform(1.5 / n, 0.6))
        x = fm.Variable(n)
        prob = fm.Problem(fm.Minimize(fm.quad_form(x, Sigma) - mu @ x), [x >= 0, fm.sum(x) == 1, x <= cap])
        prob.solve(tol=1e-9, max_iter=1500)
        assert prob.status == "optimal", seed
        assert prob.stats.step_counts.get("projection", 0) > 0


def test_floors_above_zero_keep_pairwise_steps_per_block():
    """Dense vertices (floors > 0) do not take the per-group steps, which split sparse vertices only."""
    rng = np.random.default_rng(7)
    C = rng.standard_normal((10, 6)) * 0.3
    X = fm.Variable((10, 6))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.Simplex(X, axis=1), fm.Box(X, 0.05, 0.4)])
    prob.solve(projection=False, tol=1e-7, max_iter=3000)
    Z = cp.Variable((10, 6))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=1) == 1, Z >= 0.05, Z <= 0.4])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.stats.step_counts["pairwise"] > 0
    assert prob.value == pytest.approx(ref.value, abs=1e-5)


@pytest.mark.parametrize("u, delta", [(1.0, 0.1), (1e-6, 0.1), (1e-10, 0.1), (1e-12, 1.0)])
def test_emptiness_is_read_in_the_datas_own_units(u, delta):
    """Box [0, u]^n with sum(x) == u (n + delta) is empty at every u (its upper bounds sum below the total).
    The emptiness test's rounding slack had an absolute floor (1e-12 max(1, total) n), so at u = 1e-10 the
    merged set was taken for nonempty and the solve raised "the LMO of CappedSimplex#0 returned no
    minimizer" (the set has no point to return). Closed form: sum of the upper bounds = n u < total."""
    n = 15
    x = fm.Variable(n)
    capped = CappedSimplex(fm.Simplex(x, u * (n + delta)), fm.Box(x, 0.0, u))
    assert capped.empty_reason is not None and "below the simplex's total" in capped.empty_reason
    nonempty = CappedSimplex(fm.Simplex(x, u * (n - delta)), fm.Box(x, 0.0, u))
    assert nonempty.empty_reason is None


@pytest.mark.parametrize("u", [1e-12, 1e-10, 1e-8, 1e-6, 1e-3, 1.0, 1e3, 1e6])
def test_empty_capped_simplex_is_infeasible_at_every_scale(u):
    """``0 <= x <= u`` with ``sum(x) == 15.1 u`` (n = 15) has no point at any u > 0: the caps sum to 15 u
    (closed form). The two sets are not merged (they do not meet), and the infeasibility certificate
    must report it. In units of 1e-10 and 1e-12 the simplex's ``contains`` at 0, whose slack has a floor
    of 1, took the origin for a point of the set: its block started at 0, outside, stayed there, and the
    solve ended max_iter. The status must be "infeasible" at every scale."""
    rng = np.random.default_rng(0)
    n = 15
    A, b = rng.standard_normal((10, n)), rng.standard_normal(10)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [x >= 0, x <= u, fm.sum(x) == u * (n + 0.1)])
    prob.solve(max_iter=5000)
    assert n * u < u * (n + 0.1)  # the closed form: the caps' sum is below the total
    assert prob.status == "infeasible", (u, prob.status, prob.stats.message)


def test_origin_membership_is_exact_for_tiny_data():
    """The engine starts a block at the origin only where the set holds it: exactly, whatever the units
    (a simplex of total 1.5e-9, a box of floors 1e-11, a capped simplex of total 1.5e-9 hold no origin)."""
    x = fm.Variable(4)
    assert not fm.Simplex(x, 1.5e-9).contains_origin()
    assert fm.Simplex(x, 1.5e-9, equality=False).contains_origin()
    assert not fm.Box(x, 1e-11, 1.0).contains_origin()
    assert fm.Box(x, 0.0, 1e-11).contains_origin()
    assert not CappedSimplex(fm.Simplex(x, 1.5e-9), fm.Box(x, 0.0, 1e-9)).contains_origin()
