# %% [markdown]
# # MAP inference on a factor graph: image denoising and an exact tree
#
# A pairwise Markov random field on a graph scores a labeling x (a state
# x_v in {0, ..., K-1} per node) by
#
#     score(x) = sum_v theta_v(x_v) + sum_{(u,v) in E} theta_uv(x_u, x_v),
#
# and MAP inference looks for the labeling of largest score, i.e. of
# smallest energy = -score. Its classical LP relaxation replaces the
# labeling by *marginals*: a probability vector mu_v per node, a (K, K)
# probability table mu_uv per edge, and the *marginalization consistency*
# constraints that the table's row and column sums are the endpoints'
# marginals. This is the motivating problem of the FW-AL paper (Gidel,
# Pedregosa & Lacoste-Julien, AISTATS 2018, Sec. 2): a product of simple
# sets (simplices) tied by a linear consistency constraint. FW-AL solves it
# with one Frank-Wolfe step over all simplices (an argmin per row) and one
# dual step on the consistency rows per iteration (GDMM, Huang et al. 2017,
# is this method with a linear objective).
#
# Run as a script: `python tutorials/03_map_inference.py` (it saves a figure
# to `$FWMODEL_FIGURES_DIR`, by default a temporary folder, when matplotlib
# is installed). `FWMODEL_TUTORIAL_SIZE=small` makes the
# problems small (used by the tests); the default is "full".

# %%
import os

import networkx as nx
import numpy as np

import fwmodel as fm

SIZE = os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")
side = 12 if SIZE == "small" else 40  # the image is side x side pixels

# %% [markdown]
# ## A noisy image
#
# A synthetic image with K = 4 gray levels (a background, a rectangle, a
# disk and a triangle), observed with Gaussian noise.

# %%
levels = np.array([0.0, 1 / 3, 2 / 3, 1.0])
K = levels.size
rows, cols = np.mgrid[0:side, 0:side] / side
truth = np.zeros((side, side), dtype=int)
truth[(rows > 0.1) & (rows < 0.45) & (cols > 0.1) & (cols < 0.6)] = 1
truth[(rows - 0.65) ** 2 + (cols - 0.65) ** 2 < 0.06] = 2
truth[(rows > 0.55) & (cols < 0.4) & (cols > 0.05) & (rows - 0.55 > 0.4 - cols)] = 3
sigma = 0.3
rng = np.random.default_rng(0)
noisy = levels[truth] + sigma * rng.standard_normal(truth.shape)

# %% [markdown]
# ## The model: a Potts grid
#
# One node per pixel, an edge between horizontal and vertical neighbours
# (`networkx.grid_2d_graph`, whose nodes are `(row, col)` tuples). The node
# score of level k is the Gaussian log-likelihood of the observed pixel,
# and the edge score `beta * [x_u == x_v]` (a Potts model) rewards
# neighbours with equal labels.
#
# `fm.LocalMarginalPolytope(G, K)` creates the node marginals `lmp.nodes`
# (N, K), the edge marginals `lmp.edges` (E, K, K) and their constraints:
# one batched simplex set for all nodes, one for all edges, and the two
# marginalization constraints `fm.sum(edges, axis=2) == nodes[u]`,
# `fm.sum(edges, axis=1) == nodes[v]`.

# %%
G = nx.grid_2d_graph(side, side)
lmp = fm.LocalMarginalPolytope(G, K)
pixels = np.array(lmp.node_list)  # (row, col) of each node, in the rows' order
theta_nodes = -((noisy[pixels[:, 0], pixels[:, 1]][:, None] - levels[None, :]) ** 2) / (2 * sigma**2)
beta = 1.0
theta_edges = beta * np.eye(K)  # one (K, K) table shared by every edge
print(lmp)
print("constraints:", *lmp.constraints, sep="\n  ")

# %% [markdown]
# The LP is `minimize -<theta, mu>` over the polytope; `lmp.score(...)` is
# the linear expression `<theta_nodes, nodes> + <theta_edges, edges>`. The
# compiler turns the marginalization constraints into rows of M (applied
# as a reshape-and-sum, not as a stored matrix) and shows them in its graph.

# %%
prob = fm.Problem(fm.Minimize(-lmp.score(theta_nodes, theta_edges)), lmp)
compiled = prob.compile()
print(compiled.summary())
for node, data in compiled.graph.nodes(data=True):
    if data.get("role") == "marginalization":
        print(f"  {node}: {data['rows']} marginalization rows of M")

# %% [markdown]
# ## Solve, round, certify
#
# `fm.map_inference` solves this LP with FW-AL, rounds the node marginals
# (argmax per pixel) and computes a *certified lower bound* on the LP from
# FW-AL's dual variables y (weak duality: for any y,
# `min_{mu in simplices} <c + M'y, mu>` is below the LP optimum). The
# labeling's energy minus that bound is a proof of how far from MAP the
# labeling can be; the solve stops as soon as it is (numerically) zero.

