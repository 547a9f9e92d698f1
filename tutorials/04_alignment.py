# %% [markdown]
# # Alignments: Needleman-Wunsch, dynamic time warping and soft alignments
#
# An *alignment* of two sequences of lengths `n` and `m` is an `(n, m)` 0/1
# matrix `X` with `X[i, j] = 1` when position `i` of the first sequence is
# paired with position `j` of the second, and the pairs never cross: if
# `(i, j)` and `(i', j')` are both paired and `i < i'`, then `j < j'`.
# `fm.AlignmentPolytope(X)` is the convex hull of these matrices.
#
# Nobody knows a practical way to *project* onto this polytope, but its
# linear minimization oracle (LMO) is a textbook dynamic program over the
# `n x m` grid. The FW-AL paper (Gidel, Pedregosa & Lacoste-Julien, AISTATS
# 2018) gives this situation as the reason to use Frank-Wolfe: every
# iteration touches the set only through its LMO. This tutorial shows three
# uses:
#
# 1. a global DNA alignment (Needleman-Wunsch) as a linear program over the
#    matching polytope, checked against a plain dynamic program and Biopython;
# 2. dynamic time warping (DTW) between two time series, over the polytope of
#    monotone paths (`kind="path"`);
# 3. a smooth objective, a *soft* alignment fitted to a noisy similarity
#    matrix under a budget on the aligned mass, where the answer is a
#    fractional alignment that no dynamic program computes.
#
# Run as a script: `python tutorials/04_alignment.py` (figures go to
# `$FWMODEL_FIGURES_DIR`, by default a temporary folder). `FWMODEL_TUTORIAL_SIZE=small` makes every problem
# tiny (used by the tests); the default is "full".

# %%
import os

import numpy as np

import fwmodel as fm
from fwmodel.outputs import figures_dir

SIZE = os.environ.get("FWMODEL_TUTORIAL_SIZE", "full")
SMALL = SIZE == "small"
SAVE_FIGURES = __name__ == "__main__"  # figures are written only when this file runs as a script

try:
    import matplotlib

    if __name__ == "__main__":
        matplotlib.use("Agg")  # a script only writes files
    import matplotlib.pyplot as plt
except ImportError:  # the pictures are optional
    plt = None


def save(fig, name):
    """Write a figure to $FWMODEL_FIGURES_DIR (default: a temporary folder) when run as a script; always close it."""
    if SAVE_FIGURES:
        path = os.path.join(figures_dir(), name)
        fig.savefig(path, dpi=120, bbox_inches="tight")
        print(f"saved {path}")
    plt.close(fig)


rng = np.random.default_rng(0)

# %% [markdown]
# ## 1. Needleman-Wunsch as a linear program
#
# Two DNA strings: `b` is `a` with a few substitutions, insertions and
# deletions, so a good alignment exists.

# %%
def mutate(seq, rng, rate=0.15):
    """Copy ``seq`` with random substitutions, deletions and insertions."""
    out = []
    for ch in seq:
        u = rng.random()
        if u < rate / 3:
            out.append(rng.choice([c for c in "ACGT" if c != ch]))  # substitution
        elif u < 2 * rate / 3:
            continue  # deletion
        elif u < rate:
            out += [ch, rng.choice(list("ACGT"))]  # insertion after ch
        else:
            out.append(ch)
    return "".join(out)


length = 14 if SMALL else 200
a = "".join(rng.choice(list("ACGT"), length))
b = mutate(a, rng)
n, m = len(a), len(b)
print(f"a ({n}): {a[:60]}{'...' if n > 60 else ''}")
print(f"b ({m}): {b[:60]}{'...' if m > 60 else ''}")

