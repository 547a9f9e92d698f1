"""Vertex steps on the boxed L1 ball (``projection=False``): blended pairwise (BPCG) against pairwise steps.

Least squares and logistic regression over ``norm1(x) <= r`` and a box
``[-c, c]`` on the same x (one ``BoxedL1Ball``), solved with
``projection=False`` under ``step="auto"`` with the set's choice of
active-set step (pairwise) and with BPCG (the engine's default for other
polytopes, restored by patching ``BoxedL1Ball.auto_active_set_step``), and
the two tied copies (the box on ``x[:]``, default options) for reference.
Iterations, best time of ``--repeat``, and the difference to Clarabel's
value relative to max(|f*|, S_f / 100), as benchmarks/zoo.py.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/boxed_l1_steps.py --repeat 2
"""
import argparse
import os
import sys

from fwmodel.sets.boxed_l1 import BoxedL1Ball

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_time, bpcg  # noqa: E402
from rows_projection import l1_box, logistic_box  # noqa: E402

try:
    import cvxpy as cp
except ImportError:  # the reference column is then left out
    cp = None


def models():
    out = [l1_box(100, 60, 5.0, 0.3, 0), l1_box(80, 200, 5.0, 0.2, 1), l1_box(300, 100, 3.0, 0.5, 2),
           l1_box(100, 60, 2.0, 0.1, 3), logistic_box(200, 50, 2.0, 0.3, 7)]
    # more shapes and ratios r / c (how many entries a vertex moves)
    for seed, (m, n, radius, cap) in enumerate([(50, 400, 4.0, 0.1), (200, 300, 10.0, 0.5), (60, 120, 1.0, 0.05),
                                                 (400, 200, 20.0, 0.3), (100, 1000, 5.0, 0.05)], start=20):
        out.append(l1_box(m, n, radius, cap, seed))
    out.append(logistic_box(300, 200, 5.0, 0.1, 31))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    print("| model | pairwise (auto): iterations, time | BPCG: iterations, time | two copies: iterations, time "
          "| diff to Clarabel: pairwise / BPCG / copies |")
    print("|---|---|---|---|---|")
    for title, fw, cvx, _ in models():
        ref = None
        if cp is not None:
            prob = cvx()
            prob.solve(solver="CLARABEL")
            ref = prob.value
        cells, diffs = [], []
        for label in ("pairwise", "bpcg", "copies"):
            def run():
                prob = fw(copies=True) if label == "copies" else fw()
                if label == "bpcg":
                    with bpcg(BoxedL1Ball):
                        prob.solve(max_iter=50000, projection=False)
                elif label == "pairwise":
                    prob.solve(max_iter=50000, projection=False)
                else:
                    prob.solve(max_iter=50000)
                return prob
            t, prob = best_time(run, args.repeat)
            status = "" if prob.status == "optimal" else f" ({prob.status})"
            cells.append(f"{prob.stats.iterations}, {t:.3f} s{status}")
            diffs.append("-" if ref is None else
                         f"{abs(prob.value - ref) / max(abs(ref), prob.stats.objective_scale / 100):.1e}")
        print(f"| {title} | {cells[0]} | {cells[1]} | {cells[2]} | {' / '.join(diffs)} |", flush=True)


if __name__ == "__main__":
    main()
