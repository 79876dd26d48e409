"""Gradients written as ``mx.nd`` calls, for ``autograd.grad(..., create_graph=True)``.

An operator's own ``backward`` computes on raw arrays, which the tape cannot see. For a
higher-order gradient the first gradient must itself be recorded, so this module keeps a
rule table, keyed by operator name, that expresses each gradient with differentiable
``mx.nd`` operators (the table is the pass's, not the operators': a new operator adds a
row). :func:`sweep` runs the tape backward with those rules while recording.

A rule is ``rule(op, x, y, g) -> list`` with ``x`` the node's input NDArrays (as recorded),
``y`` the node's hidden outputs as constants (Dropout's mask) or None
(outputs are recomputed from ``x`` where needed, so that the rule's graph reads only
recorded arrays), ``g`` the output gradients (NDArrays) and one NDArray or None per
input returned.
"""
from __future__ import annotations

from . import opdef
from .base import NotSupportedError
from .ndarray import NDArray
from .ndarray import ndarray as _nd
from .ndarray import tape
from .ndarray.tape import STATE

__all__ = ['RULES', 'rule', 'sweep']

#: operator name -> rule
RULES = {}


def rule(*names):
    """Register the decorated function as the rule of the operators ``names``."""
    def deco(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return deco


def _call(name, *args, **kw):
    return _nd.invoke(name, args, kw)


def _sum_to(g, shape):
    """``g`` summed over the axes broadcasting added to reach it from ``shape``."""
    if g.shape == tuple(shape):
        return g
    nd_extra = len(g.shape) - len(shape)
    axes = list(range(nd_extra))
    axes += [nd_extra + i for i, s in enumerate(shape) if s == 1 and g.shape[nd_extra + i] != 1]
    r = _call('sum', g, axis=tuple(axes), keepdims=True) if axes else g
    return _call('Reshape', r, shape=tuple(shape))


# --- unary ---------------------------------------------------------------------
def _unary(names, dfdx):
    @rule(*names)
    def _r(op, x, y, g):
        return [g[0] * dfdx(x[0])]
    return _r


_unary(['exp'], lambda x: _call('exp', x))
_unary(['expm1'], lambda x: _call('exp', x))
_unary(['log'], lambda x: _call('reciprocal', x))
_unary(['log2'], lambda x: _call('reciprocal', x) / 0.6931471805599453)
_unary(['log10'], lambda x: _call('reciprocal', x) / 2.302585092994046)
_unary(['log1p'], lambda x: _call('reciprocal', x + 1.0))
_unary(['sin'], lambda x: _call('cos', x))
_unary(['cos'], lambda x: -_call('sin', x))
_unary(['tan'], lambda x: 1.0 + _call('square', _call('tan', x)))
_unary(['sinh'], lambda x: _call('cosh', x))
_unary(['cosh'], lambda x: _call('sinh', x))
_unary(['tanh'], lambda x: 1.0 - _call('square', _call('tanh', x)))
_unary(['arcsin'], lambda x: _call('rsqrt', 1.0 - _call('square', x)))
_unary(['arccos'], lambda x: -_call('rsqrt', 1.0 - _call('square', x)))
_unary(['arctan'], lambda x: _call('reciprocal', 1.0 + _call('square', x)))
_unary(['arcsinh'], lambda x: _call('rsqrt', _call('square', x) + 1.0))
_unary(['arccosh'], lambda x: _call('rsqrt', _call('square', x) - 1.0))
_unary(['arctanh'], lambda x: _call('reciprocal', 1.0 - _call('square', x)))
_unary(['radians'], lambda x: _call('ones_like', x) * 0.017453292519943295)
_unary(['degrees'], lambda x: _call('ones_like', x) * 57.29577951308232)
_unary(['square'], lambda x: 2.0 * x)
_unary(['sqrt'], lambda x: 0.5 * _call('rsqrt', x))
_unary(['rsqrt'], lambda x: -0.5 * _call('rsqrt', x) / x)
_unary(['cbrt'], lambda x: _call('reciprocal', 3.0 * _call('square', _call('cbrt', x))))
_unary(['rcbrt'], lambda x: -_call('rcbrt', x) / (3.0 * x))
_unary(['reciprocal'], lambda x: -_call('reciprocal', _call('square', x)))
_unary(['negative'], lambda x: -_call('ones_like', x))
_unary(['abs'], lambda x: _call('sign', x))
_unary(['sigmoid'], lambda x: _call('sigmoid', x) * (1.0 - _call('sigmoid', x)))
_unary(['softsign'], lambda x: _call('reciprocal', _call('square', 1.0 + _call('abs', x))))
# piecewise-linear: the derivative is a step (its own derivative zero almost everywhere)
_unary(['relu'], lambda x: _call('_greater_scalar', x, scalar=0.0))
_unary(['_copy', 'identity'], lambda x: _call('ones_like', x))


@rule('Activation')
def _activation(op, x, y, g):
    act = op.act_type
    if act == 'relu':
        d = _call('_greater_scalar', x[0], scalar=0.0)
    elif act == 'sigmoid':
        s = _call('sigmoid', x[0])
        d = s * (1.0 - s)
    elif act == 'tanh':
        d = 1.0 - _call('square', _call('tanh', x[0]))
    elif act == 'softrelu':
        d = _call('sigmoid', x[0])
    elif act == 'softsign':
        d = _call('reciprocal', _call('square', 1.0 + _call('abs', x[0])))
    else:
        raise NotSupportedError('create_graph: no recordable gradient of Activation(act_type=%r)'
                                % act)
    return [g[0] * d]


@rule('Dropout')
def _dropout(op, x, y, g):
    # y: the hidden outputs (the mask, already scaled by 1 / (1 - p)), a constant
    return [g[0] * y[0]]


@rule('clip')
def _clip(op, x, y, g):
    inside = _call('_greater_equal_scalar', x[0], scalar=float(op.a_min)) * \
        _call('_lesser_equal_scalar', x[0], scalar=float(op.a_max))
    return [g[0] * inside]


# --- scalar and binary ------------------------------------------------------------------
@rule('_plus_scalar', '_minus_scalar')
def _plus_scalar(op, x, y, g):
    return [g[0]]


@rule('_rminus_scalar')
def _rminus_scalar(op, x, y, g):
    return [-g[0]]


@rule('_mul_scalar')
def _mul_scalar(op, x, y, g):
    return [g[0] * float(op.scalar)]


@rule('_div_scalar')
def _div_scalar(op, x, y, g):
    return [g[0] / float(op.scalar)]


@rule('_rdiv_scalar')
def _rdiv_scalar(op, x, y, g):
    return [-g[0] * float(op.scalar) * _call('reciprocal', _call('square', x[0]))]


@rule('_power_scalar')
def _power_scalar(op, x, y, g):
    p = float(op.scalar)
    return [g[0] * p * _call('_power_scalar', x[0], scalar=p - 1.0)]


@rule('_rpower_scalar')
def _rpower_scalar(op, x, y, g):
    import math
    b = float(op.scalar)
    return [g[0] * _call('_rpower_scalar', x[0], scalar=b) * math.log(b)]


@rule('elemwise_add', 'broadcast_add', '_plus', '_add')
def _add(op, x, y, g):
    return [_sum_to(g[0], x[0].shape), _sum_to(g[0], x[1].shape)]


@rule('elemwise_sub', 'broadcast_sub', '_minus', '_sub')
def _sub(op, x, y, g):
    return [_sum_to(g[0], x[0].shape), _sum_to(-g[0], x[1].shape)]


@rule('elemwise_mul', 'broadcast_mul', '_mul')
def _mul(op, x, y, g):
    return [_sum_to(_call('broadcast_mul', g[0], x[1]), x[0].shape),
            _sum_to(_call('broadcast_mul', g[0], x[0]), x[1].shape)]


@rule('elemwise_div', 'broadcast_div', '_div')
def _div(op, x, y, g):
    inv = _call('reciprocal', x[1])
    return [_sum_to(_call('broadcast_mul', g[0], inv), x[0].shape),
            _sum_to(-_call('broadcast_mul', _call('broadcast_mul', g[0], x[0]),
                                             _call('square', inv)), x[1].shape)]


# --- linear algebra -----------------------------------------------------------------
@rule('dot')
def _dot(op, x, y, g):
    a, b = x
    ta, tb = bool(op.transpose_a), bool(op.transpose_b)
    if a.ndim != 2 or b.ndim != 2:
        raise NotSupportedError('create_graph: the recordable gradient of dot covers 2-D '
                                'operands (got %s and %s)' % (a.shape, b.shape))
    # y = op(a) @ op(b)
    da = _call('dot', g[0], b, transpose_b=not tb) if not ta else \
        _call('dot', b, g[0], transpose_a=tb, transpose_b=True)
    db = _call('dot', a, g[0], transpose_a=not ta) if not tb else \
        _call('dot', g[0], a, transpose_a=True, transpose_b=ta)
    return [da, db]


@rule('FullyConnected')
def _fully_connected(op, x, y, g):
    data = x[0]
    flat = _call('Flatten', data) if op.flatten and data.ndim > 2 else data
    go = g[0]
    if not op.flatten and data.ndim > 2:
        flat = _call('Reshape', data, shape=(-1, data.shape[-1]))
        go = _call('Reshape', go, shape=(-1, go.shape[-1]))
    dx = _call('dot', go, x[1])
    dx = _call('Reshape', dx, shape=data.shape)
    dw = _call('dot', go, flat, transpose_a=True)
    out = [dx, dw]
    if not op.no_bias:
        out.append(_call('sum', go, axis=0))
    return out


# --- shape and reductions -----------------------------------------------------------------
@rule('Reshape', 'Flatten', 'expand_dims', 'squeeze', 'reshape_like')
def _reshape(op, x, y, g):
    return [_call('Reshape', g[0], shape=x[0].shape)] + [None] * (len(x) - 1)


@rule('transpose')
def _transpose(op, x, y, g):
    axes = tuple(op.axes) if op.axes else tuple(reversed(range(x[0].ndim)))
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return [_call('transpose', g[0], axes=tuple(inv))]


def _reduced_axes(op, shape):
    axis = op.axis
    if axis is None or axis == ():
        axes = tuple(range(len(shape)))
    else:
        axes = tuple(a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis))
    if getattr(op, 'exclude', False):
        axes = tuple(i for i in range(len(shape)) if i not in axes)
    return axes


