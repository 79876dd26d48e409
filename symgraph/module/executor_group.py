"""The executors of a Module: one per device, the batch split among them (MXNet's
``mxnet.module.executor_group``).

Each device gets its own :class:`~symgraph.executor.Executor` bound to its slice of the
batch (``work_load_list`` decides the sizes, as MXNet's ``_split_input_slice``); the
parameters are replicated on every device and :class:`~symgraph.module.Module` sums the
gradients through the kvstore.  With several devices the executors run in one thread each,
so that operators meeting across devices (``contrib.SyncBatchNorm``) see all of them
(``symgraph.dist.workers.run_on_devices``).
"""
import logging
from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from ..base import ArgumentError, ArgumentTypeError, NotSupportedError, ShapeError, UsageError, \
    as_dtype
from ..context import Context, cpu
from ..opdef import using_random_state
from ..io import DataDesc
from ..dist.workers import run_on_devices

__all__ = ['DataParallelExecutorGroup']

#: MXNet's type codes of ``__dtype__`` attributes
_DTYPE_MX_TO_NP = {-1: None, 0: np.float32, 1: np.float64, 2: np.float16, 3: np.uint8,
                   4: np.int32, 5: np.int8, 6: np.int64, 7: np.bool_, 8: np.int16,
                   9: np.uint16, 10: np.uint32, 11: np.uint64}


def _split_input_slice(batch_size, work_load_list):
    """Slices of the batch for each device, as MXNet's (``round`` of the shares, the
    remainder to the last device).

    >>> _split_input_slice(16, [1, 2, 1])
    [slice(0, 4, None), slice(4, 12, None), slice(12, 16, None)]
    """
    total_work_load = sum(work_load_list)
    batch_num_list = [round(work_load * batch_size / total_work_load)
                      for work_load in work_load_list]
    batch_num_sum = sum(batch_num_list)
    if batch_num_sum < batch_size:
        batch_num_list[-1] += batch_size - batch_num_sum
    slices = []
    end = 0
    for batch_num in batch_num_list:
        begin = int(min((end, batch_size)))
        end = int(min((begin + batch_num, batch_size)))
        if begin >= end:
            raise ArgumentError('Too many slices. Some splits are empty: a batch of %d split '
                                'by work_load_list %s' % (batch_size, list(work_load_list)))
        slices.append(slice(begin, end))
    return slices


def _copy(src, dst, what):
    """``dst[...] = src`` for NDArrays (or NumPy arrays as ``src``), checking the shape."""
    data = src._data if isinstance(src, NDArray) else src
    if tuple(data.shape) != dst.shape:
        raise ShapeError('%s has shape %s but the module is bound to %s'
                         % (what, tuple(data.shape), dst.shape))
    d = dst._data
    if type(data) is np.ndarray and type(d) is np.ndarray:
        np.copyto(d, data, casting='unsafe')        # the hot path: one copy, no checks
    elif isinstance(src, NDArray):
        src.copyto(dst)
    else:
        dst[:] = data


def _load_general(data, targets, major_axis, names):
    """Copy each array of ``data`` into its per-device targets, sliced along the batch
    axis (MXNet's ``_load_general``)."""
    for d_src, d_targets, axis, name in zip(data, targets, major_axis, names):
        if isinstance(d_targets, NDArray):
            _copy(d_src, d_targets, 'input %r' % name)
        elif isinstance(d_src, (list, tuple)):
            for src, dst in zip(d_src, d_targets):
                _copy(src, dst, 'input %r' % name)
        else:
            shape = tuple(d_src.shape)
            full = d_targets[-1][0].stop        # the batch the devices share
            if axis >= 0 and (len(shape) <= axis or shape[axis] != full):
                raise ShapeError('input %r has shape %s but the module is bound to a batch '
                                 'of %d along axis %d' % (name, shape, full, axis))
            for slice_idx, d_dst in d_targets:
                if axis >= 0 and (slice_idx.start != 0 or slice_idx.stop != full):
                    index = (slice(None),) * axis + (slice_idx,)
                    if isinstance(d_src, NDArray):
                        src = NDArray(d_src._data[index], d_src.context)
                    else:
                        src = np.asarray(d_src)[index]
                    _copy(src, d_dst, 'input %r (slice %d:%d)'
                          % (name, slice_idx.start, slice_idx.stop))
                else:
                    _copy(d_src, d_dst, 'input %r' % name)


