"""Constraints as CVXPY writes them, lowered to sets and equalities.

FW-AL knows two kinds of constraints: sets with a linear minimization oracle
(one block each) and linear equalities (rows of M). A CVXPY user writes
``cp.norm1(x) <= t``, ``x >= 0``, ``cp.sum(x) == 1``, ``G @ x <= h`` and
``cp.Variable(n, nonneg=True)``. This reduction, run before the compiler
lays out blocks, rewrites such a model into sets and equalities:

0. **Sets on elementwise maps hold the variable.** A set on ``a * x + c``
   (entries of one variable, each times a nonzero constant plus a constant:
   ``fm.Box(x + 5, 0, 1)``, ``fm.norm(x - x0, 2) <= r``) becomes an
   ``AffinePreimage`` on the selected entries of x, whose LMO is one call
   to the set's LMO (``x* = (LMO_S(d / a) - c) / a``): its block is a copy
   of x, and it bounds x like any set on x. With ``c`` read from Parameters
   (``fm.L1Ball(x - q, r)``) it is a ``MovingPreimage`` around a center
   read at each solve, where no other set holds every entry of x
   (:func:`_moving_where_unbounded`).
1. **Norm bounds are sets.** ``norm1(e) <= t`` is ``L1Ball(e, t)``;
   ``norm(e, 2)``, ``norm2``, ``norm(E, "fro")`` give ``L2Ball``;
   ``norm(e, "inf")``, ``norm_inf`` give ``LinfBall``; ``normNuc(E)``,
   ``norm(E, "nuc")`` give ``TraceNormBall``; ``abs(e) <= t`` gives
   ``Box(e, -t, t)`` (``sum(abs(e))`` is ``norm1(e)``, ``max(abs(e))`` is
   ``norm_inf(e)``). ``t`` is data: a number, an array (``abs``) or an
   ``fm.Parameter`` expression, re-read at each solve. Each such inequality
   gets its multiplier from its ball's block after a solve
   (:func:`~fwmodel.compiler.compile.write_norm_duals`). A scalar Parameter
   factor of the argument moves to the radius: ``norm1(p * x) <= t`` (also
   ``x * p``, ``x / p``) is ``norm1(x) <= t / |p|``, re-read at each solve,
   its multiplier the ball's over ``|p|``; ``p == 0`` drops it (see
   :class:`ParameterFactor`). With data added, ``norm1(p * x + c) <= t`` (c a
   number, an array or a Parameter expression; also ``norm(x - q) <= t``, a
   Parameter center) is the ball ``norm1(x + c / p) <= t / |p|`` around a
   center read at each solve (a :class:`~fwmodel.sets.preimage.MovingPreimage`
   on x); at ``p == 0`` it reads ``norm(c) <= t``. ``max(e) <= t`` and
   ``min(e) >= t`` are already affine (``e <= t``, ``e >= t``) when built.
2. **Elementwise bounds merge into one box per variable.** Every row of
   ``lhs - rhs <= 0`` with a single variable entry, ``a * x_j + c <= 0``, is
   the bound ``x_j <= -c / a`` (``a > 0``) or ``x_j >= -c / a`` (``a < 0``);
   with ``nonneg``, ``nonpos`` and ``bounds=[lo, hi]`` they give, per variable
   entry, the tightest ``lo_j`` and ``hi_j``. One :class:`~fwmodel.sets.Box`
   per variable holds the entries with a bound (a copy of those entries).
3. **One-sided bounds are closed by the sets.** An entry bounded on one side
   only takes its other bound from the smallest box containing the sets that
   hold it (``ConvexSet.coordinate_bounds``: closed forms for the built-in
   sets, else the LMO along -e_j and +e_j): ``Simplex(x)`` with ``x <= 0.1``
   becomes ``Simplex(x) ∩ Box(x, 0, 0.1)``, a capped simplex. An entry that
   no set holds is a ModelError naming the sets that would bound it. A bound
   that the sets already imply (``x >= 0`` next to ``Simplex(x)``) adds no
   block.
4. **Recognized structures.** ``x >= 0`` (or ``nonneg=True``) with
   ``fm.sum(x) == t`` is ``Simplex(x, t)`` (the equality adds no row; with
   ``fm.sum(x) <= t``, ``Simplex(x, t, equality=False)``); with
   ``fm.sum(X, axis=1) == t`` or ``<= t`` (rows of equal coefficients
   summing disjoint groups that cover X, the groups of an ``axis``) it is
   the batched ``Simplex(X, t, axis=1)`` (``equality=False``: each row the
   convex hull of a simplex and the origin), with one total per group where
   ``t`` is a vector (:func:`_budget_totals`). Budgets on selections of the
   entries (``fm.sum(X[0]) == 1``, ``fm.sum(x[:3]) <= t``,
   ``fm.sum(X[1:], axis=1)``, a loop over rows or columns) are gathered into
   families of disjoint groups per variable: a family whose groups are an
   axis's gives that axis's simplex (the same sets, so the same
   iterations), another a simplex per group size on the selected entries
   where no other set or bound bounds them (:func:`_slice_budgets`); on
   entries bounded on one side only by other fixed bounds B (``x <= 0``
   with ``fm.sum(x[:5]) >= -1``, ``X >= -1`` with row budgets) the same
   simplices on ``s (x - B)``, held on x as preimages; a row
   that bounds an entry but stays a row is named, with the reason, where
   the entry is refused (:func:`_bound_box`). Floors above 0 (``x >= 0.05``,
   ``x[0] >= 0.2`` next to ``x >= 0``) stay in the bound box (2-3), which
   the simplex closes. The budget's multiplier is recovered after the solve
   from the simplex block's KKT conditions. For a ``PSD=True``
   variable, ``fm.trace(X) <= t`` is ``TraceNormBall(X, t, psd=True)``; a PSD
   variable without one gets the PSD trace ball whose radius is the sum of
   the diagonal's upper bounds implied by its other sets. CVXPY's ``Y >> 0``
   on a symmetric variable makes Y PSD the same way; on ``E = a * Y + C``
   (``Y << 0``, ``Y >> B``) it needs a row that is a positive multiple of
   ``trace(E) <= r`` and becomes ``TraceNormBall(E, r, psd=True)`` (held on
   Y as an ``AffinePreimage``, item 0). ``trace(E) == r`` (E a PSD variable
   or such an a * Y + C) adds the same ball and keeps its row.
5. **General linear inequalities get a bounded slack.** The rows
   ``a_i' v + c_i <= 0`` that involve several entries become
   ``a_i' v + c_i + s_i = 0`` (rows of M) with a new slack ``s >= 0``. FW-AL
   needs s in a bounded set: since v lies in the product of the sets that
   hold its variables, ``s_i = -c_i - a_i' v <= -c_i - min_v a_i' v``, and
   the minimum is one LMO call per row and set (``min_{z in S} <g, z>`` is
   ``<g, LMO(g)>``; over a variable held by several sets the largest of
   these lower bounds is taken, over partial copies a disjoint cover). So
   ``s`` lives in ``Box(s, 0, u)`` with ``u_i = max(0, -c_i - min a_i' v)``.
   After a solve the slack rows' multipliers are the inequality's
   ``dual_value``. A hinge budget ``fm.sum(fm.pos(e)) <= t``
   (:class:`~fwmodel.expressions.constraints.HingeBudget`) arrives as its
   internal constraints: a hidden ``s >= 0`` whose ``fm.sum(s) <= t`` is the
   ``Simplex(s, t, equality=False)`` of item 4 (without ``axis``: its
   projected variant :class:`~fwmodel.sets.simplex.HingeExcessSimplex`, the
   same set), and rows ``e - s <= 0`` that get slacks here; its
   ``dual_value`` is the budget's multiplier, the largest of its rows'
   (:meth:`~fwmodel.expressions.constraints.HingeBudget.multiplier`).
6. **Symmetric variables.** Every set holding a whole ``symmetric=True`` (or
   ``PSD=True``) variable is replaced by its ``symmetric_variant()`` (an LMO
   along ``sym(D)`` whose vertices are symmetric: the symmetric paths of
   ``TraceNormBall`` and ``L1Ball``, and ``SymmetricPart`` for L2 balls and
   boxes), so the iterates stay exactly symmetric. When no such set holds
   the whole variable, the rows ``X[i, j] == X[j, i]`` (i < j) are added.
7. **A simplex and a box on one variable are one set.** ``Simplex(x)`` (given,
   or recognized in 4) and ``Box(x, lo, hi)`` (given, or built in 2-3: the
   capped portfolio ``x >= 0, sum(x) == 1, x <= 0.05``) become one
   :class:`~fwmodel.sets.capped_simplex.CappedSimplex`, whose LMO is exact:
   one block and no rows where two copies and a row per entry would be (the
   capped portfolio of ``benchmarks/zoo.py``: 274 iterations before, 8 now),
   when no other set and no row touches x (see :func:`_capped_simplices`).
   Likewise ``L1Ball(x, r)`` (or ``norm1(x) <= r``) and ``Box(x, lo, hi)``
   (or ``LinfBall``, ``abs(x) <= c``, ``x >= 0``) become one
   :class:`~fwmodel.sets.boxed_l1.BoxedL1Ball`, with an exact LMO and an
   exact projection (least squares 80 x 200 of
   ``benchmarks/rows_projection.py``: 1,420 iterations on two copies, 242
   projection steps on one set) (:func:`_boxed_l1_balls`).

Data that depends on Parameters (bounds, radii, totals, the slack boxes'
upper bounds) is recomputed by :meth:`Lowered.prepare` and the sets'
``refresh`` before each solve, without recompiling; the structure (which
entries are bounded on which side) must not change with a Parameter's value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..expressions import Equality, Inequality, PSDConstraint, Variable, as_expression, linearize
from ..expressions.core import short_repr
from ..sets.box import box_of_bounds
from ..sets import Box, Ellipsoid, L1Ball, L2Ball, LinfBall, Simplex, TraceNormBall
from ..sets._common import MAX_DATA_MAGNITUDE
from ..sets.base import ConvexSet, check_nonnegative
from ..sets.boxed_l1 import BoxedL1Ball
from ..sets.capped_simplex import CappedSimplex
from ..sets.hulls import NEARLY_PARALLEL, part_off_hulls
from ..sets.preimage import AffinePreimage
from ..sets.simplex import HingeExcessSimplex
from ..sets.symmetric import SymmetricPart


class ComputedData:
    """Set data computed from Parameters by the compiler (a bound, a total).

    Duck-types the part of an fm.Parameter expression that sets read: ``.value``
    (calls ``compute``) and ``parameters()``.
    """

    _has_vars = False
    _has_params = True

    def __init__(self, compute, parameters, label):
        self._compute = compute
        self._parameters = list(parameters)
        self.label = label

    @property
    def value(self):
        return self._compute()

    def parameters(self):
        return list(self._parameters)

    def __truediv__(self, divisor):
        """The datum divided by a number (a set held in other units, :mod:`fwmodel.sets.units`)."""
        def divided():
            value = self.value
            if value is None:
                return None
            return np.asarray(value, dtype=float) / divisor if np.ndim(value) else float(value) / divisor

        return ComputedData(divided, self._parameters, f"{self.label} / {divisor:g}")

    def __repr__(self):
        return self.label


def within_data_limit(A, c, what):
    """Refuse rows whose coefficients or constants exceed ``MAX_DATA_MAGNITUDE`` (1e100).

    FW-AL squares row norms and residuals (the penalty, the row
    equilibration, ||M x - b||^2); beyond 1e154 those squares overflow to
    inf, and a row whose norm is inf would be scaled by 0, that is, dropped.
    A row whose coefficients are all below 1 / MAX_DATA_MAGNITUDE is refused
    for the mirror reason: its squared norm underflows to 0 below 1e-154, and
    the row would be taken for an empty one. The limit is the one on the
    sets' data and on Parameter values. Checked at compile time and each
    time Parameters rebuild the rows.
    """
    A = A.tocsr()
    largest = max(float(np.max(np.abs(A.data))) if A.nnz else 0.0,
                  float(np.max(np.abs(c))) if np.size(c) else 0.0)
    if not largest <= MAX_DATA_MAGNITUDE:  # also catches NaN
        raise ModelError(f"{what}: a coefficient or constant of magnitude {largest:.3g} exceeds "
                         f"{MAX_DATA_MAGNITUDE:g}, the limit on data (FW-AL squares row norms and residuals); "
                         "divide the constraint by a common factor")
    starts = A.indptr[:-1][np.diff(A.indptr) > 0]
    if starts.size:
        row_largest = np.maximum.reduceat(np.abs(A.data), starts)
        tiny = (row_largest > 0) & (row_largest * MAX_DATA_MAGNITUDE < 1.0)
        if np.any(tiny):
            raise ModelError(f"{what}: a row's coefficients are all below {1.0 / MAX_DATA_MAGNITUDE:g} in magnitude "
                             f"(largest {float(row_largest[tiny][0]):.3g}), beyond the limit on data (FW-AL squares "
                             "row norms and residuals); multiply the constraint by a common factor")


def _unique(items):
    seen, out = set(), []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out


@dataclass
class Lowered:
    """What the compiler builds blocks and rows from.

    ``sets`` and ``equalities`` are FW-AL primitives. ``absorbed`` maps
    ``id(equality)`` to the :class:`Simplex` that replaced it (its dual is
    recovered from that block after a solve), ``slack_of`` maps
    ``id(slack equality)`` to ``(inequality, rows)``, ``norm_sets`` pairs each
    ``norm(e) <= t`` with its ball. ``prepare()`` recomputes
    the Parameter-dependent entry bounds before the sets refresh.
    """

    sets: list
    equalities: list
    absorbed: dict = field(default_factory=dict)
    slack_of: dict = field(default_factory=dict)
    #: (units, recompute) of the slacks of inequalities whose coefficients read Parameters: the units were
    #: computed at compile time (``_slack_units``); ``recompute()`` gives them for the current values
    slack_units: list = field(default_factory=list)
    entry_bounds: object = None
    absorbed_equalities: list = field(default_factory=list)
    #: [(inequality, the ball it became)] for ``norm(e) <= t`` (their dual values)
    norm_sets: list = field(default_factory=list)
    #: [(inequality, simplex, a, groups, row)]: rows ``a * sum(x) <= t`` that became ``Simplex(x, equality=False)``
    budget_rows: list = field(default_factory=list)
    #: [(simplex, a, groups, members)]: budgets on selections of a variable's entries (``fm.sum(X[0]) == 1``,
    #: ``fm.sum(x[:3]) <= t``) that became a simplex (:func:`_slice_budgets`): ``a`` the coefficient of each of
    #: its groups, ``groups`` the group of each entry of its block, ``members`` [(constraint, the constraint's
    #: flat rows, their groups)]
    slice_budgets: list = field(default_factory=list)
    #: the semidefinite constraints ``E >> 0`` (their dual values: the PSD trace ball that holds E)
    semidefinite: list = field(default_factory=list)
    #: [(constraint, the PSD trace ball it made)] for ``trace(E) <= r`` and ``trace(E) == r`` (their dual values)
    trace_bounds: list = field(default_factory=list)
    #: ids of the constraints and sets whose multiplier the compiler shared with a set it derived (a trace
    #: ball from ``trace(E) == r``, which write_psd_duals combines with the row; a box tightened by a ball's
    #: implied bounds): no ``dual_value`` of their own
    shared_duals: set = field(default_factory=set)
    #: id(ball) -> (box, variable, flat entries of the variable the box holds, the ball's own entry of each
    #: (-1: not in the ball), lower sides, upper sides taken from the ball (None, None with Parameters))
    derived_bounds: dict = field(default_factory=dict)
    #: (diag(X) == d, the PSD trace ball whose radius is sum(d), the rows' coefficients)
    diagonal_duals: list = field(default_factory=list)
    #: messages for entries of inequalities whose coefficients are all zero (rows on data alone) and whose
    #: constant violates them, and for budgets whose total is negative: the problem is infeasible whatever
    #: the variables (entries that hold are dropped). A budget whose total reads Parameters puts a callable
    #: here, giving its message for the current values, or None while the total is >= 0
    violated_constant_rows: list = field(default_factory=list)
    #: [(inequality, entries)]: its entries without variables that hold (dropped; their multiplier is 0)
    constant_rows: list = field(default_factory=list)
    #: the hinge budgets ``fm.sum(fm.pos(e)) <= t`` (their dual values: their internal budget's)
    hinges: list = field(default_factory=list)
    #: id(ball) -> the ball it contains, for the balls that contain another ball on the same variable,
    #: dropped (:func:`_without_nested_balls`): their multiplier is 0
    redundant_balls: dict = field(default_factory=dict)
    #: id(ball) -> the box of its single point, for the L2 balls that equalities leave without room
    #: (:func:`_points_of_tangent_balls`): no multiplier is attained, their ``dual_value`` is None
    tangent_balls: dict = field(default_factory=dict)

    def prepare(self):
        if self.entry_bounds is not None and self.entry_bounds.dynamic():
            self.entry_bounds.recompute()


class EntryBounds:
    """Elementwise bounds ``lo <= v <= hi`` on the flat vector v of all variables.

    Sources: the variables' ``nonneg`` / ``nonpos`` / ``bounds`` attributes
    and the single-entry rows of affine inequalities. ``recompute()`` re-reads
    them (Parameters); the pattern of finite bounds is fixed at compile time.

    A row's entry and side are its structure, fixed when the model is lowered
    (:func:`_structural_pattern`: with Parameters, the entries whose coefficient
    some value makes nonzero), not the current values: a Parameter value that
    makes the coefficient 0 (``multiply(s, x) <= 0.5`` with ``s[1] = 0``) leaves
    the row ``0 <= h`` without variables, true (the entry is not bounded by it at
    that solve) or false (the solve ends "infeasible" naming the constraint:
    :meth:`violation`), as CVXPY treats it.
    """

    def __init__(self, variables, offsets, n_v):
        self.variables, self.offsets, self.n_v = variables, offsets, n_v
        self.rows = []  # (inequality, row indices) whose rows are single-entry bounds
        self.lo = np.full(n_v, -np.inf)
        self.hi = np.full(n_v, np.inf)
        self._columns = {}  # id(inequality) -> (each row's entry, its side (coefficient > 0) where known)
        # id(inequality) -> (entries, coefficients, bounds) at the last recompute (a coefficient 0: no bound)
        self.current = {}
        # (inequality, rows, constants, entries) whose coefficient a Parameter value makes 0 at this solve
        self.zero_rows = []
        # (inequality, rows, entries, upper?) whose coefficient a Parameter value gives the other sign than the
        # structural one at this solve (their bound is on the other side)
        self.flipped = []
        # entries that a row bounds on that side for some Parameter value (the compiled pattern of bounds)
        self.may_lo = np.zeros(n_v, dtype=bool)
        self.may_hi = np.zeros(n_v, dtype=bool)
        self._pattern = None
        # single-entry equalities held as bounds lo = hi (x[0] == 1 where nothing else bounds x[0] on both
        # sides): (equality, rows), and each one's (entries, coefficients, values) at the last recompute
        self.equality_rows = []
        self.current_equalities = {}

    def add_equality_rows(self, eq, rows):
        self.equality_rows.append((eq, rows))

    def add_rows(self, ineq, rows, cols=None, upper=None):
        """Rows ``rows`` of ``ineq`` bound one entry each: ``cols`` (their structural entries; None: read from
        the current coefficients, all nonzero) with ``upper`` the side a generic Parameter value gives."""
        self.rows.append((ineq, rows))
        if cols is not None:
            self._columns[id(ineq)] = (np.asarray(cols), np.asarray(upper, dtype=bool))

    def dynamic(self):
        """True when some bound depends on a Parameter (else one computation is enough)."""
        return any(q.parameters() for q, _ in self.rows + self.equality_rows) or any(
            b is not None and getattr(b, "_has_params", False)
            for var in self.variables if var.bounds is not None for b in var.bounds)

    def _coefficients(self, ineq, rows):
        """(entries, coefficients, constants) of the bound rows of ``ineq`` for the current data."""
        A, c = linearize(ineq.expr, self.offsets, self.n_v)
        A, c = A[rows].tocsr(), c[rows]
        known = self._columns.get(id(ineq))
        if known is None or (A.nnz == rows.size and np.array_equal(A.indices, known[0])):
            return A.indices, A.data, c
        cols = known[0]
        # a coefficient a Parameter value made 0 (CSR drops it): read each row's structural entry
        coef = np.asarray(A[np.arange(rows.size), cols], dtype=float).ravel()
        return cols, coef, c

    def recompute(self):
        lo, hi = np.full(self.n_v, -np.inf), np.full(self.n_v, np.inf)
        for var in self.variables:
            off = self.offsets[var.id]
            seg = slice(off, off + var.size)
            if var.nonneg:
                lo[seg] = np.maximum(lo[seg], 0.0)
            if var.nonpos:
                hi[seg] = np.minimum(hi[seg], 0.0)
            if var.bounds is not None:
                for side, bound, target, pick in (("lower", var.bounds[0], lo, np.maximum),
                                                  ("upper", var.bounds[1], hi, np.minimum)):
                    if bound is None:
                        continue
                    value = bound.value if hasattr(bound, "_has_params") else bound
                    if value is None:
                        raise ModelError(f"variable {var.name}: the {side} bound has no value (a Parameter "
                                         "without a value); set it before solving")
                    target[seg] = pick(target[seg], np.broadcast_to(np.asarray(value, dtype=float),
                                                                    var.shape).ravel())
        pattern, zero_rows, current = [], [], {}
        for ineq, rows in self.rows:
            cols, coef, c = self._coefficients(ineq, rows)
            zero = coef == 0.0
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.where(zero, np.inf, -c / np.where(zero, 1.0, coef))
            known = self._columns.get(id(ineq))
            upper = np.where(zero, known[1], coef > 0) if known is not None else coef > 0
            value = np.where(zero, np.where(upper, np.inf, -np.inf), value)
            np.minimum.at(hi, cols[upper], value[upper])
            np.maximum.at(lo, cols[~upper], value[~upper])
            if self._pattern is None:
                self.may_hi[cols[upper]] = True
                self.may_lo[cols[~upper]] = True
            if zero.any():
                zero_rows.append((ineq, rows[zero], c[zero], cols[zero]))
            current[id(ineq)] = (cols, coef, value)
            pattern.append((cols.copy(), upper, zero))
        flipped = []
        if self._pattern is not None:
            for (ineq, _), (cols0, _, _), (cols1, up1, zero1) in zip(self.rows, self._pattern, pattern):
                if not np.array_equal(cols0, cols1):  # (the structural entries are read once: never met)
                    raise ModelError(f"{short_repr(ineq)}: a Parameter changed which entries the rows bound")
        for (ineq, rows), (cols1, up1, zero1) in zip(self.rows, pattern):
            # A Parameter value of the other sign (p * x <= h with p < 0: x >= h / p) turns an upper bound
            # into a lower one: the constraint is affine for either sign, as CVXPY takes it, and the bound is
            # read on its side at this solve (the box of the entry reads both, _bound_box)
            known = self._columns.get(id(ineq))
            if known is not None:
                turned = ~zero1 & (up1 != known[1])
                if turned.any():
                    flipped.append((ineq, rows[turned], cols1[turned], up1[turned]))
        self.flipped = flipped
        self._pattern = pattern
        self.zero_rows, self.current = zero_rows, current
        for eq, rows in self.equality_rows:  # a x_j + c == 0: lo = hi = -c / a (a box with equal sides)
            A, c = linearize(eq.expr, self.offsets, self.n_v)
            A, c = A[rows].tocsr(), c[rows]
            value = -c / A.data
            np.minimum.at(hi, A.indices, value)
            np.maximum.at(lo, A.indices, value)
            self.current_equalities[id(eq)] = (A.indices, A.data, value)
        self.lo, self.hi = lo, hi

    def violation(self):
        """The message of the first bound row that a Parameter value left without variables and false
        (``0 <= h`` with ``h < 0``), or None: that solve ends "infeasible" naming the constraint."""
        for ineq, rows, c, _ in self.zero_rows:
            bad = c > 1e-9 * np.maximum(1.0, np.abs(c))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                return (f"the constraint {getattr(ineq, '_text', short_repr(ineq))} does not hold at entry "
                        f"{int(rows[k])}: a Parameter value makes its coefficient 0, so it reads "
                        f"{float(c[k]):.6g} <= 0")
        return None


def _structural_pattern(expr, offsets, n_v):
    """The matrix A of ``expr = A v + c`` for generic values of its Parameters (seeded, with their declared
    signs, none 0): its nonzeros are the entries that some values make nonzero, the structure of the rows
    (which the current values, some 0, may hide). The Parameters' values are put back afterwards."""
    params = expr.parameters()
    saved = [p._value for p in params]
    rng = np.random.default_rng(12345)
    try:
        for p in params:
            generic = np.asarray(rng.uniform(1.0, 2.0, size=p.shape), dtype=float)
            if getattr(p, "psd", False) and len(p.shape) == 2:  # (a PSD value: diagonally dominant)
                generic = (generic + generic.T) / 2 + p.shape[0] * np.eye(p.shape[0])
            p._value = -generic if p.nonpos else generic
        A, _ = linearize(expr, offsets, n_v)
    finally:
        for p, value in zip(params, saved):
            p._value = value
    return A.tocsr()


