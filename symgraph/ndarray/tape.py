"""The autograd tape: what ``mx.nd`` records under ``autograd.record()``.

``mx.autograd`` (symgraph/autograd.py) is the public face; this module holds the state
and the backward sweep, and works on the arrays' ``_data`` (NumPy or CuPy), so that
``ndarray.py`` can record without importing the autograd module.

An NDArray that takes part in autograd has an :class:`Entry` in its ``_ag`` slot: either a
*variable* (``attach_grad``/``mark_variables``: ``node`` is None, ``grad`` the NDArray its
gradient goes into, ``req`` MXNet's grad_req), or output ``index`` of a recorded
:class:`Node`. A node is one applied operator (its :class:`~symgraph.opdef.Step` and the
arrays its backward reads) or one call of a whole graph (a hybridized Block) or of an
``autograd.Function``; all the sweep asks of it is ``run(out_grads) -> in_grads``.
"""
from __future__ import annotations

import collections
import threading

from ..base import ArgumentError, UsageError
from ..profiler import _recorder as _prof
from ..profiler._plans import backward_event_name, op_event_name

__all__ = ['STATE', 'Entry', 'Node', 'GraphCall', 'needs_grad', 'backward']


class _State(threading.local):
    """Per thread, as MXNet's ``is_recording``/``is_training`` flags."""
    recording = False
    training = False
    #: None, or a plain backward (into the variables' ``grad`` arrays) is sweeping: every
    #: gradient a node returns is summed or copied before the sweep returns, so a node may
    #: return arrays it writes again at its next run (a hybridized block's executor
    #: buffers). Then a dict: where a node of a whole graph's call takes part,
    #: ``Counter({entry: number of heads and node inputs reading it})`` of the variables,
    #: so that such a node may write the gradient of a variable with ``grad_req='write'``
    #: that only it reads straight into the variable's ``grad`` array (the sweep would only
    #: copy it there); it then returns None for it and marks it ``fresh``
    lending = None


STATE = _State()


class Entry:
    """An array's place on the tape (see the module docstring)."""

    __slots__ = ('node', 'index', 'grad', 'req', 'fresh')

    def __init__(self, node=None, index=0, grad=None, req='write'):
        self.node = node
        self.index = index
        self.grad = grad
        self.req = req
        #: a backward wrote this variable's gradient since the last optimizer step read it
        #: (gluon.Trainer's stale-gradient check)
        self.fresh = False

    @property
    def is_variable(self):
        return self.node is None


def needs_grad(entry):
    """Whether a gradient flows into an array with this entry."""
    return entry is not None and (entry.node is not None or entry.req != 'null')


class Node:
    """One recorded call.

    ``name`` names it in errors (the operator's name); ``inputs`` holds the inputs'
    entries at record time (None for an input that needs no gradient); ``out_meta`` the
    (shape, dtype) of each output whose gradient the sweep makes zeros for when nothing
    reached it; ``run(out_grads)`` returns one gradient array (or None) per input;
    ``checks`` are ``(ndarray, version, what)`` of the arrays ``run`` reads: written in
    place since, the backward refuses to run (MXNet would compute a wrong gradient).
    ``rule`` optionally gives the gradient as recordable NDArray calls (higher order).
    ``graph``: the :class:`GraphCall` of a whole graph's call (a hybridized block), which
    ``autograd.get_symbol`` inlines and ``create_graph`` replays.
    """

    __slots__ = ('name', 'inputs', 'out_meta', 'fn', 'checks', 'ctx', 'freed', 'op',
                 'rule', 'in_arrays', 'out_arrays', 'graph')

    def __init__(self, name, inputs, out_meta, run, checks=(), ctx=None, op=None, rule=None,
                 in_arrays=None, out_arrays=None, graph=None):
        self.name = name
        self.inputs = inputs
        self.out_meta = out_meta
        self.fn = run
        self.checks = checks
        self.ctx = ctx
        self.freed = False
        self.op = op
        self.rule = rule
        self.in_arrays = in_arrays
        self.out_arrays = out_arrays
        self.graph = graph

    def run(self, out_grads):
        """The inputs' gradients from the outputs' (arrays, None where none reached)."""
        return self.fn(out_grads)

    def free(self):
        """Drop what backward would read (``retain_graph=False``)."""
        self.freed = True
        self.fn = None
        self.checks = ()
        self.rule = None
        self.in_arrays = None
        self.out_arrays = None
        self.graph = None


class GraphCall:
    """What a node of a whole graph's call keeps of the graph (``Node.graph``).

    ``symbol``: the graph (a Symbol); ``input_names``: per input of the node (its
    ``in_arrays``), the graph's input Variable it binds, or None (an unused data input);
    ``aux``: (name, NDArray) of the auxiliary states bound; ``training``: whether the call
    ran in training mode.
    """

    __slots__ = ('symbol', 'input_names', 'aux', 'training')

    def __init__(self, symbol, input_names, aux, training):
        self.symbol = symbol
        self.input_names = input_names
        self.aux = aux
        self.training = training


