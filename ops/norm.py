"""Batch normalisation (``BatchNorm``, and ``_contrib_BatchNormWithReLU``: BatchNorm then relu).

``BatchNorm`` keeps what its backward needs (mean, inverse std) as hidden outputs, as MXNet
does, so backward never recomputes statistics. float16 data is normalised in float32, and
BatchNorm's parameters and running statistics are float32 then, like MXNet's. On CuPy
float32/float64 arrays with the channel axis 1 it calls the fused kernels of
``symgraph.cuda.loader``.

MXNet stores ``eps``, ``momentum``, ``alpha``... as C ``float`` (BatchNorm's ``eps`` is a
``double`` set from the float ``1e-3f``); ``ops._util.f32`` rounds them the same way. The
shape rules BatchNorm shares with the other normalisations are in ``ops/_norm.py``;
:mod:`symgraph.ops.syncbn` builds ``SyncBatchNorm`` on the same ``BatchNormBase``.
"""
from math import prod

import numpy as np

from symgraph.opdef import Kept, Param, Step, gpu_kernel, register

from ._norm import BatchNormBase, bshape
from ._util import F32, KERNELS, acc, f32, on_backend


def _per_channel(xp, x, ax):
    """``x`` as a (pre, C, post) view (C on axis ``ax``), for per-channel reductions."""
    pre = prod(x.shape[:ax])
    return x.reshape(pre, x.shape[ax], -1)


def _channel_dot(xp, a, b, ax):
    """Per-channel sum of ``a * b`` without the elementwise temporary."""
    return xp.einsum('ncs,ncs->c', _per_channel(xp, a, ax), _per_channel(xp, b, ax))


def _gpu_bn_ok(xp, op, x, *params):
    """Whether BatchNorm's CUDA kernels take this case: CuPy, channel axis 1, float32 or
    float64 with parameters of the same dtype (anything else runs the array code)."""
    return (xp.__name__ == 'cupy' and x.ndim >= 2 and op.axis % x.ndim == 1
            and x.dtype in (np.float32, np.float64) and all(p.dtype == x.dtype for p in params))


def _dest(arrays, i, dtype):
    """``arrays[i]`` when the executor offers it (``writes_into``) and a result of
    ``dtype`` can be computed straight into it, else None. (It may lie channels last, a
    training plan's buffer: oneDNN writes it so; the CUDA kernels take C order only.)"""
    if not arrays or arrays[i] is None:
        return None
    d = arrays[i]
    return d if d.dtype == dtype else None


def _c_order(d):
    return d if d is not None and d.flags.c_contiguous else None


def _gpu_bn_forward(xp, op, data, gamma, beta, moving_mean, moving_var, is_train, dest=None):
    """BatchNorm forward with the fused kernels: [out, mean, inv_std] (out written into
    ``dest`` when given); cuDNN's first where it is loaded, takes the case and the node
    has no ``cudnn_off``."""
    kern = None if op.cudnn_off else gpu_kernel('batchnorm_forward')
    r = None if kern is None else kern(data, gamma, beta, moving_mean, moving_var,
                                        f32(op.eps), f32(op.momentum), op.fix_gamma,
                                        is_train and not op.use_global_stats, out=dest)
    if r is not None:
        if dest is not None and r[0] is not dest:
            dest[...] = r[0]
        return [r[0] if dest is None else dest, r[1], r[2]]
    from symgraph.cuda import loader
    n, c = data.shape[:2]
    x3 = data.reshape(n, c, -1)
    eps = f32(op.eps)
    if is_train and not op.use_global_stats:
        mean, var, inv = loader.batchnorm_stats(x3, eps)
        loader.batchnorm_update_moving(moving_mean, moving_var, mean, var, f32(op.momentum))
    else:
        mean, inv = moving_mean.copy(), 1.0 / xp.sqrt(moving_var + eps)
    out = loader.batchnorm_forward(x3, mean, inv, gamma, beta, op.fix_gamma,
                                   out=None if dest is None else dest.reshape(n, c, -1))
    return [out.reshape(data.shape) if dest is None else dest, mean, inv]


