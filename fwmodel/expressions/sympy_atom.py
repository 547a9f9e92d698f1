"""User-defined smooth atoms written in SymPy: :func:`smooth`.

``fm.smooth(formula, {symbol: expression, ...})`` turns a SymPy formula into
an atom that behaves like the built-in ones (``fm.logistic``, ``fm.square``,
...): it has a value, a gradient for the reverse pass of
:class:`~fwmodel.expressions.evaluate.SmoothFunction`, a second directional
derivative for the curvature pass, and a DCP curvature label.

What happens when an atom is built, once per distinct formula:

1. **Validation.** The formula must be a SymPy expression (strings are
   refused: turning a string into a formula means evaluating it), real, and
   made of differentiable functions: ``Abs``, ``Max``, ``Min``,
   ``Piecewise``, ``sign``, ``floor``, ``ceiling``, ``Heaviside`` and their
   kin are refused, because FW-AL needs the gradient everywhere.
2. **Derivatives.** Each symbol is replaced by a real SymPy ``Dummy`` (that
   keeps the user's sign assumptions such as ``positive=True``); the gradient
   and the Hessian are derived symbolically, and the value, the gradient and
   the Hessian are compiled to NumPy with ``sympy.lambdify`` (with common
   subexpression elimination).
3. **Convexity.** The second derivative (the Hessian's principal minors for
   two or three symbols) is simplified and its sign asked of SymPy's
   assumption system on the real line (or on the half line the symbol's
   assumptions declare). A proven sign gives "convex" or "concave". When
   SymPy cannot decide, the curvature is evaluated at sample points: a
   negative value somewhere and a positive one elsewhere prove the function
   neither convex nor concave (its DCP curvature is then "unknown", so
   ``fm.Minimize`` and ``fm.Maximize`` refuse it); otherwise a warning says
   the check was inconclusive and the atom is treated as convex (as concave
   when only negative curvature was seen). A formula with zero second
   derivative is affine.
4. **Composition.** DCP rules as for built-in atoms: a convex function of
   affine arguments is convex; a convex argument is accepted where SymPy
   proves the function nondecreasing in it (a concave one where
   nonincreasing), and symmetrically for concave functions.

Elementwise use: every symbol stands for one entry; the mapped expressions
broadcast (NumPy rules) to the shape of the result. Mapping several symbols
to scalar expressions gives a scalar function of several variables.

Limits: the compiled functions are the formula as written, so
``log(1 + exp(z))`` overflows for ``z > 709`` where ``fm.logistic`` does
not; and a function defined only on part of the line (``log``, ``sqrt``)
must be kept there by the constraint sets (declare the symbol
``positive=True`` so that the convexity check works on the right domain).

Implied domain. Where SymPy finds the formula real only on one interval of
a symbol (``z**1.5``, ``sqrt(z)``, ``log(z)``: ``z >= 0``; the closure of
``sympy.calculus.util.continuous_domain``), the compiler keeps the atom's
argument there, as CVXPY's DCP domain (:func:`implied_domain_constraints`):
on an elementwise map of a variable the domain becomes entry bounds,
intersected with the variable's box, so every iterate and every FW vertex
lies in it; on another affine argument the sets must already keep it there
(checked, else a ModelError saying to tie the argument to a bounded
variable); on a non-affine argument it is a ModelError. Domains that are not
one interval (``1 / z``: two half lines) or depend on other symbols are not
added.
"""
from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Mapping

import numpy as np

from ..errors import ModelError
from .atoms import Atom
from .core import (
    AFFINE,
    CONCAVE,
    CONSTANT,
    CONVEX,
    UNKNOWN,
    Expression,
    add_curvatures,
    as_expression,
    broadcast_shapes,
    scale_curvature,
    short_repr,
    uniform_value,
)

#: Sign assumptions of a user symbol that carry over to the real dummy.
_SIGN_ASSUMPTIONS = ("positive", "nonnegative", "negative", "nonpositive")
#: Points where an undecided curvature is sampled (filtered by the domain).
_SAMPLE_POINTS = (-10.0, -3.0, -1.0, -0.5, -0.1, 0.0, 0.1, 0.5, 1.0, 3.0, 10.0)
#: Symbolic PSD proofs (principal minors) are tried up to this many symbols.
_MAX_SYMBOLIC_MINORS = 3
#: Advice appended to the "could not decide" warnings.
_DOMAIN_HINT = ("If the function is only defined on part of the line, declare the symbol's sign "
                "(e.g. sympy.Symbol('z', positive=True)) so that the check runs there.")
