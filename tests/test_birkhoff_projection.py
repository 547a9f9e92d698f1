"""The Birkhoff polytope's Euclidean projection, and solves that take it under projection="auto".

The projection (``fwmodel/sets/_birkhoff_projection.py``: semismooth Newton
on the dual, then the rounding of Altschuler, Weed & Rigollet 2017) is checked
against CVXPY + Clarabel's projection, against the n = 2 closed form, and by
its own optimality certificate computed independently: X is the projection of
Z iff ``<X - Z, X - P> <= 0`` for every permutation P (the FW gap of
``1/2 ||X - Z||^2`` at X, by SciPy's assignment solver), for a feasible X.
The solves are checked against Clarabel's optimum.
"""
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import fwmodel as fm
from fwmodel.engine import projection_choice
from fwmodel.sets._birkhoff_projection import BirkhoffProjector, project_birkhoff

cp = pytest.importorskip("cvxpy")


def clarabel_projection(Z):
    """Clarabel's projection; the objective ||X||^2 - 2 <Z, X> divided by Z's size (Clarabel fails on a
    sum of squares of size 1e12 at Z ~ 1e6)."""
    n = Z.shape[0]
    s = max(1.0, float(np.abs(Z).max()))
    X = cp.Variable((n, n), nonneg=True)
    objective = cp.sum_squares(X) / s - 2 * cp.sum(cp.multiply(Z / s, X))
    prob = cp.Problem(cp.Minimize(objective), [cp.sum(X, axis=0) == 1, cp.sum(X, axis=1) == 1])
    try:  # tight tolerances (at a permutation, the defaults left entries 2e-5 off)
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    except cp.SolverError:
        prob.solve(solver="CLARABEL")
    if X.value is None:
        prob.solve(solver="CLARABEL")
    return X.value


def assert_doubly_stochastic(X, tol=1e-12):
    assert X.min() >= 0.0
    np.testing.assert_allclose(X.sum(axis=1), 1.0, rtol=0, atol=tol)
    np.testing.assert_allclose(X.sum(axis=0), 1.0, rtol=0, atol=tol)


def projection_gap(X, Z):
    """max_P <X - Z, X - P> over permutations P: 0 at the projection (variational inequality)."""
    G = X - Z
    rows, cols = linear_sum_assignment(G)
    return float((G * X).sum() - G[rows, cols].sum())


def inputs(rng):
    """(label, Z) of many kinds, n = 2 .. 12."""
    for n in (2, 3, 4, 5, 7, 9, 12):
        yield f"normal {n}", rng.standard_normal((n, n))
        yield f"doubly stochastic {n}", project_birkhoff(rng.random((n, n)))  # already in the set
        yield f"permutation {n}", np.eye(n)[rng.permutation(n)]
        for scale in (1e-6, 1e-3, 1e3, 1e6):
            yield f"scale {scale:g}, {n}", scale * rng.standard_normal((n, n))
        yield f"rows far apart {n}", rng.standard_normal((n, n)) + 10.0 ** rng.integers(-2, 5, size=(n, 1))
        yield f"columns far apart {n}", rng.standard_normal((n, n)) + 10.0 ** rng.integers(-2, 5, size=(1, n))


def test_projection_matches_clarabel_and_is_exactly_feasible():
    rng = np.random.default_rng(0)
    for label, Z in inputs(rng):
        X = project_birkhoff(Z)
        assert_doubly_stochastic(X)
        scale = max(1.0, float(np.abs(Z).max()))
        # the certificate: a few roundings of Z's entries
        assert projection_gap(X, Z) <= 1e-9 * scale, label
        R = clarabel_projection(Z)
        # Clarabel's own accuracy (interior point, ~1e-8 of the scale) bounds this comparison
        np.testing.assert_allclose(X, R, rtol=0, atol=1e-6 * scale ** 0.5 + 1e-6, err_msg=label)
        if "doubly stochastic" in label or "permutation" in label:
            np.testing.assert_allclose(X, Z, rtol=0, atol=1e-12, err_msg=label)


