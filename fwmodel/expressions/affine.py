"""Affine operations, the functions that build them, and :func:`linearize`.

Every node here is affine in its arguments: sums, constant scalings, matrix
products with a constant, and the "selection" operations (indexing, fancy
indexing, transpose, reshape, stacking) that only move entries around. The
compiler turns an affine expression into ``A @ v + c`` with :func:`linearize`;
the selection operations become selection matrices built with NumPy index
arithmetic, never with a Python loop over entries.
"""
from __future__ import annotations

import builtins
import numbers
import operator
import warnings

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from .core import (
    AFFINE,
    CONSTANT,
    PREC_ADD,
    PREC_ATOM,
    PREC_MUL,
    PREC_NEG,
    PREC_POSTFIX,
    Constant,
    Expression,
    Variable,
    add_curvatures,
    as_dense,
    as_expression,
    broadcast_shapes,
    constant_sign,
    flip_curvature,
    flip_sign,
    product_sign,
    scale_curvature,
    shape_size,
    short_repr,
    sum_sign,
    uniform_value,
)


# --------------------------------------------------------------------------
# Broadcasting helpers
# --------------------------------------------------------------------------
def unbroadcast(G, shape):
    """Sum the gradient ``G`` (of a broadcast result) back to an argument's ``shape``."""
    if G.shape == shape:
        return G
    lead = G.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and G.shape[lead + i] != 1
    )
    w = uniform_value(G)
    if w is not None:
        count = G.size // max(shape_size(shape), 1)
        return np.broadcast_to(np.float64(w * count), shape)
    return np.sum(G, axis=axes).reshape(shape)


def broadcast_index(shape, out_shape):
    """Flat indices into an array of ``shape`` for each entry of its broadcast to ``out_shape``."""
    return np.broadcast_to(np.arange(shape_size(shape)).reshape(shape), out_shape).ravel()


# --------------------------------------------------------------------------
# Linear forms: what linearize() propagates through the DAG
# --------------------------------------------------------------------------
class LinearForm:
    """The map ``v -> A @ v + c`` giving the flat (C-order) entries of one node.

    ``A`` is stored either as a *selection* (each row has exactly one entry:
    column ``cols[i]`` with coefficient ``coef[i]``, or 1 when ``coef`` is
    None), which is what variables, indexing, transposes and scalings
    produce, or as a CSR matrix ``mat`` once rows combine several entries.
    Selections compose by indexing their ``cols`` array, so long chains of
    selections cost O(entries) and no sparse matrix products.
    ``const`` is None for a zero offset.
    """

    __slots__ = ("size", "n", "cols", "coef", "mat", "const")

    def __init__(self, size, n, cols=None, coef=None, mat=None, const=None):
        self.size = size
        self.n = n
        self.cols = cols
        self.coef = coef
        self.mat = mat
        self.const = const

    @classmethod
    def constant(cls, value, n):
        const = np.array(as_dense(value), dtype=float).ravel()
        return cls(const.size, n, const=const)

    @property
    def is_selection(self):
        return self.cols is not None

    @property
    def has_linear(self):
        return self.cols is not None or self.mat is not None

    def take(self, rows):
        """The form of the entries ``rows`` (an index array), in that order."""
        rows = np.asarray(rows, dtype=np.intp).ravel()
        return LinearForm(
            rows.size,
            self.n,
            cols=None if self.cols is None else self.cols[rows],
            coef=None if self.coef is None else self.coef[rows],
            mat=None if self.mat is None else self.mat[rows],
            const=None if self.const is None else self.const[rows],
        )

    def scaled(self, w):
        """Rows multiplied by ``w`` (a number or one weight per row)."""
        if np.ndim(w) == 0:
            w = float(w)
            if w == 1.0:
                return self
            coef = None
            if self.cols is not None:
                coef = np.full(self.size, w) if self.coef is None else self.coef * w
            mat = None if self.mat is None else self.mat * w
        else:
            w = np.asarray(w, dtype=float).ravel()
            coef = None
            if self.cols is not None:
                coef = w.copy() if self.coef is None else self.coef * w
            mat = None
            if self.mat is not None:
                m = self.mat
                data = m.data * np.repeat(w, np.diff(m.indptr))
                mat = sp.csr_matrix((data, m.indices, m.indptr), shape=m.shape)
        const = None if self.const is None else self.const * w
        return LinearForm(self.size, self.n, cols=self.cols, coef=coef, mat=mat, const=const)

    def plus(self, other):
        """Entrywise sum of two forms of the same size."""
        if not self.has_linear:
            lin = other
        elif not other.has_linear:
            lin = self
        else:
            lin = LinearForm(self.size, self.n, mat=self.to_csr() + other.to_csr())
        if self.const is None:
            const = other.const
        elif other.const is None:
            const = self.const
        else:
            const = self.const + other.const
        return LinearForm(self.size, self.n, cols=lin.cols, coef=lin.coef, mat=lin.mat, const=const)

    def left_multiply(self, M):
        """The form of ``M @ entries`` for a sparse matrix ``M`` with ``self.size`` columns."""
        M = sp.csr_matrix(M)
        mat = M @ self.to_csr() if self.has_linear else None
        const = None if self.const is None else np.asarray(M @ self.const).ravel()
        return LinearForm(M.shape[0], self.n, mat=None if mat is None else sp.csr_matrix(mat), const=const)

    def aggregate(self, out_index, out_size):
        """Row ``i`` of the result is the sum of the rows ``r`` with ``out_index[r] == i``."""
        out_index = np.asarray(out_index, dtype=np.intp).ravel()
        const = None
        if self.const is not None:
            const = np.bincount(out_index, weights=self.const, minlength=out_size)
        mat = None
        if self.cols is not None:
            data = np.ones(self.size) if self.coef is None else self.coef
            # COO -> CSR sums duplicates: one pass, no matrix product.
            mat = sp.csr_matrix((data, (out_index, self.cols)), shape=(out_size, self.n))
        elif self.mat is not None:
            M = sp.csr_matrix(
                (np.ones(self.size), (out_index, np.arange(self.size))), shape=(out_size, self.size)
            )
            mat = sp.csr_matrix(M @ self.mat)
        return LinearForm(out_size, self.n, mat=mat, const=const)

    @staticmethod
    def stack(forms, n):
        """Forms one after the other (rows concatenated)."""
        size = builtins.sum(f.size for f in forms)
        if all(f.is_selection or not f.has_linear for f in forms):
            # Constant rows become zero-coefficient selections (dropped later
            # by eliminate_zeros), so the stack stays a cheap selection.
            cols = np.concatenate([f.cols if f.is_selection else np.zeros(f.size, np.intp) for f in forms])
            coef = None
            if any(f.coef is not None or not f.is_selection for f in forms):
                coef = np.concatenate(
                    [
                        (np.ones(f.size) if f.coef is None else f.coef) if f.is_selection else np.zeros(f.size)
                        for f in forms
                    ]
                )
            lin = dict(cols=cols, coef=coef)
        else:
            lin = dict(mat=sp.csr_matrix(sp.vstack([f.to_csr() for f in forms], format="csr")))
        const = None
        if any(f.const is not None for f in forms):
            const = np.concatenate([np.zeros(f.size) if f.const is None else f.const for f in forms])
        return LinearForm(size, n, const=const, **lin)

    def to_csr(self):
        """The matrix ``A`` in CSR format, shape ``(size, n)``."""
        if self.cols is not None:
            data = np.ones(self.size) if self.coef is None else self.coef
            return sp.csr_matrix(
                (data, self.cols, np.arange(self.size + 1)), shape=(self.size, self.n)
            )
        if self.mat is not None:
            return self.mat
        return sp.csr_matrix((self.size, self.n))


