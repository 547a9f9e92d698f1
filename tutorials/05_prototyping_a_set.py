# %% [markdown]
# # Prototyping: a new set from its LMO, a new loss from a formula
#
# Frank-Wolfe methods touch a constraint set only through its *linear
# minimization oracle* (LMO): given a direction `D`, return a point `S` of
# the set minimizing `<D, S>`. So a new set costs one short method, and
# FW-AL (Gidel, Pedregosa & Lacoste-Julien, AISTATS 2018) combines it with
# the built-in sets without ever projecting onto their intersection.
#
# This tutorial
#
# 1. writes a set that fwmodel does not have, the **group-sparse L1/Linf
#    ball** `{W : sum_i max_j |W[i, j]| <= r}` (rows are groups), by
#    subclassing `fm.ConvexSet`;
# 2. tests its LMO with `fm.check_lmo`, and shows what the check says
#    about a buggy version;
# 3. solves a multi-task regression over its intersection with the built-in
#    `fm.L1Ball` (the "sparse group" constraint), checked against CVXPY;
# 4. swaps the squared loss for a robust pseudo-Huber loss written in SymPy
#    with `fm.smooth`, whose gradient and convexity are derived symbolically.
#
# Run as a script: `python tutorials/05_prototyping_a_set.py` (it saves a
# figure to `$FWMODEL_FIGURES_DIR`, by default a temporary folder, when
# matplotlib is installed). `FWMODEL_TUTORIAL_SIZE=small` makes
# the problem small (used by the tests); the default is "full".

# %%
import os
from pathlib import Path

import numpy as np
import sympy as sp

import fwmodel as fm

SIZE = os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")
# n samples, p features, k tasks; W (p x k) has few nonzero rows
n, p, k = (30, 10, 3) if SIZE == "small" else (100, 40, 5)

# %% [markdown]
# ## 1. The set, in a dozen lines
#
# The dual norm of `||W||_{1,inf} = sum_i ||W[i]||_inf` is
# `max_i ||D[i]||_1`, which gives the LMO: find the row `i` of `D` with the
# largest L1 norm, and put `-r * sign(D[i])` there, zeros elsewhere. Then
# `<D, S> = -r * max_i ||D[i]||_1`, the smallest value over the ball.
#
# Only `lmo` is required. The optional hooks used here:
#
# - `is_polytope = True`: the ball has finitely many vertices (one row of
#   signs times `r`), so FW-AL may take *away steps* on it, which converge
#   linearly instead of sublinearly (paper, Theorem 3);
# - `contains(point, tol)`: a membership test, used by `fm.check_lmo`;
# - `diameter()`: an upper bound on the distance between two points.
#
# Two more hooks exist: `lmo_atom` (return a compact vertex such as
# `fm.SparseAtom`, shown below) and `reset` (forget a warm start between
# solves; nothing to forget here).

# %%
class GroupLinfBall(fm.ConvexSet):
    """Group-sparse ball {W : sum_i max_j |W[i, j]| <= radius}; the rows are the groups."""

    is_polytope = True

    def __init__(self, expr, radius=1.0):
        super().__init__(expr)
        if len(self.shape) != 2:
            raise fm.ModelError(f"GroupLinfBall needs a matrix expression, got shape {self.shape}")
        self.radius = float(radius)

    def lmo(self, direction):
        D = np.asarray(direction, dtype=float).reshape(self.shape)
        i = int(np.argmax(np.abs(D).sum(axis=1)))  # the row with the largest L1 norm
        S = np.zeros(self.shape)
        S[i] = -self.radius * np.where(D[i] > 0, 1.0, -1.0)  # ties (D = 0) take +radius
        return S

    def contains(self, point, tol=1e-9):
        W = np.reshape(point, self.shape)
        return bool(np.abs(W).max(axis=1).sum() <= self.radius * (1 + tol) + tol)

    def diameter(self):
        # two vertices differ in at most two rows of k entries of size 2 r
        return 2.0 * self.radius * np.sqrt(2.0 * self.shape[1])

    def __repr__(self):
        return f"GroupLinfBall({self.expr!r}, radius={self.radius:g})"


# %% [markdown]
# ## 2. Check the LMO before trusting it
#
# `fm.check_lmo` instantiates the class on a variable of the given shape,
# calls the LMO on random directions and their negatives, and checks the
# contract (shape, finite values, the direction left untouched), optimality
# against convex combinations of other outputs, reproducibility, and the
# optional hooks.

# %%
report = fm.check_lmo(GroupLinfBall, shape=(8, 3), kwargs=dict(radius=2.0))
print(report)

# %% [markdown]
# A classic bug: forgetting the minus sign, so the "LMO" maximizes. The
# solver would climb instead of descend, with no error; the check names it.