def _expand_back(g, shape, axes):
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape))
    return _call('broadcast_to', _call('Reshape', g, shape=kept), shape=tuple(shape))


@rule('sum')
def _sum(op, x, y, g):
    axes = _reduced_axes(op, x[0].shape)
    return [_expand_back(g[0], x[0].shape, axes)]


@rule('mean')
def _mean(op, x, y, g):
    axes = _reduced_axes(op, x[0].shape)
    n = 1
    for a in axes:
        n *= x[0].shape[a]
    return [_expand_back(g[0], x[0].shape, axes) / float(n)]


# --- the sweep -----------------------------------------------------------------
def _add_nd(a, b):
    return b if a is None else a + b


def _zero_rule(op, x, y, g):
    return [_call('zeros_like', a) for a in x]


def _linked(g, node):
    """``g`` kept on the tape: a gradient that depends on no recorded array (relu's step
    times a constant head gradient) is tied to the node's inputs with a zero gradient, so
    that differentiating it again gives zeros, as MXNet's, not an error."""
    if g is None or g._ag is not None:
        return g
    ins = [a for a, e in zip(node.in_arrays, node.inputs) if e is not None]
    shapes = [(a._data.shape, a._data.dtype) for a in ins]
    xp = node.ctx.xp

    def run(og):
        return [xp.zeros(s, d) for s, d in shapes]
    link = tape.Node('_zero_gradient_of_' + node.name, [a._ag for a in ins],
                     [(g._data.shape, g._data.dtype)], run, (), node.ctx, in_arrays=ins,
                     rule=_zero_rule)
    g._ag = tape.Entry(link, 0)
    return g