def linearize(expr, var_offsets, n_total):
    """Write an affine expression as ``A @ v + c``.

    Parameters
    ----------
    expr : Expression
        An affine expression.
    var_offsets : dict
        ``{var.id: offset}``: where each variable's C-order entries start in
        the flat vector ``v`` of length ``n_total``.
    n_total : int
        Length of ``v``.

    Returns
    -------
    A : scipy.sparse.csr_matrix, shape ``(expr.size, n_total)``
    c : ndarray, shape ``(expr.size,)``
        With ``expr.value.ravel() == A @ v + c``. Parameters contribute their
        current values.
    """
    expr = as_expression(expr)
    if not expr.is_affine():
        raise ModelError(f"linearize: {short_repr(expr)} is not affine (curvature {expr.curvature})")
    n_total = int(n_total)
    values = {}  # node values of constant subtrees
    forms = {}  # linear forms of nodes with variables
    for node in expr._postorder():
        if not node._has_vars:
            if node.is_leaf:
                val = node._leaf_data()
                if val is None:
                    raise ModelError(f"linearize: parameter '{node.name}' has no value")
            else:
                val = node._forward([values[id(a)] for a in node.args])
            values[id(node)] = val
        elif isinstance(node, Variable):
            try:
                offset = int(var_offsets[node.id])
            except KeyError:
                raise ModelError(
                    f"linearize: variable '{node.name}' (id {node.id}) has no offset in var_offsets"
                ) from None
            if offset < 0 or offset + node.size > n_total:
                raise ModelError(
                    f"linearize: variable '{node.name}' at offset {offset} (size {node.size}) "
                    f"does not fit in a vector of length {n_total}"
                )
            forms[id(node)] = LinearForm(node.size, n_total, cols=offset + np.arange(node.size))
        else:
            forms[id(node)] = node._linearize(
                [forms.get(id(a)) for a in node.args], [values.get(id(a)) for a in node.args]
            )
    if not expr._has_vars:
        form = LinearForm.constant(values[id(expr)], n_total)
    else:
        form = forms[id(expr)]
    A = sp.csr_matrix(form.to_csr())
    A.eliminate_zeros()
    c = np.zeros(expr.size) if form.const is None else np.asarray(form.const, dtype=float)
    return A, c


def _form_or_constant(form, value, n):
    return form if form is not None else LinearForm.constant(value, n)


def _n_of(forms):
    for f in forms:
        if f is not None:
            return f.n
    raise AssertionError("a node with variables has an argument with variables")


# --------------------------------------------------------------------------
# Sums and negation
# --------------------------------------------------------------------------
def _is_scalar_zero(expr):
    return (
        isinstance(expr, Constant)
        and not expr.is_sparse
        and expr.name is None
        and expr.shape == ()
        and float(expr._data) == 0.0
    )


