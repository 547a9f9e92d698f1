"""``fm.check_lmo``: test a user-defined linear minimization oracle.

A Frank-Wolfe method trusts its LMO completely: a vertex of the wrong shape
fails loudly, but an LMO that maximizes instead of minimizing, that returns
a point outside the set, or that mutates the gradient it was given makes the
solver wander silently. :func:`check_lmo` probes an LMO with random
directions and reports, in plain words, every property it finds violated:

- **contract**: ``lmo(d)`` returns a finite array of the expression's shape
  and leaves ``d`` unchanged;
- **optimality**: ``<d, lmo(d)> <= <d, x>`` for sampled points ``x`` of the
  set, taken as convex combinations of LMO outputs for other random
  directions (a wrong sign is recognized and named as such);
- **fresh outputs**: a call leaves the array the previous call returned
  unchanged (an LMO that returns one reused buffer changes the vertices a
  solve keeps);
- **reproducibility**: the same direction gives the same value
  ``<d, lmo(d)>`` (the vertex itself may differ when there are ties), also
  after ``reset()``;
- **optional hooks**, when the set implements them: ``contains`` accepts the
  LMO outputs and their convex combinations and rejects a point beyond the
  set; ``diameter()`` bounds the distances between outputs; a custom
  ``lmo_atom`` agrees with ``lmo``; ``initial_atom`` gives a point of the set.

The checks are necessary conditions, not a proof: an LMO that passes them
can still be wrong on directions that were not tried.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import ModelError
from .base import ConvexSet


class LMOReport:
    """The findings of :func:`check_lmo`.

    Attributes
    ----------
    ok : bool
        True when no problem was found (the report is also truthy then).
    problems : list of str
        One plain-language sentence per kind of problem, with an example and
        how often it occurred.
    checked : list of str
        What was checked, for the record.
    set : ConvexSet or None
        The instance that was checked (None if it could not be built).
    """

    def __init__(self, title):
        self.title = title
        self.set = None
        self.checked = []
        self._problems = {}  # kind -> [count, calls of that kind, first message]

    # ------------------------------------------------------------ building
    def problem(self, kind, message, count=1, total=None):
        """Record ``count`` occurrences (out of ``total`` checks) of a kind of problem."""
        entry = self._problems.setdefault(kind, [0, total, message])
        entry[0] += count

    def has(self, kind):
        return kind in self._problems

    # ------------------------------------------------------------ reading
    @property
    def problems(self):
        out = []
        for count, total, message in self._problems.values():
            if total is not None and total > 1:
                message = f"{message} ({count} of {total} checks)"
            out.append(message)
        return out

    @property
    def ok(self):
        return not self._problems

    def __bool__(self):
        return self.ok

    def __str__(self):
        problems = self.problems
        head = f"check_lmo({self.title}): " + ("OK" if not problems else
                                                 f"{len(problems)} problem{'s' if len(problems) > 1 else ''}")
        lines = [head]
        lines += [f"  {i}. {p}" for i, p in enumerate(problems, 1)]
        if self.checked:
            lines.append("  checked: " + "; ".join(self.checked))
        return "\n".join(lines)

    def __repr__(self):
        return f"<LMOReport {self.title}: {'ok' if self.ok else f'{len(self._problems)} problem(s)'}>"


def _instantiate(obj, shape, args, kwargs, report):
    """The set to check: ``obj`` itself, or ``obj(Variable(shape), *args, **kwargs)``."""
    from ..expressions import Variable

    if isinstance(obj, type):
        if shape is None:
            raise ModelError(
                f"check_lmo({obj.__name__}): pass shape= to check a class; it is instantiated on a "
                f"Variable of that shape as {obj.__name__}(x, *args, **kwargs)"
            )
        x = Variable(shape, name="x")
        try:
            return obj(x, *args, **(kwargs or {}))
        except Exception as exc:  # report, do not crash: the constructor is under test too
            report.problem("init", f"{obj.__name__}(x, ...) with x of shape {x.shape} raised "
                                   f"{type(exc).__name__}: {exc}")
            return None
    if shape is not None or args or kwargs:
        raise ModelError("check_lmo: shape=, args= and kwargs= are only for checking a class, not an instance")
    if not callable(getattr(obj, "lmo", None)):
        raise ModelError(f"check_lmo: expected a ConvexSet (or a subclass of it), got {obj!r}")
    return obj


def check_lmo(set_or_class, trials=20, *, shape=None, args=(), kwargs=None, seed=0, tol=1e-6,
              raise_on_error=False):
    """Test the linear minimization oracle of a set and report what is wrong.

    Parameters
    ----------
    set_or_class : ConvexSet instance, or a ConvexSet subclass
        A class is instantiated as ``cls(x, *args, **kwargs)`` on a fresh
        ``fm.Variable`` ``x`` of the given ``shape``.
    trials : int
        Number of random directions ``d``; the LMO is called on each ``d``
        and on ``-d``, and as many sampled points are built.
    shape : int or tuple, only with a class
    args, kwargs : extra constructor arguments, only with a class
    seed : seed of the random directions (the check is reproducible).
    tol : relative tolerance; a value ``<d, s>`` may exceed the best
        sampled one by ``tol * ||d|| * max(1, R)``, R the largest norm of an
        LMO output.
    raise_on_error : raise :class:`~fwmodel.ModelError` with the report's
        text when a problem is found.

    Returns
    -------
    LMOReport
        ``.ok``, ``.problems`` (plain sentences) and a readable ``str()``.

    Examples
    --------
    >>> import fwmodel as fm
    >>> report = fm.check_lmo(fm.L1Ball, shape=(4, 3), kwargs=dict(radius=2.0))
    >>> report.ok
    True
    """
    if isinstance(trials, bool) or not isinstance(trials, numbers.Integral) or trials < 1:
        raise ValueError(f"check_lmo: trials must be an integer >= 1, got {trials!r}")
    name = set_or_class.__name__ if isinstance(set_or_class, type) else repr(set_or_class)
    report = LMOReport(name)
    inst = _instantiate(set_or_class, shape, args, kwargs, report)
    if isinstance(inst, ConvexSet) and "expr" not in vars(inst):
        report.set = inst
        report.problem("init", f"{type(inst).__name__}.__init__ never called super().__init__(expr): the set has "
                               "no constrained expression, so a Problem cannot use it (call "
                               "super().__init__(expr) first in __init__)")
        inst = None
    if inst is not None:
        report.set = inst
        report.title = f"{inst!r}, shape {tuple(inst.shape)}" if hasattr(inst, "shape") else repr(inst)
        _run_checks(inst, int(trials), np.random.default_rng(seed), float(tol), report)
    if raise_on_error and not report.ok:
        raise ModelError(str(report))
    return report


class _Caller:
    """Calls ``lmo`` and validates the contract; records problems once per kind."""

    def __init__(self, inst, report):
        self.inst = inst
        self.report = report
        self.shape = tuple(inst.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.calls = 0
        self._last = None  # (the array lmo returned at the previous call, a copy of it then)

    def _check_kept(self):
        """The previous call's output unchanged by this call: an LMO that returns one reused buffer
        (or a view of state it updates) changes the vertices a solve keeps in its active sets."""
        if self._last is None:
            return
        returned, copy = self._last
        if not np.array_equal(returned, copy, equal_nan=True):
            self.report.problem("buffer", "lmo changed an array it had returned at the previous call (it "
                                          "returns the same buffer each time, or a view of state it updates): "
                                          "the engine keeps the vertices it is given, so lmo must return a new "
                                          "array at every call (return buf.copy())")

    def __call__(self, d, what="a random direction"):
        self.calls += 1
        given = d.copy()
        try:
            out = self.inst.lmo(given)
            self._check_kept()
        except NotImplementedError as exc:
            self.report.problem("missing", f"lmo is not implemented ({exc})")
            return None
        except Exception as exc:
            self.report.problem("raises", f"lmo raised {type(exc).__name__}: {exc} (for {what})")
            return None
        if not np.array_equal(given, d):
            self.report.problem("mutates", "lmo modified the direction it was given; the engine passes a "
                                           "slice of its gradient, so the LMO must not write into it")
        if out is None:
            self.report.problem("none", "lmo returned None; it must return the minimizing vertex "
                                        "(did the method forget a return statement?)")
            return None
        try:
            s = np.asarray(out, dtype=float)
        except (TypeError, ValueError):
            self.report.problem("type", f"lmo returned a {type(out).__name__}, which is not a numeric array")
            return None
        if s.shape != self.shape:
            if s.size == self.size:
                self.report.problem("shape", f"lmo returned shape {s.shape}, expected {self.shape} (the "
                                             "expression's shape; reshape the vertex before returning it)")
                s = s.reshape(self.shape)
            else:
                self.report.problem("size", f"lmo returned shape {s.shape}, expected {self.shape}: a vertex "
                                            "must have the constrained expression's shape")
                return None
        if not np.all(np.isfinite(s)):
            self.report.problem("finite", f"lmo returned NaN or infinite entries (for {what})")
            return None
        if isinstance(out, np.ndarray):
            self._last = (out, out.copy())
        # the checks keep the outputs: a copy of their own (a reused buffer would make them all one point)
        return s.copy()


def _run_checks(inst, trials, rng, tol, report):
    if not isinstance(inst, ConvexSet):
        report.problem("class", f"{type(inst).__name__} is not a subclass of fm.ConvexSet, so a Problem will not "
                                "accept it as a constraint")
        return
    if not isinstance(getattr(inst, "is_polytope", False), (bool, np.bool_)):
        report.problem("polytope", f"is_polytope should be True or False, got {inst.is_polytope!r}")
    call = _Caller(inst, report)
    shape = call.shape

    # 1. the contract and optimality on random directions and their negatives
    directions = [rng.standard_normal(shape) for _ in range(trials)]
    plus = [call(d) for d in directions]
    minus = [call(-d, "the negative of a random direction") for d in directions]
    if report.has("missing"):
        return
    pairs = [(d, sp, sm) for d, sp, sm in zip(directions, plus, minus) if sp is not None and sm is not None]
    vertices = [s for s in plus + minus if s is not None]
    if not vertices:
        report.checked.append(f"{call.calls} LMO calls (none returned a usable vertex)")
        return
    radius = max(1.0, max(float(np.linalg.norm(s)) for s in vertices))

    def slack(d):
        return tol * float(np.linalg.norm(d)) * radius

    # sampled points: convex combinations of LMO outputs (points of the set when the LMO is right)
    points = []
    for _ in range(trials):
        k = int(rng.integers(1, min(4, len(vertices)) + 1))
        chosen = rng.choice(len(vertices), size=k, replace=False)
        weights = rng.dirichlet(np.ones(k))
        points.append(sum(w * vertices[i] for w, i in zip(weights, chosen)))
    candidates = vertices + points

    # a wrong sign shows as <d, lmo(d)> > <d, lmo(-d)> for most directions
    flipped = [(float(np.vdot(d, sp)), float(np.vdot(d, sm))) for d, sp, sm in pairs
               if np.vdot(d, sp) > np.vdot(d, sm) + slack(d)]
    if pairs and len(flipped) > len(pairs) / 2:
        a, b = flipped[0]
        report.problem("sign", f"lmo maximizes <d, s> instead of minimizing it: for a random d, "
                               f"<d, lmo(d)> = {a:.4g} > <d, lmo(-d)> = {b:.4g} (a sign error? "
                               "the LMO must return a minimizer of <d, s> over the set)")
    else:
        failures = []
        tested = 0
        for d, s in list(zip(directions, plus)) + list(zip([-d for d in directions], minus)):
            if s is None:
                continue
            tested += 1
            value = float(np.vdot(d, s))
            values = [float(np.vdot(d, x)) for x in candidates]
            best = int(np.argmin(values))
            if value > values[best] + slack(d):
                source = "another LMO output" if best < len(vertices) else "a convex combination of LMO outputs"
                failures.append(f"lmo(d) is not a minimizer: <d, lmo(d)> = {value:.6g}, but {source} "
                                f"gives <d, x> = {values[best]:.6g}")
        if failures:
            report.problem("optimal", failures[0], count=len(failures), total=tested)
    report.checked.append(f"{call.calls} LMO calls on {trials} random directions and their negatives, "
                          f"optimality against {len(candidates)} points (outputs and {len(points)} convex "
                          "combinations)")

    # 2. reproducibility, with and without reset()
    repeats = 0
    for d, s in list(zip(directions, plus))[: min(5, trials)]:
        if s is None:
            continue
        again = call(d)
        if again is None:
            continue
        repeats += 1
        v1, v2 = float(np.vdot(d, s)), float(np.vdot(d, again))
        if abs(v1 - v2) > slack(d):
            report.problem("repeat", f"lmo is not reproducible: the same direction gave <d, s> = {v1:.6g}, then "
                                     f"{v2:.6g}")
    try:
        inst.reset()
    except Exception as exc:
        report.problem("reset", f"reset() raised {type(exc).__name__}: {exc}")
    else:
        d, s = directions[0], plus[0]
        if s is not None:
            again = call(d)
            if again is not None and abs(float(np.vdot(d, again)) - float(np.vdot(d, s))) > slack(d):
                report.problem("reset", "after reset(), lmo gives a different value <d, lmo(d)> for the same d")
    report.checked.append(f"reproducibility on {repeats} repeated directions and after reset()")

    # 3. degenerate directions: zero and a coordinate vector
    zero = call(np.zeros(shape), "the zero direction")
    e0 = np.zeros(shape)
    e0.flat[0] = 1.0
    call(e0, "a coordinate direction")
    if zero is not None:
        candidates.append(zero)

    # 4. contains(), when implemented
    try:
        verdict = inst.contains(vertices[0])
    except Exception as exc:
        report.problem("contains", f"contains() raised {type(exc).__name__}: {exc}")
        verdict = None
    if verdict is not None:
        outside = sum(1 for s in vertices if not inst.contains(s))
        if outside:
            report.problem("outside", f"lmo returned points outside the set: contains(lmo(d)) is False for "
                                      f"{outside} of {len(vertices)} outputs (or contains() is too strict)")
        rejected = sum(1 for x in points if not inst.contains(x))
        if rejected:
            report.problem("convex", f"contains() rejects {rejected} of {len(points)} convex combinations of LMO "
                                     "outputs: either the set is not convex, an LMO output is outside it, or "
                                     "contains() is wrong")
        # A point beyond the minimum along d: <d, far> < min over the set of <d, s>.
        d, s = directions[0], plus[0]
        if s is not None and not report.has("sign") and not report.has("optimal"):
            far = s - (1.0 + float(np.linalg.norm(s))) * d / float(np.linalg.norm(d))
            if inst.contains(far):
                report.problem("contains_far", "contains() accepts a point x with <d, x> smaller than "
                                               "<d, lmo(d)>, the minimum over the set (contains() is too "
                                               "lenient, or lmo(d) is not a minimizer)")
        report.checked.append("contains() on outputs, convex combinations and a point outside")

    # 5. diameter(), when implemented
    try:
        diam = inst.diameter()
    except Exception as exc:
        report.problem("diameter", f"diameter() raised {type(exc).__name__}: {exc}")
        diam = None
    if diam is not None:
        sample = np.array([s.ravel() for s in vertices[:60]])
        sq = np.sum(sample ** 2, axis=1)
        dist = float(np.sqrt(max(0.0, np.max(sq[:, None] + sq[None, :] - 2.0 * sample @ sample.T))))
        if dist > float(diam) * (1.0 + 1e-9) + tol * radius:
            report.problem("diameter", f"diameter() = {float(diam):.6g}, but two LMO outputs are {dist:.6g} apart "
                                       "(the diameter must be an upper bound)")
        report.checked.append("diameter() against distances between outputs")

    # 6. a custom lmo_atom must agree with lmo; initial_atom must be a point of the set
    if type(inst).lmo_atom is not ConvexSet.lmo_atom:
        checked = 0
        for d, s in list(zip(directions, plus))[: min(5, trials)]:
            if s is None:
                continue
            checked += 1
            try:
                atom = inst.lmo_atom(d.ravel().copy())
                dense = np.asarray(atom.to_dense(), dtype=float).ravel()
                dot = float(atom.dot(d.ravel()))
                hash(atom.key)
            except Exception as exc:
                report.problem("atom", f"lmo_atom (or its atom's to_dense/dot/key) raised {type(exc).__name__}: {exc}")
                break
            if dense.size != call.size:
                report.problem("atom", f"lmo_atom returned an atom of size {dense.size}, expected {call.size}")
                break
            if abs(dot - float(np.dot(d.ravel(), dense))) > slack(d):
                report.problem("atom", "the atom's dot(g) differs from <g, atom.to_dense()>")
            if abs(float(np.dot(d.ravel(), dense)) - float(np.vdot(d, s))) > slack(d):
                report.problem("atom", "lmo_atom and lmo disagree: <d, lmo_atom(d)> != <d, lmo(d)>")
        report.checked.append(f"lmo_atom against lmo on {checked} directions")
    # 6b. a custom lmo_for_solve (an LMO with per-solve warm-start state) must agree with lmo,
    # called as a solve calls it: one fresh callable, many directions in a row
    if type(inst).lmo_for_solve is not ConvexSet.lmo_for_solve:
        checked = 0
        try:
            solve_lmo = inst.lmo_for_solve()
            for d, s in list(zip(directions, plus))[:trials]:
                if s is None:
                    continue
                checked += 1
                value = float(solve_lmo(d.ravel().copy()).dot(d.ravel()))
                if abs(value - float(np.vdot(d, s))) > slack(d):
                    report.problem("solve_lmo", "lmo_for_solve() and lmo disagree: <d, lmo_for_solve()(d)> != "
                                                "<d, lmo(d)>")
                    break
        except Exception as exc:
            report.problem("solve_lmo", f"lmo_for_solve() (or its atoms) raised {type(exc).__name__}: {exc}")
        report.checked.append(f"lmo_for_solve against lmo on {checked} directions in a row")
    try:
        start = np.asarray(inst.initial_atom().to_dense(), dtype=float)
    except Exception as exc:
        report.problem("initial", f"initial_atom() raised {type(exc).__name__}: {exc}")
    else:
        if start.size != call.size or not np.all(np.isfinite(start)):
            report.problem("initial", "initial_atom() does not give a finite point of the set's size")
        elif verdict is not None and not inst.contains(start.reshape(shape)):
            report.problem("initial", "initial_atom() gives a point outside the set (contains() is False)")
