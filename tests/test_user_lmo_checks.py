"""A user set's LMO answers are checked as the dense ``lmo`` path checks them: an ``lmo_atom`` whose atom
has indices outside the set, NaN values, another size, or complex values, and an LMO that maximizes (a FW
gap of exactly 0 at its first vertex), raise a ModelError naming the set, where a correct one solves as
CVXPY + Clarabel (fwmodel.sets.base.checked_user_lmo, engine.certificates.refuse_maximizing_lmo)."""
import warnings

import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

TARGET = np.array([0.3, -0.2, 0.5, 0.1])


class UserBox(fm.ConvexSet):
    """[-1, 1]^n by its LMO."""
    is_polytope = True

    def lmo(self, d):
        s = -np.sign(np.asarray(d, dtype=float))
        s[s == 0] = 1.0
        return s


class AtomBox(UserBox):
    def lmo_atom(self, flat):
        s = self.lmo(np.asarray(flat).reshape(self.shape)).ravel()
        return fm.SparseAtom(np.arange(s.size), s, s.size)


class OutOfRange(UserBox):
    def lmo_atom(self, flat):
        s = self.lmo(np.asarray(flat).reshape(self.shape)).ravel()
        return fm.SparseAtom(np.arange(s.size) + 1, s, s.size)


class NaNAtom(UserBox):
    def lmo_atom(self, flat):
        s = self.lmo(np.asarray(flat).reshape(self.shape)).ravel()
        s[0] = np.nan
        return fm.SparseAtom(np.arange(s.size), s, s.size)


class WrongSize(UserBox):
    def lmo_atom(self, flat):
        s = self.lmo(np.asarray(flat).reshape(self.shape)).ravel()
        return fm.SparseAtom(np.arange(s.size), s, s.size + 3)


class ComplexDense(UserBox):
    def lmo(self, d):
        return super().lmo(d) + 1j


class Maximizer(UserBox):
    def lmo(self, d):
        return -super().lmo(d)


def _clarabel(target):
    x = cp.Variable(4)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x - target)), [cp.abs(x) <= 1])
    prob.solve(solver=cp.CLARABEL)
    return prob.value, x.value


@pytest.mark.parametrize("cls", [UserBox, AtomBox])
def test_correct_user_lmo_solves_as_clarabel(cls):
    target = 2.0 * TARGET + np.array([1.0, -1.0, 0.0, 0.0])
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), [cls(x)])
    prob.solve(tol=1e-8, feas_tol=1e-8)
    ref, ref_x = _clarabel(target)
    assert prob.status == fm.OPTIMAL
    assert abs(prob.value - ref) <= 1e-5 * max(1.0, ref)
    np.testing.assert_allclose(x.value, ref_x, atol=1e-4)


@pytest.mark.parametrize("cls, words", [
    (OutOfRange, r"OutOfRange\.lmo_atom returned a SparseAtom with index 4 outside"),
    (NaNAtom, r"NaNAtom\.lmo_atom returned NaN or infinite entries"),
    (WrongSize, r"WrongSize\.lmo_atom returned an atom of size 7, expected 4"),
    (ComplexDense, r"ComplexDense\.lmo returned complex entries"),
])
def test_bad_atoms_are_a_model_error_naming_the_set(cls, words):
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - TARGET)), [cls(x)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a complex vertex: no ComplexWarning either)
        with pytest.raises(fm.ModelError, match=words):
            prob.solve(max_iter=200)


@pytest.mark.parametrize("target", [0.3, TARGET])
def test_maximizing_lmo_is_not_certified_optimal(target):
    ref, _ = _clarabel(target)  # the true box's optimum is 0: a maximizer stopped "optimal" at 1.96
    assert ref < 1e-8
    x = fm.Variable(4)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), [Maximizer(x)])
    with pytest.raises(fm.ModelError, match=r"LMO of Maximizer.*returned no minimizer.*lmo\(-g\)"):
        prob.solve()
