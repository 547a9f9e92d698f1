"""Speed of the AlignmentPolytope LMO against Biopython's global aligner.

For random DNA strings a, b of length n, the Needleman-Wunsch score with
linear gaps is the matching LMO in direction -(S - 2 gap) (see
fwmodel/sets/alignment.py), so both sides solve the same dynamic program of
n*n cells. Biopython's ``PairwiseAligner.score`` is C and returns the score
only; the LMO is a row-vectorized NumPy DP that also traces back the optimal
alignment (the vertex the Frank-Wolfe step needs). Times are the best of
``--repeat`` interleaved runs, measured in the same process; the DTW (kind="path") LMO
on the same matrix is shown for reference. With numba installed, the
optional backend="numba" is timed as well.

    python benchmarks/alignment.py
    python benchmarks/alignment.py --sizes 100 1000 3000 --repeat 5 --batch 64 --backends numpy
"""
import argparse
import platform

import numpy as np

from fwmodel.sets.alignment import AlignmentPolytope, matching_lmo

from _timing import best_times

MATCH, MISMATCH, GAP = 1.0, -1.0, -1.0


def substitution(a, b):
    A = np.frombuffer(a.encode(), dtype=np.uint8)
    B = np.frombuffer(b.encode(), dtype=np.uint8)
    return np.where(A[:, None] == B[None, :], MATCH, MISMATCH)


def lmo_callable(shape, kind, backend):
    """The LMO as the engine calls it: a set's lmo_atom, DP buffers reused."""
    import fwmodel as fm

    P = AlignmentPolytope(fm.Variable(shape), kind=kind, axis=0 if len(shape) == 3 else None, backend=backend)
    return lambda d: P.lmo_atom(d.ravel())


def available_backends():
    try:
        import numba  # noqa: F401
    except ImportError:
        return ["numpy"]
    return ["numpy", "numba"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000], help="sequence lengths n (= m)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (best is kept)")
    parser.add_argument("--batch", type=int, default=64, help="pairs in the batched row (n = smallest size); 0 skips")
    parser.add_argument("--backends", nargs="+", choices=["numpy", "numba"], default=None,
                        help="LMO backends to time (default: numpy, and numba when it is installed)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    backends = args.backends or available_backends()

    from Bio import Align

    aligner = Align.PairwiseAligner(
        mode="global", match_score=MATCH, mismatch_score=MISMATCH, open_gap_score=GAP, extend_gap_score=GAP
    )
    rng = np.random.default_rng(args.seed)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}; "
          f"best of {args.repeat}; Biopython algorithm: {aligner.algorithm}; LMO = AlignmentPolytope.lmo_atom")

    problems = []
    for n in args.sizes:
        a = "".join(rng.choice(list("ACGT"), n))
        b = "".join(rng.choice(list("ACGT"), n))
        problems.append((f"{n} x {n}", [(a, b)], -(substitution(a, b) - 2 * GAP)))
    if args.batch > 0:
        n = min(args.sizes)
        pairs = [("".join(rng.choice(list("ACGT"), n)), "".join(rng.choice(list("ACGT"), n))) for _ in range(args.batch)]
        direction = np.stack([-(substitution(a, b) - 2 * GAP) for a, b in pairs])
        problems.append((f"{args.batch} x ({n} x {n})", pairs, direction))

    header = f"{'cells':>18} | {'Biopython':>9} | " + " | ".join(
        f"{'NW ' + be:>9} {'ratio':>6} | {'DTW ' + be:>9}" for be in backends
    ) + " | same score"
    print(header)
    print("-" * len(header))
    for label, pairs, direction in problems:
        def bio(pairs=pairs):
            return [aligner.score(a, b) for a, b in pairs]

        lmos = []
        for be in backends:
            nw = lmo_callable(direction.shape, "matching", be)
            dtw = lmo_callable(direction.shape, "path", be)
            lmos += [lambda nw=nw: nw(direction), lambda dtw=dtw: dtw(direction)]
        t_bio, *t_lmo = best_times([bio, *lmos], args.repeat)
        cols = [
            f"{t_nw * 1e3:6.2f} ms {t_nw / t_bio:5.2f}x | {t_dtw * 1e3:6.2f} ms"
            for t_nw, t_dtw in zip(t_lmo[0::2], t_lmo[1::2])
        ]
        # both sides find the same optimal score
        _, values = matching_lmo(direction, return_value=True)
        n, m = direction.shape[-2:]
        agree = np.allclose(GAP * (n + m) - np.atleast_1d(values), [aligner.score(a, b) for a, b in pairs])
        print(f"{label:>18} | {t_bio * 1e3:6.2f} ms | " + " | ".join(cols) + f" | {'yes' if agree else 'NO'}")


if __name__ == "__main__":
    main()
