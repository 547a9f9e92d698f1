"""What keeps the zoo's TV-constrained denoiser iterating, and what the public options change.

The model (``zoo.tv_denoise``): least squares, ``fm.L1Ball(D @ x, t)`` with D
the first-difference matrix and ``fm.Box(x, 0, 1)``. Compiled, x is a box
block and z = D x an L1 block tied to it by the rows ``D x - z = 0``.

``--diagnose``: one solve with plain ``prob.solve()`` defaults; every
``--every`` iterations, each test of the stopping rule relative to its
target (> 1: not met; ``fwmodel.engine.stopping``: (1) the FW gap of
L(., y) against tol * S_f, (2) the multiplier test |<y + lam r, r>|
against tol * min(S_f, max(|f|, S_f / 100)), (3) ||Mx - b|| against
feas_tol * S_x) and each block's FW gap. The engine is read through a
wrapper around its stopping rule's ``merit`` (called once per iteration
with the three measures) and around the sweep's proposals (the block
gaps); nothing else changes.

``--options``: iterations, status and the zoo's error measure over data
seeds, for the defaults and the option settings given (Python dict
literals of ``prob.solve`` options).

    python benchmarks/tv_tail.py --diagnose --seed 0
    python benchmarks/tv_tail.py --options "{}" "{'projection': True}" "{'sweep': 'jacobi'}"
"""
import argparse
import ast
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from zoo import tv_denoise  # noqa: E402

import fwmodel.engine.fwal as fwal  # noqa: E402
from fwmodel.engine.stopping import StoppingRule  # noqa: E402


def diagnose(seed, every):
    rows = []
    block_gaps = []
    merit, propose = StoppingRule.merit, fwal._propose

    def merit_spy(self, gap, feas, objective_gap=None, dual_residual=0.0):
        rows.append((gap, self.gap_rel(gap, objective_gap) / self.tol, self.dual_rel(dual_residual, objective_gap)
                     / self.tol, self.feas_rel(feas) / self.feas_tol))
        return merit(self, gap, feas, objective_gap, dual_residual)

    def propose_spy(steps, blocks, *args, **kwargs):
        out = propose(steps, blocks, *args, **kwargs)
        block_gaps.append([(blk.size, g) for blk, g in zip(blocks, out[3])])
        return out

    StoppingRule.merit, fwal._propose = merit_spy, propose_spy
    try:
        fw, _ = tv_denoise(seed=seed)
        fw.solve()
    finally:
        StoppingRule.merit, fwal._propose = merit, propose
    print(f"seed {seed}: {fw.status} after {fw.stats.iterations} iterations, lam {fw.stats.lam:.3g}")
    print("| iteration | FW gap | (1) gap / target | (2) multiplier / target | (3) feasibility / target "
          "| FW gap per block (entries: gap) |")
    print("|---|---|---|---|---|---|")
    last = min(len(rows), len(block_gaps)) - 1
    for t in sorted(set(range(0, last, every)) | {last}):
        gap, g1, g2, g3 = rows[t]
        blocks = ", ".join(f"{size}: {'lazy' if g is None else f'{g:.1e}'}" for size, g in block_gaps[t])
        print(f"| {t} | {gap:.2e} | {g1:.2f} | {g2:.2f} | {g3:.2f} | {blocks} |")


def options(settings, seeds):
    import cvxpy  # noqa: F401  (the reference solver below)

    print("| options | " + " | ".join(f"seed {s}" for s in seeds) + " | total |")
    print("|---|" + "---|" * (len(seeds) + 1))
    refs = {}
    for text in settings:
        opts = ast.literal_eval(text)
        cells, total = [], 0
        for seed in seeds:
            fw, cvx = tv_denoise(seed=seed)
            fw.solve(**opts)
            if seed not in refs:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cvx.solve(solver="CLARABEL")
                refs[seed] = cvx.value
            err = abs(fw.value - refs[seed]) / max(abs(refs[seed]), 0.01 * fw.stats.objective_scale)
            total += fw.stats.iterations
            status = "" if fw.status == "optimal" else f" {fw.status}"
            cells.append(f"{fw.stats.iterations}{status} ({err:.0e})")
        print(f"| `{text}` | " + " | ".join(cells) + f" | {total} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--options", nargs="*")
    ap.add_argument("--seeds", nargs="*", type=int, default=list(range(6)))
    args = ap.parse_args()
    if args.diagnose:
        diagnose(args.seed, args.every)
    if args.options:
        options(args.options, args.seeds)


if __name__ == "__main__":
    main()