# %%
res = fm.map_inference(lmp, theta_nodes, theta_edges)
stats = res.problem.stats
decoded = np.zeros_like(truth)
decoded[pixels[:, 0], pixels[:, 1]] = res.labels
pixelwise = np.argmax(theta_nodes, axis=1)  # no prior: the nearest level per pixel
noisy_labels = np.zeros_like(truth)
noisy_labels[pixels[:, 0], pixels[:, 1]] = pixelwise
noisy_errors = int(np.sum(noisy_labels != truth))
decoded_errors = int(np.sum(decoded != truth))
print(f"status {res.status} after {stats.iterations} iterations ({stats.solve_time:.2f} s)")
print(f"energy of the decoded labels {res.energy:.4f}, certified lower bound {res.lower_bound:.4f}, "
      f"gap {res.gap:.2e}")
print(f"pixels wrong: nearest level {noisy_errors} of {truth.size}, MAP {decoded_errors} of {truth.size}")

# %% [markdown]
# ## A tree: the relaxation is exact
#
# On a tree the local polytope is the marginal polytope itself, so the LP
# optimum is the indicator of a MAP labeling. We check it against exact
# dynamic programming (max-product from the leaves to the root, then
# back-tracking), with random node and edge scores.

# %%
tree = nx.balanced_tree(2, 2 if SIZE == "small" else 5)
tree_lmp = fm.LocalMarginalPolytope(tree, 3)
rng = np.random.default_rng(1)
tree_nodes = rng.standard_normal((tree_lmp.n_nodes, 3))
tree_edges = rng.standard_normal((tree_lmp.n_edges, 3, 3))


def tree_map_by_dynamic_programming(lmp, theta_nodes, theta_edges):
    """Exact MAP labels on a tree: max-product messages to a root, then back-tracking."""
    root = lmp.node_list[0]
    order = [root] + [v for _, v in nx.bfs_edges(lmp.graph, root)]
    parent = {v: u for u, v in nx.bfs_edges(lmp.graph, root)}
    best = {v: theta_nodes[lmp.node_index[v]].copy() for v in order}  # subtree scores by state
    argbest = {}
    for child in reversed(order[1:]):
        p = parent[child]
        e = lmp.edge_index.get((p, child))
        table = theta_edges[e] if e is not None else theta_edges[lmp.edge_index[(child, p)]].T
        total = table + best[child][None, :]  # [state of parent, state of child]
        argbest[child] = np.argmax(total, axis=1)
        best[p] += np.max(total, axis=1)
    labels = {root: int(np.argmax(best[root]))}
    for child in order[1:]:
        labels[child] = int(argbest[child][labels[parent[child]]])
    return np.array([labels[v] for v in lmp.node_list])


exact = tree_map_by_dynamic_programming(tree_lmp, tree_nodes, tree_edges)
exact_energy = tree_lmp.energy(exact, tree_nodes, tree_edges)
tree_res = fm.map_inference(tree_lmp, tree_nodes, tree_edges)
print(f"tree with {tree_lmp.n_nodes} nodes: status {tree_res.status} after "
      f"{tree_res.problem.stats.iterations} iterations")
print(f"  decoded energy {tree_res.energy:.6f}, certified lower bound {tree_res.lower_bound:.6f}, "
      f"dynamic programming {exact_energy:.6f}; same labels: {np.array_equal(tree_res.labels, exact)}")

# %% [markdown]
# ## Pictures
#
# Noisy observation, decoded labeling, truth (matplotlib is optional: the
# cell is skipped without it; the figure is written to a file only when
# this file runs as a script).

# %%
try:
    import matplotlib

    if __name__ != "__main__":
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional
    plt = None

if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.2))
    for ax, image, title in zip(axes, [noisy, levels[decoded], levels[truth]],
                                ["noisy", f"decoded ({decoded_errors} wrong)", "true"]):
        ax.imshow(image, cmap="gray", vmin=-0.2, vmax=1.2)
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    if __name__ == "__main__":  # to $FWMODEL_FIGURES_DIR, by default a temporary folder
        from fwmodel.outputs import figures_dir

        path = os.path.join(figures_dir(), "03_map_inference.png")
        fig.savefig(path, dpi=120)
        print(f"figure saved to {path}")
    plt.close(fig)

RESULTS = {
    "size": SIZE,
    "image": {"status": res.status, "energy": res.energy, "lower_bound": res.lower_bound, "gap": res.gap,
              "noisy_errors": noisy_errors, "decoded_errors": decoded_errors, "pixels": truth.size},
    "tree": {"status": tree_res.status, "energy": tree_res.energy, "lower_bound": tree_res.lower_bound,
             "gap": tree_res.gap, "exact_energy": exact_energy,
             "same_labels": bool(np.array_equal(tree_res.labels, exact))},
}
print(RESULTS)