def _lower_norm(ineq, violated):
    """The set for ``norm(e) <= t`` (see the module docstring, step 1); ``fm.sum_squares(e) <= t`` and
    ``fm.quad_form(e, P) <= t`` come as ``norm2(e) <= sqrt(t)`` and ``norm2(L' e) <= sqrt(t)`` (``P = L L'``;
    see :func:`_ellipsoids_where_unbounded` for the ellipsoid).

    A bound read from Parameters that a value makes negative leaves no point: that solve ends "infeasible"
    naming the constraint (``violated`` gets the check, as for a budget's total) and the ball reads the
    bound clipped at 0, as CVXPY answers; a negative constant bound is refused when the model is built.
    """
    atom, bound = ineq.norm, ineq.bound
    arg = atom.args[0]
    factor = _parameter_factor(arg)
    if factor is not None:  # norm(p * e) <= t: the ball norm(e) <= t / |p| (see ParameterFactor)
        ineq.parameter_factor = ParameterFactor(ineq, *factor)
        return ineq.parameter_factor.ball(violated)
    data = bound if bound._has_params else bound.value
    if bound._has_params and atom.kind != "abs":  # (a box with lower > upper is empty: "infeasible" already)
        data = _clipped_bound(bound, ineq, violated)
    if atom.kind == "abs":
        if not bound._has_params:
            data = np.asarray(data, dtype=float)
            if np.any(data < 0):
                raise ModelError(f"{ineq._text}: the bound is negative, so no point satisfies it")
            return Box(arg, -data, data)
        return Box(arg, -bound, bound)
    if not bound._has_params:
        data = check_nonnegative("radius", float(np.asarray(data).reshape(())), f"{ineq._text}: the bound")
    elif bound.size != 1:
        raise ModelError(f"{ineq._text}: the bound of a norm must be a scalar")
    cls = {"l1": L1Ball, "l2": L2Ball, "linf": LinfBall, "nuc": TraceNormBall}[atom.kind]
    ball = cls(arg, data)
    if arg._has_params:  # norm(p * x + c) <= t: a set on an expression of x (the message if nothing else holds x)
        ball.written_as = ineq._text
    return ball


def _parameter_factor(arg):
    """``(e, f, divides, constant)`` where a norm's argument is ``f * e``, ``e * f`` or ``e / f`` (``divides``),
    plus or minus terms without variables (``constant``: ``[(sign, term)]``, empty where there are none), with
    ``f`` a scalar fm.Parameter expression (no variables) and ``e`` an expression of variables without
    Parameters; None else. A negation of the whole argument is dropped (the norm does not see it)."""
    from ..expressions.affine import AddExpression, DivideExpression, MultiplyExpression, NegExpression

    while isinstance(arg, NegExpression):
        arg = arg.args[0]
    terms = []

    def add(expr, sign):
        if isinstance(expr, NegExpression):
            add(expr.args[0], -sign)
        elif isinstance(expr, AddExpression):
            for term, term_sign in zip(expr.args, expr.signs):
                add(term, sign * term_sign)
        else:
            terms.append((sign, expr))

    add(arg, 1)
    with_vars = [(sign, term) for sign, term in terms if term._has_vars]
    if len(with_vars) != 1:
        return None
    sign, product = with_vars[0]
    constant = [(sign * s, term) for s, term in terms if not term._has_vars]
    if not product._has_params:
        # norm(e - q) <= t with q a Parameter (a center read at each solve): the factor is 1
        if not any(term._has_params for _, term in constant) or tuple(product.shape) != tuple(arg.shape):
            return None
        return product, as_expression(1.0), False, constant
    if not isinstance(product, MultiplyExpression):
        return None
    a, b = product.args
    divides = isinstance(product, DivideExpression)
    e, f = (b, a) if not divides and a._has_params and not a._has_vars else (a, b)
    if (f.size != 1 or not f._has_params or f._has_vars or not e._has_vars or e._has_params
            or tuple(e.shape) != tuple(arg.shape)):
        return None
    # ||sign * f e + sum_i s_i c_i|| = ||f e + sign * sum_i s_i c_i||
    return e, f, divides, constant


class ParameterFactor:
    """``norm(p * e) <= t`` (also ``e * p``, ``e / p``; ``abs``; p a scalar Parameter expression) held as the
    ball ``norm(e) <= t / |p|`` (``t * |p|`` for ``e / p``), as CVXPY users write it.

    The ball then holds e itself (e = x: a copy of x), where a ball on ``p * x`` could not (p may be 0 at
    a solve). Its radius is read at each solve from the current values of t and p. CVXPY's multiplier of
    the constraint as written, ``lambda (|p| ||e|| - t)``, is ``lambda = mu / |p|`` with ``mu`` the ball's
    (``mu |p|`` for ``e / p``): :meth:`dual_scale`.

    ``p == 0`` makes ``p * e`` zero and the constraint ``0 <= t``, vacuous (CVXPY drops it): where other
    sets bound e's variables (:meth:`hold_others`), the ball's radius is then one that they keep it from
    reaching (:meth:`_loose_radius`), so it binds nothing (multiplier 0); where none does, the solve is
    refused with a ModelError naming the Parameter, the constraint and the variable, since FW-AL needs a
    bounded set for every variable. A negative t is "infeasible" at that solve (as any Parameter bound).
    The loose radius is read at each solve from the other sets' current data (their Parameters and the
    entry bounds' are the ball's too); another such ball whose factor is 0 at that solve holds nothing.
    While the model is lowered (p == 0 at the first solve) the ball reads t, as at p = 1.
    """

    def __init__(self, ineq, e, f, divides, constant=()):
        self.ineq, self.expr, self.factor, self.divides = ineq, e, f, divides
        self.constant = list(constant)  # [(sign, term)]: norm(p * e + c) <= t, c the signed terms' sum
        self.others = None  # (sets, entry bounds, slots, offsets, n_v) that hold e's variables besides this ball
        self.own = None  # the set this ball became (itself, or its AffinePreimage on the variable)
        self.mine = set()  # ids of the ball, the set it became (see hold_others)
        self._radius_data = []  # the ball's ComputedData (radius; and -radius for abs): hold_others adds Parameters
        self._busy = False

    def _factor_value(self):
        value = self.factor.value
        return None if value is None else abs(float(np.asarray(value, dtype=float).reshape(())))

    def _names(self):
        return ", ".join(p.name for p in self.factor.parameters())

    def dual_scale(self):
        """The number that turns the ball's multiplier into CVXPY's of the constraint as written (0 while
        p == 0, where the constraint is dropped)."""
        q = self._factor_value()
        if q is None or q == 0.0:
            return 0.0
        return q if self.divides else 1.0 / q

    def ball(self, violated):
        ineq, atom, bound = self.ineq, self.ineq.norm, self.ineq.bound
        if not bound._has_params:
            data = np.asarray(bound.value, dtype=float)
            if np.any(data < 0):
                raise ModelError(f"{ineq._text}: the bound is negative, so no point satisfies it")
        elif violated is not None:  # a negative t at a solve: "infeasible", naming the constraint
            violated.append(self._negative_bound)
        if atom.kind != "abs" and bound.size != 1:
            raise ModelError(f"{ineq._text}: the bound of a norm must be a scalar")
        params = _unique(list(bound.parameters()) + list(self.factor.parameters()))

        def radius():
            t, q = bound.value, self._factor_value()
            if t is None or q is None:
                return None
            t = np.asarray(t, dtype=float)
            if np.any(t < 0):  # no point (the check in violated ends the solve "infeasible"): the set reads 0
                t = np.zeros_like(t)
            elif q == 0.0:
                if self.divides:
                    raise ModelError(f"{ineq._text}: division by zero: the divisor {short_repr(self.factor)} is 0 "
                                     f"at this solve ({self._names()})")
                if self.constant and self._constant_too_large() is not None:
                    # norm(p * e + c) <= t at p == 0 reads norm(c) <= t, false here: the check in violated
                    # ends the solve "infeasible" (the set reads t)
                    pass
                elif self.others is None:
                    # p == 0 while the model is lowered: the sets that would hold e are not known yet (the
                    # entry bounds' boxes come later), so the ball reads t, as at p = 1; each solve's refresh
                    # then reads the loose radius (a compile at p = 1 followed by a solve at p = 0)
                    pass
                else:
                    t = self._loose_radius(np.broadcast_to(t, atom.shape) if atom.kind == "abs" else t)
            else:
                t = t * q if self.divides else t / q
            return float(t.reshape(())) if atom.kind != "abs" else np.broadcast_to(t, atom.shape).copy()

        label = f"bound of {ineq._text} over |{short_repr(self.factor)}|"
        data = ComputedData(radius, params, label)
        self._radius_data = [data]
        if atom.kind == "abs":
            lower = ComputedData(lambda: None if radius() is None else -radius(), params, f"-{label}")
            self._radius_data.append(lower)
            inner = Box(self.expr, lower, data)
        else:
            cls = {"l1": L1Ball, "l2": L2Ball, "linf": LinfBall, "nuc": TraceNormBall}[atom.kind]
            inner = cls(self.expr, data)
        if not self.constant:
            return inner
        if violated is not None:  # p == 0: the constraint reads norm(c) <= t, false for some data
            violated.append(self._constant_too_large)
        return self._centered(inner)

    def _constant_value(self):
        """``c``, the sum of the argument's terms without variables, broadcast to its shape (None while a
        Parameter has no value)."""
        total = np.zeros(tuple(self.expr.shape))
        for sign, term in self.constant:
            value = term.value
            if value is None:
                return None
            total = total + sign * np.asarray(value, dtype=float)
        return total

    def _centered(self, inner):
        """``norm(p * e + c) <= t`` as ``norm(e + c / p) <= t / |p|`` (``norm(e + c p) <= t |p|`` for ``e / p``):
        the ball ``inner`` (on e, its radius read at each solve) around the center ``-c / p``, held as a
        :class:`~fwmodel.sets.preimage.MovingPreimage` whose offset is read from p and c at each solve. On
        an elementwise map of one variable, ``e = a * x[entries] + c0``, the preimage holds x itself (a copy:
        the ball bounds x, as a ball on ``p * x`` does); on another expression (``A @ x``) it is a set on e.
        While p == 0 the center is 0 (the constraint binds nothing there: the ball's radius is loose)."""
        from ..sets.preimage import MovingPreimage

        e = self.expr
        scale, base, held = np.ones(e.size), np.zeros(e.size), e
        variables = e.variables()
        if not isinstance(e, Variable) and len(variables) == 1:
            var = variables[0]
            A, c0 = linearize(e, {var.id: 0}, var.size)
            A = A.tocsr()
            if (A.nnz == A.shape[0] and np.all(np.diff(A.indptr) == 1) and not np.any(A.data == 0)
                    and np.bincount(A.indices, minlength=var.size).max(initial=0) <= 1):
                cols = A.indices
                in_order = cols.size == var.size and np.array_equal(cols, np.arange(var.size))
                held = var if in_order else (var if var.ndim == 1 else var.reshape(-1, order="C"))[cols]
                scale, base = np.asarray(A.data, dtype=float), np.asarray(c0, dtype=float).ravel()

        def offset():
            c, value = self._constant_value(), self.factor.value
            if c is None or value is None:
                return None
            q = float(np.asarray(value, dtype=float).reshape(()))
            if q == 0.0:
                if self.divides:  # (the radius names the division by zero)
                    return None
                return base
            return base + (c * q if self.divides else c / q).ravel()

        params = _unique([p for _, term in self.constant for p in term.parameters()] + list(self.factor.parameters()))
        moving = MovingPreimage(inner, held, scale, ComputedData(offset, params, f"center of {self.ineq._text}"))
        moving.derived_from = inner  # (the multiplier and prob.point_in read the ball through the map)
        self.inner = inner
        return moving

    def _constant_too_large(self):
        """A message while p == 0 and ``norm(c) > t`` (the constraint reads ``norm(c) <= t``), else None."""
        q, c, t = self._factor_value(), self._constant_value(), self.ineq.bound.value
        if q != 0.0 or c is None or t is None or self.divides:
            return None
        t = np.asarray(t, dtype=float)
        kind = self.ineq.norm.kind
        if kind == "abs":
            excess = np.abs(c) - np.broadcast_to(t, c.shape)
            if not np.any(excess > 1e-9 * np.maximum(1.0, np.abs(c))):
                return None
            value, limit = float(np.max(np.abs(c))), float(np.min(t))
        else:
            value = {"l1": lambda v: np.abs(v).sum(), "l2": np.linalg.norm, "linf": lambda v: np.abs(v).max(),
                     "nuc": lambda v: np.linalg.norm(v, "nuc")}[kind](c.reshape(self.expr.shape) if kind == "nuc"
                                                                      else c.ravel())
            limit = float(t.reshape(()))
            if value <= limit + 1e-9 * max(1.0, abs(limit)):
                return None
        return (f"the constraint {self.ineq._text} holds for no point with the current values of {self._names()}: "
                f"{self._names()} is 0, so it reads norm(c) <= t with norm(c) = {float(value):.6g} > {limit:.6g}")

    def _negative_bound(self):
        """A message while the bound t is negative (no point satisfies the constraint, whatever p), else None."""
        value = self.ineq.bound.value
        if value is None or np.all(np.asarray(value, dtype=float) >= 0):
            return None
        names = ", ".join(p.name for p in self.ineq.bound.parameters())
        return (f"the constraint {self.ineq._text} holds for no point with the current values of {names}: its "
                f"bound is {float(np.min(value)):.6g} < 0")

    def hold_others(self, sets, bound_boxes, bounds, slots, offsets, n_v, peers=()):
        """Record the sets that may hold e's variables without this ball, and the entry bounds.

        Left out: the ball itself (its preimage on the variable, its symmetric variant) and the boxes of the
        entry bounds, which may have taken their missing sides from the ball (``bounds`` gives the entry
        bounds the user wrote); of this ball merged with a box (:class:`BoxedL1Ball`), the other part. The
        balls of the other Parameter factors (``peers``, their ``mine`` set) are kept with their owner: at a
        solve where that factor is 0 too, they hold nothing (of a merged one, the other part).

        The loose radius reads those sets' data and the entry bounds: their Parameters are added to the
        ball's data (its radius follows them, not only t and p)."""
        others = []
        for s in sets:
            made = _made_from(s, self.mine)
            if made is not None:
                s = _rest_of(s, made)
            if s is None or id(s) in bound_boxes:
                continue
            owner, alternative = None, None
            for peer in peers:
                made = _made_from(s, peer.mine)
                if made is not None:
                    owner, alternative = peer, _rest_of(s, made)
                    break
            others.append((s, owner, alternative))
        self.others = (others, bounds, slots, offsets, n_v)
        read = _set_parameters([s for s, _, _ in others])
        for var in self.expr.variables():
            read += _dynamic_parameters(var, bounds, [])
        for data in self._radius_data:
            data._parameters = _unique(data._parameters + read)

    def _loose_radius(self, t):
        """A radius that the other sets keep ``e`` strictly inside (p == 0: the constraint binds nothing).

        Each variable entry of e lies in the box that its other sets (``coordinate_bounds``) and its entry
        bounds imply; ``|e| <= |A| m + |c|`` entrywise (``e = A v + c``, m the box's largest magnitudes), and
        every norm here is at most that vector's (the nuclear norm at the entries' absolute sum). Twice that
        (at least 1, and at least t) leaves the ball inactive at every point the other sets allow."""
        ineq, kind = self.ineq, self.ineq.norm.kind
        trouble = None
        if self.others is None or self._busy:
            trouble = "no other set"
        else:
            others, bounds, slots, offsets, n_v = self.others
            sets = []
            for s, owner, alternative in others:
                if owner is not None and owner._factor_value() == 0.0:  # dropped at this solve too
                    if alternative is None:
                        continue
                    s = alternative
                sets.append(s)
            self._busy = True  # (a cycle through sets that read this ball: it holds nothing)
            try:
                held = {var.id: _holders(var, sets, slots, offsets, n_v) for var in self.expr.variables()}
                for s in _unique(h for hs in held.values() for h, _ in hs):
                    # the current data (a Parameter without a value: its own message): a set's block may come
                    # after this ball's in the solve's refresh order
                    s.refresh()
                try:
                    A, c = linearize(self.expr, offsets, n_v)
                    m = np.zeros(n_v)
                    for var in self.expr.variables():
                        off, size = slots[var]
                        lo, hi = _implied(var, held[var.id])
                        lo = np.maximum(lo, bounds.lo[off:off + size])
                        hi = np.minimum(hi, bounds.hi[off:off + size])
                        reach = np.maximum(np.abs(lo), np.abs(hi))
                        if not np.all(np.isfinite(reach)):
                            trouble = f"{var.name} is in no other bounded set"
                            break
                        m[off:off + size] = reach
                except ModelError:
                    trouble = "no other set"
            finally:
                self._busy = False
        if trouble is not None:
            var = self.expr.variables()[0]
            reads = "norm(c) <= t (c: the terms without variables)" if self.constant else "0 <= t"
            raise ModelError(
                f"{ineq._text}: {self._names()} is 0 at this solve, so the constraint reads {reads} and bounds "
                f"nothing (CVXPY drops it), but it is what holds {var.name} ({trouble}): FW-AL needs every "
                f"variable in a bounded set. Keep {self._names()} nonzero, or bound {var.name} with another set "
                f"as well (fm.Box({var.name}, lo, hi), {var.name} >= lo with {var.name} <= hi)")
        entry = np.abs(A) @ m + np.abs(np.asarray(c, dtype=float).ravel())
        if kind == "abs":
            return np.maximum(np.maximum(2.0 * entry.reshape(t.shape), 1.0), t)
        reach = {"l1": np.sum, "l2": np.linalg.norm, "linf": np.max, "nuc": np.sum}[kind](entry) if entry.size else 0.0
        return np.asarray(max(2.0 * float(reach), 1.0, float(t)))