class AddExpression(Expression):
    """``sum_i sign_i * args[i]`` with NumPy broadcasting (n-ary, signs +-1)."""

    _writes_out = True
    _prec = PREC_ADD

    def _sign_rule(self, signs):
        return sum_sign(sg if k > 0 else flip_sign(sg) for sg, k in zip(signs, self.signs))

    def __init__(self, args, signs):
        args = [as_expression(a) for a in args]
        shape = broadcast_shapes(args, "cannot add or subtract")
        super().__init__(args, shape)
        self.signs = tuple(int(s) for s in signs)

    def _forward(self, vals, out=None):
        """The sum; written into ``out`` (an array of ``self.shape``) when given."""
        signs = self.signs
        if out is not None:
            if signs[0] > 0:
                (np.add if signs[1] > 0 else np.subtract)(vals[0], vals[1], out=out)
            else:
                np.negative(vals[0], out=out)
                (np.add if signs[1] > 0 else np.subtract)(out, vals[1], out=out)
            for val, sign in zip(vals[2:], signs[2:]):
                (np.add if sign > 0 else np.subtract)(out, val, out=out)
            return out
        first, sign = vals[0], signs[0]
        result = first if sign > 0 else np.negative(first)
        owned = sign < 0
        for val, sign in zip(vals[1:], signs[1:]):
            ufunc = np.add if sign > 0 else np.subtract
            if owned and isinstance(result, np.ndarray) and result.shape == self._shape:
                ufunc(result, val, out=result)  # reuse our own temporary
            else:
                result = ufunc(result, val)
                owned = True
        return result

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        return [
            (unbroadcast(G, a.shape), s * sign) if need else None
            for a, sign, need in zip(self.args, self.signs, needs)
        ]

    def _tangent(self, vals, dargs):
        out = None
        for d, sign in zip(dargs, self.signs):
            if d is None:
                continue
            if out is None:
                out = d if sign > 0 else np.negative(d)
            else:
                out = out + d if sign > 0 else out - d
        if out is not None and np.shape(out) != self._shape:
            out = np.broadcast_to(out, self._shape)
        return out

    def _linearize(self, forms, vals):
        n = _n_of(forms)
        total = None
        for a, form, val, sign in zip(self.args, forms, vals, self.signs):
            form = _form_or_constant(form, val, n)
            if a.shape != self._shape:
                form = form.take(broadcast_index(a.shape, self._shape))
            form = form.scaled(sign)
            total = form if total is None else total.plus(form)
        return total

    def _curvature_rule(self, curvatures):
        if not self._has_vars:
            return CONSTANT
        return add_curvatures(c if s > 0 else flip_curvature(c) for c, s in zip(curvatures, self.signs))

    def _repr(self, texts):
        parts = []
        for i, (a, text, sign) in enumerate(zip(self.args, texts, self.signs)):
            if isinstance(a, Constant) and a._prec == PREC_NEG:  # a negative number
                sign, text = -sign, text.lstrip("-")
            if i == 0:
                parts.append(text if sign > 0 else "-" + self._wrap(a, text, PREC_NEG))
            else:
                parts.append((" + " if sign > 0 else " - ") + self._wrap(a, text, PREC_ADD + 1))
        return "".join(parts)


class NegExpression(Expression):
    """``-arg``."""

    _writes_out = True
    _prec = PREC_NEG

    def _sign_rule(self, signs):
        return flip_sign(signs[0])

    def __init__(self, arg):
        arg = as_expression(arg)
        super().__init__([arg], arg.shape)

    def _forward(self, vals, out=None):
        return np.negative(vals[0], out=out)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        return [(G, -s)]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else np.negative(dargs[0])

    def _linearize(self, forms, vals):
        return forms[0].scaled(-1.0)

    def _curvature_rule(self, curvatures):
        return flip_curvature(curvatures[0])

    def _repr(self, texts):
        return "-" + self._wrap(self.args[0], texts[0], PREC_NEG)


def add(a, b, sign=1):
    """``a + b`` (``sign=1``) or ``a - b`` (``sign=-1``), flattening nested sums."""
    a, b = as_expression(a), as_expression(b)
    terms = []
    for expr, s in ((a, 1), (b, sign)):
        if isinstance(expr, AddExpression):
            terms.extend((t, s * ts) for t, ts in zip(expr.args, expr.signs))
        elif _is_scalar_zero(expr):
            continue  # Python's sum() starts from 0
        else:
            terms.append((expr, s))
    if not terms:
        return Constant(0.0)
    if len(terms) == 1:
        expr, s = terms[0]
        return expr if s > 0 else negate(expr)
    return AddExpression([t for t, _ in terms], [s for _, s in terms])


def negate(a):
    """``-a``, folding double negations and plain constants."""
    a = as_expression(a)
    if isinstance(a, NegExpression):
        return a.args[0]
    if isinstance(a, Constant) and a.name is None:
        return Constant(-a._data)
    return NegExpression(a)


# --------------------------------------------------------------------------
# Products with constants
# --------------------------------------------------------------------------
def _nonconvex_product(a, b, op):
    return ModelError(
        f"cannot form {short_repr(a)} {op} {short_repr(b)}: both sides depend on variables. "
        "The objective must be convex; use fm.quad_form(x, P) or fm.sum_squares(expr) "
        "for quadratic terms."
    )


class MultiplyExpression(Expression):
    """Elementwise ``a * b`` with broadcasting; at most one side has variables."""

    _writes_out = True
    _prec = PREC_MUL
    _op = "*"

    def _sign_rule(self, signs):
        return product_sign(*signs)

    def __init__(self, a, b):
        a, b = as_expression(a), as_expression(b)
        shape = broadcast_shapes([a, b], self._op)
        super().__init__([a, b], shape)
        # Position of the side with variables (0 when neither has any).
        self._vpos = 1 if (b._has_vars and not a._has_vars) else 0

    def _coef(self, vals):
        """The constant factor multiplying the side with variables."""
        return vals[1 - self._vpos]

    def _forward(self, vals, out=None):
        return np.multiply(vals[0], vals[1], out=out)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        x = self.args[self._vpos]
        c = self._coef(vals)
        k = uniform_value(c)
        if k is not None:
            grad, scale = unbroadcast(G, x.shape), s * k
        else:
            grad, scale = unbroadcast(np.multiply(G, c), x.shape), s
        result = [None, None]
        result[self._vpos] = (grad, scale)
        return result

    def _tangent(self, vals, dargs):
        d = dargs[self._vpos]
        return None if d is None else np.multiply(d, self._coef(vals))

    def _linearize(self, forms, vals):
        x = self.args[self._vpos]
        form = forms[self._vpos]
        if x.shape != self._shape:
            form = form.take(broadcast_index(x.shape, self._shape))
        c = np.asarray(as_dense(self._coef(vals)))
        k = uniform_value(c)
        return form.scaled(k if k is not None else np.broadcast_to(c, self._shape).ravel())

    def _curvature_rule(self, curvatures):
        if not self._has_vars:
            return CONSTANT
        cx = curvatures[self._vpos]
        if cx == AFFINE:
            return AFFINE
        return scale_curvature(cx, constant_sign(self.args[1 - self._vpos]))

    def _repr(self, texts):
        a, b = self.args
        return f"{self._wrap(a, texts[0], PREC_MUL)} {self._op} {self._wrap(b, texts[1], PREC_MUL + 1)}"


