"""Everyday CVXPY idioms written the fwmodel way, each solved by fwmodel and by CVXPY + Clarabel.

One line per idiom: fwmodel's status and objective, Clarabel's, their relative
gap, and for every constraint with a ``dual_value`` whether it matches
CVXPY's (shape and values to 1e-3 relative, 1e-4 absolute); "refused" with
the start of the ModelError's message where fwmodel does not take the form.
A dual marked "differs" may be a non-unique multiplier (degenerate optimum):
the line says so where that was checked.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/cvxpy_idioms.py
"""
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")

rng = np.random.default_rng(2026)
n, m_rows = 8, 5
A = rng.standard_normal((m_rows, n))
b = rng.standard_normal(m_rows)
c = rng.standard_normal(n)
x0 = rng.standard_normal(n)
P = rng.standard_normal((n, n))
P = P @ P.T / n + 0.1 * np.eye(n)
M = rng.standard_normal((4, 4))
S = (M + M.T) / 2
Y6 = rng.standard_normal((6, 5))
w = rng.uniform(0.5, 2.0, n)
labels = np.sign(rng.standard_normal(20))
F = rng.standard_normal((20, n))


def idioms():
    """(name, build(module) -> (objective, constraints)): CVXPY spelling, with ``m`` either cvxpy or fwmodel."""
    def V(m, shape, **kw):
        return m.Variable(shape, **kw)

    yield "norm(x, 2) <= t, least squares", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - b)), [m.norm(x, 2) <= 0.5]))(V(m, n))
    yield "abs(x) <= 1", lambda m: (lambda x: (m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.abs(x) <= 1]))(V(m, n))
    yield "sum(abs(x)) <= t with A @ x <= b", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.sum(m.abs(x)) <= 2, A @ x <= 0.5]))(V(m, n))
    yield "max(abs(x)) <= 1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.max(m.abs(x)) <= 0.4]))(V(m, n))
    yield "x[i] == 0 in an L1 ball", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.norm1(x) <= 1.5, x[2] == 0]))(V(m, n))
    yield "A @ x <= b with a norm ball", lambda m: (lambda x: (
        m.Minimize(c @ x), [m.norm(x, 2) <= 1, A @ x <= 0.2]))(V(m, n))
    yield "diag(X) == 1, X >> 0 (MaxCut SDP)", lambda m: (lambda X: (
        m.Minimize(m.trace(S @ X)), [X >> 0, m.diag(X) == 1]))(V(m, (4, 4), symmetric=True))
    yield "trace(X) == 1, X >> 0", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - S)), [X >> 0, m.trace(X) == 1]))(V(m, (4, 4), symmetric=True))
    yield "X.T == X with a box", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - M)), [X.T == X, m.abs(X) <= 0.5]))(V(m, (4, 4)))
    yield "slices x[:3] >= 0.1, x[3:] <= 0", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x[:3] >= 0.1, x[3:] <= 0, m.norm_inf(x) <= 1]))(V(m, n))
    yield "hstack in the objective", lambda m: (lambda x, y: (
        m.Minimize(m.sum_squares(m.hstack([x, y]) - x0)), [m.norm1(x) <= 1, m.abs(y) <= 0.3]))(V(m, 3), V(m, n - 3))
    yield "vstack in a constraint", lambda m: (lambda x, y: (
        m.Minimize(m.sum_squares(x - x0[:4]) + m.sum_squares(y - x0[4:])),
        [m.vstack([x, y]) <= 0.2, m.norm(x, 2) <= 1, m.norm(y, 2) <= 1]))(V(m, 4), V(m, 4))
    yield "x >= 0, sum(x[:k]) <= 1, x <= 1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x >= 0, m.sum(x[:4]) <= 1, x <= 1]))(V(m, n))
    yield "norm(X, 'nuc') <= t", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [m.norm(X, "nuc") <= 2]))(V(m, (6, 5)))
    yield "norm(X, 'fro') <= t", lambda m: (lambda X: (
        m.Minimize(m.sum(m.multiply(Y6, X))), [m.norm(X, "fro") <= 1]))(V(m, (6, 5)))
    yield "multiply(w, x) in a least-squares term", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(m.multiply(w, x) - x0)), [m.norm1(x) <= 1]))(V(m, n))
    yield "nonneg=True, sum(x) <= 1", lambda m: (lambda x: (
        m.Minimize(m.quad_form(x, P) - c @ x), [m.sum(x) <= 1]))(V(m, n, nonneg=True))
    yield "capped portfolio x >= 0, sum == 1, x <= 0.3", lambda m: (lambda x: (
        m.Minimize(m.quad_form(x, P) - 0.1 * c @ x), [x >= 0, m.sum(x) == 1, x <= 0.3]))(V(m, n))
    yield "norm(x - x0, 1) <= r", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - b)), [m.norm(x - x0, 1) <= 0.5]))(V(m, n))
    yield "Maximize(c @ x), norm1(x) <= 1", lambda m: (lambda x: (
        m.Maximize(c @ x - m.sum_squares(x)), [m.norm1(x) <= 1]))(V(m, n))
    yield "logistic loss, norm1 ball", lambda m: (lambda x: (
        m.Minimize(m.sum(m.logistic(-m.multiply(labels, F @ x)))), [m.norm1(x) <= 2]))(V(m, n))
    yield "mean(x) == 0.2 with a box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.mean(x) == 0.2, m.abs(x) <= 1]))(V(m, n))
    yield "cumsum(x) <= 1 with a box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.cumsum(x) <= 1, m.abs(x) <= 1]))(V(m, n))
    yield "x >= 0, sum(x) <= 1, x[0] >= 0.2", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x >= 0, m.sum(x) <= 1, x[0] >= 0.2]))(V(m, n))
    yield "abs(x - 1) <= 0.5", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - b)), [m.abs(x - 1) <= 0.5]))(V(m, n))
    yield "x <= y, two boxed variables", lambda m: (lambda x, y: (
        m.Minimize(m.sum_squares(x - x0) + m.sum_squares(y + x0)), [x <= y, m.abs(x) <= 1, m.abs(y) <= 1]))(
        V(m, n), V(m, n))
    yield "abs(diff(x)) <= 0.1 with a box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.abs(m.diff(x)) <= 0.1, m.abs(x) <= 2]))(V(m, n))
    yield "max(x) <= 1, x >= -1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.max(x) <= 1, x >= -1]))(V(m, n))
    yield "min(x) >= 0, sum(x) == 1 (a simplex)", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.min(x) >= 0, m.sum(x) == 1]))(V(m, n))
    yield "X >= 0, sum(X, axis=1) <= 1", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= 0, m.sum(X, axis=1) <= 1]))(V(m, (6, 5)))
    yield "Birkhoff by constraints: X >= 0, rows == 1, columns == 1", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - M)), [X >= 0, m.sum(X, axis=1) == 1, m.sum(X, axis=0) == 1]))(V(m, (4, 4)))
    yield "X >= 0, sum(X[0]) == 1, sum(X[1]) == 1 (per-row budgets)", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - 0.3)), [X >= 0, m.sum(X[0]) == 1, m.sum(X[1]) == 1]))(V(m, (2, 3)))
    yield "X >= 0, [sum(X[i]) <= t_i for i] (a loop over rows)", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= 0] + [m.sum(X[i]) <= 0.5 + 0.25 * i for i in range(6)]))(V(m, (6, 5)))
    yield "X >= 0, [sum(X[:, j]) == 1 for j] (a loop over columns)", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= 0] + [m.sum(X[:, j]) == 1 for j in range(5)]))(V(m, (6, 5)))
    yield "X >= 0, sum(X[0]) == 1, sum(X[1:], axis=1) == 1", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= 0, m.sum(X[0]) == 1, m.sum(X[1:], axis=1) == 1]))(V(m, (6, 5)))
    yield "x >= 0, sum(x[:3]) == 1, x[3:] <= 1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x >= 0, m.sum(x[:3]) == 1, x[3:] <= 1]))(V(m, n))
    yield "x >= 0, sum(x[:3]) == 1, sum(x[3:]) <= 2 (slices cover x)", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x >= 0, m.sum(x[:3]) == 1, m.sum(x[3:]) <= 2]))(V(m, n))
    yield "X >= 0, sum(X) == 1 (one simplex over a matrix)", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= 0, m.sum(X) == 1]))(V(m, (6, 5)))
    yield "norm(A @ x - b, 2) <= t with a box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.norm(A @ x - b, 2) <= 2, m.abs(x) <= 1]))(V(m, n))
    yield "x == y, x in an L1 ball, y in a box", lambda m: (lambda x, y: (
        m.Minimize(m.sum_squares(x - x0) + m.sum_squares(y - 2 * x0)), [x == y, m.norm1(x) <= 2,
                                                                        m.abs(y) <= 0.4]))(V(m, n), V(m, n))
    yield "PSD=True, trace(X) <= 1", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - S)), [m.trace(X) <= 1]))(V(m, (4, 4), PSD=True))
    yield "reshape/vec in a constraint", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - M)), [m.vec(X) <= 0.5, m.reshape(X, (16,), order="F") >= -0.5]))(V(m, (4, 4)))
    yield "sum(x) == 1, x >= 0, quad_form risk", lambda m: (lambda x: (
        m.Minimize(m.quad_form(x, P)), [m.sum(x) == 1, x >= 0]))(V(m, n))
    yield "quad_form(x, P) <= risk, sum(x) == 1, x >= 0", lambda m: (lambda x: (
        m.Maximize(x0 @ x), [m.quad_form(x, P) <= 0.2, m.sum(x) == 1, x >= 0]))(V(m, n))
    yield "diag(X) <= 1, X >> 0", lambda m: (lambda X: (
        m.Maximize(m.trace(S @ X)), [X >> 0, m.diag(X) <= 1]))(V(m, (4, 4), symmetric=True))
    yield "sum(x) >= 1 with x <= 1, x >= 0", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x + x0)), [m.sum(x) >= 1, x <= 1, x >= 0]))(V(m, n))
    yield "x[::2] == x[1::2] with a box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [x[::2] == x[1::2], m.abs(x) <= 0.5]))(V(m, n))
    yield "huber regression, box", lambda m: (lambda x: (
        m.Minimize(m.sum(m.huber(A @ x - b, 0.5))), [m.abs(x) <= 1]))(V(m, n))
    yield "pos(x) in the objective", lambda m: (lambda x: (
        m.Minimize(m.sum(m.pos(x - x0))), [m.abs(x) <= 1]))(V(m, n))
    yield "maximum(x, 0) <= 0.5", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - x0)), [m.maximum(x, 0) <= 0.5, m.abs(x) <= 1]))(V(m, n))
    yield "pos(x - x0) <= 0.3, neg(x) <= 0.8", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.pos(x - x0) <= 0.3, m.neg(x) <= 0.8]))(V(m, n))
    yield "maximum(x, y, 0.1) <= 0.6, two variables in balls", lambda m: (lambda x, y: (
        m.Minimize(m.sum_squares(x - 2 * x0) + m.sum_squares(y - c)),
        [m.maximum(x, y, 0.1) <= 0.6, m.norm(x, 2) <= 3, m.norm(y, 2) <= 3]))(V(m, n), V(m, n))
    yield "minimum(x, w) >= -0.3 with a ball", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x + 2 * x0)), [m.minimum(x, w) >= -0.3, m.norm(x, 2) <= 3]))(V(m, n))
    yield "maximum(X, v) <= T broadcast (5, 6), (6,), (5, 1)", lambda m: (lambda X, v: (
        m.Minimize(m.sum_squares(X - Y6.T) + m.sum_squares(v - Y6[:, 0])),
        [m.maximum(X, v) <= np.linspace(0.2, 1.0, 5)[:, None], m.norm(X, "fro") <= 5, m.norm(v, 2) <= 3]))(
        V(m, (5, 6)), V(m, 6))
    yield "pos(A @ x - b) <= s, s a Variable (hinge bound)", lambda m: (lambda x, s: (
        m.Minimize(m.sum_squares(x - x0) + 2 * m.sum(s)), [m.pos(A @ x - b) <= s, m.norm_inf(x) <= 1, s <= 10]))(
        V(m, n), V(m, m_rows))
    yield "sum(pos(A @ x - b)) <= t (hinge budget), box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.sum(m.pos(A @ x - b)) <= 1.0, m.abs(x) <= 1]))(V(m, n))
    yield "sum(neg(A @ x - b)) <= t (shortfall), ball", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.sum(m.neg(A @ x - b)) <= 0.5, m.norm(x, 2) <= 3]))(V(m, n))
    yield "sum(maximum(A @ x - b, 0.2)) <= t, box", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.sum(m.maximum(A @ x - b, 0.2)) <= 2.0, m.abs(x) <= 1]))(V(m, n))
    yield "sum(pos(X - Y), axis=1) <= t, box", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - 2 * Y6)), [m.sum(m.pos(X - Y6), axis=1) <= 0.5, m.abs(X) <= 3]))(V(m, (6, 5)))
    yield "2 * pos(x - x0) + 0.1 <= 0.7 (scaled)", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [2 * m.pos(x - x0) + 0.1 <= 0.7, m.abs(x) <= 2]))(V(m, n))
    yield "-minimum(x, w) / 2 <= 0.2 (scaled concave)", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(x + 2 * x0)), [-m.minimum(x, w) / 2 <= 0.2, m.norm(x, 2) <= 3]))(V(m, n))
    yield "sum_squares(x) <= 1 (a ball written squared)", lambda m: (lambda x: (
        m.Minimize(c @ x), [m.sum_squares(x) <= 1]))(V(m, n))
    yield "norm(x, 2) <= t with t a Variable", lambda m: (lambda x, t: (
        m.Minimize(m.sum_squares(A @ x - b) + t), [m.norm(x, 2) <= t, t <= 1]))(V(m, n), V(m, ()))
    yield "norm1(p * x) <= r, p a Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.norm1(p * x) <= 1.5]))(V(m, n), m.Parameter(value=-2.0))
    yield "norm(x / p, 2) <= r with a box, p a Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.norm(x / p, 2) <= 3, m.abs(x) <= 1]))(V(m, n),
                                                                                      m.Parameter(value=0.5))
    yield "norm2(p * (x - 1)) <= r, x <= 2, x >= -2, p a Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(x - x0) + m.sum(x)), [m.norm2(p * (x - 1.0)) <= 1, x <= 2, x >= -2]))(
        V(m, n), m.Parameter(value=1.5))
    yield "norm1(p * x + c) <= r, p a Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.norm1(p * x + 0.2) <= 1.5]))(V(m, n), m.Parameter(value=-2.0))
    yield "norm(x - q, 2) <= r, q a Parameter (the center)", lambda m: (lambda x, q: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.norm(x - q, 2) <= 0.5]))(V(m, n), m.Parameter(n, value=x0))
    yield "p * norm1(x) <= r, p >= 0 a Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [p * m.norm1(x) <= 1.5]))(
        V(m, n), m.Parameter(nonneg=True, value=2.0))
    yield "p * sum_squares(x) <= r, p >= 0 a Parameter", lambda m: (lambda x, p: (
        m.Minimize(c @ x), [p * m.sum_squares(x) <= 1]))(V(m, n), m.Parameter(nonneg=True, value=4.0))
    yield "p * quad_form(x, P) <= r, sum(x) == 1, x >= 0", lambda m: (lambda x, p: (
        m.Minimize(-c @ x), [p * m.quad_form(x, P) <= 0.2, m.sum(x) == 1, x >= 0]))(
        V(m, n), m.Parameter(nonneg=True, value=2.0))
    yield "norm1(multiply(p, x)) <= r with a box, p a vector Parameter", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.norm1(m.multiply(p, x)) <= 1, m.abs(x) <= 2]))(
        V(m, n), m.Parameter(n, value=w))
    yield "quad_form(x - q, P) <= r alone, q a Parameter", lambda m: (lambda x, q: (
        m.Minimize(c @ x + m.sum_squares(x - x0)), [m.quad_form(x - q, P) <= 0.5]))(
        V(m, n), m.Parameter(n, value=2 * x0))
    yield "norm1(multiply(p, x) + c) <= r alone, p a vector", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [m.norm1(m.multiply(p, x) + 0.2) <= 1]))(
        V(m, n), m.Parameter(n, value=w))
    yield "p * x <= h, p a Parameter of value -1 (unsigned)", lambda m: (lambda x, p: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [p * x <= 0.3, m.norm_inf(x) <= 1]))(V(m, n), m.Parameter(value=-1.0))
    yield "multiply(s, x) <= h, s of mixed sign", lambda m: (lambda x, s: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.multiply(s, x) <= 0.2, m.norm_inf(x) <= 1]))(
        V(m, n), m.Parameter(n, value=w - np.mean(w)))
    yield "norm_inf(p * (x - q)) <= 1, sum(x) == 1", lambda m: (lambda x, p, q: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [m.norm_inf(p * (x - q)) <= 1, m.sum(x) == 1]))(
        V(m, n), m.Parameter(nonneg=True, value=2.0), m.Parameter(n, value=np.zeros(n)))
    yield "x <= 0, sum(x) == -1 (a mirrored simplex)", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [x <= 0, m.sum(x) == -1]))(V(m, n))
    yield "-x >= 0, -sum(x) <= 1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [-x >= 0, -m.sum(x) <= 1]))(V(m, n))
    yield "2x + 1 >= 0, sum(2x + 1) == 3", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [2 * x + 1 >= 0, m.sum(2 * x + 1) == 3]))(V(m, n))
    yield "x <= 0, sum(x[:5]) >= -1, sum(x[5:]) >= -1", lambda m: (lambda x: (
        m.Minimize(m.sum_squares(A @ x - 3 * b)), [x <= 0, m.sum(x[:5]) >= -1, m.sum(x[5:]) >= -1]))(V(m, n))
    yield "X <= 0, sum(X, axis=0) >= -1", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X <= 0, m.sum(X, axis=0) >= -1]))(V(m, (6, 5)))
    yield "X >= -1, [sum(X[i]) <= 0.5 for i]", lambda m: (lambda X: (
        m.Minimize(m.sum_squares(X - Y6)), [X >= -1] + [m.sum(X[i]) <= 0.5 for i in range(6)]))(V(m, (6, 5)))
    yield "-sum(log(x)) + c @ x, 0 <= x <= 1", lambda m: (lambda x: (
        m.Minimize(-m.sum(_log(m, x)) + c @ x), [x >= 0, x <= 1]))(V(m, n))
    yield "-sum(log(x)) + c @ x, x >= 0, sum(x) == 1", lambda m: (lambda x: (
        m.Minimize(-m.sum(_log(m, x)) + c @ x), [x >= 0, m.sum(x) == 1]))(V(m, n))
    yield "fm.L1Ball(x - q, r) alone, q a Parameter", lambda m: (lambda x, q: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [_set(m, "L1Ball", x - q, 1.0)]))(V(m, n), m.Parameter(n, value=x0))
    yield "fm.Box(x - q, -r, r) alone, q a Parameter", lambda m: (lambda x, q: (
        m.Minimize(m.sum_squares(x - 2 * x0)), [_set(m, "Box", x - q, 0.3)]))(V(m, n), m.Parameter(n, value=x0))


