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


def assignment_solver(backend, n):
    """A warm-started assignment LMO of either backend (numba: skipped when it is not installed)."""
    return WarmStartedAssignment(n) if backend == "scipy" else compiled_solver(n)


@pytest.mark.parametrize("backend, seed", [("scipy", 0), ("numba", 200)])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_warm_assignment_matches_brute_force(backend, seed, n):
    rng = np.random.default_rng(seed + n)
    for kind, sequence in cost_sequences(rng, n, 12):
        solver = assignment_solver(backend, n)
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


@pytest.mark.parametrize("backend", ["scipy", "numba"])
def test_warm_assignment_after_forbidden_and_invalid_costs(backend):
    """+inf entries (forbidden pairs) are honoured; NaN costs raise; later calls stay exact.

    numba: such costs go to SciPy and the next calls start cold."""
    rng = np.random.default_rng(7)
    solver = assignment_solver(backend, 5)
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


@pytest.mark.parametrize("projection", [False, "auto"])
def test_birkhoff_solve_lmo_is_fresh_per_solve(projection):
    """Each solve gets its own warm state: solving twice gives the same iterates, as the first solve (vertex
    steps; and the projection's warm start, where "auto" projects, afresh too)."""
    rng = np.random.default_rng(0)
    n = 12
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    prob.solve(projection=projection)
    first = (prob.stats.iterations, X.value.copy())
    prob.solve(projection=projection)
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
    prob.solve(tol=1e-6, projection=False)  # vertex steps (projection="auto" may project the block)
    Z = cp.Variable((n, n), nonneg=True)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Z - C)), [cp.sum(Z, axis=0) == 1, cp.sum(Z, axis=1) == 1])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    assert prob.value >= ref.value - 1e-6  # feasible point: no lower than the optimum
    assert prob.value - ref.value <= prob.stats.fw_gap + 1e-6  # the FW gap bounds the error
    assert prob.value - ref.value <= 1e-3 * ref.value


# ---------------------------------------------------------------- backend="numba"
def compiled_solver(n):
    """A :class:`CompiledWarmAssignment`, or skip when numba is not installed."""
    pytest.importorskip("numba")
    from fwmodel.sets.birkhoff import CompiledWarmAssignment

    return CompiledWarmAssignment(n)


@pytest.mark.parametrize("n", [20, 60, 150])
def test_compiled_assignment_matches_scipy(n):
    """Long sequences, so that the sparse searches (window from the previous call) are used, and their fallback."""
    rng = np.random.default_rng(300 + n)
    for kind, sequence in cost_sequences(rng, n, 25):
        solver = compiled_solver(n)
        sparse_paths = 0
        for D in sequence:
            got = permutation_cost(D, solver(D))
            assert got == pytest.approx(optimal_value(D), rel=1e-12, abs=1e-9 * max(1.0, np.abs(D).max())), kind
            sparse_paths += solver.stats[1]
        if kind == "drifting":
            assert sparse_paths > 0  # the sparse search did route rows here


