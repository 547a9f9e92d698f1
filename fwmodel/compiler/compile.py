"""From a model to problem (OPT2): blocks, copies, M and b, and the graph.

Compilation, step by step (paper Sec. 2.2, eq. opt_reformulation):

00. **Presolve.** A PSD variable whose constraints fix diagonal entries at 0
   (``X >> 0`` with ``fm.diag(X) <= d``, ``d_i = 0``, or ``X[i, i] == 0``) is
   replaced by ``P Y P'``, Y PSD on the other indices: its feasible set has
   no interior, which FW-AL's rows would reach only in the limit
   (:mod:`fwmodel.compiler.presolve`).
0. **Lowering.** Constraints as CVXPY writes them become sets and
   equalities first (:mod:`fwmodel.compiler.lowering`): ``norm1(e) <= t`` an
   L1 ball, elementwise bounds one box per variable (one-sided bounds closed
   by the bounding box of the sets that hold the variable), ``x >= 0`` with
   ``sum(x) == t`` a simplex, ``PSD=True`` with ``trace(X) <= t`` a PSD trace
   ball, ``G @ x <= h`` rows ``G x + s = h`` with a slack ``s`` in a box
   whose upper bound ``h - min G x`` comes from the sets' LMOs, and the sets
   of symmetric variables their symmetric variants.
1. **Variables.** Every variable of the objective and the constraints gets a
   slot in a flat vector v (C order), in order of first appearance.
2. **Blocks.** Every set gets one block x^(k) of the product space X_1 x ...
   x X_K. When a set constrains a variable, or a selection of its entries
   (``x``, ``x[:, 2:5]``, ``x.T``), its block is a *copy* of those entries.
   When it constrains any other affine expression (``fm.L1Ball(D @ x)``), its
   block is a new point z tied to the expression by rows z - (D v) = 0.
   Such a block is held in its variables' units: for an expression in units
   far from theirs (``fm.L1Ball(1e3 * D @ x, 1e3)``), the block holds
   ``z' = z / u`` in the set divided by u (``BlockInfo.units``, see
   :func:`copy_units` and :mod:`fwmodel.sets.units`), with rows
   ``u z' - (1e3 D v) = 0``: the same model, in the units the engine's steps
   and scales read alike.
3. **Copies.** A variable entry covered by several sets has one copy per set.
   Copies are tied to the *first* copy (a star, not a chain): the star's
   M'M has eigenvalues in [1, K] for K copies, while a chain's smallest
   nonzero eigenvalue decays like 1/K^2, which would slow the dual ascent.
   The variable's value is the average of its copies: v = W x.
4. **Equalities.** ``lhs == rhs`` becomes rows (A W) x = -c from
   lhs - rhs = A v + c. An equality may instead build structured rows
   itself (a ``consistency_piece`` method, as the marginalization
   constraints of ``fm.LocalMarginalPolytope`` do) when every variable it
   touches is held whole by a single block; such equalities carry a
   ``role`` (e.g. "marginalization") that the graph records.
5. **The graph.** A networkx graph has a node per variable, block (copy or
   expression block), set and equality constraint; consistency edges carry
   the row pieces. M is assembled by walking the consistency edges in order.

Every variable entry must be covered by at least one copy (lie in a bounded
set); otherwise compilation raises ModelError naming the variable.

A constraint on an expression without variables (``fm.L1Ball(c, 0.5)`` for
data ``c``, ``fm.Box(p, 0, 1)`` or ``p == 0`` for a Parameter ``p``) gets
no block and no rows: it is true or false for the data alone. It is kept in
``CompiledProblem.fixed_constraints`` and evaluated at every solve
(Parameters change between solves, see
:meth:`CompiledProblem.violated_fixed_constraints`); a false one makes the
solve end with status "infeasible", naming it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.sparse as sp

from ..engine.stopping import UNITS_APART
from ..errors import ModelError
from ..expressions import Equality, SmoothFunction, Variable, linearize
from ..sets.base import ConvexSet, distinct_parameters
from ..sets.box import Box
from ..sets import Ellipsoid, L1Ball, L2Ball, LinfBall, Simplex
from ..sets.boxed_l1 import BoxedL1Ball
from ..sets.preimage import AffinePreimage
from ..sets.symmetric import SymmetricPart
from ..sets.trace_norm import TraceNormBall
from ..sets.units import InUnits, has_units, in_units
from .consistency import ConsistencyOperator, CopyRows, SparseRows
from .lowering import lower_constraints, within_data_limit
from .presolve import presolve_psd_zeros
from .objective import BlockObjective, CopyMap


#: a warm start whose set moved in size more than this (either way) starts cold (restart_changed_blocks)
WARM_SCALE_APART = 10.0


class _DataVersions(list):
    """:meth:`CompiledProblem.data_versions`: one ``(version, diameter)`` per block, and the Parameters' values."""

    parameter_values = None


class _Holder:
    """Parameters given as a list, where :func:`distinct_parameters` asks for ``parameters()``."""

    def __init__(self, params):
        self._params = params

    def parameters(self):
        return self._params


def _moved_parameter_ids(parameter_values):
    """The ids of the Parameters whose value differs from the one recorded (``data_versions``)."""
    moved = set()
    for p, old in parameter_values or ():
        now = p.value
        if (old is None) != (now is None) or (
                now is not None and not np.array_equal(old, np.asarray(now, dtype=float))):
            moved.add(p.id)
    return moved


def _parameters_moved(parameter_values):
    """Whether any Parameter's value differs from the one recorded (``data_versions``); True where none was."""
    return parameter_values is None or bool(_moved_parameter_ids(parameter_values))


def _set_size(s):
    """The set's diameter where it knows one (finite, >= 0), else None (a user's set without the hook)."""
    try:
        size = s.diameter()
    except Exception:  # a user's diameter() that fails: no size to compare
        return None
    return float(size) if size is not None and np.isfinite(size) and size >= 0 else None


@dataclass
class BlockInfo:
    """One factor of the product space: ``x[offset:offset+size]`` in ``set``.

    ``kind`` is "copy" (the block holds copies of the entries ``entries`` of
    ``variable``) or "expression" (the block holds the value of the set's
    affine expression, tied to the variables by consistency rows).
    """

    index: int
    offset: int
    size: int
    set: ConvexSet
    kind: str
    variable: Variable = None
    entries: np.ndarray = None  # flat entries of the variable, for copies
    name: str = ""
    #: an expression block's scale: it holds ``z / units`` (z the expression's value) in ``set``, the
    #: user's set divided by ``units`` (:func:`_in_variable_units`); 1 for copies
    units: float = 1.0

    @property
    def slice(self):
        return slice(self.offset, self.offset + self.size)

    def __repr__(self):
        what = f"copy of {self.variable.name}" if self.kind == "copy" else "expression block"
        return f"Block({self.index}: {self.name}, offset={self.offset}, size={self.size}, {what})"


