# %% [markdown]
# # A first model: least squares over an L1 ball and a box
#
# We fit `x` to data under two constraints at once,
#
#     minimize ||A x - b||^2   s.t.   ||x||_1 <= r,   -u <= x_i <= u,
#
# a lasso in constraint form with bounded coefficients. In general fwmodel
# never projects onto an intersection of sets (this pair it also knows as
# one set, shown below): it gives each set its own
# copy of `x`, runs Frank-Wolfe steps on each copy (each set only needs its
# linear minimization oracle) and ties the copies together with the
# consistency constraint `M x = b` of the Frank-Wolfe Augmented Lagrangian
# method (FW-AL, Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018).
#
# Run as a script: `python tutorials/01_first_model.py`. The environment
# variable `FWMODEL_TUTORIAL_SIZE=small` makes the problem small (used by the
# tests); the default is "full".

# %%
import os

import numpy as np

import fwmodel as fm

SIZE = os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")
m, n = (40, 20) if SIZE == "small" else (300, 150)
radius, bound = 2.0, 0.35

# %% [markdown]
# ## Data with a known answer
#
# We take a design `A` with orthonormal columns (`A'A = I`). Then
# `||A x - b||^2 = ||x - A'b||^2 + ||b||^2 - ||A'b||^2`, so the model is the
# Euclidean projection of `c = A'b` onto the L1 ball intersected with the box,
# and its answer has a closed form up to one scalar: soft-thresholding
# followed by clipping,
#
#     x_i(theta) = sign(c_i) * min(max(|c_i| - theta, 0), u),
#
# with `theta = 0` if `x(0)` is already in the L1 ball, and otherwise the
# `theta > 0` for which `||x(theta)||_1 = r` (found by bisection, as
# `||x(theta)||_1` decreases in `theta`). This is the KKT system of the
# projection: the multiplier of the L1 constraint is `theta`, the box
# multipliers do the clipping.

