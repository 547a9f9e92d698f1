"""The implied domain of ``fm.smooth`` atoms (CVXPY's DCP domain: ``cp.power(x, 1.5)`` implies ``x >= 0``).

``z**1.5 + z`` on the box [-1, 1] has its optimum 0 at z = 0, on the boundary of the formula's domain. The
FW gap was measured over the whole box, whose vertex -1 lies outside the domain, so the solve ended
max_iter at the right point. The compiler now adds the domain (found by SymPy) as bounds or rows.
"""
import warnings

import numpy as np
import pytest
import sympy as sp

import fwmodel as fm
from fwmodel.errors import ModelError
from fwmodel.expressions.sympy_atom import implied_domain_constraints

cp = pytest.importorskip("cvxpy")

z = sp.Symbol("z")


def _quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SymPy cannot prove z**1.5 convex on the whole line)
        return build()


def test_power_on_a_box_that_leaves_its_domain_ends_optimal():
    n = 4
    x = fm.Variable(n)
    prob = _quiet(lambda: fm.Problem(fm.Minimize(fm.sum(fm.smooth(z ** sp.Rational(3, 2) + z, {z: x}))),
                                     [x >= -1, x <= 1]))
    value = prob.solve(max_iter=2000)
    xc = cp.Variable(n)
    ref = cp.Problem(cp.Minimize(cp.sum(cp.power(xc, 1.5) + xc)), [xc >= -1, xc <= 1])
    ref.solve(solver="CLARABEL")
    assert prob.status == "optimal", prob.stats.message
    assert value == pytest.approx(ref.value, abs=1e-6)
    np.testing.assert_allclose(x.value, xc.value, atol=1e-6)


def test_domain_on_an_affine_argument():
    """z = x0 - x1 on [-1, 1]^2 leaves z's domain [0, oo): a row would hold only in the limit (the objective is
    evaluated at points of the sets), so the compiler says to tie z to a variable with bounds; written so, the
    solve is CVXPY's (the optimum has x0 = x1, z = 0 on the domain's edge). Where the sets keep the argument
    in the domain (x >= 0, z = x0 + x1) nothing is added: no row."""
    w = np.array([-0.5, 0.5])
    x = fm.Variable(2)
    power = z ** sp.Rational(3, 2)
    prob = _quiet(lambda: fm.Problem(fm.Minimize(fm.smooth(power + z, {z: x[0] - x[1]}) + fm.sum_squares(x - w)),
                                     [x >= -1, x <= 1]))
    with pytest.raises(ModelError, match=r"real only for z in \[0, oo\).*t == var\d+\[0\] - var\d+\[1\]"):
        prob.solve()
    t = fm.Variable()
    tied = _quiet(lambda: fm.Problem(fm.Minimize(fm.smooth(power + z, {z: t}) + fm.sum_squares(x - w)),
                                     [x >= -1, x <= 1, t == x[0] - x[1], t >= 0, t <= 2]))
    value = tied.solve(tol=1e-8, max_iter=5000)
    xc = cp.Variable(2)
    ref = cp.Problem(cp.Minimize(cp.sum_squares(xc - w)), [xc >= -1, xc <= 1, xc[0] - xc[1] >= 0])
    ref.solve(solver="CLARABEL")  # (the power term is 0 at the optimum, where z = 0)
    assert tied.status == "optimal", tied.stats.message
    assert value == pytest.approx(ref.value, abs=1e-4)
    kept = _quiet(lambda: fm.Problem(fm.Minimize(fm.smooth(power - z, {z: x[0] + x[1]}) + fm.sum_squares(x - w)),
                                     [x >= 0, x <= 1]))
    kept.solve()
    assert kept.status == "optimal" and kept.compile().operator.shape[0] == 0


def test_the_domains_found():
    """Closed forms: the closure of where each formula is real; none for formulas real on the whole line,
    or real on two half lines (1 / z); one bound per finite end."""
    x = fm.Variable(3)
    cases = [(z ** sp.Rational(3, 2), (0.0, np.inf)), (sp.sqrt(z), (0.0, np.inf)), (-sp.log(z), (0.0, np.inf)),
             (-sp.log(1 - z ** 2), (-1.0, 1.0)), (sp.log(1 + sp.exp(z)), None), (sp.sqrt(1 + z ** 2), None),
             (sp.exp(z), None), (1 / z, None)]
    for formula, expected in cases:
        atom = _quiet(lambda: fm.smooth(formula, {z: x}))
        assert atom._an.domains == (expected,), formula
        ends = 0 if expected is None else int(np.isfinite(expected[0])) + int(np.isfinite(expected[1]))
        assert len(implied_domain_constraints(fm.sum(atom))) == ends


def test_a_domain_on_an_argument_that_is_not_affine_is_named():
    t = sp.Symbol("t", positive=True)
    x = fm.Variable(3)
    atom = fm.smooth(-sp.log(t), {t: 2 - fm.sum_squares(x)})  # convex: -log nonincreasing of a concave argument
    prob = fm.Problem(fm.Minimize(atom), [x >= -1, x <= 1])
    with pytest.raises(ModelError, match=r"real only for t in \[0, oo\).*not affine"):
        prob.solve()