def _gpu_bn_backward(xp, op, dy, data, gamma, mean, inv, dest=None):
    """BatchNorm backward with the fused kernels: [dx, dgamma, dbeta], from the mean and
    inverse std that forward saved as its outputs (dx written into ``dest`` when given);
    cuDNN's first (batch statistics only) where it is loaded, takes the case and the node
    has no ``cudnn_off``."""
    kern = None if op.use_global_stats or op.cudnn_off else gpu_kernel('batchnorm_backward')
    r = None if kern is None else kern(dy, data, gamma, mean, inv, f32(op.eps),
                                        op.fix_gamma, out=dest)
    if r is not None:
        if dest is not None and r[0] is not dest:
            dest[...] = r[0]
        return [r[0] if dest is None else dest, r[1], r[2]]
    from symgraph.cuda import loader
    n, c = data.shape[:2]
    dx, dgamma, dbeta = loader.batchnorm_backward(
        dy.reshape(n, c, -1), data.reshape(n, c, -1), mean, inv, gamma, op.fix_gamma,
        op.use_global_stats, dx_out=None if dest is None else dest.reshape(n, c, -1))
    return [dx.reshape(data.shape) if dest is None else dest, dgamma, dbeta]


@register
class BatchNorm(BatchNormBase):
    """Batch normalisation over every axis but ``axis``, with running statistics.

    The third output, 'var', is the inverse standard deviation, as in MXNet.
    """

    name = 'BatchNorm'
    aliases = ('_npx_batch_norm',)
    #: backward reads the mean and inverse std, never the normalised output (which then
    #: dies at its last consumer: a following relu may take its storage)
    needs_outputs = (1, 2)
    eps = Param(float, 1e-3, doc='added to the variance')
    momentum = Param(float, 0.9, doc='running-statistics decay')
    fix_gamma = Param(bool, True, doc='gamma acts as 1 and gets no gradient')
    use_global_stats = Param(bool, False, doc='normalise with the running statistics')
    output_mean_var = Param(bool, False, doc='also output the mean and the inverse std')
    axis = Param(int, 1, doc='channel axis')
    cudnn_off = Param(bool, False, doc="don't use cuDNN for this node (symgraph's own CUDA "
                      'kernels on a GPU)')
    min_calib_range = Param(float, None, doc='ignored (quantisation)')
    max_calib_range = Param(float, None, doc='ignored (quantisation)')

    def channel_axis(self):
        return self.axis

    def inference_affine(self, xp, arrays):
        """(scale, shift) of the inference forward from [gamma, beta, moving_mean,
        moving_var], as :meth:`forward` computes them (fix_gamma writes 1 into gamma, as
        forward does)."""
        gamma, beta, mean, var = arrays
        if self.fix_gamma:
            gamma[...] = 1
        eps = f32(self.eps)
        inv = 1.0 / xp.sqrt(var.astype(np.float64) + eps)
        g = xp.ones_like(inv) if self.fix_gamma else gamma.astype(np.float64)
        scale = g * inv
        return scale, beta.astype(np.float64) - mean.astype(np.float64) * scale

    def _backend(self, xp, data, *arrays):
        """The CPU kernels (oneDNN's) for NumPy float32 arrays with channels on axis 1,
        else None."""
        if xp is not np or self.axis % data.ndim != 1 or not 2 <= data.ndim <= 5 \
                or data.dtype is not F32:
            return None
        for a in arrays:        # (a loop: this runs twice per layer and step)
            if a.dtype is not F32:
                return None
        return KERNELS if KERNELS.loaded() else None

    def bind(self, ctx, in_shapes, in_dtypes):
        """A Step whose state keeps, by output and data array, the relu mask of a fused
        training forward and the backward's buffers (:class:`BatchNormState`)."""
        return Step(self, ctx, BatchNormState(), shareable=True)

    def check(self):
        super().check()
        # (eps, momentum, 1 - momentum) as MXNet's float parameters round them, worked out
        # once as the operator is made (they are asked for at every training step)
        mom = f32(self.momentum)
        self._fix(_f32s=(f32(self.eps), mom, 1.0 - mom))

    def _f32_constants(self):
        """(eps, momentum, 1 - momentum) as MXNet's float parameters round them."""
        return self._f32s

    def _onednn_forward(self, be, data, gamma, beta, moving_mean, moving_var, is_train,
                        out=None, relu=False, state=None):
        """[out, mean, inverse std] through oneDNN (running statistics updated as the
        NumPy path does), or None when it declines. ``out``: the arrays the executor
        offers (``writes_into``), written where they fit. ``relu`` (training with the
        batch's statistics only): out is relu'd, and oneDNN's mask for backward is kept
        (see :class:`BatchNormWithReLU`) in the Step's ``state``.

        A training call into offered arrays is recorded for the backend to replay on the
        same arrays (``on_backend``): the relu mask the Step kept for the last forward into
        the same output is offered again as the mask's buffer, and gamma itself is the
        scale with ``fix_gamma`` (the callers have just set it to 1)."""
        eps, mom, rest = self._f32_constants()
        dest = _dest(out, 0, data.dtype)
        # the mean and inverse std straight into the offered buffers (few NumPy calls on
        # per-channel vectors: each costs more than its arithmetic inside a step)
        mean_out, inv_out = _dest(out, 1, np.float32), _dest(out, 2, np.float32)
        if is_train and not self.use_global_stats:
            masks = None if state is None else state.masks
            ws = masks.get(dest, data) if masks is not None and relu and dest is not None \
                else None
            arrays = (data, gamma, beta, dest, mean_out, inv_out) + ((ws,) if relu else ())
            r = on_backend((None if state is None else state.replays, 'fr' if relu else 'f'),
                           arrays,
                           lambda: be.batch_norm_forward(
                               data, gamma, beta, eps, out=dest, relu=relu,
                               stats_out=(mean_out, inv_out), ws_out=ws),
                           tuple(range(3, len(arrays))))
            if r is None:
                return None
            y, mean, var = r[:3]
            if relu and masks is not None and (r[3] is not ws or y is not dest):
                masks.keep(y, data, r[3])       # (else kept already)
            # moving * mom + batch * (1 - mom), rounded as that expression is
            moving_mean *= mom
            moving_mean += mean * rest
            moving_var *= mom
            moving_var += var * rest
        elif relu:
            return None
        else:
            g = np.ones_like(gamma) if self.fix_gamma else gamma
            y = be.batch_norm_forward(data, g, beta, eps, moving_mean, moving_var, is_train,
                                      out=dest)
            if y is None:
                return None
            if mean_out is None:
                mean = moving_mean.copy()
            else:
                np.copyto(mean_out, moving_mean)
                mean = mean_out
            var = moving_var
        # 1 / sqrt(var + eps) in float32, in place over the batch variance (an array of
        # this call's: the offered buffer or a new one), never over the running one
        inv = np.add(var, eps, out=inv_out if var is moving_var else var)
        np.sqrt(inv, out=inv)
        return [y, mean, np.divide(1.0, inv, out=inv)]

    def _onednn_backward(self, xp, dy, data, gamma, outputs, need, dest, ws=None,
                         grad_out=None, state=None):
        """[d data, d gamma, d beta] through oneDNN from the saved mean and inverse std
        (``ws``: the relu mask of a fused forward, applied to ``dy`` there), or None when
        it declines.

        The variance oneDNN takes is worked out into a buffer the Step keeps with the
        forward's inverse std (as is where the parameters' unwanted gradients go), so that a
        call on the executor's arrays is recorded for the backend to replay on the same
        ones (``on_backend``)."""
        inv_std = outputs[2]
        # (a float32 inverse std only: anything else _backend declines below too)
        if xp is not np or inv_std.dtype is not F32 or not KERNELS.loaded():
            return None
        be = KERNELS
        buffers = None if state is None else state.buffers
        kept = None if buffers is None else buffers.get(inv_std, data)   # (same shape)
        if kept is None:
            kept = tuple(np.empty(inv_std.shape, np.float32) for _ in range(3))
            if buffers is not None:
                buffers.keep(inv_std, data, kept)
        var, spare_g, spare_b = kept
        g = _ones(gamma.shape[0]) if self.fix_gamma and gamma.ndim == 1 else gamma
        d_g = _dest(grad_out, 1, np.float32) if need[1] and not self.fix_gamma else spare_g
        d_b = _dest(grad_out, 2, np.float32) if need[2] else spare_b
        # var = 1 / inv^2 - eps (oneDNN only ever uses var + eps, which this gives back to
        # float32 rounding: 1 / sqrt of it is inv to a few ulp)
        np.multiply(inv_std, inv_std, out=var)
        np.divide(1.0, var, out=var)
        np.subtract(var, self.eps, out=var)
        arrays = (data, dy, g, outputs[1], var, dest, d_g, d_b, ws)

        def run():
            if self._backend(xp, data, gamma, dy, outputs[1], inv_std) is None:
                return None
            return be.batch_norm_backward(
                data, dy, g, outputs[1], var, self._f32_constants()[0],
                self.use_global_stats, dx_out=dest, ws=ws, param_out=(d_g, d_b))
        r = on_backend((None if state is None else state.replays, ('b', ws is not None)),
                       arrays, run, (5, 6, 7))  # (var: input)
        if r is None:
            return None
        dx, dgamma, dbeta = r
        return [dx if need[0] else None,
                (np.zeros_like(gamma) if self.fix_gamma else dgamma) if need[1] else None,
                dbeta if need[2] else None]

    def _batch_stats(self, xp, x):
        return self.axis % x.ndim, tuple(i for i in range(x.ndim) if i != self.axis % x.ndim)

    #: the output and the data gradient are computed into the executor's arrays
    writes_into = True

    def forward(self, xp, inputs, aux, is_train, out=None, state=None):
        data, gamma, beta = inputs
        moving_mean, moving_var = aux
        if self.fix_gamma:
            # MXNet's BatchNorm writes 1 into gamma (training and inference): what a
            # checkpoint saves and what weight decay sees between steps is 1
            gamma[...] = 1
        dest = _dest(out, 0, data.dtype)
        if _gpu_bn_ok(xp, self, data, gamma, beta, moving_mean, moving_var):
            return _gpu_bn_forward(xp, self, data, gamma, beta, moving_mean, moving_var,
                                   is_train, _c_order(dest))
        be = self._backend(xp, data, gamma, beta, moving_mean, moving_var)
        if be is not None:
            outs = self._onednn_forward(be, data, gamma, beta, moving_mean, moving_var,
                                        is_train, out, state=state)
            if outs is not None:
                return outs
        x = acc(data)
        ax, axes = self._batch_stats(xp, x)
        bs = bshape(x.ndim, ax, x.shape[ax])
        eps = f32(self.eps)
        if is_train and not self.use_global_stats:
            m = x.size // max(x.shape[ax], 1)
            mean = _per_channel(xp, x, ax).sum(axis=(0, 2)) / max(m, 1)
            xc = x - mean.reshape(bs)
            var = _channel_dot(xp, xc, xc, ax) / max(m, 1)   # two-pass: no cancellation
            mom = f32(self.momentum)
            moving_mean[...] = moving_mean * mom + mean * (1.0 - mom)
            moving_var[...] = moving_var * mom + var * (1.0 - mom)
        else:
            xc = None
            mean = moving_mean.astype(x.dtype, copy=False)
            var = moving_var.astype(x.dtype, copy=False)
        inv = 1.0 / xp.sqrt(var + eps)
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        scale = (g * inv).astype(x.dtype, copy=False).reshape(bs)
        # in-place passes over one new array: these maps are memory-bound.  (``dest`` is
        # left alone here: NumPy's broadcasting multiply into another array ran 2.7x
        # slower than in place, more than the executor's copy costs.)
        if xc is None:
            out = x * scale
            out += (beta - mean * scale.ravel()).astype(x.dtype, copy=False).reshape(bs)
        else:
            out = xc        # (x - mean) * scale + beta, reusing the centred copy
            out *= scale
            out += beta.astype(x.dtype, copy=False).reshape(bs)
        pt = gamma.dtype
        return [out.astype(data.dtype, copy=False), mean.astype(pt, copy=False),
                inv.astype(pt, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None, state=None):
        # MXNet's executor always runs backward in training mode: without
        # use_global_stats the gradient goes through the batch statistics saved by forward.
        data, gamma, _ = inputs
        dest = _dest(grad_out, 0, data.dtype) if need[0] else None
        if _gpu_bn_ok(xp, self, data, gamma, out_grads[0], outputs[1], outputs[2]):
            return _gpu_bn_backward(xp, self, out_grads[0], data, gamma, outputs[1],
                                    outputs[2], _c_order(dest))
        grads = self._onednn_backward(xp, out_grads[0], data, gamma, outputs, need, dest,
                                      grad_out=grad_out, state=state)
        if grads is not None:
            return grads
        x, dy = acc(data), acc(out_grads[0])
        ax, axes = self._batch_stats(xp, x)
        bs = bshape(x.ndim, ax, x.shape[ax])
        mean = outputs[1].astype(x.dtype, copy=False).reshape(bs)
        inv = outputs[2].astype(x.dtype, copy=False).reshape(bs)
        g = xp.ones_like(gamma) if self.fix_gamma else gamma
        g = g.astype(x.dtype, copy=False).reshape(bs)
        xc = x - mean
        # the two per-channel sums everything below is made of (one pass each)
        sum_dy = _per_channel(xp, dy, ax).sum(axis=(0, 2))
        sum_dy_xhat = _channel_dot(xp, dy, xc, ax) * inv.ravel()
        dx = None
        if need[0]:
            if self.use_global_stats:
                dx = dy * (g * inv)
            else:
                # d/dx of g * xhat: g * inv * (dy - mean(dy) - xhat * mean(dy * xhat)), with
                # xhat = xc * inv; in-place passes over xc (memory-bound maps)
                m = max(x.size // max(x.shape[ax], 1), 1)
                a = (sum_dy / m).reshape(bs)
                b = (sum_dy_xhat / m).reshape(bs) * inv
                dx = xc
                dx *= b
                xp.subtract(dy, dx, out=dx)
                dx -= a
                dx *= g * inv
            dx = dx.astype(data.dtype, copy=False)
        dgamma = dbeta = None
        if need[1]:
            dgamma = (xp.zeros_like(gamma) if self.fix_gamma
                      else sum_dy_xhat.astype(gamma.dtype, copy=False))
        if need[2]:
            dbeta = sum_dy.astype(gamma.dtype, copy=False)
        return [dx, dgamma, dbeta]


@register
class BatchNormWithReLU(BatchNorm):
    """``BatchNorm`` followed by ``relu`` (``contrib.BatchNormWithReLU``, MXNet's fused
    operator): BatchNorm's parameters, inputs and outputs; the data/gamma/beta gradients
    see the head gradient masked where the output is not positive."""

    name = '_contrib_BatchNormWithReLU'
    aliases = ()
    needs_outputs = True    # the relu mask comes from the output

    def forward(self, xp, inputs, aux, is_train, out=None, state=None):
        data, gamma, beta = inputs
        if xp is np and is_train and not self.use_global_stats:
            # oneDNN normalises and applies relu in one pass, keeping its mask for backward
            be = self._backend(xp, data, gamma, beta, *aux)
            if be is not None:
                if self.fix_gamma:
                    gamma[...] = 1
                outs = self._onednn_forward(be, data, gamma, beta, aux[0], aux[1], True,
                                            out, relu=True, state=state)
                if outs is not None:
                    return outs
        res = super().forward(xp, inputs, aux, is_train, out=out, state=state)
        y = res[0]
        xp.maximum(y, 0, out=y)
        if state is not None:
            state.masks.forget(y)   # an older forward's mask no longer belongs to this output
        return res

    def backward(self, xp, out_grads, inputs, outputs, aux, need, grad_out=None, state=None):
        ws = state.masks.get(outputs[0], inputs[0]) if state is not None else None
        if ws is not None:      # (a fused forward: batch statistics, never global ones)
            data = inputs[0]
            grads = self._onednn_backward(xp, out_grads[0], data, inputs[1], outputs, need,
                                          _dest(grad_out, 0, data.dtype) if need[0]
                                          else None, ws, grad_out=grad_out, state=state)
            if grads is not None:
                return grads
        dy = xp.where(outputs[0] > 0, out_grads[0], 0).astype(out_grads[0].dtype, copy=False)
        return super().backward(xp, [dy] + list(out_grads[1:]), inputs, outputs, aux, need,
                                grad_out=grad_out, state=state)


class BatchNormState:
    """The state of a BatchNorm Step (:meth:`BatchNorm.bind`): ``masks``, oneDNN's relu
    masks of BatchNormWithReLU's training forwards by output and data; ``buffers``, the
    oneDNN backward's (variance, spare d gamma, spare d beta) buffers by the forward's
    inverse std and data. Both :class:`symgraph.opdef.Kept`: dropped with the Step.
    ``replays``: the CPU backend's recorded calls into the executor's arrays
    (``on_backend``), as :attr:`symgraph.opdef.Step.replays`."""

    __slots__ = ('masks', 'buffers', 'replays')

    def __init__(self):
        self.masks = Kept()
        self.buffers = Kept()
        self.replays = {}
#: read-only float32 ones by length: gamma's stand-in under ``fix_gamma``
_ONES = {}


def _ones(c):
    got = _ONES.get(c)
    if got is None:
        got = np.ones(c, np.float32)
        got.flags.writeable = False
        if len(_ONES) > 256:
            _ONES.clear()
        _ONES[c] = got
    return got
