"""Control flow: ``_foreach``, ``_while_loop`` and ``_cond`` (MXNet's
src/operator/control_flow.cc), the operators behind ``mx.sym.contrib.foreach``,
``while_loop`` and ``cond``.

Each node holds its graphs as :class:`symgraph.opdef.Subgraph` objects
(``Operator.subgraphs``, the ``subgraphs`` field of MXNet's JSON); the ``*_locs``
parameters map each subgraph input to one of the node's inputs, as MXNet's do. A loop
binds its body once per bind (its Step's state, ``bind``) and runs the compiled body once
per step, keeping each step's saved arrays for backward.
"""
from __future__ import annotations

import warnings

import numpy as np

from symgraph.opdef import (Operator, Param, Step, register, MXNetError, ShapeError,
                            unify_shape)

__all__ = []


def _locs(name, doc):
    return Param('shape', doc=doc)


def _unify(a, b, what):
    try:
        return unify_shape(a, b)
    except ShapeError:
        raise ShapeError('%s: %s vs %s' % (what, a, b)) from None


def _unify_type(a, b, what):
    if a is None:
        return b
    if b is None or np.dtype(a) == np.dtype(b):
        return a
    raise MXNetError('%s: %s vs %s' % (what, np.dtype(a).name, np.dtype(b).name))


def _types(ts):
    """``ts`` as a list of np.dtype or None, to compare: ``np.dtype(...) == None`` is True
    (np.dtype(None) is float64), so type lists must be compared after this."""
    return [None if t is None else np.dtype(t) for t in ts]


def _same_types(a, b):
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and
                                      np.dtype(x) == np.dtype(y)) for x, y in zip(a, b))


def _check_locs(op, graph, locs, what, n_inputs):
    n = len(graph.list_inputs())
    if sorted(locs) != list(range(n)):
        raise MXNetError('operator %s: %s %s must name each of the %d inputs of the '
                         'subgraph %s once' % (op.name, what, list(locs), n,
                                               graph.list_inputs()))


def _check_outer(op, locs, what, n_inputs):
    bad = [x for x in locs if not 0 <= x < n_inputs]
    if bad:
        raise MXNetError('operator %s: %s %s refer to inputs beyond the %d inputs'
                         % (op.name, what, list(locs), n_inputs))


class _State:
    """Per-bind state of a control-flow node: the bound subgraphs, keyed by what they were
    bound for, the saved arrays of the last forward, and (``_while_loop``) the inferred
    shapes and dtypes of the step outputs, for a loop that runs no step."""

    def __init__(self, ctx, out_meta=None):
        self.ctx = ctx
        self.runners = {}
        self.saved = None
        self.out_meta = out_meta

    def runner(self, graph_index, graph, xp, arrays):
        shapes = [tuple(a.shape) for a in arrays]
        dtypes = [np.dtype(a.dtype) for a in arrays]
        key = (graph_index, tuple(shapes), tuple(dtypes), xp.__name__)
        r = self.runners.get(key)
        if r is None:
            need = [t.kind == 'f' for t in dtypes]
            r = graph.bind(self.ctx, xp, shapes, dtypes, need)
            self.runners[key] = r
        return r

    def backward(self, runner, saved, out_grads, pairs):
        """``runner.backward`` with the head gradients of repeated outputs summed
        (:func:`_repeats`); the compiled body's warning that it would take the last one's
        only is moot then."""
        if not pairs:
            return runner.backward(saved, out_grads)
        og = list(out_grads)
        for k, j in pairs:
            if og[k] is not None:
                og[j] = og[k] if og[j] is None else og[j] + og[k]
                og[k] = None
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', 'output .* is listed more than once')
            return runner.backward(saved, og)


def _slice_first(shape):
    """The shape of one step's slice of an array of ``shape`` (MXNet's SliceFirstDim):
    a 1-D array's elements are taken as arrays of shape (1,), not as scalars."""
    return tuple(shape[1:]) if len(shape) > 1 else (1,)


def _output_names(n):
    """MXNet's names: 'output' for one output, else 'output0', 'output1', ..."""
    return ['output'] if n == 1 else ['output%d' % i for i in range(n)]


