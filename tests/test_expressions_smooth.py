"""SmoothFunction: value, gradient and curvature of an objective on a flat vector.

Gradients are checked against central finite differences and, where one is
known, against the closed form; curvature (the second directional
derivative) against second differences of the value.
"""
import tracemalloc
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.expressions import SmoothFunction

RNG = np.random.default_rng(11)
A = RNG.standard_normal((5, 4))
b = RNG.standard_normal(5)
C = RNG.standard_normal((3, 4))
M = RNG.standard_normal((4, 4))
PSD = M @ M.T + np.eye(4)
W = RNG.random(4)
S = sp.random(6, 4, density=0.5, random_state=4, format="csr")
IDX = np.array([0, 0, 2])


def make_vars():
    return dict(
        x=fm.Variable(4, name="x"),
        X=fm.Variable((3, 4), name="X"),
        s=fm.Variable(name="s"),
        unused=fm.Variable(3, name="unused"),
    )


# name -> (builder, quadratic?, curvature available?)
OBJECTIVES = {
    "least squares": (lambda x, X, s: fm.sum_squares(A @ x - b), True, True),
    "half squared frobenius": (lambda x, X, s: 0.5 * fm.sum(fm.square(X - C)), True, True),
    "quad_form plus linear": (lambda x, X, s: fm.quad_form(x, PSD) + W @ x - 3 * s, True, True),
    "sparse quad_form": (lambda x, X, s: fm.quad_form(x, sp.csr_matrix(PSD)), True, True),
    "weighted squares": (lambda x, X, s: fm.sum(fm.multiply(W, fm.square(x - 1))), True, True),
    "affine only": (lambda x, X, s: fm.sum(X @ W) + 2 * s - x[1], True, True),
    "sparse least squares": (lambda x, X, s: fm.sum_squares(S @ x - 1) + fm.inner(W, x), True, True),
    "logistic loss": (lambda x, X, s: fm.sum(fm.logistic(A @ x)) + 0.1 * fm.sum_squares(x), False, True),
    "log_sum_exp rows": (lambda x, X, s: fm.sum(fm.log_sum_exp(X + x, axis=1)), False, True),
    "log_sum_exp all": (lambda x, X, s: fm.log_sum_exp(2 * X), False, True),
    "huber": (lambda x, X, s: fm.sum(fm.huber(A @ x - b, M=0.7)), False, True),
    "exp": (lambda x, X, s: fm.sum(fm.exp(x / 3)) + fm.exp(s), False, True),
    "exp of affine scalar": (lambda x, X, s: fm.exp(fm.sum(x) / 10 - s), False, True),
    "concave": (lambda x, X, s: -fm.sum_squares(x) - fm.sum(fm.logistic(X)), False, True),
    "shared subexpression": (
        lambda x, X, s: (lambda u: fm.sum_squares(u) + fm.sum(fm.logistic(u)) + 2 * u[0])(A @ x - b),
        False,
        True,
    ),
    "indexing and stacking": (
        lambda x, X, s: fm.sum_squares(fm.vstack([x, X[IDX], X.T[:, 1]]) - 1) + fm.sum(fm.huber(X[:, ::-1])),
        False,
        True,
    ),
    "transpose reshape trace": (
        lambda x, X, s: fm.sum_squares(fm.reshape(X.T, (2, 6), order="C") @ np.ones(6)) + fm.trace(X[:, :3]) * 2 - s,
        True,
        True,
    ),
    "sum with axes": (lambda x, X, s: fm.sum_squares(fm.sum(X, axis=0) - x) + fm.sum(fm.square(X.sum(axis=1))), True, True),
    "scalar broadcast": (lambda x, X, s: fm.sum_squares(X - s) + fm.square(s), True, True),
    "nested atoms": (lambda x, X, s: fm.exp(fm.sum_squares(x) / 10), False, False),
    "lse of exp": (lambda x, X, s: fm.log_sum_exp(fm.exp(x / 2)), False, False),
    "shape (1,) root": (lambda x, X, s: fm.reshape(fm.sum_squares(x), (1,), order="C"), True, True),
    "variable root": (lambda x, X, s: s, True, True),
    "division": (lambda x, X, s: fm.sum_squares(X / np.arange(1.0, 5.0)), True, True),
}