# %% [markdown]
# With a substitution score `S[i, j]` (+1 for a match, -1 for a mismatch)
# and a linear gap score `gap` for every unpaired position, an alignment `X`
# with `|X|` pairs leaves `n + m - 2|X|` positions unpaired, so its score is
#
#     score(X) = <S, X> + gap * (n + m - 2 |X|) = <S - 2 gap, X> + gap * (n + m),
#
# linear in `X`. A linear objective over a polytope is maximized at a
# vertex, so the linear program over the matching polytope has the
# Needleman-Wunsch score as its optimal value.

# %%
match, mismatch, gap = 1.0, -1.0, -1.0
S = np.where(np.array(list(a))[:, None] == np.array(list(b))[None, :], match, mismatch)

A = fm.Variable((n, m), name="A")
nw_problem = fm.Problem(
    fm.Maximize(fm.sum(fm.multiply(S - 2 * gap, A)) + gap * (n + m)),
    [fm.AlignmentPolytope(A)],
)
nw_score = nw_problem.solve()
print(f"fwmodel: status {nw_problem.status}, score {nw_score:g} "
      f"after {nw_problem.stats.iterations} iteration(s)")

# %% [markdown]
# A single Frank-Wolfe iteration suffices: starting from the empty
# alignment, the LMO in the direction of the gradient `S - 2 gap` *is* the
# Needleman-Wunsch dynamic program, and the exact line search takes the
# full step to the vertex it returns.
#
# The textbook recursion, one cell at a time, as an independent check: `F[i,
# j]` is the best score of aligning the first `i` letters of `a` with the
# first `j` letters of `b`.

# %%
def needleman_wunsch(a, b, match, mismatch, gap):
    n, m = len(a), len(b)
    F = np.zeros((n + 1, m + 1))
    F[:, 0] = gap * np.arange(n + 1)
    F[0, :] = gap * np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            pair = match if a[i - 1] == b[j - 1] else mismatch
            F[i, j] = max(F[i - 1, j - 1] + pair, F[i - 1, j] + gap, F[i, j - 1] + gap)
    return F[n, m]


nw_dp = needleman_wunsch(a, b, match, mismatch, gap)
print(f"plain dynamic program: {nw_dp:g}")

try:
    from Bio import Align

    aligner = Align.PairwiseAligner(mode="global", match_score=match, mismatch_score=mismatch,
                                    open_gap_score=gap, extend_gap_score=gap)
    nw_biopython = float(aligner.score(a, b))
    print(f"Biopython PairwiseAligner: {nw_biopython:g}")
except ImportError:
    nw_biopython = None
    print("Biopython is not installed; skipping its check")

# %% [markdown]
# The solution is a 0/1 matrix; its pairs spell out the alignment.

# %%
def show_alignment(a, b, X, width=60):
    """The two strings with gaps ('-') inserted, from the pairs of X."""
    pairs = list(zip(*np.nonzero(X > 0.5)))
    top, bottom, i, j = [], [], 0, 0
    for pi, pj in pairs + [(len(a), len(b))]:
        top += list(a[i:pi]) + ["-"] * (pj - j)
        bottom += ["-"] * (pi - i) + list(b[j:pj])
        if pi < len(a):
            top.append(a[pi])
            bottom.append(b[pj])
        i, j = pi + 1, pj + 1
    middle = ["|" if s == t else " " for s, t in zip(top, bottom)]
    for k in range(0, len(top), width):
        print("".join(top[k:k + width]))
        print("".join(middle[k:k + width]))
        print("".join(bottom[k:k + width]))
        print()


X_nw = A.value
assert set(np.unique(X_nw)) <= {0.0, 1.0}
show_alignment(a, b, X_nw)

# %% [markdown]
# ## 2. Dynamic time warping
#
# DTW compares two time series that follow the same shape at different
# speeds. Its alignments are *paths*: `X` marks the cells of a monotone
# connected path from `(0, 0)` to `(n-1, m-1)` with steps right, down and
# diagonal (`kind="path"`), and the DTW distance is the minimum of `<C, X>`
# over them, `C` the matrix of pairwise costs.

