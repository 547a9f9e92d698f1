"""Constraint rows nearly parallel to a set's own sums, against CVXPY + Clarabel.

Three families, each with one user row ``<a, s> == beta`` that is a set's own
equality plus ``eps`` times noise (beta from a point of the set, so the model is feasible):

* ``simplex``: min ||C y - d||^2 over a simplex, ``(1 + eps noise) @ y == beta``;
* ``simplex_le``: ``simplex`` with the row an inequality ``a @ y <= beta`` that binds;
* ``portfolio``: min w' S w over long-only weights summing to 1, ``mu @ w == target`` with
  nearly equal expected returns ``mu = 0.05 + eps noise``;
* ``birkhoff``: min ||X - T||^2 over doubly stochastic X, a weighted sum ``<A, X> == beta``
  with A a row of ones plus ``eps`` noise;
* ``capped``: the portfolio with every weight at most 0.1 (a capped simplex);
* ``two_copies``: ``simplex`` with y in an L1 ball of radius 5 too (the row spread over y's copies);
* ``preimage``: ``simplex`` with the simplex on ``2 y - 0.01`` (a set on an affine image of y);
* ``priced``: a budget over prices, a simplex on ``prices * x``, and a return row nearly parallel to it.

Only the row's small part off the set's sums constrains the set; written as is, its
residual was read in units 1 / eps larger (``fwmodel/engine/hull_rows.py``). Columns: the
status, iterations, (f - f*) / |f*| and the row's dual against Clarabel's (relative).

    PYTHONPATH=. OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/hull_rows.py
"""
import argparse
import time

import numpy as np

import fwmodel as fm


def _budget_data(seed, eps, n):
    """(rng, C, d, a) of the least-squares families: data C, d and the row a = 1 + eps noise (drawn in this order)."""
    rng = np.random.default_rng(seed)
    C, d = rng.standard_normal((30, n)), rng.standard_normal(30)
    return rng, C, d, 1.0 + eps * rng.standard_normal(n)


def _least_squares(C, d, a, beta, sets, sets_cp, sense="=="):
    """(fwmodel problem, its row, CVXPY problem, its row): min ||C y - d||^2 over ``sets(y)`` with the row
    ``a @ y == beta`` (``sense`` "<=": ``a @ y <= beta``); ``sets_cp(yc)`` the same sets as CVXPY constraints."""
    import cvxpy as cp

    n = a.size
    y, yc = fm.Variable(n, name="y"), cp.Variable(n)
    row, row_cp = (a @ y == beta, a @ yc == beta) if sense == "==" else (a @ y <= beta, a @ yc <= beta)
    prob = fm.Problem(fm.Minimize(fm.sum_squares(C @ y - d)), sets(y) + [row])
    ref = cp.Problem(cp.Minimize(cp.sum_squares(C @ yc - d)), sets_cp(yc) + [row_cp])
    return prob, row, ref, row_cp


def _simplex_cp(yc):
    import cvxpy as cp

    return [yc >= 0, cp.sum(yc) == 1]


def simplex_budget(seed, eps, n=20):
    """(fwmodel problem, its row constraint, CVXPY problem, its row constraint)."""
    rng, C, d, a = _budget_data(seed, eps, n)
    beta = float(a @ rng.dirichlet(np.ones(n)))
    return _least_squares(C, d, a, beta, lambda y: [fm.Simplex(y)], _simplex_cp)


def simplex_le(seed, eps, n=20):
    """``simplex_budget`` with the row an inequality ``a @ y <= beta`` that binds: beta halfway between the row's
    least value over the simplex and its value at the optimum without the row."""
    import cvxpy as cp

    _, C, d, a = _budget_data(seed, eps, n)
    yc = cp.Variable(n)
    cp.Problem(cp.Minimize(cp.sum_squares(C @ yc - d)), _simplex_cp(yc)).solve(solver="CLARABEL")
    free = float(a @ yc.value)
    beta = free - 0.5 * (free - float(a.min()))
    return _least_squares(C, d, a, beta, lambda y: [fm.Simplex(y)], _simplex_cp, sense="<=")


def portfolio(seed, eps, n=30):
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 5))
    S = F @ F.T / 5 + np.diag(rng.uniform(0.5, 1.5, n))
    mu = 0.05 + eps * rng.standard_normal(n)
    target = float(mu @ rng.dirichlet(np.ones(n)))
    w = fm.Variable(n, name="w")
    row = mu @ w == target
    prob = fm.Problem(fm.Minimize(fm.quad_form(w, S)), [fm.Simplex(w), row])
    wc = cp.Variable(n)
    row_cp = mu @ wc == target
    ref = cp.Problem(cp.Minimize(cp.quad_form(wc, S)), [wc >= 0, cp.sum(wc) == 1, row_cp])
    return prob, row, ref, row_cp


