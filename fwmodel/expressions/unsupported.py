"""CVXPY atoms that FW-AL cannot take, each refused with a ModelError that says why and what to write.

A model ported from CVXPY (``import fwmodel as cp``) may call atoms that have
no place in FW-AL: the method needs an objective whose gradient is Lipschitz
on the sets (Gidel et al. 2018, Assumption on f; Frank-Wolfe steps use the
gradient) and sets with a linear minimization oracle. A kink (``ptp``,
``sum_largest``) or a gradient unbounded at the boundary of the sets Frank-Wolfe
visits (``log``, ``sqrt``, ``entr``: Frank-Wolfe's vertices sit on that
boundary) breaks the first; an atom bounded by a constraint needs a set with
an LMO, which some have (``tv``: an L1 ball on differences) and others do
not (``lambda_max``). Calling one of these names raises at once, naming the
atom, the reason, and the alternative where there is one, instead of
Python's ``AttributeError``.

(``pos``, ``neg``, ``maximum`` and ``minimum`` have a kink too, but bounded
on their convex side they are sets of entrywise bounds, so they live in
:mod:`fwmodel.expressions.nonsmooth` with the norms: constraints, refused
in objectives.)
"""
from __future__ import annotations

from ..errors import ModelError
from .core import Expression, short_repr

KINK = "it is not smooth (a kink), and FW-AL needs an objective whose gradient is Lipschitz on the sets"


def unbounded(where):
    """The reason for an atom whose gradient blows up at ``where`` (the boundary of its domain)."""
    return (f"its gradient is unbounded at {where}, on the boundary of its domain, where Frank-Wolfe's vertices lie, "
            "so FW-AL's steps and rate do not hold")


NO_SET = "as a constraint it needs a set with a linear minimization oracle, and fwmodel has no set for it"
SMOOTH_ON_SETS = ("if the constraint sets keep the argument away from that boundary (e.g. fm.Box with a positive "
                  "lower bound), write the formula with fm.smooth(sympy formula, {z: expr})")

#: name -> (why FW-AL cannot take it, what to write instead)
REFUSED = {
    "sum_largest": (KINK + "; " + NO_SET, "bound each entry with e <= t (fm.max(e) <= t) instead, if that is "
                                          "the model"),
    "sum_smallest": (KINK + "; " + NO_SET, "bound each entry with e >= t (fm.min(e) >= t) instead, if that is "
                                           "the model"),
    "cvar": (KINK + "; " + NO_SET, None),
    "ptp": (KINK, "bound the entries with fm.Box(expr, lower, upper)"),
    "cummax": (KINK, "bound the entries with fm.Box(expr, lower, upper)"),
    "dotsort": (KINK + "; " + NO_SET, None),
    "mixed_norm": (KINK + "; " + NO_SET + " (a ball of mixed norms)",
                   "bound each group with its own fm.norm(group, 2) <= t"),
    "sigma_max": (KINK + "; " + NO_SET + " (a spectral-norm ball: its LMO needs a full SVD)",
                  "bound the nuclear norm with fm.normNuc(X) <= t (fm.TraceNormBall) or the Frobenius norm with "
                  "fm.norm(X, 'fro') <= t (fm.L2Ball), if either is the model"),
    "lambda_max": (KINK + "; " + NO_SET + " (lambda_max(X) <= t is X << t I)",
                   "for X PSD, fm.trace(X) <= t bounds lambda_max(X) by t (a PSD trace ball, a different set)"),
    "lambda_min": (KINK + "; " + NO_SET + " (lambda_min(X) >= t is X >> t I)", "X >> 0 with fm.trace(X) <= r is "
                                                                                 "the PSD set fwmodel has"),
    "lambda_sum_largest": (KINK + "; " + NO_SET, None),
    "lambda_sum_smallest": (KINK + "; " + NO_SET, None),
    "log": (unbounded("z = 0"), SMOOTH_ON_SETS + ", e.g. sympy.log(z)"),
    "log1p": (unbounded("z = -1"), SMOOTH_ON_SETS + ", e.g. sympy.log(1 + z)"),
    "entr": (unbounded("z = 0"), SMOOTH_ON_SETS + ", e.g. -z * sympy.log(z)"),
    "rel_entr": (unbounded("x = 0 or y = 0"),
                 SMOOTH_ON_SETS + ", e.g. z * sympy.log(z / w)"),
    "kl_div": (unbounded("x = 0 or y = 0"),
               SMOOTH_ON_SETS + ", e.g. z * sympy.log(z / w) - z + w"),
    "sqrt": (unbounded("z = 0"), "for sqrt(fm.sum_squares(e)) <= t write fm.norm(e, 2) <= t; in an objective, "
                                 "minimize fm.sum_squares(e) instead; " + SMOOTH_ON_SETS),
    "inv_pos": (unbounded("z = 0"), SMOOTH_ON_SETS + ", e.g. 1 / z"),
    "geo_mean": (unbounded("a zero entry"), SMOOTH_ON_SETS),
    "harmonic_mean": (unbounded("a zero entry"), SMOOTH_ON_SETS),
    "log_det": (unbounded("a singular X") + " (and the vertices of PSD sets are rank one, singular)", None),
    "tr_inv": (unbounded("a singular X"), None),
    "matrix_frac": (unbounded("a singular P"),
                    "with a constant P, write fm.quad_form(x, inv(P))"),
    "std": (unbounded("zero variance"),
            "minimize the variance fm.sum_squares(x - fm.mean(x)) / (n - ddof) instead (smooth)"),
    "prod": ("it is neither convex nor concave in general (FW-AL needs a convex objective)", SMOOTH_ON_SETS),
    "loggamma": (unbounded("z = 0"), SMOOTH_ON_SETS + ", e.g. sympy.loggamma(z)"),
    "log_normcdf": ("fwmodel has no atom for it", "write it with fm.smooth(sympy formula, {z: expr}), e.g. "
                                                  "sympy.log(sympy.erfc(-z / sympy.sqrt(2)) / 2)"),
    "one_minus_pos": (unbounded("z = 1"), SMOOTH_ON_SETS),
    "inv_prod": (unbounded("a zero entry"), SMOOTH_ON_SETS),
}


def _refusal(name, why, instead):
    def refused(*args, **kwargs):
        shown = ", ".join(short_repr(a, 60) if isinstance(a, Expression) else "..." for a in args)
        message = f"{name}({shown}) (CVXPY's cp.{name}) is not supported by fwmodel: {why}"
        if instead:
            message += f"; {instead}"
        raise ModelError(message)

    refused.__name__ = refused.__qualname__ = name
    refused.__doc__ = f"Refused (CVXPY's ``{name}``): {why}." + (f" Instead: {instead}." if instead else "")
    return refused


for _name, (_why, _instead) in REFUSED.items():
    globals()[_name] = _refusal(_name, _why, _instead)

__all__ = list(REFUSED)
