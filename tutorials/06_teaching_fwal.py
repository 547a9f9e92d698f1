# %% [markdown]
# # Teaching FW-AL: the product space, the dual variables, the iterates
#
# A lesson on the Frank-Wolfe Augmented Lagrangian method (FW-AL; Gidel,
# Pedregosa & Lacoste-Julien, AISTATS 2018), the algorithm behind fwmodel.
# FW-AL minimizes a smooth convex `f` over an *intersection* of sets while
# only ever calling each set's linear minimization oracle (LMO):
#
# 1. **Split.** Give every set its own copy of the variable:
#    `x = (x^(1), ..., x^(K))` with `x^(k)` in `X_k`, and write "the copies
#    agree" (plus any equality constraint) as one linear system `M x = b`.
# 2. **Augment.** Work on the augmented Lagrangian (paper, problem OPT2)
#
#        L(x, y) = f(x) + <y, M x - b> + (lam / 2) ||M x - b||^2.
#
# 3. **Iterate** (paper, eq. fwal): one Frank-Wolfe step on `L(., y_t)` over
#    the product of the sets (one LMO per set), then one dual ascent step
#    `y_{t+1} = y_t + eta (M x_{t+1} - b)`.
#
# Part 1 shows what the compiler builds for a tiny model (`M`, `b`, the
# graph). Part 2 writes FW-AL from scratch in a dozen lines on that compiled
# problem and watches the dual variable converge to the Lagrange multiplier
# that CVXPY reports. Part 3 looks at the iterates on the paper's example, a
# matrix that is both sparse (L1 ball) and low rank (trace-norm ball).
#
# Run as a script: `python tutorials/06_teaching_fwal.py` (figures are
# saved to `$FWMODEL_FIGURES_DIR`, by default a temporary folder, when
# matplotlib is installed).
# `FWMODEL_TUTORIAL_SIZE=small` makes Part 3 small (used by the tests); the
# default is "full".

# %%
import os
from pathlib import Path

import numpy as np

import fwmodel as fm

SIZE = os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")
d, budget = (6, 600) if SIZE == "small" else (16, 3000)  # Part 3: matrix side, iterations

try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional: the plotting cells do nothing without it
    plt = None

try:
    import cvxpy as cp
except ImportError:  # CVXPY is optional: it only provides reference answers
    cp = None


def save(fig, name):
    """Write a figure to $FWMODEL_FIGURES_DIR (default: a temporary folder) when run as a script or notebook."""
    if __name__ == "__main__":
        from fwmodel.outputs import figures_dir

        path = Path(figures_dir()) / name
        fig.savefig(path, dpi=110)
        print(f"figure saved to {path}")
    plt.close(fig)


# %% [markdown]
# ## Part 1. What the compiler builds
#
# A 2 x 3 matrix `X` close to `B`, in an L1 ball *and* a trace-norm ball,
# whose entries sum to 1.

# %%
B = np.array([[1.0, -0.5, 0.0], [0.5, 0.8, -0.2]])
X = fm.Variable((2, 3), name="X")
tiny = fm.Problem(
    fm.Minimize(fm.sum_squares(X - B)),
    [fm.L1Ball(X, radius=1.5), fm.TraceNormBall(X, radius=1.2), fm.sum(X) == 1.0],
)
compiled = tiny.compile()
print(compiled.summary())

# %% [markdown]
# **The product space.** Two sets, so two blocks: `x = (x^(0), x^(1))` has
# 12 entries, `x^(0)` a copy of `X` that lives in the L1 ball, `x^(1)` a copy
# in the trace-norm ball. `X.value` after a solve is the average of the
# copies.
#
# **M and b.** The first 6 rows say "copy 1 = copy 0" entry by entry (a -1
# and a +1 per row); the last row is `sum(X) == 1`, written on the average
# of the copies, hence the coefficients 1/2.

# %%
M, b = compiled.M, compiled.b
with np.printoptions(precision=2, suppress=True, linewidth=120):
    print("M =")
    print(M.toarray())
    print("b =", b)

# %% [markdown]
# **The graph.** `M` is assembled from a networkx graph: a node per
# variable, block (copy), set and equality constraint; "consistency" edges
# carry rows of `M`.

