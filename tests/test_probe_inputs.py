"""Probes: bad or unusual inputs get a clear error or a correct answer.

Each probe in ``REFUSED`` builds something malformed -- data, shapes,
expressions, sets, models, solve options, data-set and demo arguments -- and
must raise the given exception type with a message that names the offending
thing (the regular expression). Each probe in ``ANSWERED`` builds an unusual
but valid model -- degenerate radii, one-entry variables, constants in the
objective, units from 1e-6 to 1e6, interrupts -- and must solve it to the
answer of an independent reference: a closed form or CVXPY + Clarabel.
``EXPRESSIONS`` are unusual indexing, stacking and broadcasting, whose values
must equal NumPy's on the solved point.

Classes covered: non-finite, complex and non-numeric data; empty and
malformed shapes, out-of-range indices; non-convex, non-smooth and
non-scalar objectives, SymPy atoms (strings, missing symbols, kinks,
pickling); set data (signs, NaN, infinities, strings, booleans, arrays,
magnitudes that overflow, shapes, kinds, bands); user sets whose oracle
returns the wrong shape, NaN or nothing; malformed constraint lists,
variables in no set, constraints on data alone, read-only problems;
constraints as CVXPY writes them (norm bounds, one-sided and crossed bounds,
variable attributes, linear inequalities, Parameter radii);
Parameters (missing values, shapes, NaN, declared and undeclared signs);
solve options (types, signs, NaN, unknown names); callbacks that raise,
stop or press Ctrl-C; warm starts; degenerate radii, one-entry variables,
units from 1e-6 to 1e6; factor graphs and MAP inference options; the
paper's data set, its certified reference and the demo's command line.
"""
import math
import pickle

import numpy as np
import pytest

import fwmodel as fm
from fwmodel.datasets import sparse_low_rank_covariance
from fwmodel.experiments import certified_reference

cp = pytest.importorskip("cvxpy")

C3 = np.array([1.0, 2.0, 3.0])


def x3(name="x"):
    return fm.Variable(3, name=name)


def least_squares(constraints_of, target=C3, **solve_options):
    """Solve min ||x - target||^2 over ``constraints_of(x)`` (x has target's shape)."""
    x = fm.Variable(getattr(target, "shape", np.shape(target)), name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - target)), constraints_of(x))
    prob.solve(**solve_options)
    return prob, x, target


def solve_with(**options):
    return least_squares(lambda x: [fm.L1Ball(x, 1.0)], **options)


class NaNOracle(fm.ConvexSet):
    def lmo(self, direction):
        return np.full(self.shape, np.nan)


class WrongShapeOracle(fm.ConvexSet):
    def lmo(self, direction):
        return np.zeros(self.size + 1)


class NoOracle(fm.ConvexSet):
    pass


def _demo(*argv):
    from fwmodel.__main__ import main

    return main(["demo", *argv])


def _stop_at(iteration, how):
    def callback(state):
        if state.iteration >= iteration:
            if how == "ctrl-c":
                raise KeyboardInterrupt
            return False
        return None

    return callback


