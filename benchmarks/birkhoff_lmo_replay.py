"""The Birkhoff projection's assignment LMO calls, recorded once and replayed through each solver.

Solves ``min ||X - C||_F^2`` over doubly stochastic X (C as in
benchmarks/birkhoff.py) once with the default backend, recording the cost
matrix of every LMO call, then replays the whole sequence through each
assignment solver in turn (a fresh solver per replay, as a solve gets),
alternating the solvers for ``--rounds`` rounds. Reports the median process
(CPU) time per call (less sensitive than wall time to other jobs on the
machine), how many calls return the same permutation as the recorded solve and
the largest difference of the optimal value from SciPy's
``linear_sum_assignment`` (relative to max |D|).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/birkhoff_lmo_replay.py --n 200 --rounds 5

Solvers: ``scipy``: SciPy on the row- and column-reduced matrix (the
stateless LMO); ``scipy-warm``: :class:`WarmStartedAssignment` (the default
backend in a solve); ``numba``: :class:`CompiledWarmAssignment` (the numba
backend in a solve); ``numba-dense``: the same without the sparse searches
(every free row routed by LAPJV's dense search from the previous
potentials); ``numba-cold``: the compiled solver started from the column
minima at every call (why the stateless ``lmo_atom`` stays on SciPy). The numba
solvers are skipped when numba is not installed; the compile (or cache
load) time is reported apart.
"""
import argparse
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

import fwmodel as fm
from fwmodel.sets.birkhoff import CompiledWarmAssignment, WarmStartedAssignment, assignment_indices


def record_costs(n, seed=0):
    """The cost matrices of every LMO call of one solve, in order."""
    rng = np.random.default_rng(seed)
    C = (1.0 + rng.standard_normal((n, n))) / n
    costs, inner = [], fm.BirkhoffPolytope.lmo_for_solve

    def recording(self_set):
        lmo = inner(self_set)

        def lmo_atom(flat_direction):
            costs.append(np.array(flat_direction, dtype=float).reshape(n, n))
            return lmo(flat_direction)

        return lmo_atom

    fm.BirkhoffPolytope.lmo_for_solve = recording
    try:
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X, backend="scipy")])
        prob.solve(max_iter=20000)
    finally:
        fm.BirkhoffPolytope.lmo_for_solve = inner
    return costs, prob


def compiled(sparse=True, warm=True):
    def make(n):
        solver = CompiledWarmAssignment(n)
        if not sparse:
            solver.WINDOW_FACTOR = np.inf  # the window stays infinite: no sparse search
        if not warm:
            def cold(D):
                solver.warm = False
                return solver(D)
            return cold
        return solver
    return make


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--solvers", nargs="*",
                    default=["scipy", "scipy-warm", "numba", "numba-dense", "numba-cold"])
    args = ap.parse_args()
    n = args.n
    costs, prob = record_costs(n)
    print(f"n = {n}: {prob.stats.iterations} iterations, {len(costs)} LMO calls, f = {prob.value:.7g}")
    best = [float(D[linear_sum_assignment(D)].sum()) for D in costs]
    makers = {
        "scipy": lambda n: assignment_indices,
        "scipy-warm": WarmStartedAssignment,
        "numba": compiled(), "numba-dense": compiled(sparse=False), "numba-cold": compiled(warm=False),
    }
    solvers = list(args.solvers)
    if any(name.startswith("numba") for name in solvers):
        try:
            t = time.perf_counter()
            CompiledWarmAssignment(3)(np.eye(3))  # import numba, compile or load the cached kernels
            print(f"numba import + compile (or cache load): {time.perf_counter() - t:.3f} s")
        except fm.ModelError as exc:
            print(f"numba solvers skipped: {exc}")
            solvers = [name for name in solvers if not name.startswith("numba")]
    reference = [WarmStartedAssignment(n)]
    reference_perms = [reference[0](D) for D in costs]
    seconds = {name: [] for name in solvers}
    same, worst = {}, {}
    for _ in range(args.rounds):
        for name in solvers:
            solve = makers[name](n)
            answers = []
            t = time.process_time()
            for D in costs:
                answers.append(solve(D))
            seconds[name].append(time.process_time() - t)
            same[name] = sum(np.array_equal(a, b) for a, b in zip(answers, reference_perms))
            worst[name] = max(abs(float(D.ravel()[a].sum()) - v) / np.abs(D).max()
                              for D, a, v in zip(costs, answers, best))
    print("| solver | CPU ms per call (median of rounds) | CPU s per replay, min-max | same permutation as scipy-warm "
          "| max |value - SciPy's| / max|D| |")
    print("|---|---|---|---|---|")
    for name in solvers:
        s = seconds[name]
        print(f"| {name} | {np.median(s) / len(costs) * 1e3:.3f} | {min(s):.3f}-{max(s):.3f} | "
              f"{same[name]} / {len(costs)} | {worst[name]:.1e} |")


if __name__ == "__main__":
    main()
