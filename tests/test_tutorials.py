"""Run every tutorial at small size and check what it computes.

Convention shared by all tutorials (``tutorials/NN_name.py``):

- the environment variable ``FWMODEL_TUTORIAL_SIZE`` is "small" here and
  defaults to "full" when a tutorial runs as a script;
- figures are saved only under ``if __name__ == "__main__"``, to
  ``$FWMODEL_FIGURES_DIR`` (by default a temporary folder), never into the
  checkout;
- each tutorial ends with a module-level dict ``RESULTS`` of its key numbers;
- every ``fm.reshape``, ``fm.vec`` and ``.flatten()`` names its ``order`` (without one fwmodel warns, as
  CVXPY does): here that warning is an error.

Every tutorial present is run as a script (``__name__ == "__main__"``, the
figure folder left at its default) from a scratch working folder: it must
write nothing there nor change ``git status`` of the checkout, and its
``RESULTS`` must exist and hold finite numbers. Tutorials 05, 06 and 07 are
also checked against independent answers
(CVXPY, closed forms, structural facts); for the others, the keys named in
``GENERIC_CHECKS`` are checked only when present.
"""
import math
import numbers
import re
import runpy
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "tutorials"
FILES = sorted(p for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
STATUSES = ("optimal", "max_iter", "time_limit", "infeasible", "diverged", "interrupted")


def git_status():
    """``git status --porcelain`` of the checkout, or None outside a git checkout (or without git)."""
    if shutil.which("git") is None:
        return None
    res = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
                         capture_output=True, text=True, timeout=60)
    return res.stdout if res.returncode == 0 else None