# --------------------------------------------------------------- refused
E, V = fm.ModelError, ValueError
REFUSED = [
    # data: constants that are not finite real numbers
    ("nan-constant", lambda: fm.sum_squares(x3() - np.array([np.nan, 0, 0])), E, r"NaN or infinite"),
    ("inf-constant", lambda: x3() + np.array([np.inf, 0, 0]), E, r"NaN or infinite"),
    ("complex-constant", lambda: x3() - np.array([1j, 0, 0]), E, r"complex"),
    ("nan-matrix", lambda: np.full((2, 3), np.nan) @ x3(), E, r"NaN or infinite"),
    ("nan-quad-form", lambda: fm.quad_form(x3(), np.full((3, 3), np.nan)), E, r"NaN or infinite"),
    ("string-operand", lambda: x3() + "a", TypeError, r"str"),
    # shapes and indexing
    ("variable-negative-shape", lambda: fm.Variable(-1), E, r"negative dimension"),
    ("variable-negative-tuple", lambda: fm.Variable((2, -1)), E, r"negative dimension"),
    ("variable-float-shape", lambda: fm.Variable(2.5), E, r"shape must be an int.*2\.5"),
    ("variable-string-shape", lambda: fm.Variable("a"), E, r"shape must be an int.*'a'"),
    ("broadcast-mismatch", lambda: x3("x") + fm.Variable((3, 4), name="X"), E, r"x \(shape \(3,\)\).*X"),
    ("index-out-of-range", lambda: x3("x")[5], IndexError, r"x\[5\].*size 3"),
    ("index-float", lambda: x3("x")[1.5], IndexError, r"x\[.*1\.5"),
    ("index-string", lambda: x3("x")["a"], IndexError, r"'a'"),
    ("reshape-size", lambda: fm.reshape(fm.Variable((3, 4), name="X"), (5,), order="C"), E, r"reshape X .*\(5,\)"),
    ("vstack-mismatch", lambda: fm.vstack([x3(), fm.Variable((3, 4))]), E, r"vstack: shapes"),
    ("hstack-empty", lambda: fm.hstack([]), E, r"hstack: needs at least one"),
    ("sum-axis", lambda: fm.sum(fm.Variable((3, 4), name="X"), axis=3), E, r"sum\(X\): axis 3"),
    ("trace-vector", lambda: fm.trace(x3("x")), E, r"trace\(x\).*2-D"),
    # expressions: not convex, not smooth, not scalar
    ("product-of-variables", lambda: x3("x") * x3("y"), E, r"x \* y.*both sides"),
    ("matmul-of-variables", lambda: fm.Variable((3, 3), name="X") @ x3("y"), E, r"X @ y"),
    ("divide-by-variable", lambda: x3("x") / x3("y"), E, r"x / y.*division"),
    ("divide-by-zero", lambda: x3("x") / 0, E, r"division by zero"),
    ("inner-of-variables", lambda: fm.inner(x3("x"), x3("y")), E, r"both sides depend"),
    ("inner-sizes", lambda: fm.inner(x3("x"), np.ones(4)), E, r"sizes differ"),
    ("abs-in-objective", lambda: fm.Minimize(fm.sum(fm.abs(x3()))), E, r"abs\(x\).*L1Ball"),
    ("norm1-in-objective", lambda: fm.Minimize(fm.norm1(x3())), E, r"norm1\(x\).*L1Ball"),
    ("max-in-objective", lambda: fm.Minimize(fm.max(x3())), E, r"max\(x\).*log_sum_exp"),
    ("vector-objective", lambda: fm.Minimize(x3("x")), E, r"scalar.*x has shape \(3,\)"),
    ("maximize-convex", lambda: fm.Problem(fm.Maximize(fm.sum_squares(x3())), [fm.L1Ball(x3())]).solve(), E,
     r"Maximize\(sum_squares\(x\)\).*convex"),
    ("minimize-concave", lambda: fm.Problem(fm.Minimize(-fm.sum_squares(x3())), []).solve(), E, r"concave"),
    ("quad-form-not-psd", lambda: fm.Problem(fm.Minimize(fm.quad_form(x3(), -np.eye(3))), []).solve(), E,
     r"quad_form.*concave"),
    ("quad-form-asymmetric", lambda: fm.quad_form(x3(), np.triu(np.ones((3, 3)))), E, r"P must be symmetric"),
    ("quad-form-shape", lambda: fm.quad_form(x3(), np.eye(4)), E, r"P must have shape \(3, 3\)"),
    ("huber-negative-M", lambda: fm.huber(x3(), M=-1), E, r"huber: M must be a positive"),
    ("huber-nan-M", lambda: fm.huber(x3(), M=np.nan), E, r"huber: M"),
    ("huber-string-M", lambda: fm.huber(x3(), M="a"), E, r"huber: M"),
    ("log-sum-exp-axis", lambda: fm.log_sum_exp(x3("x"), axis=2), E, r"log_sum_exp\(x\): axis 2"),
    ("smooth-string", lambda: fm.smooth("a**2", {}), E, r"SymPy expression.*string"),
    ("smooth-missing-symbol", lambda: _smooth_missing(), E, r"symbol\(s\) b are not in the mapping"),
    ("smooth-kink", lambda: _smooth_abs(), E, r"Abs\(a\) is not differentiable"),
    ("smooth-nonconvex", lambda: _smooth_sin(), E, r"sin\(a\).*neither convex nor concave"),
    # sets: bad radii, bounds, shapes, kinds
    ("l1-negative-radius", lambda: fm.L1Ball(x3(), -1), V, r"L1Ball: radius"),
    ("l1-nan-radius", lambda: fm.L1Ball(x3(), np.nan), V, r"L1Ball: radius"),
    ("l1-inf-radius", lambda: fm.L1Ball(x3(), np.inf), V, r"L1Ball: radius"),
    ("l1-array-radius", lambda: fm.L1Ball(x3(), np.ones(3)), V, r"L1Ball: radius must be a real number"),
    ("l1-string-radius", lambda: fm.L1Ball(x3(), "1"), E, r"L1Ball: radius must be a real number, got '1'"),
    ("l1-bool-radius", lambda: fm.L1Ball(x3(), True), E, r"L1Ball: radius must be a real number, got True"),
    ("box-overflowing-bounds", lambda: fm.Box(x3(), -1e300, 1e300), E, r"Box: lower = -1e\+300 is too large"),
    ("l2-negative-radius", lambda: fm.L2Ball(x3(), -1), V, r"L2Ball: radius"),
    ("linf-negative-radius", lambda: fm.LinfBall(x3(), -1), V, r"LinfBall: radius"),
    ("trace-negative-radius", lambda: fm.TraceNormBall(fm.Variable((2, 2)), -1), V, r"TraceNormBall: radius"),
    ("trace-on-vector", lambda: fm.TraceNormBall(x3("x"), 1), E, r"TraceNormBall.*\(3,\) for x"),
    ("box-lower-above-upper", lambda: fm.Box(x3(), 1, 0), V, r"Box: lower must be <= upper"),
    ("box-nan-bound", lambda: fm.Box(x3(), np.nan, 1), V, r"Box: lower must be a number \(not NaN\)"),
    ("box-infinite-bound", lambda: fm.Box(x3(), -np.inf, 1), V, r"Box: lower must be finite"),
    ("box-bound-shape", lambda: fm.Box(x3(), np.zeros(2), 1), V, r"Box: lower has shape \(2,\)"),
    ("simplex-negative-total", lambda: fm.Simplex(x3(), total=-1), V, r"Simplex: total"),
    ("simplex-axis-range", lambda: fm.Simplex(fm.Variable((3, 4)), axis=5), V, r"Simplex: axis 5"),
    ("simplex-axis-type", lambda: fm.Simplex(fm.Variable((3, 4)), axis="a"), V, r"Simplex: axis must be an int"),
    ("ksparse-k-zero", lambda: fm.KSparsePolytope(x3(), 0, 1), V, r"KSparsePolytope: k"),
    ("ksparse-k-float", lambda: fm.KSparsePolytope(x3(), 1.5, 1), V, r"KSparsePolytope: k"),
    ("birkhoff-nonsquare", lambda: fm.BirkhoffPolytope(fm.Variable((3, 4), name="X")), E,
     r"BirkhoffPolytope.*square.*X"),
    ("alignment-kind", lambda: fm.AlignmentPolytope(fm.Variable((3, 4)), kind="bad"), V, r"kind must be"),
    ("alignment-band", lambda: fm.AlignmentPolytope(fm.Variable((3, 4)), band=-1), V, r"band must be"),
    ("alignment-band-nan", lambda: fm.AlignmentPolytope(fm.Variable((3, 4)), band=np.nan), V, r"band must be"),
    ("alignment-band-too-narrow", lambda: fm.AlignmentPolytope(fm.Variable((3, 5)), kind="path", band=0), V,
     r"band=0 is too narrow"),
    ("variable-no-entries", lambda: fm.Variable(0, name="z"), E, r"'z' of shape \(0,\) has no entries"),
    ("variable-empty-axis", lambda: fm.Variable((2, 0), name="Z"), E, r"'Z' of shape \(2, 0\) has no entries"),
    ("alignment-vector", lambda: fm.AlignmentPolytope(x3("x")), E, r"AlignmentPolytope.*x has shape"),
    ("set-on-nonaffine", lambda: fm.L1Ball(fm.sum_squares(x3()), 1), E, r"L1Ball.*must be affine"),
    # constraints as CVXPY writes them
    ("one-sided-bound-alone", lambda: least_squares(lambda x: [x >= 0]), E, r"leaves x .*unbounded above"),
    ("upper-bound-alone", lambda: least_squares(lambda x: [x <= 0.5]), E, r"leaves x .*unbounded below"),
    ("norm-lower-bound", lambda: least_squares(lambda x: [fm.norm1(x) >= 1, fm.Box(x, -1, 1)]), E,
     r"norm1\(x\) >= 1.*not convex"),
    ("norm-without-a-set", lambda: least_squares(lambda x: [fm.norm(x, 3) <= 1]), E, r"norm\(x, 3\).*no set"),
    ("smooth-function-bounded", lambda: least_squares(lambda x: [fm.log_sum_exp(x) <= 1]), E,
     r"log_sum_exp\(x\) <= 1.*must be affine"),
    ("norm-bounded-by-variable", lambda: least_squares(lambda x: [fm.norm1(x) <= fm.Variable(name="t")]), E,
     r"norm1\(x\) <= t.*must be data"),
    ("norm-negative-bound", lambda: least_squares(lambda x: [fm.norm1(x) <= -1]), E, r"norm1\(x\) <= -1.*nonnegative"),
    ("norm-nan-bound", lambda: fm.norm1(x3()) <= np.nan, E, r"NaN or infinite"),
    ("variable-bounds-crossed", lambda: fm.Variable(3, name="x", bounds=[1, 0]), E, r"'x'.*lower > upper"),
    ("variable-bounds-nan", lambda: fm.Variable(3, name="x", bounds=[np.nan, 0]), E, r"'x'.*lower bound contains NaN"),
    ("variable-nonneg-and-nonpos", lambda: fm.Variable(3, name="x", nonneg=True, nonpos=True), E,
     r"'x'.*nonneg=True and nonpos=True"),
    ("symmetric-nonsquare", lambda: fm.Variable((2, 3), name="S", symmetric=True), E, r"'S'.*symmetric=True needs"),
    ("psd-nonsquare", lambda: fm.Variable((2, 3), name="S", PSD=True), E, r"'S'.*PSD=True needs"),
    # (a Parameter radius that is negative ends the solve "infeasible": tests/test_negative_parameter_sets.py)
    # user-defined sets with broken oracles
    ("user-lmo-wrong-shape", lambda: least_squares(lambda x: [WrongShapeOracle(x)]), E,
     r"WrongShapeOracle.lmo returned shape"),
    ("user-lmo-nan", lambda: least_squares(lambda x: [NaNOracle(x)]), E, r"NaNOracle.lmo returned NaN"),
    ("user-lmo-missing", lambda: least_squares(lambda x: [NoOracle(x)]), NotImplementedError,
     r"NoOracle must implement lmo"),
    ("check-lmo-not-a-set", lambda: fm.check_lmo(3), E, r"check_lmo: expected a ConvexSet"),
    # models
    ("constraint-number", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x3())), [3]).solve(), E,
     r"constraint #0 \(3\)"),
    ("constraint-none", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x3())), [None]).solve(), E,
     r"constraint #0 \(None\)"),
    ("constraint-python-bool", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x3())), [True]).solve(), E,
     r"constraint #0 is the Python bool"),
    ("objective-not-wrapped", lambda: fm.Problem(fm.sum_squares(x3()), []), E, r"fm.Minimize\(...\)"),
    ("variable-in-no-set", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x3("x")))).solve(), E,
     r"variable x .*not in any bounded set"),
    ("equality-shapes", lambda: x3("x") == np.ones(4), E, r"x == .*do not broadcast"),
    ("parameter-without-value", lambda: least_squares(lambda x: [fm.L1Ball(x)], target=fm.Parameter(3, name="p")),
     E, r"parameter p has no value"),
    ("parameter-value-shape", lambda: setattr(fm.Parameter(3, name="p"), "value", np.ones(4)), V,
     r"'p'.*shape \(4,\)"),
    ("parameter-value-nan", lambda: setattr(fm.Parameter(3, name="p"), "value", [np.nan, 1, 1]), V,
     r"'p'.*NaN"),
    ("unsigned-parameter-scales-convex", lambda: _weighted(fm.Parameter(name="w", value=2.0)), E,
     r"sign of parameter w"),
    ("parameter-minus-one-has-no-sign", lambda: _weighted(fm.Parameter(name="P", value=2.0, nonneg=True) - 1), E,
     r"\(P - 1\) \* sum_squares.*unknown"),
    ("nonpositive-parameter-scales-convex", lambda: _weighted(fm.Parameter(name="Q", value=-1.0, nonpos=True)), E,
     r"Q \* sum_squares.*concave"),
    ("mixed-sign-product", lambda: _weighted(fm.Parameter(name="P", value=1.0, nonneg=True)
                                             * fm.Parameter(name="Q", value=-1.0, nonpos=True)), E, r"P \* Q.*concave"),
    ("problem-objective-read-only", lambda: setattr(solve_with()[0], "objective", fm.Minimize(0)), AttributeError,
     r"Problem.objective is read-only"),
    ("parameter-nonneg-negative", lambda: setattr(fm.Parameter(name="p", nonneg=True), "value", -1.0), V,
     r"'p'.*declared nonneg"),
    ("history-unknown-column", lambda: solve_with()[0].history["bogus"], KeyError,
     r"no column 'bogus'.*objective"),
    # solve options
    ("max-iter-negative", lambda: solve_with(max_iter=-1), V, r"max_iter must be a nonnegative integer"),
    ("max-iter-float", lambda: solve_with(max_iter=2.5), V, r"max_iter"),
    ("max-iter-bool", lambda: solve_with(max_iter=True), V, r"max_iter.*True"),
    ("tol-zero", lambda: solve_with(tol=0), V, r"tol must be a positive number"),
    ("tol-nan", lambda: solve_with(tol=np.nan), V, r"tol must be a positive number"),
    ("feas-tol-negative", lambda: solve_with(feas_tol=-1), V, r"feas_tol must be a positive number"),
    ("time-limit-zero", lambda: solve_with(time_limit=0), V, r"time_limit must be a positive"),
    ("time-limit-nan", lambda: solve_with(time_limit=np.nan), V, r"time_limit"),
    ("lam-zero", lambda: solve_with(lam=0), V, r"lam must be a positive"),
    ("eta-negative", lambda: solve_with(eta=-1), V, r"eta must be"),
    ("eta-unknown-schedule", lambda: solve_with(eta="bogus"), V, r"eta='bogus'.*theorem2"),
    ("step-unknown", lambda: solve_with(step="bogus"), V, r"step='bogus'.*pairwise"),
    ("line-search-unknown", lambda: solve_with(line_search="bogus"), V, r"line_search='bogus'"),
    ("verbose-string", lambda: solve_with(verbose="no"), V, r"verbose must be True or False.*'no'"),
    ("seed-string", lambda: solve_with(seed="abc"), V, r"seed must be.*'abc'"),
    ("seed-negative", lambda: solve_with(seed=-1), V, r"seed must be"),
    ("callback-not-callable", lambda: solve_with(callback=3), V, r"callback must be a callable"),
    ("warm-start-string", lambda: solve_with(warm_start="yes"), V, r"warm_start must be True or False"),
    ("projection-unknown", lambda: solve_with(projection="maybe"), V, r"projection='maybe'"),
    ("unknown-option", lambda: solve_with(bogus=1), V, r"unknown solve option\(s\) 'bogus'"),
    ("callback-error-propagates", lambda: solve_with(callback=_raise_runtime_error), RuntimeError, r"from the callback"),
    # factor graphs
    ("lmp-empty-graph", lambda: fm.LocalMarginalPolytope(_nx().Graph(), 2), E, r"no nodes"),
    ("lmp-one-state", lambda: fm.LocalMarginalPolytope(_nx().path_graph(3), 1), E, r"n_states must be at least 2"),
    ("lmp-float-states", lambda: fm.LocalMarginalPolytope(_nx().path_graph(3), 2.5), E, r"n_states.*2\.5"),
    ("lmp-not-a-graph", lambda: fm.LocalMarginalPolytope([1, 2, 3], 2), E, r"networkx graph, got list"),
    ("lmp-self-loop", lambda: fm.LocalMarginalPolytope(_nx().Graph([(0, 0), (0, 1)]), 2), E, r"self-loop"),
    ("lmp-directed", lambda: fm.LocalMarginalPolytope(_nx().DiGraph([(0, 1)]), 2), E, r"directed"),
    ("lmp-multigraph", lambda: fm.LocalMarginalPolytope(_nx().MultiGraph([(0, 1), (0, 1)]), 2), E, r"multigraph"),
    ("map-node-shape", lambda: fm.map_inference(_nx().path_graph(4), np.zeros((3, 3)), np.eye(3)), E,
     r"theta_nodes has shape \(3, 3\), expected \(4, 3\)"),
    ("map-edge-shape", lambda: fm.map_inference(_nx().path_graph(4), np.zeros((4, 3)), np.zeros((2, 3, 3))), E,
     r"theta_edges has shape \(2, 3, 3\)"),
    ("map-nan-scores", lambda: fm.map_inference(_nx().path_graph(4), np.full((4, 3), np.nan), np.eye(3)), E,
     r"must be finite"),
    ("map-negative-gap-tol", lambda: fm.map_inference(_nx().path_graph(3), np.zeros((3, 2)), np.eye(2), gap_tol=-1),
     E, r"gap_tol"),
    # the paper's data set and its reference
    ("data-too-small", lambda: sparse_low_rank_covariance(4), V, r"d >= n_blocks"),
    ("data-float-size", lambda: sparse_low_rank_covariance(5.5), V, r"d must be an integer"),
    ("data-string-size", lambda: sparse_low_rank_covariance("10"), V, r"d must be an integer"),
    ("data-nan-noise", lambda: sparse_low_rank_covariance(10, noise=np.nan), V, r"noise"),
    ("data-threshold-one", lambda: sparse_low_rank_covariance(10, threshold=1.0), V, r"threshold"),
    ("data-observed-zero", lambda: sparse_low_rank_covariance(10, observed=0.0), V, r"observed"),
    ("data-string-seed", lambda: sparse_low_rank_covariance(10, seed="a"), V, r"seed"),
    ("reference-gap-zero", lambda: certified_reference(sparse_low_rank_covariance(10), gap_tol=0), V, r"gap_tol"),
]


