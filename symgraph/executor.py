"""Executors: a symbol bound to arrays, running forward and backward through a Plan."""
from __future__ import annotations

import logging
import os
import tracemalloc
import warnings

import numpy as np

from .base import (BindError, ArgumentError, ArgumentTypeError, ShapeError, UnknownNameError,
                   UsageError, as_dtype)
from .context import Context, current_context
from .graph.infer import (infer_shapes, infer_types, shape_complete, Wiring,
                          warn_unknown_shapes, warn_unknown_types)
from .ndarray import NDArray
from .ndarray.ndarray import _to_xp
from .graph.plan import Plan, check_error
from .graph.cse import eliminate_common_expr
from .graph.passes import InferencePasses, TRAINING_FUSION_ENV, fuse_for_training
from .opdef import lend_scratch
from .profiler import _recorder as _prof
from .profiler import _plans as _prof_plans

__all__ = ['Executor', 'simple_bind']

log = logging.getLogger(__name__)
_REQS = ('write', 'add', 'null', 'inplace')


#: operators MXNet 1.9.1 registers without input names (no FListInputNames): its monitor
#: reports their inputs as <node>_input<k> (found by tests/golden/make_monitor_input_names.py;
#: an operator it could not run keeps its argument names)
UNNAMED_INPUTS = frozenset((
    'Activation', 'BlockGrad', 'Cast', 'Flatten', 'Reshape', 'SoftmaxActivation', '_copy',
    '_div_scalar', '_equal_scalar', '_greater_equal_scalar', '_greater_scalar',
    '_hypot_scalar', '_lesser_equal_scalar', '_lesser_scalar', '_logical_and_scalar',
    '_logical_or_scalar', '_logical_xor_scalar', '_maximum_scalar', '_minimum_scalar',
    '_minus_scalar', '_mod_scalar', '_mul_scalar', '_not_equal_scalar', '_plus_scalar',
    '_power_scalar', '_rdiv_scalar', '_rminus_scalar', '_rmod_scalar', '_rpower_scalar',
    '_sample_multinomial', '_scatter_minus_scalar', '_scatter_plus_scalar', '_shuffle', 'abs',
    'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctanh', 'argmax', 'argmax_channel',
    'argmin', 'argsort', 'broadcast_axis', 'broadcast_to', 'cbrt', 'ceil', 'clip', 'cos',
    'cosh', 'degrees', 'erf', 'erfinv', 'exp', 'expand_dims', 'expm1', 'fix', 'floor', 'gamma',
    'gammaln', 'hard_sigmoid', 'log', 'log10', 'log1p', 'log2', 'logical_not', 'make_loss',
    'max', 'mean', 'min', 'nanprod', 'nansum', 'negative', 'norm', 'ones_like', 'prod',
    'radians', 'rcbrt', 'reciprocal', 'relu', 'rint', 'round', 'rsqrt', 'shape_array',
    'sigmoid', 'sign', 'sin', 'sinh', 'size_array', 'slice', 'slice_axis', 'smooth_l1',
    'softmin', 'softsign', 'sort', 'sqrt', 'square', 'sum', 'tan', 'tanh', 'topk', 'transpose',
    'trunc', 'zeros_like'))


def _grad_reqs(grad_req, names):
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise BindError('grad_req has %d entries for %d arguments %s'
                            % (len(grad_req), len(names), names))
        reqs = list(grad_req)
    elif isinstance(grad_req, dict):
        unknown = [k for k in grad_req if k not in names]
        if unknown:     # MXNet ignores them silently; a typo would leave a gradient null
            warnings.warn('grad_req names %s, which are not arguments of the symbol %s; '
                          'ignored' % (unknown, names), stacklevel=4)
        reqs = [grad_req.get(n, 'null') for n in names]
    else:
        raise ArgumentTypeError('grad_req must be a str, a list or a dict')
    for n, r in zip(names, reqs):
        if r not in _REQS:
            raise BindError('grad_req for %r is %r; use one of write, add, null' % (n, r))
    return ['write' if r == 'inplace' else r for r in reqs]


def _prefix_view(arr, shape):
    """``arr``'s first elements as an NDArray of ``shape`` sharing its memory, or None where
    they do not fit in it (or its memory is not one contiguous run)."""
    data = arr._data
    size = int(np.prod(shape, dtype=np.int64))
    if size > data.size or not data.flags.c_contiguous:
        return None
    return NDArray(data.reshape(-1)[:size].reshape(shape), arr._ctx)


