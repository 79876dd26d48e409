"""A hybridized block's graph run through the executor (MXNet's ``CachedOp``).

One :class:`CachedOp` holds a traced Symbol and the block's inputs in the graph's input
order: data inputs (by position) and Parameters. Each call runs an :class:`Executor`
bound once per input signature (context, input shapes and dtypes, which gradients are
wanted) with the Parameters' own arrays as its arguments and auxiliary states, so that
nothing is copied in and BatchNorm's running statistics update the Parameters in place.
The data inputs are bound through holder arrays whose storage is pointed at the caller's
arrays at each call (the executor reads them at every forward), so the inputs are not
copied either.

Under ``autograd.record()`` a call is one node on the tape whose backward is the
executor's backward; the node keeps the graph (``tape.GraphCall``), which
``autograd.get_symbol`` inlines and ``autograd.grad(create_graph=True)`` replays operator by
operator (autograd_rules.py). In a plain ``backward`` the executor's gradient arrays are
handed to the tape, which copies them into the Parameters' gradients, and kept: the
executor writes the same arrays at every step. An executor's forward keeps the arrays its backward
needs until that backward has run: a block called again before it (two calls under one
``record()``) gets a second executor for the same signature, as MXNet's CachedOp takes a
second state.
"""
from collections import OrderedDict
import warnings
import weakref

from ..base import UsageError
from ..executor import Executor
from ..ndarray import NDArray, tape

__all__ = ['CachedOp']

#: input signatures kept per CachedOp (the least recently used goes beyond that)
_MAX_SIGNATURES = 32


