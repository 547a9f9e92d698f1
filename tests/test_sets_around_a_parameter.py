"""Sets given on a variable minus a Parameter (``fm.L1Ball(x - q, r)``, ``fm.Box(x - q, lo, hi)``,
``fm.Simplex(x - q)``, ``fm.L2Ball(2 * x - q, r)``), alone on x, checked against CVXPY + Clarabel.

Around a constant center such a set held x (an ``AffinePreimage``), and ``fm.norm1(x - q) <= r`` held x
around a moving center; the explicit set around a Parameter was an expression block tied to x by rows,
which does not bound x, and the model was refused ("not in any bounded set"). It is now held on x around a
center read at each solve (a ``MovingPreimage``); re-solves after q moves give Clarabel's answers.
"""
import numpy as np
import pytest

import fwmodel as fm

cp = pytest.importorskip("cvxpy")

TIGHT = dict(tol=1e-9, feas_tol=1e-9, max_iter=50000)
rng = np.random.default_rng(19)
C = rng.standard_normal(5)
CENTERS = [0.3 * rng.standard_normal(5), rng.standard_normal(5), np.zeros(5)]

MODELS = {  # name: (fwmodel constraint, CVXPY constraint), on (x, q)
    "L1Ball(x - q, 0.5)": (lambda x, q: fm.L1Ball(x - q, 0.5), lambda x, q: cp.norm1(x - q) <= 0.5),
    "Box(x - q, -0.2, 0.2)": (lambda x, q: fm.Box(x - q, -0.2, 0.2), lambda x, q: cp.abs(x - q) <= 0.2),
    "L2Ball(2 * x - q, 0.5)": (lambda x, q: fm.L2Ball(2 * x - q, 0.5), lambda x, q: cp.norm(2 * x - q) <= 0.5),
    "LinfBall(q - x, 0.3)": (lambda x, q: fm.LinfBall(q - x, 0.3), lambda x, q: cp.norm_inf(q - x) <= 0.3),
    "Simplex(x - q)": (lambda x, q: fm.Simplex(x - q), lambda x, q: [x - q >= 0, cp.sum(x - q) == 1]),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_a_set_around_a_parameter_center_holds_the_variable_and_follows_the_center(name):
    ours, theirs = MODELS[name]
    x, q = fm.Variable(5), fm.Parameter(5, value=CENTERS[0])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [ours(x, q)])
    xc, qc = cp.Variable(5), cp.Parameter(5)
    made = theirs(xc, qc)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - C)), made if isinstance(made, list) else [made])
    for center in CENTERS:  # (warm re-solves after the center moved)
        q.value = qc.value = center
        prob.solve(**TIGHT)
        ref.solve(solver=cp.CLARABEL)
        assert prob.status == fm.OPTIMAL, prob.stats.message
        assert prob.value == pytest.approx(ref.value, rel=1e-6, abs=1e-7)
        np.testing.assert_allclose(x.value, xc.value, atol=1e-4)


def test_a_set_scaled_by_a_parameter_alone_on_its_variable_is_refused_naming_it():
    """``fm.L1Ball(p * x, r)``: the Parameter scales x (the set on x changes shape with p), which no fixed
    preimage follows; alone on x it is refused, naming the set (norm bounds, ``fm.norm1(p * x) <= r``, move
    p to the radius instead)."""
    x, p = fm.Variable(5, name="x"), fm.Parameter(value=2.0, name="p")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C)), [fm.L1Ball(p * x, 1.0)])
    with pytest.raises(fm.ModelError, match=r"x.*not in any bounded set"):
        prob.solve()
