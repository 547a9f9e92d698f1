"""The infeasibility certificate: a lower bound on ||Mx - b|| over the sets, from their LMOs.

When the sets cannot meet the consistency constraints M x = b, FW-AL's dual
variable grows without bound (the dual step of eq. fwal keeps pushing along
the residual). The certificate turns that into the status "infeasible" with
a proof: for any direction w and any x in X = X_1 x ... x X_K,

    ||Mx - b|| >= <w, Mx - b> / ||w|| >= (sum_k min_{s in X_k} <(M'w)_k, s> - <w, b>) / ||w||,

one LMO call per block and direction. A positive bound above the
feasibility target (feas_tol times the feasibility scale, in the rows'
units: stopping.RowUnits) proves that no point of the sets meets the rows
to that tolerance.

The proof is only as good as the LMOs: one that misses its minimizer
overstates the bound. Two facts bound what a true certificate can say, and
a bound that breaks them is refused (:meth:`InfeasibilityCheck.sound`):

- the iterate x_t is a point of the sets (a convex combination of LMO
  vertices), so min_{x in X} ||Mx - b|| <= ||M x_t - b||: a bound above the
  iterate's own residual (beyond rounding) proves an LMO wrong, not the
  model infeasible. Measured: a warm-started assignment LMO on a residual
  direction of size 1e-17 returned a permutation 2e-17 above the minimum,
  and the bound, divided by ||w|| = 3e-17, read 0.707 at a feasible point
  whose residual was 3e-17;
- a residual at the rounding of the rows' arithmetic
  (``RESIDUAL_ROUNDING`` times the feasibility scale) is a feasible point
  up to rounding: nothing is left to prove there, whatever the LMOs say.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ModelError
from .stopping import GAP_ROUNDING, TERMS_ROUNDING
from .vector_ops import dot, norm


def _separations(blocks, Mop, b, candidates):
    """``(total, terms, ||w||)`` per usable direction w: total = sum_k min_{s in X_k} <(M'w)_k, s> - <w, b>
    (the bound times ||w||) and terms the sum of the magnitudes it is made of."""
    for w in candidates:
        w_norm = float(norm(w))
        if w_norm == 0 or not np.isfinite(w_norm):
            continue
        z = Mop.rmatvec(w)
        total = -dot(w, b)
        terms = abs(total)
        for blk in blocks:
            # an LMO that may miss its minimizer would overstate the bound: the trusted one
            term = blk.trusted_lmo(z[blk.slice]).dot(z[blk.slice])
            total += term
            terms += abs(term)
        yield total, terms, w_norm


def lower_digits(bound):
    """A positive lower bound shown with three significant digits, rounded down (``%.3g`` rounds to nearest:
    0.01787 read ">= 0.0179", above the true least violation)."""
    if not (bound > 0 and math.isfinite(bound)):
        return f"{bound:.3g}"
    step = 10.0 ** (math.floor(math.log10(bound)) - 2)
    return f"{math.floor(bound / step) * step:.3g}"


def infeasibility_bound(blocks, Mop, b, candidates, margin=None):
    """A certified lower bound on min_{x in X} ||Mx - b||, from the LMOs.

    For any direction w and any x in X, ||Mx - b|| >= <w, Mx - b> / ||w||
    >= (sum_k min_{s in X_k} <(M'w)_k, s> - <w, b>) / ||w||. A positive bound
    proves that the sets cannot meet the consistency constraints. Candidate
    directions: the residual and the dual variable (which grows along the
    infeasible direction when the problem is infeasible).

    A feasible model has a bound <= 0 exactly; what rounding can add
    (``TERMS_ROUNDING`` times the magnitudes of the terms, or ``margin``
    times them when given) is taken off, whatever the units of the rows.
    """
    margin = TERMS_ROUNDING if margin is None else margin
    return max([0.0] + [(total - margin * terms) / w_norm
                        for total, terms, w_norm in _separations(blocks, Mop, b, candidates)])


#: the rounding of a residual r = M x - b computed at a point of the sets, relative to the feasibility
#: scale S (stopping.StoppingRule: the largest of ||b||, ||M x_ref||, ||M s_ref|| and the points' sizes in
#: the rows' units). Each entry of fl(Mx - b) is within gamma_p (|M| |x| + |b|)_i of Mx - b (Higham,
#: Accuracy and Stability of Numerical Algorithms, Thm. 3.5; gamma_p ~ p eps for a row of p terms), and
#: the iterate, updated by convex combinations, leaves the sets by roundings of its own size: a few
#: thousand eps times S covers rows of thousands of terms. An allowance, not a proof (|M| |x| can exceed S
#: where the rows cancel): it decides only where a certificate is refused, never where one is given.
RESIDUAL_ROUNDING = 1e-12

#: at a point that meets (1)-(3), a bound above this fraction of the magnitudes of its terms still
#: proves the sets apart from the rows: the trusted LMOs are exact to their tolerance (a trace-norm
#: ball's Lanczos: 1e-6 of the top singular value), rounding is far below it
PROOF_MARGIN = 1e-5


class InfeasibilityCheck:
    """When to try the certificate during a solve, and what it concludes.

    The certificate costs one LMO call per block and direction (and it moves
    the warm starts of Lanczos-based LMOs), so it runs every ``every``
    iterations (0: never), only while the iterate is not feasible enough and
    feasibility is not improving: not below half the best value seen at the
    previous checks.
    """

    def __init__(self, blocks, Mop, b, every, copies_only=False):
        self.blocks, self.Mop, self.b = blocks, Mop, b
        self.every = every
        self.feas_at_check = None  # the best feasibility at the previous checks
        # rows that only tie copies of a variable to each other are in the variable's units, as the
        # feasibility scale is: no check at "optimal" (see :meth:`at_optimal`)
        self.check_at_optimal = bool(Mop.shape[0]) and bool(every) and not copies_only

    @staticmethod
    def sound(bound, r_norm, scale):
        """``bound`` where it can be a lower bound on min_{x in X} ||Mx - b|| seen from the iterate, else 0.

        ``r_norm``: the iterate's ||M x_t - b||; ``scale``: the feasibility scale. The iterate is a point
        of the sets, so a true bound is at most ``r_norm`` (up to ``RESIDUAL_ROUNDING * scale``): above
        that, an LMO missed its minimizer and the bound proves nothing. A bound within that rounding
        proves nothing either (the module docstring).
        """
        rounding = RESIDUAL_ROUNDING * scale
        if bound > r_norm + rounding or not bound > rounding:
            return 0.0
        return bound

    def at_optimal(self, r, y, scale=0.0):
        """The "infeasible" message for a point that meets the stopping tests while the LMOs prove that
        no point of the sets meets M x = b (a bound above ``PROOF_MARGIN`` of its terms), else None.

        The feasibility scale is one number for all rows: rows in units far apart (a row in units of
        1e-6 next to the rows tying two copies of its variable) have the small ones held to the large
        ones' size, and an infeasible model whose residual is small in those units met (3). One more
        certificate, at the point where the solve would stop, keeps such a model from "optimal".
        The iterate met (3) here, so the bound is held to its residual (:meth:`sound`, ``scale`` the
        feasibility scale): the certificate may only say that the rows' own units are too small
        for (3), never contradict the point that met it; and a residual at rounding level (a
        feasible point up to rounding, whose residual is no direction at all) is not tried.
        """
        if not self.check_at_optimal:
            return None
        r_norm = float(norm(r))
        if not r_norm > RESIDUAL_ROUNDING * scale:
            return None
        bound = infeasibility_bound(self.blocks, self.Mop, self.b, (r, y), margin=PROOF_MARGIN)
        bound = self.sound(bound, r_norm, scale)
        if bound > 0:
            return (f"no point of the sets satisfies the consistency constraints: "
                    f"||Mx - b|| >= {lower_digits(bound)} everywhere (certified by the LMOs; the iterate met "
                    f"feas_tol, the rows are in units far smaller than the feasibility scale)")
        return None

    def message(self, t, feas, target, r, y, proof_target=None, scale=0.0):
        """The "infeasible" status message when the sets are certified not to meet M x = b at iteration t, else None.

        ``target``: the ||Mx - b|| below which the iterate needs no check; ``proof_target`` (default
        ``target``): the lower bound on ||Mx - b|| over the sets that proves no point meets the
        feasibility test (stopping.StoppingRule.proof_target); ``feas``: the iterate's ||Mx - b||,
        which a true bound cannot exceed (:meth:`sound`, ``scale`` the feasibility scale).
        """
        proof_target = target if proof_target is None else proof_target
        due = self.Mop.shape[0] and self.every and t % self.every == 0 and t > 0 and feas > target
        if not due:
            return None
        stalled = self.feas_at_check is None or feas > 0.5 * self.feas_at_check
        self.feas_at_check = feas if self.feas_at_check is None else min(self.feas_at_check, feas)
        if not stalled:
            return None
        bound = self.sound(infeasibility_bound(self.blocks, self.Mop, self.b, (r, y)), feas, scale)
        if bound > proof_target:
            return (f"no point of the sets satisfies the consistency constraints: "
                    f"||Mx - b|| >= {lower_digits(bound)} everywhere (certified by the LMOs)")
        return None


#: a block's FW gap <g, x - s> below -LMO_MISS times the magnitudes of its terms
#: (sum_i |g_i x_i| + sum_i |g_i s_i|, which bound the rounding of both inner products and of the
#: iterate's drift out of the set) proves that s does not minimize <g, .>: far beyond rounding
#: (gamma_n ~ n eps of those magnitudes) and far below the gap of a maximizer (about the terms' size)
LMO_MISS = 1e-6


def refuse_missed_lmo(blocks, block_gaps, x, block_gradient, objective_scale, size_scale=0.0):
    """Stop the solve with a ModelError where a block's LMO returned no minimizer, else return None.

    x_k is a point of X_k (a convex combination of its LMO's vertices), so
    an exact LMO gives a FW gap <g_k, x_k - s_k> >= 0 up to rounding
    (paper Alg. 1: the gap is a max over X_k). One far below zero comes
    only from an LMO that does not minimize: a sign error (a maximizer),
    which otherwise stopped "optimal" at 5.0 for an optimum of 0, the FW
    gap at -10. Blocks whose LMO may miss by design (a trace-norm ball's
    Lanczos, ``Block.lmo_check``) are left to :func:`stopping.certifies`.

    ``block_gaps``: the measured gaps (None: not measured); ``block_gradient(k)``:
    block k's slice of the gradient of L(., y) at x. Only a gap below
    ``-GAP_ROUNDING * objective_scale`` (:func:`stopping.certifies`'s test,
    which the driver runs anyway) is looked at again: the block's LMO is
    called once more and the gap re-measured against ``LMO_MISS`` times
    the magnitudes of its terms, and against ``GAP_ROUNDING`` times ``||g_k||`` times ``size_scale`` (the
    largest norm of the points and vertices seen, :attr:`stopping.StoppingRule.feasibility_scale`): where
    x_k and the vertex are both at the origin up to rounding, their terms are rounding too (a PSD trace
    block at X = 0 with x_k's entries at 1e-17 gave -5.5e-19 against terms of 5.7e-18), while a maximizer's
    gap is about ||g_k|| times the set's size.
    """
    for k, gap in enumerate(block_gaps):
        blk = blocks[k]
        if gap is None or not gap < -GAP_ROUNDING * objective_scale or blk.lmo_check is not None:
            continue
        g = np.asarray(block_gradient(k), dtype=float)
        x_k = x[blk.slice]
        atom = blk.trusted_lmo(g)
        s = np.asarray(atom.to_dense(), dtype=float).ravel()
        gap = dot(x_k, g) - atom.dot(g)
        terms = float(np.abs(g).dot(np.abs(x_k)) + np.abs(g).dot(np.abs(s)))
        if gap < -max(LMO_MISS * terms, GAP_ROUNDING * float(norm(g)) * size_scale):
            raise ModelError(
                f"the LMO of {blk.name or f'block {k}'} returned no minimizer: its vertex s gives "
                f"<g, x - s> = {gap:.6g} < 0 for the gradient g at a point x of the set (an exact LMO "
                f"minimizes <g, s> over the set, so this is >= 0 up to rounding, {LMO_MISS * terms:.3g} here); "
                "an LMO that maximizes (a sign error) does this. Test the set with fm.check_lmo(the_set)"
            )
    return None


def refuse_maximizing_lmo(blocks, block_gradient):
    """Stop the solve with a ModelError where a user-written LMO (``Block.lmo_sign_check``) maximizes.

    An exact LMO's vertex s = lmo(g) minimizes <g, .> over X_k, and lmo(-g) is a point of X_k, so
    <g, lmo(g)> <= <g, lmo(-g)> up to rounding. A maximizing LMO (a sign error) breaks it by about
    ||g|| times the set's width, and can give a FW gap of exactly 0 (its first vertex is the maximizer it
    returns again), which :func:`refuse_missed_lmo` cannot see: the solve stopped "optimal" at 1.96 for an
    optimum of 0. Called once, when a solve is about to end "optimal" (one LMO call per user block);
    built-in sets are not asked. ``block_gradient(k)``: block k's slice of the gradient of L(., y) at x.
    """
    for k, blk in enumerate(blocks):
        if not blk.lmo_sign_check:
            continue
        g = np.array(block_gradient(k), dtype=float)  # (a copy: the LMO calls below may reuse a buffer)
        if not np.any(g):
            continue
        s_min, s_max = blk.lmo(g), blk.lmo(-g)
        low, high = s_min.dot(g), s_max.dot(g)
        terms = float(np.abs(g).dot(np.abs(np.asarray(s_min.to_dense(), dtype=float).ravel()))
                      + np.abs(g).dot(np.abs(np.asarray(s_max.to_dense(), dtype=float).ravel())))
        if low > high + LMO_MISS * terms:
            raise ModelError(
                f"the LMO of {blk.name or f'block {k}'} returned no minimizer: <g, lmo(g)> = {low:.6g} is above "
                f"<g, lmo(-g)> = {high:.6g} for the gradient g at the solve's last point (lmo(-g) is a point of "
                "the set, so an exact LMO's <g, lmo(g)> is the lower one); an LMO that maximizes (a sign "
                "error) does this. Test the set with fm.check_lmo(the_set)"
            )
    return None
