"""The verbose table: a header with sizes, one row every few iterations, a summary.

In the style of FrankWolfe.jl and CVXPY: one row per ``print_every``
iterations with the objective, the FW gap of L(., y), the relative
infeasibility, lam, eta, the elapsed time and how many FW / away / pairwise /
drop steps were taken so far.
"""
from __future__ import annotations

import sys


class VerbosePrinter:
    def __init__(self, verbose, print_every, n, m, blocks, stream=None):
        self.on = bool(verbose)
        self.every = print_every or (1 if verbose is True and n < 0 else None)
        self.n, self.m, self.blocks = n, m, blocks
        self.stream = stream or sys.stdout
        self._rows = 0

    def _print(self, text):
        print(text, file=self.stream)

    def header(self, step, line_search, lam):
        if not self.on:
            return
        kinds = sorted({("polytope" if b.is_polytope else "convex") for b in self.blocks})
        self._print("-" * 96)
        self._print(f"fwmodel FW-AL: {len(self.blocks)} blocks ({', '.join(kinds)}), "
                    f"{self.n} primal entries, {self.m} rows of M")
        self._print(f"step={step}  line_search={line_search}  lam0={lam:.3g}")
        self._print("-" * 96)
        self._print(f"{'iter':>7} {'objective':>13} {'FW gap':>10} {'||Mx-b||rel':>11} {'lam':>9} "
                    f"{'eta':>9} {'time(s)':>8}  {'fw/away/pair/drop':>18}")

    def row(self, t, f, gap, feas_rel, lam, eta, elapsed, counts):
        if not self.on:
            return
        every = self.every
        if every is None:
            # every iteration at first, then sparser: 1..10, 20, 30.., 100, 200..
            every = 1 if t < 10 else 10 ** (len(str(t)) - 1)
        if t % every:
            return
        steps = f"{counts['fw']}/{counts['away']}/{counts['pairwise']}/{counts['drop']}"
        self._print(f"{t:7d} {f:13.6e} {gap:10.3e} {feas_rel:11.3e} {lam:9.2e} {eta:9.2e} {elapsed:8.2f}  {steps:>18}")

    def footer(self, status, message, t, f, gap, feas_rel, elapsed, counts):
        if not self.on:
            return
        self._print("-" * 96)
        self._print(f"status: {status} ({message}) after {t} iterations, {elapsed:.3f} s")
        self._print(f"objective {f:.8e}   FW gap {gap:.3e}   relative infeasibility {feas_rel:.3e}")
        extra = {k: v for k, v in counts.items() if k in ("projection", "inface") and v}
        if extra:  # corrective and projection steps (option projection, inface) are not in the table's column
            self._print("other steps: " + ", ".join(f"{k} {v}" for k, v in extra.items()))
        self._print("-" * 96)