def _same_values(a, b):
    """Whether two arrays (of any devices) hold the same values."""
    return np.array_equal(a.asnumpy(), b.asnumpy())


def _batch_part(batch, part, n_targets):
    """``batch.data`` or ``batch.label``; a list of batches (pre-sliced per device) gives
    one list per input."""
    if isinstance(batch, list):
        return [[getattr(b, part)[i] for b in batch] for i in range(n_targets)]
    return getattr(batch, part)


def _merge_multi_context(outputs, major_axis):
    """One array per output: the devices' parts concatenated along the batch axis."""
    rets = []
    for tensors, axis in zip(outputs, major_axis):
        if axis >= 0 and len(tensors) > 1:
            rets.append(nd.concat(*[t.as_in_context(tensors[0].context) for t in tensors],
                                  dim=axis))
        else:
            # one device, or no batch axis: every device holds the same values
            rets.append(tensors[0])
    return rets


def _prepare_group2ctxs(group2ctxs, ctx_len):
    """One ``group2ctx`` dict (or None) per device, as MXNet's."""
    if group2ctxs is None:
        return [None] * ctx_len
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != ctx_len:
            raise ArgumentError('group2ctxs has %d entries for %d contexts'
                                % (len(group2ctxs), ctx_len))
        return group2ctxs
    if isinstance(group2ctxs, dict):
        ret = [{} for _ in range(ctx_len)]
        for k, v in group2ctxs.items():
            if isinstance(v, Context):
                ctxs = [v] * ctx_len
            elif len(v) == 1:
                ctxs = list(v) * ctx_len
            elif len(v) == ctx_len:
                ctxs = v
            else:
                raise ArgumentError('group2ctxs[%r] has %d contexts; give 1 or %d'
                                    % (k, len(v), ctx_len))
            for i in range(ctx_len):
                ret[i][k] = ctxs[i]
        return ret
    raise ArgumentTypeError('group2ctxs should be a dict of str to context (or list of contexts), '
                            'or a list of such dicts, not %s' % type(group2ctxs).__name__)


def _run_each(fns):
    """Run every function; with several, one thread each (devices run concurrently, as
    MXNet's engine runs them), each thread a member of the step's device group
    (:func:`symgraph.opdef.device_group`: SyncBatchNorm meets the other devices there and
    infers its ``ndev``). Re-raises the first failure."""
    run_on_devices(fns)


