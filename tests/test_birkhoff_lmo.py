"""The Birkhoff polytope's warm-started assignment LMO against SciPy and brute force.

:class:`fwmodel.sets.birkhoff.WarmStartedAssignment` keeps dual potentials
from call to call; they only pre-reduce the cost matrix, so every call must
return a permutation whose cost equals the assignment optimum, whatever the
history of earlier calls (random, tied, integer and drifting costs).
"""
import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import fwmodel as fm
from fwmodel.sets.birkhoff import WarmStartedAssignment


def optimal_value(D):
    rows, cols = linear_sum_assignment(D)
    return float(D[rows, cols].sum())


def permutation_cost(D, flat):
    n = D.shape[0]
    rows, cols = np.divmod(np.asarray(flat), n)
    np.testing.assert_array_equal(rows, np.arange(n))  # one entry per row, in row order
    assert sorted(cols.tolist()) == list(range(n))  # and one per column: a permutation
    return float(D[rows, cols].sum())


def brute_force_value(D):
    n = D.shape[0]
    return min(float(D[np.arange(n), list(p)].sum()) for p in itertools.permutations(range(n)))


def cost_sequences(rng, n, calls):
    """Cost matrices of several kinds, each kind a sequence (the solver keeps its state along it)."""
    drift = rng.standard_normal((n, n))
    yield "drifting", [drift := drift + 0.05 * rng.standard_normal((n, n)) for _ in range(calls)]
    yield "random", [rng.standard_normal((n, n)) * 10.0 ** rng.integers(-3, 4) for _ in range(calls)]
    yield "integer", [rng.integers(0, 4, (n, n)).astype(float) for _ in range(calls)]  # many ties
    base = rng.standard_normal(n)
    yield "rank-one ties", [np.add.outer(base, rng.standard_normal(n)) for _ in range(calls)]  # every P optimal
    yield "constant", [np.full((n, n), c) for c in rng.standard_normal(calls)]
    # a projection's late gradients: nearly degenerate, u_i + v_j plus small noise on a dense support
    u, v = rng.standard_normal(n), rng.standard_normal(n)
    yield "nearly degenerate", [np.add.outer(u, v) + 1e-9 * rng.random((n, n)) for _ in range(calls)]
    yield "huge offsets", [1e8 + rng.standard_normal((n, n)) for _ in range(calls)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_warm_assignment_matches_brute_force(n):
    rng = np.random.default_rng(n)
    for kind, sequence in cost_sequences(rng, n, 12):
        solver = WarmStartedAssignment(n)
        for D in sequence:
            best = brute_force_value(D)
            got = permutation_cost(D, solver(D))
            assert got == pytest.approx(best, rel=1e-12, abs=1e-9 * max(1.0, np.abs(D).max())), kind


@pytest.mark.parametrize("n", [20, 60])
def test_warm_assignment_matches_scipy(n):
    rng = np.random.default_rng(100 + n)
    for kind, sequence in cost_sequences(rng, n, 15):
        solver = WarmStartedAssignment(n)
        for D in sequence:
            got = permutation_cost(D, solver(D))
            assert got == pytest.approx(optimal_value(D), rel=1e-12, abs=1e-9 * max(1.0, np.abs(D).max())), kind


def test_warm_assignment_after_forbidden_and_invalid_costs():
    """+inf entries (forbidden pairs) are honoured; NaN costs raise; later calls stay exact."""
    rng = np.random.default_rng(7)
    solver = WarmStartedAssignment(5)
    D = rng.standard_normal((5, 5))
    assert permutation_cost(D, solver(D)) == pytest.approx(brute_force_value(D))
    forbidden = D.copy()
    forbidden[np.arange(5), np.arange(5)] = np.inf  # no fixed points allowed
    flat = solver(forbidden)
    assert np.all(flat != np.arange(5) * 6)
    assert permutation_cost(forbidden, flat) == pytest.approx(brute_force_value(forbidden))
    assert solver.potentials is None or np.isfinite(solver.potentials).all()
    with pytest.raises(ValueError):
        solver(np.full((5, 5), np.nan))
    for _ in range(3):
        D = rng.standard_normal((5, 5))
        assert permutation_cost(D, solver(D)) == pytest.approx(brute_force_value(D))


def test_birkhoff_solve_lmo_is_fresh_per_solve():
    """Each solve gets its own warm state: solving twice gives the same iterates, as the first solve."""
    rng = np.random.default_rng(0)
    n = 12
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    prob.solve()
    first = (prob.stats.iterations, X.value.copy())
    prob.solve()
    assert prob.stats.iterations == first[0]
    np.testing.assert_array_equal(X.value, first[1])
    # the same vertices as the stateless LMO: a sequence of directions through both
    S = fm.BirkhoffPolytope(fm.Variable((n, n)))
    lmo = S.lmo_for_solve()
    for _ in range(20):
        d = rng.standard_normal(n * n)
        assert lmo(d).dot(d) == pytest.approx(S.lmo_atom(d).dot(d), rel=1e-12, abs=1e-12)


def test_birkhoff_projection_matches_clarabel():
    """The projection solved with the warm-started LMO ends within its certified gap of CVXPY's optimum."""
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(3)
    n = 25
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    prob.solve(tol=1e-6)
    Z = cp.Variable((n, n), nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value >= ref.value - 1e-6  # feasible point: no lower than the optimum
    assert prob.value - ref.value <= prob.stats.fw_gap + 1e-6  # the FW gap bounds the error
    assert prob.value - ref.value <= 1e-3 * ref.value
