"""Where a covariance solve's peak traced memory is: the peak inside each engine function, in d x d arrays.

The paper's covariance problem (``fwmodel.experiments.build_problem`` on
``fwmodel.datasets.sparse_low_rank_covariance(d, threshold=0.9, seed=0)``)
is solved for a few iterations under tracemalloc with the functions below
wrapped: each records the highest traced memory reached while it runs
(nested calls included; ``tracemalloc.reset_peak`` per call, the outer
peaks carried over). The table lists, per function, that peak and the
memory alive when it was entered, both in d x d float64 arrays; the
overall peak includes compiling. ``--snapshot FUNC`` also lists the
largest allocation sites alive when FUNC (a name of the table) is first
called.

    python benchmarks/memory_peaks.py --size 2000 --iters 8 --options projection=True rank_k=True
    python benchmarks/memory_peaks.py --size 4000 --iters 8
    python benchmarks/memory_peaks.py --size 2000 --iters 8 --project-all
"""
import argparse
import functools
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402,F401
from fwmodel import datasets, experiments  # noqa: E402
from fwmodel.engine import projection_choice, projection_step, rank_k  # noqa: E402
from fwmodel.sets import l1, trace_norm  # noqa: E402

#: (module or class, attribute) wrapped for the table
TARGETS = [
    (projection_choice, "choose"),
    (projection_step.ProjectionStep, "take"),
    (projection_step.ProjectionStep, "_take_tied_copies"),
    (l1.L1Ball, "project_flat"),
    (l1, "_soft_threshold_level_chunked"),
    (l1, "_michelot"),
    (trace_norm.TraceNormBall, "project_flat"),
    (trace_norm.TraceNormBall, "_atom"),  # a solve's LMO calls (lmo_for_solve) and direct lmo_atom calls
    (l1.L1Ball, "lmo_atom"),
    (rank_k.RankKStep, "propose"),
    (rank_k.RankKStep, "_lean_rank_k_direction"),
    (rank_k, "rank_k_prox"),
    (rank_k, "_low_rank_minus"),
]


class PeakTracker:
    """Per-function peaks of traced memory, with nesting (a stack of the outer calls' partial peaks)."""

    def __init__(self, snapshot_at=None):
        self.snapshot_at = snapshot_at  # a function name: snapshot the memory alive when it is first entered
        self.snapshot = None
        self.stack = []
        self.peaks = {}  # name -> (peak, current at entry)
        self.best_call = {}

    def wrap(self, owner, attr):
        fn = getattr(owner, attr)
        name = f"{getattr(owner, '__name__', owner)}.{attr}"
        tracker = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            current, peak = tracemalloc.get_traced_memory()
            if name == tracker.snapshot_at and tracker.snapshot is None:
                tracker.snapshot = tracemalloc.take_snapshot()
            if tracker.stack:  # the outer call's peak so far
                tracker.stack[-1] = max(tracker.stack[-1], peak)
            tracker.stack.append(current)
            tracemalloc.reset_peak()
            try:
                return fn(*args, **kwargs)
            finally:
                mine = max(tracker.stack.pop(), tracemalloc.get_traced_memory()[1])
                if tracker.stack:
                    tracker.stack[-1] = max(tracker.stack[-1], mine)
                old = tracker.peaks.get(name, (0, 0, 0))
                if mine > old[0]:
                    tracker.peaks[name] = (mine, current, old[2] + 1)
                else:
                    tracker.peaks[name] = (old[0], old[1], old[2] + 1)

        setattr(owner, attr, wrapper)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=2000)
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--snapshot", default=None, help="a function of the table: list the memory alive at its first call")
    p.add_argument("--project-all", action="store_true",
                   help='projection="auto" projects every candidate copy (its cost thresholds lifted): the '
                        "trace-norm copy's eigendecomposition path, whatever the machine's speed")
    p.add_argument("--options", nargs="*", default=[], help="solve options, e.g. projection=True rank_k=True")
    args = p.parse_args(argv)
    options = {}
    for item in args.options:
        key, value = item.split("=")
        options[key] = eval(value)  # noqa: S307 (a command-line option)
    if args.project_all:
        projection_choice.ESTIMATE_MARGIN = float("inf")
        init = projection_choice.AutoProjection.__init__
        projection_choice.AutoProjection.__init__ = functools.partialmethod(init, max_iterations=float("inf"))
    d = args.size
    data = datasets.sparse_low_rank_covariance(d, threshold=0.9, seed=0)
    tracker = PeakTracker(args.snapshot)
    for owner, attr in TARGETS:
        tracker.wrap(owner, attr)
    tracemalloc.start()
    t0 = time.perf_counter()
    problem, X = experiments.build_problem(data)
    problem.compile()
    marks = []
    problem.solve(max_iter=args.iters, tol=1e-12, feas_tol=1e-12, callback=lambda s: marks.append(time.perf_counter()),
                  **options)
    elapsed = time.perf_counter() - t0
    overall = tracemalloc.get_traced_memory()[1]
    for value in tracker.peaks.values():
        overall = max(overall, value[0])
    tracemalloc.stop()
    dxd = 8.0 * d * d
    loop = (marks[-1] - marks[0]) / max(len(marks) - 1, 1) if len(marks) > 1 else float("nan")
    print(f"d = {d}, options {options or 'defaults'}: {problem.stats.iterations} iterations, "
          f"steps {dict(problem.stats.step_counts)}, {elapsed:.1f} s, loop {loop:.3f} s / iteration")
    print(f"overall peak (compile included): {overall / dxd:.3f} d x d arrays")
    print("| function | calls | peak inside (d x d arrays) | alive at entry |")
    print("|---|---|---|---|")
    for name, (peak, entry, calls) in sorted(tracker.peaks.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name} | {calls} | {peak / dxd:.3f} | {entry / dxd:.3f} |")
    if tracker.snapshot is not None:
        print(f"alive at the first call of {args.snapshot}:")
        for stat in tracker.snapshot.statistics("lineno")[:12]:
            print(f"  {stat.size / dxd:.3f}  {stat.traceback}")
    print(f"(load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
