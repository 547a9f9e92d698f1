"""The verbose table: a header with sizes and the stopping rule, rows as the solve runs, a summary.

In the style of FrankWolfe.jl and CVXPY: one row per ``print_every``
iterations (by default iterations 0-10, then every 10, 100, 1000, ...) and,
so that a long solve never runs silent, a row whenever ``print_seconds``
(2 s) have passed since the last one. A row shows the objective, the FW gap
of L(., y) and ||Mx - b||, each also relative to the scale the stopping rule
measures it against (:mod:`fwmodel.engine.stopping`: the solve stops when
both relative columns are below ``tol`` and ``feas_tol``), lam, eta, the
elapsed time and how many FW / away / pairwise / drop / projection steps
were taken so far.
"""
from __future__ import annotations

import sys
import time

from .stopping import REL_FACTOR, REL_FLOOR, UNITS_APART

#: the step kinds counted in the last column, in order (projection: projected-gradient block steps)
STEP_COLUMNS = ("fw", "away", "pairwise", "drop", "projection", "inface", "rank_k")
_STEP_TITLES = {"fw": "fw", "away": "away", "pairwise": "pair", "drop": "drop", "projection": "proj",
                "inface": "inface", "rank_k": "rank-k"}


class VerbosePrinter:
    #: a row is printed at least this often (seconds), whatever the iteration schedule
    print_seconds = 2.0

    def __init__(self, verbose, print_every, n, m, blocks, stream=None, clock=time.perf_counter, objective_sign=1.0):
        self.on = bool(verbose)
        # -1 for a Maximize: the engine minimizes -f, the table shows the user's f (as prob.value does)
        self.objective_sign = -1.0 if objective_sign == -1.0 else 1.0
        self.every = print_every
        self.n, self.m, self.blocks = n, m, blocks
        self.stream = stream or sys.stdout
        self.clock = clock
        self._last_print = None
        self._kinds = None

    def _print(self, text):
        print(text, file=self.stream, flush=True)

    def header(self, step, line_search, lam, stopping):
        if not self.on:
            return
        kinds = sorted({("polytope" if b.is_polytope else "convex") for b in self.blocks})
        self._print("-" * 112)
        self._print(f"fwmodel FW-AL: {len(self.blocks)} blocks ({', '.join(kinds)}), "
                    f"{self.n} primal entries, {self.m} rows of M")
        self._print(f"step={step}  line_search={line_search}  lam0={lam:.3g}")
        self._print(f"stop when FW gap <= tol * S_f = {stopping.tol:.1e} * {stopping.objective_scale:.3e}"
                    f"  and  ||Mx-b|| <= feas_tol * S_x = {stopping.feas_tol:.1e} * {stopping.point_scale:.3e}")
        self._print("  and |<y + lam r, r>| <= tol * min(S_f, max(|f|, S_f / 100)) (the error infeasibility can hide)")
        self._print("  and the certified bound (FW gap - <y + lam r, r>, or f - the best lower bound seen) <= "
                    f"tol * min(S_f, l |f|) where |f| > {REL_FLOOR:g} S_f,")
        self._print(f"  l the bound's looseness measured on the iterates (1 to {REL_FACTOR:g}; {REL_FACTOR:g} "
                    "where the values no longer fall while the bound does)")
        self._print("  S_f: FW gap of f at the starting point (the objective's range); "
                    "S_x: largest norm of b and of the points seen (not the sets' vertices)")
        pieces = stopping.row_pieces
        if pieces is not None:
            self._print(f"  and ||r_g|| <= feas_tol * S_g for the groups of rows (of {pieces.point_scales.size}) more than "
                        f"{UNITS_APART:g}x below the largest, S_g from {pieces.point_scales.min():.3e} to "
                        f"{pieces.point_scales.max():.3e} (the /S_x column: the worst of the two tests)")
        self._print("-" * 112)
        self._print(f"{'iter':>7} {'objective':>13} {'FW gap':>10} {'gap/S_f':>9} {'||Mx-b||':>10} "
                    f"{'/S_x':>9} {'lam':>9} {'eta':>9} {'time(s)':>8}  steps")
        self._last_print = self.clock()

    def _due(self, t):
        every = self.every
        if every is None:
            # every iteration at first, then sparser: 0..10, 20, 30.., 100, 200..
            every = 1 if t < 10 else 10 ** (len(str(t)) - 1)
        if t % every == 0:
            return True
        return self._last_print is not None and self.clock() - self._last_print >= self.print_seconds

    def steps(self, counts):
        """The step column, e.g. ``fw/pair/drop 12/40/3``: the kinds this solve can take."""
        kinds = [k for k in STEP_COLUMNS if k in counts]
        return "/".join(_STEP_TITLES[k] for k in kinds) + " " + "/".join(str(counts[k]) for k in kinds)

    def row(self, t, f, gap, feas, stopping, lam, eta, elapsed, counts):
        if not self.on or not self._due(t):
            return
        self._print(f"{t:7d} {self.objective_sign * f:13.6e} {gap:10.3e} {stopping.gap_rel(gap):9.2e} {feas:10.3e} "
                    f"{stopping.feas_rel(feas):9.2e} {lam:9.2e} {eta:9.2e} {elapsed:8.2f}  {self.steps(counts)}")
        self._last_print = self.clock()

    def footer(self, status, message, t, f, gap, feas, stopping, elapsed, counts, bound=float("nan")):
        if not self.on:
            return
        self._print("-" * 112)
        self._print(f"status: {status} ({message}) after {t} iterations, {elapsed:.3f} s")
        self._print(f"objective {self.objective_sign * f:.8e}   FW gap {gap:.3e} (tol * S_f = "
                    f"{stopping.tol * stopping.objective_scale:.3e})   "
                    f"||Mx-b|| {feas:.3e} (feas_tol * S_x = {stopping.feasibility_target():.3e})")
        certified = f"{bound:.3e} (FW gap - <y + lam r, r>)" if bound == bound else \
            "not certified (the last FW gap was not measured, or an LMO was inexact)"
        # (negative where the point is infeasible enough to beat the optimum)
        error = "objective - optimum" if self.objective_sign == 1.0 else "optimum - objective"
        self._print(f"certified: {error} <= {certified}")
        self._print(f"steps: {self.steps(counts)}")
        self._print("-" * 112)
