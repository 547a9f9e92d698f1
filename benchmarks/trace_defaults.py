"""L1 ball ∩ trace-norm ball with default options, side by side with CVXPY + SCS.

Models (min ||X - C||_F^2 s.t. ||X||_1 <= r1, ||X||_* <= r2, both balls binding):

``lrs``  C = U V' (rank 3, Gaussian factors) + a sparse matrix (5% of the
         entries, N(0, 9)) + N(0, 0.01) noise, not symmetric; r1 and r2 are
         half of C's L1 and nuclear norms.
``cov``  the paper's covariance problem (Sec. 5, ``fwmodel.datasets``,
         threshold 0.9): C = Sigma_hat, r1 and r2 the norms of the true Sigma.

Subcommands:

``defaults``  each model solved by ``prob.solve()`` (defaults) and by CVXPY +
              SCS (default accuracy) in the same run, one after the other;
              reports status, time, iterations, objective and relative
              infeasibility, and the gap to SCS's objective. Optionally an
              extra fwmodel configuration (``--extra "projection=False"``).
``threads``   the same solves with ``threads=1`` and with the BLAS's own thread
              count (``threads=None``), interleaved, best of ``--repeat``.
``iteration`` on the covariance problem at large d: time per iteration against
              the time spent in the two LMOs, and peak traced memory
              (tracemalloc), with the defaults and with ``projection=False``.
``iterates``  the covariance problem at small d, a fixed number of iterations
              under seven option sets (rank_k=True is not among them: its
              iterates differ by design): objective, FW gap, feasibility and a
              hash of X to all printed digits. Run before and after a change
              that must not move the iterates (other than by rounding) and diff.

    python benchmarks/trace_defaults.py defaults --models lrs:60 lrs:200 cov:50
    python benchmarks/trace_defaults.py threads --models lrs:60 cov:200 cov:1000 --iters 50
    python benchmarks/trace_defaults.py iteration --sizes 1000 2000 4000 --iters 15
    python benchmarks/trace_defaults.py iteration --sizes 4000 --configs defaults --clock cpu
    python benchmarks/trace_defaults.py iterates --size 150 --iters 150 > before.txt
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel
import fwmodel as fm  # noqa: E402
from fwmodel.datasets import sparse_low_rank_covariance  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def lrs_data(d, seed=0):
    """Rank 3 + sparse + noise, radii half of C's norms (both balls binding)."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((d, 3)) @ rng.standard_normal((3, d))
    S = np.zeros((d, d))
    support = rng.random((d, d)) < 0.05
    S[support] = 3.0 * rng.standard_normal(int(support.sum()))
    C = L + S + 0.1 * rng.standard_normal((d, d))
    return C, 0.5 * float(np.abs(C).sum()), 0.5 * float(np.linalg.svd(C, compute_uv=False).sum())


def cov_data(d, seed=0):
    """The paper's covariance problem (radii: the true norms, both binding)."""
    data = sparse_low_rank_covariance(d, seed=seed)
    return data.sigma_hat, data.radius_l1, data.radius_trace


MODELS = {"lrs": lrs_data, "cov": cov_data}


def parse_model(spec):
    kind, d = spec.split(":")
    return kind, int(d)


def fwmodel_problem(C, r1, r2):
    X = fm.Variable(C.shape, name="X")
    return fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)]), X


def run_fwmodel(C, r1, r2, **options):
    prob, X = fwmodel_problem(C, r1, r2)
    t0 = time.perf_counter()
    prob.solve(**options)
    elapsed = time.perf_counter() - t0
    return dict(status=prob.status, time=elapsed, iterations=prob.stats.iterations, objective=prob.value,
                infeas=prob.stats.feasibility_rel, steps=prob.stats.step_counts)


def run_scs(C, r1, r2):
    import cvxpy as cp

    X = cp.Variable(C.shape)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(X - C)), [cp.sum(cp.abs(X)) <= r1, cp.normNuc(X) <= r2])
    t0 = time.perf_counter()
    prob.solve(solver="SCS")
    return dict(status=prob.status, time=time.perf_counter() - t0, objective=float(prob.value))


def machine():
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    import numpy
    import scipy
    return (f"{platform.machine()}, {os.cpu_count()} cores, load average {load:.1f}, "
            f"numpy {numpy.__version__}, scipy {scipy.__version__}")


