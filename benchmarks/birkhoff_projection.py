"""The Birkhoff polytope's Euclidean projection against its LMO and an iteration, and what "auto" chooses.

For each size n and instance of ``benchmarks/birkhoff_accuracy.py`` (``dense``: C = (1 + N(0, 1)) / n;
``matching``: a noisy permutation), min ||X - C||_F^2 over doubly stochastic X:

* one projection (``fwmodel/sets/_birkhoff_projection.py``): cold (of C, no warm start) and warm (a
  sequence of points drifting by 1 % of C's spread per call, each from the previous multipliers), with the
  Newton steps taken;
* one assignment LMO on the gradients 2 (X - C) of a vertex solve: SciPy stateless, SciPy warm-started
  (the solve's LMO), and the numba backend's warm-started LMO where numba is installed;
* one iteration of the vertex path (``projection=False``, ``--vertex-iterations`` iterations);
* the default solve (``projection="auto"``): what AutoProjection measured (one projection, timed on nearby
  points in turn: ``projection_choice.timed_warm``) against its budget (``MAX_ITERATIONS`` iterations),
  whether it projected, iterations and time.

    python benchmarks/birkhoff_projection.py --sizes 30 100 200 500
"""
import argparse
import time

import numpy as np

import fwmodel as fm
from fwmodel.engine import projection_choice
from fwmodel.sets._birkhoff_projection import BirkhoffProjector
from fwmodel.sets.birkhoff import WarmStartedAssignment, assignment_indices

try:
    from .birkhoff_accuracy import instance
except ImportError:
    from birkhoff_accuracy import instance


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def projection_times(C, repeat):
    n = C.shape[0]
    cold = BirkhoffProjector(n)

    def run_cold():
        cold.reset()
        cold(C)

    t_cold = median_time(run_cold, repeat)
    steps_cold = cold.last_steps
    rng = np.random.default_rng(1)
    warm = BirkhoffProjector(n)
    warm(C)
    spread = float(C.std())
    times, steps = [], []
    Z = C.copy()
    for _ in range(max(repeat, 10)):
        Z = Z + 0.01 * spread * rng.standard_normal(C.shape)
        t0 = time.perf_counter()
        warm(Z)
        times.append(time.perf_counter() - t0)
        steps.append(warm.last_steps)
    return t_cold, steps_cold, float(np.median(times)), float(np.mean(steps))


def vertex_gradients(C, iterations):
    """The gradients 2 (X - C) of a vertex solve's first ``iterations`` iterations, its time per iteration."""
    n = C.shape[0]
    X = fm.Variable((n, n))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
    gradients = []
    prob.solve(projection=False, max_iter=iterations,
               callback=lambda state: gradients.append(2.0 * (state.x.reshape(n, n) - C))
               if len(gradients) < 60 else None)
    return gradients, prob.stats.solve_time / max(1, prob.stats.iterations), prob.stats.iterations


def lmo_times(gradients, backend):
    n = gradients[0].shape[0]
    if backend == "scipy stateless":
        solver = assignment_indices
    elif backend == "scipy warm":
        solver = WarmStartedAssignment(n)
    else:
        from fwmodel.sets.birkhoff import CompiledWarmAssignment
        solver = CompiledWarmAssignment(n)
    times = []
    for D in gradients:
        t0 = time.perf_counter()
        solver(D)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[len(times) // 4:]))  # after the first calls (cold potentials)


def auto_solve(C):
    """The default solve, with what projection="auto" measured."""
    n = C.shape[0]
    seen = []
    measured_choose = projection_choice.choose

    def choose(blocks, ks, iteration_time, x, g, *args, **kwargs):
        chosen = measured_choose(blocks, ks, iteration_time, x, g, *args, **kwargs)
        measured = kwargs.get("measured", args[1] if len(args) > 1 else None) or {}
        seen.append((iteration_time, measured.get(0), bool(chosen)))
        return chosen

    projection_choice.choose = choose
    try:
        X = fm.Variable((n, n))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
        t0 = time.perf_counter()
        prob.solve()
        elapsed = time.perf_counter() - t0
    finally:
        projection_choice.choose = measured_choose
    return prob, elapsed, seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[30, 100, 200, 500])
    ap.add_argument("--instances", nargs="*", default=["dense", "matching"], choices=["dense", "matching"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--vertex-iterations", type=int, default=200)
    args = ap.parse_args()
    try:
        fm.BirkhoffPolytope(fm.Variable((3, 3)), backend="numba").lmo_for_solve()(np.eye(3).ravel())
        backends = ["scipy stateless", "scipy warm", "numba warm"]
    except fm.ModelError:
        backends = ["scipy stateless", "scipy warm"]
    print("| n | instance | projection cold (ms, Newton steps) | projection warm (ms, steps) | "
          + " | ".join(f"LMO {b} (ms)" for b in backends)
          + " | vertex iteration (ms) | auto: measured projection / iteration (ms) | auto projected | "
          "auto iterations | auto time (s) |")
    print("|---" * (9 + len(backends)) + "|")
    for n in args.sizes:
        for kind in args.instances:
            C = instance(kind, n, 0.3)
            t_cold, s_cold, t_warm, s_warm = projection_times(C, args.repeat)
            gradients, t_iter, _ = vertex_gradients(C, args.vertex_iterations)
            lmos = [lmo_times(gradients, b) for b in backends]
            prob, elapsed, seen = auto_solve(C)
            it_time, proj_time, _ = seen[0] if seen else (float("nan"), float("nan"), False)
            projected = "projection" in prob.stats.step_counts
            print(f"| {n} | {kind} | {1e3 * t_cold:.2f} ({s_cold}) | {1e3 * t_warm:.2f} ({s_warm:.1f}) | "
                  + " | ".join(f"{1e3 * t:.2f}" for t in lmos)
                  + f" | {1e3 * t_iter:.2f} | {1e3 * (proj_time or float('nan')):.2f} / {1e3 * it_time:.2f} | "
                  f"{'yes' if projected else 'no'} (after {len(seen)} decision(s)) | {prob.stats.iterations} | "
                  f"{elapsed:.3f} |", flush=True)


if __name__ == "__main__":
    main()
