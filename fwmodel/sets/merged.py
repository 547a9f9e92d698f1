"""The base of a set the compiler builds from two sets on the same variable.

:class:`~fwmodel.sets.capped_simplex.CappedSimplex` (a simplex and a box)
and :class:`~fwmodel.sets.boxed_l1.BoxedL1Ball` (an L1 ball and a box) have
an exact LMO and projection of their own, but their data (radius, total,
bounds, the fm.Parameters in them) stay in the two sets the user wrote:
this base forwards ``refresh``, ``parameters``, ``data_version`` and
``reset`` to them, and recomputes the merged set's own data
(``_data_changed``) when either changes.
"""
from __future__ import annotations

from .base import ConvexSet, distinct_parameters


class MergedSets(ConvexSet):
    """``first ∩ second`` over ``first``'s expression, reading its data through the two sets."""

    def __init__(self, first, second):
        super().__init__(first.expr)
        object.__setattr__(self, "_parts", (first, second))

    def refresh(self):
        changed = False
        for part in self._parts:
            changed = bool(part.refresh()) | changed
        if changed:
            object.__setattr__(self, "_contains_origin", None)
            self._data_changed()
        return changed

    def parameters(self):
        return distinct_parameters(list(self._parts))  # by identity: == between Parameters is a constraint

    @property
    def data_version(self):
        return sum(part.data_version for part in self._parts)

    def reset(self):
        for part in self._parts:
            part.reset()