def birkhoff(seed, eps, n=6):
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    T = rng.random((n, n))
    A = np.zeros((n, n))
    A[0, :] = 1.0
    A += eps * rng.standard_normal((n, n))
    P = 0.5 * np.eye(n)[rng.permutation(n)] + 0.5 / n
    beta = float(np.sum(A * P))
    X = fm.Variable((n, n), name="X")
    row = fm.sum(fm.multiply(A, X)) == beta
    prob = fm.Problem(fm.Minimize(fm.sum_squares(X - T)), [fm.BirkhoffPolytope(X), row])
    Xc = cp.Variable((n, n))
    row_cp = cp.sum(cp.multiply(A, Xc)) == beta
    ref = cp.Problem(cp.Minimize(cp.sum_squares(Xc - T)),
                     [Xc >= 0, cp.sum(Xc, axis=0) == 1, cp.sum(Xc, axis=1) == 1, row_cp])
    return prob, row, ref, row_cp


def capped_portfolio(seed, eps, n=30):
    """The portfolio with every weight at most 0.1 (a capped simplex, the box and simplex merged)."""
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 5))
    S = F @ F.T / 5 + np.diag(rng.uniform(0.5, 1.5, n))
    mu = 0.05 + eps * rng.standard_normal(n)
    w0 = np.minimum(rng.dirichlet(np.ones(n)), 0.1)
    w0 += (1 - w0.sum()) * (0.1 - w0) / np.sum(0.1 - w0)  # a point of the capped simplex
    target = float(mu @ w0)
    w = fm.Variable(n, name="w")
    row = mu @ w == target
    prob = fm.Problem(fm.Minimize(fm.quad_form(w, S)), [fm.Simplex(w), fm.Box(w, 0.0, 0.1), row])
    wc = cp.Variable(n)
    row_cp = mu @ wc == target
    ref = cp.Problem(cp.Minimize(cp.quad_form(wc, S)), [wc >= 0, wc <= 0.1, cp.sum(wc) == 1, row_cp])
    return prob, row, ref, row_cp


def two_copies(seed, eps, n=20):
    """``simplex_budget`` with y in an L1 ball too: the row is spread over y's two copies."""
    rng, C, d, a = _budget_data(seed, eps, n)
    beta = float(a @ rng.dirichlet(np.ones(n)))
    return _least_squares(C, d, a, beta, lambda y: [fm.Simplex(y), fm.L1Ball(y, 5.0)], _simplex_cp)


def preimage(seed, eps, n=20):
    """``simplex_budget`` with the simplex on ``2 y - 0.01`` (a set on an affine image of y: its block holds y)."""
    import cvxpy as cp

    rng, C, d, a = _budget_data(seed, eps, n)
    beta = float(a @ ((rng.dirichlet(np.ones(n)) + 0.01) / 2))
    return _least_squares(C, d, a, beta, lambda y: [fm.Simplex(2 * y - 0.01)],
                          lambda yc: [2 * yc - 0.01 >= 0, cp.sum(2 * yc - 0.01) == 1])


def priced(seed, eps, n=20):
    """A budget over prices as a simplex on ``prices * x`` (an entrywise scale: the sum's normal is the prices)
    and a return row ``mu @ x == target`` with ``mu = prices * (1 + eps noise)``, nearly parallel to it."""
    import cvxpy as cp

    rng = np.random.default_rng(seed)
    prices = rng.uniform(1, 3, n)
    F = rng.standard_normal((n, 4))
    S = F @ F.T / 4 + np.eye(n)
    mu = prices * (1 + eps * rng.standard_normal(n))
    target = float(mu @ (rng.dirichlet(np.ones(n)) / prices))
    x = fm.Variable(n, name="x")
    row = mu @ x == target
    prob = fm.Problem(fm.Minimize(fm.quad_form(x, S)), [fm.Simplex(fm.multiply(prices, x)), row])
    xc = cp.Variable(n)
    row_cp = mu @ xc == target
    ref = cp.Problem(cp.Minimize(cp.quad_form(xc, S)),
                     [cp.multiply(prices, xc) >= 0, cp.sum(cp.multiply(prices, xc)) == 1, row_cp])
    return prob, row, ref, row_cp


FAMILIES = dict(simplex=simplex_budget, simplex_le=simplex_le, portfolio=portfolio, birkhoff=birkhoff,
                capped=capped_portfolio, two_copies=two_copies, preimage=preimage, priced=priced)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="*", default=[1e-1, 1e-2, 1e-3, 1e-4, 1e-5])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'family':>9} {'eps':>6} {'seed':>4} {'status':>9} {'its':>6} {'(f-f*)/|f*|':>12} {'dual err':>9} {'s':>6}")
    wrong = 0
    for name, make in FAMILIES.items():
        for eps in args.eps:
            for seed in range(args.seeds):
                prob, row, ref, row_cp = make(seed, eps)
                start = time.perf_counter()
                prob.solve()
                seconds = time.perf_counter() - start
                f_star = ref.solve(solver="CLARABEL")
                rel = (prob.value - f_star) / abs(f_star)
                dual, dual_ref = float(np.ravel(row.dual_value)[0]), float(np.ravel(row_cp.dual_value)[0])
                dual_err = abs(dual - dual_ref) / max(abs(dual_ref), 1e-12)
                wrong += prob.status == "optimal" and abs(rel) > 1e-3
                print(f"{name:>9} {eps:>6g} {seed:>4} {prob.status:>9} {prob.stats.iterations:>6} {rel:>12.2e} "
                      f"{dual_err:>9.1e} {seconds:>6.2f}")
    print(f"'optimal' off by more than 1e-3: {wrong}")


if __name__ == "__main__":
    main()
