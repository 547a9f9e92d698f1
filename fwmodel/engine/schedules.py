"""Dual step sizes eta_t and the penalty lam.

The dual update of FW-AL (paper eq. fwal) is y_{t+1} = y_t + eta_t (M x_{t+1} - b).
Units: y has the units of f / ||Mx - b|| and lam those of f / ||Mx - b||^2, so
eta is measured in units of lam; every schedule below is a multiple of lam.

Schedules (the ``eta`` option):

* a number: constant eta_t = eta.
* a callable ``eta(t)``: any user schedule.
* "theorem2": eta_t = lam * 2 / (t + 2), the decreasing schedule of Theorem 2
  (the paper's constant min(2/lam, alpha^2 / (2 delta)) involves unknown
  problem constants; we take its dimensionally consistent upper bound lam).
* "theorem3": the constant eta = lam * rho_A / 4 of Theorem 3, with the
  (unknown, <= 1) geometric-decrease constant rho_A taken as 1: eta = lam/4.
* "adaptive" (the default, None): see :class:`AdaptiveMultiplier`.
"""
from __future__ import annotations

import math

import numpy as np


class ConstantSchedule:
    def __init__(self, eta):
        self.current = float(eta)

    def step(self, t, **info):
        return self.current

    def penalty(self, lam):
        return lam


class CallableSchedule:
    def __init__(self, fn):
        self.fn = fn
        self.current = float(fn(0))

    def step(self, t, **info):
        value = float(self.fn(t))
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"the eta schedule returned {value!r} at iteration {t}; it must be a nonnegative number")
        self.current = value
        return value

    def penalty(self, lam):
        return lam


class Theorem2Schedule:
    """eta_t = eta0 * 2 / (t + 2) (paper, Theorem 2)."""

    def __init__(self, eta0):
        self.eta0 = eta0
        self.current = eta0

    def step(self, t, **info):
        self.current = self.eta0 * 2.0 / (t + 2.0)
        return self.current

    def penalty(self, lam):
        return lam


