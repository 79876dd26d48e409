"""``_contrib_SyncBatchNorm``: batch normalisation with statistics over all devices.

Each of the ``ndev`` copies of the operator (one per device of a data-parallel step, e.g.
DataParallelExecutor of ``symgraph.dist`` or a Module on several contexts) computes partial
statistics of its slice of the batch and meets the others at the rendezvous named by
``key``, where the partials are summed by the all-reduce of
:func:`symgraph.opdef.device_group`; every device then normalises with the mean and
variance of the whole batch.

``ndev`` and ``key`` are optional, unlike MXNet's (which hung when they were wrong):
``ndev`` is the number of devices of the group the executor runs in, ``key`` the node's
name (the ``instead`` rule for ``'node'`` in ``ops/_cpu_rules.py``). An explicit ``ndev``
that is not that number is a
ParameterError on every device at once, not a wait for devices that never come. In a
multi-process job the processes exchange their numbers of devices (they may differ) and
a code of the key on the first step, so that processes running different graphs fail
with an error naming them. Backward exchanges the two per-channel sums ``sum(dy)`` and
``sum(dy * (x - mean))`` the same way. The outputs and input gradients are those of
``BatchNorm`` over the concatenated batch; gamma's and beta's gradients are the device's
share (the executor group sums them over the devices).

As in MXNet 1.9.1:

* the third output ``var`` is the (biased) batch variance, not BatchNorm's inverse std;
* ``moving_mean``/``moving_var`` are updated in *backward* (a training forward alone leaves
  them unchanged), with the global statistics;
* the channel axis is 1.

Forward exchanges, per device, (count, mean, M2 = sum of squared deviations) in one
all-reduce of an (ndev, 3, C) buffer where device r fills row r (an all-gather); combining
them with Chan's formula avoids the cancellation of ``E[x^2] - E[x]^2`` that MXNet's
one-pass version suffers in float32, and gives the exact statistics when the devices hold
unequal slices. One device needs no rendezvous.

In a multi-process job (``python -m symgraph.launch``, with a ``'dist_sync'`` kvstore or
:func:`symgraph.dist.mpi.world`) the statistics span every device of every process: the
exchanges also sum over the processes (:func:`symgraph.opdef.process_group`), once per
process after the sum over its devices, and the forward buffer has a row per device of
every process.
"""
import numpy as np

from symgraph.opdef import Param, device_group, process_group, register

from ._norm import BatchNormBase, bshape
from ._util import acc, f32
from symgraph.base import ArgumentError, ParameterError


def _processes():
    """The processes of a multi-process job (``python -m symgraph.launch`` with a dist
    kvstore), or None."""
    group = process_group()
    return group if group is not None and group.size > 1 else None


def _key_code(key):
    """A number standing for ``key`` that float64 holds exactly, summed over devices."""
    code = 0
    for byte in key.encode('utf-8'):
        code = (code * 131 + byte) % 1000003
    return float(code + 1)


#: (process group, key, devices in this process) -> devices of each process, checked once
_LAYOUTS = {}