@dataclass
class CompiledProblem:
    """Problem (OPT2) ready for the engine.

    Attributes: ``blocks`` (list of BlockInfo), ``n`` (size of x), ``M``
    (scipy.sparse CSR, built on first access), ``b``, ``graph`` (networkx),
    ``variables`` and ``var_layout`` ({var.id: (offset, shape)} in v),
    ``objective`` (the engine-facing objective on x), ``operator`` (M as a
    fast operator), ``copy_map`` (v = W x), ``fixed_constraints`` (the sets
    and equalities without variables, checked at each solve by
    :meth:`violated_fixed_constraints`).
    """

    blocks: list
    n: int
    variables: list
    var_layout: dict
    graph: nx.Graph
    operator: ConsistencyOperator
    copy_map: CopyMap
    objective: BlockObjective
    equalities: list = field(default_factory=list)
    #: (piece of M, builder, its Parameters): pieces rebuilt when those Parameters change
    parametric: list = field(default_factory=list)
    #: {id(piece): the Parameter values its rows were last built from}
    _built_from: dict = field(default_factory=dict, repr=False)
    #: {id(equality): its piece of M} (for the equalities' dual values)
    equality_pieces: dict = field(default_factory=dict)
    #: {block index: its piece of M} for the expression blocks (their rows z - A v = c)
    expression_pieces: dict = field(default_factory=dict)
    #: what the constraints were lowered to (see fwmodel.compiler.lowering)
    lowered: object = None
    #: sets and equalities on expressions without variables (checked at each solve)
    fixed_constraints: list = field(default_factory=list)
    #: (units, rms()) of the expression blocks whose coefficients have Parameters: the units their block
    #: was compiled in and the root mean square row norm now (None while a Parameter has no value)
    parametric_units: list = field(default_factory=list)
    #: the PSD zero-diagonal reduction the model was compiled through (fwmodel.compiler.presolve), or None
    presolve: object = None

    @property
    def M(self):
        return self.operator.csr()

    @property
    def b(self):
        return self.operator.b

    @property
    def n_variables(self):
        return sum(v.size for v in self.variables)

    def variable_values(self, x):
        """{variable: value array} with each value the average of its copies.

        The values are views of one fresh array (v = W x), not copies of it:
        nothing else holds v (at d = 4000 a copy of X is 128 MB).
        """
        v = self.copy_map.to_variables(x)
        out = {}
        for var in self.variables:
            off, shape = self.var_layout[var.id]
            out[var] = v[off:off + var.size].reshape(shape)
        return out if self.presolve is None else self.presolve.values(out)

    def model_variables(self):
        """The model's variables, those a presolve replaced included, without the compiler's own."""
        kept = [v for v in self.variables if not getattr(v, "is_slack", False)]
        return kept if self.presolve is None else kept + self.presolve.originals

    def slack_units_stale(self):
        """Whether Parameters moved an inequality's coefficients more than ``UNITS_APART`` from the units its
        slack was compiled in (``lowering._slack_units``): its rows then need compiling again."""
        if self.lowered is None:
            return False
        for units, recompute in self.lowered.slack_units:
            now = recompute()
            if now.shape != units.shape or np.any(np.maximum(now / units, units / now) > UNITS_APART):
                return True
        return False

    def copy_units_stale(self):
        """Whether Parameters moved an expression's coefficients more than ``UNITS_APART`` from the units its
        block was compiled in (:func:`copy_units`; 1 where the Parameters had no values at compile time):
        the block then needs compiling again, in the expression's new units."""
        for units, recompute, cset in self.parametric_units:
            rms = recompute()
            if rms is not None and block_units(cset, copy_units(rms=rms)) != units:
                return True
        return False

    def refresh_parameters(self):
        """Re-read Parameter values: bounds, the sets' data, constraint rows (M's pieces, b).

        Order matters: the entry bounds first, then the sets in block order
        (boxes that close one-sided bounds and slack boxes come after the
        sets whose data they are computed from).
        """
        if self.lowered is not None:
            self.lowered.prepare()
        # f's Hessian shown by the last solve's gradient may hold a Parameter's old value
        self.objective.forget_hessian()
        for blk in self.blocks:
            blk.set.refresh()
        rebuilt = False
        for piece, builder, params in self.parametric:
            values = [p.value for p in params]
            built_from = self._built_from.get(id(piece))
            if built_from is not None and all(
                    old is not None and new is not None and np.array_equal(old, new)
                    for old, new in zip(built_from, values)):
                continue  # its Parameters kept their values: the rows are still right
            new = builder()
            piece.A, piece.AT, piece.b = new.A, new.AT, new.b
            self._built_from[id(piece)] = values
            rebuilt = True
        if rebuilt:
            self.operator.pieces_changed()

    def data_versions(self):
        """``(data version, diameter)`` of every block's set (see ``ConvexSet.data_version``, ``diameter``),
        and, as its ``parameter_values``, a copy of every Parameter's value (objective, sets, rows)."""
        versions = _DataVersions((blk.set.data_version, _set_size(blk.set)) for blk in self.blocks)
        holders = [self.objective.smooth.expr] + [blk.set.expr for blk in self.blocks] + [blk.set for blk in self.blocks]
        holders += [eq.expr for eq in self.equalities] + [_Holder(params) for _, _, params in self.parametric]
        versions.parameter_values = [(p, None if p.value is None else np.array(p.value, dtype=float))
                                     for p in distinct_parameters(holders)]
        return versions

    def restart_changed_blocks(self, state, versions):
        """A copy of a warm-start ``state`` in which blocks whose set data changed restart, or None (start cold).

        ``versions`` are :meth:`data_versions` at the end of the solve that
        left ``state``. A changed block's x (which may lie outside its new
        set) is reset to the set's initial point and its active sets
        (vertices of the old set) are dropped; the engine rebuilds them.
        Where a set's size moved more than ``WARM_SCALE_APART`` (10x) either
        way (a radius from 1 to 1e-8 or 1e6), the multipliers and the penalty
        carried over are in the old units: warm-started, such solves ran to
        max_iter where a cold one takes 11-38 iterations, so the solve starts
        cold (None). Where any Parameter's value moved (``data_versions``),
        the copy is marked ``data_changed``: the engine carries its duals to
        the new data's units or restarts them (``warm_start.in_new_units``).
        """
        changed = [k for k, (blk, (old, _)) in enumerate(zip(self.blocks, versions))
                   if blk.set.data_version != old]
        moved = _parameters_moved(getattr(versions, "parameter_values", None))
        if not changed and not moved:
            return state
        for k in changed:
            before, now = versions[k][1], _set_size(self.blocks[k].set)
            if before is None or now is None:
                continue
            if min(before, now) <= 0.0:
                if max(before, now) > 0.0:
                    return None
            elif max(before / now, now / before) > WARM_SCALE_APART:
                return None
        from ..engine.result import SolverState

        x = state.x.copy()
        active = dict(state.active_sets)
        for k in changed:
            blk = self.blocks[k]
            x[blk.slice] = 0.0
            blk.set.initial_atom().add_to(x[blk.slice], 1.0)
            active.pop(k, None)
            active.pop(("face", k), None)
        y = state.y.copy() if state.y is not None else None
        self._move_expression_blocks(x, y, active, changed, getattr(versions, "parameter_values", None))
        restarted = SolverState(x, y, active, state.lam, state.eta, state.lipschitz,
                                row_norms=getattr(state, "row_norms", None))
        # the units of its duals: the engine carries them to the data's units now (warm_start.in_new_units)
        restarted.reference_scales = getattr(state, "reference_scales", None)
        restarted.looseness = getattr(state, "looseness", None)  # test (1b)'s factor (engine/stopping.py)
        restarted.data_changed = True
        return restarted

    def _move_expression_blocks(self, x, y, active, changed, parameter_values):
        """Carry the expression blocks whose rows read a Parameter that moved to their rows as they are now.

        An expression block z (``norm1(multiply(p, x)) <= 1`` holds ``z`` in the L1 ball, with the rows
        ``z - p * x = 0``) keeps, in a warm state, the value of its expression at the last solve's data,
        ``p_old * x``: with the new rows it is off by ``(p_old - p) * x``, and its active set describes that
        point. Where the expression's value at the warm point, ``p * x``, lies in the block's set, the block
        starts there (its rows hold exactly); else it restarts from its set's initial point, as a block whose
        set changed. Its active set is dropped either way (the engine rebuilds it).

        Measured (benchmarks/RESULTS.md, "Warm starts when a Parameter moves an expression block's rows"):
        p from [0, 1, 1, 0, 2] to 0, with a box on x and one equality row, kept z = (0, 0, 0, 0, 1) against
        rows that now say z = 0; the carried multipliers of those rows (about 3.3, two of them within 0.1 %
        of each other) and the old z set the L1 block cycling among its vertices with the dual step
        cancelling each move, and the solve ran to max_iter (10,000 iterations, off the optimum) where a cold
        one takes 92. The multipliers ``y`` of its rows are dropped too: they priced the rows of the old
        coefficients (with p -> 0 the constraint is vacuous and its multipliers 0), and the carried ones kept
        the face step and the L1 block's vertices cycling at the optimum (max_iter at Clarabel's value).
        """
        moved = _moved_parameter_ids(parameter_values) if parameter_values is not None else None
        values = offsets = None
        for k, blk in enumerate(self.blocks):
            if blk.kind != "expression" or k in changed:
                continue
            params = blk.set.expr.parameters()
            if not params or (moved is not None and not any(p.id in moved for p in params)):
                continue
            if values is None:
                values = self.copy_map.to_variables(x)
                offsets = {v.id: self.var_layout[v.id][0] for v in self.variables}
            A, c = linearize(blk.set.expr, offsets, values.size)
            image = (A @ values + np.asarray(c, dtype=float).ravel()) / blk.units  # (the block holds z / units)
            try:
                inside = bool(np.all(np.isfinite(image))) and bool(blk.set.contains(image.reshape(blk.set.shape)))
            except Exception:  # a user's set without a membership test: restart the block
                inside = False
            if inside:
                x[blk.slice] = image
            else:
                x[blk.slice] = 0.0
                blk.set.initial_atom().add_to(x[blk.slice], 1.0)
            active.pop(k, None)
            active.pop(("face", k), None)
            rows = self.rows_of(self.expression_pieces.get(k))
            if y is not None and rows is not None:
                y[rows] = 0.0

    def write_duals(self, x, y, lam, multipliers=None, slack_tolerance=None):
        """Set ``dual_value`` of the user's equality and inequality constraints.

        The multiplier of a row of M x = b is ``y + lam (M x - b)`` (the
        gradient of the augmented terms of L). A row of ``lhs == rhs`` is
        ``lhs - rhs`` and the engine minimizes ``sign * f``, so with CVXPY's
        convention (``L = f + nu' (lhs - rhs)`` for Minimize, the same
        ``nu`` for Maximize of ``-f``) the multiplier is ``dual_value``
        directly; for an inequality ``lhs - rhs + s = 0``, ``s >= 0``, it is
        the inequality's (nonnegative) multiplier. An equality absorbed into
        a simplex (``fm.sum(x) == t`` with ``x >= 0``) has no row: its
        multiplier comes from the simplex block's KKT condition
        ``g + nu a 1 - mu = 0`` (``mu >= 0``, zero on the support), as the
        x-weighted mean ``nu = -<x, g> / (a <x, 1>)`` of the block gradient g of L.
        In a capped simplex (``l <= x <= u`` too) the entries at a bound have
        multipliers of their own, so the weights are the distances to the
        nearest bound, ``min(x - l, u - x)``; where every entry is at a bound,
        ``nu a`` is the middle of the interval the KKT signs allow
        (``>= -g_i`` at a floor, ``<= -g_i`` at a cap). Budgets on selections
        (``fm.sum(X[0]) == 1``, a loop over rows) that became one simplex get
        the multipliers of their own groups (``Lowered.slice_budgets``).

        An L1 ball and a box merged into one set (:class:`BoxedL1Ball`) have
        no rows either: the multipliers of ``norm1(x) <= r`` and of the
        box's bounds (``abs(x) <= c``, ``norm_inf(x) <= c``, ``x <= hi``,
        ``x >= lo``) come from the block's KKT conditions (see
        :func:`_boxed_l1_multipliers`).

        Affine inequalities are assembled entry by entry in their own shape
        by :func:`write_inequality_duals` (slack rows, bounds held by a box,
        boxed L1 ball or simplex, budget rows that became a simplex;
        ``max(e) <= t`` reduced to CVXPY's one multiplier), and ``E >> 0``
        with its trace bound by :func:`write_psd_duals`.

        On a ``symmetric=True`` (or ``PSD=True``) variable X only the sum
        ``d_ij + d_ji`` of a constraint's multipliers on a pair of entries is
        determined: X[i, j] and X[j, i] are one unknown, so the stationarity
        condition reads the pair's sum (for a bound held on both entries,
        ``G_ij + G_ji + d_ij + d_ji = 0`` with the signed multiplier d), and
        a pair's two entries are at their bound together. fwmodel returns the
        symmetric split, ``d_ij = d_ji``, which is what CVXPY returns when its
        solver's answer is symmetric (an interior point method's is; where it
        is not, compare the pair sums). A block whose set keeps X symmetric
        (the symmetric variants: no ``X[i, j] == X[j, i]`` rows) reads its
        multipliers from the symmetrized gradient ``sym(G) = (G + G') / 2``
        of L (:func:`_gradient_seen_by`: the raw G's antisymmetric part is
        not a multiplier, ``<T, X>`` with T not symmetric); where symmetry
        rows hold X, the rows' multipliers chose a split, and each pair's sum
        is split equally wherever the constraint is symmetric on the pair
        (the same bound on both entries: :func:`_split_pairs`,
        :func:`_split_transposed`). Where the bounds of a pair differ only the
        tighter binds, and it takes the pair's multiplier (as CVXPY).

        ``multipliers``: the rows' ``y + lam (M x - b)`` when the engine gives
        it (it does where it rescaled groups of rows: one lam then served rows
        in other units than the model's).

        ``slack_tolerance``: the solve's feasibility tolerance as a distance (``feas_tol *
        feasibility_scale``): an inequality row whose slack is clearly interior gets multiplier 0
        (complementary slackness; see :func:`write_inequality_duals`). None: the rows' multipliers as
        they are.
        """
        formed = {}  # formed once, when first needed: the rows' multipliers and the Lagrangian's gradient
        if multipliers is not None:
            formed["y"] = multipliers

        def row_multipliers():
            if "y" not in formed:
                formed["y"] = y + lam * (self.operator.matvec(x) - self.b)
            return formed["y"]

        def lagrangian_gradient():  # the blocks' gradient of the Lagrangian, g + M' (y + lam (M x - b))
            if "g" not in formed:
                _, g = self.objective.value_and_grad(x)
                formed["g"] = g + self.operator.rmatvec(row_multipliers()) if self.operator.shape[0] else g
            return formed["g"]

        write_norm_duals(self, x, lagrangian_gradient)  # norm(e) <= t: the ball's multiplier
        boxed = [blk for blk in self.blocks if isinstance(blk.set, BoxedL1Ball)]  # (None from it: merged)
        # id(block) -> (above, below, lo, hi): its entries' bound multipliers and bounds (boxed L1 balls, simplices)
        entry_multipliers = {}
        budget_duals = {}  # id(inequality) -> [(inequality, row, multiplier)] of rows sum(x) <= t made simplices
        if boxed:
            grad = lagrangian_gradient()
            for blk in boxed:
                above, below = _write_boxed_l1_duals(blk.set, x[blk.slice], grad[blk.slice], self.lowered)
                entry_multipliers[id(blk)] = (above, below) + tuple(blk.set.entry_bounds())
        slack_of = self.lowered.slack_of if self.lowered is not None else {}
        shared = getattr(self.lowered, "shared_duals", set())
        for eq in self.equalities:
            if id(eq) in shared:  # trace(E) == r also became a trace ball: written with it by write_psd_duals
                eq.dual_value = None
                continue
            rows = self.rows_of(self.equality_pieces.get(id(eq)))
            if rows is None or id(eq) in slack_of:  # an inequality's slack rows: write_inequality_duals
                continue
            value = row_multipliers()[rows]
            if value.size == eq.size:
                # (on symmetric variables held with symmetry rows, X + Y == C: each pair's sum split equally)
                value = _split_transposed(value, eq.expr, self.__dict__.setdefault("_transpose_pairs", {}))
                eq.dual_value = value.reshape(eq.shape) if eq.shape else float(value[0])
        budgets = [(eq, simplex, a, group, None) for eq in (self.lowered.absorbed_equalities if self.lowered else ())
                   for simplex, a, group in [self.lowered.absorbed[id(eq)]]]
        budgets += list(getattr(self.lowered, "budget_rows", ()))  # sum(x) <= t that became a simplex
        # budgets on selections (fm.sum(X[0]) == 1, fm.sum(x[:3]) <= t): [(constraint, rows, groups)] per simplex
        budgets += [(members, simplex, a, group, None)
                    for simplex, a, group, members in getattr(self.lowered, "slice_budgets", ())]
        if budgets:
            grad = lagrangian_gradient()
            by_set = {}
            for blk in self.blocks:
                for s in (blk.set,) + tuple(getattr(blk.set, "merged_from", ())):
                    by_set[id(s)] = blk
                if type(blk.set) is AffinePreimage and type(blk.set.inner) is Simplex:
                    by_set[id(blk.set.inner)] = blk  # a simplex on s * (x - B), held on x (x <= 0, sum(x) == -1)
            sliced = {}  # id(equality) -> (equality, its multipliers, NaN where no simplex gave one)
            for constraint, simplex, a, group, row in budgets:
                blk = by_set.get(id(simplex))
                mirrored = blk is not None and type(blk.set) is AffinePreimage and blk.set.inner is simplex
                if blk is None or (blk.set is not simplex and not mirrored and not hasattr(blk.set, "entry_bounds")):
                    continue  # (a symmetric variant: its shared entries break the per-entry conditions)
                xb, gb = x[blk.slice], grad[blk.slice]  # the block: the simplex's entries, in its order
                if mirrored:  # KKT in the simplex's coordinate z = s * x + c (``a``: the budget's on z)
                    xb, gb = blk.set.image_of(xb), blk.set.gradient_in_image(gb)
                nu_a, lo, hi, at_floor, at_cap = _simplex_budget(simplex if mirrored else blk.set, simplex, xb, gb,
                                                                 group)
                nu = nu_a / a
                if isinstance(constraint, list):  # [(constraint, rows, groups)]: each its groups' multipliers
                    for member, rows, labels in constraint:
                        if isinstance(member, Equality):
                            values = sliced.setdefault(id(member), (member, np.full(member.size, np.nan)))[1]
                            values[rows] = nu[labels]
                        else:
                            budget_duals.setdefault(id(member), []).extend(
                                (member, int(r), float(v)) for r, v in zip(rows, nu[labels]))
                elif isinstance(constraint, Equality):
                    constraint.dual_value = nu.reshape(constraint.shape) if constraint.shape else float(nu[0])
                else:  # rows of an inequality (multipliers >= 0): with the others in write_inequality_duals
                    # (one row sum(x) <= t, or the rows of fm.sum(X, axis) <= t, one per label of ``group``)
                    budget_duals.setdefault(id(constraint), []).extend(
                        (constraint, int(r), float(v)) for r, v in zip(np.atleast_1d(row), nu))
                # the entries' floor (and cap) multipliers, for the bound rows: g + nu a + above - below = 0
                pull = gb + nu_a[group]
                if mirrored:  # z's floor multiplier, back on x: g_x = s * g_z, so a cap of x where s < 0
                    floor = np.where(at_floor, np.maximum(pull, 0.0), 0.0)
                    scale = blk.set._a
                    lo, hi = blk.set.coordinate_bounds()
                    entry_multipliers[id(blk)] = (np.where(scale < 0, -scale * floor, 0.0),
                                                  np.where(scale > 0, scale * floor, 0.0), lo, hi)
                    continue
                entry_multipliers[id(blk)] = (np.where(at_cap, np.maximum(-pull, 0.0), 0.0),
                                              np.where(at_floor, np.maximum(pull, 0.0), 0.0), lo, hi)
            for eq, values in sliced.values():
                eq.dual_value = (None if np.isnan(values).any()
                                 else values.reshape(eq.shape) if eq.shape else float(values[0]))
        # E >> 0, trace(E) <= r: the PSD ball's multipliers (and its share of the diagonal's bounds')
        trace_shares = write_psd_duals(self, x, lagrangian_gradient, row_multipliers)
        write_inequality_duals(self, x, lagrangian_gradient, row_multipliers, entry_multipliers, budget_duals,
                               trace_shares, slack_tolerance)
        for ineq in getattr(self.lowered, "hinges", ()):  # fm.sum(fm.pos(e)) <= t: its budget's multiplier
            dual = ineq.hinge.multiplier()
            ineq.dual_value = None if dual is None else dual / ineq.scale
        if self.presolve is not None:  # the user's constraints on a presolved PSD variable: the reduced ones'
            self.presolve.write_duals()

    def rows_of(self, piece):
        """The slice of M's rows that ``piece`` occupies (None if it has no rows)."""
        for p, lo, hi in zip(self.operator.pieces, self.operator.offsets[:-1], self.operator.offsets[1:]):
            if p is piece:
                return slice(int(lo), int(hi))
        return None

    def feasibility_rel(self, x, feasibility, engine_value):
        """``||M x - b|| / max(1, ||x||, ||b||)`` with x in the model's units: an expression block held in
        its variables' units (``BlockInfo.units``) counts as ``units * z'``, the expression's value
        (``engine_value``, the engine's ratio with the block's own norm, where every block is in the model's)."""
        scaled = [blk for blk in self.blocks if blk.units != 1.0]
        if not scaled:
            return engine_value
        x_norm2 = float(np.dot(x, x)) + sum((blk.units ** 2 - 1.0) * float(np.dot(x[blk.slice], x[blk.slice]))
                                             for blk in scaled)
        return feasibility / max(1.0, math.sqrt(max(x_norm2, 0.0)), float(np.linalg.norm(self.b)))

    def empty_sets(self):
        """Messages for the sets that the current data leave empty (see ``ConvexSet.empty_reason``)."""
        # (a set held in its variables' units: the user's set's reason, in its units and words)
        held = [blk.set.derived_from if isinstance(blk.set, InUnits) else blk.set for blk in self.blocks]
        return [s.empty_reason for s in held if s.empty_reason is not None]

    def violated_fixed_constraints(self):
        """Messages for the fixed constraints that the current data violates (empty when all hold).

        A fixed constraint has no variables, so it holds or not whatever the
        solver does; it is evaluated with the current Parameter values, with
        the same relative tolerance as the sets' membership tests (1e-9).
        """
        messages = []
        for message in ([] if self.lowered is None else self.lowered.violated_constant_rows):
            message = message() if callable(message) else message  # a budget's total read from Parameters
            if message is not None:
                messages.append(message)
        for c in self.fixed_constraints:
            if isinstance(c, Equality):
                lhs, rhs = np.asarray(c.lhs.value), np.asarray(c.rhs.value)
                residual = np.abs(lhs - rhs)
                scale = max(1.0, float(np.max(np.abs(lhs), initial=0.0)), float(np.max(np.abs(rhs), initial=0.0)))
                if np.max(residual, initial=0.0) > 1e-9 * scale:
                    where = int(np.argmax(residual)) if residual.ndim else None
                    at = "" if where is None else f" (largest at flat index {where})"
                    messages.append(f"the constraint {c!r} has no variables and does not hold for the current data: "
                                    f"|lhs - rhs| = {float(np.max(residual)):.6g}{at}")
            else:
                refresh = getattr(c, "refresh", None)  # sets whose data are Parameters re-read them
                if refresh is not None:
                    refresh()
                value = c.expr.value
                inside = c.contains(value)
                if inside is None:  # a user-defined contains() that cannot tell
                    raise ModelError(f"{c!r}: the constrained expression has no variables, so the constraint is "
                                     f"true or false for the data alone, but {type(c).__name__}.contains returned "
                                     "None (cannot tell which)")
                if not inside:
                    shown = np.array2string(np.asarray(value), threshold=6, precision=6)
                    messages.append(f"the constraint {c!r} has no variables and does not hold for the current data: "
                                    f"its expression {c.expr!r} = {shown} is not in the set")
        return messages

    def summary(self):
        lines = [f"{len(self.blocks)} blocks, {self.n} primal entries, "
                 f"{self.operator.shape[0]} consistency rows, {self.n_variables} variable entries"]
        for blk in self.blocks:
            lines.append(f"  {blk!r}")
        return "\n".join(lines)