def _made_from(s, ids):
    """How set ``s`` comes from the sets whose ids are ``ids``: "whole" (one of them, its preimage on the
    variable, its symmetric variant), "ball" or "box" (the L1 ball, or the box, of an L1 ball merged with a
    box, :class:`BoxedL1Ball`), else None."""
    def one_of(t):
        return id(t) in ids or id(getattr(t, "derived_from", None)) in ids or id(getattr(t, "inner", None)) in ids

    if one_of(s):
        return "whole"
    if isinstance(s, BoxedL1Ball):
        if one_of(s.ball):
            return "ball"
        if one_of(s.box):
            return "box"
    return None


def _rest_of(s, made):
    """What of set ``s`` is left without the part ``made`` (see :func:`_made_from`): None for the whole."""
    return {"ball": getattr(s, "box", None), "box": getattr(s, "ball", None)}.get(made)


def _clipped_bound(bound, ineq, violated):
    """``bound`` (data read from Parameters) clipped at 0, with a check in ``violated`` that names ``ineq``
    while the Parameters' values make it negative (see :func:`_lower_norm`)."""
    def clipped():
        value = bound.value
        return None if value is None else max(float(np.asarray(value, dtype=float).reshape(())), 0.0)

    def message():
        value = bound.value
        if value is None or float(np.asarray(value, dtype=float).reshape(())) >= 0:
            return None
        names = ", ".join(p.name for p in bound.parameters())
        return (f"the constraint {ineq._text} holds for no point with the current values of {names}: its bound "
                f"is {float(np.asarray(value, dtype=float).reshape(())):.6g} < 0")

    if violated is not None:
        violated.append(message)
    return ComputedData(clipped, bound.parameters(), repr(bound))


def _ellipsoids_where_unbounded(norm_sets, sets, variables, slots, offsets, n_v):
    """Hold ``fm.quad_form(e, P) <= t`` (P positive definite) in ``fm.Ellipsoid(e, P, t)`` where no other set
    holds e's variables (in place, in ``sets`` and ``norm_sets``).

    Step 1 made it the ball ``norm2(L' e) <= sqrt(t)`` on an image of e, which bounds ``L' e``, not e: next
    to a set that holds the whole variable (a portfolio's simplex) that was measured faster (58 iterations
    against 163, 0.47 s against 3.4 s at n = 300: the ellipsoid's LMO and projection are two n x n products
    each). Where other sets leave some entry of the variable free (none, or sets on slices), the ellipsoid,
    which bounds e itself, lets the model compile (it was "not in any bounded set"), and bounds one-sided
    bounds' boxes (``x >= 0``).
    """
    for k, (ineq, ball) in enumerate(norm_sets):
        found = getattr(ineq, "ellipsoid", None)
        if found is None or not any(s is ball for s in sets):
            continue
        e, P, level, eigen = found
        if all(_held_whole(var, [s for s in sets if s is not ball], slots, offsets, n_v)
               for var in variables if var.id in {v.id for v in e.variables()}):
            continue
        # (a negative Parameter value: the ball's check in the violated list names it; the set reads 0)
        ellipsoid = Ellipsoid(e, P, _clipped_bound(level, ineq, None) if level._has_params
                              else float(np.asarray(level.value).reshape(())), _eigendecomposition=eigen)
        # (q a Parameter in e = x - q: the center read at each solve, a MovingPreimage on x)
        sets[next(i for i, s in enumerate(sets) if s is ball)] = _on_the_variable(ellipsoid, moving=True)
        norm_sets[k] = (ineq, ellipsoid)


def _scaled_where_unbounded(norm_sets, sets, bounds, slots, offsets, n_v):
    """Hold ``norm(multiply(p, x) + c) <= t`` (p a vector Parameter expression; also ``abs``, x an elementwise map of
    one variable, c data or Parameters) on x itself where no other set and no pair of entry bounds holds x (in
    place, in ``sets``).

    Step 1 made it a ball on the expression ``p * x + c``: a block of its own tied to x by rows, which does not
    bound x (p may have zeros), so a model where it is the only set on x was refused. Where the expression is
    ``a * x[entries] + c`` with a and c read from Parameters (one entry of x per entry of the expression, the
    pattern fixed for generic values), the ball becomes a
    :class:`~fwmodel.sets.preimage.ScaledPreimage` on those entries: ``x* = (LMO_ball(d / a) - c) / a``, with
    ``a`` and ``c`` read at each solve, exact while no ``a_i`` is 0. An ``a_i = 0`` at a solve leaves x_i
    unbounded (the constraint no longer involves it): a ModelError naming the constraint, the Parameter and
    what to write instead. The ball keeps its multiplier (it is the set on ``p * x + c``, CVXPY's).
    """
    from ..sets.preimage import ScaledPreimage

    for ineq, ball in norm_sets:
        if getattr(ineq, "parameter_factor", None) is not None or not any(s is ball for s in sets):
            continue
        expr = ball.expr
        if not isinstance(ball, (L1Ball, L2Ball, LinfBall, Box)) or not expr.parameters():
            continue
        found = expr.variables()
        if len(found) != 1:
            continue
        var = found[0]
        off, size = slots[var]
        # entries held by both their bounds (the box to come) or by other sets: where all are, the ball stays
        # on the expression (as before: a p_i = 0 then leaves x_i to them)
        covered = np.isfinite(bounds.lo[off:off + size]) & np.isfinite(bounds.hi[off:off + size])
        for _, entries in _holders(var, [s for s in sets if s is not ball], slots, offsets, n_v):
            covered[slice(None) if entries is None else np.asarray(entries)] = True
        if covered.all():
            continue
        pattern = _structural_pattern(expr, {var.id: 0}, var.size)
        if (pattern.nnz != pattern.shape[0] or np.any(np.diff(pattern.indptr) != 1)
                or np.bincount(pattern.indices, minlength=var.size).max(initial=0) > 1):
            continue
        cols = pattern.indices.copy()
        rows = np.arange(cols.size)

        def source(expr=expr, var=var, cols=cols, rows=rows):
            if any(p.value is None for p in expr.parameters()):
                return None
            A, c = linearize(expr, {var.id: 0}, var.size)
            return np.asarray(A.tocsr()[rows, cols], dtype=float).ravel(), np.asarray(c, dtype=float).ravel()

        names = ", ".join(p.name for p in expr.parameters())

        def zero_message(zero, ineq=ineq, var=var, cols=cols, names=names):
            entries = ", ".join(str(int(j)) for j in cols[zero][:5]) + (", ..." if zero.size > 5 else "")
            return (f"{ineq._text}: the values of {names} make the coefficient of {var.name} 0 at its flat entries "
                    f"{entries} at this solve, so the constraint does not bound them, and no other set holds "
                    f"{var.name}: FW-AL needs every variable in a bounded set. Keep those coefficients nonzero, or "
                    f"bound {var.name} with another set as well (fm.Box({var.name}, lo, hi), {var.name} >= lo with "
                    f"{var.name} <= hi), which holds it for any value of {names}")

        in_order = cols.size == var.size and np.array_equal(cols, np.arange(var.size))
        selection = var if in_order else (var if var.ndim == 1 else var.reshape(-1))[cols]
        scaled = ScaledPreimage(ball, selection, source, expr.parameters(), zero_message)
        scaled.derived_from = ball  # (the multiplier and prob.point_in read the ball through the map)
        sets[next(i for i, s in enumerate(sets) if s is ball)] = scaled


def _held_whole(var, sets, slots, offsets, n_v):
    """Whether ``sets`` hold every entry of ``var`` directly (the whole variable, or slices covering it)."""
    covered = np.zeros(var.size, dtype=bool)
    for _, entries in _holders(var, sets, slots, offsets, n_v):
        if entries is None:
            return True
        covered[np.asarray(entries)] = True
    return bool(covered.all())


def _simplex_groups(A, var_slots):
    """``(var, a, group_of_entry, axis)`` when the rows of A sum disjoint groups of var's entries.

    That is: one coefficient a in every row, all in the columns of one
    variable, every entry of it in exactly one row, and the rows are the
    groups of ``fm.Simplex(var, axis=axis)`` (in any order) -- ``sum(x) == t``
    (axis None) or ``fm.sum(X, axis=1) == t`` (every row of X a simplex).
    ``group_of_entry[j]`` is the row of A that entry j is summed in.
    """
    A = A.tocsr()
    cols, data = A.indices, A.data
    if cols.size == 0 or not np.all(data == data[0]) or np.any(np.diff(A.indptr) == 0):
        return None
    for var, (off, size) in var_slots.items():
        if cols.size != size or cols.min() != off or cols.max() != off + size - 1:
            continue
        group_of_entry = np.full(size, -1, dtype=np.intp)
        group_of_entry[cols - off] = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        if np.any(group_of_entry < 0):  # an entry in two rows
            return None
        if A.shape[0] == 1:
            return var, float(data[0]), group_of_entry, None
        axis = _simplex_axis(var.shape, group_of_entry.reshape(var.shape), A.shape[0])
        return None if axis is False else (var, float(data[0]), group_of_entry, axis)
    return None


def _simplex_axis(shape, groups, n_groups):
    """The ``axis`` of ``fm.Simplex`` whose groups are ``groups`` (labels in any order), else False."""
    import itertools

    ndim = len(shape)
    for k in range(1, ndim):
        for summed in itertools.combinations(range(ndim), k):
            kept = [a for a in range(ndim) if a not in summed]
            expected = np.ravel_multi_index(tuple(np.indices(shape)[a] for a in kept), tuple(shape[a] for a in kept))
            if int(expected.max()) + 1 != n_groups:
                continue
            relabel = np.full(n_groups, -1, dtype=np.intp)
            relabel[expected.ravel()] = groups.ravel()
            if np.array_equal(relabel[expected.ravel()], groups.ravel()) and np.unique(relabel).size == n_groups:
                return summed[0] if k == 1 else summed
    return False


def _common_total(eq, c, a):
    """The one total of all the groups of ``fm.sum(x, axis) == t`` (a simplex has one total)."""
    totals = -np.asarray(c, dtype=float) / a
    if np.ptp(totals) > 1e-12 * max(1.0, float(np.abs(totals).max())):
        raise ModelError(f"{short_repr(eq)}: the groups' totals differ ({totals.min():g} to {totals.max():g}) "
                         "where the model was compiled with one total for all groups (its Parameters were "
                         "scalars whose values made the totals equal); write the totals as a vector Parameter")
    return float(totals[0])


def _feasible_total(total, constraint, var, violated, domain=">= 0"):
    """A budget's total for its Simplex, with a negative constant total recorded as infeasible.

    ``sum(x) <= t`` or ``== t`` with ``x >= 0`` and ``t < 0`` (in some group)
    holds for no x: the problem is infeasible on data alone (CVXPY's answer),
    not a bad set. The message goes to ``violated`` (the solve then ends
    "infeasible" naming the constraint and the group) and the simplex gets
    the total 0 in those groups, so that the model still compiles. A total
    read from Parameters gets the same treatment at each solve: the simplex
    reads it clipped at 0, and ``violated`` gets a check that gives the
    message while the Parameters' values make it negative (None otherwise).
    Totals below 0 by rounding (within 1e-9 of the largest, as the fixed
    constraints' test) are taken as 0. A PSD trace ball's radius (``trace(X) <= t``
    with ``X >> 0``, ``domain=">> 0"``) gets the same treatment.
    """
    def message(value, parameters=None):
        arr = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
        if not arr.size or float(arr.min()) >= -1e-9 * max(1.0, float(np.abs(arr).max())):
            return None
        group = f" in group {int(np.argmin(arr))}" if arr.size > 1 else ""
        values = "" if parameters is None else f" with the current values of {', '.join(p.name for p in parameters)}"
        return (f"the constraint {getattr(constraint, '_text', short_repr(constraint))} does not hold for any "
                f"{var.name} {domain}{values}: its total is {float(arr.min()):.6g} < 0{group}")

    def clipped(value):
        return np.maximum(value, 0.0) if np.ndim(value) else max(float(value), 0.0)

    if isinstance(total, ComputedData):
        def current():
            value = total.value
            return None if value is None else clipped(value)

        violated.append(lambda: None if total.value is None else message(total.value, total.parameters()))
        return ComputedData(current, total.parameters(), total.label)
    found = message(total)
    if found is not None:
        violated.append(found)
    return clipped(np.asarray(total, dtype=float)) if np.size(total) and float(np.min(total)) < 0 else total


