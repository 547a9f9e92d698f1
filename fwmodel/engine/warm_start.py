"""The first iterate of a solve: a cold start at the sets' initial vertices, or a warm start from a saved state.

Every block's iterate is a point of its set. Blocks whose steps keep an
active set (away, pairwise, BPCG: paper eq. active_set_decomposition,
x = sum_v alpha_v v with alpha in the simplex) start from one vertex with
weight 1; low-rank blocks with in-face steps also track their atoms.

A warm start (:class:`~fwmodel.engine.result.SolverState`) trusts an
incoming active set only if it is a valid decomposition, and makes it the
source of truth for its block (x[block] = its point): a state saved by an
interrupted solve must not let away or pairwise steps leave the set. Sound
sets are copied (rebuilt), so the solve never modifies the state it was
given and an interrupt cannot leave that state half-updated. The same
soundness test repairs the active sets after an interrupt
(:func:`make_active_sets_consistent`).
"""
from __future__ import annotations

import numpy as np

from .active_set import ActiveSet


def is_sound(aset):
    """True when an active set is a valid decomposition: as many weights as atoms, positive, summing to one.

    Paper eq. (active_set_decomposition): x = sum_v alpha_v v with alpha in
    the simplex. An update cut short (an interrupt between changing the
    weights and the atoms) breaks this.
    """
    try:
        atoms = list(aset.atoms)
        weights = np.asarray(aset.weights, dtype=float)
    except Exception:  # a half-built object: not usable whatever went wrong
        return False
    return (len(atoms) == weights.size == len(aset) > 0 and bool(np.all(np.isfinite(weights)))
            and bool(np.all(weights > 0)) and abs(float(weights.sum()) - 1.0) <= 1e-8)


def rebuilt_active_set(aset):
    """A fresh ActiveSet with the same atoms and weights (its internal indexes rebuilt from scratch)."""
    atoms, weights = list(aset.atoms), [float(w) for w in aset.weights]
    from_atoms = getattr(ActiveSet, "from_atoms", None)
    if from_atoms is not None:
        return from_atoms(atoms, weights)
    fresh = ActiveSet(atoms[0])
    total = weights[0]
    for atom, w in zip(atoms[1:], weights[1:]):
        # adding atom with step w / (total + w) scales the earlier weights by total / (total + w)
        total += w
        fresh.fw_update(atom, w / total)
    return fresh


def make_active_sets_consistent(blocks, x, active, faces):
    """After an interrupt: every kept active set is rebuilt and x[block] set to its point.

    An interrupt between ``x += gamma d`` and the active-set update leaves the
    set describing the previous point; one inside an update can leave its
    internal index stale. A sound set is rebuilt (fresh internals) and its
    point, a point of the block's set, becomes x[block]; an unsound one is
    dropped (x[block], which only moves by convex combinations, stays; a warm
    start then restarts that block).
    """
    for table in (active, faces):
        for k, aset in list(table.items()):
            if not is_sound(aset):
                del table[k]
                continue
            fresh = rebuilt_active_set(aset)
            x[blocks[k].slice] = _block_point(blocks[k], fresh, table is faces)
            table[k] = fresh


def _block_point(blk, aset, on_face):
    """The block's x for an active set: its point, mapped from the ball's coordinate when the set is
    a low-rank face's over an affine map (:class:`~fwmodel.engine.inface.LowRankFace`)."""
    point = aset.dense(blk.size)
    return blk.face.block_point(point) if on_face else point


def _wants_active_set(blk, step):
    """Whether the block's step under option ``step`` keeps an explicit active set."""
    if blk.groups is not None and step in ("pairwise", "auto"):  # per-group pairwise steps: the atoms are implicit
        return False
    if blk.intervals is not None and step == "auto":  # per-coordinate steps: no atoms
        return False
    if blk.batch_group_size is not None and step == "auto":  # the step keeps one active set per group
        return False
    return blk.is_polytope and (step != "auto" or blk.active_set_steps)


