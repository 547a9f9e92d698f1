"""The expression base class, the three kinds of leaves, and shared helpers.

An expression is an immutable directed acyclic graph (DAG): every node holds
its arguments in ``args`` and its ``shape``. Leaves are :class:`Variable`
(the unknowns), :class:`Parameter` (data that may change between solves) and
:class:`Constant` (NumPy arrays, SciPy sparse matrices, Python numbers).

Each node type implements a handful of small methods, used by the three
consumers of an expression:

- ``_forward(vals)``: the node's value from its arguments' values
  (``Expression.value``, :class:`~fwmodel.expressions.evaluate.SmoothFunction`);
- ``_backward(adj, vals, out, aux, needs)``: reverse accumulation of gradients;
- ``_tangent(vals, dargs)``: the linear part of an affine node applied to
  argument tangents (forward mode; used for second directional derivatives);
- ``_linearize(forms, vals)``: the node as ``A @ v + c`` (the compiler's
  consistency matrix, see :func:`~fwmodel.expressions.affine.linearize`);
- ``_curvature_rule(arg_curvatures)``: disciplined convex programming (DCP)
  curvature propagation.

Every walk over a DAG is iterative (see :func:`postorder`), so long chains
such as a Python ``sum`` of thousands of terms never hit the recursion limit,
and shared subexpressions are visited once.
"""
from __future__ import annotations

import itertools
import numbers
import operator

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError, UnknownKeywordError


class LeafName(str):
    """A Variable's or Parameter's name: a str, callable as CVXPY's ``x.name()`` (which returns it)."""

    __slots__ = ()

    def __call__(self):
        return str(self)


def _name_property():
    """``name``, stored as a :class:`LeafName` (``x.name`` reads as before; ``x.name()`` as in CVXPY)."""

    def get(self):
        found = self.__dict__.get("_name")
        if found is None and isinstance(self.__dict__.get("name"), str):  # (pickled before names were LeafNames)
            found = self.__dict__["_name"] = LeafName(self.__dict__["name"])
        return found

    def set(self, value):
        self.__dict__["_name"] = None if value is None else LeafName(value)

    return property(get, set, doc="The name (a str; also callable, ``x.name()``, as in CVXPY).")


# Curvature labels (DCP).
CONSTANT = "constant"
AFFINE = "affine"
CONVEX = "convex"
CONCAVE = "concave"
UNKNOWN = "unknown"

# Operator precedences used by ``__repr__`` to decide on parentheses.
PREC_ADD = 10
PREC_MUL = 20
PREC_NEG = 30
PREC_POSTFIX = 40
PREC_ATOM = 50

# One counter for every leaf, so that ids are unique across variables and
# parameters (the compiler keys its layouts by ``var.id``).
_leaf_ids = itertools.count()