def _rms_row_norm(A):
    """The root mean square of the norms of A's nonzero rows (None where every row is zero)."""
    A = A.tocsr()
    norms2 = np.asarray(A.multiply(A).sum(axis=1), dtype=float).ravel()
    norms2 = norms2[norms2 > 0]
    return math.sqrt(float(np.mean(norms2))) if norms2.size else None


def copy_units(A=None, rms=None):
    """The units of an expression ``A v + c0`` relative to its variables v, or 1 where they are close.

    The root mean square of A's nonzero rows' norms (``rms`` where given; 1 where neither is known):
    how large an entry of the expression is per unit of the variables it
    reads (a selection of entries: 1; ``s * D @ x`` with D first
    differences: ``s * sqrt(2)``). Rounded to a power of ten, and 1 unless it
    is more than ``UNITS_APART`` (the stopping rule's "units far apart") from
    1: an expression within a factor 10 of its variables keeps its units,
    and ``s * D @ x`` for s a power of ten is held exactly as ``D @ x`` is.
    """
    if rms is None and A is not None:
        rms = _rms_row_norm(A)
    if rms is None or not np.isfinite(rms) or 1.0 / UNITS_APART <= rms <= UNITS_APART:
        return 1.0
    return 10.0 ** round(math.log10(rms))


def _set_extent(cset):
    """The largest magnitude an entry of ``cset``'s points can take (from its coordinate bounds), or None
    where unknown (a datum without a value yet, a user's set without bounds)."""
    try:
        lower, upper = cset.coordinate_bounds()
        extent = max(float(np.max(np.abs(lower))), float(np.max(np.abs(upper))))
    except Exception:  # (a Parameter without a value, a user's set whose LMO cannot be asked)
        return None
    return extent if np.isfinite(extent) and extent > 0 else None


def block_units(cset, coefficient_units):
    """The units an expression block is held in: the expression's coefficients' (:func:`copy_units`) where
    the set's own size agrees that its points are in other units than the variables, else 1.

    Both must be more than ``UNITS_APART`` from 1 on the same side; the block then takes the
    coefficients' units (the set's size only confirms: ``fm.L2Ball(s * B @ x, 0.3 * s)`` is held in s).
    The coefficients alone were not enough (a read-only review): a loose set on ``1e-3 * D @ x``
    (``fm.L1Ball(1e-3 * D @ x, 0.1)``, an L1 ball of radius 100 in x's units) held in x's units ran to
    max_iter where it had been optimal in 805 iterations, and one row of weight 1e3 among ten of 1 pulled
    the whole block to 1e3 (max_iter, was optimal in 187). ``fm.L1Ball(s * D @ x, s)``, whose set and
    coefficients both say s, is still held in x's units.
    """
    if coefficient_units == 1.0:
        return 1.0
    size_units = copy_units(rms=_set_extent(cset))
    if size_units == 1.0 or (size_units > 1.0) != (coefficient_units > 1.0):
        return 1.0
    return coefficient_units


def _in_variable_units(cset, var_layout, n_v, parametric, A=None):
    """``(set, units)`` for an expression block: ``cset`` divided by the expression's units (``copy_units``)
    where they are far from its variables', so that the block's point is in its variables' units.

    Why (measured in benchmarks/copy_units.py): the engine's projected-gradient
    step moves the projected blocks with one step size, and its row norms,
    penalty and stopping scales mix the blocks' coordinates; a block in units
    1e3 times its variables' (``fm.L1Ball(1e3 * D @ x, 1e3)`` next to an L2
    ball on x) ended max_iter where ``fm.L1Ball(D @ x, 1)`` took 80
    iterations. Held as ``z' = z / 1e3`` in the L1 ball of radius 1, with
    the rows ``1e3 z' - 1e3 D x = 0``, the engine sees the unit model. An
    expression with Parameters keeps its units (its coefficients change with
    their values), and so does a set whose family has no scaled form
    (:func:`fwmodel.sets.units.in_units`).

    An expression with Parameters is held in the units of their values at
    compile time (1 while one has no value); ``parametric`` receives
    ``(units, rms())`` so that a solve compiles again where the values moved
    the expression's units more than ``UNITS_APART`` from those
    (:meth:`CompiledProblem.copy_units_stale`). The rows are right in any
    units: only the solve's speed depends on them.
    """
    expr = cset.expr
    offsets = {v.id: var_layout[v.id][0] for v in expr.variables()}
    params = expr.parameters()

    seen = {}  # the Parameter values last read, and the rms they gave (a solve without changes reads it back)

    def rms():
        values = [p.value for p in params]
        if any(v is None for v in values):
            return None
        if "values" in seen and all(np.array_equal(a, b) for a, b in zip(seen["values"], values)):
            return seen["rms"]
        seen["values"], seen["rms"] = [np.array(v, copy=True) for v in values], _rms_row_norm(
            linearize(expr, offsets, n_v)[0])
        return seen["rms"]

    if params:
        now = rms()
        units = block_units(cset, copy_units(rms=now))
        if has_units(cset):  # (a family with a scaled form: its units can be kept up to date)
            parametric.append((units, rms, cset))
    else:
        units = block_units(cset, copy_units(linearize(expr, offsets, n_v)[0] if A is None else A))
    if units == 1.0:
        return cset, 1.0
    scaled = in_units(cset, units)
    return (cset, 1.0) if scaled is None else (scaled, units)


def _selection_entries(A, c, var_slot):
    """Entries of one variable that an affine map selects, or None.

    The map selects when every row has a single coefficient 1, c = 0, all in
    the columns of one variable, with no entry repeated.
    """
    if np.any(c != 0):
        return None
    A = A.tocsr()
    if A.nnz != A.shape[0] or np.any(np.diff(A.indptr) != 1) or np.any(A.data != 1.0):
        return None
    cols = A.indices
    off, size = var_slot
    if cols.size and (cols.min() < off or cols.max() >= off + size):
        return None
    if np.unique(cols).size != cols.size:
        return None
    return cols - off


def flatten_constraints(constraints):
    """One flat list of constraints: nested lists and objects' ``.constraints`` lists expanded."""
    out = []
    for c in constraints:
        if isinstance(c, (list, tuple)):
            out.extend(flatten_constraints(c))
        elif hasattr(c, "constraints") and not isinstance(c, (ConvexSet, Equality)):
            out.extend(flatten_constraints(c.constraints))
        else:
            out.append(c)
    return out


def _split_fixed_constraints(sets, equalities):
    """(sets, equalities, fixed): the constraints with variables, and those without.

    A set without variables must have a membership test (``contains``) to be
    checked at each solve; a user-defined set without one is refused here.
    """
    fixed = []
    for cset in sets:
        if not cset.expr._has_vars:
            if type(cset).contains is ConvexSet.contains:
                raise ModelError(
                    f"{cset!r}: the constrained expression {cset.expr!r} has no variables, so the constraint is "
                    f"true or false for the data alone, but {type(cset).__name__} has no membership test "
                    "(contains) to tell which: implement contains(point, tol), or leave the constraint out"
                )
            fixed.append(cset)
    fixed.extend(eq for eq in equalities if not eq.expr._has_vars)
    kept_sets = [c for c in sets if c.expr._has_vars]
    kept_equalities = [eq for eq in equalities if eq.expr._has_vars]
    return kept_sets, kept_equalities, fixed


