"""Randomized cross-check of plain ``prob.solve()`` defaults against CVXPY + Clarabel.

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/trust_fuzz.py --models 300
    PYTHONPATH=. ... python benchmarks/trust_fuzz.py --only 17 --verbose     # one model again

Every model is drawn from its own seed (model i uses ``default_rng(seed0 + i)``),
so a flagged model is reproduced by its number alone. A model combines, on
one or two vector variables or one matrix variable: sets (fwmodel's set
objects, or the same set written as CVXPY writes it, which the compiler
lowers), a few equality rows ``A @ x == b`` and inequality rows
``G @ x <= h`` through a feasible point, and a smooth objective (least
squares, projection, linear, logistic, quadratic form, Huber,
log-sum-exp, a Maximize); objective and data are scaled by 1e-6 or 1e6 at
random. Further families: models made infeasible on purpose, Parameters
re-solved with ``warm_start=True``, and bad input.

Each model is solved with ``prob.solve()`` (no options) and with CVXPY +
Clarabel (SCS where Clarabel fails) on the same data. Flags:

- ``a``: status "optimal" but the objective is off by more than 1e-3 of
  ``max(|f*|, S_f / 100)`` (S_f = ``prob.stats.objective_scale``, the same
  scale-free measure as ``benchmarks/zoo.py``), or the point violates the
  model's constraints (evaluated by CVXPY) by more than 1e-3 of the data
  scale;
- ``b``: a status other than "optimal" where Clarabel says optimal;
- ``c``: bad input answered by an error from deep inside NumPy (or none);
- ``d``: a model Clarabel finds infeasible that fwmodel does not call
  infeasible;
- ``s``: the model in other units (data times s, objective times s_obj)
  ends with another status than in unit scale;
- ``g``: the certificate fails: ``prob.value`` is further from Clarabel's
  optimum (on the side away from it) than ``prob.stats.suboptimality_bound``
  allows, by more than 1e-6 of ``max(|f*|, S_f / 100)`` (Clarabel's own
  accuracy), whatever the status.
"""
import argparse
import math
import sys
import time
import traceback
import warnings

import cvxpy as cp
import numpy as np

import fwmodel as fm

warnings.filterwarnings("ignore")