def _weighted(weight):
    x = x3()
    return fm.Problem(fm.Minimize(weight * fm.sum_squares(x)), [fm.L1Ball(x)])


def _nx():
    import networkx

    return networkx


def _smooth_missing():
    import sympy

    a, b = sympy.symbols("a b")
    return fm.smooth(a + b, {a: fm.sum(x3())})


def _smooth_abs():
    import sympy

    a = sympy.Symbol("a")
    return fm.smooth(sympy.Abs(a), {a: fm.sum(x3())})


def _smooth_sin():
    import sympy

    a = sympy.Symbol("a")
    x = x3()
    return fm.Problem(fm.Minimize(fm.smooth(sympy.sin(a), {a: fm.sum(x)})), [fm.L1Ball(x)]).solve()


def _raise_runtime_error(state):
    raise RuntimeError("from the callback")


# the demo's command line: argparse exits with status 2 and names the option (checked below)
DEMO_REFUSED = [
    (["--size", "0"], "--size"), (["--size", "ten"], "--size"), (["--seconds", "-1"], "--seconds"),
    (["--seconds", "nan"], "--seconds"), (["--threshold", "1.5"], "--threshold"), (["--observed", "0"], "--observed"),
    (["--reference-gap", "2"], "--reference-gap"), (["--seed", "-1"], "--seed"),
    (["--output", "no/such/folder/x.png"], "--output"),
]


