"""Command line: ``python -m fwmodel demo`` (or the ``fwmodel demo`` console script).

The demo races two solvers on the experiment of the FW-AL paper's Sec. 5
(Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018): recover a covariance
matrix that is both sparse and low rank,

    min ||S - Sigma_hat||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2

(eq. ``constrained_sparse_low_rank``), with fwmodel (FW-AL) and with
projection splitting (GFB: one full eigendecomposition per iteration). It
reports the paper's metrics over time -- the estimate error
``||S_t - Sigma||_F / ||Sigma||_F`` and the support F1 score -- and the
suboptimality against a reference optimum whose accuracy is certified by a
dual bound, then ends with a one-line verdict. See ``--help``.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

#: peak memory of the demo in d x d float64 arrays: 10.8 GB resident at d = 8000 (21 arrays), the
#: data, fwmodel (10-16 traced arrays) and GFB (its iterates, two projections, the
#: eigendecomposition) included (benchmarks/RESULTS.md, "The Fig. 2 race")
_ARRAYS_FWMODEL = 21
_ARRAYS_GFB = 12
_MIN_SIZE = 5  # the data has 5 diagonal blocks

_DEMO_DESCRIPTION = """\
The experiment of the FW-AL paper's Sec. 5 (Gidel, Pedregosa & Lacoste-Julien,
AISTATS 2018): recover a covariance matrix Sigma that is both sparse and low
rank from a noisy empirical covariance Sigma_hat,

    min ||S - Sigma_hat||_F^2   s.t.  ||S||_1 <= beta_1,  ||S||_* <= beta_2,

racing fwmodel (FW-AL, default options: projected-gradient steps on the L1
copy from the first iteration -- soft-thresholding costs about its LMO --
and FW steps on the trace-norm copy, a Lanczos eigenpair each, or at
d >= 1000 BlockFW rank-k steps with k capped by cost; after a few
iterations the trace-norm copy is projected too if its eigendecomposition
measured at most five iterations, up to d of about 2000 on one core)
against projection splitting (GFB: a full O(d^3) eigendecomposition per
iteration), each for --seconds on its own clock.

Steps: (1) a reference optimum S*, GFB run until a dual bound certifies its
objective to --reference-gap (printed); (2) the race, with progress every
second; (3) a table: time to 1e-2 / 1e-3 normalized suboptimality (with 1e-3
relative infeasibility), time to an estimate error ||S_t - Sigma||_F /
||Sigma||_F within 5% of S*'s, time to a support F1 (entries above 1e-2
against Sigma's support) within 90% of S*'s, and these metrics at a tenth of
the budget and at its end; (4) a one-line verdict; (5) the race under each
estimate rule, the same for both methods: the average of the two points
(fwmodel's S.value, GFB's iterate; the table above), the point in the L1
ball (fwmodel's prob.point_in(l1), GFB's projection p1) and the point in the
trace-norm ball, each with its own floor (GFB's lowest error under that
rule); (6) a plot, when matplotlib is installed.

Run time: at most 2 x --seconds (3 x with --fw-only) plus the reference
(defaults: under a minute on a busy 2-core machine). Memory: about 21 d x d
arrays at the peak, data and GFB included (10.8 GB measured at d = 8000). At
--size 8000 making the data takes about a minute, fwmodel's first iteration
12-18 s more, one GFB iteration 1.5-2 minutes (its first runs past any
shorter budget) and a certified reference over an hour: use --no-reference
and --seconds 200 there (9 minutes in all). Larger studies:
benchmarks/covariance.py."""


# ------------------------------------------------------------- validation
def _int_at_least(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _float_in(low, high, low_open=True, high_open=True):
    """A float parser for the interval (low, high) (ends open or closed as given)."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        bad_low = value <= low if low_open else value < low
        bad_high = value >= high if high_open else value > high
        if not math.isfinite(value) or bad_low or bad_high:
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
            raise argparse.ArgumentTypeError(f"must lie in {interval}, got {text}")
        return value

    return parse


