"""``fm.reshape``, ``expr.reshape`` and ``expr.flatten`` read as CVXPY's: without ``order``, column by column
("F", CVXPY 1.x's default) with a FutureWarning (CVXPY warns the same: its default is to become NumPy's "C"), so
a model ported from CVXPY gets CVXPY's answer; with an order given (and in fwmodel's own atoms) no warning.
Every value is checked against CVXPY's own reshape of the same matrix."""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

#: (shape of the input, shape asked for), the input's entries 0, 1, 2, ...
RESHAPES = [((6,), (2, 3)), ((2, 3), (3, 2)), ((2, 3), (6,)), ((3, 2), (2, -1)), ((2, 3), (1, 6)), ((4,), (4, 1))]


def _values(module, in_shape, make):
    """``make(x).value`` for a ``module`` (fm or cp) variable of ``in_shape`` holding 0, 1, 2, ..., and the
    order warnings that building it raised."""
    x = module.Variable(in_shape)
    x.value = np.arange(float(np.prod(in_shape))).reshape(in_shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = np.asarray(make(x).value)
    return value, [w for w in caught if issubclass(w.category, FutureWarning) and "order" in str(w.message)]


@pytest.mark.parametrize("in_shape, shape", RESHAPES)
def test_reshape_without_order_reads_as_cvxpy_and_warns(in_shape, shape):
    expected, cp_caught = _values(cp, in_shape, lambda x: cp.reshape(x, shape))
    assert len(cp_caught) == 1  # (CVXPY's own warning: what fwmodel mirrors)
    x_val = np.arange(float(np.prod(in_shape))).reshape(in_shape)
    np.testing.assert_array_equal(expected, np.reshape(x_val, shape, order="F"))  # (CVXPY's default: NumPy's F)
    makes = [lambda x: fm.reshape(x, shape), lambda x: x.reshape(shape), lambda x: x.reshape(*shape)]
    for make in makes:
        value, caught = _values(fm, in_shape, make)
        np.testing.assert_array_equal(value, expected)
        assert len(caught) == 1
        text = str(caught[0].message)
        assert "order='C'" in text and "order='F'" in text and "CVXPY" in text
        assert caught[0].filename == __file__  # (points at the caller's line)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("in_shape, shape", RESHAPES)
def test_reshape_with_order_is_silent_and_matches_cvxpy(in_shape, shape, order):
    expected, cp_caught = _values(cp, in_shape, lambda x: cp.reshape(x, shape, order=order))
    assert cp_caught == []
    for make in (lambda x: fm.reshape(x, shape, order=order), lambda x: x.reshape(shape, order=order),
                 lambda x: x.reshape(*shape, order=order)):
        value, caught = _values(fm, in_shape, make)
        assert caught == []
        np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("order", ["C", "F", None])
def test_flatten_matches_cvxpy(order):
    kw = {} if order is None else {"order": order}
    expected, cp_caught = _values(cp, (2, 3), lambda X: X.flatten(**kw))
    value, caught = _values(fm, (2, 3), lambda X: X.flatten(**kw))
    np.testing.assert_array_equal(value, expected)
    assert len(caught) == len(cp_caught) == (1 if order is None else 0)
    if order is None:
        assert caught[0].filename == __file__


def test_fwmodel_atoms_that_reshape_raise_no_warning():
    X = fm.Variable((3, 3), name="X")
    x = fm.Variable(4, name="x")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="(reshape|vec) without order", category=FutureWarning)
        fm.vec(X, order="F"), fm.vec(X, order="C"), fm.upper_tri(X), fm.kron(np.eye(2), X), fm.outer(x, np.ones(3))
        fm.diff(x), fm.cumsum(x), fm.convolve(np.ones(2), x), fm.hstack([x, x]), fm.vstack([x, x]), X.flatten(order="C")
        fm.max(X, axis=0) <= 1, fm.maximum(x, 0) <= 1


def test_ported_model_with_cvxpys_order_gives_cvxpys_answer():
    D = np.array([[1.0, -2.0, 0.5], [0.3, 2.0, -1.0]])
    values = []
    for m, kw in ((cp, {"solver": "CLARABEL"}), (fm, {"tol": 1e-8, "feas_tol": 1e-8})):
        x = m.Variable(6)
        p = m.Problem(m.Minimize(m.sum_squares(m.reshape(x, (2, 3), order="F") - D)),
                      [m.norm_inf(x) <= 1, x[0] + x[1] == 0])
        p.solve(**kw)
        values.append(p.value)
    assert values[1] == pytest.approx(values[0], rel=1e-5)


def test_vec_without_order_reads_f_and_warns_as_cvxpy_does():
    """CVXPY 1.x's ``cp.vec`` without an order reads F and warns (a FutureWarning: its default is to become C);
    ``fm.vec`` did the same reading silently, while ``fm.reshape`` warned. Both warn now; vec reads CVXPY's F."""
    X_val = np.arange(6.0).reshape(2, 3)
    X = fm.Variable((2, 3))
    X.value = X_val
    Xc = cp.Variable((2, 3))
    Xc.value = X_val
    for module, var in ((fm, X), (cp, Xc)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = np.asarray(module.vec(var).value)
        np.testing.assert_array_equal(value, X_val.ravel(order="F"))
        future = [w for w in caught if issubclass(w.category, FutureWarning) and "order" in str(w.message)]
        assert len(future) == 1, (module.__name__, [str(w.message) for w in caught])
        if module is fm:
            text = str(future[0].message)
            assert "order='F'" in text and "order='C'" in text and "CVXPY" in text
            assert future[0].filename == __file__
    for order in ("F", "C"):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", category=FutureWarning)
            np.testing.assert_array_equal(fm.vec(X, order=order).value, X_val.ravel(order=order))
