"""A corrective step on the free coordinates of the current face (all of them together).

FW, away, pairwise and BPCG steps move one atom pair (or, on a box, each
coordinate on its own) per block and iteration. Where the optimum of
L(., y) (paper OPT2) lies inside a face of the product of the sets and the
penalty couples many of that face's coordinates (rows at unit norm whose
columns are nearly parallel), those steps contract the primal error slowly
even at the optimal multipliers (measured 0.998 per iteration on the hinge
models of ``benchmarks/hinge_tails.py``; benchmarks/RESULTS.md, "Oscillations
of the multipliers on hinge budgets"). This step moves every free coordinate
of the current face at once:

* the face: on a box block (``Block.intervals``, per-coordinate steps) the
  coordinates strictly inside their bounds; on a block of simplices moved by
  per-group pairwise steps (``Block.groups``) the entries above 0, each
  group's keeping its sum where the group is at its total; on a polytope
  block with an active set, the convex hull of its active atoms,
  parametrized by their barycentric weights ``w`` (``x_k = A w``,
  ``sum(w) = 1``); other blocks stay where they are;
* the direction: the minimizer of the quadratic model of L(., y) on the
  face's affine hull (``u -> <grad L, D u> + 1/2 u' D' (H_f + lam M'M) D u``,
  D the face's coordinates: identity columns of the free box and simplex
  entries (``sum(du_g) = 0`` per simplex at its total), the atom matrices A
  on the weights with ``sum(dw) = 0`` per block), by a few
  projected conjugate-gradient iterations (the constraint ``sum(dw) = 0`` is
  kept by projecting every residual; a direction of zero curvature, such as a
  linear objective along the kernel of M, is followed to the face's edge);
* the step: an exact line search on the model along ``D u``, truncated by a
  ratio test so that free box entries stay within their bounds and every
  weight stays nonnegative (the active set keeps its invariants: weights
  nonnegative, summing to one, reconstructing x; atoms whose weight reaches
  zero are dropped, a smaller face for the next step).

This is the fully corrective step of Holloway (1974) and of fully
corrective FW (Lacoste-Julien & Jaggi 2015, Sec. 3; "the minimization over
the convex hull of the active set"), taken approximately by CG on the
active atoms' weights, and in the spirit of BPCG's local phase (Tsuji,
Tanaka & Pokutta 2022), here with the penalty's Hessian ``lam (M D)'(M D)``
included, which BPCG's local phase leaves out. The FW-AL structure is
unchanged: the step is a primal corrective step on L(., y_t) taken after the
FW sweep, before the dual step of eq. fwal.

It is taken only where the objective is quadratic or linear (the model is
then exact) and the face is small (``FACE_MAX_DIM`` coordinates in all),
except on simplices moved by projection steps: those find the optimum's
support in bulk, and the step on its face finishes the solve (the
gradient-projection and face phases of More & Toraldo's GPCG), directly up
to ``FACE_MAX_DIM`` coordinates and by CG beyond, whatever the face's size.
Faces of at most ``FACE_DENSE_DIM`` coordinates solve the model directly
from its reduced Hessian, whose columns ``M D e_j`` and ``H_f D e_j`` are
kept from step to step (M is fixed and a quadratic f has a constant
Hessian: a coordinate or atom costs one M product and one gradient when it
first enters a face); larger ones by CG (only with ``face_step=True``: on the TV denoiser of
``benchmarks/zoo.py``, 200 free coordinates, "auto" with CG took 12-15 s
against 0.95 s).

``face_step="auto"`` takes it on faces the direct solve takes whose atom
matrices have at most ``FACE_AUTO_ATOM_ENTRIES`` entries (on the Birkhoff
projection of ``benchmarks/zoo.py``, 900 entries per atom and 40-100 atoms,
steps of 25-40 ms against iterations of 2-3 ms took 2.3-2.8x the time for
207 iterations against 247), and only while it pays:

* until a step has paid, one is tried every ``FACE_CHECK_EVERY`` iterations
  (the face is read only then);
* a step *pays* when it decreases L(., y) by more than 0 and by at least
  ``FACE_PAYOFF`` times what its iteration's FW sweep did; once one has paid
  the step is *engaged*: due at every iteration, whatever the face, and
  judged by a lower bar, ``FACE_KEEP`` (after a dual step the sweep takes the
  bulk of L's decrease and the face step polishes x on the face; on K-sparse
  models that polish was what let the multipliers converge, and a bar of 0.3
  there backed off for 130 iterations of a 240-iteration solve). (An
  earlier rule waited for the face to stay the same for 10 iterations, and
  restarted that count at every change, the face step's own ratio test's
  included: K-sparse and box QPs took 5-20x the iterations of
  ``face_step=True``; benchmarks/RESULTS.md, "The face step's 'auto' gating");
* a step that does not pay makes the next one wait 1, 2, 4, ... iterations
  (at most ``2^FACE_MAX_BACKOFF``; while waiting the face is not even
  read), so that models the FW sweep solves quickly take few such steps;
* a step that would move x by no more than rounding (``FACE_ROUNDING`` of
  the largest entry of the blocks it moves) is not taken at all (x is left bit for bit) and
  does not pay: on degenerate LPs over a simplex the sweep leaves x at the
  face's minimizer, and moves of 1e-18 cost an iteration's time each, were
  counted as paying (a decrease of 0 against a sweep's of 0) and perturbed
  the iterates (5,570 -> 5,970 iterations on one such LP, at 1.4-1.6x the
  time);
* against cycling with stale multipliers (the step minimizes L(., y_t), and
  the dual step then moves y): while engaged, the solve's merit (the stopping
  tests' distance, :meth:`Stopping.merit`) must reach a new best within
  ``FACE_STALL`` iterations; otherwise the step disengages, and until a new
  best merit every step waits ``2^s`` iterations after it, ``s`` the number
  of periods of ``FACE_STALL`` iterations without one (so a face step that
  keeps the solve in a cycle is taken ever more rarely, whatever L(., y_t)
  says of each step alone).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import null_space

from .projection_step import ProjectedBlock
from .steps import GroupPairwiseStep, IntervalStep, _ActiveSetStep
from .vector_ops import dot

#: at most this many face coordinates (free box entries plus active atoms) in all
FACE_MAX_DIM = 400
#: at most this many entries per dense atom matrix (block size times active atoms)
FACE_MAX_ATOM_ENTRIES = 200_000
#: "auto": at most this many entries per dense atom matrix (the direct solve forms A'(H_f + lam M'M)A)
FACE_AUTO_ATOM_ENTRIES = 10_000
#: faces of at most this many coordinates solve the model directly (dense reduced Hessian), larger ones by CG
FACE_DENSE_DIM = 100
#: the direct solve keeps its face's columns as dense arrays of the problem's size (M D, H_f D, D): at most this
#: many entries each, else CG (``face_step=True``) or no step ("auto")
FACE_MAX_DENSE_ENTRIES = 4_000_000
#: "auto": until a step has paid (or after a stall), a step is tried (and the face read) every this many iterations
FACE_CHECK_EVERY = 5
#: "auto": a face step pays when it decreases L(., y) at least this many times as much as its iteration's FW sweep
FACE_PAYOFF = 0.3
#: "auto": once engaged, a step keeps paying while it decreases L(., y) at least this many times as much as the sweep
FACE_KEEP = 0.01
#: "auto": after steps that did not pay, the next waits 2^j iterations, j at most this
FACE_MAX_BACKOFF = 6
#: "auto": an engaged face step disengages after this many iterations without a new best merit (50 fired on
#: a hinge model the step was solving: 1,226 iterations against 225; the merit plateaus while y converges)
FACE_STALL = 200
#: a step moving x by at most this fraction of its blocks' largest entry is rounding: not taken
FACE_ROUNDING = 1e-13
#: at most this many cached columns (M D e_j and H_f D e_j of face coordinates seen)
FACE_MAX_COLUMNS = 2000
#: at most this many CG iterations per step
FACE_CG_ITERS = 50
#: CG stops once its residual is below this fraction of the first
FACE_CG_RTOL = 1e-10
#: a box entry within this fraction of its interval's width of a bound is at that bound
BOUND_TOL = 1e-12


class _BoxPart:
    """A box block's free entries (strictly inside their bounds)."""

    def __init__(self, k, block, step, lo, hi):
        self.k, self.sl, self.step, self.lo, self.hi = k, block.slice, step, lo, hi
        self.width = np.maximum(hi - lo, 0.0)
        margin = BOUND_TOL * self.width  # (relative: a box of width 1e-6 is no narrower to the step)
        self._lo_in, self._hi_in = lo + margin, hi - margin

    def column_keys(self):
        return [("e", self.k, int(j)) for j in self.free]

    def count_free(self, x):
        """How many entries are strictly inside their bounds (kept for :meth:`face`)."""
        x_k = x[self.sl]
        self._mask = (x_k > self._lo_in) & (x_k < self._hi_in)
        return int(np.count_nonzero(self._mask))

    def face(self, x):
        self.free = np.flatnonzero(self._mask)

    @property
    def dim(self):
        return self.free.size

    def expand(self, u, out):
        """out[block] = D_k u (u: the free entries' moves)."""
        out[self.sl.start + self.free] = u

    def restrict(self, v):
        """D_k' v."""
        return v[self.sl.start + self.free]

    def project(self, u):
        return u

    def sum_rows(self):
        return np.zeros((0, self.dim))  # no constraint inside the box's face

    def max_step(self, x, u):
        """The largest gamma with x + gamma D u inside the box."""
        x_f = x[self.sl.start + self.free]
        lo, hi = self.lo[self.free], self.hi[self.free]
        up, down = u > 0, u < 0
        caps = np.concatenate([(hi[up] - x_f[up]) / u[up], (lo[down] - x_f[down]) / u[down]])
        return float(caps.min()) if caps.size else np.inf

    def apply(self, x, u, gamma):
        """x += gamma D u, snapped to the bounds it reached; returns the block's move (its slice, a copy)."""
        idx = self.sl.start + self.free
        old = x[idx].copy()
        new = np.clip(old + gamma * u, self.lo[self.free], self.hi[self.free])
        x[idx] = new
        d = np.zeros(self.sl.stop - self.sl.start)
        d[self.free] = new - old
        return d


