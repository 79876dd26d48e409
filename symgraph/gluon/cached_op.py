"""A hybridized block's graph run through the executor (MXNet's ``CachedOp``).

One :class:`CachedOp` holds a traced Symbol and the block's inputs in the graph's input
order: data inputs (by position) and Parameters. Each call runs an :class:`Executor`
bound once per input signature (context, input shapes and dtypes, which gradients are
wanted) with the Parameters' own arrays as its arguments and auxiliary states, so that
nothing is copied in and BatchNorm's running statistics update the Parameters in place.
The data inputs are bound through holder arrays whose storage is pointed at the caller's
arrays at each call (the executor reads them at every forward), so the inputs are not
copied either.

Under ``autograd.record()`` a call is one node on the tape (``autograd.record_op``) whose
backward is the executor's backward. An executor's forward keeps the arrays its backward
needs until that backward has run: a block called again before it (two calls under one
``record()``) gets a second executor for the same signature, as MXNet's CachedOp takes a
second state.
"""
from collections import OrderedDict
import warnings
import weakref

from ..base import UsageError
from .. import autograd
from ..executor import Executor
from ..ndarray import NDArray, tape

__all__ = ['CachedOp']

#: input signatures kept per CachedOp (the least recently used goes beyond that)
_MAX_SIGNATURES = 32


class _Bound:
    """One bound executor and what a call needs to reuse it."""

    __slots__ = ('exe', 'holders', 'params', 'busy', 'grad_pos', 'grads')

    def __init__(self, exe, holders, params, grad_pos):
        self.exe = exe
        #: (argument position, data index) of the holders of the data inputs
        self.holders = holders
        #: the Parameter arrays bound (arguments then auxiliary states): a call whose
        #: Parameters hold other arrays now (cast, reset_ctx, load) binds anew
        self.params = params
        #: a weak reference to the backward of the recorded call that still needs this
        #: executor's saved arrays (dead once the tape dropped it), else None
        self.busy = None
        #: per recorded input (data inputs, then Parameters with gradients): the argument
        #: position whose gradient array holds its gradient, or None
        self.grad_pos = grad_pos

    def free(self):
        return self.busy is None or self.busy() is None