class DataParallelExecutorGroup:
    """A group of executors, one per device, each running a slice of the batch.

    Parameters
    ----------
    symbol : Symbol
        The graph every executor runs.
    contexts : list of Context
        The devices (``mx.cpu(0), mx.cpu(1), ...`` are separate executors in one process).
    workload : list of number
        Relative batch share of each device.
    data_shapes, label_shapes : list of DataDesc or (name, shape)
        Full-batch shapes; ``label_shapes`` may be None.
    param_names : list of str
        The arguments that are parameters (replicated on every device).
    for_training : bool
        Whether gradients are allocated.
    inputs_need_grad : bool
        Whether the gradients of the data inputs are computed.
    shared_group : DataParallelExecutorGroup, optional
        A group (another bucket) whose parameter, gradient and auxiliary arrays this one
        shares, by name, where shapes and dtypes agree.
    logger : Logger
    fixed_param_names : list of str, optional
        Parameters that get no gradient.
    grad_req : str, list or dict
        ``'write'``, ``'add'`` or ``'null'``, for all or per argument.
    state_names : list of str, optional
        Inputs set with :meth:`set_states` rather than from the batch.
    group2ctxs : dict or list, optional
        Accepted as MXNet's; symgraph runs each executor on its one device.
    """

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None,
                 group2ctxs=None):
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _prepare_group2ctxs(group2ctxs, len(contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        if not for_training:
            grad_req = 'null'

        data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
        if label_shapes is not None:
            label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x)
                            for x in label_shapes]
        data_names = [x.name for x in data_shapes]
        self.grad_req = self._grad_req_dict(grad_req, data_names)

        if shared_group is not None:
            self.shared_data_arrays = shared_group.shared_data_arrays
        else:
            self.shared_data_arrays = [{} for _ in contexts]

        self.batch_size = None
        self.slices = None
        self.execs = []
        self._default_execs = None
        self._reshaped = {}         # shapes -> executors made by reshape, reused
        self._monitor = None
        self._grad_ready = None     # set_grad_ready_callback's callback
        self._rngs = [None] * len(contexts)     # per device: its random generator
        self.data_arrays = None
        self.label_arrays = None
        self.param_arrays = None
        self.state_arrays = None
        self.grad_arrays = None
        self.aux_arrays = None
        self.input_grad_arrays = None
        self.data_shapes = None
        self.label_shapes = None
        self.data_names = None
        self.label_names = None
        self.data_layouts = None
        self.label_layouts = None
        self.output_names = self.symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        self.output_layouts = [DataDesc.get_batch_axis(self.symbol[index].attr('__layout__'))
                               for index in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_req_dict(self, grad_req, data_names):
        """``grad_req`` per argument, as MXNet's executor group decides it."""
        def default(k, req):
            if k in self.param_names:
                return 'null' if k in self.fixed_param_names else req
            if k in data_names:
                return req if self.inputs_need_grad else 'null'
            return 'null'
        if isinstance(grad_req, str):
            return {k: default(k, grad_req) for k in self.arg_names}
        if isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ArgumentError('grad_req has %d entries for the %d arguments %s'
                                    % (len(grad_req), len(self.arg_names), self.arg_names))
            return dict(zip(self.arg_names, grad_req))
        if isinstance(grad_req, dict):
            reqs = {k: default(k, 'write') for k in self.arg_names}
            reqs.update(grad_req)
            return reqs
        raise ArgumentError('grad_req must be one of str, list, tuple, or dict.')

    # ------------------------------------------------------------------ binding
    def decide_slices(self, data_shapes):
        """The batch axis of each input; sets ``batch_size`` and ``slices``."""
        if not data_shapes:
            raise ArgumentError('the module needs at least one data input')
        major_axis = [DataDesc.get_batch_axis(x.layout) for x in data_shapes]
        for (name, shape), axis in zip(data_shapes, major_axis):
            if axis == -1:
                continue
            batch_size = shape[axis]
            if self.batch_size is not None:
                if batch_size != self.batch_size:
                    raise ArgumentError('all data must have the same batch size: batch_size = '
                                        '%d, but %s has shape %s'
                                        % (self.batch_size, name, tuple(shape)))
            else:
                self.batch_size = batch_size
                self.slices = _split_input_slice(self.batch_size, self.workload)
        return major_axis

    def _collect_arrays(self):
        """The per-device arrays, grouped by name, for loading and updating."""
        execs = self.execs
        if self.slices:
            self.data_arrays = [[(self.slices[i], e.arg_dict[name])
                                 for i, e in enumerate(execs)]
                                for name, _ in self.data_shapes]
        else:
            self.data_arrays = [[(slice(i, i + 1), e.arg_dict[name])
                                 for i, e in enumerate(execs)]
                                for name, _ in self.data_shapes]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        if self.label_shapes is not None:
            self.label_arrays = [[(self.slices[i], e.arg_dict[name])
                                  for i, e in enumerate(execs)]
                                 for name, _ in self.label_shapes]
        else:
            self.label_arrays = None
        self.param_arrays = [[e.arg_arrays[i] for e in execs]
                             for i, name in enumerate(self.arg_names)
                             if name in self.param_names]
        if self.for_training:
            self.grad_arrays = [[e.grad_arrays[i] for e in execs]
                                for i, name in enumerate(self.arg_names)
                                if name in self.param_names]
        else:
            self.grad_arrays = None
        data_names = [x[0] for x in self.data_shapes]
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_arrays[self.arg_names.index(name)]
                                       for e in execs]
                                      for name in data_names if name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in execs]
                           for i in range(len(self.aux_names))]

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or, with ``reshape``, reshape) one executor per device.

        Nothing changes when binding fails: the group keeps its executors.
        """
        if not reshape and self.execs:
            raise UsageError('bind_exec: the executors are already bound; use reshape')
        old = (self.batch_size, self.slices)
        self.batch_size = None
        try:
            data_layouts = self.decide_slices(data_shapes)
            label_layouts = None
            if label_shapes is not None:
                # also checks that the labels have the data's batch size
                label_layouts = self.decide_slices(label_shapes)
            execs = []
            for i in range(len(self.contexts)):
                data_shapes_i = self._sliced_shape(data_shapes, i, data_layouts)
                label_shapes_i = [] if label_shapes is None else \
                    self._sliced_shape(label_shapes, i, label_layouts)
                if reshape:
                    execs.append(self._reshape_ith_exec(i, data_shapes_i + label_shapes_i))
                else:
                    execs.append(self._bind_ith_exec(i, data_shapes_i, label_shapes_i,
                                                     shared_group))
        except BaseException:
            self.batch_size, self.slices = old
            raise
        self.execs = execs
        self.data_layouts = data_layouts
        self.label_layouts = label_layouts
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [i.name for i in self.data_shapes]
        if label_shapes is not None:
            self.label_names = [i.name for i in self.label_shapes]
        self._collect_arrays()
        self._install_grad_ready()

    def reshape(self, data_shapes, label_shapes):
        """Executors for new input shapes, sharing the parameters with the bound ones."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _reshape_ith_exec(self, i, shapes):
        key = (i, tuple((d.name, tuple(d.shape)) for d in shapes))
        exe = self._reshaped.get(key)
        if exe is None:
            default = self._default_execs[i]
            new = {d.name: tuple(d.shape) for d in shapes}
            if all(default.arg_dict[k].shape == s for k, s in new.items()):
                exe = default           # back to the bound shapes
            else:
                exe = default.reshape(allow_up_sizing=True, **new)
                if self._monitor is not None:
                    self._monitor.install(exe)
            self._reshaped[key] = exe
        return exe

    def _input_types(self, data_shapes, label_shapes):
        input_types = {x.name: x.dtype for x in data_shapes}
        attr_dict = self.symbol.attr_dict()
        for name in self.symbol.list_inputs():
            code = attr_dict.get(name, {}).get('__dtype__')
            if name in input_types and code is not None and code != '-1':
                input_types[name] = _DTYPE_MX_TO_NP[int(code)]
        if label_shapes is not None:
            input_types.update({x.name: x.dtype for x in label_shapes})
        return input_types

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        """Bind the executor of device ``i``; with ``shared_group``, its parameters,
        gradients and auxiliary states are the shared group's arrays."""
        context = self.contexts[i]
        input_shapes = {d.name: tuple(d.shape) for d in data_shapes}
        if label_shapes is not None:
            input_shapes.update({d.name: tuple(d.shape) for d in label_shapes})
        input_types = self._input_types(data_shapes, label_shapes)
        if shared_group is None:
            exe = self.symbol.simple_bind(ctx=context, grad_req=self.grad_req,
                                          type_dict=input_types,
                                          group2ctx=self.group2ctxs[i], **input_shapes)
        else:
            exe = self._bind_shared(context, shared_group.execs[i], input_shapes,
                                    input_types)
        for name in input_shapes:
            self.shared_data_arrays[i].setdefault(name, exe.arg_dict[name])
        self._total_exec_bytes += sum(
            a.size * np.dtype(a.dtype).itemsize
            for a in exe.arg_arrays + exe.aux_arrays + exe.outputs +
            [g for g in exe.grad_arrays if g is not None])
        if self._monitor is not None:
            self._monitor.install(exe)
        return exe

    def _bind_shared(self, context, shared_exec, input_shapes, input_types):
        sym = self.symbol
        arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
        if arg_shapes is None:
            raise ShapeError('bind: cannot infer the shapes of every argument of the bucket '
                             'from %s' % input_shapes)
        arg_types, _, aux_types = sym.infer_type_partial(**input_types)
        shared_args, shared_grads = shared_exec.arg_dict, shared_exec.grad_dict
        shared_aux = shared_exec.aux_dict

        def fits(arr, shape, dtype):
            return arr is not None and arr.shape == tuple(shape) and \
                (dtype is None or as_dtype(arr.dtype) == as_dtype(dtype))

        def alloc(shape, dtype):
            return nd.zeros(shape, ctx=context, dtype=dtype or np.float32)
        args, grads = [], []
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types):
            req = self.grad_req.get(name, 'null')
            if name in self.param_names and fits(shared_args.get(name), shape, dtype):
                args.append(shared_args[name])
                g = shared_grads.get(name)
                grads.append(g if req != 'null' and fits(g, shape, dtype) else
                             (alloc(shape, dtype) if req != 'null' else None))
            else:
                args.append(alloc(shape, dtype))
                grads.append(alloc(shape, dtype) if req != 'null' else None)
        aux = [shared_aux[n] if fits(shared_aux.get(n), s, t) else alloc(s, t)
               for n, s, t in zip(self.aux_names, aux_shapes, aux_types)]
        return sym.bind(context, args, args_grad=grads,
                        grad_req=[self.grad_req.get(n, 'null') for n in self.arg_names],
                        aux_states=aux)

    def _sliced_shape(self, shapes, i, major_axis):
        """The shapes of device ``i``'s slice."""
        sliced = []
        for desc, axis in zip(shapes, major_axis):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            sliced.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return sliced

    # ------------------------------------------------------------------ values
    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy the parameters onto every device."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Copy the devices' parameters (averaged over devices) into the given dicts."""
        for params, names, blocks in ((arg_params, self.param_names, self.param_arrays),
                                      (aux_params, self.aux_names, self.aux_arrays)):
            for name, block in zip(names, blocks):
                dst = params[name]
                if len(block) == 1 or all(_same_values(block[0], w) for w in block[1:]):
                    # (MXNet averages the copies even when they agree, which rounds:
                    # (w + w + w) / 3 is not always w in float32)
                    src = block[0]
                else:
                    src = sum(w.copyto(cpu()) for w in block) / len(block)
                if as_dtype(src.dtype) != as_dtype(dst.dtype):
                    src = src.astype(dst.dtype)
                src.copyto(dst)

    # ------------------------------------------------------------------ running
    def forward(self, data_batch, is_train=None):
        """Load the batch's slices onto the devices and run forward on each."""
        _load_general(_batch_part(data_batch, 'data', len(self.data_arrays)),
                      self._targets(self.data_arrays, data_batch), self.data_layouts,
                      self.data_names)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None:
            if isinstance(data_batch, list):
                has_label = data_batch and data_batch[0].label
            else:
                has_label = data_batch.label
            if has_label:
                _load_general(_batch_part(data_batch, 'label', len(self.label_arrays)),
                              self._targets(self.label_arrays, data_batch),
                              self.label_layouts, self.label_names)
        if len(self.execs) == 1:
            self.execs[0].forward(is_train=is_train)
        else:
            _run_each(self._seeded([lambda e=e: e.forward(is_train=is_train)
                                    for e in self.execs]))

    @staticmethod
    def _targets(arrays, data_batch):
        if isinstance(data_batch, list):        # pre-sliced: one batch per device
            return [[dst for _, dst in d] for d in arrays]
        if len(arrays) and len(arrays[0]) == 1 and arrays[0][0][0].start == 0:
            return [d[0][1] for d in arrays]     # one device: no slicing
        return arrays

    def get_output_shapes(self):
        """``(name, shape)`` of each output for the whole batch."""
        shapes = [out.shape for out in self.execs[0].outputs]
        concat = []
        for key, the_shape, axis in zip(self.output_names, shapes, self.output_layouts):
            the_shape = list(the_shape)
            if axis >= 0:
                the_shape[axis] = self.batch_size
            concat.append((key, tuple(the_shape)))
        return concat

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs ``[begin, end)`` of the last forward: merged over devices, or one list
        of per-device arrays per output."""
        if end is None:
            end = self.num_outputs
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            outputs = _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_states(self, merge_multi_context=True):
        """The state arrays, per state a list of per-device arrays."""
        if merge_multi_context:
            raise NotSupportedError('merge_multi_context=True is not supported for get_states yet.')
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the states from per-device arrays (``states``) or to a scalar ``value``."""
        if states is not None:
            if value is not None:
                raise ArgumentError('Only one of states & value can be specified.')
            _load_general(states, self.state_arrays, (0,) * len(states), self.state_names)
        else:
            if value is None:
                raise ArgumentError('At least one of states & value must be specified.')
            for d_dst in self.state_arrays:
                for dst in d_dst:
                    dst[:] = value

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs from the last backward."""
        if not self.inputs_need_grad:
            raise UsageError('get_input_grads: bind with inputs_need_grad=True')
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def backward(self, out_grads=None):
        """Backward on every device; ``out_grads`` (whole batch) are sliced per device."""
        if not self.for_training:
            raise UsageError('re-bind with for_training=True to run backward')
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        if len(self.execs) == 1:
            self.execs[0].backward(out_grads=list(out_grads))
            return
        per_device = []
        for i, islice in enumerate(self.slices):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts):
                if axis >= 0:
                    part = nd.slice_axis(grad, axis=axis, begin=islice.start,
                                         end=islice.stop)
                    sliced.append(part.as_in_context(self.contexts[i]))
                else:
                    sliced.append(grad.copyto(self.contexts[i]))
            per_device.append(sliced)
        _run_each(self._seeded([lambda e=e, g=g: e.backward(out_grads=g)
                                for e, g in zip(self.execs, per_device)]))

    def _seeded(self, fns):
        """Wrap each device's work to draw random numbers (Dropout masks, samplers) from
        that device's own generator, seeded from the global one on the calling thread:
        seeded runs repeat whatever order the device threads run in."""
        seeds = np.random.randint(0, 2 ** 31 - 1, size=len(fns))

        def wrap(k, fn):
            def run():
                ctx = Context(self.contexts[k])
                xp = ctx.xp
                with ctx.device_scope():
                    state = self._rngs[k]
                    if state is None:
                        state = self._rngs[k] = xp.random.RandomState(int(seeds[k]))
                    else:
                        state.seed(int(seeds[k]))
                    with using_random_state(xp, state):
                        fn()
            return run
        return [wrap(k, fn) for k, fn in enumerate(fns)]

    def update_metric(self, eval_metric, labels, pre_sliced):
        """Update ``eval_metric`` with every device's outputs and its labels."""
        for current_exec, (texec, islice) in enumerate(zip(self.execs, self.slices)):
            if not pre_sliced:
                if len(self.execs) == 1:
                    labels_slice = labels
                else:
                    labels_slice = []
                    for label, axis in zip(labels, self.label_layouts):
                        if axis == 0:
                            labels_slice.append(label[islice])
                        elif axis > 0:
                            labels_slice.append(nd.slice_axis(
                                label, axis=axis, begin=islice.start, end=islice.stop))
                        else:
                            labels_slice.append(label)
            else:
                labels_slice = labels[current_exec]
            labels_ = OrderedDict(zip(self.label_names or [], labels_slice))
            preds = OrderedDict(zip(self.output_names, texec.outputs))
            eval_metric.update_dict(labels_, preds)

    # ------------------------------------------------------------------ gradient ready
    def _param_positions(self):
        """Argument index -> position in :attr:`param_arrays`."""
        params = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        return {i: p for p, i in enumerate(params)}

    def grad_ready_order(self):
        """The positions (in :attr:`param_arrays`) of the parameters whose gradients
        backward computes, in the order backward makes them final."""
        pos = self._param_positions()
        return [pos[j] for j in self.execs[0].grad_ready_order if j in pos]

    def set_grad_ready_callback(self, callback):
        """Call ``callback(param_position, device, grad)`` as backward makes each
        parameter's gradient final on device ``device`` (see
        :meth:`symgraph.executor.Executor.set_grad_ready_callback`; with several devices,
        from their threads), on these executors and those of later reshapes. None removes
        it."""
        self._grad_ready = callback
        self._install_grad_ready()

    def _install_grad_ready(self):
        callback = self._grad_ready
        pos = self._param_positions()
        for k, exe in enumerate(self.execs):
            if callback is None:
                exe.set_grad_ready_callback(None)
                continue

            def report(j, name, grad, k=k):
                p = pos.get(j)
                if p is not None:
                    callback(p, k, grad)
            exe.set_grad_ready_callback(report)

    def install_monitor(self, mon):
        """Install ``mon`` on every executor (and on those made by later reshapes)."""
        self._monitor = mon
        for exe in self.execs:
            mon.install(exe)