class DivideExpression(MultiplyExpression):
    """Elementwise ``a / b`` for a constant ``b``."""

    _op = "/"

    def _sign_rule(self, signs):
        # 1 / b has the sign of b (a zero divisor gives no sign)
        return product_sign(signs[0], "unknown" if signs[1] == "zero" else signs[1])

    def __init__(self, a, b):
        super().__init__(a, b)
        self._vpos = 0

    def _coef(self, vals):
        return 1.0 / vals[1]

    def _forward(self, vals, out=None):
        return np.divide(vals[0], vals[1], out=out)

    def _check_parameter_domain(self):
        """A divisor that depends on an fm.Parameter must be nonzero at each solve (``expressions.domains``)."""
        from .domains import data_value, describe_parameters

        divisor = self.args[1]
        if not divisor._has_params or divisor._has_vars:
            return
        value = data_value(divisor)
        if value is not None and np.any(value == 0):
            where = "" if value.ndim == 0 else f" in {int(np.count_nonzero(value == 0))} of its {value.size} entries"
            raise ModelError(f"{short_repr(self)}: division by zero: the divisor {short_repr(divisor)} is 0{where} at "
                             f"this solve ({describe_parameters(divisor)}); give the parameters values for which "
                             "it is nonzero")
        if value is not None:
            tiny = _tiny_divisor(value)
            if tiny is not None:
                raise ModelError(f"{short_repr(self)}: the divisor {short_repr(divisor)} is {tiny} at this solve "
                                 f"({describe_parameters(divisor)}), {_TINY_WHY}; give the parameters values "
                                 "of a larger magnitude, or rescale the model")


#: why a divisor below 1 / MAX_DATA_MAGNITUDE is refused (its coefficient 1 / q would be data beyond the limit)
_TINY_WHY = ("so the coefficient 1 / divisor exceeds 1e100 in magnitude (the limit on data: FW-AL squares "
             "distances and gradients, and beyond it those squares overflow float64)")


def _tiny_divisor(value):
    """Text for the first nonzero entry of a divisor whose reciprocal exceeds ``MAX_DATA_MAGNITUDE``, else None."""
    from ..sets._common import MAX_DATA_MAGNITUDE  # (lazily: sets import expressions)

    value = np.asarray(value, dtype=float)
    small = (value != 0) & (np.abs(value) * MAX_DATA_MAGNITUDE < 1.0)
    if not small.any():
        return None
    if value.ndim == 0:
        return f"{float(value):g}"
    j = int(np.flatnonzero(small.ravel())[0])
    return f"{float(value.ravel()[j]):g} in {int(small.sum())} of its {value.size} entries (first at flat index {j})"


def multiply(a, b, _op="multiply"):
    """Elementwise product ``a * b`` with NumPy broadcasting; one side must be constant."""
    a, b = as_expression(a), as_expression(b)
    if a._has_vars and b._has_vars:
        raise _nonconvex_product(a, b, "*")
    for one, other in ((a, b), (b, a)):
        # Fold the scalar 1 (for instance from a weight of 1).
        if isinstance(one, Constant) and one.name is None and one.shape == () and float(one._data) == 1.0:
            return other
    return MultiplyExpression(a, b)


def divide(a, b):
    """Elementwise ``a / b``; ``b`` must be constant and nonzero."""
    a, b = as_expression(a), as_expression(b)
    if b._has_vars:
        raise ModelError(
            f"cannot form {short_repr(a)} / {short_repr(b)}: division by an expression with variables. "
            "The objective must be convex; use fm.quad_form / fm.sum_squares for quadratic terms."
        )
    if isinstance(b, Constant) and not b.is_sparse and np.any(b._data == 0):
        raise ModelError(f"cannot form {short_repr(a)} / {short_repr(b)}: division by zero")
    if isinstance(b, Constant) and not b.is_sparse:
        tiny = _tiny_divisor(b._data)
        if tiny is not None:
            raise ModelError(f"cannot form {short_repr(a)} / {short_repr(b)}: the divisor is {tiny}, {_TINY_WHY}; "
                             "rescale the model")
    return DivideExpression(a, b)


def _matmul_shape(a, b):
    sa, sb = a.shape, b.shape
    if len(sa) == 0 or len(sb) == 0:
        raise ModelError(
            f"{short_repr(a)} @ {short_repr(b)}: '@' needs operands with at least one dimension "
            "(use '*' to multiply by a scalar)"
        )
    if len(sa) > 2 or len(sb) > 2:
        raise ModelError(
            f"{short_repr(a)} @ {short_repr(b)}: '@' supports 1-D and 2-D operands, got shapes {sa} and {sb}"
        )
    inner_b = sb[0] if len(sb) == 1 else sb[-2]
    if sa[-1] != inner_b:
        raise ModelError(
            f"{short_repr(a)} @ {short_repr(b)}: shapes {sa} and {sb} are not aligned "
            f"({sa[-1]} != {inner_b})"
        )
    return sa[:-1] + sb[1:]


