"""Minimize, Maximize and Problem: the user-facing model and its solve.

``Problem.solve`` compiles the model once (problem OPT2 of the paper: blocks,
copies, M and b), runs the FW-AL engine and writes the answer back:
``var.value`` (the average of the variable's copies), ``prob.value``,
``prob.status``, ``prob.stats`` and ``prob.history``. Changing a Parameter's
value and solving again reuses the compiled problem.

Constraints on data alone (a set or an equality on an expression without
variables) are evaluated at every solve with the current Parameter values:
a true one is dropped, a false one ends the solve with status "infeasible"
before any iteration, ``prob.value`` = +inf (-inf for Maximize), the
variables' values None, and ``prob.stats.message`` naming the constraint.
A status rather than an error, because with Parameters the same problem
may be feasible at one solve and infeasible at the next.
"""
from __future__ import annotations

import functools
import threading
import time

import numpy as np

from .compiler import compile_problem
from .compiler.compile import flatten_constraints
from .engine import minimize_fwal
from .engine.pages import with_plain_pages
from .engine.result import History
from .engine.threads import DEFAULT_THREADS
from ._shared_setting import in_own_context
from .errors import ModelError
from .expressions import Expression, as_expression
from .expressions.domains import check_parameter_domains
from .expressions.core import short_repr
from .expressions.nonsmooth import refuse_in_objective
from .expressions.sympy_atom import implied_domain_constraints
from .sets.base import distinct_parameters

#: The options of Problem.solve and their defaults.
SOLVE_DEFAULTS = dict(
    max_iter=10000,
    tol=1e-4,
    feas_tol=1e-4,
    time_limit=None,
    lam=None,
    eta=None,
    step="auto",
    line_search="auto",
    verbose=False,
    print_every=None,
    callback=None,
    warm_start=False,
    seed=None,
    inface="auto",
    projection="auto",
    sweep="gauss-seidel",
    rank_k="auto",
    face_step="auto",
    threads=DEFAULT_THREADS,
)

#: CVXPY's solve options that have no place here, with what to write instead
#: (a model moved from CVXPY keeps its solve call; the error says what to change)
CVXPY_SOLVE_OPTIONS = {
    "solver": "fwmodel has one method, FW-AL (drop solver=)",
    "max_iters": "the iteration limit is max_iter",
    "eps": "the accuracy is tol (FW gap) and feas_tol (infeasibility), both relative to the problem's scale",
    "eps_abs": "the accuracy is tol and feas_tol, relative to the problem's scale (no absolute tolerance)",
    "eps_rel": "the accuracy is tol and feas_tol, relative to the problem's scale",
    "abstol": "the accuracy is tol and feas_tol, relative to the problem's scale (no absolute tolerance)",
    "reltol": "the accuracy is tol and feas_tol, relative to the problem's scale",
    "feastol": "the infeasibility tolerance is feas_tol",
    "time_limit_sec": "the time limit is time_limit (seconds)",
    "gp": "geometric programs are not supported (the objective must be smooth and convex)",
    "qcp": "quasiconvex programs are not supported (the objective must be smooth and convex)",
}


class SizeMetrics:
    """CVXPY's ``SizeMetrics`` of a Problem, from the model as written (nothing is compiled).

    ``num_scalar_variables``: the entries of the model's variables. ``num_scalar_eq_constr``: the entries of its
    ``==`` constraints; ``num_scalar_leq_constr``: of its ``<=`` / ``>=`` constraints (``fm.norm1(x) <= t``
    counts 1; ``>>`` and sets given as constraints count in neither, as in CVXPY). ``num_scalar_data``,
    ``max_data_dimension``, ``max_big_small_squared``: over the Constants and Parameters of the expressions
    (CVXPY's count also has the constants of its atoms' canonical forms, such as the 1 inside
    ``sum_squares``, so these may differ from CVXPY's on the same model).
    """

    def __init__(self, problem):
        from .expressions.core import Constant, Parameter, Variable
        holders = [problem.objective.expr]
        eq = leq = 0
        for c in problem._flat_constraints:
            sides = [side for side in (getattr(c, "lhs", None), getattr(c, "rhs", None)) if isinstance(side, Expression)]
            expr = getattr(c, "expr", None)
            holders += sides or ([expr] if isinstance(expr, Expression) else [])
            kind = type(c).__name__
            if kind == "Equality":
                eq += int(c.size)
            elif kind == "Inequality":
                leq += int(c.size)
        seen, variables, data = set(), [], []
        for holder in holders:
            for node in holder._postorder():
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if isinstance(node, Variable):
                    variables.append(node)
                elif isinstance(node, (Constant, Parameter)):
                    data.append(node)
        self.num_scalar_variables = int(sum(v.size for v in variables))
        self.num_scalar_eq_constr = eq
        self.num_scalar_leq_constr = leq
        self.num_scalar_data = int(sum(d.size for d in data))
        self.max_data_dimension = 0
        self.max_big_small_squared = 0
        for d in data:
            big = 1 if len(d.shape) == 0 else max(d.shape)
            small = 1 if len(d.shape) == 0 else min(d.shape)
            self.max_data_dimension = max(self.max_data_dimension, big)
            self.max_big_small_squared = max(self.max_big_small_squared, float(big) * float(small) ** 2)

    def __repr__(self):
        return (f"SizeMetrics(num_scalar_variables={self.num_scalar_variables}, "
                f"num_scalar_eq_constr={self.num_scalar_eq_constr}, num_scalar_leq_constr={self.num_scalar_leq_constr}, "
                f"num_scalar_data={self.num_scalar_data}, max_data_dimension={self.max_data_dimension})")


