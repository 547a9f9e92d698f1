"""fm.smooth: SymPy-defined atoms against the built-in atoms they imitate.

A SymPy atom must match the matching built-in atom in value, gradient and
curvature (and central finite differences), solve to the same answer,
follow the DCP composition rules, and refuse what it cannot handle with a
message that says why.
"""
import warnings

import numpy as np
import pytest
import sympy as sp

import fwmodel as fm
from fwmodel.expressions import SmoothFunction

RNG = np.random.default_rng(5)
A = RNG.standard_normal((7, 4))
b = RNG.standard_normal(7)
z, w = sp.symbols("z w")
zpos = sp.Symbol("z", positive=True)


def flat_function(expr, var):
    return SmoothFunction(expr, {var.id: (0, var.shape)})


def finite_difference_grad(fn, v, h=1e-6):
    grad = np.zeros_like(v)
    for i in range(v.size):
        e = np.zeros_like(v)
        e[i] = h
        grad[i] = (fn.value(v + e) - fn.value(v - e)) / (2 * h)
    return grad


def second_difference(fn, v, dv, h=1e-4):
    return (fn.value(v + h * dv) - 2 * fn.value(v) + fn.value(v - h * dv)) / h**2


# name -> (builder(x) of the SymPy version, builder(x) of the built-in version)
PAIRS = {
    "logistic": (lambda x: fm.sum(fm.smooth(sp.log(1 + sp.exp(z)), {z: A @ x})),
                 lambda x: fm.sum(fm.logistic(A @ x))),
    "square": (lambda x: fm.sum(fm.smooth(z**2, {z: A @ x - b})),
               lambda x: fm.sum(fm.square(A @ x - b))),
    "weighted square": (lambda x: 0.5 * fm.smooth(z**2, {z: A @ x - b})[2] + fm.sum(fm.smooth(z**2, {z: x})),
                        lambda x: 0.5 * fm.square(A @ x - b)[2] + fm.sum_squares(x)),
    "exp": (lambda x: fm.sum(fm.smooth(sp.exp(z), {z: x / 3})), lambda x: fm.sum(fm.exp(x / 3))),
    "log_sum_exp of two": (lambda x: fm.smooth(sp.log(sp.exp(z) + sp.exp(w)), {z: x[0], w: x[1] - x[3]}),
                           lambda x: fm.log_sum_exp(fm.hstack([x[0:1], x[1:2] - x[3:4]]))),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_value_gradient_curvature_match_builtin(name):
    mine, builtin = PAIRS[name]
    x = fm.Variable(4, name="x")
    f_mine, f_ref = flat_function(mine(x), x), flat_function(builtin(x), x)
    for _ in range(3):
        v, dv = RNG.standard_normal(4), RNG.standard_normal(4)
        assert f_mine.value(v) == pytest.approx(f_ref.value(v), rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(f_mine.grad(v), f_ref.grad(v), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(f_mine.grad(v), finite_difference_grad(f_mine, v), rtol=1e-6, atol=1e-7)
        assert f_mine.curvature(v, dv) == pytest.approx(f_ref.curvature(v, dv), rel=1e-10, abs=1e-12)
        assert f_mine.curvature(v, dv) == pytest.approx(second_difference(f_mine, v, dv), rel=1e-4, abs=1e-6)
    assert f_mine.is_quadratic == f_ref.is_quadratic


def test_broadcast_arguments_gradient_and_curvature():
    """Several symbols mapped to broadcasting shapes: the result has the broadcast shape."""
    X = fm.Variable((3, 2), name="X")
    u = fm.Variable(2, name="u")
    atom = fm.smooth(sp.exp(z - w) + (z + 2 * w) ** 2, {z: X, w: u})
    assert atom.shape == (3, 2)
    layout = {X.id: (0, (3, 2)), u.id: (6, (2,))}
    fn = SmoothFunction(fm.sum(atom * np.arange(1.0, 7.0).reshape(3, 2)), layout)
    v, dv = 0.5 * RNG.standard_normal(8), RNG.standard_normal(8)
    np.testing.assert_allclose(fn.grad(v), finite_difference_grad(fn, v), rtol=1e-6, atol=1e-6)
    assert fn.curvature(v, dv) == pytest.approx(second_difference(fn, v, dv), rel=1e-4)


def test_constant_argument_and_parameter():
    x = fm.Variable(3, name="x")
    p = fm.Parameter(3, name="p", value=np.ones(3))
    atom = fm.sum(fm.smooth((z - w) ** 2, {z: x, w: p}))
    x.value = np.array([1.0, 2.0, 3.0])
    assert atom.value == pytest.approx(0 + 1 + 4)
    p.value = np.zeros(3)
    assert atom.value == pytest.approx(1 + 4 + 9)
    fn = flat_function(atom, x)
    np.testing.assert_allclose(fn.grad(np.ones(3)), 2 * np.ones(3))
    assert fm.smooth(z**2, {z: 3.0}).curvature == "constant"


@pytest.mark.parametrize("kind", ["logistic", "square"])
def test_solves_to_the_same_answer(kind):
    x = fm.Variable(4, name="x")
    if kind == "logistic":
        mine = fm.sum(fm.smooth(sp.log(1 + sp.exp(z)), {z: A @ x})) + 0.1 * fm.sum_squares(x)
        ref = fm.sum(fm.logistic(A @ x)) + 0.1 * fm.sum_squares(x)
    else:
        mine = fm.sum(fm.smooth(z**2, {z: A @ x - b}))
        ref = fm.sum(fm.square(A @ x - b))
    results = []
    for objective in (mine, ref):
        prob = fm.Problem(fm.Minimize(objective), [fm.L1Ball(x, 1.0), fm.Box(x, -0.4, 0.4)])
        value = prob.solve()
        results.append((prob.status, value, x.value.copy()))
    (s1, v1, x1), (s2, v2, x2) = results
    assert s1 == s2 == "optimal"
    assert v1 == pytest.approx(v2, rel=1e-8)
    np.testing.assert_allclose(x1, x2, atol=1e-8)


def test_square_compiles_as_quadratic():
    """A degree-2 polynomial is quadratic: the engine can use its exact line search."""
    x = fm.Variable(4, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum(fm.smooth(z**2 + 3 * z, {z: A @ x}))), [fm.L1Ball(x)])
    assert prob.compile().objective.is_quadratic
    assert not fm.smooth(sp.exp(z), {z: x}).quadratic


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("formula, word", [
    (sp.Abs(z), "Abs"),
    (sp.Max(z, 0), "Max"),
    (sp.Min(z, 1), "Min"),
    (sp.Piecewise((z, z > 0), (0, True)), "Piecewise"),
    (sp.sign(z), "sign"),
    (sp.floor(z), "floor"),
    (sp.ceiling(z), "ceiling"),
    (sp.Heaviside(z), "Heaviside"),
    (sp.sqrt(z**2), "Abs"),  # becomes Abs(z) for real z
    (1 + sp.exp(sp.Abs(z - 1)), "Abs"),
])
def test_non_differentiable_refused(formula, word):
    with pytest.raises(fm.ModelError, match="not differentiable") as info:
        fm.smooth(formula, {z: fm.Variable(3)})
    assert word in str(info.value)


def test_strings_are_never_parsed():
    with pytest.raises(fm.ModelError, match="string") as info:
        fm.smooth("__import__('os').getcwd()", {z: fm.Variable(2)})
    assert "SymPy" in str(info.value)
    with pytest.raises(fm.ModelError, match="SymPy symbols"):
        fm.smooth(z**2, {"z": fm.Variable(2)})


@pytest.mark.parametrize("formula, mapping, match", [
    (z > 0, {z: 1.0}, "relation or boolean"),
    (2.0, {z: 1.0}, "SymPy expression"),
    (z**2, {}, "non-empty dict"),
    (z * w, {z: 1.0}, "not in the mapping"),
    (z**2, {z: 1.0, w: 2.0}, "do not appear"),
    (z**2, {z: sp.Symbol("x")}, "SymPy object"),
    (sp.Function("g")(z), {z: 1.0}, "undefined function"),
    (sp.I * z, {z: 1.0}, "complex"),
    (sp.Integral(z, z), {z: 1.0}, r"\.doit\(\)"),
])
def test_malformed_calls_refused(formula, mapping, match):
    with pytest.raises(fm.ModelError, match=match):
        fm.smooth(formula, mapping)


def test_shapes_must_broadcast():
    with pytest.raises(fm.ModelError, match="broadcast"):
        fm.smooth(z + w, {z: fm.Variable(3), w: fm.Variable(4)})


# ------------------------------------------------------------------ convexity
def test_provably_nonconvex_refused_by_minimize_and_maximize():
    x = fm.Variable(3, name="x")
    cube = fm.smooth(z**3, {z: x})
    assert cube.convexity == "unknown"
    assert "neither convex nor concave" in cube.convexity_reason
    assert "f''(" in cube.convexity_reason
    with pytest.raises(fm.ModelError, match="neither convex nor concave"):
        fm.Minimize(fm.sum(cube))
    with pytest.raises(fm.ModelError):
        fm.Maximize(fm.sum(cube))
    saddle = fm.smooth(z * w, {z: x[0], w: x[1]})
    assert saddle.curvature == "unknown" and "Hessian" in saddle.convexity_reason


def test_concave_function_in_maximize_only():
    x = fm.Variable(3, name="x")
    log = fm.smooth(sp.log(zpos), {zpos: x + 2})
    assert log.convexity == "concave" and "<= 0" in log.convexity_reason
    with pytest.raises(fm.ModelError, match="concave"):
        fm.Minimize(fm.sum(log))
    prob = fm.Problem(fm.Maximize(fm.sum(log) - fm.sum_squares(x)), [fm.Box(x, -1, 1)])
    prob.solve()
    assert prob.status == "optimal"
    # maximize log(x + 2) - x^2 entrywise: 1 / (x + 2) = 2 x
    np.testing.assert_allclose(x.value, (-2 + np.sqrt(6)) / 2, atol=1e-3)


def test_undecidable_warns_and_is_treated_as_convex():
    x = fm.Variable(2)
    with pytest.warns(UserWarning, match="could not prove"):
        atom = fm.smooth(-sp.log(z), {z: x})
    assert atom.convexity == "convex"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # declaring the domain settles it: no warning
        assert fm.smooth(-sp.log(zpos), {zpos: x}).convexity == "convex"


def test_multivariable_convexity_proofs():
    x = fm.Variable(3)
    assert fm.smooth(sp.log(sp.exp(z) + sp.exp(w)), {z: x[0], w: x[1]}).convexity == "convex"
    assert fm.smooth(z**2 + z * w + w**2, {z: x[0], w: x[1]}).convexity == "convex"
    assert fm.smooth(-(z**2) - w**2, {z: x[0], w: x[1]}).convexity == "concave"


def test_dcp_composition():
    x = fm.Variable(3, name="x")
    # exp is convex and provably nondecreasing: a convex argument is fine
    assert fm.smooth(sp.exp(z), {z: fm.sum_squares(x)}).curvature == "convex"
    # z**2 is not monotone: a convex argument breaks the rule
    assert fm.smooth(z**2, {z: fm.sum_squares(x)}).curvature == "unknown"
    # exp(-z) is convex and nonincreasing: a concave argument is fine
    assert fm.smooth(sp.exp(-z), {z: -fm.sum_squares(x)}).curvature == "convex"
    # an affine formula keeps the curvature of its argument, flipped by a negative slope
    assert fm.smooth(2 * z + 1, {z: x}).curvature == "affine"
    assert fm.smooth(2 * z + 1, {z: fm.sum_squares(x)}).curvature == "convex"
    assert fm.smooth(-2 * z, {z: fm.sum_squares(x)}).curvature == "concave"
    # concave of concave-nondecreasing
    assert fm.smooth(sp.log(zpos), {zpos: 5 - fm.sum_squares(x)}).curvature == "concave"


def test_repr_and_inspection():
    x = fm.Variable(2, name="x")
    atom = fm.smooth(sp.log(1 + sp.exp(z)), {z: 2 * x})
    assert repr(atom).startswith("smooth(log(exp(z) + 1), {z: ") and "x" in repr(atom)
    assert atom.symbols == (z,)
    assert atom.formula == sp.log(1 + sp.exp(z))
    assert len(atom.gradient) == 1
    assert "neither convex nor concave" in repr(fm.smooth(sp.sin(z), {z: x}))


# ---------------------------------------------------------------- infinite curvature at the start
@pytest.mark.parametrize("options", [{}, {"projection": False}, {"line_search": "backtracking", "projection": False},
                                     {"line_search": "exact", "projection": True}])
@pytest.mark.parametrize("low", [0.0, -1.0])
def test_infinite_curvature_at_the_start_is_no_lipschitz_estimate(options, low):
    """z**(3/2) - z on [low, 1] from x = 0, where the Hessian 3 / (4 sqrt(z)) is +inf: the line searches
    took that curvature as their estimate, every step was 0, and the solve ended max_iter at 0.0. The
    optimum z = 4/9 per entry (closed form; -4/27 each) and Clarabel's cp.power(x, 1.5), whose domain
    z >= 0 CVXPY adds (on [-1, 1] too: fwmodel's iterates stay where the formula is real, as its line
    search refuses non-finite values)."""
    cp = pytest.importorskip("cvxpy")
    z = sp.Symbol("z")
    n = 4
    x = fm.Variable(n)
    with warnings.catch_warnings():
        # SymPy's unproven convexity on the whole line (z**1.5 is convex where real), NumPy's invalid values
        # at the trial points the line search refuses
        warnings.simplefilter("ignore")
        prob = fm.Problem(fm.Minimize(fm.sum(fm.smooth(z ** sp.Rational(3, 2), {z: x})) - fm.sum(x)),
                          [x >= low, x <= 1])
        value = prob.solve(max_iter=2000, **options)
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.power(xc, 1.5)) - cp.sum(xc)), [xc >= low, xc <= 1]).solve(
        solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL
    assert value == pytest.approx(-4 / 27 * n, rel=1e-4)
    assert value == pytest.approx(ref, rel=1e-4)
    np.testing.assert_allclose(x.value, 4 / 9, atol=2e-3)