# %%
class BuggyGroupLinfBall(GroupLinfBall):
    def lmo(self, direction):
        return -super().lmo(direction)  # the sign error


buggy_report = fm.check_lmo(BuggyGroupLinfBall, shape=(8, 3), kwargs=dict(radius=2.0))
print(buggy_report)

# %% [markdown]
# The optional `lmo_atom` hook returns the vertex in compact form: a row of
# `k` signed entries is a `fm.SparseAtom` of `k` flat indices instead of a
# dense `p x k` array, which keeps the solver's active set small. The check
# verifies that it agrees with `lmo`.

# %%
class SparseGroupLinfBall(GroupLinfBall):
    def lmo_atom(self, flat_direction):
        D = np.asarray(flat_direction, dtype=float).reshape(self.shape)
        i = int(np.argmax(np.abs(D).sum(axis=1)))
        cols = np.arange(self.shape[1])
        values = -self.radius * np.where(D[i] > 0, 1.0, -1.0)
        return fm.SparseAtom(i * self.shape[1] + cols, values, self.size)


atom_report = fm.check_lmo(SparseGroupLinfBall, shape=(8, 3), kwargs=dict(radius=2.0))
print(atom_report)

# %% [markdown]
# ## 3. Multi-task regression over the intersection
#
# Data: `Y = A W_true + noise` where only 3 of the `p` rows of `W_true` are
# nonzero (3 features matter, for all tasks), and one entry of those rows
# is zero. The model asks for a `W` that is group-sparse *and* sparse:
#
#     minimize 0.5 ||A W - Y||_F^2
#     s.t.     sum_i max_j |W[i, j]| <= r1,    sum_ij |W[i, j]| <= r2.
#
# `W` lies in two sets, so FW-AL gives each its own copy and drives the
# copies together with the dual variable of the consistency constraint.

# %%
rng = np.random.default_rng(1)
A = rng.standard_normal((n, p))
W_true = np.zeros((p, k))
support = rng.choice(p, 3, replace=False)
W_true[support] = rng.uniform(-1, 1, (3, k))
W_true[support[0], 0] = 0.0
Y = A @ W_true + 0.1 * rng.standard_normal((n, k))
r1 = 0.9 * np.abs(W_true).max(axis=1).sum()
r2 = 0.9 * np.abs(W_true).sum()

W = fm.Variable((p, k), name="W")
constraints = [SparseGroupLinfBall(W, r1), fm.L1Ball(W, r2)]
prob = fm.Problem(fm.Minimize(0.5 * fm.sum_squares(A @ W - Y)), constraints)
value = prob.solve()
W_ls = W.value.copy()
print(f"status {prob.status}: objective {value:.6f} after {prob.stats.iterations} iterations "
      f"({prob.stats.solve_time:.2f} s), relative infeasibility {prob.stats.feasibility_rel:.1e}")
print(f"group norm {np.abs(W_ls).max(axis=1).sum():.4f} (r1 = {r1:.4f}), "
      f"L1 norm {np.abs(W_ls).sum():.4f} (r2 = {r2:.4f})")
found_rows = sorted(int(i) for i in np.flatnonzero(np.abs(W_ls).max(axis=1) > 1e-3))
print(f"rows of W above 1e-3: {found_rows}, true support {sorted(int(i) for i in support)}")

# %% [markdown]
# An independent answer: CVXPY solves the same model with a conic solver
# (skipped when CVXPY is not installed).

# %%
try:
    import cvxpy as cp
except ImportError:  # CVXPY is optional
    cp = None

cvxpy_value = None
if cp is not None:
    Wc = cp.Variable((p, k))
    cvx_constraints = [cp.sum(cp.max(cp.abs(Wc), axis=1)) <= r1, cp.sum(cp.abs(Wc)) <= r2]
    cvxpy_value = float(cp.Problem(cp.Minimize(0.5 * cp.sum_squares(A @ Wc - Y)), cvx_constraints).solve())
    print(f"CVXPY objective {cvxpy_value:.6f}; fwmodel {value:.6f}; "
          f"max |W_fwmodel - W_cvxpy| = {np.abs(W_ls - Wc.value).max():.1e}")

# %% [markdown]
# ## 4. A robust loss from a formula
#
# A few samples are now corrupted by large errors. The squared loss lets
# them pull the fit; the *pseudo-Huber* loss
# `delta^2 (sqrt(1 + (z/delta)^2) - 1)` grows only linearly for large
# residuals. fwmodel has no such atom, but `fm.smooth` builds one from a
# SymPy formula: the symbol `z` stands for each entry of the residual. SymPy
# derives the gradient and the second derivative, and proves convexity
# (`f''(z) >= 0` for all real `z`) before the atom is used in a Minimize.

# %%
z = sp.Symbol("z")
delta = 0.5
pseudo_huber = delta**2 * (sp.sqrt(1 + (z / delta) ** 2) - 1)