class _Bound:
    """One bound executor and what a call needs to reuse it."""

    __slots__ = ('exe', 'holders', 'params', 'busy', 'grad_pos', 'own')

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
        #: per argument, the gradient array the executor was bound with (None: no
        #: gradient); its gradient holder points there, at a variable's own gradient array
        #: (written directly) or at a new array handed out
        self.own = [None if g is None else g._data for g in exe.grad_arrays]

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
        #: every Parameter bound, and what _param_arrays last answered
        self._all_params = [p for _, p in self._arg_params] + self._aux_params
        self._fast = None
        self._aux_names = sym.list_auxiliary_states()
        self._names = {}                # number of data inputs -> _input_names
        # an output listed twice (an RNN cell's `output, [output]`) is one entry of the
        # graph: MXNet's CachedOp sums its head gradients, where the executor (MXNet's too)
        # takes the last one's; so the sum goes to the last listing
        names = sym.list_outputs()
        last = {n: k for k, n in enumerate(names)}
        self._repeats = [(k, last[n]) for k, n in enumerate(names) if last[n] != k]
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

    def _param_arrays(self, ctx):
        """The Parameters' arrays on ``ctx`` (arguments, auxiliary states) and which
        arguments want a gradient. A Parameter replaces its list of arrays (and of
        gradients) whenever one changes (initialize, cast, reset_ctx, grad_req), so a call
        whose Parameters hold the lists of the previous call reuses its answer."""
        fast = self._fast
        if fast is not None and (fast[0] is ctx or fast[0] == ctx):
            for p, d, g in zip(self._all_params, fast[1], fast[2]):
                if p._data is not d or p._grad is not g:
                    break
            else:
                return fast[3], fast[4], fast[5]
        params = [p.data(ctx) for _, p in self._arg_params]
        aux = [p.data(ctx) for p in self._aux_params]
        param_grad = tuple(p.grad_req != 'null' for _, p in self._arg_params)
        self._fast = (ctx, [p._data for p in self._all_params],
                      [p._grad for p in self._all_params], params, aux, param_grad)
        return params, aux, param_grad

    def __call__(self, data):
        """Run the graph on the NDArrays ``data``; returns the list of outputs."""
        ctx = data[0]._ctx
        params, aux, param_grad = self._param_arrays(ctx)
        recording = tape.STATE.recording
        if recording:
            data_grad = tuple([tape.needs_grad(d._ag) for d in data])
            if not any(data_grad) and not any(param_grad):
                recording = False
        if not recording:
            data_grad = (False,) * len(data)
            param_grad = (False,) * len(params)
        key = (ctx, tuple([(d._data.shape, d._data.dtype) for d in data]), data_grad,
               param_grad)
        bound = self._lookup(key, params, aux)
        if bound is None:
            bound = self._bind(ctx, data, params, aux, data_grad, param_grad)
            self._cache.setdefault(key, []).append(bound)
        exe = bound.exe
        arg_arrays = exe.arg_arrays
        for k, i in bound.holders:
            d = data[i]._data
            if not d.flags.c_contiguous:    # a strided view: the kernels want rows in order
                with ctx.device_scope():
                    d = ctx.xp.ascontiguousarray(d)
            arg_arrays[k]._data = d
        training = tape.STATE.training
        exe.forward(is_train=training)
        xp = ctx.xp
        outs = []
        with ctx.device_scope():
            for o in exe.outputs:
                outs.append(NDArray(o._data, ctx))
                # the next run writes into new memory: the caller keeps these
                o._data = xp.empty(o._data.shape, dtype=o._data.dtype)
        if recording:
            self._record(bound, data, params, aux, outs, ctx, training)
        return outs

    def _lookup(self, key, params, aux):
        """A free bound executor of this signature on these Parameter arrays, or None."""
        bounds = self._cache.get(key)
        if bounds is None:
            if len(self._cache) >= _MAX_SIGNATURES:
                self._cache.popitem(last=False)
            return None
        self._cache.move_to_end(key)
        bound_params = bounds[0].params
        for a, b in zip(params + aux, bound_params):
            if a is not b:
                # the Parameters hold new arrays (cast, reset_ctx, load_parameters): rebind
                del self._cache[key]
                return None
        for b in bounds:
            if b.free():
                b.busy = None
                return b
        return None

    def _input_names(self, n_data):
        """Per recorded input (data inputs, then Parameters), the graph's input name."""
        names = self._names.get(n_data)
        if names is None:
            arg_names = self._sym.list_arguments()
            names = [None] * n_data
            for k, i in self._data_pos:
                names[i] = arg_names[k]
            names += [arg_names[k] for k, _ in self._arg_params]
            self._names[n_data] = names
        return names

    def _record(self, bound, data, params, aux, outs, ctx, training):
        """Put this call on the tape: one node whose backward is the executor's."""
        exe = bound.exe
        inputs = list(data) + params
        entries = [e if e is not None and (e.node is not None or e.req != 'null') else None
                   for e in [a._ag for a in inputs]]
        if not any(entries):
            exe._saved = None
            return
        state = {'saved': exe._saved}
        grad_pos = bound.grad_pos
        name = self._name
        # shapes, not the outputs: they hold the tape node that holds this function (a
        # cycle would keep the executor busy until the garbage collector ran)
        out_meta = [(o._data.shape, o._data.dtype) for o in outs]
        repeats = self._repeats

        def backward_fn(out_grads):
            saved = state['saved']
            if saved is None:
                raise UsageError(
                    'backward through the hybridized block %s a second time for one forward '
                    '(retain_graph=True): its executor has used the arrays it saved; run the '
                    'block again under autograd.record(), or do not hybridize it' % name)
            xp = ctx.xp
            readers = tape.STATE.lending
            grad_arrays, own = exe.grad_arrays, bound.own
            res, direct = [None] * len(grad_pos), []
            for k, pos in enumerate(grad_pos):
                if pos is None:
                    continue
                mine = own[pos]
                if readers is None:
                    # autograd.grad's caller keeps these: new arrays
                    with ctx.device_scope():
                        res[k] = grad_arrays[pos]._data = xp.empty(mine.shape, mine.dtype)
                    continue
                # a plain backward: a variable only this call reads, with grad_req 'write',
                # gets its gradient written straight into its grad array (the sweep would
                # only copy it there; see tape.STATE.lending); the others get the
                # executor's own arrays, which the sweep sums or copies before it returns.
                # Either way the executor writes the same arrays at every step, whose
                # addresses the CPU backend's recorded calls hold
                e = entries[k]
                if readers and e is not None and e.node is None and e.req == 'write' \
                        and readers[e] == 1:
                    dst = e.grad._data
                    if dst.shape == mine.shape and dst.dtype == mine.dtype:
                        grad_arrays[pos]._data = dst
                        direct.append(e)
                        continue
                res[k] = grad_arrays[pos]._data = mine
            state['saved'] = None
            exe._saved = saved
            og = list(out_grads)
            with ctx.device_scope():
                for k, g in enumerate(og):
                    if g is None:
                        g = xp.zeros(out_meta[k][0], dtype=out_meta[k][1])
                    og[k] = NDArray(g, ctx)
                for k, j in repeats:
                    og[j] = NDArray(og[j]._data + og[k]._data, ctx)
                if repeats:
                    with warnings.catch_warnings():
                        warnings.filterwarnings('ignore', 'output .* is listed more than once')
                        exe.backward(og)
                else:
                    exe.backward(og)
            bound.busy = None
            for e in direct:
                e.fresh = True
            return res
        names = self._input_names(len(data))
        graph = tape.GraphCall(self._sym, names, list(zip(self._aux_names, aux)), training)
        # the executor's backward reads the inputs and Parameters as they are (not copies):
        # one written in place before it is refused, naming it
        checks = [(a, a._ver, ('input', n)) for a, n in zip(inputs, names) if n is not None]
        node = tape.Node(name, entries, out_meta, backward_fn, checks, ctx, in_arrays=inputs,
                         graph=graph)
        Entry = tape.Entry
        for k, o in enumerate(outs):
            o._ag = Entry(node, k)
        bound.busy = weakref.ref(backward_fn)