class MatMulExpression(Expression):
    """Matrix product ``a @ b`` (1-D or 2-D) where one side is constant.

    A scipy.sparse constant stays sparse in every evaluation.
    """

    _prec = PREC_MUL
    _keeps_sparse = True

    def _sign_rule(self, signs):
        return product_sign(*signs)  # each entry sums same-signed products

    def __init__(self, a, b):
        a, b = as_expression(a), as_expression(b)
        super().__init__([a, b], _matmul_shape(a, b))
        self._vpos = 1 if (b._has_vars and not a._has_vars) else 0

    def _forward(self, vals):
        left, right = vals
        if sp.issparse(right):
            # x @ S computed as (S.T @ x.T).T so that S stays sparse.
            out = right.T @ np.asarray(left).T
            out = out.T
        else:
            out = left @ right
        if sp.issparse(out):  # a product of two sparse constants
            out = out.toarray()
        return np.asarray(out)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        left, right = vals
        x = self.args[self._vpos]
        if self._vpos == 1:  # d(L @ X)/dX: L.T @ G
            L2 = left if sp.issparse(left) else np.reshape(left, (1, -1)) if left.ndim == 1 else left
            k = 1 if x.ndim == 1 else x.shape[1]
            G2 = np.ascontiguousarray(np.reshape(G, (L2.shape[0], k)))
            grad = L2.T @ G2
        else:  # d(X @ R)/dX: G @ R.T
            R2 = right if sp.issparse(right) else np.reshape(right, (-1, 1)) if right.ndim == 1 else right
            m = 1 if x.ndim == 1 else x.shape[0]
            G2 = np.ascontiguousarray(np.reshape(G, (m, R2.shape[1])))
            grad = (R2 @ G2.T).T if sp.issparse(R2) else G2 @ R2.T
        result = [None, None]
        result[self._vpos] = (np.asarray(grad).reshape(x.shape), s)
        return result

    def _tangent(self, vals, dargs):
        d = dargs[self._vpos]
        if d is None:
            return None
        return self._forward([vals[0], d] if self._vpos == 1 else [d, vals[1]])

    def _linearize(self, forms, vals):
        x = self.args[self._vpos]
        form = forms[self._vpos]
        if self._vpos == 1:  # vec(L X) = kron(L, I_k) vec(X) in C order
            L = vals[0]
            L2 = sp.csr_matrix(L if sp.issparse(L) or L.ndim == 2 else np.reshape(L, (1, -1)))
            k = 1 if x.ndim == 1 else x.shape[1]
            M = L2 if k == 1 else sp.kron(L2, sp.identity(k, format="csr"), format="csr")
        else:  # vec(X R) = kron(I_m, R.T) vec(X)
            R = vals[1]
            R2 = sp.csr_matrix(R if sp.issparse(R) or R.ndim == 2 else np.reshape(R, (-1, 1)))
            m = 1 if x.ndim == 1 else x.shape[0]
            M = R2.T.tocsr() if m == 1 else sp.kron(sp.identity(m, format="csr"), R2.T, format="csr")
        return form.left_multiply(M)

    def _curvature_rule(self, curvatures):
        if not self._has_vars:
            return CONSTANT
        cx = curvatures[self._vpos]
        if cx == AFFINE:
            return AFFINE
        return scale_curvature(cx, constant_sign(self.args[1 - self._vpos]))

    def _repr(self, texts):
        a, b = self.args
        return f"{self._wrap(a, texts[0], PREC_MUL)} @ {self._wrap(b, texts[1], PREC_MUL + 1)}"


def matmul(a, b):
    """Matrix product ``a @ b`` (NumPy rules for 1-D and 2-D); one side must be constant."""
    a, b = as_expression(a), as_expression(b)
    if a._has_vars and b._has_vars:
        raise _nonconvex_product(a, b, "@")
    return MatMulExpression(a, b)


# --------------------------------------------------------------------------
# Selections: indexing, transpose, reshape
# --------------------------------------------------------------------------
def _normalize_key(expr, key):
    """Return ``(key, basic)`` with lists turned into arrays; reject expressions."""
    if not isinstance(key, tuple):
        key = (key,)
    parts = []
    basic = True
    for k in key:
        if isinstance(k, Expression):
            raise ModelError(
                f"{short_repr(expr)}[{short_repr(k)}]: indices must be constant (ints, slices, integer arrays), "
                "not expressions"
            )
        if k is None or k is Ellipsis or isinstance(k, slice):
            parts.append(k)
        elif isinstance(k, (bool, np.bool_)):
            basic = False
            parts.append(k)
        elif isinstance(k, (numbers.Integral, np.integer)):
            parts.append(int(k))
        else:
            arr = np.asarray(k)
            if arr.size == 0 and arr.dtype.kind == "f":  # x[[]] selects nothing, as in NumPy
                arr = arr.astype(np.intp)
            if arr.dtype.kind not in "iub":
                raise IndexError(
                    f"{short_repr(expr)}[...]: indices must be ints, slices, or integer or boolean arrays, got {k!r}"
                )
            basic = False
            parts.append(arr)
    return tuple(parts), basic


def _format_key(key):
    def one(k):
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        if isinstance(k, slice):
            text = ("" if k.start is None else str(k.start)) + ":" + ("" if k.stop is None else str(k.stop))
            return text + ("" if k.step is None else f":{k.step}")
        if isinstance(k, np.ndarray):
            if k.size <= 6:
                return str(k.tolist())
            return f"<{k.dtype} array{k.shape}>"
        return str(k)

    return ", ".join(one(k) for k in key)


