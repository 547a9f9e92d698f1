"""Small helpers shared by the built-in sets (not public API)."""
from __future__ import annotations

import math
import numbers

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
    if (type(flat_direction) is np.ndarray and flat_direction.ndim == 1 and flat_direction.dtype == np.float64
            and flat_direction.flags.c_contiguous):
        d = flat_direction  # already what the conversion below gives (the engine's case): no call to make
    else:
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


#: The largest magnitude accepted for a set's numeric data (radii, bounds,
#: totals). FW-AL squares distances between points of the sets (step sizes,
#: curvature estimates, ||Mx - b||^2); with data up to 1e100 those squares
#: stay below 1e200, far from the float64 overflow at 1.8e308, even after
#: they are multiplied by the problem's size and the objective's scale.
MAX_DATA_MAGNITUDE = 1e100


def describe_value(value):
    """A short text for ``value`` in error messages (its type when the repr is long)."""
    text = repr(value)
    if len(text) > 60:
        text = f"{type(value).__name__} of shape {np.shape(value)}" if hasattr(value, "shape") else text[:57] + "..."
    return text


def _refuse(owner, name, value, what):
    raise ModelError(f"{owner}: {name} must be {what}, got {describe_value(value)}")


def check_number(owner, name, value, *, sign=None, integer=False, limit=MAX_DATA_MAGNITUDE):
    """Validate one number of a set's data and return it as a float (an int when ``integer``).

    This is the one place where the built-in sets check a scalar argument
    (``radius``, ``total``, ``k``, ...). Refused, with a ModelError naming
    ``owner`` (the set) and ``name`` (the argument): anything that is not a
    real number (strings such as ``"1"``, booleans, None, arrays with more
    than one entry, complex numbers), NaN, infinities, magnitudes above
    ``limit`` (see :data:`MAX_DATA_MAGNITUDE`), non-integers when
    ``integer``, and values of the wrong sign. ``sign`` is None (any sign),
    "nonneg" (>= 0) or "positive" (> 0; with ``integer``, >= 1).

    Data given as an ``fm.Parameter`` is handled by the set, which stores the
    Parameter and passes each value it takes (at every solve) through this
    same function; so a new rule added here applies to both.
    """
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "biuf":
        value = value.reshape(())[()]  # a one-entry array (what a Parameter's value is) as its scalar
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        _refuse(owner, name, value, "an integer" if integer else "a real number")
    v = float(value)
    if math.isnan(v):
        _refuse(owner, name, value, "a number (not NaN)")
    if math.isinf(v):
        _refuse(owner, name, value, "finite (the set must be bounded)")
    if not abs(v) <= limit:
        raise ModelError(
            f"{owner}: {name} = {value!r} is too large in magnitude (the limit is {limit:g}: FW-AL squares "
            "distances between points of the sets, and beyond the limit those squares overflow float64); "
            "rescale the variables (e.g. measure them in larger units)"
        )
    if integer:
        if not v.is_integer():
            _refuse(owner, name, value, "an integer")
        v = int(v)
    if sign == "nonneg" and v < 0:
        _refuse(owner, name, value, "nonnegative (>= 0)")
    if sign == "positive" and (v < 1 if integer else v <= 0):
        _refuse(owner, name, value, "an integer >= 1" if integer else "positive (> 0)")
    return v


def check_number_array(owner, name, value, shape, limit=MAX_DATA_MAGNITUDE):
    """Validate numeric data that broadcasts to ``shape`` (a Box bound, ...).

    Returns a float when ``value`` is a scalar, else a contiguous float array
    of ``shape``. Refused, with a ModelError naming the set and the argument:
    strings, booleans, None and other non-numeric data, complex numbers,
    shapes that do not broadcast to ``shape``, NaN, infinities and magnitudes
    above ``limit``. As for :func:`check_number`, a set that takes an
    ``fm.Parameter`` passes each of its values through this function.
    """
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return check_number(owner, name, value, limit=limit)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested lists
        _refuse(owner, name, value, "a number or an array of numbers")
    if arr.dtype.kind not in "iuf":  # b: booleans, U/S: strings, O: objects, c: complex
        _refuse(owner, name, value, "a number or an array of real numbers (not "
                + {"b": "booleans", "U": "strings", "S": "bytes", "c": "complex numbers"}.get(arr.dtype.kind,
                                                                                              "objects") + ")")
    arr = arr.astype(float)
    try:
        full = np.broadcast_to(arr, shape)
    except ValueError:
        raise ModelError(
            f"{owner}: {name} has shape {arr.shape}, which does not broadcast to the expression's shape {shape}"
        ) from None
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ModelError(f"{owner}: {name} has a NaN or infinite entry (first at index {where}); "
                         "every bound must be finite (the set must be bounded)")
    big = np.abs(arr) > limit
    if big.any():
        where = tuple(int(i) for i in np.argwhere(big)[0])
        raise ModelError(
            f"{owner}: {name} has an entry of magnitude {float(np.abs(arr).max()):g} (first at index {where}) "
            f"above the limit {limit:g}: FW-AL squares distances between points of the sets, and beyond the "
            "limit those squares overflow float64; rescale the variables (e.g. measure them in larger units)"
        )
    if arr.ndim == 0:
        return float(arr)
    return np.ascontiguousarray(full, dtype=float)


def check_flag(owner, name, value):
    """Validate a True/False option (``equality``, ``psd``, ...): a bool, not a truthy value."""
    if not isinstance(value, (bool, np.bool_)):
        _refuse(owner, name, value, "True or False")
    return bool(value)


def check_positive_int(name, value, owner):
    """Validate an integer parameter >= 1 (see :func:`check_number`); ModelError naming it."""
    return check_number(owner, name, value, sign="positive", integer=True)


def dense_vertex(owner, atom):
    """The dense vertex of ``atom`` in the set's shape (what :meth:`lmo` returns)."""
    return atom.to_dense().reshape(tuple(owner.shape))


class InnerData:
    """Mixin for a set that wraps another (``self.inner``) and keeps no data of its own.

    The data and its fm.Parameters are the inner set's: refreshing, the data
    version and ``reset`` read through. A refresh that changed the data also
    forgets what the wrapper cached from the old data (whether it holds the
    origin, hence its initial point).
    """

    def refresh(self):
        changed = self.inner.refresh()
        if changed:
            object.__setattr__(self, "_contains_origin", None)
        return changed

    def parameters(self):
        return self.inner.parameters()

    @property
    def data_version(self):
        return self.inner.data_version

    @property
    def empty_reason(self):
        """The inner set's (a Parameter can empty a wrapped box: the solve must see it)."""
        return self.inner.empty_reason

    def reset(self):
        self.inner.reset()
