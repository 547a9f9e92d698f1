"""Per-iteration overhead of fwmodel against a minimal hand-written FW-AL loop.

Problem (the sparse + low-rank experiment of the FW-AL paper, Sec. 5)::

    minimize ||X - C||_F^2   s.t.   X in L1Ball(r1)  and  X in TraceNormBall(rt),

with C a symmetric d x d matrix. fwmodel gives each set a copy of X (the
L1 copy X1 is the first copy, the trace-norm copy X2 is tied to it by the
rows X2 - X1 = 0 of M) and minimizes f((X1 + X2) / 2). The hand-written loop
below does exactly the same computation in plain NumPy:

* gradient of the augmented Lagrangian: G1 = V - C - (Y + lam R),
  G2 = V - C + (Y + lam R), with V = (X1 + X2) / 2 and R = X2 - X1;
* LMOs: the L1 vertex -r1 sign(G1_ij) e_ij at the largest |G1_ij|; the
  trace-norm vertex -rt sign(lambda) u u^T from the eigenpair of largest
  |lambda| of the symmetric G2;
* FW gap and feasibility ||R|| (the stopping test), the objective;
* plain Frank-Wolfe step on both blocks with the exact line search of a
  quadratic: gamma = clip(-<G, D> / (2 ||(D1 + D2)/2||^2 + lam ||D2 - D1||^2), 0, 1);
* dual step Y += eta R with constant lam and eta.

fwmodel runs with the same rule (step="fw", exact line search, the same
constant lam and eta) and tolerances that never stop it early, so both do
the same number of iterations. Two hand loops differ only in the
trace-norm LMO:

* "eigsh": scipy.sparse.linalg.eigsh(k=1, which="LM", v0=previous vector),
  ARPACK's Lanczos warm-started from the previous eigenvector;
* "same LMO": the very TraceNormBall.lmo_atom that fwmodel calls (its
  warm-started Lanczos), on a standalone set object, so that the ratio
  measures everything except the LMO algorithm.

Times are the best of ``--repeat`` interleaved runs of each solver. With
``--profile`` a cProfile of the fwmodel solve lists where its time goes.

    python benchmarks/overhead.py
    python benchmarks/overhead.py --sizes 500 1000 --iters 100 --repeat 3 --profile
"""
import argparse
import cProfile
import io
import platform
import pstats
import time

import numpy as np
from scipy.sparse.linalg import eigsh

import fwmodel as fm


def make_data(d, seed=0):
    """A symmetric sparse + low-rank + noise matrix and radii that bind."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, 5)) / np.sqrt(d)
    S = np.zeros((d, d))
    idx = rng.integers(0, d, (2 * d, 2))
    S[idx[:, 0], idx[:, 1]] = rng.standard_normal(2 * d)
    C = 10 * B @ B.T + S + 0.01 * rng.standard_normal((d, d))
    C = 0.5 * (C + C.T)
    r1 = 0.5 * float(np.abs(C).sum())
    rt = 0.5 * float(np.abs(np.linalg.eigvalsh(C)).sum())
    return C, r1, rt


# --------------------------------------------------------------- hand loop
def hand_fwal(C, r1, rt, iters, lam, eta, tn_lmo):
    """FW-AL on the two copies of X, in NumPy; returns (last objective, seconds).

    ``tn_lmo(G)`` returns ``(scale, u)``: the trace-norm vertex is scale * u u^T.
    """
    t0 = time.perf_counter()
    d = C.shape[0]
    X1 = np.zeros((d, d))  # both copies start at the origin, as fwmodel's norm balls do
    X2 = np.zeros((d, d))
    Y = np.zeros((d, d))
    R = X2 - X1
    G = np.empty((d, d))
    G1 = np.empty((d, d))
    G2 = np.empty((d, d))
    D1 = np.empty((d, d))
    D2 = np.empty((d, d))
    f = np.inf
    for _ in range(iters):
        # gradient of f((X1 + X2) / 2) for each copy, and the objective
        np.add(X1, X2, out=G)
        G *= 0.5
        G -= C                                   # G = V - C
        f = float(np.vdot(G, G))
        P = Y + lam * R                          # dual + penalty term
        np.subtract(G, P, out=G1)
        np.add(G, P, out=G2)
        # LMOs
        # the L1 vertex of a symmetric direction: the symmetric pair (E_ij + E_ji) / 2, as fwmodel's
        i = int(np.argmax(np.abs(G1)))
        s1 = -r1 if G1.flat[i] > 0 else r1
        row, col = divmod(i, d)
        j = col * d + row  # the mirror entry (j == i on the diagonal)
        scale, u = tn_lmo(G2)
        # FW gap and feasibility (the stopping test; never met here)
        gap = float(np.vdot(X1, G1) + np.vdot(X2, G2)) - 0.5 * s1 * (G1.flat[i] + G1.flat[j]) \
            - scale * float(u @ (G2 @ u))
        feas = float(np.linalg.norm(R))
        if gap <= 0.0 and feas == 0.0:
            break
        # directions, exact line search of the quadratic augmented Lagrangian
        np.negative(X1, out=D1)
        D1.flat[i] += 0.5 * s1
        D1.flat[j] += 0.5 * s1
        np.negative(X2, out=D2)
        D2 += scale * np.outer(u, u)
        slope = float(np.vdot(G1, D1) + np.vdot(G2, D2))
        MD = D2 - D1
        W = D1 + D2
        curvature = 0.5 * float(np.vdot(W, W)) + lam * float(np.vdot(MD, MD))
        gamma = min(max(-slope / curvature, 0.0), 1.0) if curvature > 0 else 1.0
        X1 += gamma * D1
        X2 += gamma * D2
        R += gamma * MD
        Y += eta * R
    V = 0.5 * (X1 + X2) - C
    return float(np.vdot(V, V)), time.perf_counter() - t0


def eigsh_lmo(rt, tol=1e-6):
    state = {"v0": None}

    def lmo(G):
        w, V = eigsh(G, k=1, which="LM", v0=state["v0"], tol=tol)
        u = V[:, 0]
        state["v0"] = u
        return (rt if w[0] < 0 else -rt), u

    return lmo


def library_lmo(d, rt):
    """fwmodel's own TraceNormBall LMO on a standalone set (no Problem)."""
    ball = fm.TraceNormBall(fm.Variable((d, d)), radius=rt)

    def lmo(G):
        atom = ball.lmo_atom(G.ravel())
        return atom.scale, atom.u

    return lmo