class IndexExpression(Expression):
    """``arg[key]`` with NumPy indexing: ints, slices, None, ``...``, integer and boolean arrays."""

    _prec = PREC_POSTFIX

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, arg, key):
        arg = as_expression(arg)
        key, basic = _normalize_key(arg, key)
        # The result shape, from a zero-strided stand-in (no memory of arg's size).
        dummy = np.lib.stride_tricks.as_strided(
            np.zeros(1), shape=arg.shape, strides=(0,) * arg.ndim, writeable=False
        )
        try:
            shape = dummy[key].shape
        except IndexError as err:
            raise IndexError(
                f"{short_repr(arg)}[{_format_key(key)}]: {err} (the expression has shape {arg.shape})"
            ) from None
        super().__init__([arg], shape)
        self.key = key
        self._basic = basic
        self._flat = None

    @property
    def flat_index(self):
        """Flat (C-order) positions in the argument of the result's entries, in C order."""
        if self._flat is None:
            arg = self.args[0]
            self._flat = np.ascontiguousarray(np.arange(arg.size).reshape(arg.shape)[self.key]).ravel()
        return self._flat

    def _forward(self, vals):
        return vals[0][self.key]

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        arg = self.args[0]
        if self._basic:  # each entry selected at most once: scatter by assignment
            grad = np.zeros(arg.shape)
            grad[self.key] = G
            return [(grad, s)]
        w = uniform_value(G)
        if w is not None:
            grad = np.bincount(self.flat_index, minlength=arg.size).astype(float)
            return [(grad.reshape(arg.shape), s * w)]
        grad = np.bincount(self.flat_index, weights=np.ravel(G), minlength=arg.size)
        return [(grad.reshape(arg.shape), s)]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else dargs[0][self.key]

    def _linearize(self, forms, vals):
        return forms[0].take(self.flat_index)

    def _curvature_rule(self, curvatures):
        return curvatures[0]

    def _repr(self, texts):
        return f"{self._wrap(self.args[0], texts[0], PREC_POSTFIX)}[{_format_key(self.key)}]"


def index(expr, key):
    """``expr[key]`` with NumPy indexing semantics."""
    return IndexExpression(expr, key)


class TransposeExpression(Expression):
    """Axes permuted as ``numpy.transpose(arg, axes)``."""

    _prec = PREC_POSTFIX

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, arg, axes):
        arg = as_expression(arg)
        super().__init__([arg], tuple(arg.shape[a] for a in axes))
        self.axes = tuple(axes)
        self._inverse = tuple(int(i) for i in np.argsort(self.axes))

    def _forward(self, vals):
        return np.transpose(vals[0], self.axes)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        return [(np.transpose(G, self._inverse), s)]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else np.transpose(dargs[0], self.axes)

    def _linearize(self, forms, vals):
        arg = self.args[0]
        perm = np.arange(arg.size).reshape(arg.shape).transpose(self.axes).ravel()
        return forms[0].take(perm)

    def _curvature_rule(self, curvatures):
        return curvatures[0]

    def _repr(self, texts):
        if self.axes == tuple(reversed(range(len(self.axes)))):
            return f"{self._wrap(self.args[0], texts[0], PREC_POSTFIX)}.T"
        return f"transpose({texts[0]}, {self.axes})"


def transpose(expr, axes=None):
    """Permute the axes of ``expr`` (reverse them when ``axes`` is None)."""
    expr = as_expression(expr)
    ndim = expr.ndim
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    else:
        try:
            axes = tuple(operator.index(a) for a in axes)
        except TypeError:
            raise ModelError(f"transpose({short_repr(expr)}): axes must be ints, got {axes!r}") from None
        if sorted(a % ndim if -ndim <= a < ndim else -1 for a in axes) != list(range(ndim)):
            raise ModelError(
                f"transpose({short_repr(expr)}): axes {axes} are not a permutation of the {ndim} axes"
            )
        axes = tuple(a % ndim for a in axes)
    if axes == tuple(range(ndim)):
        return expr
    return TransposeExpression(expr, axes)


class ReshapeExpression(Expression):
    """The entries of ``arg`` in C order, in a new shape."""

    _prec = PREC_ATOM

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, arg, shape):
        arg = as_expression(arg)
        super().__init__([arg], shape)

    def _forward(self, vals):
        return np.reshape(vals[0], self._shape)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        shape = self.args[0].shape
        w = uniform_value(G)
        if w is not None and G.ndim:
            return [(np.broadcast_to(np.float64(w), shape), s)]
        return [(np.reshape(G, shape), s)]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else np.reshape(dargs[0], self._shape)

    def _linearize(self, forms, vals):
        return forms[0]  # C-order flattening is unchanged by a reshape

    def _curvature_rule(self, curvatures):
        return curvatures[0]

    def _repr(self, texts):
        return f"reshape({texts[0]}, {self._shape})"


#: what ``fm.reshape`` (and ``expr.reshape``, ``expr.flatten``) says when ``order`` is not given: the
#: entries are read column by column (order='F') as CVXPY 1.x reads them, a default CVXPY has announced
#: will become NumPy's row by row (order='C')
RESHAPE_ORDER_MESSAGE = (
    "reshape without order=: fwmodel reads and writes the entries column by column (order='F'), as CVXPY 1.x "
    "does by default, which CVXPY says will change to row by row (order='C', NumPy's default); "
    "pass order='F' or order='C' explicitly (this warning then goes away)")


def reshape(expr, shape, order=None, _stacklevel=2):
    """Reshape ``expr`` to ``shape`` (one entry may be -1), as ``cvxpy.reshape``: column by column
    (``order="F"``, Fortran order) or row by row (``order="C"``, NumPy's order).

    Without ``order`` it reads F order, CVXPY 1.x's default, and warns (a ``FutureWarning``, as CVXPY's
    own ``reshape`` and ``vec`` do without an order, since CVXPY announced that the default will become
    NumPy's "C"): a model written for CVXPY gets CVXPY's answer, and one that relies on the default is
    ambiguous across versions, so pass ``order`` explicitly.
    """
    if order is None:
        warnings.warn(RESHAPE_ORDER_MESSAGE, FutureWarning, stacklevel=_stacklevel)
        order = "F"
    return _reshape(expr, shape, order)