#: Relative size below which a sampled curvature counts as zero.
_SAMPLE_TOL = 1e-10


def _refused_functions(sp):
    """SymPy function classes that are not differentiable everywhere, with advice."""
    kink = "it has a kink, so the objective would not be smooth"
    jump = "it jumps, so the objective would not be smooth (or its gradient is zero almost everywhere)"
    return {
        sp.Abs: kink + "; bound |z| with a set (fm.L1Ball, fm.LinfBall, fm.Box) or use sqrt(z**2 + eps**2)",
        sp.Max: kink + "; bound the entries with fm.Box, or use a log-sum-exp surrogate",
        sp.Min: kink + "; bound the entries with fm.Box, or use a log-sum-exp surrogate",
        sp.Piecewise: "a piecewise definition is not differentiable at its breakpoints in general; "
                      "use a built-in atom such as fm.huber, or a smooth formula",
        sp.sign: jump,
        sp.floor: jump,
        sp.ceiling: jump,
        sp.frac: jump,
        sp.Mod: jump,
        sp.Heaviside: jump,
        sp.DiracDelta: "it is a distribution, not a function",
        sp.re: "formulas must be real-valued: complex parts have no place here",
        sp.im: "formulas must be real-valued: complex parts have no place here",
        sp.arg: "formulas must be real-valued: complex parts have no place here",
        sp.conjugate: "formulas must be real-valued: complex parts have no place here",
    }


def _check_formula(sp, expr, where, names=None):
    """Refuse what cannot be compiled into a smooth real function (ModelError).

    ``names`` maps internal dummies back to the user's symbols for messages.
    """
    from sympy.core.function import AppliedUndef

    for cls, advice in _refused_functions(sp).items():
        found = expr.atoms(cls)
        if found:
            example = sorted(str(e.xreplace(names or {})) for e in found)[0]
            place = example if example == where else f"{example} in {where}"
            raise ModelError(f"fm.smooth: {place} is not differentiable: {advice}")
    undefined = expr.atoms(AppliedUndef)
    if undefined:
        raise ModelError(
            f"fm.smooth: {sorted(map(str, undefined))[0]} in {where} is an undefined function; "
            "write the formula with known functions (sp.exp, sp.log, powers, ...)"
        )
    for cls in (sp.Derivative, sp.Integral, sp.Sum, sp.Product):
        if expr.atoms(cls):
            raise ModelError(
                f"fm.smooth: {where} holds an unevaluated {cls.__name__}; call .doit() on the formula first"
            )
    if expr.has(sp.I):
        raise ModelError(f"fm.smooth: {where} is complex (it contains I); formulas must be real-valued")
    if expr.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise ModelError(f"fm.smooth: {where} contains an infinity or NaN")


