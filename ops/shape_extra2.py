"""``diag``, ``cumsum`` (``_np_cumsum``), ``moments`` and the legacy ``Crop``.

MXNet 1.9.1 semantics:

* ``diag``: a 1-D input of length n becomes an ``(n + |k|, n + |k|)`` matrix with the
  input on diagonal ``k``; an input with 2 or more axes gives NumPy's
  ``diagonal(offset=k, axis1, axis2)`` (the diagonal as the last axis). A diagonal of
  length below 0 is an error ("Diagonal does not exist"); length 0 gives shape (0,).
* ``cumsum`` (operator ``_np_cumsum``, input ``a``): running sum along ``axis`` (the
  flattened input when None) in ``dtype`` (default: the input's; bool gives int64). The
  gradient is the reversed running sum of the head gradient, in the input's dtype.
* ``moments``: ``mean`` and ``var`` (population variance, ``mean((x - mean)^2)``) over
  ``axes`` (required in effect: empty axes are an error; duplicates too), outputs
  ``output0`` and ``output1``. Integer inputs give truncated integer results.
* ``Crop`` (``num_args`` 1 or 2, inputs ``arg0``/``arg1``): NCHW data cropped to ``h_w``
  or to the height and width of the second input, at ``offset`` (y, x) or centred
  (``(H - h) // 2``); the second input gets a zero gradient.

Deliberate differences: ``cumsum`` accepts negative axes (MXNet 1.9.1 checks
``axis >= -ndim`` but then fails at run time on them); ``Crop`` accepts any floating
point type (MXNet only float32) and checks offsets and the crop_like size in shape
inference (MXNet at run time).
"""
from math import prod

import numpy as np

from symgraph.base import MXNetError
from symgraph.opdef import Operator, Param, ShapeError, register

from ._util import norm_axis


# --- diag ------------------------------------------------------------------------------
@register
class Diag(Operator):
    """Build a diagonal matrix from 1-D input, or extract a diagonal (see above)."""

    name = 'diag'
    k = Param(int, 0, doc='the diagonal: > 0 above the main one, < 0 below')
    axis1 = Param(int, 0, doc='first axis of the 2-D sub-arrays')
    axis2 = Param(int, 1, doc='second axis of the 2-D sub-arrays')

    def _axes(self, ndim):
        a1 = norm_axis(self.axis1, ndim, 'diag: axis')
        a2 = norm_axis(self.axis2, ndim, 'diag: axis')
        if a1 == a2:
            raise ShapeError('diag: axis1 and axis2 cannot refer to the same axis %d' % a1)
        return a1, a2

    def _diag_len(self, h, w):
        if self.k > 0:
            w -= self.k
        elif self.k < 0:
            h += self.k
        n = min(h, w)
        if n < 0:
            raise ShapeError('diag: diagonal k=%d does not exist for a %dx%d matrix'
                             % (self.k, h, w))
        return n

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if len(s) == 0:
            raise ShapeError('diag: data must have at least one dimension')
        if len(s) == 1:
            n = s[0] + abs(self.k) if s[0] > 0 else 0
            return [s], [(n, n)], []
        a1, a2 = self._axes(len(s))
        rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
        if s[a1] <= 0 or s[a2] <= 0:
            return [s], [rest + (0,)], []
        return [s], [rest + (self._diag_len(s[a1], s[a2]),)], []

    def _rows_cols(self, n):
        i = np.arange(n)
        return i + max(-self.k, 0), i + max(self.k, 0)

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        if x.ndim == 1:
            n = x.shape[0] + abs(self.k)
            out = xp.zeros((n, n), dtype=x.dtype)
            r, c = self._rows_cols(x.shape[0])
            out[xp.asarray(r), xp.asarray(c)] = x
            return [out]
        a1, a2 = self._axes(x.ndim)
        self._diag_len(x.shape[a1], x.shape[a2])
        return [xp.diagonal(x, offset=self.k, axis1=a1, axis2=a2).copy()]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        g, x = out_grads[0], inputs[0]
        if x.ndim == 1:
            r, c = self._rows_cols(x.shape[0])
            return [g[xp.asarray(r), xp.asarray(c)]]
        a1, a2 = self._axes(x.ndim)
        # the input's layout with axis1, axis2 moved last, then the diagonal filled in
        moved = xp.moveaxis(xp.zeros(x.shape, dtype=g.dtype), (a1, a2), (-2, -1))
        r, c = self._rows_cols(g.shape[-1])
        moved[..., xp.asarray(r), xp.asarray(c)] = g
        return [xp.moveaxis(moved, (-2, -1), (a1, a2))]


