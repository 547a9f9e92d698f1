"""Convergence of FW-AL's step variants and dual schedules, side by side.

Two problems, each solved in one run by every variant:

* ``covariance``: the paper's sparse + low-rank covariance problem (Sec. 5),
  min ||S - Sigma_hat||^2 s.t. S in L1Ball ∩ TraceNormBall, data from
  :func:`fwmodel.datasets.sparse_low_rank_covariance`; f* from a long
  generalized forward-backward run.
* ``simplex_box``: min ||x - c||^2 over Simplex ∩ Box (two polytopes,
  strongly convex), f* from the closed-form projection.

Variants: step = fw / away / pairwise with the default (adaptive) dual
schedule, the defaults without the in-face steps on the trace-norm block, and
the default step with the paper's schedules (Theorem 2's
decreasing eta_t = lam 2/(t+2), Theorem 3's constant eta = lam/4).

Reported per variant: normalized suboptimality (f - f*) / (f(0) - f*) and
relative infeasibility at fixed times, and the time to reach 1e-2 (and 1e-3)
normalized suboptimality with 1e-3 relative infeasibility.

    python benchmarks/convergence.py --sizes 200 1000 --seconds 60
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import fwmodel as fm

VARIANTS = [
    ("fw", dict(step="fw", projection=False)),
    ("away", dict(step="away", projection=False)),
    ("pairwise", dict(step="pairwise", projection=False)),
    ("default (auto, adaptive)", dict()),
    ("default without in-face steps", dict(inface=False)),
    ("default without projection steps", dict(projection=False)),
    ("theorem 2 schedule", dict(eta="theorem2")),
    ("theorem 3 schedule", dict(eta="theorem3")),
]


def _run(problem, seconds, options):
    problem.solve(time_limit=seconds, max_iter=10**7, tol=1e-9, feas_tol=1e-9, **options)
    h = problem.history
    return h["time"], h["objective"], h["feasibility_rel"], problem


def _summarize(name, t, f, infeas, f_star, f0, checkpoints):
    sub = (f - f_star) / (f0 - f_star)
    row = [name]
    for target in (1e-2, 1e-3):
        ok = np.flatnonzero((np.abs(sub) <= target) & (infeas <= 1e-3))
        row.append(f"{t[ok[0]]:.2f}" if ok.size else "-")
    for when in checkpoints:
        i = min(np.searchsorted(t, when), len(t) - 1)
        row.append(f"{sub[i]:.1e} / {infeas[i]:.1e}")
    return row


def _table(rows, checkpoints):
    header = ["variant", "t(1e-2) s", "t(1e-3) s"] + [f"subopt / infeas @ {c:g}s" for c in checkpoints]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def covariance(d, seconds, threshold):
    from fwmodel.datasets import sparse_low_rank_covariance
    from fwmodel.experiments import certified_reference

    data = sparse_low_rank_covariance(d, threshold=threshold, seed=0)
    t0 = time.perf_counter()
    ref = certified_reference(data, gap_tol=1e-4)
    f_star = ref.f_star
    print(f"[covariance d={d} threshold={threshold}] reference f* = {f_star:.6g}, certified relative gap "
          f"{ref.rel_gap:.1e} ({time.perf_counter() - t0:.1f} s of GFB)", flush=True)
    f0 = data.loss(np.zeros((d, d)))
    checkpoints = [c for c in (1, 10, 60) if c <= seconds] or [seconds]
    rows = []
    for name, options in VARIANTS:
        X = fm.Variable((d, d), name="S")
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - data.sigma_hat)),
                          [fm.L1Ball(X, data.radius_l1), fm.TraceNormBall(X, data.radius_trace)])
        t, f, infeas, prob = _run(prob, seconds, options)
        rows.append(_summarize(name, t, f, infeas, f_star, f0, checkpoints) + [str(prob.stats.iterations)])
        print("  ", rows[-1], flush=True)
    return _table([r[:-1] for r in rows], checkpoints) + "\n\niterations: " + \
        ", ".join(f"{r[0]}: {r[-1]}" for r in rows)


def simplex_box(n, seconds):
    rng = np.random.default_rng(0)
    c = rng.standard_normal(n) * 0.2 + 1.0 / n
    cap = 3.0 / n
    lo, hi = c.min() - cap - 1.0, c.max() + 1.0
    for _ in range(200):  # closed-form projection by bisection on the shift
        tau = 0.5 * (lo + hi)
        lo, hi = (tau, hi) if np.clip(c - tau, 0, cap).sum() > 1.0 else (lo, tau)
    x_star = np.clip(c - 0.5 * (lo + hi), 0, cap)
    f_star = float(np.sum((x_star - c) ** 2))
    f0 = float(np.sum(c ** 2))
    print(f"[simplex ∩ box n={n}] f* = {f_star:.6g} (closed form)", flush=True)
    checkpoints = [c_ for c_ in (0.1, 1, 10) if c_ <= seconds] or [seconds]
    rows = []
    for name, options in VARIANTS:
        x = fm.Variable(n, name="x")
        # the box on the slice x[:]: two copies tied by rows, as FW-AL's variants are compared here
        # (on x itself the compiler merges the two sets into one CappedSimplex)
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Simplex(x), fm.Box(x[:], 0, cap)])
        t, f, infeas, prob = _run(prob, seconds, options)
        rows.append(_summarize(name, t, f, infeas, f_star, f0, checkpoints) + [str(prob.stats.iterations)])
        print("  ", rows[-1], flush=True)
    return _table([r[:-1] for r in rows], checkpoints) + "\n\niterations: " + \
        ", ".join(f"{r[0]}: {r[-1]}" for r in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[200], help="covariance sizes d")
    parser.add_argument("--seconds", type=float, default=20.0, help="time per variant")
    parser.add_argument("--threshold", type=float, default=0.5, help="sparsity threshold of Sigma")
    parser.add_argument("--simplex-n", type=int, default=500)
    args = parser.parse_args(argv)
    out = [simplex_box(args.simplex_n, min(args.seconds, 5.0))]
    for d in args.sizes:
        out.append(covariance(d, args.seconds, args.threshold))
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
