"""Normalisations other than BatchNorm: ``LayerNorm``, ``InstanceNorm``, ``GroupNorm``,
``L2Normalization`` and ``LRN``.

Every operator keeps what its backward needs (mean, std or variance, norm) as hidden outputs,
as MXNet does, so backward never recomputes statistics. float16 data is normalised in float32
(:func:`symgraph.ops.norm._acc`); parameters such as ``eps`` and ``alpha`` are rounded to
MXNet's C ``float`` (:func:`symgraph.ops.norm._f32`). ``BatchNorm`` and the shared helpers
are in :mod:`symgraph.ops.norm`.

``GroupNorm(data, gamma, beta)``: data ``(N, C, ...)`` with ``C`` divisible by
``num_groups`` ``G``, normalised over each ``(sample, group)``; in MXNet 1.9.1 gamma and
beta have shape ``(G,)`` (one scale per group, not per channel). Hidden outputs mean and
std (``sqrt(var + eps)``) of shape ``(N, G)`` are visible with ``output_mean_var``.
"""
import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, cpu_kernel,
                            register, same_type)

from ._norm import bshape, channel_param_shapes
from ._util import acc, f32
from symgraph.base import ParameterError


def _normalize_grad(dxhat, xhat, inv, axes):
    """d/dx of ``(x - mean(x)) * inv`` given d/dxhat, statistics over ``axes``."""
    m1 = dxhat.mean(axis=axes, keepdims=True)
    m2 = (dxhat * xhat).mean(axis=axes, keepdims=True)
    return (dxhat - m1 - xhat * m2) * inv


class _MeanStdNorm(Operator):
    """data, gamma, beta -> output, mean, std; mean and std are visible outputs only with
    the ``output_mean_var`` parameter (LayerNorm, GroupNorm)."""

    needs_inputs = True
    needs_outputs = True

    def list_arguments(self):
        return ['data', 'gamma', 'beta']

    def list_outputs(self):
        return ['output', 'mean', 'std']

    def num_visible_outputs(self):
        return 3 if self.output_mean_var else 1


