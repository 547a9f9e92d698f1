"""fm.diag, fm.diff, fm.cumsum, fm.mean, fm.vec: values against NumPy, models against CVXPY + Clarabel."""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

rng = np.random.default_rng(11)


def _valued(shape):
    x = fm.Variable(shape)
    x.value = rng.standard_normal(shape)
    return x


@pytest.mark.parametrize("k", [0, 1, -2, 4])
def test_diag_of_a_matrix_is_numpys(k):
    X = _valued((5, 5))
    np.testing.assert_allclose(fm.diag(X, k).value, np.diag(X.value, k))


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diag_of_a_vector_is_numpys(k):
    v = _valued(4)
    np.testing.assert_allclose(fm.diag(v, k).value, np.diag(v.value, k))


@pytest.mark.parametrize("shape", [(3, 1), (1, 3), (1, 1)])
@pytest.mark.parametrize("k", [0, 1])
def test_diag_of_a_column_or_a_row_is_cvxpys(shape, k):
    """CVXPY reads a column (n, 1), a row (1, n) and a 1 x 1 matrix as vectors: their diagonal matrix."""
    v = _valued(shape)
    reference = cp.diag(cp.Constant(v.value), k).value
    assert fm.diag(v, k).shape == reference.shape
    np.testing.assert_allclose(fm.diag(v, k).value, reference)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_diff_cumsum_mean_along_an_axis_are_numpys(axis):
    T = _valued((3, 4, 5))
    for k in (0, 1, 2):
        np.testing.assert_allclose(fm.diff(T, k, axis).value, np.diff(T.value, k, axis))
    np.testing.assert_allclose(fm.cumsum(T, axis).value, np.cumsum(T.value, axis))
    np.testing.assert_allclose(fm.mean(T, axis).value, np.mean(T.value, axis))


def test_whole_array_cumsum_mean_and_vec_are_numpys():
    T, X = _valued((3, 4, 5)), _valued((3, 4))
    np.testing.assert_allclose(fm.cumsum(T, axis=None).value, np.cumsum(T.value))
    np.testing.assert_allclose(fm.mean(T).value, np.mean(T.value))
    np.testing.assert_allclose(fm.mean(T, (0, 2), keepdims=True).value, np.mean(T.value, (0, 2), keepdims=True))
    np.testing.assert_allclose(fm.vec(X, "F").value, X.value.ravel(order="F"))
    np.testing.assert_allclose(fm.vec(X, "C").value, X.value.ravel())


@pytest.mark.parametrize("make, words", [
    (lambda: fm.diag(fm.Variable((2, 3))), "must be square"),
    (lambda: fm.diag(fm.Variable((4, 4)), 4), "offset k = 4"),
    (lambda: fm.diag(fm.Variable((2, 2, 2))), "vector or a square matrix"),
    (lambda: fm.diff(fm.Variable(4), 4), "order k = 4"),
    (lambda: fm.diff(fm.Variable(4), -1), "k must be >= 0"),
    (lambda: fm.diff(fm.Variable(4), axis=1), "axis 1 is out of range"),
    (lambda: fm.diff(fm.Variable(4), 1.5), "k must be an int"),
    (lambda: fm.cumsum(fm.Variable((2, 3)), axis=2), "axis 2 is out of range"),
    (lambda: fm.vec(fm.Variable((2, 3)), "A"), "order must be 'F' or 'C'"),
])
def test_bad_arguments_name_the_problem(make, words):
    with pytest.raises(fm.ModelError, match=words):
        make()


def _compare(fm_problem, cvx_problem, rel=2e-3):
    fm_problem.solve()
    cvx_problem.solve(solver="CLARABEL")
    assert fm_problem.status == "optimal"
    scale = max(1.0, abs(cvx_problem.value))
    assert abs(fm_problem.value - cvx_problem.value) <= rel * scale


def test_total_variation_written_with_diff_matches_cvxpy():
    n = 40
    y = np.repeat(rng.standard_normal(4), n // 4) + 0.3 * rng.standard_normal(n)
    x, xc = fm.Variable(n), cp.Variable(n)
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [fm.norm1(fm.diff(x)) <= 3.0, fm.abs(x) <= 2.0]),
             cp.Problem(cp.Minimize(cp.sum_squares(xc - y)), [cp.norm1(cp.diff(xc)) <= 3.0, cp.abs(xc) <= 2.0]))


