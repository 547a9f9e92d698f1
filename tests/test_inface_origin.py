"""An in-face step on a PSD trace-norm block that reaches X = 0 (every eigenvalue of the face's projection
dropped) hands back an active set holding the origin alone, so the face keeps following x.

Before, it handed back none: the face kept its old atoms while x moved to 0, and the next in-face step
factored those atoms and moved x out of the PSD cone (eigenvalue -0.22), which the engine's LMO-soundness
check then reported as "the LMO of TraceNormBall#0 returned no minimizer".
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.engine.active_set import ActiveSet
from fwmodel.engine.inface import LowRankFace, inface_step
from fwmodel.sets.atoms import RankOneAtom, SparseAtom

cp = pytest.importorskip("cvxpy")


def _model(m, C):
    Y = m.Variable((3, 3), symmetric=True)
    cons = [Y >> 0, m.diag(Y) <= 1, Y[0, :] <= np.array([0.2, -0.1, 1.0]), Y[1, 2] == -0.2]
    return m.Problem(m.Minimize(m.sum_squares(Y - C)), cons), Y


@pytest.mark.parametrize("options", [{}, dict(projection=False)])
def test_psd_model_whose_face_step_reaches_zero_matches_clarabel(options):
    B = np.random.default_rng(9).standard_normal((4, 4))
    C = ((B + B.T) / 2)[1:, 1:]
    ref, Yc = _model(cp, C)
    ref.solve(solver=cp.CLARABEL)
    prob, Y = _model(fm, C)
    prob.solve(**options)  # raised ModelError ("returned no minimizer") before
    assert prob.status == "optimal"
    assert prob.value == pytest.approx(ref.value, rel=1e-4)
    assert np.linalg.eigvalsh(Y.value).min() > -1e-4  # the copies' average, within feas_tol
    assert np.allclose(Y.value, Yc.value, atol=2e-2)


def test_inface_step_to_zero_returns_the_origin():
    # x = 0.5 * (r e1 e1'): a linear objective pulling that atom's weight to 0 moves x to the origin
    r, n = 2.0, 3
    u = np.zeros(n)
    u[0] = 1.0
    atom = RankOneAtom(u, u, r, (n, n))
    origin = SparseAtom(np.zeros(0, dtype=np.intp), np.zeros(0), n * n)
    aset = ActiveSet.from_atoms([atom, origin], [0.5, 0.5])
    x = 0.5 * r * np.outer(u, u).ravel()
    g = np.outer(u, u).ravel()  # <g, X> = X_00: minimized over the face by X = 0

    def merit(d):
        return float(g @ d), None, lambda gm: float(g @ (gm * d))

    gamma, d, new_set = inface_step(LowRankFace(r, True, (n, n)), aset, g, merit)
    moved = x + gamma * d
    assert np.allclose(moved, 0.0, atol=1e-12)
    assert new_set is not None
    rebuilt = np.zeros(n * n)
    for a, w in zip(new_set.atoms, new_set.weights):
        a.add_to(rebuilt, w)
    assert np.allclose(rebuilt, moved, atol=1e-12)
    assert sum(new_set.weights) == pytest.approx(1.0)