def test_two_by_two_closed_form():
    # X = [[a, 1 - a], [1 - a, a]]; ||X - Z||^2 is a parabola in a with vertex (2 + z11 + z22 - z12 - z21) / 4
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1.0, 1e3):
        for _ in range(20):
            Z = scale * rng.standard_normal((2, 2))
            a = min(1.0, max(0.0, (2.0 + Z[0, 0] + Z[1, 1] - Z[0, 1] - Z[1, 0]) / 4.0))
            np.testing.assert_allclose(project_birkhoff(Z), [[a, 1 - a], [1 - a, a]], rtol=0,
                                       atol=1e-12 * max(1.0, scale))


def test_warm_start_gives_the_same_projection():
    rng = np.random.default_rng(2)
    for n in (3, 8, 30):
        warm = BirkhoffProjector(n)
        Z = rng.standard_normal((n, n)) / n
        for step in range(12):
            # drifting points (a solve's), then a far one: the warm start must not change the answer
            Z = Z + (0.01 if step < 10 else 100.0) * rng.standard_normal((n, n)) / n
            X = warm(Z)
            assert_doubly_stochastic(X)
            np.testing.assert_allclose(X, BirkhoffProjector(n)(Z), rtol=0, atol=1e-10 * max(1.0, np.abs(Z).max()))


def test_set_offers_its_projection_flat_and_in_place():
    rng = np.random.default_rng(3)
    X = fm.Variable((6, 6))
    s = fm.BirkhoffPolytope(X)
    assert s.has_projection and not s.has_cheap_projection  # measured by "auto", not declared cheap
    Z = rng.standard_normal(36)
    expected = clarabel_projection(Z.reshape(6, 6)).ravel()
    np.testing.assert_allclose(s.project_flat(Z), expected, atol=1e-6)
    out = Z.copy()
    assert s.project_flat(out, out=out) is out
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert s.contains(out.reshape(6, 6), tol=1e-12)
    assert np.isnan(s.project_flat(np.full(36, np.nan))).all()
    with pytest.raises(fm.ModelError, match="36"):
        s.project_flat(np.zeros(35))


def birkhoff_models(rng, n):
    """(label, fwmodel problem, X, cvxpy problem) for several objectives and constraints over Birkhoff."""
    C = (1.0 + rng.standard_normal((n, n))) / n
    A = rng.standard_normal((n, n)) / np.sqrt(n)

    def pair(objective, cvx_objective, extra=(), cvx_extra=()):
        X = fm.Variable((n, n))
        Z = cp.Variable((n, n), nonneg=True)
        fw = fm.Problem(fm.Minimize(objective(X)), [fm.BirkhoffPolytope(X), *extra(X)] if extra else
                        [fm.BirkhoffPolytope(X)])
        cvx = cp.Problem(cp.Minimize(cvx_objective(Z)),
                         [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1, *(cvx_extra(Z) if cvx_extra else [])])
        return fw, X, cvx

    yield ("projection", *pair(lambda X: fm.sum_squares(X - C), lambda Z: cp.sum_squares(Z - C)))
    yield ("logistic", *pair(lambda X: fm.sum(fm.logistic(n * fm.multiply(A, X))) + fm.sum_squares(X - C),
                             lambda Z: cp.sum(cp.logistic(n * cp.multiply(A, Z))) + cp.sum_squares(Z - C)))
    yield ("least squares", *pair(lambda X: fm.sum_squares(A @ X - A @ C), lambda Z: cp.sum_squares(A @ Z - A @ C)))
    yield ("equality row", *pair(lambda X: fm.sum_squares(X - C), lambda Z: cp.sum_squares(Z - C),
                                 lambda X: [fm.trace(X) == 0.5], lambda Z: [cp.trace(Z) == 0.5]))
    yield ("second set", *pair(lambda X: fm.sum_squares(X - C), lambda Z: cp.sum_squares(Z - C),
                               lambda X: [fm.Box(X, 0.0, 1.5 / n)], lambda Z: [Z <= 1.5 / n]))


MEASURED_CHOOSE = projection_choice.choose


def set_budget(monkeypatch, iterations):
    """projection="auto" with a budget of ``iterations`` iterations per projection (default 5): the choice
    made deterministic (a wide budget takes every measured projection, 0 none)."""
    def choose(blocks, ks, iteration_time, x, g, max_iterations=None, measured=None, workspace=None,
               curvature=None):
        return MEASURED_CHOOSE(blocks, ks, iteration_time, x, g, iterations, measured, workspace, curvature)

    monkeypatch.setattr(projection_choice, "choose", choose)


