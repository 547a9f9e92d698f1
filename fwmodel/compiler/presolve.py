"""Presolve: PSD variables whose constraints fix diagonal entries at 0.

A PSD matrix X with ``X_ii = 0`` has ``X_ij = X_ji = 0`` for every j (a
2x2 principal minor ``X_ii X_jj - X_ij^2 >= 0``). So ``X >> 0`` with
``fm.diag(X) <= d``, ``d_i = 0`` (or ``X[i, i] == 0``) confines X to the
face ``{X : X PSD, row and column i zero}``, a set without interior in the
PSD trace ball the compiler builds (:mod:`fwmodel.compiler.lowering`,
item 4b). FW-AL can only approach that face: the ball's vertices ``u u'``
have ``u_i != 0`` in general, and the bound's row ``X_ii = s_i``, ``s_i <=
0``, is met only in the limit, so the tail crawls (6 x 6, ``sum_squares(X -
C)``: 10,000 iterations and "max_iter" with ``d_0 = 0``, about 750 with
``d_0 = 1e-3``; ``benchmarks/psd_zero_diagonal.py``).

This presolve solves the problem on the face instead: X is replaced by
``P Y P'`` where ``Y`` is a PSD variable on the kept indices K (the
diagonal entries not fixed at 0) and P selects them, in the objective and
in every constraint. The PSD trace ball then holds Y, which has an
interior, and the constraints' entries on the dropped rows and columns
become entries without variables: ``0 <= d_i`` and ``0 == 0`` hold and are
dropped, an entry forced nonzero (``X[0, 1] == 1``, ``X[0, 0] >= 1``,
``X[0, 0] <= -1``) is false on the data alone and the solve ends
"infeasible" without iterating, as CVXPY reports it. ``X.value`` is
``P Y P'`` (zeros on the dropped rows and columns).

Which models it takes (else the general path, unchanged):

- X is ``PSD=True``, or a variable with ``X >> 0`` or in
  ``fm.TraceNormBall(X, r, psd=True)`` (the set ``{X >> 0, trace(X) <= r}``:
  without the presolve, ``X[0, 0] == 0`` in such a ball alone ran to
  max_iter, 10,000 iterations, where ``X >> 0, fm.trace(X) <= r`` took 1-2),
  without ``nonneg``/``nonpos``/``bounds`` attributes;
- an entry is fixed by an affine inequality without Parameters whose entry
  reads ``a X_ii + c <= 0`` with ``a > 0``, ``-c / a <= 0``, or an equality
  without Parameters ``a X_ii + c == 0`` with ``-c / a <= 0`` (a negative
  bound: infeasible, found as above), or by a Parameter-free trace bound
  (``trace(X) <= t``, ``trace(X) == t``, the PSD trace ball's radius) that
  positive lower bounds on other diagonal entries fill (``X[0, 0] >= l_0``,
  ``X[0, 0] == l_0`` with ``sum l_i >= t``: the entries without a bound are 0,
  see :func:`_zero_diagonal`);
- every other constraint on X is an affine equality or inequality, ``X >>
  0`` itself, ``fm.TraceNormBall(X, r, psd=True)``, or, without Parameters,
  a norm bound (``fm.norm(X, "fro") <= r``) or an inequality the compiler
  rewrites entrywise (``fm.max(X[1]) <= t``, ``fm.maximum(a, b) <= t``):
  those are expressions of X too, and the substitution inside them is exact,
  the lowering then rewrites the reduced constraint as it would the user's
  (its ``dual_value`` has the user's shape). With Parameters they take the
  general path: their entries left without variables would read the
  Parameters, which the lowering checks only for affine rows; a constraint on X with Parameters
  keeps its Parameters, provided no Parameter multiplies an entry of the
  dropped rows and columns (``p * X[0, 0]``). Parameters only in a
  constraint's constant (``fm.trace(X) <= t``, ``fm.sum(X) == p``,
  ``X[0, :] <= q``, ``X[0, 0] >= p``) are data: the coefficients on the
  variables, so which entries have variables after the substitution, do not
  depend on them. The entries left without variables (``0 <= q_j``, ``0 >=
  p``) are checked on the current Parameter values at each solve, as every
  constraint without variables: a violated one ends the solve "infeasible"
  without iterating, and the next re-solve with values that satisfy it is
  solved as usual. Which diagonal entries are fixed is read only from
  constraints without Parameters (a Parameter bound ``X[0, 0] <= p`` alone
  leaves the model to the general path: its value could free the entry);
- at least one diagonal entry is kept (X = 0 takes the general path).

Dual values: a constraint's entries on kept entries of X get the reduced
model's multipliers (the KKT conditions of the problem on the face, which
are CVXPY's where its multipliers exist). Its entries on the dropped rows
and columns get 0. CVXPY's multipliers there are in general not attained
(X_ii <= 0 with X PSD has no Slater point; the dual optimum is approached
only as the bound's multiplier grows without limit, and an interior-point
solver returns a large, solver-dependent number), so there is no value to
match. ``X >> 0``'s Z is the reduced Z on K x K, 0 elsewhere.
"""
from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..expressions import Equality, Inequality, PSDConstraint, Variable, linearize
from ..expressions.affine import AddExpression, _reshape as reshape
from ..expressions.core import Constant
from ..sets import TraceNormBall
from ..sets.base import ConvexSet