class AdaptiveMultiplier:
    """The default: method-of-multipliers steps, throttled by feasibility progress.

    Reasoning. With an exact inner minimization the augmented Lagrangian
    method takes eta = lam (Hestenes-Powell). FW-AL takes a single FW step per
    dual step, so a full step eta = lam overshoots while x lags behind: that
    is what makes eta = lam oscillate. A small constant eta (Theorem 3) is
    stable but slow, and 2/(t+2) (Theorem 2) stalls once it has decayed. We
    keep eta_t = theta_t * lam and adapt theta_t in [0.02, 1], starting at
    the Theorem 3 value 1/4, from the observed feasibility ||Mx - b|| over
    windows of ``window`` dual steps (the best value in each window):

    * it grew (the dual overshoots): theta is halved; and if theta was one
      the rule itself had raised (above the start 1/4) and had held for the
      whole window, no later growth goes above ``ceiling_factor`` (0.6)
      times it (``ceiling``). The same back-off with memory as the
      slow-start threshold of TCP congestion control (Jacobson 1988, after a
      loss the window grows fast again only up to half the window at which
      the loss occurred). Without it theta climbed back by 1.5x per good
      window to just above where it had overshot and overshot again: on the
      capped portfolio of the model zoo, 0.56 -> 0.28 -> 0.63 -> 0.32 ->
      0.71 -> 0.36 -> 0.8 -> 0.4, a window or two of growing infeasibility
      each time (418 iterations at data seed 0; 243-446 over data seeds
      0-13 with the ceiling against 373-689 without, fewer at every seed;
      benchmarks/RESULTS.md, "A memory of dual overshoots"). An overshoot at
      the starting theta, or in the window right after a raise, sets no
      ceiling: early on feasibility grows from the starting point while x
      moves to the sets, and a window that straddles a raise measures the
      transition more than the new theta. A ceiling from those took the TV
      denoiser from 256 to 513 iterations (data seed 1) and a tutorial's
      alignment model from 320 to 440;
    * it shrank by at least the factor ``good`` (0.7), or it shrank at all
      while the multiplier test is the one the stopping rule waits for
      (|<y + lam r, r>| relative to its target, test (2) of
      :mod:`fwmodel.engine.stopping`, at least the FW gap's and
      ||Mx - b||'s relative to theirs): theta grows toward 1. A steady
      decrease is the sign that the current theta is stable, and when the
      multipliers are what remains to converge a larger dual step shortens
      that phase. Measured on the model zoo (benchmarks/RESULTS.md, "Model
      zoo"): with ``good`` alone theta stayed at 0.28-0.375 while
      feasibility shrank by 0.87-0.95 per window, and the TV denoiser took
      1,255 iterations (data seed 0) and 3,323 (seed 5), against 430 and
      847 now; growing theta on any steady decrease whatever binds cost the
      capped portfolio up to 1.6x (seeds 0-5), whose count is unchanged now;
    * it stalled while the primal step has converged for the current y
      (FW gap of L(., y) <= lam ||Mx - b||^2, i.e. the penalty term is not
      small next to what FW still has to do): the dual is the bottleneck, so
      theta doubles (up to the ceiling), and once theta is at the ceiling
      (1 unless an overshoot lowered it) the penalty lam doubles, as augmented
      Lagrangian practice raises the penalty when feasibility stalls. When
      the gap is larger, FW itself is the bottleneck and nothing changes:
      raising lam would only slow FW down.

    The penalty also goes up where the multipliers drift (augmented
    Lagrangian practice raises lam when the violation does not fall by a
    fixed factor, Bertsekas 1982, sec. 2.2, but that test alone cannot tell
    a penalty too weak from FW's own sublinear pace): over each window, the
    coherence ||y_t - y_{t-W}|| / sum_s eta_s ||r_s|| (y's displacement over
    the length of its path) is near 1 when every dual step went the same way,
    i.e. x has settled for each y and y walks at a steady pace toward
    multipliers far away: the residual r keeps its direction and size. Under
    FW's own pace x zigzags between vertices, r turns from step to step and
    the coherence is small. When ``drift_windows`` (5) windows in a row are
    coherent (>= ``drift_coherence``, 0.97), none grew (an overshoot is
    coherent too) and feasibility, above its target, did not halve across
    them or fell at a pace that would not reach the target in as many
    windows again (``feas * (feas / first) > target``), lam is multiplied by
    ``drift_factor`` (4). The pace test: a portfolio with a risk bound whose
    default lam was 100x too small had feasibility falling by 0.7 per window
    for 600 iterations, coherent all along, and lam rose x4 only every 400
    (1,715 iterations; 466 with the pace test, 169 at lam = 1; models
    0-1599 of benchmarks/trust_fuzz.py: see benchmarks/RESULTS.md, "The
    drift rule's pace test"). Beyond
    ``drift_sample`` rows the rule watches every k-th entry of y and r (no
    second copy of a y with one entry per matrix entry). Measured
    (benchmarks/RESULTS.md, "Randomized cross-check", "A drift rule"): three
    random models whose default lam was 10-10^4 times too small went from
    max_iter to "optimal" in 1,090-1,740 iterations (coherence > 0.9 in
    95-100 % of their windows), while plain FW on the capped portfolio, the
    row-stochastic and the Potts models had no window above 0.9; the
    defaults' iterates on the model zoo are unchanged. 0.97 rather than
    0.9: at 0.9 the TV denoiser's residual, which drifts at times, raised
    lam at data seed 5 (847 -> 1,089 iterations); at 0.97 it does not.

    The penalty also comes down where the FW gap is what keeps the solve
    from stopping (residual balancing, as in ADMM practice, Boyd et al. 2011,
    sec. 3.4.1, on the stopping rule's own relative measures): at the end of
    a window, when the FW gap relative to its target (test (1) of
    :mod:`fwmodel.engine.stopping`) is more than ``balance`` (10) times the
    larger of ||Mx - b|| and |<y + lam r, r>| relative to theirs (tests (3)
    and (2); ||Mx - b||'s ratio taken times feas_tol / tol, in the FW gap's
    units, so that targets the caller set apart do not read as a lag:
    ``_balance``), lam is halved, down to ``lam0 / 16``: a penalty stiffer than
    the constraints need slows every FW step. It is never raised this way:
    on the TV denoiser, raising lam when the multiplier test lagged took 3x
    the iterations. Not once every block moves by projections on tied
    copies of a quadratic (unbounded, halving took lam from 0.5 to 6e-8 on
    a small L2-ball model and stalled it; see ``primal_steps_are_projections``
    for projections through general rows, where it pays). Measured: simplex
    with three equality rows 335 -> 151 iterations, the other zoo models unchanged.
    A residual that grows over the window after lam was lowered is the
    weaker penalty's doing, not a dual overshoot: theta is not halved for
    it. Each halving had halved theta too (a random model of
    benchmarks/trust_fuzz.py with two inequalities: lam halved three times,
    theta 0.25 -> 0.031, after which the residual fell by 0.79 per window,
    never by ``good``: 513 iterations, 134 without those halvings; models
    0-1599: 197,189 -> 192,949 iterations in all, 0 flagged, no status
    changed; benchmarks/RESULTS.md, "Rows next to tied copies raised to the
    ties' width").

    Oscillations of y. The dual step integrates the residual while x
    relaxes toward the minimizer of L(., y) at FW's own linear rate rho
    (the geometric constant of Theorem 3): a second-order loop, damped only
    when eta <= lam rho / 4, Theorem 3's step (the loop's critical damping).
    Where rho is small (a hinge row at its kink and two entries of x inside
    their box: the primal steps contract by 0.998 per iteration even at the
    optimal y), every theta the rules above allow is too large, and y circles
    its optimum with a period of hundreds of iterations while the rules
    raise and halve theta in step with the circling, which sustains it
    (a 5 x 8 hinge budget: max_iter at 10,000 iterations, y_0 swinging
    between 0 and 0.56 around 0.22). The center of such an oscillation is
    the mean of y over a half-period, as the ergodic averages of
    primal-dual methods converge where their iterates circle: at the end of
    a window where y's displacement turns back against the previous
    window's (a negative inner product), closing a half-period of at least
    ``oscillation_windows`` (3) windows since y last turned back, under a lam
    that moved by at most ``oscillation_lam_change`` (1.5) meanwhile, y is
    set to its mean over that half-period. A monotone approach never turns
    back, and FW's zigzag between vertices turns back every window or two:
    neither is touched; nor is y's answer to a penalty that moved (the
    start's halvings of lam on a TV denoiser, n = 600: moved there, y
    took it from 1,257 iterations to max_iter). Only where y has at most ``drift_sample`` entries
    (the sum of y is a second copy). Measured (benchmarks/RESULTS.md,
    "Oscillations of the multipliers on hinge budgets"): 300 data seeds of
    that model, 42,473 -> 32,747 iterations, the max_iter one "optimal" in
    4,353, the next slowest 3,302 -> 993; benchmarks/trust_fuzz.py models
    0-399 43,577 -> 44,055 iterations, 0 flagged, none 1.2x slower.

    Geometric approaches of y. Where x follows each y closely (projection
    steps) and lam is held, y approaches its limit y* geometrically: each
    window's displacement D_k is the last one's times a steady q < 1, in the
    same direction, and y* = y + D_k q / (1 - q), the rest of the series
    (Aitken's delta-squared extrapolation, applied to the dual iterates of
    the method of multipliers, whose error contracts linearly by a fixed
    factor near y*). With q close to 1 that rest is hundreds of windows:
    a small positive bound d_0 = 1e-4 on a PSD diagonal (its multiplier's
    ratio lam / (lam + c), c the value's curvature in d_0, gave q = 0.998 per
    window; 3,454 iterations) and an L1 ball with a halfspace near a vertex
    and an L2 ball around the L1 ball's optimal region (the copies'
    consistency rows carry the halfspace's multiplier to the second copy;
    q = 0.98, 9,566 iterations). At the end of a window, when the last
    ``extrapolation_windows`` (4) displacements under one lam each turned by
    less than ``extrapolation_cosine`` (0.999) and their ratios agree to
    ``extrapolation_spread`` (0.2 %) of q, ``extrapolation_q`` (0.5 <= q <
    0.9995), y moves to that limit. A zigzag, an oscillation (turning back),
    FW's vertex-to-vertex pace and any change of lam break one of the
    conditions. Measured (benchmarks/RESULTS.md, "Small degenerate models"):
    3,454 -> 1,746 and 9,566 -> 2,442 iterations on the two models; the
    model zoo's and the tutorials' iterates (benchmarks/fingerprint.py) are
    unchanged, and so are benchmarks/trust_fuzz.py's models 0-399; of models
    400-799, 3 changed (625 -> 340, 540 -> 659, 349 -> 360 iterations).
    """

    window = 20
    ceiling_factor = 0.6
    good = 0.7
    steady = 1.0
    stall = 0.95
    theta_min = 0.02
    balance = 10.0
    lam_min_factor = 1.0 / 16
    drift_coherence = 0.97
    drift_windows = 5
    drift_factor = 4.0
    #: at most this many entries of y and r are watched by the drift rule (every k-th of longer
    #: ones): the copy of y it keeps stays small where y has one entry per matrix entry
    drift_sample = 4096
    #: a half-period of y's oscillation spans at least this many windows before y is moved to its center
    oscillation_windows = 3
    #: ... under a lam that moved by at most this factor since the half-period began
    oscillation_lam_change = 1.5
    #: a geometric approach of y is read from this many windows' displacements (``_extrapolate``) ...
    extrapolation_windows = 4
    #: ... each turning from the last by less than this cosine ...
    extrapolation_cosine = 0.999
    #: ... shrinking by ratios q within this range ...
    extrapolation_q = (0.5, 0.9995)
    #: ... that agree to this fraction of q
    extrapolation_spread = 0.002

    def __init__(self, lam, theta=0.25, max_growth=1e4):
        self.theta = theta
        self.theta0 = theta
        self.ceiling = 1.0  # the largest theta growth may reach (lowered by overshoots, class docs)
        self._raised_last = False  # the last window ended with a raise of theta
        self._lam_lowered = False  # the balance rule lowered lam at the end of the last window
        self.lam0 = lam
        self.lam = lam
        self._last_direction = None  # +1 / -1: the last move of lam by a rule (_damp_reversal)
        self._move_scale = 1.0  # the rules' moves in log scale, halved at each reversal
        self.max_growth = max_growth
        self.current = theta * lam
        self._steps = 0
        self._ref = None
        self._pending_lam = None
        self._window_min = np.inf
        self._y_ref = None  # y at the start of the window (a copy, taken once per window)
        self._drift_path = 0.0  # sum of eta_t ||r_t|| over the window: the length of y's path
        self._drift_feas = []  # best feasibility of the windows of the current coherent run (and the one before)
        # the oscillation rule's state (_center_oscillation): the sum of y and its count since y last turned
        # back, y at the window's start, the last window's displacement, whether y has turned back before
        self._osc_sum = self._osc_ref = self._osc_last = None
        self._osc_count = self._osc_windows = 0
        self._osc_turned = False
        self._ex_ref = self._ex_moves = self._ex_lam = None  # the extrapolation's state (_extrapolate)
        self.extrapolations = 0  # y moved to the limit of a geometric approach this many times
        self._osc_lam = None  # lam when the half-period began: a half-period under another lam is not measured

    def primal_steps_are_projections(self, keep_lam=True):
        """Every block now moves by projected-gradient steps: take the multiplier step eta = lam.

        The small start (theta = 1/4) guards against FW's inexact primal steps.
        A projected-gradient step with exact line search on L(., y) moves every
        entry at once, close to the inner minimization of the method of
        multipliers, whose step is eta = lam (Hestenes-Powell). Measured
        (benchmarks/RESULTS.md, "Trace-norm defaults"): on L1 ∩ trace-norm
        models with both copies projected, eta = lam took 43-61 iterations
        where the adaptive start took 93-111, with the same answers; the
        adaptive rule still halves theta if feasibility grows.

        ``keep_lam``: no halving of lam by the balance rule from now on (the
        driver's choice for tied copies of a quadratic, the case measured
        above). Elsewhere the rule stays: a projected-gradient step is
        ``1 / L_c`` long and L_c includes the penalty's lam ||M d||^2 /
        ||d||^2, so a penalty stiffer than the rows need shortens every step
        (``fwal._multiplier_step_of_projections``; least squares in an L1 ball
        with 3 equality rows: 1,314 iterations with lam kept, 212 with the
        rule; the halving stops at ``lam0 / 16``).
        """
        self.theta = 1.0
        self.ceiling = 1.0  # overshoots measured under FW steps say nothing about projected ones
        self.current = self.lam
        if keep_lam:
            self.balance = math.inf

    def step(self, t, feas=None, lam=None, gap=None, gap_target=0.0, feas_target=0.0, dual_residual=0.0,
             dual_target=0.0, y=None, r=None, feas_units=1.0, **info):
        if lam is not None:
            self.lam = lam
        self._steps += 1
        feas_now = feas  # this step's ||Mx - b|| (``feas`` becomes the window's best below)
        multiplier_binds = False  # test (2) of the stopping rule is the furthest from its target
        if self._steps % self.window == 0 and feas is not None and gap is not None:
            # each test of the stopping rule relative to its target (None: no target to compare with)
            gap_ratio = gap / gap_target if gap_target > 0 else None
            feas_ratio = feas / feas_target if feas_target > 0 else None
            dual_ratio = abs(dual_residual) / dual_target if dual_target > 0 else 0.0
            if gap_ratio is not None and feas_ratio is not None:
                multiplier_binds = dual_target > 0 and dual_ratio >= max(gap_ratio, feas_ratio)
            self._balance(gap_ratio, feas_ratio, dual_ratio, feas_units)
        if feas is not None:
            # FW iterates are noisy: compare the best feasibility of each
            # window with the previous window's best.
            self._window_min = min(self._window_min, feas)
        if feas is not None and self._steps % self.window == 0:
            feas, self._window_min = self._window_min, np.inf
            grew = False
            if self._ref is not None and self._ref > 0:
                ratio = feas / self._ref
                theta_before = self.theta
                grew = ratio > 1.05
                if grew and self._lam_lowered:
                    pass  # the residual grew under a penalty just lowered: its doing, not an overshoot (class docs)
                elif grew:
                    if self.theta > self.theta0 and not self._raised_last:  # a raised theta, held, overshot
                        self.ceiling = max(min(self.ceiling, self.ceiling_factor * self.theta), self.theta_min)
                    self.theta = max(self.theta * 0.5, self.theta_min)
                elif ratio < self.good or (ratio < self.steady and multiplier_binds):
                    self.theta = max(self.theta, min(self.theta * 1.5, self.ceiling))
                elif ratio > self.stall and gap is not None and gap <= self.lam * feas * feas:
                    if self.theta < self.ceiling:
                        self.theta = min(self.ceiling, 2.0 * self.theta)
                    elif self.lam < self.max_growth * self.lam0:
                        self._pending_lam = self.lam * 2.0
                self._raised_last = self.theta > theta_before
            self._lam_lowered = False
            self._ref = feas
            if y is not None:
                self._drift(y, feas, feas_target, grew)
        if y is not None and y.size <= self.drift_sample:
            self._center_oscillation(y)
            self._extrapolate(y)
        self.current = self.theta * self.lam
        if r is not None and r.size > self.drift_sample:
            self._drift_path += self.current * float(np.linalg.norm(self._watched(r)))
        elif feas_now is not None:
            self._drift_path += self.current * feas_now
        return self.current

    def _extrapolate(self, y):
        """Move y to the limit of a geometric approach (class docs, "Geometric approaches of y").

        Called at every dual step with y_t (before the step); acts at the end of a window. The last
        ``extrapolation_windows`` displacements of y over a window, D_1 .. D_k, under one lam: when each
        turns from the one before by less than ``extrapolation_cosine`` and their lengths shrink by ratios
        q that agree to ``extrapolation_spread`` of q, with ``extrapolation_q[0] <= q < extrapolation_q[1]``,
        y moves by D_k q / (1 - q), the rest of the geometric series (Aitken's delta-squared limit).
        """
        if self._steps % self.window:
            return
        if self._ex_ref is None or self._ex_ref.shape != y.shape:
            self._ex_ref, self._ex_moves, self._ex_lam = y.copy(), [], self.lam
            return
        moved = y - self._ex_ref
        np.copyto(self._ex_ref, y)
        if self.lam != self._ex_lam or self._osc_last is None:
            # a new lam, or y just centered by the oscillation rule: the series starts again
            self._ex_moves, self._ex_lam = [], self.lam
            return
        self._ex_moves = (self._ex_moves + [moved])[-self.extrapolation_windows:]
        if len(self._ex_moves) < self.extrapolation_windows:
            return
        norms = [float(np.linalg.norm(d)) for d in self._ex_moves]
        if min(norms) <= 0.0:
            return
        ratios = [b / a for a, b in zip(norms, norms[1:])]
        q = ratios[-1]
        if not (self.extrapolation_q[0] <= q < self.extrapolation_q[1]
                and max(ratios) - min(ratios) <= self.extrapolation_spread * q):
            return
        if any(float(np.dot(a, b)) < self.extrapolation_cosine * na * nb
               for a, b, na, nb in zip(self._ex_moves, self._ex_moves[1:], norms, norms[1:])):
            return
        y += (q / (1.0 - q)) * moved
        self._ex_moves = []
        np.copyto(self._ex_ref, y)
        # the drift and oscillation rules measure from here: the jump is not a dual step's
        if self._y_ref is not None and self._y_ref.shape == y.shape:
            np.copyto(self._y_ref, y)
        if self._osc_ref is not None and self._osc_ref.shape == y.shape:
            np.copyto(self._osc_ref, y)
            self._osc_last = None
        self.extrapolations += 1

    def _center_oscillation(self, y):
        """At a reversal of y's course that closes a half-period of ``oscillation_windows`` windows or more, y
        becomes its mean over that half-period, the oscillation's center (class docs, "Oscillations of y").

        Called at every dual step with y_t (before the step): y is summed; at the end of each window its
        displacement over the window is compared with the previous window's, and a negative inner product
        (y turned back) ends a half-period.
        """
        if self._osc_sum is None or self._osc_sum.shape != y.shape:
            self._osc_sum, self._osc_ref = np.zeros_like(y), y.copy()
            self._osc_count, self._osc_windows, self._osc_last, self._osc_turned = 0, 0, None, False
        self._osc_sum += y
        self._osc_count += 1
        if self._steps % self.window:
            return
        moved = y - self._osc_ref
        self._osc_windows += 1
        last, self._osc_last = self._osc_last, moved
        if last is not None and float(np.dot(moved, last)) < 0:  # y turned back: a half-period ends here
            # a half-period under a lam that moved further is y's response to the new penalty (the start's
            # halvings of lam: a move there took a TV model to max_iter), not an oscillation around an optimum
            lam_held = (self._osc_lam is not None
                        and max(self.lam / self._osc_lam, self._osc_lam / self.lam) <= self.oscillation_lam_change)
            if self._osc_turned and self._osc_windows >= self.oscillation_windows and lam_held:
                y[...] = self._osc_sum / self._osc_count
                self._osc_last = None  # the next half-period is measured from the center
                if self._y_ref is not None and self._y_ref.shape == y.shape:
                    # the drift rule measures the next window from here too: the move is not a dual step's
                    # (counted as one, it made y's course look coherent and raised lam: a TV model to max_iter)
                    np.copyto(self._y_ref, y)
            self._osc_turned = True
            self._osc_lam = self.lam
            self._osc_sum.fill(0.0)
            self._osc_count = self._osc_windows = 0
        np.copyto(self._osc_ref, y)

    def _watched(self, v):
        """The entries of y (or r) the drift rule watches: all, or every k-th beyond ``drift_sample`` (a view)."""
        stride = -(-v.size // self.drift_sample)
        return v if stride == 1 else v[::stride]

    def _drift(self, y, feas, feas_target, grew):
        """Raise lam ``drift_factor``-fold when y has drifted in one direction for ``drift_windows`` windows (class docs).

        ``feas``: the window's best ||Mx - b||; ``grew``: the window's feasibility grew (a dual overshoot).
        """
        coherence = None  # ||y_t - y_{t-W}|| / sum eta_s ||r_s||: 1 when every step went the same way
        y = self._watched(y)
        if self._y_ref is not None and self._y_ref.shape == y.shape and self._drift_path > 0:
            coherence = float(np.linalg.norm(y - self._y_ref)) / self._drift_path
        if self._y_ref is None or self._y_ref.shape != y.shape:
            self._y_ref = y.copy()
        else:
            np.copyto(self._y_ref, y)
        self._drift_path = 0.0
        if coherence is None or coherence < self.drift_coherence or grew:
            self._drift_feas = [feas]
            return
        self._drift_feas = (self._drift_feas + [feas])[-(self.drift_windows + 1):]
        first = self._drift_feas[0]
        # too slow: not halved across the windows, or falling at a pace (feas / first per drift_windows
        # windows) that would not reach the target in as many windows again
        slow = feas > 0.5 * first or (first > 0 and feas_target > 0 and feas * (feas / first) > feas_target)
        if (len(self._drift_feas) > self.drift_windows and feas > feas_target
                and slow and self.lam < self.max_growth * self.lam0):
            self._pending_lam = self.drift_factor * self.lam
            self._drift_feas = [feas]

    def _balance(self, gap_ratio, feas_ratio, dual_ratio, feas_units=1.0):
        """Halve lam when the FW gap lags ``balance`` times behind both feasibility tests (class docs); double
        it when feasibility lags ``balance`` times behind the FW gap (and its own target).

        The FW gap and ||Mx - b|| are compared in the same units: ``feas_ratio`` (relative to feas_tol's
        target) times ``feas_units`` = feas_tol / tol is ||Mx - b|| relative to tol's. Relative to their
        own targets, a loose ``tol`` with the default ``feas_tol`` made feasibility look 10^3 times behind
        a gap that had barely started: tol = 0.1 doubled lam 5 times in the first 140 iterations and took
        958 iterations, against 173 at tol = 1e-3 (benchmarks/RESULTS.md, "Nearly linear objectives
        keep vertex steps", its third part). Identical where tol = feas_tol (the defaults)."""
        if gap_ratio is None or feas_ratio is None:
            return
        feas_common = feas_ratio * feas_units
        if gap_ratio > self.balance * max(feas_common, dual_ratio) and self.lam > self.lam_min_factor * self.lam0:
            self._pending_lam = 0.5 * self.lam
        elif (feas_common > self.balance * gap_ratio and feas_ratio > self.balance
              and self.lam < self.max_growth * self.lam0):
            # the mirror: ||Mx - b|| lags the FW gap as far behind: a penalty too weak for the rows, doubled
            # (Markowitz's risk bound, n = 20: lam 0.26 held the rows 543 iterations, 230 with the mirror;
            # fuzz 0-1599: 57,365 -> 42,236 over the 231 models changed, none 2x slower, 0 flagged)
            self._pending_lam = 2.0 * self.lam

    def penalty(self, lam):
        if self._pending_lam is not None:
            lam, self._pending_lam = self._pending_lam, None
            lam = self._damp_reversal(lam)
            self._lam_lowered = lam < self.lam
            self.lam = lam
            self.current = self.theta * lam
        return lam

    def _damp_reversal(self, lam):
        """Halve the rules' moves of lam (in log scale) each time lam turns back the way it came.

        The drift rule (x ``drift_factor``) and the balance rule (/ 2) can take
        turns: on a 1-D total-variation model with the row metric (600 entries,
        6 pieces, seed 6) lam cycled between 1e3 and 4e4 and the solve ran to
        max_iter. Each reversal of direction halves the moves' size in log
        scale (x4 -> x2 -> x1.41 ..., /2 -> /1.41 ...), so a cycle closes in on
        a lam between its ends, as bisection does; moves in one direction keep
        their size (benchmarks/RESULTS.md, "Penalty moves that reverse").
        """
        direction = 1 if lam > self.lam else -1
        if self._last_direction is not None and direction != self._last_direction:
            self._move_scale *= 0.5
        self._last_direction = direction
        if self._move_scale < 1.0:
            lam = self.lam * (lam / self.lam) ** self._move_scale
        return lam


class GatedMultiplier:
    """The default: full multiplier steps, taken when the primal step has caught up.

    Reasoning. With an exact inner minimization, the augmented Lagrangian
    method (Hestenes-Powell) takes eta = lam. FW-AL replaces the inner
    minimization by one FW step (eq. fwal), so x lags behind y: taking
    eta = lam at every iteration overshoots and oscillates (measured: the
    covariance problem never settles), while a small constant eta (Theorem
    3) or the decreasing 2/(t+2) (Theorem 2) are stable but their constants
    depend on unknown problem quantities and, once too small, stall.

    We keep the method of multipliers' step eta = lam but take it only when
    the inner problem is solved to the accuracy the constraint currently
    warrants, as inexact augmented Lagrangian methods do: when the FW gap of
    L(., y_t) (an upper bound on L(x_t, y_t) - min_x L(x, y_t)) is at most
    ``kappa * lam * ||Mx - b||^2`` (the size of the penalty term), or below
    the requested tolerance. Otherwise eta_t = 0 and FW keeps working on the
    current L(., y). Feasibility then tracks the primal accuracy
    (||Mx - b|| ~ sqrt(gap / lam)), the multipliers never run ahead of x,
    and no constant needs tuning. The penalty lam is doubled when a window
    of ``window`` dual steps did not halve ||Mx - b|| (the penalty is too
    weak for the dual steps to make progress), up to ``max_growth`` times
    its initial value.
    """

    kappa = 1.0
    window = 20

    def __init__(self, lam, max_growth=1e3):
        self.lam = lam
        self.lam0 = lam
        self.max_growth = max_growth
        self.current = lam
        self._dual_steps = 0
        self._ref = None
        self._pending_lam = None

    def step(self, t, feas=None, lam=None, gap=None, gap_target=0.0, **info):
        if lam is not None:
            self.lam = lam
        if gap is None or feas is None or gap <= max(self.kappa * self.lam * feas * feas, gap_target):
            self.current = self.lam
            self._dual_steps += 1
            if feas is not None and self._dual_steps % self.window == 0:
                if self._ref is not None and feas > 0.5 * self._ref and self.lam < self.max_growth * self.lam0:
                    self._pending_lam = 2.0 * self.lam
                self._ref = feas
        else:
            self.current = 0.0
        return self.current

    def penalty(self, lam):
        if self._pending_lam is not None:
            lam, self._pending_lam = self._pending_lam, None
            self.lam = lam
        return lam


def make_dual_schedule(eta, lam, warm_state=None):
    """Build the schedule object for the ``eta`` option (see module docs)."""
    if isinstance(eta, str) and eta == "gated":
        return GatedMultiplier(lam)
    if eta is None or (isinstance(eta, str) and eta == "adaptive"):
        sched = AdaptiveMultiplier(lam)
        if warm_state is not None and warm_state.eta:
            sched.theta = min(1.0, max(1e-4, warm_state.eta / lam))
            sched.current = sched.theta * lam
        return sched
    if isinstance(eta, str):
        if eta == "theorem2":
            return Theorem2Schedule(lam)
        if eta == "theorem3":
            return ConstantSchedule(lam / 4.0)
        raise ValueError(f"option eta={eta!r} is not a number, a callable, or one of 'adaptive', 'theorem2', 'theorem3'")
    if callable(eta):
        return CallableSchedule(eta)
    try:
        value = float(eta)
    except (TypeError, ValueError):
        raise ValueError(f"option eta={eta!r} is not a number, a callable, or one of 'adaptive', 'theorem2', 'theorem3'") from None
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"option eta must be a nonnegative finite number, got {eta!r}")
    return ConstantSchedule(value)