@pytest.mark.parametrize("thunk, exc, match", [pytest.param(t, e, m, id=i) for i, t, e, m in REFUSED])
def test_refused_with_a_message_naming_the_problem(thunk, exc, match):
    with pytest.raises(exc, match=match):
        thunk()


@pytest.mark.parametrize("argv, option", DEMO_REFUSED, ids=[" ".join(a) for a, _ in DEMO_REFUSED])
def test_demo_arguments_refused_by_name(argv, option, capsys):
    with pytest.raises(SystemExit) as info:
        _demo(*argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "Traceback" not in err


# -------------------------------------------------------------- answered
def proj_simplex(v, total=1.0):
    """Euclidean projection onto {x >= 0, sum x = total} (sorting; Held et al. 1974)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    rho = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def proj_l1(v, radius):
    if np.abs(v).sum() <= radius:
        return v.copy()
    return np.sign(v) * proj_simplex(np.abs(v), radius)


def clarabel(objective_of, constraints_of, shape=(3,)):
    x = cp.Variable(shape)
    prob = cp.Problem(cp.Minimize(objective_of(x)), constraints_of(x))
    prob.solve(solver="CLARABEL")
    return prob.value, x.value


RNG = np.random.default_rng(11)
A_LS, B_LS = RNG.standard_normal((8, 5)), RNG.standard_normal(8)


def answer_lasso(scale):
    """min s ||A x - s b||^2 over ||x||_1 <= s: the unit-scale answer times s^3 (CVXPY at unit scale)."""
    f_unit, x_unit = clarabel(lambda x: cp.sum_squares(A_LS @ x - B_LS), lambda x: [cp.norm1(x) <= 1.0], (5,))
    x = fm.Variable(5, name="x")
    prob = fm.Problem(fm.Minimize(scale * fm.sum_squares(A_LS @ x - scale * B_LS)), [fm.L1Ball(x, scale)])
    value = prob.solve()
    return prob.status, value / scale ** 3, f_unit, x.value / scale, x_unit


ANSWERED = [
    # (id, thunk -> (status, value, reference value, point, reference point))
    ("l1-radius-zero", lambda: _point(least_squares(lambda x: [fm.L1Ball(x, 0.0)]), np.zeros(3))),
    ("l1-inactive", lambda: _point(least_squares(lambda x: [fm.L1Ball(x, 100.0)]), C3)),
    ("l1-active", lambda: _point(least_squares(lambda x: [fm.L1Ball(x, 1.0)]), proj_l1(C3, 1.0))),
    ("l2-ball", lambda: _point(least_squares(lambda x: [fm.L2Ball(x, 1.5)]), C3 * 1.5 / np.linalg.norm(C3))),
    ("linf-ball", lambda: _point(least_squares(lambda x: [fm.LinfBall(x, 0.5)]), np.full(3, 0.5))),
    ("box-degenerate", lambda: _point(least_squares(lambda x: [fm.Box(x, 0.7, 0.7)]), np.full(3, 0.7))),
    ("box-per-entry", lambda: _point(least_squares(lambda x: [fm.Box(x, [-1, 0, 0], [0, 1, 5])]), [0, 1, 3])),
    ("simplex-total-zero", lambda: _point(least_squares(lambda x: [fm.Simplex(x, total=0.0)]), np.zeros(3))),
    ("simplex-projection", lambda: _point(least_squares(lambda x: [fm.Simplex(x, total=2.0)]),
                                          proj_simplex(C3, 2.0))),
    ("simplex-inequality-inactive",
     lambda: _point(least_squares(lambda x: [fm.Simplex(x, total=10.0, equality=False)]), C3)),
    ("one-entry-variable", lambda: _point(least_squares(lambda x: [fm.L1Ball(x, 0.25)], target=np.array([2.0])),
                                          [0.25])),
    ("scalar-variable", lambda: _point(least_squares(lambda x: [fm.Box(x, -1, 1)], target=np.array(-3.0)), -1.0)),
    ("matrix-trace-psd", lambda: _trace_psd()),
    ("constant-objective", lambda: _constant_objective()),
    ("linear-objective", lambda: _linear_objective()),
    ("maximize-concave", lambda: _maximize()),
    ("two-sets-vs-clarabel", lambda: _two_sets()),
    ("equality-vs-clarabel", lambda: _equality()),
    ("infeasible-equality", lambda: _infeasible()),
    ("units-1e-6", lambda: answer_lasso(1e-6)),
    ("units-1e-3", lambda: answer_lasso(1e-3)),
    ("units-1e3", lambda: answer_lasso(1e3)),
    ("units-1e6", lambda: answer_lasso(1e6)),
    ("callback-false-interrupts", lambda: _interrupted("false")),
    ("ctrl-c-interrupts", lambda: _interrupted("ctrl-c")),
    ("max-iter-zero", lambda: _max_iter_zero()),
    ("warm-start-resumes", lambda: _warm_start()),
    ("pickled-problem-solves", lambda: _pickled()),
    ("pickled-sympy-atom-solves", lambda: _pickled_smooth()),
    ("declared-sign-parameter", lambda: _signed_parameter()),
    ("parameter-plus-one", lambda: _parameter_weight(lambda: fm.Parameter(value=2.0, nonneg=True) + 1, 3.0)),
    ("negated-nonpositive-parameter", lambda: _parameter_weight(lambda: -fm.Parameter(value=-2.0, nonpos=True), 2.0)),
    ("squared-parameter", lambda: _parameter_weight(lambda: (lambda q: q * q)(fm.Parameter(value=-2.0, nonpos=True)),
                                                    4.0)),
    ("true-constant-constraint", lambda: _constant_constraint(5.0)),
    ("false-constant-constraint", lambda: _constant_constraint(0.5)),
    ("constraints-are-a-copy", lambda: _constraints_copy()),
    ("cvxpy-norm1-bound", lambda: _point(least_squares(lambda x: [fm.norm1(x) <= 1]), proj_l1(C3, 1.0))),
    ("cvxpy-reversed-norm-inf", lambda: _point(least_squares(lambda x: [1 >= fm.norm_inf(x)]), np.ones(3))),
    ("cvxpy-norm2-bound", lambda: _point(least_squares(lambda x: [fm.norm(x, 2) <= 1.5]),
                                         C3 * 1.5 / np.linalg.norm(C3))),
    ("cvxpy-abs-bound", lambda: _point(least_squares(lambda x: [fm.abs(x) <= 0.5]), np.full(3, 0.5))),
    ("cvxpy-simplex", lambda: _point(least_squares(lambda x: [x >= 0, fm.sum(x) == 2]), proj_simplex(C3, 2.0))),
    ("cvxpy-nonneg-attribute", lambda: _nonneg_simplex()),
    ("cvxpy-bounds-attribute", lambda: _bounds_attribute()),
    ("cvxpy-linear-inequality", lambda: _linear_inequality()),
    ("cvxpy-parameter-radius", lambda: _parameter_radius()),
]


def _point(result, reference_point):
    """A least-squares probe against its closed-form minimizer (and that point's objective)."""
    prob, x, target = result
    reference_point = np.broadcast_to(np.asarray(reference_point, dtype=float), np.shape(target))
    return prob.status, prob.value, float(np.sum((reference_point - target) ** 2)), x.value, reference_point


def _trace_psd():
    rng = np.random.default_rng(2)
    B = rng.standard_normal((4, 4))
    C = B + B.T
    X = fm.Variable((4, 4), name="X")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - C)), [fm.TraceNormBall(X, 2.0, psd=True)])
    prob.solve()
    w, V = np.linalg.eigh(C)
    w = np.maximum(w, 0.0)
    if w.sum() > 2.0:
        w = proj_simplex(w, 2.0)
    reference = (V * w) @ V.T
    return prob.status, prob.value, float(np.sum((reference - C) ** 2)), X.value, reference


