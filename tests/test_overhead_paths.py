"""The fast paths of the engine's hot loop give the same numbers as the plain NumPy/SciPy calls they replace.

Each test compares a fast path against the straightforward computation it
stands for (``A @ v``, ``np.einsum``, ``np.unique``/``np.maximum.at``, a
proposal formed before the sweep), on random data.
"""
import numpy as np
import scipy.sparse as sp

import fwmodel as fm
from fwmodel._kernels import csr_times, einsum_plain
from fwmodel.engine.fwal import _propose, _StepContext
from fwmodel.engine.lagrangian import Block
from fwmodel.engine.steps import DeferredProposal, GroupPairwiseStep, IntervalStep, SimplexGroups, _run_starts
from fwmodel.sets.atoms import SparseAtom


def test_csr_times_equals_scipy_product_bit_for_bit():
    rng = np.random.default_rng(0)
    A = sp.random(40, 30, density=0.2, format="csr", random_state=1)
    v, V = rng.standard_normal(30), rng.standard_normal((30, 4))
    assert np.array_equal(csr_times(A, v), A @ v)
    assert np.array_equal(csr_times(A, V), A @ V)
    assert np.array_equal(csr_times(A.tocsc(), v), A.tocsc() @ v)  # another format: the plain product
    assert np.array_equal(csr_times(A, V[:, ::2]), A @ V[:, ::2])  # a strided matrix: the plain product


def test_einsum_plain_equals_unoptimized_einsum():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(257), rng.standard_normal(257)
    assert float(einsum_plain("i,i->", a, b)) == float(np.einsum("i,i->", a, b, optimize=False))


def test_run_starts_give_the_first_of_every_label_like_np_unique():
    rng = np.random.default_rng(2)
    for _ in range(200):
        labels = np.sort(rng.integers(0, 6, size=rng.integers(0, 15)))
        expected = np.unique(labels, return_index=True)[1]
        assert np.array_equal(_run_starts(labels), expected)


def test_one_entry_sparse_atom_adds_like_np_add_at():
    rng = np.random.default_rng(3)
    for _ in range(50):
        x = rng.standard_normal(7)
        i, value, weight = int(rng.integers(7)), float(rng.standard_normal()), float(rng.standard_normal())
        expected = x.copy()
        np.add.at(expected, [i], weight * np.array([value]))
        SparseAtom([i], value, 7).add_to(x, weight)
        assert np.array_equal(x, expected)


def _simplex_and_box_blocks(n, groups):
    """A product of simplices (entries 0..n-1) followed by a box [0, 0.3]^n (entries n..2n-1)."""
    simplex = Block(offset=0, size=n, lmo=None, initial_atom=None,
                    groups=SimplexGroups(np.arange(n).reshape(groups, -1), 1.0))
    box = Block(offset=n, size=n, lmo=None, initial_atom=None, intervals=(np.zeros(n), np.full(n, 0.3)))
    return [simplex, box]


def test_deferred_proposals_report_the_gap_and_form_the_same_direction():
    """A cheap step's gap alone (before a Gauss-Seidel sweep) and its proposal formed later match the eager ones."""
    rng = np.random.default_rng(4)
    n = 12
    for groups in (1, 3):
        blocks = _simplex_and_box_blocks(n, groups)
        norms2 = rng.uniform(0.5, 2.0, n)
        steps = [GroupPairwiseStep(blocks[0], blocks[0].groups, norms2),
                 IntervalStep(blocks[1], blocks[1].intervals, norms2)]
        steps[0].curvature_f = steps[1].curvature_f = 0.7
        x = np.concatenate([rng.dirichlet(np.ones(n // groups), groups).ravel(), rng.uniform(0, 0.3, n)])
        grad = rng.standard_normal(2 * n)
        ctx = _StepContext(2.0)
        eager, gap_eager, _, _ = _propose(steps, blocks, x, grad, ctx)
        lazy, gap_lazy, _, _ = _propose(steps, blocks, x, grad, ctx, defer=True)
        assert isinstance(lazy[1], DeferredProposal) and not isinstance(lazy[0], DeferredProposal)
        assert gap_lazy == gap_eager
        formed = steps[1].propose(x[blocks[1].slice], grad[blocks[1].slice], ctx)
        assert np.array_equal(formed.d, eager[1].d) and formed.gap == eager[1].gap


def test_objective_does_not_read_an_expression_block():
    """L1Ball(D @ x): the block of D x is not read by f(x); the sweep reuses f's gradient after moving it."""
    n = 8
    D = np.diff(np.eye(n), axis=0)
    x = fm.Variable(n)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(x - 1.0)), [fm.L1Ball(D @ x, 1.0), fm.Box(x, 0.0, 2.0)])
    compiled = prob.compile()
    reads = {blk.name: compiled.objective.reads_block(slice(blk.offset, blk.offset + blk.size))
             for blk in compiled.blocks}
    assert sorted(reads.values()) == [False, True], reads
    prob.solve()
    assert prob.status == "optimal"
