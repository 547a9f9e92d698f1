"""The Birkhoff polytope: doubly stochastic matrices."""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..errors import ModelError
from ._birkhoff_projection import BirkhoffProjector
from ._common import as_direction, as_flat_direction, as_point, dense_vertex
from .atoms import SparseAtom
from .base import ConvexSet
from .hulls import RowColumnSums
from .symmetric import SymmetricPart, SymmetrizedVertices, symmetrized_atom


def assignment_indices(D):
    """Flat indices ``i * n + col[i]`` of a permutation minimizing ``<D, P>`` (the linear assignment problem).

    The cost matrix is reduced first (row minima, then column minima
    subtracted): see :class:`BirkhoffPolytope`.
    """
    reduced = D - D.min(axis=1, keepdims=True)
    reduced -= reduced.min(axis=0, keepdims=True)
    rows, cols = linear_sum_assignment(reduced)
    return rows * D.shape[0] + cols


class WarmStartedAssignment:
    """Exact assignment LMOs for one solve, each call pre-reduced by the previous call's dual potentials.

    The assignment problem ``min_P <D, P>`` has the LP dual
    ``max sum(u) + sum(v)`` subject to ``u_i + v_j <= D_ij``; subtracting
    any column potentials v (and then the row and column minima) from D
    changes ``<D, P>`` by the same constant for every permutation P, so the
    minimizers are unchanged, while potentials close to optimal ones leave
    a reduced matrix with many zeros on which SciPy's shortest augmenting
    paths are short. Consecutive gradients of a solve differ little, so the
    potentials of the previous call are a good start for the next one.

    Given an optimal permutation ``sigma`` of D, optimal column potentials
    are shortest-path distances on the residual graph of the assignment
    (column ``sigma_i`` -> column j at cost ``D_ij - D_i,sigma_i``): then
    ``v_j <= v_sigma_i + D_ij - D_i,sigma_i`` for all i, j, the dual
    feasibility of ``u_i = D_i,sigma_i - v_sigma_i``. After each call the
    potentials start from ``v + c`` (v the potentials this call was
    reduced by, c the column minima of its reduction: with the row minima
    as u, a dual-feasible pair, every reduced cost >= 0) and take
    ``RELAXATIONS`` Bellman-Ford passes of that graph (each one vectorized
    pass over D), which are not run to convergence: the potentials only
    speed up the next call and never decide its answer, which SciPy
    computes exactly.

    Measured on the 371 assignment calls of a Birkhoff projection at
    n = 200 (benchmarks/RESULTS.md): 1.0 ms per call against 2.5 ms with
    the row and column reduction alone, the same optimal values.

    Subtracting v rounds ``D - v`` at the size of v: potentials made on a
    gradient of size 1 would bury a direction of size 1e-17 (the
    infeasibility certificate's residual at a feasible point) in their
    rounding, and the assignment returned was then no minimizer (``<D, P>``
    = 2e-17 where the minimum was 0). So potentials whose spread exceeds
    ``SPREAD_LIMIT`` times the spread of D are dropped (the call starts
    from the row and column reduction alone): ``D - v`` is then exact up to
    a few roundings of D's own entries, whatever the direction's scale.
    """

    #: Bellman-Ford passes per call, from the reduction's dual-feasible potentials (1 pass measured
    #: 7 % faster than 2 passes from the previous potentials alone; ~25 passes to convergence, slower)
    RELAXATIONS = 1
    #: potentials spread over more than this many times the spread of D are dropped (as the compiled
    #: solver's, :class:`CompiledWarmAssignment`): their rounding would show in ``D - v``
    SPREAD_LIMIT = 16.0

    def __init__(self, n):
        self.n = int(n)
        self.rows = np.arange(self.n)
        self.potentials = None  # column potentials v from the previous call

    def __call__(self, D):
        """Flat indices ``i * n + col[i]`` of a permutation minimizing ``<D, P>`` (exactly)."""
        v = self.potentials
        if v is not None and not (v.max() - v.min() <= self.SPREAD_LIMIT * (D.max() - D.min())):
            v = None  # a direction far smaller than the one the potentials were made on (class docstring)
        if v is None:
            v = np.zeros(self.n)
        reduced = D - v
        reduced -= reduced.min(axis=1, keepdims=True)
        column_minima = reduced.min(axis=0)
        reduced -= column_minima
        # SciPy solves the transposed problem (columns to rows) about 10 % faster after this
        # row-then-column reduction (measured on the same 371 gradients); the same optimum
        columns, rows_of_columns = linear_sum_assignment(reduced.T)
        cols = np.empty(self.n, dtype=np.intp)
        cols[rows_of_columns] = columns
        self._relax(D, cols, v + column_minima)
        return self.rows * self.n + cols

    def _relax(self, D, cols, v):
        """The next call's potentials: ``RELAXATIONS`` Bellman-Ford passes from the dual-feasible ``v``."""
        on_assignment = D[self.rows, cols]
        if not np.isfinite(on_assignment).all():
            self.potentials = None
            return
        for _ in range(self.RELAXATIONS):
            # v_j <- min(v_j, min_i v_sigma_i + D_ij - D_i,sigma_i)
            v = np.minimum(v, (D + (v[cols] - on_assignment)[:, None]).min(axis=0))
        v = v - v.max()  # only differences matter; keep the values near 0
        self.potentials = v if np.isfinite(v).all() else None