def _constant_objective():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum(np.ones(3)) + 0 * fm.sum(x)), [fm.L1Ball(x)])
    prob.solve()
    return prob.status, prob.value, 3.0, None, None


def _linear_objective():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C3, x))), [fm.L1Ball(x, 2.0)])
    prob.solve()
    return prob.status, prob.value, -2.0 * 3.0, x.value, [0.0, 0.0, -2.0]


def _maximize():
    x = x3()
    prob = fm.Problem(fm.Maximize(-fm.sum_squares(x - C3)), [fm.L2Ball(x, 1.5)])
    prob.solve()
    best = C3 * 1.5 / np.linalg.norm(C3)
    return prob.status, prob.value, -float(np.sum((best - C3) ** 2)), x.value, best


def _two_sets():
    x = fm.Variable(5, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A_LS @ x - B_LS)), [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3)])
    prob.solve()
    f, xs = clarabel(lambda z: cp.sum_squares(A_LS @ z - B_LS), lambda z: [cp.norm1(z) <= 1.0, cp.abs(z) <= 0.3],
                     (5,))
    return prob.status, prob.value, f, x.value, xs


def _equality():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.Box(x, -1, 1), fm.sum(x) == 0.5])
    prob.solve()
    f, xs = clarabel(lambda z: cp.sum_squares(z - C3), lambda z: [z >= -1, z <= 1, cp.sum(z) == 0.5])
    return prob.status, prob.value, f, x.value, xs


