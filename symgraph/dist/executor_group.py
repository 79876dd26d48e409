"""The data-parallel executor group.

:class:`DataParallelExecutor`: one executor per context with the batch split along
axis 0, forward and backward of all devices in threads (one per device, as MXNet's
executor group does), parameter gradients all-reduced.
"""
import collections

import numpy

from ..base import ArgumentError, ShapeError, UnknownNameError
from ..context import Context
from ..ndarray import NDArray
from ..opdef import using_random_state
from .allreduce import allreduce
from .workers import run_on_devices

__all__ = ['DataParallelExecutor']

def _split_sizes(batch, n):
    """Batch slice sizes: as even as possible, the first ones one larger."""
    return [batch // n + (1 if k < batch % n else 0) for k in range(n)]


class DataParallelExecutor:
    """One executor per context, the batch split along axis 0 (MXNet's executor group).

    Parameters
    ----------
    symbol : Symbol
    contexts : list of Context
        All CPU contexts (``mx.cpu(0), mx.cpu(1), ...``: logical devices in
        one process) or all GPU contexts (several may name one GPU).
    grad_req : str, list or dict
        As for ``simple_bind``.
    type_dict : dict, optional
        As for ``simple_bind``.
    **data_shapes
        Full-batch shapes of the inputs split along axis 0 (data and labels).
        Every other argument is a parameter, replicated on every device.

    Notes
    -----
    ``forward`` and ``backward`` run every device's executor in its own
    thread, so operators that meet at a :class:`Rendezvous`
    (``contrib.SyncBatchNorm``) see all devices of the step.  After backward
    the gradients of the parameters are summed over the devices with
    :func:`allreduce`, so every device holds the gradient of the whole batch (the
    parameter gradients of one dtype are views of one flat buffer per device, so a
    step runs one all-reduce per dtype, not one per parameter);
    the gradients of the split inputs stay per device (see
    :meth:`get_input_grads`).  A batch that the devices do not divide evenly
    gives the first devices one sample more.

    Examples
    --------
    >>> import symgraph as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    >>> group = DataParallelExecutor(net, [mx.cpu(0), mx.cpu(1)], data=(5, 4))
    >>> [e.arg_dict['data'].shape for e in group.execs]
    [(3, 4), (2, 4)]
    """

    def __init__(self, symbol, contexts, grad_req='write', type_dict=None, **data_shapes):
        self.contexts = [Context(c) for c in contexts]
        if not self.contexts:
            raise ArgumentError('DataParallelExecutor needs at least one context')
        if len({c.is_gpu for c in self.contexts}) > 1:
            raise ArgumentError('DataParallelExecutor needs all-CPU or all-GPU contexts, got %s'
                                % self.contexts)
        if not data_shapes:
            raise ArgumentError('DataParallelExecutor needs the shapes of the batch inputs '
                                '(e.g. data=(32, 3, 224, 224))')
        batches = {tuple(s)[0] for s in data_shapes.values()}
        if len(batches) != 1:
            raise ArgumentError('batch inputs disagree on the batch size: %s' % data_shapes)
        self.batch_size = batches.pop()
        n = len(self.contexts)
        if self.batch_size < n:
            raise ArgumentError('a batch of %d cannot be split over %d devices'
                                % (self.batch_size, n))
        self.symbol = symbol
        self.data_names = list(data_shapes)
        self.slices = []
        start = 0
        for size in _split_sizes(self.batch_size, n):
            self.slices.append(slice(start, start + size))
            start += size
        names = symbol.list_arguments()
        self.param_names = [k for k in names if k not in data_shapes]
        self.execs = []
        self._buckets = []          # per device: the flat gradient buffers, one per dtype
        for ctx, sl in zip(self.contexts, self.slices):
            shapes = {k: (sl.stop - sl.start,) + tuple(s)[1:] for k, s in data_shapes.items()}
            exe, buckets = _bind_bucketed(symbol, ctx, grad_req, type_dict, shapes,
                                          set(self.param_names))
            self.execs.append(exe)
            self._buckets.append(buckets)
        reqs = self.execs[0]._grad_req
        self._reqs = dict(zip(names, reqs))
        self._rngs = [None] * n     # per device: its random generator (see _seeded)

    # ------------------------------------------------------------------ values
    def set_params(self, arg_params, aux_params=None, allow_extra=False):
        """Copy parameters (dicts of NDArrays or NumPy arrays) onto every device."""
        for exe in self.execs:
            exe.copy_params_from({k: _nd(v) for k, v in arg_params.items()},
                                 {k: _nd(v) for k, v in (aux_params or {}).items()},
                                 allow_extra_params=allow_extra)

    def forward(self, is_train=False, **data):
        """Copy the full-batch inputs' slices to the devices, then run forward on all.

        Keyword arguments are full-batch arrays of inputs named in
        ``data_shapes``.
        """
        for k in data:
            if k not in self.data_names:
                raise UnknownNameError('forward: %r is not a batch input of the group (%s)'
                                       % (k, self.data_names))
        for k, v in data.items():
            v = v.asnumpy() if isinstance(v, NDArray) else numpy.asarray(v)
            self._check_batch('forward: input %r' % k, v, self._full_shape(k))
            for exe, sl in zip(self.execs, self.slices):
                exe.arg_dict[k][:] = v[sl]
        run_on_devices(self._seeded([lambda exe=exe: exe.forward(is_train=is_train)
                                      for exe in self.execs]))
        return self.get_outputs()

    def backward(self, out_grads=None):
        """Backward on every device, then sum the parameter gradients over the devices.

        ``out_grads``: full-batch head gradients (split like the outputs), or None for
        loss outputs.
        """
        heads = [None] * len(self.execs)
        if out_grads is not None:
            og = out_grads if isinstance(out_grads, (list, tuple)) else [out_grads]
            og = [g.asnumpy() if isinstance(g, NDArray) else numpy.asarray(g) for g in og]
            if len(og) > len(self.execs[0].outputs):
                raise ArgumentError('backward: %d head gradients for %d outputs'
                                    % (len(og), len(self.execs[0].outputs)))
            for i, g in enumerate(og):
                per = self.execs[0].outputs[i].shape
                self._check_batch('backward: head gradient %d' % i, g,
                                  (self.batch_size,) + tuple(per[1:]))
            heads = [[NDArray(numpy.ascontiguousarray(g[sl])) for g in og]
                     for sl in self.slices]
        if len(self.execs) == 1:
            run_on_devices(self._seeded([lambda: self.execs[0].backward(heads[0])]))
            return
        # grad_req='add': all-reduce only this step's contribution.  The accumulated
        # gradients are set aside and zeroed, so each device's step gradient is exact
        # (taking the old value off afterwards would lose low bits to cancellation),
        # and put back unchanged if backward fails.
        before = {}
        for k in self.param_names:
            if self._reqs[k] == 'add':
                before[k] = []
                for exe in self.execs:
                    with exe._ctx.device_scope():
                        g = exe.grad_dict[k]._data
                        before[k].append(g.copy())
                        g[...] = 0
        try:
            run_on_devices(self._seeded([lambda exe=exe, h=h: exe.backward(h)
                                          for exe, h in zip(self.execs, heads)]))
        except BaseException:
            for k, olds in before.items():
                for exe, old in zip(self.execs, olds):
                    with exe._ctx.device_scope():
                        exe.grad_dict[k]._data[...] = old
            raise
        # one all-reduce per bucket: every parameter gradient of a dtype lives in one
        # flat buffer per device (their NDArrays are views of it)
        for flats in zip(*self._buckets):
            allreduce(list(flats))
        for k, olds in before.items():
            for exe, old in zip(self.execs, olds):
                with exe._ctx.device_scope():
                    exe.grad_dict[k]._data += old

    def _seeded(self, fns):
        """Wrap each device's work to draw from that device's own generator.

        The seeds come from the global generator, on the calling thread, so
        that after ``mx.random.seed`` a step's random numbers (Dropout masks,
        samplers) do not depend on the order the device threads run in.
        """
        seeds = numpy.random.randint(0, 2 ** 31 - 1, size=len(fns))

        def wrap(k, fn):
            def run():
                exe = self.execs[k]
                xp = exe._ctx.xp
                with exe._ctx.device_scope():
                    state = self._rngs[k]
                    if state is None:
                        state = self._rngs[k] = xp.random.RandomState(int(seeds[k]))
                    else:
                        state.seed(int(seeds[k]))
                    with using_random_state(xp, state):
                        return fn()
            return run
        return [wrap(k, fn) for k, fn in enumerate(fns)]

    def _full_shape(self, name):
        per = self.execs[0].arg_dict[name].shape
        return (self.batch_size,) + tuple(per[1:])

    @staticmethod
    def _check_batch(what, value, want):
        # the slices would broadcast or drop rows of a wrong-sized batch silently
        if tuple(value.shape) != tuple(want):
            raise ShapeError('%s has shape %s, the group was bound for %s'
                             % (what, tuple(value.shape), tuple(want)))

    # ------------------------------------------------------------------ results
    def get_params(self, arg_params, aux_params):
        """Copy the parameters and auxiliary states into the given dicts, on the CPU.

        As MXNet's executor group does: each value is the average over the devices
        (the parameters are equal on every device; the auxiliary states, such as
        BatchNorm's moving statistics, are kept per device and differ).
        """
        for names, dst, get in ((self.param_names, arg_params, lambda e: e.arg_dict),
                                (self.execs[0]._aux_names, aux_params, lambda e: e.aux_dict)):
            for k in names:
                total = sum(get(exe)[k].asnumpy().astype(numpy.float64) for exe in self.execs)
                value = (total / len(self.execs)).astype(get(self.execs[0])[k].dtype)
                if k in dst and isinstance(dst[k], NDArray):
                    dst[k][:] = value
                else:
                    dst[k] = NDArray(value)

    def get_outputs(self, merge=True):
        """Outputs concatenated along axis 0 into CPU arrays (``merge``), or per device."""
        per = [[exe.outputs[i] for exe in self.execs] for i in range(len(self.execs[0].outputs))]
        if not merge:
            return per
        return [NDArray(numpy.concatenate([o.asnumpy() for o in outs], axis=0))
                for outs in per]

    def get_input_grads(self, merge=True):
        """Gradients of the batch inputs, concatenated on the CPU (``merge``) or per device."""
        per = [[exe.grad_dict[k] for exe in self.execs] for k in self.data_names
               if self.execs[0].grad_dict.get(k) is not None]
        if not merge:
            return per
        return [NDArray(numpy.concatenate([g.asnumpy() for g in grads], axis=0))
                for grads in per]

    @property
    def grad_dict(self):
        """Parameter gradients (summed over the devices: device 0's copy)."""
        return {k: g for k, g in self.execs[0].grad_dict.items()
                if k in self.param_names and g is not None}

    @property
    def aux_dict(self):
        """Auxiliary states of device 0 (each device keeps its own; :meth:`get_params`
        averages them, as MXNet's executor group does)."""
        return self.execs[0].aux_dict


def _bind_bucketed(symbol, ctx, grad_req, type_dict, shapes, params):
    """``simple_bind``, with the gradients of ``params`` as views of one flat zeroed
    buffer per dtype (in argument order); returns (executor, [flat buffers])."""
    exe = symbol.simple_bind(ctx, grad_req=grad_req, type_dict=type_dict, **shapes)
    names = exe._arg_names
    groups = collections.OrderedDict()
    for k, (name, g) in enumerate(zip(names, exe.grad_arrays)):
        if g is not None and name in params:
            groups.setdefault(numpy.dtype(g.dtype), []).append(k)
    if not groups:
        return exe, []
    grads = list(exe.grad_arrays)
    buckets = []
    with ctx.device_scope():
        xp = ctx.xp
        for dtype, ks in groups.items():
            flat = xp.zeros(sum(grads[k].size for k in ks), dtype=dtype)
            start = 0
            for k in ks:
                shape, size = grads[k].shape, grads[k].size
                grads[k] = NDArray(flat[start:start + size].reshape(shape), ctx)
                start += size
            buckets.append(flat)
    exe = symbol.bind(ctx, exe.arg_arrays, args_grad=grads, grad_req=exe._grad_req,
                      aux_states=exe.aux_arrays)
    return exe, buckets


def _nd(v):
    return v if isinstance(v, NDArray) else NDArray(numpy.asarray(v))
