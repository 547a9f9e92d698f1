"""The stopping rule of FW-AL and the two scales it is relative to.

A solve stops as "optimal" at the first iterate x_t with

    gap_t         <= tol      * objective_scale      (1)
    ||M x_t - b|| <= feas_tol * feasibility_scale    (2)

where gap_t = max_{s in X} <grad_x L(x_t, y_t), x_t - s> is the Frank-Wolfe
gap of the augmented Lagrangian L(., y_t) over the product of the sets (the
quantity the paper's analysis bounds: it is an upper bound on
L(x_t, y_t) - min_x L(x, y_t), Jaggi 2013 and the paper's Lemma 2).

Neither scale has an absolute floor such as ``max(1, ...)``: a floor of 1
makes the tolerance absolute for a problem whose objective or variables are
small (a lasso written in small units then stops at its starting point).
Instead both scales come from the problem itself, so that multiplying the
objective, the data or the variables (with their sets) by any power of ten
multiplies each side of (1) and (2) by the same factor and leaves the
iterates, the iteration count and the relative accuracy unchanged.

* ``objective_scale``: the FW gap of f over the product of the sets at the
  reference point x_ref (every block at its set's initial atom, where a cold
  solve starts),

      G_ref = <grad f(x_ref), x_ref> - sum_k min_{s in X_k} <grad_k f(x_ref), s>,

  an upper bound on f(x_ref) - min f over the sets, so (1) asks for the
  gap to shrink to ``tol`` times the objective's own range from that point.
  Only f counts, not the penalty and dual terms of L: at a starting point
  far from M x = b they can be thousands of times larger and would make (1)
  loose. When G_ref = 0 (x_ref minimizes f over the product of the sets but
  violates M x = b), the same FW gap of f is taken at the iterates, the
  first time it is positive; while it is 0, x minimizes f over the product
  of the sets, so f(x) <= f* and (1) holds by that certificate (a
  feasibility problem, with a constant f, then stops on (2) alone). The
  scale is measured at the reference point,
  not at a warm-started iterate, so a warm start keeps the scale of a cold
  solve (and follows a changed Parameter).

* ``feasibility_scale``: the size of the sets, measured by the norms seen:
  ||b||, ||x_ref|| and ||s_ref|| (s_ref the product vertex returned by the
  LMOs at x_ref), ||M x_ref||, ||M s_ref|| (the units of the rows of M), and
  the largest ||x_t|| of the iterates, so (2) asks the consistency
  constraints to hold to ``feas_tol`` times the size of the points they tie.

``prob.stats.feasibility_rel`` keeps its documented definition
||Mx - b|| / max(1, ||x||, ||b||); the scales actually used are reported as
``prob.stats.objective_scale`` and ``prob.stats.feasibility_scale``.
"""
from __future__ import annotations

import math

import numpy as np

from .vector_ops import dot, norm


def reference_point(blocks, n):
    """x_ref: every block at its set's initial atom (the cold starting point)."""
    x_ref = np.zeros(n)
    for blk in blocks:
        blk.initial_atom().add_to(x_ref[blk.slice], 1.0)
    return x_ref


def objective_gap(blocks, x, grad_f, with_vertex=False):
    """The FW gap of f over the product of the sets: <grad f, x> - sum_k min_{s in X_k} <grad_k f, s>.

    With ``with_vertex``, also the product vertex s of the LMOs (a flat vector).
    """
    s = np.zeros_like(x) if with_vertex else None
    # block by block: grad_f may be the engine's gradient kept once for tied copies,
    # whose block slices are views (a full-vector read would form it)
    gap = sum(dot(x[blk.slice], grad_f[blk.slice]) for blk in blocks) if blocks else dot(x, grad_f)
    for blk in blocks:
        atom = blk.lmo(grad_f[blk.slice])
        gap -= atom.dot(grad_f[blk.slice])
        if with_vertex:
            atom.add_to(s[blk.slice], 1.0)
    return (gap, s) if with_vertex else gap