class OpNode(Node):
    """A node of one operator call (``mx.nd``): its Step's backward on the arrays the
    operator declared it needs (``needs_inputs``/``needs_outputs``, hidden outputs).
    ``recipe`` is what the call's operator says once for every call like it:
    (number of arguments, of visible outputs, input indices and output indices backward
    reads, argument names, is_loss)."""

    __slots__ = ('step', 'saved_in', 'saved_out', 'aux', 'need', 'n_vis', 'n_in')

    def __init__(self, op, step, inputs, in_arrays, datas, outs, res, recipe, ctx):
        # the hot path of every recorded mx.nd call: plain loops, no helper calls
        n_args, n_vis, sel_in, sel_out, names, is_loss = recipe
        self.name = op.name
        self.op = op
        self.inputs = inputs            # entries that need a gradient, else None
        self.out_meta = [(o.shape, o.dtype) for o in outs]
        self.fn = self.rule = None
        self.ctx = ctx
        self.freed = False
        self.in_arrays = in_arrays
        self.out_arrays = outs[n_vis:] or None
        self.graph = None
        self.step = step
        saved_in = [None] * n_args
        checks = []
        for j in sel_in:
            saved_in[j] = datas[j]
            a = in_arrays[j]
            checks.append((a, a._ver, ('input', names[j])))
        self.saved_in = saved_in
        if sel_out:
            saved_out = [None] * len(outs)
            for k in sel_out:
                saved_out[k] = outs[k]
                if k < n_vis:
                    checks.append((res[k], res[k]._ver, ('output', k)))
            self.saved_out = saved_out
        else:
            self.saved_out = [None] * len(outs)
        self.checks = checks
        self.aux = datas[n_args:]
        self.need = [e is not None for e in inputs[:n_args]]
        self.n_vis = -1 if is_loss else n_vis
        self.n_in = len(in_arrays)

    def run(self, og):
        meta, n_vis, xp = self.out_meta, self.n_vis, self.ctx.xp
        g = [None if k >= n_vis else og[k] if og[k] is not None else
             xp.zeros(meta[k][0], meta[k][1]) for k in range(len(meta))]
        r = list(self.step.backward(g, self.saved_in, self.saved_out, self.aux, self.need))
        return r + [None] * (self.n_in - len(r))

    def free(self):
        Node.free(self)
        self.step = self.saved_in = self.saved_out = self.aux = None


def reverse_order(heads, stop=()):
    """The nodes reachable from the head entries, each after every node that reads one of
    its outputs (so that its output gradients are complete when it runs): iterative.
    The walk does not pass the entries whose ids are in ``stop``."""
    post, seen = [], set()
    stack = [(e.node, False) for e in heads if e.node is not None and id(e) not in stop]
    while stack:
        node, done = stack.pop()
        if done:
            post.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for e in node.inputs:
            if e is not None and e.node is not None and id(e.node) not in seen \
                    and id(e) not in stop:
                stack.append((e.node, False))
    post.reverse()
    return post


def _add(a, b):
    return b if a is None else a + b


def _run_node(node, out_grads):
    with node.ctx.device_scope():
        return node.run(out_grads)


def _run_node_profiled(node, out_grads):
    """:func:`_run_node` while mx.profiler records imperative calls: the node's backward
    is an event named as MXNet names it (``_backward_<operator>``)."""
    t0 = _prof.now()
    try:
        return _run_node(node, out_grads)
    finally:
        prefix, cat = _prof.scope()
        _prof.record(prefix + backward_event_name(
            op_event_name(node.op) if node.op is not None else node.name), cat, t0,
            _prof.now())


def sweep(entries, head_grads, nodes, run, add, retain_graph, free_unreached, stop=()):
    """The one backward sweep: seed the heads' entries with ``head_grads``, then for each
    node of ``nodes`` (in order) that received an output gradient, ``run(node,
    out_grads)`` gives its inputs' gradients, summed with ``add`` into the nodes and the
    variables (a variable with req 'null' takes none from a node). A node is freed after it
    ran unless ``retain_graph``; ``free_unreached`` frees the others too. Returns
    ``{id(entry): [entry, gradient]}`` of the variables reached, and of the entries whose
    ids are in ``stop`` (gathered there like variables: a part of a graph swept alone).
    The first-order backward runs it on raw arrays, ``create_graph``
    (autograd_rules.sweep) on recorded NDArrays."""
    grads = {}          # id(node) -> list of output gradients
    var_grads = {}      # id(entry) -> [entry, gradient]

    def give(e, g):
        if e.node is None or id(e) in stop:
            slot = var_grads.setdefault(id(e), [e, None])
            slot[1] = add(slot[1], g)
        else:
            lst = grads.setdefault(id(e.node), [None] * len(e.node.out_meta))
            lst[e.index] = add(lst[e.index], g)
    for e, g in zip(entries, head_grads):
        give(e, g)
    for node in nodes:
        og = grads.pop(id(node), None)
        if og is None:
            continue
        in_grads = run(node, og)
        if not retain_graph:
            node.free()
        for e, g in zip(node.inputs, in_grads):
            if g is not None and e is not None and (e.node is not None or e.req != 'null'):
                give(e, g)
    if free_unreached and not retain_graph:
        for node in nodes:
            if not node.freed:
                node.free()
    return var_grads