# ------------------------------------------------------------------ sets, both ways
def vector_set(lib, rng_choice, x, s, n):
    """One set on a vector expression, as fwmodel set objects ("fm") or as CVXPY writes it ("cp")."""
    kind, style = rng_choice
    if kind == "simplex":
        if lib == "fm" and style == "set":
            return [fm.Simplex(x, 1.0 * s)]
        mod = fm if lib == "fm" else cp
        return [x >= 0, mod.sum(x) == 1.0 * s]
    if kind == "simplex_ineq":
        if lib == "fm" and style == "set":
            return [fm.Simplex(x, 1.0 * s, equality=False)]
        mod = fm if lib == "fm" else cp
        return [x >= 0, mod.sum(x) <= 1.0 * s]
    if kind == "l1":
        if lib == "fm" and style == "set":
            return [fm.L1Ball(x, 1.0 * s)]
        return [(fm if lib == "fm" else cp).norm1(x) <= 1.0 * s]
    if kind == "l2":
        if lib == "fm" and style == "set":
            return [fm.L2Ball(x, 0.5 * s)]
        return [(fm if lib == "fm" else cp).norm(x, 2) <= 0.5 * s]
    if kind == "linf":
        if lib == "fm" and style == "set":
            return [fm.LinfBall(x, 0.3 * s)]
        return [(fm if lib == "fm" else cp).norm_inf(x) <= 0.3 * s]
    if kind == "box":
        lo, hi = -0.2 * s, 0.4 * s
        if lib == "fm" and style == "set":
            return [fm.Box(x, lo, hi)]
        return [x >= lo, x <= hi]
    if kind == "ksparse":
        k = max(1, n // 3)
        if lib == "fm":
            return [fm.KSparsePolytope(x, k, 0.4 * s)]
        return [cp.norm_inf(x) <= 0.4 * s, cp.norm1(x) <= k * 0.4 * s]
    raise ValueError(kind)


VECTOR_SETS = ["simplex", "simplex_ineq", "l1", "l2", "linf", "box", "ksparse"]


def matrix_set(lib, kind, style, X, s, shape):
    # radii 1.5x what a row-stochastic matrix needs (||X||_* >= sum(X) / sqrt(m n) = sqrt(m / n)): at radius 1
    # a (doubly) row-stochastic matrix in the ball is the single point J / n, where the sets only touch
    radius = 1.5 * s * max(1.0, math.sqrt(shape[0] / shape[1]))
    if kind == "trace":
        if lib == "fm" and style == "set":
            return [fm.TraceNormBall(X, radius)]
        return [(fm if lib == "fm" else cp).normNuc(X) <= radius]
    if kind == "psd":
        if lib == "fm":
            return [fm.TraceNormBall(X, radius, psd=True)]
        return [X >> 0, cp.trace(X) <= radius]
    if kind == "birkhoff":
        if lib == "fm":
            return [fm.BirkhoffPolytope(X)]
        return [X >= 0, cp.sum(X, axis=0) == 1, cp.sum(X, axis=1) == 1]
    if kind == "l1":
        if lib == "fm" and style == "set":
            return [fm.L1Ball(X, 2.0 * s)]
        return [(fm if lib == "fm" else cp).sum(cp.abs(X)) <= 2.0 * s] if lib == "cp" else [fm.L1Ball(X, 2.0 * s)]
    if kind == "box":
        if lib == "fm" and style == "set":
            return [fm.Box(X, -0.1 * s, 0.3 * s)]
        return [X >= -0.1 * s, X <= 0.3 * s]
    if kind == "rowsimplex":
        if lib == "fm" and style == "set":
            return [fm.Simplex(X, 1.0 * s, axis=1)]
        mod = fm if lib == "fm" else cp
        return [X >= 0, mod.sum(X, axis=1) == 1.0 * s]
    raise ValueError(kind)


# ------------------------------------------------------------------ objectives
def objective_terms(lib, kind, vars_, data, s, s_obj):
    """The objective on data of unit scale, seen at data scale ``s``: its optimum is s_obj * s**DEGREE[kind] times
    the unit model's, and its minimizer s times the unit model's."""
    mod = fm if lib == "fm" else cp
    z = vars_[0] if len(vars_) == 1 else mod.hstack(vars_)
    A, b, c, D, P = data["A"], s * data["b"], s * data["c"], data["D"] / s, data["P"]
    if kind == "ls":
        return mod.Minimize(s_obj * mod.sum_squares(A @ z - b))
    if kind == "proj":
        return mod.Minimize(s_obj * mod.sum_squares(z - 0.3 * c))
    if kind == "lin":
        return mod.Minimize(s_obj * (data["c"] @ z))
    if kind == "logistic":
        return mod.Minimize(s_obj * mod.sum(mod.logistic(D @ z)))
    if kind == "quad":
        return mod.Minimize(s_obj * (mod.quad_form(z, P) + c @ z))
    if kind == "huber":
        return mod.Minimize(s_obj * mod.sum(mod.huber(A @ z - b, s * data["M"])))
    if kind == "lse":
        return mod.Minimize(s_obj * mod.log_sum_exp(D @ z))
    if kind == "max":
        return mod.Maximize(-s_obj * mod.sum_squares(A @ z - b) + s_obj * (c @ z))
    raise ValueError(kind)


OBJECTIVES = ["ls", "proj", "lin", "logistic", "quad", "huber", "lse", "max"]
DEGREE = dict(ls=2, proj=2, lin=1, logistic=0, quad=2, huber=2, lse=0, max=2)


def objective_data(rng, N):
    m = int(rng.integers(max(2, N // 2), 2 * N + 1))
    F = rng.standard_normal((N, max(1, N // 3)))
    return dict(A=rng.standard_normal((m, N)), b=rng.standard_normal(m), c=rng.standard_normal(N),
                D=rng.standard_normal((m, N)), P=F @ F.T + 0.01 * np.eye(N), M=float(rng.uniform(0.3, 2.0)))


# ------------------------------------------------------------------ feasible point from CVXPY
def interior_point(var_shapes, set_builder, rng):
    """An average of three projections of random points onto the sets: a point well inside them."""
    points = []
    for _ in range(3):
        vs = [cp.Variable(shape) for shape in var_shapes]
        cons = set_builder("cp", vs)
        zs = [rng.standard_normal(shape) for shape in var_shapes]
        prob = cp.Problem(cp.Minimize(sum(cp.sum_squares(v - 10 * z) for v, z in zip(vs, zs))), cons)
        try:
            prob.solve(solver="CLARABEL")
        except Exception:
            return None
        if prob.status != "optimal":
            return None
        points.append([v.value for v in vs])
    return [sum(p[i] for p in points) / 3 for i in range(len(var_shapes))]


# ------------------------------------------------------------------ one random model
class Model:
    """A model written twice on the same data.

    ``build(lib, s, s_obj)`` returns (objective, constraints, variables) with
    the data at scale ``s`` and the objective times ``s_obj``; the model's
    optimum is ``s_obj * s**degree`` times the unit model's (s = s_obj = 1)
    and its minimizer ``s`` times the unit model's. fwmodel solves the scaled
    model, Clarabel the unit one (Clarabel itself is not reliable at 1e6 /
    1e-6 scales: it called feasible models infeasible there).
    """

    def __init__(self, index, family, desc, build, degree, s, s_obj, strongly_convex=False):
        self.index, self.family, self.desc, self.build = index, family, desc, build
        self.degree, self.s, self.s_obj, self.strongly_convex = degree, s, s_obj, strongly_convex


def random_scales(rng):
    s_obj = float(rng.choice([1.0, 1.0, 1e-6, 1e6]))
    s_data = float(rng.choice([1.0, 1.0, 1e-6, 1e6]))
    return s_obj, s_data


def make_vector_model(index, rng):
    n = int(rng.integers(3, 31))
    two = rng.random() < 0.25
    s_obj, s_data = random_scales(rng)
    n_sets = int(rng.integers(1, 3))
    sets0 = [(str(rng.choice(VECTOR_SETS)), str(rng.choice(["set", "cvx"]))) for _ in range(n_sets)]
    sets1 = [(str(rng.choice(VECTOR_SETS)), str(rng.choice(["set", "cvx"])))] if two else []
    n1 = int(rng.integers(3, 15)) if two else 0
    shapes = [(n,)] + ([(n1,)] if two else [])

    def set_builder(lib, vs, s=1.0):
        cons = []
        for choice in sets0:
            cons += vector_set(lib, choice, vs[0], s, n)
        for choice in sets1:
            cons += vector_set(lib, choice, vs[1], s, n1)
        return cons

    x0 = interior_point(shapes, set_builder, rng)
    family = "vector"
    if x0 is None:  # the sets do not meet (Clarabel): an infeasible model drawn by chance
        x0, family = [np.zeros(sh) for sh in shapes], "vector, empty sets"
    z0 = np.concatenate(x0)
    N = z0.size
    n_eq = int(rng.choice([0, 0, 1, 2, 3]))
    n_ineq = int(rng.choice([0, 0, 0, 1, 2]))
    A_eq = rng.standard_normal((n_eq, N))
    if n_eq and rng.random() < 0.3:
        A_eq[0] = 1.0  # a sum row
    b_eq = A_eq @ z0
    G = rng.standard_normal((n_ineq, N))
    h = G @ z0 + np.abs(rng.standard_normal(n_ineq)) * (rng.random(n_ineq) < 0.6)
    couple = two and rng.random() < 0.7
    k = min(n, n1, 2)
    obj_kind = str(rng.choice(OBJECTIVES))
    data = objective_data(rng, N)

    def build(lib, s, s_obj):
        mod = fm if lib == "fm" else cp
        vs = [(fm.Variable(sh, name=f"x{i}") if lib == "fm" else cp.Variable(sh)) for i, sh in enumerate(shapes)]
        cons = set_builder(lib, vs, s)
        z = vs[0] if len(vs) == 1 else mod.hstack(vs)
        if n_eq:
            cons.append(A_eq @ z == s * b_eq)
        if n_ineq:
            cons.append(G @ z <= s * h)
        if couple:
            # coupling rows through the feasible point: x0[:k] - x1[:k] == x0_0[:k] - x1_0[:k]
            cons.append(vs[0][:k] - vs[1][:k] == s * (x0[0][:k] - x0[1][:k]))
        return objective_terms(lib, obj_kind, vs, data, s, s_obj), cons, vs

    desc = (f"n={shapes} sets={sets0}{'+' + str(sets1) if two else ''} eq={n_eq} ineq={n_ineq} "
            f"couple={couple} obj={obj_kind} s_obj={s_obj:g} s_data={s_data:g}")
    return Model(index, family, desc, build, DEGREE[obj_kind], s_data, s_obj, obj_kind == "proj")


MATRIX_SETS = ["trace", "psd", "birkhoff", "l1", "box", "rowsimplex"]


def make_matrix_model(index, rng):
    m = int(rng.integers(3, 11))
    kind0 = str(rng.choice(MATRIX_SETS))
    square = kind0 in ("psd", "birkhoff") or rng.random() < 0.5
    nn = m if square else int(rng.integers(3, 11))
    shape = (m, nn)
    s_obj, s_data = random_scales(rng)
    kinds = [(kind0, str(rng.choice(["set", "cvx"])))]
    if rng.random() < 0.4:
        k1 = str(rng.choice(["l1", "box", "trace"] + (["birkhoff", "psd"] if square else [])))
        if k1 != kind0:
            kinds.append((k1, str(rng.choice(["set", "cvx"]))))
    if any(k == "birkhoff" for k, _ in kinds):
        s_data = 1.0  # the Birkhoff polytope has no size

    def set_builder(lib, vs, s=1.0):
        cons = []
        for k, st in kinds:
            cons += matrix_set(lib, k, st, vs[0], s, shape)
        return cons

    x0 = interior_point([shape], set_builder, rng)
    family = "matrix"
    if x0 is None:  # the sets do not meet (Clarabel): an infeasible model drawn by chance
        x0, family = [np.zeros(shape)], "matrix, empty sets"
    X0 = x0[0]
    eq_kind = str(rng.choice(["none", "none", "sum", "trace", "entry", "row"]))
    if eq_kind == "trace" and not square:
        eq_kind = "sum"
    C = rng.standard_normal(shape)
    obj_kind = str(rng.choice(["proj", "proj", "lin", "huber"]))
    Mh = float(rng.uniform(0.3, 2.0))

    def build(lib, s, s_obj):
        mod = fm if lib == "fm" else cp
        if lib == "fm":
            X = fm.Variable(shape, name="X")
        else:
            X = cp.Variable(shape, symmetric=any(k == "psd" for k, _ in kinds))
        cons = set_builder(lib, [X], s)
        if eq_kind == "sum":
            cons.append(mod.sum(X) == s * float(X0.sum()))
        elif eq_kind == "trace":
            cons.append(mod.trace(X) == s * float(np.trace(X0)))
        elif eq_kind == "entry":
            cons.append(X[0, 1 % nn] == s * float(X0[0, 1 % nn]))
        elif eq_kind == "row":
            cons.append(mod.sum(X[0, :]) == s * float(X0[0].sum()))
        if obj_kind == "proj":
            obj = mod.Minimize(s_obj * mod.sum_squares(X - s * C))
        elif obj_kind == "lin":
            obj = mod.Minimize(s_obj * mod.sum(mod.multiply(s * C, X)))
        else:
            obj = mod.Minimize(s_obj * mod.sum(mod.huber(X - s * C, s * Mh)))
        return obj, cons, [X]

    desc = f"X{shape} sets={kinds} eq={eq_kind} obj={obj_kind} s_obj={s_obj:g} s_data={s_data:g}"
    return Model(index, family, desc, build, 2, s_data, s_obj, obj_kind == "proj")


def make_infeasible_model(index, rng):
    n = int(rng.integers(3, 20))
    s_data = float(rng.choice([1.0, 1e-6, 1e6]))
    case = int(rng.integers(0, 6))
    c = rng.standard_normal(n)
    a = np.abs(rng.standard_normal(n)) + 0.1
    a2 = rng.standard_normal(n)

    def build(lib, s, s_obj):
        mod = fm if lib == "fm" else cp
        x = fm.Variable(n, name="x") if lib == "fm" else cp.Variable(n)
        if case == 0:    # capped simplex with caps summing below the total
            cons = vector_set(lib, ("simplex", "set"), x, s, n) + [x <= 0.5 * s / n]
        elif case == 1:  # a sum row outside an L1 ball
            cons = vector_set(lib, ("l1", "set"), x, s, n) + [mod.sum(x) == 3 * s]
        elif case == 2:  # a box away from an L2 ball
            cons = [x >= s, x <= 2 * s] + vector_set(lib, ("l2", "cvx"), x, s, n)
        elif case == 3:  # an equality row that a box cannot meet
            cons = vector_set(lib, ("box", "set"), x, s, n) + [a @ x == -s * a.sum()]
        elif case == 4:  # two equality rows in conflict
            cons = vector_set(lib, ("linf", "set"), x, s, n) + [a2 @ x == 0.01 * s, 2 * a2 @ x == 0.05 * s]
        else:            # an inequality row below what the simplex allows
            cons = vector_set(lib, ("simplex", "cvx"), x, s, n) + [np.ones(n) @ x <= 0.5 * s]
        return mod.Minimize(s_obj * mod.sum_squares(x - s * c)), cons, [x]

    return Model(index, "infeasible", f"n={n} case={case} s_data={s_data:g}", build, 2, s_data, 1.0)


def make_parameter_model(index, rng):
    """A Parameter in a radius / total / right-hand side, solved, changed, re-solved with warm_start."""
    n = int(rng.integers(3, 25))
    s_data = float(rng.choice([1.0, 1e-6, 1e6]))
    case = int(rng.integers(0, 4))
    A = rng.standard_normal((2 * n, n))
    b = rng.standard_normal(2 * n)
    a = rng.standard_normal(n)
    values = [float(v) for v in rng.uniform(0.2, 2.0, 3)]
    return Model(index, "parameter", f"n={n} case={case} s_data={s_data:g} values={values}",
                 (A, b, a, case, n, values), 2, s_data, 1.0)


# ------------------------------------------------------------------ solving and comparing
def clarabel(prob):
    t0 = time.perf_counter()
    try:
        prob.solve(solver="CLARABEL")
        solver = "clarabel"
    except Exception:
        try:
            prob.solve(solver="SCS", eps=1e-9, max_iters=200000)
            solver = "scs"
        except Exception as err:
            return None, f"cvxpy failed: {err}", time.perf_counter() - t0, "none", None
    it = prob.solver_stats.num_iters if prob.solver_stats else None
    return prob.value, prob.status, time.perf_counter() - t0, solver, it


def violation(cons_cp, vars_cp, values):
    """The largest violation of CVXPY's constraints at fwmodel's point (a symmetric variable's asymmetry too)."""
    worst = 0.0
    for v, val in zip(vars_cp, values):
        if v.attributes.get("symmetric"):
            worst = max(worst, float(np.max(np.abs(val - val.T))))
            val = (val + val.T) / 2
        v.value = val
    for c in cons_cp:
        try:
            worst = max(worst, float(np.max(c.violation())))
        except Exception:
            pass
    return worst


def run_plain(model, verbose=False):
    obj_fm, cons_fm, vars_fm = model.build("fm", model.s, model.s_obj)
    obj_cp, cons_cp, vars_cp = model.build("cp", 1.0, 1.0)
    prob = fm.Problem(obj_fm, cons_fm)
    row = dict(index=model.index, family=model.family, desc=model.desc, flags=[])
    t0 = time.perf_counter()
    try:
        value = prob.solve(verbose=verbose) if verbose else prob.solve()
    except Exception as err:
        row.update(status="raised", error=f"{type(err).__name__}: {err}", t_fw=time.perf_counter() - t0)
        row["flags"].append("c")
        row["trace"] = traceback.format_exc(limit=-3)
        return row
    row["t_fw"] = time.perf_counter() - t0
    row.update(status=prob.status, value=value, iterations=prob.stats.iterations, lam=prob.stats.lam,
               S_f=prob.stats.objective_scale)
    if model.s != 1.0 or model.s_obj != 1.0:
        # the same model in unit scale: the README promises the same relative accuracy in any units
        obj_u, cons_u, _ = model.build("fm", 1.0, 1.0)
        unit = fm.Problem(obj_u, cons_u)
        try:
            unit.solve()
            row["unit"] = f"{unit.status}/{unit.stats.iterations}"
            if unit.status != prob.status:
                row["flags"].append("s")
        except Exception as err:
            row["unit"] = f"raised {type(err).__name__}"
    ref = cp.Problem(obj_cp, cons_cp)
    f_unit, st_ref, t_ref, solver, it_ref = clarabel(ref)
    f_ref = None if f_unit is None else model.s_obj * model.s ** model.degree * f_unit
    row.update(ref_status=st_ref, ref_value=f_ref, t_ref=t_ref, solver=solver, ref_iterations=it_ref)
    ref_opt = st_ref in ("optimal", "optimal_inaccurate")
    ref_inf = st_ref in ("infeasible", "infeasible_inaccurate")
    if "infeasible" in model.family and not ref_inf:
        row["note"] = "reference not infeasible"
    if ref_inf:
        if prob.status != "infeasible":
            row["flags"].append("d")
        return row
    if not ref_opt or not np.isfinite(f_ref):
        return row
    S_f = row["S_f"]
    scale = max(abs(f_ref), S_f / 100.0)
    diff = abs(value - f_ref)
    row["signed"] = (value - f_ref) * (1 if isinstance(obj_fm, fm.Minimize) else -1) / scale if scale else 0.0
    row["rel_diff"] = diff / scale if scale > 0 else diff
    row["rel_fstar"] = diff / abs(f_ref) if f_ref != 0 else float("inf") if diff else 0.0
    row["diff_over_S"] = diff / S_f if S_f > 0 else float("inf") if diff else 0.0
    ref_values = [v.value for v in vars_cp]
    fw_values = [v.value / model.s for v in vars_fm]
    row["viol"] = violation(cons_cp, vars_cp, fw_values)
    bound = prob.stats.suboptimality_bound
    if bound is not None and np.isfinite(bound) and scale > 0:
        # value - f* (p* - value for Maximize) may not exceed the certified bound
        row["bound_slack"] = (bound - row["signed"] * scale) / scale
        if row["bound_slack"] < -1e-6:
            row["flags"].append("g")
    if model.strongly_convex:
        row["point_err"] = math.sqrt(sum(float(np.sum((a - b) ** 2)) for a, b in zip(fw_values, ref_values)))
    if prob.status == "optimal":
        if row["rel_diff"] > 1e-3 or row["viol"] > 1e-3:
            # fwmodel better than an inaccurate reference at a feasible point: the reference is off
            ref_off = st_ref == "optimal_inaccurate" and row["signed"] < 0 and row["viol"] <= 1e-3
            row["flags"].append("ref?" if ref_off else "a")
    else:
        row["flags"].append("b")
    return row


def run_parameter(model):
    A, b, a, case, n, values = model.build
    s = model.s
    row = dict(index=model.index, family=model.family, desc=model.desc, flags=[], status="", steps=[])
    p_fm = fm.Parameter(nonneg=True, value=s * values[0], name="p")
    p_cp = cp.Parameter(nonneg=True, value=values[0])
    x, z = fm.Variable(n, name="x"), cp.Variable(n)
    if case == 0:
        fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - s * b)), [fm.norm1(x) <= p_fm])
        rf = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm1(z) <= p_cp])
    elif case == 1:
        fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - s * b)), [fm.Simplex(x, p_fm)])
        rf = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [z >= 0, cp.sum(z) == p_cp])
    elif case == 2:
        q_fm, q_cp = fm.Parameter(value=0.1 * s * values[0]), cp.Parameter(value=0.1 * values[0])
        fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - s * b)), [fm.L2Ball(x, s), a @ x == q_fm])
        rf = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [cp.norm(z, 2) <= 1.0, a @ z == q_cp])
    else:
        fw = fm.Problem(fm.Minimize(fm.sum_squares(A @ x - s * b)), [fm.Box(x, -p_fm, p_fm), fm.L1Ball(x, 2 * s)])
        rf = cp.Problem(cp.Minimize(cp.sum_squares(A @ z - b)), [z >= -p_cp, z <= p_cp, cp.norm1(z) <= 2.0])
    for i, v in enumerate(values):
        if case == 2:
            q_fm.value = 0.1 * s * v
            q_cp.value = 0.1 * v
        else:
            p_fm.value = s * v
            p_cp.value = v
        t0 = time.perf_counter()
        try:
            val = fw.solve(warm_start=i > 0)
        except Exception as err:
            row["flags"].append("c")
            row["error"] = f"{type(err).__name__}: {err}"
            return row
        t_fw = time.perf_counter() - t0
        f_unit, st_ref, t_ref, solver, _ = clarabel(rf)
        S = fw.stats.objective_scale
        rel = float("nan")
        if f_unit is not None and np.isfinite(f_unit):
            f_ref = s ** 2 * f_unit
            rel = abs(val - f_ref) / max(abs(f_ref), S / 100.0)
        row["steps"].append((fw.status, fw.stats.iterations, f"{rel:.2g}", st_ref, round(t_fw, 3), round(t_ref, 3)))
        if st_ref == "optimal":
            if fw.status != "optimal":
                row["flags"].append("b")
            elif rel > 1e-3:
                row["flags"].append("a")
        elif st_ref == "infeasible" and fw.status != "infeasible":
            row["flags"].append("d")
    row["status"] = ",".join(st[0] for st in row["steps"])
    row["flags"] = sorted(set(row["flags"]))
    return row