# --------------------------------------------------------------------------
# Small helpers shared by all node types
# --------------------------------------------------------------------------
def normalize_shape(shape, owner="shape"):
    """Return ``shape`` as a tuple of nonnegative ints (an int means 1-D)."""
    if shape is None:
        return ()
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise ModelError(f"{owner}: a shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise ModelError(f"{owner}: shape {dims} has a negative dimension")
    return dims


def shape_size(shape):
    """Number of entries of an array of ``shape`` (1 for shape ())."""
    size = 1
    for d in shape:
        size *= d
    return size


def short_repr(expr, limit=160):
    """``repr(expr)`` cut to ``limit`` characters, for error messages."""
    text = repr(expr)
    if len(text) > limit:
        keep = (limit - 5) // 2
        text = text[:keep] + " ... " + text[-keep:]
    return text


def broadcast_shapes(exprs, what):
    """NumPy broadcasting of the shapes of ``exprs``; ModelError naming them."""
    try:
        return tuple(np.broadcast_shapes(*(e.shape for e in exprs)))
    except ValueError:
        parts = ", ".join(f"{short_repr(e)} (shape {e.shape})" for e in exprs)
        raise ModelError(f"{what}: shapes do not broadcast: {parts}") from None


def postorder(root):
    """Nodes of the DAG under ``root``, each once, arguments before their users.

    Leaves appear in order of first appearance from left to right, which gives
    ``variables()`` and ``parameters()`` their order.
    """
    order = []
    seen = set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for arg in reversed(node.args):
            if id(arg) not in seen:
                stack.append((arg, False))
    return order


def uniform_value(arr):
    """The common value when every entry of ``arr`` is the same stored number.

    True for scalars and for ``np.broadcast_to`` views of a scalar (all strides
    zero), which is how gradients of sums travel; lets atoms scale instead of
    multiplying whole arrays. Returns None otherwise.
    """
    if not isinstance(arr, np.ndarray):
        return float(arr)
    if arr.size == 1 or (arr.size and not any(arr.strides)):
        return float(arr[(0,) * arr.ndim])
    return None


def add_curvatures(curvatures):
    """Curvature of a sum (or a stack) of terms with the given curvatures."""
    curvatures = set(curvatures)
    if UNKNOWN in curvatures or {CONVEX, CONCAVE} <= curvatures:
        return UNKNOWN
    for label in (CONVEX, CONCAVE, AFFINE):
        if label in curvatures:
            return label
    return CONSTANT


def flip_curvature(curvature):
    """Curvature of the negation."""
    return {CONVEX: CONCAVE, CONCAVE: CONVEX}.get(curvature, curvature)


def scale_curvature(curvature, sign):
    """Curvature of ``c * expr`` for a constant ``c`` of the given sign."""
    if curvature in (CONSTANT, AFFINE, UNKNOWN) or sign == "zero":
        return curvature
    if sign == "nonneg":
        return curvature
    if sign == "nonpos":
        return flip_curvature(curvature)
    return UNKNOWN


def value_sign(data):
    """Sign of fixed data (a dense array, a number or a sparse matrix): 'nonneg', 'nonpos', 'zero' or 'unknown'."""
    if sp.issparse(data):
        data = data.data  # the implicit zeros change no sign
    data = np.asarray(data)
    nonneg = bool(np.all(data >= 0))
    nonpos = bool(np.all(data <= 0))
    if nonneg and nonpos:
        return "zero"
    return "nonneg" if nonneg else ("nonpos" if nonpos else "unknown")


def flip_sign(sign):
    """Sign of the negation."""
    return {"nonneg": "nonpos", "nonpos": "nonneg"}.get(sign, sign)


def product_sign(a, b):
    """Sign of a product (elementwise or matrix: a sum of same-signed products) of factors of signs a and b."""
    if "zero" in (a, b):
        return "zero"
    if "unknown" in (a, b):
        return "unknown"
    return "nonneg" if a == b else "nonpos"


def sum_sign(signs):
    """Sign of a sum (or a stack, or a selection) of terms of the given signs."""
    signs = set(signs) - {"zero"}
    if not signs:
        return "zero"
    return signs.pop() if len(signs) == 1 else "unknown"


def constant_sign(expr):
    """Sign of an expression without variables: 'nonneg', 'nonpos', 'zero' or 'unknown'.

    Fixed data (constants, and expressions of constants only) is judged by
    its value, which never changes. A Parameter's value may change after the
    model is built, so, as in CVXPY, its sign is the one it declares
    (``nonneg=True`` / ``nonpos=True``) and is 'unknown' otherwise, whatever
    its current value; an expression of Parameters gets its sign from the
    sign rules of its nodes (``_sign_rule``: ``2 * p`` and ``p[0]`` keep
    the sign of ``p``, ``-p`` flips it, ...). A DCP verdict such as "convex"
    for ``lam * fm.sum_squares(x)`` therefore holds for every value the
    Parameters may take.
    """
    if not expr._has_params:
        if isinstance(expr, Constant) and expr.is_sparse:
            return value_sign(expr._data)
        data = expr.value
        return "unknown" if data is None else value_sign(data)
    signs = {}
    for node in expr._postorder():
        if not node._has_params:
            continue  # judged by value below, only where a node with parameters uses it
        if isinstance(node, Parameter):
            signs[id(node)] = node.declared_sign
            continue
        arg_signs = [signs[id(a)] if a._has_params else constant_sign(a) for a in node.args]
        signs[id(node)] = node._sign_rule(arg_signs)
    return signs[id(expr)]


def evaluate_nodes(order):
    """Values of all nodes in ``order`` (a postorder), or None if a leaf has none."""
    values = {}
    for node in order:
        if node.is_leaf:
            val = node._leaf_data()
            if val is None:
                return None
        else:
            val = node._forward([values[id(a)] for a in node.args])
        values[id(node)] = val
    return values


def as_dense(value):
    """A dense float array from a node value (sparse constants are densified)."""
    if sp.issparse(value):
        return value.toarray()
    return np.asarray(value, dtype=float)


# Types that binary operators accept as constants; anything else makes the
# operator return NotImplemented (so Python raises its usual TypeError).
_CONSTANT_TYPES = (numbers.Number, np.ndarray, np.generic, list, tuple)


def _operand(obj):
    """``obj`` as an Expression for a binary operator, or None if not data."""
    if isinstance(obj, Expression):
        return obj
    if isinstance(obj, _CONSTANT_TYPES) or sp.issparse(obj):
        return Constant(obj)
    return None


def as_expression(obj):
    """Return ``obj`` if it is an Expression, else wrap it in a :class:`Constant`."""
    if isinstance(obj, Expression):
        return obj
    return Constant(obj)


# --------------------------------------------------------------------------
# The base class
# --------------------------------------------------------------------------
class Expression:
    """A node of an expression DAG with a NumPy-like interface.

    Operators follow NumPy semantics: ``*`` is elementwise, ``@`` is the
    matrix product, and shapes broadcast. An expression is never a NumPy
    object array: ``__array_ufunc__ = None`` makes NumPy arrays on the left
    of an operator hand over to the expression's reflected method.
    """

    # NumPy: defer every ufunc (c - x, A @ x, y * x, c == x) to our operators.
    __array_ufunc__ = None
    __array_priority__ = 100.0
    # ``__eq__`` builds constraints, so keep identity hashing explicitly.
    __hash__ = object.__hash__

    #: True for Variable, Parameter and Constant.
    is_leaf = False
    #: True for smooth nonlinear atoms (sum_squares, exp, ...).
    is_atom = False
    #: Nodes that accept scipy.sparse constants as arguments (``@``) set this.
    _keeps_sparse = False
    #: Nodes whose ``_forward(vals, out=...)`` can write into a given array set this.
    _writes_out = False
    _prec = PREC_ATOM

    def __init__(self, args, shape):
        args = tuple(as_expression(a) for a in args)
        if not self._keeps_sparse:
            # Sparse constants only pay off in matrix products; elsewhere
            # they would only make every elementwise operation slower.
            args = tuple(a._densified() if isinstance(a, Constant) else a for a in args)
        self.args = args
        self._shape = tuple(shape)
        self._size = shape_size(self._shape)
        self._has_vars = any(a._has_vars for a in args)
        self._has_params = any(a._has_params for a in args)
        self._affine = self._compute_affine()
        self._order_cache = None

    # ------------------------------------------------------------ structure
    @property
    def shape(self):
        """The shape, a tuple of ints (``()`` for a scalar)."""
        return self._shape

    @property
    def size(self):
        """Number of entries."""
        return self._size

    @property
    def ndim(self):
        """Number of dimensions."""
        return len(self._shape)

    @property
    def T(self):
        """The transpose (axes reversed, as in NumPy); 0-D and 1-D are unchanged."""
        from .affine import transpose

        return transpose(self)

    def transpose(self, *axes):
        """Permute the axes, as ``numpy.ndarray.transpose``."""
        from .affine import transpose

        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes if axes else None)

    def sum(self, axis=None, keepdims=False, out=None, dtype=None):
        """Sum of entries over ``axis`` (an int, a tuple, or None for all).

        ``out`` and ``dtype`` exist only so that ``np.sum(expr)`` works.
        """
        from .affine import sum as _sum

        if out is not None:
            raise ModelError("sum: the out= argument is not supported for expressions")
        return _sum(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape, order=None):
        """``fm.reshape(self, shape, order)``, as CVXPY's ``Expression.reshape`` (the shape as one tuple or
        as several ints, as NumPy's): column by column (``order="F"``) or row by row (``order="C"``); without
        ``order`` it reads "F", CVXPY 1.x's default, with a FutureWarning (:func:`fwmodel.reshape`)."""
        from .affine import reshape

        if len(shape) == 1 and not isinstance(shape[0], (numbers.Integral, np.integer)):
            shape = shape[0]
        return reshape(self, shape, order=order, _stacklevel=3)

    def flatten(self, order=None):
        """The entries as a 1-D expression, as CVXPY's ``Expression.flatten``: column by column
        (``order="F"``) or row by row (``order="C"``); without ``order`` it reads "F", CVXPY 1.x's default,
        with a FutureWarning (:func:`fwmodel.reshape`)."""
        from .affine import reshape

        return reshape(self, (-1,), order=order, _stacklevel=3)

    def _postorder(self):
        if self._order_cache is None:
            self._order_cache = postorder(self)
        return self._order_cache

    def variables(self):
        """The distinct Variables in this expression, in order of first appearance."""
        if not self._has_vars:
            return []
        return [n for n in self._postorder() if isinstance(n, Variable)]

    def parameters(self):
        """The distinct Parameters in this expression, in order of first appearance."""
        if not self._has_params:
            return []
        return [n for n in self._postorder() if isinstance(n, Parameter)]

    # ------------------------------------------------------------- analysis
    def is_constant(self):
        """True when the expression has no variables (parameters are constants)."""
        return not self._has_vars

    def is_affine(self):
        """True when the expression is affine in its variables (constants included)."""
        return self._affine

    def _compute_affine(self):
        return all(a._affine for a in self.args)

    @property
    def curvature(self):
        """'constant', 'affine', 'convex', 'concave' or 'unknown' (DCP rules).

        It depends on fixed data and on the Parameters' declared properties
        only, never on their current values (see :func:`constant_sign`), so
        the verdict holds at every solve whatever values they take.
        """
        memo = {}
        for node in self._postorder():
            memo[id(node)] = node._curvature_rule([memo[id(a)] for a in node.args])
        return memo[id(self)]

    def undeclared_parameters(self):
        """Parameters whose undeclared sign (or definiteness) keeps DCP from a verdict, with the fix.

        A list of ``(parameter, property, declaration)`` triples, e.g.
        ``(lam, "sign", "nonneg=True or nonpos=True")`` for
        ``lam * fm.sum_squares(x)`` with an unsigned ``lam``, or
        ``(P, "definiteness", "psd=True")`` for ``fm.quad_form(x, P)``; used by
        error messages to say what to declare.
        """
        memo, found, seen = {}, [], set()

        def note(params, property_, declaration):
            for p in params:
                if id(p) not in seen and not (p.nonneg or p.nonpos or p.psd):
                    seen.add(id(p))
                    found.append((p, property_, declaration))

        for node in self._postorder():
            memo[id(node)] = node._curvature_rule([memo[id(a)] for a in node.args])
            if not node._has_vars or not node._has_params:
                continue
            vpos = getattr(node, "_vpos", None)  # products: one side with variables, one coefficient
            if vpos is not None and len(node.args) == 2:
                coefficient = node.args[1 - vpos]
                if memo[id(node.args[vpos])] in (CONVEX, CONCAVE) and coefficient._has_params \
                        and constant_sign(coefficient) == "unknown":
                    note(coefficient.parameters(), "sign", "nonneg=True or nonpos=True")
            elif getattr(node, "name", None) == "quad_form" and node.args[1]._has_params:
                note(node.args[1].parameters(), "definiteness", "psd=True")
        return found

    def is_convex(self):
        """True when DCP proves the expression convex (affine included)."""
        return self.curvature in (CONSTANT, AFFINE, CONVEX)

    def is_concave(self):
        """True when DCP proves the expression concave (affine included)."""
        return self.curvature in (CONSTANT, AFFINE, CONCAVE)

    def _curvature_rule(self, curvatures):
        # Default for affine operations that add or select entries.
        if not self._has_vars:
            return CONSTANT
        return add_curvatures(curvatures)

    def _sign_rule(self, signs):
        """Sign of this node (without variables) from its arguments' signs.

        Used for expressions of Parameters (:func:`constant_sign`). The
        default, 'unknown', is always safe; operations that add, select or
        rearrange entries override it with :func:`sum_sign`, products with
        :func:`product_sign`.
        """
        return "unknown"

    # ---------------------------------------------------------------- value
    @property
    def value(self):
        """The value as a NumPy array of ``self.shape`` (a float for shape ()),
        or None while a variable or parameter in it has no value."""
        values = evaluate_nodes(self._postorder())
        if values is None:
            return None
        return _present(values[id(self)], self._shape)

    # ----------------------------------------------------------------- repr
    def __repr__(self):
        try:
            return self._repr([repr(a) for a in self.args])
        except RecursionError:
            return f"<{type(self).__name__} of shape {self._shape}>"
        except AttributeError:  # an object whose __init__ raised
            return f"<{type(self).__name__}>"

    def _wrap(self, arg, text, prec):
        """Parenthesize ``text`` (the repr of ``arg``) if it binds looser than ``prec``."""
        return f"({text})" if arg._prec < prec else text

    def _repr(self, arg_texts):
        return f"{type(self).__name__}({', '.join(arg_texts)})"

    # ------------------------------------------------------------ operators
    def __add__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import add

        return add(self, other)

    def __radd__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import add

        return add(other, self)

    def __sub__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import add

        return add(self, other, sign=-1)

    def __rsub__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import add

        return add(other, self, sign=-1)

    def __neg__(self):
        from .affine import negate

        return negate(self)

    def __pos__(self):
        return self

    def __mul__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import multiply

        return multiply(self, other, _op="*")

    def __rmul__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import multiply

        return multiply(other, self, _op="*")

    def __truediv__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import divide

        return divide(self, other)

    def __rtruediv__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import divide

        return divide(other, self)

    def __matmul__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import matmul

        return matmul(self, other)

    def __rmatmul__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .affine import matmul

        return matmul(other, self)

    def __pow__(self, power):
        from .atoms import square

        if isinstance(power, (numbers.Number, np.generic)) and not isinstance(power, bool):
            if power == 1:
                return self
            if power == 2:
                return square(self)
            if np.isfinite(power) and float(power).is_integer() and int(power) % 2 == 0 and power >= 0 \
                    and self.is_affine():
                from .atoms import power as _power

                return _power(self, power)  # x ** 0, x ** 4, ...: CVXPY's power(x, p), as fm.power
        raise ModelError(
            f"{short_repr(self)} ** {power!r}: only powers 1 and 2 are supported "
            "(x ** 2 is fm.square(x); also 0 and even powers >= 4 of an affine x, as fm.power); "
            "the objective must be smooth and convex"
        )

    def __getitem__(self, key):
        from .affine import index

        return index(self, key)

    def __abs__(self):
        from .nonsmooth import abs as _abs

        return _abs(self)

    # ---------------------------------------------------------- comparisons
    def __eq__(self, other):
        other = _operand(other)
        if other is None:
            return NotImplemented
        from .constraints import Equality

        return Equality(self, other)

    def __ne__(self, other):
        if _operand(other) is None:
            return NotImplemented
        raise ModelError(
            f"{short_repr(self)} != ...: 'not equal' is not a constraint (the feasible set would not be convex)"
        )

    def _inequality(self, lhs, rhs, op):
        from .constraints import Inequality

        other = rhs if lhs is self else lhs
        if _operand(other) is None:
            return NotImplemented
        return Inequality(lhs, rhs, op)

    def __le__(self, other):
        return self._inequality(self, other, "<=")

    def __ge__(self, other):
        return self._inequality(other, self, ">=")

    # CVXPY's semidefinite constraints: A >> B is A - B PSD, A << B is B - A PSD
    def _semidefinite(self, lhs, rhs, op):
        from .constraints import PSDConstraint

        if _operand(lhs if rhs is self else rhs) is None:
            return NotImplemented
        return PSDConstraint(_operand(lhs), _operand(rhs), op)

    def __rshift__(self, other):
        return self._semidefinite(self, other, ">>")

    def __rrshift__(self, other):
        return self._semidefinite(other, self, ">>")

    def __lshift__(self, other):
        return self._semidefinite(self, other, "<<")

    def __rlshift__(self, other):
        return self._semidefinite(other, self, "<<")

    # Strict inequalities are refused, as CVXPY refuses them: over a closed set
    # the solver can only return a point where equality may hold, so reading
    # ``a < b`` as ``a <= b`` would answer a different question silently.
    def __lt__(self, other):
        return self._strict(other, "<", "<=")

    def __gt__(self, other):
        return self._strict(other, ">", ">=")

    def _strict(self, other, op, closed):
        if _operand(other) is None:
            return NotImplemented
        # Python's max, min and sorted compare with < and > too: say so, as a call of max(x, 0)
        # would otherwise read as a constraint the user never wrote
        raise ModelError(f"{short_repr(self)} {op} ...: strict inequalities are not allowed "
                         f"(the solver works on closed sets); write {closed} instead (Python's "
                         f"max, min and sorted compare with {op} too)")

    # ---------------------------------------------- hooks for node classes
    def _forward(self, vals):
        raise NotImplementedError

    def _tangent(self, vals, dargs):
        raise NotImplementedError

    def _backward(self, adj, vals, out, aux, needs):
        raise NotImplementedError

    def _linearize(self, forms, vals):
        raise NotImplementedError