def _zeros_like(xp, a):
    return xp.zeros(a.shape, dtype=a.dtype)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _repeats(outputs, inputs):
    """The positions of the body outputs that repeat an earlier one: ``[(k, j)]``, ``j``
    the last position of the output that ``k`` (an earlier one) repeats.

    A body such as ``lambda s: (s * 2, s * 2)``'s ``out = ...; return (out, out)`` lists one
    entry as two outputs; MXNet's subgraph backward (nnvm's gradient pass) sums their head
    gradients, where a compiled graph takes the last one's only (MXNet's executor rule for
    the outermost heads). The operator sees no entries, only arrays: an output array that
    is the very object of an earlier output is that output listed again (an operator that
    hands its input on unchanged is the one other way, and its gradient is the identity
    too, except for the loss layers, whose head gradient the graph ignores anyway). Arrays
    that are inputs of the body are left alone: two inputs may hold one array.
    :meth:`_State.backward` adds the head gradients.
    """
    last, pairs = {}, []
    ins = {id(x) for x in inputs}
    for j, r in enumerate(outputs):
        if id(r) not in ins:
            last.setdefault(id(r), []).append(j)
    for js in last.values():
        pairs += [(k, js[-1]) for k in js[:-1]]
    return pairs



# ------------------------------------------------------------------------- _foreach
@register
class Foreach(Operator):
    """Run a subgraph over the slices of its data inputs along axis 0 (``_foreach``).

    Inputs are the data arrays, the initial loop states and the remaining (free)
    variables of the body, in that order; ``in_data_locs``, ``in_state_locs`` and
    ``remain_locs`` give where each sits among the body's inputs. Outputs are the body's
    ``num_out_data`` per-step outputs stacked along a new axis 0, then the final states.
    """

    name = '_foreach'
    num_subgraphs = 1
    infer_shape_uses_outputs = True
    infer_type_uses_outputs = True
    num_args = Param(int, doc='number of inputs, the subgraph counted (as MXNet)',
                     minimum=1)
    num_outputs = Param(int, doc='the number of outputs of the subgraph')
    num_out_data = Param(int, doc='the number of output data of the subgraph')
    in_state_locs = _locs('in_state_locs', 'the locations of loop states among the inputs')
    in_data_locs = _locs('in_data_locs', 'the locations of input data among the inputs')
    remain_locs = _locs('remain_locs', 'the locations of remaining data among the inputs')
    param_order = ('num_outputs', 'num_out_data', 'in_state_locs', 'in_data_locs',
                   'remain_locs')

    def _check_params(self):
        n = len(self.in_data_locs) + len(self.in_state_locs) + len(self.remain_locs)
        if n != self.num_args - 1:
            raise MXNetError('operator _foreach: num_args=%d but the locations name %d '
                             'inputs (num_args counts the subgraph too)' % (self.num_args, n))
        if self.num_out_data + len(self.in_state_locs) != self.num_outputs:
            raise MXNetError('operator _foreach: num_outputs=%d must be num_out_data (%d) '
                             'plus the number of states (%d)' % (
                                 self.num_outputs, self.num_out_data,
                                 len(self.in_state_locs)))

    def check(self):
        self._check_params()
        if self.subgraphs:      # (once the node holds them: with_subgraphs checks again)
            self._check_subgraphs()

    def _check_subgraphs(self):
        body = self.subgraphs[0]
        _check_locs(self, body, self._body_locs(), 'the locations', self.num_args - 1)
        if body.num_outputs() != self.num_outputs:
            raise MXNetError('operator _foreach: the body has %d outputs but num_outputs '
                             'is %d' % (body.num_outputs(), self.num_outputs))

    def _body_locs(self):
        """body input index of each node input (data, states, remaining)."""
        return list(self.in_data_locs) + list(self.in_state_locs) + list(self.remain_locs)

    def list_arguments(self):
        return ['data%d' % i for i in range(self.num_args - 1)]

    def list_outputs(self):
        return _output_names(self.num_outputs)

    # --- inference -------------------------------------------------------------
    def infer_shape(self, in_shapes, out_shapes):
        body = self.subgraphs[0]
        locs = self._body_locs()
        nd, ns = len(self.in_data_locs), len(self.in_state_locs)
        nod = self.num_out_data
        steps = 0
        for s in list(in_shapes[:nd]) + list(out_shapes[:nod]):
            if s is not None and len(s) and s[0] > 0:
                steps = s[0]
        b_in = [None] * len(locs)
        data_1d = [False] * nd
        for k, loc in enumerate(locs):
            s = in_shapes[k]
            if s is not None and k < nd:
                if len(s) == 0:
                    raise ShapeError('data input %d is a scalar; foreach needs an axis 0 '
                                     'to iterate over' % k)
                data_1d[k] = len(s) == 1
                s = _slice_first(s)
            b_in[loc] = s
        b_out = [None if s is None else _slice_first(s) for s in out_shapes[:nod]]
        b_out += list(out_shapes[nod:])
        for _ in range(3):
            for j, loc in enumerate(self.in_state_locs):
                u = _unify(b_in[loc], b_out[nod + j], 'loop state %d (input vs output of '
                           'the body)' % j)
                b_in[loc] = b_out[nod + j] = u
            new_in, new_out = body.infer_shape(b_in, b_out)
            if new_in == b_in and new_out == b_out:
                break
            b_in, b_out = list(new_in), list(new_out)
        ins = []
        for k, loc in enumerate(locs):
            s = b_in[loc]
            if k < nd and s is not None:
                s = (steps,) if data_1d[k] else (steps,) + tuple(s)
            ins.append(s)
        outs = [None if s is None else (steps,) + tuple(s) for s in b_out[:nod]]
        outs += b_out[nod:]
        return ins, outs, []

    def infer_type(self, in_types, out_types=None):
        body = self.subgraphs[0]
        locs = self._body_locs()
        nod = self.num_out_data
        b_in = [None] * len(locs)
        for k, loc in enumerate(locs):
            b_in[loc] = in_types[k]
        b_in = _types(b_in)
        b_out = _types(out_types or [None] * self.num_outputs)
        for _ in range(len(locs) + self.num_outputs + 2):
            for j, loc in enumerate(self.in_state_locs):
                u = _unify_type(b_in[loc], b_out[nod + j], 'loop state %d' % j)
                b_in[loc] = b_out[nod + j] = u
            new_in, new_out = body.infer_type(b_in, b_out)
            new_in, new_out = _types(new_in), _types(new_out)
            if _same_types(new_in, b_in) and _same_types(new_out, b_out):
                break
            b_in, b_out = new_in, new_out
        return [b_in[loc] for loc in locs], b_out, []

    # --- compute ---------------------------------------------------------------
    def bind(self, ctx, in_shapes, in_dtypes):
        return Step(self, ctx, _State(ctx))

    def forward(self, xp, inputs, aux, is_train, state=None):
        body = self.subgraphs[0]
        locs = self._body_locs()
        nd, ns = len(self.in_data_locs), len(self.in_state_locs)
        nod = self.num_out_data
        data = inputs[:nd]
        steps = data[0].shape[0] if nd else 0
        for k, d in enumerate(data):
            if d.shape[0] != steps:
                raise MXNetError('operator _foreach: data inputs differ in length along axis '
                                 '0: %s' % [tuple(x.shape) for x in data])
        b_in = [None] * len(locs)
        for k in range(nd + ns, len(locs)):
            b_in[locs[k]] = inputs[k]
        states = list(inputs[nd:nd + ns])
        outs = [[] for _ in range(nod)]
        saved = []
        for t in range(steps):
            for k in range(nd):
                d = data[k]
                b_in[locs[k]] = d[t:t + 1] if d.ndim == 1 else d[t]
            for j in range(ns):
                b_in[locs[nd + j]] = states[j]
            runner = state.runner(0, body, xp, b_in)
            res, sv = runner.forward(list(b_in), is_train)
            saved.append((runner, sv, _repeats(res, b_in)))
            for i in range(nod):
                outs[i].append(res[i])
            states = list(res[nod:])
        state.saved = saved
        result = [xp.stack(o) for o in outs]
        result += [xp.array(s, copy=True) if any(s is x for x in inputs) else s
                   for s in states]
        return result

    def backward(self, xp, out_grads, inputs, outputs, aux, need, state=None):
        locs = self._body_locs()
        nd, ns = len(self.in_data_locs), len(self.in_state_locs)
        nod = self.num_out_data
        saved = state.saved
        if saved is None:
            raise MXNetError('operator _foreach: backward before forward')
        g_states = list(out_grads[nod:])
        grads = [None] * len(inputs)
        g_data = [_zeros_like(xp, inputs[k]) if need[k] else None for k in range(nd)]
        for t in range(len(saved) - 1, -1, -1):
            runner, sv, pairs = saved[t]
            og = [None if out_grads[i] is None else out_grads[i][t] for i in range(nod)]
            og += g_states
            gin = state.backward(runner, sv, og, pairs)
            for k in range(nd):
                if need[k] and gin[locs[k]] is not None:
                    if inputs[k].ndim == 1:     # the step's slice was shape (1,)
                        g_data[k][t:t + 1] = gin[locs[k]]
                    else:
                        g_data[k][t] = gin[locs[k]]
            g_states = [gin[locs[nd + j]] for j in range(ns)]
            for k in range(nd + ns, len(locs)):
                if need[k]:
                    grads[k] = _add(grads[k], gin[locs[k]])
        for k in range(nd):
            grads[k] = g_data[k]
        for j in range(ns):
            if need[nd + j]:
                grads[nd + j] = g_states[j]
        for k in range(len(grads)):
            if need[k] and grads[k] is None:
                grads[k] = _zeros_like(xp, inputs[k])
            elif not need[k]:
                grads[k] = None
        return grads