def _budget_simplex(ineq, rows, A, slots, fixed_zero_lower, offsets, n_v, violated):
    """``(simplex, ineq, simplex, a, groups, rows)`` when the rows of ``ineq`` are ``a * fm.sum(X, axis) <= t``.

    The rows (all of the inequality's general rows) sum disjoint groups of one
    variable, every entry of it once, with one coefficient ``a > 0``, and the
    variable is fixed ``>= 0``: ``{X >= 0, sum of each group <= t_g}`` is a
    product of "simplices with <=" (each the convex hull of a simplex and the
    origin), ``Simplex(X, t, axis, equality=False)``, whose LMO picks per
    group the most negative entry of the direction or the origin. ``t`` is
    one number when every row has the same bound (``<= 1``, a scalar
    Parameter), else one per group (a vector ``t``). Returns None otherwise;
    the rows then get slacks (item 5). The multiplier of each row comes
    from the simplex block's KKT conditions (``write_duals``).
    """
    found = _simplex_groups(A[rows], slots)
    if found is None or (ineq.parameters() and _coefficients_read_parameters(ineq.expr)):
        return None  # (coefficients that read a Parameter: the simplex would keep today's; a row follows them)
    var, a, group_of_entry, axis = found
    if axis is None or a <= 0 or var.size <= 1 or not fixed_zero_lower(var):
        return None
    total = _feasible_total(_budget_totals(ineq, rows, a, group_of_entry, var, axis, offsets, n_v), ineq, var,
                            violated)
    simplex = Simplex(var, total, axis=axis, equality=False)
    return simplex, ineq, simplex, a, group_of_entry, rows


def _budget_totals(constraint, rows, a, group_of_entry, var, axis, offsets, n_v):
    """The total of each group of ``a * fm.sum(X, axis) == t`` (or ``<= t``): one number where every row has
    the same (``== 1``, a scalar Parameter), else one per group in the simplex's group order (a vector t).

    ``rows``: the constraint's rows that sum the groups (None: all of them, in order); ``group_of_entry``
    maps X's entries to those rows. Parameter data is recomputed at each solve (:class:`ComputedData`).
    """
    probe = Simplex(var, 1.0, axis=axis)
    # the constraint's row of each of the simplex's groups, in the simplex's group order
    row_of_group = group_of_entry[probe._grouped(np.arange(var.size))[:, 0]]
    picked = row_of_group if rows is None else np.asarray(rows)[row_of_group]
    params = constraint.parameters()

    def totals():
        return -np.asarray(linearize(constraint.expr, offsets, n_v)[1], dtype=float).ravel()[picked] / a

    now = totals()
    if np.ptp(now) > 1e-12 * max(1.0, float(np.abs(now).max())) or any(p.size > 1 for p in params):
        return _data_from(totals, params, f"totals of {short_repr(constraint)}")
    return _data_from(lambda: _common_total(constraint, linearize(constraint.expr, offsets, n_v)[1].ravel()[picked],
                                            a), params, f"total of {short_repr(constraint)}")


def _coefficients_read_parameters(expr):
    """Whether a Parameter multiplies a variable in ``expr`` (``p * fm.sum(x)``, ``fm.sum(x) / p``).

    Its coefficients then change with the Parameter's value, which a compiled simplex, whose groups'
    coefficients are fixed, cannot follow: such a budget stays a row. A Parameter that is only added
    (``fm.sum(x) == t``) or stacked next to the variables changes the totals, which the simplex re-reads.
    """
    from ..expressions.affine import AddExpression, ConcatenateExpression

    return any(node._has_vars and not isinstance(node, (AddExpression, ConcatenateExpression))
               and any(arg._has_params and not arg._has_vars for arg in node.args)
               for node in expr._postorder())


def _slice_budget_groups(A, slots, fixed_zero_lower, skip, equality, mirror_side=None):
    """``(var, groups, a, sign)`` when every row of A is ``a_r * fm.sum`` of entries of one variable, else None.

    That is: each row has two or more entries, all of one variable, with one coefficient ``a_r`` (nonzero;
    ``> 0`` for the rows of an inequality, ``a_r * sum <= t``), no entry is in two rows, and the variable
    has more than one entry, is fixed ``>= 0`` on the rows' entries (``fixed_zero_lower``; the others
    may have any bounds: ``x[:3] >= 0, fm.sum(x[:3]) == 1, fm.abs(x[3:]) <= 1``) and not in ``skip`` (PSD variables,
    whose trace rows are balls). ``groups``: the sorted flat entries of each row, ``a`` the coefficients.
    The rows of ``fm.sum(X[0])``, ``fm.sum(x[:3])``, ``fm.sum(X[1:], axis=1)``, ``fm.sum(X[:, j])`` or
    ``fm.sum(x[[4, 1]])`` are such rows.

    ``sign`` is None for such rows; where the entries are not fixed ``>= 0`` but ``mirror_side(var, entries)``
    gives a side ``s`` (+1: every entry has a fixed floor ``B`` and no cap, some ``B < 0``; -1: every entry a
    fixed cap ``B`` and no floor: ``x <= 0``), the budget is a simplex on ``z = s (x - B) >= 0``
    (:func:`_slice_budgets`), and ``sign`` is s; an inequality then needs ``a_r * s > 0`` (``fm.sum(x[:3]) >= -1``
    with ``x <= 0``).
    """
    A = A.tocsr()
    counts = np.diff(A.indptr)
    if A.shape[0] == 0 or np.any(counts < 2):
        return None
    cols, data = A.indices, A.data
    first = data[A.indptr[:-1]]
    if np.any(data != np.repeat(first, counts)) or np.any(first == 0):
        return None
    for var, (off, size) in slots.items():
        if cols.min() < off or cols.max() >= off + size:
            continue
        local = cols - off
        if size <= 1 or var.id in skip:
            return None
        sign = None
        if not fixed_zero_lower(var, local):  # (floors on the budget's entries)
            sign = mirror_side(var, local) if mirror_side is not None else None
            if sign is None:
                return None
        if not equality and np.any(first * (1.0 if sign is None else sign) < 0):  # (a sum bounded on the open side)
            return None
        if np.bincount(local, minlength=size).max() > 1:  # groups that overlap: not one product of simplices
            return None
        groups = [np.sort(local[lo:hi]) for lo, hi in zip(A.indptr[:-1], A.indptr[1:])]
        return var, groups, first.astype(float), sign
    return None


def _slice_totals(picked, offsets, n_v, common=True, shifts=None):
    """The total ``-c_r / a - shift`` of each group ``(constraint, row r, a)`` of ``picked``, in that order
    (``shifts``: fixed data, one per group, 0 where None: a mirrored budget's ``s * sum(B)``).

    One number when all are equal and read no Parameter; with Parameters, one number read at each solve
    when all the constraints read the same scalar Parameters and the totals are equal now (``common``: a
    row loop ``[fm.sum(X[i]) == t for i in ...]`` is then the set of ``fm.sum(X, axis=1) == t``), else one
    per group (``t[i]`` of a vector Parameter).
    """
    constraints = _unique(c for c, _, _ in picked)

    def totals():
        consts = {id(c): np.asarray(linearize(c.expr, offsets, n_v)[1], dtype=float).ravel() for c in constraints}
        out = np.array([-consts[id(c)][r] / a for c, r, a in picked])
        if shifts is not None:
            out = out - shifts
        return out if out.size > 1 else float(out[0])

    def equal(values):
        values = np.atleast_1d(values)
        return np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max()))

    params = _unique(p for c in constraints for p in c.parameters())
    label = f"totals of {short_repr(constraints[0])}" + (f" and {len(constraints) - 1} more" if len(constraints) > 1
                                                          else "")
    now = totals()
    if not params:
        return float(np.atleast_1d(now)[0]) if equal(now) else now
    ids = {id(p) for p in params}
    if common and equal(now) and all(p.size == 1 for p in params) and all(
            {id(p) for p in c.parameters()} == ids for c in constraints):
        def one():
            values = np.atleast_1d(totals())
            if not equal(values):
                raise ModelError(f"{short_repr(constraints[0])}: the groups' totals differ ({values.min():g} to "
                                 f"{values.max():g}) where the model was compiled with one total for all groups "
                                 "(the budgets read the same scalar Parameters, whose values made the totals "
                                 "equal); write the totals as a vector Parameter, t[i] in the i-th budget")
            return float(values[0])

        return ComputedData(one, params, label)
    return ComputedData(totals, params, label)


def _slice_budgets(equalities, general, sets, bounds, slots, offsets, n_v, fixed_zero_lower, skip, shared_duals,
                   violated, mirror_side=None):
    """Budgets on selections of a variable's entries become simplices (item 4, per slice).

    ``x >= 0`` (fixed floors ``>= 0``) with ``fm.sum(X[0]) == 1``, ``fm.sum(x[:3]) <= t``,
    ``fm.sum(X[1:], axis=1) == 1`` or a loop ``[fm.sum(X[:, j]) == 1 for j in ...]``: the rows (equalities,
    or the general rows of inequalities, :func:`_slice_budget_groups`) are gathered per variable and
    kind (``==`` or ``<=``) into families of disjoint groups, the constraints in order, each into the first
    family whose groups it does not meet (a row budget and a column budget: two families, as
    ``fm.sum(X, axis=1) == 1`` next to ``fm.sum(X, axis=0) == 1`` gives two simplices). A family whose
    groups are the groups of an ``axis`` of the variable is ``Simplex(X, t, axis)``, the set of the axis
    form (so the same iterations); another becomes one simplex per group size on the selected entries,
    ``Simplex(x[entries].reshape(G, k), t, axis=1)`` (one copy of those entries, no rows), where it bounds
    an entry that no set and no elementwise bound bounds above (else its rows stay rows, as before: a sector
    cap ``fm.sum(w[:3]) <= 0.5`` next to ``fm.sum(w) == 1`` is a slack row). Totals: :func:`_slice_totals`,
    negative ones infeasible (:func:`_feasible_total`).

    Mirrored budgets: where the entries are bounded on one side only, all on the same side, by fixed bounds
    B that are not floors ``>= 0`` (``x <= 0`` with ``fm.sum(x[:5]) >= -1``, ``X <= 0`` with
    ``fm.sum(X, axis=0) == -1``, floors below 0; ``mirror_side``, see :func:`_slice_budget_groups`), the
    family's simplex is on ``z = s (x - B) >= 0``, held on x as its preimage (as :func:`_mirrored_simplex` does
    for a budget on the whole variable): ``a_r * sum(x_g) + c_r`` reads ``(a_r s) sum(z_g) + a_r sum(B_g) + c_r``,
    so the total of group g is ``s (t_g - sum(B_g))`` and its coefficient ``a_r s``; its multipliers come from
    the simplex's KKT conditions read in z, as the whole variable's.

    Returns ``(records, equalities, general)``: records ``(simplex, a, groups, members)`` for the dual
    values (see ``Lowered.slice_budgets``) and the equalities and general rows that stay rows.
    """
    def on_one_budget_variable(constraint):  # (cheap: before linearizing or slicing the rows)
        found = _unique(constraint.variables())
        # (the floors >= 0 are needed on the budget's entries only: _slice_budget_groups)
        return (len(found) == 1 and found[0].size > 1 and found[0].id not in skip
                and not (constraint.parameters() and _coefficients_read_parameters(constraint.expr)))

    candidates = []  # (constraint, equality?, its rows, var, groups, coefficients, mirror sign or None)
    for eq in equalities:
        if getattr(eq, "role", None) or id(eq) in shared_duals or not on_one_budget_variable(eq):
            continue
        found = _slice_budget_groups(linearize(eq.expr, offsets, n_v)[0], slots, fixed_zero_lower, skip, True,
                                     mirror_side)
        if found is not None:
            candidates.append((eq, True, np.arange(eq.size)) + found)
    for ineq, rows, A, _ in general:
        if not on_one_budget_variable(ineq):
            continue
        found = _slice_budget_groups(A[rows], slots, fixed_zero_lower, skip, False, mirror_side)
        if found is not None:
            candidates.append((ineq, False, rows) + found)
    if not candidates:
        return [], equalities, general

    families = []  # [var, equality?, entries covered, [(constraint, rows, groups, a)], mirror sign or None]
    for constraint, equality, rows, var, groups, a, sign in candidates:
        entries = np.concatenate(groups)
        family = next((f for f in families if f[0] is var and f[1] == equality and f[4] == sign
                       and not f[2][entries].any()), None)
        if family is None:
            family = [var, equality, np.zeros(var.size, dtype=bool), [], sign]
            families.append(family)
        family[2][entries] = True
        family[3].append((constraint, rows, groups, a))

    records, used = [], set()
    for var, equality, covered, members, sign in families:
        # every group of the family: (entries, constraint, its row, coefficient)
        groups = [(g, c, int(r), float(a_r)) for c, rows, gs, a in members for g, r, a_r in zip(gs, rows, a)]
        base = None
        if sign is not None:  # a simplex on z = s (x - B): B the bounds on the side s, fixed (mirror_side)
            off, size = slots[var]
            base = (bounds.lo if sign > 0 else bounds.hi)[off:off + size].copy()
        axis = False
        if covered.all() and len(groups) > 1 and var.ndim > 1:
            label = np.empty(var.size, dtype=np.intp)
            for k, (g, _, _, _) in enumerate(groups):
                label[g] = k
            axis = _simplex_axis(var.shape, label.reshape(var.shape), len(groups))
        if axis is not False:  # the groups of fm.sum(X, axis): that simplex
            grouped = Simplex(var, 1.0, axis=axis)._grouped(np.arange(var.size))
            layouts = [(var, axis, label[grouped[:, 0]], grouped)]
        else:
            off, size = slots[var]
            # (the side the simplex closes: above for floors, below for a mirrored budget on caps)
            other = 0 if sign is not None and sign < 0 else 1
            above = np.isfinite((bounds.lo, bounds.hi)[other][off:off + size]) | np.isfinite(
                _implied(var, _holders(var, sets, slots, offsets, n_v))[other])
            if np.all(above[covered]):  # other sets and bounds bound every entry: the rows stay rows
                continue
            flat = var.reshape(-1, order="C") if var.ndim != 1 else var
            layouts = []
            for k in sorted({g.size for g, _, _, _ in groups}):  # one simplex per group size
                order = np.array([i for i, (g, _, _, _) in enumerate(groups) if g.size == k])
                grouped = np.stack([groups[i][0] for i in order])
                expr = flat[grouped.ravel()] if order.size == 1 else flat[grouped.ravel()].reshape((order.size, k), order="C")
                # (the block is the selection: its entries in the order of grouped's rows)
                layouts.append((expr, None if order.size == 1 else 1, order,
                                np.arange(grouped.size).reshape(grouped.shape)))
        if sign is not None:  # in z: coefficients a_r s, totals shifted by s sum(B_g)
            groups = [(g, c, r, a_r * sign) for g, c, r, a_r in groups]
            shift = np.array([sign * float(base[g].sum()) for g, _, _, _ in groups])
        domain = ">= 0" if sign is None else "within its bounds"
        for constraint in _unique(c for _, c, _, _ in groups):  # negative totals: infeasible, named
            mine = [i for i, (_, c, _, _) in enumerate(groups) if c is constraint]
            own = [groups[i][1:] for i in mine]
            _feasible_total(_slice_totals(own, offsets, n_v, common=False,
                                          shifts=None if sign is None else shift[mine]),
                            constraint, var, violated, domain=domain)
        for expr, simplex_axis, order, grouped in layouts:
            picked = [groups[i][1:] for i in order]
            total = _feasible_total(_slice_totals(picked, offsets, n_v, shifts=None if sign is None else shift[order]),
                                    picked[0][0], var, [])  # (clipped at 0)
            if sign is None:
                simplex = Simplex(expr, total, axis=simplex_axis, equality=equality)
                sets.append(simplex)
            else:  # x = s z + B: the simplex on z, held on x (its block a copy of the entries, no rows)
                flat_base = base if expr is var else base[np.concatenate([groups[i][0] for i in order])]
                shaped = flat_base.reshape(expr.shape) if expr.shape else float(flat_base[0])
                simplex = Simplex(sign * (expr - shaped), total, axis=simplex_axis, equality=equality)
                preimage = _on_the_variable(simplex)
                if not isinstance(preimage, AffinePreimage):  # (not expected: x - B on distinct entries)
                    raise ModelError(f"{short_repr(picked[0][0])}: internal error, a budget on {var.name}'s bounded "
                                     "entries did not map to a set on the variable")
                sets.append(preimage)
            block_group = np.empty(grouped.size, dtype=np.intp)
            block_group[grouped.ravel()] = np.repeat(np.arange(order.size), grouped.shape[1])
            out = []
            for constraint in _unique(c for c, _, _ in picked):
                labels = np.array([s for s, (c, _, _) in enumerate(picked) if c is constraint])
                out.append((constraint, np.array([picked[s][1] for s in labels]), labels))
            records.append((simplex, np.array([a_r for _, _, a_r in picked]), block_group, out))
        used.update(id(c) for c, _, _, _ in members)
    return (records, [eq for eq in equalities if id(eq) not in used],
            [g for g in general if id(g[0]) not in used])


def _whole_var_with_equal_coefficients(A, var_slots):
    """``(var, a)`` when the single row A is ``a * sum(var)`` (every entry of one variable), else None."""
    cols, data = A.indices, A.data
    if cols.size == 0 or not np.all(data == data[0]):
        return None
    for var, (off, size) in var_slots.items():
        if cols.size == size and cols.min() == off and cols.max() == off + size - 1:
            return var, float(data[0])
    return None


def _mirrored_simplex(constraint, row, a, var, slots, bounds, param_bound_vars, offsets, n_v, violated, equality):
    """The set of ``a * sum(x) + c == 0`` (``<= 0``: ``equality`` False) on a variable x whose every entry is
    bounded on one side only, all on the same side, by a fixed bound ``B`` that is not a floor ``>= 0``:
    ``x <= 0`` (``Variable(nonpos=True)``, ``-x >= 0``) or ``2 * x + 1 >= 0``. With ``s`` the side's sign (+1
    for floors ``x >= B``, -1 for caps ``x <= B``), ``z = s * (x - B) >= 0`` and the constraint reads
    ``sum(z) == T`` (``<= T``), ``T = (-c - a * sum(B)) / (a * s)``: a simplex on z (``<=``: needs
    ``a * s > 0``), held on x as its preimage (:class:`~fwmodel.sets.preimage.AffinePreimage`, x = s * z + B;
    its LMO is the simplex's, mapped). Returns ``(preimage, simplex, a * s)`` or None. ``row``: the
    constraint's row (None: its only one). The total may read Parameters (read at each solve; a negative one
    is "infeasible" naming the constraint, as for a simplex); the bounds may not (the map is fixed)."""
    if var.id in param_bound_vars or var.size <= 1 or a == 0:
        return None
    off, size = slots[var]
    lo, hi = bounds.lo[off:off + size], bounds.hi[off:off + size]
    floors, caps = np.isfinite(lo), np.isfinite(hi)
    if floors.all() and not caps.any():
        if np.all(lo >= 0.0):
            return None  # (a simplex on x itself: the usual path)
        sign, base = 1.0, lo.copy()
    elif caps.all() and not floors.any():
        sign, base = -1.0, hi.copy()
    else:
        return None
    if not equality and a * sign <= 0:
        return None  # (sum(z) >= T: no bounded set)
    shift = float(np.sum(base))

    def total(constraint=constraint, row=row):
        c = np.asarray(linearize(constraint.expr, offsets, n_v)[1], dtype=float).ravel()
        return (-float(c[0 if row is None else row]) - a * shift) / (a * sign)

    held = _feasible_total(_data_from(total, constraint.parameters(), f"total of {short_repr(constraint)}"),
                           constraint, var, violated, domain="within its bounds")
    shaped = base.reshape(var.shape) if var.ndim else float(base[0])
    simplex = Simplex(sign * (var - shaped), held, equality=equality)
    preimage = _on_the_variable(simplex)
    if not isinstance(preimage, AffinePreimage):
        return None
    return preimage, simplex, a * sign