def cmd_defaults(args):
    extra = eval(f"dict({args.extra})") if args.extra else None  # noqa: S307 (a command-line option)
    rows = ["| model | d | method | status | time (s) | iterations | objective | rel. infeas. | (f - f_SCS) / f_SCS |",
            "|---|---|---|---|---|---|---|---|---|"]
    for spec in args.models:
        kind, d = parse_model(spec)
        C, r1, r2 = MODELS[kind](d)
        scs = run_scs(C, r1, r2)
        runs = [("fwmodel defaults", run_fwmodel(C, r1, r2, time_limit=args.time_limit))]
        if extra is not None:
            runs.append((f"fwmodel {args.extra}", run_fwmodel(C, r1, r2, time_limit=args.time_limit, **extra)))
        for name, r in runs:
            rel = (r["objective"] - scs["objective"]) / abs(scs["objective"])
            rows.append(f"| {kind} | {d} | {name} | {r['status']} | {r['time']:.2f} | {r['iterations']} | "
                        f"{r['objective']:.6g} | {r['infeas']:.1e} | {rel:.1e} |")
            print(rows[-1], r["steps"], flush=True)
        rows.append(f"| {kind} | {d} | CVXPY + SCS | {scs['status']} | {scs['time']:.2f} | - | "
                    f"{scs['objective']:.6g} | - | 0 |")
        print(rows[-1], flush=True)
    text = "\n".join(rows) + f"\n\n({machine()})\n"
    print(text)
    if args.name:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, args.name), "w") as fh:
            fh.write(text)


def cmd_threads(args):
    try:
        from threadpoolctl import threadpool_info
        native = max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
    except (ImportError, ValueError):
        native = "?"
    rows = [f"| model | d | iterations | threads=1 (s) | threads=None ({native}) (s) | ratio |", "|---|---|---|---|---|---|"]
    for spec in args.models:
        kind, d = parse_model(spec)
        C, r1, r2 = MODELS[kind](d)
        best = {1: np.inf, None: np.inf}
        iters = {}
        for _ in range(args.repeat):
            for threads in (1, None):  # interleaved: a busy machine slows both alike
                r = run_fwmodel(C, r1, r2, threads=threads, max_iter=args.iters, tol=1e-12, feas_tol=1e-12)
                best[threads] = min(best[threads], r["time"])
                iters[threads] = r["iterations"]
        rows.append(f"| {kind} | {d} | {iters[1]} | {best[1]:.3f} | {best[None]:.3f} | {best[None] / best[1]:.2f} |")
        print(rows[-1], flush=True)
    text = "\n".join(rows) + f"\n\n({machine()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')})\n"
    print(text)


CONFIGS = {"defaults": {}, "projection=False": {"projection": False},
           "projection=False,rank_k=False": {"projection": False, "rank_k": False},  # the paper's rank-one FW steps
           # the L1 copy projected, the trace-norm copy by rank-k steps: the defaults' steps at d = 4000, forced
           # at smaller d (where "auto" may project the trace-norm copy too)
           "projection=True": {"projection": True}}


def cmd_iteration(args):
    """Time per iteration against the time of its two LMOs, and peak traced memory, on the covariance problem.

    tracemalloc starts once the data (C) exists and before the problem is built,
    so the peak includes compiling it; "solve only" is the peak of the solve
    itself (``tracemalloc.reset_peak`` after compiling). "loop only" times the
    iterations from the first callback to the last (the setup before the first
    iterate and the result's assembly left out). ``--clock cpu`` reads this process's CPU time
    (``time.process_time``) instead of the wall clock: on a machine shared by more jobs than cores,
    wall times of the same tree swung 2.3x between runs (load 8-9 on 2 cores) while the CPU time,
    single-threaded BLAS, counts only this process's work.
    """
    import tracemalloc

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.single_products is not None:
        import fwmodel.engine.rank_k as rank_k

        rank_k.SINGLE_PRODUCTS_MIN_DIM = None if args.single_products == "off" else int(args.single_products)

    rows = ["| d | options | iterations | s / iteration | LMOs / iteration (s) | iteration / LMOs | "
            "loop only: s / iteration | LMOs | iteration / LMOs | "
            "projection steps | peak traced memory, compile included (d x d arrays) | solve only |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in args.sizes:
        C, r1, r2 = cov_data(d)
        for label in args.configs:
            options = CONFIGS[label]
            tracemalloc.start()
            X = fm.Variable((d, d), name="X")
            l1, trace = fm.L1Ball(X, r1), fm.TraceNormBall(X, r2)
            spent = [0.0]
            projections = {"L1": 0, "trace": 0}
            for name, s in (("L1", l1), ("trace", trace)):  # count the projections of each copy
                def counted(point, *args, _project=s.project_flat, _name=name, **kwargs):
                    projections[_name] += 1
                    return _project(point, *args, **kwargs)
                s.project_flat = counted
            if hasattr(l1, "projected_step_sparse"):  # the L1 copy's projection steps taken on its support
                def counted_sparse(*args, _step=l1.projected_step_sparse):
                    found = _step(*args)
                    projections["L1"] += found is not None
                    return found
                l1.projected_step_sparse = counted_sparse
            for s in (l1, trace):  # accumulate the time of every LMO call of the solve (FW steps, gap, certificates)
                def timed_lmo_for_solve(_make=s.lmo_for_solve):
                    lmo = _make()  # the solve's LMO (the trace-norm ball's has its own Lanczos warm start)

                    def timed_lmo(direction):
                        t0 = clock()
                        out = lmo(direction)
                        spent[0] += clock() - t0
                        return out
                    return timed_lmo
                s.lmo_for_solve = timed_lmo_for_solve
            prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [l1, trace])
            prob.compile()
            compile_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            marks = []  # (time, LMO time) at each iteration: the loop without the setup

            def mark(state):
                marks.append((clock(), spent[0]))

            t0 = clock()
            prob.solve(max_iter=args.iters, tol=1e-12, feas_tol=1e-12, callback=mark, **options)
            elapsed = clock() - t0
            solve_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            it = max(prob.stats.iterations, 1)
            # projection="auto" times up to 3 projections of each candidate before choosing
            projected = [name for name, count in projections.items() if count > 3] or ["none"]
            dxd = 8.0 * d * d
            # from the first iteration's callback to the last: the setup (first gradient, penalty,
            # stopping scales, first LMO timings) and the result's assembly left out
            loops = max(len(marks) - 1, 1)
            loop_time = (marks[-1][0] - marks[0][0]) / loops
            loop_lmo = (marks[-1][1] - marks[0][1]) / loops
            rows.append(f"| {d} | {label} | {prob.stats.iterations} | {elapsed / it:.3f} | {spent[0] / it:.3f} | "
                        f"{elapsed / max(spent[0], 1e-12):.1f}x | {loop_time:.3f} | {loop_lmo:.3f} | "
                        f"{loop_time / max(loop_lmo, 1e-12):.1f}x | {prob.stats.step_counts.get('projection', 0)} "
                        f"({', '.join(projected)}) | "
                        f"{max(compile_peak, solve_peak) / dxd:.2f} | {solve_peak / dxd:.2f} |")
            print(rows[-1], flush=True)
            del prob, X, l1, trace
    print("\n".join(rows) + f"\n\n({machine()}; {'CPU' if args.clock == 'cpu' else 'wall-clock'} seconds; "
          "tracemalloc on: times include its overhead)")


