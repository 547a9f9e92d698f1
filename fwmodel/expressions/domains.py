"""Domains that depend on a Parameter's value, checked by every solve.

An atom whose domain excludes some data (``quad_over_lin(x, y)`` needs
``y > 0``; ``x / q`` needs ``q != 0``) checks fixed data when the model is
built. Data that depends on an ``fm.Parameter`` can only be checked when its
value is known, and its value may change between solves (and between warm
starts), so :func:`check_parameter_domains` runs at the start of each solve:
a value outside the domain raises a :class:`~fwmodel.errors.ModelError`
naming the atom, the parameter and its value, as CVXPY would refuse a value
outside an atom's domain, instead of handing NaN or infinite data to the
engine (which would end the solve "diverged", or "optimal" for a constraint
whose coefficients became NaN).

A node declares its domain with a method ``_check_parameter_domain()``
(called only when the node depends on a Parameter). Every other piece of
Parameter data (a maximal subexpression without variables) must evaluate to
finite numbers of magnitude at most ``MAX_DATA_MAGNITUDE`` (1e100, the limit on
the sets' data), and a divisor ``q`` of ``x / q`` must be at least its
reciprocal in magnitude (``x / q`` with ``q.value = 1e-300`` had coefficients
1e300 and ended "diverged" with NumPy's overflow warnings).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..sets._common import MAX_DATA_MAGNITUDE
from .core import short_repr


def describe_parameters(expr):
    """``"parameter p = 0"`` / ``"parameters p = 0, q (shape (3,))"``: the Parameters of ``expr`` and their values."""
    parts = []
    for p in expr.parameters():
        value = p.value
        if value is None:
            parts.append(f"{p.name} (no value)")
        elif np.ndim(value) == 0:
            parts.append(f"{p.name} = {float(value):g}")
        else:
            parts.append(f"{p.name} (shape {np.shape(value)})")
    return ("parameter " if len(parts) == 1 else "parameters ") + ", ".join(parts)


def data_value(expr):
    """The value of a variable-free expression as a float array, or None while a Parameter has no value."""
    if any(p.value is None for p in expr.parameters()):
        return None
    with np.errstate(all="ignore"):  # NaN and infinities are reported by the caller, not warned about
        value = expr.value
    return None if value is None else np.asarray(value, dtype=float)


def check_parameter_domains(roots):
    """Raise ModelError when a Parameter's current value puts an atom of ``roots`` outside its domain.

    ``roots``: the expressions of a problem (objective, constraint sides).
    Parameters without a value are skipped (the solve reports them).
    """
    seen = set()
    for root in roots:
        if root is None or not root._has_params:
            continue
        nodes = [n for n in root._postorder() if id(n) not in seen]
        seen.update(id(n) for n in nodes)
        for node in nodes:  # the atoms' own domains first: their messages say what the domain is
            check = getattr(node, "_check_parameter_domain", None)
            if check is not None and node._has_params:
                check()
        data = [a for n in nodes if n._has_vars for a in n.args if a._has_params and not a._has_vars]
        if not root._has_vars:
            data.append(root)
        for expr in data:  # then any other data that a Parameter made NaN, infinite or too large
            value = data_value(expr)
            if value is not None and not np.all(np.isfinite(value)):
                raise ModelError(f"{short_repr(expr)}: its value is not finite (NaN or infinite entries) with "
                                 f"{describe_parameters(expr)} at this solve; give the parameters values for "
                                 "which the data is finite")
            if value is not None and value.size and float(np.max(np.abs(value))) > MAX_DATA_MAGNITUDE:
                raise ModelError(f"{short_repr(expr)}: its value reaches {float(np.max(np.abs(value))):g} in "
                                 f"magnitude with {describe_parameters(expr)} at this solve, beyond the limit on "
                                 f"data ({MAX_DATA_MAGNITUDE:g}: FW-AL squares distances and gradients, and beyond "
                                 "it those squares overflow float64); give the parameters values of a smaller "
                                 "magnitude, or rescale the model")