class _GroupPart:
    """A block of simplices (``Block.groups``) moved by per-group pairwise steps
    (:class:`~fwmodel.engine.steps.GroupPairwiseStep`) or by projection steps: its face is the entries strictly
    above 0, each group's free entries keeping their sum where the group is at
    its total (always for ``sum == t``; for ``sum <= t`` only where no room is left, else the sum may grow up to
    the total). The coordinates are the free entries themselves (identity columns, as a box's): a dense optimum
    over a simplex (a minimum-variance portfolio, every weight positive) is reached by pairwise steps one pair
    at a time, here in one step of the face's model."""

    def __init__(self, k, block, step):
        self.k, self.sl, self.step = k, block.slice, step
        groups = block.groups
        index = np.asarray(groups.index)
        self.index = index
        self.total = np.broadcast_to(np.asarray(groups.total, dtype=float), (index.shape[0],))
        self.origin = bool(getattr(groups, "origin", False))
        self.group_of = np.empty(index.size, dtype=np.intp)  # each block entry's group
        self.group_of[index.ravel()] = np.repeat(np.arange(index.shape[0]), index.shape[1])
        self._margin = BOUND_TOL * self.total[self.group_of]  # (relative to its group's total)

    def column_keys(self):
        return [("e", self.k, int(j)) for j in self.free]

    def count_free(self, x):
        self._mask = x[self.sl] > self._margin
        return int(np.count_nonzero(self._mask))

    def face(self, x):
        self.free = np.flatnonzero(self._mask)
        self.coordinate_group = self.group_of[self.free]  # each face coordinate's group
        keep = np.ones(self.total.size, dtype=bool)  # groups whose sum stays as it is
        if self.origin:
            sums = np.bincount(self.group_of, weights=x[self.sl], minlength=self.total.size)
            self.room = np.maximum(self.total - sums, 0.0)
            keep = self.room <= BOUND_TOL * self.total
        # (per coordinate, vectorized: a block of thousands of groups is read at every step of its CG)
        self.kept = keep[self.coordinate_group]  # the coordinates whose group keeps its sum
        self.count = np.bincount(self.coordinate_group, minlength=self.total.size)

    @property
    def dim(self):
        return self.free.size

    def sum_rows(self):
        """Rows of the face's constraints ``sum(du_g) = 0`` over the face's coordinates of this part, one per
        kept group with face coordinates."""
        at = np.flatnonzero(self.kept)
        groups, row = np.unique(self.coordinate_group[at], return_inverse=True)
        rows = np.zeros((groups.size, self.dim))
        rows[row, at] = 1.0
        return rows

    def expand(self, u, out):
        out[self.sl.start + self.free] = u

    def restrict(self, v):
        return v[self.sl.start + self.free]

    def project(self, u):
        """u with each kept group's mean over its face coordinates taken out (``sum(du_g) = 0``)."""
        means = np.bincount(self.coordinate_group, weights=u, minlength=self.total.size) / np.maximum(self.count, 1)
        return u - np.where(self.kept, means[self.coordinate_group], 0.0)

    def max_step(self, x, u):
        """The largest gamma keeping the entries >= 0 and, in a group with room, its sum <= its total."""
        x_f = x[self.sl.start + self.free]
        down = u < 0
        caps = [(x_f[down] / -u[down])] if down.any() else []
        if self.origin:
            grow = np.bincount(self.coordinate_group, weights=u, minlength=self.total.size)
            up = grow > 0
            if up.any():
                caps.append(self.room[up] / grow[up])
        caps = np.concatenate(caps) if caps else np.zeros(0)
        return float(caps.min()) if caps.size else np.inf

    def apply(self, x, u, gamma):
        idx = self.sl.start + self.free
        old = x[idx].copy()
        new = np.maximum(old + gamma * u, 0.0)  # (an entry the ratio test took to 0 is 0, not -1e-18)
        x[idx] = new
        d = np.zeros(self.sl.stop - self.sl.start)
        d[self.free] = new - old
        return d