# --- cumsum ------------------------------------------------------------------------------
@register
class Cumsum(Operator):
    """Running sum along ``axis`` (the flattened input when None)."""

    name = '_np_cumsum'
    aliases = ('cumsum',)
    axis = Param(int, None, doc='axis of the running sum; None flattens the input')
    dtype = Param('dtype', None, doc='output and accumulator type',
                  choices=('float16', 'float32', 'float64', 'int32', 'int64', 'int8'))

    def list_arguments(self):
        return ['a']

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None], []
        s = tuple(s)
        if self.axis is None:
            return [s], [(prod(s),) if all(d > 0 for d in s) else None], []
        norm_axis(self.axis, len(s), 'cumsum: axis')
        return [s], [s], []

    def _out_type(self, t):
        if self.dtype is not None:
            return np.dtype(self.dtype)
        return np.dtype('int64') if np.dtype(t) == np.bool_ else np.dtype(t)

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [None if t is None else self._out_type(t)], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        dt = self._out_type(x.dtype)
        if self.axis is None:
            return [xp.cumsum(x.reshape(-1), dtype=dt)]
        return [xp.cumsum(x, axis=norm_axis(self.axis, x.ndim, 'cumsum: axis'), dtype=dt)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x, g = inputs[0], out_grads[0]
        ax = 0 if self.axis is None else norm_axis(self.axis, x.ndim, 'cumsum: axis')
        r = xp.flip(xp.cumsum(xp.flip(g, axis=ax), axis=ax), axis=ax)
        return [r.reshape(x.shape).astype(x.dtype, copy=False)]


# --- moments ------------------------------------------------------------------------------
@register
class Moments(Operator):
    """Mean and (population) variance over ``axes``."""

    name = 'moments'
    needs_outputs = True
    axes = Param('shape', None, doc='axes along which to compute mean and variance')
    keepdims = Param(bool, False, doc='keep the reduced axes with length 1')

    def list_outputs(self):
        return ['output0', 'output1']

    def _axes(self, ndim):
        if not self.axes:
            raise ShapeError('moments: empty axes are not supported; pass all axes for '
                             'global moments')
        axes = sorted(norm_axis(a, ndim, 'moments: axis') for a in self.axes)
        for a, b in zip(axes, axes[1:]):
            if a == b:
                raise ShapeError('moments: duplicate axes %s' % (self.axes,))
        return tuple(axes)

    def _out(self, s):
        axes = self._axes(len(s))
        if self.keepdims:
            return tuple(1 if i in axes else d for i, d in enumerate(s))
        out = tuple(d for i, d in enumerate(s) if i not in axes)
        return out or (1,)

    def infer_shape(self, in_shapes):
        s = in_shapes[0]
        if s is None:
            return [None], [None, None], []
        o = self._out(tuple(s))
        return [tuple(s)], [o, o], []

    def infer_type(self, in_types):
        t = in_types[0]
        return [t], [t, t], []

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        axes = self._axes(x.ndim)
        n = 1
        for a in axes:
            n *= x.shape[a]
        out = self._out(x.shape)
        if x.dtype.kind in 'iub':
            mean = xp.trunc(x.sum(axis=axes, keepdims=True, dtype=np.int64) / n)
            mean = mean.astype(np.int64)
            var = xp.trunc(((x - mean) ** 2).sum(axis=axes, dtype=np.int64) / n)
            return [mean.astype(x.dtype).reshape(out), var.astype(x.dtype).reshape(out)]
        xc = x.astype(np.float32) if x.dtype == np.float16 else x
        mean = xc.mean(axis=axes, keepdims=True)
        var = ((xc - mean) ** 2).mean(axis=axes)
        return [mean.astype(x.dtype, copy=False).reshape(out),
                var.astype(x.dtype, copy=False).reshape(out)]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        axes = self._axes(x.ndim)
        keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        n = 1
        for a in axes:
            n *= x.shape[a]
        gm, gv = out_grads[0], out_grads[1]
        mean = outputs[0].reshape(keep)
        g = xp.zeros(x.shape, dtype=x.dtype)
        if gm is not None:
            g = g + gm.reshape(keep) / x.dtype.type(n)
        if gv is not None:
            g = g + gv.reshape(keep) * (x - mean) * x.dtype.type(2.0 / n)
        return [g.astype(x.dtype, copy=False)]


# --- Crop --------------------------------------------------------------------------------
@register
class Crop(Operator):
    """Crop NCHW data to ``h_w`` or to the second input's height and width."""

    name = 'Crop'
    key_var_num_args = 'num_args'
    num_args = Param(int, doc='1: crop to h_w; 2: crop to the second input (crop_like)')
    offset = Param('shape', (0, 0), doc='crop offset (y, x)')
    h_w = Param('shape', (0, 0), doc='crop height and width (h, w)')
    center_crop = Param(bool, False, doc='crop the centre instead of at offset')

    def check(self):
        if self.num_args not in (1, 2):
            raise MXNetError('Crop: num_args must be 1 or 2, got %d' % self.num_args)

    def list_arguments(self):
        return ['arg%d' % i for i in range(self.num_args)]

    def _hw(self, data, like):
        if self.num_args == 1:
            h, w = self.h_w
            for v, d, what in ((h, data[2], 'height'), (w, data[3], 'width')):
                if v < 1:
                    raise ShapeError('Crop: the crop %s in h_w=%s must be at least 1'
                                     % (what, self.h_w))
                if d > 0 and v > d:
                    raise ShapeError('Crop: the crop %s in h_w=%s exceeds that of data %s'
                                     % (what, self.h_w, tuple(data)))
            return h, w
        return like[2], like[3]

    def _offsets(self, data, h, w):
        if self.center_crop:
            return (data[2] - h) // 2, (data[3] - w) // 2
        for i, (d, v, what) in enumerate(((data[2], h, 'height'), (data[3], w, 'width'))):
            if v > d:
                raise ShapeError('Crop: data %s is smaller than the crop (%d, %d)'
                                 % (tuple(data), h, w))
            if not 0 <= self.offset[i] <= d - v:
                raise ShapeError('Crop: offset %s leaves the data %s for a crop of (%d, %d)'
                                 % (self.offset, tuple(data), h, w))
        return self.offset[0], self.offset[1]

    def infer_shape(self, in_shapes):
        data = in_shapes[0]
        like = in_shapes[1] if self.num_args == 2 else None
        if data is not None and len(data) != 4:
            raise ShapeError('Crop: data must be 4-D NCHW, got %s' % (tuple(data),))
        if like is not None and len(like) != 4:
            raise ShapeError('Crop: crop_like must be 4-D NCHW, got %s' % (tuple(like),))
        ins = list(in_shapes[:self.num_args])
        if data is None or (self.num_args == 2 and like is None):
            return ins, [None], []
        h, w = self._hw(data, like)
        if all(d > 0 for d in (data[2], data[3], h, w)):
            self._offsets(data, h, w)
        return ins, [(data[0], data[1], h, w)], []

    def infer_type(self, in_types):
        return list(in_types[:self.num_args]), [in_types[0]], []

    def _window(self, x, like):
        h, w = self._hw(x.shape, like)
        oy, ox = self._offsets(x.shape, h, w)
        return (slice(None), slice(None), slice(oy, oy + h), slice(ox, ox + w))

    def forward(self, xp, inputs, aux, is_train):
        x = inputs[0]
        like = inputs[1].shape if self.num_args == 2 else None
        return [x[self._window(x, like)]]

    def backward(self, xp, out_grads, inputs, outputs, aux, need):
        x = inputs[0]
        like = inputs[1].shape if self.num_args == 2 else None
        grads = [None] * self.num_args
        if need[0]:
            gx = xp.zeros(x.shape, dtype=out_grads[0].dtype)
            gx[self._window(x, like)] = out_grads[0]
            grads[0] = gx
        if self.num_args == 2 and need[1]:
            grads[1] = xp.zeros_like(inputs[1])
        return grads
