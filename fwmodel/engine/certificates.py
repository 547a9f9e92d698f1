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


def infeasibility_bound(blocks, Mop, b, candidates):
    """A certified lower bound on min_{x in X} ||Mx - b||, from the LMOs.

    For any direction w and any x in X, ||Mx - b|| >= <w, Mx - b> / ||w||
    >= (sum_k min_{s in X_k} <(M'w)_k, s> - <w, b>) / ||w||. A positive bound
    proves that the sets cannot meet the consistency constraints. Candidate
    directions: the residual and the dual variable (which grows along the
    infeasible direction when the problem is infeasible).
    """
    best = 0.0
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
        # a feasible model has a bound <= 0 exactly: what rounding of the terms can add is taken off,
        # whatever the units of the rows (the target it is compared with follows them, stopping.RowUnits)
        best = max(best, (total - TERMS_ROUNDING * terms) / w_norm)
    return best


class InfeasibilityCheck:
    """When to try the certificate during a solve, and what it concludes.

    The certificate costs one LMO call per block and direction (and it moves
    the warm starts of Lanczos-based LMOs), so it runs every ``every``
    iterations (0: never), only while the iterate is not feasible enough and
    feasibility is not improving: not below half the best value seen at the
    previous checks.
    """

    def __init__(self, blocks, Mop, b, every):
        self.blocks, self.Mop, self.b = blocks, Mop, b
        self.every = every
        self.feas_at_check = None  # the best feasibility at the previous checks

    def message(self, t, feas, target, r, y):
        """The "infeasible" status message when the sets are certified not to meet M x = b at iteration t, else None."""
        due = self.Mop.shape[0] and self.every and t % self.every == 0 and t > 0 and feas > target
        if not due:
            return None
        stalled = self.feas_at_check is None or feas > 0.5 * self.feas_at_check
        self.feas_at_check = feas if self.feas_at_check is None else min(self.feas_at_check, feas)
        if not stalled:
            return None
        bound = infeasibility_bound(self.blocks, self.Mop, self.b, (r, y))
        if bound > target:
            return (f"no point of the sets satisfies the consistency constraints: "
                    f"||Mx - b|| >= {bound:.3g} everywhere (certified by the LMOs)")
        return None