def lower_constraints(objective_expr, constraints):
    """Rewrite ``constraints`` into sets and equalities; see the module docstring.

    The numbered comments refer to the module docstring's items. They run in
    the order their inputs need: the norm sets and recognized structures
    first (the boxes are closed by them), the symmetric variants before the
    boxes, and the slacks last (their bounds use every other set).
    """
    sets, equalities, inequalities, semidefinite, hinges = [], [], [], [], []
    for i, c in enumerate(constraints):
        if isinstance(c, ConvexSet):
            sets.append(c)
        elif isinstance(c, Equality):
            equalities.append(c)
        elif isinstance(c, Inequality) and c.kind == "hinge":
            # fm.sum(fm.pos(e)) <= t: an auxiliary s >= 0 in its budget (a simplex, 4) and rows e - s <= 0 (5)
            hinges.append(c)
            inequalities.extend(c.hinge.constraints)
        elif isinstance(c, Inequality):
            inequalities.append(c)
        elif isinstance(c, PSDConstraint):
            semidefinite.append(c)
        elif isinstance(c, (bool, np.bool_)):
            raise ModelError(
                f"constraint #{i} is the Python bool {c}: a comparison was evaluated outside fwmodel "
                "(write constraints with fwmodel expressions, e.g. x == y, or as sets)"
            )
        else:
            raise ModelError(f"constraint #{i} ({c!r}) is neither a set (fm.ConvexSet), an equality "
                             "(expr == expr) nor an inequality (expr <= expr)")
    for s in sets:
        # data read from Parameters that had no value when the set was built (None until a refresh): the
        # steps below read the sets' data (slack bounds, merged sets, closed boxes), so read it now; a
        # Parameter still without a value is a ModelError naming it
        s.refresh()
    # a set on a * x + c (elementwise, a != 0) holds x itself (see AffinePreimage); with c read from
    # Parameters (fm.L1Ball(x - q, r)) where nothing else holds x, around a center moved at each solve
    sets = _moving_where_unbounded([_on_the_variable(s) for s in sets])
    if not inequalities and not semidefinite and not any(
            _has_attributes(v) for v in _all_variables(objective_expr, sets, equalities)):
        # the explicit-set model: nothing to rewrite but the merged pairs of sets (7)
        sets, redundant = _without_nested_balls(sets)
        return Lowered(sets=_boxed_l1_balls(_capped_simplices(sets, equalities), equalities), equalities=equalities,
                       redundant_balls=redundant)

    _check_parameter_values(objective_expr, sets, equalities, inequalities)

    # 1. norm bounds are sets (each remembered for its dual_value, see compile.write_norm_duals)
    norm_sets = []
    shared_duals = set()
    violated_constant_rows, constant_rows = [], []
    for ineq in inequalities:
        if ineq.kind == "norm":
            held = _lower_norm(ineq, violated_constant_rows)
            # norm(p * e + c) <= t: the ball around its moving center (ParameterFactor._centered); its
            # multiplier is the ball's
            ball = getattr(held, "derived_from", None) or held
            norm_sets.append((ineq, ball))
            sets.append(_on_the_variable(held))
            if getattr(ineq, "parameter_factor", None) is not None:
                ineq.parameter_factor.own = sets[-1]
    # 1b. a ball that contains another ball on the same variable constrains nothing: dropped (its multiplier is 0)
    sets, redundant_balls = _without_nested_balls(sets)
    tangent_balls = {}  # id(ball) -> the box of the single point it was replaced by (_points_of_tangent_balls)
    affine = [q for q in inequalities if q.kind == "affine"]
    # the data pieces of maximum(x, 0) <= t (the 0, t data): no rows, true or false on data at each solve
    violated_constant_rows.extend(q.violated_data for q in affine if q.data_pieces)

    variables = _all_variables(objective_expr, sets, equalities, affine + semidefinite)
    offsets, off = {}, 0
    for var in variables:
        offsets[var.id] = off
        off += var.size
    n_v = off
    slots = {var: (offsets[var.id], var.size) for var in variables}
    # 1c. an L2 ball whose equalities on single entries leave it no room: the single point it is
    sets = _points_of_tangent_balls(sets, equalities, offsets, n_v, tangent_balls)

    # 2. single-entry rows are bounds; the other rows are general
    bounds = EntryBounds(variables, offsets, n_v)
    # (the entry of a 1x1 PSD variable: an upper bound on it is trace(X) <= t, a PSD trace ball (4), which
    # gives the constraint its multiplier)
    psd_scalars = np.array(sorted(offsets[var.id] for var in variables if var.size == 1 and (
        var.PSD or any(q.on_the_variable() and q.variable.id == var.id for q in semidefinite))), dtype=np.intp)
    general = []  # (inequality, rows, A, c)
    for ineq in affine:
        A, c = linearize(ineq.expr, offsets, n_v)
        within_data_limit(A, c, ineq._text)
        nnz = np.diff(A.indptr)
        structure = None
        if ineq.parameters():
            # the rows' entries whatever the Parameters' values (a value may make a coefficient 0 at this
            # solve only: multiply(s, x) <= h with s[i] = 0 is still a bound on x[i] at the next one)
            structure = _structural_pattern(ineq.expr, offsets, n_v)
            nnz = np.diff(structure.indptr)
        if np.any(nnz == 0):
            # An entry without variables (a zero row of G in G @ x <= h) is true or false on data
            # alone, as CVXPY treats it: dropped when it holds, "infeasible" when it does not.
            # With Parameters: entries without variables whatever their values (p - p): refused.
            row = int(np.flatnonzero(nnz == 0)[0])
            if ineq.parameters():
                raise ModelError(f"{ineq._text}: entry {row} of the inequality has no variables whatever the "
                                 "Parameter values (its coefficients cancel); write it without that entry")
            constant = np.asarray(c, dtype=float).ravel()
            constant_rows.append((ineq, np.flatnonzero(nnz == 0)))
            for r in np.flatnonzero(nnz == 0):
                if constant[r] > 1e-9 * max(1.0, abs(constant[r])):
                    violated_constant_rows.append(
                        f"the constraint {ineq._text} does not hold at entry {int(r)}, which has no variables: "
                        f"it reads {constant[r]:.6g} <= 0")
        single = np.flatnonzero(nnz == 1)
        if single.size and psd_scalars.size:
            rows_of = (A if structure is None else structure)[single].tocsr()
            trace_rows = np.isin(rows_of.indices, psd_scalars) & (rows_of.data > 0)
            if trace_rows.any():
                nnz = nnz.copy()
                nnz[single[trace_rows]] = 2  # (general rows: _psd_trace_row makes them balls)
                single = single[~trace_rows]
        if single.size:
            if structure is None:
                bounds.add_rows(ineq, single)
            else:
                rows_of = structure[single].tocsr()
                bounds.add_rows(ineq, single, rows_of.indices, rows_of.data > 0)
        multi = np.flatnonzero(nnz > 1)
        if multi.size:
            general.append((ineq, multi, A, c))
    bounds.recompute()
    if any(ineq.parameters() for ineq, _ in bounds.rows):  # a bound row a Parameter value makes 0 <= h, false
        violated_constant_rows.append(bounds.violation)
    param_bound_vars = {var.id for var in variables if var.bounds is not None and
                        any(b is not None and hasattr(b, "_has_params") and b._has_params for b in var.bounds)}
    for ineq, rows in bounds.rows:
        if ineq.parameters():
            for var in ineq.variables():
                param_bound_vars.add(var.id)

    # Y >> 0 on the variable itself makes Y PSD, as PSD=True does; on a * Y + C it needs its own trace bound
    psd_ids = {var.id for var in variables if var.PSD} | {q.variable.id for q in semidefinite if q.on_the_variable()}
    psd_images = [q for q in semidefinite if not q.on_the_variable()]
    image_bounded = set()

    def fixed_zero_lower(var, entries=None):
        """Every entry (of ``entries``, flat in var: a slice budget's) fixed >= 0 (no Parameter): x >= 0, or
        floors lo >= 0 that the bound box keeps (the simplex holds x >= 0 and its budget; x[0] >= 0.2 next
        to it is a box on that entry, item 2-3)."""
        off, size = slots[var]
        floors = bounds.lo[off:off + size]
        return var.id not in param_bound_vars and np.all((floors if entries is None else floors[entries]) >= 0.0)

    def mirror_side(var, entries):
        """The side (+1 floors, -1 caps) on which every one of ``entries`` (flat in var) is bounded, fixed (no
        Parameter), with no bound on the other side: a budget on them is a simplex on ``s (x - B)``
        (:func:`_slice_budgets`); None otherwise."""
        if var.id in param_bound_vars:
            return None
        off, size = slots[var]
        floors = np.isfinite(bounds.lo[off:off + size][entries])
        caps = np.isfinite(bounds.hi[off:off + size][entries])
        if floors.all() and not caps.any():
            return 1.0
        if caps.all() and not floors.any():
            return -1.0
        return None

    # 4. recognized structures: simplices from sum(x) == t and sum(x) <= t, PSD trace balls
    absorbed, absorbed_equalities = {}, []
    trace_bounds = []  # (trace(E) <= r or trace(E) == r, the PSD trace ball it made)
    kept_equalities = []
    diagonal_rows = {}  # var id -> [(equality, diagonal positions, coefficients, values)]: rows X_ii == d_i
    for eq in equalities:
        found = None
        if not getattr(eq, "role", None):
            A, c = linearize(eq.expr, offsets, n_v)
            found = _simplex_groups(A, slots)
        if (found is not None and found[0].size > 1 and fixed_zero_lower(found[0])
                and not (eq.parameters() and _coefficients_read_parameters(eq.expr))):
            var, a, group_of_entry, axis = found
            if axis is None:
                total = _data_from(lambda eq=eq, a=a: _common_total(eq, linearize(eq.expr, offsets, n_v)[1], a),
                                   eq.parameters(), f"total of {short_repr(eq)}")
            else:  # fm.sum(X, axis=1) == t: one total, or one per group (t a vector)
                total = _budget_totals(eq, None, a, group_of_entry, var, axis, offsets, n_v)
            simplex = Simplex(var, _feasible_total(total, eq, var, violated_constant_rows), axis=axis)
            sets.append(simplex)
            absorbed[id(eq)] = (simplex, a, group_of_entry)
            absorbed_equalities.append(eq)
            continue
        if found is not None and found[3] is None and not (eq.parameters()
                                                            and _coefficients_read_parameters(eq.expr)):
            # sum(x) == t with x <= 0, or with floors below 0 (sum(2 * x + 1) == 3, 2 * x + 1 >= 0): a simplex
            # on the image s * (x - B) >= 0 of x
            mirrored = _mirrored_simplex(eq, None, found[1], found[0], slots, bounds, param_bound_vars, offsets,
                                         n_v, violated_constant_rows, True)
            if mirrored is not None:
                sets.append(mirrored[0])
                absorbed[id(eq)] = (mirrored[1], mirrored[2], found[2])
                absorbed_equalities.append(eq)
                continue
        kept_equalities.append(eq)
        if not getattr(eq, "role", None) and psd_ids and not eq.parameters():
            found_diagonal = _psd_diagonal_rows(A, c, slots, psd_ids)
            if found_diagonal is not None:  # diag(X) == d: fixes X's diagonal, so trace X (4b)
                var, positions, a, values = found_diagonal
                diagonal_rows.setdefault(var.id, []).append((eq, positions, a, values))
        if not getattr(eq, "role", None) and eq.size == 1 and (psd_ids or psd_images):
            # trace(E) == r for a PSD E: the PSD trace ball of radius r bounds E; the row stays (ball ∩ row)
            ball, constraint = _psd_ball_of_trace_equality(eq, A, c, slots, psd_ids, psd_images, offsets, n_v)
            if ball is not None:
                sets.append(ball)
                shared_duals.add(id(eq))  # the row and the ball share its multiplier
                trace_bounds.append((eq, getattr(ball, "derived_from", None) or ball))
                if constraint is not None:
                    image_bounded.add(id(constraint))
    equalities = kept_equalities

    remaining = []
    budget_rows = []  # (inequality, the simplex a row sum(x) <= t became, a, groups, row)
    for ineq, rows, A, c in general:
        budget = (_budget_simplex(ineq, rows, A, slots, fixed_zero_lower, offsets, n_v, violated_constant_rows)
                  if rows.size > 1 else None)
        if budget is not None:  # fm.sum(X, axis=1) <= t with X >= 0: one simplex per row of X, "<="
            sets.append(budget[0])
            budget_rows.append(budget[1:])
            continue
        left = []
        for r in rows:
            row = A[r]
            found = _whole_var_with_equal_coefficients(row, slots)
            if (found is not None and found[1] > 0 and found[0].size > 1 and fixed_zero_lower(found[0])
                    and not (ineq.parameters() and _coefficients_read_parameters(ineq.expr))):
                var, a = found
                total = _data_from(lambda ineq=ineq, r=r, a=a: -float(linearize(ineq.expr, offsets, n_v)[1][r]) / a,
                                   ineq.parameters(), f"bound of {ineq._text}")
                total = _feasible_total(total, ineq, var, violated_constant_rows)
                # a hinge budget's hidden excess: the same set, projected (HingeExcessSimplex)
                sets.append(HingeExcessSimplex(var, total) if getattr(var, "hinge_excess", False)
                            else Simplex(var, total, equality=False))
                budget_rows.append((ineq, sets[-1], a, np.zeros(var.size, dtype=np.intp), r))  # its dual value
                continue
            if found is not None and not (ineq.parameters() and _coefficients_read_parameters(ineq.expr)):
                # -fm.sum(x) <= 1 with x <= 0: a simplex with <= on the image -x >= 0 (see _mirrored_simplex)
                mirrored = _mirrored_simplex(ineq, r, found[1], found[0], slots, bounds, param_bound_vars, offsets,
                                             n_v, violated_constant_rows, False)
                if mirrored is not None:
                    sets.append(mirrored[0])
                    budget_rows.append((ineq, mirrored[1], mirrored[2], np.zeros(found[0].size, dtype=np.intp), r))
                    continue
            image = _psd_image_trace_row(row, float(c[r]), psd_images, offsets, n_v)
            if image is not None:
                constraint, radius = image
                if ineq.parameters():
                    raise ModelError(f"{ineq._text}: the trace bound of {constraint._text} must be a number "
                                     "(not a Parameter expression)")
                sets.append(_on_the_variable(TraceNormBall(constraint.expr, radius, psd=True)))
                trace_bounds.append((ineq, getattr(sets[-1], "derived_from", None) or sets[-1]))
                image_bounded.add(id(constraint))
                continue
            psd = _psd_trace_row(row, slots, psd_ids)
            if psd is not None:
                var, a = psd
                radius = _data_from(lambda ineq=ineq, r=r, a=a: -float(linearize(ineq.expr, offsets, n_v)[1][r]) / a,
                                    ineq.parameters(), f"bound of {ineq._text}")
                # a negative t (a Parameter's value at a solve): "infeasible" naming the constraint, as CVXPY
                radius = _feasible_total(radius, ineq, var, violated_constant_rows, domain=">> 0")
                sets.append(TraceNormBall(var, radius, psd=True))
                trace_bounds.append((ineq, sets[-1]))
                continue
            left.append(r)
        if left:
            remaining.append((ineq, np.asarray(left), A, c))
    general = remaining
    for q in psd_images:
        if id(q) not in image_bounded:
            raise ModelError(f"{q._text}: FW-AL needs a bounded set, and a semidefinite cone is not bounded; add a "
                             f"trace bound on the same matrix, fm.trace({short_repr(q.expr, 60)}) <= r (a PSD trace "
                             f"ball, fm.TraceNormBall(..., r, psd=True))")

    # 4c. budgets on selections of a variable's entries (fm.sum(X[0]) == 1, fm.sum(x[:3]) <= t, a loop over
    #     rows or columns): simplices, as their axis forms are
    slice_budgets, equalities, general = _slice_budgets(
        equalities, general, sets, bounds, slots, offsets, n_v, fixed_zero_lower, psd_ids,
        shared_duals, violated_constant_rows, mirror_side)

    # 6a. symmetric variables: symmetric variants of the sets that hold them whole. A simplex
    #     that replaced the user's equality keeps its symmetry rows: its equality's dual is
    #     recovered from the block's gradient per group (Compiled.write_duals), which the
    #     symmetric variant's shared entries would break.
    absorbing = {id(simplex) for simplex, _, _ in absorbed.values()} | {id(b[0]) for b in slice_budgets}
    sets = [s if id(s) in absorbing else _symmetric(s) for s in sets]

    diagonal_duals = []  # (diag(X) == d, the PSD trace ball it closed, the rows' coefficients)
    # 4b. PSD variables without a PSD trace ball: close with the diagonal's upper bounds
    #     (trace X = sum_i X_ii <= sum_i hi_ii), from the bounds and the other sets
    for var in variables:
        if var.id in psd_ids and not any(s.implies_psd and s.expr is var for s in sets):
            holders = _holders(var, sets, slots, offsets, n_v)
            n, off = var.shape[0], offsets[var.id]
            diagonal = np.arange(n) * (n + 1)

            fixed = np.full(n, np.inf)  # the diagonal entries that rows X_ii == d_i fix (no Parameter)
            for _, positions, _, values in diagonal_rows.get(var.id, ()):
                fixed[positions] = np.minimum(fixed[positions], values)

            def trace_bound(var=var, holders=holders, diagonal=diagonal, off=off, fixed=fixed):
                return float(np.minimum(np.minimum(bounds.hi[off + diagonal], fixed),
                                        _implied(var, holders)[1][diagonal]).sum())

            if not np.isfinite(trace_bound()):
                declared = "PSD=True" if var.PSD else f"constrained {var.name} >> 0"
                raise ModelError(f"variable {var.name} is {declared} but nothing bounds it (FW-AL needs a bounded "
                                 f"set, and a semidefinite cone is not bounded): add fm.trace({var.name}) "
                                 f"<= t (a PSD trace ball, fm.TraceNormBall({var.name}, t, psd=True)), bound its "
                                 f"diagonal ({var.name} <= hi), or put it in a bounded set")
            params = _set_parameters([h for h, _ in holders]) + (
                _dynamic_parameters(var, bounds, []) if var.id in param_bound_vars else [])
            radius = _data_from(trace_bound, params, f"trace bound of {var.name}")
            sets.append(TraceNormBall(var, radius, psd=True, symmetric=True))
            rows = diagonal_rows.get(var.id, ())
            if rows and np.all(np.isfinite(fixed)) and var.id not in param_bound_vars and not params:
                # diag(X) == d (MaxCut's SDP): trace X == sum(d) is the ball's radius, so the ball is active
                # and its mu is part of each row's multiplier: CVXPY's nu_i = y_i + mu / a_i (write_psd_duals)
                for eq, positions, a, _ in rows:
                    shared_duals.add(id(eq))
                    diagonal_duals.append((eq, sets[-1], a))
            else:
                sets[-1].implied_trace = True  # its trace bound is the diagonal's bounds': no multiplier of its own
                for eq, _, _, _ in rows:
                    shared_duals.add(id(eq))  # (the row and the bounds share the ball's multiplier: None)

    _ellipsoids_where_unbounded(norm_sets, sets, variables, slots, offsets, n_v)
    _scaled_where_unbounded(norm_sets, sets, bounds, slots, offsets, n_v)

    # 2b. single-entry equalities (x[0] == 1, a scalar x == 1, fm.sum(x) == 1 on a one-entry x) on entries
    #     that nothing else bounds on both sides: bounds lo = hi (a box with equal sides), as CVXPY solves them
    #     (elsewhere they stay rows, as before)
    equalities = _single_entry_equalities(equalities, bounds, sets, variables, slots, offsets, n_v,
                                          param_bound_vars)

    # 2-3. one box per variable from the elementwise bounds, closed by the sets
    entry_sets = list(sets)
    derived_bounds = {}
    bound_boxes = set()  # ids of the boxes of the variables' entry bounds (and their symmetric variants)
    for var in variables:
        taken = []
        box = _bound_box(var, bounds, entry_sets, slots, offsets, n_v, param_bound_vars, shared_duals, taken,
                         rows=lambda: _row_pieces(equalities, general, offsets, n_v))
        if box is not None:
            sets.append(_symmetric(box))
            bound_boxes.update((id(box), id(sets[-1])))
            for s, entries, position, lo_side, hi_side in taken:  # (a ball's multiplier: with the box's)
                derived_bounds[id(s)] = (box, var, entries, position, lo_side, hi_side, s)

    # 5. general rows: a slack in a box bounded by the LMOs
    slack_of = {}
    slack_units = []
    slacks = []  # (ineq, rows, units, upper): one slack each
    for ineq, rows, A, c in general:
        if getattr(ineq, "implied_domain", None) is not None and _domain_row_holds(ineq, rows, sets, slots, offsets, n_v):
            continue  # an fm.smooth atom's domain that the sets already keep: no row
        touched = _unique(var for var in ineq.variables())
        holders = {var.id: _holders(var, sets, slots, offsets, n_v) for var in touched}
        units = _slack_units(A[rows], _norms_off_hulls(A[rows], touched, holders, offsets))
        if ineq.parameters():
            slack_units.append((units, lambda ineq=ineq, rows=rows, touched=touched, holders=holders: _slack_units(
                *(lambda A_rows: (A_rows, _norms_off_hulls(A_rows, touched, holders, offsets)))(
                    linearize(ineq.expr, offsets, n_v)[0][rows]))))
        for var in touched:
            if not holders[var.id]:
                raise ModelError(
                    f"{ineq._text}: variable {var.name} is not in any bounded set, so this inequality leaves it "
                    f"unbounded; bound it with a set that holds it: fm.Box({var.name}, lo, hi) or {var.name} >= lo "
                    f"with {var.name} <= hi, fm.norm1({var.name}) <= r, fm.L2Ball({var.name}, r), "
                    f"fm.Simplex({var.name})"
                )
        # (the rows' matrix as linearized above where no Parameter can change it, else again at each solve)
        linear = None if ineq.parameters() else (A, c)
        upper = _data_from(
            lambda ineq=ineq, rows=rows, touched=touched, holders=holders, units=units, linear=linear: _slack_upper(
                ineq, rows, touched, holders, offsets, n_v, linear) / units,
            ineq.parameters() + _set_parameters([h for hs in holders.values() for h, _ in hs]),
            f"slack bound of {ineq._text}")
        slacks.append((ineq, rows, units, upper))
    # inequalities whose slack bounds no Parameter moves share one slack variable, one box and so one block:
    # 150 constraints written one row at a time (a CVXPY habit) were 150 blocks, each with its own step,
    # oracle call and line search per iteration (200x the time of the same rows as one constraint)
    shared = [k for k, (_, _, _, upper) in enumerate(slacks) if not isinstance(upper, ComputedData)]
    if len(shared) < 2:
        shared = []
    shared_slack, start = None, 0
    if shared:
        shared_slack = Variable(sum(slacks[k][1].size for k in shared), name=f"slack({len(shared)} inequalities)")
        shared_slack.is_slack = True  # compiler-made: not one of the model's variables
    first_shared, sharing = (shared[0] if shared else None), set(shared)
    for k, (ineq, rows, units, upper) in enumerate(slacks):
        if k in sharing:
            if k == first_shared:  # the shared box where the first of its inequalities' would be
                sets.append(Box(shared_slack, 0.0, np.concatenate(
                    [np.broadcast_to(np.asarray(slacks[j][3], dtype=float), (slacks[j][1].size,)) for j in shared])))
            slack, at = shared_slack[start:start + rows.size], (start, start + rows.size)
            start += rows.size
            variable = shared_slack
        else:
            slack = variable = Variable(rows.size, name=f"slack({short_repr(ineq, 60)})")
            slack.is_slack = True  # compiler-made: not one of the model's variables
            at = (0, rows.size)
            sets.append(Box(slack, 0.0, upper))
        flat = ineq.expr if ineq.expr.ndim == 1 else ineq.expr.reshape(-1, order="C")
        picked = flat if rows.size == ineq.expr.size else flat[rows]
        eq = Equality(picked + (slack if np.all(units == 1.0) else units * slack), 0.0)
        eq.written_as = ineq._text  # what error messages about these rows name
        # (the slack's value: the rows' distances to their hyperplanes, for the duals)
        eq.slack_variable, eq.slack_entries = variable, at
        equalities.append(eq)
        slack_of[id(eq)] = (ineq, rows)

    # 6b. symmetric variables that no symmetric set holds whole: explicit rows
    for var in variables:
        if var.symmetric and not any(s.expr is var and s.keeps_symmetric for s in sets):
            iu = np.triu_indices(var.shape[0], 1)
            if iu[0].size:
                equalities.append(Equality(var[iu], var.T[iu]))
    # 7. a simplex and a box on the same variable: one capped simplex; an L1 ball and a box: one boxed L1 ball
    sets = _boxed_l1_balls(_capped_simplices(sets, equalities), equalities)
    # norm(p * e) <= t: what else holds e, should p be 0 at a solve
    factors = [(ineq.parameter_factor, ball) for ineq, ball in norm_sets
               if getattr(ineq, "parameter_factor", None) is not None]
    for factor, ball in factors:
        factor.mine = {id(ball), id(factor.own)}
    for factor, _ in factors:
        factor.hold_others(sets, bound_boxes, bounds, slots, offsets, n_v,
                           peers=[peer for peer, _ in factors if peer is not factor])
    return Lowered(sets=sets, equalities=equalities, absorbed=absorbed, slack_of=slack_of, slack_units=slack_units,
                   entry_bounds=bounds,
                   absorbed_equalities=absorbed_equalities, norm_sets=norm_sets, shared_duals=shared_duals,
                   derived_bounds=derived_bounds, diagonal_duals=diagonal_duals,
                   semidefinite=semidefinite, budget_rows=budget_rows, slice_budgets=slice_budgets,
                   trace_bounds=[(q, ball) for q, ball in trace_bounds if q.expr.size == 1],
                   violated_constant_rows=violated_constant_rows, constant_rows=constant_rows, hinges=hinges,
                   redundant_balls=redundant_balls, tangent_balls=tangent_balls)