def _available_memory():
    """Bytes of memory available (Linux /proc/meminfo), or None when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def build_parser():
    parser = argparse.ArgumentParser(prog="fwmodel", description="fwmodel: a CVXPY-style modeling language "
                                     "solved by the Frank-Wolfe augmented Lagrangian method (FW-AL).")
    sub = parser.add_subparsers(dest="command", metavar="{demo}")
    p = sub.add_parser("demo", help="the paper's sparse + low-rank covariance experiment: "
                       "fwmodel (FW-AL) against projection splitting (GFB)",
                       description=_DEMO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=_int_at_least(_MIN_SIZE), default=1000, metavar="D",
                   help=f"dimension d of the d x d matrix, at least {_MIN_SIZE} (default 1000)")
    p.add_argument("--seconds", type=_float_in(0, math.inf), default=20.0, metavar="T",
                   help="time budget of each method in seconds, > 0 (default 20)")
    p.add_argument("--reference-gap", type=_float_in(0, 1), default=1e-4, metavar="G",
                   help="the reference run stops when the certified gap (f_upper - f_lower) / (f(0) - f_lower) "
                        "is at most G, in (0, 1) (default 1e-4)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the reference optimum (for large d): no suboptimality; error and F1 targets "
                        "are then relative to the best value either method reached")
    p.add_argument("--fw-only", action="store_true",
                   help="also race fwmodel with Frank-Wolfe-type steps only on both sets (projection=False and, unless "
                        "--rank-k is given, rank_k=False: FW, pairwise and in-face steps, no projection, rank-one "
                        "steps on the trace-norm copy), the paper's algorithm: sparser iterates, slower objective")
    p.add_argument("--rank-k", choices=("auto", "on", "off"), default="auto",
                   help="fwmodel's rank_k option: BlockFW rank-k steps on the trace-norm copy while it takes FW "
                        "steps; auto (the solver's default: at d >= 1000, k capped by cost), on (rank_k=True), "
                        "off (rank_k=False, rank-one FW steps)")
    p.add_argument("--threshold", type=_float_in(0, 1, low_open=False), default=0.9,
                   help="sparsity threshold of Sigma, in [0, 1) (paper: 0.9, the default)")
    p.add_argument("--masked", action="store_true",
                   help="matrix completion: observe only a random fraction (--observed) of the entries (the "
                        "certified reference then needs many more GFB iterations: 1380 at d = 200; consider "
                        "--reference-gap 1e-3)")
    p.add_argument("--observed", type=_float_in(0, 1, high_open=False), default=0.2,
                   help="observed fraction with --masked, in (0, 1] (default 0.2)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the data (default 0)")
    p.add_argument("--output", default=None, metavar="PATH",
                   help="plot file (default: fwmodel_demo_d<D>.png in $FWMODEL_FIGURES_DIR, by default a "
                        "temporary folder; '' for no plot)")
    return parser


def _check_output(parser, args):
    if args.output is None:
        from .outputs import figures_dir

        args.output = os.path.join(figures_dir(), f"fwmodel_demo_d{args.size}.png")
    elif args.output:
        folder = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(folder):
            parser.error(f"argument --output: folder {folder!r} does not exist")


# ------------------------------------------------------------------- demo
def _progress(stream):
    last = {}

    def report(method, t, it, f, infeas):
        if t - last.get(method, -1e9) >= 1.0:
            last[method] = t
            print(f"  {method:8s} {t:6.1f} s  iteration {it:6d}  objective {f:12.6g}  infeasibility {infeas:8.2e}",
                  file=stream, flush=True)

    return report


def _first(rows, key, what):
    """'A reached <what> first (a s; B b s, ...)' for the column ``key`` of the rows."""
    times = [(row[key], row["method"]) for row in rows]
    reached = sorted((t, m) for t, m in times if not math.isnan(t))
    if not reached:
        return f"neither reached {what}"
    (t_win, winner), others = reached[0], [(t, m) for t, m in times if m != reached[0][1]]
    loser_text = ", ".join(f"{m} {t:.2g} s" if not math.isnan(t) else f"{m} not within its budget"
                           for t, m in others)
    return f"{winner} reached {what} first ({t_win:.2g} s; {loser_text})"


def verdict(rows, error_target, f1_target, with_reference, floor_target=None):
    """The demo's one-line, plain-language conclusion."""
    parts = []
    if floor_target is not None:
        parts.append(_first(rows, "t(floor)", f"1.1x the statistical floor (error <= {floor_target:.3g})"))
    if with_reference:
        parts.append(_first(rows, "t(0.01)", "1e-2 suboptimality"))
    parts.append(_first(rows, "t(error)", f"estimate error <= {error_target:.3g}"))
    parts.append(_first(rows, "t(f1)", f"support F1 >= {f1_target:.2g}"))
    return "Verdict: " + "; ".join(parts) + "."


