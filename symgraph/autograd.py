"""``mx.autograd``: record imperative ``mx.nd`` calls and differentiate them (MXNet 1.9.1).

Inside ``with autograd.record():`` every operator call whose inputs need a gradient puts
one node on a tape (symgraph/ndarray/tape.py): the operator's Step and the arrays its
backward reads. ``backward`` sweeps that tape from the heads and writes the gradients of
the variables (arrays given :meth:`NDArray.attach_grad` or :func:`mark_variables`) by their
``grad_req``. A hybridized Gluon block puts one node for its whole graph on the same tape
(gluon/cached_op.py), whose backward is the executor's; :func:`get_symbol` inlines its graph
and ``grad(create_graph=True)`` replays it operator by operator (autograd_rules.py).

>>> import symgraph as mx
>>> x = mx.nd.array([1.0, 2.0, 3.0])
>>> x.attach_grad()
>>> with mx.autograd.record():
...     y = (x * x).sum()
>>> y.backward()
>>> x.grad.asnumpy().tolist()
[2.0, 4.0, 6.0]
"""
from __future__ import annotations

import contextlib

from . import opdef
from .base import ArgumentError, ArgumentTypeError, NotSupportedError, UsageError
from .ndarray import NDArray
from .ndarray import tape
from .ndarray.tape import STATE
from . import autograd_rules

__all__ = ['record', 'pause', 'train_mode', 'predict_mode', 'is_recording', 'is_training',
           'set_recording', 'set_training', 'mark_variables', 'backward', 'grad',
           'get_symbol', 'Function', 'record_op']


def set_recording(is_recording):  # pylint: disable=redefined-outer-name
    """Turn recording on or off; returns the previous state."""
    prev = STATE.recording
    STATE.recording = bool(is_recording)
    return prev


def set_training(train_mode):  # pylint: disable=redefined-outer-name
    """Turn training mode (Dropout, BatchNorm batch statistics) on or off; returns the
    previous state."""
    prev = STATE.training
    STATE.training = bool(train_mode)
    return prev


def is_recording():
    """Whether operator calls are being recorded."""
    return STATE.recording


def is_training():
    """Whether operators run in training mode."""
    return STATE.training


@contextlib.contextmanager
def _scope(recording, training):
    prev_r, prev_t = STATE.recording, STATE.training
    if recording is not None:
        STATE.recording = recording
    if training is not None:
        STATE.training = training
    try:
        yield
    finally:
        STATE.recording, STATE.training = prev_r, prev_t


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Scope in which calls are recorded for backward (training mode by default).

    >>> import symgraph as mx
    >>> with mx.autograd.record():
    ...     mx.autograd.is_recording(), mx.autograd.is_training()
    (True, True)
    """
    return _scope(True, bool(train_mode))


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Scope in which nothing is recorded (prediction mode by default)."""
    return _scope(False, bool(train_mode))


def train_mode():
    """Scope in which operators run in training mode (recording unchanged)."""
    return _scope(None, True)


def predict_mode():
    """Scope in which operators run in prediction mode (recording unchanged)."""
    return _scope(None, False)