# %%
n_t, m_t = (18, 24) if SMALL else (120, 150)
t = np.linspace(0, 1, n_t)
s = np.linspace(0, 1, m_t)
x = np.sin(2 * np.pi * 2 * t) + 0.5 * t
warp = s ** 1.6  # the second series runs slow first and fast later
y = np.sin(2 * np.pi * 2 * warp) + 0.5 * warp + 0.05 * rng.standard_normal(m_t)
C = (x[:, None] - y[None, :]) ** 2

W = fm.Variable((n_t, m_t), name="W")
dtw_problem = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, W))), [fm.AlignmentPolytope(W, kind="path")])
dtw_value = dtw_problem.solve()
dtw_path = W.value.copy()
print(f"fwmodel: status {dtw_problem.status}, DTW distance {dtw_value:.6f}")

# %% [markdown]
# A Sakoe-Chiba band `|i*m/n - j| <= band` keeps the path near the diagonal
# (a common guard against pathological warpings); it is the `band` argument.
# The plain recursion below takes the same band.

# %%
band = 0.15 * m_t
W_band = fm.Variable((n_t, m_t), name="W_band")
band_problem = fm.Problem(fm.Minimize(fm.sum(fm.multiply(C, W_band))),
                          [fm.AlignmentPolytope(W_band, kind="path", band=band)])
dtw_band_value = band_problem.solve()
print(f"fwmodel with band {band:g}: status {band_problem.status}, DTW distance {dtw_band_value:.6f}")


def dtw(C, band=None):
    """D[i, j] = C[i, j] + min(D[i-1, j], D[i, j-1], D[i-1, j-1]), one cell at a time."""
    n, m = C.shape
    D = np.full((n + 1, m + 1), np.inf)
    D[0, 0] = 0.0
    for i in range(n):
        for j in range(m):
            if band is not None and abs(i * m / n - j) > band:
                continue
            D[i + 1, j + 1] = C[i, j] + min(D[i, j + 1], D[i + 1, j], D[i, j])
    return D[n, m]


dtw_dp, dtw_band_dp = dtw(C), dtw(C, band)
print(f"plain recursion: {dtw_dp:.6f} (no band), {dtw_band_dp:.6f} (band)")

# %%
if plt is not None:
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.imshow(C, cmap="viridis", origin="upper", aspect="auto")
    for X_path, color, label in [(dtw_path, "white", "DTW path"), (W_band.value, "red", f"band {band:g}")]:
        rows, cols = np.nonzero(X_path > 0.5)
        ax.plot(cols, rows, color=color, lw=1.5, label=label)
    i_grid = np.arange(n_t)
    for side in (-1, 1):  # the band's edges, j = i*m/n -+ band
        ax.plot(i_grid * m_t / n_t + side * band, i_grid, "r--", lw=0.8)
    ax.set_xlim(-0.5, m_t - 0.5)
    ax.set_ylim(n_t - 0.5, -0.5)
    ax.set_xlabel("j (second series)")
    ax.set_ylabel("i (first series)")
    ax.set_title("DTW path over the cost matrix (x_i - y_j)^2")
    ax.legend(loc="lower left")
    save(fig, "04_dtw_path.png")

# %% [markdown]
# ## 3. A soft alignment: a smooth objective over two sets
#
# Linear objectives only ever reach vertices; a smooth objective lets the
# answer sit inside the polytope. Here a hidden alignment `truth` with
# `k` pairs is observed through a noisy similarity matrix, and we fit
#
#     minimize ||A - noisy||^2   s.t.   A in the matching polytope,  ||A||_1 <= r,
#
# the matching polytope intersected with an L1 ball: the budget `r` caps the
# total aligned mass below the number of pairs, so the model has to decide
# where its mass is best spent. The answer is a *fractional* alignment: a
# convex combination of alignments whose entries say how much each pair is
# supported by the data.