def _compiled_solver():
    """The compiled assignment kernel of ``backend="numba"``, imported on first use (numba is optional)."""
    try:
        from ._assignment_numba import solve_warm
    except ImportError:
        raise ModelError(
            "BirkhoffPolytope: backend='numba' needs the numba package (pip install numba, or the "
            "fwmodel[numba] extra); backend='scipy' needs nothing more"
        ) from None
    return solve_warm


def _resolve_backend(backend):
    """``"scipy"`` or ``"numba"`` for a ``backend`` option (``"auto"``: numba when it imports)."""
    if backend not in BirkhoffPolytope.BACKENDS:
        raise ModelError(f"BirkhoffPolytope: backend must be 'scipy', 'numba' or 'auto', got {backend!r}")
    if backend == "auto":
        try:
            _compiled_solver()
        except ModelError:
            return "scipy"
        return "numba"
    if backend == "numba":
        _compiled_solver()  # fail here, at the model, when numba is missing
    return backend


class CompiledWarmAssignment:
    """Exact assignment LMOs for one solve by a compiled Jonker-Volgenant solver that keeps its duals.

    The numba backend of :class:`BirkhoffPolytope`
    (``fwmodel/sets/_assignment_numba.py``). Each call runs LAPJV (Jonker &
    Volgenant 1987: shortest augmenting paths on reduced costs
    ``D_ij - u_i - v_j >= 0``) started from the column potentials ``v`` the
    previous call ended with: every row first takes its column of least
    reduced cost if that column is free, LAPJV's augmenting row reduction
    reassigns free rows (at most ``ROW_REDUCTION_STEPS`` row scans per row
    of D: on the n = 200 projection's gradients 62 free rows fall to 18 per
    call, ~8 % less time in the LMO), then each free row is routed along
    a shortest augmenting path, searched first among the columns within a
    window of the row's least reduced cost (a few times the longest path of
    the previous call) and by the dense search where the sparse search
    cannot prove its path shortest. As in :class:`WarmStartedAssignment` the
    potentials decide how much work a call does, never its answer: every
    call returns a permutation minimizing ``<D, P>`` (the same optimal value
    as SciPy's solver, up to rounding). Potentials whose spread is above
    ``SPREAD_LIMIT`` times the spread of D, or whose size is above
    ``SPREAD_LIMIT`` times the size of D (a gradient much smaller than the
    last one, where their rounding would show: a direction of size 1e-17
    after one of size 1e17), are replaced by D's column minima. A cost matrix with an infinite or nan entry goes to SciPy
    (forbidden pairs allowed, nan refused) and the next call starts cold.

    Measured on the 369 assignment calls of a Birkhoff projection at
    n = 200 (``benchmarks/birkhoff_lmo_replay.py``; benchmarks/RESULTS.md):
    about 2x faster than :class:`WarmStartedAssignment`, the same optimal
    values.
    """

    SPREAD_LIMIT = 16.0
    #: most candidate columns per row for the sparse paths (a row with more scans every column)
    CANDIDATES = 64
    #: the candidates' window, in multiples of the longest augmenting path of the previous call
    WINDOW_FACTOR = 2.0
    #: augmenting row reduction: at most this many row scans per row of D (0: none; measured on the
    #: n = 200 projection's 957 gradients: 1, 2, 4 scans 0.47, 0.44, 0.44 ms per call against 0.49 without)
    ROW_REDUCTION_STEPS = 2

    def __init__(self, n):
        self._solve = _compiled_solver()
        self.n = int(n)
        n, cap = self.n, min(self.CANDIDATES, self.n)
        self.rows = np.arange(n)
        self.potentials = np.zeros(n)  # column potentials v, valid once a call has ended (warm)
        self.warm = False
        self.window = np.inf  # tau: no sparse search until a call has measured its paths
        self.stats = np.zeros(5)  # free rows, sparse paths, dense paths, longest path, row reduction scans
        self._x = np.empty(n, dtype=np.intp)
        index = lambda: np.empty(n, dtype=np.intp)  # noqa: E731
        self._dense = (index(), index(), np.empty(n), index(), index())  # y, free, d, pred, columns
        self._sparse = (np.empty(n), index(), np.empty((n, cap), dtype=np.intp), np.empty(n),  # row_min, count, members, bound
                        np.full(n, np.inf), np.zeros(n, dtype=np.bool_), index(), index(),  # dist, settled, pred, touched
                        np.empty(n), index(), np.full(n, -1, dtype=np.intp))  # heap keys, items, where

    def __call__(self, D):
        """Flat indices ``i * n + col[i]`` of a permutation minimizing ``<D, P>`` (exactly)."""
        D = np.ascontiguousarray(D, dtype=np.float64)
        if D.shape != (self.n, self.n):
            raise ModelError(f"BirkhoffPolytope: cost matrix has shape {D.shape}, expected {(self.n, self.n)}")
        if self.n == 1:
            return self.rows.copy() if np.isfinite(D).all() else assignment_indices(D)
        y, free, d, pred, columns = self._dense
        status = self._solve(D, self.potentials, self._x, y, free, d, pred, columns, self.warm,
                             self.SPREAD_LIMIT, self.window, *self._sparse, self.stats,
                             int(self.ROW_REDUCTION_STEPS * self.n))
        if status < 0:  # an infinite or nan cost: SciPy decides (and raises on nan)
            self.warm = False
            self.window = np.inf
            return assignment_indices(D)
        self.warm = True
        self._adapt_window()
        return self.rows * self.n + self._x

    def _adapt_window(self):
        """The next call's window: a few times this call's longest path, wider after a dense fallback."""
        # Python floats: this runs once per LMO call, where NumPy scalars cost more than the arithmetic
        free_rows, sparse_paths, dense_paths, longest, _ = self.stats.tolist()
        if free_rows == 0 or not longest > 0:
            return
        window = self.WINDOW_FACTOR * longest
        if dense_paths > 0 and math.isfinite(self.window):
            window = max(window, 2.0 * self.window)
        self.window = window if window > 0 else self.window