def _points_of_tangent_balls(sets, equalities, offsets, n_v, replaced):
    """Replace each L2 ball that equalities on single entries leave without room by its single point.

    ``sum_squares(x - 1) <= 0.04`` with ``x[0] == 1.2``: the hyperplane is tangent to the ball, and the
    feasible set is the one point ``(1.2, 1, ..., 1)``. Slater's condition fails, no multiplier is
    attained (an interior-point solver's grow without limit: Clarabel answered "optimal_inaccurate" with
    5,571 and -2,233), and FW-AL approached the point for 10,000 iterations ("max_iter",
    benchmarks/small_degenerate.py). For a ball ``||a * x + c||_2 <= r`` on a whole variable (no
    Parameters) whose entries ``i`` in I are fixed at ``v_i`` by Parameter-free equalities, the others
    satisfy ``sum_{j not in I} z_j^2 <= r^2 - sum_{i in I} z_i^2`` (``z = a * x + c``); where that room is 0 up
    to the data's rounding (1.2 - 1 squared is 0.04 + 7e-18; 1.0002 - 1 is 2e-4 to 7e-13 relative: each z_i
    within 4 eps (|a_i v_i| + |c_i|), the sums within 64 eps of their size), the ball is the box
    whose sides are both that point (z_j = 0: ``x_j = -c_j / a_j``; ``x_i = v_i``), which holds it exactly;
    the equalities stay rows, met there. A room clearly negative is left to the solve (infeasible), a
    positive one is a ball with an interior. ``replaced`` gets ``id(ball) -> box``; the ball's ``dual_value``
    is None (no multiplier is attained).
    """
    fixed = {}  # variable offset -> {entry: value} from single-entry equalities without Parameters
    for eq in equalities:
        if eq.parameters():
            continue
        A, c = linearize(eq.expr, offsets, n_v)
        A = A.tocsr()
        for r in np.flatnonzero(np.diff(A.indptr) == 1):
            col, coef = int(A.indices[A.indptr[r]]), float(A.data[A.indptr[r]])
            if coef != 0.0:
                fixed.setdefault(col, set()).add(-float(np.asarray(c).ravel()[r]) / coef)
    if not fixed:
        return sets
    out = []
    for s in sets:
        inner = s.inner if type(s) is AffinePreimage else s
        if (type(inner) is not L2Ball or not isinstance(s.expr, Variable) or s.parameters()
                or s.expr.id not in offsets):
            out.append(s)
            continue
        var = s.expr
        a = s._a if type(s) is AffinePreimage else np.ones(var.size)
        c = s._c if type(s) is AffinePreimage else np.zeros(var.size)
        a, c = np.broadcast_to(a, (var.size,)), np.broadcast_to(c, (var.size,))
        values = [fixed.get(offsets[var.id] + j) for j in range(var.size)]
        known = np.array([v is not None and len(v) == 1 for v in values])
        if not known.any() or any(v is not None and len(v) > 1 for v in values):
            out.append(s)
            continue
        point = -c / a
        point[known] = [next(iter(values[j])) for j in np.flatnonzero(known)]
        z = a[known] * point[known] + c[known]
        taken = float(np.sum(z ** 2))
        radius2 = float(inner.radius) ** 2
        # rounding: each z_i = a_i v_i + c_i carries eps (|a_i v_i| + |c_i|) of the data's own rounding (1.0002 - 1
        # is 2e-4 to 5e-13 relative), its square twice |z_i| that; the sums a few eps of their size
        err = 4 * np.finfo(float).eps * (np.abs(a[known] * point[known]) + np.abs(c[known]))
        if abs(radius2 - taken) > float(np.sum(2 * np.abs(z) * err + err ** 2)) + 64 * np.finfo(float).eps * (
                radius2 + taken):
            out.append(s)
            continue
        box = Box(var, point.reshape(var.shape), point.reshape(var.shape))
        replaced[id(inner)] = box
        out.append(box)
    return out


#: ``_BALL_CONTAINS[(inner, outer)](n)``: the factor c such that the inner kind's ball of radius r lies in the
#: outer kind's ball of radius c r in R^n, and in no smaller one (||x||_2 <= ||x||_1 <= sqrt(n) ||x||_2,
#: ||x||_inf <= ||x||_2 <= sqrt(n) ||x||_inf, ||x||_inf <= ||x||_1 <= n ||x||_inf, each attained)
_BALL_CONTAINS = {
    ("l1", "l1"): lambda n: 1.0, ("l2", "l2"): lambda n: 1.0, ("linf", "linf"): lambda n: 1.0,
    ("l1", "l2"): lambda n: 1.0, ("l1", "linf"): lambda n: 1.0, ("l2", "linf"): lambda n: 1.0,
    ("l2", "l1"): lambda n: math.sqrt(n), ("linf", "l2"): lambda n: math.sqrt(n), ("linf", "l1"): lambda n: float(n),
}


def _ball_kind(s):
    """"l1", "l2" or "linf" for a plain norm ball centered at 0 without Parameters on a whole variable; else None."""
    kind = {L1Ball: "l1", L2Ball: "l2", LinfBall: "linf"}.get(type(s))
    if kind is None or not isinstance(s.expr, Variable) or s.parameters() or getattr(s, "symmetric", None):
        return None
    return kind


def _without_nested_balls(sets):
    """Drop each L1, L2 or Linf ball that contains another such ball on the same variable.

    ``norm1(x) <= 1`` makes ``norm(x, 2) <= 1`` redundant (``||x||_2 <= ||x||_1``),
    but both as sets they are two copies of x tied by n consistency rows, and
    the rows' multipliers carry the other constraints' forces (a halfspace on
    one copy) from one copy to the other: an L1 ball, a redundant L2 ball and a
    halfspace near the L1 ball's best vertex took 9,566 iterations where the
    L1 ball and the halfspace alone took 639 (benchmarks/small_degenerate.py).
    Containment is decided on the radii alone (``_BALL_CONTAINS``), exactly, so
    the problem is the same; the dropped ball's multiplier is 0 (the smaller
    ball's KKT conditions hold without it). Balls with Parameters (a radius
    that may change between solves), on expressions or symmetric are kept.
    Returns the kept sets and ``{id(dropped ball): the ball it contains}`` (``prob.point_in`` of a dropped
    ball gives the point of the one it contains: the same variable's value).
    """
    balls = [(i, s, _ball_kind(s)) for i, s in enumerate(sets)]
    balls = [(i, s, kind) for i, s, kind in balls if kind is not None]
    dropped = {}  # index of a dropped ball -> the ball it contains
    for i, outer, outer_kind in balls:
        for j, inner, inner_kind in balls:
            if i == j or j in dropped or inner.expr is not outer.expr:
                continue
            # the inner ball's radius times the containment factor fits in the outer one (a tie between two
            # equal balls drops the later one only)
            fits = _BALL_CONTAINS[(inner_kind, outer_kind)](inner.size) * float(inner.radius) <= float(outer.radius)
            if fits and not (j > i and _BALL_CONTAINS[(outer_kind, inner_kind)](inner.size) * float(outer.radius)
                             <= float(inner.radius)):
                dropped[i] = inner
                break
    if not dropped:
        return sets, {}
    return [s for i, s in enumerate(sets) if i not in dropped], {id(sets[i]): kept for i, kept in dropped.items()}


# ---------------------------------------------------------------------- helpers
def _on_the_variable(s, moving=False):
    """``s`` as a set on the variable when its expression is ``a * x[entries] + c``.

    That is: one variable, no Parameters, every entry of the expression a
    distinct entry of the variable times a nonzero constant plus a constant
    (``x + 5``, ``2 * x``, ``x - x0``, ``-X.T``), but not a plain selection
    (``x``, ``x[2:5]``, ``X.T``, which the compiler copies directly). The
    result is an :class:`~fwmodel.sets.preimage.AffinePreimage` on the
    selected entries, so the set bounds the variable and its block is a copy.
    With ``moving`` (an ellipsoid where nothing else holds the variable,
    :func:`_ellipsoids_where_unbounded`), Parameters in ``c`` only
    (``x - q``) give a :class:`~fwmodel.sets.preimage.MovingPreimage` whose
    offset is read at each solve; other sets on such an expression keep
    their block and rows, as before.
    """
    expr = s.expr
    if isinstance(expr, Variable) or len(expr.variables()) != 1:
        return s
    var = expr.variables()[0]
    A, c = linearize(expr, {var.id: 0}, var.size)
    A = A.tocsr()
    if A.nnz != A.shape[0] or np.any(np.diff(A.indptr) != 1) or np.any(A.data == 0):
        return s
    if expr.parameters() and not (moving and _parameters_in_offset_only(expr, var, A)):
        return s
    moving = bool(expr.parameters())
    cols = A.indices
    # distinct entries: a count per entry of the variable (O(n); np.unique sorted or hashed 10^6
    # entries in 0.9 s, longer than the solve of TraceNormBall(X - X0) at d = 1000)
    if np.bincount(cols, minlength=var.size).max(initial=0) > 1 or (
            not moving and np.all(A.data == 1.0) and not np.any(c)):
        return s
    from ..sets.preimage import AffinePreimage, MovingPreimage

    in_order = cols.size == var.size and np.array_equal(cols, np.arange(var.size))
    selection = var if in_order else (var if var.ndim == 1 else var.reshape(-1, order="C"))[cols]
    if moving:
        # a * x + c(q) with Parameters in the offset only (``fm.quad_form(x - q, P) <= t``, ``fm.Box(x - q, lo,
        # hi)``): the offset is read at each solve (its rows in the order of S's entries, as A's)
        def offset():
            if any(p.value is None for p in expr.parameters()):
                return None
            return linearize(expr, {var.id: 0}, var.size)[1]

        data = ComputedData(offset, expr.parameters(), f"offset of {short_repr(expr)}")
        preimage = MovingPreimage(s, selection, A.data, data)
    else:
        preimage = AffinePreimage(s, selection, A.data, c)
    preimage.derived_from = s  # prob.point_in(s) maps the block's x back to a * x + c (see image_of)
    return preimage


def _moving_where_unbounded(sets):
    """Hold a set given on ``a * x + c(q)`` (``fm.L1Ball(x - q, r)``, ``fm.Box(x - q, lo, hi)``,
    ``fm.Simplex(x - q)``; q a Parameter, in the offset only) on x itself, as a
    :class:`~fwmodel.sets.preimage.MovingPreimage` whose center is read at each solve, where no other of the
    sets holds every entry of x (a new list).

    Such a set was an expression block tied to x by rows, which does not bound x: alone on x the model was
    refused ("not in any bounded set"), where the same set around a constant center, or the norm bound
    ``fm.norm1(x - q) <= r``, already held x (item 0, item 1). Next to a set that holds x the block is kept
    as before.
    """
    out = list(sets)
    for i, s in enumerate(out):
        expr = getattr(s, "expr", None)
        if expr is None or isinstance(s, AffinePreimage) or not expr.parameters():
            continue
        found = expr.variables()
        if len(found) != 1:
            continue
        var = found[0]
        if _held_whole(var, out[:i] + out[i + 1:], None, {var.id: 0}, var.size):
            continue
        out[i] = _on_the_variable(s, moving=True)
    return out


