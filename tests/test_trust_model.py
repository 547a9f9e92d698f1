"""Trust in the modeling layer: what the model says is what gets solved.

- set data (radii, bounds, totals, k, flags) is validated by one helper and
  refused by name when it is not a sensible number;
- bounds and radii large enough to overflow FW-AL's squared distances are
  refused with the limit stated.
"""
import numpy as np
import pytest

import fwmodel as fm
from fwmodel.sets._common import MAX_DATA_MAGNITUDE


# ------------------------------------------------------------ set data
def _x():
    return fm.Variable(3, name="x")


BAD_SET_DATA = [
    # (builder, set name, argument name, words of the message)
    (lambda x: fm.L1Ball(x, "1"), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, True), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, None), "L1Ball", "radius", "real number"),
    (lambda x: fm.L1Ball(x, np.array([1.0, 2.0])), "L1Ball", "radius", "real number"),
    (lambda x: fm.L2Ball(x, np.nan), "L2Ball", "radius", "NaN"),
    (lambda x: fm.L2Ball(x, -0.5), "L2Ball", "radius", "nonnegative"),
    (lambda x: fm.LinfBall(x, np.inf), "LinfBall", "radius", "finite"),
    (lambda x: fm.LinfBall(x, 1e300), "LinfBall", "radius", "limit"),
    (lambda x: fm.L1Ball(x, 2e100), "L1Ball", "radius", "limit"),
    (lambda x: fm.KSparsePolytope(x, 2.5), "KSparsePolytope", "k", "integer"),
    (lambda x: fm.KSparsePolytope(x, True), "KSparsePolytope", "k", "integer"),
    (lambda x: fm.KSparsePolytope(x, 0), "KSparsePolytope", "k", ">= 1"),
    (lambda x: fm.KSparsePolytope(x, 2, radius=-1), "KSparsePolytope", "radius", "nonnegative"),
    (lambda x: fm.Simplex(x, total="a"), "Simplex", "total", "real number"),
    (lambda x: fm.Simplex(x, total=-1.0), "Simplex", "total", "nonnegative"),
    (lambda x: fm.Simplex(x, total=1e200), "Simplex", "total", "limit"),
    (lambda x: fm.Simplex(x, equality="no"), "Simplex", "equality", "True or False"),
    (lambda x: fm.Box(x, 1, 0), "Box", "lower", "upper"),
    (lambda x: fm.Box(x, [0, 2, 0], 1), "Box", "lower", "flat index 1"),
    (lambda x: fm.Box(x, [0, 0], 1), "Box", "lower", "broadcast"),
    (lambda x: fm.Box(x, 0, np.ones((2, 3))), "Box", "upper", "broadcast"),
    (lambda x: fm.Box(x, "0", 1), "Box", "lower", "real number"),
    (lambda x: fm.Box(x, [True, False, True], 2), "Box", "lower", "booleans"),
    (lambda x: fm.Box(x, 0, [1, np.inf, 1]), "Box", "upper", "NaN or infinite"),
    (lambda x: fm.Box(x, -1e300, 1e300), "Box", "lower", "limit"),
    (lambda x: fm.Box(x, 0, [1, 1, 1e101]), "Box", "upper", "limit"),
    (lambda x: fm.Box(x, 0, 1j), "Box", "upper", "real number"),
    (lambda x: fm.TraceNormBall(fm.Variable((2, 2)), radius=np.inf), "TraceNormBall", "radius", "finite"),
    (lambda x: fm.TraceNormBall(fm.Variable((2, 2)), psd="yes"), "TraceNormBall", "psd", "True or False"),
]


@pytest.mark.parametrize("build, owner, name, words", BAD_SET_DATA)
def test_bad_set_data_is_refused_by_name(build, owner, name, words):
    with pytest.raises(fm.ModelError) as info:
        build(_x())
    message = str(info.value)
    assert owner in message and name in message and words in message


def test_sensible_set_data_is_accepted_as_plain_numbers():
    x = _x()
    assert fm.L1Ball(x, np.float32(2.0)).radius == 2.0
    assert fm.L1Ball(x, np.array([3.0])).radius == 3.0  # a one-entry array is a number
    assert fm.KSparsePolytope(x, np.int64(2)).k == 2
    assert fm.KSparsePolytope(x, 2.0).k == 2  # an integral float is an integer
    box = fm.Box(x, np.array(0.0), [1, 2, 3])
    assert box.lower == 0.0 and np.array_equal(box.upper, [1.0, 2.0, 3.0])
    limit = fm.LinfBall(x, MAX_DATA_MAGNITUDE)
    assert limit.radius == MAX_DATA_MAGNITUDE


def test_bounds_at_the_limit_solve_to_the_closed_form():
    # Box(x, -1e100, 1e100) holds the unconstrained minimizer of ||x - c||^2: x = c
    c = np.array([1.0, -2.0, 3.0])
    for bound in (1e6, 1e50, MAX_DATA_MAGNITUDE):
        x = _x()
        prob = fm.Problem(fm.Minimize(fm.sum_squares(x - c)), [fm.Box(x, -bound, bound)])
        prob.solve()
        assert prob.status == "optimal"
        np.testing.assert_allclose(x.value, c, atol=1e-6)
    # a linear objective goes to the corner: min sum(x) over [-b, b]^3 is -3 b
    x = _x()
    prob = fm.Problem(fm.Minimize(fm.sum(x)), [fm.Box(x, -MAX_DATA_MAGNITUDE, MAX_DATA_MAGNITUDE)])
    assert prob.solve() == pytest.approx(-3 * MAX_DATA_MAGNITUDE, rel=1e-12)
