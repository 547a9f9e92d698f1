"""The modeling language: leaves, operators with NumPy semantics, values,
curvature labels, constraints and every refused construction.

Values are checked against the same computation done directly in NumPy.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import fwmodel as fm
from fwmodel.expressions import Expression, as_expression



@pytest.fixture
def v():
    """Variables of several shapes with random values, and their NumPy values."""
    rng = np.random.default_rng(1)
    x = fm.Variable(4, name="x")
    y = fm.Variable((4,), name="y")
    X = fm.Variable((3, 4), name="X")
    T = fm.Variable((2, 3, 4), name="T")
    s = fm.Variable(name="s")
    for var in (x, y, X, T, s):
        var.value = rng.standard_normal(var.shape)
    return x, y, X, T, s


# ------------------------------------------------------------------ leaves
def test_variable_shape_id_name_and_value():
    a = fm.Variable(3)
    b = fm.Variable((2, 3, 4))
    c = fm.Variable()
    assert a.shape == (3,) and a.size == 3 and a.ndim == 1
    assert b.shape == (2, 3, 4) and b.size == 24 and b.ndim == 3
    assert c.shape == () and c.size == 1 and c.ndim == 0
    assert len({a.id, b.id, c.id}) == 3
    assert a.name == f"var{a.id}"
    assert fm.Variable(2, name="w").name == "w"
    assert a.value is None
    a.value = [1, 2, 3]
    assert isinstance(a.value, np.ndarray) and a.value.dtype == float
    np.testing.assert_array_equal(a.value, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"shape \(2,\).*expected \(3,\)"):
        a.value = [1, 2]
    c.value = 2.5
    assert float(c.value) == 2.5 and np.shape(c.value) == ()
    a.value = None
    assert a.value is None


def test_variable_value_is_copied():
    a = fm.Variable(2)
    data = np.array([1.0, 2.0])
    a.value = data
    data[0] = 9.0
    assert a.value[0] == 1.0


@pytest.mark.parametrize("shape", [-1, (2, -3), "3", (2.5,)])
def test_bad_shapes(shape):
    with pytest.raises(fm.ModelError):
        fm.Variable(shape)


def test_parameter_value_validation():
    p = fm.Parameter((2,), name="lam")
    assert p.value is None and p.curvature == "constant" and p.is_constant()
    p.value = [1.0, 2.0]
    np.testing.assert_array_equal(p.value, [1.0, 2.0])
    with pytest.raises(ValueError, match="lam.*NaN or infinite"):
        p.value = [1.0, np.nan]
    with pytest.raises(ValueError, match="lam.*NaN or infinite"):
        p.value = [np.inf, 1.0]
    with pytest.raises(ValueError, match="lam.*shape"):
        p.value = [1.0, 2.0, 3.0]
    q = fm.Parameter(value=3.0)
    assert float(q.value) == 3.0
    with pytest.raises(ValueError, match="nonneg"):
        fm.Parameter(nonneg=True, value=-1.0)


def test_constants_reject_nan_and_inf():
    x = fm.Variable(3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        x + np.array([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="NaN or infinite"):
        np.array([1.0, np.inf, 2.0]) - x
    bad = sp.csr_matrix(np.array([[1.0, np.nan, 0], [0, 0, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="sparse.*NaN or infinite"):
        bad @ x
    with pytest.raises(fm.ModelError, match="complex"):
        x + np.array([1j, 0, 0])


def test_constant_wrapping():
    c = fm.Constant(np.arange(3))
    assert c.shape == (3,) and c.curvature == "constant" and c.value.dtype == float
    assert fm.Constant(2).shape == ()
    S = fm.Constant(sp.eye(3, format="coo"))
    assert S.is_sparse and S.shape == (3, 3)
    np.testing.assert_array_equal(S.value, np.eye(3))
    assert as_expression(c) is c


# ------------------------------------------------------ operators and values
VALUE_CASES = [
    ("add", lambda x, y, X, T, s: x + y, lambda x, y, X, T, s: x + y),
    ("sub const", lambda x, y, X, T, s: x - 2.0, lambda x, y, X, T, s: x - 2.0),
    ("neg", lambda x, y, X, T, s: -X, lambda x, y, X, T, s: -X),
    ("broadcast", lambda x, y, X, T, s: X + x, lambda x, y, X, T, s: X + x),
    ("scalar var", lambda x, y, X, T, s: s + X, lambda x, y, X, T, s: s + X),
    ("mul", lambda x, y, X, T, s: 3 * x * np.arange(4), lambda x, y, X, T, s: 3 * x * np.arange(4)),
    ("div", lambda x, y, X, T, s: X / np.arange(1, 5), lambda x, y, X, T, s: X / np.arange(1, 5)),
    ("matmul", lambda x, y, X, T, s: X @ np.arange(4.0), lambda x, y, X, T, s: X @ np.arange(4.0)),
    ("matmul left", lambda x, y, X, T, s: np.ones((2, 3)) @ X, lambda x, y, X, T, s: np.ones((2, 3)) @ X),
    ("vecmat", lambda x, y, X, T, s: np.arange(3.0) @ X, lambda x, y, X, T, s: np.arange(3.0) @ X),
    ("vecvec", lambda x, y, X, T, s: x @ np.arange(4.0), lambda x, y, X, T, s: x @ np.arange(4.0)),
    ("index", lambda x, y, X, T, s: X[1, 2], lambda x, y, X, T, s: X[1, 2]),
    ("slice", lambda x, y, X, T, s: X[:, 1:3], lambda x, y, X, T, s: X[:, 1:3]),
    ("fancy", lambda x, y, X, T, s: x[np.array([0, 2, 2])], lambda x, y, X, T, s: x[np.array([0, 2, 2])]),
    ("fancy rows", lambda x, y, X, T, s: X[np.array([2, 0]), :], lambda x, y, X, T, s: X[np.array([2, 0]), :]),
    ("mask", lambda x, y, X, T, s: x[np.array([True, False, True, True])],
     lambda x, y, X, T, s: x[np.array([True, False, True, True])]),
    ("ellipsis newaxis", lambda x, y, X, T, s: T[..., None, 1], lambda x, y, X, T, s: T[..., None, 1]),
    ("transpose", lambda x, y, X, T, s: X.T, lambda x, y, X, T, s: X.T),
    ("transpose axes", lambda x, y, X, T, s: T.transpose((1, 0, 2)), lambda x, y, X, T, s: T.transpose((1, 0, 2))),
    ("reshape", lambda x, y, X, T, s: fm.reshape(X, (2, 6), order="C"), lambda x, y, X, T, s: X.reshape(2, 6)),
    ("reshape F", lambda x, y, X, T, s: fm.reshape(X, (6, 2), order="F"),
     lambda x, y, X, T, s: X.reshape((6, 2), order="F")),
    ("reshape -1", lambda x, y, X, T, s: T.reshape(-1, 4, order="C"), lambda x, y, X, T, s: T.reshape(-1, 4, order="C")),
    ("sum", lambda x, y, X, T, s: fm.sum(T), lambda x, y, X, T, s: T.sum()),
    ("sum axis", lambda x, y, X, T, s: fm.sum(T, axis=(0, 2)), lambda x, y, X, T, s: T.sum(axis=(0, 2))),
    ("sum keepdims", lambda x, y, X, T, s: T.sum(axis=-1, keepdims=True),
     lambda x, y, X, T, s: T.sum(axis=-1, keepdims=True)),
    ("np.sum", lambda x, y, X, T, s: np.sum(X, axis=1), lambda x, y, X, T, s: X.sum(axis=1)),
    ("multiply", lambda x, y, X, T, s: fm.multiply(np.arange(4.0), X), lambda x, y, X, T, s: np.arange(4.0) * X),
    ("trace", lambda x, y, X, T, s: fm.trace(X[:, :3]), lambda x, y, X, T, s: np.trace(X[:, :3])),
    ("vstack", lambda x, y, X, T, s: fm.vstack([x, X, y]), lambda x, y, X, T, s: np.vstack([x, X, y])),
    ("hstack", lambda x, y, X, T, s: fm.hstack([x, s, y]), lambda x, y, X, T, s: np.hstack([x, s, y])),
    ("hstack 2d", lambda x, y, X, T, s: fm.hstack([X, X[:, :1]]), lambda x, y, X, T, s: np.hstack([X, X[:, :1]])),
    ("inner", lambda x, y, X, T, s: fm.inner(np.arange(12.0), X), lambda x, y, X, T, s: np.arange(12.0) @ X.ravel()),
    ("sum_squares", lambda x, y, X, T, s: fm.sum_squares(X - 1), lambda x, y, X, T, s: ((X - 1) ** 2).sum()),
    ("square", lambda x, y, X, T, s: fm.square(x), lambda x, y, X, T, s: x**2),
    ("pow", lambda x, y, X, T, s: x**2, lambda x, y, X, T, s: x**2),
    ("quad_form", lambda x, y, X, T, s: fm.quad_form(x, np.diag([1.0, 2, 3, 4])),
     lambda x, y, X, T, s: x @ np.diag([1.0, 2, 3, 4]) @ x),
    ("logistic", lambda x, y, X, T, s: fm.logistic(X), lambda x, y, X, T, s: np.log1p(np.exp(X))),
    ("log_sum_exp", lambda x, y, X, T, s: fm.log_sum_exp(X), lambda x, y, X, T, s: np.log(np.exp(X).sum())),
    ("log_sum_exp axis", lambda x, y, X, T, s: fm.log_sum_exp(T, axis=1),
     lambda x, y, X, T, s: np.log(np.exp(T).sum(axis=1))),
    ("huber", lambda x, y, X, T, s: fm.huber(3 * X, M=1.5),
     lambda x, y, X, T, s: np.where(np.abs(3 * X) <= 1.5, 9 * X**2, 3 * np.abs(3 * X) - 1.5**2)),
    ("exp", lambda x, y, X, T, s: fm.exp(x), lambda x, y, X, T, s: np.exp(x)),
]


@pytest.mark.parametrize("name,build,reference", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_match_numpy(v, name, build, reference):
    expr = build(*v)
    expected = np.asarray(reference(*(var.value for var in v)), dtype=float)
    assert isinstance(expr, Expression)
    assert expr.shape == expected.shape
    assert expr.size == expected.size and expr.ndim == expected.ndim
    value = expr.value
    assert np.shape(value) == expected.shape
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)


def test_value_none_until_all_values_set():
    x = fm.Variable(2)
    p = fm.Parameter(2)
    e = fm.sum_squares(x - p)
    assert e.value is None
    x.value = [1.0, 2.0]
    assert e.value is None
    p.value = [0.0, 0.0]
    assert float(e.value) == pytest.approx(5.0)


def test_parameter_value_read_at_evaluation():
    x = fm.Variable(2)
    x.value = [1.0, 2.0]
    p = fm.Parameter(value=2.0)
    e = p * x
    np.testing.assert_allclose(e.value, [2.0, 4.0])
    p.value = -1.0
    np.testing.assert_allclose(e.value, [-1.0, -2.0])


def test_numpy_on_the_left_builds_expressions():
    x = fm.Variable(3)
    X = fm.Variable((3, 3))
    c = np.ones(3)
    A = np.eye(3)
    assert isinstance(c - x, Expression)
    assert isinstance(c + x, Expression)
    assert isinstance(c * x, Expression)
    assert isinstance(c / 2 * x, Expression)
    assert isinstance(A @ x, Expression)
    assert isinstance(A @ X, Expression)
    assert isinstance(np.float64(2.0) * x, Expression)
    assert isinstance(c == x, fm.Equality)
    x.value = [1.0, 2.0, 3.0]
    np.testing.assert_allclose((c - x).value, [0.0, -1.0, -2.0])
    np.testing.assert_allclose((np.arange(3.0) @ (A @ x)).value, 8.0)


@pytest.mark.parametrize("kind", ["csr_matrix", "csc_matrix", "coo_matrix", "csr_array", "coo_array"])
def test_scipy_sparse_on_the_left(kind):
    rng = np.random.default_rng(2)
    dense = sp.random(5, 4, density=0.5, random_state=3).toarray()
    S = getattr(sp, kind)(dense)
    x = fm.Variable(4)
    X = fm.Variable((4, 2))
    x.value = rng.standard_normal(4)
    X.value = rng.standard_normal((4, 2))
    for expr, expected in ((S @ x, dense @ x.value), (S @ X, dense @ X.value)):
        assert isinstance(expr, Expression)
        np.testing.assert_allclose(expr.value, expected)
    y = fm.Variable(5)
    y.value = rng.standard_normal(5)
    np.testing.assert_allclose((y @ S).value, y.value @ dense)


def test_sparse_constant_stays_sparse_in_matmul():
    S = sp.random(6, 6, density=0.3, random_state=1, format="csr")
    x = fm.Variable(6)
    e = S @ x
    assert e.args[0].is_sparse


def test_hash_and_identity():
    x, y = fm.Variable(2), fm.Variable(2)
    assert len({x, y, x}) == 2
    assert {x: 1}[x] == 1
    assert x in [x]


# --------------------------------------------------------------- structure
def test_variables_and_parameters_in_order(v):
    x, y, X, T, s = v
    p = fm.Parameter(name="p", value=1.0)
    q = fm.Parameter(4, name="q", value=np.ones(4))
    e = fm.sum_squares(y - q) + p * fm.sum(x) + fm.sum(y) + fm.sum_squares(X @ q - x[:3])
    assert e.variables() == [y, x, X]
    assert e.parameters() == [q, p]
    assert (x + 1).parameters() == []
    assert fm.Constant(1.0).variables() == []


def test_transpose_of_vectors_is_identity():
    x = fm.Variable(3)
    assert x.T is x
    assert fm.Variable().T.shape == ()
    assert fm.Variable((2, 5)).T.shape == (5, 2)


def test_shape_errors_name_the_expressions():
    x = fm.Variable(3, name="x")
    X = fm.Variable((2, 4), name="X")
    with pytest.raises(fm.ModelError, match=r"x \(shape \(3,\)\).*X \(shape \(2, 4\)\)"):
        x + X
    with pytest.raises(fm.ModelError, match="not aligned"):
        X @ np.ones(3)
    with pytest.raises(fm.ModelError, match="at least one dimension"):
        fm.Variable() @ np.ones(1)
    with pytest.raises(fm.ModelError, match="reshape"):
        fm.reshape(X, (3, 3), order="C")
    with pytest.raises(fm.ModelError, match="axis 2 is out of bounds"):
        fm.sum(X, axis=2)
    with pytest.raises(fm.ModelError, match="trace"):
        fm.trace(x)
    with pytest.raises(fm.ModelError, match="vstack"):
        fm.vstack([x, X])
    with pytest.raises(IndexError):
        x[3]
    with pytest.raises(IndexError):
        X[0, 0, 0]
    with pytest.raises(fm.ModelError, match="indices must be constant"):
        x[fm.Variable()]


def test_repr_is_readable():
    x = fm.Variable(3, name="x")
    A = fm.Constant(np.ones((4, 3)), name="A")
    b = fm.Constant(np.ones(4), name="b")
    assert repr(fm.sum_squares(A @ x - b)) == "sum_squares(A @ x - b)"
    X = fm.Variable((3, 6), name="X")
    assert repr(X[0, 2:5]) == "X[0, 2:5]"
    assert repr(X.T) == "X.T"
    assert repr(2 * (x + 1)) == "2 * (x + 1)"
    assert repr(x - 1) == "x - 1"
    assert repr(-(x - x[::-1])) == "-(x - x[::-1])"
    assert repr(fm.sum(X, axis=1)) == "sum(X, axis=1)"
    assert repr(fm.huber(x, M=2)) == "huber(x, M=2)"
    assert repr(fm.inner(np.ones(3), x)) == "inner([1., 1., 1.], x)"
    assert repr(x == 0) == "x == 0"


def test_python_sum_of_expressions():
    xs = [fm.Variable(2) for _ in range(300)]
    total = sum(fm.sum_squares(x) for x in xs)
    for x in xs:
        x.value = [1.0, 1.0]
    assert float(total.value) == pytest.approx(600.0)
    assert "0 +" not in repr(total)[:10]


def test_long_chains_do_not_recurse():
    x = fm.Variable(2)
    e = x
    for _ in range(3000):
        e = e[::-1] * 1.0001
    x.value = [1.0, 2.0]
    assert e.value.shape == (2,)
    assert e.curvature == "affine"
    assert len(e.variables()) == 1


# --------------------------------------------------------------- curvature
def test_curvature_labels():
    x = fm.Variable(3)
    A = np.ones((2, 3))
    P = fm.Parameter(nonneg=True, value=2.0)
    q = fm.Parameter(value=1.0)
    cases = {
        "constant": [fm.Constant(1.0), fm.sum_squares(np.ones(3)), P * 3],
        "affine": [x, A @ x + 1, -x, fm.sum(x), x[0], fm.inner(np.ones(3), x), x / 2],
        "convex": [
            fm.sum_squares(A @ x),
            fm.square(x),
            fm.sum_squares(x) + x[0],
            2 * fm.sum_squares(x),
            P * fm.sum_squares(x),
            fm.exp(fm.sum_squares(x)),
            fm.logistic(fm.square(x)),
            fm.log_sum_exp(fm.exp(x)),
            fm.sum(fm.huber(x)),
            fm.vstack([fm.square(x), x]),
            np.ones(3) @ fm.square(x),
            fm.quad_form(x, np.eye(3)),
        ],
        "concave": [-fm.sum_squares(x), -2 * fm.exp(x), fm.quad_form(x, -np.eye(3)), 1 - fm.logistic(x)],
        "unknown": [
            fm.sum_squares(x) - fm.sum_squares(x[0]),
            fm.square(fm.square(x)),
            fm.sum_squares(fm.exp(x)),
            fm.huber(fm.square(x)),
            np.array([1.0, -1.0, 1.0]) * fm.square(x),
            fm.exp(-fm.square(x)),
        ],
    }
    for label, exprs in cases.items():
        for e in exprs:
            assert e.curvature == label, f"{e!r}: {e.curvature} != {label}"
    assert fm.sum_squares(x).is_convex() and not fm.sum_squares(x).is_concave()
    assert (A @ x).is_affine() and not fm.square(x).is_affine()
    # an undeclared parameter has no sign, whatever its value (it may change before a solve)
    assert (q * fm.sum_squares(x)).curvature == "unknown"
    q.value = -1.0
    assert (q * fm.sum_squares(x)).curvature == "unknown"
    assert (fm.Parameter() * fm.sum_squares(x)).curvature == "unknown"


# ------------------------------------------------------------ refusals
def test_product_of_variables_is_refused():
    x, y = fm.Variable(3, name="x"), fm.Variable(3, name="y")
    for build in (lambda: x * y, lambda: fm.multiply(x, y), lambda: x @ y, lambda: fm.inner(x, y)):
        with pytest.raises(fm.ModelError, match=r"objective must be convex.*fm\.quad_form.*fm\.sum_squares"):
            build()
    for build in (lambda: x / y, lambda: 1 / x):
        with pytest.raises(fm.ModelError, match=r"objective must be convex.*fm\.quad_form.*fm\.sum_squares"):
            build()
    with pytest.raises(fm.ModelError, match="division by zero"):
        x / np.array([1.0, 0.0, 1.0])
    with pytest.raises(fm.ModelError, match="powers 1 and 2"):
        x**3


@pytest.mark.parametrize("op", ["<=", ">="])
def test_inequalities_build_constraints(op):
    x = fm.Variable(3, name="x")
    for left, right in ((x, 1.0), (np.zeros(3), x), (x, fm.Variable(3))):
        constraint = eval(f"left {op} right")
        assert isinstance(constraint, fm.Inequality) and constraint.kind == "affine"
        assert constraint.shape == (3,)
    with pytest.raises(fm.ModelError, match="not a constraint"):
        x != 1


@pytest.mark.parametrize(
    "build,advice",
    [
        (lambda x: fm.abs(x), "use fm.L1Ball"),
        (lambda x: abs(x), "use fm.L1Ball"),
        (lambda x: fm.norm1(x), "use fm.L1Ball"),
        (lambda x: fm.norm(x, 1), "use fm.L1Ball"),
        (lambda x: fm.norm2(x), "use fm.L2Ball"),
        (lambda x: fm.norm(x), "fm.sum_squares"),
        (lambda x: fm.norm(x, "fro"), "use fm.L2Ball"),
        (lambda x: fm.norm_inf(x), "use fm.LinfBall"),
        (lambda x: fm.norm(x, np.inf), "fm.Box"),
        (lambda x: fm.max(x), "fm.LinfBall"),
        (lambda x: fm.min(x), "fm.Box"),
        (lambda x: fm.norm(fm.reshape(x, (2, 3), order="C"), "nuc"), "use fm.TraceNormBall"),
        (lambda x: fm.norm(x, 3), "ConvexSet"),
    ],
)
def test_nonsmooth_functions_point_to_sets(build, advice):
    """Norms, abs, max and min are refused in objectives, naming the set (or the rule) to use."""
    x = fm.Variable(6, name="x")
    with pytest.raises(fm.ModelError) as info:
        fm.Minimize(fm.sum(build(x)))
    assert advice in str(info.value)
    assert "x" in str(info.value)


def test_quad_form_checks():
    x = fm.Variable(2, name="x")
    with pytest.raises(fm.ModelError, match="symmetric"):
        fm.quad_form(x, np.array([[1.0, 1.0], [0.0, 1.0]]))
    with pytest.raises(fm.ModelError, match="positive semidefinite"):
        fm.quad_form(x, np.diag([1.0, -1.0]))
    with pytest.raises(fm.ModelError, match=r"shape \(2, 2\)"):
        fm.quad_form(x, np.eye(3))
    with pytest.raises(fm.ModelError, match="must be constant"):
        fm.quad_form(x, fm.Variable((2, 2)))
    assert fm.quad_form(x, sp.eye(2) * 3).curvature == "convex"
    P = fm.Parameter((2, 2), psd=True, value=np.eye(2))
    assert fm.quad_form(x, P).curvature == "convex"
    with pytest.raises(ValueError, match="psd"):
        P.value = np.diag([1.0, -1.0])
    Q = fm.Parameter((2, 2), value=np.diag([1.0, -1.0]))
    assert fm.quad_form(x, Q).curvature == "unknown"


@pytest.mark.parametrize("unit", [1e-12, 1e-9, 1.0, 1e9])
def test_quad_form_checks_are_the_same_in_any_units(unit):
    """Definiteness and symmetry are judged relative to P's own scale: an indefinite P in small
    units is refused (it was taken as PSD and minimized as if convex), a PSD one is accepted."""
    x = fm.Variable(2, name="x")
    with pytest.raises(fm.ModelError, match="positive semidefinite"):
        fm.quad_form(x, unit * np.diag([1.0, -1.0]))
    with pytest.raises(fm.ModelError, match="symmetric"):
        fm.quad_form(x, unit * np.array([[1.0, 1e-3], [0.0, 1.0]]))
    with pytest.raises(fm.ModelError, match="symmetric"):
        fm.quad_form(x, sp.csr_matrix(unit * np.array([[1.0, 1e-3], [0.0, 1.0]])))
    assert fm.quad_form(x, unit * np.diag([1.0, 0.0])).curvature == "convex"
    P = fm.Parameter((2, 2), psd=True, value=unit * np.eye(2))
    with pytest.raises(ValueError, match="psd"):
        P.value = unit * np.diag([1.0, -1.0])


def test_complex_parameter_values_are_refused():
    """NumPy would keep the real part with only a warning: a complex value is refused by name."""
    p = fm.Parameter(2, name="p")
    for value in (np.array([1 + 2j, 3]), [1 + 0j, 2.0], 3j * np.ones(2)):
        with pytest.raises(ValueError, match="'p'.*complex"):
            p.value = value
    p.value = [1.0, 2.0]
    assert np.array_equal(p.value, [1.0, 2.0])


def test_huber_threshold_must_be_positive():
    x = fm.Variable(2)
    for M in (0, -1.0, np.inf, "1"):
        with pytest.raises(fm.ModelError, match="M must be a positive number"):
            fm.huber(x, M=M)


# ------------------------------------------------------------- equalities
def test_equality_constraint():
    x = fm.Variable(3, name="x")
    X = fm.Variable((2, 3), name="X")
    c = X == x
    assert isinstance(c, fm.Equality)
    assert c.lhs is X and c.rhs is x
    assert c.shape == (2, 3)
    assert c.expr.shape == (2, 3)
    X.value = np.ones((2, 3))
    x.value = np.arange(3.0)
    np.testing.assert_allclose(c.expr.value, np.ones((2, 3)) - np.arange(3.0))
    np.testing.assert_allclose(c.residual, np.abs(c.expr.value))  # (CVXPY's residual: |lhs - rhs|)
    assert c.variables() == [X, x]
    assert (x == 0).expr is x
    with pytest.raises(fm.ModelError, match="no truth value"):
        bool(c)
    with pytest.raises(fm.ModelError, match="no truth value"):
        if x == 1:
            pass
    with pytest.raises(fm.ModelError, match="must be affine"):
        fm.sum_squares(x) == 1
    with pytest.raises(fm.ModelError, match="do not broadcast"):
        x == fm.Variable(2)
    eq = np.arange(3.0) == x
    assert isinstance(eq, fm.Equality) and eq.shape == (3,)


def test_public_names():
    import fwmodel.expressions as fe

    expected = {
        "Variable", "Parameter", "Constant", "Expression", "sum", "multiply", "trace", "reshape",
        "vstack", "hstack", "sum_squares", "square", "quad_form", "logistic", "log_sum_exp", "huber",
        "exp", "inner", "abs", "norm", "norm1", "norm2", "norm_inf", "max", "min", "Equality",
    }
    assert expected <= set(fe.__all__)
    for name in expected:
        assert getattr(fm, name) is getattr(fe, name)
    assert callable(fe.linearize) and callable(fe.SmoothFunction) and callable(fe.as_expression)