def _present(value, shape):
    """Format a node value for users: a float array of ``shape``, np.float64 for ()."""
    value = as_dense(value)
    if shape == ():
        return np.float64(value.reshape(()))
    if value.shape != shape:  # e.g. a sum that returned a 0-d array
        value = value.reshape(shape)
    return value


# --------------------------------------------------------------------------
# Leaves
# --------------------------------------------------------------------------
class Leaf(Expression):
    """A node without arguments: Variable, Parameter or Constant."""

    is_leaf = True

    def __init__(self, shape):
        self.args = ()
        self._shape = normalize_shape(shape, type(self).__name__)
        self._size = shape_size(self._shape)
        self._has_vars = False
        self._has_params = False
        self._affine = True
        self._order_cache = None

    def _postorder(self):
        return [self]

    def _leaf_data(self):
        """The value used in evaluation (None when unset)."""
        raise NotImplementedError

    def _check_value(self, value, finite):
        """Validate a value for this leaf; return it as a fresh float array."""
        if sp.issparse(value):
            value = value.toarray()
        if np.iscomplexobj(value):  # NumPy would drop the imaginary part with only a warning
            raise ValueError(f"{self._describe()}: value is complex; fwmodel's data and variables are real")
        try:
            arr = np.array(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{self._describe()}: value must be numeric, got {value!r}") from None
        if arr.shape != self._shape:
            raise ValueError(f"{self._describe()}: value has shape {arr.shape}, expected {self._shape}")
        if finite and not np.all(np.isfinite(arr)):
            raise ValueError(f"{self._describe()}: value contains NaN or infinite entries")
        return arr

    def _describe(self):
        return f"{type(self).__name__} '{self.name}' of shape {self._shape}"

    def is_nonneg(self):
        """True when declared ``nonneg=True`` (CVXPY's ``Leaf.is_nonneg``: the attribute, not the bounds or
        the value); a Constant's from its data."""
        return bool(getattr(self, "nonneg", False))

    def is_nonpos(self):
        """True when declared ``nonpos=True`` (CVXPY's ``Leaf.is_nonpos``); a Constant's from its data."""
        return bool(getattr(self, "nonpos", False))

    def _repr(self, arg_texts):
        return self.name


class Variable(Leaf):
    """An optimization variable of any shape (n-D allowed).

    ``value`` is None until a solve (or the user) sets it; it is then a float
    array of ``shape``. ``id`` is a unique integer that the compiler uses to
    place the variable in the flat vector of all variables.

    Attributes as in CVXPY (the compiler turns them into sets, see
    :mod:`fwmodel.compiler.lowering`):

    - ``nonneg`` / ``nonpos``: every entry ``>= 0`` / ``<= 0``;
    - ``bounds=[lo, hi]``: ``lo <= x <= hi`` elementwise (numbers, arrays that
      broadcast to ``shape``, fm.Parameters, or None for a missing side);
    - ``symmetric``: a square matrix kept exactly symmetric (its sets take
      their symmetric LMOs);
    - ``PSD``: a symmetric positive semidefinite matrix; with
      ``fm.trace(X) <= t`` it is ``fm.TraceNormBall(X, t, psd=True)``.

    A one-sided attribute (``nonneg``) still needs something that bounds the
    variable: another set, an upper bound, or ``fm.sum(x) == t`` (a simplex).
    """

    _curvature_label = AFFINE
    name = _name_property()

    def __init__(self, shape=(), name=None, nonneg=False, nonpos=False, bounds=None, symmetric=False, PSD=False,
                 **unsupported):
        super().__init__(shape)
        self.id = next(_leaf_ids)
        self.name = str(name) if name is not None else f"var{self.id}"
        if "psd" in unsupported:  # (fm.Parameter's spelling: both are taken on both)
            PSD = _either_spelling(self, PSD or None, unsupported.pop("psd"))
        if unsupported:
            _refuse_variable_attributes(self, unsupported)
        if self._size == 0:
            # CVXPY allows empty variables; here every variable must lie in a set,
            # and a set needs entries: refuse it now, by name, not deep in a solve
            raise ModelError(f"{self._describe()} has no entries: a variable needs at least one entry "
                             "(every dimension >= 1)")
        self._has_vars = True
        self._value = None
        for flag, given in (("nonneg", nonneg), ("nonpos", nonpos), ("symmetric", symmetric), ("PSD", PSD)):
            if not isinstance(given, (bool, np.bool_)):
                raise ModelError(f"{self._describe()}: {flag} must be True or False, got {given!r}")
        self.nonneg, self.nonpos = bool(nonneg), bool(nonpos)
        self.PSD = bool(PSD)
        self.symmetric = bool(symmetric) or self.PSD
        if self.nonneg and self.nonpos:
            raise ModelError(f"{self._describe()}: nonneg=True and nonpos=True together fix it at 0; "
                             "use a constant instead")
        if self.symmetric and (len(self._shape) != 2 or self._shape[0] != self._shape[1]):
            what = "PSD=True" if self.PSD else "symmetric=True"
            raise ModelError(f"{self._describe()}: {what} needs a square matrix shape (n, n)")
        self.bounds = _check_variable_bounds(self, bounds)

    @property
    def value(self):
        if self._value is None:
            return None
        if self._shape == ():
            return np.float64(self._value)
        return self._value

    @value.setter
    def value(self, value):
        self._value = None if value is None else self._check_value(value, finite=False)

    def _leaf_data(self):
        return self._value

    def _curvature_rule(self, curvatures):
        return AFFINE


#: CVXPY's variable attributes without a counterpart here, and why
_CVXPY_ONLY_ATTRIBUTES = {
    "integer": "FW-AL solves continuous convex problems (no integer or boolean variables)",
    "boolean": "FW-AL solves continuous convex problems (no integer or boolean variables)",
    "complex": "variables are real", "imag": "variables are real", "hermitian": "variables are real",
    "NSD": "write -X for a PSD variable X", "nsd": "write -X for a PSD variable X",
    "pos": "use nonneg=True (FW-AL's sets are closed)", "neg": "use nonpos=True (FW-AL's sets are closed)",
}


def _either_spelling(leaf, PSD, psd):
    """The PSD flag given as ``PSD=`` or ``psd=`` (CVXPY spells it PSD; both are taken): a ModelError where
    the two disagree."""
    if PSD is None or psd is None:
        return psd if PSD is None else PSD
    if bool(PSD) != bool(psd):
        raise ModelError(f"{leaf._describe()}: PSD={PSD!r} and psd={psd!r} disagree (they are one flag)")
    return PSD


def _refuse_variable_attributes(var, attributes):
    """A ModelError naming the first attribute fm.Variable does not take (CVXPY's integer=True, ...)."""
    name, given = next(iter(attributes.items()))
    reason = _CVXPY_ONLY_ATTRIBUTES.get(name)
    if reason is None:
        reason = "the attributes are nonneg, nonpos, bounds, symmetric and PSD"
    raise ModelError(f"{var._describe()}: fm.Variable takes no attribute {name}={given!r}: {reason}")


def _check_variable_bounds(var, bounds):
    """``bounds=[lo, hi]`` of a Variable, each side None, data or a Parameter."""
    if bounds is None:
        return None
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ModelError(f"{var._describe()}: bounds must be a pair [lower, upper] (None for a missing side), "
                         f"got {bounds!r}")
    out = []
    for side, b in zip(("lower", "upper"), bounds):
        if b is None:
            out.append(None)
            continue
        if isinstance(b, Expression):
            if b._has_vars:
                raise ModelError(f"{var._describe()}: the {side} bound {short_repr(b)} contains a variable; "
                                 "bounds are data (numbers, arrays or fm.Parameters)")
        else:
            try:
                arr = np.asarray(b, dtype=float)
            except (TypeError, ValueError):
                raise ModelError(f"{var._describe()}: the {side} bound must be numeric, got {b!r}") from None
            if np.any(np.isnan(arr)):
                raise ModelError(f"{var._describe()}: the {side} bound contains NaN")
            b = arr
        try:
            np.broadcast_to(np.zeros(b.shape), var.shape)
        except ValueError:
            raise ModelError(f"{var._describe()}: the {side} bound of shape {b.shape} does not broadcast "
                             f"to the variable's shape {var.shape}") from None
        out.append(b)
    lo, hi = out
    if isinstance(lo, np.ndarray) and isinstance(hi, np.ndarray):  # constants: checked now, as CVXPY does
        crossed = np.broadcast_to(lo > hi, var.shape)
        if np.any(crossed):
            j = int(np.flatnonzero(crossed)[0])
            raise ModelError(f"{var._describe()}: bounds=[lower, upper] with lower > upper at flat entry {j}; "
                             "no value satisfies them")
    return tuple(out)


class Parameter(Leaf):
    """Data that can change between solves without recompiling the problem.

    Its value is read whenever the expression is evaluated. Optional
    keyword-only attributes declare properties that DCP can rely on whatever
    the value: ``nonneg`` / ``nonpos`` (its sign, so that
    ``lam * fm.sum_squares(x)`` is convex) and ``psd`` (a symmetric
    positive semidefinite matrix, for ``fm.quad_form(x, P)``). As in CVXPY,
    nothing else is assumed: an undeclared Parameter has no sign (whatever
    its current value), so ``lam * fm.sum_squares(x)`` with an unsigned
    ``lam`` is refused in an objective. Declared properties are checked each
    time the value is set, and the signs again at each solve; ``value`` is a
    read-only array (assign a new one to change it).
    """

    def __init__(self, shape=(), name=None, value=None, nonneg=False, nonpos=False, psd=None, PSD=None,
                 **unsupported):
        super().__init__(shape)
        self.id = next(_leaf_ids)
        self.name = str(name) if name is not None else f"param{self.id}"
        if unsupported:
            key, given = next(iter(unsupported.items()))
            raise UnknownKeywordError(f"{self._describe()}: fm.Parameter takes no keyword {key}={given!r}; the "
                                      "keywords are shape, name, value, nonneg, nonpos and PSD (or psd)")
        self.nonneg = bool(nonneg)
        self.nonpos = bool(nonpos)
        self.psd = bool(_either_spelling(self, PSD, psd))
        if self.nonneg and self.nonpos:
            raise ModelError(f"{self._describe()}: nonneg=True and nonpos=True together fix it at 0; "
                             "use a constant instead")
        if self.psd and (len(self._shape) != 2 or self._shape[0] != self._shape[1]):
            raise ModelError(f"{self._describe()}: psd=True needs a square matrix shape")
        self._has_params = True
        self._value = None
        if value is not None:
            self.value = value

    name = _name_property()

    @property
    def PSD(self):
        """``psd`` as CVXPY spells it (``fm.Parameter(..., PSD=True)``)."""
        return self.psd

    @property
    def declared_sign(self):
        """'nonneg', 'nonpos' or 'unknown': the sign DCP may rely on, whatever the value."""
        return "nonneg" if self.nonneg else ("nonpos" if self.nonpos else "unknown")

    @property
    def value(self):
        """The current value: a read-only array of ``shape`` (a float for shape ()), or None.

        Read-only because the declared properties (``nonneg``, ``nonpos``,
        ``psd``) are checked when a value is set: change the value by
        assigning a new array (``p.value = new``), not by editing it in place.
        """
        if self._value is None:
            return None
        if self._shape == ():
            return np.float64(self._value)
        return self._value

    @value.setter
    def value(self, value):
        if value is None:
            self._value = None
            return
        arr = self._check_value(value, finite=True)
        self._check_declared(arr, ValueError)
        arr.setflags(write=False)  # see the getter: no in-place edits past the checks
        self._value = arr

    def __setstate__(self, state):
        # pickle does not keep the read-only flag of the value array
        self.__dict__.update(state)
        if self._value is not None:
            self._value.setflags(write=False)

    def _check_declared(self, arr, error, psd=True):
        """Raise ``error`` naming the parameter when ``arr`` breaks its declared sign (or psd)."""
        if self.nonneg and np.any(arr < 0):
            raise error(f"{self._describe()}: declared nonneg but the value has negative entries")
        if self.nonpos and np.any(arr > 0):
            raise error(f"{self._describe()}: declared nonpos but the value has positive entries")
        if psd and self.psd and matrix_definiteness(arr) != "psd":
            raise error(f"{self._describe()}: declared psd but the value is not symmetric positive semidefinite")

    def check_value_at_solve(self):
        """Raise ModelError naming the parameter when it has no value or its value breaks its declared sign.

        Called by every solve: a problem's convexity may rest on the declared
        sign, and the value array could have been made writable and edited
        since it was set. (A declared psd is checked when the value is set:
        the eigenvalue test is too costly to repeat at each solve.)
        """
        if self._value is None:
            raise ModelError(f"parameter {self.name} has no value: set {self.name}.value before solving")
        self._check_declared(self._value, ModelError, psd=False)

    def _leaf_data(self):
        return self._value

    def _curvature_rule(self, curvatures):
        return CONSTANT


class Constant(Leaf):
    """Fixed data: a NumPy array, a SciPy sparse matrix or a Python number.

    Dense data is kept as a float array (without a copy when it already is
    one); sparse data is kept in CSR form so that ``A @ x`` stays sparse.
    NaN or infinite entries raise a ValueError.
    """

    def __init__(self, value, name=None):
        self.name = None if name is None else str(name)
        if isinstance(value, Constant):
            value = value._data
        if sp.issparse(value):
            data = sp.csr_matrix(value, dtype=float)
            if not np.all(np.isfinite(data.data)):
                raise ModelError(
                    f"constant sparse matrix of shape {data.shape} contains NaN or infinite entries"
                )
            self.is_sparse = True
        else:
            if isinstance(value, Expression):
                raise ModelError(f"cannot use expression {short_repr(value)} as constant data")
            arr = np.asarray(value)
            if arr.dtype.kind == "c":
                raise ModelError(f"complex constant data (shape {arr.shape}) is not supported")
            if arr.dtype.kind not in "biuf":
                raise ModelError(
                    f"cannot interpret {type(value).__name__} (dtype {arr.dtype}) as numeric constant data"
                )
            data = np.asarray(arr, dtype=float)
            bad = ~np.isfinite(data)
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0]) if data.ndim else ()
                raise ModelError(
                    f"constant data of shape {data.shape} contains NaN or infinite entries (first at index {where})"
                )
            self.is_sparse = False
        super().__init__(data.shape)
        self._data = data

    @property
    def value(self):
        if self.is_sparse:
            return self._data.toarray()
        if self._shape == ():
            return np.float64(self._data)
        return self._data

    def _leaf_data(self):
        return self._data

    def is_nonneg(self):
        return value_sign(self._data) in ("nonneg", "zero")

    def is_nonpos(self):
        return value_sign(self._data) in ("nonpos", "zero")

    def _densified(self):
        """This constant with dense data (itself when already dense)."""
        if not self.is_sparse:
            return self
        return Constant(self._data.toarray(), name=self.name)

    def _curvature_rule(self, curvatures):
        return CONSTANT

    def _repr(self, arg_texts):
        if self.name is not None:
            return self.name
        if self.is_sparse:
            return f"sparse{self._shape}"
        if self._size == 1 and self.ndim == 0:
            return f"{float(self._data):g}"
        if self._size <= 4:
            return np.array2string(self._data, separator=", ")
        return f"array{self._shape}"

    @property
    def _prec(self):
        # A negative scalar needs parentheses after a binary operator.
        if not self.is_sparse and self.name is None and self._size == 1 and self.ndim == 0 and self._data < 0:
            return PREC_NEG
        return PREC_ATOM