def initial_point(blocks, n, m, warm_state, step, proj_blocks, face_blocks):
    """The first iterate: (x, y, active sets by block, low-rank faces by block).

    ``proj_blocks`` move by projections (no vertex bookkeeping);
    ``face_blocks`` take in-face steps (their atoms are tracked, while their
    main step stays a plain FW step, Alg. 2). Without a warm state every block
    starts at its set's initial vertex and y = 0, returned as None (the driver
    makes the zeros after its setup, which does not read y: at d = 4000 one
    full-size array less at the setup's peak memory); with a warm state, x and
    y are copied from it and a block without a usable active set resumes from
    its point where its set writes the point as atoms (``Block.atoms_of_point``:
    an L1 ball after projection steps), else restarts from its initial vertex.
    """
    use_active = step in ("auto", "away", "pairwise")
    if warm_state is not None:
        x = np.array(warm_state.x, dtype=float).ravel()
        if x.shape != (n,):
            raise ValueError(f"warm_state.x has {x.size} entries but the blocks have {n}")
        y = warm_state.y.copy() if warm_state.y.shape == (m,) else np.zeros(m)
        active = {}
        for k, aset in warm_state.active_sets.items():
            if isinstance(k, tuple) or not 0 <= k < len(blocks) or not is_sound(aset):
                continue
            active[k] = rebuilt_active_set(aset)
            x[blocks[k].slice] = active[k].dense(blocks[k].size)
    else:
        x = np.zeros(n)
        y = None
        active = {}
    for k in proj_blocks:  # these blocks move by projections: no vertex bookkeeping
        active.pop(k, None)
    for k, blk in enumerate(blocks):
        if use_active and _wants_active_set(blk, step) and k not in active and k not in proj_blocks:
            if warm_state is None:
                atom = blk.initial_atom()
                active[k] = ActiveSet(atom)
            else:
                # Warm start without an active set for this block (the last solve projected it, or
                # took other steps): its point as atoms where the set knows them, else a restart
                found = blk.atoms_of_point(x[blk.slice]) if blk.atoms_of_point is not None else None
                if found is not None:
                    active[k] = ActiveSet.from_atoms(*found)
                    x[blk.slice] = active[k].dense(blk.size)
                    continue
                atom = blk.initial_atom()
                active[k] = ActiveSet(atom)
                x[blk.slice] = 0.0
                atom.add_to(x[blk.slice], 1.0)
                continue
            atom.add_to(x[blk.slice], 1.0)
        elif warm_state is None:
            blk.initial_atom().add_to(x[blk.slice], 1.0)
    if not use_active:
        active = {}
    faces = {}
    for k in face_blocks:
        blk = blocks[k]
        aset = warm_state.active_sets.get(("face", k)) if warm_state is not None else None
        if aset is not None and is_sound(aset):
            aset = rebuilt_active_set(aset)
            x[blk.slice] = _block_point(blk, aset, True)
        else:
            atom = blk.initial_atom()
            aset = ActiveSet(blk.face.atom_on_face(atom))
            if warm_state is not None:  # restart this block from its initial point
                x[blk.slice] = 0.0
                atom.add_to(x[blk.slice], 1.0)
        faces[k] = aset
    return x, y, active, faces


#: a warm start whose units moved more than this (either way) since its state was saved restarts its
#: duals (y = 0, the cold penalty and dual step) from the warm point: benchmarks/warm_parameters.py
#: (benchmarks/RESULTS.md, "Warm starts after a Parameter change")
DUALS_APART = 10.0


def data_changed(state):
    """Whether the data moved since ``state`` was saved (a Parameter's value: ``restart_changed_blocks``)."""
    return state is not None and bool(getattr(state, "data_changed", False))