def layout_for(variables, rng, gap=2):
    layout = {}
    position = gap
    for var in variables:
        layout[var.id] = (position, var.shape)
        position += var.size + gap
    return layout, position


def numeric_gradient(f, v, h=1e-6):
    g = np.empty_like(v)
    for i in range(v.size):
        e = np.zeros_like(v)
        e[i] = h
        g[i] = (f(v + e) - f(v - e)) / (2 * h)
    return g


def numpy_value(expr, variables, layout, v):
    for var in variables:
        offset, shape = layout[var.id]
        var.value = v[offset : offset + var.size].reshape(shape)
    return float(np.ravel(expr.value)[0])


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_value_gradient_and_curvature(name):
    build, quadratic, has_curvature = OBJECTIVES[name]
    variables = make_vars()
    expr = build(variables["x"], variables["X"], variables["s"])
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    layout, n = layout_for(list(variables.values()), rng)
    f = SmoothFunction(expr, layout)
    assert f.is_quadratic == quadratic
    for _ in range(2):
        v = rng.standard_normal(n)
        value = f.value(v)
        assert value == pytest.approx(numpy_value(expr, list(variables.values()), layout, v), rel=1e-12, abs=1e-12)
        val2, grad = f.value_and_grad(v)
        assert val2 == value
        assert grad.shape == (n,)
        np.testing.assert_allclose(grad, numeric_gradient(f.value, v), rtol=1e-5, atol=1e-6)
        # Entries of unused variables and of the gaps between blocks are zero.
        offset, _ = layout[variables["unused"].id]
        assert not grad[offset : offset + 3].any() and grad[0] == 0 and grad[-1] == 0
        dv = rng.standard_normal(n)
        curvature = f.curvature(v, dv)
        if not has_curvature:
            assert curvature is None
            continue
        h = 1e-4
        second = (f.value(v + h * dv) - 2 * value + f.value(v - h * dv)) / h**2
        assert curvature == pytest.approx(second, rel=1e-4, abs=1e-5)
        if quadratic:  # exact: f(v + t dv) is a parabola
            t = 0.7
            slope = grad @ dv
            assert f.value(v + t * dv) == pytest.approx(value + t * slope + 0.5 * t * t * curvature, rel=1e-10)


def test_closed_form_gradients():
    x = fm.Variable(4)
    layout = {x.id: (0, (4,))}
    v = RNG.standard_normal(4)
    _, g = SmoothFunction(fm.sum_squares(A @ x - b), layout).value_and_grad(v)
    np.testing.assert_allclose(g, 2 * A.T @ (A @ v - b))
    _, g = SmoothFunction(fm.quad_form(x, PSD), layout).value_and_grad(v)
    np.testing.assert_allclose(g, 2 * PSD @ v)
    _, g = SmoothFunction(fm.sum(fm.logistic(A @ x)), layout).value_and_grad(v)
    np.testing.assert_allclose(g, A.T @ (1 / (1 + np.exp(-(A @ v)))))
    _, g = SmoothFunction(fm.log_sum_exp(x), layout).value_and_grad(v)
    np.testing.assert_allclose(g, np.exp(v) / np.exp(v).sum())
    assert SmoothFunction(fm.sum_squares(A @ x - b), layout).curvature(v, v) == pytest.approx(
        2 * np.sum((A @ v) ** 2)
    )