# %%
graph = compiled.graph
for node, data in graph.nodes(data=True):
    print(f"  {data['kind']:9s} {data.get('label', '')}")
for u, v, data in graph.edges(data=True):
    rows = f", {data['rows']} row(s) of M" if data["kind"] == "consistency" else ""
    print(f"  edge {graph.nodes[u]['label']} -- {graph.nodes[v]['label']}: {data['kind']}{rows}")
kinds = sorted(data["kind"] for _, data in graph.nodes(data=True))

if plt is not None:
    import networkx as nx

    colors = {"variable": "tab:blue", "block": "tab:orange", "set": "tab:green", "equality": "tab:red"}
    fig, ax = plt.subplots(figsize=(6, 4))
    pos = nx.spring_layout(graph, seed=3)
    nx.draw_networkx(graph, pos, ax=ax, node_color=[colors[graph.nodes[n]["kind"]] for n in graph],
                     labels={n: graph.nodes[n]["label"].split("(")[0] if graph.nodes[n]["kind"] == "set"
                             else graph.nodes[n]["label"] for n in graph}, font_size=8)
    nx.draw_networkx_edge_labels(graph, pos, ax=ax, font_size=7,
                                 edge_labels={(u, v): e["kind"] for u, v, e in graph.edges(data=True)})
    ax.set_title("the graph behind M (blue: variable, orange: copies, green: sets, red: equality)", fontsize=9)
    ax.axis("off")
    save(fig, "06_graph.png")

# %% [markdown]
# ## Part 2. FW-AL from scratch
#
# Everything the algorithm needs is in the compiled problem:
# `compiled.objective` evaluates `f` and its gradient on the flat vector
# `x`, each block's set has an LMO (`lmo_atom` works on flat vectors), and
# `M`, `b` are above. One iteration is:
#
# - the gradient of `L(., y)`: `grad f(x) + M' (y + lam (M x - b))`;
# - one LMO per block, on that block's slice of the gradient: the vertex `s`;
# - the FW gap `<grad, x - s>` (a certificate: it bounds the suboptimality
#   of `x` for `L(., y)`);
# - a step along `s - x`: here `f` is quadratic, so the best step size is a
#   closed formula, clipped to `[0, 1]` to stay in the sets;
# - the dual step on the new residual.
#
# The constants: `lam` weighs the penalty, and `eta = lam / 4` is the
# constant dual step of Theorem 3 (with its unknown constant taken as 1).

# %%
def fwal_by_hand(compiled, iterations, lam=1.0, eta=None, record_at=()):
    """Plain FW-AL (Frank-Wolfe steps, constant dual step) on a compiled problem.

    Returns the final x, y, a dict of per-iteration arrays (objective, FW
    gap, ||Mx - b||, ||y||, the last entry of y) and {t: x after step t} for
    t in ``record_at``.
    """
    eta = lam / 4.0 if eta is None else eta
    objective, M, b = compiled.objective, compiled.M, compiled.b
    x = np.concatenate([blk.set.initial_atom().to_dense() for blk in compiled.blocks])
    y = np.zeros(M.shape[0])
    trace = {key: [] for key in ("objective", "fw_gap", "feasibility", "y_norm", "y_last")}
    snapshots = {}
    for t in range(iterations):
        f, g = objective.value_and_grad(x)
        grad = g + M.T @ (y + lam * (M @ x - b))
        s = np.concatenate([blk.set.lmo_atom(grad[blk.slice]).to_dense() for blk in compiled.blocks])
        direction = s - x
        gap = -float(grad @ direction)
        Md = M @ direction
        curvature = objective.curvature(x, direction) + lam * float(Md @ Md)
        gamma = min(max(gap / curvature, 0.0), 1.0) if curvature > 0 else 1.0
        x = x + gamma * direction
        y = y + eta * (M @ x - b)
        for key, value in zip(trace, (f, gap, np.linalg.norm(M @ x - b), np.linalg.norm(y), y[-1])):
            trace[key].append(value)
        if t in record_at:
            snapshots[t] = x.copy()
    return x, y, {key: np.asarray(value) for key, value in trace.items()}, snapshots