class StoppingRule:
    """Tests (1) and (2) of the module docstring and keeps the two scales.

    Build it with :meth:`from_reference`; then, on every iterate, call
    :meth:`observe_point` (and :meth:`observe_objective_gap` while
    :attr:`needs_objective_scale`) before :meth:`met`.
    """

    def __init__(self, tol, feas_tol, objective_scale, feasibility_scale):
        self.tol = tol
        self.feas_tol = feas_tol
        self.objective_scale = objective_scale
        self.feasibility_scale = feasibility_scale

    @classmethod
    def from_reference(cls, tol, feas_tol, objective, blocks, Mop, b, x_ref, grad_ref=None):
        """Measure G_ref and the set norms at ``x_ref`` (one gradient and one LMO per block).

        ``grad_ref`` is grad f(x_ref) when the caller already has it (a cold
        start begins at x_ref).
        """
        if grad_ref is None:
            _, grad_ref = objective.value_and_grad(x_ref)
        gap, s_ref = objective_gap(blocks, x_ref, grad_ref, with_vertex=True)
        objective_scale = float(gap) if math.isfinite(gap) and gap > 0 else 0.0
        norms = [norm(b), norm(x_ref), norm(s_ref)]
        if Mop.shape[0]:
            norms += [norm(Mop.matvec(x_ref)), norm(Mop.matvec(s_ref))]
        feasibility_scale = max(float(v) for v in norms if math.isfinite(v)) if norms else 0.0
        return cls(tol, feas_tol, objective_scale, feasibility_scale)

    # ------------------------------------------------------------ updates
    @property
    def needs_objective_scale(self):
        """True while G_ref = 0 and no iterate has given a positive FW gap of f yet."""
        return self.objective_scale == 0.0

    def observe_objective_gap(self, gap_f):
        """The FW gap of f (not of L) at an iterate: the first positive one becomes the scale."""
        if self.objective_scale == 0.0 and math.isfinite(gap_f) and gap_f > 0:
            self.objective_scale = float(gap_f)

    def observe_point(self, x_norm):
        """||x_t|| of an iterate: the feasibility scale is the largest norm seen."""
        if math.isfinite(x_norm) and x_norm > self.feasibility_scale:
            self.feasibility_scale = float(x_norm)

    # ------------------------------------------------------------ tests
    @staticmethod
    def _ratio(value, scale):
        if value <= 0:
            return 0.0
        return value / scale if scale > 0 else math.inf

    def gap_rel(self, gap, objective_gap=None):
        """gap / objective_scale: (1) holds when this is <= tol.

        ``objective_gap``: the FW gap of f at the same point, when known (it
        is computed while the objective scale is 0); 0 there certifies
        f(x) <= f*, so the ratio is 0.
        """
        if objective_gap is not None and objective_gap <= 0:
            return 0.0
        return self._ratio(max(gap, 0.0), self.objective_scale)

    def feas_rel(self, feas):
        """||Mx - b|| / feasibility_scale: (2) holds when this is <= feas_tol."""
        return self._ratio(feas, self.feasibility_scale)

    def gap_target(self):
        """tol * objective_scale: the FW gap the solve has to reach (dual schedules use it)."""
        return self.tol * self.objective_scale

    def feasibility_target(self):
        """feas_tol * feasibility_scale: the ||Mx - b|| the solve has to reach."""
        return self.feas_tol * self.feasibility_scale

    def met(self, gap, feas, objective_gap=None):
        return self.gap_rel(gap, objective_gap) <= self.tol and self.feas_rel(feas) <= self.feas_tol

    def merit(self, gap, feas, objective_gap=None):
        """How far an iterate is from meeting both tests (<= 1: met), for keeping the best point."""
        return max(self.gap_rel(gap, objective_gap) / self.tol, self.feas_rel(feas) / self.feas_tol)