def _as_list(values, names, what, required=True):
    """A list in ``names`` order from a list or dict; warns about extra dict keys."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
        extra = [k for k in values if k not in names]
        if extra:
            warnings.warn('bind: %s %s are not %s of the symbol and are ignored (the '
                          'symbol has %s)' % (what, extra, what, names), stacklevel=4)
        out = [values.get(n) for n in names]
        missing = [n for n, v in zip(names, out) if v is None]
        if required and missing:
            raise BindError('bind: %s %s are missing (the symbol needs %s)'
                            % (what, missing, names))
        return out
    if isinstance(values, (list, tuple)):
        if len(values) != len(names) and (required or values):
            raise BindError('bind: %d %s given but the symbol has %d: %s'
                            % (len(values), what, len(names), names))
        return list(values) + [None] * (len(names) - len(values))
    raise ArgumentTypeError('bind: %s must be a list or a dict of NDArrays' % what)


class Executor:
    """A bound symbol. Create with :meth:`Symbol.bind` or :meth:`Symbol.simple_bind`."""

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req='write', aux_states=None,
                 group2ctx=None, _answers=None, _inferred=None):
        # _inferred: (graph, shapes, dtypes or None) from simple_bind, which sorted and
        # inferred with the same inputs already (one sort and one pass per bind)
        self._symbol = symbol
        # MXNet's bind reads it (default on): get_optimized_symbol shows the merged graph
        self._cse = os.environ.get('MXNET_ELIMINATE_COMMON_EXPR', '1') != '0'
        self._ctx = Context(ctx) if ctx is not None else current_context()
        # (the Symbol's public graph view: this module never imports symbol/)
        graph = symbol.graph() if _inferred is None else _inferred[0]
        order, arg_nodes, aux_nodes = graph.order, graph.arguments, graph.aux_states
        self._arg_names = [n.name for n in arg_nodes]
        self._aux_names = [n.name for n in aux_nodes]
        args = _as_list(args, self._arg_names, 'arguments')
        for n, a in zip(self._arg_names, args):
            if not isinstance(a, NDArray):
                raise ArgumentTypeError('bind: argument %r must be an NDArray, got %s'
                                        % (n, type(a).__name__))
        aux = _as_list(aux_states, self._aux_names, 'auxiliary states')
        if args_grad is None:
            grads = [None] * len(args)
            reqs = ['null'] * len(args)
        else:
            grads = _as_list(args_grad, self._arg_names, 'gradient arrays',
                             required=False)
            reqs = _grad_reqs(grad_req, self._arg_names)
            for k, (g, r) in enumerate(zip(grads, reqs)):
                if g is None and r != 'null':
                    reqs[k] = 'null'
        # shapes and dtypes of every entry, checked against the arrays
        def shape_known():
            known = {n: a.shape for n, a in zip(arg_nodes, args)}
            known.update({n: a.shape for n, a in zip(aux_nodes, aux) if a is not None})
            return known

        def type_known():
            known = {n: as_dtype(a.dtype) for n, a in zip(arg_nodes, args)}
            known.update({n: as_dtype(a.dtype) for n, a in zip(aux_nodes, aux)
                          if a is not None})
            return known
        # (simple_bind's inference already asked the rules: _answers keeps what they said)
        answers = _answers or {'shape': None, 'type': None}
        if _inferred is not None:
            shapes = dict(_inferred[1])
            dtypes = dict(_inferred[2]) if _inferred[2] is not None else \
                infer_types(order, type_known(), answers['type'])
        else:
            wiring = Wiring(order)      # (both passes' view of the graph)
            shapes = infer_shapes(order, shape_known(), answers['shape'], wiring)
            dtypes = infer_types(order, type_known(), answers['type'], wiring)
        index = {id(n): k for k, n in enumerate(order)}
        float32 = np.dtype(np.float32)
        for k, n in enumerate(order):     # (index[id(n)] is k)
            op = n.op
            for i in range(1 if op is None else op.output_count()):
                key = (k, i)
                s = shapes.get(key)
                # inputs are concrete arrays, so a 0 an operator computes is a real
                # zero-size dimension (an empty slice), not an unknown one
                if s is None or (op is None and not shape_complete(s)):
                    raise BindError('bind: cannot infer the shape of %s output %d (got %s); '
                                    'give the shapes of all inputs'
                                    % (n.describe(), i, s))
                if dtypes.get(key) is None:
                    dtypes[key] = float32
        xp = self._ctx.xp
        with self._ctx.device_scope():
            for k, (n, a) in enumerate(zip(aux_nodes, aux)):
                if a is None:
                    raise BindError('bind: auxiliary state %r is missing (the symbol needs %s)'
                                    % (n.name, self._aux_names))
            for n, g, r in zip(arg_nodes, grads, reqs):
                if g is None or r == 'null':
                    continue
                want = shapes[(index[id(n)], 0)], dtypes[(index[id(n)], 0)]
                if g.shape != want[0]:
                    raise BindError('bind: gradient array of %r has shape %s but the argument '
                                    'has shape %s' % (n.name, g.shape, want[0]))
                if as_dtype(g.dtype) != want[1]:    # it would be cast (and truncated)
                    raise BindError('bind: gradient array of %r has dtype %s but the argument '
                                    'has dtype %s' % (n.name, as_dtype(g.dtype), want[1]))
            heads = graph.outputs
            self.outputs = [NDArray(xp.zeros(shapes[(index[id(n)], i)],
                                             dtype=dtypes[(index[id(n)], i)]), self._ctx)
                            for n, i in heads]
        # arrays bound from another context stay bound (arg_dict shows them, as in MXNet);
        # the executor runs on copies that are refreshed and written back around each run
        self.arg_arrays = list(args)
        # the user's gradient arrays stay listed even where grad_req is 'null' (MXNet);
        # the plan only gets those it writes
        self.grad_arrays = list(grads)
        self.aux_arrays = list(aux)
        self._dev_args = [self._on_ctx(a) for a in self.arg_arrays]
        self._dev_grads = [None if r == 'null' or g is None else self._on_ctx(g)
                           for g, r in zip(self.grad_arrays, reqs)]
        self._dev_aux = [self._on_ctx(a) for a in self.aux_arrays]
        self._off_ctx = any(d is not None and a is not d for a, d in zip(
            self.arg_arrays + self.grad_arrays + self.aux_arrays,
            self._dev_args + self._dev_grads + self._dev_aux))
        self._grad_req = reqs
        # an executor with gradients to compute keeps what backward needs even after an
        # inference forward: MXNet lets backward follow one (saliency, adversarial inputs)
        self._any_grad = any(r != 'null' for r in reqs)
        # training fusion (graph/passes.py): a CPU plan computing gradients runs BatchNorm
        # and its relu as one operator, unless a monitor wants to see both (the unfused
        # plan is bound then: _unfuse)
        fused = fuse_for_training(order, heads, shapes, dtypes, xp) if self._any_grad \
            else None
        self._unfused = None
        self._fused_names = []
        if fused is None:
            self._plan = Plan(order, arg_nodes, aux_nodes, heads, shapes, dtypes, reqs, xp,
                              self._ctx)
        else:
            f_order, f_shapes, f_dtypes, aliases, self._fused_names = fused
            self._plan = Plan(f_order, arg_nodes, aux_nodes, heads, f_shapes, f_dtypes, reqs,
                              xp, self._ctx, aliases=aliases)
        # the operators' Steps by node: the inference plan (and the unfused one) share
        # those of the nodes the fusion kept (one Step per node and bind)
        states = self._plan.bound
        if fused is not None:
            self._unfused = (order, arg_nodes, aux_nodes, heads, shapes, dtypes, reqs, xp,
                             states)
        # inference passes (graph/passes.py): a rewritten plan for forward(is_train=False)
        self._passes = InferencePasses(order, arg_nodes, aux_nodes, heads, shapes, dtypes, xp,
                                       self._ctx, steps=states)
        self._saved = None
        self._pool = None       # the storage plan's buffers, allocated at the first forward
        self._pool_inference = None     # those of the inference passes' plan
        #: run with the storage plan's buffers (False: every result a new array, freed
        #: after its last use; the tests compare the two)
        self._use_buffers = True
        self._peak = None       # bytes traced during the last run (tracemalloc on)
        self._monitor = None
        self._monitor_all = False
        self._monitor_level = 0         # the plan's monitor code: 0 none, 1 outputs, 2 all
        self._grad_ready = None         # set_grad_ready_callback's callback
        self._ready_fn = None
        self._output_names = symbol.list_outputs()

    def _on_ctx(self, arr):
        """``arr``, or a copy of it on the executor's context when it lives elsewhere.

        MXNet binds arrays of other contexts by copying across devices on every run; so
        does symgraph: see :meth:`_sync`.
        """
        if arr is None or arr.context == self._ctx:
            return arr
        return arr.copyto(self._ctx)

    def _sync(self, src, dst, reqs=None):
        """Copy ``src[k]`` into ``dst[k]`` where they differ (arrays of another context)."""
        for k, (s, d) in enumerate(zip(src, dst)):
            if s is not d and s is not None and d is not None and \
                    (reqs is None or reqs[k] == 'add'):
                d[:] = s

    # ------------------------------------------------------------------ dicts
    @property
    def arg_dict(self):
        return dict(zip(self._arg_names, self.arg_arrays))

    @property
    def grad_dict(self):
        """Every argument's gradient array, None where it has none (as MXNet)."""
        return dict(zip(self._arg_names, self.grad_arrays))

    @property
    def aux_dict(self):
        return dict(zip(self._aux_names, self.aux_arrays))

    @property
    def output_dict(self):
        return dict(zip(self._output_names, self.outputs))

    # ------------------------------------------------------------------ running
    def forward(self, is_train=False, **kwargs):
        """Run forward; keyword arguments are copied into the argument arrays first."""
        for k, v in kwargs.items():
            if k not in self._arg_names:
                raise UnknownNameError('forward: unknown argument %r; arguments are %s'
                                       % (k, self._arg_names))
            dst = self.arg_arrays[self._arg_names.index(k)]
            if tuple(np.shape(v)) != dst.shape:
                raise ShapeError('forward: argument %r has shape %s, the executor was bound '
                                 'with %s' % (k, tuple(np.shape(v)), dst.shape))
            dst[:] = v
        keep = bool(is_train) or self._any_grad
        plan, pool_name = self._plan, '_pool'
        if self._passes.applies(is_train, self._monitor_level, keep):
            rewritten = self._passes.plan()
            if rewritten is not None:   # the inference plan has buffers of its own
                plan, pool_name = rewritten, '_pool_inference'
        # one flag test: while profiling, the plan's instrumented variant (mx.profiler)
        prof = _prof.executor
        fn, fname, line_step = plan.forward_fn(is_train, self._monitor_level, keep,
                                               buffered=self._use_buffers, profile=prof)
        if self._off_ctx:
            self._sync(self.arg_arrays, self._dev_args)
            self._sync(self.aux_arrays, self._dev_aux)
        A = [a._data for a in self._dev_args]
        X = [a._data for a in self._dev_aux]
        O = [o._data for o in self.outputs]
        # the previous forward's arrays for backward go now, not when this forward is done:
        # both sets alive at once would double the peak
        self._saved = None
        with self._ctx.device_scope():
            if getattr(self, pool_name) is None and self._use_buffers:   # once per plan
                setattr(self, pool_name, plan.allocate())
            tracing = tracemalloc.is_tracing()
            if tracing:     # the peak of this run's arrays, for debug_str
                self._trace_base = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
            try:
                if prof:
                    heads, saved = _prof_plans.run(plan, 'forward', fn, (
                        A, X, O, self._monitor_fn if self._monitor is not None else None,
                        getattr(self, pool_name)), self._use_buffers)
                else:
                    heads, saved = fn(A, X, O, self._monitor_fn if self._monitor is not None
                                      else None, getattr(self, pool_name))
            except Exception as e:
                self._saved = None
                lend_scratch(None)      # a step that failed lends nothing on
                err = check_error(e, fname, line_step, 'forward')
                if err is None:
                    raise
                raise err from e
            for out, h, (node, i) in zip(self.outputs, heads, self._plan.heads):
                if h.shape != out.shape or h.dtype != out._data.dtype:
                    raise ShapeError('%s produced output %d with shape %s %s but %s %s was '
                                     'inferred' % (node.describe(), i, h.shape, h.dtype,
                                                   out.shape, out._data.dtype))
                if h is not out._data:    # not computed straight into it (writes_into)
                    out._data[...] = h
        if self._off_ctx:
            self._sync(self._dev_aux, self.aux_arrays)
        self._saved = list(saved) if keep else None
        self._peak = [tracemalloc.get_traced_memory()[1] - self._trace_base, 0] \
            if tracing else None
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Run backward from the last forward, honouring grad_req."""
        if self._saved is None:
            raise UsageError('backward: call forward first (there was none, it failed, the '
                             'executor has no gradients to compute, or a backward since the '
                             'last forward used up the arrays it saved)')
        plan = self._plan
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, (NDArray, np.ndarray)):
            out_grads = [out_grads]
        heads = plan.heads
        og = []
        for k, (node, i) in enumerate(heads):
            g = out_grads[k] if k < len(out_grads) else None
            op = node.op
            if op is not None and (op.is_loss or op.no_grad):
                og.append(None)
                continue
            if g is None:
                if plan.requires[plan.head_entries[k]]:
                    raise ArgumentError(
                        'backward: output %r is not a loss, so it needs a head gradient: pass '
                        'out_grads, or wrap the output in MakeLoss to minimise it'
                        % self._output_names[k])
                og.append(None)
                continue
            arr = _to_xp(g._data if isinstance(g, NDArray) else np.asarray(g), self._ctx)
            if tuple(arr.shape) != self.outputs[k].shape:
                raise ShapeError('backward: head gradient %d has shape %s but output %r has '
                                 'shape %s' % (k, tuple(arr.shape), self._output_names[k],
                                               self.outputs[k].shape))
            with self._ctx.device_scope():
                og.append(arr.astype(self.outputs[k]._data.dtype, copy=False))
        ready = self._ready_fn
        prof = _prof.executor       # (see forward)
        fn, fname, line_step = plan.backward_fn(self._monitor_level,
                                                buffered=self._use_buffers,
                                                ready=ready is not None, profile=prof)
        if self._off_ctx:
            self._sync(self.grad_arrays, self._dev_grads, self._grad_req)
        G = [None if g is None else g._data for g in self._dev_grads]
        # backward uses the forward arrays up (each goes after its last use, and its
        # buffer takes gradients): a second backward needs another forward. MXNet's
        # executor runs it on overwritten buffers and returns wrong gradients.
        saved, self._saved = self._saved, None
        tracing = self._peak is not None and tracemalloc.is_tracing()
        if tracing:
            tracemalloc.reset_peak()
        with self._ctx.device_scope():
            try:
                if prof:
                    _prof_plans.run(plan, 'backward', fn, (
                        saved, og, G, self._monitor_fn if self._monitor is not None else None,
                        self._pool, ready), self._use_buffers)
                elif ready is None:
                    fn(saved, og, G, self._monitor_fn if self._monitor is not None else None,
                       self._pool)
                else:
                    fn(saved, og, G, self._monitor_fn if self._monitor is not None else None,
                       self._pool, ready)
            except Exception as e:
                lend_scratch(None)      # a step that failed lends nothing on
                err = check_error(e, fname, line_step, 'backward')
                if err is None:
                    raise
                raise err from e
        if tracing:
            self._peak[1] = tracemalloc.get_traced_memory()[1] - self._trace_base
        if self._off_ctx:
            # backward may update auxiliary states too (SyncBatchNorm's running statistics)
            self._sync(self._dev_grads, self.grad_arrays)
            self._sync(self._dev_aux, self.aux_arrays)

    def set_grad_ready_callback(self, callback):
        """Call ``callback(index, name, grad)`` during :meth:`backward` as soon as the
        gradient of an argument is final, before backward goes on with the rest of the
        graph: ``index`` is the argument's position in :attr:`arg_arrays`, ``grad`` its
        gradient array in :attr:`grad_arrays`, already holding the value (summed into it
        for ``grad_req='add'``). Every argument with a gradient is reported once per
        backward, in the order of :attr:`grad_ready_order` (the reverse of the forward,
        roughly: the last layer's parameters first).

        This is a generic notification (data-parallel training starts the all-reduce of a
        gradient while the earlier layers still run backward); the executor does nothing
        else with it. Executors without a callback run code with no such calls at all; the
        executor made by :meth:`reshape` has none.

        Parameters
        ----------
        callback : callable(int, str, NDArray) or None
            None removes it.
        """
        if callback is not None and not callable(callback):
            raise ArgumentTypeError('set_grad_ready_callback: callback must be callable, '
                                    'not %s' % type(callback).__name__)
        self._grad_ready = callback
        if callback is None:
            self._ready_fn = None
            return
        names, grads, dev_grads = self._arg_names, self.grad_arrays, self._dev_grads

        def ready(j):
            if grads[j] is not dev_grads[j]:    # bound on another context: copy it back
                grads[j][:] = dev_grads[j]
            callback(j, names[j], grads[j])
        self._ready_fn = ready

    @property
    def grad_ready_order(self):
        """The indices (in :attr:`arg_arrays`) of the arguments whose gradients backward
        computes, in the order a :meth:`set_grad_ready_callback` callback gets them."""
        return self._plan.grad_ready_order()

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, NDArray)`` on the outputs of every operator as it runs,
        in forward and in backward, as MXNet's executor does.

        Forward reports every output, hidden ones included (``bn_mean``); backward reports
        the gradient each step computes for its node's inputs as
        ``<node>_backward_output<i>`` (``<node>_backward_output`` for a single input).
        As in MXNet, a backward node reports one output per argument of its node, those
        whose gradient nobody needs too (zeros here; MXNet's hold whatever their memory
        held). With ``monitor_all`` each operator's inputs are reported too before it runs:
        as ``<node>_<input>`` (``<node>_input<k>`` for the operators MXNet registers without
        input names, Activation and the elementwise unary, scalar and reduction operators
        among them), preceded by the variable's own name where the input is one.
        Executors without a callback run code that has no monitoring in it at all.

        Parameters
        ----------
        callback : callable(str, NDArray) or None
            None removes the monitor.
        monitor_all : bool
        """
        if callback is not None and not callable(callback):
            raise ArgumentTypeError('set_monitor_callback: callback must be callable, not %s'
                                    % type(callback).__name__)
        if callback is not None:
            self._unfuse()
        self._monitor = callback
        self._monitor_all = bool(monitor_all)
        self._monitor_level = 0 if callback is None else 2 if monitor_all else 1
        ctx = self._ctx
        renames, around = _monitor_names(self._plan)
        xp = self._ctx.xp
        shapes, dtypes = self._plan.shapes, self._plan.dtypes

        def report(name, arr):
            callback(name, NDArray(arr, ctx))

        def fn(name, arr):
            extra = around.get(name)
            if extra is None:
                report(renames.get(name, name), arr)
                return
            before, after = extra
            for other, e in before:
                report(other, xp.zeros(shapes[e], dtype=dtypes[e]))
            report(name, arr)
            for other, e in after:
                report(other, xp.zeros(shapes[e], dtype=dtypes[e]))
        self._monitor_fn = fn

    def _unfuse(self):
        """Bind the unfused plan in place of the training fusion's (a monitor reports
        every node's outputs, BatchNorm's before its relu among them): from the next
        forward on, with buffers of its own."""
        if self._unfused is None:
            return
        order, arg_nodes, aux_nodes, heads, shapes, dtypes, reqs, xp, states = self._unfused
        self._plan = Plan(order, arg_nodes, aux_nodes, heads, shapes, dtypes, reqs, xp,
                          self._ctx, steps=states)
        self._unfused = None
        self._fused_names = []
        self._pool = None
        self._saved = None      # the fused plan's forward arrays: backward needs a forward

    # ------------------------------------------------------------------ helpers
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values from dicts of arrays into the bound arguments and aux states."""
        for params, names, arrays, what in ((arg_params, self._arg_names, self.arg_arrays,
                                             'argument'),
                                            (aux_params or {}, self._aux_names,
                                             self.aux_arrays, 'auxiliary state')):
            for k, v in params.items():
                if k in names:
                    dst = arrays[names.index(k)]
                    if tuple(v.shape) != dst.shape:
                        raise ShapeError('copy_params_from: %r has shape %s but the bound %s '
                                         'has %s' % (k, tuple(v.shape), what, dst.shape))
                    dst[:] = v
                elif not allow_extra_params:
                    raise ArgumentError('Find name "%s" that is not in the %ss' % (k, what))

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes. As MXNet's, it shares this executor's
        memory: an array whose shape is unchanged is the same array, one that shrinks (or
        keeps its size) is a view of the start of the old one's memory, one that grows is
        new (``allow_up_sizing``); the outputs are views of this executor's outputs where
        they fit in them, so a forward of either writes the other's outputs too."""
        arg_shapes, _, aux_shapes = self._symbol.infer_shape(**kwargs)
        if arg_shapes is None:
            raise ShapeError('reshape: cannot infer all shapes from %s' % kwargs)
        xp = self._ctx.xp

        def new(old, shape, name):
            if old is None:
                return None
            shape = tuple(shape)
            if old.shape == shape:
                return old
            if name not in kwargs and not partial_shaping:
                raise ShapeError('reshape: %r changes shape from %s to %s; pass '
                                 'partial_shaping=True to allow it' % (name, old.shape, shape))
            shared = _prefix_view(old, shape)
            if shared is not None:
                return shared
            if not allow_up_sizing:
                raise ShapeError('reshape: %r grows from %s to %s; pass allow_up_sizing=True'
                                 % (name, old.shape, shape))
            with self._ctx.device_scope():
                return NDArray(xp.zeros(shape, dtype=old._data.dtype), self._ctx)
        args = [new(a, s, n) for a, s, n in zip(self.arg_arrays, arg_shapes, self._arg_names)]
        grads = [new(g, s, n) for g, s, n in zip(self.grad_arrays, arg_shapes,
                                                 self._arg_names)]
        aux = [new(a, s, n) for a, s, n in zip(self.aux_arrays, aux_shapes, self._aux_names)]
        exe = Executor(self._symbol, self._ctx, args, grads, self._grad_req, aux)
        for out, old in zip(exe.outputs, self.outputs):
            shared = _prefix_view(old, out.shape)
            if shared is not None and shared._data.dtype == out._data.dtype:
                out._data = shared._data
        return exe

    def get_optimized_symbol(self):
        """The graph as MXNet's bind optimises it: common subexpressions merged unless
        ``MXNET_ELIMINATE_COMMON_EXPR=0`` was set at bind (symgraph runs the graph as
        given; the values are the same)."""
        if not self._cse:
            return self._symbol
        return type(self._symbol)(eliminate_common_expr(self._symbol.graph().outputs))

    def debug_str(self):
        """The plan: every step with its shapes and where each output lies in the storage
        run (a buffer at its offset in the arena, or an array of its own), the run's planned
        peak vs naive bytes (:class:`~symgraph.graph.storage.Storage`), the buffers the
        executor allocated (measured from the arrays) and the peak bytes of its arrays in
        the last forward and backward, measured when ``tracemalloc`` was tracing them (the
        run resets tracemalloc's peak)."""
        plan = self._plan
        st = plan.storage()
        lines = ['Symbol outputs: %s' % ', '.join(self._output_names)]
        for k, n in enumerate(plan.order):
            if n.op is None:
                e = plan._e(n, 0)
                lines.append('Variable:%s %s %s' % (n.name, plan.shapes[e], plan.dtypes[e]))
                continue
            lines.append('--------------------')
            lines.append('Op:%s, Name=%s  (created at %s)' % (n.op.name, n.name, n.location))
            for j, e in enumerate(plan.in_entries(n)):
                src, i = plan.entry_info[e]
                lines.append('\targ[%d]=%s %s' % (j, src.output_names()[i], plan.shapes[e]))
            for e in plan.out_entries(n):
                run = 'buffer @%d' % st.offset[st.slot[e]] if e in st.slot else 'own array'
                lines.append('\tout %s %s %s (%s)'
                             % (plan.entry_info[e][0].output_names()[plan.entry_info[e][1]],
                                plan.shapes[e], plan.dtypes[e], run))
        lines.append('Backward steps: %d (gradients only where needed)' % len(plan.bwd_steps))
        lines.append('Planned peak %d MB (the arena and the arrays alive at the fullest step; '
                     'naive %d MB: every array in storage of its own)'
                     % (st.peak_bytes >> 20, st.naive_bytes >> 20))
        lines.append('planned_bytes=%d naive_bytes=%d' % (st.peak_bytes, st.naive_bytes))
        # MXNet's own line (programs and MXNet's test_symbol.py parse it): the planned peak
        lines.append('Total %d MB allocated' % (st.peak_bytes >> 20))
        allocated = None if self._pool is None else sum(
            {id(b): b.nbytes for b in (v.base if v.base is not None else v
                                       for v in self._pool)}.values())
        # the buffers plus the peak of the arrays the run made besides them
        peak = None if self._peak is None else (allocated or 0) + max(self._peak)
        lines.append('Storage run: one arena of %d bytes planned for %d entries (the others '
                     'own their arrays, freed after their last use)'
                     % (st.planned_bytes, len(st.keys)))
        lines.append('buffer_bytes=%d allocated_bytes=%s measured_peak_bytes=%s'
                     % (st.planned_bytes, 'none' if allocated is None else allocated,
                        'untraced' if peak is None else peak))
        last = [k for k, lay in zip(st.keys, st.layouts) if lay == 'channels_last']
        lines.append('Training layouts (SYMGRAPH_TRAINING_LAYOUT): %d buffer(s) channels last '
                     '(%d activations, %d gradients)'
                     % (len(last), sum(not isinstance(k, tuple) for k in last),
                        sum(isinstance(k, tuple) for k in last)))
        lines.append('Training fusion (%s): %d fused node(s)%s'
                     % (TRAINING_FUSION_ENV, len(self._fused_names),
                        ' (%s)' % ', '.join(self._fused_names) if self._fused_names else ''))
        lines += self._passes.describe()
        return '\n'.join(lines)


def _monitor_names(plan):
    """What the monitor callback adds to the names and arrays the plan's code reports, to
    report what MXNet's monitor does: ``(renames, around)``.

    ``renames`` maps ``<node>_<argument>`` to ``<node>_input<k>`` for the operators in
    :data:`UNNAMED_INPUTS`. ``around`` maps a reported ``<node>_backward_output<j>`` to
    the outputs of that backward node the plan does not compute (arguments whose
    gradient nobody needs: a data input, a label), to report before and after it in
    MXNet's order, as ``([(name, entry)], [(name, entry)])``.
    """
    renames, around = {}, {}
    for n in plan.steps:
        if n.op.name in UNNAMED_INPUTS:
            for k, a in enumerate(n.op.list_arguments()):
                renames['%s_%s' % (n.name, a)] = '%s_input%d' % (n.name, k)
    for n in plan.bwd_steps:
        n_args = len(n.op.list_arguments())
        ins = plan.in_entries(n)[:n_args]
        needed = [j for j, e in enumerate(ins) if plan.requires[e]]
        if not needed or len(needed) == n_args:
            continue
        names = ['%s_backward_output%s' % (n.name, j if n_args > 1 else '')
                 for j in range(n_args)]
        prev = -1
        for k, j in enumerate(needed):
            before = [(names[i], ins[i]) for i in range(prev + 1, j)]
            after = [(names[i], ins[i]) for i in range(j + 1, n_args)] \
                if k == len(needed) - 1 else []
            around[names[j]] = (before, after)
            prev = j
    return renames, around


def _group_context(node, group2ctx, ctx):
    """The context ``group2ctx`` gives the ctx_group of Variable ``node`` (its
    ``__ctx_group__`` attribute, set by ``AttrScope(ctx_group=...)``), else ``ctx``."""
    group = node.attrs.get('__ctx_group__')
    if not group2ctx or group is None or group not in group2ctx:
        return ctx
    where = group2ctx[group]
    if not isinstance(where, Context):
        raise ArgumentTypeError('simple_bind: group2ctx[%r] must be a Context, not %s'
                                % (group, type(where).__name__))
    return where


def simple_bind(symbol, ctx, grad_req='write', type_dict=None, group2ctx=None,
                shared_exec=None, shapes=None):
    """Allocate zeroed arrays from the input shapes and bind them.

    One topological sort, one shape pass and one type pass for the whole bind: the
    executor takes the graph and the inferred shapes and dtypes from here instead of
    sorting and inferring again (only a type pass that left an input unknown, which the
    allocation then makes float32, is redone from the allocated arrays).
    """
    ctx = Context(ctx) if ctx is not None else current_context()
    shapes = dict(shapes or {})
    graph = symbol.graph()              # the bind's one topological sort
    order, arg_nodes, aux_nodes = graph.order, graph.arguments, graph.aux_states
    names = [n.name for n in arg_nodes]
    known = set(names) | {n.name for n in aux_nodes}
    unknown = sorted(k for k in shapes if k not in known)
    if unknown:     # MXNet ignores them silently (a label given to a symbol without one)
        warnings.warn('simple_bind: %s are not inputs of the symbol (%s); ignored'
                      % (unknown, names), stacklevel=3)
        shapes = {k: v for k, v in shapes.items() if k in known}
    # one answer per rule and question for the whole bind, as MXNet asks a CustomOpProp once
    answers = {'shape': {}, 'type': {}}
    wiring = Wiring(order)              # (both passes' view of the graph)
    index = wiring.index
    shape_vals = infer_shapes(order, symbol.input_values('shape', shapes, graph),
                              answers['shape'], wiring)
    arg_shapes = [shape_vals.get((index[id(n)], 0)) for n in arg_nodes]
    aux_shapes = [shape_vals.get((index[id(n)], 0)) for n in aux_nodes]
    if not all(shape_complete(s) for s in arg_shapes + aux_shapes) or \
            any(shape_vals.get((index[id(n)], i)) is None for n, i in graph.outputs):
        warn_unknown_shapes(names, arg_shapes, 3)       # as infer_shape warns
        unknown = [n for n, s in zip(names, arg_shapes) if s is None or not shape_complete(s)]
        raise BindError('simple_bind: cannot infer the shapes of %s from %s; give them as '
                        'keyword arguments' % (unknown, shapes))
    if type_dict is None:
        # MXNet's simple_bind: without a type_dict every argument that has no __dtype__
        # attribute is float32 (so a CustomOpProp's infer_type sees float32, not None)
        types = {n.name: np.float32 for n in arg_nodes if '__dtype__' not in n.attrs}
    else:
        types = dict(type_dict)
    type_vals = infer_types(order, symbol.input_values('type', types, graph), answers['type'],
                            wiring)
    arg_types = [type_vals.get((index[id(n)], 0)) for n in arg_nodes]
    aux_types = [type_vals.get((index[id(n)], 0)) for n in aux_nodes]
    outs_typed = all(type_vals.get((index[id(n)], i)) is not None for n, i in graph.outputs)
    if types and not (outs_typed and all(t is not None for t in arg_types + aux_types)):
        warn_unknown_types(names, arg_types, 3)         # as infer_type warns
    reqs = _grad_reqs(grad_req, names)
    # group2ctx: an input of a ctx_group lives on that group's context, as MXNet places it
    # (its gradient too); the executor still runs every operator on ``ctx`` (copying such
    # arrays in and out around a run, as for any array bound from another context)
    arg_ctx = [_group_context(n, group2ctx, ctx) for n in arg_nodes]
    aux_ctx = [_group_context(n, group2ctx, ctx) for n in aux_nodes]

    xp = ctx.xp

    def alloc(shape, t, where):
        dtype = np.float32 if t is None else t
        if where is ctx:                    # (inside the device scope entered below)
            return NDArray(xp.zeros(shape, dtype=dtype), ctx)
        with where.device_scope():
            return NDArray(where.xp.zeros(shape, dtype=dtype), where)
    with ctx.device_scope():
        args = [alloc(s, t, c) for s, t, c in zip(arg_shapes, arg_types, arg_ctx)]
        grads = [None if r == 'null' else alloc(s, t, c)
                 for s, t, r, c in zip(arg_shapes, arg_types, reqs, arg_ctx)]
        aux = [alloc(s, t, c) for s, t, c in zip(aux_shapes, aux_types, aux_ctx)]
    # types left unknown (float32 arrays now) are inferred again by the executor
    complete = all(t is not None for t in arg_types + aux_types)
    return Executor(symbol, ctx, args, grads, reqs, aux, group2ctx, _answers=answers,
                    _inferred=(graph, shape_vals, type_vals if complete else None))