class _AtomPart:
    """A polytope block with an active set: its face is the hull of the active atoms (barycentric weights)."""

    def __init__(self, k, block, step):
        self.k, self.sl, self.step = k, block.slice, step
        self.size = block.size

    def face(self, x):
        self.atoms = self.step.active.atoms

    def column_keys(self):
        return [("a", self.k, a.key) for a in self.atoms]

    @property
    def dim(self):
        return len(self.atoms)

    def sum_rows(self):
        return np.ones((1, self.dim))  # sum(dw) = 0

    def build(self):
        """The atom matrix A (block size x atoms), dense, and the atoms' weights."""
        self.w = self.step.active.weights
        A = np.zeros((self.size, len(self.atoms)))
        col = np.zeros(self.size)
        for j, atom in enumerate(self.atoms):
            col.fill(0.0)
            atom.add_to(col, 1.0)
            A[:, j] = col
        self.A = A

    def expand(self, u, out):
        out[self.sl] = self.A @ u

    def restrict(self, v):
        return self.A.T @ v[self.sl]

    def project(self, u):
        return u - u.mean()  # keeps sum(w) = 1

    def max_step(self, x, u):
        down = u < 0
        return float((self.w[down] / -u[down]).min()) if down.any() else np.inf

    def apply(self, x, u, gamma):
        w = self.w + gamma * u
        w[w < 0] = 0.0
        active = self.step.active
        if active.atoms != self.atoms:  # cannot happen: the face was read this iteration
            raise RuntimeError("face step: the active set changed under the step")
        active.set_weights(w / w.sum())
        old = x[self.sl].copy()
        new = active.dense(self.size)
        x[self.sl] = new
        return new - old