class _Analysis:
    """Everything derived from one formula: compiled functions and curvature facts.

    Built once per (formula, symbols) pair and shared by all atoms that use it.
    """

    def __init__(self, formula, symbols):
        import sympy as sp

        self.formula = formula
        self.symbols = symbols
        self.text = str(formula)
        self.dummies = tuple(
            sp.Dummy(s.name, real=True, **{a: True for a in _SIGN_ASSUMPTIONS if getattr(s, "is_" + a)})
            for s in symbols
        )
        self._to_user = dict(zip(self.dummies, symbols))
        f = formula.xreplace(dict(zip(symbols, self.dummies)))
        # With real symbols SymPy may rewrite the formula (sqrt(z**2) -> Abs(z)): check again.
        _check_formula(sp, f, f"{self.text} (for real {', '.join(map(str, symbols))})", self._to_user)
        self.expr = f
        k = len(self.dummies)
        self.gradient = tuple(sp.diff(f, d) for d in self.dummies)
        self.pairs = tuple((i, j) for i in range(k) for j in range(i, k))
        self.hessian = tuple(sp.diff(self.gradient[i], self.dummies[j]) for i, j in self.pairs)
        for g in self.gradient:
            _check_formula(sp, g, f"the derivative of {self.text}", self._to_user)

        self._compile_functions()
        self.quadratic = bool(f.is_polynomial(*self.dummies)) and sp.Poly(f, *self.dummies).total_degree() <= 2
        self.kind, self.reason, self.warning = self._classify(sp)
        self._monotone = {}
        # For an affine formula: the constant slopes, which decide the composition rule.
        self.slopes = None
        if self.kind == AFFINE:
            self.slopes = tuple(float(sp.simplify(g)) for g in self.gradient)

    def _compile_functions(self):
        """The value, the gradient and the Hessian entries as NumPy functions (``sympy.lambdify``)."""
        import sympy as sp

        def compile_(exprs):
            return sp.lambdify(self.dummies, exprs, modules=["scipy", "numpy"], cse=True)

        self.value_fn = compile_(self.expr)
        self.grad_fn = compile_(list(self.gradient))
        self.hess_fn = compile_(list(self.hessian))

    # ------------------------------------------------------------ pickling
    # The lambdified functions are generated code that pickle cannot store:
    # keep the SymPy expressions (which pickle) and compile them again on load.
    _COMPILED = ("value_fn", "grad_fn", "hess_fn")

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in self._COMPILED}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._compile_functions()

    # ------------------------------------------------------------ convexity
    def _domain_text(self):
        parts = []
        for s, d in zip(self.symbols, self.dummies):
            dom = "real"
            for a in _SIGN_ASSUMPTIONS:
                if getattr(d, "is_" + a):
                    dom = a
                    break
            parts.append(f"{s} {dom}")
        return ", ".join(parts)

    def _classify(self, sp):
        """(kind, reason, warning): kind is CONVEX, CONCAVE, AFFINE or UNKNOWN."""
        k = len(self.dummies)
        if all(_is_zero(sp, h) for h in self.hessian):
            return AFFINE, "the second derivative is zero (the formula is affine)", None
        domain = self._domain_text()
        if k == 1:
            d2 = self.hessian[0]
            sign = _decide_sign(sp, d2)
            what = f"f''({self.symbols[0]}) = {_show(sp, d2.xreplace(self._to_user))}"
            if sign == "nonneg":
                return CONVEX, f"{what} >= 0 for {domain}", None
            if sign == "nonpos":
                return CONCAVE, f"{what} <= 0 for {domain}", None
        elif k <= _MAX_SYMBOLIC_MINORS:
            if self._minors_sign(sp, 1.0):
                return CONVEX, f"the Hessian is positive semidefinite for {domain} (all principal minors >= 0)", None
            if self._minors_sign(sp, -1.0):
                return CONCAVE, f"the Hessian is negative semidefinite for {domain}", None
        # SymPy could not decide: look for counterexamples at sample points.
        neg, pos = self._sample_curvature()
        if neg is not None and pos is not None:
            if k > 1 and neg[0] == pos[0]:
                why = f"the Hessian at ({neg[0]}) has eigenvalues {neg[1]} < 0 and {pos[1]} > 0"
            else:
                why = " and ".join(f"{p} {rel} 0" for p, rel in ((_label(neg, k), "<"), (_label(pos, k), ">")))
            return UNKNOWN, f"neither convex nor concave: {why}", None
        if neg is not None:
            neg = _label(neg, k)
            return CONCAVE, f"not convex ({neg} < 0); concavity not proven", (
                f"fm.smooth: SymPy could not decide the curvature of {self.text} for {domain}; it is not "
                f"convex ({neg} < 0), so it is treated as concave without proof. " + _DOMAIN_HINT)
        return CONVEX, "convexity not proven; no negative curvature at the sample points", (
            f"fm.smooth: SymPy could not prove {self.text} convex for {domain}; no negative curvature was "
            "found at sample points, so it is treated as convex without proof. " + _DOMAIN_HINT)

    def _minors_sign(self, sp, sign):
        """True when every principal minor of sign * Hessian is provably >= 0 (PSD)."""
        k = len(self.dummies)
        H = sp.zeros(k, k)
        for (i, j), h in zip(self.pairs, self.hessian):
            H[i, j] = H[j, i] = sign * h
        for r in range(1, k + 1):
            for rows in itertools.combinations(range(k), r):
                minor = H.extract(list(rows), list(rows)).det()
                if _decide_sign(sp, minor) != "nonneg" and not _is_zero(sp, minor):
                    return False
        return True

    def _sample_points(self):
        """A fixed set of points of the symbols' domain (real, or a half line)."""
        per_symbol = []
        for d in self.dummies:
            pts = [p for p in _SAMPLE_POINTS
                   if not ((d.is_positive and p <= 0) or (d.is_nonnegative and p < 0)
                           or (d.is_negative and p >= 0) or (d.is_nonpositive and p > 0))]
            per_symbol.append(pts)
        if len(per_symbol) == 1:
            return [(p,) for p in per_symbol[0]]
        rng = np.random.default_rng(0)
        return [tuple(float(rng.choice(pts)) for pts in per_symbol) for _ in range(100)]

    def _sample_curvature(self):
        """A negative and a positive curvature found, each (point text, value text) or None."""
        neg = pos = None
        k = len(self.dummies)
        for point in self._sample_points():
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    value = complex(np.asarray(self.value_fn(*point), dtype=complex))
                    entries = [complex(np.asarray(h, dtype=complex)) for h in self.hess_fn(*point)]
                except (ValueError, TypeError, ZeroDivisionError, OverflowError):
                    continue
            if any(not np.isfinite(e) or abs(e.imag) > 1e-12 * max(1.0, abs(e)) for e in [value, *entries]):
                continue  # outside the function's domain
            H = np.zeros((k, k))
            for (i, j), e in zip(self.pairs, entries):
                H[i, j] = H[j, i] = e.real
            eig = np.linalg.eigvalsh(H)
            scale = max(1.0, float(np.max(np.abs(eig))))
            at = f"{point[0]:g}" if k == 1 else ", ".join(f"{s} = {p:g}" for s, p in zip(self.symbols, point))
            if neg is None and eig[0] < -_SAMPLE_TOL * scale:
                neg = (at, f"{eig[0]:.4g}")
            if pos is None and eig[-1] > _SAMPLE_TOL * scale:
                pos = (at, f"{eig[-1]:.4g}")
            if neg is not None and pos is not None:
                break
        return neg, pos

    # --------------------------------------------------------------- domain
    @property
    def domains(self):
        """Per symbol, the closed interval ``(lo, hi)`` (floats, infinite ends allowed) where the formula is
        real, or None: the closure of SymPy's ``continuous_domain`` of the formula in that symbol on the
        real line (``z**1.5``, ``sqrt(z)``: ``[0, inf)``; ``log(z)``: ``(0, inf)``, closed to ``[0, inf)``;
        ``log(1 - z**2)``: ``[-1, 1]``). None where it is the whole line, is not one interval (``1 / z``:
        two half lines, whose hull is the line), or SymPy cannot say (a formula of several symbols whose
        domain in one depends on the others). Computed once, on first use (the compiler's)."""
        found = self.__dict__.get("_domains")
        if found is None:
            found = self.__dict__["_domains"] = tuple(self._domain(i) for i in range(len(self.dummies)))
        return found

    def _domain(self, i):
        import sympy as sp
        from sympy.calculus.util import continuous_domain

        d = self.dummies[i]
        plain = sp.Dummy(d.name, real=True)  # the formula's own domain, not the user's sign declaration
        f = self.expr.xreplace({d: plain})
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dom = continuous_domain(f, plain, sp.S.Reals)
        except Exception:  # (SymPy cannot decide: no implied domain)
            return None
        if dom == sp.S.Reals or not isinstance(dom, sp.Interval) or dom.free_symbols:
            return None
        lo, hi = float(dom.inf), float(dom.sup)
        return None if (lo == -np.inf and hi == np.inf) else (lo, hi)

    # --------------------------------------------------------- monotonicity
    def monotonicity(self, i):
        """+1 (provably nondecreasing in symbol i), -1 (nonincreasing) or 0 (unknown)."""
        if i not in self._monotone:
            import sympy as sp

            sign = _decide_sign(sp, self.gradient[i])
            self._monotone[i] = {"nonneg": 1, "nonpos": -1}.get(sign, 0)
        return self._monotone[i]


