"""PSD models whose optimum is at or near X = 0: the stopping rule at a linear optimum X = 0, the PSD
constraint's dual value next to a box copy of the diagonal, and the zero-diagonal presolve of a PSD
trace-norm ball. Each answer is compared with CVXPY + Clarabel or a closed form."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _rank_one_cost(n=4, seed=122):
    """G = b b' (PSD, rank one): min trace(G X) over PSD X has its optimum 0 at X = 0."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(n)
    return np.outer(b, b)


def _linear_at_zero(m, G):
    n = G.shape[0]
    X = m.Variable((n, n), symmetric=True)
    return m.Problem(m.Minimize(m.trace(G @ X)), [X >> 0, m.trace(X) <= 0.5, m.sum(X) <= 0.2, X[0, 0] >= 0.0]), X


@pytest.mark.parametrize("options", [{}, {"inface": True, "projection": False, "rank_k": False},
                                     {"inface": False, "projection": False}])
@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_linear_objective_optimal_at_zero_stops_optimal(options, scale):
    """min trace(G X) with G PSD of rank one: X = 0 is optimal (value 0). The smallest eigenvalue of G is 0,
    computed as about -eps ||G||; the FW gap at the start X = 0 was that rounding (5.8e-18), it became the
    objective's scale, and every option ran to max_iter at the optimum. The gap is rounding of
    ||grad f|| times the size of the points (stopping.gap_at_rounding): the start minimizes f."""
    G = scale * _rank_one_cost()
    ref, Z = _linear_at_zero(cp, G)
    ref.solve(solver=cp.CLARABEL)
    assert ref.status == cp.OPTIMAL
    prob, X = _linear_at_zero(fm, G)
    value = prob.solve(max_iter=3000, **options)
    assert prob.status == fm.OPTIMAL, prob.stats.message
    assert prob.stats.iterations <= 50
    # Clarabel's optimum is 0 to its tolerance; trace(G X) over the sets ranges over [0, 0.5 lambda_max(G)]
    range_f = 0.5 * np.linalg.eigvalsh(G).max()
    assert abs(value - ref.value) <= 1e-6 * range_f
    assert np.linalg.eigvalsh(X.value).min() >= -1e-9 and np.trace(X.value) <= 0.5 + 1e-9
    assert np.sum(X.value) <= 0.2 + 1e-6