class _Objective:
    """Minimize or Maximize: a scalar expression and a sense, fixed once built."""

    sense = None
    required = ()

    def __init__(self, expr):
        self._expr = as_expression(expr)
        if self.expr.size != 1:
            raise ModelError(f"{type(self).__name__}: the objective must be a scalar, but "
                             f"{short_repr(self.expr)} has shape {self.expr.shape} (use fm.sum or fm.sum_squares)")
        refuse_in_objective(self.expr)  # norms and abs are constraints, with the set named
        curvature = self.expr.curvature
        if curvature not in self.required:
            hint = ""
            undeclared = self.expr.undeclared_parameters()
            if undeclared:
                # as in CVXPY, a Parameter's sign is only what it declares: its
                # value may change between solves, and the verdict must hold for all
                hint = "".join(
                    f"; it depends on the {prop} of parameter {p.name}, which is not declared: declare it, "
                    f"fm.Parameter(..., {decl}), so that the curvature holds for every value"
                    for p, prop, decl in undeclared)
            raise ModelError(
                f"{type(self).__name__}({short_repr(self.expr)}): the objective is {curvature}, but "
                f"{type(self).__name__} needs an {' or '.join(self.required[1:])} expression "
                "(by the composition rules: convex atoms of affine arguments, nonnegative sums)" + hint
            )

    @property
    def expr(self):
        """The objective expression (read-only: build a new objective to change it)."""
        return self._expr

    @property
    def value(self):
        """The objective expression's value at the variables' current values (None while one is missing), as
        CVXPY's ``objective.value``: after a solve, ``prob.value`` (for Maximize too: the expression, not its
        negative)."""
        value = self._expr.value
        return None if value is None else float(np.asarray(value, dtype=float).reshape(()))

    def __repr__(self):
        return f"{type(self).__name__}({short_repr(self.expr)})"


class Minimize(_Objective):
    """Minimize a convex, smooth scalar expression."""

    sign = 1.0
    required = ("constant", "affine", "convex")


class Maximize(_Objective):
    """Maximize a concave, smooth scalar expression (minimizes its negative)."""

    sign = -1.0
    required = ("constant", "affine", "concave")


def _end_history_at_returned_point(history, result):
    """Make the last history row describe the point the solve returns.

    When an earlier point's merit is less than half the last iterate's
    (``BEST_POINT_FACTOR``, engine/progress.py), the engine returns that
    point; the history then ends at the last iterate, not at
    the point that ``var.value`` and ``prob.value`` report. A final row
    (with the last iteration number) records the returned point, so that
    ``history["objective"][-1] == prob.value`` always holds (also when an
    interrupt came before the first row was recorded).
    """
    if len(history) and history["objective"][-1] == result.objective \
            and history["feasibility"][-1] == result.feasibility:
        return
    row = dict(iteration=result.iterations, time=result.solve_time, objective=result.objective,
               fw_gap=result.fw_gap, feasibility=result.feasibility, feasibility_rel=result.feasibility_rel,
               lam=result.lam, eta=result.eta, step=sum(result.step_counts.values()))
    history.append(**{key: row[key] if key in row else history[key][-1] for key in history.keys()})