def _infeasible():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x, 1.0), fm.sum(x) == 5.0])
    prob.solve(max_iter=5000)
    return prob.status, None, None, None, None


def _interrupted(how):
    x = fm.Variable(5, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A_LS @ x - B_LS)), [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3)])
    prob.solve(callback=_stop_at(5, how))
    exact = float(np.sum((A_LS @ x.value - B_LS) ** 2))  # prob.value must be f at the returned point
    return prob.status, prob.value, exact, None, None


def _max_iter_zero():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.L1Ball(x)])
    prob.solve(max_iter=0)
    return prob.status, prob.value, float(np.sum((x.value - C3) ** 2)), None, None


def _warm_start():
    x = fm.Variable(5, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(A_LS @ x - B_LS)), [fm.L1Ball(x, 1.0), fm.Box(x, -0.3, 0.3)])
    prob.solve(max_iter=3)
    prob.solve(warm_start=True)
    f, xs = clarabel(lambda z: cp.sum_squares(A_LS @ z - B_LS), lambda z: [cp.norm1(z) <= 1.0, cp.abs(z) <= 0.3],
                     (5,))
    return prob.status, prob.value, f, x.value, xs


def _pickled():
    x = x3()
    prob = pickle.loads(pickle.dumps(fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.L1Ball(x, 1.0)])))
    prob.solve()
    return prob.status, prob.value, float(np.sum((proj_l1(C3, 1.0) - C3) ** 2)), None, None