# %%
rng = np.random.default_rng(0)
A, _ = np.linalg.qr(rng.standard_normal((m, n)))  # orthonormal columns
x_true = np.zeros(n)
x_true[: n // 5] = rng.uniform(0.2, 0.6, n // 5) * rng.choice([-1.0, 1.0], n // 5)
b = A @ x_true + 0.3 * rng.standard_normal(m)


def projection_l1_box(c, r, u):
    """Projection of c onto {||x||_1 <= r} ∩ [-u, u]^n (soft-threshold, then clip)."""

    def x_of(theta):
        return np.sign(c) * np.clip(np.abs(c) - theta, 0.0, u)

    if np.abs(x_of(0.0)).sum() <= r:
        return x_of(0.0)
    lo, hi = 0.0, float(np.abs(c).max())
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.abs(x_of(mid)).sum() > r else (lo, mid)
    return x_of(hi)


x_ref = projection_l1_box(A.T @ b, radius, bound)
f_ref = float(np.sum((A @ x_ref - b) ** 2))
print(f"closed form: objective {f_ref:.6f}, ||x||_1 = {np.abs(x_ref).sum():.4f}, "
      f"{np.sum(np.abs(x_ref) >= bound - 1e-12)} entries at the box bound")

# %% [markdown]
# ## The model
#
# A variable, a smooth convex objective, and a list of sets. Each set takes
# the constrained expression first.

# %%
x = fm.Variable(n, name="x")
merged = fm.Problem(
    fm.Minimize(fm.sum_squares(A @ x - b)),
    [fm.L1Ball(x, radius=radius), fm.Box(x, -bound, bound)],
)
print(merged.compile().summary())

# %% [markdown]
# This pair of sets is common enough that the compiler recognizes it: an L1
# ball and a box that both hold all of `x`, with nothing else on `x`, become
# one set, `BoxedL1Ball`, whose LMO (fill the entries of largest gradient up
# to their bound until the radius is spent) and projection (soft-threshold,
# then clip) are exact. One block, no rows.
#
# To see FW-AL's general machinery, which works for any sets, we put the box
# on the slice `x[:]` instead: the compiler gives a set of an expression its
# own copy, as it would for two sets it cannot merge.

# %%
prob = fm.Problem(
    fm.Minimize(fm.sum_squares(A @ x - b)),
    [fm.L1Ball(x, radius=radius), fm.Box(x[:], -bound, bound)],
)

# %% [markdown]
# ## What the compiler builds
#
# `prob.compile()` returns problem (OPT2) of the paper: a product of blocks,
# one per set. `x` lies in two sets, so each block holds a copy of `x`.

# %%
compiled = prob.compile()
print(compiled.summary())
for blk in compiled.blocks:
    print(f"  block {blk.index}: x[{blk.offset}:{blk.offset + blk.size}] in {blk.set!r}")

# %% [markdown]
# The copies are tied by the rows of the sparse consistency matrix `M`:
# row `i` says `copy2[i] - copy1[i] = 0` (a +1 and a -1 in each row), and
# `b = 0`. The dual ascent of FW-AL acts on `M x - b`.

# %%
M = compiled.M
print(f"M: {type(M).__name__} of shape {M.shape} with {M.nnz} nonzeros; b has norm {np.linalg.norm(compiled.b):g}")
print("first rows of M (columns 0..3 and n..n+3):")
print(M[:3][:, list(range(4)) + list(range(n, n + 4))].toarray())

# %% [markdown]
# The networkx graph that `M` was assembled from: the variable, its two copies
# (blocks), the sets, and the consistency edge between the copies.

# %%
graph = compiled.graph
for node, data in graph.nodes(data=True):
    print(f"  node {node}: {data['kind']}")
for u, v, data in graph.edges(data=True):
    extra = f" ({data['rows']} rows of M)" if data["kind"] == "consistency" else ""
    print(f"  edge {u} -- {v}: {data['kind']}{extra}")

# %% [markdown]
# ## Solve
#
# `prob.solve()` returns the objective at the returned point; `x.value` is
# the average of the two copies, and `prob.stats` says how far the copies
# still disagree (`feasibility_rel`) and what the point is certified to:
# `suboptimality_bound` bounds `value - f*` by weak duality (the FW gap
# minus the term the remaining infeasibility can hide, `<y + lam r, r>`).
# Here it is negative: the copies still disagree by `feasibility_rel`, and
# the average lies slightly *below* f*, which the multipliers certify.

# %%
value = prob.solve()
stats = prob.stats
print(f"status {prob.status}: objective {value:.6f} after {stats.iterations} iterations "
      f"({stats.solve_time:.2f} s), FW gap {stats.fw_gap:.2e}, relative infeasibility {stats.feasibility_rel:.1e}")
print(f"certified: value - f* <= {stats.suboptimality_bound:.2e}")

# %% [markdown]
# ## Compare with the closed form

# %%
rel_error = abs(value - f_ref) / max(1.0, abs(f_ref))
l1 = float(np.abs(x.value).sum())
max_abs = float(np.abs(x.value).max())
dist = float(np.linalg.norm(x.value - x_ref))
print(f"objective: fwmodel {value:.6f}, closed form {f_ref:.6f}, relative difference {rel_error:.1e}")
print(f"value - f* = {value - f_ref:.2e}, within the certified {stats.suboptimality_bound:.2e}")
print(f"||x||_1 = {l1:.5f} (radius {radius}), max |x_i| = {max_abs:.5f} (bound {bound})")
print(f"||x - x_closed_form|| = {dist:.2e}")

# %% [markdown]
# The merged model reaches the same answer without copies to reconcile.

# %%
merged_value = merged.solve()
merged_error = abs(merged_value - f_ref) / max(1.0, abs(f_ref))
print(f"merged set: objective {merged_value:.6f} after {merged.stats.iterations} iterations "
      f"(two copies: {stats.iterations}), relative difference to the closed form {merged_error:.1e}")

# %% [markdown]
# The trajectory is in `prob.history`: objective, Frank-Wolfe gap and
# infeasibility per iteration.

# %%
history = prob.history
for t in sorted({0, 1, 10, 100, len(history) - 1}):
    if t < len(history):
        print(f"  iteration {history['iteration'][t]:5d}: objective {history['objective'][t]:.6f}, "
              f"FW gap {history['fw_gap'][t]:.2e}, infeasibility {history['feasibility_rel'][t]:.1e}")

RESULTS = {
    "size": SIZE,
    "status": prob.status,
    "objective": value,
    "reference_objective": f_ref,
    "rel_error": rel_error,
    "distance_to_reference": dist,
    "l1_norm": l1,
    "radius": radius,
    "max_abs": max_abs,
    "bound": bound,
    "iterations": stats.iterations,
    "feasibility_rel": stats.feasibility_rel,
    "n_blocks": len(compiled.blocks),
    "M_shape": tuple(M.shape),
    "merged_rel_error": merged_error,
    "merged_iterations": merged.stats.iterations,
}
print(RESULTS)