def _log(m, x):
    """``log(x)``: CVXPY's atom, or fwmodel's smooth atom of SymPy's log (fm.log is refused: see its message)."""
    if m is fm:
        import sympy

        z = sympy.Symbol("z", positive=True)
        return fm.smooth(sympy.log(z), {z: x})
    return cp.log(x)


def _set(m, kind, e, r):
    """fwmodel's explicit set on ``e``, or CVXPY's constraint for it."""
    if m is fm:
        return fm.L1Ball(e, r) if kind == "L1Ball" else fm.Box(e, -r, r)
    return cp.norm1(e) <= r if kind == "L1Ball" else cp.abs(e) <= r


def _duals(constraints):
    return [getattr(k, "dual_value", None) for k in constraints]


def main():
    warnings.simplefilter("ignore")
    print(f"{'idiom':48s} {'fwmodel':>24s} {'Clarabel':>12s} {'rel gap':>8s}  duals")
    for name, build in idioms():
        try:
            objective, constraints = build(fm)
            prob = fm.Problem(objective, constraints)
            prob.solve(tol=1e-7, feas_tol=1e-7, max_iter=50000)
            ours = (prob.status, prob.value, _duals(constraints), [k.shape if hasattr(k, "shape") else None
                                                                   for k in constraints])
        except fm.ModelError as err:
            ours = ("refused", str(err).split(";")[0][:90], None, None)
        except Exception as err:  # noqa: BLE001 - a survey: report whatever happens
            ours = (f"ERROR {type(err).__name__}", str(err)[:90], None, None)
        try:
            objective, constraints = build(cp)
            ref = cp.Problem(objective, constraints)
            ref.solve(solver=cp.CLARABEL)
            theirs = (ref.status, ref.value, _duals(constraints))
        except Exception as err:  # noqa: BLE001
            theirs = (f"cvxpy: {type(err).__name__}", None, None)
        if ours[0] in ("refused",) or ours[0].startswith("ERROR"):
            print(f"{name:48s} {ours[0]}: {ours[1]}  (CVXPY: {theirs[0]}, {theirs[1]})")
            continue
        gap = abs(ours[1] - theirs[1]) / max(1.0, abs(theirs[1])) if theirs[1] is not None else float("nan")
        marks = []
        for mine, ref_dual in zip(ours[2], theirs[2]):
            if ref_dual is None:
                marks.append("-")
            elif mine is None:
                marks.append("None")
            elif np.shape(mine) != np.shape(ref_dual) and not (np.size(mine) == np.size(ref_dual) == 1):
                marks.append(f"shape {np.shape(mine)} vs {np.shape(ref_dual)}")
            elif np.shape(mine) != np.shape(ref_dual):  # CVXPY's (1,) for some scalar constraints (sum_squares)
                close = np.allclose(np.ravel(mine), np.ravel(ref_dual), rtol=1e-3, atol=1e-4)
                marks.append(f"{'ok' if close else 'differs'} (a scalar; CVXPY's shape {np.shape(ref_dual)})")
            elif np.allclose(mine, ref_dual, rtol=1e-3, atol=1e-4):
                marks.append("ok")
            else:
                marks.append(f"differs ({np.max(np.abs(np.asarray(mine) - ref_dual)):.2g})")
        print(f"{name:48s} {ours[0]:>9s} {ours[1]:14.6g} {theirs[1]:12.6g} {gap:8.1e}  {', '.join(marks)}")


if __name__ == "__main__":
    main()