def _pickled_smooth():
    """min s^2 + e^s with s = sum(x), ||x||_1 <= 1, through a pickle: the 1-D minimizer of g on [-1, 1]."""
    import sympy
    from scipy.optimize import minimize_scalar

    a = sympy.Symbol("a")
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.smooth(a ** 2 + sympy.exp(a), {a: fm.sum(x)})), [fm.L1Ball(x, 1.0)])
    prob = pickle.loads(pickle.dumps(prob))
    prob.solve()
    best = minimize_scalar(lambda t: t ** 2 + math.exp(t), bounds=(-1, 1), method="bounded", options={"xatol": 1e-10})
    return prob.status, prob.value, best.fun, None, None


def _signed_parameter():
    x = x3()
    weight = fm.Parameter(name="w", value=2.0, nonneg=True)
    prob = fm.Problem(fm.Minimize(weight * fm.sum_squares(x - C3)), [fm.L1Ball(x, 1.0)])
    prob.solve()
    best = proj_l1(C3, 1.0)
    return prob.status, prob.value, 2.0 * float(np.sum((best - C3) ** 2)), x.value, best


def _parameter_weight(weight_of, weight):
    """weight * min ||x - 1||^2 over ||x||_1 <= 1 (minimizer x = 1/3, value 4/3): a signed Parameter expression."""
    x = x3()
    prob = fm.Problem(fm.Minimize(weight_of() * fm.sum_squares(x - 1.0)), [fm.L1Ball(x, 1.0)])
    prob.solve()
    return prob.status, prob.value, weight * 4 / 3, x.value, np.full(3, 1 / 3)


def _constant_constraint(radius):
    """A set on data alone: ||(1, 1, 1)||_1 = 3 <= radius holds for 5 (ignored) and not for 0.5 (infeasible)."""
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.L1Ball(x, 1.0), fm.L1Ball(np.ones(3), radius)])
    prob.solve()
    if radius < 3:
        return prob.status, None, None, None, None
    return prob.status, prob.value, 3 * (2 / 3) ** 2, x.value, np.full(3, 1 / 3)