def test_stable_at_large_arguments():
    z = fm.Variable(4)
    layout = {z.id: (0, (4,))}
    v = np.array([1000.0, -1000.0, 0.0, 999.0])
    f = SmoothFunction(fm.sum(fm.logistic(z)), layout)
    value, grad = f.value_and_grad(v)
    assert value == pytest.approx(1000.0 + 999.0 + np.log(2.0))
    np.testing.assert_allclose(grad, [1.0, 0.0, 0.5, 1.0])
    assert np.isfinite(f.curvature(v, np.ones(4)))
    g = SmoothFunction(fm.log_sum_exp(z), layout)
    value, grad = g.value_and_grad(v)
    assert value == pytest.approx(1000.0 + np.log(1.0 + np.exp(-1.0)))
    assert np.all(np.isfinite(grad)) and grad.sum() == pytest.approx(1.0)
    value, grad = g.value_and_grad(-v)
    assert value == pytest.approx(1000.0)
    assert np.isfinite(g.curvature(v, np.ones(4)))
    z.value = v
    assert np.isfinite(fm.sum(fm.logistic(z)).value) and np.isfinite(fm.log_sum_exp(-z).value)


def test_parameters_are_read_at_each_call():
    x = fm.Variable(3)
    lam = fm.Parameter(nonneg=True, value=1.0)
    target = fm.Parameter(3, value=np.zeros(3))
    f = SmoothFunction(lam * fm.sum_squares(x - target), {x.id: (0, (3,))})
    v = np.ones(3)
    assert f.value(v) == pytest.approx(3.0)
    lam.value = 2.0
    target.value = np.array([1.0, 0.0, 0.0])
    value, grad = f.value_and_grad(v)
    assert value == pytest.approx(4.0)
    np.testing.assert_allclose(grad, [0.0, 4.0, 4.0])
    assert f.curvature(v, np.ones(3)) == pytest.approx(12.0)
    target.value = None
    with pytest.raises(fm.ModelError, match="no value"):
        f.value(v)


def test_gradient_into_out_and_repeated_calls():
    x = fm.Variable(4)
    X = fm.Variable((3, 4))
    u = A @ x - b
    expr = fm.sum_squares(u) + fm.sum(fm.square(X - C)) - 2 * fm.sum(u)
    layout = {x.id: (1, (4,)), X.id: (7, (3, 4))}
    f = SmoothFunction(expr, layout)
    v = RNG.standard_normal(20)
    value, fresh = f.value_and_grad(v)
    out = np.full(20, 7.0)
    for _ in range(3):  # buffers are reused between calls: results must not drift
        value2, grad = f.value_and_grad(v, out=out)
        assert grad is out and value2 == value
        np.testing.assert_array_equal(grad, fresh)
    assert out[0] == 0 and not out[5:7].any() and not out[19:].any()
    with pytest.raises(ValueError, match="out"):
        f.value_and_grad(v, out=np.zeros(3))


def test_no_needless_temporaries():
    """sum_squares(X - C) on a 1000 x 1000 matrix: no array of that size is
    allocated per call once buffers exist and the gradient goes into out=."""
    d = 1000
    X = fm.Variable((d, d))
    Cbig = np.random.default_rng(0).standard_normal((d, d))
    f = SmoothFunction(fm.sum_squares(X - Cbig), {X.id: (0, (d, d))})
    v = np.random.default_rng(1).standard_normal(d * d)
    out = np.empty(d * d)
    f.value_and_grad(v, out=out)
    tracemalloc.start()
    value, grad = f.value_and_grad(v, out=out)
    f.value(v)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < d * d * 8 / 4, f"peak allocation {peak} bytes"
    np.testing.assert_allclose(grad, 2 * (v - Cbig.ravel()))
    assert value == pytest.approx(np.sum((v - Cbig.ravel()) ** 2))


