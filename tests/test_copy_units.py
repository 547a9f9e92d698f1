"""A set on an expression in other units than its variables (``fm.L1Ball(s * D @ x, s)``).

The compiler holds such a set's block in its variables' units (the user's set
divided by the expression's units, ``compiler.compile.copy_units``), so the
solve at s = 1e-3 or 1e3 is the solve at s = 1 (benchmarks/copy_units.py).
Before, the L2-ball models below ended max_iter at s != 1 (the engine's
projection step moved the ball of ``s D x`` and the L2 ball of x with one
step size). Every answer is compared with CVXPY + Clarabel.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets.units import in_units

cp = pytest.importorskip("cvxpy")

N = 12
RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, N))
B_DATA = RNG.standard_normal(30)
D = np.diff(np.eye(N), axis=0)  # first differences
B = RNG.standard_normal((6, N)) / np.sqrt(N)


def clarabel(constraints, scaled=None):
    """Clarabel's optimum of least squares over ``constraints(xc)``, and the CVXPY problem."""
    xc = cp.Variable(N)
    cons = constraints(xc)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - B_DATA)), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, cons


MODELS = {
    "l1 of differences, L2 ball": (lambda x, s: [fm.L1Ball(s * D @ x, s), fm.L2Ball(x, 1.0)],
                                   lambda x: [cp.norm1(D @ x) <= 1, cp.norm2(x) <= 1]),
    "box of B x, L2 ball": (lambda x, s: [fm.Box(s * B @ x, -0.1 * s, 0.1 * s), fm.L2Ball(x, 1.0)],
                            lambda x: [cp.abs(B @ x) <= 0.1, cp.norm2(x) <= 1]),
    "norm_inf of differences, L2": (lambda x, s: [fm.norm_inf(s * D @ x) <= 0.2 * s, fm.norm2(x) <= 1],
                                    lambda x: [cp.norm_inf(D @ x) <= 0.2, cp.norm2(x) <= 1]),
    "ellipsoid of B x, L2 ball": (lambda x, s: [fm.Ellipsoid(s * B @ x, np.diag(np.arange(1.0, 7.0)), 0.09 * s * s),
                                                fm.L2Ball(x, 1.0)],
                                  lambda x: [cp.quad_form(B @ x, np.diag(np.arange(1.0, 7.0))) <= 0.09, cp.norm2(x) <= 1]),
}
_unit_iterations = {}


def unit_iterations(model):
    if model not in _unit_iterations:
        x = fm.Variable(N, name="x")
        prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), MODELS[model][0](x, 1.0))
        prob.solve()
        _unit_iterations[model] = prob.stats.iterations
    return _unit_iterations[model]


@pytest.mark.parametrize("s", [1e-3, 1e3])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_set_on_a_scaled_expression_solves_as_in_unit_scale(model, s):
    """The same model at s = 1e-3 and 1e3: "optimal" within 1e-4 of Clarabel, in the iterations of s = 1
    (before: max_iter, the objective 1e-2 to 0.3 off)."""
    fm_cons, cp_cons = MODELS[model]
    ref, _ = clarabel(cp_cons)
    x = fm.Variable(N, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), fm_cons(x, s))
    value = prob.solve()
    assert prob.status == "optimal"
    assert abs(value - ref) <= 1e-4 * abs(ref)
    its = unit_iterations(model)
    assert abs(prob.stats.iterations - its) <= max(5, 0.1 * its), (prob.stats.iterations, its)