Y_corrupt = Y.copy()
bad = rng.choice(n, max(2, n // 10), replace=False)
Y_corrupt[bad] += 5.0

loss = fm.smooth(pseudo_huber, {z: A @ W - Y_corrupt})
print(f"atom: {loss!r}")
print(f"shape {loss.shape}, convexity: {loss.convexity} because {loss.convexity_reason}")

robust = fm.Problem(fm.Minimize(fm.sum(loss)), constraints)
robust_value = robust.solve()
W_robust = W.value.copy()
print(f"status {robust.status}: objective {robust_value:.6f} after {robust.stats.iterations} iterations")

squared = fm.Problem(fm.Minimize(0.5 * fm.sum_squares(A @ W - Y_corrupt)), constraints)
squared.solve()
W_squared = W.value.copy()
error_robust = float(np.abs(W_robust - W_true).max())
error_squared = float(np.abs(W_squared - W_true).max())
print(f"max |W - W_true| with corrupted data: pseudo-Huber {error_robust:.3f}, squared loss {error_squared:.3f}")

# %% [markdown]
# CVXPY writes the pseudo-Huber loss as
# `delta * ||(delta, z)||_2 - delta^2`, entry by entry.

# %%
cvxpy_robust_value = None
if cp is not None:
    residual = cp.vec(A @ Wc - Y_corrupt, order="C")
    stacked = cp.vstack([delta * np.ones(n * k), residual])
    cvx_loss = delta * cp.sum(cp.norm(stacked, 2, axis=0)) - n * k * delta**2
    cvxpy_robust_value = float(cp.Problem(cp.Minimize(cvx_loss), cvx_constraints).solve())
    print(f"CVXPY objective {cvxpy_robust_value:.6f}; fwmodel {robust_value:.6f}")

# %% [markdown]
# What `fm.smooth` refuses, and why: a formula with a kink would break the
# smoothness FW-AL relies on, and a string would have to be evaluated.

# %%
refusals = {}
for label, bad_formula in [("abs", sp.Abs(z)), ("max", sp.Max(z, 0)), ("string", "sqrt(1 + z**2)")]:
    try:
        fm.smooth(bad_formula, {z: A @ W - Y})
    except fm.ModelError as err:
        refusals[label] = str(err)
        print(f"{label}: {err}")

# %% [markdown]
# ## Try it
#
# Replace `max_j |W[i, j]|` by the row's L2 norm (a group-lasso ball): the
# LMO becomes `S[i] = -r * D[i] / ||D[i]||_2` for the row of largest L2
# norm. That ball is *not* a polytope (set `is_polytope = False`), so FW-AL
# loses its away steps and converges sublinearly: compare the iteration
# counts.

# %% [markdown]
# ## Picture
#
# The true `W` and the two estimates from corrupted data (matplotlib is
# optional; the figure is written to `$FWMODEL_FIGURES_DIR`, by default a
# temporary folder, only when this file runs as a script).

# %%
try:
    import matplotlib.pyplot as plt
except ImportError:  # matplotlib is optional
    plt = None

if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(7, 3.6), sharey=True)
    limit = float(np.abs(W_true).max())
    for ax, image, title in zip(axes, [W_true, W_squared, W_robust], ["true W", "squared loss", "pseudo-Huber"]):
        ax.imshow(image, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_title(title)
        ax.set_xlabel("task")
    axes[0].set_ylabel("feature (group)")
    fig.tight_layout()
    if __name__ == "__main__":
        from fwmodel.outputs import figures_dir

        path = Path(figures_dir()) / "05_prototyping_a_set.png"
        fig.savefig(path, dpi=110)
        print(f"figure saved to {path}")
    plt.close(fig)

# %%
RESULTS = {
    "size": SIZE,
    "check_ok": report.ok,
    "buggy_check_ok": buggy_report.ok,
    "buggy_problems": buggy_report.problems,
    "atom_check_ok": atom_report.ok,
    "status": prob.status,
    "found_rows": found_rows,
    "true_rows": sorted(int(i) for i in support),
    "objective": value,
    "cvxpy_objective": cvxpy_value,
    "group_norm": float(np.abs(W_ls).max(axis=1).sum()),
    "r1": float(r1),
    "l1_norm": float(np.abs(W_ls).sum()),
    "r2": float(r2),
    "feasibility_rel": prob.stats.feasibility_rel,
    "robust_status": robust.status,
    "robust_objective": robust_value,
    "cvxpy_robust_objective": cvxpy_robust_value,
    "robust_convexity": loss.convexity,
    "error_robust": error_robust,
    "error_squared": error_squared,
    "refused": sorted(refusals),
}
print({key: item for key, item in RESULTS.items() if key != "buggy_problems"})