def run_tutorial(path, monkeypatch, tmp_path):
    """The tutorial's module namespace after running it as a script at small size, in this process."""
    monkeypatch.setenv("FWMODEL_TUTORIAL_SIZE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("FWMODEL_FIGURES_DIR", raising=False)  # the default folder: what a user gets
    try:
        import matplotlib

        matplotlib.use("Agg")  # no window, even if pyplot was imported before
    except ImportError:
        pass
    monkeypatch.chdir(tmp_path)  # anything a tutorial writes lands in a scratch folder
    try:
        with warnings.catch_warnings():
            # a tutorial writes the order of every reshape, vec and flatten (fwmodel warns without one)
            warnings.filterwarnings("error", message="(reshape|vec) without order", category=FutureWarning)
            return runpy.run_path(str(path), run_name="__main__")
    finally:
        try:
            import matplotlib.pyplot as plt

            plt.close("all")
        except ImportError:
            pass


def numbers_in(value, where="RESULTS"):
    """(location, number) for every number inside nested dicts, lists and tuples."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers_in(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from numbers_in(item, f"{where}[{i}]")
    elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        for i, item in enumerate(value.ravel()):
            yield f"{where}.flat[{i}]", float(item)
    elif isinstance(value, (numbers.Number, np.number)) and not isinstance(value, bool):
        yield where, value


def test_tutorials_found():
    assert FILES, f"no tutorials matching [0-9][0-9]_*.py in {TUTORIALS}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_tutorial_runs_and_reports(path, monkeypatch, tmp_path):
    status_before = git_status()
    namespace = run_tutorial(path, monkeypatch, tmp_path)
    assert "RESULTS" in namespace, f"{path.name} must define a module-level dict RESULTS"
    results = namespace["RESULTS"]
    assert isinstance(results, dict) and results
    for where, number in numbers_in(results):
        assert math.isfinite(number), f"{path.name}: {where} = {number} is not finite"
    assert results.get("size", "small") == "small"
    for key, check in GENERIC_CHECKS.items():
        if key in results and results[key] is not None:
            assert check(results[key]), f"{path.name}: RESULTS[{key!r}] = {results[key]!r}"
    specific = SPECIFIC_CHECKS.get(path.name[:2])
    if specific is not None:
        specific(results)
    assert list(tmp_path.iterdir()) == [], f"{path.name} wrote files into the working folder"
    if status_before is not None:
        assert git_status() == status_before, f"running {path.name} changed the checkout"


def test_tutorials_are_notebooks_and_indexed():
    readme = (TUTORIALS / "README.md").read_text()
    for path in FILES:
        text = path.read_text()
        assert text.startswith("# %%"), f"{path.name} should open with a '# %%' cell"
        assert path.name in readme, f"{path.name} is missing from tutorials/README.md"
    for number in ("01", "02", "03", "04", "05", "06", "07"):
        assert re.search(rf"\b{number}_\w+\.py", readme), f"tutorial {number} is missing from the index"


# --------------------------------------------------------------- checks
GENERIC_CHECKS = {
    "status": lambda s: s in STATUSES,
    "feasibility_rel": lambda v: 0 <= v < 1e-1,
    "rel_error": lambda v: 0 <= v < 1e-2,
}


def check_05(r):
    """Prototyping a set: the checks say what they should, the solves agree with CVXPY."""
    assert r["check_ok"] is True and r["atom_check_ok"] is True
    assert r["buggy_check_ok"] is False
    assert any("maximizes" in p for p in r["buggy_problems"])
    assert r["status"] == "optimal" and r["robust_status"] == "optimal"
    # both constraints are active at the answer (each radius is 0.9 x the truth's norm)
    assert r["group_norm"] == pytest.approx(r["r1"], rel=1e-3)
    assert r["l1_norm"] == pytest.approx(r["r2"], rel=1e-3)
    assert r["found_rows"] == r["true_rows"]
    assert r["robust_convexity"] == "convex"
    assert r["error_robust"] < r["error_squared"]
    assert r["refused"] == ["abs", "max", "string"]
    if r["cvxpy_objective"] is not None:
        assert r["objective"] == pytest.approx(r["cvxpy_objective"], rel=1e-3)
        assert r["robust_objective"] == pytest.approx(r["cvxpy_robust_objective"], rel=1e-3)


def check_06(r):
    """Teaching FW-AL: M and b of the tiny model, the dual multiplier, the iterates' structure."""
    assert r["tiny_M_shape"] == (7, 12)  # 6 copy rows + 1 equality row; two copies of a 2 x 3 matrix
    assert r["tiny_b"] == [0.0] * 6 + [1.0]
    assert r["tiny_node_kinds"] == ["block", "block", "equality", "set", "set", "variable"]
    assert r["tiny_status"] in STATUSES and r["status"] in STATUSES
    assert r["tiny_hand_feasibility"] < 1e-2
    assert r["structure_ok"] is True
    assert r["true_nnz"] == 8 and r["true_rank"] == 2
    assert r["history_length"] >= 2
    if r["tiny_cvxpy_objective"] is not None:
        # fwmodel runs a short budget here: tight agreement only once it reports "optimal"
        tolerance = 1e-3 if r["tiny_status"] == "optimal" else 1e-1
        assert r["tiny_objective"] == pytest.approx(r["tiny_cvxpy_objective"], rel=tolerance)
        assert r["tiny_hand_objective"] == pytest.approx(r["tiny_cvxpy_objective"], rel=1e-2)
        # the dual variable of the row sum(X) == 1 is the Lagrange multiplier of that constraint
        assert r["tiny_hand_dual"] == pytest.approx(r["tiny_cvxpy_dual"], abs=1e-2)
    if r["cvxpy_objective"] is not None:
        # a fixed budget of sublinear FW steps: close to CVXPY on the problem's scale
        assert abs(r["hand_gap_rel"]) < 1e-2
        assert abs(r["objective_gap_rel"]) < 5e-2
        assert r["distance_to_cvxpy_rel"] < 0.25


def check_07(r):
    """From CVXPY: the same model code runs in both languages and gives the same answers."""
    assert r["statuses"] == ["optimal"] * len(r["models"])
    assert r["sets"]["portfolio"] == ["CappedSimplex"]
    assert r["sets"]["nearest PSD"] == ["TraceNormBall"]
    assert sorted(r["sets"]["risk-bounded portfolio"]) == ["L2Ball", "Simplex"]  # quad_form <= risk: a ball on L'w
    assert r["same_compiled"] is True
    assert r["refused"] == ["non-convex", "norm objective", "unbounded"]
    for l1, point in zip(r["path_l1"], [0.5, 1.0, 2.0, 3.0]):
        assert l1 <= point * (1 + 1e-3)
    if r["cvxpy_objectives"] is not None:
        assert max(r["rel_diffs"]) < 2e-3
        for value, ref in zip(r["path_objectives"], r["path_cvxpy_objectives"]):
            assert value == pytest.approx(ref, rel=2e-3)


def check_02(r):
    """The covariance tutorial: the L1 ball's copy (prob.point_in) lies in the ball and keeps Sigma's support."""
    assert r["l1_copy_l1_norm_ratio"] <= 1 + 1e-9
    recall, precision = r["l1_copy_support"]
    assert 0 < recall <= 1 and 0 < precision <= 1
    # the race section: GFB's floor is its own lowest error, so GFB enters the band; at d = 60
    # fwmodel's default steps enter it within the tutorial's 40 iterations
    assert 0 < r["race_floor"] < 1
    assert r["race_time_to_floor"]["GFB"] is not None and r["race_time_to_floor"]["fwmodel"] is not None


SPECIFIC_CHECKS = {"02": check_02, "05": check_05, "06": check_06, "07": check_07}


def test_figures_and_results_folders(monkeypatch, tmp_path):
    from fwmodel.outputs import figures_dir, results_dir

    monkeypatch.setenv("FWMODEL_FIGURES_DIR", str(tmp_path / "figs"))
    monkeypatch.setenv("FWMODEL_RESULTS_DIR", str(tmp_path / "tables"))
    assert figures_dir() == str(tmp_path / "figs") and (tmp_path / "figs").is_dir()
    assert results_dir() == str(tmp_path / "tables") and (tmp_path / "tables").is_dir()
    monkeypatch.setenv("FWMODEL_FIGURES_DIR", "")  # empty: the default, outside the checkout
    assert not Path(figures_dir()).resolve().is_relative_to(ROOT)
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("FWMODEL_FIGURES_DIR", str(tmp_path / "a_file"))
    with pytest.raises(NotADirectoryError, match="FWMODEL_FIGURES_DIR"):
        figures_dir()