@pytest.mark.parametrize("s", [1e-3, 1e3])
def test_point_dual_and_feasibility_stay_in_the_model_units(s):
    """``point_in`` gives ``s D x`` (not the block's ``D x``), the norm bound's multiplier is Clarabel's for
    the model as written (``norm1(s D x) <= s``: 1/s times the unit model's), and ``stats.feasibility``
    is ||z - s D x|| in the model's rows."""
    xc = cp.Variable(N)
    written = cp.norm1(s * D @ xc) <= s
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - B_DATA)), [written, cp.norm2(xc) <= 1])
    ref.solve(solver=cp.CLARABEL)
    x = fm.Variable(N, name="x")
    ball = fm.L1Ball(s * D @ x, s)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), [ball, fm.L2Ball(x, 1.0)])
    prob.solve()
    assert prob.status == "optimal" and prob.compile().blocks[0].units == s
    assert abs(prob.value - ref.value) <= 1e-4 * abs(ref.value)
    point = prob.point_in(ball)
    np.testing.assert_allclose(point, s * D @ x.value, atol=1e-3 * s)
    assert np.abs(point).sum() <= s * (1 + 1e-9)
    # the rows tie z = s D x: ||z - s D x|| is of the size of the ball (s), not of D x
    assert prob.stats.feasibility <= 1e-3 * s
    # feasibility_rel = ||M x - b|| / max(1, ||x||, ||b||) with the product point (z, x) in the model's units
    point_norm = np.linalg.norm(np.concatenate([point.ravel(), x.value]))
    assert prob.stats.feasibility_rel == pytest.approx(prob.stats.feasibility / max(1.0, point_norm), rel=1e-9)
    # the bound as CVXPY writes it: its multiplier in the model's units (1/s of the unit model's)
    bound = fm.norm1(s * D @ x) <= s
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), [bound, fm.L2Ball(x, 1.0)])
    prob.solve()
    assert prob.status == "optimal"
    assert float(written.dual_value) > 1e-2 / s  # the ball is active
    assert abs(bound.dual_value - float(written.dual_value)) <= 2e-2 * float(written.dual_value)


def test_a_parameter_radius_is_read_at_each_solve():
    """``fm.L1Ball(1e3 * D @ x, r)`` with r a Parameter: held as radius r / 1e3, re-read when r changes."""
    s = 1e3
    r = fm.Parameter(nonneg=True, value=1.0 * s)
    x = fm.Variable(N, name="x")
    ball = fm.L1Ball(s * D @ x, r)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), [ball, fm.L2Ball(x, 1.0)])
    assert prob.compile().blocks[0].units == s
    for radius in (1.0, 0.3):
        r.value = radius * s
        prob.solve()
        ref, _ = clarabel(lambda xc: [cp.norm1(D @ xc) <= radius, cp.norm2(xc) <= 1])
        assert prob.status == "optimal"
        assert abs(prob.value - ref) <= 1e-4 * abs(ref)
        assert np.abs(prob.point_in(ball)).sum() <= radius * s * (1 + 1e-9)


def test_an_emptied_box_names_the_set_as_written():
    """Parameter bounds that cross: "infeasible" with the user's box in its own units named."""
    s = 1e3
    lo, hi = fm.Parameter(N - 1, value=np.full(N - 1, -s)), fm.Parameter(N - 1, value=np.full(N - 1, s))
    x = fm.Variable(N, name="x")
    box = fm.Box(s * D @ x, lo, hi)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), [box, fm.L2Ball(x, 1.0)])
    prob.solve()
    assert prob.status == "optimal"
    lo.value = np.full(N - 1, 2.0 * s)
    prob.solve()
    assert prob.status == "infeasible"
    assert f"{2.0 * s:.6g}" in prob.stats.message and "units" not in prob.stats.message


def test_in_units_is_the_set_divided():
    """``in_units(S, c)``: c z' in S exactly when z' in S / c (brute force over random points and the LMO)."""
    rng = np.random.default_rng(0)
    x = fm.Variable(5, name="x")
    for s in (fm.L1Ball(x, 2.0), fm.L2Ball(x, 2.0), fm.LinfBall(x, 2.0), fm.Box(x, -1.0, 3.0),
              fm.Simplex(x, 2.0), fm.KSparsePolytope(x, 2, 2.0), fm.Ellipsoid(x, np.diag([1.0, 2, 3, 4, 5]), 2.0)):
        scaled = in_units(s, 1e3)
        assert scaled.derived_from is s and scaled.units == 1e3
        for _ in range(20):
            g = rng.standard_normal(5)
            np.testing.assert_allclose(scaled.lmo(g), s.lmo(g) / 1e3, rtol=1e-12)
            z = rng.uniform(-3, 3, 5)
            assert bool(scaled.contains(z / 1e3)) == bool(s.contains(z))