def _reshape(expr, shape, order="C"):
    """:func:`reshape` without the warning (fwmodel's own reshapes, C order unless told)."""
    expr = as_expression(expr)
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ModelError(f"reshape({short_repr(expr)}): shape must be ints, got {shape!r}") from None
    unknown = [i for i, d in enumerate(shape) if d == -1]
    known = shape_size([d for d in shape if d != -1])
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ModelError(f"reshape({short_repr(expr)}): invalid shape {shape}")
    if unknown:
        if known == 0 or expr.size % known:
            raise ModelError(
                f"cannot reshape {short_repr(expr)} of shape {expr.shape} (size {expr.size}) into shape {shape}"
            )
        shape = shape[: unknown[0]] + (expr.size // known,) + shape[unknown[0] + 1 :]
    if shape_size(shape) != expr.size:
        raise ModelError(
            f"cannot reshape {short_repr(expr)} of shape {expr.shape} (size {expr.size}) into shape {shape}"
        )
    if order == "F":
        return transpose(_reshape(transpose(expr), shape[::-1]))
    if order != "C":
        raise ModelError(f"reshape: order must be 'C' or 'F', got {order!r}")
    if shape == expr.shape:
        return expr
    return ReshapeExpression(expr, shape)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------
def normalize_axes(axis, ndim, owner):
    """``axis`` (None, an int or a tuple of ints) as a sorted tuple of nonnegative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Expression) or not isinstance(axis, (numbers.Integral, np.integer, tuple, list)):
        raise ModelError(f"{owner}: axis must be an int or a tuple of ints, got {axis!r}")
    axes = (axis,) if isinstance(axis, (numbers.Integral, np.integer)) else tuple(axis)
    result = []
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise ModelError(f"{owner}: axis must be an int or a tuple of ints, got {axis!r}") from None
        if not -ndim <= a < ndim:
            raise ModelError(f"{owner}: axis {a} is out of bounds for {ndim} dimensions")
        result.append(a % ndim)
    if len(set(result)) != len(result):
        raise ModelError(f"{owner}: repeated axis in {axis!r}")
    return tuple(sorted(result))


def reduced_shape(shape, axes, keepdims):
    """Shape of a reduction of ``shape`` over ``axes``."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class SumExpression(Expression):
    """Sum of the entries of ``arg`` over ``axes``."""

    _prec = PREC_ATOM

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, arg, axes, keepdims=False):
        arg = as_expression(arg)
        self.axes = tuple(axes)
        self.keepdims = bool(keepdims)
        self._kept_shape = reduced_shape(arg.shape, self.axes, True)
        super().__init__([arg], reduced_shape(arg.shape, self.axes, self.keepdims))

    def _forward(self, vals):
        return np.sum(vals[0], axis=self.axes, keepdims=self.keepdims)

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        G = np.reshape(G, self._kept_shape)
        return [(np.broadcast_to(G, self.args[0].shape), s)]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else np.sum(dargs[0], axis=self.axes, keepdims=self.keepdims)

    def _linearize(self, forms, vals):
        # Entry r of the argument adds into entry out_index[r] of the sum.
        out_index = broadcast_index(self._kept_shape, self.args[0].shape)
        return forms[0].aggregate(out_index, self._size)

    def _repr(self, texts):
        extra = ""
        if self.axes != tuple(range(self.args[0].ndim)):
            extra = f", axis={self.axes[0] if len(self.axes) == 1 else self.axes}"
        if self.keepdims:
            extra += ", keepdims=True"
        return f"sum({texts[0]}{extra})"


def sum(expr, axis=None, keepdims=False):  # noqa: A001 - mirrors numpy.sum / cvxpy.sum
    """Sum of entries over ``axis`` (None: all; an int; or a tuple of ints).

    A list of expressions is summed entry by entry over all of them
    (``axis`` must then be None).
    """
    if isinstance(expr, (list, tuple)) and any(isinstance(e, Expression) for e in expr):
        if axis is not None:
            raise ModelError("fm.sum(list, axis=...): stack the expressions first (fm.vstack / fm.hstack)")
        total = Constant(0.0)
        for e in expr:
            total = add(total, sum(e))
        return total
    expr = as_expression(expr)
    axes = normalize_axes(axis, expr.ndim, f"sum({short_repr(expr)})")
    if not axes and not keepdims:
        return expr
    if len(axes) == expr.ndim and not keepdims and getattr(expr, "kind", None) == "abs":
        # sum(abs(e)) over every entry is norm1(e), exactly: sum(abs(e)) <= t is an L1 ball
        from .nonsmooth import NormAtom, norm_of_abs

        if isinstance(expr, NormAtom):
            return norm_of_abs(expr, "l1", "sum")
    return SumExpression(expr, axes, keepdims)


class TraceExpression(Expression):
    """Sum of the diagonal of a matrix."""

    _prec = PREC_ATOM

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, arg):
        arg = as_expression(arg)
        if arg.ndim != 2:
            raise ModelError(f"trace({short_repr(arg)}): needs a 2-D expression, got shape {arg.shape}")
        if arg.shape[0] != arg.shape[1]:  # as in CVXPY (NumPy would sum a rectangle's diagonal)
            raise ModelError(f"trace({short_repr(arg)}): needs a square matrix, got shape {arg.shape}")
        super().__init__([arg], ())

    def _forward(self, vals):
        return np.trace(vals[0])

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        m, n = self.args[0].shape
        return [(np.eye(m, n), s * uniform_value(G))]

    def _tangent(self, vals, dargs):
        return None if dargs[0] is None else np.trace(dargs[0])

    def _linearize(self, forms, vals):
        m, n = self.args[0].shape
        k = min(m, n)
        diag = np.arange(k) * (n + 1)
        return forms[0].take(diag).aggregate(np.zeros(k, np.intp), 1)

    def _repr(self, texts):
        return f"trace({texts[0]})"