def compile_problem(objective_expr, sign, constraints):
    """Compile ``min sign * objective_expr`` over ``constraints`` (see module docs)."""
    constraints = flatten_constraints(constraints)
    # 00. a PSD variable whose constraints fix diagonal entries at 0 is solved on that face
    #     (fwmodel.compiler.presolve): X = P Y P' with Y PSD on the kept indices
    presolve = presolve_psd_zeros(objective_expr, constraints)
    if presolve is not None:
        objective_expr, constraints = presolve.objective, presolve.constraints
    # 0. constraints as CVXPY writes them (norm bounds, inequalities, variable
    #    attributes) become sets and equalities (see fwmodel.compiler.lowering)
    lowered = lower_constraints(objective_expr, constraints)
    sets, equalities = lowered.sets, lowered.equalities

    # 0b. constraints without variables constrain no block: kept aside, checked at each solve
    sets, equalities, fixed = _split_fixed_constraints(sets, equalities)

    # 1. variables and their slots in v
    variables, seen = [], set()
    for expr in [objective_expr] + [s.expr for s in sets] + [e.expr for e in equalities]:
        for var in expr.variables():
            if var.id not in seen:
                seen.add(var.id)
                variables.append(var)
    var_layout, off = {}, 0
    for var in variables:
        var_layout[var.id] = (off, var.shape)
        off += var.size
    n_v = off
    var_of_id = {var.id: var for var in variables}

    graph = nx.Graph()
    for var in variables:
        graph.add_node(("variable", var.id), kind="variable", variable=var, label=var.name, shape=var.shape)

    # 2. blocks: copies or expression blocks
    blocks, offset = [], 0
    parametric_units = []  # (units, rms()) of expression blocks with Parameters (CompiledProblem.copy_units_stale)
    expression_rows = []  # (block, A, c, parametric)
    for k, cset in enumerate(sets):
        expr = cset.expr
        name = f"{type(cset).__name__}#{k}"
        size = cset.size
        kind, var, entries, A = "expression", None, None, None
        if isinstance(expr, Variable):
            kind, var, entries = "copy", expr, None  # the whole variable, in order
        elif not expr.parameters() and len(expr.variables()) == 1:
            only = expr.variables()[0]
            A, c = linearize(expr, {v.id: var_layout[v.id][0] for v in variables}, n_v)
            sel = _selection_entries(A, c, (var_layout[only.id][0], only.size))
            if sel is not None:
                kind, var, entries = "copy", only, sel
            else:
                expression_rows.append((k, A, c))
        else:
            expression_rows.append((k, None, None))
        units = 1.0
        if kind == "expression":  # held in its variables' units where it is far from them (copy_units)
            cset, units = _in_variable_units(cset, var_layout, n_v, parametric_units, A)
        blk = BlockInfo(index=k, offset=offset, size=size, set=cset, kind=kind, variable=var,
                        entries=entries, name=name, units=units)
        blocks.append(blk)
        offset += size
        graph.add_node(("set", k), kind="set", set=cset, label=repr(cset))
        graph.add_node(("block", k), kind="block", block=blk, offset=blk.offset, size=size, label=f"x^({k})")
        graph.add_edge(("block", k), ("set", k), kind="in set")
    n = offset

    # 3. copies: every variable entry covered, the first copy is the hub
    copy_map = CopyMap(variables, var_layout, n_v, n)
    # first[var.id]: the x position of the first copy of each of var's entries (-1: none yet),
    # made only for variables with partial copies (a whole first copy covers every entry)
    first = {}
    pieces_in_order = []
    touched = set()  # variables some earlier copy covers (in part or whole)
    whole_first = {}  # variable id -> the block whose whole copy is the first copy of every entry
    for blk in blocks:
        if blk.kind != "copy":
            continue
        var = blk.variable
        if blk.entries is None and (var.id not in touched or var.id in whole_first):
            # Fast path for whole copies (the common case: X in two sets). The first one is the
            # hub of every entry; a later one is tied to it by two contiguous slices. No
            # per-entry index arrays: at d = 8000 each would hold 64 million entries.
            copy_map.add_copy(var, None, blk.slice)
            graph.add_edge(("variable", var.id), ("block", blk.index), kind="copy", entries="all")
            if var.id not in touched:
                touched.add(var.id)
                whole_first[var.id] = blk
                continue
            hub = whole_first[var.id]
            piece = CopyRows(blk.slice, hub.slice, label=f"{var.name}: {blk.name} = first copy")
            graph.add_edge(("block", blk.index), ("block", hub.index), kind="consistency",
                           rows=piece.rows, piece=piece)
            pieces_in_order.append(piece)
            continue
        touched.add(var.id)  # (a first copy that was whole stays the hub of every entry)
        if var.id not in first:
            whole = whole_first.get(var.id)
            first[var.id] = (np.full(var.size, -1, dtype=np.intp) if whole is None
                             else np.arange(whole.offset, whole.offset + whole.size, dtype=np.intp))
        var_first = first[var.id]
        ent = np.arange(var.size, dtype=np.intp) if blk.entries is None else blk.entries
        positions = blk.offset + np.arange(blk.size, dtype=np.intp)
        copy_map.add_copy(var, blk.entries, blk.slice)
        graph.add_edge(("variable", var.id), ("block", blk.index), kind="copy",
                       entries="all" if blk.entries is None else blk.entries.size)
        hub = var_first[ent]
        fresh = hub < 0
        var_first[ent[fresh]] = positions[fresh]
        tied = ~fresh
        if np.any(tied):
            hub_blocks = np.unique(np.searchsorted([b.offset for b in blocks], hub[tied], side="right") - 1)
            piece = CopyRows(positions[tied], hub[tied], label=f"{var.name}: {blk.name} = first copy")
            for hb in hub_blocks:
                graph.add_edge(("block", blk.index), ("block", int(hb)), kind="consistency",
                               rows=piece.rows, piece=piece)
            pieces_in_order.append(piece)
    for var in variables:
        if var.id in whole_first and var.id not in first:
            continue  # a whole copy covers every entry
        missing = first[var.id] < 0 if var.id in first else np.ones(var.size, dtype=bool)
        if np.any(missing):
            if np.all(missing):
                through = [s for s in sets if any(v.id == var.id for v in s.expr.variables())]
                note = ""
                if through:
                    note = (f" {', '.join(repr(s) for s in through[:3])} bound"
                            f"{'s' if len(through) == 1 else ''} an expression of {var.name}, not {var.name} itself: "
                            "such a set gets its own block, tied to the variables by equality rows, and does not "
                            f"bound {var.name}. Only a set on {var.name}, a selection of its entries, or an "
                            f"elementwise map a * {var.name} + c (a != 0 constants; c constants or Parameters) holds "
                            f"{var.name}.")
                    norms = [s for s in through if getattr(s, "written_as", None) and s.expr.parameters()]
                    if norms:  # norm1(multiply(p, x)) <= 1: only p * e + c (p scalar) becomes a ball on x
                        note += (f" {norms[0].written_as}: a norm bound holds {var.name} itself only where its "
                                 f"argument is p * e + c (also e * p, e / p; p a scalar Parameter expression, e "
                                 f"{var.name} or an elementwise map of it without Parameters, c data), as the ball "
                                 "norm(e + c / p) <= t / |p| whose center and radius are read at each solve, or "
                                 f"an elementwise map of {var.name} whose scale and offset Parameters give "
                                 f"(multiply(p, {var.name}) + c, p a vector Parameter) where no other set holds "
                                 f"any entry of {var.name}; this argument is not of those forms (a matrix "
                                 "product, several variables, other sets on some entries), so it is a set on the "
                                 f"expression, which does not hold {var.name}. Bound {var.name} with another set "
                                 f"as well, e.g. fm.Box({var.name}, lo, hi).")
                    elif any(s.expr.parameters() for s in through):  # fm.L1Ball(p * x, r): p may be 0
                        note += (" A set on a Parameter multiple (p * " + var.name + ") does not hold "
                                 + var.name + " (p may be 0 at a solve): write it as a norm bound, "
                                 "fm.norm1(p * " + var.name + ") <= r, which the compiler holds as fm.norm1("
                                 + var.name + ") <= r / |p|.")
                    joint = [s for s in through if len(s.expr.variables()) > 1]
                    if joint:  # a set on a stack of variables (CVXPY's norm1(hstack([x, y])) <= t)
                        names = [v.name for v in joint[0].expr.variables()]
                        note += (f" To bound {', '.join(names)} together, make them one variable and use its "
                                 f"slices (z = fm.Variable(...); {names[0]} = z[...], ...), so that the set "
                                 "holds z.")
                raise ModelError(
                    f"variable {var.name} (shape {var.shape}) is not in any bounded set: FW-AL needs every "
                    f"variable in at least one set that holds it directly ({var.name}, a slice such as "
                    f"{var.name}[...], or {var.name}.T), e.g. fm.Box({var.name}, lower, upper), "
                    f"{var.name} >= lo with {var.name} <= hi, fm.norm1({var.name}) <= r or "
                    f"fm.L1Ball({var.name}).{note}"
                )
            idx = np.flatnonzero(missing)
            raise ModelError(
                f"{idx.size} entries of variable {var.name} (shape {var.shape}; first flat index {idx[0]}) "
                "are not in any bounded set: every entry must lie in at least one set"
            )
    copy_map.finalize()

    # 4. expression blocks and equalities become sparse rows in x
    parametric = []
    W = None

    def weights():
        nonlocal W
        if W is None:
            W = copy_map.matrix()
        return W

    all_offsets = {v.id: var_layout[v.id][0] for v in variables}

    def expression_piece(k):
        blk = blocks[k]
        A, c = linearize(blk.set.expr, all_offsets, n_v)
        within_data_limit(A, c, f"the expression of set {blk.name} ({blk.set.expr!r})")
        AW = (A @ weights()).tocsr()
        # z = units * z' (the block holds z', see _in_variable_units): the rows units * z' - A W x = c
        eye = sp.csr_matrix((np.full(blk.size, blk.units), (np.arange(blk.size), blk.offset + np.arange(blk.size))),
                            shape=(blk.size, n))
        return SparseRows(eye - AW, c, label=f"{blk.name} = {blk.set.expr!r}")

    expression_pieces = {}
    for k, _A, _c in expression_rows:
        blk = blocks[k]
        piece = expression_piece(k)
        expression_pieces[k] = piece
        pieces_in_order.append(piece)
        for var in blk.set.expr.variables():
            graph.add_edge(("block", k), ("variable", var.id), kind="consistency", rows=piece.rows, piece=piece)
        if blk.set.expr.parameters():
            parametric.append((piece, lambda k=k: expression_piece(k), blk.set.expr.parameters()))

    def equality_label(eq):
        """The rows' name in messages and the graph, formed once per equality (a thousand single-row
        constraints spent 0.3 s of their compilation printing expressions)."""
        if not hasattr(eq, "_rows_label"):
            eq._rows_label = f"{eq.lhs!r} == {eq.rhs!r}"
        return eq._rows_label

    def equality_piece(eq):
        A, c = linearize(eq.expr, all_offsets, n_v)
        within_data_limit(A, c, getattr(eq, "written_as", None) or equality_label(eq))
        return SparseRows((A @ weights()).tocsr(), -c, label=equality_label(eq))

    copies_of = {}
    for blk in blocks:
        if blk.kind == "copy":
            copies_of.setdefault(blk.variable.id, []).append(blk)

    def whole_copy(var):
        # x-slice of the variable when one block holds it all, in C order
        # (then the rows act on x directly: no copy averaging to account for)
        found = copies_of.get(var.id, [])
        if len(found) == 1 and found[0].entries is None:
            return found[0].slice
        return None

    equality_pieces = {}
    for i, eq in enumerate(equalities):
        # An equality may build its own structured rows (such as
        # marginalization consistency, see fwmodel.factor_graphs); it
        # returns None when the layout does not allow it.
        structured = getattr(eq, "consistency_piece", None)
        piece = structured(whole_copy) if structured is not None else None
        if piece is None:
            piece = equality_piece(eq)
        pieces_in_order.append(piece)
        equality_pieces[id(eq)] = piece
        node = ("equality", i)
        role = getattr(eq, "role", None)  # e.g. "marginalization"
        extra = {} if role is None else {"role": role}
        graph.add_node(node, kind="equality", constraint=eq, label=equality_label(eq), rows=piece.rows,
                       **extra)
        for var in eq.variables():
            graph.add_edge(node, ("variable", var.id), kind="consistency", rows=piece.rows, piece=piece, **extra)
        if eq.parameters():
            parametric.append((piece, lambda eq=eq: equality_piece(eq), eq.parameters()))

    # 5. M assembled from the consistency edges of the graph, in creation order
    graph_pieces = []
    seen_pieces = set()
    for _, _, data in graph.edges(data=True):
        p = data.get("piece")
        if p is not None and id(p) not in seen_pieces:
            seen_pieces.add(id(p))
            graph_pieces.append(p)
    order = {id(p): i for i, p in enumerate(pieces_in_order)}
    graph_pieces.sort(key=lambda p: order[id(p)])
    operator = ConsistencyOperator(graph_pieces, n)

    objective = BlockObjective(SmoothFunction(objective_expr, var_layout), sign, copy_map)
    return CompiledProblem(blocks=blocks, n=n, variables=variables, var_layout=var_layout, graph=graph,
                           operator=operator, copy_map=copy_map, objective=objective,
                           equalities=equalities, parametric=parametric, equality_pieces=equality_pieces,
                           expression_pieces=expression_pieces, lowered=lowered, fixed_constraints=fixed, parametric_units=parametric_units,
                           presolve=presolve)


def _dual_norm(kind, g):
    """The dual norm of ``g`` for the norm of kind "l1", "l2", "linf" or "nuc"."""
    if kind == "l1":
        return float(np.abs(g).max(initial=0.0))
    if kind == "l2":
        return float(np.linalg.norm(g))
    if kind == "linf":
        return float(np.abs(g).sum())
    return float(np.linalg.norm(g, 2))  # nuclear norm: the spectral norm


def write_norm_duals(compiled, x, lagrangian_gradient):
    """Set ``dual_value`` of each ``norm(e) <= t`` (and ``abs(e) <= t``) from its ball's block.

    At a solution of ``min f`` over a block ``z`` in ``{||z|| <= t}`` (with
    the rows of M), KKT says ``-G in mu * d||z||`` with ``mu >= 0`` and
    ``mu (||z|| - t) = 0``, where ``G = g + M' (y + lam (M x - b))`` is the
    block's gradient of the augmented Lagrangian (as in
    :meth:`CompiledProblem.write_duals`). Taking the inner product with z,
    ``<-G, z> = mu ||z|| = mu t``: so ``mu = max(0, <-G, z>) / t``, which is
    CVXPY's ``dual_value`` (0 for an inactive ball, where G = 0; the dual
    norm of G for an active one). A radius of 0 gives the dual norm of G.
    For ``abs(e) <= t`` (a box) the same holds per entry. A ball merged into
    another set (a capped simplex) has no multiplier of its own: None (a boxed L1
    ball's comes from its KKT conditions: :func:`_write_boxed_l1_duals`).

    A ball (L1, L2, Linf, radius t > 0, on the variable itself or on a
    selection of its entries such as ``x[:3]``) whose implied bounds
    ``|x_j| <= t`` closed a one-sided bound's box (``norm1(x) <= t`` with
    ``x[:2] <= 0.3``: the box is ``[-t, 0.3]``) shares those sides with
    the box. Adding the two blocks' KKT conditions on the entries both hold,
    ``g + mu s + above - below = 0``, where CVXPY's has ``g + tau s' +
    above_user - below_user = 0`` (no derived sides): so ``tau s' = mu s +
    above_d - below_d`` with the box's multipliers on the ball's sides only,
    and with ``<s', z> = ||z|| = t`` for an active ball, ``tau = mu + <above_d
    - below_d, z> / t`` (z the ball's point; with Parameters in the radius
    or the bounds, the sides are found at the solve's end). A ball on an
    image (``A @ x``) whose bounds a box took: None.
    """
    lowered = compiled.lowered
    if lowered is None or not lowered.norm_sets:
        return
    g = lagrangian_gradient()  # (a callable: formed once per solve's end, shared with the other duals)
    shared = getattr(lowered, "shared_duals", set())
    redundant = getattr(lowered, "redundant_balls", ())
    for ineq, ball in lowered.norm_sets:
        if id(ball) in redundant:  # a ball containing another one, dropped: the smaller one's KKT hold alone
            ineq.dual_value = 0.0
            continue
        if id(ball) in getattr(lowered, "tangent_balls", {}):  # a ball left a single point: no multiplier attained
            ineq.dual_value = None
            continue
        if isinstance(ball, Ellipsoid):  # quad_form(e, P) <= t: the multiplier of the form written
            ineq.dual_value = _ellipsoid_multiplier(compiled, lowered, shared, ball, x, g)
            _scale_back(ineq)
            continue
        _write_norm_dual(compiled, lowered, shared, ineq, ball, x, g)
        radius = None
        factor = getattr(ineq, "parameter_factor", None)
        if factor is not None and ineq.dual_value is not None:
            # norm(p * e) <= t held as ||e|| <= t / |p|: lambda (|p| ||e|| - t) = mu (||e|| - t / |p|) gives
            # CVXPY's lambda = mu / |p| (mu |p| for e / p; 0 while p == 0, where the constraint is dropped)
            ineq.dual_value = ineq.dual_value * _factor_scale(ineq)
            radius = max(float(np.asarray(ineq.bound.value, dtype=float).reshape(())), 0.0) if ineq.squared else None
        if getattr(ineq, "squared", False) and ineq.dual_value is not None:
            # sum_squares(e) <= t held as ||e|| <= r = sqrt(t): KKT's lambda * 2 e = mu * e / r, so CVXPY's
            # multiplier of the squared form is mu / (2 r) (none at r = 0, where no multiplier exists)
            radius = float(ball.radius) if radius is None else radius
            ineq.dual_value = ineq.dual_value / (2.0 * radius) if radius > 0 else None
        _scale_back(ineq)