# ---------------------------------------------------------------------------- _cond
@register
class Cond(Operator):
    """If-then-else over subgraphs (``_cond``): the first subgraph computes a scalar
    predicate; the second (then) or the third (else) gives the outputs. ``*_input_locs``
    map each subgraph's inputs to the node's inputs. Only the taken branch runs, and
    only it gets gradients (the predicate gets none)."""

    name = '_cond'
    num_subgraphs = 3
    infer_shape_uses_outputs = True
    infer_type_uses_outputs = True
    num_args = Param(int, doc='number of inputs, the three subgraphs counted (as MXNet)',
                     minimum=3)
    num_outputs = Param(int, doc='the number of outputs of the subgraph')
    cond_input_locs = _locs('cond_input_locs', "the locations of cond's inputs")
    then_input_locs = _locs('then_input_locs', "the locations of then's inputs")
    else_input_locs = _locs('else_input_locs', "the locations of else's inputs")
    param_order = ('num_outputs', 'cond_input_locs', 'then_input_locs', 'else_input_locs')

    def _check_params(self):
        n = self.num_args - 3
        for what in ('cond_input_locs', 'then_input_locs', 'else_input_locs'):
            _check_outer(self, getattr(self, what), what, n)

    def check(self):
        self._check_params()
        if self.subgraphs:      # (once the node holds them: with_subgraphs checks again)
            self._check_subgraphs()

    def _check_subgraphs(self):
        for g, what in zip(self.subgraphs, ('cond_input_locs', 'then_input_locs',
                                            'else_input_locs')):
            if len(g.list_inputs()) != len(getattr(self, what)):
                raise MXNetError('operator _cond: %s has %d entries but its subgraph has '
                                 'the inputs %s' % (what, len(getattr(self, what)),
                                                    g.list_inputs()))
        if self.subgraphs[0].num_outputs() != 1:
            raise MXNetError('operator _cond: the condition subgraph must have one output')
        for g, what in zip(self.subgraphs[1:], ('then', 'else')):
            if g.num_outputs() != self.num_outputs:
                raise MXNetError('operator _cond: the %s branch has %d outputs but '
                                 'num_outputs is %d' % (what, g.num_outputs(),
                                                        self.num_outputs))

    def _all_locs(self):
        return (self.cond_input_locs, self.then_input_locs, self.else_input_locs)

    def list_arguments(self):
        return ['data%d' % i for i in range(self.num_args - 3)]

    def list_outputs(self):
        return _output_names(self.num_outputs)

    def infer_shape(self, in_shapes, out_shapes):
        ins, outs = list(in_shapes), list(out_shapes)
        for _ in range(2):
            for gi, (g, locs) in enumerate(zip(self.subgraphs, self._all_locs())):
                g_out = [None] if gi == 0 else outs
                new_in, new_out = g.infer_shape([ins[l] for l in locs], g_out)
                for l, s in zip(locs, new_in):
                    ins[l] = _unify(ins[l], s, 'input %d' % l)
                if gi == 0:
                    s = new_out[0]
                    if s is not None and int(np.prod(s)) != 1 and all(d > 0 for d in s):
                        raise ShapeError('the condition must be a scalar (one element), '
                                         'got shape %s' % (tuple(s),))
                else:
                    outs = [_unify(a, b, 'output %d of both branches' % i)
                            for i, (a, b) in enumerate(zip(outs, new_out))]
        return ins, outs, []

    def infer_type(self, in_types, out_types=None):
        ins, outs = _types(in_types), _types(out_types or [None] * self.num_outputs)
        for _ in range(len(ins) + self.num_outputs + 2):
            before = (list(ins), list(outs))
            for gi, (g, locs) in enumerate(zip(self.subgraphs, self._all_locs())):
                g_out = [None] if gi == 0 else outs
                new_in, new_out = g.infer_type([ins[l] for l in locs], g_out)
                for l, t in zip(locs, new_in):
                    ins[l] = _unify_type(ins[l], t, 'input %d' % l)
                if gi:
                    outs = [_unify_type(a, b, 'output %d of both branches' % i)
                            for i, (a, b) in enumerate(zip(outs, new_out))]
            ins, outs = _types(ins), _types(outs)
            if _same_types(ins, before[0]) and _same_types(outs, before[1]):
                break
        return ins, outs, []

    def bind(self, ctx, in_shapes, in_dtypes):
        return Step(self, ctx, _State(ctx))

    def forward(self, xp, inputs, aux, is_train, state=None):
        c_in = [inputs[l] for l in self.cond_input_locs]
        pred, _ = state.runner(0, self.subgraphs[0], xp, c_in).forward(c_in, False)
        branch = 1 if bool(pred[0].reshape(-1)[0] != 0) else 2
        locs = self._all_locs()[branch]
        b_in = [inputs[l] for l in locs]
        runner = state.runner(branch, self.subgraphs[branch], xp, b_in)
        res, sv = runner.forward(b_in, is_train)
        state.saved = (branch, runner, sv, _repeats(res, b_in))
        return [xp.array(r, copy=True) if any(r is x for x in inputs) else r for r in res]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, state=None):
        if state.saved is None:
            raise MXNetError('operator _cond: backward before forward')
        branch, runner, sv, pairs = state.saved
        gin = state.backward(runner, sv, out_grads, pairs)
        grads = [None] * len(inputs)
        for l, g in zip(self._all_locs()[branch], gin):
            if need[l]:
                grads[l] = _add(grads[l], g)
        return [(_zeros_like(xp, inputs[k]) if g is None else g) if need[k] else None
                for k, g in enumerate(grads)]