x_hand, y_hand, trace_hand, _ = fwal_by_hand(compiled, 1000 if SIZE == "small" else 4000)
f_hand = float(compiled.objective.value(x_hand))
print(f"by hand: objective {f_hand:.6f}, FW gap {trace_hand['fw_gap'][-1]:.1e}, "
      f"||Mx - b|| = {trace_hand['feasibility'][-1]:.1e}")

options = dict(max_iter=500) if SIZE == "small" else {}  # defaults at full size, a short budget in tests
tiny_value = tiny.solve(**options)
print(f"fwmodel: objective {tiny_value:.6f}, status {tiny.status} after {tiny.stats.iterations} iterations, "
      f"relative infeasibility {tiny.stats.feasibility_rel:.1e}")

# %% [markdown]
# **What the dual variable means.** At a saddle point of `L`, `y` is a
# Lagrange multiplier of `M x = b`. Its last entry belongs to the row
# `sum(X) == 1`, so it should converge to the multiplier of that constraint
# in the original model, which CVXPY computes with an interior-point method.
# (The other entries price the disagreement between the copies, a
# constraint CVXPY never sees.)

# %%
tiny_cvxpy = tiny_dual = None
if cp is not None:
    Xc = cp.Variable((2, 3))
    equality = cp.sum(Xc) == 1.0
    reference = cp.Problem(cp.Minimize(cp.sum_squares(Xc - B)),
                           [cp.sum(cp.abs(Xc)) <= 1.5, cp.normNuc(Xc) <= 1.2, equality])
    tiny_cvxpy = float(reference.solve())
    tiny_dual = float(equality.dual_value)
    print(f"CVXPY: objective {tiny_cvxpy:.6f}, multiplier of sum(X) == 1: {tiny_dual:.4f}")
print(f"FW-AL by hand: last entry of y = {y_hand[-1]:.4f}")

if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    t = np.arange(1, trace_hand["objective"].size + 1)
    axes[0].loglog(t, trace_hand["fw_gap"], label="FW gap of L(., y)")
    axes[0].loglog(t, trace_hand["feasibility"], label="||M x - b||")
    axes[0].set_xlabel("iteration")
    axes[0].legend()
    axes[1].semilogx(t, trace_hand["y_last"], label="y (row sum(X) == 1)")
    if tiny_dual is not None:
        axes[1].axhline(tiny_dual, color="k", ls="--", label="CVXPY multiplier")
    axes[1].set_xlabel("iteration")
    axes[1].legend()
    axes[2].semilogx(t, trace_hand["y_norm"])
    axes[2].set_title("||y||")
    axes[2].set_xlabel("iteration")
    fig.tight_layout()
    save(fig, "06_dual.png")

# %% [markdown]
# ## Part 3. Sparse and low rank: watching the iterates
#
# The paper's experiment (Sec. 5): recover a matrix `S` that is sparse and
# low rank from a noisy observation `B`,
#
#     minimize ||X - B||_F^2   s.t.   ||X||_1 <= beta_1,   ||X||_* <= beta_2.
#
# Each LMO returns a very structured vertex: one signed entry for the L1
# ball (or, when the direction is symmetric, the symmetric pair
# `(E_ij + E_ji) / 2` of the paper's Sec. 5), a rank-one matrix for the
# trace-norm ball. After `t` Frank-Wolfe steps, the L1 copy combines at
# most `t + 1` such vertices (sparse) and the trace-norm copy at most
# `t + 1` rank-one matrices (low rank); the dual variable pulls the two
# copies together.
#
# Frank-Wolfe on the trace-norm ball converges sublinearly, like `1/t` (no
# away steps on a set with infinitely many extreme points), so the solve
# runs for a fixed budget of iterations, and its answer is compared with
# CVXPY's on the scale of the problem: the objective gap relative to
# `f(0) = ||B||^2`, and the distance between the two matrices relative to
# the size of CVXPY's.