class BirkhoffPolytope(ConvexSet):
    """Doubly stochastic ``n x n`` matrices: entries ``>= 0``, every row and column sums to 1.

    By the Birkhoff-von Neumann theorem its vertices are the ``n!``
    permutation matrices, so the LMO ``min_P <D, P>`` over permutations is
    the linear assignment problem, solved exactly in ``O(n^3)`` by
    :func:`scipy.optimize.linear_sum_assignment` (row ``i`` goes to column
    ``col[i]``). The vertex is a :class:`SparseAtom` with ``n`` ones at the
    flat indices ``i * n + col[i]``.

    Before the assignment the cost matrix is *reduced*: its row minima, then
    its column minima are subtracted. Every permutation takes one entry of
    each row and each column, so this shifts ``<D, P>`` by the same constant
    for all P and leaves the minimizers unchanged; the reduced matrix is a
    dual-feasible start (nonnegative, a zero in every row and column) that
    shortens SciPy's shortest augmenting paths. Measured on the 370
    gradients of a Birkhoff projection at n = 200: 1.7x less time in the
    assignment solver, same optimal values.

    In a solve (:meth:`lmo_for_solve`) the cost matrix is first reduced by
    the previous call's dual potentials as well
    (:class:`WarmStartedAssignment`): exact minimizers again (among tied
    permutations SciPy may pick another one), about 2x less time.

    ``backend``: ``"scipy"`` (default) as above; ``"numba"``: a compiled
    Jonker-Volgenant solver that keeps its dual potentials from call to call
    (:class:`CompiledWarmAssignment`; needs the optional numba package,
    ``pip install fwmodel[numba]``): exact minimizers too, about 2x less time
    in the LMO than the SciPy path at n = 200 once compiled (its first use on
    a machine compiles it, seconds; later processes load it from numba's
    cache); ``"auto"``: numba when it is installed, else SciPy. Both
    backends return a minimizing permutation; where several permutations
    tie they may return different ones, and the iterates may then differ.

    The set also offers its Euclidean projection (:meth:`project_flat`;
    ``has_projection``): semismooth Newton on the smooth dual in the row and
    column multipliers, warm-started from the previous call, then rounded
    onto the polytope exactly (:mod:`fwmodel.sets._birkhoff_projection`;
    Lorenz, Manns & Meyer 2019; Altschuler, Weed & Rigollet 2017, Alg. 2).
    It is not declared cheap: ``solve(projection="auto")`` times it against
    an iteration (``engine/projection_choice.py``) and takes projected-gradient
    steps on the block where it costs at most a few iterations; with
    ``projection=False`` or a step kind named by ``step`` the block keeps its
    vertex (assignment LMO) steps. The point of it: the projection of a
    matrix C is one projected-gradient step, where vertex steps need about as
    many iterations as the solution has permutations in its support (tens of
    thousands at n = 200, benchmarks/RESULTS.md).
    """

    is_polytope = True
    #: the projection costs a few Newton steps, O(n^3) each as the LMO: measured, not declared cheap
    has_projection = True
    projects_in_place = True
    #: the projection starts from the last call's multipliers: "auto" times it on nearby points in turn
    projection_warm_starts = True

    #: the accepted values of ``backend``
    BACKENDS = ("scipy", "numba", "auto")

    def __init__(self, expr, backend="scipy"):
        super().__init__(expr)
        shape = tuple(self.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ModelError(
                f"BirkhoffPolytope: the expression must be a square matrix, got shape {shape} for {self.expr!r}"
            )
        self.n = shape[0]
        self.backend = _resolve_backend(backend)
        self._projector = BirkhoffProjector(self.n)

    def __repr__(self):
        # the resolved backend ("auto" became one of the two), shown where it is not the default
        backend = "" if self.backend == "scipy" else f", backend={self.backend!r}"
        return f"BirkhoffPolytope({self.expr!r}{backend})"

    def lmo_atom(self, flat_direction):
        # one stateless call: SciPy whatever the backend (the compiled solver, started cold, measured
        # 2x slower than SciPy; its gain is the warm start of lmo_for_solve)
        D = as_flat_direction(self, flat_direction).reshape(self.n, self.n)
        return SparseAtom(assignment_indices(D), 1.0, self.size)

    def affine_hull(self):
        """Every row and every column sums to 1."""
        return RowColumnSums(self.n)

    def lmo_for_solve(self):
        """A fresh warm-started solver per solve: exact minimizers, as :meth:`lmo_atom`, faster.

        :class:`WarmStartedAssignment` (SciPy) or :class:`CompiledWarmAssignment` (numba), by ``backend``.
        """
        solver = CompiledWarmAssignment(self.n) if self.backend == "numba" else WarmStartedAssignment(self.n)
        # the projection's warm start begins afresh with each solve too: a solve repeated gives the same iterates
        self._projector.reset()

        def lmo_atom(flat_direction):
            D = as_flat_direction(self, flat_direction).reshape(self.n, self.n)
            return SparseAtom(solver(D), 1.0, self.size)

        return lmo_atom

    def lmo(self, direction):
        d = as_direction(self, direction)
        return dense_vertex(self, self.lmo_atom(d.ravel()))

    def project_flat(self, flat_point, out=None):
        """Euclidean projection of a flat point (row-major ``n x n``) onto the doubly stochastic matrices.

        Exactly feasible up to rounding: entries >= 0, row and column sums 1
        within a few ulps (the rounding of Altschuler, Weed & Rigollet 2017,
        Alg. 2, after the semismooth Newton solve of the dual; see
        :mod:`fwmodel.sets._birkhoff_projection`). The multipliers of the
        last call warm-start the next one (:meth:`reset` forgets them). A
        point with a NaN or infinite entry gives NaN everywhere. ``out``: a
        flat array of the set's size (possibly ``flat_point`` itself).
        """
        point = np.asarray(flat_point, dtype=float).reshape(-1)
        if point.size != self.size:
            raise ModelError(f"BirkhoffPolytope: point has {point.size} entries, expected {self.size}")
        X = self._projector(point.reshape(self.n, self.n))
        if out is None:
            return X.reshape(-1)
        out[...] = X.reshape(-1)
        return out

    def reset(self):
        """Forget the projection's warm-start multipliers (each call is correct either way)."""
        self._projector.reset()

    def contains(self, point, tol=1e-9):
        x = as_point(self, point)
        if x is None:
            return False
        slack = tol * max(1.0, np.sqrt(self.n))
        return bool(
            np.all(x >= -tol)
            and np.all(np.abs(x.sum(axis=1) - 1.0) <= slack)
            and np.all(np.abs(x.sum(axis=0) - 1.0) <= slack)
        )

    def coordinate_bounds(self):
        """Every entry lies in [0, 1]."""
        return np.zeros(self.size), np.ones(self.size)

    def diameter(self):
        # two permutation matrices differ in at most 2n unit entries
        return float(np.sqrt(2.0 * self.n)) if self.n > 1 else 0.0

    def symmetric_variant(self):
        """The symmetric doubly stochastic matrices, for ``fm.Variable(..., symmetric=True)``.

        Their vertices are the matrices ``(P + P^T) / 2`` of permutations P
        (Katz 1970), and for a symmetric direction D, ``<D, P^T> = <D, P>``:
        the assignment's permutation, symmetrized, minimizes ``<D, .>`` over
        them. So the iterates stay exactly symmetric (instead of symmetric
        up to the consistency tolerance through equality rows).
        """
        return SymmetrizedVertices(self)


class SymmetricStochastic(SymmetricPart):
    """``Simplex(X, total=t, axis=0 or 1) ∩ {X = X^T}``: symmetric nonnegative matrices whose rows sum to t.

    A symmetric matrix with row sums t has column sums t too, so this is t
    times the symmetric doubly stochastic matrices, with vertices
    ``t (P + P^T) / 2`` (Katz 1970): its LMO is the assignment problem along
    the symmetrized direction, symmetrized. Built by ``Simplex.symmetric_variant``.
    No projection: the rows' simplices are not closed under transposition, so their projection of
    ``sym(P)`` (:class:`SymmetricPart`'s) is not symmetric, not this set's.
    """

    def __init__(self, inner):
        super().__init__(inner)
        self.has_cheap_projection = False

    def lmo_atom(self, flat_direction):
        return self._symmetrized_vertex(assignment_indices, flat_direction)

    def lmo_for_solve(self):
        """A fresh warm-started assignment solver per solve (:class:`WarmStartedAssignment`), exact
        minimizers as :meth:`lmo_atom` (not the inner simplex's LMO, which :class:`SymmetricPart` would pass).
        A subclass that overrides :meth:`lmo_atom` alone gets it here."""
        if type(self).lmo_atom is not SymmetricStochastic.lmo_atom:
            return self.lmo_atom
        solver = WarmStartedAssignment(self._n)
        return lambda flat_direction: self._symmetrized_vertex(solver, flat_direction)

    def _symmetrized_vertex(self, assign, flat_direction):
        """``t (P + P^T) / 2`` for the permutation ``assign`` finds along the symmetrized direction."""
        D = self._sym(as_flat_direction(self, flat_direction)).reshape(self._n, self._n)
        permutation = SparseAtom(assign(D), 1.0, self.size)
        return symmetrized_atom(permutation, self._n, self.size, scale=self.inner.total)