def _constraints_copy():
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.L1Ball(x, 1.0)])
    prob.constraints.append(fm.Box(x, 0.0, 0.0))  # changes a copy, not the problem
    prob.solve()
    best = proj_l1(C3, 1.0)
    return prob.status, prob.value, float(np.sum((best - C3) ** 2)), x.value, best


def _nonneg_simplex():
    x = fm.Variable(3, name="x", nonneg=True)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.sum(x) == 1])
    prob.solve()
    best = proj_simplex(C3, 1.0)
    return prob.status, prob.value, float(np.sum((best - C3) ** 2)), x.value, best


def _bounds_attribute():
    x = fm.Variable(3, name="x", bounds=[-1, 0.5])
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [])
    prob.solve()
    best = np.clip(C3, -1, 0.5)
    return prob.status, prob.value, float(np.sum((best - C3) ** 2)), x.value, best


def _linear_inequality():
    G, h = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]), np.array([1.0, 1.5])
    x = fm.Variable(3, name="x")
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.Box(x, -2, 2), G @ x <= h])
    prob.solve()
    f, xs = clarabel(lambda z: cp.sum_squares(z - C3), lambda z: [z >= -2, z <= 2, G @ z <= h])
    return prob.status, prob.value, f, x.value, xs


def _parameter_radius():
    """A Parameter radius changed between solves: the second answer is the projection onto the new ball."""
    radius = fm.Parameter(name="r", nonneg=True, value=1.0)
    x = x3()
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - C3)), [fm.norm1(x) <= radius])
    prob.solve()
    np.testing.assert_allclose(x.value, proj_l1(C3, 1.0), atol=2e-2)
    radius.value = 2.0
    prob.solve()
    best = proj_l1(C3, 2.0)
    return prob.status, prob.value, float(np.sum((best - C3) ** 2)), x.value, best


EXPECTED_STATUS = {"infeasible-equality": "infeasible", "false-constant-constraint": "infeasible", "callback-false-interrupts": "interrupted",
                   "ctrl-c-interrupts": "interrupted", "max-iter-zero": "max_iter"}


@pytest.mark.parametrize("name, thunk", [pytest.param(i, t, id=i) for i, t in ANSWERED])
def test_answered_correctly(name, thunk):
    status, value, reference_value, point, reference_point = thunk()
    assert status == EXPECTED_STATUS.get(name, "optimal"), status
    if value is not None and reference_value is not None:
        assert math.isfinite(value)
        exact = name in ("callback-false-interrupts", "ctrl-c-interrupts", "max-iter-zero")
        assert value == pytest.approx(reference_value, rel=1e-12 if exact else 1e-3, abs=1e-12 if exact else 1e-6)
    if point is not None and reference_point is not None:
        reference_point = np.asarray(reference_point, dtype=float)
        scale = max(1.0, float(np.abs(reference_point).max()))
        np.testing.assert_allclose(point, reference_point, atol=2e-2 * scale)


# ------------------------------------------- unusual expressions, checked by NumPy
_C34 = np.random.default_rng(1).standard_normal((3, 4))
_D42 = np.random.default_rng(2).standard_normal((4, 2))
EXPRESSIONS = [
    ("reversed-slice", lambda X: X[1:, ::-1], lambda X: X[1:, ::-1]),
    ("negative-index", lambda X: X[-1, -2], lambda X: X[-1, -2]),
    ("boolean-mask", lambda X: X[_C34 > 0], lambda X: X[_C34 > 0]),
    ("integer-array-index", lambda X: X[[0, 2], 1], lambda X: X[[0, 2], 1]),
    ("transpose-matmul", lambda X: X.T @ _C34, lambda X: X.T @ _C34),
    ("constant-on-the-left", lambda X: _D42.T @ X.T, lambda X: _D42.T @ X.T),
    ("reshape-c-order", lambda X: fm.reshape(X, (6, 2), order="C"), lambda X: X.reshape(6, 2)),
    ("vstack", lambda X: fm.vstack([X, 2 * X]), lambda X: np.vstack([X, 2 * X])),
    ("hstack-with-column", lambda X: fm.hstack([X, X[:, :1]]), lambda X: np.hstack([X, X[:, :1]])),
    ("sum-negative-axis", lambda X: fm.sum(X, axis=-1), lambda X: X.sum(axis=-1)),
    ("broadcast-row", lambda X: X - _C34[0], lambda X: X - _C34[0]),
    ("elementwise-division", lambda X: X / (1 + _C34 ** 2), lambda X: X / (1 + _C34 ** 2)),
    ("trace-of-product", lambda X: fm.trace(X @ _D42 @ _C34[:, :2].T), lambda X: np.trace(X @ _D42 @ _C34[:, :2].T)),
]


@pytest.mark.parametrize("build, numpy_of", [pytest.param(b, n, id=i) for i, b, n in EXPRESSIONS])
def test_expression_values_match_numpy(build, numpy_of):
    X = fm.Variable((3, 4), name="X")
    expr = build(X)
    target = np.random.default_rng(3).standard_normal((3, 4))
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - target)), [fm.Box(X, -5, 5)])
    prob.solve()
    np.testing.assert_allclose(X.value, target, atol=1e-2)  # inside the box: the target, to the default tol
    expected = numpy_of(X.value)
    assert expr.shape == np.shape(expected)
    np.testing.assert_allclose(expr.value, expected, rtol=1e-12, atol=1e-12)