def test_compiled_assignment_on_projection_gradients():
    """The gradients of a Birkhoff projection (nearly degenerate costs, every row moving between calls)."""
    compiled_solver(2)
    rng = np.random.default_rng(5)
    n = 40
    C = (1.0 + rng.standard_normal((n, n))) / n
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    costs = []
    S = prob.constraints[0] if isinstance(prob.constraints[0], fm.BirkhoffPolytope) else None
    assert S is not None
    inner = S.lmo_for_solve

    def recording():
        lmo = inner()

        def lmo_atom(flat_direction):
            costs.append(np.array(flat_direction, dtype=float).reshape(n, n))
            return lmo(flat_direction)

        return lmo_atom

    S.lmo_for_solve = recording
    prob.solve(projection=False)  # the vertex path's gradients (projection steps would end in a few)
    assert len(costs) > 30
    solver = compiled_solver(n)
    for D in costs:
        assert permutation_cost(D, solver(D)) == pytest.approx(optimal_value(D), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("row_reduction", [0, None])
def test_compiled_assignment_tight_windows_fall_back_exactly(row_reduction):
    """A window far too small for the next call: the sparse search cannot prove its paths and the dense one routes
    (without the augmenting row reduction every row left free by the greedy pass takes a path)."""
    rng = np.random.default_rng(11)
    n = 30
    solver = compiled_solver(n)
    if row_reduction is not None:
        solver.ROW_REDUCTION_STEPS = row_reduction
    D = rng.standard_normal((n, n))
    for _ in range(6):
        solver(D)
        solver.window = 1e-15  # as if the last paths had been tiny
        D = D + 0.3 * rng.standard_normal((n, n))
        assert permutation_cost(D, solver(D)) == pytest.approx(optimal_value(D), rel=1e-12)
        if row_reduction == 0:
            assert solver.stats[2] > 0 or solver.stats[0] == 0


@pytest.mark.parametrize("n", [2, 3, 25, 80])
def test_compiled_assignment_row_reduction_matches_scipy(n):
    """The augmenting row reduction (scan budgets from none to far more than needed) against SciPy's optimum,
    on every kind of cost sequence (ties and integer costs take its tie branch); it does reassign rows."""
    rng = np.random.default_rng(700 + n)
    scans = 0
    for kind, sequence in cost_sequences(rng, n, 12):
        for steps in (0, 1, 2, 50):
            solver = compiled_solver(n)
            solver.ROW_REDUCTION_STEPS = steps
            for D in sequence:
                got = permutation_cost(D, solver(D))
                assert got == pytest.approx(optimal_value(D), rel=1e-12, abs=1e-9 * max(1.0, np.abs(D).max())), \
                    (kind, steps)
                assert steps > 0 or solver.stats[4] == 0
                scans += solver.stats[4]
    assert scans > 0


def test_compiled_assignment_after_a_much_smaller_gradient():
    """Potentials from costs of size 1e6 must not round away costs of size 1e-6 (they are reset)."""
    rng = np.random.default_rng(9)
    n = 8
    solver = compiled_solver(n)
    solver(1e6 * rng.standard_normal((n, n)))
    for _ in range(3):
        D = 1e-6 * rng.standard_normal((n, n))
        assert permutation_cost(D, solver(D)) == pytest.approx(brute_force_value(D), rel=1e-12)


def test_numba_backend_solve_matches_scipy_backend():
    """The same projection with either backend: optimal, and within the certified gaps of each other."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    n = 25
    C = (1.0 + rng.standard_normal((n, n))) / n
    values = {}
    for backend in ("scipy", "numba"):
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X, backend=backend)])
        prob.solve(tol=1e-6, projection=False)  # the backends' LMOs at work (not the projection)
        assert prob.status == "optimal"
        assert fm.BirkhoffPolytope(fm.Variable((n, n))).contains(X.value, tol=1e-6)
        values[backend] = (prob.value, prob.stats.fw_gap)
    (a, gap_a), (b, gap_b) = values["scipy"], values["numba"]
    assert abs(a - b) <= max(gap_a, gap_b) + 1e-9
    # the stateless LMO with the numba backend: a minimizer, as SciPy's
    S = fm.BirkhoffPolytope(fm.Variable((6, 6)), backend="numba")
    for _ in range(10):
        d = rng.standard_normal(36)
        assert S.lmo_atom(d).dot(d) == pytest.approx(brute_force_value(d.reshape(6, 6)), rel=1e-12)


def test_backend_option_errors_without_numba(monkeypatch):
    """backend='numba' without numba: a clear ModelError at the model; 'auto' falls back to SciPy; bad names refused."""
    import sys

    monkeypatch.setitem(sys.modules, "numba", None)  # import numba -> ImportError
    monkeypatch.delitem(sys.modules, "fwmodel.sets._assignment_numba", raising=False)
    X = fm.Variable((4, 4))
    with pytest.raises(fm.ModelError, match="backend='numba' needs the numba package"):
        fm.BirkhoffPolytope(X, backend="numba")
    S = fm.BirkhoffPolytope(X, backend="auto")
    assert S.backend == "scipy"
    d = np.random.default_rng(0).standard_normal(16)
    assert S.lmo_atom(d).dot(d) == pytest.approx(brute_force_value(d.reshape(4, 4)))
    with pytest.raises(fm.ModelError, match="backend must be 'scipy', 'numba' or 'auto'"):
        fm.BirkhoffPolytope(X, backend="lapjv")


def test_repr_names_a_non_default_backend():
    """The repr shows the resolved backend where it is not the default (so two printed models that solve
    with different LMOs do not print alike)."""
    X = fm.Variable((3, 3), name="X")
    assert repr(fm.BirkhoffPolytope(X)) == "BirkhoffPolytope(X)"
    auto = fm.BirkhoffPolytope(X, backend="auto")
    expected = "BirkhoffPolytope(X)" if auto.backend == "scipy" else "BirkhoffPolytope(X, backend='numba')"
    assert repr(auto) == expected


@pytest.mark.parametrize("backend", ["scipy", "numba"])
@pytest.mark.parametrize("n", [6, 30])
def test_warm_assignment_exact_at_every_scale_after_a_warm_call(backend, n):
    """After a call on a cost matrix of size 1 (potentials of size 1 kept), directions of size 1e-17 to
    1e17 get a minimizing permutation up to the rounding of their own size (n eps max|D|), as
    SciPy's cold solver. Before, the SciPy backend subtracted the size-1 potentials from a 1e-17
    direction: 2e-17 where the minimum is 0 (the false infeasibility certificate of
    test_lmo_soundness.py), an error of 3.5 times the direction's size."""
    rng = np.random.default_rng(7 + n)
    C = rng.integers(0, 3, (n, n)).astype(float)
    two = np.zeros((n, n))
    two[0, 0] = two[1, 1] = 1.0  # the reproducer's residual direction: minimum 0
    for shape in (two, rng.standard_normal((n, n)), rng.integers(0, 3, (n, n)).astype(float)):
        for exponent in range(-17, 18, 2):
            solver = assignment_solver(backend, n)
            solver(C)  # warm: potentials of size 1
            D = shape * 10.0 ** exponent
            got = permutation_cost(D, solver(D))
            assert abs(got - optimal_value(D)) <= 4 * n * np.finfo(float).eps * np.abs(D).max(), exponent
            D2 = shape * 10.0 ** -exponent  # and back: from potentials of another scale
            got = permutation_cost(D2, solver(D2))
            assert abs(got - optimal_value(D2)) <= 4 * n * np.finfo(float).eps * np.abs(D2).max(), exponent


def test_solve_lmo_exact_on_a_tiny_direction_after_a_warm_call():
    """The reproducer as the solve calls it (``BirkhoffPolytope.lmo_for_solve``)."""
    C = np.array([[1, 2, 2, 2, 2, 0], [0, 2, 1, 2, 0, 1], [2, 1, 2, 1, 0, 1], [1, 1, 2, 2, 1, 2],
                  [1, 1, 0, 1, 0, 1], [2, 2, 1, 2, 2, 0]], float)
    d = np.zeros((6, 6))
    d[0, 0] = d[1, 1] = 1e-17
    lmo = fm.BirkhoffPolytope(fm.Variable((6, 6))).lmo_for_solve()
    lmo(C.ravel())
    assert lmo(d.ravel()).dot(d.ravel()) == optimal_value(d) == 0.0