def _parameters_in_offset_only(expr, var, A):
    """Whether ``expr = A x + c`` has its Parameters in ``c`` only: ``A`` is the same for two generic values of
    them (seeded, with their declared signs) as for the current ones (``A``), so that a set on ``expr`` is a
    set on x around a center that the Parameters move (``x - q``), not one that they scale (``p * x``)."""
    params = expr.parameters()
    saved = [p._value for p in params]
    rng = np.random.default_rng(12345)
    try:
        for _ in range(2):
            for p in params:
                generic = np.asarray(rng.uniform(1.0, 2.0, size=p.shape), dtype=float)
                if getattr(p, "psd", False) and len(p.shape) == 2:
                    generic = (generic + generic.T) / 2 + p.shape[0] * np.eye(p.shape[0])
                p._value = -generic if p.nonpos else generic
            other = linearize(expr, {var.id: 0}, var.size)[0].tocsr()
            if (other.shape != A.shape or not np.array_equal(other.indptr, A.indptr)
                    or not np.array_equal(other.indices, A.indices) or not np.array_equal(other.data, A.data)):
                return False
    finally:
        for p, value in zip(params, saved):
            p._value = value
    return True


def _has_attributes(var):
    return var.nonneg or var.nonpos or var.bounds is not None or var.symmetric


def _all_variables(objective_expr, sets, equalities, inequalities=()):
    exprs = [objective_expr] + [s.expr for s in sets] + [e.expr for e in equalities] + \
            [q.expr for q in inequalities]
    return _unique(v for e in exprs for v in e.variables())


def _check_parameter_values(objective_expr, sets, equalities, inequalities):
    params = [p for s in sets for p in s.parameters()]
    for q in list(equalities) + list(inequalities):
        params += q.parameters()
    for p in _unique(params):
        if p.value is None:
            raise ModelError(f"parameter {p.name} has no value: set {p.name}.value before solving")


def _data_from(compute, parameters, label):
    """A number (computed now) when no Parameter is involved, else a :class:`ComputedData`."""
    parameters = _unique(parameters)
    if not parameters:
        return compute()
    return ComputedData(compute, parameters, label)


def _set_parameters(sets):
    return [p for s in sets for p in s.parameters()]


def _psd_diagonal_rows(A, c, slots, psd_ids):
    """``(var, positions, a, values)`` when every row of ``A x + c == 0`` is ``a_i X_ii + c_i`` for one PSD
    variable X (distinct diagonal entries ``positions``, ``values = -c / a``), else None."""
    A = A.tocsr()
    if A.nnz != A.shape[0] or np.any(np.diff(A.indptr) != 1) or np.any(A.data == 0):
        return None
    cols = A.indices
    for var, (off, size) in slots.items():
        if var.id not in psd_ids or cols.min() < off or cols.max() >= off + size:
            continue
        n = var.shape[0]
        i, j = np.divmod(cols - off, n)
        if np.any(i != j) or np.unique(i).size != i.size:
            return None
        return var, i, A.data.copy(), -np.asarray(c, dtype=float).ravel() / A.data
    return None


def _psd_trace_row(row, slots, psd_ids):
    """``(var, a)`` when the row is ``a * trace(var)``, a > 0, for a PSD variable (``PSD=True`` or ``var >> 0``)."""
    cols, data = row.indices, row.data
    if cols.size == 0 or data[0] <= 0 or not np.all(data == data[0]):
        return None
    for var, (off, size) in slots.items():
        if var.id in psd_ids:
            n = var.shape[0]
            if cols.size == n and np.array_equal(np.sort(cols), off + np.arange(n) * (n + 1)):
                return var, float(data[0])
    return None


def _psd_image_trace_row(row, c_row, constraints, offsets, n_v):
    """``(constraint, r)`` when the row ``a' v + c_row <= 0`` is ``trace(E) <= r`` for ``E >> 0`` of a constraint.

    The row must be a positive multiple of trace(E)'s coefficients:
    ``a' v = k (t' v)`` with ``trace(E) = t' v + c_E``, k > 0, so that
    ``trace(E) <= c_E - c_row / k``.
    """
    from ..expressions import trace

    for q in constraints:
        t, c_e = linearize(trace(q.expr), offsets, n_v)
        t = t.tocsr()
        if t.nnz == 0 or row.nnz != t.nnz or not np.array_equal(np.sort(row.indices), np.sort(t.indices)):
            continue
        a, b = row.toarray().ravel()[t.indices], t.data
        k = a[0] / b[0]
        if k > 0 and np.allclose(a, k * b, rtol=1e-12, atol=0):
            return q, float(c_e[0]) - c_row / k
    return None


def _psd_ball_of_trace_equality(eq, A, c, slots, psd_ids, psd_images, offsets, n_v):
    """``(ball, constraint)``: the PSD trace ball for ``trace(E) == r`` (a row ``a trace(E) + c == 0``, a != 0).

    E is a PSD variable (``PSD=True`` or ``Y >> 0``) or the matrix of a
    semidefinite constraint ``E >> 0``; the ball ``TraceNormBall(E, r,
    psd=True)`` contains the feasible set, and the equality row keeps E on
    its face ``trace(E) == r``. ``constraint`` is the semidefinite
    constraint (None for a variable); ``(None, None)`` when the row is not a
    trace.
    """
    row = A[0].tocsr()
    for sign in (1.0, -1.0):
        found = _psd_trace_row(sign * row, slots, psd_ids)
        if found is not None:
            var, a = found
            def trace_value(eq=eq, a=a, sign=sign):
                return -sign * float(linearize(eq.expr, offsets, n_v)[1][0]) / a

            radius = _data_from(trace_value, eq.parameters(), f"trace of {short_repr(eq)}")
            return TraceNormBall(var, radius, psd=True), None
        image = _psd_image_trace_row(sign * row, sign * float(c[0]), psd_images, offsets, n_v)
        if image is not None:
            constraint, radius = image
            if eq.parameters():
                raise ModelError(f"{short_repr(eq)}: the trace of {constraint._text} must be fixed by a number "
                                 "(not a Parameter expression)")
            return _on_the_variable(TraceNormBall(constraint.expr, radius, psd=True)), constraint
    return None, None


def _selection(expr, var, offsets, n_v):
    """Flat entries of ``var`` that the set's expression selects (all: None), or False."""
    if expr is var:
        return None
    if expr.parameters() or expr.variables() != [var]:
        return False
    A, c = linearize(expr, offsets, n_v)
    if np.any(c != 0) or A.nnz != A.shape[0] or np.any(np.diff(A.indptr) != 1) or np.any(A.data != 1.0):
        return False
    cols = A.indices - offsets[var.id]
    if cols.min() < 0 or cols.max() >= var.size or np.unique(cols).size != cols.size:
        return False
    return cols


def _holders(var, sets, slots, offsets, n_v):
    """The sets that hold entries of ``var`` directly: [(set, entries or None)]."""
    out = []
    for s in sets:
        if var.id not in {v.id for v in s.expr.variables()}:
            continue
        entries = _selection(s.expr, var, offsets, n_v)
        if entries is not False:
            out.append((s, entries))
    return out


def _implied(var, holders):
    """Flat ``(lower, upper)`` of var's entries implied by the holders (±inf where none)."""
    lo, hi = np.full(var.size, -np.inf), np.full(var.size, np.inf)
    for s, entries in holders:
        slo, shi = s.coordinate_bounds()
        idx = np.arange(var.size) if entries is None else entries
        lo[idx] = np.maximum(lo[idx], slo)
        hi[idx] = np.minimum(hi[idx], shi)
    return lo, hi


def _bound_box(var, bounds, sets, slots, offsets, n_v, param_bound_vars, shared_duals=None, taken=None, rows=None):
    """The box of var's elementwise bounds, closed by the sets (steps 2-3), or None.

    Where a set's implied bound is tighter than an entry's own, the box takes it, and that set's multiplier
    is then shared with the box: the set's id goes into ``shared_duals``. A norm ball on the variable itself,
    or on a selection of its entries, whose implied bounds the box takes is listed in ``taken`` as
    ``(ball, entries, positions, lower sides, upper sides)``: the box's entries (flat in the variable), the
    ball's own entry of each (-1 where the ball does not hold it) and the sides where the box's bound is the
    ball's (None with Parameters: found at each solve's end), from which ``write_norm_duals`` gives the
    ball its multiplier back; other sets' ``dual_value`` is None.

    An entry bounded on one side only that no set bounds on the other is refused. Where ``rows()`` (the
    constraints that stay rows, ``[(constraint, A, c, equality?)]``) bound it (a weighted budget
    ``w @ x[:3] == 1``, a budget next to floors that read a Parameter), the message names that constraint,
    the bound it implies and why it stays a row, rather than calling the entry unbounded."""
    off, size = slots[var]
    lo, hi = bounds.lo[off:off + size], bounds.hi[off:off + size]
    # (a side that a bound row holds for other Parameter values, its coefficient 0 at this solve, counts)
    has_lo = np.isfinite(lo) | bounds.may_lo[off:off + size]
    has_hi = np.isfinite(hi) | bounds.may_hi[off:off + size]
    bounded = has_lo | has_hi
    if not bounded.any():
        return None
    holders = _holders(var, sets, slots, offsets, n_v)
    implied_lo, implied_hi = _implied(var, holders)
    one_sided = bounded & ~(has_lo & has_hi)
    open_side = one_sided & ~np.where(has_lo, np.isfinite(implied_hi), np.isfinite(implied_lo))
    if open_side.any():
        j = int(np.flatnonzero(open_side)[0])
        side = "above" if has_lo[j] else "below"
        more = int(open_side.sum()) - 1
        where = var.name if var.size == 1 else f"{var.name} (flat entry {j}{f' and {more} more' if more else ''})"
        pieces = rows() if rows is not None else []
        if pieces:  # rows may bound it (a weighted budget, floors below 0): name the row and why it stays one
            (piece, row), found_lo, found_hi = _first_row_bounds(bounds, sets, slots, offsets, n_v, pieces)
            k, r = piece[off + j, int(side == "above")], row[off + j, int(side == "above")]
            if k >= 0:
                constraint, A = pieces[k][0], pieces[k][1]
                limit = (found_hi if side == "above" else found_lo)[off + j]
                raise ModelError(
                    f"{where} has a bound on one side only and no set holds it: the constraint "
                    f"{getattr(constraint, '_text', short_repr(constraint))} bounds it {side} (to "
                    f"{'at most' if side == 'above' else 'at least'} {limit:.6g}), but FW-AL needs every variable "
                    f"in a bounded set, and that constraint stays a row because "
                    f"{_why_a_row(constraint, A, r, var, off, size, bounds, param_bound_vars)}. Add a bound "
                    f"({'<=' if side == 'above' else '>='} {limit:.6g} holds at flat entry {j}), or "
                    f"put {var.name} in a bounded set: fm.Box({var.name}, lo, hi), fm.Simplex({var.name}[...]), or "
                    f"fm.sum({var.name}[...]) == t (or <= t) with {var.name} >= 0"
                )
        raise ModelError(
            f"a one-sided bound leaves {where} unbounded {side}: FW-AL needs every variable in a bounded set. "
            f"Add the other bound ({var.name} {'<=' if side == 'above' else '>='} ..., or "
            f"fm.Variable(..., bounds=[lo, hi])), or put {var.name} in a bounded set: fm.Box({var.name}, lo, hi), "
            f"fm.norm1({var.name}) <= r (fm.L1Ball), fm.norm({var.name}, 2) <= r (fm.L2Ball), "
            f"fm.Simplex({var.name}) or fm.sum({var.name}) == t with {var.name} >= 0"
        )
    dynamic = var.id in param_bound_vars or bool(_set_parameters([h for h, _ in holders]))
    # bounds the sets already imply add no block (only when nothing can change with a Parameter)
    needed = bounded & ~((implied_lo >= lo) & (implied_hi <= hi)) if not dynamic else bounded
    if dynamic and var.id not in param_bound_vars:
        # a simplex's entries are >= 0 whatever its total (a Parameter): a fixed floor lo <= 0 alone
        # (X >= 0 with fm.sum(X, axis=1) <= t) adds no box, so the floor's multiplier stays the simplex's
        floor_zero = np.zeros(var.size, dtype=bool)
        for s, s_entries in holders:
            if type(s) is Simplex:
                floor_zero[np.arange(var.size) if s_entries is None else np.asarray(s_entries)] = True
        needed &= ~(floor_zero & (lo <= 0) & ~np.isfinite(hi))
        # likewise a simplex on s * (x - B) held on x (_mirrored_simplex): x >= B (s > 0) or x <= B (s < 0)
        # whatever its total, so the bound B alone on that side adds no box
        for s, s_entries in holders:
            if type(s) is AffinePreimage and type(s.inner) is Simplex:
                idx = np.arange(var.size) if s_entries is None else np.asarray(s_entries)
                base = -s._c / s._a
                kept = np.where(s._a > 0, (lo[idx] <= base) & ~np.isfinite(hi[idx]),
                                (hi[idx] >= base) & ~np.isfinite(lo[idx]))
                needed[idx[kept]] = False
    if not needed.any():
        return None
    entries = np.flatnonzero(needed)
    if shared_duals is not None:
        for s, s_entries in holders:  # a holder whose implied bound the box takes on a needed entry
            slo, shi = s.coordinate_bounds()
            idx = np.arange(var.size) if s_entries is None else np.asarray(s_entries)
            own_lo, own_hi = np.full(var.size, -np.inf), np.full(var.size, np.inf)
            own_lo[idx], own_hi[idx] = slo, shi
            if np.any(((own_lo > lo) | (own_hi < hi))[entries]):
                shared_duals.add(id(s))
                # (a ball on a symmetric variable is held as its symmetric variant: the ball inside; a ball on
                # a * x + c, such as norm(p * (x - 1)) <= t held as norm(x - 1) <= t / |p|, as its preimage on x)
                ball = s.inner if isinstance(s, (SymmetricPart, AffinePreimage)) else s
                # (Box: abs(x) <= t; a trace-norm ball: normNuc(X) <= t, or PSD: diag(X) >= 0 and the others of
                # its coordinate_bounds)
                if taken is not None and (isinstance(ball, (L1Ball, L2Ball, LinfBall, Ellipsoid, Box))
                                          or isinstance(ball, TraceNormBall)):
                    # the ball's own entry of each box entry (-1: not in the ball), for a ball on var
                    # itself or on a selection of its entries (x[:3], x[[4, 1]])
                    position = np.full(var.size, -1)
                    position[idx] = np.arange(idx.size)
                    position = position[entries]
                    if dynamic:  # Parameters move the bounds: the sides are found at each solve's end
                        taken.append((s, entries, position, None, None))
                        continue
                    # the sides where the box's bound is this ball's (the tightest of the holders')
                    lo_side = ((own_lo > lo) & (own_lo >= implied_lo))[entries]
                    hi_side = ((own_hi < hi) & (own_hi <= implied_hi))[entries]
                    taken.append((s, entries, position, lo_side, hi_side))

    def current():
        lo_now, hi_now = bounds.lo[off:off + size], bounds.hi[off:off + size]
        ilo, ihi = _implied(var, holders) if dynamic else (implied_lo, implied_hi)
        lo_box, hi_box = np.maximum(lo_now, ilo)[entries], np.minimum(hi_now, ihi)[entries]
        if dynamic and not (np.all(np.isfinite(lo_box)) and np.all(np.isfinite(hi_box))):
            _open_by_zero_coefficient(var, entries, lo_box, hi_box, bounds, off)
        return lo_box, hi_box

    if entries.size == size:
        expr = var
        shape = var.shape
    else:
        expr = (var.reshape(-1, order="C") if var.ndim != 1 else var)[entries]
        shape = (entries.size,)
    params = _dynamic_parameters(var, bounds, holders) if dynamic else []
    lower = _data_from(lambda: current()[0].reshape(shape), params, f"lower bound of {var.name}")
    upper = _data_from(lambda: current()[1].reshape(shape), params, f"upper bound of {var.name}")
    return box_of_bounds(expr, lower, upper, var.name)


def _single_entry_equalities(equalities, bounds, sets, variables, slots, offsets, n_v, param_bound_vars):
    """The equalities that stay rows: those whose rows each fix one entry (``a x_j + c == 0``, distinct
    entries, coefficients without Parameters) and that fix an entry no bound or set bounds on both sides
    become bounds ``lo = hi = -c / a`` of ``bounds`` (their dual values: the two sides' multipliers,
    compile.write_inequality_duals). A bounded set is what FW-AL needs for every variable; such an entry
    had none, and the model was refused."""
    implied = None
    kept = []
    for eq in equalities:
        if getattr(eq, "role", None) or _coefficients_read_parameters(eq.expr):
            kept.append(eq)
            continue
        A, c = linearize(eq.expr, offsets, n_v)
        if not (A.shape[0] and np.all(np.diff(A.indptr) == 1)
                and np.unique(A.indices).size == A.indices.size):
            kept.append(eq)
            continue
        if implied is None:
            implied = (bounds.lo.copy(), bounds.hi.copy())
            for var in variables:
                off, size = slots[var]
                ilo, ihi = _implied(var, _holders(var, sets, slots, offsets, n_v))
                implied[0][off:off + size] = np.maximum(implied[0][off:off + size], ilo)
                implied[1][off:off + size] = np.minimum(implied[1][off:off + size], ihi)
        cols = A.indices
        if np.all(np.isfinite(implied[0][cols]) & np.isfinite(implied[1][cols])):
            kept.append(eq)  # bounded already: the row stays a row (its iterates as before)
            continue
        bounds.add_equality_rows(eq, np.arange(A.shape[0]))
        if eq.parameters():  # x[0] == p: the bound reads p at each solve
            param_bound_vars.update(var.id for var in eq.variables())
    if len(kept) < len(equalities):
        bounds.recompute()
    return kept


