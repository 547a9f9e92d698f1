"""In-face corrective steps for low-rank (trace-norm ball) blocks.

Plain Frank-Wolfe on a trace-norm ball converges sublinearly: each step adds
one rank-one atom and only shrinks the others uniformly, so the iterate zig-
zags between atoms long after the right low-rank subspace has been found.
In-face methods (Freund, Grigas & Mazumder, "An extended Frank-Wolfe method
with in-face directions", 2017) also move *within the face* spanned by the
current atoms. Here that face is explicit: the block's iterate is

    X = sum_i w_i s_i u_i v_i'  =  U C V'   (U, V orthonormal, k columns),

(for a ball of an affine expression, ``TraceNormBall(a X + c)``, this is
Z = a X + c, the ball's own point: :class:`LowRankFace` carries the map)

and the face of the ball {||X||_* <= beta} through X is {U C' V' : ||C'||_* <=
beta}, a k x k problem. One corrective step takes a projected-gradient step
on C (the projection onto a k x k nuclear ball is an SVD of a k x k matrix,
negligible next to the O(d^2) passes), then an exact or backtracking line
search on the augmented Lagrangian along the resulting direction, and
re-expresses the new C by its SVD, which also drops atoms whose singular
value became 0 (the rank can go down, which FW steps never do).

The corrective step keeps FW-AL's structure (eq. fwal): it is an extra
primal descent step on L(., y_t) before the dual update, within the set, so
every iterate stays feasible for its block. :class:`InFaceStep` is the
driver's corrective step object (``kind``, ``blocks``, ``take(lagrangian,
iterate) -> moves``, see :mod:`fwmodel.engine.fwal`); :func:`inface_step`
the step on one block.
"""
from __future__ import annotations

import numpy as np

from ..sets._thresholds import project_nonnegative_l1
from .active_set import ActiveSet
from .vector_ops import dot

#: with inface="auto", in-face steps run on trace-norm blocks up to this size
AUTO_INFACE_MAX_DIM = 500

_EPS = np.finfo(float).eps


def project_capped_simplex(values, total):
    """Euclidean projection of ``values`` onto {z >= 0, sum z <= total}, exact to rounding at ``total``'s scale
    for any finite values (:func:`fwmodel.sets._thresholds.project_nonnegative_l1`)."""
    return project_nonnegative_l1(values, total)


def project_small_nuclear(C, radius, psd):
    """Projection of a small matrix onto {||C||_* <= radius} (or the PSD trace ball)."""
    if psd:
        lam, P = np.linalg.eigh(0.5 * (C + C.T))
        lam = project_capped_simplex(lam, radius)
        return (P * lam) @ P.T
    P, sig, Qt = np.linalg.svd(C, full_matrices=False)
    sig = project_capped_simplex(sig, radius)
    return (P * sig) @ Qt


