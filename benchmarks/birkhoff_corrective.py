"""Birkhoff projection: do fully-corrective steps or extra vertices cut the assignment LMO calls?

min ||X - C||_F^2 over doubly stochastic X (the model of benchmarks/birkhoff.py),
solved with ``prob.solve()`` under variants of BPCG's steps
(``fwmodel/engine/steps.py``), all with the default SciPy assignment LMO:

* ``default``: BPCG with the lazy oracle and local phases (the defaults);
* ``corrective``: fully corrective in effect: every active pair with a local
  gap above the stopping target is used before the LMO is called again
  (``LAZY_FACTOR`` huge), and each local phase runs to 1e-4 times the last FW
  gap (no step or work cap): the iterate is (near) the minimizer of f over
  the convex hull of its atoms at every LMO call (Holloway 1974; the
  fully-corrective FW of Lacoste-Julien & Jaggi 2015);
* ``swaps3``: each FW step goes toward the average of the LMO's permutation
  and its 3 best 2-swaps (three cheap extra vertices near the LMO's).

Each repeat solves every variant in turn; times are process CPU seconds
(medians), the ratio is the median over repeats of the variant's time over
the default's in the same repeat. (Blended FW steps, measured here too, were
then removed from the engine: benchmarks/RESULTS.md.)

    python benchmarks/birkhoff_corrective.py --sizes 30 100 200 --repeat 3
"""
import argparse
import contextlib
import time

import numpy as np

import fwmodel as fm
from fwmodel.engine import steps as steps_module
from fwmodel.sets.atoms import SparseAtom

try:
    from .birkhoff import LMOTimer
except ImportError:
    from birkhoff import LMOTimer


@contextlib.contextmanager
def patched(obj, **values):
    old = {k: getattr(obj, k) for k in values}
    for k, v in values.items():
        setattr(obj, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(obj, k, v)


@contextlib.contextmanager
def swap_extras(m):
    """FW steps toward the average of the LMO's permutation and its m best 2-swaps (on this gradient)."""
    B = steps_module.BlendedPairwiseStep
    propose, commit = B.propose, B.commit

    def propose_keeping_gradient(self, x_k, g_k, ctx=None):
        self._gradient = g_k
        return propose(self, x_k, g_k, ctx)

    def fw_with_extras(self, x_k, s, gap, ctx=None):
        n = int(round(np.sqrt(s.size)))
        sigma = np.empty(n, dtype=np.intp)
        sigma[s.indices // n] = s.indices % n
        M = np.asarray(self._gradient).reshape(n, n)[:, sigma]  # M[i, j] = g[i, sigma(j)]
        diag = np.diag(M)
        iu = np.triu_indices(n, 1)
        cost = (M + M.T - diag[:, None] - diag[None, :])[iu]  # change of <g, P> when rows i, j swap
        extras = []
        for o in np.argpartition(cost, m)[:m]:
            t = sigma.copy()
            t[iu[0][o]], t[iu[1][o]] = t[iu[1][o]], t[iu[0][o]]
            extras.append(SparseAtom(np.arange(n) * n + t, 1.0, s.size))
        d = -x_k
        for a in [s] + extras:
            a.add_to(d, 1.0 / (m + 1))
        return steps_module.Proposal(d, 1.0, "fw", gap, s, tuple(extras),
                                     slope=float(np.dot(np.asarray(self._gradient), d)))

    def commit_extras(self, p, gamma):
        if p.kind == "fw" and p.data and not p.prescaled and gamma > 0:
            # (1 - gamma) x + c (each of the m + 1 atoms), c = gamma / (m + 1), as m + 1 FW updates:
            # the r-th from the end with step c / (1 - r c)
            new_atoms = (p.fw_atom,) + p.data
            c = min(gamma, 1.0) / len(new_atoms)
            for r, atom in reversed(list(enumerate(reversed(new_atoms)))):
                self.active.fw_update(atom, c / (1.0 - r * c))
            return
        commit(self, p, gamma)

    with patched(B, propose=propose_keeping_gradient, _fw=fw_with_extras, commit=commit_extras):
        yield


VARIANTS = {
    "default": lambda: contextlib.nullcontext(),
    "corrective": lambda: patched(steps_module, LAZY_FACTOR=1e12, LOCAL_PHASE_REDUCTION=1e-4,
                                  MAX_LOCAL_STEPS=10 ** 6, LOCAL_PHASE_WORK=10 ** 12),
    "swaps3": lambda: swap_extras(3),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[30, 100, 200])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    args = ap.parse_args()
    print("| n | variant | status | iterations | LMO calls | f | CPU (s) | in the LMO (s) | CPU / default's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rng = np.random.default_rng(0)
        C = (1.0 + rng.standard_normal((n, n))) / n
        runs = {v: dict(t=[], lmo=[]) for v in args.variants}
        for _ in range(args.repeat):
            for variant in args.variants:
                X = fm.Variable((n, n))
                prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.BirkhoffPolytope(X)])
                with VARIANTS[variant](), LMOTimer() as lmo:
                    t = time.process_time()
                    prob.solve(max_iter=20000)
                    runs[variant]["t"].append(time.process_time() - t)
                runs[variant]["lmo"].append(lmo.seconds)
                runs[variant].update(prob=prob, calls=lmo.calls)
        base = np.array(runs[args.variants[0]]["t"])
        for variant in args.variants:
            run, prob = runs[variant], runs[variant]["prob"]
            ratio = float(np.median(np.array(run["t"]) / base))
            print(f"| {n} | {variant} | {prob.status} | {prob.stats.iterations} | {run['calls']} | "
                  f"{prob.value:.7g} | {np.median(run['t']):.3f} | {np.median(run['lmo']):.3f} | "
                  f"{ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