class SolveStats:
    """Numbers about the last solve (see the attribute list in ``__slots__``).

    ``objective_scale`` and ``feasibility_scale`` are the scales of the
    stopping rule (``fwmodel.engine.stopping``): an optimal solve has
    ``fw_gap <= tol * objective_scale`` and
    ``feasibility <= feas_tol * feasibility_scale`` (and each group of rows
    its own test, ``fwmodel.engine.stopping.RowPieces``). Where the solve
    rescaled rows (every constraint's row to unit norm, each by its own
    norm; groups in units far apart),
    ``feasibility_scale`` is in the rescaled rows and ``feasibility`` in
    the model's own.
    ``feasibility_rel`` is ||Mx - b|| / max(1, ||x||, ||b||), as documented,
    not the stopping test.

    ``suboptimality_bound`` is what the returned point is certified to:
    ``prob.value - p* <= suboptimality_bound`` for Minimize (``p* -
    prob.value`` for Maximize), p* the optimal value, by weak duality from
    the FW gap and the multipliers (``fwmodel.engine.stopping``), with exact
    LMOs (a trace-norm ball's warm-started Lanczos LMO is checked at 1e-6 from a random start first,
    ``fwmodel.engine.stopping.LmoCheck``). It is the number to read when the optimum is small
    next to the objective's range (``objective_scale``), where ``tol``,
    relative to that range, is a loose promise about ``|p*|``. It can be
    negative where the point violates ``M x = b`` (it then lies below p*) and
    is NaN when the last FW gap was not measured (a lazy step that skipped
    its LMO, at a time limit, a callback's stop or a returned best point; the
    iteration at ``max_iter`` always measures it), when an LMO was seen to
    be inexact (a block's FW gap below zero), and after a divergence. (An
    iterate whose Lanczos trace-norm LMO was not checked is never returned as
    the best point; the solve's history, the verbose rows and a callback's
    ``state.fw_gap`` show such an iterate's unchecked gap, the result the
    checked one.)
    """

    __slots__ = ("iterations", "solve_time", "compile_time", "fw_gap", "feasibility", "feasibility_rel",
                 "lam", "eta", "status", "message", "step_counts", "objective_scale", "feasibility_scale",
                 "suboptimality_bound")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    def __repr__(self):
        return "SolveStats(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class SolverStats:
    """CVXPY's ``prob.solver_stats`` for a fwmodel solve (see :attr:`Problem.solver_stats`)."""

    solver_name = "FWAL"

    def __init__(self, stats):
        self.solve_time = stats.solve_time
        self.setup_time = stats.compile_time
        self.num_iters = stats.iterations
        self.extra_stats = stats

    def __repr__(self):
        return (f"SolverStats(solver_name={self.solver_name!r}, solve_time={self.solve_time!r}, "
                f"setup_time={self.setup_time!r}, num_iters={self.num_iters!r})")


class CallbackState:
    """What ``callback`` receives each iteration.

    Attributes: iteration, time, objective, fw_gap, feasibility,
    feasibility_rel, lam, eta, y (the dual variable, one entry per row of M),
    x (the product-space iterate, read-only by convention); ``value(var)`` gives a variable's current value
    (the average of its copies), ``point_in(set)`` the copy held in one of the problem's sets
    (see :meth:`Problem.point_in`).

    ``x`` and ``y`` are the solver's own arrays, updated in place by the next
    iterations: copy them to keep them (``value`` and ``point_in`` return new
    arrays). The callback runs while the solve goes on: a solve that stops
    "optimal" at iteration T has passed iterations 0, ..., T - 1, and its
    returned point is the one after the last callback (``prob.history`` has
    a row for it).
    """

    def __init__(self, engine_state, compiled, sign):
        self._s = engine_state
        self._compiled = compiled
        self.iteration = engine_state.iteration
        self.time = engine_state.time
        self.objective = sign * engine_state.objective
        self.fw_gap = engine_state.fw_gap
        self.feasibility = engine_state.feasibility
        self.feasibility_rel = engine_state.feasibility_rel
        self.lam = engine_state.lam
        self.eta = engine_state.eta
        #: the dual variable (one entry per row of M), and the product-space iterate
        self.y = engine_state.y
        self.x = engine_state.x

    def value(self, var):
        return self._compiled.variable_values(self._s.x)[var]

    def point_in(self, constraint):
        """The current copy held in ``constraint``'s set (see :meth:`Problem.point_in`)."""
        return _point_in(self._compiled, self._s.x, constraint)


def _derivation(compiled_set):
    """The chain of sets from a block's set back to the user's: the compiler's rewrites of a
    set (its symmetric variant, its preimage on the variable) name their source ``derived_from``."""
    chain = [compiled_set]
    while getattr(chain[-1], "derived_from", None) is not None:
        chain.append(chain[-1].derived_from)
    return chain


def _block_of(compiled, constraint):
    """The compiled block holding ``constraint``'s copy, and the chain of rewrites from its set to ``constraint``.

    Matched by identity only: another set of the same type on the same
    expression (say a different radius) is a different set, whose point
    would be the wrong one.
    """
    found = []
    for blk in compiled.blocks:
        chain = _derivation(blk.set)
        # a set merged with another into the block's set (a simplex and a box: CappedSimplex) holds the same point
        position = next((i for i, s in enumerate(chain)
                         if s is constraint or any(m is constraint for m in getattr(s, "merged_from", ()))), None)
        if position is not None:
            found.append((blk, chain[:position]))
    kept = getattr(getattr(compiled, "lowered", None), "redundant_balls", {}).get(id(constraint))
    if not found and kept is not None:  # a ball containing another on the same variable, dropped: the same point
        return _block_of(compiled, kept)
    if len(found) != 1:
        raise ValueError(f"point_in: {constraint!r} is not one of this problem's sets with a block of its own "
                         "(pass a set object given to fm.Problem, such as fm.L1Ball(X, r); constraints written "
                         "as inequalities are rewritten by the compiler)")
    return found[0]


def _point_in(compiled, x, constraint):
    """The value of ``constraint``'s expression at the copy its block holds in ``x``.

    A set on ``a * x + c`` is held as the variable's entries (AffinePreimage):
    its point is mapped back to ``a * x + c``, the point in the user's set.
    """
    blk, rewrites = _block_of(compiled, constraint)
    point = x[blk.slice]
    for s in rewrites:
        image_of = getattr(s, "image_of", None)
        if image_of is not None:
            point = image_of(point)
    return np.array(point, dtype=float).reshape(constraint.expr.shape)


