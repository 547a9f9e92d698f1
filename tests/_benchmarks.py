"""The scripts of benchmarks/ as modules, for tests that check a benchmark's models: the test builds them
with the benchmark's own generator (imported, not copied), so the two cannot drift apart."""
import importlib
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def benchmark(name):
    """``benchmarks/<name>.py`` imported as the module ``name``, with its folder on ``sys.path`` (after the
    installed packages) as when it runs as a script, so that its own imports of ``_timing`` and of the other
    scripts resolve. Imported once per test session."""
    folder = str(BENCHMARKS)
    if folder not in sys.path:
        sys.path.append(folder)
    return importlib.import_module(name)
