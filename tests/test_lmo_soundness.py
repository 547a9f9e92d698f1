"""What the engine trusts an LMO for, checked: infeasibility certificates, kept vertices, the FW gap's sign.

- An infeasibility certificate is a lower bound on ``||Mx - b||`` over the
  sets (engine/certificates.py); the iterate is a point of the sets, so a
  bound above its own residual proves an LMO wrong, never the model
  infeasible. A feasible Birkhoff model was "infeasible" from such a bound.
- A user LMO that returns one reused buffer changed the vertices the
  engine keeps (``ConvexSet.lmo_atom`` now copies; ``fm.check_lmo`` names it).
- An exact LMO never gives a FW gap below zero beyond rounding: a
  sign-flipped one stopped "optimal" far from the optimum; now a ModelError.
- A set whose ``__init__`` skips ``super().__init__(expr)`` is named in a
  clear error instead of an AttributeError deep in the compiler.

References: CVXPY + Clarabel on the same models.
"""
import cvxpy as cp
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.certificates import InfeasibilityCheck
from fwmodel.engine.lagrangian import Block, _Operator
from fwmodel.sets.atoms import DenseAtom

# ---------------------------------------------------------------- certificates

C6 = np.array([[1, 2, 2, 2, 2, 0], [0, 2, 1, 2, 0, 1], [2, 1, 2, 1, 0, 1], [1, 1, 2, 2, 1, 2],
               [1, 1, 0, 1, 0, 1], [2, 2, 1, 2, 2, 0]], float)


def _birkhoff_side_row_reference():
    Xc = cp.Variable((6, 6))
    ref = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C6, Xc))),
                     [Xc >= 0, cp.sum(Xc, axis=0) == 1, cp.sum(Xc, axis=1) == 1, Xc[0, 0] + Xc[1, 1] == 1])
    ref.solve(solver=cp.CLARABEL)
    return ref


@pytest.mark.parametrize("options", [{}, {"step": "away"}, {"step": "pairwise"}, {"projection": True}])
def test_feasible_birkhoff_model_with_a_side_row_is_optimal(options):
    """Doubly stochastic X with X[0, 0] + X[1, 1] == 1: Clarabel optimal at 3.0. Before, "infeasible"
    with a bound of 0.707 at a feasible permutation whose residual was 3e-17 (the warm assignment LMO
    missed on that residual's direction and the bound was divided by its norm)."""
    ref = _birkhoff_side_row_reference()
    assert ref.status == cp.OPTIMAL
    X = fm.Variable((6, 6))
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C6, X))), [fm.BirkhoffPolytope(X), X[0, 0] + X[1, 1] == 1])
    prob.solve(**options)
    assert prob.status == fm.OPTIMAL, prob.stats.message
    assert prob.value == pytest.approx(ref.value, abs=1e-4 * max(1.0, abs(ref.value)))
    # the point meets the constraints Clarabel was given
    Xv = X.value
    assert Xv.min() >= -1e-6 and abs(Xv[0, 0] + Xv[1, 1] - 1) <= 1e-6
    np.testing.assert_allclose(Xv.sum(axis=0), 1, atol=1e-6)
    np.testing.assert_allclose(Xv.sum(axis=1), 1, atol=1e-6)


def _interval_check(lmo_value, rhs=0.5):
    """One block x in [0, 1] (an LMO returning the vertex ``lmo_value(z)`` for the direction z) and one
    row x = rhs (M = [1], b = [rhs]): the InfeasibilityCheck the driver builds."""
    block = Block(offset=0, size=1, lmo=lambda z: DenseAtom(np.array([lmo_value(z)])),
                  initial_atom=lambda: DenseAtom(np.zeros(1)), name="Interval#0")
    return InfeasibilityCheck([block], _Operator(np.array([[1.0]]), 1), np.array([rhs]), every=1)


def test_certificate_above_the_iterates_residual_is_refused():
    """x_t = 0.501 (residual 1e-3) meets the row to 1e-3; an LMO that returns 1 for every direction (a
    maximizer along r) makes the bound 0.5, above the iterate's own residual: impossible for a point of
    the set (the true bound is <= 0, the model is feasible at x = 0.5), so no certificate. Before, the
    check at "optimal" answered "infeasible"."""
    lying = _interval_check(lambda z: 1.0)
    r, y = np.array([1e-3]), np.zeros(1)
    assert lying.at_optimal(r, y, scale=1.0) is None
    assert lying.message(5, 1e-3, 1e-4, r, y, scale=1.0) is None
    # the same check with an exact LMO on an infeasible row x = 2 (x_t = 1, residual 1): bound 1, certified
    exact = _interval_check(lambda z: 0.0 if z[0] > 0 else 1.0, rhs=2.0)
    r = np.array([-1.0])
    # (shown rounded down to three digits: the bound is 1 less the rounding margin taken off, 0.999...)
    assert ">= 0.999 everywhere" in exact.at_optimal(r, y, scale=2.0)
    assert ">= 0.999 everywhere" in exact.message(5, 1.0, 1e-6, r, y, scale=2.0)
    # the exact bound (x = 1 is the closest point) is the residual itself: not refused as above it
    assert InfeasibilityCheck.sound(1.0, 1.0, scale=2.0) == 1.0