def _readers(heads, nodes):
    """``Counter({entry: how many heads and node inputs read it})`` of the variables."""
    return collections.Counter(
        [e for e in heads if e.node is None]
        + [e for node in nodes for e in node.inputs if e is not None and e.node is None])


def backward(heads, head_grads, retain_graph=False, variables=None, create_graph=False,
             nd_sweep=None):
    """Run the tape backward from ``heads`` (NDArrays) with ``head_grads`` (arrays of the
    heads' array module, one per head).

    Without ``variables``: every variable reached gets its gradient by its ``req``
    (write/add). With ``variables`` (NDArrays): nothing is written; the gradients of
    those variables are returned (None where not reached). ``create_graph`` hands the
    sweep to ``nd_sweep`` (autograd's recordable sweep).
    """
    entries = []
    for k, h in enumerate(heads):
        e = h._ag
        if e is None:
            raise UsageError(
                'backward: head %d (shape %s) is not in a computational graph: compute it '
                'inside `with autograd.record():` from arrays that need a gradient '
                '(NDArray.attach_grad() or autograd.mark_variables)' % (k, h.shape))
        if e.node is not None and e.node.freed:
            raise UsageError(
                'backward: the graph that computed head %d (shape %s, output %d of %s) was '
                'freed by an earlier backward; pass retain_graph=True to that backward to '
                'run backward through it again' % (k, h.shape, e.index, e.node.name))
        entries.append(e)
    nodes = reverse_order(entries)
    has_graph = False
    for node in nodes:
        if node.graph is not None:
            has_graph = True
        if node.freed:
            raise UsageError('backward: the graph through %s was freed by an earlier backward; '
                             'pass retain_graph=True to it to run backward again' % node.name)
        for arr, ver, what in node.checks:
            if arr._ver != ver:
                what = '%s %r' % what
                raise ArgumentError(
                    'backward: %s of operator %s (shape %s) was written in place after it '
                    'was recorded, and the gradient of %s needs its old value: copy it '
                    '(x = x.copy()) before writing, or write outside the recorded '
                    'computation' % (what, node.name, arr.shape, node.name))
    if create_graph:
        return nd_sweep(entries, head_grads, nodes, variables, retain_graph)
    lending = None
    if variables is None:
        lending = _readers(entries, nodes) if has_graph else {}
    prev, STATE.lending = STATE.lending, lending
    try:
        # (one flag test: mx.profiler times each node's backward)
        var_grads = sweep(entries, head_grads, nodes,
                          _run_node_profiled if _prof.imperative else _run_node, _add,
                          retain_graph, True)
    finally:
        STATE.lending = prev
    if variables is not None:
        out = []
        for v in variables:
            slot = var_grads.get(id(v._ag)) if v._ag is not None else None
            out.append(None if slot is None else slot[1])
        return out
    for e, g in var_grads.values():
        dst = e.grad
        req = e.req
        if dst is None or req == 'null':
            continue
        data = dst._data
        if g.shape != data.shape:
            g = g.reshape(data.shape)
        if dst._ctx.device_type == 'cpu':     # (a hybridized block's step writes dozens)
            if req == 'add':
                data += g
            else:
                data[...] = g
        else:
            with dst._ctx.device_scope():
                if req == 'add':
                    data += g
                else:
                    data[...] = g
        dst._ver += 1      # written (a sparse gradient's stored rows are worked out anew)
        e.fresh = True
    return None


def head_grads_of(heads, head_grads):
    """MXNet's default head gradients: ones where none is given."""
    if head_grads is None:
        head_grads = [None] * len(heads)
    if len(head_grads) != len(heads):
        raise ArgumentError('backward: %d head gradients for %d heads'
                            % (len(head_grads), len(heads)))
    out = []
    for h, g in zip(heads, head_grads):
        if g is None:
            with h._ctx.device_scope():
                g = h._ctx.xp.ones(h._data.shape, h._data.dtype)
        else:
            g = getattr(g, '_data', g)
            if tuple(g.shape) != tuple(h._data.shape):
                raise ArgumentError('backward: a head gradient of shape %s for a head of '
                                    'shape %s' % (tuple(g.shape), h.shape))
        out.append(g)
    return out


def backward_heads(heads, head_grads, retain_graph=False, train_mode=True):
    """``autograd.backward``: gradients into the variables' ``grad`` arrays."""
    hg = head_grads_of(heads, head_grads)
    prev = STATE.training
    STATE.training = bool(train_mode)
    try:
        backward(heads, hg, retain_graph)
    finally:
        STATE.training = prev
