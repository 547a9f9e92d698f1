"""A set on an expression in other units than its variables: does the solve depend on the units?

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/copy_units.py

Each model puts a set on ``s * E`` with radius (bounds, total) times s, for
E an affine expression of x (first differences ``D @ x``, a random ``B @ x``,
a nonnegative ``P @ x``, ``K @ X`` for X = x as a 3 x 4 matrix, x itself; an
ellipsoid's bound times s^2), next to a set on x and a least-squares
objective ``||A x - b||^2``: for every s the same model ({x : ||D x||_1 <= 1}
is {x : ||s D x||_1 <= s}), so the same answer and about the same
iterations are expected at s = 1e-6, 1e-3, 1, 1e3, 1e6. The compiler holds
``s * E`` in a block of its own (a copy of the expression, tied to x by
rows); ``s * x`` is held on x itself (an affine preimage). CVXPY + Clarabel
solves the unit model (s = 1). Per line: fwmodel's status, iterations and
objective's relative difference to Clarabel's optimum; marked ``!!`` when the
status is not Clarabel's or an "optimal" value is more than 1e-4 off (the
default ``tol``). The summary gives, per model, the iterations at s = 1 and
the fewest and most over the other s.
"""
import argparse
import time
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

warnings.filterwarnings("ignore")
SCALES = [1e-6, 1e-3, 1.0, 1e3, 1e6]
N = 12
RNG = np.random.default_rng(1)
A = RNG.standard_normal((30, N))
b = RNG.standard_normal(30)
D = np.diff(np.eye(N), axis=0)  # first differences
B = RNG.standard_normal((6, N)) / np.sqrt(N)
P = RNG.uniform(0.0, 1.0, (5, N))
K = RNG.standard_normal((5, 3))  # for a trace-norm ball of K @ reshape(x, (3, 4))
Q = np.diag([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # for an ellipsoid of B @ x


def models(s):
    """(name, fwmodel constraints at scale s, CVXPY constraints of the unit model)."""
    yield ("L1Ball(s D x, s) + L2 ball", lambda x: [fm.L1Ball(s * D @ x, s), fm.L2Ball(x, 1.0)],
           lambda x: [cp.norm1(D @ x) <= 1, cp.norm2(x) <= 1])
    yield ("norm1(s D x) <= s + box", lambda x: [fm.norm1(s * D @ x) <= s, x >= -1, x <= 1],
           lambda x: [cp.norm1(D @ x) <= 1, cp.abs(x) <= 1])
    yield ("norm1(s D x) <= s + L1 ball", lambda x: [fm.norm1(s * D @ x) <= s, fm.norm1(x) <= 2],
           lambda x: [cp.norm1(D @ x) <= 1, cp.norm1(x) <= 2])
    yield ("L2Ball(s B x, 0.3 s) + box", lambda x: [fm.L2Ball(s * B @ x, 0.3 * s), fm.Box(x, -1, 1)],
           lambda x: [cp.norm2(B @ x) <= 0.3, cp.abs(x) <= 1])
    yield ("norm2(s B x) <= 0.3 s + L1 ball", lambda x: [fm.norm(s * B @ x, 2) <= 0.3 * s, fm.L1Ball(x, 3.0)],
           lambda x: [cp.norm2(B @ x) <= 0.3, cp.norm1(x) <= 3])
    yield ("Box(s B x, +-0.1 s) + L2 ball", lambda x: [fm.Box(s * B @ x, -0.1 * s, 0.1 * s), fm.L2Ball(x, 1.0)],
           lambda x: [cp.abs(B @ x) <= 0.1, cp.norm2(x) <= 1])
    yield ("norm_inf(s D x) <= 0.2 s + L2", lambda x: [fm.norm_inf(s * D @ x) <= 0.2 * s, fm.norm2(x) <= 1],
           lambda x: [cp.norm_inf(D @ x) <= 0.2, cp.norm2(x) <= 1])
    yield ("Ellipsoid(s B x, Q, 0.09 s^2) + L2", lambda x: [fm.Ellipsoid(s * B @ x, Q, 0.09 * s * s), fm.L2Ball(x, 1.0)],
           lambda x: [cp.quad_form(B @ x, Q) <= 0.09, cp.norm2(x) <= 1])
    yield ("Simplex(s P x, s) + box", lambda x: [fm.Simplex(s * P @ x, s), fm.Box(x, 0, 1)],
           lambda x: [P @ x >= 0, cp.sum(P @ x) == 1, x >= 0, x <= 1])
    yield ("TraceNormBall(s K X, s) + box",
           lambda x: [fm.TraceNormBall(s * (K @ fm.reshape(x, (3, 4), order="C")), s), fm.Box(x, -1, 1)],
           lambda x: [cp.normNuc(K @ cp.reshape(x, (3, 4), order="C")) <= 1, cp.abs(x) <= 1])
    yield ("L2Ball(s x, s) + L1 ball", lambda x: [fm.L2Ball(s * x, s), fm.L1Ball(x, 1.5)],
           lambda x: [cp.norm2(x) <= 1, cp.norm1(x) <= 1.5])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=10000)
    args = parser.parse_args()
    bad = 0
    runs = {}
    print(f"{'':2} {'model':34} {'s':>6} {'status':9} {'iters':>6} {'rel diff':>9} {'time (s)':>8}")
    refs = {}
    for s in SCALES:
        for name, fm_cons, cp_cons in models(s):
            if name not in refs:
                xc = cp.Variable(N)
                ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), cp_cons(xc))
                ref.solve(solver=cp.CLARABEL)
                refs[name] = ref
            ref = refs[name]
            x = fm.Variable(N, name="x")
            prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), fm_cons(x))
            start = time.perf_counter()
            prob.solve(max_iter=args.max_iter)
            elapsed = time.perf_counter() - start
            diff = float("nan")
            if prob.status == "optimal" and ref.status == "optimal":
                diff = abs(prob.value - ref.value) / abs(ref.value)
            ok = prob.status == ref.status and (prob.status != "optimal" or diff <= 1e-4)
            bad += not ok
            runs.setdefault(name, {})[s] = prob.stats.iterations
            print(f"{'  ' if ok else '!!'} {name:34} {s:6.0e} {prob.status:9} {prob.stats.iterations:6d} {diff:9.1e} "
                  f"{elapsed:8.2f}", flush=True)
    print(f"\n{'model':34} {'s = 1':>6} {'fewest':>7} {'most':>6}  (iterations over s != 1)")
    for name, by_s in runs.items():
        others = [its for s, its in by_s.items() if s != 1.0]
        print(f"{name:34} {by_s[1.0]:6d} {min(others):7d} {max(others):6d}")
    print(f"\n{bad} marked")


if __name__ == "__main__":
    main()
