"""Total-variation denoisers at growing size: fwmodel's defaults against CVXPY (Clarabel and SCS).

1-D: the zoo's TV model (``zoo.tv_denoise``: least squares, ``||D x||_1 <= t``,
a box) at n entries, D the first differences as a sparse matrix. 2-D: a k x k
image of piecewise-constant blocks plus noise, one L1 ball on the horizontal
and vertical differences stacked (anisotropic TV, ``||[Dh; Dv] x||_1 <= t``)
and the box; compiled, x is a box block and z = [Dh; Dv] x an L1 block tied to
it by 2 k (k - 1) rows, whose Gram matrix I + D D' is a band after reverse
Cuthill-McKee (engine/row_metric.py).

Per model and engine variant: status, iterations, best time of ``--repeat``
interleaved runs, time per iteration, and the relative objective difference
against Clarabel (the zoo's measure, |f - f*| / max(|f*|, S / 100)); then the
faster CVXPY solver's time and the ratio. Variants: ``change`` (this tree),
``none`` (no row metric: ``RowMetric.of`` answers None), ``any-band`` (this tree with
``MAX_BAND_FILL`` lifted: every sparse chain-like piece orthonormalized, whatever its band), and ``base`` where
``--baseline FILE`` names another tree's ``fwmodel/engine/row_metric.py``
(loaded in its place, e.g. ``git show main:fwmodel/engine/row_metric.py > FILE``).

    python benchmarks/tv_scale.py --models 1d:100 1d:1000 1d:5000 2d:30 2d:100 --repeat 3
    python benchmarks/tv_scale.py --models 1d:100 --variants base change --baseline FILE --repeat 5
    python benchmarks/tv_scale.py --models 1d:600 1d:600:6 --seeds 0 1 2 --variants none change --repeat 1

``--solvers``: instead, the time of one product with the orthonormal rows of a
chain (the 1-D TV rows ``z - D x``, bandwidth 1) per way of applying L^{-1}:
the dense L^{-1} A in CSR (the former representation), and A in CSR then
LAPACK's banded solve ``dtbtrs``, BLAS's ``dtbsv``, ``scipy.linalg.solve_banded``
or ``scipy.sparse.linalg.spsolve_triangular`` (microseconds, best of 7 loops; the dense rows
up to 2,000 rows).

    python benchmarks/tv_scale.py --solvers 100 1000 5000
"""
import argparse
import importlib.util
import math
import os
import sys
import time
import warnings

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

import fwmodel as fm
import fwmodel.engine.fwal as fwal
import fwmodel.engine.row_metric as row_metric

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_times  # noqa: E402


def differences(n):
    """First differences of n entries, (n - 1) x n sparse."""
    return sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")


