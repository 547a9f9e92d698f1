"""The paper's covariance problem at d = 200 solved for 25 iterations with rank-k and projection steps,
recording each iteration: shared by the tests that compare two engine paths on it."""
import numpy as np

import fwmodel as fm
from fwmodel.datasets import sparse_low_rank_covariance


def covariance_solver(d=200, seed=0):
    """A function that solves the problem afresh and returns (prob, X's value, [(objective, fw_gap,
    feasibility) per iteration])."""
    data = sparse_low_rank_covariance(d, seed=seed)

    def solve():
        X = fm.Variable((d, d))
        prob = fm.Problem(fm.Minimize(fm.sum_squares(X - data.sigma_hat)),
                          [fm.L1Ball(X, data.radius_l1), fm.TraceNormBall(X, data.radius_trace)])
        trace = []
        prob.solve(max_iter=25, tol=1e-12, feas_tol=1e-12, rank_k=True, projection=True,
                   callback=lambda s: trace.append((s.objective, s.fw_gap, s.feasibility)))
        return prob, X.value.copy(), np.array(trace)

    return solve