def test_zero_diagonal_under_a_nuclear_norm_bound_matches_cvxpy():
    C = rng.standard_normal((6, 6))
    X, Xc = fm.Variable((6, 6)), cp.Variable((6, 6))
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.normNuc(X) <= 3.0, fm.diag(X) == 0]),
             cp.Problem(cp.Minimize(cp.sum_squares(Xc - C)), [cp.normNuc(Xc) <= 3.0, cp.diag(Xc) == 0]))


def test_cumsum_mean_and_vec_in_a_model_match_cvxpy():
    n = 12
    c = rng.standard_normal(n)
    d = rng.standard_normal(n)
    x, xc = fm.Variable(n), cp.Variable(n)
    _compare(
        fm.Problem(fm.Minimize(fm.sum_squares(x - fm.mean(x) - c) + d @ fm.vec(fm.reshape(x, (3, 4), order="C"), order="F")),
                   [x >= 0, fm.sum(x) == 1, fm.cumsum(x)[: n // 2] <= 0.3]),
        cp.Problem(cp.Minimize(cp.sum_squares(xc - cp.mean(xc) - c) + d @ cp.vec(cp.reshape(xc, (3, 4), order="C"), order="F")),
                   [xc >= 0, cp.sum(xc) == 1, cp.cumsum(xc)[: n // 2] <= 0.3]))


def test_a_vector_placed_on_a_diagonal_matches_cvxpy():
    v, vc = fm.Variable(5), cp.Variable(5)
    C = rng.standard_normal((6, 6))
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(fm.diag(v, 1) - C)), [fm.Simplex(v)]),
             cp.Problem(cp.Minimize(cp.sum_squares(cp.diag(vc, 1) - C)), [vc >= 0, cp.sum(vc) == 1]))


# ------------------------------------------- bmat, kron, outer, vdot, upper_tri, convolve, tv
def _both(build):
    """``build(module, variable values)``: the fm expression's value and CVXPY's at the same variable values."""
    values = {}

    def valued(m, shape):
        key = (len(values.setdefault(m, [])), shape)
        v = m.Variable(shape)
        v.value = np.random.default_rng(key[0] + 100).standard_normal(shape)
        values[m].append(v)
        return v

    return build(fm, lambda shape: valued(fm, shape)).value, build(cp, lambda shape: valued(cp, shape)).value


K23 = rng.standard_normal((2, 3))
H = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("name, build", [
    ("bmat", lambda m, v: m.bmat([[v((2, 2)), K23], [np.ones((1, 2)), v((1, 3))]])),
    ("kron(A, X)", lambda m, v: m.kron(K23, v((3, 2)))),
    ("kron(X, A)", lambda m, v: m.kron(v((3, 2)), K23)),
    ("outer", lambda m, v: m.outer(v(3), H[:2])),
    ("outer, constant first", lambda m, v: m.outer(H, v(4))),
    ("vdot", lambda m, v: m.vdot(K23, v((2, 3)))),
    ("scalar_product", lambda m, v: m.scalar_product(H, v(3))),
    ("upper_tri", lambda m, v: m.upper_tri(v((4, 4)))),
    ("convolve", lambda m, v: m.convolve(H, v(5))),
    ("convolve, variable first", lambda m, v: m.convolve(v(5), H) if m is fm else m.convolve(H, v(5))),  # commutes
    ("tv", lambda m, v: m.tv(v(6))),
    ("concatenate", lambda m, v: m.concatenate([v((2, 3)), K23], axis=1)),
    ("transpose", lambda m, v: m.transpose(v((2, 3)))),
    ("matmul", lambda m, v: m.matmul(K23, v((3, 2)))),
])
def test_more_cvxpy_functions_have_cvxpys_values(name, build):
    ours, ref = _both(build)
    assert np.shape(ours) == np.shape(ref), (np.shape(ours), np.shape(ref))
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


def test_upper_tri_is_the_vector_cvxpy_documents_and_returns():
    """CVXPY 1.9 reports upper_tri's shape as (k, 1) but documents, and returns as .value, the vector (k,):
    fm.upper_tri follows the value (so upper_tri(X) == v with k entries is k equalities, not k x k)."""
    A = np.arange(10.0, 26.0).reshape(4, 4)
    np.testing.assert_array_equal(fm.upper_tri(A).value, [11, 12, 13, 16, 17, 21])  # CVXPY's docstring example
    assert cp.upper_tri(cp.Constant(A)).value.shape == fm.upper_tri(A).shape == (6,)
    X = fm.Variable((3, 3), symmetric=True)
    v = np.array([0.5, -0.2, 0.1])
    eq = fm.upper_tri(X) == v
    assert eq.shape == (3,)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X)), [eq, fm.abs(X) <= 1])
    prob.solve(tol=1e-8, feas_tol=1e-8)
    np.testing.assert_allclose(X.value[np.triu_indices(3, 1)], v, atol=1e-5)


def test_deconvolution_and_kron_models_match_cvxpy():
    signal = np.repeat([0.0, 1.0, -0.5], 4)
    y = np.convolve(H, signal) + 0.05 * rng.standard_normal(signal.size + H.size - 1)
    x, xc = fm.Variable(signal.size), cp.Variable(signal.size)
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(fm.convolve(H, x) - y)), [fm.tv(x) <= 2.0, fm.abs(x) <= 2]),
             cp.Problem(cp.Minimize(cp.sum_squares(cp.convolve(H, xc) - y)), [cp.tv(xc) <= 2.0, cp.abs(xc) <= 2]))
    T = rng.standard_normal((6, 6))
    X, Xc = fm.Variable((3, 2)), cp.Variable((3, 2))
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(fm.kron(K23, X) - T)), [fm.norm(X, "fro") <= 1]),
             cp.Problem(cp.Minimize(cp.sum_squares(cp.kron(K23, Xc) - T)), [cp.norm(Xc, "fro") <= 1]))