def _one_solve_at_a_time(solve):
    """Decorate ``Problem.solve``: solves of one Problem from several threads run one after another.

    The compiled model, the warm-start state and the answer's attributes
    belong to the Problem: two solves interleaving on them returned a
    mixture, "optimal" 2.5e-3 off the optimum. A solve started from inside
    a solve of the same Problem (from its callback) would have to wait for
    itself, and raises instead.
    """

    @functools.wraps(solve)
    def wrapper(self, **options):
        if self._solving_thread == threading.get_ident():
            raise ModelError("Problem.solve: called while this thread is solving the same problem (from its "
                             "callback?); a solve of another Problem, or of a copy (copy.deepcopy), may run there")
        with self._solve_lock:
            try:
                self._solving_thread = threading.get_ident()
                return solve(self, **options)
            finally:
                self._solving_thread = None

    return wrapper


class Problem:
    """``Problem(objective, constraints)``: a model to solve with FW-AL.

    ``constraints`` is a list of sets (``fm.L1Ball(x)``, ...), equality
    constraints (``A @ x == b``) and objects with a ``.constraints`` list
    (such as ``fm.LocalMarginalPolytope``).

    A Problem is immutable, as in CVXPY: ``objective`` is read-only and
    ``constraints`` returns a copy of the list, because the first solve
    compiles the model once and every later solve reuses that compilation.
    Data that changes between solves is an ``fm.Parameter``; a different
    model is a new Problem, e.g.
    ``fm.Problem(new_objective, prob.constraints + [extra])``.
    """

    def __init__(self, objective, constraints=()):
        if not isinstance(objective, _Objective):
            raise ModelError(f"Problem: the objective must be fm.Minimize(...) or fm.Maximize(...), got {objective!r}")
        if constraints is None:
            constraints = ()
        if not isinstance(constraints, (list, tuple)):
            constraints = [constraints]
        self._objective = objective
        self._constraints = list(constraints)
        # what compile() reads: nested lists and objects' .constraints lists
        # expanded now, so that changing them later does not change the problem
        self._flat_constraints = flatten_constraints(self._constraints)
        self._compiled = None
        self._compile_time = None
        self._state = None
        self._versions = None
        self._solve_lock = threading.Lock()  # solves of this problem run one at a time (Problem.solve)
        self._solving_thread = None
        self.status = None
        self.value = None
        self.stats = None
        self.history = None

    # ------------------------------------------------------------ the model
    @property
    def objective(self):
        """The objective, ``fm.Minimize(...)`` or ``fm.Maximize(...)`` (read-only)."""
        return self._objective

    @objective.setter
    def objective(self, _value):
        raise AttributeError(
            "Problem.objective is read-only: a Problem is immutable once built (its compiled form is reused by "
            "every solve); build a new one, fm.Problem(new_objective, prob.constraints), or put the data that "
            "changes in an fm.Parameter"
        )

    @property
    def constraints(self):
        """A copy of the constraint list: changing it does not change the problem."""
        return list(self._constraints)

    @constraints.setter
    def constraints(self, _value):
        raise AttributeError(
            "Problem.constraints is read-only: a Problem is immutable once built (its compiled form is reused by "
            "every solve); build a new one, fm.Problem(prob.objective, prob.constraints + [new_constraint])"
        )

    # ------------------------------------------------------------ compile
    def compile(self):
        """The compiled problem (blocks, M, b, graph), built once and reused."""
        if self._compiled is None:
            t0 = time.perf_counter()
            # the domains of fm.smooth atoms (z**1.5, log, sqrt: z >= 0) as bounds or rows, as CVXPY's DCP
            # domain: the user's constraints come first, so that their dual values and messages are unchanged
            implied = implied_domain_constraints(self.objective.expr)
            self._compiled = compile_problem(self.objective.expr, self.objective.sign,
                                             self._flat_constraints + implied)
            self._compile_time = time.perf_counter() - t0
        return self._compiled

    def variables(self):
        """The model's variables (without the slacks the compiler adds for inequalities)."""
        return self.compile().model_variables()

    def parameters(self):
        """The distinct fm.Parameters of the objective and the constraints, in order of first appearance
        (CVXPY's ``Problem.parameters()``; nothing is compiled)."""
        holders = [self.objective.expr]
        for constraint in self._flat_constraints:
            sides = [getattr(constraint, name, None) for name in ("lhs", "rhs")]
            holders += [side for side in sides if isinstance(side, Expression)] or [constraint]
        return distinct_parameters(holders)

    def is_dcp(self):
        """True: fwmodel accepts only models that follow its rules (a convex objective to minimize, a
        concave one to maximize, constraints it can compile), and refuses others with a ModelError when
        the model is built or compiled, so a Problem that compiles is DCP (CVXPY's ``is_dcp()``); False
        where compiling it raises that ModelError."""
        try:
            self.compile()
        except ModelError:
            return False
        return True

    def is_dpp(self, context="dcp"):
        """CVXPY's ``Problem.is_dpp()``: the model is DCP (:meth:`is_dcp`) and its Parameters enter as DPP
        allows: no product of two factors that both have Parameters (``p * q * x``), no Parameter factor that
        is not affine in them (``fm.square(p) * x``), no division by an expression with Parameters
        (``x / p``, ``fm.sum_squares(x) / p``). fwmodel re-reads every Parameter at each solve without
        recompiling whatever the answer; this says whether CVXPY would cache the model's canonicalization.
        ``context``: "dcp" only (geometric programs are not supported)."""
        if str(context).lower() != "dcp":
            raise ModelError(f"Problem.is_dpp: context {context!r} is not supported; fwmodel's models are DCP "
                             "(context='dcp')")
        if not self.is_dcp():
            return False
        from .expressions.affine import DivideExpression, MatMulExpression, MultiplyExpression
        holders = [self.objective.expr]
        for constraint in self._flat_constraints:
            sides = [getattr(constraint, name, None) for name in ("lhs", "rhs")]
            holders += [side for side in sides if isinstance(side, Expression)]
            expr = getattr(constraint, "expr", None)  # (a set given as a constraint: its expression)
            if not any(isinstance(side, Expression) for side in sides) and isinstance(expr, Expression):
                holders.append(expr)
        for holder in holders:
            if not holder._has_params:
                continue
            for node in holder._postorder():
                if not node._has_params:
                    continue
                if isinstance(node, DivideExpression):
                    if node.args[1]._has_params:
                        return False
                elif isinstance(node, (MultiplyExpression, MatMulExpression)):
                    with_params = [a for a in node.args if a._has_params]
                    if len(with_params) > 1 or any(not a.is_affine() or a._has_vars for a in with_params):
                        return False
        return True

    @property
    def size_metrics(self):
        """CVXPY's ``Problem.size_metrics`` (:class:`SizeMetrics`), computed from the model as written."""
        return SizeMetrics(self)

    @property
    def solver_stats(self):
        """CVXPY's ``SolverStats`` of the last solve (None before one): ``solver_name`` ("FWAL"),
        ``solve_time`` and ``setup_time`` (compile) in seconds, ``num_iters``, and ``extra_stats``, the full
        :class:`SolveStats` (also ``prob.stats``)."""
        return None if self.stats is None else SolverStats(self.stats)

    @property
    def duals(self):
        """The dual variable y of M x = b after a solve (one entry per row of M), else None.

        Rows follow ``prob.compile().M``; at an optimal solve y estimates the
        Lagrange multipliers of the consistency and equality constraints.
        """
        return None if self._state is None else self._state.y.copy()

    # ------------------------------------------------------------ solve
    @with_plain_pages  # compile and solve allocate without huge pages (engine/pages.py)
    @in_own_context
    @_one_solve_at_a_time
    def solve(self, **options):
        """Solve with FW-AL and return the objective value at the returned point.

        Options (all optional; defaults in :data:`SOLVE_DEFAULTS`):

        - max_iter, time_limit (seconds).
        - tol, feas_tol (default 1e-4 each): the solve is "optimal" at the
          first iterate whose FW gap of the augmented Lagrangian is at most
          ``tol * stats.objective_scale``, whose ||Mx - b|| is at most
          ``feas_tol * stats.feasibility_scale``, and where the objective
          error that the remaining infeasibility can hide, measured with the
          multipliers, is at most ``tol`` relative to |objective| (or to
          1 % of the objective scale, where |objective| is smaller). The objective scale is the
          FW gap of the objective at the cold starting point (its range over
          the sets seen from there), the feasibility scale the largest norm
          of b and of the points seen (not the sets' vertices: a loose
          bound such as ``abs(x) <= 1e6`` does not loosen the rows); so ``tol`` is the same
          relative accuracy whatever the units of the objective, the data
          or the variables (``fwmodel.engine.stopping``).
        - lam, eta (number, callable or "adaptive" / "theorem2" / "theorem3").
        - step ("auto", "fw", "away", "pairwise"), line_search ("auto",
          "exact", "backtracking"). A step kind named here is taken on every
          block: projection="auto" then switches no block to projected-gradient
          steps ("away" and "pairwise" apply to polytope blocks, the others take
          FW steps); ``projection=True`` with it still projects the blocks with
          a cheap projection.
        - verbose (True/False), print_every: a table row every few
          iterations and at least every 2 s.
        - callback (called with a :class:`CallbackState` each iteration;
          returning False stops), warm_start (reuse x, y and active sets of
          the last solve), seed (the engine's random choices; None, the
          default, is a fixed seed, so a solve is reproducible, up to
          projection="auto"'s timed choice).
        - inface ("auto", True, False: in-face steps on trace-norm blocks).
        - projection ("auto", True, False): projected-gradient steps instead
          of FW steps. True: on blocks whose set has a cheap projection (L1/L2
          balls, boxes). "auto", when the problem has a block that is not a
          polytope: the cheap ones from the start and, after a few FW
          iterations, every block whose projection costs at most five
          iterations, measured (a trace-norm ball's up to d of about 2000 on
          one core); on a model made only of polytopes, none, except L1
          balls (and capped simplices) read by a curved objective, with or
          without rows, under ``step="auto"``. Curved is measured: a quadratic
          whose curvature along its first FW step is below 1e-3 of its slope
          (a linear term plus a least-squares term of tiny or zero weight)
          keeps the vertex steps of a linear objective (see
          ``fwmodel.engine.projection_choice``).
        - rank_k ("auto", True, False): BlockFW rank-k steps on trace-norm
          blocks that take FW steps (``fwmodel.engine.rank_k``); "auto" (the
          default): on those of at least 1000 rows and columns, with the
          rank k capped by its cost, counted in operations (block products,
          Lanczos matvecs, vector passes), never timed: the same model takes
          the same steps on every run; rank-k steps pause while FW steps
          gain more per unit of that cost.
        - face_step ("auto", True, False): a corrective step that moves all
          free coordinates of the current face together (free box entries,
          the active atoms' weights of polytope blocks) to the minimizer of
          the augmented Lagrangian's quadratic model on that face
          (``fwmodel.engine.face_step``); quadratic and linear objectives
          only. "auto": tried every few iterations, then at every iteration
          while it pays (decreases the Lagrangian against the FW sweep and
          the solve keeps progressing), on faces small enough for a direct
          solve; True: every iteration; False: never.
        - threads: BLAS threads during the solve (a positive integer, default
          1, or None to leave the BLAS as configured; see
          ``fwmodel.engine.threads``).
        - sweep ("gauss-seidel" or "jacobi": the blocks step one after
          another or together, see ``fwmodel.engine.block_search``).

        A bad option (unknown name, wrong type such as ``max_iter=True`` or
        ``verbose="no"``, out of range) raises a ValueError naming it.
        Ctrl-C (KeyboardInterrupt) during the solve ends it with status
        "interrupted" and a consistent answer: every copy of a variable in
        its set, ``prob.value`` the objective at ``var.value``, a history
        with equal-length columns, and a state ``warm_start=True`` resumes.
        (During compilation and setup, before there is a first iterate, the
        KeyboardInterrupt propagates and the previous answer is kept.)

        A non-optimal status (``fm.INFEASIBLE``, ``fm.MAX_ITER``, ...) raises
        nothing, as in CVXPY: check ``prob.status``. ``var.value`` is then
        the best point found, which for an infeasible problem violates some
        constraint (by ``prob.stats.feasibility``). After a solve,
        ``constraint.dual_value`` holds CVXPY's multipliers (its sign
        convention and shapes) of the equalities, of the inequalities
        (``G @ x <= h``, bounds, norm bounds, ``fm.max(e) <= t``: one
        multiplier, as CVXPY) and of ``E >> 0`` (the PSD matrix Z), from
        the rows and from the KKT conditions of the blocks
        (:meth:`fwmodel.compiler.compile.CompiledProblem.write_duals`);
        None where the compiler shared a multiplier between sets.
        With ``warm_start=True``, the blocks whose set data changed through
        an fm.Parameter restart from their set's initial point, and after any
        Parameter change the multipliers and the penalty are carried to the
        new data's units, or restart where those moved more than 10x
        (:func:`fwmodel.engine.warm_start.in_new_units`).

        A Parameter value outside an atom's domain (``quad_over_lin``'s
        y > 0, a divisor that must be nonzero) raises a ModelError naming the
        atom and the parameter when the solve starts
        (:mod:`fwmodel.expressions.domains`); the previous answer is kept.
        """
        unknown = sorted(set(options) - set(SOLVE_DEFAULTS))
        if unknown:
            hints = "".join(f"; {CVXPY_SOLVE_OPTIONS[name]}" for name in unknown if name in CVXPY_SOLVE_OPTIONS)
            raise ValueError(f"unknown solve option(s) {', '.join(map(repr, unknown))}{hints}; "
                             f"the options are {', '.join(SOLVE_DEFAULTS)}")
        opts = dict(SOLVE_DEFAULTS, **options)
        if opts["callback"] is not None and not callable(opts["callback"]):
            raise ValueError(f"option callback must be a callable (or None), got {opts['callback']!r}")
        every = opts["print_every"]
        if every is not None and (isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1):
            raise ValueError(f"option print_every must be a positive integer (or None), got {every!r}")
        if not isinstance(opts["warm_start"], (bool, np.bool_)):
            raise ValueError(f"option warm_start must be True or False, got {opts['warm_start']!r}")
        # Parameter values outside an atom's domain (quad_over_lin's y > 0, a divisor != 0): a
        # ModelError naming them, before compiling or refreshing the data they would make NaN or infinite
        check_parameter_domains(self._data_roots())
        compiled = self.compile()
        compiled.refresh_parameters()
        if compiled.slack_units_stale() or compiled.copy_units_stale():
            # Parameters moved an inequality's coefficients far from the units its slack was compiled in
            # (a slack in other units than its row's stalls the solve), or a set's expression's far from
            # the units its block was compiled in (likewise): compile again, and start cold
            self._compiled, self._state = None, None
            compiled = self.compile()
            compiled.refresh_parameters()
        for p in self._parameters():
            p.check_value_at_solve()  # a value is set and still has its declared sign
        violated = compiled.empty_sets() + compiled.violated_fixed_constraints()
        if violated:
            return self._end_infeasible_by_data(violated)
        if not compiled.blocks:
            return self._end_without_variables()
        warm = self._state if opts.pop("warm_start") and self._state is not None else None
        if warm is not None:  # blocks whose set data changed restart (all of them, cold, where far apart)
            warm = compiled.restart_changed_blocks(warm, self._versions)
        user_callback = opts.pop("callback")
        callback = None
        if user_callback is not None:
            sign = self.objective.sign

            def callback(state):
                return user_callback(CallbackState(state, compiled, sign))

        engine_blocks = self._engine_blocks(compiled)
        result = minimize_fwal(compiled.objective, engine_blocks, compiled.operator, compiled.b,
                               callback=callback, warm_state=warm, **opts)
        # Build everything first, then commit it in one place: an interrupt
        # while committing restarts the commit (it only reads the temporaries),
        # so var.value, prob.value, status, history and the warm-start state
        # always come from the same solve.
        # ||M x - b|| / max(1, ||x||, ||b||) with x in the model's units (expression blocks held in their
        # variables' units count as the expressions' values: CompiledProblem.feasibility_rel)
        result["feasibility_rel"] = compiled.feasibility_rel(result.x, result.feasibility, result.feasibility_rel)
        sign = self.objective.sign
        values = compiled.variable_values(result.x)
        history = result.history.copy()
        _end_history_at_returned_point(history, result)
        if sign != 1.0:
            history.map_column("objective", lambda f: sign * f)
        stats = SolveStats(
            iterations=result.iterations, solve_time=result.solve_time, compile_time=self._compile_time,
            fw_gap=result.fw_gap, feasibility=result.feasibility, feasibility_rel=result.feasibility_rel,
            lam=result.lam, eta=result.eta, status=result.status, message=result.message,
            step_counts=result.step_counts, objective_scale=result.objective_scale,
            feasibility_scale=result.feasibility_scale, suboptimality_bound=result.suboptimality_bound,
        )

        versions = compiled.data_versions()  # what a warm start compares against
        # constraint.dual_value (the rows' multipliers given where the solve rescaled its rows)
        compiled.write_duals(result.x, result.state.y, result.lam, result.get("row_multipliers"),
                             slack_tolerance=result.feas_tol * result.feasibility_scale)

        def commit(status):
            for var, value in values.items():
                var.value = value
            self._state = result.state
            self._versions = versions
            self.status = status
            stats.status = status
            self.value = float(sign * result.objective)
            self.history = history
            self.stats = stats

        status = result.status
        while True:  # the commit takes microseconds: retrying it cannot keep Ctrl-C waiting
            try:
                commit(status)
                break
            except KeyboardInterrupt:  # Ctrl-C as the solve ended: finish the commit, report it
                status = "interrupted"
                stats.message = f"{result.message}; interrupted while storing the result"
        return self.value

    def _end_infeasible_by_data(self, violated):
        """End a solve without iterating: constraints on data alone are false.

        As in CVXPY for an infeasible problem: status "infeasible", value
        +inf for Minimize (-inf for Maximize), variable values and dual values None; the
        message in ``prob.stats.message`` names the violated constraints.
        """
        compiled = self.compile()
        for var in compiled.model_variables():
            var.value = None
        for constraint in self._flat_constraints:  # no point, no multipliers (not the last solve's)
            if hasattr(constraint, "dual_value"):
                constraint.dual_value = None
        self.status = "infeasible"
        self.value = float(self.objective.sign * np.inf)
        self.history = History()
        self.stats = SolveStats(iterations=0, solve_time=0.0, compile_time=self._compile_time, status=self.status,
                                message="; ".join(violated), step_counts={})
        return self.value

    def _end_without_variables(self):
        """End a solve without iterating: the model has no variables (``fm.Minimize(5.0)``, constraints on
        data alone, all true), so its value is the objective's, "optimal", as CVXPY answers.
        The dual values of those constraints are None (CVXPY's too)."""
        for constraint in self._flat_constraints:
            if hasattr(constraint, "dual_value"):
                constraint.dual_value = None
        self._state, self._versions = None, None
        self.status = "optimal"
        self.value = float(np.asarray(self.objective.expr.value, dtype=float).reshape(()))
        self.history = History()
        self.stats = SolveStats(iterations=0, solve_time=0.0, compile_time=self._compile_time, status=self.status,
                                message="the model has no variables: its value is the objective's",
                                fw_gap=0.0, feasibility=0.0, feasibility_rel=0.0, suboptimality_bound=0.0,
                                step_counts={})
        return self.value

    def point_in(self, constraint):
        """The value of ``constraint``'s expression held by its own copy, after a solve (None before).

        FW-AL copies a variable once per set that constrains it (paper Sec. 2.2)
        and keeps each copy in its set: the L1 ball's copy is a combination of
        sparse atoms (or a soft-thresholding), the trace-norm ball's of
        low-rank ones. ``var.value`` is their average, which lies in the sets
        only up to ``prob.stats.feasibility``; ``prob.point_in(s)`` is the copy
        in set ``s``, exactly in ``s`` (up to rounding): for
        ``l1 = fm.L1Ball(X, r)``, ``prob.point_in(l1)`` is a sparse estimate of
        X with ``||.||_1 <= r``. ``constraint`` is one of the set objects given
        to the Problem (a constraint written as an inequality, such as
        ``fm.norm1(X) <= r``, is rewritten by the compiler: give the set
        itself); ValueError otherwise. The same is available during a solve
        as ``state.point_in(s)`` in a callback.
        """
        compiled = self.compile()
        _block_of(compiled, constraint)  # a set not in the problem is an error also before a solve
        if self._state is None:
            return None
        return _point_in(compiled, self._state.x, constraint)

    # ------------------------------------------------------------ helpers
    def _data_roots(self):
        """The expressions the user wrote (objective, constraint sides, set data) that hold Parameters."""
        roots = [self.objective.expr]
        for constraint in self._flat_constraints:
            for name in ("lhs", "rhs", "expr"):
                side = getattr(constraint, name, None)
                if isinstance(side, Expression):
                    roots.append(side)
            sources = getattr(constraint, "_sources", None)  # a set's data given by Parameters
            if isinstance(sources, dict):
                roots.extend(source for source, _ in sources.values() if isinstance(source, Expression))
        return [r for r in roots if r._has_params]

    def _parameters(self):
        compiled = self.compile()
        return distinct_parameters(
            [self.objective.expr] + [b.set.expr for b in compiled.blocks] + [e.expr for e in compiled.equalities]
            + [c.expr for c in compiled.fixed_constraints] + [b.set for b in compiled.blocks])

    @staticmethod
    def _engine_blocks(compiled):
        """One engine Block per compiled block, built from what its set declares it offers.

        A set declares its structure (:mod:`fwmodel.sets.base`): a low-rank
        face (in-face steps), simplex groups (a pairwise step per group),
        interval bounds (a FW step per coordinate), a batch of polytopes
        (BPCG per group), a projection (projected-gradient steps), how many
        independent groups it is a product of. No set's type is tested here.
        """
        from .engine import Block
        from .engine.inface import LowRankFace
        from .engine.steps import SimplexGroups
        from .sets.base import JOINT_GROUPS_LIMIT, _defined_outside, checked_user_lmo, user_written

        def declared(found, wrap):
            return None if found is None else wrap(*found)

        def block(b):
            s = b.set
            lmo = s.lmo_for_solve()
            if user_written(s) and _defined_outside(type(s), "lmo_for_solve"):  # (the default checks its own)
                lmo = checked_user_lmo(s, lmo)
            return Block(
                offset=b.offset, size=b.size, lmo=lmo, initial_atom=s.initial_atom,
                # an LMO that may miss its minimizer offers the check of its gap (TraceNormBall, lmo_tol)
                lmo_check=lmo if callable(getattr(lmo, "exact", None)) else None,
                lmo_sign_check=user_written(s),  # (built-in sets' LMOs are not asked again)
                is_polytope=bool(s.is_polytope), name=b.name, is_box=bool(s.is_box), atoms_of_point=s.atoms_of_point,
                face=declared(s.low_rank_face(), LowRankFace),
                # a product of many small polytopes (Simplex(axis=...) over a factor
                # graph, many alignments): pairwise steps there move every group along
                # one stored joint vertex, which measured slower than FW on the MAP LP
                # (20 x 20 grid: 28 vs 0.9 ms per iteration, less accurate after 3000)
                active_set_steps=s.group_count() <= JOINT_GROUPS_LIMIT,
                groups=declared(s.simplex_groups(), SimplexGroups),
                intervals=s.interval_bounds(), batch_group_size=s.batch_group_size(), hull=s.affine_hull(),
                auto_step=s.auto_active_set_step(),
                project=s.project_flat if (s.has_cheap_projection or s.has_projection) else None,
                cheap_projection=bool(s.has_cheap_projection),
                project_in_place=bool(s.projects_in_place),
                project_sparse_step=getattr(s, "projected_step_sparse", None),
                projects_unread=bool(getattr(s, "projects_unread", False)),
                projection_estimate=s.projection_time_estimate,
                projection_warm_starts=bool(getattr(s, "projection_warm_starts", False)))

        return [block(b) for b in compiled.blocks]

    # ------------------------------------------------------------ pickling
    def __getstate__(self):
        # The compiled problem holds closures that rebuild Parameter-dependent
        # rows; it is not stored but compiled again, identically, on first use.
        # Everything else (the model, the last results, the warm-start state) is.
        state = dict(self.__dict__)
        state["_compiled"] = None
        del state["_solve_lock"], state["_solving_thread"]  # (a lock is not pickled: a new one on load)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._solve_lock = threading.Lock()
        self._solving_thread = None

    def __repr__(self):
        return f"Problem({self.objective!r}, {len(self._constraints)} constraints)"
