"""``_contrib_SyncBatchNorm``: batch normalisation with statistics over all devices.

Each of the ``ndev`` copies of the operator (one per device of a data-parallel step, e.g.
DataParallelExecutor of ``symgraph.dist``) computes partial statistics of its slice of
the batch and meets the others at the rendezvous named by ``key``, where the partials are
summed by the all-reduce of :func:`symgraph.opdef.device_group`; every device then normalises
with the mean and variance of the whole batch. Backward exchanges the two per-channel sums ``sum(dy)`` and
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
unequal slices. ``ndev=1`` needs no rendezvous.

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
from symgraph.base import ArgumentError, UsageError


def _group(ndev):
    """The data-parallel group this copy runs in (the runtime's declared hook)."""
    group = device_group()
    if group is None:
        raise UsageError('SyncBatchNorm with ndev=%d must run inside a data-parallel '
                         'group (symgraph.dist.DataParallelExecutor)' % ndev)
    return group


def _processes():
    """The processes of a multi-process job (``python -m symgraph.launch`` with a dist
    kvstore), or None."""
    group = process_group()
    return group if group is not None and group.size > 1 else None


def _exchange(key, ndev, buf):
    """Sum ``buf`` over the ``ndev`` devices meeting at ``key``, and over the processes of
    a multi-process job (returns the sum)."""
    procs = _processes()
    if ndev == 1:
        return buf if procs is None else procs.allreduce(buf)
    return _group(ndev).allreduce('SyncBatchNorm:' + key, ndev, buf, processes=procs)


@register
class SyncBatchNorm(BatchNormBase):
    """Batch normalisation whose statistics span the batches of ``ndev`` devices."""

    name = '_contrib_SyncBatchNorm'
    eps = Param(float, 1e-3, doc='added to the variance')
    momentum = Param(float, 0.9, doc='running-statistics decay')
    fix_gamma = Param(bool, True, doc='gamma acts as 1 and gets no gradient')
    use_global_stats = Param(bool, False, doc='normalise with the running statistics')
    output_mean_var = Param(bool, False, doc='also output the mean and the variance')
    ndev = Param(int, 1, doc='number of devices whose batches are normalised together')
    key = Param(str, doc='name of the rendezvous shared by the ndev copies')

    def check(self):
        if self.ndev < 1:
            raise ArgumentError('SyncBatchNorm ndev must be >= 1, got %d' % self.ndev)

    def _global_stats(self, xp, x, axes):
        """Mean and biased variance over the batches of all devices (float64)."""
        c = x.shape[1]
        count = x.size // c if c else 0
        mean = x.mean(axis=axes) if count else xp.zeros((c,), x.dtype)
        m2 = ((x - mean.reshape(bshape(x.ndim, 1, c))) ** 2).sum(axis=axes)
        ndev = self.ndev
        procs = _processes()
        rank = _group(ndev).rank if ndev > 1 else 0
        if procs is not None:
            # one row per device of every process
            rank += procs.rank * ndev
            ndev *= procs.size
        buf = xp.zeros((ndev, 3, c), dtype=np.float64)
        # each device fills its own row: the all-reduce is an all-gather
        buf[rank, 0] = float(count)
        buf[rank, 1] = mean
        buf[rank, 2] = m2
        buf = _exchange(self.key, self.ndev, buf)
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
            buf = _exchange(self.key, self.ndev, buf)
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
