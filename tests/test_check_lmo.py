"""fm.check_lmo: correct LMOs pass, each kind of broken LMO is named.

Every broken set below is a box-like set {x : |x_i| <= 1} with one defect,
so that the report's sentence can be matched to that defect.
"""
import numpy as np
import pytest

import fwmodel as fm


def builtin_sets():
    X = fm.Variable((4, 3), name="X")
    Q = fm.Variable((4, 4), name="Q")
    return [
        fm.L1Ball(X, 2.0),
        fm.Simplex(X),
        fm.Simplex(X, axis=1, equality=False),
        fm.Box(X, -1.0, 2.0),
        fm.L2Ball(X, 1.5),
        fm.LinfBall(X, 0.5),
        fm.KSparsePolytope(X, 2, 1.0),
        fm.TraceNormBall(X, 3.0),
        fm.TraceNormBall(Q, 1.0, psd=True),
        fm.BirkhoffPolytope(Q),
        fm.AlignmentPolytope(fm.Variable((3, 4), name="A")),
    ]


@pytest.mark.parametrize("index", range(len(builtin_sets())))
def test_builtin_sets_pass(index):
    cset = builtin_sets()[index]
    report = fm.check_lmo(cset, trials=8)
    assert report.ok, str(report)
    assert bool(report) and report.problems == []
    assert "OK" in str(report)


class UnitBox(fm.ConvexSet):
    """A correct reference: {x : |x_i| <= 1}."""

    is_polytope = True

    def lmo(self, direction):
        return -np.where(np.asarray(direction) > 0, 1.0, -1.0)

    def contains(self, point, tol=1e-9):
        return bool(np.all(np.abs(point) <= 1 + tol))

    def diameter(self):
        return 2.0 * np.sqrt(self.size)


class WrongSign(UnitBox):
    def lmo(self, direction):
        return -super().lmo(direction)


class FlatVertex(UnitBox):
    def lmo(self, direction):
        return super().lmo(direction).ravel()


class WrongSize(UnitBox):
    def lmo(self, direction):
        return np.zeros(3)


class Outside(UnitBox):
    def lmo(self, direction):
        return 2.0 * super().lmo(direction)


class Mutates(UnitBox):
    def lmo(self, direction):
        s = super().lmo(direction.copy())
        direction *= 0.0
        return s


class NotFinite(UnitBox):
    def lmo(self, direction):
        s = super().lmo(direction)
        s.flat[0] = np.nan
        return s


class Raises(UnitBox):
    def lmo(self, direction):
        raise RuntimeError("oracle broke")


class ReturnsNone(UnitBox):
    def lmo(self, direction):
        super().lmo(direction)


class Random(UnitBox):
    """Returns a random vertex: neither optimal nor reproducible."""

    def __init__(self, expr):
        super().__init__(expr)
        self.rng = np.random.default_rng(0)

    def lmo(self, direction):
        return self.rng.choice([-1.0, 1.0], size=np.shape(direction))


class SmallDiameter(UnitBox):
    def diameter(self):
        return 0.5


class LenientContains(UnitBox):
    def contains(self, point, tol=1e-9):
        return True


class DisagreeingAtom(UnitBox):
    def lmo_atom(self, flat_direction):
        return fm.DenseAtom(np.zeros(self.size))


class StaleSolveLMO(UnitBox):
    """A per-solve LMO whose warm state goes wrong after its first call (it repeats the first vertex)."""

    def lmo_for_solve(self):
        first = []

        def lmo_atom(flat_direction):
            if not first:
                first.append(self.lmo_atom(flat_direction))
            return first[0]

        return lmo_atom


class NoLMO(fm.ConvexSet):
    pass


@pytest.mark.parametrize("cls, phrase", [
    (WrongSign, "maximizes <d, s> instead of minimizing"),
    (FlatVertex, "returned shape (6,), expected (3, 2)"),
    (WrongSize, "returned shape (3,), expected (3, 2)"),
    (Outside, "outside the set"),
    (Mutates, "modified the direction"),
    (NotFinite, "NaN or infinite"),
    (Raises, "raised RuntimeError: oracle broke"),
    (ReturnsNone, "returned None"),
    (Random, "not a minimizer"),
    (SmallDiameter, "diameter() = 0.5"),
    (LenientContains, "contains() accepts a point"),
    (DisagreeingAtom, "lmo_atom and lmo disagree"),
    (StaleSolveLMO, "lmo_for_solve() and lmo disagree"),
    (NoLMO, "not implemented"),
])
def test_broken_lmo_is_named(cls, phrase):
    report = fm.check_lmo(cls, shape=(3, 2), trials=10)
    assert not report.ok
    assert any(phrase in p for p in report.problems), str(report)
    assert phrase in str(report)
    with pytest.raises(fm.ModelError, match="problem"):
        fm.check_lmo(cls, shape=(3, 2), trials=10, raise_on_error=True)


def test_reference_box_passes_and_counts_checks():
    report = fm.check_lmo(UnitBox, shape=(3, 2), trials=10)
    assert report.ok, str(report)
    text = str(report)
    assert "contains()" in text and "diameter()" in text
    assert isinstance(report.set, UnitBox) and report.set.shape == (3, 2)


def test_class_arguments_and_errors():
    report = fm.check_lmo(fm.L1Ball, shape=5, kwargs=dict(radius=3.0))
    assert report.ok and report.set.radius == 3.0
    assert fm.check_lmo(fm.KSparsePolytope, shape=(4,), args=(2, 1.0)).ok
    with pytest.raises(fm.ModelError, match="shape="):
        fm.check_lmo(UnitBox)
    with pytest.raises(fm.ModelError, match="only for checking a class"):
        fm.check_lmo(UnitBox(fm.Variable(2)), shape=2)
    with pytest.raises(fm.ModelError, match="ConvexSet"):
        fm.check_lmo(object())
    with pytest.raises(ValueError, match="trials"):
        fm.check_lmo(UnitBox, shape=2, trials=0)
    broken = fm.check_lmo(fm.BirkhoffPolytope, shape=(2, 3))  # not square: the constructor refuses
    assert not broken.ok and "raised ModelError" in broken.problems[0]


def test_not_a_convexset_subclass_reported():
    class DuckSet:
        shape = (2,)

        def lmo(self, direction):
            return -np.sign(direction)

    report = fm.check_lmo(DuckSet())
    assert not report.ok and "not a subclass of fm.ConvexSet" in report.problems[0]


def test_reproducible_report():
    a = fm.check_lmo(Random, shape=(3, 2), seed=3)
    b = fm.check_lmo(Random, shape=(3, 2), seed=3)
    assert not a.ok and str(a) == str(b)
    assert str(fm.check_lmo(UnitBox, shape=4, seed=1)) == str(fm.check_lmo(UnitBox, shape=4, seed=1))