def _scale_back(ineq):
    """CVXPY's multiplier of ``p * sum_squares(e) <= t`` (also ``quad_form``) held as ``sum_squares(e) <= t / p``:
    KKT's ``lambda p = lambda'``, so the rewritten one's over p (times p for ``sum_squares(e) / p <= t``)."""
    scaled_by = getattr(ineq, "data_factor", None)
    if scaled_by is not None and ineq.dual_value is not None:
        q = float(np.asarray(scaled_by[0].value, dtype=float).reshape(()))
        ineq.dual_value = ineq.dual_value * q if scaled_by[1] else (ineq.dual_value / q if q > 0 else None)


def _ellipsoid_multiplier(compiled, lowered, shared, ellipsoid, x, g):
    """CVXPY's multiplier of ``quad_form(e, P) <= t`` held by ``ellipsoid`` (:meth:`Ellipsoid.multiplier`).

    Where a box took the ellipsoid's implied bounds (``x >= 0`` next to it), the two blocks' KKT conditions
    add up on the shared entries: ``g + 2 lambda P z + above_d - below_d = 0`` against CVXPY's ``g + 2 tau
    P z = 0`` there, so ``tau = lambda + <above_d - below_d, z> / (2 t)`` (an implied side binds only where
    the ellipsoid touches its bounding box, at which ``P z`` is along that side's axis). None where the
    record is missing (a Parameter, a shifted ellipsoid).
    """
    derived = None
    if id(ellipsoid) in shared:
        derived = _derived_box_sides(compiled, lowered, ellipsoid, x, g)
        if derived is None:
            return None
    held = _held_by_one_block(compiled, ellipsoid, x, g)
    if held is None:
        return None
    multiplier = ellipsoid.multiplier(*held)
    if derived is not None and multiplier is not None:
        entries, pull = derived
        multiplier = max(0.0, multiplier + float(pull @ held[0][entries]) / (2.0 * float(ellipsoid.bound)))
    return multiplier


def _write_norm_dual(compiled, lowered, shared, ineq, ball, x, g):
    """``dual_value`` of one ``norm(e) <= t`` held by ``ball`` (see :func:`write_norm_duals`)."""
    ineq.dual_value = None
    derived = None
    # the ball as the compiler recorded it: itself, or its symmetric variant (a symmetric variable's)
    key = next((id(s) for s in [ball] + [blk.set for blk in compiled.blocks if getattr(blk.set, "derived_from", None)
                                         is ball] if id(s) in shared), None)
    if key is not None:  # a box took the ball's implied bounds: the two share its multiplier
        derived = _derived_box_sides(compiled, lowered, ball, x, g, key)
        if derived is None:
            return
    held = _held_by_one_block(compiled, ball, x, g)  # seen in the ball's own expression a * x + c
    if held is None:
        return
    point, grad = held
    if derived is not None and ineq.norm.kind == "abs":
        # abs(x) <= t: per entry, the abs box's own multiplier plus the bound box's on the sides it took from
        # it (above_d at x_j = t, below_d at x_j = -t: |above_d - below_d|, one of the two is 0)
        entries, pull = derived
        bound = np.broadcast_to(np.asarray(ball.interval_bounds()[1], dtype=float), point.shape)
        inner = np.maximum(0.0, -grad * point)
        mu = np.where(bound > 0, inner / np.where(bound > 0, bound, 1.0), np.abs(grad))
        mu[entries] += np.abs(pull)
        ineq.dual_value = mu.reshape(ineq.shape)
        return
    if derived is not None:
        entries, pull = derived  # the box's multipliers on the ball's sides, above_d - below_d
        if float(ball.radius) > 0:
            mu = max(0.0, -float(point @ grad)) / float(ball.radius)
            ineq.dual_value = max(0.0, mu + float(pull @ point[entries]) / float(ball.radius))
        return
    if ineq.norm.kind == "abs":
        bound = np.broadcast_to(np.asarray(ball.interval_bounds()[1], dtype=float), point.shape)
        inner = np.maximum(0.0, -grad * point)
        mu = np.where(bound > 0, inner / np.where(bound > 0, bound, 1.0), np.abs(grad))
        # on a symmetric variable held with symmetry rows (a Parameter's bound, X - C): the rows'
        # multipliers chose the pairs' split; CVXPY's is equal (a symmetric variant's gradient gave it already)
        mu = _split_transposed(mu, ball.expr, compiled.__dict__.setdefault("_transpose_pairs", {}), bound.ravel())
        ineq.dual_value = mu.reshape(ineq.shape)
        return
    radius = float(ball.radius)
    if radius > 0:
        ineq.dual_value = max(0.0, -float(point @ grad)) / radius
    else:
        shaped = grad.reshape(ball.shape) if ineq.norm.kind == "nuc" else grad
        ineq.dual_value = _dual_norm(ineq.norm.kind, shaped)


def _derived_box_sides(compiled, lowered, ball, x, g, key=None):
    """``(positions, above_d - below_d)``: the multipliers of the box sides that ``ball`` implied, from the
    box's block, at the ball's own entries (``positions``, flat in the ball's expression: the variable, or
    the selection of its entries the ball holds); None where the compiler did not record them or no block
    holds that box (itself or its symmetric variant, whose multipliers read the symmetrized gradient:
    :func:`_gradient_seen_by`), a merged set. ``key``: the id the compiler recorded the ball under (its
    symmetric variant's), ``id(ball)`` by default."""
    info = getattr(lowered, "derived_bounds", {}).get(id(ball) if key is None else key)
    if info is None:
        return None
    box, var, entries, position, lo_side, hi_side, holder = info
    # a ball on a * x + c held as its preimage on x (norm(p * (x - 1)) <= t): its bounds in x's coordinates
    # (the box's), its multipliers in the ball's: (above_d - below_d) / a at the ball's entries (KKT on x,
    # g + a * mu * s + above_d - below_d = 0 against CVXPY's g + a * tau * s' = 0, s and s' subgradients)
    preimage = holder if isinstance(holder, AffinePreimage) else None
    blocks = [blk for blk in compiled.blocks if blk.set is box or _bounds_box(blk.set) is box]
    # (a trace-norm ball: normNuc(X) <= t, its implied bounds |X_ij| <= t sides as a ball's; or PSD)
    if len(blocks) != 1 or not (type(ball) in (L1Ball, L2Ball, LinfBall, Ellipsoid, Box)
                                or isinstance(ball, TraceNormBall)):
        return None
    blk = blocks[0]
    inside = position >= 0  # the box's entries that the ball holds (all, for a ball on the variable itself)
    if lo_side is None:  # bounds read from Parameters: the sides where the box's bound is the ball's now
        bounds = lowered.entry_bounds
        if bounds is None or var.id not in bounds.offsets:
            return None
        off = bounds.offsets[var.id]
        user_lo, user_hi = bounds.lo[off + entries], bounds.hi[off + entries]
        held_bounds = (ball if preimage is None else preimage).coordinate_bounds()
        ball_lo, ball_hi = (np.where(inside, np.broadcast_to(np.asarray(b, dtype=float), (ball.size,))[position],
                                     fill) for b, fill in zip(held_bounds, (-np.inf, np.inf)))
        box_lo, box_hi = (np.broadcast_to(np.asarray(b, dtype=float), (entries.size,)) for b in box.coordinate_bounds())

        def same(a, b):
            return np.abs(a - b) <= 1e-12 * np.abs(b)  # (relative: bounds of 1e-13 and 2e-13 differ)

        lo_side = (ball_lo > user_lo) & same(box_lo, ball_lo)
        hi_side = (ball_hi < user_hi) & same(box_hi, ball_hi)
    above, below = _box_multipliers(box, np.asarray(x[blk.slice], dtype=float),
                                    _gradient_seen_by(blk.set, np.asarray(g[blk.slice], dtype=float)))
    pull = np.where(hi_side & inside, above, 0.0) - np.where(lo_side & inside, below, 0.0)
    if preimage is not None:
        return position[inside], pull[inside] / preimage._a[position[inside]]
    return position[inside], pull[inside]


def _held_by_one_block(compiled, source, x, g):
    """``(point, gradient)`` of the one block that holds ``source`` (itself or a set derived from it),
    seen in ``source``'s own expression (a preimage on the variable maps back to a * x + c); else None."""
    held = []
    for blk in compiled.blocks:
        chain = [blk.set]  # the block's set back to the source: symmetric variants, preimages on the variable
        while chain[-1] is not source and getattr(chain[-1], "derived_from", None) is not None:
            chain.append(chain[-1].derived_from)
        if chain[-1] is source:
            held.append((blk, chain[:-1]))
    if len(held) != 1:
        return None
    blk, rewrites = held[0]
    point = np.asarray(x[blk.slice], dtype=float)
    grad = _gradient_seen_by(blk.set, np.asarray(g[blk.slice], dtype=float))
    for s in rewrites:
        if hasattr(s, "gradient_in_image"):
            point, grad = s.image_of(point), s.gradient_in_image(grad)
    return point, grad


