"""The stopping rule of FW-AL and the scales it is relative to.

A solve stops as "optimal" at the first iterate x_t with

    gap_t                  <= tol      * objective_scale     (1)
    B_t                    <= tol      * R_t                 (1b)
    |<y_t + lam r_t, r_t>| <= tol      * A_t                 (2)
    ||r_t||                <= feas_tol * feasibility_scale   (3)

where r_t = M x_t - b and gap_t = max_{s in X} <grad_x L(x_t, y_t), x_t - s>
is the Frank-Wolfe gap of the augmented Lagrangian L(., y_t) over the
product of the sets (the quantity the paper's analysis bounds: it is an
upper bound on L(x_t, y_t) - min_x L(x, y_t), Jaggi 2013 and the paper's
Lemma 2).

What (1) and (2) say about f(x_t) - f*. grad_x L(x, y) is the gradient of
the plain Lagrangian f + <w, Mx - b> at the multiplier w = y + lam r (the
multiplier the next exact augmented-Lagrangian step would take), so gap_t
is also that Lagrangian's FW gap, and weak duality gives
f* >= f(x_t) + <w, r_t> - gap_t:

    f(x_t) - f* <= gap_t - <w, r_t>        (certified),
    f(x_t) - f* >= -<w*, r_t> ~ -<w, r_t>  (w* an optimal multiplier).

An iterate that violates M x = b can have f(x_t) < f*, by about <w, r_t>:
on the TV denoiser of the model zoo, f* - f(x_t) and <w, r_t> agree to two
digits along the whole solve, and with (1) and (3) alone it stopped 0.5 %
below f* (f* = 1.2, range 75). Test (2) bounds that effect relative to |f|
where |f| is not negligible next to the values f takes on the problem:

    A_t = min(objective_scale, max(|f(x_t)|, VALUE_FLOOR * min(objective_scale, V_t))),

V_t the spread (max - min) of f over the points seen that meet test (3):
x_ref where it does, and the iterates that do (:attr:`StoppingRule.value_spread`).
"Negligible" is this, precisely: |f(x_t)| below ``VALUE_FLOOR`` (1 %) of
min(S_f, V_t), where (2) holds <y + lam r, r> to tol * VALUE_FLOOR of that
spread instead (f* = 0 has no relative accuracy of its own). Only points
that meet (3) count: a point far off M x = b is no point of the problem,
and its value says nothing of f's values on it. With x_ref counted
whatever its residual, a starting point x = 0 off rows ``E x == b`` with
b ~ 1e6 gave f(x_ref) = 3.6e12 against f* = 2.4e5, a floor of 3.6e10, and
(2) let <w, r_t> ~ 5e4 through: "optimal" 9-17 % off Clarabel's value
(benchmarks/gap_scale.py, family ``hugeb``; benchmarks/RESULTS.md, "The
values' spread over the points of the problem"); now 5e-5 to 8e-5 off, in
52-59 iterations instead of 35-37. A warm start's x_ref does not count
(it is not the start; its value is not measured), as before.

Test (1) keeps the FW gap relative to the range (the definition of
``tol``), so (1) and (2) alone promise f(x_t) - f* <= tol * S_f - <w, r_t>
(certified, exact LMOs) and f* - f(x_t) <~ tol * A_t. Where |f*| is far
below S_f that upward error reached a few percent of |f*|: a long-only
minimum-variance portfolio (S_f = 14.8, f* = 0.0028) stopped 4.45 % above
f*, a box QP with rows (f* = -0.23, S_f = 117) without the face step 1.9 %
(benchmarks/minvar_sectors.py, benchmarks/gap_scale.py). Test (1b) holds
the certified bound relative to |f| itself:

    B_t = min(gap_t - <w_t, r_t>, f(x_t) - L_t),   L_t = max_{s <= t} f(x_s) + <w_s, r_s> - gap_s,
    R_t = min(S_f, l_t * |f(x_t)|)   (S_f where |f(x_t)| <= REL_FLOOR * min(S_f, W_t)),

L_t the best weak-duality lower bound on f* over the iterates whose gap
certifies (every iterate's bound is valid, :func:`suboptimality_bound`, so
the best of them is: a point whose own gap is loose is certified by an
earlier lower bound). Where R_t = S_f, (1b) asks nothing of the point
(|f| in the range's scale: test (1) is the relative test). The gap target
of the lazy steps and the dual schedules is tol * R_t (:meth:`StoppingRule.gap_target`):
they stop aiming below their target, and without it (1b) ran to
max_iter on the Birkhoff projection and the box QP.

l_t is the bound's looseness as measured on the iterates (:attr:`StoppingRule.looseness`), between 1
and REL_FACTOR = 200: the least B_s / (f(x_s) - f(x_t)) over the earlier iterates s that meet (3) with
B_s at most ``LOOSENESS_WINDOW`` times B_t (f(x_s) - f(x_t) <= f(x_s) - f*, so each ratio is at least
the looseness at s); REL_FACTOR where the values no longer fall while the bound does. So (1b) holds
the point to about tol * |f| of the true error whether the bound is loose or tight. With the factor
fixed at REL_FACTOR, a ball much wider than the data's scale (the optimum on its boundary, the bound
1.1-2.5x the error) ended "optimal" up to 2.0 % above f*; measured, 5e-4 at most, for 1.0-2.3x the
iterations (benchmarks/tight_bounds.py; benchmarks/RESULTS.md, "Tight certified bounds").

Why REL_FACTOR = 200 where the bound is loose, and not 1: near the optimum the FW gap is 10-1,000x
the true error (first order in the distance to x*, the error second
order): on the minimum-variance portfolio 1,000x (f - f* = 1e-6 |f*| with
a gap of 2.9e-3 |f*|), on the zoo's Birkhoff projection 100x. A certified
bound of tol * |f| costs what that looseness costs: the Birkhoff
projection 231 -> 738 iterations at a factor 10 (596 measured earlier),
the portfolio 6,604, each ending 1e-7 .. 1e-10 off f*. At 200 the
certified bound is 2e-2 of |f| at the default tol and the points are
about tol off f*: the portfolio 1.2e-4 (3,860 iterations), the box QP
4.9e-5, the Birkhoff projection 2.0e-4 (325 iterations, main 231 at
8.1e-4) (benchmarks/RESULTS.md, "Test (1b)"). Where |f(x_t)| is at most
REL_FLOOR * S_f (1e-5 of the range), (1b) asks nothing beyond (1): with
gap - <w, r> <= tol * S_f, f* is then certified within (1e-5 + tol) S_f of
0 (|f* - f(x_t)| is at most the bound, or the error test (2) holds), where
f(x) - f* has no relative accuracy. That "f* ~ 0" is judged against the
smaller of S_f and W_t, the width of the sets along grad f(x_t) (max - min
of <grad f(x_t), s> over the sets, measured only where the skip would
decide the stop, :meth:`StoppingRule.observe_width`): S_f is measured at the
cold start, a vertex for polytopes, and an objective steep there (exp(k x)
over a simplex or a Birkhoff polytope) makes it astronomical, so that
|f| <= 1e-5 S_f held at f = 6.2e27 against f* = 47 and the solve ended
"optimal" (benchmarks/steep_start.py); W_t is the range of f's
linearization where the solve is. A floor asking the bound for a
fraction of S_f instead (2e-3 S_f: 1e-5 of S_f times the factor) took a
projection onto a set holding its target (f* = 0, S_f = 1,774) from 31 to
294 iterations, and one of the values' spread (as test (2)'s) collapses
where f* = 0 (the points that meet (3) all lie near 0): a fuzz model with
f* ~ 1e-20 ran to max_iter. Asking the gap itself for tol relative to |f|
took 7x the iterations on the Birkhoff projection (6,676 instead of 962
then). The skip is taken only where the bound is loose (its measured
looseness above TIGHT_LOOSENESS = 10): a tight bound locates f* itself, and
f crossing 0 on its way down to f* = -12.95 (a ball 100x wider than the
data) ended "optimal" at f = 0.017 through the skip
(:attr:`StoppingRule.floor_skips`, benchmarks/crossing_zero.py).

Neither scale has an absolute floor such as ``max(1, ...)``: a floor of 1
makes the tolerance absolute for a problem whose objective or variables are
small (a lasso written in small units then stops at its starting point).
Instead both scales come from the problem itself, so that multiplying the
objective, the data or the variables (with their sets) by any power of ten
multiplies each side of (1)-(3) by the same factor and leaves the
iterates, the iteration count and the relative accuracy unchanged.

* ``objective_scale``: the FW gap of f over the product of the sets at the
  reference point x_ref (every block at its set's initial atom, where a cold
  solve starts),

      G_ref = <grad f(x_ref), x_ref> - sum_k min_{s in X_k} <grad_k f(x_ref), s>,

  an upper bound on f(x_ref) - min f over the sets (the objective's range
  from that point). Only f counts, not the penalty and dual terms of L: at
  a starting point far from M x = b they can be thousands of times larger
  and would make (1) loose. When G_ref = 0 (x_ref minimizes f over the
  product of the sets but violates M x = b), the same FW gap of f is taken
  at the iterates, the first time it is positive; while it is 0, x
  minimizes f over the product of the sets, so f(x) <= f* and (1) holds by
  that certificate (a feasibility problem, with a constant f, then stops on
  (3) alone). The scale is measured at the reference point, not at a
  warm-started iterate, so a warm start keeps the scale of a cold solve
  (and follows a changed Parameter).

* ``feasibility_scale`` (test (3)'s, :attr:`StoppingRule.point_scale`): the
  size of the data and of the points, ||b||, ||x_ref||, ||M x_ref|| (the
  units of the rows of M) and the largest ||x_t|| of the iterates, so (3)
  asks the consistency constraints to hold to ``feas_tol`` times the size
  of the points they tie. Not the sets' extent: the vertex s_ref (the
  product vertex returned by the LMOs at x_ref) counted too once, and a
  loose "big-M" box ``abs(y) <= B`` around a solution of norm 3 then held
  ``A @ y == b`` to B sqrt(n): at B = 1e6 "optimal" with ||Ay - b|| = 1.3e-2
  and the value 3.4e-3 below Clarabel's, at every B since as at B = 10
  (benchmarks/RESULTS.md, "A loose box around the solution"). The iterates'
  norms keep a scale where the solution is 0 and b = 0 (copies of a
  variable whose optimum is 0): the first steps leave x_ref by a line search
  on the objective, so they measure its units. The sets' extent (with s_ref
  and M s_ref, :attr:`StoppingRule.feasibility_scale`) still serves what
  is about all points of the sets: the infeasibility proof (no point of
  the sets meets (3), :meth:`StoppingRule.proof_target`), the fallback
  penalty, rounding thresholds.
  The points' norms count in the rows' units (each block's norm times the
  root mean square of its column norms of M, at most 1: :class:`RowUnits`),
  so rows written in other units than their variables (``(1e-6 G) @ x <= 1e-6 h``)
  are held to their own size, and the infeasibility certificate
  (:mod:`fwmodel.engine.certificates`), which compares its bound with
  ``feas_tol`` times this scale, follows them.

* Test (3) per group of rows: M is a stack of pieces (the rows tying two
  copies, the rows of one constraint, one axis of marginalization rows),
  and each piece g in units far below the others' (S_g more than
  ``UNITS_APART`` below the largest piece's) must also meet
  ``||r_g|| <= feas_tol * S_g``, S_g measured as above from its own rows
  (:class:`RowPieces`): one
  scale for all rows let a row written times 1e6 loosen the copies' test
  and held a row written times 1e-6 to the copies' size (both silent wrong
  answers). Before the solve every constraint's row is brought to unit
  norm, at the copies' ties' norm and width (:func:`row_norm_equilibration`,
  :func:`tie_level`), and pieces still in
  units far apart to a common scale (:meth:`RowPieces.equilibration`), so
  that one penalty and one dual step serve them all.

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


def objective_gap(blocks, x, grad_f, with_vertex=False, out=None):
    """The FW gap of f over the product of the sets: <grad f, x> - sum_k min_{s in X_k} <grad_k f, s>.

    With ``with_vertex``, also the product vertex s of the LMOs (a flat
    vector, written into ``out`` when given: at d = 4000 a fresh 256 MB
    vector costs more in page faults than the LMOs).

    A gap within rounding of its terms (``TERMS_ROUNDING`` times the sum of
    their magnitudes) is 0: x minimizes f's linearization over the sets, and
    a scale of 1e-16 taken from such a gap would make test (1) unreachable
    (measured: a simplex capped at 0.3 with two equality rows ran to max_iter
    with the FW gap at 4e-16 of a scale of 9e-16).
    """
    s = None
    if with_vertex:
        s = np.zeros(x.shape) if out is None else out  # (calloc: pages no LMO writes stay untouched)
        if out is not None:
            s.fill(0.0)
    # block by block: grad_f may be the engine's gradient kept once for tied copies,
    # whose block slices are views (a full-vector read would form it)
    gap = 0.0 if blocks else dot(x, grad_f)
    terms = abs(gap)
    for blk in blocks:  # a plain loop: an interrupt inside a generator closed early is swallowed
        term = dot(x[blk.slice], grad_f[blk.slice])
        gap += term
        terms += abs(term)
    for blk in blocks:
        # the trusted LMO (a loose one checked: Block.trusted_lmo): this gap sets the objective's
        # scale, and a miss here would make "optimal" meet a scale of 0 without any check
        atom = blk.trusted_lmo(grad_f[blk.slice])
        term = atom.dot(grad_f[blk.slice])
        gap -= term
        terms += abs(term)
        if with_vertex:
            atom.add_to(s[blk.slice], 1.0)
    if abs(gap) <= TERMS_ROUNDING * terms:
        gap = 0.0
    return (gap, s) if with_vertex else gap


def sets_width(blocks, x, grad_f):
    """W = sum_k (max - min of <grad_k f, s> over X_k): the range of f's linearization at x over the
    product of the sets (two trusted LMOs per block, on grad f and on -grad f; ``x`` is unused but kept
    with :func:`objective_gap`'s arguments). The skip of test (1b) is judged against it (module docstring)."""
    width = 0.0
    for blk in blocks:
        g = grad_f[blk.slice]
        low = blk.trusted_lmo(g).dot(g)
        high = -blk.trusted_lmo(-g).dot(-g)
        width += max(high - low, 0.0)
    return width


#: relative rounding of a difference of inner products (:func:`objective_gap`): 64 machine epsilons
TERMS_ROUNDING = 64 * np.finfo(float).eps


def gap_at_rounding(gap_f, blocks, grad_f, size):
    """``gap_f`` (the FW gap of f at a point, :func:`objective_gap`), or 0 where it is at rounding level of f's
    change across points of norm ``size``: ``gap_f <= TERMS_ROUNDING * ||grad f|| * size``.

    :func:`objective_gap` judges rounding against the magnitudes of its own terms, which is all the
    rounding of the inner products; an LMO's value carries more: a trace-norm ball's min <g, s> is the
    radius times the smallest eigenvalue of g, computed to about eps ||g||, whatever that eigenvalue is.
    At a point that minimizes f over the sets (X = 0 under min trace(G X), G = b b' PSD: the smallest
    eigenvalue 0 came out -1.2e-17) the gap is then 5.8e-18 against terms of that size, and taken as
    the objective's range every scale of the solve (tol * S_f, the penalty, the dual step) was at
    rounding level: max_iter at the exact optimum X = 0 (benchmarks/RESULTS.md, "PSD models whose optimum
    is at or near X = 0"). Against ||grad f|| times the size of the points (Cauchy-Schwarz bounds every term by it)
    such a gap is 0: the point minimizes f's linearization over the sets.
    """
    g_size = 0.0
    for blk in blocks:
        g = np.asarray(grad_f[blk.slice])
        block_size = float(norm(g))
        if math.isinf(block_size) and g.size:
            # squares of entries above 1e154 overflow (exp(50 x) at x = 8 made ||grad f|| inf, every gap
            # "rounding", S_f = 0 and "optimal" at the cold start: benchmarks/steep_start.py): scaled by the
            # largest entry, only here (no block-size temporary on the usual path)
            top = max(abs(float(g.max())), abs(float(g.min())))
            if math.isfinite(top):
                block_size = top * float(norm(g / top))
        g_size = math.hypot(g_size, block_size)
    if gap_f <= TERMS_ROUNDING * g_size * size:
        return 0.0
    return gap_f


#: a block's FW gap below -GAP_ROUNDING * objective_scale proves that its LMO missed the minimizer
#: (an exact LMO gives a gap >= 0 up to rounding): the bound is then not certified
GAP_ROUNDING = 1e-9


def certifies(block_gaps_known, lowest_block_gap, objective_scale):
    """Whether the summed FW gap may serve in :func:`suboptimality_bound`: every block's gap was
    measured, and none is negative beyond rounding (which only an inexact LMO can give: a Lanczos
    run with a loose ``lmo_tol`` that found an eigenpair, not the extreme one; such blocks are
    also re-measured before their gap is trusted, :class:`LmoCheck`)."""
    return bool(block_gaps_known) and lowest_block_gap >= -GAP_ROUNDING * objective_scale


def lowest_gap(block_gaps):
    """The smallest measured block FW gap (None entries: a lazy step skipped its LMO); inf where none."""
    return min((g for g in block_gaps if g is not None), default=math.inf)


class LmoCheck:
    """The FW gap of the blocks whose LMO may miss its minimizer, re-measured before it is trusted.

    A trace-norm ball's Lanczos LMO can end on an eigenpair that is not the
    extreme one: often when stopped at a loose ``lmo_tol``, and at any
    tolerance when its warm start sits on an exact eigenvector while the
    direction's new extreme eigenvector, orthogonal to the warm start, is
    above it by a relative 1e-4 or less (the gap then understated by about
    ``radius * 1e-4 * sigma_1``, the size of the default ``tol``:
    benchmarks/lanczos_warm_miss.py). Its vertex s_k then gives a
    block gap ``<x_k - s_k, g_k>`` below the block's FW gap, test (1) holds
    short of the optimum, and the bound of :func:`suboptimality_bound`
    fails; the gap need not come out negative (:func:`certifies` catches
    only those misses). Measured at ``lmo_tol=1e-2`` on a 60 x 50 nuclear-norm
    projection: "optimal" at 81x ``tol`` from f* (one seed), a bound of 4e-3
    against an error of 0.25 (another) (benchmarks/RESULTS.md, "Loose
    trace-norm LMO tolerance").

    Such blocks (every trace-norm ball on the Lanczos path, at any
    ``lmo_tol``) offer ``Block.lmo_check``: ``exact(g)``, the LMO at the
    tolerance the certificate trusts (the default ``lmo_tol``, or a tighter
    one, from a fresh random start drawn from a stream of its own,
    sets/trace_norm.py ``CheckedLmo``). At an iterate where
    the solve would stop as optimal, or ends, the driver re-measures those
    blocks' gaps with it: each block's gap becomes the larger of the two
    measurements (either vertex gives a lower bound on
    ``max_s <x_k - s, g_k>``; the exact oracle's is the one trusted, as the
    default LMO is). Where the checked gap no longer meets (1)-(3) the solve
    goes on, and the blocks whose gap grew beyond rounding get their LMO
    tightened to the trusted tolerance for the rest of the solve (the loose
    one has shown it misses at the accuracy now asked; the warm start also
    takes in the vector the check found). Between checks the gap of such a
    block certifies nothing (the bound is NaN there). The check draws from
    its own random stream and leaves the LMO's warm start as it is, so
    where it confirms the gap the iterates are those of a solve without it
    (benchmarks/fingerprint.py unchanged). Where every LMO is exact (no
    block offers a check: dense trace-norm LMOs, no trace-norm ball)
    nothing of this runs.
    """

    def __init__(self, blocks):
        self.blocks = [(k, blk) for k, blk in enumerate(blocks) if blk.lmo_check is not None]

    @classmethod
    def of(cls, blocks):
        """The check of ``blocks``, or None where no block offers one (every LMO exact)."""
        check = cls(blocks)
        return check if check.blocks else None

    def checked_gap(self, x, block_gradient, gap, block_gaps, objective_scale):
        """Re-measure the checked blocks' gaps at x: ``(gap, block_gaps, missed)``.

        ``block_gradient(k)``: block k's slice of the gradient of L(., y);
        ``block_gaps``: each block's measured gap (a new list is returned);
        ``missed``: the blocks whose gap grew by more than rounding.
        """
        block_gaps = list(block_gaps)
        missed = []
        for k, blk in self.blocks:
            g_k = block_gradient(k)
            exact = dot(x[blk.slice], g_k) - blk.lmo_check.exact(g_k).dot(g_k)
            if exact > block_gaps[k]:
                gap += exact - block_gaps[k]
                if exact - block_gaps[k] > GAP_ROUNDING * objective_scale:
                    missed.append(k)
                block_gaps[k] = exact
        return gap, block_gaps, missed

    def tighten(self, missed):
        """The LMOs of the ``missed`` blocks answer at the trusted tolerance from now on."""
        for k, blk in self.blocks:
            if k in missed:
                blk.lmo_check.tighten()


def suboptimality_bound(gap, dual_residual, gap_known=True):
    """The certified bound f(x_t) - f* <= gap_t - <w, r_t>, w = y_t + lam r_t (weak duality).

    gap_t is the FW gap of the plain Lagrangian f + <w, M x - b> at x_t (the
    same number as the FW gap of L(., y_t), see the module docstring), so
    for any feasible x*, f(x*) = f(x*) + <w, M x* - b> >= f(x_t) + <w, r_t>
    - gap_t. The bound holds whatever the tolerances, provided the LMOs are
    exact (the spectral sets' Lanczos runs to ``lmo_tol``, 1e-6 by default, and a looser
    one is checked at 1e-6, :class:`LmoCheck`; :func:`certifies` checks each block's sign). It may be negative:
    an infeasible x_t can lie below f*. NaN when the gap was not measured
    (a lazy step skipped its LMO) or not certified (``gap_known`` False),
    +inf when it is not finite.
    """
    if not gap_known:
        return math.nan
    if not math.isfinite(gap):
        return math.inf
    return float(gap - dual_residual)


class RowUnits:
    """The size of a point in the units of the rows of M: ``sqrt(sum_k (w_k ||x_k||)^2)``.

    The feasibility scale compares ||Mx - b|| (the rows' units) with norms of
    b, of M x_ref and M s_ref (the rows' units too) and of the points
    themselves (the variables' units). Where the rows are written in much
    smaller units than the variables (``(1e-6 G) @ x <= 1e-6 h``), the
    points' norms dominate and (3) asks nothing of the rows: an infeasible
    model ran to max_iter (its residual, 4.5e-6, was below feas_tol times the
    points' norm, so the certificate never ran) and a feasibility problem
    stopped "optimal" at its starting point with the rows violated by their
    whole size (benchmarks/RESULTS.md, "Rows in other units than the
    variables").

    So each block's norm counts in the rows' units: times
    ``w_k = min(1, sqrt(sum_{j in block k} ||M e_j||^2 / n_k))``, the root mean
    square of the norms of the block's n_k nonzero columns: for x_k with no
    particular alignment with the rows, ||M_k x_k|| is about w_k ||x_k|| (the
    mean of ||M_k (sigma * x_k)||^2 over random signs sigma is
    sum_j x_j^2 ||M e_j||^2). Scaling the rows by c <= 1 / w_k scales every term
    of the feasibility scale by c, as it scales ||Mx - b||; scaling the
    variables (with their sets) scales both by the same factor. The weight is
    never above 1, so the scale is never larger than before (the points'
    norms): copies tied to each other, sums, rows that read a few entries
    and rows of unit data (columns of norm 1 or more) leave it as it was;
    rows with small coefficients count the block at their own size; a block
    in no row (w_k = 0) no longer counts, having no bearing on ||Mx - b||.
    Where the column norms are not known (a user's opaque LinearOperator)
    the weights are 1.
    """

    def __init__(self, weights):
        self.weights = weights  # [(slice, w_k)] for the blocks weighed below 1; None: every weight is 1

    @classmethod
    def of(cls, blocks, Mop):
        column_sums = getattr(Mop, "block_column_norms2", None)
        if not blocks or column_sums is None:
            return cls(None)
        slices = [blk.slice for blk in blocks]
        if any(a.stop != b.start for a, b in zip(slices, slices[1:])):
            return cls(None)
        bounds = [sl.start for sl in slices] + [slices[-1].stop]
        if not Mop.shape[0]:
            return cls(None)
        sums = np.maximum(np.asarray(column_sums(bounds), dtype=float), 0.0)
        columns = np.diff(bounds).astype(float)
        if np.all(sums >= columns):  # every block's mean column norm is 1 or more (tied copies, unit data)
            return cls(None)
        # the mean over the columns the rows read: a row on one entry of a large block is in that entry's
        # units. Columns M' w = 0 for a random w are the columns of zeros (a nonzero column gives 0 with
        # probability 0; one counted as zero only raises the mean, toward the scale before)
        z = Mop.rmatvec(np.random.default_rng(0).standard_normal(Mop.shape[0]))
        columns = np.array([np.count_nonzero(z[sl]) for sl in slices], dtype=float)
        weights = np.minimum(1.0, np.sqrt(sums / np.maximum(columns, 1.0)))
        if np.all(weights == 1.0):
            return cls(None)
        return cls([(sl, float(w)) for sl, w in zip(slices, weights)])

    def size(self, x, x_norm=None, block_norms=None):
        """The size of x in the rows' units (``x_norm``: ||x||, ``block_norms``: each block's norm, in
        block order, when already measured)."""
        if self.weights is None:
            return float(norm(x)) if x_norm is None else x_norm
        if block_norms is not None:
            return math.sqrt(sum((w * block_norms[k]) ** 2 for k, (_, w) in enumerate(self.weights) if w > 0))
        return math.sqrt(sum((w * float(norm(x[sl]))) ** 2 for sl, w in self.weights if w > 0))


#: rows whose scale is more than this factor from the others' are rescaled to theirs (RowPieces.equilibration)
UNITS_APART = 10.0

#: a piece whose rows' norm is within this relative distance of the reference keeps its coefficients
#: (row_norm_equilibration: a factor of 1 up to rounding would move the iterates' last bits)
ROW_NORM_ROUNDING = 1e-12


def row_norm_equilibration(M, n, blocks=None):
    """Each row's unit and the factors that bring every constraint's rows to unit norm, one per row of M:
    ``(units, factors)``, ``factors`` None where none moves; ``(None, None)`` for an operator given
    without pieces (a user's LinearOperator).

    One penalty lam and one dual step serve every row of M, but a row
    a' x = b written times s is held by an effective penalty lam s^2 in its
    own units (the augmented term is lam/2 ||M x - b||^2), and the penalty
    is measured along M d (``schedules.default_penalty``) where the largest
    rows dominate: a row 5 to 50 times another's coefficients is held by a
    penalty 25 to 2,500 times weaker, its multiplier creeps, the
    penalty-raising rule doubles lam for it and the larger row oscillates
    (the sparse two-row model of benchmarks/row_pieces.py: 37 iterations in
    unit scale, 185 with one row times 5, max_iter at 50; benchmarks/RESULTS.md,
    "Rows a few times apart"). The same holds between the rows of one
    constraint: ``A @ x == b`` and ``G @ x <= h`` with rows in units 1e-3..1e3
    apart (data matrices whose rows are in different units) ended max_iter
    or "optimal" 5-25 % off Clarabel's value with one factor per constraint
    ("Rows apart inside one constraint"). Interior-point solvers equilibrate
    rows by their norms for the same reason (Ruiz, "A scaling algorithm to
    equilibrate both rows and columns norms in matrices", 2001; the row step
    of its iteration). Here every row that can be rescaled (the rows of an
    equality or inequality, ``scaled``) is multiplied by reference /
    ||m_i||, and the reference is the largest root mean square row norm of
    the pieces that cannot (the rows tying two copies, +-1: sqrt(2);
    marginalization rows), else 1: rows in the units of a distance to their
    hyperplane. With ``blocks`` (the solve's sets), the reference is raised
    where the sets show the rescaled rows held more weakly than the copies'
    ties (:func:`tie_level`). The factor is homogeneous of degree -1 in the
    row's coefficients, so the solve sees the same rows whatever factor each
    row was written times: the iterates are those of the model with its rows
    at unit norm. A single group of rows (M of one constraint) is rescaled
    too: left in its units, its iterations depended on them and a warm start
    after a Parameter moved them kept lam in the old units (max_iter).
    Rows of norm 0 keep theirs.

    ``units``: for a rescaled row its norm ``||m_i||``, divided by the
    factor by which :func:`tie_level` raised the reference above the ties'
    norm (the ties' norm over the row's factor); the root mean square row
    norm for the others. A warm start carries y row by row by their ratio
    (``fwal._carry_multipliers``), so a change of the level (a Parameter that
    moved a set's size) is carried too.
    """
    pieces, offsets = getattr(M, "pieces", None), getattr(M, "offsets", None)
    if not pieces or offsets is None or not any(hasattr(p, "scaled") for p in pieces):
        return None, None  # no row to rescale (tied copies only: their norms never move; no m-size arrays)
    norms = np.empty(int(offsets[-1]))
    factors = np.ones(norms.size)
    bounds = np.array([0, n], dtype=np.intp)
    reference = 0.0
    for p, lo, hi in zip(pieces, offsets[:-1], offsets[1:]):
        if hasattr(p, "scaled") and hasattr(p, "row_norms"):
            norms[lo:hi] = p.row_norms()
            continue
        total = np.zeros(1)  # the piece's root mean square row norm, ||M_g||_F / sqrt(rows)
        p.add_column_norms2(bounds, total)
        norms[lo:hi] = math.sqrt(max(float(total[0]), 0.0) / max(int(p.rows), 1))
        if not hasattr(p, "scaled"):
            reference = max(reference, float(norms[lo]))
    raised = 1.0  # the reference over the ties' norm (tie_level)
    if reference > 0 and blocks is not None:
        level = tie_level(pieces, offsets, norms, blocks, n)
        if level is not None and level > reference:
            raised, reference = level / reference, level
    reference = reference if reference > 0 else 1.0
    for p, lo, hi in zip(pieces, offsets[:-1], offsets[1:]):
        if hasattr(p, "scaled"):
            rows = norms[lo:hi]
            np.divide(reference, rows, out=factors[lo:hi], where=rows > 0)
            if raised != 1.0:
                rows /= raised  # the row's unit: 1 / factor up to the ties' norm (a warm start's ratio)
    # rows within rounding of the reference keep their exact coefficients
    factors[np.abs(factors - 1.0) <= ROW_NORM_ROUNDING] = 1.0
    return norms, (None if np.all(factors == 1.0) else factors)


#: at most this many rows of the copies' ties, and as many rescalable rows, are measured by :func:`tie_level`
#: (evenly spaced over them): two LMO calls per block a row touches
WIDTH_SAMPLE = 8
#: with a block larger than this, or one whose LMO may miss (``lmo_check``), :func:`tie_level` measures nothing
WIDTH_MAX_BLOCK = 100_000


def _width(blocks, starts, cols, vals):
    """The width of the row ``sum_j vals_j x_cols_j`` over the product of the blocks' sets: max - min over
    them, two LMO calls per block the row touches."""
    width = 0.0
    where = np.searchsorted(starts, cols, side="right") - 1
    for k in np.unique(where):
        blk = blocks[int(k)]
        g = np.zeros(blk.size)
        inside = where == k
        g[cols[inside] - blk.offset] = vals[inside]
        width += float(blk.lmo(-g).dot(g) - blk.lmo(g).dot(g))
    return width


def _evenly(count, sample):
    """At most ``sample`` indices of ``range(count)``, evenly spaced."""
    return np.unique(np.linspace(0, count - 1, min(count, sample)).round().astype(int)) if count else []


def tie_level(pieces, offsets, norms, blocks, n):
    """The norm at which the rescaled rows are held as firmly as the copies' ties along the sets, or None.

    A row's penalty lam/2 (a' x - b)^2 grows along a Frank-Wolfe move d
    with curvature lam (a' d)^2, and what a row sees of FW's moves is its
    width over the sets, max - min of a' x over them (two LMO calls per
    block it touches): a tie x_j - x'_j = 0 (norm sqrt 2) sees the range of
    one coordinate in each of two sets, a dense row at unit norm over a
    simplex the spread of its entries, ~ 2 sqrt(2 ln k / k) for k entries,
    a few times less. One lam then holds the rows several times more weakly
    than the ties next to them: on random models of benchmarks/trust_fuzz.py
    with tied copies in simplices and dense rows, 2-4x the iterations of
    rows in their own units (1308: 1,780 at sqrt 2, 334 at 4 sqrt 2, 540 with
    this level; no lam recovered it; benchmarks/RESULTS.md, "Rows next to
    tied copies raised to the ties' width"). Boxes and L2 balls want the
    level where it is: a dense row's width there is as large as a tie's,
    and this measure says so. Returns the norm that gives the rescaled rows
    the ties' mean width (``WIDTH_SAMPLE`` rows of each, evenly spaced):
    the ties' mean width over the unit rows'. Only the copies'
    ties are measured (``CopyRows``); None where there are none, where a
    block is larger than ``WIDTH_MAX_BLOCK`` or its LMO may miss, or where
    a width is 0. The caller only raises the reference with it: rows held
    below the ties' norm measure their feasibility more loosely in the
    model's units (a random model ended "optimal" with its inequality
    violated by 1.7e-3). Homogeneous of degree 0 in each row's coefficients.
    """
    from ..compiler.consistency import CopyRows, _positions
    if any(blk.size > WIDTH_MAX_BLOCK or blk.lmo_check is not None for blk in blocks):
        return None
    starts = np.array([blk.offset for blk in blocks])
    ties, rows = [], []  # (piece, row) of the copies' ties and of the rescalable rows
    for p, lo in zip(pieces, offsets[:-1]):
        if isinstance(p, CopyRows):
            copy, first = _positions(p.copy), _positions(p.first)
            ties += [(copy[i], first[i]) for i in _evenly(p.rows, WIDTH_SAMPLE)]
        elif hasattr(p, "scaled") and hasattr(p, "csr"):
            rows += [(p, lo, i) for i in _evenly(p.rows, WIDTH_SAMPLE) if norms[lo + i] > 0]
    if not ties or not rows:
        return None
    tie_widths = []
    for j in _evenly(len(ties), WIDTH_SAMPLE):
        cols = np.array(ties[j], dtype=np.intp)
        tie_widths.append(_width(blocks, starts, cols, np.array([1.0, -1.0])))
    unit_widths = []
    for j in _evenly(len(rows), WIDTH_SAMPLE):
        p, lo, i = rows[j]
        A = p.csr(n)
        span = slice(A.indptr[i], A.indptr[i + 1])
        unit_widths.append(_width(blocks, starts, A.indices[span], A.data[span] / norms[lo + i]))
    w_tie, w_unit = float(np.mean(tie_widths)), float(np.mean(unit_widths))
    if not (w_tie > 0 and w_unit > 0 and math.isfinite(w_tie / w_unit)):
        return None
    return w_tie / w_unit


class RowPieces:
    """Test (3) for each group of rows of M in units of its own: ``||r_g|| <= feas_tol * S_g``.

    M is a stack of pieces (:class:`fwmodel.compiler.consistency.ConsistencyOperator`):
    the rows tying two copies of a variable, the rows of one equality or
    inequality, one axis of a factor graph's marginalization rows. One
    feasibility scale for all of them holds the pieces in small units to the
    size of the large ones: least squares over ``x >= 0``, ``norm1(x) <= 1``
    and ``s * (x[0] + x[1]) >= s`` ended "optimal" with the copies of x 0.3
    apart (min x = -0.29, ||x||_1 = 1.9) at s = 1e6, whose row made the scale
    1e6, and with the row violated by a fifth of its size (x0 + x1 = 0.21) at
    s = 1e-6, whose row was held to x's size (benchmarks/RESULTS.md, "Rows in
    units of their own"). Interior-point solvers meet the same problem by
    equilibrating the rows; here each piece has its own scale, measured as the
    whole model's (the module docstring) from its own rows only:

        S_g = max(||b_g||, ||M_g x_ref||, max_t ||x_t||_g)

    (``point_scales``; the test's, without the vertex s_ref, as the whole
    model's; ``scales`` adds ||M_g s_ref|| and ||s_ref||_g, the sets' extent,
    for the equilibration and the infeasibility proof),

    where ``||x||_g`` counts the blocks piece g reads in its own units
    (:class:`RowUnits` with the column norms of the piece alone; the blocks it
    does not read count 0). Scaling one piece's rows scales both sides of its
    test, whatever the other pieces' units. The test applies to the pieces
    whose scale is more than ``UNITS_APART`` below the largest piece's (the
    others are in the model's units, and the whole residual's test holds
    them, see :meth:`observe_residual`). A model with one piece (two tied
    copies, one group of rows) keeps the single test; so does an operator
    given without pieces (a user's LinearOperator).
    """

    def __init__(self, offsets, scales, weights, slices):
        self.offsets = offsets  # rows offsets[g]:offsets[g + 1] are piece g's
        self.scales = scales  # S_g, raised by :meth:`observe_point`
        self.weights = weights  # (pieces, blocks): w_gk, 0 where piece g does not read block k
        self.slices = slices  # the blocks' slices of x
        self.ratio = 0.0  # max_g ||r_g|| / S_g at the last observed residual
        # test (3)'s S_g: the sizes of b_g and of the points in piece g's units, no vertex (set by :meth:`of`)
        self.point_scales = scales.copy()

    @classmethod
    def of(cls, blocks, Mop, b, x_ref, s_ref, Mx_ref, Ms_ref):
        """The pieces' scales at the reference point, or None where M has fewer than two pieces."""
        pieces, offsets = getattr(Mop, "pieces", None), getattr(Mop, "offsets", None)
        if pieces is None or offsets is None or len(pieces) < 2 or not blocks:
            return None
        slices = [blk.slice for blk in blocks]
        if any(a.stop != c.start for a, c in zip(slices, slices[1:])):
            return None
        bounds = np.asarray([sl.start for sl in slices] + [slices[-1].stop], dtype=np.intp)
        n = int(bounds[-1])
        rng = np.random.default_rng(0)
        weights = np.zeros((len(pieces), len(blocks)))
        for g, p in enumerate(pieces):
            sums = np.zeros(len(blocks))
            p.add_column_norms2(bounds, sums)
            # the columns the piece reads (M_g' z = 0 for a random z only on its columns of zeros)
            z = np.zeros(n)
            p.rmatvec(rng.standard_normal(p.rows), z)
            read = np.array([np.count_nonzero(z[sl]) for sl in slices], dtype=float)
            weights[g] = np.where(read > 0, np.minimum(1.0, np.sqrt(np.maximum(sums, 0.0) / np.maximum(read, 1.0))),
                                  0.0)
        scales = np.zeros(len(pieces))
        for g in range(len(pieces)):
            rows = slice(int(offsets[g]), int(offsets[g + 1]))
            terms = [norm(b[rows]), norm(Mx_ref[rows]) if Mx_ref is not None else 0.0,
                     norm(Ms_ref[rows]) if Ms_ref is not None else 0.0]
            scales[g] = max(float(v) for v in terms if math.isfinite(v))
        points = np.zeros(len(pieces))
        for g in range(len(pieces)):
            rows = slice(int(offsets[g]), int(offsets[g + 1]))
            terms = [norm(b[rows]), norm(Mx_ref[rows]) if Mx_ref is not None else 0.0]
            points[g] = max(float(v) for v in terms if math.isfinite(v))
        pieces_of = cls(np.asarray(offsets, dtype=np.intp), scales, weights, slices)
        pieces_of.point_scales = points
        pieces_of.observe_point(x_ref)
        pieces_of.observe_point(s_ref, vertex=True)
        return pieces_of

    def observe_point(self, x, vertex=False):
        """Raise each S_g to the size of x in piece g's units (test (3)'s too unless x is a ``vertex``);
        returns the blocks' norms (in block order)."""
        block_norms = np.array([float(norm(x[sl])) for sl in self.slices])
        if np.all(np.isfinite(block_norms)):
            sizes = np.sqrt(((self.weights * block_norms) ** 2).sum(axis=1))
            np.maximum(self.scales, sizes, out=self.scales)
            if not vertex:
                np.maximum(self.point_scales, sizes, out=self.point_scales)
        return block_norms

    def observe_residual(self, r):
        """max_g ||r_g|| / S_g over the pieces in units far below the largest piece's (S_g more than
        ``UNITS_APART`` below it): test (3) asks it <= feas_tol.

        Pieces within ``UNITS_APART`` of the largest are in the model's units, and the whole residual's
        test holds them as before pieces were measured (each held to its own scale, a piece half another's
        asked twice main's accuracy: a PSD-and-Birkhoff LP that took 9,068 of its 10,000 iterations ran
        out of them). A piece of scale 0 (no size at the reference point, its vertex or any iterate)
        has no units to be held to: the whole residual's test holds it.
        """
        worst = 0.0
        scales = self.point_scales
        for g in np.flatnonzero((scales > 0) & (scales * UNITS_APART < scales.max())):
            r_g = float(norm(r[self.offsets[g]:self.offsets[g + 1]]))
            worst = max(worst, r_g / scales[g])
        self.ratio = worst
        return worst

    def equilibration(self, pieces):
        """Factors per piece that bring the rows to common units where pieces are in units far apart, or None.

        One penalty and one dual step serve every row of M; a piece whose
        scale S_g is 10^6 times the others' dominates both (the copies of a
        variable next to a row in units of 10^6 got a penalty of 1e-10 and
        never met), and one 10^6 times smaller is ignored by them. Where the
        largest and the smallest scale of the pieces are more than
        ``UNITS_APART`` apart, every piece that can be rescaled (the rows of
        an equality or inequality; not the rows tying copies, which keep their
        +-1 structure) is multiplied by reference / S_g, the reference being
        the largest scale of the pieces that cannot (else of all): the
        equilibration of interior-point solvers, by piece. Models whose
        pieces are within that factor of each other are left as they are.
        """
        scalable = np.array([hasattr(p, "scaled") for p in pieces])
        positive = self.scales > 0
        if not np.any(scalable & positive):
            return None
        if not self.scales[positive].max() > UNITS_APART * self.scales[positive].min():
            return None
        fixed = positive & ~scalable
        reference = float(self.scales[fixed].max() if np.any(fixed) else self.scales[positive].max())
        factors = np.ones(self.scales.size)
        chosen = scalable & positive
        factors[chosen] = reference / self.scales[chosen]
        return None if np.all(factors == 1.0) else factors

    def combined_scale(self):
        """sqrt(sum_g S_g^2): a point meeting every piece's test has ||r|| <= feas_tol times this."""
        return float(np.sqrt(np.sum(self.scales ** 2)))


#: test (1b) holds the certified bound to tol * REL_FACTOR * |f(x_t)| (where below tol * S_f): the FW gap
#: is 10-1,000x the error near the optimum, so this asks about tol * |f| of the error itself (module docstring)
REL_FACTOR = 200.0
#: the looseness of the certified bound is read off the iterates whose bound was at most this many times
#: the current one (the last two decades of the solve: the FW gap's looseness grows as the iterates converge)
LOOSENESS_WINDOW = 100.0
#: where |f| is at most this fraction of S_f, (1b) asks nothing beyond (1): with (1) met, f* is then
#: certified within (REL_FLOOR + tol) S_f of 0, and f* ~ 0 has no relative accuracy
REL_FLOOR = 1e-5
#: a certified bound at most this many times the error, as measured (:attr:`StoppingRule.looseness`), is
#: "tight": it locates f*, and the "f* ~ 0" skip of (1b) is not taken (a ball's bound measured 1.03-2.5x;
#: a polytope's 10-1,000x, growing as the solve converges)
TIGHT_LOOSENESS = 10.0

#: the accuracy scale A_t is never finer than this fraction of the objective's range
#: (see the module docstring): where |f| is smaller, f is "about 0" at this tolerance
VALUE_FLOOR = 1e-2


class StoppingRule:
    """Tests (1)-(3) of the module docstring and keeps the scales.

    Build it with :meth:`from_reference`; then, on every iterate, call
    :meth:`observe_point` and :meth:`observe_value` (and
    :meth:`observe_objective_gap` while :attr:`needs_objective_scale`,
    :meth:`observe_bound` where the gap certifies) before :meth:`met`.
    """

    def __init__(self, tol, feas_tol, objective_scale, feasibility_scale):
        self.tol = tol
        self.feas_tol = feas_tol
        self.objective_scale = objective_scale
        self.feasibility_scale = feasibility_scale
        # test (3)'s scale: the sizes of b and of the points, no vertex (the module docstring); from_reference
        # measures it, feasibility_scale (the sets' extent) until then
        self.point_scale = feasibility_scale
        self._value = math.inf  # |f| at the last observed iterate (inf: none yet, A_t = the range)
        self._f = math.nan  # f at the last observed iterate (signed)
        # the best certified lower bound on f* seen: max_s f(x_s) + <w_s, r_s> - gap_s (:meth:`observe_bound`)
        self.lower_bound = -math.inf
        # the least and largest f seen at the points that meet test (3) (x_ref's and the iterates')
        self._low, self._high = math.inf, -math.inf
        self.row_units = RowUnits(None)  # points count at their own norm (from_reference measures the rows)
        self.row_pieces = None  # test (3) piece by piece (:class:`RowPieces`; from_reference measures them)
        self._pieces_rel = 0.0  # max_g ||r_g|| / S_g at the last observed residual
        # W_t: the sets' width along grad f at the last iterate where it was measured (inf: never);
        # the "f* ~ 0" floor of test (1b) is taken of min(S_f, W_t) (:meth:`observe_width`)
        self.width = math.inf
        # the evidence of the certified bound's looseness (:attr:`looseness`): per power of two of the bound,
        # the iterate of largest value with a bound there, (bound, f), among the iterates that meet (3)
        self._bounds_seen = {}
        self._bound_unit = None  # the first bound kept there (its levels are powers of two of it)
        # the looseness the last solve of a warm start ended with (:attr:`looseness` takes the smaller)
        self.prior_looseness = REL_FACTOR
        self._meets_feasibility = True  # whether the last observed iterate meets test (3)

    @classmethod
    def from_reference(cls, tol, feas_tol, objective, blocks, Mop, b, x_ref, grad_ref=None, Mx_ref=None,
                       keep=None, out=None, f_ref=None):
        """Measure G_ref and the set norms at ``x_ref`` (one gradient and one LMO per block).

        ``grad_ref`` is grad f(x_ref) and ``Mx_ref`` is M x_ref when the
        caller already has them (a cold start begins at x_ref: its residual
        r = M x_ref - b is formed anyway). ``keep``: a dict that receives
        what the default penalty needs from the same LMOs (the vertex
        ``s_ref`` and ``M s_ref``, see :func:`fwmodel.engine.schedules.default_penalty`),
        so the setup calls each LMO once; ``out``: an n-size array for s_ref.
        """
        if grad_ref is None:
            f_ref, grad_ref = objective.value_and_grad(x_ref)
        gap, s_ref = objective_gap(blocks, x_ref, grad_ref, with_vertex=True, out=out)
        if math.isfinite(gap) and gap > 0:  # rounding of the LMOs' values is no range (gap_at_rounding)
            gap = gap_at_rounding(gap, blocks, grad_ref, float(norm(x_ref)) + float(norm(s_ref)))
        objective_scale = float(gap) if math.isfinite(gap) and gap > 0 else 0.0
        row_units = RowUnits.of(blocks, Mop)
        norms = [norm(b), row_units.size(x_ref), row_units.size(s_ref)]
        Ms_ref = None
        if Mop.shape[0]:
            Ms_ref = Mop.matvec(s_ref)
            if Mx_ref is None:
                Mx_ref = Mop.matvec(x_ref)
            norms += [norm(Mx_ref), norm(Ms_ref)]
        feasibility_scale = max(float(v) for v in norms if math.isfinite(v)) if norms else 0.0
        rule = cls(tol, feas_tol, objective_scale, feasibility_scale)
        # the points' scale leaves out the vertex s_ref (norms[2]) and M s_ref: the sets' extent, not the points'
        points = [v for k, v in enumerate(norms) if k != 2 and k != 4]
        rule.point_scale = max((float(v) for v in points if math.isfinite(v)), default=0.0)
        rule.row_units = row_units
        feas_ref = 0.0
        if Mop.shape[0]:
            rule.row_pieces = RowPieces.of(blocks, Mop, b, x_ref, s_ref, Mx_ref, Ms_ref)
            # (b = 0, the tied copies' case: M x_ref itself, not a copy of it: 128 MB less at d = 4000)
            r_ref = Mx_ref if norms[0] == 0 else Mx_ref - b
            rule.observe_residual(r_ref)
            feas_ref = float(norm(r_ref))
        if f_ref is not None:  # x_ref's value counts in the values' spread where x_ref meets test (3)
            rule._see(f_ref, feas_ref)
        if keep is not None:
            keep.update(s_ref=s_ref, Ms_ref=Ms_ref)
        return rule

    # ------------------------------------------------------------ updates
    @property
    def needs_objective_scale(self):
        """True while G_ref = 0 and no iterate has given a positive FW gap of f yet."""
        return self.objective_scale == 0.0

    def observe_objective_gap(self, gap_f):
        """The FW gap of f (not of L) at an iterate: the first positive one becomes the scale."""
        if self.objective_scale == 0.0 and math.isfinite(gap_f) and gap_f > 0:
            self.objective_scale = float(gap_f)

    def observe_point(self, x_norm, x=None):
        """||x_t|| of an iterate (in the rows' units, :class:`RowUnits`, when ``x`` is given): both
        feasibility scales (the points' and the sets') are the largest size seen."""
        if x is not None:
            # the blocks' norms, measured once for the pieces' scales and the rows' units
            block_norms = self.row_pieces.observe_point(x) if self.row_pieces is not None else None
            x_norm = self.row_units.size(x, x_norm, block_norms)
        if math.isfinite(x_norm) and x_norm > self.feasibility_scale:
            self.feasibility_scale = float(x_norm)
        if math.isfinite(x_norm) and x_norm > self.point_scale:
            self.point_scale = float(x_norm)

    def observe_residual(self, r):
        """r_t = M x_t - b of the iterate the next tests are about: test (3) per piece of rows (:class:`RowPieces`)."""
        if self.row_pieces is not None:
            self._pieces_rel = self.row_pieces.observe_residual(r)

    def _see(self, f, feas=None):
        """f at a point with residual norm ``feas`` (after :meth:`observe_residual`): it counts in
        :attr:`value_spread` where the point meets test (3) (``feas`` None: it counts)."""
        self._meets_feasibility = feas is None or self.feas_rel(feas) <= self.feas_tol
        if math.isfinite(f) and self._meets_feasibility:
            self._low, self._high = min(self._low, float(f)), max(self._high, float(f))

    def observe_value(self, f, feas=None):
        """f(x_t) of the iterate the next tests are about (it sets the accuracy scale A_t); ``feas``:
        ||M x_t - b||, given after :meth:`observe_residual` (see :meth:`_see`)."""
        self._value = abs(float(f)) if math.isfinite(f) else math.inf
        self._f = float(f)
        self._see(f, feas)

    def observe_bound(self, f, bound):
        """A certified bound f(x_t) - f* <= ``bound`` (:func:`suboptimality_bound`; NaN: not certified) at an
        iterate of value f: f - bound is a lower bound on f* (weak duality), kept where it is the best seen."""
        if math.isfinite(bound) and math.isfinite(f):
            self.lower_bound = max(self.lower_bound, float(f) - float(bound))
            # the bound (1b) reads at this iterate, kept as evidence of its looseness at a point of the problem
            certified = min(float(bound), float(f) - self.lower_bound)
            if self._meets_feasibility and certified > 0:
                # levels relative to the first bound kept: the same levels in any units of f
                if self._bound_unit is None:
                    self._bound_unit = certified
                level = math.frexp(certified / self._bound_unit)[1]
                kept = self._bounds_seen.get(level)
                if kept is None or f > kept[1]:
                    self._bounds_seen[level] = (certified, float(f))

    @property
    def looseness(self):
        """How many times the certified bound exceeds the true error f(x) - f*, as measured on the iterates:
        the least ``B_s / (f(x_s) - f(x_t))`` over the earlier iterates s that meet test (3) with a bound
        B_s at most ``LOOSENESS_WINDOW`` times the current one (f(x_s) - f(x_t) <= f(x_s) - f*: each ratio
        is at least the looseness at s), between 1 and ``REL_FACTOR`` (no evidence: ``REL_FACTOR``).

        Test (1b) holds the bound to tol * looseness * |f| (:attr:`relative_scale`): the FW gap is 10-1,000x the
        error near a polytope's optimum, where the values stop falling while the bound still does, and the
        factor stays ``REL_FACTOR``; on a ball much wider than the data's scale the bound was 1.3-1.9x the
        error, and a fixed factor of 200 let "optimal" end 1.9 % above f* (benchmarks/tight_bounds.py).

        A warm start takes at most the looseness its last solve ended with (``prior_looseness``): started near
        the optimum, its values hardly fall while the bound does (the lower bound rising), which reads as a
        loose bound, and a warm start on a wide ball after a small change of b ended "optimal" 0.4-1.1 % above
        f* with a measured factor of 173 where the cold solve had measured 1-2."""
        return self._looseness(min(max(self.prior_looseness, 1.0), REL_FACTOR))

    def _looseness(self, prior):
        """:attr:`looseness` with the given ``prior`` (what it is without evidence, and at most)."""
        if not self._bounds_seen or not math.isfinite(self._f) or not self._meets_feasibility:
            return prior
        current = max(self._f - self.lower_bound, 0.0)
        ratio = prior
        for bound, f in self._bounds_seen.values():
            drop = f - self._f
            if drop > 0 and bound <= LOOSENESS_WINDOW * current:
                ratio = min(ratio, bound / drop)
        return max(ratio, 1.0)

    def observe_width(self, width):
        """W_t = max - min of <grad f(x_t), s> over the sets, at the iterate last given to
        :meth:`observe_value`: the floor of test (1b) is then taken of min(S_f, W_t) (the module docstring)."""
        if math.isfinite(width) and width >= 0:
            self.width = float(width)

    @property
    def floor_skips(self):
        """Whether test (1b) asks nothing at the last observed iterate: |f(x_t)| <= REL_FLOOR * min(S_f, W_t)
        where the certified bound is loose (:attr:`looseness` above ``TIGHT_LOOSENESS``).

        The skip is there because a loose bound cannot certify f* ~ 0 to any relative accuracy. A bound
        measured tight is a measurement of f* itself (f* is about f(x_t) - B_t / l_t): there (1b) is met
        as f* is approached, and a small |f(x_t)| says nothing of f*. On a ball 100x wider than the data,
        f on its way down to f* = -12.95 crossed 0 at f = 0.017 with the bound 19.9 (looseness 2.15), and
        the skip ended the solve "optimal" 100 % off; with f* at -1e-3 of the objective's terms, 14-18x
        |f*| off at R = 1,000. Measured: every such model within 1e-4 of f* (or of 1e-4 of the terms
        where f* ~ 0, Clarabel's f* subtracted; benchmarks/crossing_zero.py), and the trust fuzz unchanged.
        The looseness read here is this solve's own (a warm start's prior does not count, see below)."""
        if self._value > REL_FLOOR * min(self.objective_scale, self.width):
            return False
        # this solve's own evidence only: a warm start's prior (its last solve's looseness, 1-2 on a ball) is a
        # cap for (1b), and as the reading here it kept a warm start whose new f* = 0 lies inside the ball
        # from the skip: max_iter, where the cold solve's own bound reads loose and stops in 58-74 iterations
        return self._looseness(REL_FACTOR) > TIGHT_LOOSENESS

    @property
    def relative_scale(self):
        """R_t = min(S_f, l_t * |f(x_t)|) with l_t the measured :attr:`looseness`, or S_f where
        |f(x_t)| <= REL_FLOOR * min(S_f, W_t): what test (1b) holds the certified bound to (the module docstring)."""
        return self._relative_scale(self.looseness)

    def _relative_scale(self, factor):
        if self.floor_skips:  # f* certified tiny: the range is the scale
            return self.objective_scale
        return min(self.objective_scale, factor * self._value)

    def bound_rel(self, gap, dual_residual=0.0, factor=None):
        """The certified bound at the last observed iterate (the smaller of gap - <w, r> and
        f(x_t) - the best lower bound seen) over R_t: (1b) holds when this is <= tol. ``factor``: the
        bound's looseness to take instead of the measured one (:meth:`merit` compares iterates under one)."""
        scale = self.relative_scale if factor is None else self._relative_scale(factor)
        if not scale < self.objective_scale:
            return 0.0
        bound = min(gap - dual_residual, self._f - self.lower_bound)
        return self._ratio(bound, scale)

    @property
    def value_spread(self):
        """max - min of f over the points seen that meet test (3) (x_ref where it does, and the iterates;
        0 before two values): the objective's range over the points of the problem, not over the sets."""
        return self._high - self._low if self._high > self._low else 0.0

    @property
    def accuracy_scale(self):
        """A_t = min(range, max(|f(x_t)|, VALUE_FLOOR * min(range, spread))): what (2) is relative to.

        The floor is taken of the values' spread over the points seen that meet test (3)
        (:attr:`value_spread`: a starting point far off the rows does not count) where smaller
        than the range S_f: S_f is f's FW gap over the sets, and a loose box (``abs(y) <= 1e6`` around a
        solution of norm 3) makes it ~ B ||grad f||_1, so that 1 % of it let ``<y + lam r, r>`` hide an
        error of 3.5e-4 of |f*| (benchmarks/RESULTS.md, "A loose box around the solution")."""
        floor = VALUE_FLOOR * min(self.objective_scale, self.value_spread)
        return min(self.objective_scale, max(self._value, floor))

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

    def dual_rel(self, dual_residual, objective_gap=None):
        """|<y + lam r, r>| / A_t: (2) holds when this is <= tol (0 where the objective scale is still 0)."""
        if objective_gap is not None and objective_gap <= 0:
            return 0.0
        return self._ratio(abs(dual_residual), self.accuracy_scale)

    def feas_rel(self, feas):
        """||Mx - b|| / point_scale, or the largest ||r_g|| / S_g of the pieces of rows at the last
        observed residual (:class:`RowPieces`) where larger: (3) holds when this is <= feas_tol."""
        return max(self._ratio(feas, self.point_scale), self._pieces_rel)

    def pieces_excess(self, feas):
        """How many times further the worst piece of rows is from its test than ||Mx - b|| from the whole
        model's (1: no piece is; the dual schedule and the certificate aim at the pieces' test)."""
        whole = self._ratio(feas, self.point_scale)
        if self._pieces_rel <= whole:
            return 1.0
        return self._pieces_rel / whole if whole > 0 else math.inf

    def gap_target(self):
        """tol * R_t (tol * objective_scale where |f| is in the range's scale): the FW gap the solve aims at
        (dual schedules and lazy steps use it; test (1b) asks the certified bound for it)."""
        return self.tol * self.relative_scale

    def feasibility_target(self):
        """feas_tol * point_scale: the ||Mx - b|| the solve has to reach."""
        return self.feas_tol * self.point_scale

    def proof_target(self):
        """The lower bound on ||Mx - b|| over the sets that proves no point meets (3): feas_tol times the
        smaller of the feasibility scale and sqrt(sum_g S_g^2) (every piece's test met bounds ||r|| by that)."""
        if self.row_pieces is None:
            return self.feas_tol * self.feasibility_scale
        return self.feas_tol * min(self.feasibility_scale, self.row_pieces.combined_scale())

    def met(self, gap, feas, objective_gap=None, dual_residual=0.0):
        """(1), (1b), (2) and (3) at the iterate last given to :meth:`observe_value` (and, for (1b), the
        bounds given to :meth:`observe_bound`); ``dual_residual`` = <y + lam r, r>."""
        return (self.gap_rel(gap, objective_gap) <= self.tol and self.feas_rel(feas) <= self.feas_tol
                and self.dual_rel(dual_residual, objective_gap) <= self.tol
                and self._bound_rel(gap, objective_gap, dual_residual) <= self.tol)

    def _bound_rel(self, gap, objective_gap, dual_residual, factor=None):
        if objective_gap is not None and objective_gap <= 0:
            return 0.0
        return self.bound_rel(gap, dual_residual, factor)

    def merit(self, gap, feas, objective_gap=None, dual_residual=0.0):
        """How far an iterate is from meeting (1)-(3) (<= 1: met), for keeping the best point.

        Test (1b) counts at the fixed factor ``REL_FACTOR``: the measured looseness falls as evidence comes
        in, and merits taken under different factors made a late, good iterate look worse than an early one
        (a ball 10^4 wide returned f = 2.9e4 against f* = 15)."""
        return max(self.gap_rel(gap, objective_gap) / self.tol, self.feas_rel(feas) / self.feas_tol,
                   self.dual_rel(dual_residual, objective_gap) / self.tol,
                   self._bound_rel(gap, objective_gap, dual_residual, REL_FACTOR) / self.tol)
