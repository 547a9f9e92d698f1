"""The paper's Fig. 2 race (``python -m fwmodel demo``) with the process's memory touched first.

On a virtual machine whose memory the host backs lazily, the first write to each page of guest memory costs
far more than a page fault on a laptop (measured on the project's 2-core VM: 2.3 s per GiB the first time,
against 0.4 s per GiB for pages the guest has held before). The demo runs fwmodel first and GFB second in one
process, so fwmodel paid the host's first touch of the memory both use and GFB reused it; and the guest
hands freed pages back to the host after a while, so any array freed and made again (128 MB at d = 4000) may
pay it again. Two remedies, each for both methods alike:

* ``--warm-gib G`` writes G GiB once before the race (then frees it): pages the guest holds for a while;
* ``--keep-freed`` makes this process's allocator keep freed memory for its next arrays instead of returning
  it to the system (glibc ``mallopt``: no ``mmap`` for large blocks, no trimming of the heap), so each page
  is first touched once in the whole race, as on a machine whose memory is resident.

``--warm-gib 0`` without ``--keep-freed`` is the plain demo. Everything else is ``python -m fwmodel demo``'s
(its options follow ``--``).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/fig2_race.py --keep-freed --warm-gib 0 -- \\
        --no-reference --size 4000 --seconds 60 --output ''
"""
import argparse
import sys
import time

import numpy as np


def touch(gib):
    """Write ``gib`` GiB once (in 256 MiB pieces, all held until the end, so the pages are distinct), then free
    them; returns the seconds it took."""
    start = time.perf_counter()
    pieces = []
    for _ in range(int(round(gib * 4))):
        piece = np.empty(2**25)  # 256 MiB
        piece.fill(1.0)
        pieces.append(piece)
    del pieces
    return time.perf_counter() - start


def keep_freed_memory():
    """glibc: serve large blocks from the heap (no ``mmap``) and never trim it, so freed memory is reused."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    if not (libc.mallopt(M_MMAP_MAX, 0) and libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)):
        raise RuntimeError("mallopt refused")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm-gib", type=float, default=0.0)
    ap.add_argument("--keep-freed", action="store_true")
    args, rest = ap.parse_known_args()
    if rest and rest[0] == "--":
        rest = rest[1:]
    if args.keep_freed:
        keep_freed_memory()
        print("this process keeps freed memory for its next arrays (glibc mallopt)", flush=True)
    if args.warm_gib > 0:
        print(f"touched {args.warm_gib:g} GiB in {touch(args.warm_gib):.1f} s before the race", flush=True)
    from fwmodel.__main__ import main as demo_main

    return demo_main(["demo"] + rest)


if __name__ == "__main__":
    sys.exit(main())