#: operators whose rule reads a hidden output that a second run would draw anew (Dropout's
#: mask): a graph replayed in training mode cannot hold them
_DRAWN_IN_TRAINING = frozenset(['Dropout'])


def _check_replayable(call, name):
    """Refuse, before anything runs, a graph with an operator the replay cannot
    differentiate again."""
    for n in call.symbol.graph(check_names=False).order:
        op = n.op
        if op is None or op.no_grad:
            continue
        if op.name not in RULES:
            raise NotSupportedError(
                'autograd.grad(create_graph=True): no recordable gradient for %s (node %r of '
                'the hybridized block %s); higher-order gradients cover %d operators '
                '(symgraph/autograd_rules.py)' % (op.name, n.name, name, len(RULES)))
        if call.training and op.name in _DRAWN_IN_TRAINING:
            raise NotSupportedError(
                'autograd.grad(create_graph=True): the hybridized block %s ran %s (node %r) '
                'in training mode, whose random draw a replay cannot repeat; record it in '
                'predict mode (autograd.record(train_mode=False)) or do not hybridize it'
                % (name, op.name, n.name))


def _replay(call, inputs, ctx):
    """Run the graph of ``call`` (a tape.GraphCall) operator by operator through ``mx.nd``
    (recorded) on ``inputs`` (name -> NDArray); returns its outputs. The auxiliary states
    are copies: the replay leaves the Parameters' running statistics alone."""
    g = call.symbol.graph(check_names=False)
    values = {}
    for name, arr in call.aux:
        with ctx.device_scope():
            inputs[name] = NDArray(arr._data.copy(), ctx)
    prev = STATE.training
    STATE.training = call.training
    try:
        for n in g.order:
            if n.op is None:
                values[id(n)] = [inputs[n.name]]
                continue
            ins = [values[id(src)][i] for src, i in n.inputs]
            params = {k: getattr(n.op, k) for k in opdef.param_names(type(n.op))}
            out = _nd.invoke(n.op.name, ins, params)
            values[id(n)] = list(out) if isinstance(out, (list, tuple)) else [out]
    finally:
        STATE.training = prev
    return [values[id(n)][i] for n, i in g.outputs]