def _open_by_zero_coefficient(var, entries, lo_box, hi_box, bounds, off):
    """Raise the ModelError for a box entry left unbounded at this solve because a Parameter value made the
    coefficient of its bound row 0 (``multiply(s, x) <= h`` with ``s[i] = 0`` and nothing else bounding
    ``x[i]`` on that side): the variable is unbounded there, and FW-AL needs a bounded set."""
    j = int(np.flatnonzero(~(np.isfinite(lo_box) & np.isfinite(hi_box)))[0])
    side = "below" if not np.isfinite(lo_box[j]) else "above"
    flat = off + int(entries[j])
    culprit = next((ineq for ineq, _, _, cols in bounds.zero_rows if flat in cols), None)
    where = var.name if var.size == 1 else f"{var.name} (flat entry {int(entries[j])})"
    turned = next((ineq for ineq, _, cols, _ in bounds.flipped if flat in cols), None)
    if culprit is None and turned is not None:  # p * x <= h with p < 0 now: x >= h / p, nothing bounds x above
        text = getattr(turned, '_text', short_repr(turned))
        raise ModelError(
            f"{where} is unbounded {side}: a Parameter value of the other sign makes the constraint {text} bound "
            f"it {'below' if side == 'above' else 'above'} at this solve, and nothing else bounds it {side}. "
            f"FW-AL needs every variable in a bounded set: add a bound on that side (fm.Box, {var.name} "
            f"{'<=' if side == 'above' else '>='} ..., bounds=[lo, hi]) or declare the Parameter's sign "
            "(nonneg=True or nonpos=True)")
    by = (f"the constraint {getattr(culprit, '_text', short_repr(culprit))} bounds it for other values, but a "
          "Parameter value makes its coefficient 0 at this solve, and nothing else bounds it") if culprit is not None \
        else "a Parameter value leaves it without a bound at this solve"
    raise ModelError(f"{where} is unbounded {side}: {by}. FW-AL needs every variable in a bounded set: add a bound "
                     f"on that side (fm.Box, {var.name} <= ..., bounds=[lo, hi]) or keep the Parameter nonzero")


def _row_pieces(equalities, general, offsets, n_v):
    """The constraints that stay rows, ``[(constraint, A, c, equality?)]`` (rows ``A v + c == 0`` or ``<= 0``)."""
    pieces = []
    for eq in equalities:
        A, c = linearize(eq.expr, offsets, n_v)
        pieces.append((eq, A, c, True))
    pieces += [(ineq, A[rows], np.asarray(c).ravel()[rows], False) for ineq, rows, A, c in general]
    return pieces


def _first_row_bounds(bounds, sets, slots, offsets, n_v, pieces):
    """Which rows bound which entries: ``(lower, upper)``, per entry of v the ``(piece, row)`` whose interval
    propagation first gave it a finite bound on that side (-1: none), with ``(lo, hi)`` the bounds found.

    ``pieces``: [(constraint, A, c, equality?)] with rows ``A v + c <= 0`` (``== 0``). Starting from the
    elementwise bounds and the sets' implied bounds, each row bounds each of its entries by the others'
    bounds (``a_j v_j <= -c - sum_{k != j} a_k v_k``), repeated while new finite bounds appear. Sound (a
    bound found holds on the feasible set), so an entry bounded here is bounded; used only for the message
    of :func:`_bound_box` (an entry that rows bound, but no set).
    """
    lo, hi = bounds.lo.copy(), bounds.hi.copy()
    for var, (off, size) in slots.items():
        ilo, ihi = _implied(var, _holders(var, sets, slots, offsets, n_v))
        lo[off:off + size] = np.maximum(lo[off:off + size], ilo)
        hi[off:off + size] = np.minimum(hi[off:off + size], ihi)
    source = (np.full((n_v, 2), -1), np.full((n_v, 2), -1))  # (piece, row) of the lower, the upper bound
    for _ in range(50):
        found = False
        for k, (_, A, c, equality) in enumerate(pieces):
            A = A.tocsr()
            row = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
            for sign in ((1.0, -1.0) if equality else (1.0,)):
                a, j, cc = sign * A.data, A.indices, sign * np.asarray(c, dtype=float).ravel()
                with np.errstate(invalid="ignore"):
                    low = np.where(a > 0, a * lo[j], a * hi[j])  # each term's least value (-inf: none)
                infinite = ~np.isfinite(low)
                finite_sum = np.bincount(row, weights=np.where(infinite, 0.0, low), minlength=A.shape[0])
                count = np.bincount(row, weights=infinite, minlength=A.shape[0])
                others = count[row] - infinite  # the other terms without a least value
                rest = finite_sum[row] - np.where(infinite, 0.0, low)
                with np.errstate(divide="ignore", invalid="ignore"):
                    bound = np.where(others == 0, (-cc[row] - rest) / a, np.nan)
                for side, target, mask in ((1, hi, a > 0), (0, lo, a < 0)):
                    new = mask & np.isfinite(bound) & ~np.isfinite(target[j])
                    if new.any():
                        idx = np.flatnonzero(new)
                        idx = idx[np.unique(j[idx], return_index=True)[1]]
                        target[j[idx]] = bound[idx]
                        source[0][j[idx], side] = k
                        source[1][j[idx], side] = row[idx]
                        found = True
        if not found:
            break
    return source, lo, hi


def _why_a_row(constraint, A, r, var, off, size, bounds, param_bound_vars):
    """Why the row ``r`` of ``constraint`` (``A``) on entries of ``var`` did not become a simplex: the first
    of the conditions of item 4 that it misses (see :func:`_slice_budget_groups`)."""
    row = A.tocsr()[r]
    others = sorted({v for v in constraint.variables() if v.id != var.id}, key=lambda v: v.name)
    outside = (row.indices < off) | (row.indices >= off + size)
    if others and outside.any():
        return f"it involves {', '.join(v.name for v in others)} too"
    if not np.all(row.data == row.data[0]):
        return (f"its coefficients on {var.name} are not all equal ({float(row.data.min()):g} to "
                f"{float(row.data.max()):g}), as a budget's are")
    floors = bounds.lo[off:off + size][row.indices[~outside] - off]  # (the floors of the row's entries)
    if var.id in param_bound_vars:
        return f"the bounds of {var.name} read Parameters"
    caps = bounds.hi[off:off + size][row.indices[~outside] - off]
    one_side = (np.isfinite(floors).all() and not np.isfinite(caps).any()) or (
        np.isfinite(caps).all() and not np.isfinite(floors).any())
    if not np.all(floors >= 0) and not one_side:
        return (f"not every entry of {var.name} in it has a fixed floor >= 0 ({var.name} >= 0, nonneg=True), nor "
                f"are they all bounded on one same side only ({var.name} >= lo, or {var.name} <= hi), which a "
                "budget needs to be a simplex")
    if _coefficients_read_parameters(constraint.expr):
        return "its coefficients read a Parameter"
    if isinstance(constraint, Inequality) and np.all(floors >= 0) and row.data[0] < 0:
        return "it bounds a sum from below"
    if isinstance(constraint, Inequality) and not np.all(floors >= 0) and (
            (row.data[0] < 0) == np.isfinite(floors).all()):
        return (f"it bounds a sum {'from below' if row.data[0] < 0 else 'from above'} where the entries are "
                f"bounded {'below' if np.isfinite(floors).all() else 'above'}, the same side")
    if var.PSD:
        return f"{var.name} is PSD (its trace rows are trace balls)"
    return ("it is not a budget fm.sum(...) == t or <= t on entries of one variable that no other budget "
            "of the same kind already holds")


def _dynamic_parameters(var, bounds, holders):
    params = _set_parameters([h for h, _ in holders])
    if var.bounds is not None:
        params += [p for b in var.bounds if b is not None and hasattr(b, "parameters") for p in b.parameters()]
    for ineq, _ in bounds.rows + bounds.equality_rows:
        if any(v.id == var.id for v in ineq.variables()):
            params += ineq.parameters()
    return params


#: a general inequality row whose coefficients have a norm other than 1 gets its slack in the variables' units
#: (``_slack_units``). The solve brings every constraint's row to unit norm (engine/stopping.py
#: ``row_norm_equilibration``): a slack left in the row's units made the scaled row depend on the
#: factor it was written times (``k * (x0 + x1) >= 0.8 k`` next to a unit row: 34 iterations at k = 1, 55 at
#: k = 0.1 with the factor 10 this threshold had), and at 100 a slack column up to 100 times the others'
#: stalled projection steps at max_iter
SLACK_UNITS_APART = 1.0


def _slack_units(A_rows, off_hulls=None):
    """The unit of each row's slack: ``||a_i||`` (1 for a row of norm 1 or 0).

    The slack of ``a_i' v + c_i <= 0`` is in the row's units, ``||a_i||`` times
    the variables'. The row is written ``a_i' v + c_i + k_i s_i = 0`` with
    ``s_i`` in ``Box(0, u_i / k_i)``: with ``k_i = ||a_i||`` the slack is the
    distance to the row's hyperplane, in the variables' units, so every
    column of the row has the same scale and the row written times any
    factor c is c times the same row. The solve's equilibration
    (``engine/stopping.py``, ``row_norm_equilibration``) brings the whole row to unit norm
    and so sees one row for every c; with the slack left in the row's units
    it made the slack's column 10^6 times the others' (a row written times
    1e-6 ran to max_iter with projection steps, all blocks sharing one step
    length). The row's multiplier, the inequality's ``dual_value``, is
    unchanged: only the slack is rescaled.

    ``off_hulls``: :func:`_norms_off_hulls` of the rows. A row nearly parallel to the sums of a set that holds
    its variable (``(1 + 1e-4 noise) @ w <= b`` over a simplex) constrains the set through its part off them
    alone, and the engine keeps it as that part (``engine/hull_rows.py``); its slack is then in that part's
    units, ``||a_i - N a_i||``: in ``||a_i||`` the slack's column stayed 1e4 times the part's, the row as
    hard to meet as written, and "optimal" ended 0.7-9 % below f* or at max_iter (benchmarks/hull_rows.py,
    ``simplex_le``).
    """
    if off_hulls is None:
        norms = np.sqrt(np.asarray(A_rows.multiply(A_rows).sum(axis=1), dtype=float).ravel())
    else:
        norms, off = off_hulls
        # (half the engine's threshold: with the slack at ||a - N a|| the engine's test reads the row, slack
        # included, below NEARLY_PARALLEL of its norm up to a ratio of 0.07)
        norms = np.where((off < 0.5 * NEARLY_PARALLEL * norms) & (off > 0), off, norms)
    far = (norms > SLACK_UNITS_APART) | (norms < 1.0 / SLACK_UNITS_APART)
    return np.where(far & (norms > 0), norms, 1.0)


def _norms_off_hulls(A_rows, touched, holders, offsets):
    """(||a_i||, ||a_i - N a_i||) of each row, N onto the normals of the affine hulls of sets that hold a
    whole variable of the row (``ConvexSet.affine_hull``: a simplex's sums), or None where no such set holds
    one (:func:`fwmodel.sets.hulls.part_off_hulls`, which the engine reads too)."""
    found = []
    for var in touched:
        hull = next((h for h in (s.affine_hull() for s, entries in holders[var.id] if entries is None)
                     if h is not None), None)
        if hull is not None:
            found.append((hull, slice(offsets[var.id], offsets[var.id] + var.size)))
    if not found:
        return None
    full, off, _, _, _ = part_off_hulls(A_rows.tocsr(), found)
    return full, off


def _slack_upper(ineq, rows, touched, holders, offsets, n_v, linear=None):
    """u_i = max(0, -c_i - min_v a_i' v) over the sets that hold the variables (step 5); ``linear``: the
    inequality's ``(A, c)`` when already linearized (no Parameter in it)."""
    A, c = linearize(ineq.expr, offsets, n_v) if linear is None else linear
    A = A[rows].tocsr()
    lower = np.zeros(rows.size)
    for var in touched:
        off = offsets[var.id]
        block = A[:, off:off + var.size].toarray()
        whole = [s for s, e in holders[var.id] if e is None]
        for i in range(rows.size):
            g = block[i]
            if not np.any(g):
                continue
            if whole:
                lower[i] += max(s.min_linear(g) for s in whole)
                continue
            # partial copies: give each entry to the first set that holds it (a disjoint cover)
            remaining = g != 0
            total = 0.0
            for s, entries in holders[var.id]:
                take = remaining[entries]
                if not take.any():
                    continue
                total += s.min_linear(np.where(take, g[entries], 0.0))
                remaining[entries[take]] = False
            if remaining.any():
                raise ModelError(f"{ineq._text}: some entries of {var.name} are in no bounded set, so the inequality "
                                 f"leaves them unbounded; put all of {var.name} in a set")
            lower[i] += total
    return np.maximum(0.0, -c[rows] - lower)


def _domain_row_holds(ineq, rows, sets, slots, offsets, n_v):
    """Whether the sets keep the rows of an fm.smooth atom's domain (``A x + c >= lo`` on a non-elementwise
    argument, :func:`~fwmodel.expressions.sympy_atom.implied_domain_constraints`) at every point of theirs; a
    ModelError where they do not.

    The objective is evaluated at the blocks' points, which lie in the sets; rows hold only in the limit, so
    a row would leave the iterates free to leave the domain (no objective value there). Where the largest
    value of ``ineq.expr`` (``lo - argument``) over the sets (one LMO call per row and set, as the slack's
    bound of step 5) is at most 0 (rounding allowed), the domain needs nothing; else the message says to tie
    the argument to a variable whose bounds, a set, keep it in the domain."""
    class _Negated:  # _slack_upper of -expr: max(0, max over the sets of expr)
        expr, _text = -ineq.expr, ineq._text

    touched = _unique(var for var in ineq.variables())
    holders = {var.id: _holders(var, sets, slots, offsets, n_v) for var in touched}
    if all(holders[var.id] for var in touched):
        reach = _slack_upper(_Negated, rows, touched, holders, offsets, n_v)
        _, c = linearize(ineq.expr, offsets, n_v)
        if np.all(reach <= 1e-12 * np.maximum(1.0, np.abs(c[rows]))):
            return True
        worst = float(reach.max())
    else:
        worst = np.inf
    atom, symbol, argument, span = ineq.implied_domain
    raise ModelError(
        f"{atom}: the formula is real only for {symbol} in {span} (its domain, found by SymPy), and the sets let "
        f"{symbol} = {argument} leave it (by up to {worst:.3g}): FW-AL evaluates the objective at points of the "
        f"sets, which rows constrain only in the limit. Tie {symbol} to a new variable t, with the constraint "
        f"t == {argument} and bounds on t within {span} (t >= lo with t <= hi: a box, which keeps every iterate "
        f"in the domain), and map {symbol} to t")


def _sole_pairs(sets, equalities, first_kinds, second_kinds):
    """``(a, b)`` for every variable held by exactly two sets, one of each kind, and by no row.

    Both sets hold the whole variable itself (not a slice, not an affine
    image: ``fm.Box(x[:], ...)`` stays a copy of its own), the variable is
    not symmetric (its sets are replaced by symmetric variants), and no
    other set and no equality (nor the slack row of an inequality) touches
    it. The merges of item 7 are made only there (see :func:`_capped_simplices`).
    """
    def on_variable(s, kinds):
        return type(s) in kinds and isinstance(s.expr, Variable) and not (s.expr.symmetric or s.expr.PSD)

    firsts, seconds, holders = {}, {}, {}
    for s in sets:
        if on_variable(s, first_kinds):
            firsts.setdefault(s.expr.id, []).append(s)
        elif on_variable(s, second_kinds):
            seconds.setdefault(s.expr.id, []).append(s)
        for var in s.expr.variables():
            holders[var.id] = holders.get(var.id, 0) + 1
    in_rows = {var.id for eq in equalities for var in eq.expr.variables()}
    return [(found[0], seconds[var_id][0]) for var_id, found in firsts.items()
            if len(found) == 1 and len(seconds.get(var_id, ())) == 1 and holders[var_id] == 2
            and var_id not in in_rows]


def _merged(sets, pairs, make):
    """``sets`` with each pair ``(a, b)`` replaced by ``make(a, b)`` (in a's place), where the two meet.

    A merge that the data at hand leave empty is not made: two copies let the
    solve return its best point with the status "infeasible" and a
    certificate, as for any sets that do not meet. The merged set names both
    as ``merged_from`` (``prob.point_in`` of either gives its point).
    """
    merged, dropped = {}, set()
    for a, b in pairs:
        one = make(a, b)
        if one.empty_reason is not None and a.empty_reason is None and b.empty_reason is None:
            continue
        one.merged_from = (a, b)
        merged[id(a)] = one
        dropped.add(id(b))
    if not merged:
        return sets
    return [merged.get(id(s), s) for s in sets if id(s) not in dropped]


def _capped_simplices(sets, equalities):
    """Item 7: a Simplex and a Box that both hold the same whole variable become one CappedSimplex.

    The intersection has an exact LMO (a fractional knapsack per group), so
    the variable gets one block without rows instead of two copies tied by
    rows of M. Only the plain case is merged (:func:`_sole_pairs`): exactly
    one simplex and one box on the variable itself, no other set and no
    equality or inequality row on the variable, and data for which the two
    sets meet.

    Why not under rows: on 1,600 random models (benchmarks/trust_fuzz.py)
    merging also where equality or inequality rows touch the variable sped
    up some (147 -> 103 iterations) but slowed more (103 -> 469, 137 -> 1256,
    one optimal model to max_iter): the two copies then move by coordinate
    steps on the box and pairwise steps on the simplex, which follow the
    dual's changes better than pairwise steps between the capped simplex's
    vertices, each of which moves many entries at once.
    """
    pairs = [(simplex, box) for simplex, box in _sole_pairs(sets, equalities, (Simplex,), (Box, LinfBall))
             if np.ndim(simplex.total) == 0]  # (a total per group: the capped simplex has one total)
    return _merged(sets, pairs, CappedSimplex)


def _boxed_l1_balls(sets, equalities):
    """Item 7: an L1Ball and a Box (or LinfBall) that both hold the same whole variable become one BoxedL1Ball.

    The same rule as :func:`_capped_simplices` (one of each on the variable
    itself, nothing else on it, no rows; an L1 ball with ``symmetric=True``
    is a ball of symmetric matrices and stays apart). The box need not
    contain 0 (``x >= 1`` with ``norm1(x) <= r``): the set starts each entry
    from its point nearest to 0.
    """
    pairs = [(ball, box) for ball, box in _sole_pairs(sets, equalities, (L1Ball,), (Box, LinfBall))
             if ball.symmetric is not True]
    return _merged(sets, pairs, BoxedL1Ball)


def _symmetric(s):
    """The symmetric variant of a set holding a whole symmetric variable (else the set).

    The variant remembers the user's set as ``derived_from``, so that
    ``prob.point_in(s)`` finds the block that holds ``s``'s copy.
    """
    if isinstance(s.expr, Variable) and s.expr.symmetric and not s.keeps_symmetric:
        variant = s.symmetric_variant()
        if variant is not None:
            variant.derived_from = s
            return variant
    return s

