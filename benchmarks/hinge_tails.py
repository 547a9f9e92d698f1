"""The tail of small LP-like models with a hinge budget: iterations and status of ``prob.solve()`` against Clarabel.

Each model (data seed ``s``): ``A`` (5 x 8), ``b``, ``c`` Gaussian (``b`` times 0.5), and

    minimize   c @ x   (times 100 in the variant "scale100")
    subject to 0 <= x <= 0.35,  sum(pos(A @ x - b)) <= 0.94,  x[0] + x[1] <= 0.94

(the last row is redundant: 0.35 + 0.35 < 0.94; the variant "noredundant"
drops it). fwmodel lowers the budget to a simplex of the hinge values, rows
``A x - b - t + s = 0`` and a box of slacks. Where the optimum puts a hinge
row at its kink and leaves two entries of x inside the box, the primal steps
contract slowly, and the multipliers oscillated around their optimum for
thousands of iterations (benchmarks/RESULTS.md, "Oscillations of the
multipliers on hinge budgets").

Per variant: the total iterations, the models at 1000 iterations or more,
every status other than "optimal" where Clarabel says optimal, and the
largest objective difference relative to ``max(1, |f*|)`` among the optimal
ones (models Clarabel finds infeasible are counted apart).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/hinge_tails.py --seeds 300
"""
import argparse
import time
import warnings

import numpy as np

import fwmodel as fm

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover
    raise SystemExit("needs cvxpy (pip install -e '.[test]')")

VARIANTS = ("base", "noredundant", "scale100")


def build(m, seed, variant):
    """The model of data seed ``seed`` in library ``m`` (fwmodel or cvxpy); returns (problem, x)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((5, 8))
    b = rng.standard_normal(5) * 0.5
    c = rng.standard_normal(8)
    scale = 100.0 if variant == "scale100" else 1.0
    x = m.Variable(8)
    constraints = [x >= 0, x <= 0.35, m.sum(m.pos(A @ x - b)) <= 0.94]
    if variant != "noredundant":
        constraints.append(x[0] + x[1] <= 0.94)
    return m.Problem(m.Minimize(scale * (c @ x)), constraints), x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=300, help="data seeds 0 .. seeds-1")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--verbose", action="store_true", help="one line per model")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'variant':12s} {'models':>6s} {'infeasible':>10s} {'total it':>9s} {'>= 1000 it (seed: it)':40s} "
          f"{'not optimal':>12s} {'max rel diff':>12s} {'time s':>7s}")
    for variant in args.variants:
        total, infeasible, tail, missed, worst, t0 = 0, 0, [], [], 0.0, time.perf_counter()
        for seed in range(args.seeds):
            ref, _ = build(cp, seed, variant)
            ref.solve(solver=cp.CLARABEL)
            prob, _ = build(fm, seed, variant)
            prob.solve()
            it = prob.stats.iterations
            if args.verbose:
                print(f"  {variant} {seed}: {prob.status} {it} it, {prob.value:.6g} (Clarabel {ref.status} {ref.value})")
            if ref.status != cp.OPTIMAL:
                infeasible += 1
                continue
            total += it
            if it >= 1000:
                tail.append(f"{seed}: {it}")
            if prob.status != fm.OPTIMAL:
                missed.append(f"{seed} {prob.status}")
            else:
                worst = max(worst, abs(prob.value - ref.value) / max(1.0, abs(ref.value)))
        print(f"{variant:12s} {args.seeds:6d} {infeasible:10d} {total:9d} {', '.join(tail):40s} "
              f"{', '.join(missed) or '-':>12s} {worst:12.1e} {time.perf_counter() - t0:7.1f}")


if __name__ == "__main__":
    main()