def _steps(traj):
    """What the engine did, from its step counts (one count per block and iteration)."""
    counts = traj.info.get("step_counts") or {}
    return ", ".join(f"{kind} {n}" for kind, n in counts.items() if n) or "none"


def _reference(data, gap, stream):
    """Step 1: the certified reference optimum (:func:`fwmodel.experiments.certified_reference`), printed."""
    from .experiments import certified_reference

    print(f"  reference optimum: GFB until the certified relative gap is <= {gap:g} ...", file=stream, flush=True)
    last = [0.0]

    def progress(it, seconds, rel_gap):
        if seconds - last[0] >= 5.0:
            last[0] = seconds
            print(f"    {seconds:6.1f} s  iteration {it:6d}  certified gap {rel_gap:.2e}", file=stream, flush=True)

    ref = certified_reference(data, gap_tol=gap, progress=progress)
    state = "certified" if ref.certified else "NOT certified (iteration cap reached)"
    print(f"  f* = {ref.f_star:.10g}: {ref.f_lower:.10g} <= f* <= {ref.f_upper:.10g}, relative gap "
          f"{ref.rel_gap:.1e} ({state}; {ref.iterations} GFB iterations, {ref.seconds:.1f} s)", file=stream)
    if data.mask is None:
        print(f"  the reference point S* lies in both balls and within {ref.distance_bound:.1e} x ||S*||_F "
              "of the exact optimum (f is 2-strongly convex)", file=stream)
    print(f"  suboptimalities below are measured against f_upper: each is accurate to +-{ref.rel_gap:.0e}",
          file=stream)
    return ref


def _race(data, args, S_ref, stream):
    """Step 2: each method for ``args.seconds`` on its own clock; their trajectories."""
    from .experiments import FW_ONLY, run_fwmodel, run_gfb

    progress = _progress(stream)
    print(f"running fwmodel (FW-AL, default options) for {args.seconds:g} s ...", file=stream, flush=True)
    rank_k = {"auto": "auto", "on": True, "off": False}[getattr(args, "rank_k", "auto")]
    options = {} if rank_k == "auto" else dict(rank_k=rank_k)
    runs = [run_fwmodel(data, time_limit=args.seconds, reference=S_ref, progress=progress, **options)]
    print(f"  fwmodel's steps (per block): {_steps(runs[-1])}", file=stream)
    if args.fw_only:
        print(f"running fwmodel with Frank-Wolfe-type steps only (projection=False) for {args.seconds:g} s ...",
              file=stream, flush=True)
        paper = {"projection": False, "rank_k": False, **options}  # rank-one FW steps unless --rank-k says otherwise
        runs.append(run_fwmodel(data, time_limit=args.seconds, reference=S_ref, progress=progress, name=FW_ONLY,
                                **paper))
        print(f"  steps (per block): {_steps(runs[-1])}", file=stream)
    print(f"running GFB (projection splitting) for {args.seconds:g} s ...", file=stream, flush=True)
    runs.append(run_gfb(data, time_limit=args.seconds, reference=S_ref, progress=progress))
    return runs