def _substitute(expr, mapping, memo):
    """``expr`` with the variables of ``mapping`` ({var.id: expression of the same shape}) replaced."""
    key = id(expr)
    if key in memo:
        return memo[key]
    if isinstance(expr, Variable):
        out = mapping.get(expr.id, expr)
    elif expr.is_leaf or not expr._has_vars:
        out = expr
    else:
        args = tuple(_substitute(a, mapping, memo) for a in expr.args)
        if all(a is b for a, b in zip(args, expr.args)):
            out = expr
        else:  # the same node on the new arguments (shapes are unchanged, so every node attribute still holds)
            out = copy.copy(expr)
            out.args = args
            out._has_vars = any(a._has_vars for a in args)
            out._has_params = any(a._has_params for a in args)
            out._affine = out._compute_affine()
            out._order_cache = None
    memo[key] = out
    return out


def _parameters_in_coefficients(expr):
    """True when a Parameter may multiply a variable in ``expr``: some node with variables, other than a sum,
    reads an argument of Parameters (``p * X``, ``A_p @ x``), or holds Parameters outside its arguments.

    Where it is False, the coefficients on the variables are data and the Parameters are only in the
    constant (``trace(X) - t``, ``fm.sum(X) - p``): the rows that have variables are the same for every
    Parameter value.
    """
    stack, seen = [expr], set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.is_leaf or not node._has_vars:
            continue
        seen.add(id(node))
        data_params = any(not a._has_vars and a._has_params for a in node.args)
        if data_params and not isinstance(node, AddExpression):
            return True
        if node._has_params and not any(a._has_params for a in node.args):
            return True
        stack.extend(node.args)
    return False


def _data_rows(expr, rows):
    """The flat entries ``rows`` of ``expr`` that have no variables (zero coefficients), as an expression of
    its Parameters alone: ``expr`` with every variable 0 (Parameters are re-read at each solve)."""
    zeros = {v.id: Constant(np.zeros(v.shape)) for v in expr.variables()}
    data = _substitute(expr, zeros, {})
    flat = data if data.ndim == 1 else data.reshape(-1, order="C")
    return flat[rows]


class _NonPositiveData(ConvexSet):
    """The entries without variables of a presolved inequality with Parameters in its constant: ``data <= 0``
    for the current Parameter values, checked at each solve (``CompiledProblem.violated_fixed_constraints``)
    with the 1e-9 relative tolerance of the other rows without variables; a violated one makes the solve end
    "infeasible", as CVXPY reports a false row without variables."""

    def __init__(self, expr, text):
        super().__init__(expr)
        self.text = text

    def lmo(self, direction):  # never called: the expression has no variables, so the set makes no block
        raise ModelError(f"{self.text}: entries without variables have no LMO")

    def contains(self, point, tol=1e-9):
        value = np.asarray(point, dtype=float).ravel()
        return bool(np.all(value <= tol * np.maximum(1.0, np.abs(value))))

    def __repr__(self):
        return self.text