def write_psd_duals(compiled, x, lagrangian_gradient, row_multipliers):
    """``dual_value`` of ``E >> 0`` (CVXPY's PSD matrix Z) and of the ``trace(E) <= r`` that bounds it (mu).

    The compiler holds E in the PSD trace ball ``{E PSD, trace E <= r}``
    (:mod:`fwmodel.compiler.lowering`, item 4). At a solution, with G the
    block's gradient of the augmented Lagrangian seen in E (symmetrized: the
    iterates are), KKT says ``G = Z - mu I`` with Z PSD, ``<Z, E> = 0``,
    ``mu >= 0`` and ``mu (trace E - r) = 0``. So ``mu = -<G, E> / trace E``
    where the trace bound is active (0 where it is slack) and
    ``Z = G + mu I``, CVXPY's dual of ``E >> 0`` (its sign convention:
    ``L = f - <Z, E> + ...``). Z is as accurate as the solve: its smallest
    eigenvalue is about 0 (about -tol, not exactly >= 0), ``<Z, E>`` about 0.
    None where Z is not the ball's alone: E held in several blocks, or a
    trace bound that the compiler derived from the diagonal's bounds and
    that is active (those bounds share the multiplier); a ball from
    ``trace(E) == r`` gives Z with the row's and the ball's multipliers
    together (mu then takes either sign, as the equality's multiplier does).
    ``diag(X) == d`` (every diagonal entry fixed, MaxCut's SDP relaxation)
    closes the ball with radius ``sum(d)``: the rows' multipliers y enter G,
    so ``Z = G + mu I`` is CVXPY's and each row's ``dual_value`` is
    ``y_i + mu / a_i`` (a_i its coefficient of X_ii).
    """
    lowered = compiled.lowered
    trace_shares = []  # (ball, mu) of the active PSD trace balls whose radius is the diagonal's bounds' sum
    implied = any(getattr(blk.set, "implied_trace", False) or getattr(getattr(blk.set, "derived_from", None),
                                                                      "implied_trace", False)
                  for blk in compiled.blocks)
    if lowered is None or not (lowered.semidefinite or lowered.trace_bounds or implied
                               or getattr(lowered, "diagonal_duals", ())):
        return trace_shares
    g = lagrangian_gradient()
    by_ball = {}
    shared = getattr(lowered, "shared_duals", set())

    def multipliers(ball):
        """``(Z, mu)`` of the PSD trace ball ``ball`` (a TraceNormBall with psd=True), or None."""
        if id(ball) not in by_ball:
            by_ball[id(ball)] = None
            found = _held_by_one_block(compiled, ball, x, g)
            if found is not None:
                point, grad = found
                n = ball.shape[0]
                E, G = point.reshape(n, n), grad.reshape(n, n)
                G = 0.5 * (G + G.T)
                E = 0.5 * (E + E.T)
                radius, trace = float(ball.radius), float(np.trace(E))
                active = trace >= radius - 1e-6 * radius  # (relative: no floor of 1, which a radius of 1e-7 is under)
                if not active:
                    mu = 0.0
                elif trace > 0:
                    mu = -float(np.vdot(G, E)) / trace
                else:  # E = 0 (r = 0): the least mu that makes Z PSD
                    mu = max(0.0, -float(np.linalg.eigvalsh(G)[0]))
                Z = G + mu * np.eye(n)
                if id(ball) in shared:
                    # a box took the ball's implied bounds (diag(X) <= 0.3 next to X >> 0: the box's
                    # floor diag(X) >= 0 is the ball's): their multipliers are part of Z and mu
                    derived = _derived_box_sides(compiled, lowered, ball, x, g)
                    if derived is None:
                        return None
                    Z, mu = _with_implied_sides(Z, mu, n, *derived)
                by_ball[id(ball)] = (Z, mu)
                if active and getattr(ball, "implied_trace", False):
                    # its radius is the sum of the diagonal's bounds, so its trace row is the sum of their
                    # rows: mu is part of each diagonal bound's multiplier (write_inequality_duals adds it)
                    trace_shares.append((ball, mu))
        return by_ball[id(ball)]

    def psd_ball_of(expr):
        """The PSD trace ball built on ``expr`` (the matrix E of ``E >> 0``), when there is exactly one."""
        balls = []
        for blk in compiled.blocks:
            s = blk.set
            while s is not None:
                if isinstance(s, TraceNormBall) and s.psd and s.expr is expr:
                    balls.append(s)
                    break
                s = getattr(s, "derived_from", None)
        return balls[0] if len(balls) == 1 else None

    for q in lowered.semidefinite:
        q.dual_value = None
        ball = psd_ball_of(q.variable if q.on_the_variable() else q.expr)
        found = None if ball is None else multipliers(ball)
        if found is not None:
            q.dual_value = found[0]
    for constraint, ball in lowered.trace_bounds:
        constraint.dual_value = None
        found = multipliers(ball)
        if found is None:
            continue
        if isinstance(constraint, Equality):  # the row's multiplier and the ball's mu: CVXPY's nu of trace(E) == r
            rows = compiled.rows_of(compiled.equality_pieces.get(id(constraint)))
            if rows is not None and rows.stop - rows.start == 1:
                k = _trace_row_scale(constraint, ball, signed=True)
                constraint.dual_value = float(row_multipliers()[rows][0]) + found[1] / k
        else:
            constraint.dual_value = max(0.0, found[1]) / _trace_row_scale(constraint, ball)
    for blk in compiled.blocks:  # a PSD=True variable closed by its diagonal's bounds (no E >> 0 written)
        ball = blk.set
        while ball is not None and not getattr(ball, "implied_trace", False):
            ball = getattr(ball, "derived_from", None)
        if ball is not None:
            multipliers(ball)  # (records its share of the diagonal bounds' multipliers where it is active)
    for constraint, ball, a in getattr(lowered, "diagonal_duals", ()):  # diag(X) == d: the rows' y and mu
        constraint.dual_value = None
        found = multipliers(ball)
        rows = compiled.rows_of(compiled.equality_pieces.get(id(constraint)))
        if found is None or rows is None or rows.stop - rows.start != constraint.size:
            continue
        value = row_multipliers()[rows] + found[1] / a
        constraint.dual_value = value.reshape(constraint.shape) if constraint.shape else float(value[0])
    return trace_shares


def _with_implied_sides(Z, mu, n, positions, pull):
    """CVXPY's ``(Z, mu)`` of ``E >> 0``, ``trace(E) <= r`` where a box holds sides that the PSD trace ball
    implies (:meth:`TraceNormBall.coordinate_bounds`), from the ball's own ``(Z, mu)`` and the box's
    multipliers on those sides (``pull`` = above - below at the flat entries ``positions`` of E).

    The two blocks' stationarity conditions add up on the shared entries: ``grad f = Z - mu I - D``
    with D = sym(P), P the pulls placed at their entries, while CVXPY's (which has no such box sides)
    reads ``grad f = Z_c - mu_c I``. Each side is a consequence of E PSD and trace(E) <= r,
    ``<A, E> <= lambda_max(A) r`` for A = -e_i e_i' (E_ii >= 0, lambda_max 0), e_i e_i' (E_ii <= r,
    lambda_max 1) or -+sym(e_i e_j') (|E_ij| <= r / 2, lambda_max 1/2), and its multiplier a >= 0 splits
    as ``a A = a lambda_max(A) I - a (lambda_max(A) I - A)``: a PSD part of Z and a part of mu. So
    ``mu_c = mu + t`` and ``Z_c = Z - D + t I`` with t the sum of ``a lambda_max(A)``, and Z_c is PSD
    where Z is. Complementarity carries over: a side binds only where E touches it (E_ii = 0 makes
    row and column i of E zero; E_ii = r makes E = r e_i e_i', trace(E) = r).
    """
    P = np.zeros(n * n)
    np.add.at(P, np.asarray(positions, dtype=np.intp), np.asarray(pull, dtype=float))
    P = P.reshape(n, n)
    diagonal = np.diag(P).copy()
    off = P - np.diag(diagonal)
    # lambda_max(A) per side: 1 for the diagonal's caps (pull > 0 there), 0 for its floors, 1/2 off it
    t = float(np.maximum(diagonal, 0.0).sum() + 0.5 * np.abs(off).sum())
    return Z - 0.5 * (P + P.T) + t * np.eye(n), mu + t


def _trace_row_scale(constraint, ball, signed=False):
    """``k`` of a trace constraint that reads ``k * trace(E) + c`` (``<= 0`` or ``== 0``) in the units of the
    ball's E: its multiplier is ``mu / k`` (``fm.trace(Y) <= t``: k = 1; ``fm.trace(Y) >= -t`` for ``Y << 0``:
    E = -Y, k = 1). ``signed``: k with its sign (an equality's multiplier has one), else |k|."""
    offsets, off = {}, 0
    for v in constraint.expr.variables():
        offsets[v.id] = off
        off += v.size
    row = linearize(constraint.expr, offsets, off)[0].tocsr()
    image = linearize(ball.expr, offsets, off)[0].tocsc()
    j = int(row.indices[0])  # a diagonal entry of the variable: the row's and E's coefficients on it
    k = float(row[0, j]) / float(image[:, j].sum())
    return k if signed else abs(k)


def _boxed_l1_multipliers(boxed, x, g):
    """``(mu, above, below)``: multipliers of the L1 bound and of the upper and lower bounds at x.

    The KKT conditions of ``min f`` over ``||x||_1 <= r, lo <= x <= hi`` at
    x, with g the block gradient of the Lagrangian, are
    ``g + mu s + above - below = 0`` with ``s`` in the subdifferential of
    ``||x||_1`` (``sign(x_i)`` where ``x_i != 0``), ``mu, above, below >= 0``
    and each zero where its bound is slack. An entry strictly inside its
    bounds and off 0 pins ``mu = -g_i sign(x_i)``; one at its outer bound
    (``|x_i|`` cannot grow) gives ``mu <= -g_i sign(x_i)``, one at its inner
    bound or at 0 gives a lower bound on mu. ``mu`` is the mean of the
    pinned values, weighted by their distances to 0 and to the bounds (as
    the capped simplex's budget), kept in the interval the others allow, or
    that interval's middle (its lower end when unbounded above) where
    nothing pins it; 0 where the ball is slack. The bounds' multipliers
    follow from mu, entry by entry.
    """
    lo, hi = boxed.entry_bounds()
    r = float(boxed.radius)
    # a bound at least r away from 0 is implied by the ball (the cap r that closes x >= 0): its multiplier is 0
    lo, hi = np.where(lo <= -r + 1e-6 * r, -np.inf, lo), np.where(hi >= r - 1e-6 * r, np.inf, hi)
    # an entry this near a bound (or 0) is at it: the solve stops within its tolerances, not at rounding (a bound
    # 3e-8 away read as slack gave 0 for binding constraints; an entry read as at a bound while it is free gets
    # the multiplier of its gradient, about 0 at a solution). Relative to how far the entry can move (its box
    # within [-r, r], at most r), never an absolute size: a floor of 1 took every entry of a ball of radius 1e-7
    # for one at a bound, and the L1 multiplier from those entries' gradients was 4 times CVXPY's
    width = np.minimum(hi, r) - np.maximum(lo, -r)
    near = 1e-6 * np.minimum(width, r) + 1e-15 * r  # (and a few units of rounding at the ball's size)
    at_lo, at_hi, at_zero = x - lo <= near, hi - x <= near, np.abs(x) <= near
    sign = np.where(at_zero, 0.0, np.sign(x))
    outward = -g * sign  # -g_i sign(x_i): mu where |x_i| is free to move both ways
    free = ~(at_lo | at_hi | at_zero)
    # a free entry pins mu whether the ball is active or stopped just inside it (mu about 0 where it is slack);
    # without one, a ball clearly inside has mu = 0
    if not free.any() and np.abs(x).sum() < r - 1e-6 * r * max(1.0, np.sqrt(x.size)):
        mu = 0.0
    else:
        at_outer = ~at_zero & np.where(sign > 0, at_hi, at_lo) & ~(at_lo & at_hi)
        at_inner = ~at_zero & np.where(sign > 0, at_lo, at_hi) & ~(at_lo & at_hi)
        # at 0 the entry may move up (hi > 0) and down (lo < 0): mu >= -g_i, mu >= g_i respectively
        up, down = at_zero & (hi > near), at_zero & (lo < -near)
        floor = max(0.0, float(np.max(np.concatenate([outward[at_inner], -g[up], g[down]]), initial=0.0)))
        ceiling = float(np.min(outward[at_outer], initial=np.inf))
        weights = np.where(free, np.minimum(np.abs(x), np.minimum(x - lo, hi - x)), 0.0)
        if weights.sum() > 0:
            mu = float(np.dot(weights, outward) / weights.sum())
            if floor <= ceiling:
                mu = min(max(mu, floor), ceiling)
        else:
            mu = floor if not np.isfinite(ceiling) else 0.5 * (floor + max(ceiling, floor))
        mu = max(mu, 0.0)
    # g + mu s + above - below = 0, with s = sign(x) off 0 and any s in [-1, 1] at 0 (the smallest multiplier)
    pull = np.where(at_zero, np.sign(g) * np.maximum(np.abs(g) - mu, 0.0), g + mu * sign)
    above = np.where(at_hi, np.maximum(-pull, 0.0), 0.0)
    below = np.where(at_lo, np.maximum(pull, 0.0), 0.0)
    return mu, above, below


def _write_boxed_l1_duals(boxed, x, g, lowered):
    """``dual_value`` of the constraints merged into ``boxed``, from :func:`_boxed_l1_multipliers`.

    The L1 ball from ``norm1(x) <= r`` gets mu; a box from ``abs(x) <= c``
    the multiplier per entry (``above + below``, as CVXPY), from
    ``norm_inf(x) <= c`` their sum. Returns the entries' bound multipliers
    ``(above, below)``, which :func:`write_inequality_duals` hands to the
    bound rows (``x <= hi``, ``x >= lo``) that set the bounds.
    """
    mu, above, below = _boxed_l1_multipliers(boxed, x, g)
    from_norms = {id(s): ineq for ineq, s in getattr(lowered, "norm_sets", ())}  # the sets of norm(e) <= t
    ball_ineq, box_ineq = from_norms.get(id(boxed.ball)), from_norms.get(id(boxed.box))
    if ball_ineq is not None:
        ball_ineq.dual_value = mu * _factor_scale(ball_ineq)
    if box_ineq is not None:
        per_entry = (above + below) * _factor_scale(box_ineq)
        box_ineq.dual_value = (per_entry.reshape(tuple(boxed.shape)) if box_ineq.norm.kind == "abs"
                               else float(per_entry.sum()))  # norm_inf(x) <= c: one multiplier
    return above, below


def _factor_scale(ineq):
    """1, or for ``norm(p * e) <= t`` held as ``norm(e) <= t / |p|``, the number that turns that ball's
    multiplier into CVXPY's of the constraint as written (``ParameterFactor.dual_scale``: ``1 / |p|``)."""
    factor = getattr(ineq, "parameter_factor", None)
    return 1.0 if factor is None else factor.dual_scale()


