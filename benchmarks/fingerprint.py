"""Fingerprint of the iterates: one line per solve of the model zoo (under several options) and of the tutorials.

For refactors that must not change the iterates: run it before and after and
diff the outputs. Each line holds the solve's label, status, iterations,
objective (full precision), a hash of the returned variable values and the
step counts; for verbose solves, a hash of the iteration rows (times left
out). The model zoo is benchmarks/zoo.py's, solved with its defaults and with
step="away"/"pairwise"/"fw", sweep="jacobi", projection=True,
inface=True, line_search="backtracking", max_iter=7, rank_k=True; the tutorials run at
their small size.

    PYTHONPATH=. python benchmarks/fingerprint.py > before.txt
    ... change the engine ...
    PYTHONPATH=. python benchmarks/fingerprint.py > after.txt && diff before.txt after.txt

(projection="auto" decides by measured times; the zoo's models and the
tutorials' are far from its threshold, so their lines do not depend on the load.)
"""
import contextlib
import hashlib
import io
import os
import re
import runpy
import sys
import tempfile
import warnings

import numpy as np

import fwmodel as fm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402

OPTION_VARIANTS = (dict(step="away"), dict(step="pairwise"), dict(step="fw"), dict(sweep="jacobi"),
                   dict(projection=True), dict(projection=False, inface=True), dict(line_search="backtracking"),
                   dict(max_iter=7), dict(step="away", verbose=True, print_every=1), dict(rank_k=True))


def fingerprint(prob):
    digest = hashlib.sha1()
    for var in prob.variables():
        if var.value is not None:
            digest.update(np.ascontiguousarray(var.value, dtype=float).tobytes())
    return (prob.status, prob.stats.iterations, repr(prob.value), digest.hexdigest()[:10],
            dict(prob.stats.step_counts or {}))


def verbose_rows_hash(text):
    """A hash of the verbose table's iteration rows, with the time column left out (its padding too: a time
    of 10 s or more is one character wider)."""
    rows = [re.sub(r"\s+\d+\.\d\d(?=\s+fw/)", " T", line) for line in text.splitlines() if line[:7].strip().isdigit()]
    return hashlib.sha1("".join(rows).encode()).hexdigest()[:10]


def main():
    lines = []
    for key, (_title, build) in zoo.MODELS.items():
        prob = build()[0]
        prob.solve()
        lines.append((f"zoo:{key}",) + fingerprint(prob))
        for opts in OPTION_VARIANTS:
            label = f"zoo:{key}:" + ",".join(f"{a}={b}" for a, b in opts.items())
            prob = build()[0]
            with contextlib.redirect_stdout(io.StringIO()) as out:
                prob.solve(**opts)
            lines.append((label,) + fingerprint(prob))
            if opts.get("verbose"):
                lines.append((label, "verbose rows", verbose_rows_hash(out.getvalue())))
    # every solve of every tutorial, at the small size
    solves = []
    original = fm.Problem.solve

    def recording_solve(self, *args, **kwargs):
        value = original(self, *args, **kwargs)
        solves.append(fingerprint(self))
        return value

    os.environ["FWMODEL_TUTORIAL_SIZE"] = "small"
    tutorials = os.path.join(os.path.dirname(HERE), "tutorials")
    fm.Problem.solve = recording_solve
    try:
        with tempfile.TemporaryDirectory() as figures:
            os.environ["FWMODEL_FIGURES_DIR"] = figures
            for name in sorted(os.listdir(tutorials)):
                if name[:2].isdigit() and name.endswith(".py"):
                    solves.clear()
                    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        runpy.run_path(os.path.join(tutorials, name), run_name="__main__")
                    lines += [(f"tutorial:{name}",) + s for s in solves]
    finally:
        fm.Problem.solve = original
    for line in lines:
        print(*line)


if __name__ == "__main__":
    main()