def _touches(c, var):
    exprs = []
    if isinstance(c, ConvexSet):
        exprs = [c.expr]
    elif isinstance(c, (Equality, PSDConstraint)):
        exprs = [c.expr]
    elif isinstance(c, Inequality):
        if c.kind != "affine":
            return any(v is var for v in c.variables()) if hasattr(c, "variables") else True
        exprs = [c.expr]
    return any(v is var for e in exprs for v in e.variables())


def _plain_affine(c):
    """An inequality fwmodel keeps as its entrywise rows (no rewriting that changes its dual's shape)."""
    return (c.kind == "affine" and c.extremum is None and c.piecewise is None and not c.data_pieces
            and c.scale == 1.0 and not c.squared)


def _zero_diagonal(var, constraints):
    """The diagonal indices of ``var`` fixed at (or below) 0 by Parameter-free bounds and equalities.

    Also those that a trace bound leaves no room for: ``trace(X) <= t`` (a row, an equality, or the PSD
    trace ball's radius) next to lower bounds ``X_ii >= l_i`` (``X[i, i] == l_i`` included) whose positive
    ones sum to t or more. The diagonal of a PSD X is nonnegative, so ``sum_i X_ii <= t <= sum_{l_i > 0} l_i``
    holds only with every other diagonal entry at 0 (and the bounded ones at their bounds): ``X >> 0,
    trace(X) <= 0.2, X[0, 0] == 0.2`` is the single point ``0.2 e_0 e_0'``, a set without interior that
    FW-AL approached for 10,000 iterations ("max_iter", benchmarks/small_degenerate.py). A sum above t
    leaves no point at all: the reduced model is infeasible as the user's is.
    """
    n = var.shape[0]
    zero = np.zeros(n, dtype=bool)
    lower = np.zeros(n)  # the largest positive lower bound of each diagonal entry (0: none)
    trace = [float(c.radius) for c in constraints
             if isinstance(c, TraceNormBall) and c.psd and c.expr is var and not c.parameters()]
    diagonal = np.arange(n) * (n + 1)
    for c in constraints:
        if isinstance(c, Equality) or (isinstance(c, Inequality) and c.kind == "affine"):
            if c.parameters() or not any(v is var for v in c.expr.variables()):
                continue
            A, b, offsets = _linearized(c.expr)
            A = A.tocsr()
            start = offsets[var.id]
            for r in np.flatnonzero(np.diff(A.indptr) == n):  # rows a * trace(X) + b (a > 0 for <=)
                cols, coef = A.indices[A.indptr[r]:A.indptr[r + 1]], A.data[A.indptr[r]:A.indptr[r + 1]]
                if (np.array_equal(np.sort(cols - start), diagonal) and np.all(coef == coef[0])
                        and (coef[0] > 0 or isinstance(c, Equality))):
                    trace.append(-b[r] / coef[0])
            single = np.flatnonzero(np.diff(A.indptr) == 1)
            if not single.size:
                continue
            cols, coef = A.indices[A.indptr[single]], A.data[A.indptr[single]]
            local = cols - start
            on_diag = (local >= 0) & (local < var.size) & (local % (n + 1) == 0)
            value = -b[single] / np.where(coef == 0, 1.0, coef)
            fixed = on_diag & (value <= 0.0) & (coef != 0)
            below = on_diag & (value > 0.0) & (coef != 0)  # a lower bound X_ii >= value > 0 (or X_ii == value)
            if isinstance(c, Inequality):
                fixed &= coef > 0  # an upper bound X_ii <= value <= 0
                below &= coef < 0
            zero[local[fixed] // (n + 1)] = True
            np.maximum.at(lower, local[below] // (n + 1), value[below])
    if trace and lower.any() and float(np.sum(lower)) >= min(trace):
        zero |= lower == 0  # no room left by the trace bound (docstring)
    return np.flatnonzero(zero)


def _linearized(expr):
    """(A, b, offsets) of an affine ``expr`` over its own variables, laid out in order (``offsets``: var.id ->
    first column)."""
    offsets, off = {}, 0
    for v in expr.variables():
        offsets[v.id] = off
        off += v.size
    A, b = linearize(expr, offsets, off)
    return A, b, offsets


class _EqualityPart(Equality):
    """The entries ``rows`` of a presolved equality: those with variables, or those without (checked on the
    data at each solve, as every constraint without variables)."""

    def __init__(self, original, reduced, rows, constant=None):
        # constant: the entries ``rows`` when they have no variables (numbers, or an expression of Parameters)
        flat = reduced.expr if reduced.expr.ndim == 1 else reduced.expr.reshape(-1, order="C")
        # without variables: the entries' constants (the expression would still name Y, with zero coefficients)
        super().__init__(flat[rows] if constant is None else constant, 0.0)
        self.original, self.rows = original, rows
        self.written_as = getattr(original, "written_as", None) or repr(original)

    def __repr__(self):
        return f"{self.written_as} (its entries {self.rows.tolist()} on the zero rows and columns of a PSD matrix)"


class _SplitEquality:
    """A presolved equality whose entries on dropped rows and columns have no variables left: two parts."""

    def __init__(self, original, with_variables, without):
        self.original, self.with_variables, self.without = original, with_variables, without

    @property
    def dual_value(self):
        full = np.zeros(self.original.size)
        if self.with_variables is not None:
            nu = self.with_variables.dual_value
            if nu is None:
                return None
            full[self.with_variables.rows] = np.ravel(nu)
        return full.reshape(self.original.shape) if self.original.shape else float(full[0])


def _split_equality(original, reduced):
    """``reduced`` itself when every entry has variables, else a :class:`_SplitEquality` (its rows without
    variables would be empty rows of M, which the diagonal and trace recognitions of the lowering refuse)."""
    A, c, _ = _linearized(reduced.expr)
    nnz = np.diff(A.tocsr().indptr)
    if np.all(nnz > 0) or _parameters_in_coefficients(reduced.expr):  # (none on dropped entries: see above)
        return reduced
    without = np.flatnonzero(nnz == 0)
    # the entries without variables: numbers, or (Parameters in the constant) an expression re-read at each solve
    data = _data_rows(reduced.expr, without) if reduced.parameters() else np.asarray(c, dtype=float)[without]
    return _SplitEquality(original, _EqualityPart(original, reduced, np.flatnonzero(nnz > 0)) if nnz.any() else None,
                          _EqualityPart(original, reduced, without, data))


class _SplitInequality:
    """A presolved inequality with Parameters in its constant whose entries on dropped rows and columns have no
    variables left: the entries with variables (an inequality) and those without (:class:`_NonPositiveData`).
    Without Parameters the lowering checks such entries itself (its rows without variables)."""

    def __init__(self, original, rows, with_variables, without):
        self.original, self.rows, self.with_variables, self.without = original, rows, with_variables, without

    @property
    def dual_value(self):
        full = np.zeros(self.original.expr.size)
        if self.with_variables is not None:
            lam = self.with_variables.dual_value
            if lam is None:
                return None
            full[self.rows] = np.ravel(lam)
        shape = self.original.expr.shape
        return full.reshape(shape) if shape else float(full[0])


def _split_inequality(original, reduced):
    """``reduced`` itself unless it has Parameters (in its constant only) and entries without variables: then a
    :class:`_SplitInequality` (the lowering refuses rows without variables that read Parameters)."""
    if not reduced.parameters() or _parameters_in_coefficients(reduced.expr):
        return reduced
    variables = reduced.expr.variables()
    offsets = {v.id: o for v, o in zip(variables, np.cumsum([0] + [v.size for v in variables]))}
    A = linearize(reduced.expr, offsets, sum(v.size for v in variables))[0].tocsr()
    nnz = np.diff(A.indptr)
    if np.all(nnz > 0):
        return reduced
    rows, without = np.flatnonzero(nnz > 0), np.flatnonzero(nnz == 0)
    text = original._text
    part = None
    if rows.size:
        flat = reduced.expr if reduced.expr.ndim == 1 else reduced.expr.reshape(-1, order="C")
        part = Inequality(flat[rows], 0.0, "<=")
        part._text = f"{text} (its entries {rows.tolist()} with variables)"
    data = _NonPositiveData(_data_rows(reduced.expr, without),
                            f"{text} (its entries {without.tolist()} on the zero rows and columns of a PSD matrix, "
                            "without variables)")
    return _SplitInequality(original, rows, part, data)


class PsdZeroReduction:
    """The reduced model and how to map its answer back (see the module docstring)."""

    def __init__(self, objective, constraints, embedded, pairs):
        self.objective, self.constraints = objective, constraints
        #: [(X, Y, kept indices)]
        self.embedded = embedded
        #: [(the user's constraint, the reduced model's constraint)]
        self.pairs = pairs

    @property
    def originals(self):
        return [x for x, _, _ in self.embedded]

    def values(self, reduced):
        """The user's variables' values from the reduced model's (``CompiledProblem.variable_values``)."""
        out = {}
        for var, value in reduced.items():
            if not any(var is y for _, y, _ in self.embedded):
                out[var] = value
        for x, y, kept in self.embedded:
            if y in reduced:
                full = np.zeros(x.shape)
                full[np.ix_(kept, kept)] = reduced[y]
                out[x] = full
        return out

    def write_duals(self):
        """The user's constraints' ``dual_value`` from the reduced constraints' (0 on dropped entries)."""
        for original, reduced in self.pairs:
            dual = getattr(reduced, "dual_value", None)
            if isinstance(original, PSDConstraint):
                if dual is None:
                    original.dual_value = None
                    continue
                x, _, kept = next(e for e in self.embedded if e[0] is original.variable)
                full = np.zeros(x.shape)
                full[np.ix_(kept, kept)] = dual
                original.dual_value = full
            elif hasattr(original, "dual_value"):
                original.dual_value = dual


def presolve_psd_zeros(objective_expr, constraints):
    """A :class:`PsdZeroReduction` when some PSD variable has diagonal entries fixed at 0, else None."""
    semidefinite = [c for c in constraints if isinstance(c, PSDConstraint) and c.on_the_variable()]
    # a PSD trace-norm ball on the variable is {X >> 0, trace(X) <= r}: X is PSD there as with X >> 0
    psd_balls = [c.expr for c in constraints if isinstance(c, TraceNormBall) and c.psd and isinstance(c.expr, Variable)]
    candidates = []
    seen = set()
    for var in ([v for c in semidefinite for v in c.variables()] + psd_balls
                + _psd_variables(objective_expr, constraints)):
        if var.id in seen:
            continue
        seen.add(var.id)
        if var.nonneg or var.nonpos or var.bounds is not None or var.ndim != 2 or var.shape[0] < 2:
            continue
        candidates.append(var)
    mapping, embedded = {}, []
    for var in candidates:
        touching = [c for c in constraints if _touches(c, var)]
        if not all(_accepted(c, var) for c in touching):
            continue
        if any(p.value is None for c in touching for p in c.parameters()):
            continue  # (the general path names the Parameter without a value)
        zero = _zero_diagonal(var, touching)
        n = var.shape[0]
        kept = np.setdiff1d(np.arange(n), zero)
        if not zero.size or not kept.size:
            continue
        k = kept.size
        y = Variable((k, k), name=_kept_label(var.name, kept), PSD=var.PSD, symmetric=True)
        y.is_slack = True  # compiler-made: not one of the model's variables (prob.variables() lists X)
        # X = P Y P' as one sparse selection: vec(X) = W vec(Y), C order
        rows = (kept[:, None] * n + kept[None, :]).ravel()
        W = sp.csr_matrix((np.ones(k * k), (rows, np.arange(k * k))), shape=(n * n, k * k))
        image = reshape(W @ reshape(y, (k * k,)), (n, n))
        # X itself on the face: the reduced model's constraints and blocks read as the user wrote them
        # (``sum(X) <= 1``, not ``sum(reshape(sparse(16, 9) @ ...)) <= 1``)
        image._repr = lambda texts, name=var.name: name
        if not _dropped_entries_fixed(var, touching, kept, image):
            continue
        mapping[var.id] = image
        embedded.append((var, y, kept))
    if not embedded:
        return None
    memo = {}
    new_constraints, pairs = [], []
    for c in constraints:
        if not any(_touches(c, x) for x, _, _ in embedded):
            new_constraints.append(c)
            continue
        reduced = _rebuilt(c, mapping, memo, embedded)
        if isinstance(reduced, (_SplitEquality, _SplitInequality)):
            new_constraints += [part for part in (reduced.with_variables, reduced.without) if part is not None]
        else:
            new_constraints.append(reduced)
        pairs.append((c, reduced))
    return PsdZeroReduction(_substitute(objective_expr, mapping, memo), new_constraints, embedded, pairs)


def _kept_label(name, kept, limit=8):
    """The reduced variable's name: the user's X restricted to the kept rows and columns, in NumPy's
    indexing (``X[1:4, 1:4]``, ``X[np.ix_([0, 2], [0, 2])]``), so that ``prob.compile()`` and messages
    name the user's variable."""
    kept = [int(i) for i in kept]
    if kept == list(range(kept[0], kept[-1] + 1)):
        span = f"{kept[0] or ''}:{kept[-1] + 1}"
        return f"{name}[{span}, {span}]"
    if len(kept) <= limit:
        return f"{name}[np.ix_({kept}, {kept})]"
    shown = f"[{', '.join(map(str, kept[:3]))}, ..., {kept[-1]}] ({len(kept)} indices)"
    return f"{name} on rows and columns {shown}"


def _psd_variables(objective_expr, constraints):
    exprs = [objective_expr] + [c.expr for c in constraints
                                if getattr(c, "expr", None) is not None and hasattr(c.expr, "variables")]
    return [v for e in exprs for v in e.variables() if v.PSD]


def _accepted(c, var):
    if isinstance(c, PSDConstraint):
        return c.on_the_variable()
    if isinstance(c, Equality):
        return True
    if isinstance(c, Inequality):
        # a norm bound or an entrywise rewriting (fm.max(X[1]) <= t): an expression of X like any other, the
        # substitution X = P Y P' is exact inside it; without Parameters (whose rows without variables the
        # lowering refuses)
        return _plain_affine(c) or (c.kind in ("norm", "affine") and not c.parameters())
    if isinstance(c, TraceNormBall):
        return c.psd and c.expr is var
    return False


def _dropped_entries_fixed(var, touching, kept, image):
    """False when a Parameter multiplies an entry of the dropped rows and columns in some constraint.

    Parameters only in a constraint's constant are fine: its rows without variables after the substitution
    are checked on the data at each solve (:func:`_split_equality`, :func:`_split_inequality`)."""
    n = var.shape[0]
    dropped = np.ones((n, n), dtype=bool)
    dropped[np.ix_(kept, kept)] = False
    dropped = np.flatnonzero(dropped.ravel())
    for c in touching:
        if isinstance(c, (Equality, Inequality)) and c.parameters() and _parameters_in_coefficients(c.expr):
            variables = c.expr.variables()
            offsets, off = {}, 0
            for v in variables:
                offsets[v.id] = off
                off += v.size
            A = linearize(c.expr, offsets, off)[0].tocsc()
            start = offsets[var.id]
            cols = A[:, start + dropped]
            if cols.nnz:
                return False
    return True


def _rebuilt(c, mapping, memo, embedded):
    if isinstance(c, PSDConstraint):
        y = next(y for x, y, _ in embedded if x is c.variable)
        out = PSDConstraint(y, 0.0, ">>")
        out._text = c._text
        return out
    if isinstance(c, TraceNormBall):
        y = next(y for x, y, _ in embedded if x is c.expr)
        radius = c.__dict__.get("_sources", {}).get("radius", (c.radius,))[0]  # a Parameter stays one
        return TraceNormBall(y, radius, psd=True, lmo_tol=c.lmo_tol, dense_threshold=c.dense_threshold)
    if isinstance(c, Equality):
        out = Equality(_substitute(c.lhs, mapping, memo), _substitute(c.rhs, mapping, memo))
        out.written_as = getattr(c, "written_as", None) or repr(c)
        return _split_equality(c, out)
    out = Inequality(_substitute(c.lhs, mapping, memo), _substitute(c.rhs, mapping, memo), c.op)
    out._text = c._text
    if not _plain_affine(c):  # (the lowering rewrites it as it rewrote c: dual_value in c's shape)
        return out
    variables = out.expr.variables()
    offsets = {v.id: o for v, o in zip(variables, np.cumsum([0] + [v.size for v in variables]))}
    if np.any(np.diff(linearize(out.expr, offsets, sum(v.size for v in variables))[0].tocsr().indptr) == 0):
        names = ", ".join(x.name for x, _, _ in embedded)
        out._text = f"{c._text} (entries on the rows and columns of {names} that its zero diagonal entries make 0)"
    return _split_inequality(c, out)