def _simplex_budget(held, simplex, xb, gb, group):
    """The budget multiplier ``nu a`` of each group of a simplex block (``sum(x) == t`` or ``<= t``), from KKT.

    ``g + nu a 1 - below + above = 0`` (``below``, ``above >= 0``, zero
    unless the entry is at its floor, its cap): an entry strictly between
    them pins ``nu a = -g_i``, so ``nu a`` is the mean of ``-g`` over those
    entries, weighted by ``x`` (by the distance to the nearest bound in a
    capped simplex), kept in the interval the entries at a bound allow; where
    every entry is at a bound, that interval's middle (or its finite end).
    For ``sum(x) <= t`` the multiplier is ``>= 0``, and 0 where the sum is
    below t. Returns ``(nu_a, lo, hi, at_floor, at_cap)``.
    """
    n_groups = int(group.max()) + 1
    if held is simplex:
        lo, hi = np.zeros(xb.size), np.full(xb.size, np.inf)
        weights = xb
        floor_side = np.full(n_groups, -np.inf)
        np.maximum.at(floor_side, group, -gb)
        cap_side = np.full(n_groups, np.inf)
        # at its floor 0 within rounding of its group's largest entry (relative: a floor of 1 took every entry of
        # a simplex of total 1e-10 for one at 0)
        peak = np.zeros(n_groups)
        np.maximum.at(peak, group, np.abs(xb))
        at_floor = xb <= 1e-9 * peak[group]
        at_cap = np.zeros(xb.size, dtype=bool)
    else:  # a capped simplex: the floors and caps of its entries
        lo, hi = held.entry_bounds()
        # an entry within rounding of a bound is at it (a projection or a vertex lands there up to
        # the last bits), so that it neither weighs in the mean nor escapes the interval below. Rounding
        # relative to how far the entry can move (its cap, its floor plus the budget) and to the entries' own
        # size (bounds 1e8 + [0, 1]: their last bits), never to an absolute 1 or to the bounds' offset: either
        # exceeded a box of width 1e-9 (or 1 at offset 1e8), every entry was taken for one at a bound and the
        # budget's multiplier came out with the wrong sign
        low, up = held.coordinate_bounds()
        near = 1e-9 * (up - low) + 1e-15 * np.maximum(np.abs(lo), np.abs(xb))
        at_floor, at_cap = xb - lo <= near, hi - xb <= near
        weights = np.where(at_floor | at_cap, 0.0, np.minimum(xb - lo, hi - xb))
        floor_side = np.full(n_groups, -np.inf)
        np.maximum.at(floor_side, group[at_floor], -gb[at_floor])
        cap_side = np.full(n_groups, np.inf)
        np.minimum.at(cap_side, group[at_cap], -gb[at_cap])
    if not simplex.equality:  # nu a >= 0
        floor_side = np.maximum(floor_side, 0.0)
    mass = np.bincount(group, weights=weights, minlength=n_groups)
    weighted = np.bincount(group, weights=weights * gb, minlength=n_groups)
    # no weight (every entry at a bound): the middle of [floor_side, cap_side], or its finite end
    both = np.isfinite(floor_side) & np.isfinite(cap_side)
    middle = np.where(both, 0.5 * (np.where(both, floor_side, 0.0) + np.where(both, cap_side, 0.0)),
                      np.where(np.isfinite(floor_side), floor_side, cap_side))  # (no -inf + inf formed)
    nu_a = np.where(mass > 0, -weighted / np.where(mass > 0, mass, 1.0), middle)
    if held is not simplex or not simplex.equality:  # the KKT signs bound nu a to [floor_side, cap_side]
        agree = floor_side <= cap_side
        nu_a = np.where(agree, np.clip(nu_a, floor_side, cap_side), nu_a)
    if not simplex.equality:  # complementary slackness: 0 where the sum is below the total
        # An iterate within the solve's tolerance may sit a little inside a binding total: a group with an
        # entry strictly inside its bounds counts as binding within 1e-3 of its total (its multiplier then
        # from that entry's gradient, by stationarity), and a group further inside gets 0 (the gradient's
        # residue there is the solve's noise, not a multiplier). A group with every entry at a bound (the
        # origin, say) is binding only at its total.
        if np.ndim(simplex.total) == 0:
            total = float(simplex.total)
        else:  # a total per group (fm.sum(X, axis=1) <= t, t a vector), read per entry in the labels of ``group``
            total = np.zeros(n_groups)
            total[group] = simplex._entry_totals()
        # (relative to the room the floors leave, total - sum(lo): the total itself counts their offset, and a
        # floor of 1 took the origin for binding at a total of 1e-9)
        room = np.abs(total - np.bincount(group, weights=lo, minlength=n_groups))
        binding = np.where(mass > 0, 1e-3 * room, 1e-6 * room) + 1e-12 * np.abs(total)
        sums = np.bincount(group, weights=xb, minlength=n_groups)
        nu_a = np.where(sums >= total - binding, np.maximum(nu_a, 0.0), 0.0)
    return nu_a, lo, hi, at_floor, at_cap


def _bounds_box(held):
    """The compiler's box of entry bounds that a block holds (itself or as its symmetric part), else None."""
    inner = held.inner if isinstance(held, SymmetricPart) else held
    return inner if type(inner) is Box and inner.__dict__.get("_bounds_origin") is not None else None


def _gradient_seen_by(held, g):
    """The block gradient ``g`` of L as the block's set sees it: ``sym(G)`` for a set that keeps its matrix
    symmetric (a symmetric variant, ``fm.Variable(..., symmetric=True)``), else ``g`` itself.

    Such a block moves ``X[i, j]`` and ``X[j, i]`` together (its LMO reads ``sym(D)``, Section 2's linear
    subproblem over the symmetric matrices), and nothing fixes the antisymmetric part of its gradient (no
    symmetry rows: an objective ``<T, X>`` with T not symmetric, the consistency rows' multipliers between two
    symmetric copies). Its KKT conditions hold per pair: for a bound held on both entries,
    ``G_ij + G_ji + d_ij + d_ji = 0`` (``d`` the bound's signed multiplier), so only ``d_ij + d_ji`` is
    determined, and ``sym(G)`` gives the symmetric split ``d_ij = d_ji = -sym(G)_ij`` (per entry: the set is
    transpose-invariant). A set without this (held with symmetry rows ``X[i, j] == X[j, i]``) satisfies the
    per-entry conditions with the rows' multipliers in g: :func:`_split_pairs` then makes the split symmetric.
    """
    if not getattr(held, "keeps_symmetric", False):
        return g
    shape = tuple(held.shape)
    if len(shape) != 2 or shape[0] != shape[1] or g.size != shape[0] * shape[1]:
        return g
    G = g.reshape(shape)
    return (0.5 * (G + G.T)).ravel()


def _split_pairs(multipliers, bounds, n):
    """Entry multipliers of one bound side on an n x n symmetric variable, each pair's sum split equally.

    On a symmetric variable only ``d_ij + d_ji`` of an entrywise bound's multipliers is determined (the
    stationarity condition reads the pair's sum); where the pair has the same bound (``bounds``, NaN where
    no block holds it), the two entries are at it together, so the equal split ``(d_ij + d_ji) / 2`` is a
    multiplier too: CVXPY's when its solver's answer is symmetric (an interior point method's is, for a
    constraint repeated on X[i, j] and X[j, i]). Where the bounds differ only the tighter one can bind, and
    it keeps the pair's multiplier. ``multipliers`` and ``bounds`` are flat in C order; a new array.
    """
    D, B = np.asarray(multipliers, dtype=float).reshape(n, n), np.asarray(bounds, dtype=float).reshape(n, n)
    with np.errstate(invalid="ignore"):  # (inf - inf: a side no block bounds; NaN: no block holds the entry)
        same = (B == B.T) | (np.abs(B - B.T) <= 1e-12 * np.abs(B))  # (relative: tiny bounds that differ do)
    return np.where(same, 0.5 * (D + D.T), D).ravel()


def _transpose_pairs(expr, cache=None):
    """n when the n x n expression ``e`` has ``e(X^T) = e(X)^T`` at every symmetric variable X transposed (the
    others unchanged: ``X - C`` with C symmetric, ``X + Y``, ``X - t`` for a scalar t), else None.

    Such an ``e`` is symmetric on the feasible points, so in its constraint's term ``<D, e(x)>`` of L only
    the pairs' sums ``D_ij + D_ji`` act (the stationarity on the symmetric variables reads ``A' D`` on the
    symmetric subspace, which by ``A[rows^T] = A[:, cols^T]`` is ``A' sym(D)``), and the entries of a pair are
    equal (at their bound together): the equal split of a pair's multiplier is one too. ``cache``: a dict
    keeping the answer for an expression without Parameters (its coefficients then never change).
    """
    shape = tuple(expr.shape)
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        return None
    key = id(expr)
    if cache is not None and key in cache:
        return cache[key]
    variables = expr.variables()
    answer = None
    if any(v.symmetric for v in variables):
        offsets, cols, off = {}, [], 0
        for v in variables:
            offsets[v.id] = off
            idx = np.arange(v.size)
            if v.symmetric and len(v.shape) == 2 and v.shape[0] == v.shape[1]:
                idx = idx.reshape(v.shape).T.ravel()
            cols.append(off + idx)
            off += v.size
        A, c = linearize(expr, offsets, off)
        A, n = A.tocsr(), shape[0]
        rows = np.arange(n * n).reshape(n, n).T.ravel()
        c = np.broadcast_to(np.asarray(c, dtype=float).ravel(), (n * n,))
        # (the data's own size, no floor of 1: coefficients of 1e-13 that differ are not equal)
        scale = max(float(abs(A).max()) if A.nnz else 0.0, float(np.max(np.abs(c), initial=0.0)))
        gap = abs(A[rows] - A[:, np.concatenate(cols)])
        if (float(gap.max()) if gap.nnz else 0.0) <= 1e-12 * scale and np.all(np.abs(c[rows] - c) <= 1e-12 * scale):
            answer = n
    if cache is not None and not expr.parameters():
        cache[key] = answer
    return answer


def _split_transposed(values, expr, cache=None, bounds=None):
    """``values`` (per entry of the n x n expression ``expr``, flat) with each pair's sum split equally, where
    ``expr`` is transpose-equivariant on its symmetric variables (:func:`_transpose_pairs`) and the pair has
    the same bound (``bounds``, flat, where given); else ``values`` as they are. On a symmetric variable only
    the pairs' sums are determined: the equal split is CVXPY's when its solver's answer is symmetric."""
    values = np.asarray(values, dtype=float)
    shape = tuple(expr.shape)
    if len(shape) != 2 or shape[0] != shape[1] or values.size != shape[0] * shape[1]:
        return values
    n = shape[0]
    V = values.reshape(n, n)
    if np.array_equal(V, V.T) or _transpose_pairs(expr, cache) is None:  # (symmetric already: nothing to split)
        return values
    if bounds is None:
        return (0.5 * (V + V.T)).reshape(values.shape)
    return _split_pairs(values.ravel(), bounds, n).reshape(values.shape)


def _box_multipliers(box, x, g):
    """``(above, below)``: the multipliers of a box's upper and lower bounds at x (g: its gradient of L).

    KKT of ``min`` over ``lo <= x <= hi``: ``g + above - below = 0`` with
    ``above >= 0`` zero unless ``x_i`` is at ``hi_i``, ``below`` likewise at
    ``lo_i``. An entry within the solve's tolerance of a bound is at it (an
    entry just inside a binding bound has g about 0 anyway).
    """
    lo, hi = box.coordinate_bounds()
    # relative to the box's width per entry (and a few units of rounding at the bounds' size), not to the
    # bounds' magnitude with a floor of 1: bounds 1e5 + [0, 0.05] read every entry within 0.1 of a bound as at
    # it, and a box of width 1e-9 every entry
    near = 1e-6 * (hi - lo) + 1e-15 * np.maximum(np.abs(lo), np.abs(hi))
    above = np.where(hi - x <= near, np.maximum(-g, 0.0), 0.0)
    below = np.where(x - lo <= near, np.maximum(g, 0.0), 0.0)
    return above, below


#: an inequality row whose slack, as a distance to its hyperplane, exceeds this many times the solve's
#: feasibility tolerance (``feas_tol * feasibility_scale``) is inactive: its multiplier is reported as 0
INTERIOR_SLACK = 100.0


def _interior_slacks(compiled, eq_id, x, tolerance):
    """Which rows of the slack equality ``eq_id`` have their slack clearly inside its box (None: not known).

    The slack of ``a_i' v + c_i <= 0`` is held in the variables' units (``lowering._slack_units``): its
    value is the distance from v to the row's hyperplane, the measure of the solve's feasibility tolerance
    (its rows are equilibrated to unit norm). A row farther than ``INTERIOR_SLACK`` times that tolerance
    is inactive, and complementary slackness (``lambda_i s_i = 0``) gives it multiplier 0: the row's
    ``y + lam (M x - b)`` is then tolerance-level noise, which the inequality's own units multiply (a
    row written times 1e-6 showed a multiplier of 1e2 where CVXPY + Clarabel give 3e-4).
    """
    slacks = compiled.__dict__.setdefault("_slack_slices", {})
    if eq_id not in slacks:
        eq = next((q for q in compiled.equalities if id(q) == eq_id), None)
        slack = getattr(eq, "slack_variable", None)
        found = [blk for blk in compiled.blocks if blk.kind == "copy" and blk.variable is slack]
        slacks[eq_id] = None
        if len(found) == 1 and found[0].entries is None:
            # the equality's entries of its slack variable (a slack shared by several inequalities, see
            # lowering.lower_constraints step 5)
            lo, hi = getattr(eq, "slack_entries", (0, slack.size))
            slacks[eq_id] = slice(found[0].slice.start + lo, found[0].slice.start + hi)
    at = slacks[eq_id]
    if at is None:
        return None
    return np.asarray(x[at], dtype=float) > INTERIOR_SLACK * tolerance