@register
class LayerNorm(_MeanStdNorm):
    """Normalise along one axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``."""

    name = 'LayerNorm'
    aliases = ('_npx_layer_norm',)
    axis = Param(int, -1, doc='the normalised axis')
    eps = Param(float, 1e-5, doc='added to the variance')
    output_mean_var = Param(bool, False, doc='also output the mean and the std')

    def infer_shape(self, in_shapes):
        data, c, ax = channel_param_shapes(self, in_shapes, self.axis, 2)
        stat = None if data is None else data[:ax] + (1,) + data[ax + 1:]
        return [data, c, c], [data, stat, stat], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * 3, [t] * 3, []

    def forward(self, xp, inputs, aux, is_train):
        data, gamma, beta = inputs
        x = acc(data)
        ax = self.axis % x.ndim
        bs = bshape(x.ndim, ax, x.shape[ax])
        mean = x.mean(axis=ax, keepdims=True)
        std = xp.sqrt(((x - mean) ** 2).mean(axis=ax, keepdims=True) + f32(self.eps))
        out = (x - mean) / std * gamma.reshape(bs) + beta.reshape(bs)
        t = data.dtype
        return [out.astype(t, copy=False), mean.astype(t, copy=False),
                std.astype(t, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, gamma, _ = inputs
        x, dy = acc(data), acc(out_grads[0])
        ax = self.axis % x.ndim
        bs = bshape(x.ndim, ax, x.shape[ax])
        inv = 1.0 / acc(outputs[2])
        xhat = (x - acc(outputs[1])) * inv
        others = tuple(i for i in range(x.ndim) if i != ax)
        dx = dgamma = dbeta = None
        if need[0]:
            dx = _normalize_grad(dy * acc(gamma).reshape(bs), xhat, inv, ax)
            dx = dx.astype(data.dtype, copy=False)
        if need[1]:
            dgamma = (dy * xhat).sum(axis=others).astype(gamma.dtype, copy=False)
        if need[2]:
            dbeta = dy.sum(axis=others).astype(gamma.dtype, copy=False)
        return [dx, dgamma, dbeta]


@register
class InstanceNorm(Operator):
    """Normalise each (sample, channel) over its spatial axes; data is (N, C, *spatial)."""

    name = 'InstanceNorm'
    eps = Param(float, 1e-3, doc='added to the variance')
    needs_inputs = True
    needs_outputs = True

    def list_arguments(self):
        return ['data', 'gamma', 'beta']

    def list_outputs(self):
        return ['output', 'mean', 'var']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        if in_shapes[0] is not None and len(in_shapes[0]) < 3:
            raise ShapeError('InstanceNorm needs data of rank >= 3, got %s'
                             % (tuple(in_shapes[0]),))
        data, c, _ = channel_param_shapes(self, in_shapes, 1, 2)
        stat = None if data is None else data[:2]
        return [data, c, c], [data, stat, stat], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        if t is not None and t == np.float16:
            # MXNet's InstanceNorm is float32 only; float64 is a symgraph extension
            raise TypeInferenceError('InstanceNorm does not support float16 data')
        return [t] * 3, [t] * 3, []

    def forward(self, xp, inputs, aux, is_train):
        x, gamma, beta = inputs
        axes = tuple(range(2, x.ndim))
        bs = bshape(x.ndim, 1, x.shape[1])
        mean = x.mean(axis=axes, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        out = (x - mean) / xp.sqrt(var + f32(self.eps)) * gamma.reshape(bs) + beta.reshape(bs)
        return [out, mean.reshape(x.shape[:2]), var.reshape(x.shape[:2])]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, gamma, _ = inputs
        dy = out_grads[0]
        axes = tuple(range(2, x.ndim))
        bs = bshape(x.ndim, 1, x.shape[1])
        st = x.shape[:2] + (1,) * (x.ndim - 2)
        inv = 1.0 / xp.sqrt(outputs[2].reshape(st) + f32(self.eps))
        xhat = (x - outputs[1].reshape(st)) * inv
        others = (0,) + axes
        dx = dgamma = dbeta = None
        if need[0]:
            dx = _normalize_grad(dy * gamma.reshape(bs), xhat, inv, axes)
        if need[1]:
            dgamma = (dy * xhat).sum(axis=others)
        if need[2]:
            dbeta = dy.sum(axis=others)
        return [dx, dgamma, dbeta]


@register
class L2Normalization(Operator):
    """``x / sqrt(sum(x ** 2) + eps)``, the sum over one sample ('instance'), the channel
    axis ('channel') or the spatial axes ('spatial')."""

    name = 'L2Normalization'
    eps = Param(float, 1e-10, doc='added to the sum of squares')
    mode = Param(str, 'instance', doc='what the norm is taken over',
                 choices=('channel', 'instance', 'spatial'))
    needs_inputs = True
    needs_outputs = True

    def list_outputs(self):
        return ['output', 'norm']

    def num_visible_outputs(self):
        return 1

    def _axes(self, ndim):
        if self.mode == 'instance':
            return tuple(range(1, ndim))
        if self.mode == 'channel':
            return (1,)
        return tuple(range(2, ndim))

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        need = 2 if self.mode == 'instance' else 3
        if len(s) < need:
            raise ShapeError('L2Normalization mode %r needs data of rank >= %d, got %s'
                             % (self.mode, need, tuple(s)))
        axes = self._axes(len(s))
        norm = tuple(d for i, d in enumerate(s) if i not in axes)
        return [s], [s, norm], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axes = self._axes(x.ndim)
        xa = acc(x)
        norm = xp.sqrt((xa * xa).sum(axis=axes, keepdims=True) + f32(self.eps))
        out = (xa / norm).astype(x.dtype, copy=False)
        keep = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return [out, norm.reshape(keep).astype(x.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, dy = acc(inputs[0]), acc(out_grads[0])
        axes = self._axes(x.ndim)
        st = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        norm = acc(outputs[1]).reshape(st)
        dot = (dy * x).sum(axis=axes, keepdims=True)
        dx = dy / norm - x * dot / (norm * norm * norm)
        return [dx.astype(inputs[0].dtype, copy=False)]


def _channel_window_sum(xp, a, nsize):
    """Sum over a centred window of ``nsize`` (odd) channels, zero past the edges."""
    half = nsize // 2
    c = a.shape[1]
    pad = [(0, 0)] * a.ndim
    pad[1] = (half + 1, half)
    cs = xp.cumsum(xp.pad(a, pad), axis=1)
    return cs[:, nsize:nsize + c] - cs[:, :c]


@register
class LRN(Operator):
    """Local response normalisation across channels of (N, C, H, W) data:
    ``x / (knorm + alpha / nsize * sum_window(x ** 2)) ** beta``."""

    name = 'LRN'
    alpha = Param(float, 1e-4, doc='variance scaling')
    beta = Param(float, 0.75, doc='power')
    knorm = Param(float, 2.0, doc='additive constant')
    nsize = Param(int, doc='window width in channels (odd)')
    needs_inputs = True
    needs_outputs = True

    def check(self):
        if self.nsize is None or self.nsize < 1 or self.nsize % 2 != 1:
            raise ParameterError('LRN only supports odd values for nsize, got %r' % (self.nsize,))

    def list_outputs(self):
        return ['output', 'tmp_norm']

    def num_visible_outputs(self):
        return 1

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is not None and len(s) != 4:
            raise ShapeError('LRN needs 4-D data (N, C, H, W), got %s' % (tuple(s),))
        if s is not None and s[1] and self.nsize > s[1]:
            raise ShapeError('LRN: local size nsize=%d must not exceed the %d channels'
                             % (self.nsize, s[1]))
        return [s], [s, s], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        xa = acc(x)
        scale = (f32(self.knorm)
                 + f32(self.alpha) / self.nsize * _channel_window_sum(xp, xa * xa, self.nsize))
        out = xa * scale ** -f32(self.beta)
        return [out.astype(x.dtype, copy=False), scale.astype(x.dtype, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, dy, scale = acc(inputs[0]), acc(out_grads[0]), acc(outputs[1])
        beta = f32(self.beta)
        p = scale ** -beta
        # the centred window is symmetric, so its adjoint is the same window sum
        t = _channel_window_sum(xp, dy * x * p / scale, self.nsize)
        dx = dy * p - (2.0 * beta * f32(self.alpha) / self.nsize) * x * t
        return [dx.astype(inputs[0].dtype, copy=False)]


class LRNInference(LRN):
    """LRN without its hidden ``tmp_norm`` (None in its place), for inference plans whose
    ``tmp_norm`` nobody reads (the ``instead`` row of ``ops/_cpu_rules.py``): the output
    goes through the CPU backend's kernel (float32 NumPy arrays from the size its ``LIMITS``
    table says), else the NumPy formula. Not registered.

    oneDNN only pays without ``tmp_norm``: computing it beside oneDNN's output was
    1.2-3.5x slower than the NumPy operator, oneDNN's output alone 0.2-0.5x (inference
    kernel, channels last, (32, 64, 27, 27) and (8, 96, 55, 55), nsize 5); oneDNN 3.2's
    LRN backward was 5-10x slower than NumPy's, so training stays on NumPy."""

    name = '_LRN_inference'

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        kernel = cpu_kernel('lrn_forward') if xp is np else None
        if kernel is not None:
            # (the kernel declines what it does not take: dtype, and sizes under its limit)
            y = kernel(x, self.nsize, f32(self.alpha), f32(self.beta), f32(self.knorm))
            if y is not None:
                return [y, None]
        return [super().forward(xp, inputs, aux, is_train)[0], None]


@register
class GroupNorm(_MeanStdNorm):
    """Normalise each (sample, group of channels); gamma and beta are per group."""

    name = 'GroupNorm'
    num_groups = Param(int, 1, doc='number of channel groups')
    eps = Param(float, 1e-5, doc='added to the variance')
    output_mean_var = Param(bool, False, doc='also output the mean and the std')

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        g = self.num_groups
        if d is not None:
            if len(d) < 3:
                raise ShapeError('GroupNorm: argument %r must have rank 3 or greater '
                                 '(N, C, ...), got %s' % ('data', tuple(d)))
            if d[1] and d[1] % g:
                raise ShapeError('GroupNorm: the %d channels of data %s are not divisible by '
                                 'num_groups=%d' % (d[1], tuple(d), g))
        for i, nm in ((1, 'gamma'), (2, 'beta')):
            s = in_shapes[i]
            if s is not None and (len(s) != 1 or (s[0] and s[0] != g)):
                raise ShapeError('GroupNorm: argument %r has shape %s, expected (%d,) '
                                 '(num_groups)' % (nm, tuple(s), g))
        stat = None if d is None else (d[0], g)
        return [d, (g,), (g,)], [d, stat, stat], []

    def infer_type(self, in_types):
        t = same_type(self, in_types)
        return [t] * 3, [t] * 3, []

    def forward(self, xp, inputs, aux, is_train):
        data, gamma, beta = inputs
        n, g = data.shape[0], self.num_groups
        x = acc(data).reshape(n, g, -1)
        mean = x.mean(axis=2, keepdims=True)
        std = xp.sqrt(((x - mean) ** 2).mean(axis=2, keepdims=True) + f32(self.eps))
        out = (x - mean) / std * acc(gamma).reshape(1, g, 1) + acc(beta).reshape(1, g, 1)
        t = data.dtype
        return [out.reshape(data.shape).astype(t, copy=False),
                mean.reshape(n, g).astype(t, copy=False), std.reshape(n, g).astype(t, copy=False)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        data, gamma, _ = inputs
        n, g = data.shape[0], self.num_groups
        x = acc(data).reshape(n, g, -1)
        dy = acc(out_grads[0]).reshape(n, g, -1)
        inv = 1.0 / acc(outputs[2]).reshape(n, g, 1)
        xhat = (x - acc(outputs[1]).reshape(n, g, 1)) * inv
        dx = dgamma = dbeta = None
        if need[0]:
            dxhat = dy * acc(gamma).reshape(1, g, 1)
            dx = _normalize_grad(dxhat, xhat, inv, 2)
            dx = dx.reshape(data.shape).astype(data.dtype, copy=False)
        if need[1]:
            dgamma = (dy * xhat).sum(axis=(0, 2)).astype(gamma.dtype, copy=False)
        if need[2]:
            dbeta = dy.sum(axis=(0, 2)).astype(gamma.dtype, copy=False)
        return [dx, dgamma, dbeta]