def _row_gain_floor(Mop, blocks, d):
    """The floor of ||M d||^2 in :func:`default_penalty`: one average row's share of what the rows make of d.

    With m rows, the larger of

    * ``sum_j d_j^2 ||M e_j||^2 / m``: the mean of ||M (sigma * d)||^2 over
      random signs sigma (``diagonal_gain``), and
    * the same with d's energy spread evenly over each block's entries,
      ``sum_k ||d_k||^2 / n_k * sum_{j in block k} ||M e_j||^2 / m``.

    Why floors: with few rows a single direction can be nearly orthogonal to
    all of them by chance (a rank-one trace-norm vertex against a
    sum(X) == 5 row: ||M d||^2 was 1e-6 of the first mean, lam 3e6, and the
    solve stalled at max_iter), and the next directions are not; with many
    rows a small gain is the rows' structure (a smooth signal's directions
    under a difference operator) and is kept. The spread one: a row on a few
    entries of a block (X[0, 1] == c, sum(X[0, :]) == c) sees little of a
    rank-one vertex u v' with small u_0 whatever the signs, and the next
    vertices differ (lam 4.7e5 and max_iter 55 % off on a 3 x 9 trace-norm
    ball; with this floor lam <= 54, "optimal" in <= 67 iterations).

    0 when the operator has no ``diagonal_gain`` (an opaque M). The spread
    term comes from the per-block column sums of ``block_column_norms2``
    (no pass over d); an operator without them gets it by writing the spread
    vector over d (d is scratch once the curvature and slope are taken).
    """
    gain = getattr(Mop, "diagonal_gain", None)
    m = Mop.shape[0]
    if gain is None or m == 0:
        return 0.0
    floor = gain(d)
    sizes = [max(1, blk.size) for blk in blocks]
    energy = [float(np.dot(d[blk.slice], d[blk.slice])) for blk in blocks]
    bounds = [blk.slice.start for blk in blocks] + [blocks[-1].slice.stop] if blocks else []
    tiled = bool(blocks) and all(blk.slice.stop == nxt.slice.start for blk, nxt in zip(blocks, blocks[1:]))
    column_sums = getattr(Mop, "block_column_norms2", None)
    if column_sums is not None and tiled:
        spread = float(sum(e / n_k * c_k for e, n_k, c_k in zip(energy, sizes, column_sums(bounds))))
    else:
        for blk, e, n_k in zip(blocks, energy, sizes):
            d[blk.slice] = np.sqrt(e / n_k)
        spread = gain(d)
    return max(floor, spread) / m