@register
class SyncBatchNorm(BatchNormBase):
    """Batch normalisation whose statistics span the batches of all devices of a
    data-parallel step (and all processes of a multi-process job)."""

    name = '_contrib_SyncBatchNorm'
    eps = Param(float, 1e-3, doc='added to the variance')
    momentum = Param(float, 0.9, doc='running-statistics decay')
    fix_gamma = Param(bool, True, doc='gamma acts as 1 and gets no gradient')
    use_global_stats = Param(bool, False, doc='normalise with the running statistics')
    output_mean_var = Param(bool, False, doc='also output the mean and the variance')
    ndev = Param(int, None, doc='number of devices whose batches are normalised together '
                                '(default: those of the data-parallel group it runs in; '
                                'a value that differs from them is an error)')
    key = Param(str, None, doc='name of the meeting point of the copies on the devices '
                               '(default: the node name)')

    def check(self):
        if self.ndev is not None and self.ndev < 1:
            raise ArgumentError('SyncBatchNorm ndev must be >= 1, got %d' % self.ndev)

    def _name(self):
        return 'SyncBatchNorm %r' % self.key if self.key is not None else 'SyncBatchNorm'

    def _devices(self):
        """(group, rank, size): this copy's data-parallel group (None: one device), its
        slot and the number of devices; an explicit ``ndev`` must be that number."""
        group = device_group()
        size = 1 if group is None else int(group.size)
        if self.ndev is not None and self.ndev != size:
            where = ('runs outside a data-parallel group (on one device)' if group is None
                     else 'runs in a data-parallel group of %d devices' % size)
            raise ParameterError(
                '%s: ndev=%d but the operator %s; leave ndev out (it is inferred from the '
                'group) or set ndev=%d (the copies would otherwise wait for devices that '
                'never come)' % (self._name(), self.ndev, where, size))
        if size > 1 and self.key is None:
            raise ParameterError('SyncBatchNorm on %d devices needs a key: run it in a bound '
                                 'executor (the key defaults to the node name) or give '
                                 'key=' % size)
        return group, (0 if group is None else int(group.rank)), size

    def _exchange(self, xp, buf):
        """Sum ``buf`` over the devices of the step, and over the processes of a
        multi-process job (returns the sum)."""
        group, _, size = self._devices()
        procs = _processes()
        if size == 1:
            return buf if procs is None else procs.allreduce(buf)
        return group.allreduce('SyncBatchNorm:' + self.key, size, buf, processes=procs)

    def _layout(self, xp, procs, size):
        """The number of devices of each process, exchanged (and the processes checked to
        run the same layer) on the first step; then remembered."""
        name = self.key if self.key is not None else ''
        cache = (id(procs), name, size)
        counts = _LAYOUTS.get(cache)
        if counts is not None:
            return counts
        code = _key_code(name)
        buf = xp.zeros((procs.size, 2), dtype=np.float64)
        buf[procs.rank, 0] = 1.0
        buf[procs.rank, 1] = code
        got = self._exchange(xp, buf)
        got = got if isinstance(got, np.ndarray) else got.get()
        counts = [int(round(c)) for c in got[:, 0]]
        wrong = [r for r in range(procs.size) if got[r, 1] != counts[r] * code]
        if wrong:
            raise ParameterError(
                '%s: process%s %s run%s another SyncBatchNorm layer (another key) at this '
                'point than process %d; every process must run the same graph'
                % (self._name(), 'es' if len(wrong) > 1 else '',
                   ', '.join(map(str, wrong)), '' if len(wrong) > 1 else 's', procs.rank))
        _LAYOUTS[cache] = counts
        return counts

    def _global_stats(self, xp, x, axes):
        """Mean and biased variance over the batches of all devices (float64)."""
        c = x.shape[1]
        count = x.size // c if c else 0
        mean = x.mean(axis=axes) if count else xp.zeros((c,), x.dtype)
        m2 = ((x - mean.reshape(bshape(x.ndim, 1, c))) ** 2).sum(axis=axes)
        _, row, rows = self._devices()
        procs = _processes()
        if procs is not None:
            # one row per device of every process (processes may have unequal devices)
            counts = self._layout(xp, procs, rows)
            row += sum(counts[:procs.rank])
            rows = sum(counts)
        buf = xp.zeros((rows, 3, c), dtype=np.float64)
        # each device fills its own row: the all-reduce is an all-gather
        buf[row, 0] = float(count)
        buf[row, 1] = mean
        buf[row, 2] = m2
        buf = self._exchange(xp, buf)
        counts, means, m2s = buf[:, 0], buf[:, 1], buf[:, 2]
        n = counts.sum(axis=0)
        safe = xp.maximum(n, 1.0)
        gmean = (counts * means).sum(axis=0) / safe
        gm2 = m2s.sum(axis=0) + (counts * (means - gmean) ** 2).sum(axis=0)
        return gmean, gm2 / safe

    def forward(self, xp, inputs, aux, is_train):
        data, gamma, beta = inputs
        moving_mean, moving_var = aux
        x = acc(data)
        axes = tuple(i for i in range(x.ndim) if i != 1)
        bs = bshape(x.ndim, 1, x.shape[1])
        pt = gamma.dtype
        if is_train and not self.use_global_stats:
            mean, var = self._global_stats(xp, x, axes)
            mean, var = mean.astype(x.dtype), var.astype(x.dtype)
        else:
            mean = moving_mean.astype(x.dtype, copy=False)
            var = moving_var.astype(x.dtype, copy=False)
        inv = 1.0 / xp.sqrt(var + f32(self.eps))
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        scale = (g * inv).astype(x.dtype, copy=False)
        shift = (beta - mean * scale).astype(x.dtype, copy=False)
        out = x * scale.reshape(bs) + shift.reshape(bs)
        return [out.astype(data.dtype, copy=False), mean.astype(pt), var.astype(pt)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, gamma, _ = inputs
        x, dy = acc(data), acc(out_grads[0])
        c = x.shape[1]
        axes = tuple(i for i in range(x.ndim) if i != 1)
        bs = bshape(x.ndim, 1, c)
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        g = g.astype(x.dtype, copy=False).reshape(bs)
        moving_mean, moving_var = aux
        if self.use_global_stats:
            mean = moving_mean.astype(x.dtype, copy=False).reshape(bs)
            inv = (1.0 / xp.sqrt(moving_var + f32(self.eps))).astype(x.dtype).reshape(bs)
            xhat = (x - mean) * inv
            dx = dy * g * inv
        else:
            mean = outputs[1].astype(x.dtype, copy=False)
            var = outputs[2].astype(x.dtype, copy=False)
            inv = (1.0 / xp.sqrt(var + f32(self.eps))).reshape(bs)
            xhat = (x - mean.reshape(bs)) * inv
            buf = xp.zeros((3, c), dtype=np.float64)
            buf[0] = dy.sum(axis=axes)
            buf[1] = (dy * xhat).sum(axis=axes)
            buf[2] = float(x.size // c if c else 0)
            buf = self._exchange(xp, buf)
            # MXNet updates the running statistics here, from the global batch statistics;
            # after the exchange, so that a device failing at it leaves every copy as it was
            mom = f32(self.momentum)
            moving_mean[...] = moving_mean * mom + outputs[1] * (1.0 - mom)
            moving_var[...] = moving_var * mom + outputs[2] * (1.0 - mom)
            n = max(float(buf[2, 0]) if c else 1.0, 1.0)
            m1 = (buf[0] / n).astype(x.dtype).reshape(bs)
            m2 = (buf[1] / n).astype(x.dtype).reshape(bs)
            dx = (dy - m1 - xhat * m2) * g * inv
        dgamma = dbeta = None
        if need[1]:
            dgamma = (xp.zeros_like(gamma) if self.fix_gamma
                      else (dy * xhat).sum(axis=axes).astype(gamma.dtype, copy=False))
        if need[2]:
            dbeta = dy.sum(axis=axes).astype(gamma.dtype, copy=False)
        return [dx.astype(data.dtype, copy=False) if need[0] else None, dgamma, dbeta]
