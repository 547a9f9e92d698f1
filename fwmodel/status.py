"""The statuses a solve ends with, as constants equal to their strings.

``prob.status`` is one of these strings; compare with the constants as in
CVXPY (``prob.status == fm.OPTIMAL``). A solve never raises for a
non-optimal status: ``var.value`` then holds the best point found (for
``fm.INFEASIBLE``, the point closest to feasibility that the iterations
reached, which violates some constraint; check ``prob.stats.feasibility``).
"""

#: the FW gap and the feasibility reached their tolerances
OPTIMAL = "optimal"
#: the LMOs certify that the sets cannot meet the equality constraints
INFEASIBLE = "infeasible"
#: ``max_iter`` iterations without reaching the tolerances
MAX_ITER = "max_iter"
#: ``time_limit`` seconds without reaching the tolerances
TIME_LIMIT = "time_limit"
#: the objective or its gradient became infinite or NaN
DIVERGED = "diverged"
#: the callback returned False, or the user pressed Ctrl-C
INTERRUPTED = "interrupted"

STATUSES = (OPTIMAL, MAX_ITER, TIME_LIMIT, INFEASIBLE, DIVERGED, INTERRUPTED)