#: a curvature c_f = d' H d at most this times sum_i |g_i d_i| (the rounding scale of the slope
#: <g, d>) is rounding, and the objective is taken as linear along d (see :func:`default_penalty`)
CURVATURE_ROUNDING = 64 * np.finfo(float).eps

#: along the first FW direction d, an objective whose curvature d' H d is below this fraction of its
#: slope |<grad f, d>| changes by less than that fraction through its curvature over the whole step: it
#: is nearly linear there, and the penalty balances the slope as for a linear objective
NEARLY_LINEAR = 1e-3


def nearly_linear_along(c_f, slope):
    """Whether a curvature ``c_f`` = d' Hf d along a FW direction d is below ``NEARLY_LINEAR`` times the
    slope |<grad f, d>| there: over a whole step along d, f then moves by less than that fraction through
    its curvature, and it is treated as linear. The one test behind :func:`default_penalty`'s slope
    penalty and :func:`fwmodel.engine.projection_choice.nearly_linear`'s vertex steps."""
    return bool(np.isfinite(c_f) and 0.0 <= c_f < NEARLY_LINEAR * slope)


def toward_vertices(blocks, x, direction_of):
    """d = s - x, a fresh array: s the product of the blocks' LMO vertices, block k's at the direction
    ``direction_of(blk)`` (the first FW direction where that is the gradient's slice, as in Alg. 1).
    The blocks are visited in order (a random direction is drawn block by block)."""
    d = np.empty(x.size)
    for blk in blocks:
        sl = blk.slice
        np.negative(x[sl], out=d[sl])
        blk.lmo(direction_of(blk)).add_to(d[sl], 1.0)
    return d


