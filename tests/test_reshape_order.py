"""``fm.reshape`` without ``order``: row by row (C, NumPy's default) with a FutureWarning, because CVXPY 1.x's
default is column by column ("F") and a model ported from CVXPY would otherwise differ silently. With an
order given (and in fwmodel's own atoms) no warning."""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")


def _values(x_val, make):
    x = fm.Variable(6)
    x.value = x_val
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = np.asarray(make(x).value)
    return value, [w for w in caught if "order" in str(w.message)]


def test_reshape_without_order_reads_c_and_warns():
    x_val = np.arange(6.0)
    for make in (lambda x: fm.reshape(x, (2, 3)), lambda x: x.reshape(2, 3), lambda x: x.reshape((2, 3))):
        value, caught = _values(x_val, make)
        np.testing.assert_array_equal(value, x_val.reshape(2, 3))  # NumPy's C order
        assert len(caught) == 1 and issubclass(caught[0].category, FutureWarning)
        text = str(caught[0].message)
        assert "order='C'" in text and "order='F'" in text and "CVXPY" in text
        assert caught[0].filename == __file__  # (points at the caller's line)


@pytest.mark.parametrize("order", ["C", "F"])
def test_reshape_with_order_is_silent_and_matches_numpy_and_cvxpy(order):
    x_val = np.arange(6.0)
    for make in (lambda x: fm.reshape(x, (2, 3), order=order), lambda x: x.reshape(2, 3, order=order)):
        value, caught = _values(x_val, make)
        assert caught == []
        np.testing.assert_array_equal(value, x_val.reshape((2, 3), order=order))
    xc = cp.Variable(6)
    xc.value = x_val
    np.testing.assert_array_equal(value, cp.reshape(xc, (2, 3), order=order).value)


def test_fwmodel_atoms_that_reshape_raise_no_warning():
    X = fm.Variable((3, 3), name="X")
    x = fm.Variable(4, name="x")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="reshape without order", category=FutureWarning)
        fm.vec(X, order="F"), fm.vec(X, order="C"), fm.upper_tri(X), fm.kron(np.eye(2), X), fm.outer(x, np.ones(3))
        fm.diff(x), fm.cumsum(x), fm.convolve(np.ones(2), x), fm.hstack([x, x]), fm.vstack([x, x]), X.flatten()
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
