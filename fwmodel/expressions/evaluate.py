"""Fast evaluation of a smooth scalar objective on the solver's flat vector.

:class:`SmoothFunction` is what the engine calls at every iteration: the
value, the gradient (reverse accumulation over the expression DAG) and the
second directional derivative used by exact line searches. The engine knows
nothing about expressions; it sees a flat vector ``v`` holding every
variable's C-order entries at the offsets of ``var_layout``.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .core import Variable, as_expression, normalize_shape, shape_size, short_repr


class SmoothFunction:
    """A scalar expression ``f`` as a function of the flat vector of all variables.

    Parameters
    ----------
    expr : Expression
        A scalar expression (size 1): convex, concave or affine; the caller
        handles the sign for Minimize/Maximize.
    var_layout : dict
        ``{var.id: (offset, shape)}``: variable ``var`` is
        ``v[offset:offset + var.size].reshape(shape)``.

    Attributes
    ----------
    expr : Expression
    is_quadratic : bool
        True when ``f`` is a quadratic: an affine function plus scaled sums of
        ``sum_squares`` / ``square`` / ``quad_form`` of affine arguments. Then
        ``f(v + t dv)`` is a parabola in ``t`` whose second derivative is
        :meth:`curvature`, so the exact line search is a closed formula.

    Notes
    -----
    Constant subexpressions without parameters are evaluated once here;
    anything that involves a Parameter is re-read at every call, so changing
    a parameter's value needs no new SmoothFunction. Variables are read as
    reshaped views of ``v`` (no copies), gradients travel as
    ``(array, scale)`` pairs so that scalings cost nothing, and sparse
    constant matrices stay sparse. The arrays of large intermediate results
    (sums, differences, scalings) are kept between calls and overwritten, so
    that repeated calls do not pay for fresh memory; nothing computed in one
    call is visible to the caller after it, but an instance must not be
    called from two threads at once.
    """

    def __init__(self, expr, var_layout):
        expr = as_expression(expr)
        if expr.size != 1:
            raise ModelError(
                f"the objective must be a scalar expression, but {short_repr(expr)} has shape {expr.shape}"
            )
        self.expr = expr
        nodes = expr._postorder()
        position = {id(n): i for i, n in enumerate(nodes)}
        self._nodes = nodes
        self._args = [tuple(position[id(a)] for a in n.args) for n in nodes]
        self._needs = [tuple(a._has_vars for a in n.args) for n in nodes]
        self._root = len(nodes) - 1

        self._slots = {}  # node index -> (start, stop, shape) of a variable in v
        static = [None] * len(nodes)  # values that never change
        dynamic = []  # nodes evaluated at every call, in topological order
        for i, node in enumerate(nodes):
            if isinstance(node, Variable):
                self._slots[i] = self._slot_of(node, var_layout)
                dynamic.append(i)
            elif node._has_vars or node._has_params:
                dynamic.append(i)
            elif node.is_leaf:
                static[i] = node._leaf_data()
            else:
                static[i] = node._forward([static[j] for j in self._args[i]])
        self._static = static
        self._dynamic = dynamic
        self._with_vars = [i for i in dynamic if nodes[i]._has_vars]
        # Nodes whose output array is reused from one call to the next.
        self._buffered = {i for i in dynamic if nodes[i]._writes_out and nodes[i].ndim > 0}
        self._buffers = {}
        # the reverse pass's seed d f / d f = 1, made once (read-only: adjoints are never written in place)
        self._seed_ones = np.ones(expr.shape)
        self._seed_ones.setflags(write=False)
        # nodes evaluated at every call that hold no variable (parameters and what depends on them)
        self._without_vars = [i for i in dynamic if not nodes[i]._has_vars]
        # nodes whose tangent curvature() reads: the atoms' arguments and, below them, what
        # those are made of (the tangent of ``mu @ x`` in ``quad_form(x, S) - mu @ x`` is never read)
        self._tangent_read = set()
        for i in reversed(self._with_vars):
            if nodes[i].is_atom or i in self._tangent_read:
                self._tangent_read.update(self._args[i])
        # Variable blocks sorted by offset, to zero what lies between them in a given out=.
        self._blocks = sorted((start, stop) for start, stop, _ in self._slots.values())
        self._min_length = max((stop for _, stop, _ in self._slots.values()), default=0)
        self.is_quadratic = all(
            not n.is_atom or not n._has_vars or (n.quadratic and all(a._affine for a in n.args))
            for n in nodes
        )
        # A quadratic made of these atoms has a second derivative that reads only the
        # tangents and constant arguments: curvature() then skips the forward pass
        # over the variables (at d = 4000 a pass of X - C over 16 million entries)
        from .atoms import QuadFormExpression, SquareExpression, SumSquaresExpression

        self._curvature_from_tangents = self.is_quadratic and all(
            type(n) in (SumSquaresExpression, SquareExpression, QuadFormExpression)
            for n in nodes if n.is_atom and n._has_vars
        )

    @staticmethod
    def _slot_of(var, var_layout):
        try:
            offset, shape = var_layout[var.id]
        except KeyError:
            raise ModelError(f"variable '{var.name}' (id {var.id}) is missing from var_layout") from None
        shape = normalize_shape(shape, "var_layout")
        if shape_size(shape) != var.size:
            raise ModelError(
                f"var_layout gives variable '{var.name}' the shape {shape}, but it has shape {var.shape}"
            )
        offset = int(offset)
        return offset, offset + var.size, var.shape

    # ------------------------------------------------------------ passes
    def _check(self, v, name="v"):
        if type(v) is np.ndarray and v.dtype == np.float64 and v.ndim == 1 and v.size >= self._min_length:
            return v  # the engine's case, every iteration: what np.asarray would return, without the call
        v = np.asarray(v, dtype=float)
        if v.ndim != 1 or v.size < self._min_length:
            raise ValueError(
                f"SmoothFunction: {name} must be a 1-D vector of length at least {self._min_length}, "
                f"got shape {v.shape}"
            )
        return v

    def _evaluate(self, v, with_vars=True):
        """Forward pass: every node's value (and the atoms' kept intermediates).

        ``with_vars=False``: only the nodes without variables (parameters and
        what depends on them); the others' values stay None.
        """
        vals = list(self._static)
        auxs = {}
        nodes, args, slots = self._nodes, self._args, self._slots
        for i in self._dynamic:
            node = nodes[i]
            if not with_vars and node._has_vars:
                continue
            slot = slots.get(i)
            if slot is not None:
                start, stop, shape = slot
                vals[i] = v[start:stop].reshape(shape)  # a view, not a copy
            elif node.is_leaf:
                val = node._leaf_data()
                if val is None:
                    raise ModelError(f"parameter '{node.name}' has no value; set {node.name}.value first")
                vals[i] = val
            elif i in self._buffered:
                buffer = self._buffers.get(i)
                if buffer is not None:
                    vals[i] = node._forward([vals[j] for j in args[i]], out=buffer)
                else:
                    val = node._forward([vals[j] for j in args[i]])
                    if isinstance(val, np.ndarray) and val.flags.owndata and val.shape == node.shape:
                        self._buffers[i] = val
                    vals[i] = val
            elif node.is_atom:
                vals[i], auxs[i] = node._forward_aux([vals[j] for j in args[i]])
            else:
                vals[i] = node._forward([vals[j] for j in args[i]])
        return vals, auxs

    @staticmethod
    def _scalar(value):
        return float(np.asarray(value).reshape(-1)[0])

    def value(self, v):
        """``f(v)`` as a float."""
        vals, _ = self._evaluate(self._check(v))
        return self._scalar(vals[self._root])

    __call__ = value

    def value_and_grad(self, v, out=None, scale=1.0, lend=False):
        """``(f(v), scale * grad f(v))``; the gradient is a 1-D array of ``len(v)``.

        The gradient is a new array, or ``out`` (a float array of ``len(v)``)
        overwritten in place when given: reusing one array across calls
        saves allocating (and the operating system zeroing) fresh memory.
        ``scale`` multiplies the seed of the reverse pass (free: adjoints
        travel as ``(array, scale)`` pairs).

        ``lend=True``: when the gradient is one intermediate array of this
        function (``sum_squares(X - C)``: 2 (X - C), the kept array of
        ``X - C`` with the factor in the scale) and one variable fills all
        of ``v``, that array itself is returned, scaled in place, instead of
        a copy: one array and one pass fewer. The array is lent: this
        function stops writing into it, and takes it back at the next call
        with ``lend=True`` (the caller must be done with it by then); calls
        in between use a fresh array. Otherwise ``out`` (or a new array) as usual.
        """
        v = self._check(v)
        if lend:
            self._reclaim()
        self.lent_last = False  # True when this call's gradient is a lent array (see _lend)
        self.lent_hessian = None  # h with Hessian h I, when the lent gradient shows it (see _lend)
        adjoint_scales = {} if lend else None  # node -> the scale of its adjoint (see _lend)
        vals, auxs = self._evaluate(v)
        f = self._scalar(vals[self._root])
        grad = None
        written = set()
        pending = []  # lend: the first contribution, held back in case it can be lent

        def write(j, result):
            nonlocal grad
            if lend and grad is None and not pending:
                pending.append((j, result))
                return
            if grad is None:
                grad = self._gradient_array(v, out)
                for item in pending:
                    self._write(grad, written, *item)
                pending.clear()
            self._write(grad, written, j, result)

        root = self._root
        seed = (self._seed_ones, float(scale))
        if root in self._slots:  # f is a variable itself
            write(root, seed)
        else:
            nodes, args, needs, slots = self._nodes, self._args, self._needs, self._slots
            adjoints = {root: seed}
            for i in reversed(self._with_vars):
                adj = adjoints.pop(i, None)  # drop it as soon as it is used
                if adj is None:
                    continue
                if adjoint_scales is not None:
                    adjoint_scales[i] = adj[1]
                node = nodes[i]
                results = node._backward(adj, [vals[j] for j in args[i]], vals[i], auxs.get(i), needs[i])
                for j, result, need in zip(args[i], results, needs[i]):
                    if not need or result is None:
                        continue
                    if j in slots:
                        write(j, result)
                    else:
                        previous = adjoints.get(j)
                        if previous is None:
                            adjoints[j] = result
                        else:  # a shared subexpression: combine into a new array
                            adjoints[j] = (previous[0] * previous[1] + result[0] * result[1], 1.0)
        if pending:
            lent = self._lend(*pending[0], v.size, adjoint_scales, float(scale))
            if lent is not None:
                return f, lent
            grad = self._gradient_array(v, out)
            self._write(grad, written, *pending[0])
        if grad is None:
            grad = self._gradient_array(v, out)
        if out is not None:
            for i, (start, stop, _) in self._slots.items():
                if i not in written:
                    grad[start:stop] = 0.0
        return f, grad

    def _gradient_array(self, v, out):
        if out is None:
            return np.zeros(v.size)
        if not (isinstance(out, np.ndarray) and out.shape == v.shape and out.dtype == np.float64):
            raise ValueError(f"SmoothFunction: out must be a float64 array of shape {v.shape}")
        if np.may_share_memory(out, v):
            raise ValueError("SmoothFunction: out must not share memory with v")
        self._zero_between_blocks(out)
        return out

    def _lend(self, j, adj, size, adjoint_scales, scale):
        """The gradient ``adj`` of variable node ``j`` as a flat array of this function's own, or None.

        Also sets ``lent_hessian``. The lent array is the value of one node N
        (the kept array of ``X - C``), handed by an atom to N as its adjoint
        with a scale s_N (``sum_squares``: 2 alpha) and passed down to the
        variable unchanged, each node on the way multiplying the scale only
        (a sign, a scalar factor, the addition of a constant): so N = a X + c
        with a = s / s_N, s the scale that arrives. When f is quadratic the
        gradient is then ``(s / scale) N`` (``scale`` the seed), and its
        Hessian is ``h I`` with h = s a / scale = s^2 / (s_N scale): along
        any dv the gradient moves by ``h dv`` and the curvature is
        ``h ||dv||^2`` (used by :mod:`fwmodel.compiler.objective` to follow
        the gradient along a step instead of evaluating it again).
        """
        G, s = adj
        start, stop, _ = self._slots[j]
        if (start, stop) != (0, size) or not isinstance(G, np.ndarray) or G.size != size \
                or not G.flags.c_contiguous:
            return None
        node = next((i for i, buffer in self._buffers.items() if buffer is G), None)
        if node is None:  # not an array of ours (a constant, a view of v, ...): copy it
            return None
        del self._buffers[node]  # lent: the next forward passes write elsewhere
        self._lent = (node, G)
        self.lent_last = True
        s_node = adjoint_scales.get(node)
        if self.is_quadratic and s_node and scale:
            self.lent_hessian = s * s / (s_node * scale)
        if s != 1.0:
            np.multiply(G, s, out=G)
        return G.reshape(-1)

    def lent_input(self, size):
        """The array lent by the last ``lend=True`` call (flat), where the next such call may be given its
        ``v`` in that very array; else None.

        The lent array is the kept value of a node N (``X - C``: see :meth:`_lend`). Where N adds
        or subtracts two arguments, the first with a plus sign, one of them the only variable X,
        which fills all of v and which no other node reads, the forward pass reads v in N's own
        ufunc alone (``np.subtract(v, C, out=v)``: entry by entry, each read before it is
        written), and nothing reads v after it: the numbers are those of a v of its own. The
        caller (:meth:`fwmodel.compiler.objective.BlockObjective.value_and_grad_shared`) then
        keeps no v-size array of its own: at d = 4000 one 128 MB array fewer through the solve.

        Before the first lend, such a node N's own buffer (made now where it has none yet): the first
        call then writes v where N's value goes, and a v-size array made only for that call (at
        d = 4000 its page faults cost 0.1-0.3 s of the setup) is not needed.
        """
        lent = getattr(self, "_lent", None)
        if lent is None:
            node = self._in_place_reader(size)
            if node is None or node not in self._buffered:
                return None
            buffer = self._buffers.get(node)
            if buffer is None:
                buffer = self._buffers[node] = np.empty(tuple(self._nodes[node].shape))
            return buffer.reshape(-1) if buffer.flags.c_contiguous and buffer.dtype == np.float64 else None
        node, G = lent
        if G.size != size or G.dtype != np.float64 or not G.flags.c_contiguous:
            return None
        return G.reshape(-1) if self._in_place_reader(size) == node else None

    def _in_place_reader(self, size):
        """The node N of :meth:`lent_input` that may read v in its own array (the only variable X filling all
        of v, read once, by N = X +- C or C + X), or None."""
        if len(self._slots) != 1:
            return None
        (j, (start, stop, shape)), = self._slots.items()
        if (start, stop) != (0, size) or sum(a.count(j) for a in self._args) != 1:  # X read once
            return None
        from .affine import AddExpression

        node = next(i for i, a in enumerate(self._args) if j in a)
        n, args = self._nodes[node], self._args[node]
        if type(n) is not AddExpression or len(args) != 2 or n.signs[0] < 0 or tuple(n.shape) != tuple(shape):
            return None
        other = args[1 - args.index(j)]
        return None if self._nodes[other]._has_vars else node

    def _reclaim(self):
        """Take back the array lent by the last ``lend=True`` call (its borrower is done with it)."""
        lent = getattr(self, "_lent", None)
        if lent is not None:
            self._buffers.setdefault(*lent)
            self._lent = None

    def _zero_between_blocks(self, grad):
        """Zero the entries of ``grad`` outside every variable block of this function."""
        position = 0
        for start, stop in self._blocks:
            if start > position:
                grad[position:start] = 0.0
            position = max(position, stop)
        grad[position:] = 0.0

    def _write(self, grad, written, i, adj):
        """Add ``scale * array`` into the gradient block of the variable node ``i``."""
        G, s = adj
        start, stop, shape = self._slots[i]
        target = grad[start:stop].reshape(shape)
        if i not in written:
            written.add(i)
            if s == 1.0:
                np.copyto(target, G)
            else:
                np.multiply(G, s, out=target)
        elif s == 1.0:
            target += G
        else:
            target += np.multiply(G, s)

    def grad(self, v):
        """``grad f(v)`` as a 1-D array of ``len(v)``."""
        return self.value_and_grad(v)[1]

    def curvature(self, v, dv):
        """``d^2/dt^2 f(v + t dv)`` at ``t = 0``, or None when not available.

        A forward (tangent) pass carries each affine node's derivative along
        ``dv``; each atom of an affine argument contributes its second
        derivative along that tangent, and affine operations above the atoms
        combine those contributions with their coefficients. When an atom's
        argument is itself nonlinear (``exp(sum_squares(x))``) this rule does
        not apply and None is returned.
        """
        v = self._check(v)
        dv = self._check(dv, "dv")
        if self._curvature_from_tangents and not self._without_vars:
            vals, auxs = self._static, {}  # what the pass below would give: no parameter to read (vals is only read)
        else:
            vals, auxs = self._evaluate(v, with_vars=not self._curvature_from_tangents)
        nodes, args, slots, tangent_read = self._nodes, self._args, self._slots, self._tangent_read
        tangents = {}
        seconds = {}
        for i in self._with_vars:
            slot = slots.get(i)
            if slot is not None:
                start, stop, shape = slot
                tangents[i] = dv[start:stop].reshape(shape)
                continue
            node = nodes[i]
            arg_vals = [vals[j] for j in args[i]]
            # an argument with a second derivative (an atom below): the common case has none yet
            nonlinear_args = bool(seconds) and any(seconds.get(j) is not None for j in args[i])
            if node.is_atom:
                if nonlinear_args:
                    return None
                second = node._second(arg_vals, vals[i], auxs.get(i), [tangents.get(j) for j in args[i]])
                if second is None:  # the atom cannot give its second derivative
                    return None
                seconds[i] = second
            else:
                if node._affine and i in tangent_read:
                    tangents[i] = node._tangent(arg_vals, [tangents.get(j) for j in args[i]])
                if nonlinear_args:
                    seconds[i] = node._tangent(arg_vals, [seconds.get(j) for j in args[i]])
        second = seconds.get(self._root)
        return 0.0 if second is None else self._scalar(second)

    def __repr__(self):
        return f"SmoothFunction({short_repr(self.expr)})"
