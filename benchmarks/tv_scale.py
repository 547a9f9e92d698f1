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
"""
import argparse
import importlib.util
import math
import os
import sys
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


def tv_1d(n, seed=0):
    """The zoo's TV denoiser at n entries (sparse D)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(rng.uniform(0, 1, 5), n // 5)
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


def build(spec):
    kind, size = spec.split(":")
    data = tv_1d(int(size)) if kind == "1d" else tv_2d(int(size))
    return lambda: models(*data)


def load_baseline(path):
    spec = importlib.util.spec_from_file_location("fwmodel.engine._row_metric_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RowMetric


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
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cvxpy", nargs="*", default=["CLARABEL", "SCS"])
    args = parser.parse_args()
    metrics = {"change": row_metric.RowMetric, "none": _NoMetric}
    if "base" in args.variants:
        if not args.baseline:
            parser.error("the variant 'base' needs --baseline FILE")
        metrics["base"] = load_baseline(args.baseline)
    print("| model | variant | status | iterations | rel. objective diff | time (s) | ms / iteration | "
          "CVXPY (s, faster of " + "/".join(args.cvxpy) + ") | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.models:
        make = build(spec)
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
            fwal.RowMetric = metrics[variant]
            try:
                fw = make()[0]
                fw.solve()
            finally:
                fwal.RowMetric = row_metric.RowMetric
            runs[variant] = fw
        fns += [lambda v=v: fw_solve(v) for v in args.variants]
        times = best_times(fns, args.repeat)
        t_cvx = dict(zip(names, times[:len(names)]))
        faster = min(t_cvx.values()) if t_cvx else math.nan
        for v, t in zip(args.variants, times[len(names):]):
            fw = runs[v]
            its = fw.stats.iterations
            err = abs(fw.value - ref) / max(abs(ref), 0.01 * fw.stats.objective_scale) if ref is not None else math.nan
            print(f"| TV {spec} | {v} | {fw.status} | {its} | {err:.1e} | {t:.3f} | {1e3 * t / max(its, 1):.3f} | "
                  f"{faster:.3f} ({min(t_cvx, key=t_cvx.get) if t_cvx else '-'}) | {t / faster:.2f} |", flush=True)


if __name__ == "__main__":
    main()
