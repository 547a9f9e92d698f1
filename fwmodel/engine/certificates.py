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
"""
from __future__ import annotations

import numpy as np

from .stopping import TERMS_ROUNDING
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

    def at_optimal(self, r, y):
        """The "infeasible" message for a point that meets the stopping tests while the LMOs prove that
        no point of the sets meets M x = b (a bound above ``PROOF_MARGIN`` of its terms), else None.

        The feasibility scale is one number for all rows: rows in units far apart (a row in units of
        1e-6 next to the rows tying two copies of its variable) have the small ones held to the large
        ones' size, and an infeasible model whose residual is small in those units met (3). One more
        certificate, at the point where the solve would stop, keeps such a model from "optimal".
        """
        if not self.check_at_optimal:
            return None
        bound = infeasibility_bound(self.blocks, self.Mop, self.b, (r, y), margin=PROOF_MARGIN)
        if bound > 0:
            return (f"no point of the sets satisfies the consistency constraints: "
                    f"||Mx - b|| >= {bound:.3g} everywhere (certified by the LMOs; the iterate met "
                    f"feas_tol, the rows are in units far smaller than the feasibility scale)")
        return None

    def message(self, t, feas, target, r, y, proof_target=None):
        """The "infeasible" status message when the sets are certified not to meet M x = b at iteration t, else None.

        ``target``: the ||Mx - b|| below which the iterate needs no check; ``proof_target`` (default
        ``target``): the lower bound on ||Mx - b|| over the sets that proves no point meets the
        feasibility test (stopping.StoppingRule.proof_target).
        """
        proof_target = target if proof_target is None else proof_target
        due = self.Mop.shape[0] and self.every and t % self.every == 0 and t > 0 and feas > target
        if not due:
            return None
        stalled = self.feas_at_check is None or feas > 0.5 * self.feas_at_check
        self.feas_at_check = feas if self.feas_at_check is None else min(self.feas_at_check, feas)
        if not stalled:
            return None
        bound = infeasibility_bound(self.blocks, self.Mop, self.b, (r, y))
        if bound > proof_target:
            return (f"no point of the sets satisfies the consistency constraints: "
                    f"||Mx - b|| >= {bound:.3g} everywhere (certified by the LMOs)")
        return None