# ---------------------------------------------------------------------- _while_loop
@register
class WhileLoop(Operator):
    """A while loop over subgraphs (``_while_loop``): the first subgraph computes the
    condition from the loop variables (and free variables), the second the step outputs
    and the new loop variables. Step outputs are stacked along axis 0 and padded with
    zeros to ``max_iterations`` steps, as MXNet does; the loop variables' final values
    follow them."""

    name = '_while_loop'
    num_subgraphs = 2
    infer_shape_uses_outputs = True
    infer_type_uses_outputs = True
    num_args = Param(int, doc='number of inputs, the two subgraphs counted (as MXNet)',
                     minimum=2)
    num_outputs = Param(int, doc='the number of outputs of the subgraph')
    num_out_data = Param(int, doc='the number of outputs from the function body')
    max_iterations = Param(int, doc='maximum number of iterations')
    cond_input_locs = _locs('cond_input_locs', "the locations of cond's inputs")
    func_input_locs = _locs('func_input_locs', "the locations of func's inputs")
    func_var_locs = _locs('func_var_locs', "the locations of loop_vars among func's inputs")
    param_order = ('num_outputs', 'num_out_data', 'max_iterations', 'cond_input_locs',
                   'func_input_locs', 'func_var_locs')

    def _check_params(self):
        n = self.num_args - 2
        _check_outer(self, self.cond_input_locs, 'cond_input_locs', n)
        _check_outer(self, self.func_input_locs, 'func_input_locs', n)
        if self.num_out_data + len(self.func_var_locs) != self.num_outputs:
            raise MXNetError('operator _while_loop: num_outputs=%d must be num_out_data (%d) '
                             'plus the number of loop variables (%d)' % (
                                 self.num_outputs, self.num_out_data, len(self.func_var_locs)))

    def check(self):
        self._check_params()
        if self.subgraphs:      # (once the node holds them: with_subgraphs checks again)
            self._check_subgraphs()

    def _check_subgraphs(self):
        for g, what in zip(self.subgraphs, ('cond_input_locs', 'func_input_locs')):
            if len(g.list_inputs()) != len(getattr(self, what)):
                raise MXNetError('operator _while_loop: %s has %d entries but its subgraph '
                                 'has the inputs %s' % (what, len(getattr(self, what)),
                                                        g.list_inputs()))
        if self.subgraphs[1].num_outputs() != self.num_outputs:
            raise MXNetError('operator _while_loop: the body has %d outputs but num_outputs '
                             'is %d' % (self.subgraphs[1].num_outputs(), self.num_outputs))

    def list_arguments(self):
        return ['data%d' % i for i in range(self.num_args - 2)]

    def list_outputs(self):
        return _output_names(self.num_outputs)

    def _var_inputs(self):
        """the node input index of each loop variable"""
        return [self.func_input_locs[v] for v in self.func_var_locs]

    def infer_shape(self, in_shapes, out_shapes):
        ins = list(in_shapes)
        nod = self.num_out_data
        var_in = self._var_inputs()
        f_out = [None if s is None else tuple(s[1:]) for s in out_shapes[:nod]]
        f_out += list(out_shapes[nod:])
        for _ in range(3):
            for j, l in enumerate(var_in):
                u = _unify(ins[l], f_out[nod + j], 'loop variable %d (input vs output of '
                           'the body)' % j)
                ins[l] = f_out[nod + j] = u
            before = (list(ins), list(f_out))
            new_in, f_out = self.subgraphs[1].infer_shape(
                [ins[l] for l in self.func_input_locs], f_out)
            f_out = list(f_out)
            for l, s in zip(self.func_input_locs, new_in):
                ins[l] = _unify(ins[l], s, 'input %d' % l)
            new_in, _ = self.subgraphs[0].infer_shape(
                [ins[l] for l in self.cond_input_locs], [None])
            for l, s in zip(self.cond_input_locs, new_in):
                ins[l] = _unify(ins[l], s, 'input %d' % l)
            if (ins, f_out) == before:
                break
        outs = [None if s is None else (self.max_iterations,) + tuple(s)
                for s in f_out[:nod]] + f_out[nod:]
        return ins, outs, []

    def infer_type(self, in_types, out_types=None):
        ins = _types(in_types)
        nod = self.num_out_data
        var_in = self._var_inputs()
        f_out = _types(out_types or [None] * self.num_outputs)
        for _ in range(len(ins) + self.num_outputs + 2):
            before = (list(ins), list(f_out))
            for j, l in enumerate(var_in):
                u = _unify_type(ins[l], f_out[nod + j], 'loop variable %d' % j)
                ins[l] = f_out[nod + j] = u
            new_in, f_out = self.subgraphs[1].infer_type(
                [ins[l] for l in self.func_input_locs], f_out)
            f_out = _types(f_out)
            for l, t in zip(self.func_input_locs, new_in):
                ins[l] = _unify_type(ins[l], t, 'input %d' % l)
            new_in, _ = self.subgraphs[0].infer_type(
                [ins[l] for l in self.cond_input_locs], [None])
            for l, t in zip(self.cond_input_locs, new_in):
                ins[l] = _unify_type(ins[l], t, 'input %d' % l)
            ins = _types(ins)
            if _same_types(ins, before[0]) and _same_types(f_out, before[1]):
                break
        return ins, f_out, []

    def bind(self, ctx, in_shapes, in_dtypes):
        # the step outputs' shapes and dtypes as inference gives them: a loop whose
        # condition is false at once has no step to take them from
        nod = self.num_out_data
        _, outs, _ = self.infer_shape(in_shapes, [None] * self.num_outputs)
        _, types, _ = self.infer_type(in_dtypes, [None] * self.num_outputs)
        return Step(self, ctx, _State(ctx, list(zip(outs[:nod], types[:nod]))))

    def forward(self, xp, inputs, aux, is_train, state=None):
        nod = self.num_out_data
        var_in = self._var_inputs()
        cond_g, func_g = self.subgraphs
        # the body's and the condition's inputs, of which a step replaces the loop
        # variables only (MXNet's func_inputs and cond_inputs with its oi_map): an input
        # the node shares between a loop variable and a free variable stays as it was
        # for the free one
        f_in = [inputs[l] for l in self.func_input_locs]
        c_in = [inputs[l] for l in self.cond_input_locs]
        c_of_var = [self.cond_input_locs.index(l) if l in self.cond_input_locs else -1
                    for l in var_in]
        steps, saved = [], []
        while len(steps) < self.max_iterations:
            pred, _ = state.runner(0, cond_g, xp, c_in).forward(list(c_in), False)
            if not bool(pred[0].reshape(-1)[0] != 0):
                break
            runner = state.runner(1, func_g, xp, f_in)
            res, sv = runner.forward(list(f_in), is_train)
            saved.append((runner, sv, _repeats(res, f_in)))
            steps.append(res[:nod])
            for j, v in enumerate(self.func_var_locs):
                f_in[v] = res[nod + j]
                if c_of_var[j] >= 0:
                    c_in[c_of_var[j]] = res[nod + j]
        state.saved = saved
        outs = []
        for i in range(nod):
            if steps:
                first = steps[0][i]
                shape, dtype = (self.max_iterations,) + tuple(first.shape), first.dtype
            else:
                # no step ran (the condition was false at once): MXNet hands on its
                # inferred-shape outputs uninitialised; here they are zeros
                shape, dtype = state.out_meta[i]
                if shape is None or dtype is None or 0 in shape:
                    raise MXNetError('operator _while_loop: the condition is false before '
                                     'the first step and the shape of step output %d could '
                                     'not be inferred (%s)' % (i, shape))
            out = xp.zeros(tuple(shape), dtype=dtype)
            for t, s in enumerate(steps):
                out[t] = s[i]
            outs.append(out)
        for v in self.func_var_locs:
            v = f_in[v]
            outs.append(xp.array(v, copy=True) if any(v is x for x in inputs) else v)
        return outs

    def backward(self, xp, out_grads, inputs, outputs, aux, need, state=None):
        saved = state.saved
        if saved is None:
            raise MXNetError('operator _while_loop: backward before forward')
        nod = self.num_out_data
        var_in = self._var_inputs()
        grads = [None] * len(inputs)
        g_vars = list(out_grads[nod:])
        for t in range(len(saved) - 1, -1, -1):
            runner, sv, pairs = saved[t]
            og = [None if out_grads[i] is None else out_grads[i][t] for i in range(nod)]
            gin = state.backward(runner, sv, og + g_vars, pairs)
            g_vars = [gin[v] for v in self.func_var_locs]
            for k, l in enumerate(self.func_input_locs):
                if k not in self.func_var_locs and need[l]:
                    grads[l] = _add(grads[l], gin[k])
        for j, l in enumerate(var_in):
            grads[l] = _add(grads[l], g_vars[j])
        return [(_zeros_like(xp, inputs[k]) if g is None else g) if need[k] else None
                for k, g in enumerate(grads)]