# ----------------------------------------------------------------- fwmodel
def fwmodel_problem(C, r1, rt):
    d = C.shape[0]
    X = fm.Variable((d, d), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)),
                      [fm.L1Ball(X, radius=r1), fm.TraceNormBall(X, radius=rt)])
    prob.compile()
    return prob


def fwmodel_solve(prob, iters, lam, eta):
    t0 = time.perf_counter()
    prob.solve(max_iter=iters, tol=1e-15, feas_tol=1e-15, lam=lam, eta=eta, step="fw", line_search="exact",
               inface=False, projection=False)  # the hand loop is plain FW-AL: compare the same algorithm
    elapsed = time.perf_counter() - t0
    assert prob.stats.iterations == iters, prob.stats
    # the objective at the last iterate (the solve may return an earlier, better point)
    return float(prob.history["objective"][iters]), elapsed


# -------------------------------------------------------------------- main
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--eta", type=float, default=0.25)
    parser.add_argument("--profile", action="store_true", help="cProfile one fwmodel solve per size")
    args = parser.parse_args()

    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}; "
          f"{args.iters} iterations, lam={args.lam}, eta={args.eta}, best of {args.repeat}")
    header = (f"{'d':>6} {'fwmodel ms/it':>14} {'hand eigsh ms/it':>17} {'hand same-LMO ms/it':>20} "
              f"{'ratio vs eigsh':>15} {'ratio vs same-LMO':>18}   objectives (fwmodel, eigsh, same-LMO)")
    print(header)
    for d in args.sizes:
        C, r1, rt = make_data(d)
        prob = fwmodel_problem(C, r1, rt)
        best = {"fwmodel": np.inf, "eigsh": np.inf, "same": np.inf}
        values = {}
        for _ in range(args.repeat):
            values["fwmodel"], t = fwmodel_solve(prob, args.iters, args.lam, args.eta)
            best["fwmodel"] = min(best["fwmodel"], t)
            values["eigsh"], t = hand_fwal(C, r1, rt, args.iters, args.lam, args.eta, eigsh_lmo(rt))
            best["eigsh"] = min(best["eigsh"], t)
            values["same"], t = hand_fwal(C, r1, rt, args.iters, args.lam, args.eta, library_lmo(d, rt))
            best["same"] = min(best["same"], t)
        per_it = {k: 1e3 * v / args.iters for k, v in best.items()}
        print(f"{d:6d} {per_it['fwmodel']:14.2f} {per_it['eigsh']:17.2f} {per_it['same']:20.2f} "
                    f"{per_it['fwmodel'] / per_it['eigsh']:15.2f} {per_it['fwmodel'] / per_it['same']:18.2f}   "
                    f"{values['fwmodel']:.6g}, {values['eigsh']:.6g}, {values['same']:.6g}", flush=True)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            fwmodel_solve(prob, args.iters, args.lam, args.eta)
            profiler.disable()
            text = io.StringIO()
            stats = pstats.Stats(profiler, stream=text)

            def where(key):
                path, line, name = key
                return f"{path.split('site-packages/')[-1].split('fwmodel/')[-1]}:{line}({name})"

            print(f"\nfwmodel profile, d = {d}: ms per iteration, top functions by own time")
            entries = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:15]
            for key, (_cc, ncalls, tottime, cumtime, _callers) in entries:
                print(f"  own {1e3 * tottime / args.iters:8.3f}  cum {1e3 * cumtime / args.iters:8.3f}  "
                      f"{ncalls:6d} calls  {where(key)}")
            print(f"fwmodel profile, d = {d}: ms per iteration inside the main steps (cumulative)")
            steps = ("lmo_atom", "value_and_grad", "curvature", "matvec", "rmatvec", "infeasibility_bound",
                     "append", "to_variables", "to_blocks", "dot", "add_to", "variable_values")
            for key, (_cc, ncalls, tottime, cumtime, _callers) in sorted(stats.stats.items(), key=lambda kv: -kv[1][3]):
                if key[2] in steps and "fwmodel" in key[0] and cumtime / args.iters > 5e-5:
                    print(f"  cum {1e3 * cumtime / args.iters:8.3f}  {ncalls:6d} calls  {where(key)}")
            print()


if __name__ == "__main__":
    main()