def _as_list(x, what):
    if isinstance(x, NDArray):
        return [x], True
    if isinstance(x, (list, tuple)):
        for v in x:
            if not isinstance(v, NDArray):
                raise ArgumentTypeError('%s must be NDArrays, got %s' % (what, type(v).__name__))
        return list(x), False
    raise ArgumentTypeError('%s must be an NDArray or a list of NDArrays, got %s'
                            % (what, type(x).__name__))


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make ``variables`` autograd variables whose gradients go into ``gradients``."""
    variables, _ = _as_list(variables, 'mark_variables: variables')
    gradients, _ = _as_list(gradients, 'mark_variables: gradients')
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise ArgumentError('mark_variables: %d variables, %d gradients and %d grad_reqs'
                            % (len(variables), len(gradients), len(grad_reqs)))
    for v, g, r in zip(variables, gradients, grad_reqs):
        if r not in ('write', 'add', 'null'):
            raise ArgumentError("mark_variables: grad_req must be 'write', 'add' or 'null', "
                                "got %r" % (r,))
        if g.shape != v.shape:
            raise ArgumentError('mark_variables: gradient of shape %s for a variable of '
                                'shape %s' % (g.shape, v.shape))
        v._ag = tape.Entry(None, 0, g, r)


def _head_grads(head_grads):
    """``head_grads`` as a list (one NDArray given alone), or None."""
    if head_grads is None or isinstance(head_grads, NDArray):
        return None if head_grads is None else [head_grads]
    return list(head_grads)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # noqa: E501 pylint: disable=redefined-outer-name
    """Gradients of ``heads`` into the ``grad`` arrays of the variables they depend on."""
    heads, _ = _as_list(heads, 'backward: heads')
    tape.backward_heads(heads, _head_grads(head_grads), retain_graph,
                        train_mode)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # pylint: disable=redefined-outer-name
    """The gradients of ``heads`` with respect to ``variables``, returned (the variables'
    ``grad`` arrays are left alone). A variable the heads do not depend on gets zeros.
    With ``create_graph`` the gradients are themselves recorded, so that they can be
    differentiated again (higher order)."""
    heads, _ = _as_list(heads, 'grad: heads')
    variables, single = _as_list(variables, 'grad: variables')
    for k, v in enumerate(variables):
        if v._ag is None or v._ag.node is not None:
            raise UsageError('grad: variable %d (shape %s) is not a variable of autograd: '
                             'call attach_grad() on it (or mark_variables) before recording'
                             % (k, v.shape))
    if retain_graph is None:
        retain_graph = create_graph
    hg = tape.head_grads_of(heads, _head_grads(head_grads))
    prev = STATE.training
    STATE.training = bool(train_mode)
    try:
        if create_graph:
            hg = [h if isinstance(h, NDArray) else NDArray(h, v._ctx)
                  for h, v in zip(hg, heads)]
            res = tape.backward(heads, hg, retain_graph, variables, create_graph=True,
                                nd_sweep=autograd_rules.sweep)
        else:
            res = tape.backward(heads, hg, retain_graph, variables)
            res = [None if g is None else NDArray(g, v._ctx) for g, v in zip(res, variables)]
    finally:
        STATE.training = prev
    out = []
    for g, v in zip(res, variables):
        if g is None:
            with v._ctx.device_scope():
                g = NDArray(v._ctx.xp.zeros(v._data.shape, v._data.dtype), v._ctx)
        elif g.shape != v.shape:
            g = g.reshape(v.shape)
        out.append(g)
    return out


def record_op(name, inputs, outputs, backward_fn):
    """Record one call that computed ``outputs`` from ``inputs`` (NDArrays) as a single
    node, when recording and some input needs a gradient. ``backward_fn(out_grads)`` gets
    one NDArray (or None: no gradient reached it) per output and returns one NDArray or
    None per input. Returns whether it recorded. (:class:`Function` uses it; a hybridized
    block's call builds its node itself, see gluon/cached_op.py.)"""
    if not STATE.recording:
        return False
    entries = [a._ag for a in inputs]
    if not any(tape.needs_grad(e) for e in entries):
        return False
    ctx = outputs[0]._ctx if outputs else inputs[0]._ctx
    out_ctx = [o._ctx for o in outputs]
    in_shapes = [a.shape for a in inputs]

    def run(og):
        grads = backward_fn([None if g is None else NDArray(g, c)
                             for g, c in zip(og, out_ctx)])
        if len(grads) != len(in_shapes):
            raise ArgumentError('%s: backward returned %d gradients for %d inputs'
                                % (name, len(grads), len(in_shapes)))
        res = []
        for g, s in zip(grads, in_shapes):
            if g is None:
                res.append(None)
                continue
            if not isinstance(g, NDArray):
                raise ArgumentTypeError('%s: backward must return NDArrays, got %s'
                                        % (name, type(g).__name__))
            if g.shape != s:
                raise ArgumentError('%s: backward returned a gradient of shape %s for an '
                                    'input of shape %s' % (name, g.shape, s))
            res.append(g._data)
        return res
    node = tape.Node(name, [e if tape.needs_grad(e) else None for e in entries],
                     [(o._data.shape, o._data.dtype) for o in outputs], run, (), ctx,
                     in_arrays=list(inputs))
    for k, o in enumerate(outputs):
        o._ag = tape.Entry(node, k)
    return True


class Function:
    """A differentiable function with a forward and a backward of the user's, both on
    NDArrays (MXNet's ``autograd.Function``).

    >>> import symgraph as mx
    >>> class Sigmoid(mx.autograd.Function):
    ...     def forward(self, x):
    ...         y = 1 / (1 + mx.nd.exp(-x))
    ...         self.save_for_backward(y)
    ...         return y
    ...     def backward(self, dy):
    ...         y, = self.saved_tensors
    ...         return dy * y * (1 - y)
    >>> x = mx.nd.array([0.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = Sigmoid()(x)
    >>> y.backward(); x.grad.asnumpy().tolist()
    [0.25]
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep arrays for :meth:`backward` (as ``saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError('autograd.Function subclasses define forward')

    def backward(self, *output_grads):
        raise NotImplementedError('autograd.Function subclasses define backward')

    def __call__(self, *inputs):
        if self._used:
            raise UsageError('autograd.Function: each instance can be called once (make a '
                             'new one per call, as MXNet requires)')
        self._used = True
        for k, x in enumerate(inputs):
            if not isinstance(x, NDArray):
                raise ArgumentTypeError('autograd.Function: input %d must be an NDArray, got '
                                        '%s' % (k, type(x).__name__))
        with pause(train_mode=STATE.training):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        for k, o in enumerate(outs):
            if not isinstance(o, NDArray):
                raise ArgumentTypeError('autograd.Function: forward must return NDArrays, '
                                        'output %d is %s' % (k, type(o).__name__))
        # an output that is an input (or shares its entry) would make a cycle: a new array
        outs = [o.detach() if any(o is x for x in inputs) else o for o in outs]

        def run(out_grads):
            out_grads = [g if g is not None else
                         NDArray(o._ctx.xp.zeros(o._data.shape, o._data.dtype), o._ctx)
                         for g, o in zip(out_grads, outs)]
            with pause(train_mode=STATE.training):
                r = self.backward(*out_grads)
            r = [r] if isinstance(r, NDArray) else list(r)
            return r
        record_op(type(self).__name__, list(inputs), outs, run)
        return outs[0] if single else outs


def get_symbol(x):
    """The recorded computation of ``x`` as a Symbol: every variable (and every other
    array the computation read) an input ``var<k>``, every node its operator (MXNet's
    ``autograd.get_symbol``). A hybridized block's call is inlined: its traced graph's
    operators, under their traced names, read the inputs of the call."""
    from . import symbol as sym_mod   # autograd sits above symbol; see docs/architecture.md
    if not isinstance(x, NDArray) or x._ag is None:
        raise UsageError('get_symbol: the array is not part of a recorded computation')
    memo, names = {}, {}

    def variable(key):
        if key not in names:
            names[key] = sym_mod.var('var%d' % len(names))
        return names[key]

    def op_function(name):
        fn = getattr(sym_mod, name, None)
        return fn if fn is not None else getattr(sym_mod._internal, name)

    def node_symbol(node):
        if node.freed or node.in_arrays is None or (node.op is None and node.graph is None):
            raise NotSupportedError('get_symbol: %s has no operator form (%s)' % (
                node.name, 'backward freed its graph: record again, or pass '
                'retain_graph=True to that backward' if node.freed else
                'an autograd.Function or an indexing: its backward is Python code'))
        ins = [entry_symbol(ie, a) for ie, a in zip(node.inputs, node.in_arrays)]
        call = node.graph
        if call is not None:
            given = {n: s for n, s in zip(call.input_names, ins) if n is not None}
            given.update((n, variable(id(a))) for n, a in call.aux)
            return call.symbol(**given)
        params = {k: getattr(node.op, k) for k in opdef.param_names(type(node.op))}
        return op_function(node.op.name)(*ins, **params)

    def entry_symbol(e, arr):
        if e is None or e.node is None:
            return variable(id(e) if e is not None else id(arr))
        node = e.node
        if id(node) not in memo:
            memo[id(node)] = node_symbol(node)
        s = memo[id(node)]
        return s[e.index] if len(s.list_outputs()) > 1 else s
    return entry_symbol(x._ag, x)