def _graph_grads(node, og):
    """The recorded gradients of a whole graph's call (a hybridized block): its executor's
    backward is raw arrays, so the graph is replayed operator by operator, recorded, on
    arrays that stand for the call's inputs under the inputs' recorded entries, and that
    replay swept back with the rules to those entries. The first-order path (a plain
    backward or grad) never replays."""
    call, ctx = node.graph, node.ctx
    _check_replayable(call, node.name)
    inputs, stop, first = {}, set(), {}
    for k, (name, arr, e) in enumerate(zip(call.input_names, node.in_arrays, node.inputs)):
        if name is None:
            continue
        stand_in = NDArray(arr._data, ctx)
        stand_in._ag = e
        inputs[name] = stand_in
        if e is not None:
            stop.add(id(e))
            first.setdefault(id(e), k)      # one array given twice: its gradient once
    outs = _replay(call, inputs, ctx)
    heads = [(o._ag, g) for o, g in zip(outs, og) if o._ag is not None and g is not None]
    if not heads:
        return [None] * len(node.inputs)
    entries = [e for e, _ in heads]
    nodes = tape.reverse_order(entries, stop)
    # the replay's nodes stay: the gradients returned are computed from them
    grads = tape.sweep(entries, [g for _, g in heads], nodes, _run_rule, _add_nd, True, False,
                       stop)
    return [grads[id(e)][1] if e is not None and first.get(id(e)) == k and id(e) in grads
            else None for k, e in enumerate(node.inputs)]


def _run_rule(node, og):
    """One node's input gradients as recorded NDArray calls (its rule)."""
    ctx = node.ctx
    og = [g if g is not None else
          NDArray(ctx.xp.zeros(shape, dtype), ctx)
          for g, (shape, dtype) in zip(og, node.out_meta)]
    if node.graph is not None and not node.freed:
        in_grads = _graph_grads(node, og)
    else:
        fn = node.rule or (RULES.get(node.name) if node.op is not None else None)
        if fn is None or node.in_arrays is None:
            raise NotSupportedError(
                'autograd.grad(create_graph=True): no recordable gradient for %s; '
                'higher-order gradients cover %d operators (symgraph/autograd_rules.py)'
                % (node.name, len(RULES)))
        n_args = len(node.op.list_arguments()) if node.op is not None else \
            len(node.in_arrays)
        hidden = None if node.out_arrays is None else \
            [NDArray(o, ctx) for o in node.out_arrays]
        in_grads = fn(node.op, node.in_arrays[:n_args], hidden, og)
    return [_linked(g, node) if g is not None and e is not None else g
            for g, e in zip(in_grads, node.inputs)]


def sweep(entries, head_grads, nodes, variables, retain_graph):
    """The gradients of ``variables`` (NDArrays, recorded so that they can be
    differentiated again): the tape's sweep with every node's gradient from :data:`RULES`
    (a hybridized block's call replayed operator by operator, see :func:`_graph_grads`)."""
    prev = STATE.recording
    STATE.recording = True
    try:
        var_grads = tape.sweep(entries, head_grads, nodes, _run_rule, _add_nd, retain_graph,
                               False)
        return [var_grads[id(v._ag)][1] if id(v._ag) in var_grads else None
                for v in variables]
    finally:
        STATE.recording = prev