# %%
n_s, m_s, k_true, radius = (8, 10, 5, 4.0) if SMALL else (20, 25, 12, 10.0)
rows = np.sort(rng.choice(n_s, k_true, replace=False))
cols = np.sort(rng.choice(m_s, k_true, replace=False))
truth = np.zeros((n_s, m_s))
truth[rows, cols] = 1.0
noisy = truth + 0.4 * rng.standard_normal((n_s, m_s))

P = fm.Variable((n_s, m_s), name="P")
alignments = fm.AlignmentPolytope(P)
budget = fm.L1Ball(P, radius=radius)
soft_problem = fm.Problem(fm.Minimize(fm.sum_squares(P - noisy)), [alignments, budget])
compiled = soft_problem.compile()
print(compiled.summary())

# %% [markdown]
# `P` lies in two sets, so the compiler gives each set its own copy of `P`
# (two blocks) and ties the copies by the rows of `M`. Each FW-AL iteration
# calls the alignment dynamic program once (on the alignment copy) and the
# L1 ball's LMO once (one signed coordinate), then moves the dual variable of
# `copy1 - copy2 = 0`.
#
# We record, every few iterations, how many entries of the iterate are
# strictly between 0 and 1: from the first steps on, FW-AL's iterates are
# fractional alignments.

# %%
fractional_counts = []


def watch(state):
    if state.iteration % 25 == 0:
        value = state.value(P)
        fractional_counts.append((state.iteration, int(np.sum((value > 0.01) & (value < 0.99)))))


soft_value = soft_problem.solve(callback=watch)
soft = P.value
stats = soft_problem.stats
print(f"status {soft_problem.status}: objective {soft_value:.6f} after {stats.iterations} iterations "
      f"({stats.solve_time:.2f} s), FW gap {stats.fw_gap:.1e}, relative infeasibility {stats.feasibility_rel:.1e}")
print("fractional entries along the run (iteration, count):", fractional_counts[:6], "...")

# %% [markdown]
# The answer respects both sets: the membership test of the alignment
# polytope is exact for matchings (a dynamic program over "staircases",
# see `AlignmentPolytope.contains`), and the L1 norm is at the budget.

# %%
soft_in_polytope = bool(alignments.contains(soft, tol=1e-3))
soft_l1 = float(np.abs(soft).sum())
n_fractional = int(np.sum((soft > 0.05) & (soft < 0.95)))
print(f"in the alignment polytope: {soft_in_polytope}; ||P||_1 = {soft_l1:.4f} (budget {radius}); "
      f"{n_fractional} entries strictly between 0.05 and 0.95")

# %% [markdown]
# ### An independent check with CVXPY
#
# The matching polytope is *not* `{X >= 0, every row and column sums to at
# most 1}`: that larger polytope contains crossing matchings (the
# anti-diagonal of a 2 x 2 grid). An exact linear description comes from
# the dynamic program itself: alignments are the paths from `(0, 0)` to
# `(n, m)` in the Needleman-Wunsch grid with right, down and diagonal
# edges, a diagonal edge out of `(i, j)` pairing `i` with `j`. Flows of one
# unit on that graph are convex combinations of paths (the incidence matrix
# is totally unimodular), so the flows on diagonal edges describe exactly
# the matching polytope. CVXPY with Clarabel solves the same model on that
# description, when installed.

# %%
def flow_description(cp, n, m):
    """(X, constraints): X (n, m) ranges over the matching polytope."""
    node = np.arange((n + 1) * (m + 1)).reshape(n + 1, m + 1)
    tails, heads = [], []
    for di, dj in ((1, 1), (0, 1), (1, 0)):  # diagonal edges first: they are X
        tails.append(node[: n + 1 - di, : m + 1 - dj].ravel())
        heads.append(node[di:, dj:].ravel())
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    incidence = np.zeros((node.size, tails.size))
    incidence[tails, np.arange(tails.size)] += 1.0
    incidence[heads, np.arange(tails.size)] -= 1.0
    supply = np.zeros(node.size)
    supply[0], supply[-1] = 1.0, -1.0
    flow = cp.Variable(tails.size, nonneg=True)
    return cp.reshape(flow[: n * m], (n, m), order="C"), [incidence @ flow == supply]


