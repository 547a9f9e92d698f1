"""Small helpers shared by the built-in sets (not public API)."""
from __future__ import annotations

import operator

import numpy as np

from ..errors import ModelError


def as_direction(owner, direction):
    """``direction`` as a float array of the set's shape (a flat vector is reshaped)."""
    d = np.asarray(direction, dtype=float)
    shape = tuple(owner.shape)
    if d.shape != shape:
        if d.size != owner.size:
            raise ModelError(
                f"{type(owner).__name__}: direction has shape {d.shape}, expected {shape}"
            )
        d = d.reshape(shape)
    return d


def as_flat_direction(owner, flat_direction):
    """``flat_direction`` as a flat float vector of the set's size."""
    d = np.asarray(flat_direction, dtype=float).ravel()
    if d.size != owner.size:
        raise ModelError(
            f"{type(owner).__name__}: direction has {d.size} entries, expected {owner.size}"
        )
    return d


def as_point(owner, point):
    """A point to test for membership, as a float array of the set's shape, or None."""
    x = np.asarray(point, dtype=float)
    if x.size != owner.size:
        return None
    return x.reshape(tuple(owner.shape))


def check_positive_int(name, value, owner):
    """Validate an integer parameter >= 1; raise ValueError naming it."""
    try:
        v = operator.index(value)
    except TypeError:
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            v = int(value)
        else:
            raise ValueError(f"{owner}: {name} must be an integer >= 1, got {value!r}") from None
    if v < 1:
        raise ValueError(f"{owner}: {name} must be an integer >= 1, got {value!r}")
    return int(v)


def dense_vertex(owner, atom):
    """The dense vertex of ``atom`` in the set's shape (what :meth:`lmo` returns)."""
    return atom.to_dense().reshape(tuple(owner.shape))
