"""The corrective step objects (projection and in-face steps) through the driver's interface, against closed forms.

A corrective step has ``take(lagrangian, iterate) -> moves``: it moves x and
r in place and refreshes f and its gradient. On f(x) = ||x - c||^2 both
steps below land on the minimizer in one take, which is known in closed form.
"""
import numpy as np

from fwmodel.engine.active_set import ActiveSet
from fwmodel.engine.fwal import _Buffers
from fwmodel.engine.inface import InFaceStep, LowRankFace
from fwmodel.engine.lagrangian import AugmentedLagrangian, Block, Iterate, _Operator
from fwmodel.engine.projection_step import ProjectedBlock, ProjectionStep
from fwmodel.sets.atoms import RankOneAtom


class DistanceSquared:
    """f(x) = ||x - c||^2: gradient 2 (x - c), curvature 2 ||d||^2."""

    is_quadratic = True

    def __init__(self, c):
        self.c = np.asarray(c, dtype=float)

    def value(self, x):
        return float(np.sum((x - self.c) ** 2))

    def value_and_grad(self, x):
        return self.value(x), 2.0 * (x - self.c)

    def curvature(self, x, d):
        return 2.0 * float(d @ d)


def lagrangian_and_iterate(objective, blocks, x):
    n = x.size
    lagrangian = AugmentedLagrangian(objective, blocks, _Operator(None, n), np.zeros(0), _Buffers())
    f, g = objective.value_and_grad(x)
    return lagrangian, Iterate(x, np.zeros(0), np.zeros(0), f, g, 1.0)


def test_projection_step_lands_on_the_projection_of_the_unconstrained_minimizer():
    """On a Euclidean ball, one projected-gradient step from 0 reaches P(c) = c r / ||c|| exactly."""
    radius, c = 2.0, np.array([3.0, 4.0, 0.0])

    def project(z):
        nz = np.linalg.norm(z)
        return z if nz <= radius else z * (radius / nz)

    block = Block(offset=0, size=3, lmo=None, initial_atom=None, project=project)
    lagrangian, it = lagrangian_and_iterate(DistanceSquared(c), [block], np.zeros(3))
    step = ProjectionStep([block], [0])
    assert step.take(lagrangian, it) == 1
    np.testing.assert_allclose(it.x, c * radius / np.linalg.norm(c), rtol=1e-12)
    assert it.f == DistanceSquared(c).value(it.x)  # f and g refreshed at the new point
    assert step.take(lagrangian, it) == 0  # at the minimizer: no descent direction left


def test_projected_block_reports_its_fw_gap_and_proposes_no_direction():
    """In the FW sweep a projected block only reports <x - s, g> (s the LMO's vertex)."""
    from fwmodel.sets.atoms import DenseAtom

    vertex = np.array([1.0, -1.0])
    block = Block(offset=0, size=2, lmo=lambda g: DenseAtom(vertex), initial_atom=None)
    x, g = np.array([0.5, 0.25]), np.array([2.0, 1.0])
    p = ProjectedBlock(block).propose(x, g)
    assert p.d is None and p.gap == (x - vertex) @ g


def test_inface_step_reaches_the_minimizer_inside_the_face():
    """X = r u v' (a vertex of the nuclear ball); C = (r/2) u v' lies in its face: one in-face step lands on C."""
    rng = np.random.default_rng(0)
    shape, radius = (4, 3), 2.0
    u, v = rng.standard_normal(4), rng.standard_normal(3)
    u, v = u / np.linalg.norm(u), v / np.linalg.norm(v)
    C = 0.5 * radius * np.outer(u, v)
    block = Block(offset=0, size=12, lmo=None, initial_atom=None, face=LowRankFace(radius, False, shape))
    faces = {0: ActiveSet(RankOneAtom(u, v, radius, shape))}
    lagrangian, it = lagrangian_and_iterate(DistanceSquared(C.ravel()), [block],
                                            radius * np.outer(u, v).ravel())
    step = InFaceStep([block], faces)
    assert step.take(lagrangian, it) == 1
    np.testing.assert_allclose(it.x, C.ravel(), atol=1e-12)
    # the face's active set describes the new point (its atoms and weights)
    np.testing.assert_allclose(step.faces[0].dense(12), it.x, atol=1e-12)