def test_huge_sparse_objective():
    n = 10**6
    D = sp.diags(np.linspace(1.0, 2.0, n), format="csr")
    x = fm.Variable(n)
    f = SmoothFunction(fm.sum_squares(D @ x - 1.0), {x.id: (0, (n,))})
    v = np.zeros(n)
    value, grad = f.value_and_grad(v)
    assert value == pytest.approx(n)
    np.testing.assert_allclose(grad, -2 * np.linspace(1.0, 2.0, n))


def test_layout_errors():
    x = fm.Variable(3, name="x")
    with pytest.raises(fm.ModelError, match="'x'.*var_layout"):
        SmoothFunction(fm.sum_squares(x), {})
    with pytest.raises(fm.ModelError, match="shape"):
        SmoothFunction(fm.sum_squares(x), {x.id: (0, (4,))})
    with pytest.raises(fm.ModelError, match="scalar"):
        SmoothFunction(fm.square(x), {x.id: (0, (3,))})
    f = SmoothFunction(fm.sum_squares(x), {x.id: (2, (3,))})
    with pytest.raises(ValueError, match="length at least 5"):
        f.value(np.zeros(4))


# ------------------------------------------------ random compositions
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fwmodel.expressions import linearize  # noqa: E402


def apply_op(expr, op, rng):
    """One affine operation chosen by name, valid for the expression's shape."""
    if op == "transpose":
        return expr.T
    if op == "neg":
        return -expr
    if op == "scale":
        return expr * rng.standard_normal(expr.shape[-1:])
    if op == "shift":
        return expr + rng.standard_normal(expr.shape)
    if op == "reverse":
        return expr[::-1]
    if op == "fancy":
        return expr[rng.integers(0, expr.shape[0], size=3)]
    if op == "flatten":
        return expr.flatten(order="C")
    if op == "sum" and expr.ndim == 2:
        return fm.sum(expr, axis=int(rng.integers(0, 2)))
    if op == "stack" and expr.ndim <= 2:
        return fm.vstack([expr, 2 * expr])
    if op == "matmul":
        if expr.ndim == 2:
            return expr @ rng.standard_normal((expr.shape[1], 2))
        return rng.standard_normal((2, expr.shape[0])) @ expr
    return expr


ATOMS = {
    "sum_squares": lambda e: fm.sum_squares(e),
    "logistic": lambda e: fm.sum(fm.logistic(e)),
    "log_sum_exp": lambda e: fm.log_sum_exp(e),
    "huber": lambda e: fm.sum(fm.huber(e, M=0.5)),
    "exp": lambda e: fm.sum(fm.exp(e / 4)),
}
OPS = ["transpose", "neg", "scale", "shift", "reverse", "fancy", "flatten", "sum", "stack", "matmul"]


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(st.sampled_from(OPS), max_size=5),
    atom=st.sampled_from(sorted(ATOMS)),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_compositions(ops, atom, seed):
    rng = np.random.default_rng(seed)
    X = fm.Variable((3, 4))
    expr = X
    for op in ops:
        expr = apply_op(expr, op, rng)
    v = np.concatenate([[0.0], rng.standard_normal(12)])
    X.value = v[1:].reshape(3, 4)
    A_lin, c = linearize(expr, {X.id: 1}, 13)
    np.testing.assert_allclose(A_lin @ v + c, np.ravel(expr.value), atol=1e-12)
    objective = ATOMS[atom](expr)
    assert objective.curvature == "convex"
    f = SmoothFunction(objective, {X.id: (1, (3, 4))})
    assert f.is_quadratic == (atom == "sum_squares")
    value, grad = f.value_and_grad(v)
    assert value == pytest.approx(float(objective.value), rel=1e-12)
    # central differences lose accuracy where exp() makes the gradient huge
    # (truncation error ~ h^2 times the third derivative): compare at the gradient's scale
    scale = max(1.0, float(np.abs(grad).max()))
    np.testing.assert_allclose(grad, numeric_gradient(f.value, v), rtol=1e-4, atol=1e-5 * scale)
    dv = rng.standard_normal(13)
    if atom == "huber":
        # the second difference straddles the kink |z| = M when an entry lies within h |dz| of it
        # (seed 16926: 11.99 against 14.56): Huber's closed form, 2 sum dz^2 over |z| < M
        z, dz = A_lin @ v + c, A_lin @ dv
        second = 2.0 * float(np.sum(dz[np.abs(z) < 0.5] ** 2))
    else:
        h = 1e-4
        second = (f.value(v + h * dv) - 2 * value + f.value(v - h * dv)) / h**2
    assert f.curvature(v, dv) == pytest.approx(second, rel=1e-4, abs=1e-4)


