"""The face step (``face_step=``, fwmodel/engine/face_step.py) against none, side by side in one process.

Per model and option (False, "auto", True), interleaved model by model so that
the load falls on all alike: status, iterations and solve time of
``prob.solve(face_step=...)`` (``face_step=False`` takes main's iterates).
Models: the hinge models of ``benchmarks/hinge_tails.py`` (variants base and
noredundant, data seeds 0 .. seeds-1, the infeasible ones left out), the
hinge budgets of ``benchmarks/hinge_budgets.py`` at their defaults, and the
plain models of ``benchmarks/trust_fuzz.py`` listed with ``--fuzz``.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/face_step.py --seeds 300
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np

import fwmodel as fm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hinge_budgets  # noqa: E402
import hinge_tails  # noqa: E402

OPTIONS = (False, "auto", True)


def _solve(build, option):
    prob = build()
    prob.compile()
    start = time.perf_counter()
    prob.solve(face_step=option)
    return prob.status, prob.stats.iterations, time.perf_counter() - start, prob.value


def _report(name, rows):
    """rows: {option: [(status, iterations, time, value), ...]}."""
    base = rows[False]
    parts = [f"{name:24s}"]
    for option in OPTIONS:
        its = sum(r[1] for r in rows[option])
        secs = sum(r[2] for r in rows[option])
        bad = sum(r[0] != "optimal" for r in rows[option])
        slower = sum(r[1] > 2 * b[1] for r, b in zip(rows[option], base))
        tail = sum(r[1] >= 1000 for r in rows[option])
        parts.append(f"{option!s:>5s}: {its:7d} it {secs:7.2f} s, {bad} not optimal, {tail} >= 1000 it, "
                     f"{slower} 2x slower |")
    print(" ".join(parts), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--fuzz", type=int, nargs="*", default=[])
    ap.add_argument("--no-budgets", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import cvxpy as cp

    for variant in ("base", "noredundant"):
        rows = {o: [] for o in OPTIONS}
        for seed in range(args.seeds):
            ref, _ = hinge_tails.build(cp, seed, variant)
            ref.solve(solver=cp.CLARABEL)
            if ref.status != cp.OPTIMAL:
                continue
            for option in OPTIONS:
                r = _solve(lambda: hinge_tails.build(fm, seed, variant)[0], option)
                rows[option].append(r)
                if args.verbose:
                    print(f"  {variant} {seed} {option}: {r[0]} {r[1]} it {r[2]:.3f} s {r[3]:.6g} "
                          f"(Clarabel {ref.value:.6g})", flush=True)
        _report(f"hinge {variant}", rows)
    if not args.no_budgets:
        for name, build in hinge_budgets.models():
            rows = {o: [] for o in OPTIONS}
            for option in OPTIONS:
                rows[option].append(_solve(lambda: fm.Problem(*build(fm)), option))
            print(f"  {name}: " + ", ".join(f"{o}: {r[0][0]} {r[0][1]} it {r[0][2]:.2f} s {r[0][3]:.6g}"
                                           for o, r in rows.items()), flush=True)
    if args.fuzz:
        import trust_fuzz

        for index in args.fuzz:
            model = trust_fuzz.make_model(index, 20261126)
            rows = {o: [] for o in OPTIONS}
            for option in OPTIONS:
                def build(model=model):
                    obj, cons, _ = model.build("fm", model.s, model.s_obj)
                    return fm.Problem(obj, cons)
                rows[option].append(_solve(build, option))
            print(f"  fuzz {index}: " + ", ".join(f"{o}: {r[0][0]} {r[0][1]} it {r[0][2]:.2f} s {r[0][3]:.6g}"
                                                 for o, r in rows.items()), flush=True)


if __name__ == "__main__":
    main()
