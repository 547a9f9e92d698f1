"""Norms and absolute values: constraints, never objective terms.

FW-AL needs a smooth objective: its Frank-Wolfe steps use the gradient, and
its convergence rate depends on the gradient being Lipschitz. Absolute
values and norms are not smooth, but the constraint ``norm(e) <= t`` they
usually express is a set with a cheap linear minimization oracle. So
``fm.norm1(e)``, ``fm.norm(e, p)``, ``fm.normNuc(E)`` and ``fm.abs(e)`` build a
:class:`NormAtom`, an expression that can only be bounded above by data::

    fm.norm1(e) <= t            ->  fm.L1Ball(e, t)
    fm.norm(e, 2) <= t          ->  fm.L2Ball(e, t)     (also norm2, "fro")
    fm.norm(e, "inf") <= t      ->  fm.LinfBall(e, t)   (also norm_inf)
    fm.normNuc(E) <= t          ->  fm.TraceNormBall(E, t)   (also "nuc")
    fm.abs(e) <= t              ->  fm.Box(e, -t, t)

(``t >= norm`` likewise). CVXPY's other spellings are the same atoms:
``fm.sum(fm.abs(e))`` is ``norm1(e)``, ``fm.max(fm.abs(e))`` is
``norm_inf(e)``, ``fm.pnorm(e, p)`` the entrywise p-norm. ``fm.max(e) <= t``
and ``fm.min(e) >= t`` are entrywise bounds (``e <= t``, ``e >= t``: a side
of a box), and so are CVXPY's piecewise atoms, one bound per argument (t
data or affine; NumPy broadcasting)::

    fm.maximum(a, b, ...) <= t  ->  a <= t, b <= t, ...
    fm.pos(e) <= t              ->  e <= t, 0 <= t      (pos(e) = maximum(e, 0))
    fm.neg(e) <= t              ->  -e <= t, 0 <= t     (neg(e) = maximum(-e, 0))
    fm.minimum(a, b, ...) >= t  ->  a >= t, b >= t, ...

(an argument without variables next to a data t, the 0 of ``pos``, is
checked on the data at each solve: "infeasible" where it fails, as in
CVXPY). Scaled, and summed (t data; one argument c without variables)::

    alpha * P + d <= t          ->  P <= (t - d) / alpha     (alpha > 0 a number, P convex above;
                                    (t - d) / alpha <= P for alpha < 0 and P concave; d affine)
    fm.sum(fm.pos(e)) <= t      ->  s >= 0, e - s <= 0, sum(s) <= t   (s hidden: a simplex with "<=")
    fm.sum(fm.maximum(e, c)) <= t  ->  s >= 0, e - c - s <= 0, sum(s) <= t - sum(c)
    fm.sum(fm.neg(e)) <= t      ->  s >= 0, -e - s <= 0, sum(s) <= t
    fm.sum(fm.minimum(e, c)) >= t  ->  the maximum's with e, c, t negated

(``axis=`` gives one budget per slice; see
:class:`~fwmodel.expressions.constraints.HingeBudget`; ``dual_value`` is
CVXPY's multiplier of the constraint as written, over ``|alpha|`` when
scaled). In an objective, each of these atoms raises
:class:`~fwmodel.errors.ModelError` naming the set or bound to use.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .core import CONCAVE, CONVEX, Expression, as_expression, short_repr

#: kind -> (the set a bound compiles to, advice for objectives)
_KINDS = {
    "l1": ("fm.L1Ball", "to bound it, use fm.L1Ball(expr, radius) (or write norm1(expr) <= radius as a constraint)."),
    "l2": ("fm.L2Ball", "to bound it, use fm.L2Ball(expr, radius) (or write norm(expr, 2) <= radius as a "
                        "constraint); as a penalty, use fm.sum_squares(expr) (its square, which is smooth)."),
    "linf": ("fm.LinfBall", "to bound it, use fm.LinfBall(expr, radius) or fm.Box(expr, lower, upper) "
                            "(or write norm_inf(expr) <= radius as a constraint)."),
    "nuc": ("fm.TraceNormBall", "to bound the nuclear norm, use fm.TraceNormBall(expr, radius) "
                                "(or write normNuc(expr) <= radius as a constraint)."),
    "abs": ("fm.Box", "to bound the sum of absolute values use fm.L1Ball(expr, radius); to bound each |entry| use "
                      "fm.LinfBall(expr, radius) or fm.Box(expr, lower, upper) (or write abs(expr) <= t as a "
                      "constraint)."),
}


class NormAtom(Expression):
    """``norm(arg)`` of one kind ("l1", "l2", "linf", "nuc") or ``|arg|`` ("abs").

    Its value is computed (for ``.value``), its DCP curvature is convex, but
    it is not smooth: :func:`refuse_in_objective` rejects it in objectives,
    and :class:`~fwmodel.expressions.constraints.Inequality` accepts it only
    as ``atom <= data``. ``norm2(e) ** 2`` is ``fm.sum_squares(e)``.
    """

    def __init__(self, arg, kind, call):
        arg = as_expression(arg)
        if not arg.is_affine():
            raise ModelError(f"{call}: the argument must be affine, but {short_repr(arg)} is {arg.curvature}")
        if kind == "nuc" and arg.ndim != 2:
            raise ModelError(f"{call}: the nuclear norm needs a matrix (2-D) argument, got shape {arg.shape}")
        super().__init__([arg], arg.shape if kind == "abs" else ())
        self.kind = kind
        self.call = call
        self.set_name, self.advice = _KINDS[kind]

    def _compute_affine(self):
        return False

    def _curvature_rule(self, curvatures):
        return CONVEX

    def _forward(self, vals):
        a = np.asarray(vals[0], dtype=float)
        if self.kind == "abs":
            return np.abs(a)
        if self.kind == "l1":
            return float(np.abs(a).sum())
        if self.kind == "l2":
            return float(np.linalg.norm(a.ravel()))
        if self.kind == "linf":
            return float(np.abs(a).max())
        return float(np.linalg.svd(a, compute_uv=False).sum())

    def _backward(self, adj, vals, out, aux, needs):
        refuse_in_objective(self)

    def __pow__(self, power):
        if self.kind == "l2" and power == 2 and not isinstance(power, bool):
            from .atoms import sum_squares

            return sum_squares(self.args[0])
        return super().__pow__(power)

    def _repr(self, arg_texts):
        return self.call


def find_norm_atom(expr):
    """The first :class:`NormAtom` inside ``expr`` (itself included), or None."""
    if isinstance(expr, NormAtom):
        return expr
    if expr.is_leaf:
        return None
    for node in expr._postorder():
        if isinstance(node, NormAtom):
            return node
    return None


def bound_text(atom):
    """How ``atom`` is bounded as a constraint: ``call <= t``, or ``call >= t`` for the concave ``min``."""
    return f"{atom.call} >= t" if atom.kind in ("min", "minimum") else f"{atom.call} <= t"


def refuse_in_objective(expr):
    """Raise ModelError if ``expr`` (an objective) contains a norm or abs atom."""
    atom = find_norm_atom(expr)
    if atom is not None:
        _refuse(atom.call, atom.advice)


def _refuse(call, advice):
    raise ModelError(
        f"{call} is not smooth, so it cannot appear in an objective; {advice}"
    )


def _call(name, expr, *extra):
    return f"{name}({', '.join([short_repr(expr, 80), *extra])})"


def abs(expr):  # noqa: A001 - mirrors numpy.abs / cvxpy.abs
    """``|expr|`` elementwise: ``fm.abs(e) <= t`` is ``fm.Box(e, -t, t)``; refused in objectives."""
    expr = as_expression(expr)
    return NormAtom(expr, "abs", _call("abs", expr))


def norm1(expr):
    """``||vec(expr)||_1``: ``fm.norm1(e) <= t`` is ``fm.L1Ball(e, t)``; refused in objectives."""
    expr = as_expression(expr)
    return NormAtom(expr, "l1", _call("norm1", expr))


def norm2(expr):
    """``||vec(expr)||_2``: ``fm.norm2(e) <= t`` is ``fm.L2Ball(e, t)``; refused in objectives."""
    expr = as_expression(expr)
    return NormAtom(expr, "l2", _call("norm2", expr))


def norm_inf(expr):
    """``max |entry|``: ``fm.norm_inf(e) <= t`` is ``fm.LinfBall(e, t)``; refused in objectives."""
    expr = as_expression(expr)
    return NormAtom(expr, "linf", _call("norm_inf", expr))


def normNuc(expr):  # noqa: N802 - mirrors cvxpy.normNuc
    """The nuclear norm: ``fm.normNuc(E) <= t`` is ``fm.TraceNormBall(E, t)``; refused in objectives."""
    expr = as_expression(expr)
    return NormAtom(expr, "nuc", _call("normNuc", expr))


def norm(expr, p=2, axis=None):
    """``norm(expr, p)`` for p in 1, 2, "fro", "inf" (np.inf), "nuc"; a constraint atom.

    As in CVXPY, ``p=2`` of a vector and ``"fro"`` of a matrix are the
    Euclidean norm of all entries (L2Ball). For a matrix (2-D, both
    dimensions above 1), ``p=2``, ``1`` and ``"inf"`` are CVXPY's induced
    norms (spectral, largest column sum, largest row sum), not the entrywise
    ones: they have no set here (ModelError naming ``fm.norm1`` /
    ``fm.norm_inf`` for the entrywise norms). Of a (1, n) row, the induced
    ``1`` and ``"inf"`` norms are the entrywise inf and 1 norms, as in
    CVXPY. Other p: ModelError.
    """
    expr = as_expression(expr)
    call = _call("norm", expr, repr(p))
    _refuse_expression_p(p, call)
    if axis is not None:
        raise ModelError(f"{_call('norm', expr, repr(p), f'axis={axis!r}')}: norms along an axis (mixed norms) have "
                         "no set here; bound each slice with its own constraint, or write a custom fm.ConvexSet "
                         "subclass with an LMO")
    if isinstance(p, str):
        p = p.lower()
    matrix = expr.ndim == 2 and expr.shape[0] > 1 and expr.shape[1] > 1
    if expr.ndim == 2 and not isinstance(p, bool) and (p == 1 or p in ("inf", np.inf)):
        # CVXPY: norm(E, 1) of any 2-D E is the largest absolute column sum, norm(E, "inf")
        # the largest absolute row sum. Of an (n, 1) column they are the entrywise
        # norms; of a (1, n) row they are the other entrywise norm; of a matrix, no set.
        if matrix:
            entrywise, rows = ("fm.norm1", "column") if p == 1 else ("fm.norm_inf", "row")
            raise ModelError(f"{call}: for a matrix, CVXPY's norm(E, {p!r}) is the induced norm (the largest "
                             f"absolute {rows} sum), which has no set here; for the entrywise norm write "
                             f"{entrywise}(E), or bound each {rows} with its own fm.norm1(...) <= t")
        if expr.shape[0] == 1 and expr.shape[1] > 1:  # a row: the induced norms swap
            p = "inf" if p == 1 else 1
    if p == 1 and not isinstance(p, bool):
        return NormAtom(expr, "l1", call)
    if p == "fro" or (p == 2 and not isinstance(p, bool) and not matrix) or p is None:
        return NormAtom(expr, "l2", call)
    if p in ("inf", np.inf):
        return NormAtom(expr, "linf", call)
    if p == "nuc":
        return NormAtom(expr, "nuc", call)
    if p == 2:
        raise ModelError(f"{call}: the spectral norm of a matrix has no set here (its ball's LMO needs a full "
                         "SVD); for the Frobenius norm write norm(E, 'fro') (fm.L2Ball), for the nuclear norm "
                         "norm(E, 'nuc') (fm.TraceNormBall), or write a custom fm.ConvexSet subclass with an LMO")
    raise ModelError(f"{call}: fwmodel has no set for this norm (known: 1, 2, 'fro', 'inf', 'nuc'), neither as a "
                     "constraint norm(e, p) <= t nor as an objective term; a custom fm.ConvexSet subclass with an "
                     "LMO can express it")


def _refuse_expression_p(p, call):
    if isinstance(p, Expression):
        raise ModelError(f"{call}: p must be a number or a name ('fro', 'inf', 'nuc'), not an expression or an "
                         "fm.Parameter: the set a norm bound compiles to depends on p, so p is fixed when the "
                         "model is built (a Parameter can be the bound t of norm(e, p) <= t)")


def pnorm(expr, p=2):
    """``cvxpy.pnorm``: the entrywise p-norm of all entries, for p in 1, 2, "inf" (np.inf); a constraint atom.

    Unlike ``fm.norm(E, 2)`` of a matrix (spectral), ``pnorm(E, 2)`` is the
    Frobenius norm, as in CVXPY. Other p have no set (ModelError).
    """
    expr = as_expression(expr)
    call = _call("pnorm", expr, repr(p))
    _refuse_expression_p(p, call)
    key = p.lower() if isinstance(p, str) else p
    if not isinstance(p, bool):
        if key == 1:
            return NormAtom(expr, "l1", call)
        if key == 2:
            return NormAtom(expr, "l2", call)
        if key in ("inf", np.inf):
            return NormAtom(expr, "linf", call)
    raise ModelError(f"{call}: fwmodel has no set for this p-norm (known: 1, 2, 'inf'); a custom fm.ConvexSet "
                     "subclass with an LMO can express it")


def norm_of_abs(abs_atom, kind, outer):
    """``sum(abs(e))`` (kind "l1") or ``max(abs(e))`` (kind "linf"): the norm of e, an exact rewrite."""
    arg = abs_atom.args[0]
    return NormAtom(arg, kind, f"{outer}({abs_atom.call})")


class EntryExtremumAtom(NormAtom):
    """``max(e)`` or ``min(e)`` of an affine e (over ``axis``): bounds of the entries, not objective terms.

    ``max(e) <= t`` is exactly ``e <= t`` entrywise and ``min(e) >= t`` is
    ``e >= t`` (with ``axis``, t is broadcast along the reduced axes); the
    compiler makes them a side of a box (or slack rows when t has variables).
    The other sides (``max(e) >= t``, ``min(e) <= t``) say that some entry
    passes t: a union of half-spaces, not convex, refused. In an objective
    they are refused as the norms are (not smooth).
    """

    def __init__(self, arg, kind, axis, keepdims, call):
        from .affine import normalize_axes, reduced_shape

        arg = as_expression(arg)
        if not arg.is_affine():
            raise ModelError(f"{call}: the argument must be affine, but {short_repr(arg)} is {arg.curvature}; "
                             f"only {kind}(affine) <= / >= t is a set of entrywise bounds")
        if arg.size == 0:
            raise ModelError(f"{call}: the expression has no entries")
        self.axes = normalize_axes(axis, arg.ndim, call)
        self.keepdims = bool(keepdims)
        self.kept_shape = reduced_shape(arg.shape, self.axes, True)
        Expression.__init__(self, [arg], reduced_shape(arg.shape, self.axes, self.keepdims))
        self.kind, self.call = kind, call
        self.set_name = "fm.Box"
        upper = kind == "max"
        self.advice = (f"to bound the entries write {call} {'<=' if upper else '>='} t (entrywise "
                       f"{'upper' if upper else 'lower'} bounds, a side of a box), fm.Box(expr, lower, upper) or "
                       "fm.LinfBall(expr, radius)"
                       + ("; fm.log_sum_exp is a smooth surrogate of the maximum." if upper else "."))

    def _curvature_rule(self, curvatures):
        return CONVEX if self.kind == "max" else CONCAVE

    def _forward(self, vals):
        a = np.asarray(vals[0], dtype=float)
        reduce = np.max if self.kind == "max" else np.min
        return np.reshape(reduce(a, axis=self.axes, keepdims=True), self._shape)

    def __pow__(self, power):
        return Expression.__pow__(self, power)

    def entrywise(self, bound):
        """The affine pair ``(entries, bound broadcast to them)`` of ``max(e) <= bound`` / ``min(e) >= bound``."""
        from .affine import _reshape as reshape

        bound = as_expression(bound)
        try:
            out_shape = np.broadcast_shapes(bound.shape, self.shape)
        except ValueError:
            raise ModelError(f"{self.call}: the bound of shape {bound.shape} does not broadcast to "
                             f"{self.shape}") from None
        if out_shape != self.shape:
            raise ModelError(f"{self.call}: the bound of shape {bound.shape} broadcasts beyond the shape "
                             f"{self.shape} of {self.call}")
        if bound.size > 1 and bound.shape != self.kept_shape:
            # the bound of each reduced slice, placed along the reduced axes: broadcasts over the slice
            bound = reshape(bound + np.zeros(self.shape), self.kept_shape)
        return self.args[0], bound


def max(expr, axis=None, keepdims=False):  # noqa: A001 - mirrors numpy.max / cvxpy.max
    """The largest entry (over ``axis``): ``fm.max(e) <= t`` is ``e <= t`` entrywise; refused in objectives.

    ``fm.max(fm.abs(e))`` is ``fm.norm_inf(e)`` (an exact rewrite).
    """
    expr = as_expression(expr)
    if isinstance(expr, NormAtom) and expr.kind == "abs" and axis is None and not keepdims:
        return norm_of_abs(expr, "linf", "max")
    return EntryExtremumAtom(expr, "max", axis, keepdims, _call("max", expr, *_axis_text(axis)))


def min(expr, axis=None, keepdims=False):  # noqa: A001 - mirrors numpy.min / cvxpy.min
    """The smallest entry (over ``axis``): ``fm.min(e) >= t`` is ``e >= t`` entrywise; refused in objectives."""
    expr = as_expression(expr)
    return EntryExtremumAtom(expr, "min", axis, keepdims, _call("min", expr, *_axis_text(axis)))


def _axis_text(axis):
    return [] if axis is None else [f"axis={axis!r}"]


class PiecewiseAtom(NormAtom):
    """``maximum(a, b, ...)`` or ``minimum(a, b, ...)`` of affine pieces (NumPy broadcasting): bounds, not terms.

    The maximum's epigraph is the intersection of its pieces' (``maximum(a,
    b) <= t`` is exactly ``a <= t`` and ``b <= t``, entrywise), and likewise
    ``minimum(a, b) >= t`` is every piece ``>= t``: an affine system, which
    :class:`~fwmodel.expressions.constraints.Inequality` builds from
    :meth:`pieces`. The other sides (``maximum(...) >= t``: some piece
    reaches t) are unions of half-spaces, not convex, refused. Not smooth
    (a kink where two pieces meet): refused in objectives, as the norms are.
    """

    def __init__(self, args, kind, call, advice):
        args = [as_expression(a) for a in args]
        if len(args) < 2:
            raise ModelError(f"{call}: {kind} takes at least two arguments (CVXPY's too); for the "
                             f"{'largest' if kind == 'maximum' else 'smallest'} entry of one expression write "
                             f"fm.{kind[:3]}(e)")
        # maximum(maximum(a, b), c) is maximum(a, b, c): its pieces are the inner one's and c
        args = [p for a in args for p in (a.args if isinstance(a, PiecewiseAtom) and a.kind == kind else [a])]
        for a in args:
            if not a.is_affine():
                raise ModelError(f"{call}: each argument must be affine, but {short_repr(a)} is {a.curvature}; "
                                 f"only {kind} of affine pieces bounded by t is a set of entrywise bounds")
        try:
            shape = np.broadcast_shapes(*(a.shape for a in args))
        except ValueError:
            raise ModelError(f"{call}: the arguments' shapes {', '.join(str(a.shape) for a in args)} do not "
                             "broadcast") from None
        Expression.__init__(self, args, shape)
        self.kind, self.call, self.advice = kind, call, advice
        self.set_name = "fm.Box"

    def _curvature_rule(self, curvatures):
        return CONVEX if self.kind == "maximum" else CONCAVE

    def _forward(self, vals):
        pick = np.maximum if self.kind == "maximum" else np.minimum
        out = np.asarray(vals[0], dtype=float)
        for v in vals[1:]:
            out = pick(out, np.asarray(v, dtype=float))
        return np.broadcast_to(out, self._shape).copy()

    def __pow__(self, power):
        return Expression.__pow__(self, power)

    def pieces(self, bound, text):
        """The pieces broadcast to their common shape with ``bound``, and that shape (``maximum <= bound`` is
        every piece ``<= bound`` there, entrywise; ``minimum >= bound`` every piece ``>= bound``)."""
        try:
            shape = np.broadcast_shapes(bound.shape, self.shape)
        except ValueError:
            raise ModelError(f"{text}: the bound of shape {bound.shape} does not broadcast to the shape "
                             f"{self.shape} of {self.call}") from None
        return [a if a.shape == shape else a + np.zeros(shape) for a in self.args], shape


def maximum(*args):
    """CVXPY's ``maximum(a, b, ...)`` (entrywise, broadcast): ``maximum(a, b) <= t`` is ``a <= t`` and
    ``b <= t``; refused in objectives (not smooth)."""
    call = f"maximum({', '.join(short_repr(as_expression(a), 60) for a in args)})"
    return PiecewiseAtom(args, "maximum", call, f"as a constraint write {call} <= t (each argument <= t, entrywise), "
                                                f"or bound its sum, fm.sum({call}) <= t (t data); fm.log_sum_exp is "
                                                "a smooth surrogate.")


def minimum(*args):
    """CVXPY's ``minimum(a, b, ...)`` (entrywise, broadcast): ``minimum(a, b) >= t`` is ``a >= t`` and
    ``b >= t``; refused in objectives (not smooth)."""
    call = f"minimum({', '.join(short_repr(as_expression(a), 60) for a in args)})"
    return PiecewiseAtom(args, "minimum", call, f"as a constraint write {call} >= t (each argument >= t, "
                                                f"entrywise), or bound its sum, fm.sum({call}) >= t (t data).")


def pos(expr):
    """CVXPY's ``pos(e) = maximum(e, 0)``: ``pos(e) <= t`` is ``e <= t`` and ``0 <= t``; refused in objectives.

    ``fm.sum(fm.pos(e)) <= t`` (t data) is the hinge budget
    (:class:`~fwmodel.expressions.constraints.HingeBudget`)."""
    expr = as_expression(expr)
    call = _call("pos", expr)
    return PiecewiseAtom([expr, 0.0], "maximum", call, f"as a constraint write {call} <= t ({short_repr(expr)} <= t "
                                                       f"and 0 <= t, entrywise), or bound its sum, fm.sum({call}) <= t "
                                                       "(t data, a hinge budget); as a penalty, fm.logistic(k * e) / k "
                                                       "is a smooth surrogate.")


def neg(expr):
    """CVXPY's ``neg(e) = maximum(-e, 0)``: ``neg(e) <= t`` is ``-e <= t`` and ``0 <= t``; refused in objectives.

    ``fm.sum(fm.neg(e)) <= t`` (t data) is a shortfall budget
    (:class:`~fwmodel.expressions.constraints.HingeBudget`)."""
    expr = as_expression(expr)
    call = _call("neg", expr)
    return PiecewiseAtom([-expr, 0.0], "maximum", call, f"as a constraint write {call} <= t ({short_repr(expr)} >= "
                                                        f"-t and 0 <= t, entrywise), or bound its sum, fm.sum({call}) "
                                                        "<= t (t data); as a penalty, fm.logistic(-k * e) / k is a "
                                                        "smooth surrogate.")