def test_quadratic_curvature_without_the_forward_pass_matches_closed_form():
    """A quadratic of sum_squares / square / quad_form atoms gets its curvature from the tangents alone
    (no forward pass over the variables): it equals the closed form d' H d, parameters included,
    and does not depend on the point."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((7, 4))
    B = rng.standard_normal((4, 4))
    P = B @ B.T
    x = fm.Variable(4, name="x")
    p = fm.Parameter(7, name="p", value=rng.standard_normal(7))
    expr = fm.sum_squares(A @ x - p) + 3.0 * fm.quad_form(x, P) + fm.sum(fm.square(2.0 * x - 1.0))
    f = SmoothFunction(expr, {x.id: (0, (4,))})
    assert f._curvature_from_tangents
    dv = rng.standard_normal(4)
    expected = 2 * np.sum((A @ dv) ** 2) + 6.0 * dv @ P @ dv + 2 * np.sum((2.0 * dv) ** 2)
    for v in (np.zeros(4), rng.standard_normal(4)):
        assert f.curvature(v, dv) == pytest.approx(expected, rel=1e-12)
    p.value = rng.standard_normal(7)  # a parameter outside the atoms' tangents: same curvature
    assert f.curvature(rng.standard_normal(4), dv) == pytest.approx(expected, rel=1e-12)
    # a non-quadratic objective still evaluates the point
    g = SmoothFunction(fm.sum(fm.logistic(A @ x)), {x.id: (0, (4,))})
    assert not g._curvature_from_tangents


def test_lent_gradient_is_the_gradient_and_is_taken_back():
    """value_and_grad(lend=True) of sum_squares(X - C) returns 2 (X - C) scaled, in an array of the
    function's own (no copy); a plain call meanwhile does not write into it; the next lend=True call
    takes it back. An objective whose gradient is not such an array is copied into out as usual."""
    rng = np.random.default_rng(8)
    C = rng.standard_normal((5, 5))
    X = fm.Variable((5, 5), name="X")
    f = SmoothFunction(fm.sum_squares(X - C), {X.id: (0, (5, 5))})
    v1, v2 = rng.standard_normal(25), rng.standard_normal(25)
    value, g1 = f.value_and_grad(v1, scale=0.5, lend=True)
    assert f.lent_last and value == pytest.approx(np.sum((v1 - C.ravel()) ** 2), rel=1e-12)
    np.testing.assert_allclose(g1, v1 - C.ravel(), rtol=1e-14, atol=1e-14)  # 0.5 * 2 (X - C)
    kept = g1.copy()
    _, plain = f.value_and_grad(v2)  # a plain call while g1 is lent: g1 untouched
    np.testing.assert_array_equal(g1, kept)
    np.testing.assert_allclose(plain, 2 * (v2 - C.ravel()), rtol=1e-14, atol=1e-14)
    _, g2 = f.value_and_grad(v2, scale=0.5, lend=True)
    np.testing.assert_allclose(g2, v2 - C.ravel(), rtol=1e-14, atol=1e-14)
    _, g3 = f.value_and_grad(v1, scale=0.5, lend=True)
    assert np.shares_memory(g2, g3)  # the lent array came back and was reused
    np.testing.assert_allclose(g3, v1 - C.ravel(), rtol=1e-14, atol=1e-14)
    A = rng.standard_normal((5, 5))
    h = SmoothFunction(fm.sum_squares(A @ X - C), {X.id: (0, (5, 5))})
    out = np.empty(25)
    _, g = h.value_and_grad(v1, out=out, lend=True)
    assert g is out and not h.lent_last
    np.testing.assert_allclose(g.reshape(5, 5), 2 * A.T @ (A @ v1.reshape(5, 5) - C), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("build, hessian", [
    (lambda X, C: fm.sum_squares(X - C), 2.0),
    (lambda X, C: fm.sum_squares(C - X), 2.0),
    (lambda X, C: 3.0 * fm.sum_squares(2.0 * X - C) + 1.5, 24.0),
    (lambda X, C: fm.sum_squares(X - C) / 4.0, 0.5),
    (lambda X, C: -fm.sum_squares(X + C), -2.0),
])
def test_lent_hessian_is_the_hessian_of_the_lent_gradient(build, hessian):
    """lent_hessian h (Hessian h I) of the quadratics whose gradient is lent, against the closed form,
    the curvature along random directions and the gradient at a moved point (f quadratic: it moves by h dv)."""
    rng = np.random.default_rng(9)
    C = rng.standard_normal((4, 6))
    X = fm.Variable((4, 6), name="X")
    f = SmoothFunction(build(X, C), {X.id: (0, (4, 6))})
    v, dv = rng.standard_normal(24), rng.standard_normal(24)
    for scale in (1.0, 0.5, -0.5):
        _, g = f.value_and_grad(v, scale=scale, lend=True)
        assert f.lent_last
        assert f.lent_hessian == pytest.approx(hessian, rel=1e-14)
        assert f.curvature(v, dv) == pytest.approx(hessian * dv @ dv, rel=1e-12)
        moved = (g / scale + hessian * dv).copy()  # the unscaled gradient at v + dv, followed
        np.testing.assert_allclose(moved, f.value_and_grad(v + dv)[1], rtol=1e-12, atol=1e-12)
    # not lent (a matrix in front of X): no Hessian claimed
    A = rng.standard_normal((4, 4))
    h = SmoothFunction(fm.sum_squares(A @ X - C), {X.id: (0, (4, 6))})
    h.value_and_grad(v, out=np.empty(24), lend=True)
    assert not h.lent_last and h.lent_hessian is None


def test_followed_shared_gradient_matches_a_fresh_one():
    """BlockObjective.follow_step on two tied copies of X (objective sum_squares(X - C) over the average):
    after moves of either copy the followed gradient and the modeled f agree with fresh evaluations."""
    from fwmodel.compiler.objective import FOLLOW_STEPS

    rng = np.random.default_rng(10)
    C = rng.standard_normal((6, 6))
    X = fm.Variable((6, 6), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, 5.0), fm.TraceNormBall(X, 5.0)])
    compiled = prob.compile()
    objective, blocks = compiled.objective, compiled.blocks
    x = rng.standard_normal(72)
    f, g = objective.value_and_grad_shared(x)
    for move in range(FOLLOW_STEPS + 1):
        sl = blocks[move % 2].slice
        d, gamma = rng.standard_normal(36), 0.3
        slope_f, c_f = float(np.dot(np.asarray(g)[sl], d)), objective.curvature_block(x, sl, d)
        x[sl] += gamma * d
        if not objective.follow_step(g, sl, d, gamma):
            assert move == FOLLOW_STEPS  # a fresh evaluation is asked for after FOLLOW_STEPS moves
            break
        f += gamma * slope_f + 0.5 * gamma * gamma * c_f
        fresh_f, fresh_g = objective.value_and_grad(x)
        assert f == pytest.approx(fresh_f, rel=1e-12)
        np.testing.assert_allclose(np.asarray(g), fresh_g, rtol=1e-12, atol=1e-12)
    else:
        raise AssertionError("follow_step never asked for a fresh evaluation")