def _targets(data, ref, runs):
    """The estimate-error and F1 targets: 5% above S*'s error, 90% of its F1 (or of the best seen, without S*)."""
    from .experiments import estimate_error, f1_score, support_scores

    if ref is not None:
        error, f1 = estimate_error(ref.S, data.sigma), f1_score(*support_scores(ref.S, data.support)[:2])
        basis = f"S* has estimate error {error:.3g} and support F1 {f1:.3g}"
    else:
        seen = [c for traj in runs for c in traj.checkpoints]
        error, f1 = min(c["error"] for c in seen), max(c["f1"] for c in seen)
        basis = f"the best seen: estimate error {error:.3g}, support F1 {f1:.3g}"
    return 1.05 * error, 0.9 * f1, basis


def _statistical_floor(runs, estimate=None):
    """The lowest estimate error GFB (the last run) reaches in its budget: past it, more optimization
    does not improve the estimate. The race's target is 1.1x this floor."""
    from .experiments import statistical_floor

    return statistical_floor(runs[-1], estimate)


def _race_by_estimate(runs, times, f0, stream):
    """The race under each estimate rule, the same for both methods (table and one verdict line per rule)."""
    from .experiments import ESTIMATES, markdown_table, summarize

    rows, lines = [], []
    for rule in ESTIMATES:
        floor = _statistical_floor(runs, rule)
        if floor is None:
            continue
        for row in summarize(runs, None, f0, support_times=times, floor_target=1.1 * floor, estimate=rule):
            row["rule"], row["floor"] = rule, floor
            rows.append(row)
        fw, gfb = rows[-len(runs)]["t(floor)"], rows[-1]["t(floor)"]
        ratio = gfb / fw if fw > 0 and not math.isnan(fw) and not math.isnan(gfb) else float("nan")
        lines.append(f"  {rule}: floor {floor:.4g}; " + _first(rows[-len(runs):], "t(floor)", "1.1x the floor")
                     + (f"; GFB / fwmodel = {ratio:.2f}" if not math.isnan(ratio) else ""))
    columns = ["rule", "method", "floor", "t(floor)", "best_error"]
    headers = ["estimate", "method", "floor (GFB's lowest error)", "t(error <= 1.1 x floor) s", "lowest error / at s"]
    for t in times:
        columns += [f"error@{t:g}s", f"f1@{t:g}s"]
        headers += [f"error @{t:g}s", f"F1 @{t:g}s"]
    print("\nThe race under each estimate rule (the same rule for both methods: the average of the two points, "
          "the point in the L1 ball -- fwmodel's prob.point_in(l1), GFB's projection p1 -- and the point in "
          "the trace-norm ball):\n", file=stream)
    print(markdown_table(rows, columns, headers), file=stream)
    print("\n".join(lines), file=stream)
    return rows


def _columns(with_reference, error_target, f1_target, times, floor_target=None):
    """The table's columns (keys of :func:`fwmodel.experiments.summarize`'s rows) and their headers."""
    columns = ["method", "iterations", "per_iteration"]
    headers = ["method", "iterations", "s / iteration"]
    if floor_target is not None:
        columns += ["t(floor)"]
        headers += [f"t(error <= 1.1 x floor = {floor_target:.3g}) s"]
    if with_reference:
        columns += ["t(0.01)", "t(0.001)", "subopt"]
        headers += ["t(subopt 1e-2) s", "t(subopt 1e-3) s", "final subopt"]
    columns += ["infeasibility", "t(error)", "best_error", "t(f1)"]
    headers += ["final infeas", f"t(error <= {error_target:.3g}) s", "lowest error / at s",
                f"t(F1 >= {f1_target:.2g}) s"]
    for t in times:
        columns += [f"error@{t:g}s", f"f1@{t:g}s"]
        headers += [f"error @{t:g}s", f"F1 @{t:g}s"]
    return columns, headers