def write_inequality_duals(compiled, x, lagrangian_gradient, row_multipliers, entry_multipliers, budget_duals=None,
                           trace_shares=(), slack_tolerance=None):
    """``dual_value`` of each affine inequality ``lhs <= rhs`` (CVXPY's multiplier, >= 0, per entry).

    The compiler splits an inequality's entries (:mod:`fwmodel.compiler.lowering`):
    a general row gets a slack (``lhs - rhs + s = 0``, ``s >= 0``), whose row
    multiplier ``y + lam (M x - b)`` is the entry's; a single-entry row is a
    bound of its variable's entry, held by a box (a boxed L1 ball, a simplex
    or capped simplex whose budget was an equality), whose multiplier comes from that
    block's KKT conditions (:func:`_box_multipliers`,
    :func:`_boxed_l1_multipliers`, :meth:`CompiledProblem.write_duals`) and goes to the row that sets the bound
    (the first of equal ones; divided by the row's coefficient), 0 to the
    others. A row ``a * sum(x) <= t`` that became a simplex's budget gets
    the budget's multiplier (``budget_duals``, from :func:`_simplex_budget`).
    The entries are assembled in the inequality's shape; a row that became
    part of another set (a trace ball among other rows), or a binding bound
    that a set's own bound made redundant (no box holds it), has no
    multiplier of its own: the dual_value is then None, not a partial array.
    ``max(e) <= t`` and ``min(e) >= t`` get CVXPY's multiplier of the
    constraint as written (:meth:`~fwmodel.expressions.constraints.Inequality.dual_from_entries`).
    ``trace_shares``: ``(ball, mu)`` of active PSD trace balls that close ``X >> 0`` with the sum of the
    diagonal's bounds as radius (``diag(X) <= 1``): their trace row is the sum of those bounds' rows, so
    ``mu`` adds to each diagonal entry's upper multiplier (unknown, hence None, where the radius is not the
    sum of the bounds the blocks hold: some came from another set).
    ``slack_tolerance`` (the solve's feasibility tolerance as a distance): a general row whose slack is
    clearly interior gets 0 (:func:`_interior_slacks`), not its row's tolerance-level multiplier.
    """
    lowered = compiled.lowered
    if lowered is None:
        return
    bounds = lowered.entry_bounds
    slack_of = lowered.slack_of
    entries = {}  # id(ineq) -> (ineq, per-entry multipliers, which are known)

    def entry(ineq):
        if id(ineq) not in entries:
            entries[id(ineq)] = (ineq, np.zeros(ineq.expr.size), np.zeros(ineq.expr.size, dtype=bool))
        return entries[id(ineq)]

    for ineq, rows in lowered.constant_rows:  # entries without variables that hold: never binding
        _, values, known = entry(ineq)
        known[rows] = True
    for rows_of_ineq in (budget_duals or {}).values():  # rows sum(x) <= t that became a simplex's budget
        for ineq, row, value in rows_of_ineq:
            _, values, known = entry(ineq)
            values[row], known[row] = max(value, 0.0), True
    for eq_id, (ineq, rows) in slack_of.items():
        piece = compiled.equality_pieces.get(eq_id)
        span = compiled.rows_of(piece)
        _, values, known = entry(ineq)
        if span is not None and span.stop - span.start == rows.size:
            found = row_multipliers()[span]
            interior = None if slack_tolerance is None else _interior_slacks(compiled, eq_id, x, slack_tolerance)
            values[rows] = found if interior is None else np.where(interior, 0.0, found)
            known[rows] = True
    if bounds is not None and (bounds.rows or bounds.equality_rows):
        n_v = bounds.n_v
        above, below = np.full(n_v, np.nan), np.full(n_v, np.nan)  # NaN: no block holds the entry's bound
        lo_held, hi_held = np.full(n_v, np.nan), np.full(n_v, np.nan)
        # layouts that no Parameter changes, formed at the first solve: which entries a block holds, and
        # each bound row's entry and coefficient (its bound too, where it has no Parameter)
        layouts = bounds.__dict__.setdefault("_dual_layouts", {})
        per_entry = False  # a block whose set does not keep its matrix symmetric gave multipliers
        for blk in compiled.blocks:
            held = blk.set
            if id(blk) in entry_multipliers:  # a boxed L1 ball, a simplex (from their KKT conditions)
                up, down, lo, hi = entry_multipliers[id(blk)]
            elif _bounds_box(held) is not None:
                # (a symmetric box: the steps move X[i, j] and X[j, i] together, so the two bounds share the
                # symmetric part of the gradient equally)
                grad = _gradient_seen_by(held, np.asarray(lagrangian_gradient()[blk.slice], dtype=float))
                up, down = _box_multipliers(_bounds_box(held), np.asarray(x[blk.slice], dtype=float), grad)
                lo, hi = _bounds_box(held).coordinate_bounds()
            else:
                continue
            if id(held) not in layouts:
                A = linearize(held.expr, bounds.offsets, n_v)[0].tocsr()  # the variable entries the block holds
                plain = A.nnz == held.size and np.all(np.diff(A.indptr) == 1) and np.all(A.data == 1.0)
                layouts[id(held)] = A.indices if plain else None
            cols = layouts[id(held)]
            per_entry |= not getattr(held, "keeps_symmetric", False)  # (its multipliers: a split of the solve's)
            if cols is not None:
                # an entry held by several blocks (two simplices on X: rows and columns; a simplex and a box
                # under rows): the tightest bound is the entry's, and the blocks that hold that same bound
                # share its multiplier (their KKT conditions add up on the copies), so theirs add up
                _merge_side(below, lo_held, cols, np.broadcast_to(down, cols.shape), np.broadcast_to(lo, cols.shape),
                            tighter=np.greater)
                _merge_side(above, hi_held, cols, np.broadcast_to(up, cols.shape), np.broadcast_to(hi, cols.shape),
                            tighter=np.less)
        for ball, mu in trace_shares:
            var = ball.expr
            if getattr(var, "id", None) not in bounds.offsets:
                continue
            n = var.shape[0]
            diagonal = bounds.offsets[var.id] + np.arange(n) * (n + 1)
            radius = float(ball.radius)
            if abs(float(np.sum(hi_held[diagonal])) - radius) <= 1e-9 * abs(radius):  # (relative, no floor of 1)
                above[diagonal] += mu
            else:
                above[diagonal] = np.nan
        for var in bounds.variables if per_entry else ():  # a symmetric variable: each pair's sum split equally
            if var.symmetric and len(var.shape) == 2 and var.shape[0] == var.shape[1]:
                at = slice(bounds.offsets[var.id], bounds.offsets[var.id] + var.size)
                above[at] = _split_pairs(above[at], hi_held[at], var.shape[0])
                below[at] = _split_pairs(below[at], lo_held[at], var.shape[0])
        point = []  # the variables' values in the bounds' layout, formed only if a bound no block holds binds

        def variable_point():
            if not point:
                values_of = compiled.variable_values(x)
                v = np.zeros(n_v)
                for var in bounds.variables:
                    if var in values_of:
                        off = bounds.offsets[var.id]
                        v[off:off + var.size] = np.asarray(values_of[var], dtype=float).ravel()
                point.append(v)
            return point[0]

        taken_lo, taken_hi = np.zeros(n_v, dtype=bool), np.zeros(n_v, dtype=bool)
        for ineq, rows in bounds.rows:
            _, values, known = entry(ineq)
            key = ("rows", id(ineq))
            layout = layouts.get(key)
            if ineq.parameters() and id(ineq) in bounds.current:
                # each row's entry, coefficient and bound at this solve (a Parameter may have made a coefficient
                # 0: that row is 0 <= h, never binding; its bound reads +-inf, its scale 1)
                cols, coef, bound = bounds.current[id(ineq)]
                layout = dict(_bound_rows_layout(cols, np.where(coef == 0.0, 1.0, coef)), bound=bound)
                zero = coef == 0.0
                if zero.any():
                    layout["upper"] = np.where(zero, bound > 0, layout["upper"])
                    layout["side"] = 0
            elif layout is None or layout["bound"] is None:
                A, c = linearize(ineq.expr, bounds.offsets, n_v)
                if rows.size != A.shape[0]:
                    A, c = A[rows], c[rows]
                A = A.tocsr()
                bound = -c / A.data
                if layout is None:
                    layout = _bound_rows_layout(A.indices, A.data)
                    layouts[key] = layout
                layout = dict(layout, bound=bound)
                if not ineq.parameters():
                    layouts[key] = layout
            _write_bound_rows(layout, rows, values, known, (lo_held, hi_held), (below, above),
                              (taken_lo, taken_hi), variable_point)
        for eq, rows in bounds.equality_rows:
            # a x_j + c == 0 held as the bounds a x_j + c <= 0 and -(a x_j + c) <= 0: CVXPY's nu is the first's
            # multiplier less the second's
            cols, coef, bound = bounds.current_equalities[id(eq)]
            sides = []
            for signed in (coef, -coef):
                values, known = np.zeros(rows.size), np.zeros(rows.size, dtype=bool)
                _write_bound_rows(dict(_bound_rows_layout(cols, signed), bound=bound), rows, values, known,
                                  (lo_held, hi_held), (below, above), (taken_lo, taken_hi), variable_point)
                sides.append((values, known))
            (up, known_up), (down, known_down) = sides
            if known_up.all() and known_down.all():
                nu = up - down
                eq.dual_value = nu.reshape(eq.shape) if eq.shape else float(nu[0])
            else:
                eq.dual_value = None
    cache = compiled.__dict__.setdefault("_transpose_pairs", {})
    with_slack = {id(ineq) for ineq, _ in slack_of.values()}
    for ineq, values, known in entries.values():
        if known.all() and id(ineq) in with_slack:
            # rows with a slack on symmetric variables (X + Y <= 1): their multipliers' split of a pair is
            # the solve's; each pair's sum split equally where the constraint is symmetric (the bound rows'
            # are, from the blocks' entry multipliers above)
            values = _split_transposed(values, ineq.expr, cache)
        ineq.dual_value = ineq.dual_from_entries(values.reshape(ineq.expr.shape)) if known.all() else None


def _merge_side(mult, held, cols, new_mult, new_bound, tighter):
    """One side of a block's bound multipliers into the entries' (``mult``, ``held`` over all entries, NaN where
    no block was seen yet): a tighter bound replaces, an equal one adds its multiplier, a looser one is kept out."""
    old_bound = held[cols]
    first = np.isnan(old_bound)
    if first.all():  # (the common case: one block per entry) plain writes
        mult[cols], held[cols] = new_mult, new_bound
        return
    replace = first | tighter(new_bound, old_bound)
    same = ~first & (new_bound == old_bound)
    mult[cols] = np.where(replace, new_mult, np.where(same, mult[cols] + new_mult, mult[cols]))
    held[cols] = np.where(replace, new_bound, old_bound)


def _bound_rows_layout(cols, coef):
    """What :func:`_write_bound_rows` reads of bound rows (entry ``cols[i]``, coefficient ``coef[i]``), once:
    the entries as a slice where they are consecutive, the rows' sides, whether an entry repeats."""
    upper = coef > 0
    side = 1 if upper.all() else (-1 if not upper.any() else 0)
    consecutive = cols.size > 0 and int(cols[-1]) - int(cols[0]) == cols.size - 1 and bool(np.all(np.diff(cols) == 1))
    ordered = np.sort(cols)  # (not np.unique: its hashing costs seconds for millions of entries)
    return {"cols": cols, "at": slice(int(cols[0]), int(cols[-1]) + 1) if consecutive else cols,
            "scale": np.abs(coef), "upper": upper, "side": side,
            "repeats": not consecutive and bool(np.any(ordered[1:] == ordered[:-1])), "bound": None}


def _write_bound_rows(layout, rows, values, known, held_bounds, multipliers, taken_sides, variable_point):
    """The multipliers of one inequality's bound rows: each entry's held bound multiplier, on the row that sets it.

    ``held_bounds``, ``multipliers`` and ``taken_sides`` are (lower side, upper side) arrays over the
    variables' entries (NaN where no block holds the entry's bounds); a row sets its entry's bound when
    it equals the held one (the first such row takes the multiplier, divided by its coefficient); a
    held bound that the row does not set is tighter, so the row is slack (0). A row whose entry no
    block holds is 0 where slack at the point and unknown (``known`` False) where it binds.
    """
    at, bound, side = layout["at"], layout["bound"], layout["side"]
    if "rows_at" not in layout:  # the rows as a slice where they are consecutive (a whole inequality's)
        consecutive = rows.size > 0 and int(rows[-1]) - int(rows[0]) == rows.size - 1
        layout["rows_at"] = slice(int(rows[0]), int(rows[-1]) + 1) if consecutive else rows
    rows_at = layout["rows_at"]
    unit = layout.get("unit")
    if unit is None:
        unit = layout["unit"] = bool(np.all(layout["scale"] == 1.0))
    if side:  # all the rows on one side: no selection per row (the large bounds X <= hi are written so)
        k = 1 if side > 0 else 0
        held, mult, taken_all = held_bounds[k][at], multipliers[k][at], [taken_sides[k]]
    else:
        upper = layout["upper"]
        held = np.where(upper, held_bounds[1][at], held_bounds[0][at])
        mult = np.where(upper, multipliers[1][at], multipliers[0][at])
        taken_all = None
    unheld = np.isnan(held)
    # a row sets the held bound when the two agree to rounding at the rows' own size (no floor of 1: rows
    # x <= 1e-13 and x <= 2e-13 are different bounds, and the looser one must not take the multiplier)
    if bound.size and bound[0] == bound[-1] and np.all(bound == bound[0]):  # one bound for all (X <= 1): 2 passes
        sets_it = np.abs(held - bound[0]) <= 1e-12 * abs(float(bound[0]))  # False where held is NaN
    else:
        finite = np.abs(bound[np.isfinite(bound)])
        sets_it = np.abs(bound - held) <= 1e-12 * np.maximum(np.abs(bound), float(np.max(finite, initial=0.0)))
    sides = [(sets_it, taken_all[0])] if side else [(sets_it & layout["upper"], taken_sides[1]),
                                                     (sets_it & ~layout["upper"], taken_sides[0])]
    for picked, taken in sides:
        free = ~taken[at]
        if layout["repeats"]:  # the first row that sets an entry's bound takes it
            k = np.flatnonzero(picked & free)
            k = k[np.unique(layout["cols"][k], return_index=True)[1]]
            taken[layout["cols"][k]] = True
            values[rows[k]] = mult[k] / layout["scale"][k]
        else:
            picked &= free
            taken[at] |= picked
            share = mult if unit else mult / layout["scale"]
            values[rows_at] = np.where(picked, share, 0.0 if side else values[rows_at])
    known[rows_at] = True
    if unheld.any():
        j = np.flatnonzero(unheld)
        v = variable_point()[layout["cols"][j]]
        gap = np.where(layout["upper"][j], bound[j] - v, v - bound[j])
        known[rows[j]] = gap > 1e-6 * np.maximum(1.0, np.abs(bound[j]))