# %%
rng = np.random.default_rng(0)
S = np.zeros((d, d))
for block in np.array_split(rng.permutation(d)[: 2 * (d // 3)], 2):  # two disjoint blocks of v v'
    v = np.zeros(d)
    v[block] = rng.uniform(0.5, 1.0, block.size) * rng.choice([-1.0, 1.0], block.size)
    S += np.outer(v, v)
noise = rng.normal(0.0, 0.1, (d, d))
B3 = S + (noise + noise.T) / 2
beta1, beta2 = np.abs(S).sum(), np.linalg.svd(S, compute_uv=False).sum()

Z = fm.Variable((d, d), name="Z")
sparse_low_rank = fm.Problem(fm.Minimize(fm.sum_squares(Z - B3)),
                             [fm.L1Ball(Z, beta1), fm.TraceNormBall(Z, beta2)])

snapshots = {}


def record(state):
    """Callback: keep a few iterates (the average of the copies) for the pictures."""
    if state.iteration in (1, 10, 100) or state.iteration % 500 == 0:
        snapshots[state.iteration] = state.value(Z)


value3 = sparse_low_rank.solve(max_iter=budget, callback=record)
snapshots[sparse_low_rank.stats.iterations] = Z.value.copy()
history = sparse_low_rank.history
print(f"fwmodel: status {sparse_low_rank.status}, objective {value3:.6f} after "
      f"{sparse_low_rank.stats.iterations} iterations, relative infeasibility "
      f"{sparse_low_rank.stats.feasibility_rel:.1e}")

f_zero = float(np.sum(B3**2))
cvxpy3 = gap3 = distance3 = None
if cp is not None:
    Zc = cp.Variable((d, d))
    cvxpy3 = float(cp.Problem(cp.Minimize(cp.sum_squares(Zc - B3)),
                              [cp.sum(cp.abs(Zc)) <= beta1, cp.normNuc(Zc) <= beta2]).solve())
    gap3 = (value3 - cvxpy3) / f_zero
    distance3 = float(np.linalg.norm(Z.value - Zc.value) / np.linalg.norm(Zc.value))
    print(f"CVXPY: objective {cvxpy3:.6f}; fwmodel is {gap3:.1e} f(0) above it, and "
          f"||Z - Z_cvxpy|| / ||Z_cvxpy|| = {distance3:.1e}")

# %% [markdown]
# The same model by hand, keeping both copies: the L1 copy is sparse, the
# trace-norm copy is low rank, at every iteration.

# %%
compiled3 = sparse_low_rank.compile()
steps = sorted({0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, budget - 1} & set(range(budget)))
# eta = lam / 4 makes y oscillate on the full-size problem (Theorem 3's constant is
# unknown, and 1 is too optimistic here): a smaller dual step is stable.
x3, y3, trace3, copies = fwal_by_hand(compiled3, budget, lam=1.0, eta=0.05, record_at=steps)
f3_hand = float(compiled3.objective.value(x3))
l1_block, trace_block = compiled3.blocks


def counts(x, relative):
    """Nonzeros of the L1 copy and rank of the trace-norm copy, above ``relative`` * the largest."""
    sparse_copy = np.abs(x[l1_block.slice])
    singular_values = np.linalg.svd(x[trace_block.slice].reshape(d, d), compute_uv=False)
    return (int(np.sum(sparse_copy > relative * sparse_copy.max())),
            int(np.sum(singular_values > relative * singular_values[0])))


exact = [counts(copies[t], 1e-12) for t in steps]
effective = [counts(copies[t], 1e-2) for t in steps]  # entries / singular values above 1% of the largest
# after step t each copy combines at most t + 2 vertices (the start and one per step)
structure_ok = all(n_ <= 2 * (t + 2) and r_ <= t + 2 for t, (n_, r_) in zip(steps, exact))
print(f"by hand: objective {f3_hand:.6f}, ||Mx - b|| = {trace3['feasibility'][-1]:.1e}")
for t, (n_, r_), (ne, re) in zip(steps, exact, effective):
    print(f"  after step {t:4d}: L1 copy {n_:3d} nonzeros ({ne:3d} above 1%), "
          f"trace-norm copy rank {r_} ({re} above 1%)")
nnz, ranks = [e[0] for e in effective], [e[1] for e in effective]

if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    axes[0].semilogy(history["iteration"], history["fw_gap"], label="FW gap")
    axes[0].semilogy(history["iteration"], history["feasibility_rel"], label="relative ||Mx - b||")
    axes[0].set_xlabel("iteration")
    axes[0].set_title("fwmodel: prob.history")
    axes[0].legend()
    if cvxpy3 is not None:
        # FW iterates are not feasible, so f_t - f* may be negative: plot its size
        excess = np.abs(history["objective"] - cvxpy3) / f_zero
        axes[1].loglog(history["iteration"][1:], excess[1:], label="fwmodel")
        axes[1].loglog(np.arange(1, trace3["objective"].size + 1),
                       np.abs(trace3["objective"] - cvxpy3) / f_zero, label="by hand")
        axes[1].set_title("|f(x_t) - f*| / f(0)")
        axes[1].legend()
    axes[1].set_xlabel("iteration")
    axes[2].semilogx(np.add(steps, 1), nnz, "o-", label="entries of the L1 copy")
    axes[2].semilogx(np.add(steps, 1), ranks, "s-", label="rank of the trace-norm copy")
    axes[2].axhline(np.sum(S != 0), color="tab:blue", ls=":", label="entries of S")
    axes[2].axhline(np.linalg.matrix_rank(S), color="tab:orange", ls=":", label="rank of S")
    axes[2].set_title("above 1% of the largest (by hand)", fontsize=9)
    axes[2].set_xlabel("iteration")
    axes[2].legend()
    fig.tight_layout()
    save(fig, "06_history.png")

    shown = sorted(snapshots)[:3] + [sorted(snapshots)[-1]]
    fig, axes = plt.subplots(1, len(shown) + 1, figsize=(2.6 * (len(shown) + 1), 2.8))
    limit = float(np.abs(S).max())
    for ax, t in zip(axes, shown):
        ax.imshow(snapshots[t], cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.set_title(f"iterate {t}", fontsize=9)
        ax.axis("off")
    axes[-1].imshow(S, cmap="RdBu_r", vmin=-limit, vmax=limit)
    axes[-1].set_title("true S", fontsize=9)
    axes[-1].axis("off")
    fig.tight_layout()
    save(fig, "06_iterates.png")

# %% [markdown]
# ## Questions for the course
#
# 1. Why does the equality row of `M` carry coefficients 1/2, and what would
#    change with three sets on `X`?
# 2. Run Part 3 by hand with `eta = lam / 4` at full size (the default
#    of `fwal_by_hand`): what happens to `||M x - b||` and `||y||`, and
#    why does a smaller constant dual step help (paper, Theorem 3)?
# 3. Give the L1 ball a radius far larger than `||S||_1`: the trace-norm
#    copy alone decides the answer. What does the dual variable converge to?

# %%
RESULTS = {
    "size": SIZE,
    "tiny_M_shape": tuple(M.shape),
    "tiny_b": b.tolist(),
    "tiny_node_kinds": kinds,
    "tiny_objective": tiny_value,
    "tiny_status": tiny.status,
    "tiny_hand_objective": f_hand,
    "tiny_hand_feasibility": float(trace_hand["feasibility"][-1]),
    "tiny_hand_dual": float(y_hand[-1]),
    "tiny_cvxpy_objective": tiny_cvxpy,
    "tiny_cvxpy_dual": tiny_dual,
    "status": sparse_low_rank.status,
    "objective": value3,
    "feasibility_rel": sparse_low_rank.stats.feasibility_rel,
    "hand_objective": f3_hand,
    "hand_gap_rel": None if cvxpy3 is None else (f3_hand - cvxpy3) / f_zero,
    "cvxpy_objective": cvxpy3,
    "f_zero": f_zero,
    "objective_gap_rel": gap3,
    "distance_to_cvxpy_rel": distance3,
    "history_length": len(history),
    "final_nnz": nnz[-1],
    "final_rank": ranks[-1],
    "true_nnz": int(np.sum(S != 0)),
    "true_rank": int(np.linalg.matrix_rank(S)),
    "structure_ok": structure_ok,
}
print(RESULTS)
