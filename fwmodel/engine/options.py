"""The options of :func:`fwmodel.engine.fwal.minimize_fwal`: their allowed values, checked before any work.

A bad option is refused with a ValueError that names it and says what is
allowed, before the first iterate is built (so a typo never costs a solve).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .rank_k import RANK_K_CHOICES

STEP_KINDS = ("auto", "fw", "away", "pairwise")
PROJECTION_CHOICES = ("auto", True, False)
LINE_SEARCHES = ("auto", "exact", "backtracking")
SWEEPS = ("gauss-seidel", "jacobi")


def _same_choice(value, choice):
    # compare kinds too: True == 1, so `1 in (True, False)` would accept a number as a boolean
    if isinstance(choice, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) == choice
    return isinstance(value, str) and value == choice


def check_choice(name, value, allowed):
    """Refuse ``value`` unless it is one of ``allowed`` (booleans and strings compared with their kind)."""
    if not any(_same_choice(value, a) for a in allowed):
        raise ValueError(f"option {name}={value!r} is not one of {', '.join(map(repr, allowed))}")


def _is_number(value):
    """A real number that is not a boolean (True is an int in Python, but not a tolerance)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_count(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_options(max_iter, tol, feas_tol, time_limit, lam, eta, verbose, print_every, callback, seed,
                  infeasibility_check_every, max_drop_steps, step, line_search, inface, projection, sweep,
                  rank_k="auto"):
    """Refuse a bad option with a ValueError that names it (before any work is done)."""
    check_choice("step", step, STEP_KINDS)
    check_choice("line_search", line_search, LINE_SEARCHES)
    check_choice("inface", inface, PROJECTION_CHOICES)
    check_choice("projection", projection, PROJECTION_CHOICES)
    if not (_is_count(max_iter) and max_iter >= 0):
        raise ValueError(f"option max_iter must be a nonnegative integer, got {max_iter!r}")
    for name, value in (("tol", tol), ("feas_tol", feas_tol)):
        if not (_is_number(value) and value > 0 and math.isfinite(value)):
            raise ValueError(f"option {name} must be a positive number, got {value!r}")
    if time_limit is not None and not (_is_number(time_limit) and time_limit > 0):
        raise ValueError(f"option time_limit must be a positive number of seconds, got {time_limit!r}")
    if lam is not None and not (_is_number(lam) and lam > 0 and math.isfinite(lam)):
        raise ValueError(f"option lam must be a positive number, got {lam!r}")
    if not isinstance(verbose, (bool, np.bool_)):
        raise ValueError(f"option verbose must be True or False, got {verbose!r}")
    if print_every is not None and not (_is_count(print_every) and print_every >= 1):
        raise ValueError(f"option print_every must be a positive integer (or None), got {print_every!r}")
    if callback is not None and not callable(callback):
        raise ValueError(f"option callback must be a callable (or None), got {callback!r}")
    seed_types = (np.random.SeedSequence, np.random.BitGenerator, np.random.Generator)
    if seed is not None and not ((_is_count(seed) and seed >= 0) or isinstance(seed, seed_types)):
        raise ValueError(f"option seed must be None, a nonnegative integer or a numpy.random Generator, "
                         f"got {seed!r}")
    if infeasibility_check_every is not None and not (_is_count(infeasibility_check_every)
                                                      and infeasibility_check_every >= 0):
        raise ValueError(f"option infeasibility_check_every must be a nonnegative integer (0: never), "
                         f"got {infeasibility_check_every!r}")
    if max_drop_steps is not None and not (_is_count(max_drop_steps) and max_drop_steps >= 0):
        raise ValueError(f"option max_drop_steps must be a nonnegative integer, got {max_drop_steps!r}")
    if eta is not None and (isinstance(eta, (bool, np.bool_))):
        raise ValueError(f"option eta={eta!r} is not a number, a callable, or one of "
                         "'adaptive', 'theorem2', 'theorem3'")
    check_choice("sweep", sweep, SWEEPS)
    check_choice("rank_k", rank_k, RANK_K_CHOICES)