def demo(args, stream=sys.stdout):
    """Run the demo (see the module docstring and ``--help``); returns the table's rows."""
    import numpy as np

    from .datasets import sparse_low_rank_covariance
    from .experiments import markdown_table, plot_comparison, summarize

    d = args.size
    observed = args.observed if args.masked else 1.0
    t0 = time.perf_counter()
    variant = f"matrix completion, {observed:.0%} observed" if args.masked else "full observation"
    print(f"fwmodel demo: sparse + low-rank covariance (FW-AL paper, Sec. 5), d = {d}, {variant}", file=stream)
    need, available = _ARRAYS_FWMODEL * 8 * d * d, _available_memory()
    if available is not None and need > available:
        print(f"  warning: fwmodel needs about {need / 2**30:.1f} GiB ({_ARRAYS_FWMODEL} d x d arrays); "
              f"{available / 2**30:.1f} GiB are available", file=stream)
    data = sparse_low_rank_covariance(d, threshold=args.threshold, observed=observed, seed=args.seed)
    print(f"  Sigma: {int(data.support.sum())} nonzeros (threshold {args.threshold:g}); radii: "
          f"||Sigma||_1 = {data.radius_l1:.4g}, ||Sigma||_* = {data.radius_trace:.4g}", file=stream)
    f0 = data.loss(np.zeros((d, d)))

    ref = None if args.no_reference else _reference(data, args.reference_gap, stream)
    runs = _race(data, args, ref.S if ref is not None else None, stream)

    error_target, f1_target, basis = _targets(data, ref, runs)
    times = sorted({round(args.seconds / 10, 3), float(args.seconds)})
    f_star = ref.f_star if ref is not None else None
    floor = _statistical_floor(runs)
    floor_target = None if floor is None else 1.1 * floor
    rows = summarize(runs, f_star, f0, support_times=times, error_target=error_target, f1_target=f1_target,
                     floor_target=floor_target)
    columns, headers = _columns(ref is not None, error_target, f1_target, times, floor_target)
    print(f"\nestimate error = ||S_t - Sigma||_F / ||Sigma||_F; support F1: entries |S_ij| > 1e-2 against "
          f"Sigma's support; targets: 5% above the error and 90% of the F1 of {basis}; "
          "their times are checkpoint times (5% or one iteration resolution)", file=stream)
    if floor is not None:
        print(f"statistical floor: the lowest estimate error GFB reaches in its budget, {floor:.4g}; "
              "t(1.1 x floor) is the race of the FW-AL paper's Fig. 2", file=stream)
    if ref is not None:
        print("subopt = (f - f*) / (f(0) - f*); t(subopt eps): first time with subopt <= eps and relative "
              "infeasibility <= 1e-3", file=stream)
    print("", file=stream)
    print(markdown_table(rows, columns, headers), file=stream)
    print("\n" + verdict(rows, error_target, f1_target, ref is not None, floor_target), file=stream)
    _race_by_estimate(runs, times, f0, stream)
    if args.output:
        fig = plot_comparison(runs, f_star, f0, path=args.output, title=f"fwmodel vs GFB, d = {d}, {variant}")
        if fig is None:
            print("(matplotlib is not installed: no plot)", file=stream)
        else:
            print(f"plot saved to {args.output}", file=stream)
    print(f"total {time.perf_counter() - t0:.1f} s", file=stream)
    return rows


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "demo":
        parser.print_help()
        return 0 if args.command is None else 2
    _check_output(parser, args)
    try:
        demo(args)
    except KeyboardInterrupt:
        print("\ndemo interrupted", file=sys.stderr)
        return 130  # the shell's code for Ctrl-C
    return 0


if __name__ == "__main__":
    sys.exit(main())
