"""Step sizes along a Frank-Wolfe direction of the augmented Lagrangian.

Along a direction d from x, with r = Mx - b and Md = M d,

    phi(gamma) = L(x + gamma d, y)
               = f(x + gamma d) + <y, r + gamma Md> + lam/2 ||r + gamma Md||^2,

so the penalty and dual terms are an exact quadratic in gamma and only f needs
evaluating. Two rules (the line search of Alg. 1 line 13 and Alg. 2 line 3):

* exact: when f is quadratic, phi is a quadratic with
  phi'(0) = <grad_x L, d> and phi'' = d' H_f d + lam ||Md||^2, minimized in
  closed form on [0, gamma_max];
* backtracking: the adaptive rule of Pedregosa, Negiar, Askari & Jaggi
  (2020, "Linearly convergent Frank-Wolfe with backtracking line-search"):
  keep an estimate L_t of the local Lipschitz constant, try
  gamma = min(-phi'(0) / (L_t ||d||^2), gamma_max), and double L_t until the
  sufficient-decrease condition
  phi(gamma) <= phi(0) + gamma phi'(0) + gamma^2 L_t ||d||^2 / 2 holds; the
  estimate then shrinks a little at the next step so it can follow the
  curvature down again. The test allows a few units of phi's rounding
  (``ROUNDING_MARGIN``): a decrease below them cannot be checked.
"""
from __future__ import annotations

import math

import numpy as np


def exact_quadratic_step(slope, curvature, gamma_max):
    """argmin of slope*g + curvature*g^2/2 on [0, gamma_max]."""
    if slope >= 0:
        return 0.0
    if curvature <= 0 or not math.isfinite(curvature):  # math, not NumPy: a float, for every block of every iteration
        return gamma_max
    return float(min(-slope / curvature, gamma_max))


#: the sufficient-decrease test of :class:`Backtracking` allows this many units of rounding of |phi(0)|
ROUNDING_MARGIN = 4 * np.finfo(float).eps


class Backtracking:
    """Adaptive Lipschitz estimate for the backtracking rule (one per solve)."""

    shrink = 0.9  # L_t <- shrink * L_t before each search: lets L_t decrease
    grow = 2.0  # L_t <- grow * L_t after each failed sufficient-decrease test

    def __init__(self, lipschitz=None):
        self.lipschitz = lipschitz
        self.evaluations = 0

    def step(self, phi, phi0, slope, d_norm2, gamma_max, curvature_hint=None, max_tries=60):
        """Return (gamma, phi(gamma)). ``phi`` evaluates the merit at a step."""
        if slope >= 0 or d_norm2 <= 0:
            return 0.0, phi0
        if self.lipschitz is None:
            # First call: start from the local curvature when known, else from
            # a tiny probe step (the estimate then adapts upward or downward).
            # an infinite hint (the Hessian of z**1.5 at z = 0) is no estimate: as Lipschitz constant it
            # made every step 0 and the solve stayed at its start (max_iter at x = 0); probe instead
            if curvature_hint is not None and curvature_hint > 0 and math.isfinite(curvature_hint / d_norm2):
                self.lipschitz = curvature_hint / d_norm2
            else:
                probe = 1e-6 * gamma_max
                value = phi(probe)
                self.evaluations += 1
                # the probe sees a curvature only where phi departs from its tangent by more than phi's
                # rounding; below that phi is linear along d as far as can be told, and the estimate is
                # the one whose step goes to gamma_max. Trusting it, an exactly linear first direction
                # (log-sum-exp along 1) stored 1.7e-33, which the projection steps divided by
                excess = value - phi0 - probe * slope
                if np.isfinite(excess) and excess > ROUNDING_MARGIN * (abs(phi0) + abs(probe * slope)):
                    self.lipschitz = 2.0 * excess / (probe * probe * d_norm2)
                else:
                    self.lipschitz = abs(slope) / (d_norm2 * gamma_max) if gamma_max > 0 else abs(slope) / d_norm2
        L = self.lipschitz * self.shrink
        # phi is known to its rounding only: a decrease below it can be neither seen nor refuted. Without
        # this margin a direction whose whole predicted decrease is rounding (a FW gap of 1e-16 on the
        # block) failed the test at every L and doubled the estimate ~50 times, and the steps along the
        # next directions were 1e-17 long for hundreds of iterations (benchmarks/trust_fuzz.py model 1550:
        # max_iter in units of 1e6, optimal in 503 iterations in unit scale, by the luck of one rounding)
        rounding = ROUNDING_MARGIN * abs(phi0)
        for _ in range(max_tries):
            # gamma_max where the model's minimizer lies beyond it (written without dividing by L, which
            # shrinks by 0.9 at every accepted step of a linear objective and can underflow)
            gamma = gamma_max if -slope >= L * d_norm2 * gamma_max else -slope / (L * d_norm2)
            value = phi(gamma)
            self.evaluations += 1
            if np.isfinite(value) and value <= phi0 + gamma * slope + 0.5 * gamma * gamma * L * d_norm2 + rounding:
                self.lipschitz = L
                return gamma, value
            L *= self.grow
        self.lipschitz = L
        return 0.0, phi0


def bounded_scalar_step(phi, gamma_max, xatol=1e-10):
    """Exact line search for a non-quadratic phi by bounded Brent minimization."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(phi, bounds=(0.0, gamma_max), method="bounded", options={"xatol": xatol * max(gamma_max, 1e-300)})
    gamma = float(res.x)
    value = float(res.fun)
    end = phi(gamma_max)
    if end < value:
        return gamma_max, end
    return gamma, value