class CachedOp:
    """Runs ``sym`` for a hybridized block.

    Parameters
    ----------
    sym : Symbol
        The traced graph.
    op_args : list of (bool, int or Parameter)
        Per input of ``sym.list_inputs()``: ``(True, k)`` for the block's k-th data input,
        ``(False, parameter)`` for a Parameter.
    flags : dict
        ``hybridize``'s flags (``static_alloc``, ``static_shape``); symgraph keeps each
        signature's executor in every mode, so they change nothing.
    name : str
        Names the tape node (in autograd's errors).
    """

    def __init__(self, sym, op_args, flags=None, name='hybridblock'):
        self._sym = sym
        self._name = name
        self._flags = dict(flags or {})
        by_name = dict(zip(sym.list_inputs(), op_args))
        self._args = [by_name[n] for n in sym.list_arguments()]
        self._aux = [by_name[n] for n in sym.list_auxiliary_states()]
        for is_data, _ in self._aux:
            if is_data:
                raise UsageError('%s: a data input of a hybridized block is an auxiliary state '
                                 'of its graph (an operator updates it in place); pass it as '
                                 'a Parameter' % name)
        #: the Parameters bound as arguments (position, Parameter), then auxiliary states
        self._arg_params = [(k, p) for k, (is_data, p) in enumerate(self._args)
                            if not is_data]
        self._aux_params = [p for _, p in self._aux]
        self._data_pos = [(k, i) for k, (is_data, i) in enumerate(self._args) if is_data]
        self._cache = OrderedDict()     # signature -> [_Bound, ...]
        self._hook = None
        self.num_binds = 0              # how many executors were bound (tests, debugging)

    def register_op_hook(self, callback, monitor_all=False):
        """Call ``callback(name, op_name, array)`` with the operators' outputs (and inputs)
        of every run; bound executors get it too."""
        ops, variables = {}, set()
        for node in self._sym.graph(check_names=False).order:
            if node.op is not None:
                ops[node.name] = node.op.name
            else:
                variables.add(node.name)

        def monitor(name, arr):
            if name in variables:
                return      # (the executor names a variable input first; MXNet's hook not)
            node = max((n for n in ops if name.startswith(n)), key=len, default=None)
            callback(name, ops.get(node, ''), arr)
        self._hook = (monitor, monitor_all)
        for bounds in self._cache.values():
            for b in bounds:
                b.exe.set_monitor_callback(monitor, monitor_all)

    def _bind(self, ctx, data, params, aux, data_grad, param_grad):
        """A new executor for this signature."""
        xp = ctx.xp
        args, grads, reqs, holders = [None] * len(self._args), [], [], []
        for k, i in self._data_pos:
            # a holder of the input's shape and dtype: its storage is the caller's array
            args[k] = NDArray(data[i]._data, ctx)
            holders.append((k, i))
        for (k, _), arr in zip(self._arg_params, params):
            args[k] = arr
        wanted = dict(zip([k for k, _ in self._arg_params], param_grad))
        wanted.update((k, data_grad[i]) for k, i in self._data_pos)
        grad_of = {}
        with ctx.device_scope():
            for k, arr in enumerate(args):
                if wanted[k]:
                    grads.append(NDArray(xp.zeros(arr.shape, dtype=arr._data.dtype), ctx))
                    reqs.append('write')
                    grad_of[k] = True
                else:
                    grads.append(None)
                    reqs.append('null')
        any_grad = bool(grad_of)
        exe = Executor(self._sym, ctx, args, grads if any_grad else None,
                       reqs if any_grad else 'null', aux)
        if self._hook is not None:
            exe.set_monitor_callback(*self._hook)
        grad_pos = self._data_grad_positions(len(data), grad_of)
        grad_pos += [k if k in grad_of else None for k, _ in self._arg_params]
        self.num_binds += 1
        return _Bound(exe, holders, list(params) + list(aux), grad_pos)

    def _data_grad_positions(self, n_data, grad_of):
        """Per data input, the argument position whose gradient is its gradient."""
        pos = [None] * n_data
        for k, i in self._data_pos:
            if k in grad_of and pos[i] is None:
                pos[i] = k
        return pos

    def __call__(self, data):
        """Run the graph on the NDArrays ``data``; returns the list of outputs."""
        ctx = data[0].context
        params = [p.data(ctx) for _, p in self._arg_params]
        aux = [p.data(ctx) for p in self._aux_params]
        recording = autograd.is_recording()
        if recording:
            data_grad = tuple(tape.needs_grad(d._ag) for d in data)
            param_grad = tuple(p.grad_req != 'null' for _, p in self._arg_params)
            if not any(data_grad) and not any(param_grad):
                recording = False
        if not recording:
            data_grad = (False,) * len(data)
            param_grad = (False,) * len(params)
        key = (ctx, tuple((d._data.shape, d._data.dtype) for d in data), data_grad,
               param_grad)
        bound = self._lookup(key, params + aux)
        if bound is None:
            bound = self._bind(ctx, data, params, aux, data_grad, param_grad)
            self._cache.setdefault(key, []).append(bound)
        exe = bound.exe
        for k, i in bound.holders:
            d = data[i]._data
            if not d.flags.c_contiguous:    # a strided view: the kernels want rows in order
                with ctx.device_scope():
                    d = ctx.xp.ascontiguousarray(d)
            exe.arg_arrays[k]._data = d
        exe.forward(is_train=autograd.is_training())
        xp = ctx.xp
        outs = []
        with ctx.device_scope():
            for o in exe.outputs:
                outs.append(NDArray(o._data, ctx))
                # the next run writes into new memory: the caller keeps these
                o._data = xp.empty(o._data.shape, dtype=o._data.dtype)
        if recording:
            self._record(bound, data, params, outs, ctx)
        return outs

    def _lookup(self, key, arrays):
        """A free bound executor of this signature on these Parameter arrays, or None."""
        bounds = self._cache.get(key)
        if bounds is None:
            if len(self._cache) >= _MAX_SIGNATURES:
                self._cache.popitem(last=False)
            return None
        self._cache.move_to_end(key)
        if any(a is not b for a, b in zip(arrays, bounds[0].params)):
            # the Parameters hold new arrays (cast, reset_ctx, load_parameters): rebind
            del self._cache[key]
            return None
        for b in bounds:
            if b.free():
                b.busy = None
                return b
        return None

    def _record(self, bound, data, params, outs, ctx):
        """Put this call on the tape; its backward is the executor's."""
        exe = bound.exe
        inputs = list(data) + [arr for (_, p), arr in zip(self._arg_params, params)]
        state = {'saved': exe._saved}
        grad_pos = bound.grad_pos
        name = self._name
        # shapes, not the outputs: they hold the tape node that holds this function (a
        # cycle would keep the executor busy until the garbage collector ran)
        out_meta = [(o._data.shape, o._data.dtype) for o in outs]
        # an output listed twice (an RNN cell's `output, [output]`) is one entry of the
        # graph: MXNet's CachedOp sums its head gradients, where the executor (MXNet's too)
        # takes the last one's; so the sum goes to the last listing
        names = self._sym.list_outputs()
        last = {n: k for k, n in enumerate(names)}
        repeats = [(k, last[n]) for k, n in enumerate(names) if last[n] != k]

        def backward_fn(out_grads):
            saved = state['saved']
            if saved is None:
                raise UsageError(
                    'backward through the hybridized block %s a second time for one forward '
                    '(retain_graph=True): its executor has used the arrays it saved; run the '
                    'block again under autograd.record(), or do not hybridize it' % name)
            state['saved'] = None
            exe._saved = saved
            og = []
            with ctx.device_scope():
                for g, (shape, dtype) in zip(out_grads, out_meta):
                    og.append(g if g is not None else
                              NDArray(ctx.xp.zeros(shape, dtype=dtype), ctx))
                for k, j in repeats:
                    og[j] = og[j] + og[k]
            if repeats:
                with warnings.catch_warnings():
                    warnings.filterwarnings('ignore', 'output .* is listed more than once')
                    exe.backward(og)
            else:
                exe.backward(og)
            bound.busy = None
            res = []
            xp = ctx.xp
            with ctx.device_scope():
                for pos in grad_pos:
                    if pos is None:
                        res.append(None)
                        continue
                    g = exe.grad_arrays[pos]
                    res.append(NDArray(g._data, ctx))
                    # the next backward writes (req 'write') into new memory: the tape and
                    # autograd.grad's caller keep these
                    g._data = xp.empty(g._data.shape, dtype=g._data.dtype)
            return res
        if autograd.record_op(name, inputs, outs, backward_fn):
            bound.busy = weakref.ref(backward_fn)
        else:
            exe._saved = None