def test_residual_at_rounding_level_is_not_tried():
    """A residual of 1e-17 at a feasibility scale of 1 is a feasible point up to rounding: no
    certificate is tried (whatever the LMOs say, nothing there is left to prove)."""
    calls = []
    check = _interval_check(lambda z: calls.append(1) or 1.0)
    assert check.at_optimal(np.array([1e-17]), np.zeros(1), scale=1.0) is None
    assert not calls


# ---------------------------------------------------------------- kept vertices

def _least_squares_box_reference(A, b, lo, hi):
    xc = cp.Variable(A.shape[1])
    ref = cp.Problem(cp.Minimize(cp.sum_squares(A @ xc - b)), [xc >= lo, xc <= hi])
    ref.solve(solver=cp.CLARABEL)
    return ref


class BufferBox(fm.ConvexSet):
    """The box [-0.3, 0.2]^n with an LMO that writes every vertex into one buffer and returns it."""
    is_polytope = True

    def __init__(self, expr):
        super().__init__(expr)
        self._buf = np.zeros(expr.shape)

    def lmo(self, d):
        np.copyto(self._buf, np.where(d > 0, -0.3, 0.2))
        return self._buf

    def contains(self, point, tol=1e-9):
        return bool(np.all(point >= -0.3 - tol) and np.all(point <= 0.2 + tol))


def test_lmo_returning_one_buffer_solves_as_clarabel():
    """Before, the engine stored the buffer itself: every kept vertex became the last one, and least
    squares ran to max_iter at 12.609 (Clarabel: 10.889)."""
    rng = np.random.default_rng(30)
    A, b = rng.standard_normal((15, 12)), rng.standard_normal(15)
    ref = _least_squares_box_reference(A, b, -0.3, 0.2)
    x = fm.Variable(12)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - b)), [BufferBox(x)])
    prob.solve()
    assert prob.status == fm.OPTIMAL
    assert prob.value == pytest.approx(ref.value, rel=1e-4)


def test_check_lmo_names_a_reused_buffer():
    report = fm.check_lmo(BufferBox, shape=12)
    assert not report.ok
    assert any("returned at the previous call" in p and "new array" in p for p in report.problems), report
    # a box whose LMO returns fresh arrays passes
    class FreshBox(BufferBox):
        def lmo(self, d):
            return np.where(d > 0, -0.3, 0.2)
    assert fm.check_lmo(FreshBox, shape=12).ok


# ---------------------------------------------------------------- the FW gap's sign

class SignBox(fm.ConvexSet):
    """[-1, 1]^n with an LMO of a given sign: -sign(d) minimizes, sign(d) maximizes (a sign error)."""
    is_polytope = True

    def __init__(self, expr, sign=-1.0):
        super().__init__(expr)
        self.sign_of_lmo = sign

    def lmo(self, d):
        return self.sign_of_lmo * np.sign(d)


def test_maximizing_lmo_is_a_model_error():
    """min ||x - 1||^2 over [-1, 1]^5: optimum 0 at x = 1. Before, "optimal" at 5.0 with FW gap -10."""
    x = fm.Variable(5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [SignBox(x, sign=1.0)])
    with pytest.raises(fm.ModelError, match=r"SignBox.*returned no minimizer.*fm\.check_lmo"):
        prob.solve()


@pytest.mark.parametrize("target", [0.4, 1.0, 3.0])
def test_exact_user_lmo_solves_as_clarabel(target):
    """The same box with the right sign (the check does not fire), the optimum inside, on a face, outside."""
    x = fm.Variable(5)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), [SignBox(x)])
    prob.solve()
    xc = cp.Variable(5)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - target)), [xc >= -1, xc <= 1])
    ref.solve(solver=cp.CLARABEL)
    assert prob.status == fm.OPTIMAL
    assert prob.value == pytest.approx(ref.value, abs=1e-5 * max(1.0, ref.value))


# ---------------------------------------------------------------- a set not built

class Unbuilt(fm.ConvexSet):
    is_polytope = True

    def __init__(self, expr):  # forgets super().__init__(expr)
        self.kept = expr

    def lmo(self, d):
        return -np.sign(d)


def test_set_without_super_init_is_named():
    x = fm.Variable(5)
    with pytest.raises(fm.ModelError, match=r"Unbuilt.*super\(\)\.__init__\(expr\)"):
        fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [Unbuilt(x)]).solve()
    report = fm.check_lmo(Unbuilt, shape=5)
    assert not report.ok and "super().__init__(expr)" in report.problems[0]
    assert "not built" in repr(Unbuilt(x))
    assert not hasattr(Unbuilt(x), "shape")  # still an AttributeError for hasattr