class FaceStep:
    """The corrective step of the module docstring (``kind``, ``blocks``, ``take(lagrangian, it)``)."""

    kind = "face"

    def __init__(self, blocks, steps, mode="auto"):
        self.parts = []
        for k, (blk, st) in enumerate(zip(blocks, steps)):
            if isinstance(st, IntervalStep):
                self.parts.append(_BoxPart(k, blk, st, np.asarray(st.lo, float) * np.ones(blk.size),
                                           np.asarray(st.hi, float) * np.ones(blk.size)))
            elif isinstance(st, _ActiveSetStep) and blk.is_polytope:
                self.parts.append(_AtomPart(k, blk, st))
            elif blk.groups is not None and isinstance(st, (GroupPairwiseStep, ProjectedBlock)):
                # (a projected simplex too: its projection steps find the optimum's support, every entry at
                # once, and the face step solves the model on it: the gradient-projection and face phases of
                # More & Toraldo's GPCG)
                self.parts.append(_GroupPart(k, blk, st))
        self.blocks = [p.k for p in self.parts]
        self.steps = steps  # the driver's list: a block switched to projection steps leaves the face step
        self.always = mode is True
        self._skip, self._backoff, self._L_start, self._tick = 0, 0, None, 0
        # "auto": engaged (the last step paid: the next is due whatever the face), the stall guard's best merit,
        # iterations engaged since it, and stalls since it
        self._engaged, self._best, self._since_best, self._stalls = False, np.inf, 0, 0
        self._columns = {}  # column key -> (M D e_j, H_f D e_j): constant within the solve (M fixed, f quadratic)
        self._dense_dim = FACE_DENSE_DIM  # the largest face solved directly (set with the face, :meth:`_due`)
        self._projected_face = False
        self.taken = 0

    def _due(self, x):
        """Read the current face; whether a step is due on it, and the parts with free coordinates."""
        # (a block switched to other steps leaves, but a simplex's face is read from its point alone)
        self.parts = [p for p in self.parts if self.steps[p.k] is p.step or isinstance(p, _GroupPart)]
        self._tick += 1
        if not self.always:
            if self._skip > 0:  # "auto", backing off after a step that did not pay: the face is not even read
                self._skip -= 1
                return None
            if not self._engaged and self._tick % FACE_CHECK_EVERY:  # not engaged: a trial every few iterations
                return None
        counts = [len(p.step.active) if isinstance(p, _AtomPart) else p.count_free(x) for p in self.parts]
        total = sum(counts)
        # entries of projected simplices: their projection steps found the face in bulk, and its solve is the
        # finishing phase (a vertex-stepped block's face grows by about one coordinate per iteration, and a
        # solve per iteration of a large face costs more than it saves: the TV denoiser and the MAP LP of
        # benchmarks/zoo.py took 8x and 6x their time with 400): outside the dense limit, solved directly up
        # to FACE_MAX_DIM coordinates and by CG beyond (1,000-3,000 weights: 8-34 iterations)
        projected = sum(c for p, c in zip(self.parts, counts)
                        if isinstance(p, _GroupPart) and not isinstance(self.steps[p.k], GroupPairwiseStep))
        self._dense_dim = FACE_DENSE_DIM if not projected else FACE_MAX_DIM
        self._projected_face = projected > 0
        limit = FACE_MAX_DIM if self.always else FACE_DENSE_DIM
        if total - projected > limit or (total > FACE_MAX_DIM and not projected):
            # (a large face: no step, and its free entries and atoms are not even listed)
            self._engaged = False
            return None
        for p in self.parts:
            p.face(x)
        parts = [p for p in self.parts if p.dim > (1 if isinstance(p, _AtomPart) else 0)]
        if not parts or (sum(p.dim for p in parts) > FACE_MAX_DIM and not projected):
            return None
        entries = FACE_MAX_ATOM_ENTRIES if self.always else FACE_AUTO_ATOM_ENTRIES
        if any(isinstance(p, _AtomPart) and p.size * p.dim > entries for p in parts):
            return None
        return parts

    def observe(self, it, merit=np.inf):
        """L(x, y) at the start of the iteration (before the FW sweep), to weigh the face step's decrease;
        ``merit`` (the stopping tests' distance at this iterate, :meth:`Stopping.merit`) feeds the stall guard."""
        self._L_start = None
        if not self.blocks or self.always:
            return
        self._stall_guard(merit)
        if self._skip == 0 and (self._engaged or (self._tick + 1) % FACE_CHECK_EVERY == 0):
            self._L_start = self._lagrangian_value(it)  # (only where this iteration may take a step)

    def _stall_guard(self, merit):
        """Against cycling: engaged steps must see a new best merit within FACE_STALL iterations. A stall
        disengages the step; until a new best merit, every FACE_STALL iterations count one more stall, and every
        step waits 2^stalls iterations (at most 2^FACE_MAX_BACKOFF) after it.

        The step minimizes L(., y_t) on the face; the dual step then moves y, and a step repeated on stale
        multipliers can pull x back and forth between faces (or along one) while each step alone pays."""
        if merit < self._best:
            self._best, self._since_best, self._stalls = merit, 0, 0
            return
        if not (self._engaged or self._stalls):  # (counted while engaged, and after a stall until a new best)
            return
        self._since_best += 1
        if self._since_best >= FACE_STALL:
            self._stalls += 1
            self._engaged, self._since_best = False, 0
            self._skip = max(self._skip, 2 ** min(self._stalls, FACE_MAX_BACKOFF))

    @staticmethod
    def _lagrangian_value(it):
        return it.f + dot(it.y, it.r) + 0.5 * it.lam * dot(it.r, it.r) if it.r.size else it.f

    def _weigh(self, L_sweep, L_face):
        """Under "auto": a face step pays when it decreases L(., y) at least PAYOFF times as much as the FW sweep
        of its iteration did; after one that does not, the next ones wait 1, 2, 4, ... iterations (at most
        MAX_BACKOFF), and a step that pays takes them back to every iteration."""
        if self.always or self._L_start is None:
            return
        sweep = self._L_start - L_sweep
        face = L_sweep - L_face
        if face > 0 and face >= (FACE_KEEP if self._engaged else FACE_PAYOFF) * max(sweep, 0.0):
            self._backoff = 0
            if self._stalls:  # stalled since the last best merit: no engagement, a wait after each step
                self._skip, self._engaged = 2 ** min(self._stalls, FACE_MAX_BACKOFF), False
            elif not self._engaged:
                self._engaged, self._since_best = True, 0
        else:
            self._miss()

    def _no_step(self, L_sweep):
        """No move (no descent direction, or one at rounding level): under "auto" a step that did not pay."""
        if L_sweep is not None and self._L_start is not None:
            self._miss()
        return 0

    def _miss(self):
        """A step that did not pay (or was not taken, being rounding): the next waits 2^backoff iterations."""
        if self.always:
            return
        self._skip = 2 ** min(self._backoff, FACE_MAX_BACKOFF)
        self._backoff += 1

    def take(self, lagrangian, it):
        """Move ``it`` (x and r in place, f and g refreshed) by one face step; returns 1 if it moved, else 0."""
        objective = lagrangian.objective
        if not (lagrangian.quadratic or getattr(objective, "is_linear", False)):
            return 0
        parts = self._due(it.x)
        if parts is None:
            return 0
        L_sweep = None if self.always else self._lagrangian_value(it)
        for p in parts:
            if isinstance(p, _AtomPart):
                p.build()
        Mop, lam, n = lagrangian.Mop, it.lam, it.x.size
        linear = bool(getattr(objective, "is_linear", False))
        sizes = [p.dim for p in parts]
        cuts = np.cumsum([0] + sizes)
        dx = np.zeros(n)

        def expand(u):
            dx.fill(0.0)
            for p, a, b_ in zip(parts, cuts[:-1], cuts[1:]):
                p.expand(u[a:b_], dx)
            return dx

        def restrict(v):
            return np.concatenate([p.restrict(v) for p in parts])

        def project(u):
            return np.concatenate([p.project(u[a:b_]) for p, a, b_ in zip(parts, cuts[:-1], cuts[1:])])

        g_f = np.asarray(it.g, dtype=float)  # (a lent gradient reads as an array)
        # grad L = g + M' (y + lam r)
        grad = g_f + Mop.rmatvec(it.y + lam * it.r) if lagrangian.m else g_f.copy()
        q = restrict(grad)
        self._model_curvature = None
        if cuts[-1] <= self._dense_dim and n * cuts[-1] <= FACE_MAX_DENSE_ENTRIES:
            u = self._dense_direction(parts, cuts, q, lagrangian, it, linear)
        elif self.always or self._projected_face:
            u = self._cg_direction(parts, cuts, q, lagrangian, it, linear, expand, restrict, project)
        else:  # "auto" takes the direct solve only: its columns would not fit
            return self._no_step(L_sweep)
        if u is None:
            return self._no_step(L_sweep)
        slope = dot(q, u)
        if not slope < 0:
            return self._no_step(L_sweep)
        d = expand(u).copy()
        curvature = self._model_curvature
        if curvature is None:
            Md = Mop.matvec(d) if lagrangian.m else None
            curvature = lam * dot(Md, Md) if Md is not None else 0.0
            if not linear:
                curvature += dot(d, np.asarray(objective.value_and_grad(it.x + d)[1], dtype=float) - g_f)
        gamma_max = min(p.max_step(it.x, u[a:b_]) for p, a, b_ in zip(parts, cuts[:-1], cuts[1:]))
        gamma = -slope / curvature if curvature > 0 else np.inf
        gamma = min(gamma, gamma_max)
        if not (np.isfinite(gamma) and gamma > 0):
            return self._no_step(L_sweep)
        # a move at rounding level leaves x as it is (it would only perturb the iterates: the sweep already
        # left x at the face's minimizer)
        reach = max(float(np.abs(it.x[p.sl]).max()) if p.sl.stop > p.sl.start else 0.0 for p in parts)
        if gamma * float(np.abs(d).max()) <= FACE_ROUNDING * reach:
            return self._no_step(L_sweep)
        moved = np.zeros(n)
        for p, a, b_ in zip(parts, cuts[:-1], cuts[1:]):
            moved[p.sl] = p.apply(it.x, u[a:b_], gamma)
        if lagrangian.m:
            it.r += Mop.matvec(moved)
        it.f, it.g = getattr(objective, "value_and_grad_shared", objective.value_and_grad)(it.x)
        if L_sweep is not None:
            self._weigh(L_sweep, self._lagrangian_value(it))
        self.taken += 1
        return 1

    def _dense_direction(self, parts, cuts, q, lagrangian, it, linear):
        """The model's minimizer on the face's affine hull from its reduced Hessian, formed column by column.

        ``H = D' (H_f + lam M'M) D`` on an orthonormal basis Z of ``sum(dw) = 0`` per atom block;
        where f's slope has a part in the kernel of ``Z' H Z`` (a linear f along a direction M does not
        see) that part alone is the direction (zero curvature: the ratio test ends it), else the
        Newton step ``-(Z' H Z)^+ Z' q``.
        """
        Mop, lam, n, N = lagrangian.Mop, it.lam, it.x.size, int(cuts[-1])
        D = np.zeros((n, N))
        C = []
        for p, a, b_ in zip(parts, cuts[:-1], cuts[1:]):
            if isinstance(p, _AtomPart):
                D[p.sl, a:b_] = p.A
            else:
                D[p.sl.start + p.free, np.arange(a, b_)] = 1.0
            for part_row in p.sum_rows():  # (sum(dw) = 0 on an atom block; sum(du_g) = 0 per group at its total)
                row = np.zeros(N)
                row[a:b_] = part_row
                C.append(row)
        keys = [key for p in parts for key in p.column_keys()]
        if len(self._columns) + N > FACE_MAX_COLUMNS:
            self._columns = {}
        MD = np.zeros((lagrangian.m, N))
        HfD = None if linear else np.zeros((n, N))
        for j, key in enumerate(keys):
            col = self._columns.get(key)
            if col is None:  # M D e_j and H_f D e_j (a gradient difference: exact for a quadratic f)
                col = self._columns[key] = (
                    Mop.matvec(D[:, j]) if lagrangian.m else None,
                    None if linear else np.asarray(lagrangian.objective.value_and_grad(it.x + D[:, j])[1], dtype=float)
                    - np.asarray(it.g, dtype=float))
            if lagrangian.m:
                MD[:, j] = col[0]
            if not linear:
                HfD[:, j] = col[1]
        H = lam * (MD.T @ MD)
        if not linear:
            Hf = D.T @ HfD
            H += 0.5 * (Hf + Hf.T)
        # each part in its own units (one factor per part keeps sum(dw) = 0): atoms of 1e-6 next to box
        # entries of 1 gave curvatures 1e12 apart, and the small ones were taken for a kernel
        diag = np.maximum(np.diag(H), 0.0)
        scale = np.ones(N)
        for a, b_ in zip(cuts[:-1], cuts[1:]):
            mean = float(diag[a:b_].mean()) if b_ > a else 0.0
            if mean > 0:
                scale[a:b_] = 1.0 / np.sqrt(mean)
        Hs, qs = H * np.outer(scale, scale), q * scale
        Z = null_space(np.array(C)) if C else np.eye(N)
        if Z.shape[1] == 0:
            return None
        Hz, qz = Z.T @ Hs @ Z, Z.T @ qs
        ev, V = np.linalg.eigh(Hz)
        zero = ev <= 1e-10 * max(float(ev[-1]), 0.0) + 1e-300
        qv = V.T @ qz
        kernel = V[:, zero] @ qv[zero]
        if np.linalg.norm(kernel) > 1e-8 * np.linalg.norm(qz):
            v = -kernel
        else:
            v = -V[:, ~zero] @ (qv[~zero] / ev[~zero])
        u = scale * (Z @ v)
        self._model_curvature = float(u @ H @ u)  # u' D'(H_f + lam M'M) D u, for the line search
        return u

    @staticmethod
    def _cg_direction(parts, cuts, q, lagrangian, it, linear, expand, restrict, project):
        """The model's minimizer by projected CG (larger faces): products with M and f's gradient only."""
        Mop, lam, n = lagrangian.Mop, it.lam, it.x.size
        objective, g_f = lagrangian.objective, np.asarray(it.g, dtype=float)

        def hess(u):
            """D' (H_f + lam M'M) D u."""
            d = expand(u)
            hv = Mop.rmatvec(Mop.matvec(d)) * lam if lagrangian.m else np.zeros(n)
            if not linear:  # H_f d = grad f(x + d) - grad f(x) (exact for a quadratic f)
                hv = hv + (np.asarray(objective.value_and_grad(it.x + d)[1], dtype=float) - g_f)
            return restrict(hv)

        u = np.zeros(cuts[-1])
        res = -project(q)
        res0 = float(np.linalg.norm(res))
        if res0 == 0.0:
            return None
        p_dir = res.copy()
        rr = dot(res, res)
        top = 0.0  # the largest curvature per unit length seen (zero curvature: relative to it, in any units)
        for _ in range(min(FACE_CG_ITERS, cuts[-1])):
            hp = project(hess(p_dir))
            curv = dot(p_dir, hp)
            per_length = curv / dot(p_dir, p_dir)
            top = max(top, per_length)
            if curv <= 0 or per_length <= 1e-12 * top:
                if not u.any():  # zero curvature from the start: follow the descent direction to the edge
                    u = p_dir
                break
            alpha = rr / curv
            u += alpha * p_dir
            res -= alpha * hp
            rr_new = dot(res, res)
            if np.sqrt(rr_new) <= FACE_CG_RTOL * res0:
                break
            p_dir = res + (rr_new / rr) * p_dir
            rr = rr_new
        return u