def _label(found, k):
    """Text for a sampled curvature: "f''(-1) = -6" or "the Hessian at (...) has eigenvalue -1"."""
    at, value = found
    return f"f''({at}) = {value}" if k == 1 else f"the Hessian at ({at}) has eigenvalue {value}"


def _is_zero(sp, e):
    if e.is_zero:
        return True
    return sp.simplify(e) == 0


def _decide_sign(sp, e):
    """'nonneg', 'nonpos' or None, from SymPy's assumptions (after simplifying if needed)."""
    for candidate in (e, None):
        if candidate is None:
            candidate = sp.simplify(e)
        if candidate.is_nonnegative:
            return "nonneg"
        if candidate.is_nonpositive:
            return "nonpos"
    return None


def _show(sp, e):
    """Short text of a (simplified) derivative for messages."""
    text = str(sp.simplify(e))
    return text if len(text) <= 80 else text[:77] + "..."


@functools.lru_cache(maxsize=256)
def _analyze(formula, symbols):
    # Cached: a model built in a loop compiles each formula once.
    return _Analysis(formula, symbols)


class SympyAtom(Atom):
    """A smooth atom defined by a SymPy formula; build it with :func:`smooth`.

    Attributes for inspection: ``formula`` (the SymPy expression),
    ``symbols`` (in argument order), ``gradient`` (the symbolic partial
    derivatives, in real dummies), ``convexity`` ("convex", "concave",
    "affine" or "unknown") and ``convexity_reason`` (why).
    """

    name = "smooth"

    def __init__(self, analysis, args, shape):
        self._an = analysis
        super().__init__(args, shape)
        self.quadratic = analysis.quadratic

    # ------------------------------------------------------------ inspection
    @property
    def formula(self):
        return self._an.formula

    @property
    def symbols(self):
        return self._an.symbols

    @property
    def gradient(self):
        return self._an.gradient

    @property
    def convexity(self):
        return self._an.kind

    @property
    def convexity_reason(self):
        return self._an.reason

    # ------------------------------------------------------------ numerics
    def _as_output(self, value):
        value = np.asarray(value, dtype=float)
        if value.shape != self._shape:
            value = np.array(np.broadcast_to(value, self._shape))
        if self._shape == ():
            return np.float64(value)
        return value

    def _forward_aux(self, vals):
        with np.errstate(all="ignore"):  # the engine judges non-finite values
            return self._as_output(self._an.value_fn(*vals)), None

    def _backward(self, adj, vals, out, aux, needs):
        G, s = adj
        w = uniform_value(G)
        with np.errstate(all="ignore"):
            partials = self._an.grad_fn(*vals)
        results = []
        for arg, need, d in zip(self.args, needs, partials):
            if not need:
                results.append(None)
                continue
            d = np.asarray(d, dtype=float)
            if w is not None:
                scale = s * w
            else:
                d, scale = np.multiply(G, d), s
            if d.shape != self._shape:  # a constant derivative, or a broadcast argument
                d = np.broadcast_to(d, self._shape)
            results.append((_unbroadcast(d, arg.shape), scale))
        return results

    def _second(self, vals, out, aux, tangents):
        # d^2/dt^2 f(u + t du) = sum_ij H_ij du_i du_j, entrywise.
        total = np.zeros(self._shape)
        # at a domain's edge a Hessian entry is infinite (z**1.5 at 0) and inf * 0 is NaN: the engine
        # judges non-finite curvatures, so no warning here
        with np.errstate(all="ignore"):
            entries = self._an.hess_fn(*vals)
            for (i, j), h in zip(self._an.pairs, entries):
                ti, tj = tangents[i], tangents[j]
                if ti is None or tj is None:  # a constant argument has no tangent
                    continue
                term = np.asarray(h, dtype=float) * ti * tj
                total = total + (term if i == j else 2.0 * term)
        return self._as_output(total)

    # ------------------------------------------------------------ DCP
    def _curvature_rule(self, curvatures):
        if all(c == CONSTANT for c in curvatures):
            return CONSTANT
        an = self._an
        kind = an.kind
        if kind == UNKNOWN:
            return UNKNOWN
        if kind == AFFINE:
            signs = ["nonneg" if a > 0 else ("nonpos" if a < 0 else "zero") for a in an.slopes]
            return add_curvatures(scale_curvature(c, sg) for c, sg in zip(curvatures, signs))
        for i, c in enumerate(curvatures):
            if c in (CONSTANT, AFFINE):
                continue
            if c == UNKNOWN:
                return UNKNOWN
            m = an.monotonicity(i)
            same = (c == kind)  # a convex argument of a convex function, or concave of concave
            if not ((same and m > 0) or (not same and m < 0)):
                return UNKNOWN
        return kind

    def _repr(self, texts):
        head = self._an.text
        if self._an.kind == UNKNOWN:
            head += " [neither convex nor concave]"
        mapping = ", ".join(f"{s}: {t}" for s, t in zip(self._an.symbols, texts))
        return f"smooth({head}, {{{mapping}}})"