@pytest.mark.parametrize("make, words", [
    (lambda: fm.bmat([]), "non-empty list of non-empty lists"),
    (lambda: fm.kron(fm.Variable((2, 2)), fm.Variable((2, 2))), "one side must be constant"),
    (lambda: fm.kron(np.ones(3), fm.Variable((2, 2))), "expects two matrices"),
    (lambda: fm.outer(fm.Variable((2, 2)), np.ones(2)), "expects vectors"),
    (lambda: fm.upper_tri(fm.Variable((2, 3))), "square matrix"),
    (lambda: fm.convolve(fm.Variable(3), fm.Variable(3)), "one side must be constant"),
    (lambda: fm.convolve(fm.Parameter(2, value=np.ones(2)), fm.Variable(3)), "not an fm.Parameter"),
])
def test_more_cvxpy_functions_name_bad_arguments(make, words):
    with pytest.raises(fm.ModelError, match=words):
        make()


def test_a_ball_on_a_stack_of_variables_says_to_make_them_one_variable():
    """CVXPY's norm1(hstack([x, y])) <= t: the ball bounds the stack, not x and y; the message says to use one
    variable's slices, and that rewrite is CVXPY's model."""
    x, y = fm.Variable(3, name="x"), fm.Variable(3, name="y")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1) + fm.sum_squares(y + 2)), [fm.norm1(fm.hstack([x, y])) <= 3])
    with pytest.raises(fm.ModelError, match=r"To bound x, y together, make them one variable and use its slices"):
        prob.solve()
    z = fm.Variable(6)
    xc, yc = cp.Variable(3), cp.Variable(3)
    _compare(fm.Problem(fm.Minimize(fm.sum_squares(z[:3] - 1) + fm.sum_squares(z[3:] + 2)), [fm.norm1(z) <= 3]),
             cp.Problem(cp.Minimize(cp.sum_squares(xc - 1) + cp.sum_squares(yc + 2)),
                        [cp.norm1(cp.hstack([xc, yc])) <= 3]))


def test_concatenate_with_axis_none_flattens_as_numpy():
    """``concatenate(..., axis=None)`` joins the expressions flattened in C order (NumPy's meaning); it was
    taken as axis 0 (shape (4, 3) for two 2 x 3 parts) and a model reading its first entries solved a
    different problem "optimal"."""
    C = np.arange(6.0).reshape(2, 3)
    joined = fm.concatenate([fm.Constant(C), fm.Constant(2 * C)], axis=None)
    assert joined.shape == (12,)
    np.testing.assert_array_equal(joined.value, np.concatenate([C, 2 * C], axis=None))
    assert "axis=None" in repr(joined)
    X = fm.Variable((2, 3))
    e = fm.concatenate([X, 2 * X], axis=None)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(e[0:3] - np.array([1.0, 2.0, 3.0]))), [X >= -5, X <= 5])
    prob.solve(tol=1e-9)
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(0.0, abs=1e-8)  # e[0:3] is X[0, :] (C order): reachable in the box
    np.testing.assert_allclose(X.value[0], [1.0, 2.0, 3.0], atol=1e-4)
