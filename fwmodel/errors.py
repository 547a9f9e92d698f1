"""Errors raised by fwmodel."""


class ModelError(ValueError):
    """A malformed model: wrong shape, non-convex objective, unsupported operation.

    The message always names the offending expression, set, shape or option.
    """


class EmptySetError(ModelError):
    """A set whose data leave it empty (a box with lower > upper somewhere).

    Raised when the data are constants given to the set itself (a malformed
    set). Sets built from constraints (``x >= 3, x <= 2``) or whose data are
    Parameters do not raise: they record ``empty_reason`` and the solve ends
    with status "infeasible", as CVXPY does.
    """


class UnknownKeywordError(ModelError, TypeError):
    """A keyword a constructor does not take (``fm.Parameter(..., sign=...)``): a ModelError naming it, and a
    TypeError, as Python's own error for an unexpected keyword is."""