@pytest.mark.parametrize("n", [6, 12])
@pytest.mark.parametrize("budget", [None, 1e9])
def test_solves_over_birkhoff_match_clarabel(n, budget, monkeypatch):
    if budget is not None:
        set_budget(monkeypatch, budget)
    rng = np.random.default_rng(n)
    for label, fw, X, cvx in birkhoff_models(rng, n):
        cvx.solve(solver="CLARABEL")
        fw.solve(tol=1e-7, max_iter=20000)
        assert fw.status == "optimal", label
        if budget is not None:
            # every block projects where "auto" may (one copy read by a curved objective): not the Birkhoff
            # polytope tied to a box on the same variable (engine/projection_choice.py)
            assert ("projection" in fw.stats.step_counts) == (label != "second set"), label
        f_star = cvx.value
        assert abs(fw.value - f_star) <= 1e-5 * max(1.0, abs(f_star)), (label, fw.value, f_star)
        # the certified bound is honest: f - f* within it (up to Clarabel's own accuracy)
        assert fw.value - f_star <= fw.stats.suboptimality_bound + 1e-8 * max(1.0, abs(f_star)), label
        assert fm.BirkhoffPolytope(X).contains(X.value, tol=1e-6), label


def test_auto_projects_birkhoff_when_its_measured_cost_fits(monkeypatch):
    # the choice is by cost: with the budget wide every projection fits, with it at zero none does
    rng = np.random.default_rng(5)
    n = 20
    C = (1.0 + rng.standard_normal((n, n))) / n
    Z = cp.Variable((n, n), nonneg=True)
    f_star = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)),
                        [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1]).solve(solver="CLARABEL")

    def solve(rel):
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
        prob.solve()
        assert prob.status == "optimal"
        assert abs(prob.value - f_star) <= rel * abs(f_star)
        assert prob.value - f_star <= prob.stats.suboptimality_bound + 1e-9
        return prob

    set_budget(monkeypatch, 1e9)
    projected = solve(1e-6)
    assert projected.stats.step_counts.get("projection", 0) >= 1
    # one projection of C is the answer: a handful of iterations, certified at once
    assert projected.stats.iterations <= 10
    assert projected.stats.suboptimality_bound <= 1e-9

    set_budget(monkeypatch, 0.0)
    vertex = solve(1e-3)  # vertex steps stop at the default tol's accuracy
    assert "projection" not in vertex.stats.step_counts
    assert vertex.stats.iterations > 20


# plain FW (no away steps) crawls on a polytope and its bound is only about 2x the error here: the default tol,
# about 1e-4 of |f*| with a measured looseness (stopping.py), is out of its reach in 20,000 iterations
@pytest.mark.parametrize("options", [dict(projection=False), dict(step="fw", tol=1e-3), dict(step="pairwise"),
                                     dict(step="away")])
def test_vertex_path_when_asked(options):
    rng = np.random.default_rng(6)
    n = 8
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    prob.solve(max_iter=20000, **options)
    assert "projection" not in prob.stats.step_counts
    assert sum(prob.stats.step_counts.values()) >= 1
    f_star = float(((clarabel_projection(C) - C) ** 2).sum())
    assert prob.status == "optimal"
    assert -1e-9 <= prob.value - f_star <= prob.stats.suboptimality_bound + 1e-9


def test_birkhoff_of_an_affine_image_projects_and_matches_clarabel(monkeypatch):
    # BirkhoffPolytope(2 X + 1): a preimage with one scale, projected through the inner set's projection
    set_budget(monkeypatch, 1e9)
    rng = np.random.default_rng(7)
    n = 8
    C = rng.random((n, n))
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(2 * X + 1)])
    prob.solve()
    Z = cp.Variable((n, n))
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)),
                     [2 * Z + 1 >= 0, cp.sum(2 * Z + 1, axis=0) == 1, cp.sum(2 * Z + 1, axis=1) == 1])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal" and prob.stats.step_counts.get("projection", 0) >= 1
    assert abs(prob.value - ref.value) <= 1e-5 * abs(ref.value)
    assert prob.value - ref.value <= prob.stats.suboptimality_bound + 1e-8 * abs(ref.value)
    assert_doubly_stochastic(2 * X.value + 1, tol=1e-9)