try:
    import cvxpy as cp

    X_cp, flow_constraints = flow_description(cp, n_s, m_s)
    reference = cp.Problem(cp.Minimize(cp.sum_squares(X_cp - noisy)),
                           flow_constraints + [cp.sum(cp.abs(X_cp)) <= radius])
    reference.solve(solver=cp.CLARABEL)
    soft_reference = float(reference.value)
    soft_distance = float(np.abs(soft - X_cp.value).max())
    print(f"CVXPY + Clarabel: {soft_reference:.6f}; fwmodel: {soft_value:.6f}; "
          f"largest entry difference {soft_distance:.1e}")
except ImportError:
    soft_reference = soft_distance = None
    print("CVXPY is not installed; skipping the check")

# %% [markdown]
# ### From a soft alignment back to one alignment
#
# The vertex nearest to `P` in squared distance minimizes
# `||X - P||^2 = |X| - 2 <P, X> + const`, a *linear* function of `X`: one
# more linear program over the polytope (one LMO call), with weights
# `1 - 2 P`. Pairs with `P[i, j] > 1/2` are worth taking, subject to not
# crossing.

# %%
X_round = fm.Variable((n_s, m_s), name="X_round")
rounding = fm.Problem(fm.Minimize(fm.sum(fm.multiply(1 - 2 * soft, X_round))), [fm.AlignmentPolytope(X_round)])
rounding.solve()
decoded = X_round.value
recovered = int(np.sum((decoded > 0.5) & (truth > 0.5)))
print(f"decoded {int(decoded.sum())} pairs, {recovered} of them true (of {k_true} true pairs)")

# %%
if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, M_, title in [(axes[0], truth, "hidden alignment"), (axes[1], noisy, "noisy similarity"),
                          (axes[2], soft, f"soft alignment, budget r = {radius:g}")]:
        im = ax.imshow(M_, cmap="magma" if ax is not axes[1] else "coolwarm", vmin=0 if ax is not axes[1] else None,
                       vmax=1 if ax is not axes[1] else None)
        ax.set_title(title)
        ax.set_xlabel("j")
        ax.set_ylabel("i")
        fig.colorbar(im, ax=ax, shrink=0.8)
    r_dec, c_dec = np.nonzero(decoded > 0.5)
    axes[2].scatter(c_dec, r_dec, marker="x", color="cyan", s=25, label="rounded")
    axes[2].legend(loc="lower left", fontsize=8)
    save(fig, "04_soft_alignment.png")

# %%
RESULTS = {
    "size": SIZE,
    "nw_status": nw_problem.status,
    "nw_score_fwmodel": nw_score,
    "nw_score_dp": float(nw_dp),
    "nw_score_biopython": nw_biopython,
    "nw_iterations": nw_problem.stats.iterations,
    "dtw_status": dtw_problem.status,
    "dtw_fwmodel": dtw_value,
    "dtw_dp": float(dtw_dp),
    "dtw_band_status": band_problem.status,
    "dtw_band_fwmodel": dtw_band_value,
    "dtw_band_dp": float(dtw_band_dp),
    "soft_status": soft_problem.status,
    "soft_objective": soft_value,
    "soft_objective_reference": soft_reference,
    "soft_max_entry_difference": soft_distance,
    "soft_iterations": stats.iterations,
    "soft_feasibility_rel": stats.feasibility_rel,
    "soft_in_polytope": soft_in_polytope,
    "soft_l1": soft_l1,
    "soft_radius": radius,
    "soft_fractional_entries": n_fractional,
    "decoded_pairs": int(decoded.sum()),
    "decoded_true_pairs": recovered,
    "true_pairs": k_true,
}
print(RESULTS)
