"""Command line: ``python -m fwmodel demo`` (or the ``fwmodel demo`` console script).

The demo reproduces, at a size that runs in under a minute, the experiment of
the FW-AL paper's Sec. 5 (Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018):
recover a covariance matrix that is both sparse and low rank,

    min ||S - Sigma_hat||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2

(eq. ``constrained_sparse_low_rank``), with fwmodel (FW-AL: one Lanczos
eigenpair per iteration for the trace-norm ball; for the L1 ball an arg-max,
or soft-thresholding from d = 317 on) and with projection splitting (GFB: one full eigendecomposition per
iteration). It prints progress, a table of times
to 1e-2 / 1e-3 normalized suboptimality and support recovery, and saves a
plot when matplotlib is installed.
"""
from __future__ import annotations

import argparse
import sys
import time


_DEMO_DESCRIPTION = """\
The experiment of the FW-AL paper's Sec. 5 (Gidel, Pedregosa & Lacoste-Julien,
AISTATS 2018) at a size that runs in under a minute: recover a covariance
matrix that is both sparse and low rank,

    min ||S - Sigma_hat||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2,

with fwmodel (FW-AL: a Lanczos eigenpair and an L1 arg-max per iteration;
soft-thresholding on the L1 ball from d = 317 on) and with projection splitting (GFB: a full eigendecomposition per
iteration). Prints
progress and a table (times to 1e-2 / 1e-3 normalized suboptimality with 1e-3
relative infeasibility, support recovery), and saves a plot when matplotlib is
installed. Larger runs: benchmarks/covariance.py."""


def _progress(stream):
    last = {}

    def report(method, t, it, f, infeas):
        if t - last.get(method, -1e9) >= 1.0:
            last[method] = t
            print(f"  {method:8s} {t:6.1f} s  iteration {it:6d}  objective {f:12.6g}  infeasibility {infeas:8.2e}",
                  file=stream, flush=True)

    return report


def demo(args, stream=sys.stdout):
    import numpy as np

    from .datasets import sparse_low_rank_covariance
    from .experiments import markdown_table, plot_comparison, reference_solution, run_fwmodel, run_gfb, summarize

    d = args.size
    observed = args.observed if args.masked else 1.0
    t0 = time.perf_counter()
    data = sparse_low_rank_covariance(d, threshold=args.threshold, observed=observed, seed=args.seed)
    variant = f"matrix completion, {observed:.0%} observed" if args.masked else "full observation"
    print(f"fwmodel demo: sparse + low-rank covariance (FW-AL paper, Sec. 5), d = {d}, {variant}", file=stream)
    print(f"  Sigma: {int(data.support.sum())} nonzeros (threshold {args.threshold:g}); radii: "
          f"||Sigma||_1 = {data.radius_l1:.4g}, ||Sigma||_* = {data.radius_trace:.4g}", file=stream)
    print(f"  reference solution (GFB to high accuracy, at most {args.seconds:g} s) ...", file=stream, flush=True)
    S_ref, f_star, its = reference_solution(data, max_iter=100000, tol=1e-8, time_limit=args.seconds)
    f0 = data.loss(np.zeros((d, d)))
    print(f"  f* = {f_star:.8g} after {its} GFB iterations", file=stream)
    progress = _progress(stream)
    print(f"running fwmodel (FW-AL, default options) for {args.seconds:g} s ...", file=stream, flush=True)
    fw = run_fwmodel(data, time_limit=args.seconds, reference=S_ref, progress=progress)
    print(f"running GFB (projection splitting) for {args.seconds:g} s ...", file=stream, flush=True)
    gfb = run_gfb(data, time_limit=args.seconds, reference=S_ref, progress=progress)
    times = sorted({round(args.seconds / 10, 3), float(args.seconds)})
    rows = summarize([fw, gfb], f_star, f0, support_times=times)
    columns = ["method", "iterations", "per_iteration", "t(0.01)", "t(0.001)", "subopt", "infeasibility", "distance"]
    headers = ["method", "iterations", "s / iteration", "t(1e-2) s", "t(1e-3) s", "final subopt", "final infeas",
               "dist to S*"]
    for t in times:
        columns.append(f"support@{t:g}s")
        headers.append(f"recall/precision @{t:g}s")
    print("\nsubopt = (f - f*) / (f(0) - f*); t(eps): first time with subopt <= eps and relative "
          "infeasibility <= 1e-3; support: |S_ij| > 1e-2 against the support of Sigma\n", file=stream)
    print(markdown_table(rows, columns, headers), file=stream)
    if args.output:
        fig = plot_comparison([fw, gfb], f_star, f0, path=args.output,
                              title=f"fwmodel vs GFB, d = {d}, {variant}")
        if fig is None:
            print("\n(matplotlib is not installed: no plot)", file=stream)
        else:
            print(f"\nplot saved to {args.output}", file=stream)
    print(f"total {time.perf_counter() - t0:.1f} s", file=stream)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fwmodel", description="fwmodel: FW-AL modeling language")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("demo", help="sparse + low-rank covariance: fwmodel vs projection splitting",
                       description=_DEMO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=200, help="dimension d of the d x d matrix (default 200)")
    p.add_argument("--seconds", type=float, default=12.0,
                   help="time budget of each method, and of the reference run (default 12)")
    p.add_argument("--threshold", type=float, default=0.9, help="sparsity threshold of Sigma (paper: 0.9)")
    p.add_argument("--masked", action="store_true", help="matrix completion: observe a random 20%% of the entries")
    p.add_argument("--observed", type=float, default=0.2, help="observed fraction with --masked")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="fwmodel_demo.png", help="plot file ('' for none; default fwmodel_demo.png)")
    args = parser.parse_args(argv)
    if args.command != "demo":
        parser.print_help()
        return 0 if args.command is None else 2
    demo(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