def _interval_text(lo, hi):
    """``[0, oo)``, ``[-1, 1]``: a closed interval with infinite ends open."""
    return (f"{'(-oo' if lo == -np.inf else f'[{lo:g}'}, "
            f"{'oo)' if hi == np.inf else f'{hi:g}]'}")


def implied_domain_constraints(expr):
    """The constraints that keep every :class:`SympyAtom` of ``expr`` on its formula's domain (CVXPY's DCP
    domain: ``cp.power(x, 1.5)``, ``cp.log(x)`` and ``cp.sqrt(x)`` imply ``x >= 0``).

    For each atom and symbol whose argument has variables and whose formula is real only on an interval
    (:attr:`_Analysis.domains`), the bounds ``lo <= argument <= hi`` (the finite ends). On an elementwise map of
    a variable they are entry bounds, intersected with its box (the set keeps every iterate in the domain).
    Without them a set that reaches outside the domain (a box ``[-1, 1]`` for ``z**1.5``) keeps the FW gap,
    measured over the whole set, away from 0 where the optimum lies on the domain's boundary, and the solve
    never stops. On another affine argument (``A @ x``) a row would hold only in the limit (the objective is
    evaluated at points of the sets): the compiler checks that the sets keep the argument in the domain (then
    nothing is added) and raises a ModelError saying how to write it otherwise
    (``lowering._domain_row_holds``). A domain on an argument that is not affine (a concave argument of
    ``-log``) is neither a set nor rows: a ModelError, naming the atom.
    """
    found = []
    seen = set()

    def walk(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, SympyAtom):
            for sym, arg, dom in zip(node.symbols, node.args, node._an.domains):
                if dom is None or not arg._has_vars:
                    continue
                lo, hi = dom
                if not arg.is_affine():
                    span = _interval_text(lo, hi)
                    raise ModelError(
                        f"{short_repr(node)}: the formula is real only for {sym} in {span} (its domain, found by "
                        f"SymPy), and {sym} is mapped to {short_repr(arg)}, which is {arg.curvature}, not affine: "
                        f"fwmodel keeps an atom on its domain by bounds or rows on an affine argument only. Map "
                        f"{sym} to an affine expression (a variable t with constraints that tie it), or use a "
                        "formula defined on the whole line")
                span = _interval_text(lo, hi)
                pieces = ([arg >= lo] if lo > -np.inf else []) + ([arg <= hi] if hi < np.inf else [])
                for piece in pieces:
                    # (on a non-elementwise argument the compiler keeps no row: the sets must hold it already)
                    piece.implied_domain = (short_repr(node), str(sym), short_repr(arg), span)
                found.extend(pieces)
        for child in getattr(node, "args", ()):
            if isinstance(child, Expression):
                walk(child)

    walk(expr)
    return found