def trace(expr):
    """Trace (sum of the diagonal) of a 2-D expression."""
    return TraceExpression(expr)


# --------------------------------------------------------------------------
# Stacking
# --------------------------------------------------------------------------
class ConcatenateExpression(Expression):
    """Arguments joined along ``axis`` (as ``numpy.concatenate``)."""

    _prec = PREC_ATOM

    def _sign_rule(self, signs):
        return sum_sign(signs)  # adds, selects or rearranges entries: signs carry over

    def __init__(self, args, axis, label="concatenate", display=None):
        args = [as_expression(a) for a in args]
        ndim = args[0].ndim
        for a in args:
            if a.ndim != ndim or any(d != e for i, (d, e) in enumerate(zip(a.shape, args[0].shape)) if i != axis):
                shapes = ", ".join(str(b.shape) for b in args)
                raise ModelError(f"{label}: shapes {shapes} do not match except along axis {axis}")
        shape = list(args[0].shape)
        shape[axis] = int(np.sum([a.shape[axis] for a in args]))
        super().__init__(args, tuple(shape))
        self.axis = axis
        self._label = label
        self._display = tuple(display) if display is not None else None
        self._bounds = np.cumsum([0] + [a.shape[axis] for a in args])

    def _forward(self, vals):
        return np.concatenate([np.asarray(v) for v in vals], axis=self.axis)

    def _piece(self, G, i):
        lead = (slice(None),) * self.axis
        return G[lead + (slice(int(self._bounds[i]), int(self._bounds[i + 1])),)]

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        return [(self._piece(G, i), s) if need else None for i, need in enumerate(needs)]

    def _tangent(self, vals, dargs):
        if all(d is None for d in dargs):
            return None
        parts = [np.zeros(a.shape) if d is None else d for a, d in zip(self.args, dargs)]
        return np.concatenate(parts, axis=self.axis)

    def _linearize(self, forms, vals):
        n = _n_of(forms)
        positions = np.arange(self._size).reshape(self._shape)
        order = np.concatenate([self._piece(positions, i).ravel() for i in range(len(self.args))])
        stacked = LinearForm.stack([_form_or_constant(f, v, n) for f, v in zip(forms, vals)], n)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        return stacked.take(inverse)

    def _repr(self, texts):
        if self._display is not None:
            texts = [repr(a) for a in self._display]
        axis = None if getattr(self, "flattened", False) else self.axis
        extra = f", axis={axis}" if self._label == "concatenate" else ""
        return f"{self._label}([{', '.join(texts)}]{extra})"


def _as_expression_list(exprs, owner):
    if isinstance(exprs, Expression) or not isinstance(exprs, (list, tuple)):
        raise ModelError(f"{owner}: expects a list of expressions")
    if not exprs:
        raise ModelError(f"{owner}: needs at least one expression")
    return [as_expression(e) for e in exprs]


def concatenate(exprs, axis=0):
    """Join expressions along an existing axis (as ``numpy.concatenate``; ``axis=None`` joins them
    flattened in C order, as NumPy does)."""
    exprs = _as_expression_list(exprs, "concatenate")
    if axis is None:  # NumPy's meaning: every expression flattened (C order), then joined end to end
        joined = ConcatenateExpression([_reshape(e, (e.size,)) for e in exprs], 0, label="concatenate",
                                       display=exprs)
        joined.flattened = True
        return joined
    ndim = exprs[0].ndim
    if ndim == 0:
        raise ModelError("concatenate: zero-dimensional expressions cannot be concatenated")
    axis = normalize_axes(axis, ndim, "concatenate")[0]
    return ConcatenateExpression(exprs, axis)


def vstack(exprs):
    """Stack expressions vertically (as ``numpy.vstack``: 1-D rows become 1 x n)."""
    exprs = _as_expression_list(exprs, "vstack")
    parts = [_reshape(e, (1, e.size if e.ndim else 1)) if e.ndim < 2 else e for e in exprs]
    return ConcatenateExpression(parts, 0, label="vstack", display=exprs)


def hstack(exprs):
    """Stack expressions horizontally (as ``numpy.hstack``: 1-D are joined end to end)."""
    exprs = _as_expression_list(exprs, "hstack")
    parts = [_reshape(e, (1,)) if e.ndim == 0 else e for e in exprs]
    axis = 0 if parts[0].ndim == 1 else 1
    return ConcatenateExpression(parts, axis, label="hstack", display=exprs)


# --------------------------------------------------------------------------
# Inner product
# --------------------------------------------------------------------------
class InnerExpression(SumExpression):
    """``<a, b> = sum(a * b)`` over all entries, one side constant (affine)."""

    def __init__(self, product, display):
        super().__init__(product, tuple(range(product.ndim)))
        self._display = display

    def _repr(self, texts):
        a, b = self._display
        return f"inner({a!r}, {b!r})"


def inner(a, b):
    """Inner product ``sum(a * b)`` of two expressions of the same size (one constant)."""
    a, b = as_expression(a), as_expression(b)
    if a._has_vars and b._has_vars:
        raise _nonconvex_product(a, b, "inner")
    if a.size != b.size:
        raise ModelError(
            f"inner({short_repr(a)}, {short_repr(b)}): sizes differ ({a.shape} and {b.shape})"
        )
    if a.shape != b.shape:
        a_flat, b_flat = _reshape(a, (-1,)), _reshape(b, (-1,))
    else:
        a_flat, b_flat = a, b
    return InnerExpression(MultiplyExpression(a_flat, b_flat), (a, b))