class LowRankFace:
    """The data an in-face step needs about a trace-norm block.

    ``scale`` and ``offset``: the block holds ``x = (z - offset) / scale``
    with z in the ball ``{||Z||_* <= radius}`` (a trace-norm ball of
    ``scale * X + offset``, :class:`~fwmodel.sets.preimage.AffinePreimage`);
    the face's active set holds z's rank-one atoms, and the steps work on z:
    with ``z = a x + c`` the gradient in z is ``g / a`` and a direction
    ``d_z`` moves x by ``d_z / a`` (the same step size for both). The
    default, scale 1 and no offset, is the ball of the block itself.
    """

    def __init__(self, radius, psd, shape, scale=1.0, offset=None, max_rank=None):
        self.radius = float(radius)
        self.psd = bool(psd)
        self.shape = tuple(shape)
        self.scale = float(scale)
        if self.scale == 0.0 or not np.isfinite(self.scale):
            raise ValueError(f"LowRankFace: scale must be finite and nonzero, got {scale!r}")
        self.offset = None if offset is None or not np.any(offset) else np.asarray(offset, dtype=float).ravel()
        # The face step costs O(m n k) for k atoms; past this rank it would cost
        # as much as a projection, and the step is skipped.
        self.max_rank = max_rank if max_rank is not None else max(30, min(60, min(self.shape) // 2))

    @property
    def affine(self):
        """True when the ball is on ``scale * x + offset`` rather than on the block's x itself."""
        return self.scale != 1.0 or self.offset is not None

    def atom_on_face(self, atom):
        """The ball's atom (in z) of a block vertex: the vertex's ``inner`` atom where it carries one (a
        preimage's vertex, whatever its map's values: an identity map declared through a preimage too)."""
        return getattr(atom, "inner", atom)

    def block_point(self, z):
        """x = (z - offset) / scale for a point z of the ball (flat; z itself when the face is not affine)."""
        if not self.affine:
            return z
        x = z - self.offset if self.offset is not None else np.array(z, dtype=float)
        x /= self.scale
        return x


def _factor(aset, shape):
    """(U, C, V, atom_type, symmetric) with X = U C V' from the active set's rank-one atoms, or None.

    When every atom is symmetric (``u is v``, as the LMO returns for a
    symmetric gradient) the face is taken over symmetric matrices: one basis
    U = V and a symmetric C, so that the step keeps the iterate symmetric.
    """
    us, vs, coef, kind = [], [], [], None
    symmetric = True
    for atom, w in zip(aset.atoms, aset.weights):
        if getattr(atom, "u", None) is None:
            if getattr(atom, "indices", None) is not None and atom.indices.size == 0:
                continue  # the origin contributes nothing
            return None
        kind = type(atom)
        us.append(atom.u)
        vs.append(atom.v)
        coef.append(w * atom.scale)
        symmetric = symmetric and (atom.u is atom.v or np.array_equal(atom.u, atom.v))
    if not us:
        return None
    U, Ru = np.linalg.qr(np.column_stack(us))
    if symmetric:
        C = (Ru * np.asarray(coef)) @ Ru.T
        return U, 0.5 * (C + C.T), U, kind, True
    V, Rv = np.linalg.qr(np.column_stack(vs))
    C = (Ru * np.asarray(coef)) @ Rv.T
    return U, C, V, kind, False


def _project_symmetric_nuclear(C, radius, psd):
    """Projection of a small symmetric matrix onto the symmetric nuclear ball (or the PSD trace ball)."""
    if psd:
        return project_small_nuclear(C, radius, True)
    lam, P = np.linalg.eigh(0.5 * (C + C.T))
    lam = np.sign(lam) * project_capped_simplex(np.abs(lam), radius)
    return (P * lam) @ P.T


def inface_step(face, aset, g_block, merit):
    """One corrective step on a low-rank block; returns (gamma, direction, new active set) or None.

    ``merit(d)`` returns (slope, curvature or None, phi) for a direction ``d``
    of this block: the derivative of L(x + gamma d, y) at 0, its second
    derivative when the objective is quadratic, and a callable evaluating
    L(x + gamma d, y) - L(x, y) for the backtracking fallback.
    """
    if len(aset) > face.max_rank + 1:
        return None
    factored = _factor(aset, face.shape)
    if factored is None:
        return None
    U, C, V, kind, symmetric = factored
    m, n = face.shape
    G = g_block.reshape(m, n)
    GC = U.T @ (G @ V)
    if symmetric:  # the face's symmetric part: <G, U D U'> = <sym(U'GU), D> for symmetric D
        GC = 0.5 * (GC + GC.T)
    gnorm2 = float(np.sum(GC * GC))
    if gnorm2 == 0.0:
        return None
    # Step length for the projected-gradient trial: the exact minimizer along -GC;
    # without a curvature, a step as long as the ball's radius (the line search
    # below shortens it), so that the step has the units of X at every scale.
    # A curvature whose change of the slope over that step, curv0 * radius / ||GC||, is below the slope's
    # rounding (eps |slope0|) is not measured: the objective is linear along -GC as far as can be told,
    # and the step is the radius' (curv0 ~ 1e-33 from a row's rounding gave tau ~ 1e33 before).
    d0 = -(U @ GC @ V.T).ravel()
    slope0, curv0, _ = merit(d0)
    gnorm = np.sqrt(gnorm2)
    if curv0 is not None and curv0 * face.radius > _EPS * abs(slope0) * gnorm:
        tau = gnorm2 / curv0
    else:
        tau = face.radius / gnorm
    if symmetric:
        C_new = _project_symmetric_nuclear(C - tau * GC, face.radius, face.psd)
    else:
        C_new = project_small_nuclear(C - tau * GC, face.radius, face.psd)
    DC = C_new - C
    D = U @ DC @ V.T
    if symmetric:  # exactly symmetric, so rounding cannot build up an asymmetry over many steps
        D += D.T
        D *= 0.5
    d = D.ravel()
    slope, curv, phi = merit(d)
    if not slope < 0:
        return None
    if curv is not None and curv > 0:
        gamma = min(1.0, -slope / curv)
    else:  # halve until sufficient decrease (Armijo) on [0, 1]
        gamma = 1.0
        while gamma > 1e-10 and phi(gamma) > 0.5 * gamma * slope:
            gamma *= 0.5
        if gamma <= 1e-10:
            return None
    C_next = C + gamma * DC
    # Re-express U C_next V' as rank-one atoms of the ball (weights sigma / radius).
    signs = None
    if face.psd or symmetric:
        lam, P = np.linalg.eigh(0.5 * (C_next + C_next.T))
        keep = (lam if face.psd else np.abs(lam)) > 1e-12 * face.radius
        us = U @ P[:, keep]
        vs = us
        sig = np.abs(lam[keep])
        signs = np.sign(lam[keep])
    else:
        P, sig, Qt = np.linalg.svd(C_next, full_matrices=False)
        keep = sig > 1e-12 * face.radius
        us, vs, sig = U @ P[:, keep], V @ Qt[keep].T, sig[keep]
    if signs is None:
        atoms = [kind(us[:, j], vs[:, j], face.radius, face.shape) for j in range(sig.size)]
    else:  # symmetric atoms share one vector (u is v), as the LMO's do
        atoms = []
        for j in range(sig.size):
            u = np.ascontiguousarray(us[:, j])
            atoms.append(kind(u, u, signs[j] * face.radius, face.shape))
    weights = list(sig / face.radius)
    rest = 1.0 - sum(weights)
    if rest > 1e-12 or not atoms:
        # the origin, a point of every norm ball, takes the weight the spectrum leaves; alone where the step
        # reached X = 0 (no eigenvalue kept): the face's active set must follow x there too, or the next
        # in-face step factors the old atoms and moves x off them (out of the PSD cone: a 3 x 3 PSD model
        # raised "the LMO returned no minimizer" with x at eigenvalue -0.22)
        from ..sets.atoms import SparseAtom

        atoms.append(SparseAtom(np.zeros(0, dtype=np.intp), np.zeros(0), m * n))
        weights.append(rest if atoms[:-1] else 1.0)
    new_set = ActiveSet.from_atoms(atoms, weights)
    return gamma, d, new_set


def inface_blocks(blocks, inface, proj_blocks):
    """The blocks that take in-face steps under option ``inface`` (those that declare a low-rank face).

    "auto" keeps in-face steps to blocks where their O(m n k) passes are
    cheap next to a FW iteration: measured, they turn small trace-norm
    intersections into optimal solves, while at d = 1000 they did not
    improve a 15 s run and at d = 4000 they dominated the time and memory.
    Blocks that move by projections take none.
    """
    if not inface:
        return []
    return [k for k, blk in enumerate(blocks)
            if blk.face is not None and k not in proj_blocks
            and (inface is True or min(blk.face.shape) <= AUTO_INFACE_MAX_DIM)]


class InFaceStep:
    """In-face corrective steps (Freund, Grigas & Mazumder 2017) on the low-rank blocks, after the FW sweep.

    ``faces`` maps a block to the active set of its rank-one atoms: the FW
    sweep adds each block's FW atom to it (the driver's commit), and
    :func:`inface_step` moves within the face they span. One step per block,
    one after another, all with the gradient of L(., y) taken before the first.
    """

    kind = "inface"

    def __init__(self, blocks, faces):
        self.all_blocks = blocks
        self.faces = faces

    @property
    def blocks(self):
        return list(self.faces)

    def follow(self, k, atom, gamma):
        """Block k took a FW step of size gamma toward ``atom``: its face's active set follows (Alg. 2's update)."""
        if k in self.faces and gamma > 0:
            self.faces[k].fw_update(self.all_blocks[k].face.atom_on_face(atom), gamma)

    def take(self, lagrangian, it):
        """Move every face block of ``it`` (x and r in place, f and g refreshed); returns how many moved."""
        objective, Mop, m = lagrangian.objective, lagrangian.Mop, lagrangian.m
        curvature_fn = lagrangian.curvature if lagrangian.quadratic else None
        x, r, y, lam, f = it.x, it.r, it.y, it.lam, it.f
        dual_term = y + lam * r
        grad = it.g + Mop.rmatvec(dual_term) if m else it.g
        moved = 0
        for k, aset in list(self.faces.items()):
            sl = self.all_blocks[k].slice
            n = x.size

            def merit(d_block, _sl=sl):
                d = np.zeros(n)
                d[_sl] = d_block
                Md = Mop.matvec(d) if m else np.zeros(0)
                slope = dot(grad[_sl], d_block)
                pen_lin = dot(dual_term, Md) if m else 0.0
                pen_quad = lam * dot(Md, Md) if m else 0.0
                curv = None
                if curvature_fn is not None:
                    c = curvature_fn(x, d)
                    curv = None if c is None else float(c) + pen_quad

                def phi(gm):
                    return objective.value(x + gm * d) - f + gm * pen_lin + 0.5 * gm * gm * pen_quad

                merit.last = (d, Md)
                return slope, curv, phi

            face = self.all_blocks[k].face
            if face.affine:
                # the step works on z = a x + c (the ball's coordinate): gradient g / a, and a
                # direction d_z of z moves x by d_z / a, with the same step size
                a = face.scale
                out = inface_step(face, aset, grad[sl] / a, lambda d_z, _m=merit, _a=a: _m(d_z / _a))
                if out is not None:
                    out = (out[0], out[1] / a, out[2])
            else:
                out = inface_step(face, aset, grad[sl], merit)
            if out is None:
                continue
            gamma, d_block, new_set = out
            d, Md = merit.last if np.array_equal(merit.last[0][sl], d_block) else (None, None)
            if d is None:
                d = np.zeros(n)
                d[sl] = d_block
                Md = Mop.matvec(d) if m else np.zeros(0)
            x += gamma * d
            if m:
                r += gamma * Md
            if new_set is not None:
                self.faces[k] = new_set
            moved += 1
        if moved:
            it.f, it.g = objective.value_and_grad(x)
        return moved