def matrix_definiteness(P, tol=1e-8, max_dense=1000):
    """Classify a constant square matrix: 'psd', 'nsd', 'indefinite', 'asymmetric'
    or 'unchecked' (too large for a dense eigenvalue computation).

    Both tests are relative to P's own scale (its largest entry, its largest
    eigenvalue magnitude), so that the answer is the same in any units: with
    an absolute floor of 1, ``1e-9 * diag(1, -1)`` passed as "psd" and an
    indefinite ``quad_form`` in small units was minimized as if convex.
    """
    if sp.issparse(P):
        diff = abs(P - P.T)
        scale = abs(P).max() if P.nnz else 0.0
        if diff.nnz and diff.max() > tol * scale:
            return "asymmetric"
        if P.shape[0] > max_dense:
            return "unchecked"
        P = P.toarray()
    P = np.asarray(P, dtype=float)
    scale = float(np.max(np.abs(P))) if P.size else 0.0
    if not np.allclose(P, P.T, rtol=0.0, atol=tol * scale):
        return "asymmetric"
    if P.shape[0] > max_dense:
        return "unchecked"
    eig = np.linalg.eigvalsh(P) if P.size else np.zeros(1)
    emin, emax = float(eig[0]), float(eig[-1])
    slack = tol * max(abs(emin), abs(emax))
    if emin >= -slack:
        return "psd"
    if emax <= slack:
        return "nsd"
    return "indefinite"