# ------------------------------------------------------------------ bad input
def _status(prob):
    prob.solve()
    return prob.status


def bad_inputs():
    """(name, callable that builds and solves) pairs, each a mistake a user makes."""
    x = fm.Variable(4, name="x")
    X = fm.Variable((3, 3), name="X")
    A = np.ones((3, 5))
    cases = [
        ("A @ x with a wrong inner size", lambda: fm.Problem(fm.Minimize(fm.sum_squares(A @ x)), [fm.L1Ball(x)]).solve()),
        ("x - b with a wrong length", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - np.ones(3))), [fm.L1Ball(x)]).solve()),
        ("NaN in objective data", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - np.array([1, np.nan, 0, 0]))), [fm.L1Ball(x)]).solve()),
        ("inf in objective data", lambda: fm.Problem(fm.Minimize(np.array([1, np.inf, 0, 0]) @ x), [fm.L1Ball(x)]).solve()),
        ("NaN in equality rhs", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), fm.sum(x) == np.nan]).solve()),
        ("inf in inequality rhs", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), np.ones((2, 4)) @ x <= np.array([1, np.inf])]).solve()),
        ("equality rows of wrong shape", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), np.ones((2, 4)) @ x == np.ones(3)]).solve()),
        ("Parameter without a value", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x, fm.Parameter(nonneg=True))]).solve()),
        ("Parameter with a wrong shape value", lambda: (lambda p: fm.Problem(fm.Minimize(fm.sum_squares(x - p)), [fm.L1Ball(x)]).solve())(fm.Parameter(4, value=np.ones(3)))),
        ("nonneg Parameter given a negative value", lambda: fm.Parameter(nonneg=True, value=-1.0)),
        ("NaN Parameter value in a radius", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.L1Ball(x, fm.Parameter(nonneg=True, value=np.nan))]).solve()),
        ("inf Parameter value in an rhs", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.L1Ball(x), fm.sum(x) == fm.Parameter(value=np.inf)]).solve()),
        ("Maximize a convex function", lambda: fm.Problem(fm.Maximize(fm.sum_squares(x)), [fm.L1Ball(x)]).solve()),
        ("non-scalar objective", lambda: fm.Problem(fm.Minimize(x), [fm.L1Ball(x)]).solve()),
        ("trace-norm ball on a vector", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.TraceNormBall(x)]).solve()),
        ("Birkhoff polytope on a 2x3 matrix", lambda: (lambda Y: fm.Problem(fm.Minimize(fm.sum_squares(Y)), [fm.BirkhoffPolytope(Y)]).solve())(fm.Variable((2, 3)))),
        ("psd ball on a non-square matrix", lambda: (lambda Y: fm.Problem(fm.Minimize(fm.sum_squares(Y)), [fm.TraceNormBall(Y, psd=True)]).solve())(fm.Variable((2, 3)))),
        ("quad_form with a wrong-size P", lambda: fm.Problem(fm.Minimize(fm.quad_form(x, np.eye(3))), [fm.L1Ball(x)]).solve()),
        ("quad_form with a non-PSD P", lambda: fm.Problem(fm.Minimize(fm.quad_form(x, -np.eye(4))), [fm.L1Ball(x)]).solve()),
        ("quad_form with a NaN P", lambda: fm.Problem(fm.Minimize(fm.quad_form(x, np.full((4, 4), np.nan))), [fm.L1Ball(x)]).solve()),
        ("Box bounds of the wrong length", lambda: fm.Box(x, np.zeros(3), 1)),
        ("Simplex axis out of range", lambda: fm.Simplex(X, axis=2)),
        ("a false set on a constant (status)", lambda: _status(fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), fm.L1Ball(np.ones(3), 1.0)]))),
        ("integer data", lambda: fm.Problem(fm.Minimize(fm.sum_squares(np.arange(12).reshape(3, 4) @ x - np.arange(3))), [fm.L1Ball(x)]).solve()),
        ("list data", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - [1, 2, 3, 4])), [fm.L1Ball(x)]).solve()),
        ("complex data", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - np.ones(4) * 1j)), [fm.L1Ball(x)]).solve()),
        ("object array data", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - np.array([1, "a", 2, 3], dtype=object))), [fm.L1Ball(x)]).solve()),
        ("string constraint", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), "x <= 1"]).solve()),
        ("a bool in the constraints", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), True]).solve()),
        ("nested constraint list", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [[fm.L1Ball(x), x <= 1]]).solve()),
        ("objective not wrapped in Minimize", lambda: fm.Problem(fm.sum_squares(x), [fm.L1Ball(x)]).solve()),
        ("unbounded variable", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [x <= 1]).solve()),
        ("variable without a set", lambda: (lambda y: fm.Problem(fm.Minimize(fm.sum_squares(x) + fm.sum_squares(y)), [fm.L1Ball(x)]).solve())(fm.Variable(2, name="y"))),
        ("sparse matrix of wrong shape", lambda: __import__("scipy.sparse").sparse.random(3, 5, 0.5, random_state=0) @ x),
        ("log_sum_exp of a wrong axis", lambda: fm.log_sum_exp(X, axis=3)),
        ("reshape to a wrong size", lambda: fm.reshape(X, (4, 2), order="C")),
        ("index out of range", lambda: x[7]),
        ("huber with a negative M", lambda: fm.huber(x, -1.0)),
        ("vstack of mismatched widths", lambda: fm.vstack([x, fm.Variable(3)])),
        ("solve with a misspelled option", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x)]).solve(max_iters=5)),
        ("solve with tol=0", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x)]).solve(tol=0)),
        ("variable with a negative dimension", lambda: fm.Variable(-3)),
        ("variable with a float dimension", lambda: fm.Variable(2.5)),
        ("inner with two variables", lambda: fm.inner(x, x)),
        ("multiply of two variables", lambda: fm.multiply(x, x)),
        ("point_in with a foreign set", lambda: (lambda pr: (pr.solve(), pr.point_in(fm.L1Ball(x))))(fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x)]))),
        ("NaN in Box bounds", lambda: fm.Box(x, 0, np.array([1, np.nan, 1, 1]))),
        ("G @ x <= h with h of the wrong length", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x)), [fm.L1Ball(x), np.ones((2, 4)) @ x <= np.ones(3)]).solve()),
        ("matrix in a vector's equality", lambda: fm.Problem(fm.Minimize(fm.sum_squares(X)), [fm.L1Ball(X), X == np.ones(3)]).solve()),
        ("warm start before a first solve", lambda: fm.Problem(fm.Minimize(fm.sum_squares(x - 1)), [fm.L1Ball(x)]).solve(warm_start=True)),
    ]
    return cases