def in_new_units(state, scales):
    """The warm state's duals carried to the units of the data now, or restarted: ``(state, y_factor)``.

    What a warm start carries and what it depends on: the point and its
    active sets are points of the sets (``CompiledProblem.restart_changed_blocks``
    restarts the blocks whose sets changed); the multipliers y have the units
    of f / ||Mx - b||, the penalty lam and the dual step eta those of
    f / ||Mx - b||^2 (:mod:`fwmodel.engine.schedules`), and the backtracking
    Lipschitz estimate those of L's curvature. ``scales`` = (S_f, lam_0) of
    the data now: the stopping rule's objective scale (f's FW gap at the cold
    starting point, :mod:`fwmodel.engine.stopping`) and the penalty a cold
    start takes (``default_penalty``: f's curvature, or slope, along the
    first FW direction over ||M d||^2); the state keeps those of the solve
    that left it (``reference_scales``). y's units are sqrt(lam_0 S_f).

    Where the data did not change (``data_changed``), the state is used as it
    is. Where both scales moved by at most ``DUALS_APART``, y is multiplied by
    sqrt((S_f'/S_f) (lam_0'/lam_0)) and lam and eta by lam_0'/lam_0 (exact
    for an objective rescaled as a whole), and the Lipschitz estimate is
    measured again at the warm point. Farther apart, the old multipliers and
    penalty are a guess in other units (a weight 1e4 -> 1e-4 on a
    least-squares term ran the warm start to max_iter, 10,000 iterations,
    where a cold solve takes 56): the duals restart as a cold solve's
    (``y_factor`` 0; ``lam`` and ``eta`` None: the engine's cold defaults),
    from the warm point.
    """
    if not data_changed(state):
        return state, 1.0
    from .result import SolverState

    old = getattr(state, "reference_scales", None)
    ratios = [_ratio(new, was) for new, was in zip(scales, old)] if old is not None else [None]
    if all(r is not None and max(r, 1.0 / r) <= DUALS_APART for r in ratios):
        s_ratio, lam_ratio = ratios
        y_factor = float(np.sqrt(s_ratio * lam_ratio))
        lam = state.lam * lam_ratio if state.lam is not None else None
        eta = state.eta * lam_ratio if state.eta else state.eta
    else:
        y_factor, lam, eta = 0.0, None, None
    carried = SolverState(state.x, state.y, state.active_sets, lam, eta, None,
                          row_norms=getattr(state, "row_norms", None))
    carried.reference_scales = old
    carried.looseness = getattr(state, "looseness", None)
    return carried, y_factor


def _ratio(new, old):
    """new / old for two positive finite scales, else None (a scale unknown: 0 or None)."""
    if new is not None and old is not None and new > 0 and old > 0 and np.isfinite(new) and np.isfinite(old):
        return new / old
    return None


#: at most this many LMO calls per block for :func:`interior_start` (one per coordinate where the
#: objective's gradient is not finite); past it the first coordinates of the block are taken
INTERIOR_START_LMOS = 4096


def interior_start(blocks, x, active, faces, g):
    """A cold starting point where the objective is finite, when it is not at the sets' initial vertices.

    An objective that is infinite on part of the sets' boundary (``-log(z)`` on a box ``0 <= z <= 1``, the
    box's implied domain; ``-log`` on a simplex) is infinite at the vertices the iterates start from
    (:func:`initial_point`: the origin or the LMO of a zero direction), and the solve ended "diverged" at
    iteration 0, where CVXPY solves it. Frank-Wolfe needs a first point in the set (Alg. 1, x_0 in X), not a
    vertex: each block whose slice of the gradient has entries that are not finite moves to the uniform mean
    of its starting atom(s) and, per such coordinate j, the vertex that goes furthest in the direction the
    gradient asks: ``LMO(-e_j)`` where ``g_j = -inf`` (``-log(z_j)`` at ``z_j = 0``), ``LMO(e_j)`` where
    ``+inf``, both where NaN. The mean is a point of the set (a convex combination of its atoms, kept as
    the block's active set), and each such coordinate lies strictly inside its range over the set unless the
    set fixes it. Blocks with a low-rank face (``faces``: trace-norm balls) are left as they are.
    ``g``: the objective's gradient at ``x``, as the caller already has it (only which of its entries are not
    finite, and their signs, are read). ``x`` is changed in place; returns whether any block moved.
    """
    g = np.asarray(g, dtype=float).ravel()
    moved = False
    for k, blk in enumerate(blocks):
        if k in faces:
            continue
        gk = g[blk.slice]
        bad = np.flatnonzero(~np.isfinite(gk))
        if bad.size == 0:
            continue
        bad = bad[:INTERIOR_START_LMOS]
        aset = active.get(k)
        atoms = list(aset.atoms) if aset is not None else []
        weights = list(aset.weights) if aset is not None else []
        start = None
        if not atoms:  # a block without an active set: its current point counts as one atom
            start = x[blk.slice].copy()
        direction = np.zeros(blk.size)
        found = []
        for j in bad:
            for sign in ((-1.0,) if gk[j] == -np.inf else (1.0,) if gk[j] == np.inf else (-1.0, 1.0)):
                direction[j] = sign
                found.append(blk.lmo(direction.copy()))
                direction[j] = 0.0
        share = 1.0 / (len(found) + 1)
        if aset is not None:
            active[k] = ActiveSet.from_atoms(atoms + found, [w * share for w in weights] + [share] * len(found))
            x[blk.slice] = active[k].dense(blk.size)
        else:
            point = start * share
            for atom in found:
                atom.add_to(point, share)
            x[blk.slice] = point
        moved = True
    return moved
