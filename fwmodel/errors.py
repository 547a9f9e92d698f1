"""Errors raised by fwmodel."""


class ModelError(ValueError):
    """A malformed model: wrong shape, non-convex objective, unsupported operation.

    The message always names the offending expression, set, shape or option.
    """
