"""The compiler: a model becomes problem (OPT2) — blocks, copies, M, b and a graph."""
from .compile import BlockInfo, CompiledProblem, compile_problem
from .consistency import ConsistencyOperator, CopyRows, MarginalizationRows, SparseRows
from .objective import BlockObjective, CopyMap

__all__ = ["compile_problem", "CompiledProblem", "BlockInfo", "ConsistencyOperator", "CopyRows",
           "SparseRows", "MarginalizationRows", "BlockObjective", "CopyMap"]