NUMPY_WORDS = ("operands could not be broadcast", "matmul: Input operand", "shapes", "object arrays",
               "could not convert", "ufunc", "unsupported operand", "setting an array element")


def run_bad_inputs():
    rows = []
    for name, fn in bad_inputs():
        row = dict(family="bad input", desc=name, flags=[])
        try:
            out = fn()
            row["status"] = f"no error (returned {out!r})" if isinstance(out, str) else \
                f"no error (returned {type(out).__name__})"
            if isinstance(out, float) and not np.isfinite(out):
                row["flags"].append("c")
        except fm.ModelError as err:
            row["status"] = f"ModelError: {err}"
        except Exception as err:
            tb = traceback.extract_tb(sys.exc_info()[2])
            last = tb[-1].filename if tb else ""
            deep = ("numpy" in last or "scipy" in last) or any(w in str(err) for w in NUMPY_WORDS)
            row["status"] = f"{type(err).__name__}: {err} [raised in {last.rsplit('/', 2)[-2:]}]"
            if deep or not isinstance(err, (ValueError, TypeError, IndexError, KeyError)):
                row["flags"].append("c")
        rows.append(row)
    return rows


FAMILIES = [("vector", 0.6), ("matrix", 0.22), ("infeasible", 0.1), ("parameter", 0.08)]


