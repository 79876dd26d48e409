"""Softmax family: ``softmax``, ``log_softmax``, ``softmin``, ``SoftmaxActivation``.

The loss head ``SoftmaxOutput`` is in :mod:`symgraph.ops.loss`.

``softmin`` is ``softmax(-x / temperature)`` with softmax's ``axis``, ``temperature`` and
``dtype``; like ``log_softmax`` it takes no ``length`` input, so ``use_length=True``
cannot be used.
"""
import numpy as np

from symgraph.opdef import (Operator, Param, ShapeError, TypeInferenceError, cpu_kernel,
                            gpu_kernel, is_bfloat16, register)

from ._util import norm_axis
from symgraph.base import ArgumentError


def softmax(xp, x, axis):
    """Numerically stable softmax along ``axis``."""
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(xp, x, axis):
    """Numerically stable log-softmax along ``axis``."""
    s = x - x.max(axis=axis, keepdims=True)
    return s - xp.log(xp.exp(s).sum(axis=axis, keepdims=True))


def _cudnn_softmax(op, xp, x, log):
    """The same on CuPy arrays through cuDNN (:func:`symgraph.opdef.gpu_kernel`), or None: no
    library or GPU, a temperature, a length, an output dtype other than the input's."""
    if op.temperature not in (None, 1.0) or op.use_length \
            or (op.dtype is not None and np.dtype(op.dtype) != x.dtype):
        return None
    kernel = gpu_kernel('softmax_forward')
    return None if kernel is None else kernel(x, norm_axis(op.axis, x.ndim), log)


def _onednn_softmax(op, xp, x, log):
    """softmax / log_softmax of x along op.axis through the CPU backend's kernel, or None:
    not a NumPy array, a temperature, a length or an output dtype of its own, no backend,
    or the kernel declines (sizes, dtypes and axes are its routing: only the last axis, from
    the size its ``LIMITS`` table says)."""
    if xp is not np:
        return _cudnn_softmax(op, xp, x, log)
    if op.temperature not in (None, 1.0) or op.use_length \
            or (op.dtype is not None and np.dtype(op.dtype) != np.float32):
        return None
    kernel = cpu_kernel('softmax_forward')
    return None if kernel is None else kernel(x, norm_axis(op.axis, x.ndim), log)


class _SoftmaxBase(Operator):
    axis = Param(int, -1, doc='the axis to normalise over')
    temperature = Param(float, None, doc='divide the input by this before normalising')
    dtype = Param('dtype', None, doc='output dtype (default: the input dtype)')
    use_length = Param(bool, False, doc='mask positions at or beyond `length` along axis')
    needs_inputs = False
    needs_outputs = True

    def check(self):
        if self.dtype is not None and np.dtype(self.dtype).name not in (
                'float16', 'float32', 'float64'):
            raise ArgumentError('%s: dtype must be float16, float32 or float64' % self.name)

    def infer_type(self, in_types):
        t = in_types[0]
        if t is not None and np.dtype(t).kind != 'f' and not is_bfloat16(t):
            raise TypeInferenceError('%s: this operation only supports floating point types, '
                                     'not %s' % (self.name, np.dtype(t).name))
        if self.use_length and len(in_types) > 1 and in_types[1] is not None \
                and np.dtype(in_types[1]).kind not in 'iu':
            raise TypeInferenceError('%s: length must have an integer type, not %s'
                                     % (self.name, np.dtype(in_types[1]).name))
        out = np.dtype(self.dtype) if self.dtype is not None else t
        return list(in_types[:len(self.list_arguments())]), [out], []

    def _scaled(self, x, dtype):
        x = x.astype(dtype, copy=False)
        if self.temperature is not None and self.temperature != 1.0:
            x = x / dtype.type(self.temperature)
        return x

    def _scale_grad(self, d, x):
        if self.temperature is not None and self.temperature != 1.0:
            d = d / self.temperature
        return d.astype(x.dtype, copy=False)