def test_a_parameter_scale_in_the_expression_recompiles_in_its_new_units():
    """``fm.L1Ball(p * D @ x, p)``: held in the units of p's value at compile time, compiled again where p
    moves them more than 10x (before: max_iter at p = 1e3 and 1e-3, 0.38 and 7e-3 off)."""
    p = fm.Parameter(nonneg=True, value=1.0)
    x = fm.Variable(N, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - B_DATA)), [fm.L1Ball(p * D @ x, p), fm.L2Ball(x, 1.0)])
    ref, _ = clarabel(MODELS["l1 of differences, L2 ball"][1])
    for value, units in ((1.0, 1.0), (1e3, 1e3), (1e-3, 1e-3), (3.0, 1.0)):
        p.value = value
        prob.solve()
        assert prob.compile().blocks[0].units == units
        assert prob.status == "optimal"
        assert abs(prob.value - ref) <= 1e-4 * abs(ref)


def _review_data():
    n = 12
    rng = np.random.default_rng(4)
    A, b = rng.standard_normal((30, n)), rng.standard_normal(30)
    return n, A, b, np.diff(np.eye(n), axis=0), rng.standard_normal((6, n)) / np.sqrt(n)


@pytest.mark.parametrize("name", ["loose L1 ball on 1e-3 D x", "box on 1e-3 E x", "one row of weight 1e3"])
def test_a_block_stays_in_its_units_where_the_sets_size_disagrees(name):
    # held in x's units by the coefficients alone, these ran to max_iter (the first was optimal in 805
    # iterations in its own units, the last in 187): the set's size must agree with the coefficients
    n, A, b, D, E = _review_data()
    weights = np.r_[1e3, np.ones(n - 2)]
    out = []
    for m in (fm, cp):
        x = m.Variable(n)
        held = {"loose L1 ball on 1e-3 D x": lambda: (fm.L1Ball(1e-3 * D @ x, 0.1) if m is fm
                                                      else cp.norm1(1e-3 * D @ x) <= 0.1),
                "box on 1e-3 E x": lambda: (fm.Box(1e-3 * E @ x, -1, 1) if m is fm else cp.abs(1e-3 * E @ x) <= 1),
                "one row of weight 1e3": lambda: (fm.L1Ball(fm.multiply(weights, D @ x), 1.0) if m is fm
                                                  else cp.norm1(cp.multiply(weights, D @ x)) <= 1)}[name]()
        ball = fm.L2Ball(x, 1.0) if m is fm else cp.norm2(x) <= 1
        prob = m.Problem(m.Minimize(m.sum_squares(A @ x - b)), [held, ball])
        if m is fm:
            prob.solve()
            assert prob.status == fm.OPTIMAL
            assert [blk.units for blk in prob.compile().blocks] == [1.0] * len(prob.compile().blocks)
        else:
            prob.solve(solver=cp.CLARABEL)
        out.append(prob.value)
    assert out[0] == pytest.approx(out[1], rel=1e-4)


@pytest.mark.parametrize("form", ["norm1", "sum_squares"])
def test_a_parameter_bound_on_a_scaled_expression(form):
    # the bound is computed data (clipped at 0 for a negative value, the square root of sum_squares'):
    # dividing it by the block's units raised TypeError
    n, A, b, D, _ = _review_data()
    out = []
    for m in (fm, cp):
        x, t = m.Variable(n), m.Parameter(nonneg=True, value=1e3 if form == "norm1" else 1e6)
        bound = m.norm1(1e3 * D @ x) <= t if form == "norm1" else m.sum_squares(1e3 * D @ x) <= t
        prob = m.Problem(m.Minimize(m.sum_squares(A @ x - b)), [bound, m.norm2(x) <= 1])
        prob.solve() if m is fm else prob.solve(solver=cp.CLARABEL)
        out.append(prob.value)
    assert out[0] == pytest.approx(out[1], rel=1e-4)
