"""MAP inference by FW-AL on the local marginal polytope, with rounding and a certificate.

:func:`map_inference` solves the LP relaxation

    minimize_mu  -<theta_nodes, mu_nodes> - <theta_edges, mu_edges>
                 (+ smoothing/2 ||mu||^2, optionally)
    s.t.         mu in the local marginal polytope of the graph,

with FW-AL (the GDMM setting of Huang et al. 2017: a linear objective over a
product of simplices tied by marginalization consistency, paper Sec. 2.1),
then rounds the node marginals to a labeling and reports three numbers that
bracket the MAP energy E*:

    lower_bound  <=  LP optimum  <=  E*  <=  energy(labels).

``lower_bound`` is certified by weak duality from the duals FW-AL returns
(:meth:`LocalMarginalPolytope.lower_bound`), so ``energy - lower_bound`` is a
proven bound on the suboptimality of the decoded labels; it is 0 (up to the
solver's accuracy) when the relaxation is tight, e.g. on trees.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..expressions import sum_squares
from ..problem import Minimize, Problem
from .local_polytope import LocalMarginalPolytope


@dataclass
class MAPResult:
    """What :func:`map_inference` returns.

    Attributes
    ----------
    labels : ndarray of int, shape (N,)
        The best decoded labeling seen during the solve (argmax of the node
        marginals, checked every ``check_every`` iterations and at the end), in
        ``lmp.node_list`` order; ``labeling`` is the same as a dict
        networkx node -> label.
    energy : float
        Energy of ``labels``: ``-(sum_v theta_v(x_v) + sum_uv theta_uv(x_u, x_v))``.
    lp_value : float
        ``-<theta, mu>`` at the returned marginals (FW-AL's approximate LP
        optimum; the marginals satisfy the constraints only up to
        ``problem.stats.feasibility_rel``, so this is not a bound).
    lower_bound : float
        A certified lower bound on the LP optimum, hence on the MAP energy.
    gap : float
        ``energy - lower_bound`` (>= 0): how far ``labels`` can be from MAP.
    status : str
        "certified" when the solve stopped because ``gap <= gap_tol *
        max(|energy|, spread / 100)`` (the labels are MAP up to that
        tolerance; ``spread``: see :func:`certificate_scale`);
        otherwise the solver's status (``problem.status``: "optimal",
        "max_iter", "time_limit", ...).
    node_marginals, edge_marginals : ndarray
        The returned marginals, shapes (N, K) and (E, K, K).
    problem : fm.Problem
        The solved problem (stats, history, warm starts).
    lmp : LocalMarginalPolytope
    """

    labels: np.ndarray
    labeling: dict
    energy: float
    lp_value: float
    lower_bound: float
    gap: float
    status: str
    node_marginals: np.ndarray
    edge_marginals: np.ndarray
    problem: Problem
    lmp: LocalMarginalPolytope

    def __repr__(self):
        return (f"MAPResult(energy={self.energy:.6g}, lp_value={self.lp_value:.6g}, "
                f"lower_bound={self.lower_bound:.6g}, gap={self.gap:.3g}, status={self.status!r}, "
                f"{self.labels.size} labels)")


def map_objective(lmp, theta_nodes, theta_edges, smoothing=0.0):
    """``-lmp.score(theta) + smoothing/2 (||nodes||^2 + ||edges||^2)``, the expression to minimize.

    ``smoothing = 0`` is the LP relaxation (a linear objective, the GDMM
    case). A small ``smoothing > 0`` makes the objective strongly convex;
    its minimizer tends to the LP's minimum-norm optimum as smoothing -> 0.
    """
    smoothing = float(smoothing)
    if not (smoothing >= 0 and np.isfinite(smoothing)):
        raise ModelError(f"map_objective: smoothing must be a nonnegative number, got {smoothing!r}")
    objective = -lmp.score(theta_nodes, theta_edges)
    if smoothing > 0:
        objective = objective + (smoothing / 2.0) * (sum_squares(lmp.nodes) + sum_squares(lmp.edges))
    return objective


def default_penalty(theta_nodes, theta_edges):
    """A penalty lam from the score tables alone (for plain FW steps, ``step="fw"``).

    lam has the units of the scores (f / ||M mu - b||^2 with mu unitless),
    so it scales with them: lam = 0.03 * s, with s the mean spread
    (max - min) of a factor's score table over all node and edge factors.
    Measured with plain FW steps on 20 x 20 Potts grids (K = 3, 5, 10; mixed
    and attractive couplings; scores scaled by 1 and 10), lam between 0.01 s
    and 0.1 s works and 0.03 s is the best compromise between the speed of
    the dual bound and of primal feasibility. :func:`map_inference` no longer
    uses it by default: with the engine's per-simplex pairwise steps the
    engine's own default (about 0.25 s here) reaches a 1e-3 bound and primal
    point 3-5x sooner (benchmarks/RESULTS.md, "MAP LP with prob.solve()
    defaults").
    """
    tn = np.asarray(theta_nodes, dtype=float)
    te = np.asarray(theta_edges, dtype=float)
    spreads = np.concatenate([np.ptp(tn.reshape(tn.shape[0], -1), axis=1),
                              np.ptp(te.reshape(te.shape[0], -1), axis=1)])
    s = float(spreads.mean()) if spreads.size else 0.0
    return 0.03 * s if s > 0 else 1.0


def _duals(callback_state):
    # the dual vector y (one entry per row of M) at this iteration
    return callback_state.y


def certificate_scale(theta_nodes, theta_edges):
    """The spread of the energy: ``sum_v (max - min) theta_v + sum_uv (max - min) theta_uv``.

    Every labeling's energy lies within this of every other's, so it is the
    energy's own unit. The certificate's tolerance is relative to
    ``max(|energy|, spread / 100)`` (the scale-free measure of
    ``benchmarks/zoo.py``): an absolute floor (it was ``max(1, |energy|)``)
    certified labels 3.6 % above the MAP energy when the potentials were in
    units of 1e-4.
    """
    def spread_of(table, axes):
        if table.size == 0:
            return 0.0
        return float(np.sum(table.max(axis=axes) - table.min(axis=axes)))
    return spread_of(theta_nodes, 1) + spread_of(np.asarray(theta_edges), (1, 2))


def map_inference(graph, theta_nodes, theta_edges, *, smoothing=0.0, gap_tol=1e-4, check_every=10,
                  **solve_options):
    """MAP inference in a pairwise MRF: LP relaxation by FW-AL, rounding and certificate.

    Parameters
    ----------
    graph : networkx.Graph or LocalMarginalPolytope
        The factor graph (see :class:`LocalMarginalPolytope` for what is
        accepted), or a polytope built on it (to reuse its variables).
    theta_nodes : array (N, K)
        Node scores (log-potentials; larger is more likely), one row per
        node in ``list(graph.nodes())`` order. K, the number of states, is
        read from its shape.
    theta_edges : array (E, K, K) or (K, K)
        Edge scores, ``theta_edges[e, i, j]`` for state i of u and j of v,
        with ``(u, v)`` the e-th edge of ``list(graph.edges())``; a single
        (K, K) table is shared by all edges.
    smoothing : float
        Weight of a quadratic term ``smoothing/2 ||mu||^2`` (0: the LP).
    gap_tol : float
        Every ``check_every`` iterations the node marginals are rounded and
        a certified lower bound is computed from the current duals; the
        solve stops as soon as the best labeling found is within
        ``gap_tol * max(|energy|, spread / 100)`` of the best bound
        (:func:`certificate_scale`: the same in any units): it is then MAP
        up to that tolerance (status "certified"). This happens when the
        relaxation is tight (trees, most images); otherwise the solver's own
        stopping rules apply. ``gap_tol=0`` or ``check_every=0`` turns the
        check off.
    **solve_options
        Passed to :meth:`fm.Problem.solve` (``max_iter``, ``tol``,
        ``feas_tol``, ``time_limit``, ``lam``, ``eta``, ``step``,
        ``callback``, ...). Defaults: the engine's (a pairwise step in every
        node and edge simplex, each with its own step size; the engine's
        penalty). ``step="fw"`` with ``lam=default_penalty(...)`` is the
        plain Frank-Wolfe alternative.

    Returns
    -------
    MAPResult
        The best labeling found, its energy, the LP value, the best
        certified lower bound and the solved problem.

    Examples
    --------
    >>> G = nx.balanced_tree(2, 3)
    >>> res = fm.map_inference(G, theta_nodes, 0.5 * np.eye(3))
    >>> res.labels, res.energy, res.gap
    """
    for name, value in (("smoothing", smoothing), ("gap_tol", gap_tol)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not 0 <= value < np.inf:
            raise ModelError(f"map_inference: {name} must be a finite number >= 0, got {value!r}")
    if isinstance(check_every, (bool, np.bool_)) or not isinstance(check_every, (int, np.integer)) or check_every < 0:
        raise ModelError(f"map_inference: check_every must be an integer >= 0, got {check_every!r}")
    theta_nodes = np.asarray(theta_nodes, dtype=float)
    if isinstance(graph, LocalMarginalPolytope):
        lmp = graph
    else:
        if theta_nodes.ndim != 2:
            raise ModelError(f"map_inference: theta_nodes must be an (N, K) array, got shape {theta_nodes.shape}")
        lmp = LocalMarginalPolytope(graph, theta_nodes.shape[1])
    tn, te = lmp.potentials(theta_nodes, theta_edges)
    problem = Problem(Minimize(map_objective(lmp, tn, te, smoothing)), lmp)
    options = {}
    options.update(solve_options)
    user_callback = options.pop("callback", None)
    best = {"energy": np.inf, "labels": None, "bound": -np.inf, "certified": False}
    spread = certificate_scale(tn, te)

    def consider(node_marginals, duals):
        labels = lmp.decode(node_marginals)
        energy = lmp.energy(labels, tn, te)
        if energy < best["energy"]:
            best["energy"], best["labels"] = energy, labels
        best["bound"] = max(best["bound"], lmp.lower_bound(problem, tn, te, duals=duals))
        return best["energy"] - best["bound"] <= gap_tol * max(abs(best["energy"]), spread / 100.0)

    def callback(state):
        if user_callback is not None and user_callback(state) is False:
            return False
        if check_every and gap_tol > 0 and state.iteration % check_every == 0:
            if consider(state.value(lmp.nodes), _duals(state)):
                best["certified"] = True
                return False  # the best labeling is proven MAP (up to gap_tol)
        return None

    problem.solve(callback=callback, **options)
    mu_n, mu_e = lmp.nodes.value, lmp.edges.value
    consider(mu_n, problem.duals)
    labels = best["labels"]
    energy = best["energy"]
    lp_value = float(-(np.vdot(tn, mu_n) + np.vdot(te, mu_e)))
    status = "certified" if best["certified"] else problem.status
    return MAPResult(labels=labels, labeling=lmp.labeling(labels), energy=energy, lp_value=lp_value,
                     lower_bound=best["bound"], gap=energy - best["bound"], status=status, node_marginals=mu_n,
                     edge_marginals=mu_e, problem=problem, lmp=lmp)