def _unbroadcast(arr, shape):
    """Sum ``arr`` over the axes that broadcasting added to an array of ``shape``."""
    if arr.shape == tuple(shape):
        return arr
    extra = arr.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and arr.shape[extra + i] != 1
    )
    return np.sum(arr, axis=axes).reshape(shape)


def smooth(formula, mapping):
    """A smooth atom written in SymPy, its derivatives derived symbolically.

    Parameters
    ----------
    formula : sympy.Expr
        A real, differentiable formula in one or several SymPy symbols, such
        as ``sp.log(1 + sp.exp(z))`` or ``sp.sqrt(1 + z**2) - 1``. It must be
        a SymPy object: strings are refused, since parsing one would evaluate
        it. Non-differentiable functions (``Abs``, ``Max``, ``Min``,
        ``Piecewise``, ``sign``, ``floor``, ``ceiling``, ``Heaviside``, ...)
        are refused with a ModelError.
    mapping : dict
        ``{symbol: expression}`` for every symbol of the formula, in argument
        order. Expressions are fwmodel expressions or constants (NumPy
        arrays, numbers, Parameters); their shapes broadcast (NumPy rules),
        the formula applies entrywise, and the result has the broadcast
        shape. Use ``fm.sum`` of it for a scalar objective.

    Returns
    -------
    Expression
        An atom usable anywhere a built-in atom is: in ``fm.Minimize`` when
        convex, in ``fm.Maximize`` when concave. Its attributes
        ``convexity`` and ``convexity_reason`` say what SymPy proved.

    Examples
    --------
    >>> import sympy as sp, numpy as np, fwmodel as fm
    >>> z = sp.Symbol("z")
    >>> x = fm.Variable(3)
    >>> loss = fm.smooth(sp.log(1 + sp.exp(z)), {z: np.ones((5, 3)) @ x})
    >>> loss.shape, loss.convexity
    ((5,), 'convex')

    Notes
    -----
    The convexity check runs on the real line, or on the half line that the
    symbol's assumptions declare (``sp.Symbol("z", positive=True)``). When
    SymPy cannot decide it, a warning says so and the function is treated
    as convex unless sample points prove otherwise; a function proven
    neither convex nor concave gets the DCP curvature "unknown", which
    ``fm.Minimize`` and ``fm.Maximize`` refuse.
    """
    import sympy as sp

    if isinstance(formula, (str, bytes)):
        raise ModelError(
            f"fm.smooth: the formula must be a SymPy expression, not the string {formula!r}; strings are not "
            "parsed (sympify would evaluate them). Build it with SymPy: z = sympy.Symbol('z'); "
            "fm.smooth(sympy.log(1 + sympy.exp(z)), {z: expr})"
        )
    if not isinstance(formula, sp.Expr):
        kind = "a SymPy relation or boolean" if isinstance(formula, sp.Basic) else type(formula).__name__
        raise ModelError(f"fm.smooth: the formula must be a SymPy expression (sympy.Expr), got {kind}: {formula!r}")
    if not isinstance(mapping, Mapping) or not mapping:
        raise ModelError(
            f"fm.smooth({formula}): the second argument must be a non-empty dict {{symbol: expression}}, "
            f"got {mapping!r}"
        )
    symbols, args = [], []
    for sym, target in mapping.items():
        if isinstance(sym, str) or not isinstance(sym, sp.Symbol):
            raise ModelError(
                f"fm.smooth({formula}): mapping keys must be SymPy symbols (sympy.Symbol), got {sym!r}"
            )
        if isinstance(target, sp.Basic):
            raise ModelError(
                f"fm.smooth({formula}): symbol {sym} is mapped to the SymPy object {target!r}; map each symbol "
                "to an fwmodel expression or to data (a number, a NumPy array, a Parameter)"
            )
        symbols.append(sym)
        args.append(target if isinstance(target, Expression) else as_expression(target))
    free = formula.free_symbols
    missing = sorted(map(str, free - set(symbols)))
    if missing:
        raise ModelError(
            f"fm.smooth({formula}): the symbol(s) {', '.join(missing)} are not in the mapping; map every symbol "
            "of the formula to an expression"
        )
    unused = [str(s) for s in symbols if s not in free]
    if unused:
        raise ModelError(f"fm.smooth({formula}): the mapped symbol(s) {', '.join(unused)} do not appear in the formula")
    _check_formula(sp, formula, str(formula))
    analysis = _analyze(formula, tuple(symbols))
    if analysis.warning:
        warnings.warn(analysis.warning, stacklevel=2)
    desc = f"fm.smooth({formula}, {{{', '.join(f'{s}: {short_repr(a)}' for s, a in zip(symbols, args))}}})"
    shape = broadcast_shapes(args, desc)
    return SympyAtom(analysis, args, shape)