@register
class Softmax(_SoftmaxBase):
    """``exp(x / T) / sum(exp(x / T), axis)``; with ``use_length`` only the first
    ``length`` positions along ``axis`` take part and the others are 0.
    """

    name = 'softmax'
    needs_inputs = True

    @property
    def same_shape_io(self):
        return not self.use_length

    def list_arguments(self):
        return ['data', 'length'] if self.use_length else ['data']

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if not self.use_length:
            return [d], [d], []
        ln = in_shapes[1]
        if d is not None:
            ax = norm_axis(self.axis, len(d))
            want = tuple(d[:ax]) + tuple(d[ax + 1:])
            if ln is not None and (len(ln) != len(want) or any(
                    a and b and a != b for a, b in zip(ln, want))):
                raise ShapeError('softmax: argument %r has shape %s, expected %s for data %s'
                                 % ('length', tuple(ln), want, tuple(d)))
            ln = want
        return [d, ln], [d], []

    def _mask(self, xp, length, x, ax):
        pos = xp.arange(x.shape[ax]).reshape((-1,) + (1,) * (x.ndim - ax - 1))
        return pos < xp.expand_dims(length, ax)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = np.dtype(self.dtype) if self.dtype is not None else x.dtype
        ax = norm_axis(self.axis, x.ndim)
        y = _onednn_softmax(self, xp, x, False)
        if y is not None:
            return [y]
        z = self._scaled(x, dt)
        if not self.use_length:
            return [softmax(xp, z, ax)]
        m = self._mask(xp, inputs[1], x, ax)
        z = xp.where(m, z, dt.type(-np.inf))
        # rows of length 0 have no finite maximum: shift them by 0 (exp(-inf) is 0)
        top = xp.where(m.any(axis=ax, keepdims=True), z.max(axis=ax, keepdims=True),
                       dt.type(0))
        e = xp.exp(z - top)
        s = e.sum(axis=ax, keepdims=True)
        # a row of length 0 is all zeros, not NaN
        return [e / xp.where(s > 0, s, dt.type(1))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        y = outputs[0]
        g = out_grads[0].astype(y.dtype, copy=False)
        ax = norm_axis(self.axis, y.ndim)
        d = y * (g - (g * y).sum(axis=ax, keepdims=True))
        grads = [self._scale_grad(d, inputs[0]) if need[0] else None]
        if self.use_length:
            grads.append(xp.zeros_like(inputs[1]) if need[1] else None)
        return grads


@register
class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x / T))`` along ``axis``."""

    name = 'log_softmax'
    needs_inputs = True
    same_shape_io = True

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        if self.use_length:
            # MXNet accepts the flag but gives log_softmax no `length` input, then fails
            raise ShapeError('log_softmax: use_length=True needs a length input, which '
                             'log_softmax does not take')
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = np.dtype(self.dtype) if self.dtype is not None else x.dtype
        y = _onednn_softmax(self, xp, x, True)
        if y is not None:
            return [y]
        return [log_softmax(xp, self._scaled(x, dt), norm_axis(self.axis, x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        y = outputs[0]
        g = out_grads[0].astype(y.dtype, copy=False)
        ax = norm_axis(self.axis, y.ndim)
        d = g - xp.exp(y) * g.sum(axis=ax, keepdims=True)
        return [self._scale_grad(d, inputs[0])]


@register
class SoftmaxActivation(Operator):
    """Softmax over the last axis (``instance``: MXNet views the input as 2-D with the last
    axis as columns) or over axis 1 (``channel``, input of 3 or more dimensions).

    As in MXNet 1.9.1, backward always normalises over axis 1, so ``instance`` mode has the
    true gradient only for 2-D input.
    """

    name = 'SoftmaxActivation'
    mode = Param(str, 'instance', doc='instance or channel', choices=('channel', 'instance'))
    needs_inputs = False
    needs_outputs = True
    same_shape_io = True

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        return [softmax(xp, x, self._axis(x.ndim))]

    def _axis(self, ndim):
        return 1 if self.mode == 'channel' and ndim > 1 else ndim - 1

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        d = in_shapes[0]
        if self.mode == 'channel' and d is not None and len(d) < 3:
            raise ShapeError('SoftmaxActivation: mode=channel needs input %r with at least 3 '
                             'dimensions, got %s' % ('data', tuple(d)))
        return [d], [d], []

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        y, g = outputs[0], out_grads[0]
        # MXNet's backward reduces over axis 1 in both modes: for instance mode on N-D
        # (N > 2) input this is not the derivative of forward, but it is what MXNet gives.
        ax = 1 if y.ndim > 1 else 0
        return [y * (g - (g * y).sum(axis=ax, keepdims=True))]


@register
class Softmin(_SoftmaxBase):
    """``softmax(-x / T)`` along ``axis``."""

    name = 'softmin'
    needs_inputs = True
    same_shape_io = True

    infer_shape_uses_outputs = True

    def infer_shape(self, in_shapes, out_shapes=None):
        if self.use_length:
            # MXNet accepts the flag but gives softmin no `length` input, then fails
            raise ShapeError('softmin: use_length=True needs a length input, which softmin '
                             'does not take')
        return [in_shapes[0]], [in_shapes[0]], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = np.dtype(self.dtype) if self.dtype is not None else x.dtype
        return [softmax(xp, -self._scaled(x, dt), norm_axis(self.axis, x.ndim))]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        y = outputs[0]
        g = out_grads[0].astype(y.dtype, copy=False)
        ax = norm_axis(self.axis, y.ndim)
        d = -y * (g - (g * y).sum(axis=ax, keepdims=True))
        return [self._scale_grad(d, inputs[0])]