def tv_1d(n, seed=0, pieces=5):
    """The zoo's TV denoiser at n entries (sparse D; its data where ``pieces`` = 5 divides n)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(rng.uniform(0, 1, pieces), -(-n // pieces))[:n]
    y = truth + 0.1 * rng.standard_normal(n)
    D = differences(n)
    return y, D, 0.8 * np.abs(D @ truth).sum()


def tv_2d(k, seed=0):
    """A k x k image of 4 x 4 constant blocks plus noise; D = [Dh; Dv] on the image flattened by rows."""
    rng = np.random.default_rng(seed)
    cells = rng.uniform(0, 1, (4, 4))
    truth = np.kron(cells, np.ones((-(-k // 4), -(-k // 4))))[:k, :k].ravel()
    y = truth + 0.1 * rng.standard_normal(k * k)
    Dk = differences(k)
    D = sp.vstack([sp.kron(sp.eye(k), Dk), sp.kron(Dk, sp.eye(k))], format="csr")
    return y, D, 0.8 * np.abs(D @ truth).sum()


def models(y, D, t):
    x = fm.Variable(y.size)
    fw = fm.Problem(fm.Minimize(fm.sum_squares(x - y)), [fm.L1Ball(D @ x, t), fm.Box(x, 0.0, 1.0)])
    z = cp.Variable(y.size)
    cvx = cp.Problem(cp.Minimize(cp.sum_squares(z - y)), [cp.norm1(D @ z) <= t, z >= 0, z <= 1])
    return fw, cvx


def build(spec, seed):
    """``1d:n``, ``1d:n:pieces`` (a signal of that many constant pieces) or ``2d:k``."""
    kind, *sizes = spec.split(":")
    data = tv_1d(int(sizes[0]), seed, *map(int, sizes[1:])) if kind == "1d" else tv_2d(int(sizes[0]), seed)
    return lambda: models(*data)


def load_baseline(path):
    spec = importlib.util.spec_from_file_location("fwmodel.engine._row_metric_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RowMetric


def solvers(sizes):
    import scipy.linalg as sla
    from scipy.linalg import blas, lapack
    from scipy.sparse.linalg import spsolve_triangular

    from fwmodel._kernels import csr_times

    def best(fn):
        fn()
        t = time.perf_counter()
        fn()
        loops = max(3, int(0.02 / max(time.perf_counter() - t, 1e-7)))
        out = math.inf
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(loops):
                fn()
            out = min(out, (time.perf_counter() - t) / loops * 1e6)
        return out

    print("| rows | A x (CSR) | dense L^{-1} A x (CSR) | A x + dtbtrs | A x + dtbsv | A x + solve_banded | "
          "A x + spsolve_triangular |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in sizes:
        m = n - 1
        A = sp.hstack([sp.eye(m), -differences(n)], format="csr")
        G = (A @ A.T).tocsr()
        band = np.zeros((2, m))
        band[0], band[1, :-1] = G.diagonal(), G.diagonal(-1)
        band = np.asfortranarray(sla.cholesky_banded(band, lower=True))
        L = sp.diags([band[0], band[1, :-1]], [0, -1], format="csr")
        # the dense rows only up to 2,000 (at 5,000: 25 million entries, 0.3 GB)
        dense = sp.csr_matrix(sla.solve_triangular(L.toarray(), A.toarray(), lower=True)) if m <= 2000 else None
        x = rng.standard_normal(A.shape[1])
        times = [best(lambda: csr_times(A, x)), best(lambda: csr_times(dense, x)) if dense is not None else math.nan,
                 best(lambda: lapack.dtbtrs(band, csr_times(A, x), "L", "N", "N", 1)),
                 best(lambda: blas.dtbsv(1, band, csr_times(A, x), lower=1, overwrite_x=1)),
                 best(lambda: sla.solve_banded((1, 0), band, csr_times(A, x), check_finite=False)),
                 best(lambda: spsolve_triangular(L, csr_times(A, x), lower=True))]
        print(f"| {m} | " + " | ".join(f"{t:.1f}" for t in times) + " |", flush=True)


def _once(fn):
    """The time of one call (``--repeat 0``: no warm-up run, for sweeps over seeds)."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class _NoMetric:
    @staticmethod
    def of(M):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["1d:100", "1d:1000", "1d:5000", "2d:30", "2d:100"])
    parser.add_argument("--variants", nargs="+", default=["none", "change"],
                        choices=["base", "none", "change", "any-band"])
    parser.add_argument("--baseline", help="another tree's fwmodel/engine/row_metric.py (variant 'base')")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many (0: one run each, no warm-up)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="data seeds")
    parser.add_argument("--max-iter", type=int, help="fwmodel's max_iter (default: the engine's)")
    parser.add_argument("--cvxpy", nargs="*", default=["CLARABEL", "SCS"])
    parser.add_argument("--solvers", nargs="*", type=int, help="chain sizes: time one product per L^{-1} method")
    args = parser.parse_args()
    if args.solvers:
        solvers(args.solvers)
        return
    metrics = {"change": row_metric.RowMetric, "none": _NoMetric}
    options = {} if args.max_iter is None else {"max_iter": args.max_iter}
    if "base" in args.variants:
        if not args.baseline:
            parser.error("the variant 'base' needs --baseline FILE")
        metrics["base"] = load_baseline(args.baseline)
    print("| model | variant | status | iterations | rel. objective diff | time (s) | ms / iteration | "
          "CVXPY (s, faster of " + "/".join(args.cvxpy) + ") | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec, seed in [(spec, seed) for spec in args.models for seed in args.seeds]:
        make = build(spec, seed)
        ref, t_cvx = None, {}
        fns, names = [], []
        for solver in args.cvxpy:
            cvx = make()[1]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    cvx.solve(solver=solver)
                except cp.error.SolverError:
                    continue
            if cvx.status != "optimal":
                continue
            if ref is None or solver == "CLARABEL":
                ref = cvx.value

            def cvx_solve(solver=solver):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    make()[1].solve(solver=solver)
            fns.append(cvx_solve)
            names.append(solver)
        runs = {}

        def fw_solve(variant):
            fwal.RowMetric = metrics.get(variant, row_metric.RowMetric)
            limit = row_metric.MAX_BAND_FILL
            if variant == "any-band":
                row_metric.MAX_BAND_FILL = math.inf
            try:
                fw = make()[0]
                fw.solve(**options)
            finally:
                fwal.RowMetric, row_metric.MAX_BAND_FILL = row_metric.RowMetric, limit
            runs[variant] = fw
        fns += [lambda v=v: fw_solve(v) for v in args.variants]
        times = best_times(fns, args.repeat) if args.repeat > 0 else [_once(fn) for fn in fns]
        t_cvx = dict(zip(names, times[:len(names)]))
        faster = min(t_cvx.values()) if t_cvx else math.nan
        for v, t in zip(args.variants, times[len(names):]):
            fw = runs[v]
            its = fw.stats.iterations
            err = abs(fw.value - ref) / max(abs(ref), 0.01 * fw.stats.objective_scale) if ref is not None else math.nan
            label = spec if args.seeds == [0] else f"{spec} seed {seed}"
            print(f"| TV {label} | {v} | {fw.status} | {its} | {err:.1e} | {t:.3f} | {1e3 * t / max(its, 1):.3f} | "
                  f"{faster:.3f} ({min(t_cvx, key=t_cvx.get) if t_cvx else '-'}) | {t / faster:.2f} |", flush=True)


if __name__ == "__main__":
    main()
