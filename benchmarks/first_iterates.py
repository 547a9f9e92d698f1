"""When the first iterates of a covariance solve arrive: the setup's time and the time per iteration.

The paper's covariance problem (``fwmodel.experiments.build_problem`` on
``fwmodel.datasets.sparse_low_rank_covariance(d, threshold=0.9, seed=0)``,
the model of ``python -m fwmodel demo``) is built, then solved with the
given options for ``--iters`` iterations; the callback stamps each iterate.
Printed per run: the time from the call of ``solve`` (compiling included, as
in the demo's race) to the first and the third iterate, the mean time per
iteration after the first, both in wall-clock and in process CPU time (the
CPU time is less sensitive to other jobs on a shared machine), the objective
at the last iterate (the same on every run and checkout that takes the same
iterates), the page faults of the solve and the peak resident memory of the
process.

Each run is a fresh process (``--runs`` of them), because the page faults
of the first solve in a process are part of what is measured: a second
solve in the same process reuses the memory the first one touched. To
compare two checkouts, alternate them on the same machine:

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/first_iterates.py --size 4000 --iters 6 --runs 3
    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/first_iterates.py --size 4000 --options projection=False rank_k=False
"""
import argparse
import ast
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's fwmodel


def parse_options(items):
    """``name=value`` pairs as solve options (values as Python literals, else strings)."""
    options = {}
    for item in items:
        name, _, text = item.partition("=")
        try:
            options[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            options[name] = text
    return options


def one_run(size, iters, options):
    """Solve once in this process and print one line (see the module docstring)."""
    from fwmodel.datasets import sparse_low_rank_covariance
    from fwmodel.experiments import build_problem

    data = sparse_low_rank_covariance(size, threshold=0.9, seed=0)
    prob, _ = build_problem(data)
    wall, cpu, objective = [], [], []

    def callback(state):
        wall.append(time.perf_counter() - wall0)
        cpu.append(time.process_time() - cpu0)
        objective.append(state.objective)
        return len(wall) < iters

    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    wall0, cpu0 = time.perf_counter(), time.process_time()
    prob.solve(callback=callback, max_iter=10**6, **options)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0
    third = min(2, len(wall) - 1)
    per_wall = float(np.mean(np.diff(wall))) if len(wall) > 1 else float("nan")
    per_cpu = float(np.mean(np.diff(cpu))) if len(cpu) > 1 else float("nan")
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"| {size} | {len(wall)} | {wall[0]:.2f} | {wall[third]:.2f} | {per_wall:.3f} | {cpu[0]:.2f} | {cpu[third]:.2f} "
          f"| {per_cpu:.3f} | {objective[-1]:.12g} | {faults} | {peak_gb:.2f} | {os.getloadavg()[0]:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4000)
    parser.add_argument("--iters", type=int, default=6, help="iterates to wait for (default 6)")
    parser.add_argument("--runs", type=int, default=1, help="fresh processes, one after the other (default 1)")
    parser.add_argument("--options", nargs="*", default=[], metavar="NAME=VALUE", help="solve options")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single run in this process
    args = parser.parse_args()
    if args.iters < 1 or args.runs < 1:
        parser.error("--iters and --runs must be at least 1")
    options = parse_options(args.options)
    if args.one:
        one_run(args.size, args.iters, options)
        return
    print(f"options: {options or 'defaults'}")
    print("| d | iterates | wall: 1st (s) | 3rd (s) | s / iteration after the 1st | CPU: 1st (s) | 3rd (s) "
          "| s / iteration | objective at the last | page faults | peak RSS (GB) | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for _ in range(args.runs):
        subprocess.run([sys.executable, os.path.abspath(__file__), "--one", "--size", str(args.size),
                        "--iters", str(args.iters), "--options", *args.options], check=True)


if __name__ == "__main__":
    main()