ITERATE_OPTIONS = ({"projection": False, "inface": False}, {"projection": False, "inface": False, "sweep": "jacobi"},
                   {"projection": False}, {}, {"sweep": "jacobi", "projection": False}, {"sweep": "jacobi"},
                   {"projection": True})


def cmd_iterates(args):
    """Objective, FW gap, feasibility and a hash of X after a fixed number of iterations, per option set."""
    import hashlib

    C, r1, r2 = cov_data(args.size)
    for options in ITERATE_OPTIONS:
        prob, X = fwmodel_problem(C, r1, r2)
        prob.solve(max_iter=args.iters, tol=1e-12, feas_tol=1e-12, **options)
        digest = hashlib.sha1(np.ascontiguousarray(X.value).tobytes()).hexdigest()[:10]
        label = ",".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        print(f"{label:40s} {prob.status} it={prob.stats.iterations} objective={prob.value!r} "
              f"gap={prob.stats.fw_gap!r} feasibility={prob.stats.feasibility!r} X={digest} "
              f"steps={dict(prob.stats.step_counts)}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("defaults")
    q.add_argument("--models", nargs="+", default=["lrs:60", "cov:50", "lrs:200"])
    q.add_argument("--time-limit", type=float, default=600.0)
    q.add_argument("--extra", default="", help='another fwmodel configuration, e.g. "projection=False"')
    q.add_argument("--name", default="", help="also write the table to benchmarks/results/NAME")
    q = sub.add_parser("threads")
    q.add_argument("--models", nargs="+", default=["lrs:60", "cov:200", "cov:1000"])
    q.add_argument("--iters", type=int, default=50)
    q.add_argument("--repeat", type=int, default=2)
    q = sub.add_parser("iteration")
    q.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    q.add_argument("--iters", type=int, default=15)
    q.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=["defaults", "projection=False"],
                   help="option sets to run at each size")
    q.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="wall-clock seconds, or this process's CPU seconds (steadier on a busy machine)")
    q.add_argument("--single-products", default=None, metavar="D",
                   help="Krylov products of rank-k steps in float32 on blocks of at least D rows, or 'off' (float64) "
                        "(engine/rank_k.py, SINGLE_PRODUCTS_MIN_DIM)")
    q = sub.add_parser("iterates")
    q.add_argument("--size", type=int, default=150)
    q.add_argument("--iters", type=int, default=150)
    args = p.parse_args(argv)
    {"defaults": cmd_defaults, "threads": cmd_threads, "iteration": cmd_iteration,
     "iterates": cmd_iterates}[args.cmd](args)


if __name__ == "__main__":
    main()