def default_penalty(objective, blocks, Mop, x, g, rng, fallback=1.0, vertex=None, slope=None):
    """A penalty lam matched to the problem's scale.

    Along the first Frank-Wolfe direction d (from the objective's gradient),
    the objective changes with curvature c_f = d' Hf d and the penalty
    lam/2 ||M(x + gamma d) - b||^2 with curvature lam ||Md||^2. Taking
    lam = c_f / ||Md||^2 makes the two comparable, so neither the objective
    nor the consistency constraint dominates the first steps. For a linear
    objective (c_f = 0), lam = |<grad f, d>| / ||Md||^2 balances the linear
    decrease instead (also where c_f is at the rounding level of the slope's
    terms, ``CURVATURE_ROUNDING``: an exactly linear direction of a
    nonquadratic objective). ||Md||^2 is floored at ``sum_j d_j^2 ||M e_j||^2 / m``
    (m rows; ``diagonal_gain`` of the operator), and at the same sum with d's
    energy spread evenly over each block's entries: a direction that a few
    rows happen to miss says little about the next ones. Every choice has
    the units of f / ||Mx - b||^2, so scaling the objective, the data or the
    variables scales lam alike. When the rows see nothing of d (M d = 0 and,
    where the operator has a ``diagonal_gain``, both floors 0: d is zero on
    every column that M touches) or f is flat along it, it returns
    ``fallback``: the engine passes objective scale / feasibility scale^2 of
    its stopping rule (:mod:`fwmodel.engine.stopping`), in the same units.
    A direction in M's null space with nonzero entries on M's columns gets
    the floors' lam, not ``fallback``. Where the first FW direction is zero
    (the start already minimizes f's linearization over the sets: a linear
    objective started at its own vertex), d goes toward the vertices of a
    random direction, a move of the sets' own size. A Gaussian d, taken
    before, had no relation to the sets' size: on a portfolio with a risk
    bound its lam was 0.0069 against 0.24 from a vertex (1,715 iterations
    against 570; benchmarks/RESULTS.md, "The drift rule's pace test").

    A nearly linear objective (``c_f`` below ``NEARLY_LINEAR`` times the
    slope ``|<grad f, d>|``, e.g. ``c' x + 1e-8 ||x||^2``) is treated as a
    linear one: its curvature's lam was that fraction of the slope's, and
    the rows, held by almost no penalty, ended at max_iter (eps = 1e-8 on a
    simplex with 3 rows; benchmarks/RESULTS.md, "Nearly linear objectives").
    ``slope``: ``|<grad f, d>|`` when the caller knows it (the stopping rule's
    objective scale is the FW gap of f at the same point and vertex, which
    is exactly that), else it is formed only where needed.

    ``vertex``: ``(s, Ms, Mx)`` when the caller already has the product
    vertex s of the LMOs at ``g`` (the stopping rule's reference takes the
    same LMOs at the cold start), ``M s`` and ``M x``: then d = s - x is
    formed in s's array and M d = M s - M x in M s's (no LMO, no product
    with M and no fresh full-size array here); both arrays are overwritten.
    """
    n = x.size
    if vertex is not None:
        d, Ms, Mx = vertex
        d -= x
        Md = None
        if Ms is not None and Mx is not None:
            Md = Ms
            Md -= Mx
    else:
        d, Md = toward_vertices(blocks, x, lambda blk: g[blk.slice]), None
    if not np.any(d):
        # the start already minimizes f's linearization over the sets (a linear objective started at its
        # own vertex): toward the vertices of a random direction instead, a move of the sets' own size
        d, Md, slope = toward_vertices(blocks, x, lambda blk: rng.standard_normal(blk.size)), None, None
    if not np.any(d):  # every set a single point
        d = rng.standard_normal(n)
    if Md is None:
        Md = Mop.matvec(d)
    c_f = None
    curvature = getattr(objective, "curvature", None)
    if curvature is not None:
        c_f = curvature(x, d)
    if c_f is None:
        eps = 1e-6
        _, g2 = objective.value_and_grad(x + eps * d)
        c_f = float(np.dot(g2 - g, d)) / eps
    c_f = float(c_f)
    if c_f > 0 and not getattr(objective, "is_quadratic", False) and np.isfinite(c_f):
        # a curvature at the rounding level of the slope's terms is 0: log_sum_exp along the
        # all-ones direction is exactly linear (p' 1 - (p' 1)^2 = 0 up to rounding, 1.7e-33), and
        # such a lam left a nuclear ball with a box at max_iter with the box violated, where the
        # slope's lam solves it in 17 iterations. A quadratic's d' H d has no such cancellation.
        if c_f <= CURVATURE_ROUNDING * float(np.abs(np.asarray(g)) @ np.abs(d)):
            c_f = 0.0
    # the slope only where the curvature cannot serve (a linear objective) or the caller gave it: for
    # tied copies g is the shared gradient, and <g, d> would form its n-size array (2 d x d arrays at
    # d = 4000 in the paper's problem)
    if not (c_f > 0 and np.isfinite(c_f)):
        slope = abs(float(np.dot(g, d)))
        # a slope at the rounding level of its terms is 0 (the fallback's lam): min trace(G X) over a PSD
        # ball with G = 1e6 b b' starts at its optimum X = 0, its vertex lies along G's null direction, and
        # <G, d> is G's smallest eigenvalue's rounding (1e-10): that lam (7e-10) held the rows of the
        # slacks by nothing and the solve cycled to max_iter (tests/test_psd_zero_optimum.py)
        if slope <= CURVATURE_ROUNDING * float(np.abs(np.asarray(g)) @ np.abs(d)):
            slope = 0.0
    elif slope is not None and nearly_linear_along(c_f, slope):
        c_f = 0.0  # nearly linear along d: the slope's lam (the docstring)
    else:
        slope = None
    c_m = float(np.dot(Md, Md))
    c_m = max(c_m, _row_gain_floor(Mop, blocks, d))
    if c_m <= 0 or not np.isfinite(c_m):
        return fallback
    if c_f > 0 and np.isfinite(c_f):
        return c_f / c_m
    if slope is not None and slope > 0 and np.isfinite(slope):
        return slope / c_m
    return fallback