def make_model(index, seed0):
    rng = np.random.default_rng(seed0 + index)
    r = rng.random()
    acc = 0.0
    for family, p in FAMILIES:
        acc += p
        if r < acc:
            break
    maker = dict(vector=make_vector_model, matrix=make_matrix_model, infeasible=make_infeasible_model,
                 parameter=make_parameter_model)[family]
    return maker(index, rng)


def fmt(row):
    keys = ["status", "iterations", "unit", "t_fw", "ref_status", "t_ref", "ref_iterations", "rel_diff", "signed", "rel_fstar",
            "diff_over_S", "bound_slack", "viol", "point_err", "lam", "error", "steps", "note"]
    parts = []
    for k in keys:
        if k in row:
            v = row[k]
            parts.append(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}")
    return " ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--only", type=int, nargs="*")
    parser.add_argument("--no-bad-input", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    indices = args.only if args.only else range(args.start, args.start + args.models)
    counts, flagged, rows = {}, [], []
    t_start = time.perf_counter()
    for i in indices:
        model = make_model(i, args.seed)
        if model is None:
            print(f"[{i}] skipped (sets empty for Clarabel)", flush=True)
            continue
        row = run_parameter(model) if model.family == "parameter" else run_plain(model, args.verbose)
        counts[model.family] = counts.get(model.family, 0) + 1
        rows.append(row)
        tag = ",".join(row["flags"]) if row["flags"] else "ok"
        print(f"[{i}] {tag:4s} {model.family}: {model.desc}\n      {fmt(row)}", flush=True)
        if row.get("trace") and args.verbose:
            print(row["trace"])
        if row["flags"]:
            flagged.append((i, tag, model.desc, fmt(row)))
    if not args.no_bad_input and not args.only:
        for row in run_bad_inputs():
            tag = ",".join(row["flags"]) if row["flags"] else "ok"
            counts["bad input"] = counts.get("bad input", 0) + 1
            print(f"[bad] {tag:4s} {row['desc']}: {row['status'][:300]}", flush=True)
            if row["flags"]:
                flagged.append(("bad", tag, row["desc"], row["status"][:300]))
    print(f"\n{sum(counts.values())} models {counts} in {time.perf_counter() - t_start:.0f} s; "
          f"{len(flagged)} flagged")
    slow = sorted((r for r in rows if r.get("status") == "optimal" and r.get("t_ref")),
                  key=lambda r: -r["iterations"])[:8]
    print("most iterations among the optimal ones (fwmodel s / Clarabel s):")
    for r in slow:
        print(f"   [{r['index']}] {r['iterations']} it, {r['t_fw']:.2f} / {r['t_ref']:.3f} s: {r['desc']}")
    for item in flagged:
        print("  ", *item)


if __name__ == "__main__":
    main()
